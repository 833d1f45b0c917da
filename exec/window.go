package exec

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"spatec.dev/spatec/exec/chstore"
	"spatec.dev/spatec/exec/progress"
	"spatec.dev/spatec/exec/sample"
	"spatec.dev/spatec/runs/record"
	"spatec.dev/spatec/schema"
)

// dataPlaneLogs is the end of each data-plane container's log, for the
// note of an arm that ran on without landing its rows: what it last said
// is most often why ("; <name>'s log ends:" and the lines), or "" when
// there is none to read. A JVM that failed and restarted its work logs
// the cause once, in a stack trace, then pages of recovery: the last
// error it logged is quoted first, the cause before the consequence.
func (run *armRun) dataPlaneLogs(ctx context.Context) string {
	var b strings.Builder
	for _, c := range run.containers {
		if c.role != schema.RoleDataPlane {
			continue
		}
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		logs, err := run.s.runner.Engine.Logs(lctx, c.id, causeLines)
		cancel()
		if err != nil || strings.TrimSpace(logs) == "" {
			continue
		}
		lines := strings.Split(strings.TrimRight(logs, "\n"), "\n")
		if cause := lastError(lines); cause != "" {
			fmt.Fprintf(&b, "; container %s's last error before the stop: %s", c.name, cause)
		}
		fmt.Fprintf(&b, "; container %s's log ends:\n%s\n", c.name, strings.Join(lines[max(0, len(lines)-5):], "\n"))
	}
	return b.String()
}

// causeLines is how much of a data plane's log is searched for its last
// error: a JVM's failure and its restarts log a few hundred lines.
const causeLines = 2000

// errorLine is a log line that reports an error: a JVM's exception and
// the innermost cause of its stack trace, a level, a panic.
var errorLine = regexp.MustCompile(`^Caused by: |\b(ERROR|FATAL|panic:)\b|^[A-Za-z0-9_.$]+(Exception|Error): `)

// lastError returns the last error lines report: of a stack trace, its
// innermost cause (the last "Caused by:" before the next log line), cut
// to a line's length; "" when none does.
func lastError(lines []string) string {
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if !errorLine.MatchString(l) {
			continue
		}
		if len(l) > 400 {
			l = l[:400] + "…"
		}
		return l
	}
	return ""
}

// targets are what the sampler reads: the arm's containers and the
// infrastructure's, so throttling on both sides is recorded (C12).
func (run *armRun) targets() []sample.Target {
	var t []sample.Target
	for _, c := range run.containers {
		t = append(t, sample.Target{Name: c.name, Role: c.role, Group: c.group})
	}
	for _, c := range run.s.infra {
		t = append(t, sample.Target{Name: c.name, Role: sample.Infra, Group: c.group})
	}
	return t
}

// hold samples the arm until d passes or it exits: the caps and the
// measurement, without a drain.
func (run *armRun) hold(ctx context.Context, d time.Duration) error {
	r := run.s.runner
	winCtx, stop := context.WithTimeout(ctx, d)
	defer stop()
	exits := make(chan exitEvent, 1)
	go func() {
		select {
		case e := <-run.exited:
			exits <- e
			stop()
		case <-winCtx.Done():
		}
	}()
	sm, err := sample.New(run.targets(), sample.WithPeriod(r.period()), sample.WithClock(r.clock()))
	if err != nil {
		return err
	}
	run.summary, err = sm.Run(winCtx)
	if ctx.Err() != nil {
		return &Failure{"interrupted: " + context.Cause(ctx).Error()}
	}
	run.readHeaps(ctx)
	run.heapMetrics()
	if err := run.heapMismatch(); err != nil {
		return err
	}
	// A container that exits takes its cgroup with it, so a sampling error
	// usually means an exit whose report is on its way: wait for it.
	wait := time.Duration(0)
	if err != nil {
		wait = 5 * time.Second
	}
	select {
	case e := <-exits:
		if e.code != 0 {
			return &Failure{e.ended("container "+e.name, "")}
		}
		return nil
	case <-time.After(wait):
	}
	if err != nil {
		return &Failure{fmt.Sprintf("sampling: %v", err)}
	}
	return nil
}

// started is a group that knows when its container started: a pod's,
// read through its node's probe.
type started interface{ Started() time.Time }

