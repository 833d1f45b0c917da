package report

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"spatec.dev/spatec/runs/record"
)

// Scenario is a failure scenario as the report reads it: one fault,
// injected mid-drain into one component, and every arm's runs through it
// under one set of conditions (environment digest, harness version,
// dataset and size). Its records were disturbed on purpose, so they are in
// no section and never ranked beside the comparison's.
type Scenario struct {
	ID             string `json:"id"`
	Env            string `json:"env"`
	EnvDigest      string `json:"env_digest"`
	HarnessVersion int    `json:"harness_version"`
	Workload       string `json:"workload,omitempty"`
	DatasetVersion string `json:"dataset_version"`
	Messages       int64  `json:"messages"`
	// Name, Component, Action, PauseS, At and RecoveryS are the scenario
	// as its first run declared it: one environment digest declares it
	// once.
	Name      string  `json:"name"`
	Component string  `json:"component"`
	Action    string  `json:"action"`
	PauseS    int     `json:"pause_s,omitempty"`
	At        float64 `json:"at"`
	RecoveryS int     `json:"recovery_s"`
	// Dedup is what the table does with a repeated insert, as the first
	// run that could read it says (record.Scenario.Dedup).
	Dedup   string `json:"dedup,omitempty"`
	Records int    `json:"records"`
	// Arms are the arms run through it, by label.
	Arms []*ScenarioArm `json:"arms"`

	arms map[string]*ScenarioArm
}

// ScenarioArm is one arm's runs through a scenario: each run's verdict,
// and the medians of their figures beside the arm's undisturbed rate.
type ScenarioArm struct {
	Label   string         `json:"label"`
	Entrant string         `json:"entrant"`
	Variant string         `json:"variant,omitempty"`
	Knobs   map[string]any `json:"knobs,omitempty"`
	// Restart is the data plane's restart policy and Guarantee the
	// delivery guarantee the arm declares, as the first of its records
	// read states them.
	Restart   string         `json:"restart"`
	Guarantee string         `json:"guarantee"`
	Runs      []*ScenarioRun `json:"runs"`
	// The figures are over the runs whose fault was injected: a run the
	// fault never reached says nothing of what the arm did through one.
	// Nil where no such run gave the figure.
	FirstRowS  *ScenarioFigure `json:"first_row_after_fault_s,omitempty"`
	RateBackS  *ScenarioFigure `json:"rate_back_after_fault_s,omitempty"`
	Lost       *ScenarioFigure `json:"lost_rows,omitempty"`
	Duplicates *ScenarioFigure `json:"duplicate_rows,omitempty"`
	// Absorbed is the server's DuplicatedInsertedBlocks over the window:
	// repeats the table's deduplication dropped instead of keeping.
	Absorbed *ScenarioFigure `json:"duplicated_inserted_blocks,omitempty"`
	RowsPerS *ScenarioFigure `json:"rows_per_s,omitempty"`
	Ratio    *ScenarioFigure `json:"ratio_to_undisturbed,omitempty"`
	// Undisturbed is the median rows/s of the arm's ok runs with no
	// scenario and no footprint under the same conditions, over
	// UndisturbedRuns of them; nil when there are none.
	Undisturbed     *float64 `json:"undisturbed_rows_per_s,omitempty"`
	UndisturbedRuns int      `json:"undisturbed_runs"`
	Notes           []string `json:"notes,omitempty"`

	key undisturbedKey
}

// ScenarioRun is one run of a scenario.
type ScenarioRun struct {
	RunID     string        `json:"run_id"`
	Rep       int           `json:"rep"`
	StartedAt time.Time     `json:"started_at"`
	Status    record.Status `json:"status"`
	Verdict   string        `json:"verdict"`
	Held      bool          `json:"held"`
	Injected  bool          `json:"injected"`
	// FaultMS and FaultEndMS bound the fault on the series' clock;
	// PreFaultRowsPerS is the run's rate by the fault (record.Scenario).
	FaultMS          int64   `json:"fault_ms"`
	FaultEndMS       int64   `json:"fault_end_ms"`
	PreFaultRowsPerS float64 `json:"pre_fault_rows_per_s"`
	// The figures, nil where the run did not give them.
	FirstRowS  *float64 `json:"first_row_after_fault_s,omitempty"`
	RateBackS  *float64 `json:"rate_back_after_fault_s,omitempty"`
	Lost       *float64 `json:"lost_rows,omitempty"`
	Duplicates *float64 `json:"duplicate_rows,omitempty"`
	Absorbed   *float64 `json:"duplicated_inserted_blocks,omitempty"`
	RowsPerS   *float64 `json:"rows_per_s,omitempty"`
	Ratio      *float64 `json:"ratio_to_undisturbed,omitempty"`
	Note       string   `json:"note,omitempty"`
	// Restarts counts, by container, the restarts the sampler saw in the
	// run's window (its restarts.<container> metrics): the containers the
	// fault restarted.
	Restarts map[string]int `json:"restarts,omitempty"`

	log    string
	series *record.SeriesRef
}

