package main

// The faults of a real run, each against the real engine, ClickHouse and
// the local-containers infrastructure: every one must end in a truthful
// record (or a refusal before anything is measured), leave nothing
// labelled by spatec behind, and lose no record. Each test logs one row of
// the fault table that bench/faults.sh prints:
//
//	fault-row|<fault>|<outcome>|<objects left>|<records lost>

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"spatec.dev/spatec/exec"
	"spatec.dev/spatec/exec/cgroup"
	"spatec.dev/spatec/exec/engine/docker"
	"spatec.dev/spatec/internal/testenv"
	"spatec.dev/spatec/runs/record"

	"github.com/twmb/franz-go/pkg/kgo"
)

// syncBuffer is a bytes.Buffer safe to write from one goroutine while
// another reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// background is spatec running in this process, in the background.
type background struct {
	stdout, stderr syncBuffer
	done           chan int
}

func startCLI(t *testing.T, args ...string) *background {
	t.Helper()
	b := &background{done: make(chan int, 1)}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	go func() {
		defer cancel()
		b.done <- run(ctx, args, &b.stdout, &b.stderr)
	}()
	return b
}

// waitFor waits until the run's stderr says want.
func (b *background) waitFor(t *testing.T, want string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !strings.Contains(b.stderr.String(), want) {
		select {
		case code := <-b.done:
			b.done <- code
			t.Fatalf("spatec exited with %d before saying %q; stderr:\n%s", code, want, b.stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("spatec did not say %q within %v; stderr:\n%s", want, timeout, b.stderr.String())
		}
	}
}

func (b *background) wait(t *testing.T) int {
	t.Helper()
	select {
	case code := <-b.done:
		return code
	case <-time.After(5 * time.Minute):
		t.Fatalf("spatec did not end; stderr:\n%s", b.stderr.String())
	}
	return -1
}

// requireContainers fails under CI, and skips elsewhere, without what
// local-containers needs.
func requireContainers(t *testing.T) *docker.Engine {
	t.Helper()
	requireServices(t)
	testenv.Require(t, "mmdebstrap (builds the Debian ClickHouse image)", func() error {
		_, err := osexec.LookPath("mmdebstrap")
		return err
	})
	return testenv.Docker(t)
}

// containerID finds the one container carrying label key=value.
func containerID(t *testing.T, e *docker.Engine, key, value string) string {
	t.Helper()
	objs, err := e.ListOwned(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.Kind == "container" && o.Labels[key] == value {
			return o.ID
		}
	}
	t.Fatalf("no container labelled %s=%s", key, value)
	return ""
}

// allRecords reads every record under root.
func allRecords(t *testing.T, root string) []record.Record {
	t.Helper()
	var recs []record.Record
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(path, ".jsonl") {
			recs = append(recs, readRecords(t, path)...)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// faultOutcome checks what every fault must leave, and logs its row of the
// fault table: nothing labelled by spatec on the engine, no record lost
// (want is how many runs started; printed counts the records spatec printed
// because it could not append them), and a log that validates. outcome
// describes the end for the table; "" describes the last record.
func faultOutcome(t *testing.T, e *docker.Engine, fault, results string, want, printed int, outcome string) []record.Record {
	t.Helper()
	objs, err := e.ListOwned(context.Background(), exec.LabelRun)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, o := range objs {
		left = append(left, o.Kind+" "+o.Name)
	}
	recs := allRecords(t, results)
	lost := want - len(recs) - printed
	if n := len(recs); outcome == "" && n == 0 {
		outcome = "refused before measuring"
	} else if outcome == "" {
		last := recs[n-1]
		note := strings.Join(strings.Fields(last.Note), " ")
		if len(note) > 160 {
			note = note[:160] + "…"
		}
		outcome = string(last.Status)
		if note != "" {
			outcome += ": " + note
		}
	}
	t.Logf("fault-row|%s|%s|%d|%d", fault, outcome, len(left), lost)
	if len(left) > 0 {
		t.Errorf("left behind: %s", strings.Join(left, ", "))
	}
	if lost != 0 {
		t.Errorf("%d records lost: %d runs started, %d recorded, %d printed", lost, want, len(recs), printed)
	}
	if ps := record.Validate(results); len(ps) != 0 {
		t.Errorf("the log does not validate: %v", ps)
	}
	return recs
}

// failedWith checks that the only record failed and its note says each of
// wants.
func failedWith(t *testing.T, recs []record.Record, wants ...string) record.Record {
	t.Helper()
	if len(recs) != 1 || recs[0].Status != record.StatusFailed {
		t.Fatalf("records %+v; want one failed", recs)
	}
	for _, w := range wants {
		if !strings.Contains(recs[0].Note, w) {
			t.Errorf("note %q does not say %q", recs[0].Note, w)
		}
	}
	return recs[0]
}

const drainStarted = "phase=drain state=start"

func TestFaultCapChangedMidWindow(t *testing.T) {
	e := requireContainers(t)
	results := t.TempDir()
	b := startCLI(t, "exec", "--tree", shortDrainTree(t), "--env", "local-containers", "reference", "--results", results)
	b.waitFor(t, drainStarted, 5*time.Minute)

	// What `docker update --cpus 0.3` does: the arm's quota cut under it.
	id := containerID(t, e, exec.LabelEntrant, "reference")
	c, err := e.Inspect(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	g, err := cgroup.FS{}.Locate(c.Pid, id)
	if err != nil {
		t.Fatal(err)
	}
	file, value := "cpu.cfs_quota_us", "30000"
	if g.Mode() == cgroup.ModeV2 {
		file, value = "cpu.max", "30000 100000"
	}
	if err := os.WriteFile(filepath.Join(g.Dir("cpu"), file), []byte(value), 0o644); err != nil {
		t.Fatal(err)
	}
	g.Close()

	if code := b.wait(t); code != exitProblems {
		t.Errorf("exit %d, want %d; stderr:\n%s", code, exitProblems, b.stderr.String())
	}
	rec := failedWith(t, faultOutcome(t, e, "cap changed mid-window", results, 1, 0, ""),
		"C6: caps changed during the window", "container consumer: "+file+" read", "and \""+value+"\" from")
	if before, after := rec.Run.Cgroups["consumer"][file], rec.Run.CgroupsEnd["consumer"][file]; before == value || after != value {
		t.Errorf("read back %s %q before and %q after the window; want both readings, %q at the end", file, before, after, value)
	}
}

func TestFaultClickHousePausedAndResumed(t *testing.T) {
	e := requireContainers(t)
	results := t.TempDir()
	b := startCLI(t, "exec", "--tree", shortDrainTree(t), "--env", "local-containers", "reference", "--results", results)
	b.waitFor(t, drainStarted, 5*time.Minute)
	ctx := context.Background()
	if err := e.Pause(ctx, "spatec-clickhouse"); err != nil {
		t.Fatal(err)
	}
	// Resumed after 25 s, longer than the environment's 15 s stall limit;
	// by then the run may have removed it.
	time.AfterFunc(25*time.Second, func() { _ = e.Unpause(ctx, "spatec-clickhouse") })
	if code := b.wait(t); code != exitProblems {
		t.Errorf("exit %d, want %d; stderr:\n%s", code, exitProblems, b.stderr.String())
	}
	rec := failedWith(t, faultOutcome(t, e, "ClickHouse paused 25 s mid-drain", results, 1, 0, ""),
		"the drain stalled", "answered no query for", "stall limit 15s")
	figuresOverWindow(t, results, rec)
}

// figuresOverWindow checks that a record's data-plane cores are those of
// the window it names, not of the sampler's whole span: the series runs
// on past the window (spatec waits for an exit that may explain a stall,
// with the sampler still reading), and the figure must not.
func figuresOverWindow(t *testing.T, results string, rec record.Record) {
	t.Helper()
	if rec.Series == nil {
		t.Fatal("the record names no series")
	}
	log := record.PathFor(results, rec.Run.Env, rec.SUT.Entrant, rec.Run.StartedAt)
	s, err := record.ReadSeries(log, rec.RunID, *rec.Series)
	if err != nil {
		t.Fatal(err)
	}
	windowMS := int64(rec.Metrics[record.WindowSeconds].Value * 1000)
	var cpu []int64
	for _, c := range s.Containers {
		if c.Role == "data-plane" {
			cpu = c.CPUUsageNs
		}
	}
	first, last := -1, -1
	for i, at := range s.OffsetsMS {
		if at > windowMS || cpu[i] < 0 {
			continue
		}
		if first < 0 {
			first = i
		}
		last = i
	}
	if first < 0 || last <= first || s.OffsetsMS[len(s.OffsetsMS)-1] <= windowMS {
		t.Fatalf("series of %d readings over %d ms, window %d ms: nothing to tell the window's figures from the span's", len(s.OffsetsMS), s.OffsetsMS[len(s.OffsetsMS)-1], windowMS)
	}
	want := float64(cpu[last]-cpu[first]) / float64((s.OffsetsMS[last]-s.OffsetsMS[first])*1e6)
	got := rec.Metrics[record.DataPlaneCoresUsed].Value
	t.Logf("window %d ms of a %d ms series: data-plane cores %.4f (over the window's readings %.4f)", windowMS, s.OffsetsMS[len(s.OffsetsMS)-1], got, want)
	if math.Abs(got-want) > 0.02*want+0.002 {
		t.Errorf("data_plane_cores_used %.4f; over the window's own readings it is %.4f", got, want)
	}
}

func TestFaultClickHouseKilled(t *testing.T) {
	e := requireContainers(t)
	results := t.TempDir()
	b := startCLI(t, "exec", "--tree", shortDrainTree(t), "--env", "local-containers", "reference", "--results", results)
	b.waitFor(t, drainStarted, 5*time.Minute)
	if err := e.Kill(context.Background(), "spatec-clickhouse", "KILL"); err != nil {
		t.Fatal(err)
	}
	if code := b.wait(t); code != exitProblems {
		t.Errorf("exit %d, want %d; stderr:\n%s", code, exitProblems, b.stderr.String())
	}
	rec := failedWith(t, faultOutcome(t, e, "ClickHouse killed mid-drain", results, 1, 0, ""),
		"the clickhouse container spatec-clickhouse exited during the drain with code 137")
	// Nothing could count the rows afterwards: absent and flagged, not 0.
	if v, ok := rec.Metrics[record.DistinctRows]; ok || !slices.Contains(rec.Flags, record.FlagRowsUncounted) {
		t.Errorf("distinct_rows %v (present %v), flags %v; want it absent and flagged %s", v, ok, rec.Flags, record.FlagRowsUncounted)
	}
}

func TestFaultArmKilled(t *testing.T) {
	e := requireContainers(t)
	results := t.TempDir()
	b := startCLI(t, "exec", "--tree", shortDrainTree(t), "--env", "local-containers", "reference", "--results", results)
	b.waitFor(t, drainStarted, 5*time.Minute)
	if err := e.Kill(context.Background(), containerID(t, e, exec.LabelEntrant, "reference"), "KILL"); err != nil {
		t.Fatal(err)
	}
	if code := b.wait(t); code != exitProblems {
		t.Errorf("exit %d, want %d; stderr:\n%s", code, exitProblems, b.stderr.String())
	}
	failedWith(t, faultOutcome(t, e, "arm killed mid-drain", results, 1, 0, ""),
		"container consumer exited during the drain with code 137")
}

// TestFaultArmFrozenBeforeFirstRow: the arm frozen (the cgroup freezer,
// what `docker pause` does) as soon as it runs, before its first insert,
// and thawed after 20 s, beyond the 15 s stall limit. No row lands while it
// is frozen, so only its own work can tell it from an arm still starting:
// the run fails as stalled, not ok at a fraction of its rate.
func TestFaultArmFrozenBeforeFirstRow(t *testing.T) {
	e := requireContainers(t)
	results := t.TempDir()
	b := startCLI(t, "exec", "--tree", shortDrainTree(t), "--env", "local-containers", "reference", "--results", results)
	ctx := context.Background()
	var id string
	for deadline := time.Now().Add(5 * time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the arm's container never ran; stderr:\n%s", b.stderr.String())
		}
		objs, err := e.ListOwned(ctx, exec.LabelEntrant)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			if o.Kind == "container" && o.Labels[exec.LabelEntrant] == "reference" {
				id = o.ID
			}
		}
		// Pausing fails until the container runs.
		if id != "" && e.Pause(ctx, id) == nil {
			break
		}
	}
	time.AfterFunc(20*time.Second, func() { _ = e.Unpause(ctx, id) })
	if code := b.wait(t); code != exitProblems {
		t.Errorf("exit %d, want %d; stderr:\n%s", code, exitProblems, b.stderr.String())
	}
	rec := failedWith(t, faultOutcome(t, e, "arm frozen 20 s before its first row", results, 1, 0, ""),
		"the drain stalled: the arm did no work for", "before its first row landed", "stall limit 15s", "by the end, once the arm had stopped")
	if _, ok := rec.Metrics[record.RowsPerS]; ok {
		t.Errorf("a stalled run has a rate: %v", rec.Metrics)
	}
}

// TestFaultTableDroppedBetweenReps: the sink table dropped by hand once the
// first repetition is recorded. The next repetition finds it gone, makes it
// again from the plan's DDL, says so, and measures.
func TestFaultTableDroppedBetweenReps(t *testing.T) {
	e := requireContainers(t)
	results := t.TempDir()
	b := startCLI(t, "exec", "--tree", shortDrainTree(t), "--env", "local-containers", "reference", "--reps", "2", "--results", results)
	for deadline := time.Now().Add(5 * time.Minute); !strings.Contains(b.stdout.String(), "rep 1/2"); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the first repetition did not end; stderr:\n%s", b.stderr.String())
		}
	}
	drop := osexec.Command("docker", "exec", "spatec-clickhouse", "clickhouse-client", "--user", "default", "--password", "spatec",
		"--query", "DROP TABLE spatec.sensor_events")
	if out, err := drop.CombinedOutput(); err != nil {
		t.Fatalf("dropping the table: %v\n%s", err, out)
	}
	if code := b.wait(t); code != exitOK {
		t.Errorf("exit %d, want %d; stderr:\n%s", code, exitOK, b.stderr.String())
	}
	if want := "spatec.sensor_events was dropped outside spatec since this session made it; making it again from the DDL of sensor-batch"; !strings.Contains(b.stderr.String(), want) {
		t.Errorf("stderr does not say %q:\n%s", want, b.stderr.String())
	}
	recs := faultOutcome(t, e, "sink table dropped between repetitions", results, 2, 0,
		"the next rep made it again from the plan's DDL, said so, and ran ok")
	if len(recs) != 2 || recs[0].Status != record.StatusOK || recs[1].Status != record.StatusOK {
		t.Errorf("records %+v; want both repetitions ok", recs)
	}
}