// origin is where the window opens when it cannot open after the caps are
// verified: on Kubernetes the arm starts consuming before its cgroups can
// be read through the node's probe, so the window opens at the start of
// its first container, with every counter at zero there (the groups were
// made then). It applies when every container's group knows its start;
// the infrastructure's are measured from the first reading, as on Docker.
func (run *armRun) origin() (time.Time, bool) {
	var first time.Time
	for _, c := range run.containers {
		s, ok := c.group.(started)
		if !ok || s.Started().IsZero() {
			return time.Time{}, false
		}
		if first.IsZero() || s.Started().Before(first) {
			first = s.Started()
		}
	}
	return first, !first.IsZero()
}

// landedEarly fails a run whose arm landed rows before the window opened:
// the window would not cover the drain, and its rate would be too high.
func (run *armRun) landedEarly(ctx context.Context, store *chstore.Store, want uint64) error {
	table := run.plan.Table()
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	count, err := store.Count(cctx, table)
	if err != nil {
		return fmt.Errorf("counting %s as the window opens: %w", table, err)
	}
	if count > 0 {
		return &Failure{fmt.Sprintf("C13: %d of %d rows had landed before the window opened: the arm's start and the verification of its caps took longer than its first inserts, so the window would not cover the drain", count, want)}
	}
	return nil
}

// drainResult is what the window measured.
type drainResult struct {
	drain chstore.Drain
	want  uint64
	// drained says every row landed within the window. A drain that
	// stalled or timed out is counted again after the arm has stopped,
	// and that count may reach want with rows landed after the window: it
	// gives the record's counts, never a rate over the window.
	drained bool
	// opened is when spatec's window opened: the drain's Elapsed and the
	// polls' offsets (run.landed) count from it.
	opened time.Time
	// quiesced is how long the table took to hold still after the arm
	// stopped, and quiesceErr why it did not.
	quiesced   time.Duration
	quiesceErr error
}

// quiesceLimit bounds the wait for a table to hold still.
const quiesceLimit = 30 * time.Second

// quiesce waits until table's row count has not changed for hold, and
// returns how long that took from the call; it gives up after quiesceLimit
// (a writer that is still inserting is not the arm that was stopped).
func quiesce(ctx context.Context, store *chstore.Store, table string, hold time.Duration) (time.Duration, error) {
	start := time.Now()
	if hold <= 0 {
		return 0, nil
	}
	poll := min(hold/4, 250*time.Millisecond)
	var last uint64
	still := time.Now()
	for first := true; ; first = false {
		qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		n, err := store.Count(qctx, table)
		cancel()
		if err != nil {
			return time.Since(start), fmt.Errorf("waiting for %s to hold still: %w", table, err)
		}
		if first || n != last {
			last, still = n, time.Now()
		}
		switch {
		case time.Since(still) >= hold:
			return time.Since(start), nil
		case time.Since(start) > quiesceLimit:
			return time.Since(start), fmt.Errorf("%s was still changing %v after the arm stopped (%d rows at the last count)", table, quiesceLimit, n)
		}
		select {
		case <-ctx.Done():
			return time.Since(start), ctx.Err()
		case <-time.After(poll):
		}
	}
}

