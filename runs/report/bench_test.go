package report

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
	"time"

	"spatec.dev/spatec/runs/record"
)

// writeSynthetic writes n complete records (full provenance, cgroup values
// for the arm and two infra containers, the C7/C8/C13 metrics) spread over
// 8 entrants × 3 variants, to one file, and returns its path.
func writeSynthetic(b *testing.B, n int) string {
	b.Helper()
	path := filepath.Join(b.TempDir(), "records.jsonl")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(f)
	rng := rand.New(rand.NewPCG(1, 2))
	cg := func(quota string) map[string]string {
		return map[string]string{
			"cpu.cfs_quota_us": quota, "cpu.cfs_period_us": "100000",
			"memory.limit_in_bytes": "2147483648", "memory.memsw.limit_in_bytes": "2147483648",
		}
	}
	for i := range n {
		entrant := fmt.Sprintf("entrant%d", i%8)
		variant := fmt.Sprintf("v%d", (i/8)%3)
		rows := 40000 + float64(i%8)*5000 + rng.Float64()*2000
		r := run(b, entrant, rows, at(time.Duration(i)*time.Second), func(r *record.Record) {
			r.SUT.Variant = variant
			r.Variant = map[string]any{"batch_rows": 10000.0 * float64(1+(i/8)%3), "threads": 2.0}
			r.Run.Cgroups = map[string]map[string]string{entrant: cg("100000"), "broker": cg("50000"), "clickhouse": cg("50000")}
			r.Run.Infra = []record.Container{
				{Name: "broker", Role: "broker", Image: "spatec/kfake", ImageDigest: "sha256:" + fmt.Sprintf("%064d", 1), CPUs: "0.50", MemoryBytes: 1 << 30},
				{Name: "clickhouse", Role: "clickhouse", Image: "clickhouse:18.16", ImageDigest: "sha256:" + fmt.Sprintf("%064d", 2), CPUs: "0.50", MemoryBytes: 1 << 30},
			}
			for name, m := range map[string]record.Metric{
				record.MsgsPerS:                 {Value: rows / 10, Unit: "msg/s", HigherIsBetter: true},
				record.BytesPerS:                {Value: rows * 100, Unit: "bytes/s", HigherIsBetter: true},
				record.PeakShmemBytes:           {Value: 1 << 20, Unit: "bytes"},
				record.DataPlanePeakShmemBytes:  {Value: 1 << 20, Unit: "bytes"},
				record.MemoryPeakBytes:          {Value: 400 << 20, Unit: "bytes"},
				record.DataPlaneMemoryPeakBytes: {Value: 380 << 20, Unit: "bytes"},
				record.ExpectedRows:             {Value: 100000, Unit: "count"},
				record.DistinctRows:             {Value: 100000, Unit: "count"},
				record.LandedRows:               {Value: 100000, Unit: "count"},
				record.DuplicateRows:            {Value: 0, Unit: "count"},
				record.WindowSeconds:            {Value: 100000 / rows, Unit: "s"},
			} {
				r.Metrics[name] = m
			}
			if i%50 == 0 {
				r.Status = record.StatusInfraBound
			}
			if i%97 == 0 {
				r.Status, r.Note = record.StatusFailed, "timeout: 81000 of 100000 distinct rows landed"
			}
		})
		// Every record names its series; the files are written for the
		// last runs of each arm, the only ones a report reads (the 24
		// arms repeat every 24 records).
		if i >= n-24*maxTimelines {
			ref, err := record.WriteSeries(path, syntheticSeries(r.RunID, entrant))
			if err != nil {
				b.Fatal(err)
			}
			r.Series = &ref
		} else {
			r.Series = &record.SeriesRef{File: "series/" + r.RunID + ".json.gz", SHA256: fmt.Sprintf("%064x", i), Readings: 300}
		}
		line, err := json.Marshal(r)
		if err != nil {
			b.Fatal(err)
		}
		w.Write(line)
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	return path
}

// syntheticSeries is 30 s of readings at 100 ms of an arm and two
// infrastructure containers, and 300 polls of the rows landed.
func syntheticSeries(runID, entrant string) *record.Series {
	s := &record.Series{RunID: runID, PeriodS: 0.1}
	for _, c := range []struct{ name, role string }{{entrant, "data-plane"}, {"broker", "infra"}, {"clickhouse", "infra"}} {
		s.Containers = append(s.Containers, record.SeriesContainer{Name: c.name, Role: c.role})
	}
	for k := range int64(300) {
		s.OffsetsMS = append(s.OffsetsMS, 100*k)
		for j := range s.Containers {
			c := &s.Containers[j]
			c.CPUUsageNs = append(c.CPUUsageNs, k*50_000_000)
			c.AnonShmemBytes = append(c.AnonShmemBytes, (200+k%50)<<20)
		}
		s.Rows.OffsetsMS = append(s.Rows.OffsetsMS, 100*k)
		s.Rows.Landed = append(s.Rows.Landed, k*333)
	}
	return s
}

// BenchmarkReport100k reads, aggregates and renders (table, CSV, JSON, HTML)
// a report over 100 000 records, each naming its series: the HTML page
// draws every arm's charts over the window from the series of its last
// runs. The budget is 2 s per operation.
func BenchmarkReport100k(b *testing.B) {
	const n = 100_000
	path := writeSynthetic(b, n)
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(st.Size())
	b.ReportAllocs()
	// As `spatec report` runs it (prepareReadHeap).
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	for b.Loop() {
		rep, problems, err := Load([]string{path}, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if len(problems) != 0 || rep.Records != n {
			b.Fatalf("%d records, %d problems; want %d and none", rep.Records, len(problems), n)
		}
		for _, write := range []func(io.Writer) error{rep.WriteTable, rep.WriteCSV, rep.WriteJSON, rep.WriteHTML} {
			if err := write(io.Discard); err != nil {
				b.Fatal(err)
			}
		}
	}
}
