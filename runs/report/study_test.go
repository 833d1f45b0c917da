package report

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"spatec.dev/spatec/runs/record"
)

// point is one run of a study's point: its knob values, throughput and
// peak memory.
func point(t *testing.T, batch, flush float64, rows, peakMiB float64, rep int) *record.Record {
	return run(t, "reference", rows, at(time.Duration(rep)*time.Minute), peak(peakMiB*(1<<20), peakMiB*(1<<20)), func(r *record.Record) {
		r.SUT.Variant = fmt.Sprintf("bf-%v-%v", batch, flush)
		r.SUT.Study = "bf"
		r.Variant = map[string]any{"batch_rows": batch, "flush_ms": flush, "consumers": 4.0}
		r.Metrics[record.RowsInFlight] = record.Metric{Value: 4 * batch, Unit: "count"}
	})
}

// TestStudyKneeAnomaliesInteractions: the recommended point is the
// cheapest within 2% of the best, not the best; a step against the trend
// beyond the spread is listed; the gain of one knob is given at each value
// of the other.
func TestStudyKneeAnomaliesInteractions(t *testing.T) {
	root := t.TempDir()
	// rows/s by batch (rows) and flush (columns):
	//           flush 100      flush 500
	// 1000      50k (100 MiB)  52k (110 MiB)
	// 10000     80k (200 MiB)  79k (205 MiB)   ← knee: 80k is 98.8% of 81k, at 200 MiB
	// 100000    70k (400 MiB)  81k (600 MiB)   ← best; 70k after 80k is an anomaly
	grid := [][4]float64{
		{1000, 100, 50_000, 100}, {1000, 500, 52_000, 110},
		{10_000, 100, 80_000, 200}, {10_000, 500, 79_000, 205},
		{100_000, 100, 70_000, 400}, {100_000, 500, 81_000, 600},
	}
	var recs []*record.Record
	for rep := range 2 {
		for _, g := range grid {
			jitter := float64(rep) * 100 // a spread far below the steps
			recs = append(recs, point(t, g[0], g[1], g[2]+jitter, g[3], rep))
		}
	}
	appendAll(t, root, recs...)
	rep, problems := load(t, root, Options{})
	if len(problems) > 0 || len(rep.Sections) != 1 || len(rep.Sections[0].Studies) != 1 {
		t.Fatalf("problems %v, %d sections; want one study", problems, len(rep.Sections))
	}
	st := rep.Sections[0].Studies[0]
	if strings.Join(st.Axes, ",") != "batch_rows,flush_ms" {
		t.Errorf("axes %v, want the two knobs that vary (consumers does not)", st.Axes)
	}
	if got := st.setting(st.Best); got != "batch_rows=100000, flush_ms=500" {
		t.Errorf("best %s", got)
	}
	if got := st.setting(st.Knee); got != "batch_rows=10000, flush_ms=100" {
		t.Errorf("knee %s, want the cheapest within 2%% of the best", got)
	}
	for _, want := range []string{"80.0k rows/s, 98.8% of the best (81.0k at batch_rows=100000, flush_ms=500)", "a peak of 200 MiB against 600 MiB"} {
		if !strings.Contains(st.KneeWhy, want) {
			t.Errorf("knee justification %q lacks %q", st.KneeWhy, want)
		}
	}
	if len(st.Anomalies) != 1 || !strings.Contains(st.Anomalies[0], "rows/s along batch_rows at flush_ms=100 is not monotonic: 1000: 50.0k → 10000: 80.0k → 100000: 70.0k") {
		t.Errorf("anomalies %q", st.Anomalies)
	}
	if !strings.Contains(strings.Join(st.Interactions, "\n"), "batch_rows 1000 → 100000 gains 1.40× at flush_ms=100, 1.56× at flush_ms=500") {
		t.Errorf("interactions %q", st.Interactions)
	}
	// A tighter knee moves the recommendation to the best itself.
	rep, _ = load(t, root, Options{Knee: 0.005})
	if st := rep.Sections[0].Studies[0]; st.Knee != st.Best {
		t.Errorf("with a 0.5%% knee the recommendation is %s, want the best", st.setting(st.Knee))
	}
	// Memory per row in flight sits beside the throughput.
	a := arm(t, rep.Sections[0], "reference:bf-10000-100")
	if m := a.Metrics[PeakBytesPerRowInFlight]; m == nil || m.Median != 200*(1<<20)/40_000.0 {
		t.Errorf("peak bytes per row in flight %+v", m)
	}
}

// TestStudyWithinTheSpreadIsNoAnomaly: a dip smaller than the points' own
// run-to-run spread is not an anomaly.
func TestStudyWithinTheSpreadIsNoAnomaly(t *testing.T) {
	root := t.TempDir()
	var recs []*record.Record
	for rep, jitter := range []float64{-3000, 3000} {
		for _, g := range [][2]float64{{1000, 50_000}, {10_000, 60_000}, {100_000, 59_000}} {
			recs = append(recs, point(t, g[0], 100, g[1]+jitter, 100, rep))
		}
	}
	appendAll(t, root, recs...)
	rep, _ := load(t, root, Options{})
	if st := rep.Sections[0].Studies[0]; len(st.Anomalies) != 0 {
		t.Errorf("anomalies %q within a ±3k spread", st.Anomalies)
	}
}

