package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"spatec.dev/spatec/exec"
	"spatec.dev/spatec/exec/engine/docker"
	"spatec.dev/spatec/exec/hostlock"
	"spatec.dev/spatec/exec/progress"
	"spatec.dev/spatec/runs/record"
	"spatec.dev/spatec/schema"
)

// execFlags are the flags exec and ceiling share.
type execFlags struct {
	env, tree, results, cache, pull string
	period                          time.Duration
}

func (f *execFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.env, "env", "", "environment to run in")
	fs.StringVar(&f.tree, "tree", "", "CUE tree root (default: the checkout around the working directory, else the embedded tree)")
	fs.StringVar(&f.results, "results", "results", "results root: records go to <results>/<env>/<entrant>/<YYYY-MM>.jsonl")
	fs.DurationVar(&f.period, "period", 100*time.Millisecond, "sampler period")
	fs.StringVar(&f.pull, "pull", "missing", "missing: pull images the engine lacks, by their pins; never: refuse them (air-gapped hosts)")
	fs.StringVar(&f.cache, "cache", defaultCache(), "cache of what image builds download: root file systems of Debian recipes, artefacts of layered images")
}

// defaultCache is the user's cache directory for spatec, or "" (no cache)
// when the user has none.
func defaultCache() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "spatec")
}

