// Package report turns result records into a comparison a reader can trust:
// repetitions aggregated with their spread, ratios against a baseline, ties
// called ties, memory and CPU beside throughput, and every record accounted
// for.
//
// Records are grouped by comparability first. Records that differ in
// environment, environment digest, harness version or dataset version are
// never merged: each combination becomes its own Section, and sections of one
// environment say that they are not comparable with each other. Within a
// section, records are grouped per arm (entrant, variant and knob values).
//
// Another tool's runs (the reference harness's schema 2) join the history,
// and a joint section (joint.go) ranks them with a section's runs where the
// workload, the dataset and every fact both state of the environment agree,
// by the one rate both tools define.
//
// Runs that left the envelope on purpose (a footprint study's points,
// footprint.go) or were disturbed on purpose (a failure scenario's runs,
// scenario.go) are read into studies of their own, never into a section,
// the history or a ranking.
//
// A record that cannot be used (corrupt, truncated, an unknown schema version,
// another environment than asked for) is returned as a Problem naming its file
// and line; the rest of the input is still read. Nothing is dropped silently.
package report

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"spatec.dev/spatec/runs/interop"
	"spatec.dev/spatec/runs/record"
)

// The derived efficiency figures. RowsPerSPerCore is each measured run's
// rows/s divided by the cores the whole arm used (data plane and control
// plane), the stricter of the two C8 readings: rows per core-second.
// RowsPerSPerDataPlaneCore divides by the data plane's alone.
// PeakBytesPerRowInFlight is the arm's anon+shmem peak over the rows its
// configuration lets it hold at once.
const (
	RowsPerSPerCore          = "rows_per_s_per_core"
	RowsPerSPerDataPlaneCore = "rows_per_s_per_data_plane_core"
	PeakBytesPerRowInFlight  = "peak_bytes_per_row_in_flight"
	// CoreMicrosPerRow is what a row costs the arm: cores used × window ÷
	// distinct rows, in core-microseconds.
	CoreMicrosPerRow = "core_us_per_row"
)

// A section of spatec's runs ranks its arms by spatec's throughput alone;
// the reference harness's rate is shown beside it and not ranked there, so
// no ranking mixes the two windows. A joint section ranks by the
// harness's rate alone, which both tools' records define.
const (
	// RankedBy is the metric arms are ranked, tied and compared with the
	// baseline by.
	RankedBy = record.RowsPerS
	// ShownBeside is the other rate, shown beside RankedBy, not ranked in a
	// section of spatec's runs.
	ShownBeside = record.HarnessRowsPerS
)

// Ranking says, for a reader, which rate a report ranks by and which it
// shows beside it, and what each one divides.
const Ranking = "ranked by rows_per_s, spatec's rate: the N distinct rows over spatec's window, " +
	"from when it began to watch the table (the arm's caps verified; on Kubernetes, its first container's start) " +
	"to the poll that saw N distinct rows. harness_rows_per_s, spatec's approximation of the reference harness's rate, " +
	"is shown beside it and not ranked (a joint section with the reference harness's runs ranks by it alone): " +
	"the rows count() gave at the first poll that reached N, " +
	"over the window from the arm's last container start to that poll; " +
	"the harness's own window, its 1 Hz sampler's, is whole seconds and within about a second of it"

// Options selects and frames what a report shows.
type Options struct {
	// Env restricts the report to one environment. Directories of other
	// environments are not read (and are listed in Report.SkippedFiles);
	// a record of another environment inside a file that is read is a
	// Problem.
	Env string
	// Baseline names the arm ratios are taken against: "entrant" (when the
	// entrant has one arm in a section) or "entrant:variant". Empty means
	// the leader: the ok arm with the highest median rows/s.
	Baseline string
	// Knee is the fraction of a study's best throughput within which its
	// cheapest point is recommended; 0 means DefaultKnee.
	Knee float64
	// Foreign reads a results file of another tool's, when it is one: its
	// runs join the history table, and are ranked beside spatec's runs
	// only in a joint section, where the workload, the dataset and every
	// fact both sides state of the environment agree (their Facts).
	Foreign func(path string) (runs []HistoryRun, problems []record.Problem, handled bool)
	// SpatecFacts gives the facts of the environment a spatec record was
	// measured in, to set them beside another tool's runs' Facts; nil reads
	// them from the record alone (interop.SpatecFacts without its
	// environment), which does not state the partitions, so nothing is
	// ranked jointly.
	SpatecFacts func(rec *record.Record) interop.Facts
}

