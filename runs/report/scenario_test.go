package report

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"spatec.dev/spatec/internal/testenv"
	"spatec.dev/spatec/runs/record"
)

// scenarioRun makes a run one of the clickhouse-restart scenario's: the
// fault at faultMS to faultMS+1000 on the window's clock.
func scenarioRun(sc record.Scenario) func(*record.Record) {
	return func(r *record.Record) {
		sc.Name, sc.Component, sc.Action, sc.At, sc.RecoveryS = "clickhouse-restart", "clickhouse", "restart", 0.3, 60
		sc.RateSpanMS, sc.RateShare = 5000, 0.9
		r.Scenario = &sc
		r.Run.PlanDigest = "sha256:plan-scenario"
	}
}

func ms(v int64) *int64 { return &v }

func repN(n int) func(*record.Record) { return func(r *record.Record) { r.Rep = n } }

// withSeries writes the run's series beside the log it is appended to: a
// poll every 100 ms for 20 s, perPoll rows a poll except from stallFrom
// to stallTo, when none land; the sampler's readings are two of the data
// plane's unless sampled sets others.
func withSeries(t testing.TB, root string, perPoll, stallFrom, stallTo int64, sampled ...func(*record.Series)) func(*record.Record) {
	return func(r *record.Record) {
		s := &record.Series{RunID: r.RunID, PeriodS: 0.1, OffsetsMS: []int64{0, 100},
			Containers: []record.SeriesContainer{{Name: r.SUT.Entrant, Role: "data-plane", CPUUsageNs: []int64{0, 50e6}, AnonShmemBytes: []int64{10 << 20, 11 << 20}}}}
		landed := int64(0)
		for t := int64(0); t <= 20_000; t += 100 {
			if t > 0 && (t <= stallFrom || t > stallTo) {
				landed += perPoll
			}
			s.Rows.OffsetsMS = append(s.Rows.OffsetsMS, t)
			s.Rows.Landed = append(s.Rows.Landed, landed)
		}
		for _, f := range sampled {
			f(s)
		}
		ref, err := record.WriteSeries(record.PathFor(root, r.Run.Env, r.SUT.Entrant, r.Run.StartedAt), s)
		if err != nil {
			t.Fatal(err)
		}
		r.Series = &ref
	}
}

// restartedDataPlane is the sampler's readings of reference's first run
// through the ClickHouse restart, every 100 ms for 20 s. Its data plane
// used 0.5 cores until it crashed as ClickHouse went away; its restart
// policy had it running again before the next reading, which read the new
// life's counter at 30 ms, and it used 0.8 cores from then; its memory
// went from 100 MiB to 40 MiB. Its readings failed at 8.1 s to 8.3 s
// while it ran on (a read timing out: no restart). Its control plane used
// 0.1 cores and 20 MiB throughout. ClickHouse, infra, used 2 cores and
// 1 GiB; its readings failed through its restart, 6.1 s to 6.9 s, and its
// counter started again from 0. The record counts both restarts.
func restartedDataPlane(s *record.Series) {
	s.OffsetsMS = nil
	dp := record.SeriesContainer{Name: "reference", Role: "data-plane"}
	cp := record.SeriesContainer{Name: "reference-ctl", Role: "control-plane"}
	ch := record.SeriesContainer{Name: "clickhouse", Role: "infra"}
	for i := int64(0); i <= 200; i++ {
		s.OffsetsMS = append(s.OffsetsMS, 100*i)
		cpu, mem := 50e6*i, int64(100<<20)
		if i > 65 {
			cpu, mem = 30e6+80e6*(i-66), 40<<20
		}
		if i >= 81 && i <= 83 {
			cpu, mem = -1, -1
		}
		dp.CPUUsageNs, dp.AnonShmemBytes = append(dp.CPUUsageNs, cpu), append(dp.AnonShmemBytes, mem)
		cp.CPUUsageNs, cp.AnonShmemBytes = append(cp.CPUUsageNs, 10e6*i), append(cp.AnonShmemBytes, 20<<20)
		cpu, mem = 200e6*i, 1<<30
		switch {
		case i >= 61 && i <= 69:
			cpu, mem = -1, -1
		case i >= 70:
			cpu = 200e6 * (i - 69)
		}
		ch.CPUUsageNs, ch.AnonShmemBytes = append(ch.CPUUsageNs, cpu), append(ch.AnonShmemBytes, mem)
	}
	s.Containers = []record.SeriesContainer{dp, cp, ch}
}

