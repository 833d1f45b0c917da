package report

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"spatec.dev/spatec/exec/record"
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

// BenchmarkReport100k reads, aggregates and renders (table, CSV, JSON, HTML)
// a report over 100 000 records. The budget is 2 s per operation.
func BenchmarkReport100k(b *testing.B) {
	const n = 100_000
	path := writeSynthetic(b, n)
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(st.Size())
	b.ReportAllocs()
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
