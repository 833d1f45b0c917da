package exec

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"spatec.dev/spatec/exec/burn/burntest"
	"spatec.dev/spatec/exec/cgroup"
	"spatec.dev/spatec/exec/engine"
	"spatec.dev/spatec/exec/engine/docker"
	"spatec.dev/spatec/exec/gclog"
	"spatec.dev/spatec/exec/jvmflags"
	"spatec.dev/spatec/runs/record"
	"spatec.dev/spatec/schema"
)

// holdRun opens a hold session (no infrastructure) and runs plan for hold,
// then checks through the engine that nothing of the run is left.
func holdRun(t *testing.T, e *docker.Engine, plan *schema.Plan, hold time.Duration) (*Result, *Session, error) {
	t.Helper()
	burntest.Image(t, e)
	cleanupLabel(t, e, LabelEntrant, plan.Entrant.Name)
	ctx, _ := testContext(t, 60*time.Second)
	r := newRunner(t, e, nil)
	s, err := r.Open(ctx, plan.Env, true)
	if err != nil {
		t.Fatalf("opening a hold session: %v", err)
	}
	defer s.Close()
	res, err := s.Run(ctx, plan, Options{Hold: hold})
	if res == nil {
		t.Fatalf("Run returned no result; error: %v", err)
	}
	assertNothingLeft(t, e, LabelRun, res.Record.RunID, LabelEntrant, plan.Entrant.Name)
	return res, s, err
}

// TestHoldReadsCapsBack: the record carries the cap files as the kernel
// wrote them, and they are the caps the plan applied (C6).
func TestHoldReadsCapsBack(t *testing.T) {
	t.Parallel()
	e := newEngine(t)
	mode, err := cgroup.FS{}.Mode()
	if err != nil {
		t.Fatal(err)
	}
	plan := burnPlan(holdEnv(), entrantName("caps"), 0.5, 256*mib, "-cpu", "0.1")
	res, s, err := holdRun(t, e, plan, 1500*time.Millisecond)
	if err != nil {
		t.Fatalf("hold run: %s", describe(err))
	}
	rec := res.Record
	if rec.Status != record.StatusOK {
		t.Errorf("status %s, note %q; want ok", rec.Status, rec.Note)
	}
	var want map[string]string
	switch mode.Version() {
	case 1:
		want = map[string]string{
			"cpu.cfs_quota_us":            "50000",
			"cpu.cfs_period_us":           "100000",
			"memory.limit_in_bytes":       "268435456",
			"memory.memsw.limit_in_bytes": "268435456",
		}
	case 2:
		want = map[string]string{
			"cpu.max":         "50000 100000",
			"memory.max":      "268435456",
			"memory.swap.max": "0",
		}
	default:
		t.Fatalf("cgroup mode %s", mode)
	}
	raw, ok := rec.Run.Cgroups["burn"]
	if !ok {
		t.Fatalf("run.cgroups has no entry for container burn: %v", rec.Run.Cgroups)
	}
	for file, v := range want {
		if got, ok := raw[file]; !ok {
			t.Errorf("run.cgroups[burn] lacks %s (has %v)", file, raw)
		} else if got != v {
			t.Errorf("run.cgroups[burn][%s] = %q; want %q", file, got, v)
		}
	}
	if rec.Run.Host.CgroupVersion != mode.String() {
		t.Errorf("run.host.cgroup_version = %q; want %q", rec.Run.Host.CgroupVersion, mode.String())
	}
	if rec.Run.Host.Cores != s.Host().NCPU || rec.Run.Host.EngineVersion != s.Host().EngineVersion {
		t.Errorf("run.host = %+v; the engine reports %d CPUs, version %s", rec.Run.Host, s.Host().NCPU, s.Host().EngineVersion)
	}
	// The version was read inside the image (C16), and the image digest
	// recorded.
	if rec.SUT.Version != burntest.Version {
		t.Errorf("sut.version = %q; want %q", rec.SUT.Version, burntest.Version)
	}
	img, err := e.ImageDigest(context.Background(), burntest.Tag)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.SUT.Containers) != 1 || rec.SUT.Containers[0].ImageDigest != img.ID || rec.SUT.Containers[0].CPUs != "0.50" {
		t.Errorf("sut.containers = %+v; want one container of image %s at 0.50 CPUs", rec.SUT.Containers, img.ID)
	}
}

