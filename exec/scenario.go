package exec

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"spatec.dev/spatec/exec/chstore"
	"spatec.dev/spatec/exec/engine"
	"spatec.dev/spatec/runs/record"
	"spatec.dev/spatec/schema"
)

// A failure scenario turns a fault from something that fails the run into
// the experiment: spatec breaks one component once a share of the rows has
// landed, keeps measuring, and records how the arm came through it. What
// stays as strict as in any run: the caps are still held to what was
// verified (C6), every other container that stops still fails the run,
// and the gates still judge the table after quiesce.

// rateSpan is the trailing span over which the rate after a fault is
// compared with the rate before it: long enough to hold several of an
// arm's batches (the reference arm flushes every 500 ms), short enough to
// say within seconds when the rate came back.
const rateSpan = 2 * time.Second

// rateShare is the share of the pre-fault rate that counts as the rate
// regained.
const rateShare = 0.9

// fault is one failure scenario under way in one run.
type fault struct {
	name string
	sc   schema.Scenario
	eng  engine.Engine
	act  engine.Faults
	// restart is the data plane's restart policy in the scenario's run.
	restart string
	// crasher kills the data plane's process as a crash would; replacer
	// deletes its pod, which its controller makes again.
	crasher  engine.Crasher
	replacer engine.Replacer
	// expect marks a container's exits as the fault's own for the
	// session's watchers (Session.expectExit).
	expect func(id string, on bool)
	// id is the container broken, who names it in notes, and service the
	// infrastructure service it runs ("" for the data plane).
	id, who, service string
	// For a partition: the image of spatec's cutter, the run's network,
	// and the arm's containers, cut off from the service.
	netcut, network string
	arm             []string
	labels          map[string]string

	fire sync.Once
	due  chan struct{}
	// done is closed once run returns: the fault injected and mended, or
	// never due.
	done chan struct{}

	mu         sync.Mutex
	begun      bool
	start, end time.Time
	err        error
	// restarted is how many times the engine says the broken container
	// was started again (or its pod made again) during the fault: the
	// sampler sees a restart only if it reads the new life's counters
	// before they pass the old one's, which a probe finding the new
	// container late can miss.
	restarted int

	// dedup is what the table does with a repeated insert, and
	// absorbedBefore the blocks the server had dropped as repeats when
	// the window opened; either nil when it could not be read.
	dedup          *chstore.Deduplication
	absorbedBefore *uint64
}

// netcutImage is cmd/spatec-netcut's image, which cuts a partition.
const netcutImage = "spatec-netcut:0.1.0"

