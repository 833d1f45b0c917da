package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"spatec.dev/spatec/runs/interop"
	"spatec.dev/spatec/runs/record"
)

// cmdExport writes spatec records in the public reference harness's
// schema 2, so its validator and site can read them. What spatec did not
// record is never invented: facts schema 2 requires that a spatec record
// lacks come from flags (and the exported note says they were supplied at
// export), and a record that still lacks one is refused with the list.
func cmdExport(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("export", flag.ContinueOnError)
	fs.SetOutput(stderr)
	to := fs.String("to", "schema2", "the format written; schema2 is the one there is")
	out := fs.String("o", "", "write to this file instead of standard output")
	var s interop.Supplied
	fs.StringVar(&s.Bench, "bench", "", "schema 2's suite name for the records (spatec does not record one)")
	fs.StringVar(&s.Trigger, "trigger", "", "what started the runs: nightly, manual or release")
	fs.StringVar(&s.Broker, "broker", "", "the broker family, e.g. redpanda")
	fs.StringVar(&s.Registry, "registry", "", "the schema registry implementation")
	fs.IntVar(&s.Partitions, "partitions", 0, "the topic's partition count")
	args, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if *to != "schema2" {
		return usageError{fmt.Sprintf("--to %s: the only format is schema2", *to)}
	}
	roots := args
	if len(roots) == 0 {
		roots = []string{"results"}
	}
	w := stdout
	if *out != "" {
		f, err := os.Create(*out)
		if err != nil {
			return fmt.Errorf("writing the export: %w", err)
		}
		defer f.Close()
		w = f
	}
	bw := bufio.NewWriter(w)
	var refused []string
	var problems []record.Problem
	written := 0
	for _, root := range roots {
		files, err := logFiles(root)
		if err != nil {
			return err
		}
		for _, path := range files {
			problems = append(problems, record.ScanFile(path, record.ScanOptions{}, func(line int, rec *record.Record) {
				b, err := interop.ExportWith(*rec, s)
				var missing *interop.MissingError
				switch {
				case errors.As(err, &missing):
					refused = append(refused, fmt.Sprintf("%s:%d: %v", path, line, err))
				case err != nil:
					refused = append(refused, fmt.Sprintf("%s:%d: %v", path, line, err))
				default:
					bw.Write(b)
					if len(b) == 0 || b[len(b)-1] != '\n' {
						bw.WriteByte('\n')
					}
					written++
				}
			})...)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("writing the export: %w", err)
	}
	for _, p := range problems {
		fmt.Fprintln(stderr, p)
	}
	for _, r := range refused {
		fmt.Fprintln(stderr, "not exported: "+r)
	}
	fmt.Fprintf(stderr, "exported %d records as schema 2; %d not exported, %d lines unreadable\n", written, len(refused), len(problems))
	if n := len(refused) + len(problems); n > 0 {
		return problemsError{n}
	}
	return nil
}

// logFiles lists the results logs under root (or root itself, a file).
func logFiles(root string) ([]string, error) {
	st, err := os.Stat(root)
	if err != nil {
		return nil, fmt.Errorf("reading results: %w", err)
	}
	if !st.IsDir() {
		return []string{root}, nil
	}
	var files []string
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(d.Name(), ".jsonl") {
			files = append(files, path)
		}
		return nil
	})
	slices.Sort(files)
	return files, err
}
