package broker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"spatec.dev/spatec/workloads"
)

// Prefilled tells what Prefill did.
type Prefilled struct {
	// Reused is true when the topic already held the plan's dataset and
	// nothing was produced.
	Reused bool
	// Produced is how many messages this call produced, and Bytes their
	// values' size.
	Produced int64
	Bytes    int64
	// Elapsed is the time spent producing (zero when reused).
	Elapsed time.Duration
}

// ProducerOpts are the producer settings of the prefill, shared with the
// bare produce loops of the benchmarks so that the two differ only by
// what Prefill adds. What waits to be acknowledged is bounded in bytes, not
// records: franz-go's 50,000 records are 200 MB of 4 kB sensor batches.
//
// The record batches are cut as the reference harness's corpus producer
// (librdkafka, linger.ms 20, batch.size 1048576, compression.type none)
// cuts them, since every arm reads the topic batch by batch and a batch's
// size is part of what a fetch costs:
//   - not compressed, so every arm reads exactly the messages' bytes and
//     pays no decompression;
//   - at most prefillBatchBytes per batch: librdkafka bounds a batch by the
//     smaller of batch.size and message.max.bytes, and the harness leaves
//     message.max.bytes at librdkafka's default of 1,000,000, so its
//     batches stop short of 1 MB, not of batch.size's 1 MiB (franz-go's
//     own default, 1,000,012, is within a few bytes of it; a 1 MiB bound
//     would make batches the harness never writes);
//   - a batch that is not full waits prefillLinger for more messages
//     before it is sent, where franz-go would send it at once.
//
// One difference remains, which no franz-go option removes: franz-go's
// linger only holds back starting a produce request, and a request, once
// started, carries the head batch of every partition, lingering or not
// (so when one batch fills, the partial batches behind it and beside it go
// too); librdkafka holds each partition's partial batch for its linger.
// The two agree while the prefill outruns its broker, when every batch
// but the last fills; they differ when making the messages is slower.
func ProducerOpts(topic string) []kgo.Opt {
	return []kgo.Opt{
		kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(prefillCompression),
		kgo.ProducerBatchMaxBytes(prefillBatchBytes),
		kgo.ProducerLinger(prefillLinger),
		kgo.MaxBufferedBytes(maxBufferedBytes),
	}
}

// The harness's batch bound and linger (see ProducerOpts). Every broker
// spatec runs takes a batch of this bound: no environment lowers a
// broker's max.message.bytes (or Redpanda's batch limit), kfake's default
// is 1,048,588, and spatec's prefills wrote batches of up to franz-go's
// default 1,000,012 bytes, more than this bound, to every broker it runs.
const (
	prefillBatchBytes = 1_000_000
	prefillLinger     = 20 * time.Millisecond
)

// prefillCompression is the harness's compression.type, none: every arm
// reads exactly the messages' bytes.
var prefillCompression = kgo.NoCompression()

// maxBufferedBytes bounds the bytes a prefill holds unacknowledged.
const maxBufferedBytes = 32 << 20

// PartitionOf is the partition message i is written to: i mod partitions,
// so every prefill of a dataset has the same layout, and partition p holds
// messages p, p+P, p+2P… in offset order.
func PartitionOf(i int64, partitions int) int32 { return int32(i % int64(partitions)) }

// Prefill fills topic with the dataset's messages, idempotently:
//   - a topic already holding exactly spec.Messages messages, laid out as
//     Prefill lays them and starting and ending with the dataset's first
//     and last message, is reused without producing anything;
//   - an empty topic gets every message, message i on PartitionOf(i);
//   - any other depth is refused with an error wrapping ErrDepthMismatch,
//     and a topic of the right depth with other content with one wrapping
//     ErrContentMismatch.
//
// The topic must exist (EnsureTopic). progress, when not nil, is called
// from the calling goroutine as acknowledgements arrive, last with
// done == total.
func (c *Client) Prefill(ctx context.Context, topic string, ds workloads.Dataset, progress func(done, total int64)) (Prefilled, error) {
	spans, err := c.spans(ctx, topic)
	if err != nil {
		return Prefilled{}, fmt.Errorf("prefilling topic %s: %w", topic, err)
	}
	var depth int64
	for _, s := range spans {
		depth += s.depth()
	}
	switch {
	case depth == ds.Messages():
		if err := c.verifyContent(ctx, topic, ds, spans); err != nil {
			return Prefilled{}, err
		}
		if progress != nil {
			progress(depth, depth)
		}
		return Prefilled{Reused: true}, nil
	case depth != 0:
		return Prefilled{}, fmt.Errorf("%w: topic %s holds %d messages; the plan expects %d; delete the topic or use another name",
			ErrDepthMismatch, topic, depth, ds.Messages())
	}
	start := time.Now()
	n, bytes, err := c.produce(ctx, topic, len(spans), ds, progress)
	out := Prefilled{Produced: n, Bytes: bytes, Elapsed: time.Since(start)}
	if err != nil {
		return out, fmt.Errorf("prefilling topic %s on %s (%d of %d messages acknowledged): %w", topic, c.addrs(), n, ds.Messages(), err)
	}
	return out, nil
}