// TestHoldMeasuresCPUCap: a program burning a whole core under a 0.5-CPU
// cap measures 0.45–0.55 cores, and is throttled.
func TestHoldMeasuresCPUCap(t *testing.T) {
	t.Parallel()
	e := newEngine(t)
	plan := burnPlan(holdEnv(), entrantName("cpu"), 0.5, 64*mib, "-cpu", "1", "-hold", "8s")
	res, _, err := holdRun(t, e, plan, 6*time.Second)
	if err != nil {
		t.Fatalf("hold run: %s", describe(err))
	}
	arm := res.Summary.Arm
	t.Logf("0.5-CPU cap: data plane %.3f cores, arm %.3f cores over %v (%d readings)",
		arm.DataPlaneCoresUsed, arm.CoresUsed, res.Summary.Window, res.Summary.Readings)
	if arm.DataPlaneCoresUsed < 0.45 || arm.DataPlaneCoresUsed > 0.55 {
		t.Errorf("data_plane_cores_used = %.3f; a 0.5-CPU cap measures 0.45–0.55", arm.DataPlaneCoresUsed)
	}
	if arm.CoresUsed != arm.DataPlaneCoresUsed || arm.ControlPlaneCoresUsed != 0 {
		t.Errorf("cores_used %.3f, control_plane_cores_used %.3f; with no control plane the arm is its data plane",
			arm.CoresUsed, arm.ControlPlaneCoresUsed)
	}
	if len(res.Summary.Containers) != 1 || res.Summary.Containers[0].ThrottledPeriods == 0 {
		t.Errorf("containers %+v: one core's work under a 0.5 cap must be throttled", res.Summary.Containers)
	}
}

// TestHoldMeasuresAnonAndShmem: 64 MiB anonymous and 32 MiB shared memory
// give an arm peak of at least 96 MiB with a shmem part of at least 32 MiB
// (C7).
func TestHoldMeasuresAnonAndShmem(t *testing.T) {
	t.Parallel()
	e := newEngine(t)
	plan := burnPlan(holdEnv(), entrantName("mem"), 0.5, 256*mib, "-anon", "64MiB", "-shm", "32MiB")
	res, _, err := holdRun(t, e, plan, 2*time.Second)
	if err != nil {
		t.Fatalf("hold run: %s", describe(err))
	}
	arm := res.Summary.Arm
	t.Logf("arm peak anon+shmem %d MiB, shmem %d MiB, memory peak %d MiB",
		arm.PeakAnonBytes/uint64(mib), arm.PeakShmemBytes/uint64(mib), arm.MemoryPeakBytes/uint64(mib))
	if arm.PeakAnonBytes < uint64(96*mib) {
		t.Errorf("peak_anon_bytes = %d; want at least 96 MiB (%d)", arm.PeakAnonBytes, 96*mib)
	}
	if arm.PeakShmemBytes < uint64(32*mib) {
		t.Errorf("peak_shmem_bytes = %d; want at least 32 MiB (%d)", arm.PeakShmemBytes, 32*mib)
	}
	if arm.DataPlanePeakAnonBytes != arm.PeakAnonBytes {
		t.Errorf("data_plane_peak_anon_bytes %d differs from the arm's %d; the arm is its data plane", arm.DataPlanePeakAnonBytes, arm.PeakAnonBytes)
	}
	if arm.MemoryPeakBytes < uint64(96*mib) || arm.MemoryPeakBytes > uint64(256*mib) {
		t.Errorf("memory_peak_bytes = %d; want between the 96 MiB touched and the 256 MiB cap", arm.MemoryPeakBytes)
	}
	if c := res.Summary.Containers; len(c) != 1 || c[0].OOMKills != 0 {
		t.Errorf("containers %+v: want one container and no OOM kill", c)
	}
}