// Report is the aggregated view of a set of result files.
type Report struct {
	// RankedBy names the metric the arms of spatec's sections are ranked
	// by (spatec's rows_per_s), ShownBeside the rate shown beside it and
	// not ranked there (the reference harness's, which joint sections rank
	// by), and Ranking says what each divides.
	RankedBy    string `json:"ranked_by"`
	ShownBeside string `json:"shown_beside"`
	Ranking     string `json:"ranking"`
	Files       int    `json:"files"`
	// Records counts the records aggregated; Rejected counts the lines
	// that could not be used, each of which is in Problems.
	Records           int              `json:"records"`
	Rejected          int              `json:"rejected"`
	Env               string           `json:"env,omitempty"`
	BaselineRequested string           `json:"baseline_requested,omitempty"`
	Sections          []*Section       `json:"sections"`
	SkippedFiles      []string         `json:"skipped_files,omitempty"`
	Problems          []record.Problem `json:"problems"`
	// History is every arm over its sittings, this tool's records and
	// any read from another's; ForeignRuns counts the latter.
	History     []*History `json:"history,omitempty"`
	ForeignRuns int        `json:"foreign_runs,omitempty"`
	// Joint holds the sections that rank a section's runs together with
	// another tool's runs of the same workload, dataset and environment
	// (JointRanking says how); HarnessUnmatched lists the other tool's
	// runs no section of spatec's shares a workload, dataset and size
	// with, which are in the history alone.
	Joint []*Section `json:"joint,omitempty"`
	// Footprints are the footprint studies read: each arm's data-plane cap
	// tightened until it degrades. Their runs are in no section: they left
	// the envelope on purpose and are never ranked.
	Footprints []*Footprint `json:"footprints,omitempty"`
	// Scenarios are the failure scenarios read: each arm's runs through a
	// fault injected mid-drain, beside its undisturbed rate. Their runs
	// are in no section: they were disturbed on purpose and are never
	// ranked.
	Scenarios        []*Scenario `json:"scenarios,omitempty"`
	JointRanking     string      `json:"joint_ranking,omitempty"`
	HarnessUnmatched []string    `json:"harness_unmatched,omitempty"`
	// Published is another tool's published figures of the environment,
	// beside spatec's plans there (SetPublished); nil when none is set.
	Published *Published `json:"published,omitempty"`

	history historyAcc
	foreign []HistoryRun
}

// Section holds the arms of one comparability class: one environment at one
// environment digest, harness version, workload and dataset version.
type Section struct {
	ID             string `json:"id"`
	Env            string `json:"env"`
	EnvDigest      string `json:"env_digest"`
	HarnessVersion int    `json:"harness_version"`
	// Workload names the workload the arms ran; two workloads are never
	// ranked together.
	Workload       string `json:"workload,omitempty"`
	DatasetVersion string `json:"dataset_version"`
	// Messages is how many of the dataset's messages the runs drained: a
	// rate over fewer rows carries more of the start-up, so sizes are
	// never ranked together (a study's scale check sets them side by side).
	Messages int64 `json:"messages"`
	Records  int   `json:"records"`
	// FirstRun and LastRun bound the runs' start times.
	FirstRun time.Time `json:"first_run"`
	LastRun  time.Time `json:"last_run"`
	// Baseline is the label of the arm ratios are taken against, empty
	// when no arm has a throughput; BaselineWhy says how it was chosen.
	Baseline    string `json:"baseline,omitempty"`
	BaselineWhy string `json:"baseline_why,omitempty"`
	Arms        []*Arm `json:"arms"`
	// NotComparable names the other sections of the same environment and
	// what differs, so no reader compares across them.
	NotComparable []string `json:"not_comparable,omitempty"`
	// Overlaps says, for each other section of the same environment,
	// whether an arm measured in both agrees within its spread: only such
	// a point lets a reader set the two side by side.
	Overlaps []string `json:"overlaps,omitempty"`
	// Studies are the sweeps among the arms.
	Studies []*Study `json:"studies,omitempty"`
	// RankedBy is the rate the section ranks by: spatec's rows_per_s, or
	// harness_rows_per_s in a joint section.
	RankedBy string `json:"ranked_by"`
	// Joint, in a joint section, says which runs it ranks together and on
	// which facts their environments agree.
	Joint *Joint `json:"joint,omitempty"`
	// HarnessApart names, in a section of spatec's runs, the other tool's
	// runs of the same workload, dataset and size that are not ranked
	// with it, and the facts of the environment that differ.
	HarnessApart []string `json:"harness_apart,omitempty"`

	arms map[armKey]*Arm
	// first is the section's first record, whose facts are the section's;
	// varies says how a later record's infrastructure differed from it.
	first  *record.Record
	varies string
}

