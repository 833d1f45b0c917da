package broker

import (
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"spatec.dev/spatec/workloads/json-rows"
)

// TestPrefillBatchesStayWithinTheHarnessBound prefills one partition with
// 4 kB messages and reads the topic back batch by batch: the producer must
// fill batches, uncompressed and never past the bound the harness's
// producer writes (a 1 MiB bound, batch.size read alone, would pass it).
func TestPrefillBatchesStayWithinTheHarnessBound(t *testing.T) {
	_, c := startBroker(t, 1)
	ctx := testCtx(t)
	if err := c.EnsureTopic(ctx, "events", 1); err != nil {
		t.Fatal(err)
	}
	const messageBytes = 4000
	s := jsonrows.Spec{Dataset: "v1", Messages: 2000, EventsPerMessage: 2, MessageBytes: messageBytes}
	if _, err := c.Prefill(ctx, "events", dataset(t, s), nil); err != nil {
		t.Fatal(err)
	}
	batches := recordBatches(t, c, "events", 0)
	// Full: one more message (its value, key and framing, which franz-go
	// counts generously while it does not know the produce version) would
	// not have fitted.
	const fullFrom = prefillBatchBytes - 3*messageBytes
	var full, largest int
	for k, b := range batches {
		size := batchBytes(b)
		largest = max(largest, size)
		if size > prefillBatchBytes {
			t.Errorf("batch %d (offset %d) is %d bytes, over the harness's %d", k, b.FirstOffset, size, prefillBatchBytes)
		}
		if codec := b.Attributes & 0x07; codec != 0 {
			t.Errorf("batch %d (offset %d) is compressed (codec %d); the harness's are not", k, b.FirstOffset, codec)
		}
		if size >= fullFrom {
			full++
		}
	}
	if full == 0 {
		t.Errorf("no batch of %d is full (the largest is %d bytes); a prefill fills its batches", len(batches), largest)
	}
	t.Logf("%d batches, %d full, the largest %d bytes", len(batches), full, largest)
}

// TestPrefillLingersAsTheHarness prefills one partition in bursts smaller
// than a batch (a slab of 4,096 small messages), pausing after each burst
// (in the progress callback) for longer than the linger. A batch that is
// not full must wait the harness's linger for more messages before it is
// sent: its produce request reaches the broker at least prefillLinger after
// its first record was produced (the batch's first timestamp). Without a
// linger, a burst goes out in pieces, the first at once. Only the last
// batch, which the final flush sends at once, is exempt.
func TestPrefillLingersAsTheHarness(t *testing.T) {
	e, c := startBroker(t, 1)
	ctx := testCtx(t)
	if err := c.EnsureTopic(ctx, "events", 1); err != nil {
		t.Fatal(err)
	}
	// When each batch's produce request arrived, by the batch's first
	// sequence number; a retried request keeps its first arrival.
	var (
		mu      sync.Mutex
		arrived = map[int32]time.Time{}
	)
	e.cluster.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		e.cluster.KeepControl()
		now := time.Now()
		for _, tp := range req.(*kmsg.ProduceRequest).Topics {
			for _, p := range tp.Partitions {
				var b kmsg.RecordBatch
				if err := b.ReadFrom(p.Records); err != nil {
					continue
				}
				mu.Lock()
				if _, seen := arrived[b.FirstSequence]; !seen {
					arrived[b.FirstSequence] = now
				}
				mu.Unlock()
			}
		}
		return nil, nil, false // observed only; the broker answers
	})

	s := jsonrows.Spec{Dataset: "v1", Messages: 4 * maxSlabRecords, EventsPerMessage: 1, MessageBytes: 150}
	pause := func(done, total int64) {
		if done < total {
			time.Sleep(3 * prefillLinger)
		}
	}
	if _, err := c.Prefill(ctx, "events", dataset(t, s), pause); err != nil {
		t.Fatal(err)
	}
	batches := recordBatches(t, c, "events", 0)
	if len(batches) < 3 {
		t.Fatalf("%d batches; four bursts under a batch each should make at least three", len(batches))
	}
	mu.Lock()
	defer mu.Unlock()
	for k, b := range batches[:len(batches)-1] {
		at, ok := arrived[b.FirstSequence]
		if !ok {
			t.Errorf("batch %d (offset %d, sequence %d) was never seen arriving", k, b.FirstOffset, b.FirstSequence)
			continue
		}
		if waited := at.Sub(time.UnixMilli(b.FirstTimestamp)); waited < prefillLinger {
			t.Errorf("batch %d (offset %d) of %d bytes was sent %v after its first record; a batch that is not full waits %v",
				k, b.FirstOffset, batchBytes(b), waited, prefillLinger)
		}
	}
}

// batchBytes is a record batch's size as a broker measures it against
// max.message.bytes: the whole batch, header included.
func batchBytes(b kmsg.RecordBatch) int { return int(b.Length) + 12 } // the first offset and the length itself

// recordBatches reads partition part of topic back as the record batches
// the broker keeps, with raw fetch requests: a consumer hands out records
// and hides where one batch ends.
func recordBatches(t *testing.T, c *Client, topic string, part int32) []kmsg.RecordBatch {
	t.Helper()
	ctx := testCtx(t)
	meta := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topic)
	meta.Topics = append(meta.Topics, mt)
	mresp, err := meta.RequestWith(ctx, c.cl)
	if err != nil || len(mresp.Topics) != 1 {
		t.Fatalf("metadata of %s: %v", topic, err)
	}
	var (
		out    []kmsg.RecordBatch
		offset int64
	)
	for {
		req := kmsg.NewPtrFetchRequest()
		req.MaxWaitMillis = 10
		req.MaxBytes = 64 << 20
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic = topic
		ft.TopicID = mresp.Topics[0].TopicID // fetch v13 names topics by ID
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition = part
		fp.FetchOffset = offset
		fp.PartitionMaxBytes = 64 << 20
		ft.Partitions = append(ft.Partitions, fp)
		req.Topics = append(req.Topics, ft)
		resp, err := req.RequestWith(ctx, c.cl)
		if err != nil {
			t.Fatalf("fetching %s/%d at offset %d: %v", topic, part, offset, err)
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("fetching %s/%d at offset %d: the response has %d topics", topic, part, offset, len(resp.Topics))
		}
		rp := resp.Topics[0].Partitions[0]
		if rp.ErrorCode != 0 {
			t.Fatalf("fetching %s/%d at offset %d: error code %d", topic, part, offset, rp.ErrorCode)
		}
		raw := rp.RecordBatches
		if len(raw) == 0 {
			return out
		}
		for len(raw) > 0 {
			var b kmsg.RecordBatch
			if err := b.ReadFrom(raw); err != nil {
				t.Fatalf("reading a record batch of %s/%d: %v", topic, part, err)
			}
			raw = raw[int(b.Length)+12:]
			out = append(out, b)
			offset = b.FirstOffset + int64(b.LastOffsetDelta) + 1
		}
		if offset >= rp.HighWatermark {
			return out
		}
	}
}
