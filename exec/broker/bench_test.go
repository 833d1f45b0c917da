package broker

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"spatec.dev/spatec/workloads/json-rows"
)

// The benchmarks below write the same messages to the same embedded broker
// with the same producer settings. Read them side by side:
//
//	go test -run '^$' -bench 'Prefill|BareProduce' -benchtime 5x ./exec/broker
//
// BareProduce is the floor of what franz-go does (values made before the
// timer starts, no checks); Prefill adds generating each message, the depth
// check and progress reporting. PrefillVsBare alternates the two in every
// iteration and reports their ratio, which holds up better than two
// separate figures on a busy machine.

var benchSpec = jsonrows.Spec{Dataset: "v1", Messages: 200_000, EventsPerMessage: 1, MessageBytes: 256}

const benchPartitions = 4

func BenchmarkPrefill(b *testing.B) {
	_, c := startBroker(b, benchPartitions)
	b.SetBytes(benchSpec.Messages * int64(benchSpec.MessageBytes))
	var spent time.Duration
	for n := 0; b.Loop(); n++ {
		spent += timePrefill(b, c, "prefill-"+strconv.Itoa(n))
	}
	b.ReportMetric(float64(benchSpec.Messages)*float64(b.N)/spent.Seconds(), "msgs/s")
}

func BenchmarkBareProduce(b *testing.B) {
	_, c := startBroker(b, benchPartitions)
	keys, values := bareMessages(b)
	b.SetBytes(benchSpec.Messages * int64(benchSpec.MessageBytes))
	var spent time.Duration
	for n := 0; b.Loop(); n++ {
		spent += timeBare(b, c, "bare-"+strconv.Itoa(n), keys, values)
	}
	b.ReportMetric(float64(benchSpec.Messages)*float64(b.N)/spent.Seconds(), "msgs/s")
}

func BenchmarkPrefillVsBare(b *testing.B) {
	_, c := startBroker(b, benchPartitions)
	keys, values := bareMessages(b)
	var prefill, bare time.Duration
	for n := 0; b.Loop(); n++ {
		bare += timeBare(b, c, "bare-"+strconv.Itoa(n), keys, values)
		prefill += timePrefill(b, c, "prefill-"+strconv.Itoa(n))
	}
	msgs := float64(benchSpec.Messages) * float64(b.N)
	b.ReportMetric(msgs/prefill.Seconds(), "prefill-msgs/s")
	b.ReportMetric(msgs/bare.Seconds(), "bare-msgs/s")
	b.ReportMetric(bare.Seconds()/prefill.Seconds(), "prefill/bare")
}

// timePrefill prefills a fresh topic and returns how long Prefill took;
// creating and deleting the topic are not timed.
func timePrefill(b *testing.B, c *Client, topic string) time.Duration {
	ctx := context.Background()
	b.StopTimer()
	defer b.StartTimer()
	if err := c.EnsureTopic(ctx, topic, benchPartitions); err != nil {
		b.Fatal(err)
	}
	b.StartTimer()
	start := time.Now()
	got, err := c.Prefill(ctx, topic, dataset(b, benchSpec), func(int64, int64) {})
	spent := time.Since(start)
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	if got.Produced != benchSpec.Messages {
		b.Fatalf("prefill produced %d, want %d", got.Produced, benchSpec.Messages)
	}
	if err := c.DeleteTopic(ctx, topic); err != nil {
		b.Fatal(err)
	}
	return spent
}

func bareMessages(b *testing.B) (keys, values [][]byte) {
	values = make([][]byte, benchSpec.Messages)
	keys = make([][]byte, benchSpec.Messages)
	for i := range values {
		var err error
		if values[i], err = benchSpec.Message(int64(i)); err != nil {
			b.Fatal(err)
		}
		keys[i] = strconv.AppendInt(nil, int64(i), 10)
	}
	return keys, values
}

// timeBare produces pre-made messages to a fresh topic in a plain loop and
// returns how long the loop and its flush took.
func timeBare(b *testing.B, c *Client, topic string, keys, values [][]byte) time.Duration {
	ctx := context.Background()
	b.StopTimer()
	defer b.StartTimer()
	if err := c.EnsureTopic(ctx, topic, benchPartitions); err != nil {
		b.Fatal(err)
	}
	b.StartTimer()
	start := time.Now()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.seeds...)}, ProducerOpts(topic)...)...)
	if err != nil {
		b.Fatal(err)
	}
	var failed atomic.Int64
	promise := func(_ *kgo.Record, err error) {
		if err != nil {
			failed.Add(1)
		}
	}
	for i := range values {
		cl.Produce(ctx, &kgo.Record{Topic: topic, Partition: int32(i % benchPartitions), Key: keys[i], Value: values[i]}, promise)
	}
	err = cl.Flush(ctx)
	spent := time.Since(start)
	b.StopTimer()
	cl.Close()
	if err != nil {
		b.Fatal(err)
	}
	if failed.Load() > 0 {
		b.Fatalf("%d records failed", failed.Load())
	}
	if err := c.DeleteTopic(ctx, topic); err != nil {
		b.Fatal(err)
	}
	return spent
}

// BenchmarkConsumeCeiling reads a prefilled topic to its end once per
// iteration, as `spatec ceiling --measure` does.
func BenchmarkConsumeCeiling(b *testing.B) {
	_, c := startBroker(b, benchPartitions)
	ctx := context.Background()
	if err := c.EnsureTopic(ctx, "ceiling", benchPartitions); err != nil {
		b.Fatal(err)
	}
	if _, err := c.Prefill(ctx, "ceiling", dataset(b, benchSpec), nil); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(benchSpec.Messages * int64(benchSpec.MessageBytes))
	var read int64
	var spent time.Duration
	for b.Loop() {
		got, err := c.ConsumeCeiling(ctx, "ceiling", 0)
		if err != nil {
			b.Fatal(err)
		}
		if !got.Complete || got.Messages != benchSpec.Messages {
			b.Fatalf("ceiling read %+v, want all %d messages", got, benchSpec.Messages)
		}
		read += got.Messages
		spent += got.Elapsed
	}
	b.ReportMetric(float64(read)/spent.Seconds(), "msgs/s")
}