func restarted(r *record.Record) {
	r.Metrics["restarts.reference"] = record.Metric{Value: 1, Unit: "count"}
	r.Metrics["restarts.clickhouse"] = record.Metric{Value: 1, Unit: "count"}
}

// dedup is the bench hosts' table as a scenario's record describes it.
const dedup = "MergeTree with non_replicated_deduplication_window = 1000: an insert repeating one of the last 1000 is absorbed"

// scenarioFixture is two arms through one scenario beside their
// undisturbed runs. reference: undisturbed 9k, 10k and 11k rows/s (median
// 10k); two scenario runs at 8k and 9k, rows again 2 s and 3 s after the
// fault, the rate back at 5 s and 7 s, 100 and 300 duplicates, none lost.
// vector: undisturbed 20k twice (an infra_bound 50k beside them is not
// undisturbed ok); one run that never recovered (no rate, 40000 rows
// lost) and one the fault never reached. A reference run at 99k under
// another environment digest is not the arm's undisturbed rate either.
// With series, the first run of each arm keeps one, reference's with its
// data plane and ClickHouse restarted (restartedDataPlane).
func scenarioFixture(t testing.TB, root string, series bool) (scenarioIDs []string) {
	t.Helper()
	maybe := func(f func(*record.Record)) func(*record.Record) {
		if series {
			return f
		}
		return func(*record.Record) {}
	}
	undisturbed := []*record.Record{
		run(t, "reference", 9_000), run(t, "reference", 10_000), run(t, "reference", 11_000),
		run(t, "vector", 20_000), run(t, "vector", 20_000),
		run(t, "vector", 50_000, status(record.StatusInfraBound)),
		run(t, "reference", 99_000, func(r *record.Record) { r.Run.EnvDigest = "sha256:envlocal0002" }),
	}
	blocks := func(n int64) *int64 { return &n }
	scenario := []*record.Record{
		run(t, "reference", 8_000, at(time.Hour), scenarioRun(record.Scenario{
			Restart: "on-failure", Guarantee: "at-least-once", Injected: true, FaultMS: 6000, FaultEndMS: 7000,
			LandedAtFault: 6000, FirstRowMS: ms(2000), RateBackMS: ms(5000), PreFaultRowsPerS: 1000,
			Duplicates: 100, Verdict: record.VerdictDuplicates, Held: true,
			Dedup: dedup, DuplicatedInsertedBlocks: blocks(2),
		}), restarted, maybe(withSeries(t, root, 100, 6000, 8000, restartedDataPlane))),
		run(t, "reference", 9_000, at(2*time.Hour), repN(2), scenarioRun(record.Scenario{
			Restart: "on-failure", Guarantee: "at-least-once", Injected: true, FaultMS: 5000, FaultEndMS: 6000,
			LandedAtFault: 5000, FirstRowMS: ms(3000), RateBackMS: ms(7000), PreFaultRowsPerS: 1000,
			Duplicates: 300, Verdict: record.VerdictDuplicates, Held: true,
			Dedup: dedup, DuplicatedInsertedBlocks: blocks(4),
		})),
		run(t, "vector", 0, at(time.Hour), status(record.StatusFailed), scenarioRun(record.Scenario{
			Restart: "no", Guarantee: "at-least-once", Injected: true, FaultMS: 4000, FaultEndMS: 5000,
			LandedAtFault: 8000, PreFaultRowsPerS: 2000, Lost: 40_000, Verdict: record.VerdictNotRecovered, Held: false,
			Note: "no row landed within 60 s of the fault's end\nmore",
		}), func(r *record.Record) {
			delete(r.Metrics, record.RowsPerS)
			delete(r.Metrics, record.HarnessRowsPerS)
			r.Note = "timeout: 60000 of 100000 distinct rows landed"
		}, maybe(withSeries(t, root, 200, 4000, 20_000))),
		run(t, "vector", 19_000, at(2*time.Hour), repN(2), scenarioRun(record.Scenario{
			Restart: "no", Guarantee: "at-least-once", Injected: false, Verdict: record.VerdictNotInjected,
			Note: "the drain ended before 30% of the rows had landed",
		})),
	}
	appendAll(t, root, append(undisturbed, scenario...)...)
	for _, r := range scenario {
		scenarioIDs = append(scenarioIDs, r.RunID)
	}
	return scenarioIDs
}