// verifyContent checks that a topic of the right depth holds this dataset:
// every partition has the depth the i mod P layout gives it, and the
// dataset's first and last messages sit where that layout puts them. This
// catches another dataset (another tag, message size, event count or
// schema id) at the cost of two record reads.
func (c *Client) verifyContent(ctx context.Context, topic string, ds workloads.Dataset, spans []span) error {
	p := int64(len(spans))
	messages := ds.Messages()
	for part, s := range spans {
		want := messages / p
		if int64(part) < messages%p {
			want++
		}
		if s.depth() != want {
			return fmt.Errorf("%w: topic %s partition %d holds %d messages; the plan's layout (message i on partition i mod %d) puts %d there; delete the topic or use another name",
				ErrContentMismatch, topic, part, s.depth(), p, want)
		}
	}
	if messages == 0 {
		return nil
	}
	type sample struct {
		part int32
		off  int64
		i    int64 // the message the layout puts there
	}
	var samples []sample
	at := map[int32]map[int64]bool{}
	for _, i := range []int64{0, messages - 1} {
		part := PartitionOf(i, len(spans))
		off := spans[part].start + i/p
		samples = append(samples, sample{part, off, i})
		if at[part] == nil {
			at[part] = map[int64]bool{}
		}
		at[part][off] = true
	}
	got, err := c.readAt(ctx, topic, at)
	if err != nil {
		return err
	}
	w := ds.NewWriter()
	for _, s := range samples {
		msg, keyLen, err := w.AppendMessage(nil, s.i)
		if err != nil {
			return err
		}
		if !bytes.Equal(got[s.part][s.off], msg[keyLen:]) {
			return fmt.Errorf("%w: topic %s partition %d offset %d is not message %d of %s; delete the topic or use another name",
				ErrContentMismatch, topic, s.part, s.off, s.i, ds)
		}
	}
	return nil
}

// sampleTimeout bounds reading the sample records: they sit inside the
// partitions' readable ranges, so only a broker in trouble takes longer.
const sampleTimeout = 30 * time.Second

// readAt fetches the values of the records at the given partition offsets.
func (c *Client) readAt(ctx context.Context, topic string, at map[int32]map[int64]bool) (map[int32]map[int64][]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, sampleTimeout)
	defer cancel()
	assign := map[int32]kgo.Offset{}
	left := 0
	for part, offs := range at {
		first := int64(-1)
		for off := range offs {
			if first < 0 || off < first {
				first = off
			}
			left++
		}
		assign[part] = kgo.NewOffset().At(first)
	}
	cl, err := c.newKgo(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: assign}))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	got := map[int32]map[int64][]byte{}
	for left > 0 {
		fetches := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("reading sample records of topic %s: %w", topic, err)
		}
		var ferr error
		fetches.EachError(func(t string, p int32, err error) { ferr = errors.Join(ferr, fmt.Errorf("partition %d: %w", p, err)) })
		if ferr != nil {
			return nil, fmt.Errorf("reading sample records of topic %s: %w", topic, ferr)
		}
		fetches.EachRecord(func(r *kgo.Record) {
			if !at[r.Partition][r.Offset] {
				return
			}
			if got[r.Partition] == nil {
				got[r.Partition] = map[int64][]byte{}
			}
			if _, dup := got[r.Partition][r.Offset]; !dup {
				got[r.Partition][r.Offset] = r.Value
				left--
			}
		})
	}
	return got, nil
}

// Records and their bytes are carved from slabs, so that producing a
// message costs no allocation of its own. A slab holds about slabBytes of
// messages (at least one, at most maxSlabRecords), and each generator may
// make slabsAhead of them ahead of the producer: what a prefill holds
// besides what the producer buffers.
const (
	slabBytes      = 2 << 20
	maxSlabRecords = 4096
	slabsAhead     = 1
)

