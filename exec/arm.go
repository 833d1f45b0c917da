package exec

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"spatec.dev/spatec/exec/cgroup"
	"spatec.dev/spatec/exec/chstore"
	"spatec.dev/spatec/exec/engine"
	"spatec.dev/spatec/exec/gclog"
	"spatec.dev/spatec/exec/progress"
	"spatec.dev/spatec/exec/sample"
	"spatec.dev/spatec/results/record"
	"spatec.dev/spatec/schema"
)

// armRun is one run of one arm: what was started and what was measured.
type armRun struct {
	s    *Session
	plan *schema.Plan
	id   string
	rec  record.Record

	containers []armContainer
	summary    sample.Summary
	// landed is the rows counted at each poll of the drain, in
	// milliseconds from the window's start.
	landed record.SeriesRows
	// heaps holds each JVM container's heap as its GC log gives it (C9).
	heaps map[string]gclog.Heap
	// caveats are what the note adds after the outcome: why a GC log
	// could not be read, a window too short for its figures.
	caveats []string
	// exited receives the first arm container to stop on its own.
	exited chan exitEvent
	// oomKilled names the arm containers the engine says the OOM killer
	// ended: their cgroup is gone with them, often before the sampler read
	// the kill.
	oomKilled []string
	// hostFrom and hostTo are the host's CPU time as the window opened
	// and closed.
	hostFrom, hostTo hostReading
	// expected is what a correct arm lands from the dataset.
	expected expectation
}

// armContainer is a started arm container.
type armContainer struct {
	name, role, id string
	group          Group
}

type exitEvent struct {
	name string
	code int
	// oom is the engine's word that the kernel's OOM killer ended the
	// container; memory is its cap then.
	oom    bool
	memory int64
	// restarted is a container that ran again after it stopped (docker
	// restart, an engine's restart policy).
	restarted bool
	logs      string
}

// exitOf reads how a container that stopped on its own ended: its code,
// whether the OOM killer ended it, and the end of its log.
func exitOf(ctx context.Context, e Engine, name, id string, code int) exitEvent {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	ev := exitEvent{name: name, code: code}
	if c, err := e.Inspect(ctx, id); err == nil {
		ev.oom, ev.memory = c.OOMKilled, c.Resources.Memory
	}
	ev.logs, _ = e.Logs(ctx, id, 20)
	return ev
}

// ended says how the container ended, the cause first: the OOM killer at
// its cap, else its exit code. when places it ("during the drain").
func (e exitEvent) ended(who, when string) string {
	if when != "" {
		when = " " + when
	}
	if e.restarted {
		return fmt.Sprintf("%s restarted%s: it stopped with code %d and ran again, so whatever it held for the run was lost or interrupted; its log ends:\n%s", who, when, e.code, e.logs)
	}
	if e.oom {
		limit := "its memory cap"
		if e.memory > 0 {
			limit += " of " + schema.FormatBytes(e.memory)
		}
		return fmt.Sprintf("%s was killed by the kernel's OOM killer%s: it reached %s (exit code %d); its log ends:\n%s", who, when, limit, e.code, e.logs)
	}
	return fmt.Sprintf("%s exited%s with code %d; its log ends:\n%s", who, when, e.code, e.logs)
}

func (s *Session) newRun(plan *schema.Plan, opts Options) (*armRun, error) {
	id, err := record.NewRunID()
	if err != nil {
		return nil, err
	}
	reps, rep := opts.Reps, opts.Rep
	if reps < 1 {
		reps, rep = 1, 1
	}
	r := s.runner
	run := &armRun{s: s, plan: plan, id: id, exited: make(chan exitEvent, len(plan.Entrant.Containers)), heaps: map[string]gclog.Heap{}}
	run.rec = record.Record{
		Schema: record.SchemaV1,
		RunID:  id,
		Rep:    rep,
		Reps:   reps,
		SUT: record.SUT{
			Entrant:       plan.Entrant.Name,
			Variant:       plan.Variant,
			Study:         plan.Entrant.Variants[plan.Variant].Study,
			VersionPinned: plan.Entrant.Version.Pin,
		},
		Run: record.Run{
			Env:            plan.Env.Name,
			EnvDigest:      plan.EnvDigest(),
			PlanDigest:     plan.Digest(),
			InfraDigest:    plan.InfraDigest(),
			SpatecVersion:  r.Version,
			SpatecCommit:   r.Commit,
			HarnessVersion: record.HarnessVersion,
			Evidence:       cmp.Or(opts.Evidence, record.EvidenceExploratory),
			StartedAt:      r.now().UTC(),
			Host: record.Host{
				Cores:         s.host.NCPU,
				MemoryBytes:   s.host.MemTotal,
				Kernel:        s.host.KernelVersion,
				CgroupVersion: s.mode.String(),
				EngineVersion: s.host.EngineVersion,
			},
			Cgroups: map[string]map[string]string{},
			Dataset: record.Dataset{Workload: plan.Workload.Name, Version: plan.Workload.DatasetVersion},
		},
		Variant: plan.KnobValues(),
		Metrics: map[string]record.Metric{},
		Flags:   []string{},
	}
	for name, raw := range s.infraCgroups {
		run.rec.Run.Cgroups[name] = raw
	}
	for _, c := range s.infra {
		svc, _ := s.env.Infra.Service(c.service)
		run.rec.Run.Infra = append(run.rec.Run.Infra, record.Container{
			Name: c.name, Role: c.service, Image: c.image.ref, ImageDigest: c.image.id, Recipe: c.image.recipe, Version: c.version,
			CPUs: fmt.Sprintf("%.2f", svc.CPUs), MemoryBytes: svc.Memory, Node: c.node,
		})
	}
	return run, nil
}

