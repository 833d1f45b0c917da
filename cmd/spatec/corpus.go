package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"

	"spatec.dev/spatec/exec/progress"
	"spatec.dev/spatec/schema"
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
	// Transform is the transform's parameters, for a workload that has
	// them: what an arm's own test of its transform runs with.
	Transform *corpusTransform `json:"transform,omitempty"`
	// SchemaID is the registry id the messages written with --messages are
	// framed with, for a registry-framed workload.
	SchemaID uint32 `json:"schema_id,omitempty"`
}

// corpusTransform is a workload's transform, as corpus prints it.
type corpusTransform struct {
	DropUnit     string  `json:"drop_unit"`
	QualityFloor float64 `json:"quality_floor"`
}

// corpusSchemaID frames the messages corpus writes: a registry gives the
// first schema it holds the id 1.
const corpusSchemaID = 1

func cmdCorpus(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("corpus", flag.ContinueOnError)
	fs.SetOutput(stderr)
	tree := fs.String("tree", "", "CUE tree root (default: the checkout around the working directory, else the embedded tree)")
	name := fs.String("workload", "", "the workload (its package under workloads/ declares it)")
	messages := fs.Int64("batches", 0, "how many messages (a sensor-batch message is a batch) of the corpus, from the first")
	format := fs.String("o", "table", "output: table or json")
	file := fs.String("messages", "", "also write the messages, as a big-endian u32 length and the message each (its value, as on the topic), to this file: the corpus an arm's own tests decode")
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
	if t := wl.Transform; t.QualityFloor != nil {
		out.Transform = &corpusTransform{DropUnit: t.DropUnit, QualityFloor: *t.QualityFloor}
	}
	if wl.Avro != nil {
		out.SchemaID = corpusSchemaID
	}
	if *file != "" {
		if err := writeMessages(wl, n, *file); err != nil {
			return err
		}
	}
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

// writeMessages writes the first n messages of wl's corpus to path, each as
// a big-endian u32 length and the message's value, framed with
// corpusSchemaID where the workload is registry-framed.
func writeMessages(wl schema.Workload, n int64, path string) error {
	d, err := workloads.Open(wl, n, corpusSchemaID)
	if err != nil {
		return err
	}
	w := d.NewWriter()
	var buf, msg []byte
	for i := range n {
		msg, keyLen, err := w.AppendMessage(msg[:0], i)
		if err != nil {
			return fmt.Errorf("message %d of %s: %w", i, d, err)
		}
		buf = binary.BigEndian.AppendUint32(buf, uint32(len(msg)-keyLen))
		buf = append(buf, msg[keyLen:]...)
	}
	if err := os.WriteFile(path, buf, 0o644); err != nil {
		return fmt.Errorf("writing the messages: %w", err)
	}
	return nil
}