func cmdExec(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("exec", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f execFlags
	f.register(fs)
	reps := fs.Int("reps", 1, "repetitions; each rep runs every arm once, interleaved")
	hold := fs.Duration("hold", 0, "run without a drain: start, verify and sample the arm for this long (nothing is recorded)")
	scenario := fs.String("scenario", "", "go through the environment's failure scenario of this name: its fault injected mid-drain, the arm's recovery recorded")
	args, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if *reps < 1 {
		return usageError{"--reps must be at least 1"}
	}
	if *scenario != "" && *hold > 0 {
		return usageError{"--scenario breaks something mid-drain; a --hold run has no drain"}
	}
	plans, err := execPlans(f, args)
	if err != nil {
		return err
	}
	sc := plans[0].Env.Scenarios
	if _, ok := sc[*scenario]; *scenario != "" && !ok {
		names := slices.Sorted(maps.Keys(sc))
		if len(names) == 0 {
			names = []string{"none"}
		}
		return usageError{fmt.Sprintf("--scenario %s: %s declares no such scenario (it declares: %s)", *scenario, plans[0].Env.Name, strings.Join(names, ", "))}
	}
	// A plan reviewed before it ran (its digest fixed in the file) gives
	// measured evidence; one resolved on the spot, exploratory.
	evidence := record.EvidenceExploratory
	if len(args) == 1 && strings.HasSuffix(args[0], ".json") {
		evidence = record.EvidenceMeasured
	}
	runs := make([]armSpec, len(plans))
	for i, p := range plans {
		runs[i] = armSpec{plan: p, scenario: *scenario}
	}
	return runArms(ctx, f, runs, *reps, *hold, evidence, stdout, stderr)
}

// armSpec is one arm to run each repetition: a plan, and for a study's
// scale check the number of the dataset's first messages it drains (0: all).
type armSpec struct {
	plan     *schema.Plan
	messages int64
	// scenario names the failure scenario the arm goes through, if any.
	scenario string
}

// schedule gives the arms of each round of a series and hears how each
// run went: a fixed list for exec and sweep, a search for a footprint
// study.
type schedule interface {
	// round gives the arms of the next round, each to run reps times with
	// the repetitions interleaved across them; more is false when the
	// series is over.
	round() (arms []armSpec, reps int, more bool)
	// ran hears one run's outcome (res may be nil, err says why).
	ran(a armSpec, res *exec.Result, err error)
	// total estimates the runs of the whole series, done ones included.
	total() int
}

// fixed is a schedule of one round: every arm, reps times.
type fixed struct {
	arms  []armSpec
	reps  int
	given bool
}

func (s *fixed) round() ([]armSpec, int, bool) {
	if s.given {
		return nil, 0, false
	}
	s.given = true
	return s.arms, s.reps, true
}

func (s *fixed) ran(armSpec, *exec.Result, error) {}
func (s *fixed) total() int                       { return len(s.arms) * s.reps }

// runArms runs every plan once a repetition, interleaved, in one session,
// and says after each run how far the whole is and how long the rest
// should take.
func runArms(ctx context.Context, f execFlags, runs []armSpec, reps int, hold time.Duration, evidence string, stdout, stderr io.Writer) error {
	plans := make([]*schema.Plan, len(runs))
	for i, a := range runs {
		plans[i] = a.plan
	}
	return runSeries(ctx, f, plans, &fixed{arms: runs, reps: reps}, hold, evidence, stdout, stderr)
}

// runSeries runs a schedule's rounds in one session opened for plans (the
// images they need are built once, their infrastructure started once).
func runSeries(ctx context.Context, f execFlags, plans []*schema.Plan, sched schedule, hold time.Duration, evidence string, stdout, stderr io.Writer) error {
	// An image with an unpinned download or closure is refused before
	// anything is made, the results directory included.
	if err := exec.CheckPinned(plans[0].Env, plans); err != nil {
		return asRefusal(err)
	}
	// A run that cannot be recorded is not started (C14); a hold run
	// records nothing.
	if hold <= 0 {
		defer keepOnlyIfUsed(f.results)()
		if err := record.CheckRoot(f.results); err != nil {
			return refusal{err}
		}
	}
	r, closeEngine, err := newRunner(ctx, f, plans[0].Env, stderr)
	if err != nil {
		return err
	}
	defer closeEngine()

	// A hold run gets the infrastructure too: an arm cannot start without
	// its broker and ClickHouse.
	sess, err := r.Open(ctx, plans[0].Env, false, plans...)
	if err != nil {
		return asRefusal(err)
	}
	defer sess.Close()

	var failed, refused []string
	stopped := false
	done, began := 0, time.Now()
	for !stopped && ctx.Err() == nil {
		arms, reps, more := sched.round()
		if !more {
			break
		}
		for rep := 1; rep <= reps && !stopped; rep++ {
			for _, a := range arms {
				p := a.plan
				if ctx.Err() != nil || stopped {
					break
				}
				res, err := sess.Run(ctx, p, exec.Options{
					Hold: hold, Rep: rep, Reps: reps, Results: f.results, Evidence: evidence, Messages: a.messages, Scenario: a.scenario,
					Ceilings: exec.CeilingsPath(f.results, p.Env.Name, p.Workload.Name),
				})
				if res != nil && (err == nil || hold <= 0) {
					printResult(stdout, p, res, hold > 0)
				}
				sched.ran(a, res, err)
				done++
				if total := max(sched.total(), done); total > 1 {
					r.Progress.Printf("%s", runsLeft(done, total, time.Since(began)))
				}
				var (
					ref *exec.Refusal
					un  *exec.Unrecorded
				)
				switch {
				case errors.As(err, &un):
					// The record exists only here now: print all of it, and
					// measure nothing more that could not be recorded either.
					line, _ := json.Marshal(res.Record)
					fmt.Fprintf(stderr, "spatec exec: %s rep %d: %v\nspatec exec: stopping; the whole record follows, append it to %s once it can be written:\n%s\n",
						p.Entrant.Name, rep, un, un.Path, line)
					failed = append(failed, p.Entrant.Name)
					stopped = true
				case errors.As(err, &ref):
					refused = append(refused, fmt.Sprintf("%s rep %d: %s", p.Entrant.Name, rep, ref.Reason))
				case err != nil:
					fmt.Fprintf(stderr, "spatec exec: %s rep %d: %v\n", p.Entrant.Name, rep, err)
					failed = append(failed, p.Entrant.Name)
				}
			}
		}
	}
	switch {
	case len(refused) > 0:
		return refusal{errors.New(strings.Join(refused, "\nREFUSED: "))}
	case ctx.Err() != nil:
		return fmt.Errorf("interrupted: %v", context.Cause(ctx))
	case len(failed) > 0:
		return problemsError{len(failed)}
	}
	return nil
}

// runsLeft says how far a series of runs is: runs done, their rate, and
// the time the rest should take at it.
func runsLeft(done, total int, elapsed time.Duration) string {
	each := elapsed / time.Duration(done)
	left := each * time.Duration(total-done)
	return fmt.Sprintf("progress phase=runs done=%d total=%d unit=runs elapsed=%s per_run=%s left=%s",
		done, total, elapsed.Round(time.Second), each.Round(100*time.Millisecond), left.Round(time.Second))
}

// execPlans resolves the arms to run, or reads a reviewed plan document.
func execPlans(f execFlags, args []string) ([]*schema.Plan, error) {
	if len(args) == 1 && strings.HasSuffix(args[0], ".json") {
		if f.env != "" {
			return nil, usageError{"a plan file carries its environment; drop --env"}
		}
		b, err := os.ReadFile(args[0])
		if err != nil {
			return nil, fmt.Errorf("reading the plan: %w", err)
		}
		// One document, or the list `spatec plan -o json` writes for
		// several entrants.
		var docs []schema.Document
		if err := json.Unmarshal(b, &docs); err != nil {
			var doc schema.Document
			if err := json.Unmarshal(b, &doc); err != nil {
				return nil, fmt.Errorf("reading the plan %s: %w", args[0], err)
			}
			docs = []schema.Document{doc}
		}
		plans := make([]*schema.Plan, len(docs))
		for i := range docs {
			if err := docs[i].Check(); err != nil {
				return nil, refusal{fmt.Errorf("%s: %w", args[0], err)}
			}
			if docs[i].Plan.Env.Name != docs[0].Plan.Env.Name {
				return nil, usageError{fmt.Sprintf("%s mixes environments %s and %s; one run is in one environment", args[0], docs[0].Plan.Env.Name, docs[i].Plan.Env.Name)}
			}
			plans[i] = &docs[i].Plan
		}
		if len(plans) == 0 {
			return nil, usageError{args[0] + " holds no plan"}
		}
		return plans, nil
	}
	if f.env == "" || len(args) == 0 {
		return nil, usageError{"usage: spatec exec --env E entrant[:variant] ...  or  spatec exec plan.json"}
	}
	if f.env == allEnvs {
		return nil, usageError{"--env all: one run is in one environment; name it"}
	}
	t, err := loadTree(f.tree)
	if err != nil {
		return nil, err
	}
	if err := checkNames(t, f.env, args); err != nil {
		return nil, err
	}
	plans, problems := resolveAll(t, parseSelections(t, f.env, args))
	if len(problems) > 0 {
		return nil, refusal{fmt.Errorf("the plan violates the contract:\n%s", problemLines(problems))}
	}
	if err := pinSources(cmp.Or(f.tree, findCheckout()), plans); err != nil {
		return nil, err
	}
	return plans, nil
}

// newRunner connects to the engine and sets up a runner for this host, or
// for the environment's cluster when it runs on Kubernetes.
func newRunner(ctx context.Context, f execFlags, env schema.Environment, stderr io.Writer) (*exec.Runner, func(), error) {
	if f.pull != "missing" && f.pull != "never" {
		return nil, nil, usageError{fmt.Sprintf("--pull=%s: want missing or never", f.pull)}
	}
	e, err := docker.New(ctx)
	if err != nil {
		return nil, nil, err
	}
	v, c := buildInfo()
	src := f.tree
	if src == "" {
		src = findCheckout()
	}
	r := &exec.Runner{
		Engine:    e,
		Cgroups:   exec.HostCgroups{},
		Period:    f.period,
		Progress:  progress.New(stderr),
		Log:       stderr,
		Version:   v,
		Commit:    c,
		SourceDir: src,
		CacheDir:  f.cache,
		LockPath:  hostlock.DefaultPath,
		NoPull:    f.pull == "never",
		Results:   f.results,
	}
	if env.Runtime != "kubernetes" {
		return r, func() { e.Close() }, nil
	}
	if err := onKubernetes(ctx, r, e, env); err != nil {
		e.Close()
		return nil, nil, err
	}
	return r, func() { e.Close() }, nil
}

func asRefusal(err error) error {
	var ref *exec.Refusal
	if errors.As(err, &ref) {
		return refusal{ref}
	}
	return err
}

// printResult prints one line per run and, for a hold run, the sampler's
// figures per container.
func printResult(w io.Writer, p *schema.Plan, res *exec.Result, hold bool) {
	rec := res.Record
	if hold {
		s := res.Summary
		fmt.Fprintf(w, "%s:%s held %.1fs, %d readings every %s\n", p.Entrant.Name, p.Variant, s.Window.Seconds(), s.Readings, s.Period)
		for _, c := range s.Containers {
			fmt.Fprintf(w, "  %-12s %-13s cores %.3f  anon+shmem peak %s (shmem %s)  memory.peak %s (%s)  throttled %.2fs\n",
				c.Name, c.Role, c.CoresUsed, schema.FormatBytes(int64(c.PeakAnonBytes)), schema.FormatBytes(int64(c.PeakAnonShmemBytes)),
				schema.FormatBytes(int64(c.MemoryPeakBytes)), c.MemoryPeakKind, float64(c.ThrottledUsec)/1e6)
		}
		a := s.Arm
		fmt.Fprintf(w, "  arm: cores_used %.3f (data plane %.3f, control plane %.3f), peak_anon_bytes %d (shmem %d)\n",
			a.CoresUsed, a.DataPlaneCoresUsed, a.ControlPlaneCoresUsed, a.PeakAnonBytes, a.PeakShmemBytes)
		return
	}
	// A figure the run did not measure prints as "-", never as 0.
	fig := func(name, format string) string {
		v, ok := rec.Metrics[name]
		if !ok {
			return "-"
		}
		return fmt.Sprintf(format, v.Value)
	}
	peak := "-"
	if v, ok := rec.Metrics[record.PeakAnonBytes]; ok {
		peak = schema.FormatBytes(int64(v.Value))
	}
	label := p.Variant
	if f := p.Footprint; f != nil {
		label += " at " + f.Show()
	}
	if sc := rec.Scenario; sc != nil {
		label += " through " + sc.Name
	}
	fmt.Fprintf(w, "%s:%s rep %d/%d %s  rows/s %s (harness window, approximated, %s)  cores %s (data plane %s)  peak anon+shmem %s  rows %s/%s dup %s  run %s\n",
		p.Entrant.Name, label, rec.Rep, rec.Reps, rec.Status, fig(record.RowsPerS, "%.0f"), fig(record.HarnessRowsPerS, "%.0f"),
		fig(record.CoresUsed, "%.2f"), fig(record.DataPlaneCoresUsed, "%.2f"), peak,
		fig(record.DistinctRows, "%.0f"), fig(record.ExpectedRows, "%.0f"), fig(record.DuplicateRows, "%.0f"), rec.RunID)
	if rec.Note != "" {
		fmt.Fprintf(w, "  note: %s\n", rec.Note)
	}
}

func cmdCeiling(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("ceiling", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f execFlags
	f.register(fs)
	measure := fs.Bool("measure", false, "measure the ceilings (otherwise: show the stored ones)")
	from := fs.String("import", "", "import the reference harness's ceilings file (its environments/ceilings/<env>.json) as the environment's, when it describes the environment's plan")
	only := fs.String("workload", "", "the workload whose ceilings to measure, import or show (default: every workload the environment hosts; for --import, the one whose corpus the file was measured on)")
	args, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if f.env == "" {
		return usageError{"--env is required"}
	}
	if len(args) > 0 {
		return usageError{fmt.Sprintf("unexpected arguments %q", args)}
	}
	if *measure && *from != "" {
		return usageError{"--measure and --import are two ways to get the ceilings; give one"}
	}
	if *from != "" {
		return importCeilings(ctx, f, *from, *only, stdout, stderr)
	}
	if *measure {
		defer keepOnlyIfUsed(f.results)()
		if err := record.CheckRoot(f.results); err != nil {
			return refusal{err}
		}
	}
	env, err := loadEnvironment(f.tree, f.env)
	if err != nil {
		return err
	}
	names := slices.Sorted(maps.Keys(env.Workloads))
	if *only != "" {
		if _, ok := env.Workloads[*only]; !ok {
			return usageError{fmt.Sprintf("%s hosts no workload %q; it hosts: %s", f.env, *only, strings.Join(names, ", "))}
		}
		names = []string{*only}
	}
	if !*measure {
		var errs []error
		for _, w := range names {
			path := exec.CeilingsPath(f.results, f.env, w)
			c, err := exec.LoadCeilings(path)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if err := writeCeilings(stdout, path, c); err != nil {
				return err
			}
		}
		return errors.Join(errs...)
	}
	r, closeEngine, err := newRunner(ctx, f, *env, stderr)
	if err != nil {
		return err
	}
	defer closeEngine()
	sess, err := r.Open(ctx, *env, false)
	if err != nil {
		return asRefusal(err)
	}
	defer sess.Close()
	for _, w := range names {
		c, err := sess.MeasureCeilings(ctx, env.Workloads[w])
		if err != nil {
			return asRefusal(err)
		}
		path := exec.CeilingsPath(f.results, f.env, w)
		if err := c.Write(path); err != nil {
			return err
		}
		if err := writeCeilings(stdout, path, c); err != nil {
			return err
		}
	}
	return nil
}

func writeCeilings(w io.Writer, path string, c *exec.Ceilings) error {
	fmt.Fprintf(w, "ceilings of %s for %s (%s, measured %s)\n", c.Env, c.Workload, path, c.MeasuredAt.Format(time.RFC3339))
	fmt.Fprintf(w, "  broker consume   %12.0f msg/s  %12.0f bytes/s\n", c.Broker.MessagesPerSec, c.Broker.BytesPerSec)
	fmt.Fprintf(w, "  clickhouse ingest %11.0f rows/s (%s, %d writers): the ceiling the gate holds every arm to\n", c.ClickHouse.RowsPerSec, c.ClickHouse.Format, c.ClickHouse.Concurrency)
	for _, f := range c.ClickHouse.Formats {
		if f.Format != c.ClickHouse.Format {
			fmt.Fprintf(w, "  clickhouse ingest %11.0f rows/s (%s, %d writers)\n", f.RowsPerSec, f.Format, f.Concurrency)
		}
	}
	fmt.Fprintf(w, "  under infra %s, %d partitions, %d-byte messages, measured from the %s\n", c.InfraDigest, c.Partitions, c.MessageBytes, c.MeasuredFrom)
	if imp := c.Imported; imp != nil {
		fmt.Fprintf(w, "  imported %s from %s: %s (%s), measured %s under its infrastructure %s (%s), client %s, corpus %s, host %q\n",
			imp.ImportedAt.Format(time.RFC3339), imp.From, imp.File, imp.SHA256, imp.Date, imp.InfraDigest, imp.InfraKey, imp.Client, imp.DatasetVersion, imp.Host)
		var mapped []string
		for _, h := range slices.Sorted(maps.Keys(imp.Formats)) {
			mapped = append(mapped, h+" as "+imp.Formats[h])
		}
		fmt.Fprintf(w, "  formats: %s\n", strings.Join(mapped, ", "))
		if len(imp.NotMapped) > 0 {
			fmt.Fprintf(w, "  not imported, no name of spatec's for them: %s\n", strings.Join(imp.NotMapped, ", "))
		}
	}
	return nil
}

// keepOnlyIfUsed returns a function that removes the results root again
// when it did not exist before and nothing was written into it: a refused
// or failed start leaves no empty directory behind. os.Remove never
// removes a directory that holds anything.
func keepOnlyIfUsed(root string) func() {
	if _, err := os.Stat(root); err == nil {
		return func() {}
	}
	return func() { _ = os.Remove(root) }
}