// rankedBy is the rate the section ranks by.
func (s *Section) rankedBy() string { return cmp.Or(s.RankedBy, RankedBy) }

// Arm is one entrant at one variant and knob setting, across repetitions.
type Arm struct {
	Label string `json:"label"`
	// Source is the tool whose runs the arm's are, in a joint section.
	Source  string         `json:"source,omitempty"`
	Entrant string         `json:"entrant"`
	Variant string         `json:"variant,omitempty"`
	Knobs   map[string]any `json:"knobs,omitempty"`
	// Study names the study the arm is a point of.
	Study string `json:"study,omitempty"`
	// Messages is the dataset's size in the arm's runs: a study's scale
	// check runs one point at several.
	Messages int64 `json:"messages,omitempty"`
	// Evidence counts the runs by evidence: measured (a plan reviewed
	// before it ran) or exploratory.
	Evidence map[string]int `json:"evidence,omitempty"`
	// Timelines names the series files of the arm's last measured runs,
	// read only when a chart over time is drawn.
	Timelines []Timeline `json:"-"`
	Runs      int        `json:"runs"`
	// Measured counts the runs whose metrics were aggregated (ok and
	// infra_bound); failed and refused runs count in Runs only.
	Measured int `json:"measured"`
	// Status is the worst status across the repetitions.
	Status       record.Status         `json:"status"`
	StatusCounts map[record.Status]int `json:"status_counts"`
	// Flags counts, per flag, the runs that carried it.
	Flags  map[string]int `json:"flags,omitempty"`
	RunIDs []string       `json:"run_ids"`
	// Resolution is the coarsest relative resolution across the measured
	// runs (sampler period over window): differences below it are noise.
	Resolution float64          `json:"resolution"`
	Metrics    map[string]*Stat `json:"metrics"`
	// Rank is the position by median rows/s (RankedBy; 1 is fastest),
	// shared by arms that are tied with each other; 0 when the arm has no
	// throughput. Ratio is median rows/s over the baseline's.
	Rank     int      `json:"rank,omitempty"`
	Tied     bool     `json:"tied,omitempty"`
	TiedWith []string `json:"tied_with,omitempty"`
	Ratio    float64  `json:"ratio_to_baseline,omitempty"`
	// VsBaseline is the comparison in words: "baseline", "tied", "1.34×".
	VsBaseline string   `json:"vs_baseline,omitempty"`
	Notes      []string `json:"notes,omitempty"`

	series map[string]*series
	// why holds, in order of first appearance, the distinct notes of the
	// runs that were not measured, with how many runs gave each.
	why      []string
	whyCount map[string]int
}

// Stat aggregates one metric over an arm's measured runs.
type Stat struct {
	Unit           string  `json:"unit"`
	HigherIsBetter bool    `json:"higher_is_better"`
	N              int     `json:"n"`
	Median         float64 `json:"median"`
	Min            float64 `json:"min"`
	Max            float64 `json:"max"`
	// Spread is (max − min) / median: the run-to-run variation relative
	// to the figure reported.
	Spread float64 `json:"spread"`
}

type sectionKey struct {
	env, envDigest string
	harness        int
	workload       string
	dataset        string
	messages       int64
}

type armKey struct {
	entrant, variant, knobs string
	messages                int64
}

