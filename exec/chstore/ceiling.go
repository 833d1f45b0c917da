package chstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"spatec.dev/spatec/workloads/json-rows"
	sensorbatch "spatec.dev/spatec/workloads/sensor-batch"
)

// Batch is a block of rows one native insert sends.
type Batch interface {
	Len() int
	InsertInto(ctx context.Context, s *Store, table string) error
}

// InsertInto inserts the rows into table.
func (r *Rows) InsertInto(ctx context.Context, s *Store, table string) error {
	return s.Insert(ctx, table, r)
}

// InsertInto inserts the rows into table.
func (r *SensorRows) InsertInto(ctx context.Context, s *Store, table string) error {
	return s.InsertSensorRows(ctx, table, r)
}

// IngestOptions shape an ingest-ceiling sweep.
type IngestOptions struct {
	// Pool holds the batches the levels insert, cycling through them, so
	// that memory does not grow with RowsPerLevel (JSONRowsBatches,
	// SensorBatches).
	Pool []Batch
	// RowsPerLevel is how many rows each concurrency level inserts; the
	// default is the pool's rows.
	RowsPerLevel int64
	// MaxConcurrency bounds the sweep; the default is the store's
	// connection limit.
	MaxConcurrency int
	// MinGain is the relative gain below which the sweep stops climbing;
	// the default is 0.05.
	MinGain float64
	// Progress, when not nil, is called after each level.
	Progress func(IngestLevel)
}

// IngestLevel is the rate measured at one concurrency.
type IngestLevel struct {
	Concurrency int
	Rows        int64
	Elapsed     time.Duration
	RowsPerSec  float64
}

// IngestSweep is the result of IngestCeiling: every level measured, and
// the fastest.
type IngestSweep struct {
	Levels []IngestLevel
	Best   IngestLevel
}

// poolBatches bounds the distinct batches made before a sweep: levels cycle
// through them, so memory does not grow with RowsPerLevel.
const poolBatches = 16

// IngestCeiling measures how many corpus rows per second ClickHouse takes
// into table over native inserts, at concurrency 1, 2, 4… until a level
// gains less than MinGain over the best so far (or MaxConcurrency). The
// table is emptied before every level and after the sweep.
//
// The batches are made before the clock starts, so the figure is the
// server's (and the wire's), not the time spatec takes to make rows.
func (s *Store) IngestCeiling(ctx context.Context, table string, o IngestOptions) (IngestSweep, error) {
	var pooled int64
	for _, b := range o.Pool {
		pooled += int64(b.Len())
	}
	if pooled == 0 {
		return IngestSweep{}, errors.New("measuring the ingest ceiling: the dataset has no rows")
	}
	if o.RowsPerLevel <= 0 {
		o.RowsPerLevel = pooled
	}
	if o.MaxConcurrency <= 0 {
		o.MaxConcurrency = s.maxConns
	}
	if o.MaxConcurrency > s.maxConns {
		return IngestSweep{}, fmt.Errorf("measuring the ingest ceiling: concurrency up to %d needs as many connections; the store opens at most %d (open it WithMaxConns(%d))",
			o.MaxConcurrency, s.maxConns, o.MaxConcurrency)
	}
	if o.MinGain <= 0 {
		o.MinGain = 0.05
	}

	pool := o.Pool
	var sweep IngestSweep
	for c := 1; c <= o.MaxConcurrency; c *= 2 {
		if err := s.Truncate(ctx, table); err != nil {
			return sweep, fmt.Errorf("measuring the ingest ceiling: %w", err)
		}
		level, err := s.ingestLevel(ctx, table, pool, c, o.RowsPerLevel)
		if err != nil {
			return sweep, fmt.Errorf("measuring the ingest ceiling at concurrency %d: %w", c, err)
		}
		sweep.Levels = append(sweep.Levels, level)
		if o.Progress != nil {
			o.Progress(level)
		}
		climbed := level.RowsPerSec >= sweep.Best.RowsPerSec*(1+o.MinGain)
		if level.RowsPerSec > sweep.Best.RowsPerSec {
			sweep.Best = level
		}
		if !climbed {
			break
		}
	}
	if err := s.Truncate(ctx, table); err != nil {
		return sweep, fmt.Errorf("measuring the ingest ceiling: %w", err)
	}
	return sweep, nil
}

// JSONRowsBatches makes up to poolBatches batches of consecutive messages
// of a json-rows dataset, each of about batchRows rows (100,000 when 0),
// enough to cover rows when the dataset allows.
func JSONRowsBatches(spec jsonrows.Spec, batchRows int, rows int64) ([]Batch, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if batchRows <= 0 {
		batchRows = 100_000
	}
	perBatch := max(int64(batchRows)/int64(spec.EventsPerMessage), 1) // messages
	var pool []Batch
	var covered int64
	for first := int64(0); first < spec.Messages && len(pool) < poolBatches && covered < rows; first += perBatch {
		r := &Rows{}
		if err := r.AppendMessages(spec, first, min(perBatch, spec.Messages-first)); err != nil {
			return nil, err
		}
		pool = append(pool, r)
		covered += int64(r.Len())
	}
	return pool, nil
}

// SensorBatches makes up to poolBatches batches of the rows a correct arm
// lands from consecutive sensor batches of k's corpus (of the first
// batches), each of about batchRows rows (100,000 when 0), enough to cover
// rows when the dataset allows.
func SensorBatches(k *sensorbatch.Corpus, batches uint64, batchRows int, rows int64) []Batch {
	if batchRows <= 0 {
		batchRows = 100_000
	}
	var pool []Batch
	var covered int64
	var buf []sensorbatch.Row
	for b := uint64(0); b < batches && len(pool) < poolBatches && covered < rows; {
		r := &SensorRows{}
		for ; b < batches && r.Len() < batchRows; b++ {
			buf = k.AppendRows(buf[:0], b)
			for _, row := range buf {
				r.Add(row)
			}
		}
		pool = append(pool, r)
		covered += int64(r.Len())
	}
	return pool
}

// ingestLevel inserts at least rows rows with conc concurrent inserts,
// cycling through the pool, and times it.
func (s *Store) ingestLevel(ctx context.Context, table string, pool []Batch, conc int, rows int64) (IngestLevel, error) {
	// Plan the batches first: batch k is pool[k mod len(pool)], until the
	// rows are covered; worker w sends batches k ≡ w (mod conc).
	var plan []Batch
	var planned int64
	for k := 0; planned < rows; k++ {
		b := pool[k%len(pool)]
		plan = append(plan, b)
		planned += int64(b.Len())
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < conc; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := w; k < len(plan); k += conc {
				if err := plan[k].InsertInto(ctx, s, table); err != nil {
					cancel(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := context.Cause(ctx); err != nil {
		return IngestLevel{}, err
	}
	return IngestLevel{
		Concurrency: conc,
		Rows:        planned,
		Elapsed:     elapsed,
		RowsPerSec:  float64(planned) / elapsed.Seconds(),
	}, nil
}
