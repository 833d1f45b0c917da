package exec

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"spatec.dev/spatec/exec/broker"
	"spatec.dev/spatec/exec/chstore"
	"spatec.dev/spatec/exec/engine"
	"spatec.dev/spatec/exec/progress"
	"spatec.dev/spatec/exec/registry"
	"spatec.dev/spatec/schema"
	"spatec.dev/spatec/workloads"
	"spatec.dev/spatec/workloads/checksum"
)

// checkHost refuses a plan this host cannot hold: more CPUs than it has, or
// swap that the cgroups cannot disable (C5).
func (s *Session) checkHost(ctx context.Context, plan *schema.Plan) error {
	for _, n := range plan.ContainerNames() {
		if err := engine.CheckCPUs(plan.Entrant.Containers[n].CPUs, s.host.NCPU); err != nil {
			return &Refusal{err.Error()}
		}
	}
	if err := s.runner.Cgroups.CheckSwap(ctx, s.host.SwapLimit); err != nil {
		return &Refusal{err.Error()}
	}
	return nil
}

// prefill makes the topic hold the plan's dataset, producing it only when
// the topic is empty, and returns the broker's own message count: the N
// the drain's expectation is computed for (C13). An avro-confluent
// workload's schema is registered first, and its messages carry the id the
// registry gives it. messages, when positive, asks for the first that many
// messages of the dataset instead (a study's scale check): a topic holding
// another part of it is made again.
func (s *Session) prefill(ctx context.Context, plan *schema.Plan, messages int64) (int64, error) {
	r := s.runner
	wl := plan.Workload
	n := wl.Messages
	if messages > 0 {
		if messages > wl.Messages {
			return 0, refusef("a run of the first %d messages of %s, which holds %d", messages, wl.DatasetVersion, wl.Messages)
		}
		n = messages
		if err := s.resize(ctx, plan, messages); err != nil {
			return 0, err
		}
	}
	var schemaID uint32
	if wl.Avro != nil {
		url, err := s.registryURL()
		if err != nil {
			return 0, err
		}
		if schemaID, err = registry.Register(ctx, url, wl.Avro.Subject, wl.Avro.Schema); err != nil {
			return 0, err
		}
		r.logf("registered %s's schema under %s at %s: id %d", wl.Name, wl.Avro.Subject, url, schemaID)
	}
	ds, err := workloads.Open(wl, n, schemaID)
	if err != nil {
		return 0, refusef("%v", err)
	}
	if err := s.broker.EnsureTopic(ctx, wl.Topic, plan.Env.Partitions); err != nil {
		return 0, refusef("%v", err)
	}
	r.Progress.Start(progress.PhasePrefill, n, "msgs")
	_, err = s.broker.Prefill(ctx, wl.Topic, ds, func(done, _ int64) { r.Progress.Set(done) })
	if err != nil {
		r.Progress.Fail(err)
		if errors.Is(err, broker.ErrDepthMismatch) || errors.Is(err, broker.ErrContentMismatch) {
			return 0, &Refusal{err.Error()}
		}
		return 0, fmt.Errorf("prefilling %s: %w", wl.Topic, err)
	}
	r.Progress.End()
	depth, err := s.broker.Depth(ctx, wl.Topic)
	if err != nil {
		return 0, err
	}
	// Every run drains the whole topic: offsets an earlier run committed
	// would let this one start part-way.
	rctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	groups, err := s.broker.ResetGroups(rctx, wl.Topic, func(group string, members int) {
		r.Progress.Printf("waiting for consumer group %s to empty: %d members of a stopped arm stay until their session times out", group, members)
	})
	if err != nil {
		return 0, err
	}
	if len(groups) > 0 {
		r.logf("reset consumer groups %v so the arm reads %s from its start", groups, wl.Topic)
	}
	if depth != n {
		return 0, refusef("topic %s holds %d messages; the run expects %d (C13)", wl.Topic, depth, n)
	}
	return depth, nil
}

// expectation is what a correct arm lands from a dataset, and the
// dataset's size on the wire.
type expectation struct {
	checksum.Expected
	bytes uint64
}