// TestFaultArmOOMKilled: an envelope of 24 MiB, which the reference arm
// outgrows with its first batches. The kernel's OOM killer ends it, and the
// note names that cause before the exit code it leaves.
func TestFaultArmOOMKilled(t *testing.T) {
	e := requireContainers(t)
	tree := copyTree(t, map[string][2]string{"envs/local-containers/env.cue": {
		"envelope: memory: 2 * GiB", "envelope: memory: 24 * MiB"}})
	results := t.TempDir()
	code, out, errOut := cli(t, "exec", "--tree", tree, "--env", "local-containers", "reference", "--results", results)
	if code != exitProblems {
		t.Errorf("exit %d, want %d\n%s\n%s", code, exitProblems, out, errOut)
	}
	rec := failedWith(t, faultOutcome(t, e, "arm OOM-killed (24 MiB envelope)", results, 1, 0, ""),
		"container consumer was killed by the kernel's OOM killer", "it reached its memory cap of 24 MiB (exit code 137)")
	if n := rec.Metrics["oom_kills.consumer"]; n.Value < 1 {
		t.Errorf("oom_kills.consumer %+v; want the kill counted", n)
	}
}

// TestFaultImageTagMoved: the arm's image tag moved to other content (here
// ClickHouse's image) once the run has resolved it, as a rebuild or another
// process would. The containers are created from the ID the run resolved,
// so the arm runs what the record names, and that is read back after it
// starts.
func TestFaultImageTagMoved(t *testing.T) {
	e := requireContainers(t)
	results := t.TempDir()
	const tag = "spatec-reference:0.1.1"
	b := startCLI(t, "exec", "--tree", shortDrainTree(t), "--env", "local-containers", "reference", "--results", results)
	b.waitFor(t, "phase=prefill", 5*time.Minute)
	docker := func(args ...string) string {
		out, err := osexec.Command("docker", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("docker %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	resolved := docker("image", "inspect", "--format", "{{.Id}}", tag)
	t.Cleanup(func() { docker("tag", resolved, tag) })
	docker("tag", "spatec-clickhouse:18.16.1", tag)
	if code := b.wait(t); code != exitOK {
		t.Errorf("exit %d, want %d; stderr:\n%s", code, exitOK, b.stderr.String())
	}
	recs := faultOutcome(t, e, "arm's image tag moved after the run resolved it", results, 1, 0,
		"ok: created by the ID resolved, which the record names and the engine reads back")
	if len(recs) != 1 || recs[0].Status != record.StatusOK || len(recs[0].SUT.Containers) != 1 || recs[0].SUT.Containers[0].ImageDigest != resolved {
		t.Errorf("records %+v; want one ok run naming image %s", recs, resolved)
	}
}

// TestFaultNoisyHost: two busy loops on the host's two cores while the arm
// drains. The run completes, and its record says how much CPU the host
// spent outside the run's containers and flags it: the caps were not all
// to be had.
func TestFaultNoisyHost(t *testing.T) {
	e := requireContainers(t)
	results := t.TempDir()
	b := startCLI(t, "exec", "--tree", shortDrainTree(t), "--env", "local-containers", "reference", "--results", results)
	b.waitFor(t, drainStarted, 5*time.Minute)
	for range 2 {
		loop := osexec.Command("sh", "-c", "while :; do :; done")
		if err := loop.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = loop.Process.Kill(); _ = loop.Wait() })
	}
	code := b.wait(t)
	recs := allRecords(t, results)
	if len(recs) != 1 {
		t.Fatalf("exit %d, records %+v; want one", code, recs)
	}
	rec := recs[0]
	outside := rec.Metrics[record.HostOutsideCores].Value
	faultOutcome(t, e, "two busy loops on the host during the drain", results, 1, 0,
		fmt.Sprintf("%s, flags %s: %.2f cores outside the run's containers", rec.Status, strings.Join(rec.Flags, ", "), outside))
	if !slices.Contains(rec.Flags, record.FlagHostBusy) || outside < 1 || !strings.Contains(rec.Note, "the host was busy outside the run: ") {
		t.Errorf("host_outside_cores %.2f, flags %v, note %q; want over 1 core outside, flagged %s and said", outside, rec.Flags, rec.Note, record.FlagHostBusy)
	}
}

// TestFaultClickHouseRestarted: the ClickHouse container restarted (docker
// restart) mid-drain. The note names the restart first, before whatever
// the drain's client saw of it.
func TestFaultClickHouseRestarted(t *testing.T) {
	e := requireContainers(t)
	results := t.TempDir()
	b := startCLI(t, "exec", "--tree", shortDrainTree(t), "--env", "local-containers", "reference", "--results", results)
	b.waitFor(t, drainStarted, 5*time.Minute)
	if out, err := osexec.Command("docker", "restart", "--time", "0", "spatec-clickhouse").CombinedOutput(); err != nil {
		t.Fatalf("docker restart: %v\n%s", err, out)
	}
	if code := b.wait(t); code != exitProblems {
		t.Errorf("exit %d, want %d; stderr:\n%s", code, exitProblems, b.stderr.String())
	}
	rec := failedWith(t, faultOutcome(t, e, "ClickHouse restarted mid-drain", results, 1, 0, ""))
	if !strings.HasPrefix(rec.Note, "the clickhouse container spatec-clickhouse restarted during the drain") {
		t.Errorf("note %q; want it to begin with the restart", rec.Note)
	}
}

// TestFaultSpatecKilledThenRunAgain: SIGKILL cannot be caught, so the run's
// containers stay and it records nothing; the next spatec removes them,
// says what it removed, records the killed run as failed from what it
// wrote ahead, and measures.
func TestFaultSpatecKilledThenRunAgain(t *testing.T) {
	e := requireContainers(t)
	results := t.TempDir()
	tree := shortDrainTree(t)
	killAt(t, drainStarted, "exec", "--tree", tree, "--env", "local-containers", "reference", "--results", results)
	left, err := e.ListOwned(context.Background(), exec.LabelRun)
	if err != nil || len(left) == 0 {
		t.Fatalf("after SIGKILL, %d objects of the run remain (%v); want its containers and network", len(left), err)
	}
	runAfterKill(t, "local-containers", results, "", "--tree", tree)
	recs := faultOutcome(t, e, "spatec killed (SIGKILL), then run again", results, 2, 0,
		"the next spatec removed its containers, recorded it failed (interrupted), then ran ok")
	if len(recs) != 2 || recs[0].Status != record.StatusFailed || !strings.Contains(recs[0].Note, "spatec ended without recording this run") ||
		!slices.Contains(recs[0].Flags, record.FlagInterrupted) || recs[1].Status != record.StatusOK {
		t.Errorf("records %+v; want the killed run failed and interrupted, then an ok run", recs)
	}
}

// buildSpatec builds this command, for tests that signal a real process.
func buildSpatec(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "spatec")
	if out, err := osexec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("building spatec: %v\n%s", err, out)
	}
	return bin
}