// drain opens the window: the sampler reads the cgroups while ClickHouse is
// polled until the distinct rows reach want, the arm exits, the timeout
// passes, something stalls or the run is interrupted. The caps are held to
// what was verified throughout (C6). The arm is stopped when it ends.
func (run *armRun) drain(ctx context.Context, store *chstore.Store, want uint64) (drainResult, error) {
	r, wl := run.s.runner, run.plan.Workload
	opts := []sample.Option{sample.WithPeriod(r.period()), sample.WithClock(r.clock())}
	if run.fault != nil {
		// The fault may restart a container: follow it through, so that
		// its cores and memory after the fault are in the series too.
		opts = append(opts, sample.WithRestarts())
	}
	origin, fromStart := run.origin()
	if fromStart {
		opts = append(opts, sample.WithOrigin(origin))
	} else if err := run.landedEarly(ctx, store, want); err != nil {
		return drainResult{}, err
	}
	sm, err := sample.New(run.targets(), opts...)
	if err != nil {
		return drainResult{}, err
	}
	winCtx, stopWindow := context.WithCancel(context.WithoutCancel(ctx))
	run.hostFrom = run.readHost()
	summaries := make(chan sample.Summary, 1)
	go func() {
		s, _ := sm.Run(winCtx)
		summaries <- s
	}()
	caps := run.capWatch()
	watched := make(chan struct{})
	go func() { defer close(watched); caps.run(winCtx) }()

	drainCtx, stopDrain := context.WithCancelCause(ctx)
	defer stopDrain(nil)
	go func() {
		if err := run.awaitExit(drainCtx); err != nil {
			stopDrain(err)
		}
	}()
	stall := time.Duration(wl.StallLimit) * time.Second
	var outage func() bool
	if f := run.fault; f != nil {
		f.readDedup(ctx, store, run.plan.Table())
		// Through the fault the stall limit is the scenario's bound, and
		// a server refusing polls is what it asked for.
		stall, outage = f.stall(stall), f.outage
		defer run.s.expectExit(f.id, false)
		go f.run(drainCtx)
	}
	go run.s.watchBroker(drainCtx, stall, stopDrain)
	r.Progress.Start(progress.PhaseDrain, int64(want), "rows")
	table := run.plan.Table()
	// The window opens as the drain's watch begins, or at the arm's start
	// where it has to (origin): the drain's clock, and the series', count
	// from there.
	winStart := time.Now()
	if fromStart {
		winStart = origin
	}
	d, err := store.WaitDrained(drainCtx, table, want, chstore.DrainOptions{
		Identity: wl.Table.Identity,
		Since:    winStart,
		Poll:     100 * time.Millisecond,
		Timeout:  time.Duration(wl.DrainTimeout) * time.Second,
		Stall:    stall,
		Activity: run.dataPlaneWork,
		Outage:   outage,
		Progress: func(count, distinct uint64, at time.Duration) {
			if run.fault != nil {
				run.fault.progress(max(count, distinct), want)
			}
			r.Progress.Set(int64(max(count, distinct)))
			run.landed.OffsetsMS = append(run.landed.OffsetsMS, at.Milliseconds())
			run.landed.Landed = append(run.landed.Landed, int64(count))
		},
	})
	// What ended the drain is read before the arm is stopped below: its
	// containers exiting on that stop would otherwise read as a crash.
	cause := context.Cause(drainCtx)
	if err != nil && cause == nil && ctx.Err() == nil && !errors.Is(err, chstore.ErrDrainTimeout) {
		cause = run.lateExit()
	}
	stopDrain(nil)
	if run.fault != nil {
		run.fault.settle()
	}
	stopWindow()
	run.summary = <-summaries
	run.hostTo = run.readHost()
	<-watched
	// The caps as they are at the end of the window, before anything stops.
	var planErr error
	run.rec.Run.CgroupsEnd, planErr = caps.finish()
	res := drainResult{drain: d, want: want, opened: winStart, drained: err == nil}

	// Stop the arm before the last count, so its final batches are in it.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	// A drain that failed is explained by the arm's log as it was then:
	// once stopped, a JVM's log ends with its own shutdown.
	var logsBefore string
	if err != nil {
		logsBefore = run.dataPlaneLogs(sctx)
	}
	for _, c := range run.containers {
		_ = r.Engine.Stop(sctx, c.id, 10*time.Second)
	}
	// A stopped JVM has flushed its GC log.
	run.readHeaps(sctx)
	if planErr == nil {
		planErr = run.heapMismatch()
	} else if heapErr := run.heapMismatch(); heapErr != nil {
		planErr = &Failure{planErr.Error() + "; " + heapErr.Error()}
	}
	// The gates read the table once it holds still: an insert the arm
	// sent before it stopped may still be landing.
	res.quiesced, res.quiesceErr = quiesce(sctx, store, table, time.Duration(wl.Gates.QuiesceMS)*time.Millisecond)
	cctx, ccancel := context.WithTimeout(sctx, 10*time.Second)
	if count, distinct, cerr := store.Counts(cctx, table, wl.Table.Identity); cerr == nil {
		res.drain.Count, res.drain.Distinct = count, distinct
		res.drain.Duplicates = count - min(count, distinct)
		res.drain.Counted, res.drain.DistinctCounted = true, true
	}
	ccancel()

	if f := run.fault; f != nil {
		f.outcome(run.rec.Scenario, winStart, run.landed, want, res.drain.Count, res.drain.Distinct, res.drain.DistinctCounted)
		f.absorbed(sctx, store, run.rec.Scenario)
	}

	switch {
	case err == nil && planErr == nil:
		r.Progress.End()
		return res, nil
	case err == nil:
		err = planErr
	case cause != nil && ctx.Err() == nil:
		err = cause
	case ctx.Err() != nil:
		run.rec.Flags = append(run.rec.Flags, record.FlagInterrupted)
		err = &Failure{fmt.Sprintf("interrupted during the drain: %v", context.Cause(ctx))}
	case errors.Is(err, chstore.ErrDrainTimeout):
		err = &Failure{fmt.Sprintf("C13: the drain timed out after %ds", wl.DrainTimeout) + logsBefore}
	case errors.Is(err, chstore.ErrStalled):
		err = &Failure{err.Error() + logsBefore}
	default:
		err = &Failure{fmt.Sprintf("watching ClickHouse during the drain: %v", err)}
	}
	if planErr != nil && err != planErr {
		err = &Failure{err.Error() + "; " + planErr.Error()}
	}
	r.Progress.Fail(err)
	var f *Failure
	if errors.As(err, &f) {
		// After a log's tail, on a line of its own.
		sep := "; "
		if strings.HasSuffix(f.Reason, "\n") {
			sep = ""
		}
		f.Reason += sep + "by the end, once the arm had stopped and the table held still: " + landed(res.drain, want)
	}
	run.metrics(res)
	return res, err
}