// ScenarioFigure is one figure over a scenario's runs: the median, and the
// range across the N runs that gave it.
type ScenarioFigure struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	N      int     `json:"n"`
}

// condKey is what makes two runs comparable: the conditions a section is
// keyed by.
type condKey struct {
	env, envDigest    string
	harness           int
	workload, dataset string
	messages          int64
}

type scenarioKey struct {
	cond condKey
	name string
}

// undisturbedKey is an arm under its conditions: the knobs as well as the
// variant's name, as a section tells arms apart.
type undisturbedKey struct {
	cond                    condKey
	entrant, variant, knobs string
}

func condOf(rec *record.Record) condKey {
	return condKey{rec.Run.Env, rec.Run.EnvDigest, rec.Run.HarnessVersion, rec.Run.Dataset.Workload, rec.Run.Dataset.Version, rec.Run.Dataset.Messages}
}

// knobsOf is the knob values in a canonical form: map keys marshal sorted,
// and no knobs read the same whether the record wrote null or {}.
func knobsOf(rec *record.Record) string {
	if len(rec.Variant) == 0 {
		return "{}"
	}
	b, err := json.Marshal(rec.Variant)
	if err != nil {
		return fmt.Sprint(rec.Variant)
	}
	return string(b)
}

func undisturbedKeyOf(rec *record.Record) undisturbedKey {
	return undisturbedKey{condOf(rec), rec.SUT.Entrant, rec.SUT.Variant, knobsOf(rec)}
}

// noteUndisturbed keeps the rate of a run an arm's scenario runs are set
// against: an ok run inside the envelope, undisturbed.
func (b *builder) noteUndisturbed(rec *record.Record) {
	if rec.Status != record.StatusOK {
		return
	}
	if m, ok := rec.Metrics[record.RowsPerS]; ok {
		k := undisturbedKeyOf(rec)
		b.undisturbed[k] = append(b.undisturbed[k], m.Value)
	}
}

// addScenario keeps a scenario's run for its scenario and arm.
func (b *builder) addScenario(path string, rec *record.Record) {
	sc := rec.Scenario
	k := scenarioKey{condOf(rec), sc.Name}
	s := b.scenarios[k]
	if s == nil {
		s = &Scenario{Env: k.cond.env, EnvDigest: k.cond.envDigest, HarnessVersion: k.cond.harness, Workload: k.cond.workload,
			DatasetVersion: k.cond.dataset, Messages: k.cond.messages,
			Name: sc.Name, Component: sc.Component, Action: sc.Action, PauseS: sc.PauseS, At: sc.At, RecoveryS: sc.RecoveryS,
			arms: map[string]*ScenarioArm{}}
		b.scenarios[k] = s
	}
	s.Records++
	if s.Dedup == "" {
		s.Dedup = sc.Dedup
	}
	ak := rec.SUT.Entrant + "\x00" + rec.SUT.Variant + "\x00" + knobsOf(rec)
	a := s.arms[ak]
	if a == nil {
		a = &ScenarioArm{Entrant: rec.SUT.Entrant, Variant: rec.SUT.Variant, Knobs: rec.Variant, Restart: sc.Restart, Guarantee: sc.Guarantee}
		s.arms[ak] = a
	}
	run := &ScenarioRun{RunID: rec.RunID, Rep: rec.Rep, StartedAt: rec.Run.StartedAt, Status: rec.Status,
		Verdict: sc.Verdict, Held: sc.Held, Injected: sc.Injected,
		FaultMS: sc.FaultMS, FaultEndMS: sc.FaultEndMS, PreFaultRowsPerS: sc.PreFaultRowsPerS,
		FirstRowS: msToS(sc.FirstRowMS), RateBackS: msToS(sc.RateBackMS), Note: sc.Note,
		log: path, series: rec.Series}
	// Lost and duplicate rows are differences of ClickHouse's counts: a
	// run that could not count has neither, and its zeros are not figures.
	uncounted := slices.Contains(rec.Flags, record.FlagRowsUncounted)
	if _, ok := rec.Metrics[record.DistinctRows]; ok || !uncounted {
		run.Lost = ptr(float64(sc.Lost))
	}
	if _, ok := rec.Metrics[record.LandedRows]; ok || !uncounted {
		run.Duplicates = ptr(float64(sc.Duplicates))
	}
	if n := sc.DuplicatedInsertedBlocks; n != nil {
		run.Absorbed = ptr(float64(*n))
	}
	if m, ok := rec.Metrics[record.RowsPerS]; ok {
		run.RowsPerS = ptr(m.Value)
	}
	for name, m := range rec.Metrics {
		if c, ok := strings.CutPrefix(name, restartsPrefix); ok && c != "" && m.Value > 0 {
			if run.Restarts == nil {
				run.Restarts = map[string]int{}
			}
			run.Restarts[c] = int(m.Value)
		}
	}
	a.Runs = append(a.Runs, run)
	a.key = undisturbedKeyOf(rec)
}