// prepareImages builds the images the plan builds itself, checks the others
// are present, records their digests, and reads the entrant's version
// inside its image: a mismatch with the pin refuses the run (C16).
func (run *armRun) prepareImages(ctx context.Context) error {
	for _, n := range run.plan.ContainerNames() {
		c := run.plan.Entrant.Containers[n]
		img, err := run.s.ensureImage(ctx, c.Image, "", c.Build)
		if err != nil {
			var ref *Refusal
			if errors.As(err, &ref) {
				return refusef("%s: container %s: %v", run.plan.Entrant.Name, n, ref.Reason)
			}
			return err
		}
		run.rec.SUT.Containers = append(run.rec.SUT.Containers, record.Container{
			Name: n, Role: c.Role, Image: img.ref, ImageDigest: img.id, Recipe: img.recipe,
			CPUs: fmt.Sprintf("%.2f", c.CPUs), MemoryBytes: c.Memory,
		})
	}

	v := run.plan.Entrant.Version
	probe := run.plan.Entrant.Containers[v.Container]
	version, err := run.s.readVersion(ctx, run.plan.Entrant.Name, run.s.images[probe.Image], run.id, v.Command, v.Match)
	if err != nil {
		return err
	}
	run.rec.SUT.Version = version
	if version != v.Pin {
		return refusef("C16: %s: image %s runs version %s; the entrant pins %s: rebuild the image at the pinned version or update the pin",
			run.plan.Entrant.Name, probe.Image, version, v.Pin)
	}
	return nil
}

// readVersion runs command inside image, with no network, and returns the
// first group of match in what it prints: the version of what the image
// runs, read where it runs (C16). Labels carry run.
func (s *Session) readVersion(ctx context.Context, what string, img image, run string, command []string, match string) (string, error) {
	re, err := regexp.Compile(match)
	if err != nil {
		return "", refusef("C16: %s: version.match %q is not a regular expression: %v", what, match, err)
	}
	code, out, err := s.runner.Engine.RunOnce(ctx, engine.ContainerSpec{
		Name:        "spatec-version-" + run[len(run)-12:],
		Image:       img.ref,
		ImageID:     img.id,
		Entrypoint:  command,
		Labels:      s.labels(LabelRun, run),
		NetworkMode: "none",
	}, nil)
	if err != nil {
		return "", fmt.Errorf("reading the version of %s inside %s: %w", what, img.ref, err)
	}
	m := re.FindStringSubmatch(out)
	if code != 0 || len(m) < 2 {
		return "", refusef("C16: %s: %s printed no version matching %q (exit code %d); output:\n%s",
			what, strings.Join(command, " "), match, code, strings.TrimSpace(out))
	}
	return m[1], nil
}

// start creates and starts the arm's containers, control planes first, and
// verifies every one's caps before the window opens (C6).
func (run *armRun) start(ctx context.Context) error {
	s, r, plan := run.s, run.s.runner, run.plan
	names := plan.ContainerNames()
	r.Progress.Start(progress.PhaseVerify, int64(len(names)), "containers")
	network := "host"
	if s.network != "" {
		network = s.network
	} else if plan.Env.Network == "bridge" {
		// A hold run on a bridge environment has no session network.
		network = "bridge"
	}
	for _, n := range names {
		c := plan.Entrant.Containers[n]
		img := s.images[c.Image]
		spec := engine.ContainerSpec{
			Name:       "spatec-" + plan.Entrant.Name + "-" + n + "-" + run.id[len(run.id)-8:],
			Image:      img.ref,
			ImageID:    img.id,
			Entrypoint: c.Entrypoint,
			Args:       c.Args,
			Env:        containerEnv(c),
			Files:      c.Files,
			OpenDirs:   openDirs(c),
			Labels: s.labels(LabelRun, run.id, LabelPlan, run.rec.Run.PlanDigest,
				LabelEntrant, plan.Entrant.Name, LabelRole, c.Role),
			NanoCPUs:    schema.NanoCPUs(c.CPUs),
			CpusetCpus:  c.Cpuset,
			Memory:      c.Memory,
			MemorySwap:  c.MemorySwap,
			NetworkMode: network,
		}
		if s.network != "" {
			spec.NetworkAliases = []string{n}
		}
		created, err := r.Engine.Create(ctx, spec)
		if err != nil {
			r.Progress.Fail(err)
			var missing *engine.ImageMissingError
			if errors.As(err, &missing) {
				return &Refusal{err.Error()}
			}
			return err
		}
		if err := r.Engine.Start(ctx, created.ID); err != nil {
			r.Progress.Fail(err)
			return fmt.Errorf("starting %s: %w", spec.Name, err)
		}
		v, err := s.verify(ctx, n, created, img, plannedCaps(plan.Env, spec))
		if err != nil {
			r.Progress.Fail(err)
			return err
		}
		run.rec.Run.Cgroups[n] = v.raw
		for i := range run.rec.SUT.Containers {
			if run.rec.SUT.Containers[i].Name == n {
				run.rec.SUT.Containers[i].Node = v.node
			}
		}
		run.containers = append(run.containers, armContainer{name: n, role: c.Role, id: created.ID, group: v.group})
		go run.watch(ctx, n, created.ID)
		r.Progress.Add(1)
	}
	r.Progress.End()
	return nil
}