// expect computes what a correct arm lands from the first messages
// messages of the plan's workload, once a session: before the arm starts,
// so that it costs the window nothing.
func (s *Session) expect(ctx context.Context, plan *schema.Plan, messages int64) (expectation, error) {
	wl := plan.Workload
	key := fmt.Sprintf("%s/%d", wl.DatasetVersion, messages)
	if e, ok := s.expected[key]; ok {
		return e, nil
	}
	r := s.runner
	r.Progress.Start(progress.PhaseExpect, 2*messages, "msgs")
	var e expectation
	var err error
	e.Expected, err = workloads.Expect(ctx, wl, messages, func(d int64) { r.Progress.Set(d) })
	if err == nil {
		e.bytes, err = workloads.MessageBytes(ctx, wl, messages, func(d int64) { r.Progress.Set(messages + d) })
	}
	if err != nil {
		r.Progress.Fail(err)
		return e, err
	}
	r.Progress.End()
	s.expected[key] = e
	return e, nil
}

// resize deletes the topic when it holds another number of messages than
// a scale check's run asks for, and waits until the broker has forgotten
// it, so that it is made again with exactly the first messages wanted.
func (s *Session) resize(ctx context.Context, plan *schema.Plan, messages int64) error {
	topic := plan.Workload.Topic
	depth, err := s.broker.Depth(ctx, topic)
	if errors.Is(err, broker.ErrNoTopic) || err == nil && (depth == 0 || depth == messages) {
		return nil
	}
	if err != nil {
		return err
	}
	s.runner.Progress.Printf("topic %s holds %d messages; this run drains the first %d of the dataset, so the topic is made again", topic, depth, messages)
	if err := s.broker.DeleteTopic(ctx, topic); err != nil {
		return err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := s.broker.Partitions(ctx, topic); errors.Is(err, broker.ErrNoTopic) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("topic %s was deleted to be made again with %d messages, but the broker still lists it after 30s", topic, messages)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// prepareTable creates the plan's table as its workload declares it (the
// environment's form of it), and empties it: every repetition starts from
// nothing.
//
// The first run of a session on a table drops and creates it, so it is
// exactly what the plan declares now; later repetitions truncate it, once
// its definition is read back unchanged. A table dropped or altered between
// repetitions (by hand, by another client) is made again from the DDL, and
// the run says so.
func (s *Session) prepareTable(ctx context.Context, plan *schema.Plan) (*chstore.Store, error) {
	table := plan.Table()
	made, ok := s.tables[table]
	if ok {
		now, err := s.store.Definition(ctx, table)
		if err != nil {
			return nil, fmt.Errorf("checking the table before the run: %w", err)
		}
		if now != made {
			what := "was altered"
			if now == "" {
				what = "was dropped"
			}
			s.runner.Progress.Printf("%s %s outside spatec since this session made it; making it again from the DDL of %s", table, what, plan.Workload.Name)
			ok = false
		}
	}
	if !ok {
		if err := s.store.DropTable(ctx, table); err != nil {
			return nil, fmt.Errorf("replacing the table: %w", err)
		}
		if err := s.store.Exec(ctx, plan.Workload.Table.DDL); err != nil {
			return nil, fmt.Errorf("creating %s from the DDL of %s: %w", table, plan.Workload.Name, err)
		}
		def, err := s.store.Definition(ctx, table)
		if err == nil && def == "" {
			err = fmt.Errorf("the DDL of %s ran but made no table %s: does it name another?", plan.Workload.Name, table)
		}
		if err != nil {
			return nil, &Refusal{fmt.Sprintf("C13: the sink table cannot be prepared, so nothing would measure a drain into it: %v", err)}
		}
		s.tables[table] = def
	}
	if err := s.store.Truncate(ctx, table); err != nil {
		return nil, err
	}
	if o := plan.Entrant.SinkObjects; o != nil {
		for _, q := range append(slices.Clone(o.Drop), o.Create...) {
			if err := s.store.Exec(ctx, q); err != nil {
				return nil, fmt.Errorf("making %s's own objects on the sink: %w", plan.Entrant.Name, err)
			}
		}
	}
	return s.store, nil
}

// dropSinkObjects drops what an arm made on the sink for its run; a
// failure is reported, and the next repetition drops them again first.
func (s *Session) dropSinkObjects(plan *schema.Plan) {
	o := plan.Entrant.SinkObjects
	if o == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, q := range o.Drop {
		if err := s.store.Exec(ctx, q); err != nil {
			s.runner.Progress.Printf("dropping %s's own objects on the sink: %v", plan.Entrant.Name, err)
			return
		}
	}
}