// restartsPrefix names the metrics counting a container's restarts in the
// window: restarts.<container>.
const restartsPrefix = "restarts."

// finishScenarios sets every scenario run against its arm's undisturbed
// rate and aggregates the runs.
func (b *builder) finishScenarios() {
	for _, s := range b.scenarios {
		for _, a := range s.arms {
			a.finish(b.undisturbed[a.key])
			s.Arms = append(s.Arms, a)
		}
		s.arms = nil
		scenarioLabels(s.Arms)
		slices.SortFunc(s.Arms, func(x, y *ScenarioArm) int { return cmp.Compare(x.Label, y.Label) })
		b.rep.Scenarios = append(b.rep.Scenarios, s)
	}
	slices.SortFunc(b.rep.Scenarios, func(x, y *Scenario) int {
		return cmp.Or(cmp.Compare(x.Env, y.Env), cmp.Compare(x.Name, y.Name), cmp.Compare(x.EnvDigest, y.EnvDigest),
			cmp.Compare(x.HarnessVersion, y.HarnessVersion), cmp.Compare(x.Workload, y.Workload),
			cmp.Compare(x.DatasetVersion, y.DatasetVersion), cmp.Compare(y.Messages, x.Messages))
	})
	for i, s := range b.rep.Scenarios {
		s.ID = fmt.Sprintf("X%d", i+1)
	}
}

func (a *ScenarioArm) finish(undisturbed []float64) {
	slices.SortFunc(a.Runs, func(x, y *ScenarioRun) int {
		return cmp.Or(x.StartedAt.Compare(y.StartedAt), cmp.Compare(x.Rep, y.Rep), cmp.Compare(x.RunID, y.RunID))
	})
	a.UndisturbedRuns = len(undisturbed)
	a.Undisturbed = medianOf(slices.Clone(undisturbed))
	var first, back, lost, dups, absorbed, rate, ratio []float64
	keep := func(out *[]float64, v *float64) {
		if v != nil {
			*out = append(*out, *v)
		}
	}
	for _, r := range a.Runs {
		if !r.Injected {
			a.Notes = append(a.Notes, fmt.Sprintf("rep %d (run %s): the fault was not injected, so its figures are left out: %s",
				r.Rep, r.RunID, cmp.Or(firstLine(r.Note), "the record gives no reason")))
			continue
		}
		if r.RowsPerS != nil && a.Undisturbed != nil && *a.Undisturbed > 0 {
			r.Ratio = ptr(*r.RowsPerS / *a.Undisturbed)
		}
		keep(&first, r.FirstRowS)
		keep(&back, r.RateBackS)
		keep(&lost, r.Lost)
		keep(&dups, r.Duplicates)
		keep(&absorbed, r.Absorbed)
		keep(&rate, r.RowsPerS)
		keep(&ratio, r.Ratio)
		if !r.Held {
			a.Notes = append(a.Notes, fmt.Sprintf("rep %d (run %s): %s, which the declared guarantee (%s) does not allow: %s",
				r.Rep, r.RunID, r.Verdict, orUndeclared(a.Guarantee), cmp.Or(firstLine(r.Note), "the record says no more")))
		}
	}
	a.FirstRowS, a.RateBackS, a.Lost, a.Duplicates, a.Absorbed, a.RowsPerS, a.Ratio =
		figureOf(first), figureOf(back), figureOf(lost), figureOf(dups), figureOf(absorbed), figureOf(rate), figureOf(ratio)
	if a.Undisturbed == nil {
		a.Notes = append(a.Notes, "no undisturbed ok run of the arm under the same environment digest, harness and dataset: no rate to set its runs against")
	}
}

func figureOf(vs []float64) *ScenarioFigure {
	m := medianOf(vs) // sorts vs
	if m == nil {
		return nil
	}
	return &ScenarioFigure{Median: *m, Min: vs[0], Max: vs[len(vs)-1], N: len(vs)}
}

