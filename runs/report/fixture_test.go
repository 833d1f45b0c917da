package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"spatec.dev/spatec/runs/record"
)

var t0 = time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC)

// run builds a complete record of one arm at the given throughput, with CPU
// and memory figures derived from it so every column has a value. Its
// reference-harness rate is 2% below spatec's (a window from the arm's
// start is a little longer); harness(v) sets another.
func run(t testing.TB, entrant string, rowsPerS float64, edits ...func(*record.Record)) *record.Record {
	t.Helper()
	id, err := record.NewRunID()
	if err != nil {
		t.Fatal(err)
	}
	r := &record.Record{
		Schema: record.SchemaV1, Status: record.StatusOK, RunID: id, Rep: 1, Reps: 3,
		SUT: record.SUT{Entrant: entrant, Version: "1.0", Containers: []record.Container{
			{Name: entrant, Role: "data-plane", Image: entrant + ":1.0", ImageDigest: "sha256:" + strings.Repeat("0", 64), CPUs: "1.00", MemoryBytes: 1 << 30},
		}},
		Run: record.Run{
			Env: "local", EnvDigest: "sha256:envlocal0001", PlanDigest: "sha256:plan-" + entrant, InfraDigest: "sha256:infra1",
			SpatecVersion: "0.1.0", SpatecCommit: "abc1234", HarnessVersion: 1,
			StartedAt: t0, EndedAt: t0.Add(time.Minute),
			Host:    record.Host{Cores: 2, MemoryBytes: 24 << 30, Kernel: "6.18", CgroupVersion: "v1", EngineVersion: "20.10"},
			Cgroups: map[string]map[string]string{entrant: {"cpu.cfs_quota_us": "100000", "cpu.cfs_period_us": "100000", "memory.limit_in_bytes": "1073741824", "memory.memsw.limit_in_bytes": "1073741824"}},
			Dataset: record.Dataset{Version: "corpus-v1", Messages: 10000, ExpectedRows: 100000},
			Window:  record.Window{SamplerPeriodS: 0.1, DurationS: 100},
		},
		Variant: map[string]any{},
		Metrics: map[string]record.Metric{
			record.RowsPerS:               {Value: rowsPerS, Unit: "rows/s", HigherIsBetter: true},
			record.HarnessRowsPerS:        {Value: 0.98 * rowsPerS, Unit: "rows/s", HigherIsBetter: true},
			record.CoresUsed:              {Value: 1.0, Unit: "cores"},
			record.DataPlaneCoresUsed:     {Value: 0.9, Unit: "cores"},
			record.ControlPlaneCoresUsed:  {Value: 0.1, Unit: "cores"},
			record.PeakAnonBytes:          {Value: 300 << 20, Unit: "bytes"},
			record.DataPlanePeakAnonBytes: {Value: 256 << 20, Unit: "bytes"},
		},
		Flags: []string{},
	}
	for _, e := range edits {
		e(r)
	}
	return r
}

func status(s record.Status) func(*record.Record) { return func(r *record.Record) { r.Status = s } }

// harness sets the run's reference-harness rate; a negative v removes it,
// as in a record from before it was recorded.
func harness(v float64) func(*record.Record) {
	return func(r *record.Record) {
		if v < 0 {
			delete(r.Metrics, record.HarnessRowsPerS)
			return
		}
		r.Metrics[record.HarnessRowsPerS] = record.Metric{Value: v, Unit: "rows/s", HigherIsBetter: true}
	}
}

func cores(total, dataPlane float64) func(*record.Record) {
	return func(r *record.Record) {
		r.Metrics[record.CoresUsed] = record.Metric{Value: total, Unit: "cores"}
		r.Metrics[record.DataPlaneCoresUsed] = record.Metric{Value: dataPlane, Unit: "cores"}
	}
}

func peak(total, dataPlane float64) func(*record.Record) {
	return func(r *record.Record) {
		r.Metrics[record.PeakAnonBytes] = record.Metric{Value: total, Unit: "bytes"}
		r.Metrics[record.DataPlanePeakAnonBytes] = record.Metric{Value: dataPlane, Unit: "bytes"}
	}
}

func window(periodS, durationS float64) func(*record.Record) {
	return func(r *record.Record) { r.Run.Window = record.Window{SamplerPeriodS: periodS, DurationS: durationS} }
}

func at(d time.Duration) func(*record.Record) {
	return func(r *record.Record) { r.Run.StartedAt = t0.Add(d); r.Run.EndedAt = t0.Add(d + time.Minute) }
}

// appendAll files each record where the executor would.
func appendAll(t testing.TB, root string, recs ...*record.Record) {
	t.Helper()
	for _, r := range recs {
		if err := record.Append(record.PathFor(root, r.Run.Env, r.SUT.Entrant, r.Run.StartedAt), r); err != nil {
			t.Fatal(err)
		}
	}
}

func jsonLine(t testing.TB, r *record.Record) string {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b) + "\n"
}

func writeRaw(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(content); err != nil {
		t.Fatal(err)
	}
}

func load(t testing.TB, root string, opts Options) (*Report, []record.Problem) {
	t.Helper()
	rep, problems, err := Load([]string{root}, opts)
	if err != nil {
		t.Fatal(err)
	}
	return rep, problems
}

func arm(t testing.TB, s *Section, label string) *Arm {
	t.Helper()
	for _, a := range s.Arms {
		if a.Label == label {
			return a
		}
	}
	t.Fatalf("section %s has no arm %q", s.ID, label)
	return nil
}

// demo is a section with every situation a reader meets: a clear leader, a
// tie, an infra_bound arm, an arm with a failed repetition, and an arm whose
// every run failed.
func demo(t testing.TB, root string) {
	t.Helper()
	var recs []*record.Record
	for i, v := range []float64{52000, 50500, 51000} {
		recs = append(recs, run(t, "reference", v, at(time.Duration(i)*time.Hour)))
	}
	for i, v := range []float64{50600, 49000, 49800} { // overlaps reference: tied
		recs = append(recs, run(t, "vector", v, at(time.Duration(i)*time.Hour), cores(1.0, 1.0), peak(180<<20, 180<<20)))
	}
	for i, v := range []float64{90000, 88000, 91000} {
		recs = append(recs, run(t, "chkafka", v, at(time.Duration(i)*time.Hour), status(record.StatusInfraBound),
			func(r *record.Record) { r.Flags = []string{record.FlagHeadroomUnproven} }))
	}
	for i, v := range []float64{21000, 22500} {
		recs = append(recs, run(t, "flink", v, at(time.Duration(i)*time.Hour), cores(1.0, 0.8), peak(900<<20, 700<<20)))
	}
	recs = append(recs, run(t, "flink", 3000, at(2*time.Hour), status(record.StatusFailed),
		func(r *record.Record) { r.Note = "timeout: 41000 of 100000 distinct rows landed" }))
	for i := range 3 {
		recs = append(recs, run(t, "connect", 0, at(time.Duration(i)*time.Hour), status(record.StatusFailed),
			func(r *record.Record) { r.Metrics = nil; r.Note = "arm exited with code 1" }))
	}
	appendAll(t, root, recs...)
}
