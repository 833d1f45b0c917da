package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"spatec.dev/spatec/runs/record"
)

func TestAggregateMedianRangeSpreadAndWorstStatus(t *testing.T) {
	root := t.TempDir()
	appendAll(t, root,
		run(t, "reference", 100), run(t, "reference", 130), run(t, "reference", 110),
		run(t, "reference", 5, status(record.StatusFailed)), // partial throughput: must not pull the median
		run(t, "even", 10), run(t, "even", 20),
	)
	rep, problems := load(t, root, Options{})
	if len(problems) != 0 {
		t.Fatalf("problems: %v", problems)
	}
	if len(rep.Sections) != 1 || rep.Records != 6 {
		t.Fatalf("%d sections, %d records; want 1 section of 6 records", len(rep.Sections), rep.Records)
	}
	a := arm(t, rep.Sections[0], "reference")
	rows := a.Metrics[record.RowsPerS]
	if rows.N != 3 || rows.Median != 110 || rows.Min != 100 || rows.Max != 130 {
		t.Errorf("rows/s %+v, want n=3 median 110 over [100, 130]", rows)
	}
	if want := 30.0 / 110; math.Abs(rows.Spread-want) > 1e-12 {
		t.Errorf("spread %v, want (130-100)/110 = %v", rows.Spread, want)
	}
	if a.Status != record.StatusFailed || a.Runs != 4 || a.Measured != 3 {
		t.Errorf("status %s, runs %d, measured %d; want failed (worst wins), 4, 3", a.Status, a.Runs, a.Measured)
	}
	if !slices.ContainsFunc(a.Notes, func(n string) bool { return n == "1 failed of 4 runs; metrics from the 3 measured" }) {
		t.Errorf("notes %q do not say one run failed", a.Notes)
	}
	if got := arm(t, rep.Sections[0], "even").Metrics[record.RowsPerS].Median; got != 15 {
		t.Errorf("median of 10 and 20 = %v, want 15", got)
	}
	// rows/s per core is derived per run, then aggregated.
	if pc := a.Metrics[RowsPerSPerCore]; pc == nil || pc.Median != 110 || pc.Unit != "rows/s/core" {
		t.Errorf("rows/s per core %+v, want median 110 rows/s/core at 1 core", pc)
	}
}

func TestDuplicatesAreNoted(t *testing.T) {
	root := t.TempDir()
	dups := func(n float64) func(*record.Record) {
		return func(r *record.Record) {
			r.Metrics[record.DuplicateRows] = record.Metric{Value: n, Unit: "count"}
			r.Metrics[record.ExpectedRows] = record.Metric{Value: 200_000, Unit: "count"}
		}
	}
	appendAll(t, root,
		run(t, "chkafka", 100, dups(50_000)), run(t, "chkafka", 110, dups(0)), run(t, "chkafka", 120, dups(0)),
		run(t, "reference", 100, dups(0)), run(t, "reference", 100, dups(0)),
	)
	rep, problems := load(t, root, Options{})
	if len(problems) != 0 {
		t.Fatalf("problems: %v", problems)
	}
	want := "duplicates in 1 of 3 measured runs: up to 50000 rows (25.0% of the dataset)"
	if notes := arm(t, rep.Sections[0], "chkafka").Notes; !slices.Contains(notes, want) {
		t.Errorf("notes %q lack %q", notes, want)
	}
	for _, n := range arm(t, rep.Sections[0], "reference").Notes {
		if strings.Contains(n, "duplicates") {
			t.Errorf("an arm without duplicates is noted: %q", n)
		}
	}
}

func TestWorstStatusOrder(t *testing.T) {
	for _, tc := range []struct {
		statuses []record.Status
		want     record.Status
	}{
		{[]record.Status{"ok", "ok"}, "ok"},
		{[]record.Status{"ok", "infra_bound", "ok"}, "infra_bound"},
		{[]record.Status{"infra_bound", "refused", "ok"}, "refused"},
		{[]record.Status{"refused", "failed", "infra_bound"}, "failed"},
	} {
		root := t.TempDir()
		for _, s := range tc.statuses {
			appendAll(t, root, run(t, "a", 100, status(s)))
		}
		rep, _ := load(t, root, Options{})
		if got := rep.Sections[0].Arms[0].Status; got != tc.want {
			t.Errorf("statuses %v: arm status %s, want %s", tc.statuses, got, tc.want)
		}
	}
}