// scenarioLabels names each arm entrant[:variant], as a section does, with
// its knobs where one entrant and variant ran at several settings.
func scenarioLabels(arms []*ScenarioArm) {
	labelled(arms, func(a *ScenarioArm) (string, string) { return a.Entrant, a.Variant },
		func(a *ScenarioArm) string { return " (" + cmp.Or(knobsText(a.Knobs), "no knobs") + ")" },
		func(a *ScenarioArm, label string) { a.Label = label })
}

func msToS(ms *int64) *float64 {
	if ms == nil {
		return nil
	}
	return ptr(float64(*ms) / 1000)
}

func ptr(v float64) *float64 { return &v }

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}

func orUndeclared(s string) string { return cmp.Or(s, "none declared") }

// Title names the scenario and the conditions its runs share.
func (s *Scenario) Title() string {
	return fmt.Sprintf("%s failure scenario %s on %s (env %s, harness %d, workload %s, dataset %s, %s messages; its runs are never ranked)",
		s.ID, s.Name, s.Env, short(s.EnvDigest), s.HarnessVersion, orNone(s.Workload), s.DatasetVersion, human(float64(s.Messages)))
}

// Does says what the scenario does, in words.
func (s *Scenario) Does() string {
	what := map[string]string{"clickhouse": "ClickHouse", "broker": "the broker", "registry": "the schema registry", "data-plane": "the arm's data plane"}[s.Component]
	what = cmp.Or(what, s.Component)
	var act string
	switch {
	case s.Action == "restart":
		act = fmt.Sprintf("restarts %s (stopped and started again at once)", what)
	case s.Action == "kill" && s.Component == "data-plane":
		act = fmt.Sprintf("kills %s with SIGKILL, as a crash would, for the arm's own restart policy to start it again", what)
	case s.Action == "kill":
		act = fmt.Sprintf("kills %s with SIGKILL, as a crash would, and starts it again after %d s", what, s.PauseS)
	case s.Action == "pause":
		act = fmt.Sprintf("pauses %s (the cgroup freezer) for %d s", what, s.PauseS)
	case s.Action == "partition":
		act = fmt.Sprintf("cuts the arm off from %s (every packet between them dropped) for %d s", what, s.PauseS)
	default:
		act = fmt.Sprintf("%s: %s (pause %d s)", s.Action, what, s.PauseS)
	}
	return fmt.Sprintf("once %.0f%% of the expected rows have landed, %s; recovery bound %d s: an arm that lands no row within it of the fault's end has not recovered",
		100*s.At, act, s.RecoveryS)
}

// Declares says what the arm holds itself to through a fault.
func (a *ScenarioArm) Declares() string {
	return fmt.Sprintf("guarantee %s, restart %s", orUndeclared(a.Guarantee), orUndeclared(a.Restart))
}

// absent is what a figure the runs did not give reads as: never 0, which
// would be a figure.
const absent = "—"

// figureText renders a figure as "median [min–max]", the range where runs
// differ, in the figure's kind: s (seconds), rows (a count), rate (rows/s)
// or ratio.
func figureText(f *ScenarioFigure, kind string) string {
	if f == nil {
		return absent
	}
	if f.N == 1 || f.Min == f.Max {
		return figureValue(f.Median, kind)
	}
	return fmt.Sprintf("%s [%s–%s]", figureValue(f.Median, kind), figureValue(f.Min, kind), figureValue(f.Max, kind))
}

func figureValue(v float64, kind string) string {
	switch kind {
	case "s":
		return fmt.Sprintf("%.2f", v)
	case "rows":
		if v == math.Trunc(v) {
			return strconv.FormatFloat(v, 'f', 0, 64)
		}
		return strconv.FormatFloat(v, 'f', 1, 64)
	case "ratio":
		return fmt.Sprintf("%.2f×", v)
	}
	return human(v)
}

// verdictsText lists each run's verdict, in run order.
func verdictsText(a *ScenarioArm) string {
	vs := make([]string, len(a.Runs))
	for i, r := range a.Runs {
		vs[i] = r.Verdict
	}
	return strings.Join(vs, ", ")
}

// heldText says, for each run in run order, whether its verdict is within
// the declared guarantee.
func heldText(a *ScenarioArm) string {
	hs := make([]string, len(a.Runs))
	for i, r := range a.Runs {
		hs[i] = heldOf(r)
	}
	return strings.Join(hs, ", ")
}

