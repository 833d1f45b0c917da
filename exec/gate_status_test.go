package exec

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"spatec.dev/spatec/exec/chstore"
	"spatec.dev/spatec/exec/sample"
	"spatec.dev/spatec/runs/record"
	"spatec.dev/spatec/schema"
)

// armStart is when the gate tests' arm started.
var armStart = time.Date(2026, 8, 3, 14, 0, 0, 0, time.UTC)

// gateRun is an arm run of one container started at armStart, for the gate
// alone: no engine, no broker.
func gateRun(t *testing.T) (*armRun, *schema.Plan) {
	t.Helper()
	plan := &schema.Plan{Env: schema.Environment{Name: "gate", Partitions: 4},
		Workload: schema.Workload{Name: "json-rows", Messages: 100_000, RowsPerMessage: 1, Generator: schema.Generator{Kind: "json-rows", MessageBytes: 256}}}
	run := &armRun{plan: plan, rec: record.Record{Metrics: map[string]record.Metric{}, Flags: []string{}},
		expected: expectation{bytes: 100_000 * 256}}
	run.rec.SUT.Containers = []record.Container{{Name: "consumer", Role: "data-plane", StartedAt: armStart}}
	run.rec.Run.Dataset.Messages, run.rec.Run.Dataset.ExpectedRows = 100_000, 100_000
	run.summary = sample.Summary{Period: 100 * time.Millisecond}
	return run, plan
}

// measuredDrain is what a window that opened 500 ms after armStart measured: d,
// and the polls (every 100 ms) that saw the rows climb to d.Count at its
// end.
func measuredDrain(run *armRun, d chstore.Drain, want uint64) drainResult {
	end := d.Elapsed.Milliseconds()
	for off := int64(100); off <= end; off += 100 {
		run.landed.OffsetsMS = append(run.landed.OffsetsMS, off)
		run.landed.Landed = append(run.landed.Landed, int64(d.Count)*off/end)
	}
	if n := len(run.landed.OffsetsMS); n == 0 || run.landed.OffsetsMS[n-1] != end {
		run.landed.OffsetsMS = append(run.landed.OffsetsMS, end)
		run.landed.Landed = append(run.landed.Landed, int64(d.Count))
	}
	return drainResult{drain: d, want: want, drained: d.Distinct >= want, opened: armStart.Add(500 * time.Millisecond)}
}

func writeCeilings(t *testing.T, plan *schema.Plan, msgs, rows float64) string {
	t.Helper()
	c := Ceilings{Env: plan.Env.Name, InfraDigest: plan.InfraDigest(), Partitions: plan.Env.Partitions, Workload: plan.Workload.Name, MessageBytes: 256, MeasuredFrom: MeasuredFromHost}
	c.Broker.MessagesPerSec, c.Broker.BytesPerSec = msgs, msgs*256
	c.ClickHouse.RowsPerSec = rows
	path := filepath.Join(t.TempDir(), "ceilings.json")
	if err := c.Write(path); err != nil {
		t.Fatal(err)
	}
	return path
}

// 100k rows in 1 s is 100k rows/s: against a 120k msg/s broker ceiling
// that is 83%, above C12's 70%.
func TestGateInfraBound(t *testing.T) {
	run, plan := gateRun(t)
	path := writeCeilings(t, plan, 120_000, 1_000_000)
	err := run.gate(measuredDrain(run, chstore.Drain{Counted: true, DistinctCounted: true, Count: 100_000, Distinct: 100_000, Elapsed: time.Second}, 100_000), path)
	var ib *infraBound
	if !errors.As(err, &ib) || !strings.Contains(ib.reason, "C12: the arm ran above 70% of an infrastructure ceiling: broker bytes/s at 83% of its ceiling, broker messages/s at 83% of its ceiling") {
		t.Fatalf("got %v", err)
	}
	run.finish(err, time.Now())
	if run.rec.Status != record.StatusInfraBound {
		t.Fatalf("status %s, want infra_bound", run.rec.Status)
	}
	if got := run.rec.Metrics[record.InfraBrokerConsumeShare].Value; got < 0.83 || got > 0.84 {
		t.Errorf("broker share %v, want 0.83", got)
	}
}

func TestGateWithinHeadroomIsOK(t *testing.T) {
	run, plan := gateRun(t)
	path := writeCeilings(t, plan, 1_000_000, 1_000_000)
	err := run.gate(measuredDrain(run, chstore.Drain{Counted: true, DistinctCounted: true, Count: 100_000, Distinct: 100_000, Elapsed: time.Second}, 100_000), path)
	run.finish(err, time.Now())
	if err != nil || run.rec.Status != record.StatusOK || len(run.rec.Run.Ceilings) != 3 {
		t.Fatalf("err %v, status %s, ceilings %v", err, run.rec.Status, run.rec.Run.Ceilings)
	}
}

