package report

import (
	"bufio"
	"cmp"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"spatec.dev/spatec/runs/record"
)

// WriteTable writes the report as aligned plain text for a terminal: which
// rate it ranks by; per section, one row per arm with throughput, spread,
// the reference harness's rate (not ranked), the comparison with the
// baseline, rank, and CPU and memory (arm total / data plane) beside it;
// then the notes and every problem met while reading.
func (r *Report) WriteTable(w io.Writer) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "%s from %s", plural(r.Records, "record"), plural(r.Files, "file"))
	if r.ForeignRuns > 0 {
		fmt.Fprintf(bw, ", and %s of the reference harness's records (schema 2)", plural(r.ForeignRuns, "run"))
	}
	if r.Rejected > 0 {
		fmt.Fprintf(bw, "; %s could not be used (listed under problems)", plural(r.Rejected, "line"))
	}
	if len(r.SkippedFiles) > 0 {
		fmt.Fprintf(bw, "; %s of other environments not read", plural(len(r.SkippedFiles), "file"))
	}
	fmt.Fprintln(bw)
	fmt.Fprintln(bw, Ranking+".")
	if len(r.Sections) == 0 && len(r.Footprints) == 0 && len(r.Scenarios) == 0 {
		fmt.Fprintln(bw, "no usable records")
	}
	if envs := r.envCount(); envs > 1 {
		fmt.Fprintf(bw, "%d environments: sections of different environments are not comparable\n", envs)
	}

	for _, s := range r.Sections {
		fmt.Fprintf(bw, "\n%s\n", sectionTitle(s))
		fmt.Fprintf(bw, "%d records, %s; baseline %s\n", s.Records, timeSpan(s), baselineText(s))
		for _, nc := range s.NotComparable {
			fmt.Fprintln(bw, nc)
		}
		for _, a := range s.HarnessApart {
			fmt.Fprintln(bw, a)
		}
		fmt.Fprintln(bw)

		tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "ARM\tSTATUS\tRUNS\tROWS/S MEDIAN [MIN–MAX]\tSPREAD\tHARNESS-WINDOW ROWS/S (NOT RANKED)\tVS BASELINE\tRANK\tROWS/S/CORE\tCORES ARM / DP\tCP CORES\tANON+SHMEM PEAK ARM / DP")
		for _, a := range s.Arms {
			rows := a.Metrics[RankedBy]
			spread := "–"
			if rows != nil {
				spread = percent(rows.Spread)
			}
			vs := a.VsBaseline
			if vs == "" {
				vs = "–"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
				a.Label, a.Status, runsText(a), statText(rows), spread, statText(a.Metrics[ShownBeside]), vs, rankText(a),
				medianText(a.Metrics[RowsPerSPerCore]),
				pair(a.Metrics[record.CoresUsed], a.Metrics[record.DataPlaneCoresUsed]),
				medianText(a.Metrics[record.ControlPlaneCoresUsed]),
				pair(a.Metrics[record.PeakAnonBytes], a.Metrics[record.DataPlanePeakAnonBytes]))
		}
		if err := tw.Flush(); err != nil {
			return fmt.Errorf("writing the report table: %w", err)
		}
		if notes := armNotes(s); len(notes) > 0 {
			fmt.Fprintln(bw, "\nnotes:")
			for _, n := range notes {
				fmt.Fprintf(bw, "  %s\n", n)
			}
		}
	}

	if err := r.writeJointTables(bw); err != nil {
		return err
	}
	if err := r.writePublishedTable(bw); err != nil {
		return err
	}
	if err := r.writeFootprintTables(bw); err != nil {
		return err
	}
	if err := r.writeScenarioTables(bw); err != nil {
		return err
	}
	for _, u := range r.HarnessUnmatched {
		fmt.Fprintf(bw, "\n%s\n", u)
	}

	if len(r.Problems) > 0 {
		fmt.Fprintf(bw, "\nproblems (%d):\n", len(r.Problems))
		for _, p := range r.Problems {
			fmt.Fprintf(bw, "  %s\n", p)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("writing the report table: %w", err)
	}
	return nil
}