// TestScenarioRunsAreNeverRanked: a failure scenario's runs are in no
// section, history, ranking or joint ranking; the scenario sets each arm's
// runs beside its undisturbed rate, with "—" for what they did not give;
// the text report has its table and the HTML its chart, the fault shaded
// and the first row and rate back marked.
func TestScenarioRunsAreNeverRanked(t *testing.T) {
	root := t.TempDir()
	ids := scenarioFixture(t, root, true)
	rep, problems := load(t, root, Options{})
	if len(problems) > 0 {
		t.Fatalf("problems: %v", problems)
	}
	if rep.Records != 11 {
		t.Errorf("%d records read, want 11", rep.Records)
	}
	inSections := 0
	for _, s := range rep.Sections {
		inSections += s.Records
		for _, a := range s.Arms {
			for _, id := range ids {
				if strings.Contains(strings.Join(a.RunIDs, " "), id) {
					t.Errorf("scenario run %s is in section %s, arm %s", id, s.ID, a.Label)
				}
			}
		}
	}
	if inSections != 7 || len(rep.Sections) != 2 || len(rep.Joint) != 0 {
		t.Errorf("%d records in %d sections (%d joint); want the 7 undisturbed in 2", inSections, len(rep.Sections), len(rep.Joint))
	}
	if ref := arm(t, rep.Sections[0], "reference"); ref.Runs != 3 || ref.Metrics[RankedBy].Median != 10_000 || ref.Rank != 2 {
		t.Errorf("the reference arm is ranked from %d runs at %v (rank %d); want its 3 undisturbed at 10k, rank 2", ref.Runs, ref.Metrics[RankedBy].Median, ref.Rank)
	}
	inHistory := 0
	for _, h := range rep.History {
		for _, s := range h.Sittings {
			inHistory += s.Runs
		}
	}
	if inHistory != 7 {
		t.Errorf("%d runs in the history; want the 7 undisturbed", inHistory)
	}

	if len(rep.Scenarios) != 1 {
		t.Fatalf("%d scenarios, want 1", len(rep.Scenarios))
	}
	sc := rep.Scenarios[0]
	if sc.ID != "X1" || sc.Name != "clickhouse-restart" || sc.Env != "local" || sc.Records != 4 || len(sc.Arms) != 2 {
		t.Fatalf("scenario %s %s on %s: %d records, %d arms", sc.ID, sc.Name, sc.Env, sc.Records, len(sc.Arms))
	}
	ref, vec := sc.Arms[0], sc.Arms[1]
	fig := func(name string, f *ScenarioFigure, med, lo, hi float64, n int) {
		t.Helper()
		if f == nil {
			t.Errorf("%s: absent, want %v [%v–%v] over %d", name, med, lo, hi, n)
			return
		}
		if math.Abs(f.Median-med) > 1e-9 || math.Abs(f.Min-lo) > 1e-9 || math.Abs(f.Max-hi) > 1e-9 || f.N != n {
			t.Errorf("%s: %+v, want %v [%v–%v] over %d", name, *f, med, lo, hi, n)
		}
	}
	if ref.Label != "reference" || len(ref.Runs) != 2 || ref.Undisturbed == nil || *ref.Undisturbed != 10_000 || ref.UndisturbedRuns != 3 {
		t.Fatalf("reference: %s, %d runs, undisturbed %v over %d", ref.Label, len(ref.Runs), ref.Undisturbed, ref.UndisturbedRuns)
	}
	fig("reference first row", ref.FirstRowS, 2.5, 2, 3, 2)
	fig("reference rate back", ref.RateBackS, 6, 5, 7, 2)
	fig("reference lost", ref.Lost, 0, 0, 0, 2)
	fig("reference duplicates", ref.Duplicates, 200, 100, 300, 2)
	fig("reference rate", ref.RowsPerS, 8_500, 8_000, 9_000, 2)
	fig("reference ratio", ref.Ratio, 0.85, 0.8, 0.9, 2)
	if r := ref.Runs[0]; r.Verdict != record.VerdictDuplicates || !r.Held || *r.Ratio != 0.8 || *r.FirstRowS != 2 {
		t.Errorf("reference's first run: %+v", r)
	}
	if vec.Undisturbed == nil || *vec.Undisturbed != 20_000 || vec.UndisturbedRuns != 2 {
		t.Errorf("vector's undisturbed rate %v over %d runs; want 20k over the 2 ok ones", vec.Undisturbed, vec.UndisturbedRuns)
	}
	if vec.FirstRowS != nil || vec.RateBackS != nil || vec.RowsPerS != nil || vec.Ratio != nil {
		t.Errorf("vector gave no first row, rate back or rate through the fault: %+v %+v %+v %+v", vec.FirstRowS, vec.RateBackS, vec.RowsPerS, vec.Ratio)
	}
	fig("vector lost", vec.Lost, 40_000, 40_000, 40_000, 1)
	fig("vector duplicates", vec.Duplicates, 0, 0, 0, 1)

	var text bytes.Buffer
	if err := rep.WriteTable(&text); err != nil {
		t.Fatal(err)
	}
	lines := map[string]bool{}
	for _, l := range strings.Split(text.String(), "\n") {
		lines[strings.Join(strings.Fields(l), " ")] = true
	}
	for _, want := range []string{
		"X1 failure scenario clickhouse-restart on local (env sha256:envlocal0001, harness 1, workload (unnamed), dataset corpus-v1, 10.0k messages; its runs are never ranked)",
		"clickhouse-restart: once 30% of the expected rows have landed, restarts ClickHouse (stopped and started again at once); recovery bound 60 s: an arm that lands no row within it of the fault's end has not recovered",
		"the table: " + dedup,
		"reference: guarantee at-least-once, restart on-failure",
		"vector: guarantee at-least-once, restart no",
		"ARM RUNS VERDICT HELD FIRST ROW AFTER FAULT (S) RATE BACK AFTER FAULT (S) LOST ROWS DUPLICATE ROWS ABSORBED BY DEDUP (BLOCKS EVENT) ROWS/S (WHOLE RUN) UNDISTURBED ROWS/S VS UNDISTURBED",
		"reference 2 recovered-with-duplicates, recovered-with-duplicates yes, yes 2.50 [2.00–3.00] 6.00 [5.00–7.00] 0 200 [100–300] 3 [2–4] 8.5k [8.0k–9.0k] 10.0k (3 runs) 0.85× [0.80×–0.90×]",
		"vector 2 not-recovered, not-injected no, — — — 40000 0 — — 20.0k (2 runs) —",
		"vector: rep 1 (run " + ids[2] + "): not-recovered, which the declared guarantee (at-least-once) does not allow: no row landed within 60 s of the fault's end",
		"vector: rep 2 (run " + ids[3] + "): the fault was not injected, so its figures are left out: the drain ended before 30% of the rows had landed",
	} {
		if !lines[want] {
			t.Errorf("the text report lacks the line %q:\n%s", want, text.String())
		}
	}

	var html bytes.Buffer
	if err := rep.WriteHTML(&html); err != nil {
		t.Fatal(err)
	}
	page := html.String()
	for _, want := range []string{
		"<h2>Failure scenarios</h2>", "<li>the table: " + dedup + "</li>", `<section id="X1" class="scenario">`, `<svg class="chart scenario" id="X1-chart"`,
		`<td>2.50 [2.00–3.00]</td><td>6.00 [5.00–7.00]</td><td>0</td><td>200 [100–300]</td><td>3 [2–4]</td><td>8.5k [8.0k–9.0k]</td><td>10.0k (3 runs)</td><td>0.85× [0.80×–0.90×]</td>`,
		`<td>—</td><td>—</td><td>40000</td><td>0</td><td>—</td><td>—</td><td>20.0k (2 runs)</td><td>—</td>`,
		`<span class="verdict not-recovered">not-recovered</span>`,
		"reference: the fault, 6.00 s to 7.00 s", "reference: first row 2.00 s after the fault", "reference: rate back 5.00 s after the fault",
		"vector: the fault, 4.00 s to 5.00 s",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the HTML report lacks %s", want)
		}
	}
	// The fault is shaded in the rows/s chart and in both resource charts.
	for class, n := range map[string]int{"scenario-fault": 6, "scenario-first-row": 1, "scenario-rate-back": 1, "scenario-pre-fault": 2, "scenario-rate": 2,
		"scenario-cores": 2, "scenario-memory": 2} {
		if got := strings.Count(page, `class="`+class+`"`); got != n {
			t.Errorf("%d marks of class %s in the chart, want %d", got, class, n)
		}
	}
	// The marks stand where the first run says: reference's fault at 6 s
	// to 7 s, its first row at 8 s and its rate back at 11 s, on a 20 s
	// axis 470 wide from x=62.
	x := func(s float64) string { return fmt.Sprintf("%.1f", 62+s/20*470) }
	for _, want := range []string{
		`<rect class="scenario-fault" x="` + x(6) + `"`,
		`<line class="scenario-first-row" x1="` + x(8) + `"`,
		`<line class="scenario-rate-back" x1="` + x(11) + `"`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the chart lacks %s", want)
		}
	}
}