// heldOf says whether a run's verdict is within the declared guarantee; a
// run the fault never reached was not put to it.
func heldOf(r *ScenarioRun) string {
	switch {
	case !r.Injected:
		return absent
	case r.Held:
		return "yes"
	}
	return "no"
}

func undisturbedText(a *ScenarioArm) string {
	if a.Undisturbed == nil {
		return absent
	}
	return fmt.Sprintf("%s (%s)", human(*a.Undisturbed), plural(a.UndisturbedRuns, "run"))
}

// scenarioChart draws a scenario: each arm's rows/s over its window from
// one run's series, its fault shaded, the first row after it and the
// moment the rate was back marked with vertical lines, and its pre-fault
// rate dashed. Arms are hit at the same share of their work, not the same
// instant, so each arm's marks are its own. Beside it, Cores and Memory
// draw what the arm's own containers used through the fault, from the same
// run's series, on the same time axis.
type scenarioChart struct {
	ID, Title                  string
	Width, Height              int
	PlotX, PlotY, PlotW, PlotH float64
	XTicks, YTicks             []tick
	Arms                       []scenarioChartArm
	// Cores and Memory are nil where no arm's series gave the quantity.
	Cores, Memory *scenarioResourceChart
	// Restarted names, for each run drawn, the containers restarted in its
	// window; empty when none was.
	Restarted []string
	// Notes say which arms are not drawn, and why.
	Notes []string
}

type scenarioChartArm struct {
	Class, Label, Title string
	Points              string
	// Fault is the shaded band, X to X+W; Fault false when the run's fault
	// was not injected.
	Fault                bool
	FaultX, FaultW       float64
	FaultTitle           string
	FirstRow, RateBack   *float64 // x of the marks; nil where there is none
	PreFault             *float64 // y of the pre-fault rate
	FirstTitle, BackText string
	LegendY              float64
}

// scenarioResourceChart is one quantity of each arm's own containers over
// its window, beside the rows/s chart and on its time axis: the arm's line
// (class Line), broken where one of its containers could not be read, and
// its fault shaded as in the rows/s chart.
type scenarioResourceChart struct {
	ID, Title, Line            string
	Width, Height              int
	PlotX, PlotY, PlotW, PlotH float64
	XTicks, YTicks             []tick
	Arms                       []scenarioResourceArm
}

type scenarioResourceArm struct {
	Class, Title   string
	Fault          bool
	FaultX, FaultW float64
	FaultTitle     string
	// Path is the line, one subpath for each stretch every one of the
	// arm's containers was read through.
	Path string

	segs []curve
}

// scenarioColours is how many arm colours the stylesheet defines.
const scenarioColours = 6