// TestHoldRefusesCapsThatDoNotReadBack: a memory cap that is not a whole
// number of pages is rounded by the kernel, so it does not read back as
// planned and the run is refused before its window (C6).
func TestHoldRefusesCapsThatDoNotReadBack(t *testing.T) {
	t.Parallel()
	e := newEngine(t)
	mode, err := cgroup.FS{}.Mode()
	if err != nil {
		t.Fatal(err)
	}
	file := "memory.limit_in_bytes"
	if mode == cgroup.ModeV2 {
		file = "memory.max"
	}
	plan := burnPlan(holdEnv(), entrantName("mismatch"), 0.5, 256*mib+1)
	res, _, err := holdRun(t, e, plan, 5*time.Second)
	var ref *Refusal
	if !errors.As(err, &ref) {
		t.Fatalf("Run returned %s; want a *Refusal", describe(err))
	}
	for _, want := range []string{"C6", "container burn", file, fmt.Sprint(256*mib + 1), fmt.Sprint(256 * mib)} {
		if !strings.Contains(ref.Reason, want) {
			t.Errorf("refusal %q does not mention %q", ref.Reason, want)
		}
	}
	if res.Record.Status != record.StatusRefused || !strings.HasPrefix(res.Record.Note, "REFUSED: C6") {
		t.Errorf("record status %s, note %q; want refused with the reason", res.Record.Status, res.Record.Note)
	}
	if _, ok := res.Record.Run.Cgroups["burn"]; ok {
		t.Errorf("a refused container's caps are in run.cgroups: %v", res.Record.Run.Cgroups)
	}
}

// TestHoldReportsEarlyExit: an arm container that exits during the window
// fails the run with its exit code and the tail of its log.
func TestHoldReportsEarlyExit(t *testing.T) {
	t.Parallel()
	e := newEngine(t)
	plan := burnPlan(holdEnv(), entrantName("exit"), 0.5, 64*mib, "-hold", "1s", "-exit", "3")
	res, _, err := holdRun(t, e, plan, 30*time.Second)
	var f *Failure
	if !errors.As(err, &f) {
		t.Fatalf("Run returned %s; want a *Failure", describe(err))
	}
	for _, want := range []string{"container burn exited with code 3", "burn ready:", "burn: exiting with code 3 as asked"} {
		if !strings.Contains(f.Reason, want) {
			t.Errorf("failure %q does not contain %q", f.Reason, want)
		}
	}
	if res.Record.Status != record.StatusFailed || !noteGives(res.Record.Note, f.Reason) {
		t.Errorf("record status %s, note %q; want failed with the reason", res.Record.Status, res.Record.Note)
	}
}

// TestHoldReportsImmediateExit: a container that exits at once, possibly
// while its caps are being read, fails the run with its exit code and log;
// it is never taken for a cap mismatch (its cgroup is gone, not wrong).
func TestHoldReportsImmediateExit(t *testing.T) {
	t.Parallel()
	e := newEngine(t)
	plan := burnPlan(holdEnv(), entrantName("exit0s"), 0.5, 64*mib, "-exit", "3")
	res, _, err := holdRun(t, e, plan, 30*time.Second)
	var f *Failure
	if !errors.As(err, &f) {
		t.Fatalf("Run returned %s; want a *Failure", describe(err))
	}
	// Which message depends on when the exit is seen: before, during or
	// after the caps are read. Each names the code and quotes the log.
	if !exitCode3.MatchString(f.Reason) || !strings.Contains(f.Reason, "burn: exiting with code 3 as asked") {
		t.Errorf("failure %q; want the exit code 3 and the log tail", f.Reason)
	}
	if res.Record.Status != record.StatusFailed {
		t.Errorf("record status %s; want failed", res.Record.Status)
	}
}

