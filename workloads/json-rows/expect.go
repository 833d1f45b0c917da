package jsonrows

import (
	"context"
	"math/big"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"spatec.dev/spatec/workloads/checksum"
)

// The checksum's sums, by the names workload.cue gives them.
const (
	SumValue   = "value_sum"
	SumUserID  = "user_id_sum"
	SumTS      = "ts_sum"
	SumKind    = "kind_sum"
	SumPayload = "payload_sum"
)

// SumNames lists the sums, in the order of the accumulator's slots.
var SumNames = []string{SumValue, SumUserID, SumTS, SumKind, SumPayload}

// expectChunk is how many messages a worker takes at a time.
const expectChunk = 1024

// Expect computes what a correct arm lands for the dataset: every row (the
// workload has no filter) and the checksum's sums over them, over every
// core. progress, when not nil, is called with the messages done so far.
func (s Spec) Expect(ctx context.Context, progress func(done int64)) (checksum.Expected, error) {
	if err := s.Validate(); err != nil {
		return checksum.Expected{}, err
	}
	var next, done atomic.Int64
	workers := runtime.GOMAXPROCS(0)
	results := make([][5]checksum.Sum, workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			acc := &results[w]
			fs := make([]fields, 0, s.EventsPerMessage)
			lens := make([]int, 0, s.EventsPerMessage)
			var payload []byte
			for ctx.Err() == nil {
				lo := next.Add(expectChunk) - expectChunk
				if lo >= s.Messages {
					return
				}
				hi := min(lo+expectChunk, s.Messages)
				for i := lo; i < hi; i++ {
					var err error
					if fs, lens, err = s.message(fs, lens, i); err != nil {
						errs[w] = err
						return
					}
					for j, f := range fs {
						acc[0].Add(f.value)
						acc[1].AddUnsigned(uint64(f.userID))
						acc[2].AddUnsigned(uint64(f.ts))
						acc[3].AddFingerprint(checksum.Fingerprint(f.kind))
						payload = appendPayload(payload[:0], f.h, lens[j])
						acc[4].AddFingerprint(checksum.Fingerprint(unsafe.String(unsafe.SliceData(payload), len(payload))))
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
	for _, err := range errs {
		if err != nil {
			return checksum.Expected{}, err
		}
	}
	if err := ctx.Err(); err != nil {
		return checksum.Expected{}, err
	}
	var total [5]checksum.Sum
	for _, r := range results {
		for k := range total {
			total[k].AddSum(r[k])
		}
	}
	out := checksum.Expected{Messages: s.Messages, Rows: uint64(s.Rows()), Sums: map[string]*big.Int{}}
	for k, name := range SumNames {
		out.Sums[name] = total[k].Big()
	}
	return out, nil
}