// Load reads the result files at paths (files, or directories walked for
// *.jsonl) and aggregates them. Every record that cannot be used comes back
// as a Problem with its file and line; reading continues past it. The error
// is for a path that cannot be read at all.
func Load(paths []string, opts Options) (*Report, []record.Problem, error) {
	rep := &Report{RankedBy: RankedBy, ShownBeside: ShownBeside, Ranking: Ranking, Env: opts.Env, BaselineRequested: opts.Baseline}
	files, err := expand(paths, opts.Env, rep)
	if err != nil {
		return nil, nil, err
	}
	b := builder{rep: rep, sections: map[sectionKey]*Section{}, footprints: map[footprintKey]*Footprint{},
		scenarios: map[scenarioKey]*Scenario{}, undisturbed: map[undisturbedKey][]float64{}, knee: opts.Knee, facts: opts.SpatecFacts}
	for _, path := range files {
		rep.Files++
		if opts.Foreign != nil {
			if runs, probs, ok := opts.Foreign(path); ok {
				for _, h := range runs {
					rep.history.add(h)
				}
				rep.foreign = append(rep.foreign, runs...)
				rep.ForeignRuns += len(runs)
				rep.Problems = append(rep.Problems, probs...)
				continue
			}
		}
		scan := record.ScanOptions{Env: opts.Env}
		if env, entrant, ok := record.Layout(path); ok {
			if scan.Env == "" {
				scan.Env = env
			}
			scan.Entrant = entrant
		}
		probs := record.ScanFile(path, scan, func(line int, rec *record.Record) {
			b.add(path, line, rec)
		})
		rep.Problems = append(rep.Problems, probs...)
		rep.Rejected += len(probs)
	}
	b.finish(opts.Baseline)
	return rep, rep.Problems, nil
}

// expand turns the paths into the sorted list of files to read. With an
// environment selected, directories laid out for other environments are
// skipped, and listed as skipped rather than read and rejected line by line.
func expand(paths []string, env string, rep *Report) ([]string, error) {
	if len(paths) == 0 {
		return nil, errors.New("no result files or directories given; pass results/ or a results/<env>/<entrant>/<YYYY-MM>.jsonl file")
	}
	var files []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("reading results: %w", err)
		}
		if !st.IsDir() {
			files = append(files, p)
			continue
		}
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return fmt.Errorf("walking %s: %w", path, err)
			}
			if d.IsDir() || !strings.HasSuffix(d.Name(), ".jsonl") {
				return nil
			}
			if fileEnv, _, ok := record.Layout(path); ok && env != "" && fileEnv != env {
				rep.SkippedFiles = append(rep.SkippedFiles, path)
				return nil
			}
			files = append(files, path)
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("reading results: %w", err)
		}
	}
	slices.Sort(files)
	return slices.Compact(files), nil
}

type builder struct {
	rep        *Report
	sections   map[sectionKey]*Section
	footprints map[footprintKey]*Footprint
	scenarios  map[scenarioKey]*Scenario
	// undisturbed holds the rows/s of every ok run inside the envelope
	// with no fault, by arm and conditions: what a scenario's runs are set
	// against.
	undisturbed map[undisturbedKey][]float64
	knee        float64
	facts       func(*record.Record) interop.Facts
}