// startUntil starts spatec with args and waits until its stderr says want.
func startUntil(t *testing.T, bin, want string, args ...string) (*osexec.Cmd, *syncBuffer) {
	t.Helper()
	var stderr syncBuffer
	cmd := osexec.Command(bin, args...)
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Minute); !strings.Contains(stderr.String(), want); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatalf("spatec did not say %q:\n%s", want, stderr.String())
		}
	}
	return cmd, &stderr
}

// killAt starts a real spatec with args and kills it (SIGKILL) once its
// stderr says want.
func killAt(t *testing.T, want string, args ...string) {
	t.Helper()
	cmd, _ := startUntil(t, buildSpatec(t), want, args...)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
}

// runAfterKill runs spatec exec again on env and results, with flags
// more, after one was killed: it runs ok, says it removed what the killed
// run left (the containers named from removed on) and recorded that run
// as failed.
func runAfterKill(t *testing.T, env, results, removed string, more ...string) {
	t.Helper()
	code, out, errOut := cli(t, append([]string{"exec", "--env", env, "reference", "--results", results}, more...)...)
	if code != exitOK {
		t.Fatalf("the next run: exit %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{"removed what run ", " ago (its spatec process is gone): containers " + removed, "as failed: its spatec process died before recording it"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("the next run does not say %q:\n%s", want, errOut)
		}
	}
}