// writeFootprintTables writes each footprint study: every cap with its
// rate, what the arm used and the verdict, then the findings. Its runs are
// in no section: they left the envelope on purpose.
func (r *Report) writeFootprintTables(bw *bufio.Writer) error {
	for _, fp := range r.Footprints {
		fmt.Fprintf(bw, "\n%s footprint study %s:%s on %s (%s, from the envelope's %s; degraded below %.2f× its rate; never ranked)\n",
			fp.ID, fp.Entrant, fp.Study, fp.Env, fp.Axis, fp.Show(fp.Full), fp.Fraction)
		tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "CAP\tRUNS\tROWS/S MEDIAN [MIN–MAX]\tCORES\tANON+SHMEM PEAK\tMEMORY.PEAK\tOOM KILLS\tJVM HEAP CONF / COMMITTED / LIVE\tVERDICT")
		for _, p := range fp.Points {
			rate := "–"
			if p.Measured > 0 {
				rate = fmt.Sprintf("%s [%s–%s]", human(p.Rate), human(p.RateMin), human(p.RateMax))
			}
			heap := "–"
			if p.HeapConfigured > 0 {
				heap = fmt.Sprintf("%s / %s / %s", bytesText(p.HeapConfigured), bytesText(p.HeapCommitted), bytesText(p.HeapLive))
			}
			verdict := "holds"
			if p.Degraded {
				verdict = p.Kind + ": " + p.Why
			}
			fmt.Fprintf(tw, "%s\t%d/%d\t%s\t%.2f\t%s\t%s\t%d\t%s\t%s\n", p.Label, p.Measured, p.Runs, rate, p.Cores,
				bytesText(p.PeakAnon), bytesText(p.MemoryPeak), p.OOMKills, heap, verdict)
		}
		if err := tw.Flush(); err != nil {
			return fmt.Errorf("writing the footprint table: %w", err)
		}
		for _, f := range fp.Findings {
			fmt.Fprintf(bw, "  %s\n", f)
		}
	}
	return nil
}

// writeScenarioTables writes the failure scenarios, per environment: what
// each does, what each arm declares it holds to, and one row per arm with
// each run's verdict and the medians of its runs' figures beside its
// undisturbed rate. Their runs are in no section: they were disturbed on
// purpose.
func (r *Report) writeScenarioTables(bw *bufio.Writer) error {
	env := ""
	for _, s := range r.Scenarios {
		if s.Env != env {
			env = s.Env
			fmt.Fprintf(bw, "\nFailure scenarios on %s: a fault injected mid-drain, and what each arm did through it; figures are medians [min–max] over the runs the fault reached, %s where none gave one\n", env, absent)
		}
		fmt.Fprintf(bw, "\n%s\n", s.Title())
		fmt.Fprintf(bw, "  %s: %s\n", s.Name, s.Does())
		if s.Dedup != "" {
			fmt.Fprintf(bw, "  the table: %s\n", s.Dedup)
		}
		for _, a := range s.Arms {
			fmt.Fprintf(bw, "  %s: %s\n", a.Label, a.Declares())
		}
		fmt.Fprintln(bw)
		tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "ARM\tRUNS\tVERDICT\tHELD\tFIRST ROW AFTER FAULT (S)\tRATE BACK AFTER FAULT (S)\tLOST ROWS\tDUPLICATE ROWS\tABSORBED BY DEDUP (BLOCKS EVENT)\tROWS/S (WHOLE RUN)\tUNDISTURBED ROWS/S\tVS UNDISTURBED")
		for _, a := range s.Arms {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
				a.Label, len(a.Runs), verdictsText(a), heldText(a),
				figureText(a.FirstRowS, "s"), figureText(a.RateBackS, "s"), figureText(a.Lost, "rows"), figureText(a.Duplicates, "rows"), figureText(a.Absorbed, "rows"),
				figureText(a.RowsPerS, "rate"), undisturbedText(a), figureText(a.Ratio, "ratio"))
		}
		if err := tw.Flush(); err != nil {
			return fmt.Errorf("writing the scenario table: %w", err)
		}
		var notes []string
		for _, a := range s.Arms {
			for _, n := range a.Notes {
				notes = append(notes, a.Label+": "+n)
			}
		}
		if len(notes) > 0 {
			fmt.Fprintln(bw, "\nnotes:")
			for _, n := range notes {
				fmt.Fprintf(bw, "  %s\n", n)
			}
		}
	}
	return nil
}