func TestIncomparableRecordsAreNeverMerged(t *testing.T) {
	root := t.TempDir()
	appendAll(t, root,
		run(t, "reference", 100),
		run(t, "reference", 101),
		run(t, "reference", 200, at(time.Hour), func(r *record.Record) { r.Run.HarnessVersion = 2 }),
		run(t, "reference", 300, at(2*time.Hour), func(r *record.Record) { r.Run.Dataset.Version = "corpus-v2" }),
		run(t, "reference", 400, at(3*time.Hour), func(r *record.Record) { r.Run.EnvDigest = "sha256:envlocal0002" }),
	)
	rep, problems := load(t, root, Options{})
	if len(problems) != 0 {
		t.Fatalf("problems: %v", problems)
	}
	if len(rep.Sections) != 4 {
		t.Fatalf("%d sections, want 4 (one per comparability class)", len(rep.Sections))
	}
	// Newest first within an environment.
	s1, s4 := rep.Sections[0], rep.Sections[3]
	if got := s1.Arms[0].Metrics[record.RowsPerS]; got.Median != 400 || got.N != 1 {
		t.Errorf("S1 rows/s %+v, want the single env-digest-2 run at 400", got)
	}
	if got := s4.Arms[0].Metrics[record.RowsPerS]; got.N != 2 || got.Median != 100.5 {
		t.Errorf("S4 rows/s %+v, want the two comparable runs, median 100.5", got)
	}
	wantS4 := []string{
		"not comparable with S1: environment digest sha256:envlocal0001 vs sha256:envlocal0002",
		"not comparable with S2: dataset corpus-v1 vs corpus-v2",
		"not comparable with S3: harness version 1 vs 2",
	}
	if !slices.Equal(s4.NotComparable, wantS4) {
		t.Errorf("S4 says %q,\nwant %q", s4.NotComparable, wantS4)
	}
	var table bytes.Buffer
	if err := rep.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), wantS4[2]) {
		t.Errorf("the table does not say the sections are not comparable:\n%s", table.String())
	}
}

func TestRatiosTiesAndRanks(t *testing.T) {
	root := t.TempDir()
	demo(t, root)
	// Ranges apart, but the medians differ by 0.5% with a 1% resolution
	// (1 s sampler over a 100 s window): the instrument cannot tell them.
	appendAll(t, root,
		run(t, "coarse-a", 20000, window(1, 100)), run(t, "coarse-a", 20010, window(1, 100)),
		run(t, "coarse-b", 20110, window(1, 100)), run(t, "coarse-b", 20120, window(1, 100)),
	)
	rep, _ := load(t, root, Options{})
	s := rep.Sections[0]

	// chkafka is fastest but infra_bound, so the leader is reference.
	if s.Baseline != "reference" || s.BaselineWhy != "leader by median rows/s" {
		t.Errorf("baseline %q (%s), want reference as the leader", s.Baseline, s.BaselineWhy)
	}
	var order []string
	for _, a := range s.Arms {
		order = append(order, a.Label+" "+rankText(a))
	}
	want := []string{"chkafka 1", "reference =2", "vector =2", "flink 4", "coarse-b =5", "coarse-a =5", "connect –"}
	if !slices.Equal(order, want) {
		t.Errorf("order %v, want %v", order, want)
	}
	ref, vec, ch, fl := arm(t, s, "reference"), arm(t, s, "vector"), arm(t, s, "chkafka"), arm(t, s, "flink")
	if vec.VsBaseline != "tied" || !slices.Equal(vec.TiedWith, []string{"reference"}) || !ref.Tied {
		t.Errorf("vector vs baseline %q tied with %v; want tied with reference", vec.VsBaseline, vec.TiedWith)
	}
	if ref.VsBaseline != "baseline" || ref.Ratio != 1 {
		t.Errorf("reference: %q ratio %v, want baseline 1", ref.VsBaseline, ref.Ratio)
	}
	if want := 90000.0 / 51000; ch.VsBaseline != "1.76×" || math.Abs(ch.Ratio-want) > 1e-12 {
		t.Errorf("chkafka: %q ratio %v, want 1.76× (%v)", ch.VsBaseline, ch.Ratio, want)
	}
	if fl.Tied || fl.VsBaseline != "0.43×" {
		t.Errorf("flink: tied %v, %q; want untied 0.43×", fl.Tied, fl.VsBaseline)
	}
	if a, b := arm(t, s, "coarse-a"), arm(t, s, "coarse-b"); !a.Tied || !b.Tied || a.Resolution != 0.01 {
		t.Errorf("coarse arms: tied %v/%v resolution %v; want tied at 1%% resolution", a.Tied, b.Tied, a.Resolution)
	}
	if c := arm(t, s, "connect"); c.Rank != 0 || c.VsBaseline != "" || c.Status != record.StatusFailed {
		t.Errorf("connect (never measured): rank %d %q %s; want unranked and failed", c.Rank, c.VsBaseline, c.Status)
	}
}

