package exec

import (
	"cmp"
	"fmt"

	"spatec.dev/spatec/exec/gclog"
	"spatec.dev/spatec/exec/jvmflags"
	"spatec.dev/spatec/exec/sample"
	"spatec.dev/spatec/runs/record"
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
	// flags holds each JVM container's final flags as it printed them:
	// the object alignment and compressed oops it ran with (C9).
	flags map[string]jvmflags.Flags
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
	// fault is the failure scenario the run goes through, if any.
	fault *fault
}

// armContainer is a started arm container.
type armContainer struct {
	name, role, id string
	group          Group
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
	run := &armRun{s: s, plan: plan, id: id, exited: make(chan exitEvent, len(plan.Entrant.Containers)), heaps: map[string]gclog.Heap{}, flags: map[string]jvmflags.Flags{}}
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
	if f := plan.Footprint; f != nil {
		run.rec.SUT.Study = f.Study
		run.rec.SUT.Footprint = &record.Footprint{Axis: f.Axis, Cap: f.Cap, Full: f.Full, Fraction: f.Fraction}
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

// containerID is the engine's id of the run's container name, arm or
// infrastructure; "" if the run has none by that name.
func (run *armRun) containerID(name string) string {
	for _, c := range run.containers {
		if c.name == name {
			return c.id
		}
	}
	for _, c := range run.s.infra {
		if c.name == name {
			return c.id
		}
	}
	return ""
}
