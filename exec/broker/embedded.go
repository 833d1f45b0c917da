package broker

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Embedded is a Kafka-protocol cluster running inside this process
// (franz-go's kfake). It keeps every record in memory. By default it
// listens on 127.0.0.1, which arm containers on the host network reach
// directly: the broker of the local environment. With WithAdvertised it
// listens on every interface and advertises one address that all its
// clients can reach: the broker program spatec runs in a container.
type Embedded struct {
	cluster *kfake.Cluster
	addrs   []string
}

// EmbeddedOption adjusts StartEmbedded.
type EmbeddedOption func(*embeddedConfig)

type embeddedConfig struct {
	ports      []int
	advertised string
}

// WithPorts fixes the listening ports, one broker per port, so that a plan
// can name the broker address in advance. By default one broker listens on
// a port the kernel picks.
func WithPorts(ports ...int) EmbeddedOption {
	return func(c *embeddedConfig) { c.ports = ports }
}

// WithAdvertised makes the single broker listen on every interface at the
// port of addr ("172.18.0.2:9092") and advertise addr in its metadata.
//
// A Kafka client bootstraps from any address and then connects to the
// address the broker advertises, so that one address must be reachable by
// every client: inside a container, its own address on the container
// network is, both from other containers on that network and from the host.
func WithAdvertised(addr string) EmbeddedOption {
	return func(c *embeddedConfig) { c.advertised = addr }
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
	if cfg.advertised != "" {
		listen, err := advertisedListener(cfg.advertised)
		if err != nil {
			return nil, err
		}
		kopts = append(kopts, kfake.NumBrokers(1), kfake.ListenFn(listen))
	} else if len(cfg.ports) > 0 {
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

// advertisedListener returns a listen function for kfake that ignores the
// loopback address kfake asks for, listens on every interface at the port
// of addr, and reports addr as the listener's address, which is what kfake
// advertises.
func advertisedListener(addr string) (func(network, address string) (net.Listener, error), error) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return nil, fmt.Errorf("advertised broker address %q: %w; give an IP address and a port, e.g. 172.18.0.2:9092", addr, err)
	}
	return func(network, _ string) (net.Listener, error) {
		ln, err := net.Listen(network, fmt.Sprintf(":%d", ap.Port()))
		if err != nil {
			return nil, fmt.Errorf("listening on port %d: %w", ap.Port(), err)
		}
		return advertisedLn{ln, net.TCPAddrFromAddrPort(ap)}, nil
	}, nil
}

// advertisedLn is a listener that reports another address as its own.
type advertisedLn struct {
	net.Listener
	addr net.Addr
}

func (l advertisedLn) Addr() net.Addr { return l.addr }

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
