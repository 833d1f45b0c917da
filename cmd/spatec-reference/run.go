package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"strings"
	"sync"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"spatec.dev/spatec/exec/chstore"
	"spatec.dev/spatec/workloads/json-rows"
)

// run drains the topic into the table until ctx is cancelled, which is the
// normal way to stop and returns nil. It returns an error only for what a
// retry cannot fix: bad configuration found at start, or a message that is
// not the corpus format.
//
// Stopping is clean: each worker stops polling, inserts the rows it holds
// and commits their offsets, given cfg.StopGrace after ctx ends to do so.
// An insert under way when the stop came is finished, not abandoned: a
// client that gives up on an insert the server has taken leaves its rows
// landed and their offsets uncommitted, and the next start writes them
// twice.
func run(ctx context.Context, cfg config, logger *log.Logger) error {
	admCl, err := kgo.NewClient(kgo.SeedBrokers(cfg.Brokers...))
	if err != nil {
		return fmt.Errorf("connecting to brokers %s: %w", strings.Join(cfg.Brokers, ","), err)
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)

	// A broker that is still electing its group coordinator (a fresh
	// Kafka makes its offsets topic on the first request) answers with a
	// retriable error: ask again until it answers, or the arm is stopped.
	var starts map[int32]kgo.Offset
	for backoff := 100 * time.Millisecond; ; backoff = min(2*backoff, 2*time.Second) {
		var err error
		starts, err = startOffsets(ctx, adm, cfg)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return nil
		}
		if !kerr.IsRetriable(err) {
			return err
		}
		logger.Printf("%v; asking again in %v", err, backoff)
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return nil
		}
	}
	if len(starts) != cfg.Consumers {
		logger.Printf("topic %s has %d partitions and consumers is %d: the parallelism is not one consumer per partition", cfg.Topic, len(starts), cfg.Consumers)
	}

	// ClickHouse may not answer yet (or for a while): ask again until it
	// does, or the arm is stopped; a wrong password or database is not
	// retried.
	var store *chstore.Store
	for backoff := 100 * time.Millisecond; ; backoff = min(2*backoff, 2*time.Second) {
		var err error
		store, err = chstore.Open(ctx, cfg.ClickHouse, cfg.Database, cfg.User, cfg.Password, chstore.WithMaxConns(cfg.Consumers))
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return nil
		}
		var ex *clickhouse.Exception
		if errors.As(err, &ex) {
			return err
		}
		logger.Printf("%v; trying again in %v", err, backoff)
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return nil
		}
	}
	defer store.Close()
	newBatch, err := batches(cfg)
	if err != nil {
		return err
	}

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	// io is what the workers' inserts and commits run under: it ends
	// StopGrace after ctx does.
	io, endIO := context.WithCancel(context.WithoutCancel(ctx))
	defer endIO()
	defer context.AfterFunc(ctx, func() { time.AfterFunc(cfg.StopGrace, endIO) })()
	var wg sync.WaitGroup
	for w := 0; w < cfg.Consumers; w++ {
		own := map[int32]kgo.Offset{}
		for p, off := range starts {
			if int(p)%cfg.Consumers == w {
				own[p] = off
			}
		}
		if len(own) == 0 {
			continue
		}
		wk := &worker{id: w, cfg: cfg, logger: logger, adm: adm, store: store, partitions: own, rows: newBatch()}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := wk.run(ctx, io); err != nil {
				cancel(err)
			}
		}()
	}
	logger.Printf("draining topic %s (%s, %d partitions, %d consumers) into %s on %s", cfg.Topic, cfg.Workload, len(starts), cfg.Consumers, cfg.Table, cfg.ClickHouse)
	wg.Wait()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// startOffsets returns where each partition resumes: the group's committed