func scenarioChartOf(s *Scenario) scenarioChart {
	c := scenarioChart{ID: s.ID + "-chart", Title: fmt.Sprintf("%s on %s: rows/s over the window", s.Name, s.Env),
		Width: 720, Height: 250, PlotX: 62, PlotY: 10, PlotW: 470, PlotH: 200}
	type drawn struct {
		arm           *ScenarioArm
		run           *ScenarioRun
		curve         curve
		cores, memory []curve
		roles         map[string]string
	}
	var arms []drawn
	xMax, yMax := 0.0, 0.0
	for _, a := range s.Arms {
		i := slices.IndexFunc(a.Runs, func(r *ScenarioRun) bool { return r.series != nil })
		if i < 0 {
			c.Notes = append(c.Notes, fmt.Sprintf("%s: no run kept a series, so it is not drawn", a.Label))
			continue
		}
		r := a.Runs[i]
		ser, err := record.ReadSeries(r.log, r.RunID, *r.series)
		if err != nil {
			c.Notes = append(c.Notes, fmt.Sprintf("%s: the series of rep %d (run %s) is unreadable, so it is not drawn: %v", a.Label, r.Rep, r.RunID, err))
			continue
		}
		if i > 0 {
			c.Notes = append(c.Notes, fmt.Sprintf("%s: drawn from rep %d, the first of its runs that kept a series", a.Label, r.Rep))
		}
		cv := rowsRate(ser.Rows)
		if n := len(ser.Rows.OffsetsMS); n > 0 {
			xMax = max(xMax, float64(ser.Rows.OffsetsMS[n-1])/1000)
		}
		for k := range cv.t {
			xMax, yMax = max(xMax, cv.t[k]), max(yMax, cv.v[k])
		}
		d := drawn{arm: a, run: r, curve: cv, cores: armCores(ser), memory: armMemory(ser), roles: map[string]string{}}
		for _, sc := range ser.Containers {
			d.roles[sc.Name] = sc.Role
		}
		if len(d.cores) == 0 && len(d.memory) == 0 {
			c.Notes = append(c.Notes, fmt.Sprintf("%s: the series of rep %d holds no reading of a data-plane or control-plane container, so its cores and memory are not drawn", a.Label, r.Rep))
		} else if n := len(ser.OffsetsMS); n > 0 {
			xMax = max(xMax, float64(ser.OffsetsMS[n-1])/1000)
		}
		if r.Injected {
			yMax = max(yMax, r.PreFaultRowsPerS)
			xMax = max(xMax, float64(r.FaultEndMS)/1000)
			for _, after := range []*float64{r.FirstRowS, r.RateBackS} {
				if after != nil {
					xMax = max(xMax, float64(r.FaultMS)/1000+*after)
				}
			}
		}
		arms = append(arms, d)
	}
	if len(arms) == 0 {
		return c
	}
	xMax = max(xMax, 1)
	top, step := niceScale(yMax, false)
	x := func(sec float64) float64 { return c.PlotX + sec/xMax*c.PlotW }
	y := func(v float64) float64 { return c.PlotY + c.PlotH - v/top*c.PlotH }
	for v := 0.0; v <= top*1.0000001; v += step {
		c.YTicks = append(c.YTicks, tick{X: y(v), Label: human(v)})
	}
	for k := 0; k <= 4; k++ {
		v := xMax * float64(k) / 4
		c.XTicks = append(c.XTicks, tick{X: x(v), Label: fmt.Sprintf("%.3gs", v)})
	}
	var cores, memory []resourceLine
	for i, d := range arms {
		ca := scenarioChartArm{Class: fmt.Sprintf("s%d", i%scenarioColours), Label: d.arm.Label,
			Title: fmt.Sprintf("%s, rep %d: rows/s over ~1 s", d.arm.Label, d.run.Rep), LegendY: c.PlotY + 16*float64(i)}
		var pts strings.Builder
		for k := range d.curve.t {
			fmt.Fprintf(&pts, "%.1f,%.1f ", x(d.curve.t[k]), y(d.curve.v[k]))
		}
		ca.Points = strings.TrimSpace(pts.String())
		if r := d.run; r.Injected {
			start, end := float64(r.FaultMS)/1000, float64(r.FaultEndMS)/1000
			// A kill is an instant: the band is drawn a hair wide so it shows.
			ca.Fault, ca.FaultX, ca.FaultW = true, x(start), max(x(end)-x(start), 2)
			ca.FaultTitle = fmt.Sprintf("%s: the fault, %.2f s to %.2f s", d.arm.Label, start, end)
			if r.FirstRowS != nil {
				ca.FirstRow = ptr(x(start + *r.FirstRowS))
				ca.FirstTitle = fmt.Sprintf("%s: first row %.2f s after the fault", d.arm.Label, *r.FirstRowS)
			}
			if r.RateBackS != nil {
				ca.RateBack = ptr(x(start + *r.RateBackS))
				ca.BackText = fmt.Sprintf("%s: rate back %.2f s after the fault", d.arm.Label, *r.RateBackS)
			}
			if r.PreFaultRowsPerS > 0 {
				ca.PreFault = ptr(y(r.PreFaultRowsPerS))
			}
		}
		c.Arms = append(c.Arms, ca)
		if len(d.cores) > 0 {
			cores = append(cores, resourceLine{class: ca.Class, label: d.arm.Label, run: d.run, segs: d.cores})
		}
		if len(d.memory) > 0 {
			memory = append(memory, resourceLine{class: ca.Class, label: d.arm.Label, run: d.run, segs: d.memory})
		}
		if len(d.run.Restarts) > 0 {
			c.Restarted = append(c.Restarted, fmt.Sprintf("%s, rep %d: %s", d.arm.Label, d.run.Rep, restartsText(d.run.Restarts, d.roles)))
		}
	}
	c.Cores = resourceChartOf(s.ID+"-cores", "cores", "scenario-cores", "cores", xMax, cores)
	c.Memory = resourceChartOf(s.ID+"-memory", "anon+shmem", "scenario-memory", "bytes", xMax, memory)
	return c
}

// Resources are the resource charts drawn, cores first.
func (c scenarioChart) Resources() []*scenarioResourceChart {
	var out []*scenarioResourceChart
	for _, r := range []*scenarioResourceChart{c.Cores, c.Memory} {
		if r != nil {
			out = append(out, r)
		}
	}
	return out
}

// resourceLine is one arm's line on a resource chart.
type resourceLine struct {
	class, label string
	run          *ScenarioRun
	segs         []curve
}