// newFault prepares plan's scenario name for a run on this session, or
// refuses it with why.
func (run *armRun) newFault(ctx context.Context, name string) (*fault, error) {
	plan := run.plan
	sc, ok := plan.Env.Scenarios[name]
	if !ok {
		return nil, &Refusal{fmt.Sprintf("scenario: %s declares no scenario %q (it declares: %s)",
			plan.Env.Name, name, strings.Join(slices.Sorted(maps.Keys(plan.Env.Scenarios)), ", "))}
	}
	f := &fault{name: name, sc: sc, eng: run.s.runner.Engine, expect: run.s.expectExit, due: make(chan struct{}), done: make(chan struct{}),
		restart: plan.Entrant.Restart}
	if sc.Action == schema.ActionDelete {
		// The data plane runs under a ReplicaSet, whose pods restart
		// always: the entrant's policy is not one a set's pod can have.
		f.restart = "always"
	}
	guarantee := ""
	if g := plan.Entrant.Guarantee; g != nil {
		guarantee = g.Kind
	}
	// Said from the start, so that even a refused run is a scenario's and
	// is kept from the comparison.
	run.rec.Scenario = &record.Scenario{Name: name, Component: sc.Component, Action: sc.Action, PauseS: sc.PauseS, At: sc.At,
		RecoveryS: sc.RecoveryS, Restart: f.restart, Guarantee: guarantee, Verdict: record.VerdictNotInjected,
		RateSpanMS: rateSpan.Milliseconds(), RateShare: rateShare}
	switch {
	case plan.Entrant.Guarantee == nil:
		return f, &Refusal{fmt.Sprintf("scenario: %s declares no delivery guarantee, and a scenario holds the arm to the one it declares; add guarantee: {kind: \"at-least-once\", source: \"<where its documentation says so>\"} to the entrant", plan.Entrant.Name)}
	case plan.Footprint != nil:
		return f, &Refusal{"scenario: a footprint point runs outside the envelope; run the scenario on the arm's plan"}
	}
	f.crasher, _ = f.eng.(engine.Crasher)
	f.replacer, _ = f.eng.(engine.Replacer)
	act, ok := f.eng.(engine.Faults)
	crash := sc.Component == schema.ComponentDataPlane && sc.Action == schema.ActionKill
	switch {
	case sc.Action == schema.ActionDelete && f.replacer == nil:
		return f, &Refusal{fmt.Sprintf("scenario: on the %s engine nothing makes a deleted container again; scenario %s deletes the %s: run it on a Kubernetes environment, where the data plane's ReplicaSet makes a new pod", plan.Env.Runtime, name, sc.Component)}
	case sc.Action == schema.ActionDelete, crash && f.crasher != nil, !crash && ok:
		f.act = act
	default:
		return f, &Refusal{fmt.Sprintf("scenario: on the %s engine spatec can only kill the arm's data plane (its restart policy starts it again) or delete its pod; scenario %s %ss the %s: run it on a Docker environment", plan.Env.Runtime, name, sc.Action, sc.Component)}
	}
	if sc.Action == schema.ActionPartition {
		// Built before the arm starts, so that cutting it costs no build.
		img, err := run.s.ensureImage(ctx, netcutImage, "", &schema.Build{Program: "./cmd/spatec-netcut"})
		if err != nil {
			return f, err
		}
		f.netcut, f.network = img.ref, run.s.network
		f.labels = run.s.labels(LabelRun, run.id, LabelRole, "netcut")
	}
	return f, nil
}

// aim finds the container the fault hits, once the arm has started.
func (f *fault) aim(run *armRun) error {
	if f.sc.Component == schema.ComponentDataPlane {
		for _, c := range run.containers {
			if c.role == schema.RoleDataPlane {
				f.id, f.who = c.id, "the arm's data plane (container "+c.name+")"
				return nil
			}
		}
		return &Refusal{"scenario: the arm has no data-plane container to break"}
	}
	for _, c := range run.s.infra {
		if c.service == f.sc.Component {
			f.id, f.who, f.service = c.id, "the "+c.service+" container "+c.name, c.service
			if f.sc.Action == schema.ActionPartition {
				for _, a := range run.containers {
					f.arm = append(f.arm, a.id)
				}
				f.who = "the arm's link to " + f.who
			}
			return nil
		}
	}
	return &Refusal{fmt.Sprintf("scenario: the session runs no %s container to break", f.sc.Component)}
}

// progress fires the fault once landed rows reach the scenario's share of
// want: the same point of every arm's work.
func (f *fault) progress(landed, want uint64) {
	if float64(landed) >= f.sc.At*float64(want) {
		f.fire.Do(func() { close(f.due) })
	}
}

// settle waits until the fault has been injected and mended, so that the
// gates never read a server spatec is still breaking.
func (f *fault) settle() { <-f.done }

// restarts is how many times the engine started container id again in
// the fault: 0 for any container but the one it broke.
func (f *fault) restarts(id string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if id != f.id {
		return 0
	}
	return f.restarted
}

// outage says whether the fault has begun: from then on a refused poll
// and the broken container's exit are what the scenario asked for.
func (f *fault) outage() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.begun
}

// hits says whether an exit of container id is the fault's own: the
// container broken, or in a partition one of the arm's, whose restart
// policy then decides, as for a crash.
func (f *fault) hits(id string) bool {
	return f.outage() && (id == f.id || slices.Contains(f.arm, id))
}

// stall is the drain's stall limit through a scenario: the fault's pause
// and its recovery bound, or the workload's own limit if that is longer.
func (f *fault) stall(workload time.Duration) time.Duration {
	return max(workload, time.Duration(f.sc.PauseS+f.sc.RecoveryS)*time.Second)
}