// offset, or the log start when nothing was committed.
func startOffsets(ctx context.Context, adm *kadm.Client, cfg config) (map[int32]kgo.Offset, error) {
	topics, err := adm.ListTopics(ctx, cfg.Topic)
	if err == nil {
		err = topics.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("looking up topic %s on %s: %w", cfg.Topic, strings.Join(cfg.Brokers, ","), err)
	}
	committed, err := adm.FetchOffsets(ctx, cfg.Group)
	if err == nil {
		err = committed.Error()
	}
	if errors.Is(err, kerr.GroupIDNotFound) {
		committed, err = nil, nil // nothing committed yet
	}
	if err != nil {
		return nil, fmt.Errorf("reading the committed offsets of group %s: %w", cfg.Group, err)
	}
	starts := map[int32]kgo.Offset{}
	for _, p := range topics[cfg.Topic].Partitions.Numbers() {
		starts[p] = kgo.NewOffset().AtStart()
		if o, ok := committed.Lookup(cfg.Topic, p); ok && o.At >= 0 {
			starts[p] = kgo.NewOffset().At(o.At)
		}
	}
	return starts, nil
}

// worker drains its partitions: poll, decode, insert, commit.
type worker struct {
	id         int
	cfg        config
	logger     *log.Logger
	adm        *kadm.Client
	store      *chstore.Store
	partitions map[int32]kgo.Offset

	rows      batch
	next      kadm.Offsets // offsets to commit once the batch is in
	firstAt   time.Time    // when the batch got its first row
	perRecord int          // rows in the last message decoded
	inserted  int64
}

// run polls until stop ends, then inserts what it holds (finish); every
// insert, commit and schema lookup runs under io, which outlives stop by
// the arm's grace.
func (w *worker) run(stop, io context.Context) error {
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(w.cfg.Brokers...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{w.cfg.Topic: w.partitions}),
		kgo.FetchMaxPartitionBytes(8<<20),
		// A fetch holds at most this much of the worker's partitions: the
		// batch it fills is the arm's memory, not what the broker sends
		// ahead (50 MiB a fetch by default, per worker).
		kgo.FetchMaxBytes(16<<20),
	)
	if err != nil {
		return fmt.Errorf("worker %d: connecting to brokers: %w", w.id, err)
	}
	defer cl.Close()
	defer func() { w.logger.Printf("worker %d: inserted %d rows", w.id, w.inserted) }()
	w.next = kadm.Offsets{}
	w.perRecord = 1

	for {
		pollCtx, cancel := stop, context.CancelFunc(func() {})
		if w.rows.len() > 0 {
			pollCtx, cancel = context.WithDeadline(stop, w.firstAt.Add(w.cfg.FlushInterval))
		}
		// Ask for about as many records as the batch has room for rows.
		want := max((w.cfg.BatchRows-w.rows.len())/w.perRecord, 1)
		fetches := cl.PollRecords(pollCtx, want)
		cancel()
		if stop.Err() != nil {
			// What this poll returned is neither inserted nor
			// committed: the next start reads it again.
			return w.finish(io)
		}
		var fetchErr error
		fetches.EachError(func(topic string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) {
				fetchErr = errors.Join(fetchErr, fmt.Errorf("partition %d: %w", p, err))
			}
		})
		if fetchErr != nil {
			// franz-go retries fetches itself; what reaches us is worth
			// a line in the log, not the end of the run.
			w.logger.Printf("worker %d: fetching: %v", w.id, fetchErr)
			if fetches.NumRecords() == 0 {
				// Nothing came with the error: pause rather than spin.
				select {
				case <-time.After(200 * time.Millisecond):
				case <-stop.Done():
					return w.finish(io)
				}
			}
		}
		var decodeErr error
		fetches.EachRecord(func(r *kgo.Record) {
			if decodeErr != nil {
				return
			}
			if w.rows.len() == 0 {
				w.firstAt = time.Now()
			}
			n, err := w.rows.add(io, r.Value)
			if err != nil {
				decodeErr = fmt.Errorf("worker %d: partition %d offset %d: %w", w.id, r.Partition, r.Offset, err)
				return
			}
			w.perRecord = max(n, 1)
			w.next.AddOffset(r.Topic, r.Partition, r.Offset+1, r.LeaderEpoch)
		})
		if decodeErr != nil {
			return decodeErr
		}
		if w.rows.len() >= w.cfg.BatchRows || (w.rows.len() > 0 && !time.Now().Before(w.firstAt.Add(w.cfg.FlushInterval))) {
			if err := w.flush(io); err != nil {
				return w.gaveUp(err)
			}
		}
	}
}

