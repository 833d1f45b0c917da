package sensorbatch

import (
	"context"
	"errors"
	"math/big"
	"runtime"
	"sync"
	"sync/atomic"

	"spatec.dev/spatec/workloads/checksum"
)

// The checksum's sums, by the names workload.cue gives them. Each is a sum
// over the distinct rows a correct arm lands, in closed form here and as
// one SQL aggregate on the sink; together they check every column, so an
// arm that skips any step of the transform (or writes tags = [], or lands
// timestamps in 1970) fails the gate.
const (
	SumValue       = "value_sum"
	SumValueScaled = "value_scaled_sum"
	SumSensor      = "sensor_sum"
	SumRegion      = "region_sum"
	SumName        = "name_sum"
	SumUnit        = "unit_sum"
	SumTagCount    = "tag_count_sum"
	SumTag         = "tag_sum"
	SumBatchTS     = "batch_ts_sum"
	SumSendTS      = "send_ts_sum"
	SumNullQuality = "null_quality_rows"
)

// SumNames lists the sums this generator computes, in the order of the
// accumulator's slots below.
var SumNames = []string{SumValue, SumValueScaled, SumSensor, SumRegion, SumName, SumUnit, SumTagCount, SumTag, SumBatchTS, SumSendTS, SumNullQuality}

// The accumulator's slots, one per name of SumNames.
const (
	slotValue = iota
	slotValueScaled
	slotSensor
	slotRegion
	slotName
	slotUnit
	slotTagCount
	slotTag
	slotBatchTS
	slotSendTS
	slotNullQuality
	slots
)

// expectChunk is how many batches a worker takes at a time.
const expectChunk = 4096

// accumulator holds one worker's sums.
type accumulator struct {
	rows uint64
	sums [slots]checksum.Sum
}

func (a *accumulator) merge(b *accumulator) {
	a.rows += b.rows
	for i := range a.sums {
		a.sums[i].AddSum(b.sums[i])
	}
}

// pair is a string's fingerprint: its head and tail.
type pair struct{ head, tail uint64 }

// tagFingerprints holds the fingerprint of every join of up to three of the
// corpus's tags, by the tags' indices, when there are few tags: joining an
// event's tags for every row is most of the expectation's cost otherwise.
// It is made before the workers start and only read by them.
type tagFingerprints struct {
	tags  uint64
	table []pair // by count and indices; nil when there are too many tags
}

// maxMemoTags bounds the tags whose joins are tabled (4 × tags^3 entries).
const maxMemoTags = 64

func newTagFingerprints(k *Corpus) *tagFingerprints {
	tf := &tagFingerprints{tags: k.c.Tags}
	if k.c.Tags > maxMemoTags {
		return tf
	}
	t := k.c.Tags
	tf.table = make([]pair, 4*t*t*t)
	for tc := range uint64(4) {
		for key := tc * t * t * t; key < (tc+1)*t*t*t; key++ {
			idx := [3]uint64{key / (t * t) % t, key / t % t, key % t}
			var parts [3]string
			for j := range tc {
				parts[j] = k.tags[idx[j]]
			}
			tf.table[key].head, tf.table[key].tail = checksum.Fingerprint(parts[:tc]...)
		}
	}
	return tf
}

// of returns the fingerprint of event s of batch b's tc tags joined.
func (tf *tagFingerprints) of(k *Corpus, b, s, tc uint64) pair {
	var idx [3]uint64
	for j := range tc {
		idx[j] = k.tagIndex(b, s, j)
	}
	if tf.table == nil {
		var parts [3]string
		for j := range tc {
			parts[j] = k.tags[idx[j]]
		}
		h, t := checksum.Fingerprint(parts[:tc]...)
		return pair{h, t}
	}
	t := tf.tags
	return tf.table[((tc*t+idx[0])*t+idx[1])*t+idx[2]]
}

