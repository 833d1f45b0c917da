package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"spatec.dev/spatec/harness"
	"spatec.dev/spatec/runs/interop"
	"spatec.dev/spatec/runs/record"
	"spatec.dev/spatec/runs/report"
	"spatec.dev/spatec/schema"
)

func cmdValidate(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	args, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	roots := args
	if len(roots) == 0 {
		roots = []string{"results"}
	}
	for _, root := range roots {
		// A file that holds no records is a mistake on the command line,
		// not a tree with none in it.
		if fi, err := os.Stat(root); err == nil && !fi.IsDir() && !strings.HasSuffix(root, ".jsonl") {
			return usageError{fmt.Sprintf("validate %s: not a results tree nor a .jsonl file of records; give the results directory (results/<env>/<entrant>/<YYYY-MM>.jsonl), e.g. spatec validate results", root)}
		}
	}
	n := 0
	for _, root := range roots {
		sum, problems := record.ValidateTreeWith(root, func(path string) (int, []record.Problem, bool) {
			entries, ps, ok := interop.ReadFile(path)
			return len(entries), ps, ok
		})
		for _, p := range problems {
			fmt.Fprintln(stderr, p)
		}
		n += len(problems)
		foreign := ""
		if sum.ForeignFiles > 0 {
			foreign = fmt.Sprintf(" (and %d schema-2 records of the reference harness in %d files, read as history)", sum.Foreign, sum.ForeignFiles)
		}
		fmt.Fprintf(stdout, "%s: %d files, %d records%s, %d problems\n", root, sum.Files, sum.Records, foreign, len(problems))
	}
	if n > 0 {
		return problemsError{n}
	}
	return nil
}

func cmdReport(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	fs.SetOutput(stderr)
	env := fs.String("env", "", "only this environment")
	baseline := fs.String("baseline", "", "entrant the ratios are against (default: the leader)")
	format := fs.String("format", "table", "table, csv, json or html")
	knee := fs.Float64("knee", report.DefaultKnee, "a study recommends its cheapest point within this fraction of its best throughput")
	out := fs.String("o", "", "write to this file instead of standard output")
	tree := fs.String("tree", "", "CUE tree root whose environments state the facts of spatec's records (default: the checkout around the working directory, else the embedded tree)")
	var profiles fileList
	fs.Var(&profiles, "harness-env", "the reference harness's environment profile (environments/<env_id>.toml): the host of its records whose env_digest it is; repeatable")
	args, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	paths := args
	if len(paths) == 0 {
		paths = []string{"results"}
	}
	// The harness's host has figures to show before spatec has any
	// records there: a checkout without results still reports them.
	none := len(args) == 0 && *env == harness.PublishedEnv && !exists(paths[0])
	var read []*interop.Profile
	for _, path := range profiles {
		p, err := interop.ReadProfile(path)
		if err != nil {
			return usageError{err.Error()}
		}
		read = append(read, p)
	}
	prepareReadHeap()
	h := &harnessReading{profiles: read, used: map[*interop.Profile]bool{}}
	envs := &envFacts{tree: *tree}
	rep, problems := report.NoRecords(*env), []record.Problem(nil)
	if !none {
		rep, problems, err = report.Load(paths, report.Options{Env: *env, Baseline: *baseline, Knee: *knee, Foreign: h.read, SpatecFacts: envs.facts})
		if err != nil {
			return err
		}
	}
	if showsPublished(*env, rep) {
		p, err := publishedBeside(*tree)
		if err != nil {
			fmt.Fprintf(stderr, "spatec report: the public harness's published figures are not shown: %v\n", err)
		} else {
			rep.SetPublished(p)
		}
	}
	if envs.err != nil {
		fmt.Fprintf(stderr, "spatec report: the tree's environments were not read (%v): the facts of spatec's records are their own alone\n", envs.err)
	}
	for _, p := range read {
		if !h.used[p] {
			fmt.Fprintf(stderr, "spatec report: --harness-env %s (%s at digest %s) is the profile of no record read\n", p.Path, p.ID, p.Digest)
		}
	}
	for _, p := range problems {
		fmt.Fprintln(stderr, p)
	}
	w := stdout
	if *out != "" {
		f, err := os.Create(*out)
		if err != nil {
			return fmt.Errorf("writing the report: %w", err)
		}
		defer f.Close()
		w = f
	}
	switch *format {
	case "table":
		err = rep.WriteTable(w)
	case "csv":
		err = rep.WriteCSV(w)
	case "json":
		err = rep.WriteJSON(w)
	case "html":
		err = rep.WriteHTML(w)
	default:
		return usageError{fmt.Sprintf("--format %s: use table, csv, json or html", *format)}
	}
	if err != nil {
		return fmt.Errorf("writing the report: %w", err)
	}
	if len(problems) > 0 {
		return problemsError{len(problems)}
	}
	return nil
}

// exists says whether path names anything.
func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// harnessReading reads results files of the reference harness's into the
// report, each run with the facts of its environment: its record's, and
// its profile's where one given is the profile its env_digest names.
type harnessReading struct {
	profiles []*interop.Profile
	used     map[*interop.Profile]bool
}

// read reads a results file of the reference harness's into the report's
// history, saying per run which protocol it was measured under, with its
// dataset in spatec's name (so that it sits beside spatec's runs of the
// same corpus), its rate as the harness's, never as spatec's, and the
// facts of its environment, for a joint section.
func (h *harnessReading) read(path string) ([]report.HistoryRun, []record.Problem, bool) {
	entries, problems, ok := interop.ReadFile(path)
	if !ok {
		return nil, nil, false
	}
	runs := make([]report.HistoryRun, len(entries))
	for i := range entries {
		for _, p := range h.profiles {
			if entries[i].WithProfile(p) {
				h.used[p] = true
			}
		}
		runs[i] = report.HistoryOf(entries[i])
	}
	return runs, problems, true
}

// envFacts states the facts of spatec's records with the environment
// their env_digest names, read from the tree once, when a report first
// sets a section beside another tool's runs.
type envFacts struct {
	tree   string
	loaded bool
	err    error
	envs   map[string]*schema.Environment
}

func (e *envFacts) facts(rec *record.Record) interop.Facts {
	if !e.loaded {
		e.loaded = true
		e.envs, e.err = treeEnvironments(e.tree)
	}
	return interop.SpatecFacts(rec, e.envs[rec.Run.Env])
}

// treeEnvironments resolves every environment of the tree, by name.
func treeEnvironments(dir string) (map[string]*schema.Environment, error) {
	t, err := loadTree(dir)
	if err != nil {
		return nil, err
	}
	out := map[string]*schema.Environment{}
	for _, name := range t.Environments() {
		env, err := t.Environment(name)
		if err != nil {
			// A broken environment states nothing; its records' facts are
			// their own.
			continue
		}
		out[name] = env
	}
	return out, nil
}

// fileList is a flag that may be given several times.
type fileList []string

func (f *fileList) String() string     { return strings.Join(*f, ",") }
func (f *fileList) Set(v string) error { *f = append(*f, v); return nil }