// resourceChartOf lays out one resource chart on the rows/s chart's time
// axis, 0 to xMax seconds; nil when no arm has a line on it.
func resourceChartOf(id, title, line, unit string, xMax float64, lines []resourceLine) *scenarioResourceChart {
	if len(lines) == 0 {
		return nil
	}
	c := &scenarioResourceChart{ID: id, Title: title, Line: line, Width: 380, Height: 160, PlotX: 62, PlotY: 18, PlotW: 300, PlotH: 116}
	yMax := 0.0
	for _, l := range lines {
		for _, sg := range l.segs {
			for _, v := range sg.v {
				yMax = max(yMax, v)
			}
		}
	}
	top, step := niceScale(yMax, unit == "bytes")
	x := func(sec float64) float64 { return c.PlotX + sec/xMax*c.PlotW }
	y := func(v float64) float64 { return c.PlotY + c.PlotH - v/top*c.PlotH }
	for v := 0.0; v <= top*1.0000001; v += step {
		c.YTicks = append(c.YTicks, tick{X: y(v), Label: unitText(v, unit)})
	}
	for k := 0; k <= 4; k++ {
		v := xMax * float64(k) / 4
		c.XTicks = append(c.XTicks, tick{X: x(v), Label: fmt.Sprintf("%.3gs", v)})
	}
	what := map[string]string{"cores": "cores over ~1 s", "bytes": "anon+shmem at each reading"}[unit]
	for _, l := range lines {
		a := scenarioResourceArm{Class: l.class, Title: fmt.Sprintf("%s, rep %d: %s", l.label, l.run.Rep, what), segs: l.segs}
		if gaps := gapsText(l.segs); gaps != "" {
			a.Title += "; not read " + gaps
		}
		if r := l.run; r.Injected {
			start, end := float64(r.FaultMS)/1000, float64(r.FaultEndMS)/1000
			a.Fault, a.FaultX, a.FaultW = true, x(start), max(x(end)-x(start), 2)
			a.FaultTitle = fmt.Sprintf("%s: the fault, %.2f s to %.2f s", l.label, start, end)
		}
		var b strings.Builder
		for _, sg := range l.segs {
			for k := range sg.t {
				cmd := "L"
				if k == 0 {
					cmd = "M"
				}
				fmt.Fprintf(&b, "%s%.1f,%.1f ", cmd, x(sg.t[k]), y(sg.v[k]))
			}
			if len(sg.t) == 1 {
				b.WriteString("h1 ") // a lone reading between failed ones, drawn as a dot
			}
		}
		a.Path = strings.TrimSpace(b.String())
		c.Arms = append(c.Arms, a)
	}
	return c
}

// gapsText lists the spans between a line's stretches, where one of the
// arm's containers could not be read.
func gapsText(segs []curve) string {
	var gaps []string
	for k := 1; k < len(segs); k++ {
		prev := segs[k-1]
		gaps = append(gaps, fmt.Sprintf("%.1f s to %.1f s", prev.t[len(prev.t)-1], segs[k].t[0]))
	}
	return strings.Join(gaps, ", ")
}

// restartsText names the containers restarted in a run's window, with
// their roles where the series gives them, in name order.
func restartsText(restarts map[string]int, roles map[string]string) string {
	names := slices.Sorted(maps.Keys(restarts))
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = n
		if role := roles[n]; role != "" {
			out[i] += " (" + role + ")"
		}
		switch k := restarts[n]; k {
		case 1:
			out[i] += " once"
		case 2:
			out[i] += " twice"
		default:
			out[i] += fmt.Sprintf(" %d times", k)
		}
	}
	return strings.Join(out, ", ")
}

// armContainer says whether a container is the arm's own: its data plane
// or control plane. Infra (the broker, ClickHouse, the registry) is the
// environment's, shared by every arm, and never counted as the arm's.
func armContainer(c record.SeriesContainer) bool {
	return c.Role == "data-plane" || c.Role == "control-plane"
}

// readableRuns splits the sampler's readings into the stretches over which
// read(c, i) holds for every one of the arm's containers at every reading:
// [from, to] index pairs, in order. A series with none of the arm's
// containers has none.
func readableRuns(s *record.Series, read func(c record.SeriesContainer, i int) bool) [][2]int {
	var own []record.SeriesContainer
	for _, c := range s.Containers {
		if armContainer(c) {
			own = append(own, c)
		}
	}
	if len(own) == 0 {
		return nil
	}
	var out [][2]int
	from := -1
	for i := range s.OffsetsMS {
		ok := true
		for _, c := range own {
			if !read(c, i) {
				ok = false
				break
			}
		}
		switch {
		case ok && from < 0:
			from = i
		case !ok && from >= 0:
			out = append(out, [2]int{from, i - 1})
			from = -1
		}
	}
	if from >= 0 {
		out = append(out, [2]int{from, len(s.OffsetsMS) - 1})
	}
	return out
}

