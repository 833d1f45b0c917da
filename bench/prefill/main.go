// Command prefill measures spatec's prefill of the sensor-batch workload
// against a real broker: the environment's own (Apache Kafka in its
// container on local-containers), brought up as spatec exec brings it up,
// its schema registered with the environment's registry.
//
// It measures two things, in this order:
//
//   - memory: the whole published dataset (-batches, 1,500,000 batches,
//     about 6 GB) prefilled into a fresh topic, and this process's peak
//     resident memory (VmHWM) when it is done: taken first, before the
//     comparison below holds its messages in memory;
//   - rate: spatec's prefill of -compare batches against a bare franz-go
//     produce loop writing the same bytes (every message encoded before
//     its clock starts, the same producer settings), alternated -rounds
//     times on fresh topics, and their ratio.
//
// Usage (bench/run.sh prefill runs it):
//
//	go run ./bench/prefill [-env local-containers] [-batches 1500000] [-compare 100000] [-rounds 4] [-broker-cpus 1]
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"spatec.dev/spatec/compiler"
	"spatec.dev/spatec/exec"
	"spatec.dev/spatec/exec/broker"
	"spatec.dev/spatec/exec/engine/docker"
	"spatec.dev/spatec/exec/hostlock"
	"spatec.dev/spatec/exec/progress"
	"spatec.dev/spatec/exec/registry"
	"spatec.dev/spatec/workloads"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "prefill: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	envName := flag.String("env", "local-containers", "environment whose broker and registry to prefill")
	batches := flag.Int64("batches", 1_500_000, "batches of the memory measurement (the published dataset's)")
	compare := flag.Int64("compare", 100_000, "batches of each round of the rate comparison")
	rounds := flag.Int("rounds", 4, "rounds of the rate comparison, each a bare loop and spatec's prefill, in turns first")
	brokerCPUs := flag.Float64("broker-cpus", 1, "the broker's CPU cap for this measurement (0: the environment's): the clients are measured, not a broker throttled to a fraction of a core")
	flag.Parse()

	root, err := repoRoot()
	if err != nil {
		return err
	}
	tree, err := compiler.Load(compiler.Options{Dir: root})
	if err != nil {
		return err
	}
	env, err := tree.Environment(*envName)
	if err != nil {
		return err
	}
	if *brokerCPUs > 0 {
		fmt.Fprintf(os.Stderr, "the broker runs at %g CPUs for this measurement (%s gives it %g)\n", *brokerCPUs, *envName, env.Infra.Broker.CPUs)
		env.Infra.Broker.CPUs = *brokerCPUs
	}
	wl, ok := env.Workloads["sensor-batch"]
	if !ok {
		return fmt.Errorf("%s hosts no sensor-batch workload", *envName)
	}
	e, err := docker.New(ctx)
	if err != nil {
		return err
	}
	defer e.Close()
	cache, _ := os.UserCacheDir()
	r := &exec.Runner{
		Engine: e, Cgroups: exec.HostCgroups{}, Progress: progress.New(os.Stderr), Log: os.Stderr,
		Version: "bench", Commit: "bench", SourceDir: root, CacheDir: filepath.Join(cache, "spatec"), LockPath: hostlock.DefaultPath,
	}
	sess, err := r.Open(ctx, *env, false)
	if err != nil {
		return err
	}
	defer sess.Close()
	url, err := sess.RegistryURL()
	if err != nil {
		return err
	}
	id, err := registry.Register(ctx, url, wl.Avro.Subject, wl.Avro.Schema)
	if err != nil {
		return err
	}
	c := sess.Broker()

	// Memory: the whole dataset, before anything else is held. What the
	// process took to get here (the CUE tree evaluated, the session
	// opened) is reported apart: the peak is reset before the prefill.
	before, err := memory("VmHWM")
	if err != nil {
		return err
	}
	big, err := workloads.Open(wl, *batches, id)
	if err != nil {
		return err
	}
	runtime.GC()
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		return fmt.Errorf("resetting the peak resident memory: %w", err)
	}
	if err := c.EnsureTopic(ctx, "spatec-prefill-memory", env.Partitions); err != nil {
		return err
	}
	start := time.Now()
	done, err := c.Prefill(ctx, "spatec-prefill-memory", big, nil)
	if err != nil {
		return err
	}
	took := time.Since(start)
	hwm, err := memory("VmHWM")
	if err != nil {
		return err
	}
	fmt.Printf("memory: %d batches (%.2f GB) prefilled in %s (%.0f msg/s, %.0f MB/s); peak resident memory %.1f MiB during the prefill (target < 256 MiB), %.1f MiB before it (the tree evaluated, the session opened)\n",
		done.Produced, float64(done.Bytes)/1e9, took.Round(time.Second), float64(done.Produced)/took.Seconds(),
		float64(done.Bytes)/1e6/took.Seconds(), float64(hwm)/(1<<20), float64(before)/(1<<20))
	if err := c.DeleteTopic(ctx, "spatec-prefill-memory"); err != nil {
		return err
	}

	// Rate: the same bytes, made before the bare loop's clock starts.
	small, err := workloads.Open(wl, *compare, id)
	if err != nil {
		return err
	}
	keys, values, err := encodeAll(small)
	if err != nil {
		return err
	}
	var bare, ours time.Duration
	for n := range *rounds {
		timeBare := func() (time.Duration, error) {
			return produceBare(ctx, c, fmt.Sprintf("spatec-prefill-bare-%d", n), env.Partitions, keys, values)
		}
		timeOurs := func() (time.Duration, error) {
			topic := fmt.Sprintf("spatec-prefill-%d", n)
			if err := c.EnsureTopic(ctx, topic, env.Partitions); err != nil {
				return 0, err
			}
			defer func() { _ = c.DeleteTopic(context.WithoutCancel(ctx), topic) }()
			start := time.Now()
			_, err := c.Prefill(ctx, topic, small, nil)
			return time.Since(start), err
		}
		// In turns first, so that neither always follows the other's
		// load on the broker.
		first, second := timeBare, timeOurs
		if n%2 == 1 {
			first, second = timeOurs, timeBare
		}
		t1, err := first()
		if err != nil {
			return err
		}
		t2, err := second()
		if err != nil {
			return err
		}
		b, p := t1, t2
		if n%2 == 1 {
			b, p = t2, t1
		}
		bare, ours = bare+b, ours+p
		fmt.Printf("round %d: bare %.0f msg/s, prefill %.0f msg/s\n", n+1, float64(*compare)/b.Seconds(), float64(*compare)/p.Seconds())
	}
	msgs := float64(*compare) * float64(*rounds)
	fmt.Printf("rate: prefill %.0f msg/s vs bare franz-go %.0f msg/s over %d rounds of %d batches: %.2fx (target >= 0.8x)\n",
		msgs/ours.Seconds(), msgs/bare.Seconds(), *rounds, *compare, bare.Seconds()/ours.Seconds())
	return nil
}