func TestBaselineChoice(t *testing.T) {
	root := t.TempDir()
	appendAll(t, root,
		run(t, "fast", 1000), run(t, "slow", 500),
		run(t, "twin", 700, func(r *record.Record) { r.SUT.Variant = "a" }),
		run(t, "twin", 600, func(r *record.Record) { r.SUT.Variant = "b" }),
	)
	for _, tc := range []struct{ requested, base, why string }{
		{"", "fast", "leader by median rows/s"},
		{"slow", "slow", "chosen baseline"},
		{"twin:b", "twin:b", "chosen baseline"},
		{"twin", "fast", `the chosen baseline "twin" matches twin:a, twin:b (name one as entrant:variant); leader by median rows/s`},
		{"absent", "fast", `the chosen baseline "absent" has no rows/s measurement in this section; leader by median rows/s`},
	} {
		rep, _ := load(t, root, Options{Baseline: tc.requested})
		s := rep.Sections[0]
		if s.Baseline != tc.base || s.BaselineWhy != tc.why {
			t.Errorf("baseline %q: got %s (%s), want %s (%s)", tc.requested, s.Baseline, s.BaselineWhy, tc.base, tc.why)
		}
		if got := arm(t, s, "slow").Ratio; got != 500/arm(t, s, tc.base).Metrics[record.RowsPerS].Median {
			t.Errorf("baseline %q: slow's ratio %v", tc.requested, got)
		}
	}
}

func TestKnobSettingsAreSeparateArms(t *testing.T) {
	root := t.TempDir()
	appendAll(t, root,
		run(t, "vector", 100, func(r *record.Record) { r.Variant = map[string]any{"batch": 1000.0} }),
		run(t, "vector", 300, func(r *record.Record) { r.Variant = map[string]any{"batch": 8000.0} }),
	)
	rep, _ := load(t, root, Options{})
	arms := rep.Sections[0].Arms
	if len(arms) != 2 || arms[0].Label == arms[1].Label || !strings.HasPrefix(arms[0].Label, "vector#") {
		t.Fatalf("arms %v %v; want two distinctly labelled vector arms", arms[0].Label, arms[1].Label)
	}
}