func (b *builder) add(path string, line int, rec *record.Record) {
	b.rep.Records++
	if rec.SUT.Footprint != nil {
		// A footprint point left the envelope on purpose: it belongs to
		// its study, never to a section or an arm's history.
		b.addFootprint(rec)
		return
	}
	if rec.Scenario != nil {
		// A scenario's run was disturbed on purpose: its rate says what a
		// fault cost, not what the arm does, so it is kept from every
		// section, history and ranking, as a footprint point is.
		b.addScenario(path, rec)
		return
	}
	b.noteUndisturbed(rec)
	b.rep.history.addRecord(rec)
	sk := sectionKey{rec.Run.Env, rec.Run.EnvDigest, rec.Run.HarnessVersion, rec.Run.Dataset.Workload, rec.Run.Dataset.Version, rec.Run.Dataset.Messages}
	sec := b.sections[sk]
	if sec == nil {
		sec = &Section{
			Env: sk.env, EnvDigest: sk.envDigest, HarnessVersion: sk.harness, Workload: sk.workload, DatasetVersion: sk.dataset, Messages: sk.messages,
			RankedBy: RankedBy, arms: map[armKey]*Arm{}, first: rec,
		}
		b.sections[sk] = sec
	} else if sec.varies == "" {
		sec.varies = infraDiffers(sec.first, rec)
	}
	sec.Records++
	if t := rec.Run.StartedAt; !t.IsZero() {
		if sec.FirstRun.IsZero() || t.Before(sec.FirstRun) {
			sec.FirstRun = t
		}
		if t.After(sec.LastRun) {
			sec.LastRun = t
		}
	}

	knobs, err := json.Marshal(rec.Variant) // map keys marshal sorted: a canonical form
	if err != nil {
		knobs = []byte(fmt.Sprint(rec.Variant))
	}
	ak := armKey{rec.SUT.Entrant, rec.SUT.Variant, string(knobs), rec.Run.Dataset.Messages}
	arm := sec.arms[ak]
	if arm == nil {
		arm = &Arm{
			Entrant: ak.entrant, Variant: ak.variant, Knobs: rec.Variant, Study: rec.SUT.Study, Evidence: map[string]int{},
			Messages: ak.messages,
			Status:   record.StatusOK, StatusCounts: map[record.Status]int{},
			Metrics: map[string]*Stat{}, series: map[string]*series{},
		}
		sec.arms[ak] = arm
	}
	arm.Runs++
	arm.StatusCounts[rec.Status]++
	arm.Evidence[cmp.Or(rec.Run.Evidence, record.EvidenceExploratory)]++
	if rec.Status.Severity() > arm.Status.Severity() {
		arm.Status = rec.Status
	}
	for _, f := range rec.Flags {
		if arm.Flags == nil {
			arm.Flags = map[string]int{}
		}
		arm.Flags[f]++
	}
	arm.RunIDs = append(arm.RunIDs, rec.RunID)
	if !rec.Status.CarriesMeasurement() {
		arm.explain(rec)
		return
	}
	arm.Measured++
	arm.Resolution = max(arm.Resolution, rec.Run.Window.Resolution())
	if rec.Series != nil {
		arm.Timelines = append(arm.Timelines, Timeline{Log: path, RunID: rec.RunID, Rep: rec.Rep, Ref: *rec.Series})
		if len(arm.Timelines) > maxTimelines {
			arm.Timelines = arm.Timelines[1:]
		}
	}
	for name, m := range rec.Metrics {
		b.value(arm, path, line, rec.RunID, name, m)
	}
	if rows, ok := rec.Metrics[record.RowsPerS]; ok {
		if cores, ok := rec.Metrics[record.CoresUsed]; ok && cores.Value > 0 {
			b.value(arm, path, line, rec.RunID, RowsPerSPerCore,
				record.Metric{Value: rows.Value / cores.Value, Unit: perCore(rows.Unit), HigherIsBetter: true})
		}
		if cores, ok := rec.Metrics[record.DataPlaneCoresUsed]; ok && cores.Value > 0 {
			b.value(arm, path, line, rec.RunID, RowsPerSPerDataPlaneCore,
				record.Metric{Value: rows.Value / cores.Value, Unit: perCore(rows.Unit), HigherIsBetter: true})
		}
	}
	if c, ok := rec.Metrics[record.CoresUsed]; ok {
		w, okW := rec.Metrics[record.WindowSeconds]
		n, okN := rec.Metrics[record.DistinctRows]
		if okW && okN && n.Value > 0 {
			b.value(arm, path, line, rec.RunID, CoreMicrosPerRow, record.Metric{Value: c.Value * w.Value / n.Value * 1e6, Unit: "core-µs/row"})
		}
	}
	if peak, ok := rec.Metrics[record.PeakAnonBytes]; ok {
		if n, ok := rec.Metrics[record.RowsInFlight]; ok && n.Value > 0 {
			b.value(arm, path, line, rec.RunID, PeakBytesPerRowInFlight,
				record.Metric{Value: peak.Value / n.Value, Unit: "bytes"})
		}
	}
}

// value adds one run's reading of a metric to its arm, refusing (as a
// Problem) one whose unit or direction disagrees with the arm's earlier runs:
// a median across units would be meaningless.
func (b *builder) value(arm *Arm, path string, line int, runID, name string, m record.Metric) {
	sr := arm.series[name]
	if sr == nil {
		sr = &series{first: m}
		arm.series[name] = sr
	} else if sr.first.Unit != m.Unit || sr.first.HigherIsBetter != m.HigherIsBetter {
		b.rep.Problems = append(b.rep.Problems, record.Problem{File: path, Line: line, Message: fmt.Sprintf(
			"run %s: metric %s is in %q (higher_is_better=%v) but earlier runs of the same arm used %q (higher_is_better=%v); left out of the aggregate",
			runID, name, m.Unit, m.HigherIsBetter, sr.first.Unit, sr.first.HigherIsBetter)})
		return
	}
	sr.values = append(sr.values, m.Value)
}

// series collects one metric's readings across an arm's measured runs.
type series struct {
	first  record.Metric // unit and direction every later reading must share
	values []float64
}

