package broker

import (
	"context"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Embedded is a Kafka-protocol cluster running inside this process
// (franz-go's kfake), the broker of the local environment. It keeps every
// record in memory and listens on 127.0.0.1, which arm containers on the
// host network reach directly.
type Embedded struct {
	cluster *kfake.Cluster
	addrs   []string
}

// EmbeddedOption adjusts StartEmbedded.
type EmbeddedOption func(*embeddedConfig)

type embeddedConfig struct {
	ports []int
}

// WithPorts fixes the listening ports, one broker per port, so that a plan
// can name the broker address in advance. By default one broker listens on
// a port the kernel picks.
func WithPorts(ports ...int) EmbeddedOption {
	return func(c *embeddedConfig) { c.ports = ports }
}

// StartEmbedded starts the cluster and waits until it answers a metadata
// request. partitions is the partition count of topics created without an
// explicit count. Close stops it.
func StartEmbedded(ctx context.Context, partitions int, opts ...EmbeddedOption) (*Embedded, error) {
	if partitions < 1 {
		return nil, fmt.Errorf("starting the embedded broker: partitions is %d; it must be at least 1", partitions)
	}
	var cfg embeddedConfig
	for _, o := range opts {
		o(&cfg)
	}
	kopts := []kfake.Opt{kfake.DefaultNumPartitions(partitions), kfake.ClusterID("spatec-embedded")}
	if len(cfg.ports) > 0 {
		kopts = append(kopts, kfake.Ports(cfg.ports...))
	} else {
		// One broker: kfake serves every broker from one loop, so more
		// brokers add connections, not capacity.
		kopts = append(kopts, kfake.NumBrokers(1))
	}
	cluster, err := kfake.NewCluster(kopts...)
	if err != nil {
		return nil, fmt.Errorf("starting the embedded broker (ports %v): %w", cfg.ports, err)
	}
	e := &Embedded{cluster: cluster, addrs: cluster.ListenAddrs()}
	if err := e.ping(ctx); err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

func (e *Embedded) ping(ctx context.Context) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.addrs...))
	if err != nil {
		return fmt.Errorf("connecting to the embedded broker at %s: %w", strings.Join(e.addrs, ","), err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).BrokerMetadata(ctx); err != nil {
		return fmt.Errorf("embedded broker at %s does not answer: %w", strings.Join(e.addrs, ","), err)
	}
	return nil
}

// Addrs returns the seed broker addresses (host:port).
func (e *Embedded) Addrs() []string { return append([]string(nil), e.addrs...) }

// Close stops the cluster and drops its data.
func (e *Embedded) Close() { e.cluster.Close() }