func TestGateWithoutCeilingsFlagsHeadroomUnproven(t *testing.T) {
	run, _ := gateRun(t)
	err := run.gate(measuredDrain(run, chstore.Drain{Counted: true, DistinctCounted: true, Count: 100_000, Distinct: 100_000, Elapsed: time.Second}, 100_000),
		filepath.Join(t.TempDir(), "none.json"))
	run.finish(err, time.Now())
	if err != nil || run.rec.Status != record.StatusOK {
		t.Fatalf("err %v, status %s", err, run.rec.Status)
	}
	if len(run.rec.Flags) != 1 || run.rec.Flags[0] != record.FlagHeadroomUnproven || !strings.Contains(run.rec.Note, "no ceilings at") {
		t.Fatalf("flags %v, note %q", run.rec.Flags, run.rec.Note)
	}
}

// C13: fewer distinct rows than N is a failure with both counts, and
// duplicates are published.
func TestGateIncompleteDrainFails(t *testing.T) {
	run, _ := gateRun(t)
	err := run.gate(measuredDrain(run, chstore.Drain{Counted: true, DistinctCounted: true, Count: 99_990, Distinct: 99_980, Duplicates: 10, Elapsed: time.Second}, 100_000), os.DevNull)
	var f *Failure
	if !errors.As(err, &f) || f.Reason != "C13: 99980 distinct rows of 100000 landed (99990 in all)" {
		t.Fatalf("got %v", err)
	}
	if run.rec.Metrics[record.DuplicateRows].Value != 10 {
		t.Errorf("duplicates %v, want 10", run.rec.Metrics[record.DuplicateRows])
	}
	if _, ok := run.rec.Metrics[record.RowsPerS]; ok {
		t.Error("an incomplete drain must not publish a throughput")
	}
}

// Rows ClickHouse never counted are absent and flagged, never 0, and the
// run fails saying so.
func TestGateUncountedRowsAreAbsent(t *testing.T) {
	run, _ := gateRun(t)
	err := run.gate(measuredDrain(run, chstore.Drain{Elapsed: time.Second}, 100_000), os.DevNull)
	var f *Failure
	if !errors.As(err, &f) || f.Reason != "C13: the rows landed could not be counted: ClickHouse did not answer" {
		t.Fatalf("got %v", err)
	}
	for _, m := range []string{record.DistinctRows, record.DuplicateRows, record.LandedRows, record.RowsPerS} {
		if v, ok := run.rec.Metrics[m]; ok {
			t.Errorf("%s = %+v; a figure never measured must be absent", m, v)
		}
	}
	if !contains(run.rec.Flags, record.FlagRowsUncounted) {
		t.Errorf("flags %v; want %s", run.rec.Flags, record.FlagRowsUncounted)
	}
}

// A window of two readings is flagged, and its note says why its peaks
// cannot be trusted; one of five is not.
func TestShortWindowIsFlaggedUnderSampled(t *testing.T) {
	for readings, flagged := range map[int]bool{2: true, 5: false} {
		run, _ := gateRun(t)
		run.summary.Readings = readings
		d := measuredDrain(run, chstore.Drain{Counted: true, DistinctCounted: true, Count: 100_000, Distinct: 100_000, Elapsed: 160 * time.Millisecond}, 100_000)
		run.metrics(d)
		run.finish(errors.New("container consumer was killed"), time.Now())
		if got := contains(run.rec.Flags, record.FlagUnderSampled); got != flagged {
			t.Errorf("%d readings: flags %v; want %s %v", readings, run.rec.Flags, record.FlagUnderSampled, flagged)
		}
		want := "; the window held 2 sampler readings (100ms apart, fewer than 5): its peaks and means may miss what happened in it"
		if flagged && !strings.HasSuffix(run.rec.Note, want) {
			t.Errorf("note %q; want it to end %q", run.rec.Note, want)
		}
	}
}

