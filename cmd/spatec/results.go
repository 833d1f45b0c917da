package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"spatec.dev/spatec/exec/record"
	"spatec.dev/spatec/exec/report"
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
		sum, problems := record.ValidateTree(root)
		for _, p := range problems {
			fmt.Fprintln(stderr, p)
		}
		n += len(problems)
		fmt.Fprintf(stdout, "%s: %d files, %d records, %d problems\n", root, sum.Files, sum.Records, len(problems))
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
	out := fs.String("o", "", "write to this file instead of standard output")
	args, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	paths := args
	if len(paths) == 0 {
		paths = []string{"results"}
	}
	rep, problems, err := report.Load(paths, report.Options{Env: *env, Baseline: *baseline})
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
