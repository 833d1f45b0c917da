package exec

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"spatec.dev/spatec/exec/cgroup"
	"spatec.dev/spatec/exec/engine"
	"spatec.dev/spatec/exec/progress"
	"spatec.dev/spatec/schema"
)

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
func exitOf(ctx context.Context, e engine.Engine, name, id string, code int) exitEvent {
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
			Volumes:    run.volumes(c.Volumes),
			OpenDirs:   openDirs(c),
			Labels: s.labels(LabelRun, run.id, LabelPlan, run.rec.Run.PlanDigest,
				LabelEntrant, plan.Entrant.Name, LabelRole, c.Role),
			NanoCPUs:    schema.NanoCPUs(c.CPUs),
			CpusetCpus:  c.Cpuset,
			Memory:      c.Memory,
			MemorySwap:  c.MemorySwap,
			NetworkMode: network,
		}
		if run.fault != nil && c.Role == schema.RoleDataPlane {
			// As an orchestrator would start it again: in a scenario's
			// run only, so that elsewhere a crash ends the run at once.
			spec.Restart = run.fault.restart
			spec.Replaced = run.fault.sc.Action == schema.ActionDelete
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
		// On the clock the drain's polls are placed on: the latest start
		// opens the window approximating the reference harness's
		// (record.HarnessSpan).
		startedAt := time.Now()
		v, err := s.verify(ctx, n, created, img, plannedCaps(plan.Env, spec))
		if err != nil {
			r.Progress.Fail(err)
			return err
		}
		if g, ok := v.group.(started); ok && !g.Started().IsZero() {
			// The node's own record of the start, where there is one.
			startedAt = g.Started()
		}
		run.rec.Run.Cgroups[n] = v.raw
		for i := range run.rec.SUT.Containers {
			if run.rec.SUT.Containers[i].Name == n {
				run.rec.SUT.Containers[i].Node = v.node
				run.rec.SUT.Containers[i].StartedAt = startedAt.UTC()
			}
		}
		run.containers = append(run.containers, armContainer{name: n, role: c.Role, id: created.ID, group: v.group})
		go run.watch(ctx, n, created.ID)
		r.Progress.Add(1)
	}
	r.Progress.End()
	return nil
}

// volumes names the run's own volumes for a container's: a volume is made
// for one run and removed with it, so nothing one repetition wrote (a
// checkpoint) is there for the next.
func (run *armRun) volumes(declared map[string]string) map[string]string {
	if len(declared) == 0 {
		return nil
	}
	out := make(map[string]string, len(declared))
	for path, name := range declared {
		out[path] = "spatec-" + run.plan.Entrant.Name + "-" + name + "-" + run.id[len(run.id)-8:]
	}
	return out
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
	for {
		code, err := e.Wait(ctx, id)
		if err != nil || ctx.Err() != nil {
			return
		}
		if run.fault == nil || !run.fault.hits(id) {
			run.exited <- exitOf(ctx, e, name, id, code)
			return
		}
		// A failure scenario's own fault: the container's restart policy,
		// not spatec, decides whether it runs again; watch it if it does.
		if !awaitRunning(ctx, e, id) {
			return
		}
	}
}

// checked is a started container whose caps read back as planned.
type checked struct {
	// raw holds the cap files as read back, for the record.
	raw map[string]string
	// group is where the sampler reads the container.
	group Group
	// node is the Kubernetes node its pod runs on; "" on Docker.
	node string
}

// verify reads a started container's caps back from its cgroup, and the
// image it runs from the engine, and refuses on any mismatch or engine
// warning (C6). It returns what it checked: the raw files read, for the
// record, and the group, for the sampler.
func (s *Session) verify(ctx context.Context, name string, created engine.Created, img image, want cgroup.Caps) (checked, error) {
	r := s.runner
	c, err := r.Engine.Inspect(ctx, created.ID)
	if err != nil {
		return checked{}, err
	}
	if !c.Running || c.Pid == 0 && c.Pod == nil {
		logs, _ := r.Engine.Logs(ctx, created.ID, 20)
		return checked{}, &Failure{fmt.Sprintf("container %s exited before its caps could be verified (exit code %d); its log ends:\n%s", name, c.ExitCode, logs)}
	}
	// The group is located once: the caps are read back from it and the
	// sampler reads the same group, so the two cannot disagree.
	group, found, err := r.Cgroups.Find(ctx, c, want)
	verified := false
	defer func() {
		if group != nil && !verified {
			_ = group.Close()
		}
	}()
	var rb cgroup.ReadBack
	if err == nil {
		rb, err = group.ReadBack()
	}
	var mismatches []cgroup.Mismatch
	if err == nil {
		mismatches = cgroup.Verify(want, rb)
	}
	if err != nil || len(mismatches) > 0 {
		// A process that exits while its caps are read has left its cgroup
		// (its /proc entry then names the root group): report the exit,
		// not the caps of a group that is not the container's.
		if f := s.exitedDuringVerify(ctx, name, created.ID); f != nil {
			return checked{}, f
		}
	}
	if err != nil {
		return checked{}, fmt.Errorf("reading the caps of %s back: %w", name, err)
	}
	var problems []string
	if !runsImage(c.ImageID, img.id) {
		problems = append(problems, fmt.Sprintf("container %s runs image %q, not %s, which the run made sure of as %s and records: the name was moved to other content (a rebuild, another process) after the run resolved it",
			name, c.ImageID, img.id, img.ref))
	}
	for _, w := range created.Warnings {
		problems = append(problems, fmt.Sprintf("container %s: the engine dropped a setting: %s", name, w))
	}
	for _, m := range mismatches {
		problems = append(problems, fmt.Sprintf("container %s: %s", name, m))
	}
	for _, f := range found {
		problems = append(problems, fmt.Sprintf("container %s: %s", name, f))
	}
	if len(problems) > 0 {
		return checked{}, refusef("C6: caps do not read back as planned:\n  %s", strings.Join(problems, "\n  "))
	}
	verified = true
	v := checked{raw: rb.Raw, group: group}
	if c.Pod != nil {
		v.node = c.Pod.Node
	}
	return v, nil
}

// runsImage tells whether the image a container runs, as its engine reports
// it (an ID, or repo@digest on Kubernetes), is the one with ID or digest want.
func runsImage(got, want string) bool {
	if got == "" || want == "" {
		return false
	}
	if i := strings.LastIndex(got, "@"); i >= 0 {
		got = got[i+1:]
	}
	return got == want
}

// exitedDuringVerify gives the engine a moment to report a container
// stopped, and describes its exit; nil when it is still running.
func (s *Session) exitedDuringVerify(ctx context.Context, name, id string) error {
	wctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	code, err := s.runner.Engine.Wait(wctx, id)
	if err != nil {
		return nil
	}
	return &Failure{exitOf(ctx, s.runner.Engine, name, id, code).ended("container "+name, "before its caps could be verified")}
}