// TestBothRatesOnAKnownTimeline: one drain, two windows. The arm's control
// plane starts at armStart and its data plane 300 ms later; spatec's window
// opens at 450 ms, once the caps are verified; the first row lands 2 s into
// it; count() reaches N at 9.8 s with duplicates among the rows, and the
// distinct rows reach N at 10 s, when count() is N+5. spatec's rate is the
// N distinct rows over its 10 s; the reference harness's is the N rows
// count() gave at 9.8 s over the 9.95 s since the data plane started. Each
// window's bounds are recorded, and the harness's is derived again from
// the record and its series alone.
func TestBothRatesOnAKnownTimeline(t *testing.T) {
	run, _ := gateRun(t)
	const n = 100_000
	run.rec.SUT.Containers = []record.Container{
		{Name: "coordinator", Role: "control-plane", StartedAt: armStart},
		{Name: "consumer", Role: "data-plane", StartedAt: armStart.Add(300 * time.Millisecond)},
	}
	opened := armStart.Add(450 * time.Millisecond)
	for off := int64(100); off <= 10_000; off += 100 {
		var count int64
		switch {
		case off < 2_000:
		case off <= 9_800:
			count = 1 + (n-1)*(off-2_000)/7_800
		case off == 9_900:
			count = n + 3
		default:
			count = n + 5
		}
		run.landed.OffsetsMS = append(run.landed.OffsetsMS, off)
		run.landed.Landed = append(run.landed.Landed, count)
	}
	d := chstore.Drain{Counted: true, DistinctCounted: true, Count: n + 5, Distinct: n, Duplicates: 5, Elapsed: 10 * time.Second, FirstRow: 2 * time.Second}
	run.metrics(drainResult{drain: d, want: n, drained: true, opened: opened})

	m, w := run.rec.Metrics, run.rec.Run.Window
	// In float64 arithmetic, as a reader of the record divides.
	rows, spatecWindow, harnessWindow := float64(n), 10.0, 9.95
	for name, want := range map[string]float64{
		record.RowsPerS: rows / spatecWindow, record.WindowSeconds: spatecWindow,
		record.HarnessRowsPerS: rows / harnessWindow, record.HarnessWindowSeconds: harnessWindow,
	} {
		if got, ok := m[name]; !ok || got.Value != want {
			t.Errorf("%s = %+v; want %v", name, got, want)
		}
	}
	if !w.OpenedAt.Equal(opened) || !w.ClosedAt.Equal(opened.Add(10*time.Second)) || w.DurationS != 10 {
		t.Errorf("spatec's window %v to %v (%v s); want %v to %v (10 s)", w.OpenedAt, w.ClosedAt, w.DurationS, opened, opened.Add(10*time.Second))
	}
	want := record.Span{OpenedAt: armStart.Add(300 * time.Millisecond), ClosedAt: opened.Add(9_800 * time.Millisecond), DurationS: 9.95, Rows: n}
	if w.Harness == nil || *w.Harness != want {
		t.Fatalf("the harness's window %+v; want %+v", w.Harness, want)
	}
	again, err := run.rec.HarnessSpanFrom(&record.Series{Rows: run.landed})
	if err != nil || again != want {
		t.Errorf("derived again from the record and its series: %+v, %v; want %+v", again, err, want)
	}
	if run.rec.Note != "" || len(run.caveats) > 0 {
		t.Errorf("caveats %v; want none", run.caveats)
	}

	// A drain that did not complete has neither rate, nor a harness window.
	run, _ = gateRun(t)
	run.metrics(measuredDrain(run, chstore.Drain{Counted: true, DistinctCounted: true, Count: n - 1, Distinct: n - 1, Elapsed: time.Second}, n))
	if _, ok := run.rec.Metrics[record.HarnessRowsPerS]; ok || run.rec.Run.Window.Harness != nil {
		t.Errorf("an incomplete drain carries %v, window %+v", run.rec.Metrics[record.HarnessRowsPerS], run.rec.Run.Window.Harness)
	}

	// Nor has a drain that stalled, though the count taken once the arm
	// had stopped holds every row: those that landed after the 15 s
	// window are not its rows.
	run, _ = gateRun(t)
	stalled := measuredDrain(run, chstore.Drain{Counted: true, DistinctCounted: true, Count: n - 1, Distinct: n - 1, Elapsed: 15 * time.Second}, n)
	stalled.drained = false
	stalled.drain.Count, stalled.drain.Distinct = n, n
	run.metrics(stalled)
	for _, name := range []string{record.RowsPerS, record.MsgsPerS, record.BytesPerS, record.HarnessRowsPerS} {
		if m, ok := run.rec.Metrics[name]; ok {
			t.Errorf("a stalled drain carries %s %v", name, m)
		}
	}
	if m := run.rec.Metrics[record.DistinctRows]; m.Value != float64(n) {
		t.Errorf("%s %v; want the count at the end, %d", record.DistinctRows, m, n)
	}
}

// An arm whose containers' starts were not recorded has spatec's rate and
// no harness rate, and the note says why.
func TestNoHarnessRateWithoutTheArmsStart(t *testing.T) {
	run, _ := gateRun(t)
	run.rec.SUT.Containers[0].StartedAt = time.Time{}
	run.metrics(measuredDrain(run, chstore.Drain{Counted: true, DistinctCounted: true, Count: 100_000, Distinct: 100_000, Elapsed: time.Second}, 100_000))
	if _, ok := run.rec.Metrics[record.RowsPerS]; !ok {
		t.Error("spatec's rate is missing")
	}
	if _, ok := run.rec.Metrics[record.HarnessRowsPerS]; ok {
		t.Error("a harness rate without the arm's start")
	}
	if want := "no harness_rows_per_s: a container's start instant was not recorded"; !contains(run.caveats, want) {
		t.Errorf("caveats %v; want %q", run.caveats, want)
	}
}