// finish is the worker's clean stop: the rows it holds inserted, and
// every offset it owes committed.
func (w *worker) finish(io context.Context) error {
	if w.rows.len() > 0 {
		if err := w.flush(io); err != nil {
			return w.gaveUp(err)
		}
	}
	if len(w.next) > 0 {
		// A commit that failed after its insert landed.
		if err := w.commit(io); err != nil {
			w.logger.Printf("worker %d: stopped with offsets of landed rows not committed: the next start writes them again: %v", w.id, err)
		}
	}
	return nil
}

// gaveUp says why a flush ended: the grace after a stop ran out (a clean
// stop, whose rows the next start reads again), or anything else.
func (w *worker) gaveUp(err error) error {
	if errors.Is(err, context.Canceled) {
		w.logger.Printf("worker %d: the stop's grace of %v ran out with %d rows not inserted; their offsets are not committed, so the next start reads them again", w.id, w.cfg.StopGrace, w.rows.len())
		return nil
	}
	return err
}

// flush inserts the batch, retrying until it lands or ctx ends, then
// commits the offsets after its last records.
func (w *worker) flush(ctx context.Context) error {
	backoff := 100 * time.Millisecond
	for {
		err := w.rows.insert(ctx, w.store, w.cfg.Table)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		w.logger.Printf("worker %d: insert of %d rows failed, retrying in %v: %v", w.id, w.rows.len(), backoff, err)
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return ctx.Err()
		}
		backoff = min(2*backoff, 5*time.Second)
	}
	w.inserted += int64(w.rows.len())
	w.rows.reset()
	if err := w.commit(ctx); err != nil && ctx.Err() == nil {
		// The rows are in; the offsets stay pending for the next commit,
		// and a restart before it re-inserts them (at-least-once).
		w.logger.Printf("worker %d: committing offsets to group %s: %v", w.id, w.cfg.Group, err)
	}
	return nil
}

// commit commits the offsets after the rows inserted so far; on failure
// they stay pending for the next commit.
func (w *worker) commit(ctx context.Context) error {
	resp, err := w.adm.CommitOffsets(ctx, w.cfg.Group, w.next)
	if err == nil {
		err = resp.Error()
	}
	if err == nil {
		w.next = kadm.Offsets{}
	}
	return err
}

// batch is a worker's rows waiting for their insert: it decodes messages
// of its workload into them.
type batch interface {
	// add decodes one message and appends its rows, returning how many.
	add(ctx context.Context, value []byte) (int, error)
	len() int
	insert(ctx context.Context, store *chstore.Store, table string) error
	reset()
}

// batches returns how each worker makes its batch, for the configured
// workload.
func batches(cfg config) (func() batch, error) {
	switch cfg.Workload {
	case "json-rows":
		return func() batch { return &jsonRows{} }, nil
	case "sensor-batch":
		if cfg.Registry == "" {
			return nil, errors.New("the sensor-batch workload needs a schema registry: set -registry or SPATEC_REGISTRY")
		}
		reg, err := newRegistrySchemas(cfg.Registry)
		if err != nil {
			return nil, err
		}
		t := transform{dropUnit: cfg.DropUnit, qualityFloor: cfg.QualityFloor, fault: cfg.Fault}
		return func() batch { return &sensorRows{schemas: reg, t: t} }, nil
	}
	return nil, fmt.Errorf("workload %q is not one this arm implements (json-rows, sensor-batch)", cfg.Workload)
}

// jsonRows is a batch of the json-rows workload: each message's lines
// decoded with the standard library's JSON decoder, written through.
type jsonRows struct {
	rows   chstore.Rows
	events []jsonrows.Event
}

func (j *jsonRows) add(_ context.Context, value []byte) (int, error) {
	var err error
	if j.events, err = jsonrows.AppendDecoded(j.events[:0], value); err != nil {
		return 0, err
	}
	for _, e := range j.events {
		j.rows.Add(e)
	}
	return len(j.events), nil
}

func (j *jsonRows) len() int { return j.rows.Len() }

func (j *jsonRows) reset() { j.rows.Reset() }

func (j *jsonRows) insert(ctx context.Context, store *chstore.Store, table string) error {
	return store.Insert(ctx, table, &j.rows)
}