// TestScenarioResourcesThroughARestart: beside the rows/s chart, each
// arm's cores and anon+shmem from the same run's series: the arm's data
// plane and control plane only, ClickHouse's readings neither counted nor
// breaking the line; the data plane's restart a drop whose growth is the
// new life's counter, not a negative rate; its failed readings a gap, not
// a 0; the fault shaded; the restarted containers named in the caption.
func TestScenarioResourcesThroughARestart(t *testing.T) {
	root := t.TempDir()
	scenarioFixture(t, root, true)
	rep, problems := load(t, root, Options{})
	if len(problems) > 0 || len(rep.Scenarios) != 1 {
		t.Fatalf("problems %v, %d scenarios", problems, len(rep.Scenarios))
	}
	sc := rep.Scenarios[0]
	if got := sc.Arms[0].Runs[0].Restarts; len(got) != 2 || got["reference"] != 1 || got["clickhouse"] != 1 {
		t.Errorf("reference's first run restarted %v; want reference and clickhouse once each", got)
	}
	c := scenarioChartOf(sc)
	if c.Cores == nil || c.Memory == nil || len(c.Cores.Arms) != 2 || len(c.Memory.Arms) != 2 {
		t.Fatalf("resource charts: cores %+v, memory %+v", c.Cores, c.Memory)
	}
	type step struct{ from, to, v float64 }
	steps := func(cv curve) []step {
		var out []step
		for k := 0; k+1 < len(cv.t); k += 2 {
			out = append(out, step{cv.t[k], cv.t[k+1], cv.v[k]})
		}
		return out
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

	// Cores: 0.5 + 0.1 before the crash, 0.8 + 0.1 after; the second of
	// the crash, 6 s to 7 s, holds 0.25 s of the old life (5 readings at
	// 50 ms), the new life's first 30 ms and 4 readings at 80 ms, and
	// 0.1 of the control plane: 0.7 cores. The data plane's failed
	// readings break the line from 8.0 s to 8.4 s; ClickHouse's through
	// its restart (6.1 s to 6.9 s) do not, and its 2 cores are not the
	// arm's.
	segs := c.Cores.Arms[0].segs
	if len(segs) != 2 {
		t.Fatalf("reference's cores in %d stretches, want 2 (one gap): %+v", len(segs), segs)
	}
	before, after := steps(segs[0]), steps(segs[1])
	if len(before) != 8 || len(after) != 12 {
		t.Fatalf("%d buckets before the gap and %d after; want 8 and 12: %+v %+v", len(before), len(after), before, after)
	}
	for k, want := range []step{{5, 6, 0.6}, {6, 7, 0.7}, {7, 8, 0.9}} {
		if got := before[5+k]; !near(got.from, want.from) || !near(got.to, want.to) || !near(got.v, want.v) {
			t.Errorf("cores bucket %.0f s to %.0f s: %+v, want %v", want.from, want.to, got, want.v)
		}
	}
	for _, b := range before[:5] {
		if !near(b.v, 0.6) {
			t.Errorf("cores before the crash: %+v, want 0.6", b)
		}
	}
	if got := after[0]; !near(got.from, 8.4) || !near(got.to, 9.4) || !near(got.v, 0.9) {
		t.Errorf("first bucket after the gap: %+v, want 8.4 s to 9.4 s at 0.9", got)
	}
	if got := after[len(after)-1]; !near(got.from, 19.4) || !near(got.to, 20) || !near(got.v, 0.9) {
		t.Errorf("last bucket: %+v, want 19.4 s to 20 s at 0.9", got)
	}
	// Memory: 120 MiB until the crash, 60 MiB after, the same gap.
	mem := c.Memory.Arms[0].segs
	if len(mem) != 2 || !near(mem[0].t[len(mem[0].t)-1], 8.0) || !near(mem[1].t[0], 8.4) {
		t.Fatalf("reference's memory: %+v; want a gap from 8.0 s to 8.4 s", mem)
	}
	for k, tm := range mem[0].t {
		want := float64(120 << 20)
		if tm > 6.5 {
			want = 60 << 20
		}
		if mem[0].v[k] != want {
			t.Errorf("memory at %.1f s: %v, want %v", tm, mem[0].v[k], want)
		}
	}
	if want := []string{"reference, rep 1: clickhouse (infra) once, reference (data-plane) once"}; !slices.Equal(c.Restarted, want) {
		t.Errorf("restarted: %q, want %q", c.Restarted, want)
	}

	var html bytes.Buffer
	if err := rep.WriteHTML(&html); err != nil {
		t.Fatal(err)
	}
	page := html.String()
	// The fault at 6 s to 7 s on the same 20 s axis, 300 wide from x=62.
	x := func(s float64) string { return fmt.Sprintf("%.1f", 62+s/20*300) }
	for _, want := range []string{
		`<svg class="chart scenario-resource" id="X1-cores"`, `<svg class="chart scenario-resource" id="X1-memory"`,
		`<rect class="scenario-fault" x="` + x(6) + `"`, `<path class="scenario-cores" d="M62.0,`, `<path class="scenario-memory" d="M62.0,`,
		"the arm's containers only (its data plane and control plane), infra excluded",
		"Containers restarted through the fault, in the runs drawn: reference, rep 1: clickhouse (infra) once, reference (data-plane) once.",
		"reference, rep 1: cores over ~1 s; not read 8.0 s to 8.4 s",
		"reference, rep 1: anon&#43;shmem at each reading; not read 8.0 s to 8.4 s",
		"reference: the fault, 6.00 s to 7.00 s",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the HTML report lacks %s", want)
		}
	}
	// The gap is a break in the line (a second subpath), not a drop to 0.
	i := strings.Index(page, `<path class="scenario-cores" d="`)
	d, _, _ := strings.Cut(page[i+len(`<path class="scenario-cores" d="`):], `"`)
	if n := strings.Count(d, "M"); n != 2 {
		t.Errorf("reference's cores line has %d subpaths, want 2: %s", n, d)
	}
	if y0 := fmt.Sprintf(",%.1f ", 18.0+116); strings.Contains(d+" ", y0) {
		t.Errorf("reference's cores line drops to 0: %s", d)
	}
}