func TestFaultTwoRunsAtOnce(t *testing.T) {
	e := requireContainers(t)
	results := t.TempDir()
	b := startCLI(t, "exec", "--tree", shortDrainTree(t), "--env", "local-containers", "reference", "--results", results)
	b.waitFor(t, drainStarted, 5*time.Minute)
	for _, env := range []string{"local-containers", "local"} {
		code, _, errOut := cli(t, "exec", "--env", env, "reference", "--results", t.TempDir())
		if code != exitRefused || !strings.Contains(errOut, "REFUSED: another measurement holds this host: session ") ||
			!strings.Contains(errOut, "(environment local-containers, pid ") {
			t.Errorf("a second run in %s while one measures: exit %d\n%s", env, code, errOut)
		}
	}
	if code := b.wait(t); code != exitOK {
		t.Errorf("the first run: exit %d\n%s", code, b.stderr.String())
	}
	recs := faultOutcome(t, e, "a second spatec exec while one runs (same and other environment)", results, 1, 0,
		"the second REFUSED (exit 3) naming the holder; the first ok")
	if len(recs) != 1 || recs[0].Status != record.StatusOK {
		t.Errorf("records %+v; want the first run ok, unaffected", recs)
	}
}

func TestFaultResultsUnusable(t *testing.T) {
	e := requireContainers(t)
	file := filepath.Join(t.TempDir(), "results.txt")
	if err := os.WriteFile(file, []byte("not a directory\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	full := testenv.SmallTmpfs(t, 512<<10)
	for results, want := range map[string]string{
		file: "REFUSED: results " + file + " is a file, not a directory",
		full: "a run needs at least 1048576 to record its results",
	} {
		code, _, errOut := cli(t, "exec", "--env", "local-containers", "reference", "--results", results)
		if code != exitRefused || !strings.Contains(errOut, want) || strings.Contains(errOut, "phase=infra") {
			t.Errorf("--results %s: exit %d; want %d saying %q before anything starts:\n%s", results, code, exitRefused, want, errOut)
		}
	}
	faultOutcome(t, e, "results path a file, or with no room", t.TempDir(), 0, 0, "")
}

// TestFaultDiskFull fills the results file system while a run measures,
// once the first repetition is recorded: the second's record cannot be
// appended, the log keeps no partial line, the whole record is printed,
// and the repetitions stop.
func TestFaultDiskFull(t *testing.T) {
	e := requireContainers(t)
	results := testenv.SmallTmpfs(t, 4<<20)
	b := startCLI(t, "exec", "--tree", shortDrainTree(t), "--env", "local-containers", "reference", "--reps", "3", "--results", results)
	for deadline := time.Now().Add(5 * time.Minute); strings.Count(b.stderr.String(), drainStarted) < 2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the second repetition's drain did not start; stderr:\n%s", b.stderr.String())
		}
	}
	testenv.Fill(t, results)
	if code := b.wait(t); code != exitProblems {
		t.Errorf("exit %d, want %d; stderr:\n%s", code, exitProblems, b.stderr.String())
	}
	errOut := b.stderr.String()
	if !strings.Contains(errOut, "no space left on device") || !strings.Contains(errOut, "the whole record follows") ||
		!strings.Contains(errOut, `{"schema":"spatec.record/v1"`) {
		t.Errorf("stderr does not give the record that could not be appended:\n%s", errOut)
	}
	if n := strings.Count(b.stdout.String(), "reference:default rep"); n != 2 || strings.Contains(b.stdout.String(), "rep 3/3") {
		t.Errorf("%d runs, want the reps stopped at the failed append (the second):\n%s", n, b.stdout.String())
	}
	os.Remove(filepath.Join(results, "filler"))
	recs := faultOutcome(t, e, "results disk full mid-run", results, 2, 1,
		"not appended, no partial line; printed whole to stderr, reps stopped")
	if len(recs) != 1 || recs[0].Status != record.StatusOK {
		t.Errorf("the log holds %+v; want only the first run, whole", recs)
	}
}