// slab is a run of consecutive messages ready to produce.
type slab struct {
	records []kgo.Record
	bytes   int64 // the values' size
	err     error
}

// makeSlabs generates the dataset's messages as records, in order, on
// goroutines of their own (one per core: encoding a message can cost more
// than producing it), so that making messages overlaps with producing
// them. Generator g makes slabs g, g+G, g+2G…, and the slabs come out of
// the returned channel in order. It stops early when ctx ends.
func makeSlabs(ctx context.Context, topic string, partitions int, ds workloads.Dataset) <-chan slab {
	messages := ds.Messages()
	slabRecords := int64(maxSlabRecords)
	if messages > 0 {
		first, _, err := ds.NewWriter().AppendMessage(nil, 0)
		if err == nil {
			slabRecords = max(1, min(maxSlabRecords, slabBytes/int64(len(first)+1)))
		}
	}
	slabs := (messages + slabRecords - 1) / slabRecords
	gens := int64(max(1, min(runtime.GOMAXPROCS(0), int(slabs))))
	lanes := make([]chan slab, gens)
	for g := range lanes {
		lanes[g] = make(chan slab, slabsAhead)
		go func(g int64, lane chan<- slab) {
			defer close(lane)
			w := ds.NewWriter()
			for k := g; k < slabs; k += gens {
				first := k * slabRecords
				n := min(slabRecords, messages-first)
				s := slab{records: make([]kgo.Record, n)}
				var data []byte
				for j := range s.records {
					i := first + int64(j)
					start := len(data)
					var keyLen int
					if data, keyLen, s.err = w.AppendMessage(data, i); s.err != nil {
						s.records = nil
						break
					}
					r := &s.records[j]
					r.Topic = topic
					r.Partition = PartitionOf(i, partitions)
					r.Key = data[start : start+keyLen : start+keyLen]
					r.Value = data[start+keyLen : len(data) : len(data)]
					s.bytes += int64(len(r.Value))
					if j == 0 {
						// Room for the rest, from the first message's size;
						// the first record keeps the bytes it was written to.
						data = make([]byte, 0, len(data)*int(n)*9/8+64)
					}
				}
				select {
				case lane <- s:
				case <-ctx.Done():
					return
				}
				if s.err != nil {
					return
				}
			}
		}(int64(g), lanes[g])
	}
	out := make(chan slab)
	go func() {
		defer close(out)
		for k := int64(0); k < slabs; k++ {
			s, ok := <-lanes[k%gens]
			if !ok {
				return
			}
			select {
			case out <- s:
			case <-ctx.Done():
				return
			}
			if s.err != nil {
				return
			}
		}
	}()
	return out
}

// produce writes messages 0..spec.Messages-1 and returns how many were
// acknowledged.
func (c *Client) produce(ctx context.Context, topic string, partitions int, ds workloads.Dataset, progress func(done, total int64)) (acks, bytes int64, err error) {
	cl, err := c.newKgo(ProducerOpts(topic)...)
	if err != nil {
		return 0, 0, err
	}
	defer cl.Close()

	var (
		acked   atomic.Int64
		errOnce sync.Once
		failed  atomic.Bool
		first   error
	)
	promise := func(_ *kgo.Record, err error) {
		if err != nil {
			errOnce.Do(func() { first = err; failed.Store(true) })
			return
		}
		acked.Add(1)
	}

	genCtx, stopGen := context.WithCancel(ctx)
	defer stopGen()
	total := ds.Messages()
	step := max(total/100, 1) // report about every percent
	nextReport := step
	var sent int64
produce:
	for s := range makeSlabs(genCtx, topic, partitions, ds) {
		if s.err != nil {
			stopGen()
			cl.Flush(ctx)
			return acked.Load(), bytes, s.err
		}
		bytes += s.bytes
		for k := range s.records {
			cl.Produce(ctx, &s.records[k], promise)
			if failed.Load() {
				break produce
			}
		}
		sent += int64(len(s.records))
		if progress != nil && sent >= nextReport {
			progress(acked.Load(), total)
			nextReport = (sent/step + 1) * step
		}
	}
	stopGen()
	if err := cl.Flush(ctx); err != nil {
		return acked.Load(), bytes, err
	}
	if failed.Load() {
		return acked.Load(), bytes, first
	}
	if progress != nil {
		progress(acked.Load(), total)
	}
	return acked.Load(), bytes, nil
}