// TestScenarioWithoutSeriesDrawsNoChart: runs that kept no series are in
// the table, and the chart is not drawn, with the reason given.
func TestScenarioWithoutSeriesDrawsNoChart(t *testing.T) {
	root := t.TempDir()
	scenarioFixture(t, root, false)
	rep, problems := load(t, root, Options{})
	if len(problems) > 0 || len(rep.Scenarios) != 1 {
		t.Fatalf("problems %v, %d scenarios", problems, len(rep.Scenarios))
	}
	var html bytes.Buffer
	if err := rep.WriteHTML(&html); err != nil {
		t.Fatal(err)
	}
	page := html.String()
	for _, want := range []string{
		`<p class="muted scenario-no-chart">No chart: no arm's runs kept a series to draw.</p>`,
		"reference: no run kept a series, so it is not drawn", "vector: no run kept a series, so it is not drawn",
		"<td>10.0k (3 runs)</td>",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the HTML report lacks %s", want)
		}
	}
	if strings.Contains(page, `id="X1-chart"`) || strings.Contains(page, `class="scenario-fault"`) {
		t.Error("a chart was drawn with no series to draw it from")
	}
}

// TestScenarioRendersInChromium: the page with a scenario loads in
// headless Chromium without a console message, its chart with the fault
// shaded and the first row and the rate back marked, and no section or
// history holding a scenario's run.
func TestScenarioRendersInChromium(t *testing.T) {
	testenv.RequireChromium(t)
	root := t.TempDir()
	scenarioFixture(t, root, true)
	rep, problems := load(t, root, Options{})
	if len(problems) > 0 || len(rep.Scenarios) != 1 {
		t.Fatalf("problems %v, %d scenarios", problems, len(rep.Scenarios))
	}
	dir := testenv.Artifacts(t)
	page := filepath.Join(dir, "scenario.html")
	f, err := os.Create(page)
	if err != nil {
		t.Fatal(err)
	}
	if err := rep.WriteHTML(f); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	dom, console := testenv.Chromium(t, "--dump-dom", "file://"+page)
	if len(console) > 0 {
		t.Errorf("the page logged to the console:\n%s", strings.Join(console, "\n"))
	}
	for _, want := range []string{
		"<h2>Failure scenarios</h2>", `id="X1-chart"`, `<rect class="scenario-fault"`, `<line class="scenario-first-row"`,
		`<line class="scenario-rate-back"`, `<line class="scenario-pre-fault"`, "0.85× [0.80×–0.90×]", "not-recovered",
		`id="X1-cores"`, `id="X1-memory"`, `<path class="scenario-cores"`, `<path class="scenario-memory"`,
	} {
		if !strings.Contains(dom, want) {
			t.Errorf("the loaded page lacks %q", want)
		}
	}
	if n := strings.Count(dom, `<polyline class="scenario-rate"`); n != 2 {
		t.Errorf("%d arms' lines in the loaded chart; want 2", n)
	}
	shot := filepath.Join(dir, "scenario.png")
	if _, console := testenv.Chromium(t, "--screenshot="+shot, "--window-size=1200,2400", "--hide-scrollbars", "file://"+page); len(console) > 0 {
		t.Errorf("the page logged to the console while rendering:\n%s", strings.Join(console, "\n"))
	}
	if st, err := os.Stat(shot); err != nil || st.Size() < 10_000 {
		t.Errorf("no screenshot at %s: %v", shot, err)
	}
	t.Logf("report: %s\nscreenshot: %s", page, shot)
}