// plannedCaps are the caps a container's cgroup must show. On Kubernetes
// with the static CPU manager, a Guaranteed pod's whole CPUs are a cpuset
// of cores of its own, without a CFS quota.
func plannedCaps(env schema.Environment, spec engine.ContainerSpec) cgroup.Caps {
	want := cgroup.Caps{NanoCPUs: spec.NanoCPUs, CpusetCpus: spec.CpusetCpus, Memory: spec.Memory, MemorySwap: spec.MemorySwap}
	if k := env.Kubernetes; env.Runtime == "kubernetes" && k != nil && k.ExclusiveCPUs {
		want.ExclusiveCPUs, want.NanoCPUs = int(spec.NanoCPUs/1e9), 0
	}
	return want
}

// watch reports an arm container that stops on its own, with its exit code
// and the tail of its log.
func (run *armRun) watch(ctx context.Context, name, id string) {
	e := run.s.runner.Engine
	code, err := e.Wait(ctx, id)
	if err != nil || ctx.Err() != nil {
		return
	}
	run.exited <- exitOf(ctx, e, name, id, code)
}

// dataPlaneLogs is the end of each data-plane container's log, for the
// note of an arm that ran on without landing its rows: what it last said
// is most often why ("; <name>'s log ends:" and the lines), or "" when
// there is none to read.
func (run *armRun) dataPlaneLogs(ctx context.Context) string {
	var b strings.Builder
	for _, c := range run.containers {
		if c.role != schema.RoleDataPlane {
			continue
		}
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		logs, err := run.s.runner.Engine.Logs(lctx, c.id, 5)
		cancel()
		if err == nil && strings.TrimSpace(logs) != "" {
			fmt.Fprintf(&b, "; container %s's log ends:\n%s", c.name, strings.TrimRight(logs, "\n")+"\n")
		}
	}
	return b.String()
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
	winStart := time.Now()
	origin, fromStart := run.origin()
	if fromStart {
		opts = append(opts, sample.WithOrigin(origin))
		winStart = origin
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
		select {
		case e := <-run.exited:
			if e.oom {
				run.oomKilled = append(run.oomKilled, e.name)
			}
			stopDrain(&Failure{e.ended("container "+e.name, "during the drain")})
		case e := <-run.s.infraExits:
			stopDrain(&Failure{e.ended("the "+e.name, "during the drain")})
		case <-drainCtx.Done():
		}
	}()
	stall := time.Duration(wl.StallLimit) * time.Second
	go run.s.watchBroker(drainCtx, stall, stopDrain)
	r.Progress.Start(progress.PhaseDrain, int64(want), "rows")
	table := run.plan.Table()
	d, err := store.WaitDrained(drainCtx, table, want, chstore.DrainOptions{
		Identity: wl.Table.Identity,
		Since:    origin,
		Poll:     100 * time.Millisecond,
		Timeout:  time.Duration(wl.DrainTimeout) * time.Second,
		Stall:    stall,
		Activity: run.dataPlaneWork,
		Progress: func(count, distinct uint64) {
			r.Progress.Set(int64(max(count, distinct)))
			run.landed.OffsetsMS = append(run.landed.OffsetsMS, time.Since(winStart).Milliseconds())
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
	stopWindow()
	run.summary = <-summaries
	run.hostTo = run.readHost()
	<-watched
	// The caps as they are at the end of the window, before anything stops.
	var planErr error
	run.rec.Run.CgroupsEnd, planErr = caps.finish()
	res := drainResult{drain: d, want: want}

	// Stop the arm before the last count, so its final batches are in it.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
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
		err = &Failure{fmt.Sprintf("C13: the drain timed out after %ds", wl.DrainTimeout) + run.dataPlaneLogs(sctx)}
	case errors.Is(err, chstore.ErrStalled):
		err = &Failure{err.Error() + run.dataPlaneLogs(sctx)}
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
	select {
	case e := <-run.exited:
		return &Failure{e.ended("container "+e.name, "during the drain")}
	case e := <-run.s.infraExits:
		return &Failure{e.ended("the "+e.name, "during the drain")}
	case <-time.After(lateExitWait):
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
	return newCapWatch(time.Now(), targets)
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