func TestLoadReportsEveryUnusableLineAndKeepsTheRest(t *testing.T) {
	root := t.TempDir()
	good := run(t, "reference", 100)
	appendAll(t, root, good)
	path := record.PathFor(root, "local", "reference", t0)
	other := run(t, "reference", 999, func(r *record.Record) { r.Run.Env = "bench96" })
	future := strings.Replace(jsonLine(t, run(t, "reference", 1)), record.SchemaV1, "spatec.record/v2", 1)
	unitClash := run(t, "reference", 120, func(r *record.Record) {
		r.Metrics[record.CoresUsed] = record.Metric{Value: 1, Unit: "ratio"}
	})
	writeRaw(t, path, "this is not json\n"+future+jsonLine(t, other)+jsonLine(t, unitClash)+jsonLine(t, run(t, "reference", 140))[:80])

	rep, problems := load(t, root, Options{})
	want := []string{
		path + ":2: not a valid record",
		path + `:3: unknown schema version "spatec.record/v2"`,
		path + ":4: run " + other.RunID + ` belongs to environment "bench96", not "local"`,
		path + ":5: run " + unitClash.RunID + ": metric cores_used is in \"ratio\"",
		path + ":6: truncated record",
	}
	if len(problems) != len(want) {
		t.Fatalf("%d problems, want %d:\n%v", len(problems), len(want), problems)
	}
	for i, p := range problems {
		if !strings.HasPrefix(p.String(), want[i]) {
			t.Errorf("problem %d:\n got  %s\n want %s…", i, p, want[i])
		}
	}
	if rep.Records != 2 || rep.Rejected != 4 {
		t.Errorf("records %d rejected %d; want 2 aggregated (lines 1 and 5) and 4 rejected", rep.Records, rep.Rejected)
	}
	rows := rep.Sections[0].Arms[0].Metrics[record.RowsPerS]
	if rows.N != 2 || rows.Median != 110 {
		t.Errorf("rows/s %+v; want lines 1 and 5 aggregated (median 110)", rows)
	}
	var table bytes.Buffer
	if err := rep.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	for _, w := range want {
		if !strings.Contains(table.String(), w) {
			t.Errorf("the table does not list %q", w)
		}
	}
}

func TestEnvFilterSkipsOtherEnvironmentsVisibly(t *testing.T) {
	root := t.TempDir()
	appendAll(t, root, run(t, "reference", 100),
		run(t, "reference", 900, func(r *record.Record) { r.Run.Env = "bench96" }))
	rep, problems := load(t, root, Options{Env: "local"})
	if len(problems) != 0 || len(rep.Sections) != 1 || rep.Sections[0].Env != "local" {
		t.Fatalf("problems %v, %d sections; want only local", problems, len(rep.Sections))
	}
	if want := filepath.Join(root, "bench96", "reference", "2026-03.jsonl"); !slices.Equal(rep.SkippedFiles, []string{want}) {
		t.Errorf("skipped %v, want %s", rep.SkippedFiles, want)
	}
	// A file of another environment named explicitly is read, and its
	// records are reported, not used.
	other := filepath.Join(root, "bench96", "reference", "2026-03.jsonl")
	rep, problems, err := Load([]string{other}, Options{Env: "local"})
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) != 1 || !strings.HasPrefix(problems[0].String(), other+`:1: run `) || len(rep.Sections) != 0 {
		t.Errorf("problems %v sections %d; want the bench96 record reported at %s:1", problems, len(rep.Sections), other)
	}
}

func TestLoadMissingPath(t *testing.T) {
	_, _, err := Load([]string{filepath.Join(t.TempDir(), "none")}, Options{})
	if err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Fatalf("error %v, want one naming the missing path", err)
	}
}