var exitCode3 = regexp.MustCompile(`container burn exited (with code 3|before its caps could be verified \(exit code 3\))`)

// TestRefusesMoreCPUsThanTheHost: a plan asking more CPUs than the host has
// is refused before anything starts, with the host's real count.
func TestRefusesMoreCPUsThanTheHost(t *testing.T) {
	t.Parallel()
	e := newEngine(t)
	info, err := e.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	asked := 32
	if info.NCPU >= asked {
		asked = 2 * info.NCPU
	}
	plan := burnPlan(holdEnv(), entrantName("cpus"), float64(asked), 64*mib)
	res, _, err := holdRun(t, e, plan, 5*time.Second)
	var ref *Refusal
	if !errors.As(err, &ref) {
		t.Fatalf("Run returned %s; want a *Refusal", describe(err))
	}
	want := fmt.Sprintf("the plan asks %d CPUs; this host has %d; use an environment sized for it", asked, info.NCPU)
	if ref.Reason != want {
		t.Errorf("refusal %q; want %q", ref.Reason, want)
	}
	if res.Record.Status != record.StatusRefused || !noteGives(res.Record.Note, "REFUSED: "+want) {
		t.Errorf("record status %s, note %q", res.Record.Status, res.Record.Note)
	}
	if len(res.Record.SUT.Containers) != 0 {
		t.Errorf("sut.containers = %+v; nothing should have been prepared", res.Record.SUT.Containers)
	}
}

// TestRefusesMissingImage: an image that is not on the engine is refused
// with how to provide it (spatec pulls nothing).
func TestRefusesMissingImage(t *testing.T) {
	t.Parallel()
	e := newEngine(t)
	plan := burnPlan(holdEnv(), entrantName("noimage"), 0.5, 64*mib)
	c := plan.Entrant.Containers["burn"]
	c.Image = "spatec-missing-" + plan.Entrant.Name + ":0"
	plan.Entrant.Containers["burn"] = c
	res, _, err := holdRun(t, e, plan, 5*time.Second)
	var ref *Refusal
	if !errors.As(err, &ref) {
		t.Fatalf("Run returned %s; want a *Refusal", describe(err))
	}
	for _, want := range []string{"container burn", c.Image, "is not present on this engine", "docker load"} {
		if !strings.Contains(ref.Reason, want) {
			t.Errorf("refusal %q does not mention %q", ref.Reason, want)
		}
	}
	if res.Record.Status != record.StatusRefused {
		t.Errorf("record status %s; want refused", res.Record.Status)
	}
}

// TestRefusesAVersionOtherThanThePin: the version read inside the image
// must be the one the entrant pins (C16).
func TestRefusesAVersionOtherThanThePin(t *testing.T) {
	t.Parallel()
	e := newEngine(t)
	plan := burnPlan(holdEnv(), entrantName("pin"), 0.5, 256*mib, "-hold", "5s")
	plan.Entrant.Version.Pin = "9.9.9"
	res, _, err := holdRun(t, e, plan, 3*time.Second)
	var ref *Refusal
	if !errors.As(err, &ref) {
		t.Fatalf("Run returned %s; want a *Refusal", describe(err))
	}
	want := fmt.Sprintf("C16: %s: image %s runs version %s; the entrant pins 9.9.9", plan.Entrant.Name, burntest.Tag, burntest.Version)
	if !strings.HasPrefix(ref.Reason, want) {
		t.Errorf("refusal %q, want it to start %q", ref.Reason, want)
	}
	if res.Record.Status != record.StatusRefused || res.Record.SUT.Version != burntest.Version || res.Record.SUT.VersionPinned != "9.9.9" {
		t.Errorf("record: status %s, version %q pinned %q", res.Record.Status, res.Record.SUT.Version, res.Record.SUT.VersionPinned)
	}
}