// TestOverlapPoints: two condition sets of one environment stay apart
// unless an arm measured in both agrees within its spread.
func TestOverlapPoints(t *testing.T) {
	digest := func(d string) func(*record.Record) { return func(r *record.Record) { r.Run.EnvDigest = d } }
	for _, c := range []struct {
		name        string
		other       []*record.Record
		wantOverlap string
	}{
		{"agrees", []*record.Record{run(t, "reference", 50_800, digest("sha256:envlocal0002")), run(t, "reference", 51_500, digest("sha256:envlocal0002"))},
			"overlap with S2 agrees within the spread: reference 51.1k [50.8k–51.5k] in S1, 51.0k [50.5k–52.0k] in S2"},
		{"disagrees", []*record.Record{run(t, "reference", 70_000, digest("sha256:envlocal0002"))},
			"overlap with S2 disagrees: reference 70.0k [70.0k–70.0k] in S1"},
		{"no overlap", []*record.Record{run(t, "kafka-connect", 50_000, digest("sha256:envlocal0002"))},
			"no arm is measured in both S2 and S1: without an overlap point they stay separate (not comparable)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			appendAll(t, root, run(t, "reference", 52_000), run(t, "reference", 50_500), run(t, "reference", 51_000))
			for _, r := range c.other {
				r.Run.StartedAt = t0.Add(time.Hour) // the newer sitting sorts first: S1
			}
			appendAll(t, root, c.other...)
			rep, _ := load(t, root, Options{})
			if len(rep.Sections) != 2 {
				t.Fatalf("%d sections, want 2", len(rep.Sections))
			}
			got := strings.Join(append(rep.Sections[0].Overlaps, rep.Sections[1].Overlaps...), "\n")
			if !strings.Contains(got, c.wantOverlap) {
				t.Errorf("overlaps:\n%s\nwant %q", got, c.wantOverlap)
			}
		})
	}
}

