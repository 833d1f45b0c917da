package record

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func sampleSeries(runID string) *Series {
	return &Series{
		RunID: runID, PeriodS: 0.1,
		OffsetsMS: []int64{0, 100, 200},
		Containers: []SeriesContainer{
			{Name: "reference", Role: "data-plane", CPUUsageNs: []int64{0, 50e6, 100e6}, AnonShmemBytes: []int64{10 << 20, 12 << 20, 11 << 20}},
			{Name: "spatec-clickhouse", Role: "infra", CPUUsageNs: []int64{0, 20e6, -1}, AnonShmemBytes: []int64{300 << 20, 301 << 20, -1}},
		},
		Rows: SeriesRows{OffsetsMS: []int64{0, 100, 200}, Landed: []int64{0, 40_000, 100_000}},
	}
}

// TestSeriesRoundTrip: a series written beside a log is read back whole,
// through the reference the record carries.
func TestSeriesRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "local", "reference", "2026-03.jsonl")
	rec := sample(t)
	ref, err := WriteSeries(path, sampleSeries(rec.RunID))
	if err != nil {
		t.Fatal(err)
	}
	if ref.File != "series/"+rec.RunID+".json.gz" || ref.Readings != 3 || len(ref.SHA256) != 64 {
		t.Fatalf("reference %+v", ref)
	}
	s, err := ReadSeries(path, rec.RunID, ref)
	if err != nil {
		t.Fatal(err)
	}
	if s.Schema != SeriesV1 || !slices.Equal(s.Rows.Landed, []int64{0, 40_000, 100_000}) || s.Containers[1].AnonShmemBytes[2] != -1 {
		t.Errorf("read back %+v", s)
	}
}

// TestValidateChecksSeries: a record whose series file is missing, was
// changed, or is corrupt is reported at the record's file and line; the
// record itself is kept and the other records still read.
func TestValidateChecksSeries(t *testing.T) {
	root := t.TempDir()
	path := filepath.Join(root, "local", "reference", "2026-03.jsonl")
	recs := []*Record{sample(t), sample(t), sample(t), sample(t)}
	var lines string
	for i, rec := range recs {
		s := sampleSeries(rec.RunID)
		if i == 3 {
			s.RunID = recs[0].RunID // the series of another run
		}
		ref, err := WriteSeries(path, s)
		if err != nil {
			t.Fatal(err)
		}
		rec.Series = &ref
		lines += line(t, rec)
	}
	writeFile(t, path, lines)
	dir := filepath.Dir(path)
	// 1: intact. 2: deleted. 3: changed after the run.
	if err := os.Remove(filepath.Join(dir, recs[1].Series.File)); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, recs[2].Series.File), "not gzip")

	sum, problems := ValidateTree(root)
	if sum.Records != 4 {
		t.Errorf("%d records read, want all 4 kept", sum.Records)
	}
	assertProblems(t, problems, []string{
		path + ":2: run " + recs[1].RunID + ": series file missing: " + filepath.Join(dir, recs[1].Series.File),
		path + ":3: run " + recs[2].RunID + ": series " + filepath.Join(dir, recs[2].Series.File) + " has sha256 ",
		path + ":4: run " + recs[3].RunID + ": series " + filepath.Join(dir, recs[0].Series.File) + ": it is the series of run " + recs[0].RunID + ", not of run " + recs[3].RunID,
	})
	for _, p := range problems {
		if !strings.Contains(p.String(), "the record stands without its series") {
			t.Errorf("%s does not say the record stands", p)
		}
	}
}

// TestSeriesCheck: an inconsistent series says what is wrong.
func TestSeriesCheck(t *testing.T) {
	s := sampleSeries("x")
	s.Schema = SeriesV1
	s.Containers[0].CPUUsageNs = s.Containers[0].CPUUsageNs[:2]
	s.Rows.OffsetsMS = []int64{0, 200, 100}
	got := strings.Join(s.Check(), "; ")
	for _, want := range []string{"container reference has 2 CPU and 3 memory readings for 3 times", "rows.t_ms does not increase"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q does not say %q", got, want)
		}
	}
}