// writeJointTables writes each joint section: what it ranks together, on
// which facts the environments agree and which one side alone states, and
// one row per arm of either tool, ranked by the harness's rate.
func (r *Report) writeJointTables(bw *bufio.Writer) error {
	if len(r.Joint) == 0 {
		return nil
	}
	fmt.Fprintf(bw, "\nRanked with the reference harness's runs: %s.\n", r.JointRanking)
	for _, s := range r.Joint {
		j := s.Joint
		fmt.Fprintf(bw, "\n%s\n", jointTitle(s))
		fmt.Fprintf(bw, "ranked by %s; spatec's runs: %s (env %s, protocol %s); the reference harness's: %s (env %s, protocol %s); baseline %s\n",
			s.RankedBy, j.Section, short(s.EnvDigest), j.SpatecProtocol, plural(j.HarnessRuns, "run"), short(j.HarnessEnvDigest), j.HarnessProtocol, baselineText(s))
		fmt.Fprintf(bw, "the environments agree on: %s\n", strings.Join(j.Agreed(), "; "))
		if len(j.Agreement.Unstated) > 0 {
			fmt.Fprintf(bw, "not compared, stated by one side alone: %s\n", strings.Join(j.Agreement.Unstated, "; "))
		}
		fmt.Fprintln(bw)
		tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "ARM\tSOURCE\tSTATUS\tRUNS\tHARNESS-WINDOW ROWS/S MEDIAN [MIN–MAX] (RANKED)\tSPREAD\tVS BASELINE\tRANK\tSPATEC-WINDOW ROWS/S (SPATEC'S ONLY, NOT RANKED)\tCORES ARM")
		for _, a := range s.Arms {
			rate := a.Metrics[s.RankedBy]
			spread := "–"
			if rate != nil {
				spread = percent(rate.Spread)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
				a.Label, a.Source, a.Status, runsText(a), statText(rate), spread, cmp.Or(a.VsBaseline, "–"), rankText(a),
				statText(a.Metrics[record.RowsPerS]), medianText(a.Metrics[record.CoresUsed]))
		}
		if err := tw.Flush(); err != nil {
			return fmt.Errorf("writing the report table: %w", err)
		}
		if notes := armNotes(s); len(notes) > 0 {
			fmt.Fprintln(bw, "\nnotes:")
			for _, n := range notes {
				fmt.Fprintf(bw, "  %s\n", n)
			}
		}
	}
	return nil
}

func (r *Report) envCount() int {
	envs := map[string]bool{}
	for _, s := range r.Sections {
		envs[s.Env] = true
	}
	return len(envs)
}

// armNotes collects what a reader must know beside the numbers: knob
// settings, partial failures, infra_bound runs, flags, and ties.
func armNotes(s *Section) []string {
	var out []string
	for _, a := range s.Arms {
		if k := knobsText(a.Knobs); k != "" {
			out = append(out, fmt.Sprintf("%s: knobs %s", a.Label, k))
		}
		if h := heapText(a); h != "" {
			out = append(out, fmt.Sprintf("%s: JVM heap of the data plane (C9): %s", a.Label, h))
		}
		for _, n := range a.Notes {
			out = append(out, fmt.Sprintf("%s: %s", a.Label, n))
		}
		if a.Tied {
			out = append(out, fmt.Sprintf("%s: tied with %s (ranges overlap or differ by less than the resolution, %s)",
				a.Label, strings.Join(a.TiedWith, ", "), percent(a.Resolution)))
		}
	}
	return out
}