func TestWriteTableAlignsColumns(t *testing.T) {
	root := t.TempDir()
	demo(t, root)
	rep, _ := load(t, root, Options{})
	var buf bytes.Buffer
	if err := rep.WriteTable(&buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	lines := strings.Split(out, "\n")
	head := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "ARM ") })
	if head < 0 {
		t.Fatalf("no header row:\n%s", out)
	}
	col := func(l, name string) int { return len([]rune(l[:strings.Index(l, name)])) }
	statusCol := col(lines[head], "STATUS")
	for _, l := range lines[head+1 : head+6] {
		fields := strings.Fields(l)
		if got := col(l, fields[1]); got != statusCol {
			t.Errorf("status column at %d, header at %d:\n%s\n%s", got, statusCol, lines[head], l)
		}
	}
	if !strings.Contains(lines[head], "ROWS/S MEDIAN [MIN–MAX]  SPREAD  HARNESS-WINDOW ROWS/S (NOT RANKED)") ||
		!strings.HasPrefix(lines[1], "ranked by rows_per_s, spatec's rate") {
		t.Errorf("the table does not say which rate it ranks by and which it shows beside:\n%s", out)
	}
	if want := "reference ok 3 51.0k [50.5k–52.0k] 2.9% 50.0k [49.5k–51.0k] baseline =2"; !strings.Contains(squeeze(out), want) {
		t.Errorf("table lacks %q (spaces squeezed):\n%s", want, out)
	}
	for _, want := range []string{
		"reference  ok           3     51.0k [50.5k–52.0k]",
		"chkafka    infra_bound  3     90.0k [88.0k–91.0k]",
		"flink      failed       2/3   21.8k [21.0k–22.5k]",
		"connect    failed       0/3   –",
		"0.43×",
		"1.00 / 0.80", // flink cores: arm / data plane
		"900.0 MiB / 700.0 MiB",
		"vector: tied with reference",
		"chkafka: infra_bound in 3 of 3 runs",
		"chkafka: flag headroom_unproven in 3 of 3 runs",
		"connect: 3 failed of 3 runs; metrics from the 0 measured",
		"connect: failed: arm exited with code 1 (3 runs)",
		"flink: failed: timeout: 41000 of 100000 distinct rows landed (1 run)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestWriteCSV(t *testing.T) {
	root := t.TempDir()
	demo(t, root)
	rep, _ := load(t, root, Options{})
	var buf bytes.Buffer
	if err := rep.WriteCSV(&buf); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rows[0], csvHeader) {
		t.Fatalf("header %v", rows[0])
	}
	col := func(name string) int { return slices.Index(csvHeader, name) }
	found := map[string][]string{}
	for _, r := range rows[1:] {
		if len(r) != len(csvHeader) {
			t.Fatalf("row of %d fields, want %d: %v", len(r), len(csvHeader), r)
		}
		found[r[col("arm")]+"/"+r[col("metric")]] = r
	}
	ref := found["reference/rows_per_s"]
	if ref == nil || ref[col("median")] != "51000" || ref[col("min")] != "50500" || ref[col("max")] != "52000" ||
		ref[col("n")] != "3" || ref[col("rank")] != "2" || ref[col("tied")] != "true" || ref[col("ratio_to_baseline")] != "1" ||
		ref[col("ranked_by")] != "rows_per_s" {
		t.Errorf("reference rows/s row %v", ref)
	}
	if h := found["reference/harness_rows_per_s"]; h == nil || h[col("median")] != "49980" || h[col("unit")] != "rows/s" || h[col("ranked_by")] != "rows_per_s" {
		t.Errorf("reference's harness-window row %v; want its median beside, the rank still by rows_per_s", h)
	}
	if c := found["connect/"]; c == nil || c[col("status")] != "failed" || c[col("measured")] != "0" {
		t.Errorf("connect has no metric-less row: %v", c)
	}
}

func TestWriteJSONRoundTrips(t *testing.T) {
	root := t.TempDir()
	demo(t, root)
	writeRaw(t, filepath.Join(root, "local", "reference", "2026-03.jsonl"), "{broken\n")
	rep, _ := load(t, root, Options{})
	var buf bytes.Buffer
	if err := rep.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if back.Records != rep.Records || len(back.Sections) != 1 || len(back.Problems) != 1 {
		t.Fatalf("round trip: %d records %d sections %d problems", back.Records, len(back.Sections), len(back.Problems))
	}
	ch := arm(t, back.Sections[0], "chkafka")
	if ch.Status != record.StatusInfraBound || ch.Metrics[record.RowsPerS].Median != 90000 || ch.Rank != 1 ||
		ch.Metrics[record.HarnessRowsPerS].Median != 88200 {
		t.Errorf("chkafka after round trip: %+v", ch)
	}
	if back.RankedBy != record.RowsPerS || back.ShownBeside != record.HarnessRowsPerS || !strings.HasPrefix(back.Ranking, "ranked by rows_per_s") {
		t.Errorf("the JSON says it ranks by %q, shows %q beside: %q", back.RankedBy, back.ShownBeside, back.Ranking)
	}
}