// perCore names the unit of a rate per core, without allocating for the
// usual rows/s.
func perCore(unit string) string {
	if unit == "rows/s" {
		return "rows/s/core"
	}
	return unit + "/core"
}

func (b *builder) finish(baseline string) {
	for _, sec := range b.sections {
		for _, arm := range sec.arms {
			arm.aggregate()
			sec.Arms = append(sec.Arms, arm)
		}
		sec.arms = nil
		labelArms(sec.Arms)
		rank(sec, baseline)
		b.rep.Sections = append(b.rep.Sections, sec)
	}
	slices.SortFunc(b.rep.Sections, func(a, b *Section) int {
		return cmp.Or(
			cmp.Compare(a.Env, b.Env),
			b.LastRun.Compare(a.LastRun), // newest first within an environment
			cmp.Compare(a.EnvDigest, b.EnvDigest),
			cmp.Compare(a.HarnessVersion, b.HarnessVersion),
			cmp.Compare(a.Workload, b.Workload),
			cmp.Compare(a.DatasetVersion, b.DatasetVersion),
			cmp.Compare(b.Messages, a.Messages), // the whole dataset before a part of it
		)
	})
	for i, sec := range b.rep.Sections {
		sec.ID = fmt.Sprintf("S%d", i+1)
	}
	b.rep.History = b.rep.history.histories()
	for _, sec := range b.rep.Sections {
		var sizes []*Section // the same conditions at other dataset sizes
		for _, other := range b.rep.Sections {
			if other == sec || other.Env != sec.Env {
				continue
			}
			sec.NotComparable = append(sec.NotComparable, fmt.Sprintf("not comparable with %s: %s", other.ID, differences(sec, other)))
			if sameConditions(sec, other) {
				sizes = append(sizes, other)
				continue
			}
			sec.Overlaps = append(sec.Overlaps, overlap(sec, other))
		}
		sec.Studies = studies(sec, sizes, b.knee)
	}
	b.joint(baseline)
	b.finishFootprints()
	b.finishScenarios()
	slices.SortStableFunc(b.rep.Problems, func(a, b record.Problem) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line))
	})
}

// sameConditions reports whether two sections differ only in how many of
// the dataset's messages their runs drained.
func sameConditions(a, b *Section) bool {
	return a.EnvDigest == b.EnvDigest && a.HarnessVersion == b.HarnessVersion && a.Workload == b.Workload && a.DatasetVersion == b.DatasetVersion
}

func differences(a, b *Section) string {
	var d []string
	if a.Messages != b.Messages {
		d = append(d, fmt.Sprintf("the first %d messages of the dataset vs %d (a scale check: sizes are set side by side by cost per row, never ranked together)", a.Messages, b.Messages))
	}
	if a.EnvDigest != b.EnvDigest {
		d = append(d, fmt.Sprintf("environment digest %s vs %s", short(a.EnvDigest), short(b.EnvDigest)))
	}
	if a.HarnessVersion != b.HarnessVersion {
		d = append(d, fmt.Sprintf("harness version %d vs %d", a.HarnessVersion, b.HarnessVersion))
	}
	if a.Workload != b.Workload {
		d = append(d, fmt.Sprintf("workload %s vs %s", orNone(a.Workload), orNone(b.Workload)))
	}
	if a.DatasetVersion != b.DatasetVersion {
		d = append(d, fmt.Sprintf("dataset %s vs %s", a.DatasetVersion, b.DatasetVersion))
	}
	return strings.Join(d, ", ")
}

// short abbreviates a digest for display, keeping the algorithm.
func short(digest string) string {
	alg, hexPart, found := strings.Cut(digest, ":")
	if !found {
		alg, hexPart = "", digest
	}
	if len(hexPart) > 12 {
		hexPart = hexPart[:12]
	}
	if alg == "" {
		return hexPart
	}
	return alg + ":" + hexPart
}

// maxReasons bounds how many distinct failure notes an arm lists; the
// records keep all of them.
const maxReasons = 5

// explain keeps what a run that was not measured says about why.
func (a *Arm) explain(rec *record.Record) {
	lines := strings.Split(strings.TrimSpace(rec.Note), "\n")
	note := lines[0]
	// A note that quotes a container's log says why in the log's last
	// line (the note's own last line says what landed).
	if strings.HasSuffix(note, "log ends:") {
		for i := len(lines) - 2; i > 0; i-- {
			if l := strings.TrimSpace(lines[i]); l != "" {
				note += " … " + l
				break
			}
		}
	}
	if note == "" {
		note = "the record gives no reason"
	}
	key := fmt.Sprintf("%s: %s", rec.Status, shorten(note, 400))
	if a.whyCount == nil {
		a.whyCount = map[string]int{}
	}
	if a.whyCount[key] == 0 {
		a.why = append(a.why, key)
	}
	a.whyCount[key]++
}

