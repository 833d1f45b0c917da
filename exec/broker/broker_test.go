package broker

import (
	"context"
	"errors"
	"fmt"
	"github.com/twmb/franz-go/pkg/kadm"
	"math"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"spatec.dev/spatec/workloads"
	"spatec.dev/spatec/workloads/json-rows"
)

func startBroker(t testing.TB, partitions int) (*Embedded, *Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	e, err := StartEmbedded(ctx, partitions)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	c, err := NewClient(e.Addrs())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return e, c
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

var spec = jsonrows.Spec{Dataset: "v1", Messages: 3001, EventsPerMessage: 2, MessageBytes: 300}

func TestEmbeddedListensOnAFixedPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	e, err := StartEmbedded(testCtx(t), 2, WithPorts(port))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if got, want := strings.Join(e.Addrs(), ","), "127.0.0.1:"+strconv.Itoa(port); got != want {
		t.Fatalf("embedded broker listens on %s, want %s", got, want)
	}
}

// TestAdvertisedBrokerIsReachedAtItsAdvertisedAddress: a broker in a
// container listens on every interface and advertises one address; here it
// advertises 127.0.0.2 and is bootstrapped through 127.0.0.1, so a client
// that produces and reads back went to the advertised address.
func TestAdvertisedBrokerIsReachedAtItsAdvertisedAddress(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	advertised := "127.0.0.2:" + strconv.Itoa(port)
	e, err := StartEmbedded(testCtx(t), 2, WithAdvertised(advertised))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if got := strings.Join(e.Addrs(), ","); got != advertised {
		t.Fatalf("the broker advertises %s, want %s", got, advertised)
	}
	c, err := NewClient([]string{"127.0.0.1:" + strconv.Itoa(port)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	meta, err := c.adm.BrokerMetadata(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(meta.Brokers) != 1 || fmt.Sprintf("%s:%d", meta.Brokers[0].Host, meta.Brokers[0].Port) != advertised {
		t.Fatalf("metadata names brokers %+v, want one at %s", meta.Brokers, advertised)
	}
	small := jsonrows.Spec{Dataset: "v1", Messages: 100, EventsPerMessage: 1, MessageBytes: 100}
	if err := c.EnsureTopic(testCtx(t), "adv", 2); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Prefill(testCtx(t), "adv", dataset(t, small), nil); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Depth(testCtx(t), "adv"); err != nil || n != 100 {
		t.Fatalf("depth %d, %v; want 100", n, err)
	}

	if _, err := StartEmbedded(testCtx(t), 1, WithAdvertised("spatec-broker:9092")); err == nil || !strings.Contains(err.Error(), "give an IP address and a port") {
		t.Errorf("advertising a host name: err = %v, want a request for an IP address", err)
	}
}

func TestEnsureTopicCreatesOnceAndChecksPartitions(t *testing.T) {
	_, c := startBroker(t, 1)
	ctx := testCtx(t)
	if err := c.EnsureTopic(ctx, "events", 4); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Partitions(ctx, "events"); err != nil || n != 4 {
		t.Fatalf("created topic has %d partitions (err %v), want 4", n, err)
	}
	if err := c.EnsureTopic(ctx, "events", 4); err != nil {
		t.Fatalf("ensuring an existing topic with the same partitions: %v", err)
	}
	err := c.EnsureTopic(ctx, "events", 3)
	if !errors.Is(err, ErrPartitionMismatch) || !strings.Contains(err.Error(), "topic events exists with 4 partitions; the plan declares 3") {
		t.Fatalf("ensuring with another partition count: got %v", err)
	}
}

func TestDepthOfAMissingTopicSaysSo(t *testing.T) {
	_, c := startBroker(t, 1)
	_, err := c.Depth(testCtx(t), "nothing-here")
	if !errors.Is(err, ErrNoTopic) || !strings.Contains(err.Error(), "nothing-here") {
		t.Fatalf("depth of a missing topic: got %v", err)
	}
}

func TestPrefillProducesTheDatasetThenReusesIt(t *testing.T) {
	const partitions = 4
	_, c := startBroker(t, 1)
	ctx := testCtx(t)
	if err := c.EnsureTopic(ctx, "events", partitions); err != nil {
		t.Fatal(err)
	}
	var last, calls int64
	got, err := c.Prefill(ctx, "events", dataset(t, spec), func(done, total int64) {
		if total != spec.Messages || done < last || done > total {
			t.Errorf("progress(%d, %d) after %d: want non-decreasing done ≤ total = %d", done, total, last, spec.Messages)
		}
		last = done
		calls++
	})
	if err != nil {
		t.Fatal(err)
	}
	if got.Reused || got.Produced != spec.Messages {
		t.Fatalf("first prefill: %+v, want %d produced", got, spec.Messages)
	}
	if last != spec.Messages || calls < 2 {
		t.Fatalf("progress ended at %d after %d calls, want %d after several", last, calls, spec.Messages)
	}
	if depth, err := c.Depth(ctx, "events"); err != nil || depth != spec.Messages {
		t.Fatalf("depth after prefill is %d (err %v), want %d", depth, err, spec.Messages)
	}
	assertLayout(t, c, "events", partitions)

	again, err := c.Prefill(ctx, "events", dataset(t, spec), nil)
	if err != nil {
		t.Fatalf("second prefill: %v", err)
	}
	if !again.Reused || again.Produced != 0 {
		t.Fatalf("second prefill: %+v, want the topic reused", again)
	}
	if depth, err := c.Depth(ctx, "events"); err != nil || depth != spec.Messages {
		t.Fatalf("depth after reuse is %d (err %v), want %d", depth, err, spec.Messages)
	}
}

// assertLayout reads the whole topic and checks that partition p offset k
// holds message k*P+p, keyed by its index.
func assertLayout(t *testing.T, c *Client, topic string, partitions int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.seeds...),
		kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := testCtx(t)
	var seen int64
	for seen < spec.Messages {
		fetches := cl.PollFetches(ctx)
		if err := fetches.Err0(); err != nil {
			t.Fatalf("reading back after %d records: %v", seen, err)
		}
		fetches.EachRecord(func(r *kgo.Record) {
			i := r.Offset*int64(partitions) + int64(r.Partition)
			want, err := spec.Message(i)
			if err != nil {
				t.Fatal(err)
			}
			if string(r.Value) != string(want) || string(r.Key) != strconv.FormatInt(i, 10) {
				t.Fatalf("partition %d offset %d holds key %q, want message %d", r.Partition, r.Offset, r.Key, i)
			}
			seen++
		})
	}
}

func TestPrefillRefusesATopicOfAnotherDepth(t *testing.T) {
	_, c := startBroker(t, 1)
	ctx := testCtx(t)
	if err := c.EnsureTopic(ctx, "events", 2); err != nil {
		t.Fatal(err)
	}
	produceRaw(t, c, "events", 10)
	_, err := c.Prefill(ctx, "events", dataset(t, spec), nil)
	if !errors.Is(err, ErrDepthMismatch) {
		t.Fatalf("prefill over 10 foreign messages: got %v, want ErrDepthMismatch", err)
	}
	want := fmt.Sprintf("topic events holds 10 messages; the plan expects %d; delete the topic or use another name", spec.Messages)
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not say %q", err, want)
	}
	if depth, _ := c.Depth(ctx, "events"); depth != 10 {
		t.Fatalf("refused prefill changed the depth to %d", depth)
	}
}

func TestPrefillRefusesAnotherDatasetOfTheSameDepth(t *testing.T) {
	_, c := startBroker(t, 1)
	ctx := testCtx(t)
	if err := c.EnsureTopic(ctx, "events", 3); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Prefill(ctx, "events", dataset(t, spec), nil); err != nil {
		t.Fatal(err)
	}
	other := spec
	other.Dataset = "v2"
	_, err := c.Prefill(ctx, "events", dataset(t, other), nil)
	if !errors.Is(err, ErrContentMismatch) || !strings.Contains(err.Error(), `is not message 0 of 3001 messages of dataset "v2"`) {
		t.Fatalf("prefill of dataset v2 over v1: got %v", err)
	}
}

func TestPrefillOfAMissingTopicSaysSo(t *testing.T) {
	_, c := startBroker(t, 1)
	_, err := c.Prefill(testCtx(t), "absent", dataset(t, spec), nil)
	if !errors.Is(err, ErrNoTopic) {
		t.Fatalf("prefill of a missing topic: got %v", err)
	}
}

func TestConsumeCeilingReadsEveryMessage(t *testing.T) {
	_, c := startBroker(t, 1)
	ctx := testCtx(t)
	if err := c.EnsureTopic(ctx, "events", 4); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Prefill(ctx, "events", dataset(t, spec), nil); err != nil {
		t.Fatal(err)
	}
	got, err := c.ConsumeCeiling(ctx, "events", 0)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Complete || got.Messages != spec.Messages || got.Bytes != spec.Messages*int64(spec.MessageBytes) {
		t.Fatalf("ceiling read %+v, want all %d messages of %d bytes", got, spec.Messages, spec.MessageBytes)
	}
	if want := got.MessagesPerSec * float64(spec.MessageBytes); got.MessagesPerSec <= 0 || math.Abs(got.BytesPerSec-want) > 1e-9*want {
		t.Fatalf("ceiling rates %+v are inconsistent with its counts", got)
	}
}

func TestConsumeCeilingOfAnEmptyTopicIsAnError(t *testing.T) {
	_, c := startBroker(t, 1)
	ctx := testCtx(t)
	if err := c.EnsureTopic(ctx, "empty", 2); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ConsumeCeiling(ctx, "empty", 0); err == nil || !strings.Contains(err.Error(), "is empty; prefill it first") {
		t.Fatalf("ceiling of an empty topic: got %v", err)
	}
}

func produceRaw(t *testing.T, c *Client, topic string, n int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.seeds...), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := 0; i < n; i++ {
		if err := cl.ProduceSync(testCtx(t), kgo.StringRecord("foreign")).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestPrefillRejectsAnInvalidSpec(t *testing.T) {
	bad := jsonrows.Spec{Dataset: "v1", Messages: 10, EventsPerMessage: 1, MessageBytes: 20}
	if _, err := workloads.JSONRows(bad); err == nil || !strings.Contains(err.Error(), "message size 20 bytes is too small") {
		t.Fatalf("prefill with 20-byte messages: got %v", err)
	}
}

// TestResetGroups checks that a repetition starts from the topic's start:
// a group that committed offsets on the topic is deleted, one on another
// topic is left alone.
func TestResetGroups(t *testing.T) {
	ctx := context.Background()
	emb, err := StartEmbedded(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer emb.Close()
	c, err := NewClient(emb.Addrs())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, topic := range []string{"drained", "other"} {
		if err := c.EnsureTopic(ctx, topic, 2); err != nil {
			t.Fatal(err)
		}
	}
	commit := func(group, topic string) {
		offs := kadm.Offsets{}
		offs.Add(kadm.Offset{Topic: topic, Partition: 0, At: 1})
		if _, err := c.adm.CommitOffsets(ctx, group, offs); err != nil {
			t.Fatalf("committing for %s: %v", group, err)
		}
	}
	commit("arm-a", "drained")
	commit("arm-b", "other")
	got, err := c.ResetGroups(ctx, "drained", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != "arm-a" {
		t.Fatalf("reset %v, want [arm-a]", got)
	}
	listed, err := c.adm.ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	groups := listed.Groups()
	if len(groups) != 1 || groups[0] != "arm-b" {
		t.Fatalf("groups left: %v, want [arm-b]", groups)
	}
}

// TestResetGroupsWaitsForMembersToLeave: a group still holding a consumer
// cannot be deleted; ResetGroups waits until it leaves, says so once, and
// gives up with the members named when its context ends first.
func TestResetGroupsWaitsForMembersToLeave(t *testing.T) {
	ctx := context.Background()
	emb, c := startBroker(t, 1)
	if err := c.EnsureTopic(ctx, "drained", 1); err != nil {
		t.Fatal(err)
	}
	small := jsonrows.Spec{Dataset: "v1", Messages: 10, EventsPerMessage: 1, MessageBytes: 100}
	if _, err := c.Prefill(ctx, "drained", dataset(t, small), nil); err != nil {
		t.Fatal(err)
	}
	member, err := kgo.NewClient(kgo.SeedBrokers(emb.Addrs()...), kgo.ConsumerGroup("arm"), kgo.ConsumeTopics("drained"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	for polled := 0; polled < 10; {
		fs := member.PollFetches(testCtx(t))
		polled += fs.NumRecords()
	}
	if err := member.CommitUncommittedOffsets(testCtx(t)); err != nil {
		t.Fatal(err)
	}

	short, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if _, err := c.ResetGroups(short, "drained", nil); err == nil || !strings.Contains(err.Error(), "consumer group arm still has 1 members") {
		t.Fatalf("resetting a group with a live member: %v", err)
	}
	var told []string
	time.AfterFunc(time.Second, member.Close) // the member leaves
	got, err := c.ResetGroups(testCtx(t), "drained", func(group string, members int) { told = append(told, fmt.Sprintf("%s/%d", group, members)) })
	if err != nil || len(got) != 1 || got[0] != "arm" {
		t.Fatalf("ResetGroups once the member left: %v, %v", got, err)
	}
	if len(told) != 1 || told[0] != "arm/1" {
		t.Errorf("waiting was told %v; want [arm/1] once", told)
	}
}

// dataset is the prefill dataset of a json-rows spec.
func dataset(t testing.TB, spec jsonrows.Spec) workloads.Dataset {
	t.Helper()
	ds, err := workloads.JSONRows(spec)
	if err != nil {
		t.Fatal(err)
	}
	return ds
}