// run waits for the fault to fall due and injects it.
func (f *fault) run(ctx context.Context) {
	defer close(f.done)
	select {
	case <-f.due:
	case <-ctx.Done():
		return
	}
	f.mu.Lock()
	f.begun, f.start = true, time.Now()
	f.mu.Unlock()
	if f.service != "" {
		// The session's watcher of the service must not report the exit
		// the fault causes.
		f.expect(f.id, true)
	}
	err := f.inject(ctx)
	f.mu.Lock()
	f.end, f.err = time.Now(), err
	f.mu.Unlock()
}

// inject does what the scenario says to its container.
func (f *fault) inject(ctx context.Context) error {
	pause := time.Duration(f.sc.PauseS) * time.Second
	hold := func() error {
		select {
		case <-time.After(pause):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	switch f.sc.Action {
	case schema.ActionRestart:
		return f.act.Restart(ctx, f.id, 0)
	case schema.ActionPause:
		if err := f.act.Pause(ctx, f.id); err != nil {
			return err
		}
		herr := hold()
		// Thawed whatever happened: a frozen container outlives nothing
		// but its run, and teardown cannot stop a frozen process.
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		return errors.Join(herr, f.act.Unpause(uctx, f.id))
	case schema.ActionPartition:
		if err := f.partition(ctx); err != nil {
			return err
		}
		herr := hold()
		// Mended whatever happened: the session's next run needs its
		// service reachable.
		mctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		return errors.Join(herr, f.cutter(mctx, "mend"))
	case schema.ActionDelete:
		return f.renew(ctx, "deleting", f.replacer.Replace)
	case schema.ActionKill:
		if f.service == "" {
			return f.renew(ctx, "killing", f.crasher.Crash)
		}
		if err := f.act.Kill(ctx, f.id, "KILL"); err != nil {
			return err
		}
		// Started again whatever happened: the session's next run needs
		// its service.
		return errors.Join(hold(), f.eng.Start(context.WithoutCancel(ctx), f.id))
	}
	return fmt.Errorf("scenario %s: no such action %q", f.name, f.sc.Action)
}

// renew ends the data plane's process from outside, by kill (a crash or
// the OOM killer, engine.Crasher: the container's restart policy decides
// what happens next) or by deleting its pod (engine.Replacer: its ReplicaSet
// makes a new one), and waits until it runs again.
func (f *fault) renew(ctx context.Context, doing string, end func(context.Context, engine.Container) error) error {
	c, err := f.eng.Inspect(ctx, f.id)
	if err != nil {
		return err
	}
	if !c.Running {
		return fmt.Errorf("%s was not running when the fault fell due", f.who)
	}
	if err := end(ctx, c); err != nil {
		return fmt.Errorf("%s %s: %w", doing, f.who, err)
	}
	// The fault lasts until the restart policy or the controller has the
	// container running again: a row landing before that is an insert the
	// old process had already sent, not a recovery. One that never does
	// ends the fault at the recovery bound, and the arm did not recover.
	bound, cancel := context.WithTimeout(ctx, time.Duration(f.sc.RecoveryS)*time.Second)
	defer cancel()
	for bound.Err() == nil {
		// Counted, not timed: a pod's start is given to the second.
		if now, err := f.eng.Inspect(bound, f.id); err == nil && now.Running && now.Restarts > c.Restarts {
			f.mu.Lock()
			f.restarted = now.Restarts - c.Restarts
			f.mu.Unlock()
			return nil
		}
		select {
		case <-bound.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
	return nil
}

// partition cuts the service's container off from the arm's addresses on
// the run's network, in the service's own network namespace: an arm's
// container restarted by its policy through the cut is cut off still,
// and spatec's own reads, from the host, go on.
func (f *fault) partition(ctx context.Context) error {
	var addrs []string
	for _, id := range f.arm {
		c, err := f.eng.Inspect(ctx, id)
		if err != nil {
			return err
		}
		if a := c.Addresses[f.network]; a != "" {
			addrs = append(addrs, a)
		}
	}
	if len(addrs) == 0 {
		return fmt.Errorf("the arm has no address on network %s to cut", f.network)
	}
	return f.cutter(ctx, "cut", addrs...)
}

// cutter runs cmd/spatec-netcut in the broken container's network
// namespace, to cut or to mend.
func (f *fault) cutter(ctx context.Context, verb string, addrs ...string) error {
	code, out, err := f.eng.RunOnce(ctx, engine.ContainerSpec{
		Name:        "spatec-netcut-" + verb + "-" + f.id[:12],
		Image:       f.netcut,
		Args:        append([]string{verb}, addrs...),
		Labels:      f.labels,
		NetworkMode: "container:" + f.id,
		CapAdd:      []string{"NET_ADMIN"},
	}, nil)
	if err == nil && code != 0 {
		err = fmt.Errorf("exit code %d: %s", code, strings.TrimSpace(out))
	}
	if err != nil {
		return fmt.Errorf("%s %s: %w", verb, f.who, err)
	}
	return nil
}

// awaitRunning waits until container id runs again, for a watcher of a
// container a scenario broke; false when ctx ends first.
func awaitRunning(ctx context.Context, e engine.Engine, id string) bool {
	for {
		if c, err := e.Inspect(ctx, id); err == nil && c.Running {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// expectExit marks container id's exits as a scenario's own until undone,
// for the session's watchers of its infrastructure.
func (s *Session) expectExit(id string, on bool) {
	s.faultMu.Lock()
	defer s.faultMu.Unlock()
	if on {
		s.faulted[id] = true
	} else {
		delete(s.faulted, id)
	}
}

// exitExpected says whether container id's exit is a scenario's own.
func (s *Session) exitExpected(id string) bool {
	s.faultMu.Lock()
	defer s.faultMu.Unlock()
	return s.faulted[id]
}

// readDedup reads, before the window opens, what table does with a
// repeated insert and how many the server has absorbed so far. What
// cannot be read is left out of the record, not guessed.
func (f *fault) readDedup(ctx context.Context, store *chstore.Store, table string) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if d, err := store.Deduplication(ctx, table); err == nil {
		f.dedup = &d
	}
	if n, err := store.Absorbed(ctx); err == nil {
		f.absorbedBefore = &n
	}
}

// absorbed says, once the table holds still, what its deduplication did
// with the repeats the fault caused: a retried insert it absorbed is not
// in the table, so Duplicates cannot show it.
func (f *fault) absorbed(ctx context.Context, store *chstore.Store, out *record.Scenario) {
	if f.dedup == nil {
		return
	}
	out.Dedup = f.dedup.String()
	if f.dedup.Window == 0 {
		// Nothing can be absorbed: every repeat is in Duplicates.
		out.DuplicatedInsertedBlocks = new(int64)
		return
	}
	// A ClickHouse restarted (or killed and started) in the window counts
	// its events from zero again, so no difference holds across it.
	restarted := f.sc.Component == schema.ServiceClickHouse && (f.sc.Action == schema.ActionRestart || f.sc.Action == schema.ActionKill)
	if f.absorbedBefore == nil || restarted {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if n, err := store.Absorbed(ctx); err == nil && n >= *f.absorbedBefore {
		d := int64(n - *f.absorbedBefore)
		out.DuplicatedInsertedBlocks = &d
	}
}

// outcome is what the fault did to the drain, from the polls' series and
// the final counts: the scenario's figures and verdict, into out.
func (f *fault) outcome(out *record.Scenario, opened time.Time, rows record.SeriesRows, want, count, distinct uint64, counted bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.begun {
		out.Note = fmt.Sprintf("the drain ended before %.0f%% of the rows had landed, so the fault never fell due", f.sc.At*100)
		return
	}
	out.FaultMS, out.FaultEndMS = f.start.Sub(opened).Milliseconds(), f.end.Sub(opened).Milliseconds()
	if f.err != nil {
		out.Note = fmt.Sprintf("the fault could not be injected into %s: %v", f.who, f.err)
		return
	}
	out.Injected = true
	judge(out, rows, want, count, distinct, counted)
}

// judge fills a scenario's figures from the polls and the final counts,
// and its verdict against the guarantee.
func judge(out *record.Scenario, rows record.SeriesRows, want, count, distinct uint64, counted bool) {
	t, landed := rows.OffsetsMS, rows.Landed
	// The rows at the fault, and at the end of spatec's part of it: rows
	// an insert under way completes in between are not a recovery.
	var atFault, atEnd int64
	for i := range t {
		if t[i] <= out.FaultMS {
			atFault = landed[i]
		}
		if t[i] <= out.FaultEndMS {
			atEnd = landed[i]
		}
	}
	out.LandedAtFault = atFault
	// The rate the run had by the fault is measured as the run's own rate
	// is, rows over the window so far: from the first row alone, an arm
	// that lands a backlog in a burst as it starts sets a pace no part of
	// its drain keeps.
	if atFault > 0 && out.FaultMS > 0 {
		out.PreFaultRowsPerS = float64(atFault) / (float64(out.FaultMS) / 1000)
	}
	again := -1
	for i := range t {
		if t[i] > out.FaultEndMS && landed[i] > atEnd {
			again = i
			break
		}
	}
	bound := int64(out.RecoveryS)*1000 + (out.FaultEndMS - out.FaultMS)
	if again < 0 && want > 0 && atEnd >= int64(want) && atEnd > atFault && out.FaultEndMS-out.FaultMS < int64(out.RecoveryS)*1000 {
		// Not the arm's failing: it was seen running again within the
		// bound, but only after the drain had ended (a pod's status
		// reaches the API server after its process has started), so no
		// row was left to time its recovery by. The counts still judge it.
		out.Outran = true
		out.Note = "every expected row had landed by the end of spatec's part of the fault (the arm seen running again), so no row was left to time its recovery by; give the drain more rows, or the scenario a lower at"
	}
	if again >= 0 {
		ms := t[again] - out.FaultMS
		out.FirstRowMS = &ms
		if out.PreFaultRowsPerS > 0 {
			q := again
			for i := again; i < len(t); i++ {
				for q < i && t[q+1] <= t[i]-rateSpan.Milliseconds() {
					q++
				}
				span := t[i] - t[q]
				if span >= rateSpan.Milliseconds() && float64(landed[i]-landed[q])/(float64(span)/1000) >= rateShare*out.PreFaultRowsPerS {
					back := t[i] - out.FaultMS
					out.RateBackMS = &back
					break
				}
			}
		}
	}
	if counted {
		out.Lost = int64(want) - int64(min(distinct, want))
		out.Duplicates = int64(count) - int64(min(distinct, count))
	}
	switch {
	case !out.Outran && (out.FirstRowMS == nil || *out.FirstRowMS > bound):
		out.Verdict = record.VerdictNotRecovered
	case !counted:
		out.Verdict = record.VerdictNotRecovered
		out.Note = "the rows landed could not be counted at the end"
	case out.Lost > 0:
		out.Verdict = record.VerdictLoss
	case out.Duplicates > 0:
		out.Verdict = record.VerdictDuplicates
	default:
		out.Verdict = record.VerdictRecovered
	}
	switch out.Guarantee {
	case schema.ExactlyOnce:
		out.Held = out.Verdict == record.VerdictRecovered
	case schema.AtLeastOnce:
		out.Held = out.Verdict == record.VerdictRecovered || out.Verdict == record.VerdictDuplicates
	default:
		out.Held = out.Verdict != record.VerdictNotRecovered
	}
}

// scenarioNote says the scenario's outcome in a sentence, for a run's note.
func scenarioNote(sc *record.Scenario) string {
	if sc.Verdict == record.VerdictNotInjected {
		return fmt.Sprintf("scenario %s: %s", sc.Name, sc.Note)
	}
	secs := func(ms *int64) string {
		if ms == nil {
			return "never"
		}
		return fmt.Sprintf("%.1f s", float64(*ms)/1000)
	}
	held := "within"
	if !sc.Held {
		held = "outside"
	}
	absorbed := ""
	if n := sc.DuplicatedInsertedBlocks; n != nil && *n > 0 {
		absorbed = fmt.Sprintf(", the table's deduplication absorbing repeats (DuplicatedInsertedBlocks %d)", *n)
	}
	why := ""
	if sc.Note != "" {
		why = " (" + sc.Note + ")"
	}
	timed := fmt.Sprintf("a row landed again %s after the fault, the rate was back %s after it", secs(sc.FirstRowMS), secs(sc.RateBackMS))
	if sc.Outran {
		timed = "its recovery not timed"
	}
	return fmt.Sprintf("scenario %s: %s, %s its declared %s guarantee; %s; %d rows lost, %d written twice%s%s",
		sc.Name, sc.Verdict, held, sc.Guarantee, timed, sc.Lost, sc.Duplicates, absorbed, why)
}
