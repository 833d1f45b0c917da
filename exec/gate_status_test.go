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

// gateRun is an arm run whose window measured want rows in window, for the
// gate alone: no engine, no broker.
func gateRun(t *testing.T) (*armRun, *schema.Plan) {
	t.Helper()
	plan := &schema.Plan{Env: schema.Environment{Name: "gate", Partitions: 4},
		Workload: schema.Workload{Name: "json-rows", Messages: 100_000, RowsPerMessage: 1, Generator: schema.Generator{Kind: "json-rows", MessageBytes: 256}}}
	run := &armRun{plan: plan, rec: record.Record{Metrics: map[string]record.Metric{}, Flags: []string{}},
		expected: expectation{bytes: 100_000 * 256}}
	run.rec.Run.Dataset.Messages = 100_000
	run.summary = sample.Summary{Period: 100 * time.Millisecond}
	return run, plan
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
	err := run.gate(drainResult{drain: chstore.Drain{Counted: true, DistinctCounted: true, Count: 100_000, Distinct: 100_000, Elapsed: time.Second}, want: 100_000}, path)
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
	err := run.gate(drainResult{drain: chstore.Drain{Counted: true, DistinctCounted: true, Count: 100_000, Distinct: 100_000, Elapsed: time.Second}, want: 100_000}, path)
	run.finish(err, time.Now())
	if err != nil || run.rec.Status != record.StatusOK || len(run.rec.Run.Ceilings) != 3 {
		t.Fatalf("err %v, status %s, ceilings %v", err, run.rec.Status, run.rec.Run.Ceilings)
	}
}

func TestGateWithoutCeilingsFlagsHeadroomUnproven(t *testing.T) {
	run, _ := gateRun(t)
	err := run.gate(drainResult{drain: chstore.Drain{Counted: true, DistinctCounted: true, Count: 100_000, Distinct: 100_000, Elapsed: time.Second}, want: 100_000},
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
	err := run.gate(drainResult{drain: chstore.Drain{Counted: true, DistinctCounted: true, Count: 99_990, Distinct: 99_980, Duplicates: 10, Elapsed: time.Second}, want: 100_000}, os.DevNull)
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
	err := run.gate(drainResult{drain: chstore.Drain{Elapsed: time.Second}, want: 100_000}, os.DevNull)
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
		d := drainResult{drain: chstore.Drain{Counted: true, DistinctCounted: true, Count: 100_000, Distinct: 100_000, Elapsed: 160 * time.Millisecond}, want: 100_000}
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