// heapText renders a JVM arm's heap figures (medians), or "" for an arm
// that published none.
func heapText(a *Arm) string {
	var parts []string
	for _, m := range []struct{ name, label string }{
		{record.JVMHeapConfiguredBytes, "configured"},
		{record.JVMHeapCommittedPeakBytes, "committed peak"},
		{record.JVMHeapLivePeakBytes, "live peak"},
	} {
		if s := a.Metrics[m.name]; s != nil {
			parts = append(parts, m.label+" "+medianText(s))
		}
	}
	return strings.Join(parts, ", ")
}

func baselineText(s *Section) string {
	if s.Baseline == "" {
		return "none (" + s.BaselineWhy + ")"
	}
	return fmt.Sprintf("%s (%s)", s.Baseline, s.BaselineWhy)
}

func timeSpan(s *Section) string {
	if s.FirstRun.IsZero() {
		return "run times unknown"
	}
	const layout = "2006-01-02 15:04"
	first, last := s.FirstRun.UTC(), s.LastRun.UTC()
	if first.Equal(last) {
		return "run " + first.Format(layout) + " UTC"
	}
	return fmt.Sprintf("runs %s – %s UTC", first.Format(layout), last.Format(layout))
}

// csvHeader is the CSV layout: long form, one row per arm and metric, so
// new metrics never change the columns. ranked_by names the metric rank,
// tied and ratio_to_baseline are by (spatec's rows_per_s); the reference
// harness's harness_rows_per_s has rows of its own, and ranks nothing.
var csvHeader = []string{
	"section", "env", "env_digest", "harness_version", "dataset_version",
	"arm", "entrant", "variant", "knobs", "status", "runs", "measured",
	"rank", "tied", "ratio_to_baseline", "baseline", "ranked_by",
	"metric", "unit", "higher_is_better", "n", "median", "min", "max", "spread",
}

// WriteCSV writes one row per arm and metric (an arm without metrics gets
// one row with the metric columns empty). Numbers are written in full
// precision for a spreadsheet or a script.
func (r *Report) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(csvHeader); err != nil {
		return fmt.Errorf("writing the report CSV: %w", err)
	}
	num := func(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
	for _, s := range slices.Concat(r.Sections, r.Joint) {
		for _, a := range s.Arms {
			ratio := ""
			if a.Ratio > 0 {
				ratio = num(a.Ratio)
			}
			head := []string{
				s.ID, s.Env, s.EnvDigest, strconv.Itoa(s.HarnessVersion), s.DatasetVersion,
				a.Label, a.Entrant, a.Variant, knobsText(a.Knobs), string(a.Status),
				strconv.Itoa(a.Runs), strconv.Itoa(a.Measured),
				strconv.Itoa(a.Rank), strconv.FormatBool(a.Tied), ratio, s.Baseline, s.rankedBy(),
			}
			names := slices.Sorted(maps.Keys(a.Metrics))
			if len(names) == 0 {
				if err := cw.Write(append(head, make([]string, 8)...)); err != nil {
					return fmt.Errorf("writing the report CSV: %w", err)
				}
				continue
			}
			for _, name := range names {
				m := a.Metrics[name]
				row := append(slices.Clone(head), name, m.Unit, strconv.FormatBool(m.HigherIsBetter),
					strconv.Itoa(m.N), num(m.Median), num(m.Min), num(m.Max), num(m.Spread))
				if err := cw.Write(row); err != nil {
					return fmt.Errorf("writing the report CSV: %w", err)
				}
			}
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("writing the report CSV: %w", err)
	}
	return nil
}

// WriteJSON writes the whole report, problems included, as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("writing the report JSON: %w", err)
	}
	return nil
}