// TestRankingNeverMixesTheRates: arms are ranked, tied and compared with
// the baseline by spatec's rate alone, even where the reference harness's
// rate would order them the other way; an arm with only the harness's rate
// is shown and not ranked.
func TestRankingNeverMixesTheRates(t *testing.T) {
	root := t.TempDir()
	appendAll(t, root,
		// spatec's order: b, a. The harness's: a, b.
		run(t, "a", 100_000, harness(190_000)), run(t, "a", 101_000, harness(191_000)),
		run(t, "b", 200_000, harness(150_000)), run(t, "b", 201_000, harness(151_000)),
		run(t, "c", 0, func(r *record.Record) {
			delete(r.Metrics, record.RowsPerS)
			r.Metrics[record.HarnessRowsPerS] = record.Metric{Value: 500_000, Unit: "rows/s", HigherIsBetter: true}
		}),
	)
	rep, _ := load(t, root, Options{})
	s := rep.Sections[0]
	var order []string
	for _, a := range s.Arms {
		order = append(order, fmt.Sprintf("%s %s %s", a.Label, rankText(a), a.VsBaseline))
	}
	if want := []string{"b 1 baseline", "a 2 0.50×", "c – "}; !slices.Equal(order, want) {
		t.Errorf("order %q; want %q (by spatec's rate alone)", order, want)
	}
	if c := arm(t, s, "c"); c.Rank != 0 || c.Metrics[record.HarnessRowsPerS].Median != 500_000 {
		t.Errorf("c: rank %d, harness rate %+v; want unranked with its rate shown", c.Rank, c.Metrics[record.HarnessRowsPerS])
	}
	var table bytes.Buffer
	if err := rep.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"b ok 2 200k [200k–201k] 0.5% 150k [150k–151k] baseline 1", "c ok 1 – – 500k – –"} {
		if !strings.Contains(squeeze(table.String()), want) {
			t.Errorf("the table lacks %q:\n%s", want, table.String())
		}
	}
}

// TestTableShowsJVMHeap: a JVM arm's heap figures (C9) appear as a note of
// its row, as medians over its runs; an arm without them gets no such note.
func TestTableShowsJVMHeap(t *testing.T) {
	root := t.TempDir()
	heap := func(live float64) func(*record.Record) {
		return func(r *record.Record) {
			r.Metrics[record.JVMHeapConfiguredBytes] = record.Metric{Value: 8 << 30, Unit: "bytes"}
			r.Metrics[record.JVMHeapCommittedPeakBytes] = record.Metric{Value: 6 << 30, Unit: "bytes"}
			r.Metrics[record.JVMHeapLivePeakBytes] = record.Metric{Value: live, Unit: "bytes"}
		}
	}
	appendAll(t, root,
		run(t, "connect", 30000, at(0), heap(1<<30)),
		run(t, "connect", 31000, at(time.Hour), heap(3<<30)),
		run(t, "connect", 32000, at(2*time.Hour), heap(2<<30)),
		run(t, "vector", 50000, at(0)))
	rep, _ := load(t, root, Options{})
	var buf bytes.Buffer
	if err := rep.WriteTable(&buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	want := fmt.Sprintf("connect: JVM heap of the data plane (C9): configured %s, committed peak %s, live peak %s",
		value(8<<30, "bytes"), value(6<<30, "bytes"), value(2<<30, "bytes"))
	if !strings.Contains(out, want) {
		t.Errorf("table lacks %q:\n%s", want, out)
	}
	if strings.Contains(out, "vector: JVM heap") {
		t.Errorf("an arm without heap figures got a heap note:\n%s", out)
	}
}

// TestFailureQuotesTheLogsLastLine: a note that quotes a container's log
// is summarised with the log's last line, where the system says why.
func TestFailureQuotesTheLogsLastLine(t *testing.T) {
	var a Arm
	a.explain(&record.Record{Status: record.StatusFailed,
		Note: "container arm exited during the drain with code 1; its log ends:\nstarting\nbad response: Code: 47 Unknown identifier: position\n\n0 distinct rows of 10 landed (0 in all)"})
	want := "failed: container arm exited during the drain with code 1; its log ends: … bad response: Code: 47 Unknown identifier: position"
	if len(a.why) != 1 || a.why[0] != want {
		t.Errorf("why %q, want %q", a.why, want)
	}
}

// squeeze collapses each run of spaces to one, so a test reads a table's
// row without its padding.
func squeeze(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.Join(strings.Fields(l), " ")
	}
	return strings.Join(lines, "\n")
}
