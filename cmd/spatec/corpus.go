package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"

	"spatec.dev/spatec/exec/progress"
	"spatec.dev/spatec/workloads"
)

// corpusOut is what `spatec corpus -o json` prints: what a correct arm
// lands from the first messages of a workload, computed without any sink.
type corpusOut struct {
	Workload string `json:"workload"`
	Messages int64  `json:"messages"`
	// ExpectedRows is the rows the transform keeps: distinct row
	// identities a correct arm lands.
	ExpectedRows uint64 `json:"expected_rows"`
	// Checksum holds the checksum's sums over those rows, by name, as
	// decimal strings (they outgrow 64 bits, and JSON numbers 53).
	Checksum map[string]string `json:"checksum"`
	// MeanMessageBytes is the mean size of a message on the wire, its
	// framing included.
	MeanMessageBytes float64 `json:"mean_message_bytes"`
	DatasetVersion   string  `json:"dataset_version"`
}

func cmdCorpus(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("corpus", flag.ContinueOnError)
	fs.SetOutput(stderr)
	tree := fs.String("tree", "", "CUE tree root (default: the checkout around the working directory, else the embedded tree)")
	name := fs.String("workload", "", "the workload (its package under workloads/ declares it)")
	messages := fs.Int64("batches", 0, "how many messages (a sensor-batch message is a batch) of the corpus, from the first")
	format := fs.String("o", "table", "output: table or json")
	args, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(args) > 0:
		return usageError{fmt.Sprintf("unexpected arguments %q", args)}
	case *name == "":
		return usageError{"--workload is required"}
	case *messages <= 0:
		return usageError{fmt.Sprintf("--batches is %d; give how many messages, at least 1", *messages)}
	case *format != "table" && *format != "json":
		return usageError{fmt.Sprintf("-o %s: give table or json", *format)}
	}
	t, err := loadTree(*tree)
	if err != nil {
		return err
	}
	wl, err := t.Workload(*name, *messages)
	if err != nil {
		return usageError{err.Error()}
	}
	p := progress.New(stderr)
	n := *messages
	p.Start(progress.PhaseExpect, 2*n, "msgs")
	exp, err := workloads.Expect(ctx, wl, n, func(d int64) { p.Set(d) })
	if err != nil {
		p.Fail(err)
		return err
	}
	bytes, err := workloads.MessageBytes(ctx, wl, n, func(d int64) { p.Set(n + d) })
	if err != nil {
		p.Fail(err)
		return err
	}
	p.End()
	out := corpusOut{Workload: wl.Name, Messages: n, ExpectedRows: exp.Rows, Checksum: map[string]string{},
		MeanMessageBytes: float64(bytes) / float64(n), DatasetVersion: wl.DatasetVersion}
	for k, v := range exp.Sums {
		out.Checksum[k] = v.String()
	}
	if *format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	fmt.Fprintf(stdout, "workload %s, dataset %s: the first %d messages\n", out.Workload, out.DatasetVersion, out.Messages)
	fmt.Fprintf(stdout, "  expected rows        %d (of %d before the transform's filters)\n", out.ExpectedRows, n*int64(wl.RowsPerMessage))
	fmt.Fprintf(stdout, "  mean message bytes   %.1f\n", out.MeanMessageBytes)
	fmt.Fprintf(stdout, "  checksum over the distinct rows:\n")
	for _, k := range slices.Sorted(maps.Keys(out.Checksum)) {
		fmt.Fprintf(stdout, "    %-20s %s\n", k, out.Checksum[k])
	}
	return nil
}