// armCores is the cores the arm's own containers (data plane and control
// plane; never infra) used over the window: their CPU time summed over
// buckets of about a second (longer on a long window, as rowsRate's), each
// drawn as a step across its span. A counter lower than at the reading
// before is a new life of its container, started again from 0 (a fault
// restarted it): the growth across the drop is the new value itself, never
// a negative one. Where a reading of any of the arm's containers failed,
// the line breaks: the span from the last reading of them all to the next
// is a gap, not a bucket and never a 0, and each stretch between gaps is
// bucketed on its own. The sampler's clock is taken as the window's: its
// first reading is within a few milliseconds of the window's opening.
func armCores(s *record.Series) []curve {
	n := len(s.OffsetsMS)
	if n < 2 {
		return nil
	}
	width := max(int64(1000), (s.OffsetsMS[n-1]-s.OffsetsMS[0])/400)
	var out []curve
	for _, run := range readableRuns(s, func(c record.SeriesContainer, i int) bool { return c.CPUUsageNs[i] >= 0 }) {
		var cv curve
		from := run[0]
		for i := from + 1; i <= run[1]; i++ {
			dt := s.OffsetsMS[i] - s.OffsetsMS[from]
			if dt < width && i < run[1] {
				continue
			}
			if dt > 0 {
				ns := int64(0)
				for _, c := range s.Containers {
					if !armContainer(c) {
						continue
					}
					for j := from + 1; j <= i; j++ {
						ns += cpuGrowth(c.CPUUsageNs[j-1], c.CPUUsageNs[j])
					}
				}
				v := float64(ns) / 1e9 / (float64(dt) / 1000)
				cv.t = append(cv.t, float64(s.OffsetsMS[from])/1000, float64(s.OffsetsMS[i])/1000)
				cv.v = append(cv.v, v, v)
			}
			from = i
		}
		if len(cv.t) > 0 {
			out = append(out, cv)
		}
	}
	return out
}

// cpuGrowth is the CPU time a container used between two successful
// readings of its cumulative counter: after a drop, the counter is a new
// life's, which started from 0, so the growth is its value.
func cpuGrowth(before, after int64) int64 {
	if after < before {
		return after
	}
	return after - before
}

// armMemory is the anon+shmem of the arm's own containers (data plane and
// control plane; never infra) at each reading, summed; the line breaks
// where a reading of any of them failed. A long window is thinned to a few
// hundred points a stretch, each stretch's ends kept.
func armMemory(s *record.Series) []curve {
	var out []curve
	for _, run := range readableRuns(s, func(c record.SeriesContainer, i int) bool { return c.AnonShmemBytes[i] >= 0 }) {
		stride := max(1, len(s.OffsetsMS)/400)
		var cv curve
		for i := run[0]; i <= run[1]; i++ {
			if (i-run[0])%stride != 0 && i != run[1] {
				continue
			}
			sum := 0.0
			for _, c := range s.Containers {
				if armContainer(c) {
					sum += float64(c.AnonShmemBytes[i])
				}
			}
			cv.t = append(cv.t, float64(s.OffsetsMS[i])/1000)
			cv.v = append(cv.v, sum)
		}
		out = append(out, cv)
	}
	return out
}

// rowsRate turns the rows landed at each poll into rows/s over buckets of
// about a second (longer on a long drain, so a line keeps a few hundred
// points), each drawn as a step across its span: a stall shows as a drop
// to 0, and a gap without polls (a server frozen or down) as one flat
// step over the whole gap, not a slope that invents a rate inside it.
func rowsRate(rows record.SeriesRows) curve {
	var c curve
	n := len(rows.OffsetsMS)
	if n < 2 {
		return c
	}
	width := max(int64(1000), (rows.OffsetsMS[n-1]-rows.OffsetsMS[0])/400)
	from := 0
	for i := 1; i < n; i++ {
		dt := rows.OffsetsMS[i] - rows.OffsetsMS[from]
		if dt < width && i < n-1 {
			continue
		}
		if dt > 0 {
			v := float64(rows.Landed[i]-rows.Landed[from]) / float64(dt) * 1000
			c.t = append(c.t, float64(rows.OffsetsMS[from])/1000, float64(rows.OffsetsMS[i])/1000)
			c.v = append(c.v, v, v)
		}
		from = i
	}
	return c
}