// TestHistoryBySitting: runs group into sittings by day, environment
// digest, protocol and arm version, oldest first; a sitting under another
// environment digest is its own line in the chart, never joined.
func TestHistoryBySitting(t *testing.T) {
	root := t.TempDir()
	day := 24 * time.Hour
	appendAll(t, root,
		run(t, "reference", 50_000), run(t, "reference", 52_000),
		run(t, "reference", 60_000, at(day)), run(t, "reference", 61_000, at(day), func(r *record.Record) { r.SUT.Version = "1.1" }),
		run(t, "reference", 40_000, at(2*day), func(r *record.Record) { r.Run.EnvDigest = "sha256:other" }),
		run(t, "reference", 0, at(3*day), status(record.StatusFailed)),
	)
	rep, _ := load(t, root, Options{})
	if len(rep.History) != 1 {
		t.Fatalf("%d arms in the history", len(rep.History))
	}
	h := rep.History[0]
	var got []string
	for _, s := range h.Sittings {
		rows := "-"
		if s.RowsPerS != nil {
			rows = human(*s.RowsPerS)
		}
		got = append(got, fmt.Sprintf("%s %s %s %d/%d %s", s.Date, short(s.EnvDigest), s.ArmVersion, s.Measured, s.Runs, rows))
	}
	want := []string{
		"2026-03-14 sha256:envlocal0001 1.0 2/2 51.0k",
		"2026-03-15 sha256:envlocal0001 1.0 1/1 60.0k",
		"2026-03-15 sha256:envlocal0001 1.1 1/1 61.0k",
		"2026-03-16 sha256:other 1.0 1/1 40.0k",
		"2026-03-17 sha256:envlocal0001 1.0 0/1 -",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("sittings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(h.Charts) != 2 || len(h.Charts[0].Lines) != 2 || len(h.Charts[1].Lines) != 2 {
		t.Fatalf("charts %+v; want spatec's rate and the harness's, each one line per environment digest", h.Charts)
	}
}

// TestHistorySetsBothToolsSittingsOfOneDatasetSideBySide: a reference
// harness's sittings, read with their dataset in spatec's name, sit beside
// spatec's of the same dataset in the history; spatec's rate is charted
// alone, and the harness's rate, which both carry, on a chart of its own.
func TestHistorySetsBothToolsSittingsOfOneDatasetSideBySide(t *testing.T) {
	root := t.TempDir()
	sensor := func(r *record.Record) {
		r.Run.Dataset.Version, r.Run.Dataset.Messages = "sensor-batch@1c12224f4f7f", 1_500_000
	}
	appendAll(t, root, run(t, "vector", 450_000, sensor, harness(440_000)), run(t, "vector", 460_000, sensor, harness(450_000)))
	foreign := filepath.Join(root, "c8g", "vector", "2026-07.jsonl")
	writeRaw(t, foreign, "not a spatec log\n")
	rate := func(v float64) *float64 { return &v }
	opts := Options{Foreign: func(path string) ([]HistoryRun, []record.Problem, bool) {
		if path != foreign {
			return nil, nil, false
		}
		return []HistoryRun{{
			Source: "schema-2", Entrant: "vector", Env: "c8g-8xl-ec2-docker", EnvDigest: "28d3432df6fc", Started: t0.AddDate(0, 4, 0),
			Harness: "schema2 1", ArmVersion: "0.57.0", Status: "ok", Dataset: "sensor-batch@1c12224f4f7f", Messages: 1_500_000,
			HarnessRowsPerS: rate(405_180), Cores: rate(5.2),
		}}, nil, true
	}}
	rep, problems := load(t, root, opts)
	if len(problems) > 0 || len(rep.History) != 1 {
		t.Fatalf("problems %v, %d arms in the history", problems, len(rep.History))
	}
	h := rep.History[0]
	var got []string
	for _, s := range h.Sittings {
		opt := func(v *float64) string {
			if v == nil {
				return "-"
			}
			return human(*v)
		}
		got = append(got, fmt.Sprintf("%s %s %d %d/%d spatec %s harness %s", s.Source, s.Dataset, s.Messages, s.Measured, s.Runs, opt(s.RowsPerS), opt(s.HarnessRowsPerS)))
	}
	want := []string{
		"spatec sensor-batch@1c12224f4f7f 1500000 2/2 spatec 455.0k harness 445.0k",
		"schema-2 sensor-batch@1c12224f4f7f 1500000 1/1 spatec - harness 405.2k",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("sittings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(h.Charts) != 2 || len(h.Charts[0].Lines) != 1 || len(h.Charts[1].Lines) != 2 {
		t.Fatalf("charts %+v; want spatec's rate for spatec's sitting alone, the harness's for both", h.Charts)
	}
	for _, l := range h.Charts[1].Lines {
		if !strings.Contains(l.Label, "sensor-batch@1c12224f4f7f, 1.50M msgs") {
			t.Errorf("line %q does not name its dataset", l.Label)
		}
	}
}

// TestStudyScale: a point run at two dataset sizes is set side by side by
// its cost per row; the surface and the knee use the largest size; a cost
// that grows with the size beyond the spread is a finding.
func TestStudyScale(t *testing.T) {
	root := t.TempDir()
	size := func(messages int64, windowS float64) func(*record.Record) {
		return func(r *record.Record) {
			r.Run.Dataset.Messages, r.Run.Dataset.ExpectedRows = messages, messages
			r.Metrics[record.DistinctRows] = record.Metric{Value: float64(messages), Unit: "count"}
			r.Metrics[record.WindowSeconds] = record.Metric{Value: windowS, Unit: "s"}
		}
	}
	var recs []*record.Record
	for rep := range 2 {
		// batch 1000: 1 core for 1 s per 50k rows, and for 4 s per 200k:
		// flat. batch 100000: 1 s per 50k, but 8 s per 200k: twice the cost.
		recs = append(recs,
			point(t, 1000, 100, 50_000, 100, rep), point(t, 100_000, 100, 50_000, 100, rep),
			point(t, 1000, 100, 50_000, 100, rep), point(t, 100_000, 100, 25_000, 100, rep))
		size(50_000, 1)(recs[len(recs)-4])
		size(50_000, 1)(recs[len(recs)-3])
		size(200_000, 4)(recs[len(recs)-2])
		size(200_000, 8)(recs[len(recs)-1])
	}
	appendAll(t, root, recs...)
	rep, _ := load(t, root, Options{})
	if len(rep.Sections) != 2 || rep.Sections[0].Messages != 200_000 || len(rep.Sections[1].Studies[0].Scale) != 0 {
		t.Fatalf("want the 200k section first, holding the scale check, and the 50k one apart")
	}
	if want := "not comparable with S2: the first 200000 messages of the dataset vs 50000"; !strings.HasPrefix(rep.Sections[0].NotComparable[0], want) {
		t.Errorf("%q, want it to start %q", rep.Sections[0].NotComparable[0], want)
	}
	st := rep.Sections[0].Studies[0]
	if len(st.Sizes) != 2 || st.Sizes[0] != 50_000 || st.Sizes[1] != 200_000 {
		t.Fatalf("sizes %v", st.Sizes)
	}
	if len(st.Points) != 2 || st.Best.Rows != 50_000 {
		t.Errorf("the surface must be at the largest size: %d points, best %v", len(st.Points), st.Best.Rows)
	}
	if len(st.Scale) != 2 || st.Scale[0].Growth != 1 || st.Scale[1].Growth != 2 {
		t.Fatalf("scale %+v", st.Scale)
	}
	if len(st.ScaleFindings) != 1 || !strings.Contains(st.ScaleFindings[0], "batch_rows=100000: a row costs 2.00× as much at 200.0k messages as at 50.0k (40.00 against 20.00 core-µs)") {
		t.Errorf("findings %q", st.ScaleFindings)
	}
	if a := arm(t, rep.Sections[1], "reference:bf-1000-100"); a.Messages != 50_000 {
		t.Errorf("arm at 50k: %+v", a)
	}
}