// Expect computes the expectation for the first batches batches, over every
// core. progress, when not nil, is called with the batches done so far.
func (k *Corpus) Expect(ctx context.Context, batches uint64, progress func(done uint64)) (checksum.Expected, error) {
	table := func(ss []string, f func(string) string) []pair {
		out := make([]pair, len(ss))
		for i, s := range ss {
			out[i].head, out[i].tail = checksum.Fingerprint(f(s))
		}
		return out
	}
	same := func(s string) string { return s }
	sensors := table(k.sensors, same)
	regionFP := table(k.regions, same)
	namesUpper := table(k.names, ASCIIUpper)
	units := table(k.c.Units, same)
	empty := pair{} // the fingerprint of '', a coalesced null region
	tagFP := newTagFingerprints(k)

	var next atomic.Uint64
	var done atomic.Uint64
	workers := runtime.GOMAXPROCS(0)
	results := make([]accumulator, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			acc := &results[w]
			for ctx.Err() == nil {
				lo := next.Add(expectChunk) - expectChunk
				if lo >= batches {
					return
				}
				hi := min(lo+expectChunk, batches)
				for b := lo; b < hi; b++ {
					sensor := sensors[k.sensorIndex(b)]
					region := empty
					if r := k.regionIndex(b); r >= 0 {
						region = regionFP[r]
					}
					batchTS := uint64(k.batchTSMillis(b))
					sendTS := uint64(k.prefillSendTSMicros(b))
					for i := range k.c.EventsPerBatch {
						s := uint64(i)
						if !k.Keeps(b, s) {
							continue
						}
						v := k.value(b, s)
						acc.rows++
						acc.sums[slotValue].AddUnsigned(uint64(v))
						acc.sums[slotValueScaled].AddUnsigned(uint64(ValueScaled(v, int32(i))))
						acc.sums[slotSensor].AddFingerprint(sensor.head, sensor.tail)
						acc.sums[slotRegion].AddFingerprint(region.head, region.tail)
						n := namesUpper[k.nameIndex(b, s)]
						acc.sums[slotName].AddFingerprint(n.head, n.tail)
						u := units[k.unitIndex(b, s)]
						acc.sums[slotUnit].AddFingerprint(u.head, u.tail)
						tc := k.tagCount(b, s)
						acc.sums[slotTagCount].AddUnsigned(tc)
						tf := tagFP.of(k, b, s, tc)
						acc.sums[slotTag].AddFingerprint(tf.head, tf.tail)
						acc.sums[slotBatchTS].AddUnsigned(batchTS)
						acc.sums[slotSendTS].AddUnsigned(sendTS)
						if _, ok := k.quality(b, s); !ok {
							acc.sums[slotNullQuality].AddUnsigned(1)
						}
					}
				}
				d := done.Add(hi - lo)
				if progress != nil {
					progress(d)
				}
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return checksum.Expected{}, err
	}
	var total accumulator
	for i := range results {
		total.merge(&results[i])
	}
	out := checksum.Expected{Messages: int64(batches), Rows: total.rows, Sums: map[string]*big.Int{}}
	for i, name := range SumNames {
		out.Sums[name] = total.sums[i].Big()
	}
	return out, nil
}

// MessageBytes is the total size of the first batches prefilled messages as
// they go on the wire (framing included): the corpus encoded, over every
// core, sizes summed. progress, when not nil, is called with the batches
// done so far.
func (k *Corpus) MessageBytes(ctx context.Context, batches uint64, progress func(done uint64)) (uint64, error) {
	var next, done, total atomic.Uint64
	workers := runtime.GOMAXPROCS(0)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			enc := k.NewEncoder()
			var buf []byte
			for ctx.Err() == nil {
				lo := next.Add(expectChunk) - expectChunk
				if lo >= batches {
					return
				}
				hi := min(lo+expectChunk, batches)
				var size uint64
				for b := lo; b < hi; b++ {
					var err error
					if buf, err = enc.AppendMessage(buf[:0], 0, b); err != nil {
						errs[w] = err
						return
					}
					size += uint64(len(buf))
				}
				total.Add(size)
				d := done.Add(hi - lo)
				if progress != nil {
					progress(d)
				}
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	return total.Load(), nil
}