// shortDrainTree is the tree with local-containers' sensor-batch corpus
// cut from 20,000 batches to 5,000 (367,500 rows): the same services, arm
// and workload, prefilled and drained in seconds rather than half a
// minute, for the faults whose test needs a drain, not a long one.
func shortDrainTree(t *testing.T) string {
	t.Helper()
	return drainTree(t, "5_000")
}

// drainTree is the tree with local-containers' sensor-batch corpus cut to
// batches (CUE's spelling: "1_000").
func drainTree(t *testing.T, batches string) string {
	t.Helper()
	return copyTree(t, map[string][2]string{"envs/local-containers/env.cue": {"messages:     20_000", "messages:     " + batches}})
}

// copyTree copies the CUE tree (cue.mod, schema, envs, entrants) to a
// temporary directory, with edits: file → {old, new}. The rest of the
// module is linked in, for the programs that images are built from.
func copyTree(t *testing.T, edits map[string][2]string) string {
	t.Helper()
	dst := t.TempDir()
	copied := []string{"cue.mod", "schema", "envs", "entrants"}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !slices.Contains(copied, e.Name()) && !strings.HasPrefix(e.Name(), ".") {
			if err := os.Symlink(filepath.Join(root, e.Name()), filepath.Join(dst, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, dir := range copied {
		src := filepath.Join("..", "..", dir)
		err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(filepath.Join("..", ".."), p)
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if e, ok := edits[filepath.ToSlash(rel)]; ok {
				if !bytes.Contains(data, []byte(e[0])) {
					t.Fatalf("fixture: %q not in %s", e[0], rel)
				}
				data = bytes.Replace(data, []byte(e[0]), []byte(e[1]), 1)
			}
			if err := os.MkdirAll(filepath.Join(dst, filepath.Dir(rel)), 0o755); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// TestFaultServiceNeverHealthy: ClickHouse runs but its own health check
// never passes (here, a client signing in with a wrong password). Nothing
// is measured on it: the run stops with what the check last said, and
// nothing is left behind.
func TestFaultServiceNeverHealthy(t *testing.T) {
	e := requireContainers(t)
	tree := copyTree(t, map[string][2]string{"envs/local-containers/env.cue": {
		`health: command: ["clickhouse-client", "--user", user, "--password", password, "--query", "SELECT 1"]`,
		`health: {command: ["clickhouse-client", "--user", user, "--password", "wrong", "--query", "SELECT 1"], within: 8_000}`,
	}})
	results := t.TempDir()
	code, out, errOut := cli(t, "exec", "--tree", tree, "--env", "local-containers", "reference", "--results", results)
	faultOutcome(t, e, "ClickHouse never healthy", results, 0, 0, "")
	if code == exitOK {
		t.Fatalf("exit 0 on a service that never became healthy\n%s\n%s", out, errOut)
	}
	for _, want := range []string{"did not answer", "within 8s", "health check `clickhouse-client --user default --password wrong --query SELECT 1`", "Wrong password for user default"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr does not say %q:\n%s", want, errOut)
		}
	}
}

// TestFaultPoisonMessageInFlink: a message framed for a schema the
// registry does not have (id 99999) appended to Flink's input once the
// drain is under way. Flink's deserializer asks the registry for it, is
// answered 404, and fails the job before its last rows are flushed; the
// run fails, and its note quotes the TaskManager's log as it was when the
// drain failed (the registry's answer), not its shutdown once stopped.
// The corpus is 1,000 batches: the message is appended as the drain
// starts, while Flink's processes are still starting, long before they
// could read to the corpus's end; and each restart Flink makes from its
// last checkpoint then reads little before it fails again.
func TestFaultPoisonMessageInFlink(t *testing.T) {
	e := requireContainers(t)
	results := t.TempDir()
	b := startCLI(t, "exec", "--tree", drainTree(t, "1_000"), "--env", "local-containers", "flink", "--results", results)
	b.waitFor(t, drainStarted, 10*time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	broker, err := e.Inspect(ctx, "spatec-broker")
	if err != nil {
		t.Fatal(err)
	}
	var addr string
	for _, ip := range broker.Addresses {
		addr = ip + ":9092"
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("spatec-sensor-batches"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// Confluent's framing: magic byte 0, then the schema id, big-endian.
	poison := append([]byte{0, 0, 0x01, 0x86, 0x9f}, []byte("not avro")...)
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: poison}).FirstErr(); err != nil {
		t.Fatalf("producing the poison message to %s: %v", addr, err)
	}
	if code := b.wait(t); code != exitProblems {
		t.Errorf("exit %d, want %d; stderr:\n%s", code, exitProblems, b.stderr.String())
	}
	rec := failedWith(t, faultOutcome(t, e, "a poison message in Flink's input", results, 1, 0, ""), "99999")
	t.Logf("note: %s", rec.Note)
}