// lateExit waits a moment for a container's exit that the drain's own
// queries saw first (a server that went away refuses them at once, before
// the engine's report of its exit arrives), so that the note names the
// cause; nil when none comes.
func (run *armRun) lateExit() error {
	ctx, cancel := context.WithTimeout(context.Background(), lateExitWait)
	defer cancel()
	return run.awaitExit(ctx)
}

// awaitExit waits until ctx ends for an arm or infrastructure container to
// stop on its own during the drain, and returns the failure that names it
// (an OOM kill remembered for the record's count), or nil.
func (run *armRun) awaitExit(ctx context.Context) error {
	select {
	case e := <-run.exited:
		if e.oom {
			run.oomKilled = append(run.oomKilled, e.name)
		}
		return &Failure{e.ended("container "+e.name, "during the drain")}
	case e := <-run.s.infraExits:
		return &Failure{e.ended("the "+e.name, "during the drain")}
	case <-ctx.Done():
		return nil
	}
}

// lateExitWait bounds lateExit: the engine reports an exit within a second,
// and an infrastructure container is given restartGrace to run again.
const lateExitWait = restartGrace + 5*time.Second

// dataPlaneWork is the CPU time, in nanoseconds, the arm's data plane has
// used since it started: it stands still only while the arm is frozen or
// blocked.
func (run *armRun) dataPlaneWork() (uint64, error) {
	var ns uint64
	for _, c := range run.containers {
		if c.role != sample.DataPlane {
			continue
		}
		st, err := c.group.Stat()
		if err != nil {
			return 0, fmt.Errorf("reading container %s's CPU time: %w", c.name, err)
		}
		ns += st.CPUUsageNs
	}
	return ns, nil
}

// series is the run's window over time, for its series file; nil when no
// window was opened.
func (run *armRun) series() *record.Series {
	sm := run.summary
	if sm.Readings == 0 {
		return nil
	}
	s := &record.Series{RunID: run.id, PeriodS: sm.Period.Seconds(), OffsetsMS: sm.Series.OffsetsMS, Rows: run.landed}
	for _, c := range sm.Series.Containers {
		s.Containers = append(s.Containers, record.SeriesContainer{Name: c.Name, Role: c.Role, CPUUsageNs: c.CPUUsageNs, AnonShmemBytes: c.AnonShmemBytes})
	}
	return s
}

// landed says how many rows landed, or that they could not be counted.
func landed(d chstore.Drain, want uint64) string {
	switch {
	case d.DistinctCounted:
		return fmt.Sprintf("%d distinct rows of %d landed (%d in all)", d.Distinct, want, d.Count)
	case d.Counted:
		return fmt.Sprintf("%d rows of %d landed; how many were distinct could not be read", d.Count, want)
	}
	return "the rows landed could not be counted: ClickHouse did not answer"
}

// capWatch holds every arm and infrastructure container to the caps read
// back before the window.
func (run *armRun) capWatch() *capWatch {
	var targets []capTarget
	for _, c := range run.containers {
		targets = append(targets, capTarget{name: c.name, group: c.group, verified: run.rec.Run.Cgroups[c.name]})
	}
	for _, c := range run.s.infra {
		targets = append(targets, capTarget{name: c.name, group: c.group, verified: run.s.infraCgroups[c.name]})
	}
	return newCapWatch(time.Now(), targets, run.fault != nil)
}

func (r *Runner) period() time.Duration {
	if r.Period > 0 {
		return r.Period
	}
	return 100 * time.Millisecond
}

func (r *Runner) clock() sample.Clock {
	if r.Clock != nil {
		return r.Clock
	}
	return sample.SystemClock()
}