// TestJVMHeapIsReadFromItsGCLog starts a container declared as a JVM: the
// executor appends its GC-log option to JAVA_TOOL_OPTIONS (after the
// entrant's own options and the plan's, the final flags' among them), the
// program writes the log and the flags those options name (burn -gclog,
// standing in for a JVM: no JVM image runs here), and the record carries
// the heap figures read from the log (C9), per container and for the data
// plane, and the container's object alignment and compressed-oops mode.
func TestJVMHeapIsReadFromItsGCLog(t *testing.T) {
	t.Parallel()
	e := newEngine(t)
	plan := burnPlan(holdEnv(), entrantName("jvm"), 0.5, 256*mib, "-gclog")
	c := plan.Entrant.Containers["burn"]
	c.Runtime = "jvm"
	c.Environment = map[string]string{"JAVA_TOOL_OPTIONS": "-XX:+UseG1GC"}
	c.JVM = declaredJVM(512 * mib)
	plan.Entrant.Containers["burn"] = c
	res, _, err := holdRun(t, e, plan, 1500*time.Millisecond)
	if err != nil {
		t.Fatalf("hold run: %s", describe(err))
	}
	m := res.Record.Metrics
	for metric, want := range map[string]int64{
		record.JVMHeapConfiguredBytes:    512 * mib,
		record.JVMHeapCommittedPeakBytes: 300 * mib,
		record.JVMHeapLivePeakBytes:      64 * mib,
	} {
		for _, name := range []string{metric, metric + ".burn"} {
			if got := m[name].Value; got != float64(want) {
				t.Errorf("%s = %v, want %v", name, got, want)
			}
		}
	}
	for _, f := range []string{record.FlagJVMHeapUnread, record.FlagJVMFlagsUnread} {
		if slices.Contains(res.Record.Flags, f) {
			t.Errorf("flagged %s: %s", f, res.Record.Note)
		}
	}
	if cs := res.Record.SUT.Containers; len(cs) != 1 || cs[0].JVMObjectAlignmentBytes != 8 || cs[0].JVMCompressedOopsMode != "32-bit" {
		t.Errorf("containers %+v; want burn's object alignment 8 and compressed-oops mode 32-bit", cs)
	}
}

// declaredJVM is a G1 JVM's declaration of the given heap at the default
// alignment and heap base, with the schema's JVM options: the plan's
// options reach the program in JAVA_TOOL_OPTIONS.
func declaredJVM(heap int64) *schema.JVM {
	gcLog, flags := gclog.Option(gclog.Path), jvmflags.Options(jvmflags.Path)
	return &schema.JVM{Heap: heap, ObjectAlignment: 8, HeapBaseMinAddress: 2 << 30, Ceiling: 30 << 30, GC: "G1",
		GCLog: gcLog, FlagsLog: flags, JVMOptions: slices.Concat([]string{gcLog}, flags, []string{"-XX:+UseG1GC"}),
		Options: slices.Concat(flags, []string{"-XX:+UseG1GC"}), OptionsVia: "JAVA_TOOL_OPTIONS"}
}

// TestJVMHeapOtherThanDeclaredFails: a JVM whose GC log shows another heap
// than its plan declares (a launcher that put its own -Xmx after spatec's)
// ran another configuration: the run fails with both figures (C9).
func TestJVMHeapOtherThanDeclaredFails(t *testing.T) {
	t.Parallel()
	e := newEngine(t)
	plan := burnPlan(holdEnv(), entrantName("jvm"), 0.5, 256*mib, "-gclog")
	c := plan.Entrant.Containers["burn"]
	c.Runtime = "jvm"
	c.JVM = declaredJVM(1024 * mib)
	plan.Entrant.Containers["burn"] = c
	_, _, err := holdRun(t, e, plan, 1500*time.Millisecond)
	var f *Failure
	if !errors.As(err, &f) || f.Reason != "C9: container burn ran with a 512 MiB heap, as its GC log says; its plan declares 1 GiB" {
		t.Fatalf("hold run: %s; want a C9 failure with both heaps", describe(err))
	}
}

