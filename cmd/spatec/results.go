package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"spatec.dev/spatec/runs/interop"
	"spatec.dev/spatec/runs/record"
	"spatec.dev/spatec/runs/report"
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
	args, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	paths := args
	if len(paths) == 0 {
		paths = []string{"results"}
	}
	prepareReadHeap()
	rep, problems, err := report.Load(paths, report.Options{Env: *env, Baseline: *baseline, Knee: *knee, Foreign: schema2History})
	if err != nil {
		return err
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

// schema2History reads a results file of the reference harness's into the
// report's history, saying per run which protocol it was measured under,
// with its dataset in spatec's name (so that it sits beside spatec's runs
// of the same corpus) and its rate as the harness's, never as spatec's.
func schema2History(path string) ([]report.HistoryRun, []record.Problem, bool) {
	entries, problems, ok := interop.ReadFile(path)
	if !ok {
		return nil, nil, false
	}
	runs := make([]report.HistoryRun, len(entries))
	for i, e := range entries {
		runs[i] = report.HistoryRun{
			Source: "schema-2", Entrant: e.Entrant, Variant: e.Variant, Env: e.Env, EnvDigest: e.EnvDigest,
			Started: e.Time(), Harness: fmt.Sprintf("%s %d", e.HarnessProtocol, e.HarnessVersion), ArmVersion: e.ArmVersion,
			Status: e.Status, Dataset: e.DatasetVersion, Messages: e.Messages,
			RowsPerS: e.RowsPerS, HarnessRowsPerS: e.HarnessRowsPerS, Cores: e.CoresUsed, Peak: e.PeakAnonBytes,
		}
	}
	return runs, problems, true
}