func (a *Arm) aggregate() {
	dups := 0
	if sr := a.series[record.DuplicateRows]; sr != nil {
		for _, v := range sr.values {
			if v > 0 {
				dups++
			}
		}
	}
	for name, sr := range a.series {
		a.Metrics[name] = summarise(sr.values, sr.first)
	}
	a.series = nil
	if dups > 0 {
		// At-least-once delivery shows here: rows landed more than once.
		d := a.Metrics[record.DuplicateRows]
		note := fmt.Sprintf("duplicates in %d of %d measured runs: up to %.0f rows", dups, a.Measured, d.Max)
		if n := a.Metrics[record.ExpectedRows]; n != nil && n.Max > 0 {
			note += fmt.Sprintf(" (%.1f%% of the dataset)", 100*d.Max/n.Max)
		}
		a.Notes = append(a.Notes, note)
	}
	if a.Measured < a.Runs {
		var parts []string
		for _, s := range record.Statuses {
			if n := a.StatusCounts[s]; n > 0 && !s.CarriesMeasurement() {
				parts = append(parts, fmt.Sprintf("%d %s", n, s))
			}
		}
		a.Notes = append(a.Notes, fmt.Sprintf("%s of %d runs; metrics from the %d measured", strings.Join(parts, ", "), a.Runs, a.Measured))
	}
	for i, w := range a.why {
		if i == maxReasons {
			a.Notes = append(a.Notes, fmt.Sprintf("and %d more distinct reasons in the records", len(a.why)-maxReasons))
			break
		}
		a.Notes = append(a.Notes, fmt.Sprintf("%s (%s)", w, plural(a.whyCount[w], "run")))
	}
	a.why, a.whyCount = nil, nil
	if n := a.StatusCounts[record.StatusInfraBound]; n > 0 {
		a.Notes = append(a.Notes, fmt.Sprintf("infra_bound in %d of %d runs: the broker or ClickHouse ran above 70%% of its ceiling, so the figure may describe the infrastructure", n, a.Runs))
	}
	for _, f := range slices.Sorted(maps.Keys(a.Flags)) {
		a.Notes = append(a.Notes, fmt.Sprintf("flag %s in %d of %d runs", f, a.Flags[f], a.Runs))
	}
}

func summarise(vs []float64, m record.Metric) *Stat {
	slices.Sort(vs)
	n := len(vs)
	med := vs[n/2]
	if n%2 == 0 {
		med = (vs[n/2-1] + vs[n/2]) / 2
	}
	s := &Stat{Unit: m.Unit, HigherIsBetter: m.HigherIsBetter, N: n, Median: med, Min: vs[0], Max: vs[n-1]}
	if med != 0 {
		s.Spread = (s.Max - s.Min) / math.Abs(med)
	}
	return s
}

// labelArms names each arm entrant[:variant], adding a short digest of the
// knob values where one entrant and variant ran at several settings, so the
// label alone tells them apart.
func labelArms(arms []*Arm) {
	labelled(arms, func(a *Arm) (string, string) { return a.Entrant, a.Variant },
		func(a *Arm) string {
			knobs, _ := json.Marshal(a.Knobs)
			sum := sha256.Sum256(knobs)
			return "#" + hex.EncodeToString(sum[:3])
		},
		func(a *Arm, label string) { a.Label = label })
}

// labelled names each item entrant[:variant], and where several share a
// name, adds what apart says of each.
func labelled[T any](items []T, name func(T) (entrant, variant string), apart func(T) string, set func(T, string)) {
	labels := make([]string, len(items))
	count := map[string]int{}
	for i, it := range items {
		entrant, variant := name(it)
		labels[i] = entrant
		if variant != "" {
			labels[i] += ":" + variant
		}
		count[labels[i]]++
	}
	for i, it := range items {
		if count[labels[i]] > 1 {
			labels[i] += apart(it)
		}
		set(it, labels[i])
	}
}

// orNone names a workload a record does not name (written before records
// named their workload).
func orNone(w string) string {
	if w == "" {
		return "(unnamed)"
	}
	return w
}