// TestJVMWithoutGCLogIsFlagged: a JVM container that leaves no GC log and
// no final flags (it ignored JAVA_TOOL_OPTIONS) still completes its run,
// flagged, with a note naming the container and the cause.
func TestJVMWithoutGCLogIsFlagged(t *testing.T) {
	t.Parallel()
	e := newEngine(t)
	plan := burnPlan(holdEnv(), entrantName("nolog"), 0.5, 256*mib)
	c := plan.Entrant.Containers["burn"]
	c.Runtime = "jvm"
	c.JVM = declaredJVM(128 * mib)
	plan.Entrant.Containers["burn"] = c
	res, _, err := holdRun(t, e, plan, 1500*time.Millisecond)
	if err != nil {
		t.Fatalf("hold run: %s", describe(err))
	}
	rec := res.Record
	if rec.Status != record.StatusOK || !slices.Contains(rec.Flags, record.FlagJVMHeapUnread) || !slices.Contains(rec.Flags, record.FlagJVMFlagsUnread) ||
		!strings.Contains(rec.Note, "C9: the heap of burn is not recorded") || !strings.Contains(rec.Note, "C9: the object alignment of burn is not recorded") {
		t.Errorf("status %s, flags %v, note %q; want ok, flagged %s and %s, with C9 notes", rec.Status, rec.Flags, rec.Note, record.FlagJVMHeapUnread, record.FlagJVMFlagsUnread)
	}
	if c := rec.SUT.Containers[0]; c.JVMObjectAlignmentBytes != 0 || c.JVMCompressedOopsMode != "" {
		t.Errorf("an alignment or a mode was recorded without the JVM's word: %+v", c)
	}
	if _, ok := rec.Metrics[record.JVMHeapConfiguredBytes]; ok {
		t.Errorf("a heap figure was recorded without a log: %v", rec.Metrics)
	}
}

// reportingCgroups is the host's tree, as a node's probe is: a tree that
// finds more wrong with a container than its cgroup's files (cores shared
// with another container) reports it with the group.
type reportingCgroups struct {
	HostCgroups
	problems []string
}

func (c reportingCgroups) Find(ctx context.Context, ctr engine.Container, want cgroup.Caps) (Group, []string, error) {
	g, _, err := c.HostCgroups.Find(ctx, ctr, want)
	return g, c.problems, err
}

// TestRefusesWhatTheTreeFindsWrong: what the cgroup tree finds wrong with
// a container beyond its files refuses the run as C6, naming the container.
func TestRefusesWhatTheTreeFindsWrong(t *testing.T) {
	t.Parallel()
	e := newEngine(t)
	burntest.Image(t, e)
	plan := burnPlan(holdEnv(), entrantName("shared"), 0.5, 256*mib)
	cleanupLabel(t, e, LabelEntrant, plan.Entrant.Name)
	ctx, _ := testContext(t, 60*time.Second)
	r := newRunner(t, e, nil)
	r.Cgroups = reportingCgroups{problems: []string{"cpuset.cpus: its cores are not its own"}}
	s, err := r.Open(ctx, plan.Env, true)
	if err != nil {
		t.Fatalf("opening a hold session: %v", err)
	}
	defer s.Close()
	res, err := s.Run(ctx, plan, Options{Hold: time.Second})
	var ref *Refusal
	if !errors.As(err, &ref) || ref.Reason != "C6: caps do not read back as planned:\n  container burn: cpuset.cpus: its cores are not its own" {
		t.Fatalf("Run returned %s; want a C6 refusal naming the container and what was found", describe(err))
	}
	assertNothingLeft(t, e, LabelRun, res.Record.RunID, LabelEntrant, plan.Entrant.Name)
}