// encodeAll makes every message of ds, key and value.
func encodeAll(ds workloads.Dataset) (keys, values [][]byte, err error) {
	w := ds.NewWriter()
	for i := range ds.Messages() {
		msg, keyLen, err := w.AppendMessage(nil, i)
		if err != nil {
			return nil, nil, err
		}
		keys, values = append(keys, msg[:keyLen]), append(values, msg[keyLen:])
	}
	return keys, values, nil
}

// produceBare writes the messages to a fresh topic in a plain franz-go
// loop, with the prefill's producer settings, and times the loop and its
// flush (as Prefill is timed: the topic made before the clock starts);
// the topic is deleted after.
func produceBare(ctx context.Context, c *broker.Client, topic string, partitions int, keys, values [][]byte) (time.Duration, error) {
	if err := c.EnsureTopic(ctx, topic, partitions); err != nil {
		return 0, err
	}
	defer func() { _ = c.DeleteTopic(context.WithoutCancel(ctx), topic) }()
	start := time.Now()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.Seeds()...)}, broker.ProducerOpts(topic)...)...)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	var failed atomic.Int64
	for i := range values {
		cl.Produce(ctx, &kgo.Record{Topic: topic, Partition: int32(i % partitions), Key: keys[i], Value: values[i]}, func(_ *kgo.Record, err error) {
			if err != nil {
				failed.Add(1)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return 0, err
	}
	if n := failed.Load(); n > 0 {
		return 0, fmt.Errorf("%d records of the bare loop failed", n)
	}
	return time.Since(start), nil
}

// memory is a figure of this process's resident memory (VmHWM, its peak
// since the last reset; VmRSS, now), in bytes.
func memory(field string) (int64, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			var kb int64
			if _, err := fmt.Sscanf(strings.TrimSpace(rest), "%d kB", &kb); err != nil {
				return 0, err
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("no %s in /proc/self/status", field)
}

// repoRoot is the module root above the working directory.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "cue.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no cue.mod above the working directory; run from the checkout")
		}
		dir = parent
	}
}
