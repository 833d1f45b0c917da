package exec

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"spatec.dev/spatec/exec/engine/docker"
	"spatec.dev/spatec/runs/record"
	"spatec.dev/spatec/schema"
)

// drainSession opens a full session (embedded broker on a free port, the
// host's ClickHouse in a database of the test's own) on the real engine.
// chAddr, when not empty, replaces the ClickHouse address spatec itself
// uses; the arm's endpoint stays the real server.
func drainSession(t *testing.T, watch *phaseWatch, chAddr string) (*Session, schema.Environment, *docker.Engine) {
	t.Helper()
	e := newEngine(t)
	requireClickHouse(t)
	env := testEnv(freeAddr(t), clickhouseAddr(), testDatabase(t))
	if chAddr != "" {
		env.Infra.ClickHouse.Addr, env.Infra.ClickHouse.HostAddr = chAddr, chAddr
	}
	ctx, _ := testContext(t, 60*time.Second)
	s, err := newRunner(t, e, watch).Open(ctx, env, false)
	if err != nil {
		t.Fatalf("opening the session: %v", err)
	}
	t.Cleanup(func() {
		s.Close()
		assertNothingLeft(t, e, LabelRun, s.id)
	})
	return s, env, e
}

// TestDrainReferenceArm runs the reference arm twice on one session: both
// repetitions land every row, carry every metric of C7, C8 and C13, and are
// appended to a results log that validates.
func TestDrainReferenceArm(t *testing.T) {
	s, env, eng := drainSession(t, nil, "")
	ctx, _ := testContext(t, 150*time.Second)
	plan := referencePlan(env, entrantName("reference"))
	results := t.TempDir()
	cleanupLabel(t, eng, LabelEntrant, plan.Entrant.Name)

	want := float64(env.Workloads[jsonRows].Rows())
	for rep := 1; rep <= 2; rep++ {
		res, err := s.Run(ctx, plan, Options{Rep: rep, Reps: 2, Results: results, Ceilings: filepath.Join(results, "no-ceilings.json")})
		if err != nil {
			t.Fatalf("rep %d: %s", rep, describe(err))
		}
		assertNothingLeft(t, eng, LabelRun, res.Record.RunID, LabelEntrant, plan.Entrant.Name)
		rec := res.Record
		if rec.Status != record.StatusOK || rec.Rep != rep || rec.Reps != 2 {
			t.Errorf("rep %d: status %s, rep %d of %d, note %q; want ok, rep %d of 2", rep, rec.Status, rec.Rep, rec.Reps, rec.Note, rep)
		}
		m := rec.Metrics
		for _, name := range []string{
			record.PeakAnonBytes, record.PeakShmemBytes, record.MemoryPeakBytes,
			record.CoresUsed, record.DataPlaneCoresUsed, record.ControlPlaneCoresUsed,
			record.DataPlanePeakAnonBytes, record.DataPlanePeakShmemBytes, record.DataPlaneMemoryPeakBytes,
			record.ExpectedRows, record.DistinctRows, record.LandedRows, record.DuplicateRows,
			record.RowsPerS, record.MsgsPerS, record.BytesPerS, record.WindowSeconds,
			record.HarnessRowsPerS, record.HarnessWindowSeconds,
		} {
			if _, ok := m[name]; !ok {
				t.Errorf("rep %d: metric %s is missing", rep, name)
			}
		}
		t.Logf("rep %d: %.0f rows/s over spatec's %.3fs, %.0f over the reference harness's %.3fs, %.3f cores, peak anon %.1f MiB, memory peak %.1f MiB, %v duplicates",
			rep, m[record.RowsPerS].Value, m[record.WindowSeconds].Value, m[record.HarnessRowsPerS].Value, m[record.HarnessWindowSeconds].Value, m[record.CoresUsed].Value,
			m[record.PeakAnonBytes].Value/float64(mib), m[record.MemoryPeakBytes].Value/float64(mib), m[record.DuplicateRows].Value)
		// The harness's window opens at the container's start, before
		// spatec's (after the caps are verified), and closes no later.
		if w := rec.Run.Window; w.Harness == nil || w.Harness.OpenedAt.After(w.OpenedAt) || w.Harness.ClosedAt.After(w.ClosedAt) ||
			!w.Harness.OpenedAt.Equal(rec.SUT.Containers[0].StartedAt) {
			t.Errorf("rep %d: windows %+v; want the harness's from the container's start (%v) to no later than spatec's", rep, w, rec.SUT.Containers[0].StartedAt)
		}
		if m[record.ExpectedRows].Value != want || m[record.DistinctRows].Value != want {
			t.Errorf("rep %d: expected_rows %v, distinct_rows %v; want both %v", rep, m[record.ExpectedRows].Value, m[record.DistinctRows].Value, want)
		}
		if got := m[record.LandedRows].Value - m[record.DistinctRows].Value; got != m[record.DuplicateRows].Value {
			t.Errorf("rep %d: duplicate_rows %v; landed − distinct is %v", rep, m[record.DuplicateRows].Value, got)
		}
		if m[record.RowsPerS].Value <= 0 || m[record.CoresUsed].Value <= 0 || m[record.PeakAnonBytes].Value <= 0 {
			t.Errorf("rep %d: rows_per_s %v, cores_used %v, peak_anon_bytes %v; a drain that landed rows used CPU and memory",
				rep, m[record.RowsPerS].Value, m[record.CoresUsed].Value, m[record.PeakAnonBytes].Value)
		}
		if rec.Run.Dataset.Messages != env.Workloads[jsonRows].Messages || rec.Run.Dataset.ExpectedRows != int64(want) {
			t.Errorf("rep %d: run.dataset = %+v", rep, rec.Run.Dataset)
		}
		if rec.SUT.Version != "0.1.1" || len(rec.SUT.Containers) != 1 || rec.SUT.Containers[0].ImageDigest == "" {
			t.Errorf("rep %d: sut = %+v; want version 0.1.0 and the image digest", rep, rec.SUT)
		}
		if _, ok := rec.Run.Cgroups["consumer"]["memory.limit_in_bytes"]; !ok {
			if _, ok := rec.Run.Cgroups["consumer"]["memory.max"]; !ok {
				t.Errorf("rep %d: run.cgroups[consumer] = %v; want the memory cap read back", rep, rec.Run.Cgroups["consumer"])
			}
		}
		// No ceilings file: the run is kept, flagged (C12).
		if !contains(rec.Flags, record.FlagHeadroomUnproven) {
			t.Errorf("rep %d: flags %v; without ceilings the run is %s", rep, rec.Flags, record.FlagHeadroomUnproven)
		}
	}

	lines := logLines(t, results)
	if len(lines) != 2 {
		t.Fatalf("the results log holds %d records; want 2", len(lines))
	}
	// Both went to the one monthly log of the entrant, one line each.
	path := record.PathFor(results, env.Name, plan.Entrant.Name, lines[0].Run.StartedAt)
	if path == record.PathFor(results, env.Name, plan.Entrant.Name, lines[1].Run.StartedAt) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if n := bytes.Count(b, []byte("\n")); n != 2 || !bytes.HasSuffix(b, []byte("\n")) {
			t.Errorf("%s holds %d lines; want 2, each ended by a newline", path, n)
		}
	}
	for i, rec := range lines {
		if rec.Status != record.StatusOK || rec.Rep != i+1 {
			t.Errorf("log line %d: status %s, rep %d", i+1, rec.Status, rec.Rep)
		}
	}
	if lines[0].RunID == lines[1].RunID {
		t.Errorf("both repetitions carry run id %s", lines[0].RunID)
	}
	if problems := record.Validate(results); len(problems) != 0 {
		t.Errorf("record.Validate: %v", problems)
	}
}

// logLines reads every record of every log under root, in the order the
// runs started.
func logLines(t *testing.T, root string) []record.Record {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "*", "*", "*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var out []record.Record
	for _, path := range files {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var rec record.Record
			if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			out = append(out, rec)
		}
		f.Close()
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Run.StartedAt.Before(out[j].Run.StartedAt) })
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
