package interop

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"spatec.dev/spatec/runs/record"
	sensorbatch "spatec.dev/spatec/workloads/sensor-batch"
)

// ReadSchema2 reads a JSONL file of schema-2 records into Entries, in file
// order. Nothing is dropped silently: every non-blank line either becomes an
// Entry or yields at least one Problem with the file and line, and a bad line
// never stops the lines after it from being read.
//
// A line is unusable, and yields only Problems, when it is not JSON, is cut
// short, is not an object, is not schema 2 (a spatec record, an older or a
// newer schema), cannot be parsed by the reference's own reader (a required
// field missing, a value of the wrong type or outside its vocabulary), or
// repeats a run_id seen earlier in the file (the trace of a line applied
// twice by a union merge, which would otherwise count one run twice).
//
// A line the reference can parse but its validator would refuse (a tuning
// trigger, an empty image digest, a metric in an unknown unit, …) still
// becomes an Entry, because what it says is readable; each refusal is also
// returned as a Problem saying the record was kept.
func ReadSchema2(path string) ([]Entry, []record.Problem) {
	f, err := os.Open(path)
	if err != nil {
		return nil, []record.Problem{{File: path, Message: fmt.Sprintf("cannot read the file: %v", err)}}
	}
	defer f.Close()

	var (
		entries  []Entry
		problems []record.Problem
		seen     = map[string]int{} // run_id -> line first read
	)
	report := func(line int, msg string) {
		problems = append(problems, record.Problem{File: path, Line: line, Message: msg})
	}

	lastUnterminated := false
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), record.MaxLineBytes)
	sc.Split(func(data []byte, atEOF bool) (int, []byte, error) {
		adv, tok, err := bufio.ScanLines(data, atEOF)
		lastUnterminated = atEOF && tok != nil && adv == len(data) && data[len(data)-1] != '\n'
		return adv, tok, err
	})
	n := 0
	for sc.Scan() {
		n++
		raw := sc.Bytes()
		if len(bytes.TrimSpace(raw)) == 0 {
			continue
		}
		lineEnds := ""
		if lastUnterminated {
			lineEnds = "; it is the file's last line and has no newline"
		}
		if msg, ok := notSchema2(raw); !ok {
			if strings.HasPrefix(msg, "truncated") {
				msg += lineEnds
			}
			report(n, msg)
			continue
		}
		rec, c := decodeSchema2(raw)
		if rec == nil || len(c.problems) > 0 {
			for _, p := range c.problems {
				if strings.HasPrefix(p, "truncated") {
					p += lineEnds
				}
				report(n, "unusable schema-2 record: "+p)
			}
			continue
		}
		if first, dup := seen[rec.RunID]; dup {
			report(n, fmt.Sprintf("run_id %s already read at line %d: a run id is minted once per run, so this line is a copy (a union merge applied twice?); not read a second time", rec.RunID, first))
			continue
		}
		seen[rec.RunID] = n
		for _, msg := range rec.rules(c) {
			report(n, "kept, but the reference's validator or site would refuse it: "+msg)
		}
		entries = append(entries, entryFromSchema2(path, n, rec, c.unknown))
	}
	if err := sc.Err(); err != nil {
		why := err.Error()
		if errors.Is(err, bufio.ErrTooLong) {
			why = fmt.Sprintf("a line longer than %d MiB", record.MaxLineBytes>>20)
		}
		report(n+1, fmt.Sprintf("reading stopped: %s; the rest of the file was not read", why))
	}
	return entries, problems
}

// notSchema2 says why raw cannot be read as a schema-2 record before its
// fields are looked at: it is damaged JSON, not an object, or another schema.
func notSchema2(raw []byte) (string, bool) {
	if IsSchema2(raw) {
		return "", true
	}
	trimmed := bytes.TrimSpace(raw)
	if !json.Valid(trimmed) {
		if truncated(trimmed) {
			return "truncated record: the line ends inside a JSON value, as an interrupted append leaves it; the run it belonged to is not readable", false
		}
		var v any
		return fmt.Sprintf("not valid JSON: %v", json.Unmarshal(trimmed, &v)), false
	}
	var probe map[string]json.RawMessage
	if json.Unmarshal(trimmed, &probe) != nil {
		return fmt.Sprintf("is %s, not a JSON object: not a record", jsonKind(trimmed)), false
	}
	schema, ok := probe["schema"]
	if !ok {
		return "no schema field: not a schema-2 record", false
	}
	var s string
	if json.Unmarshal(schema, &s) == nil {
		if s == record.SchemaV1 {
			return fmt.Sprintf("a spatec record (schema %q), not schema 2: route it with IsSchema2 and read it with record.ScanFile", s), false
		}
		return fmt.Sprintf("schema %q is not schema 2", s), false
	}
	return fmt.Sprintf("schema %s is not schema 2; this reader knows only the reference's schema 2", schema), false
}

// entryFromSchema2 maps a record the reference can parse onto an Entry.
func entryFromSchema2(file string, line int, r *s2Record, unknown []string) Entry {
	e := Entry{
		Source:          SourceSchema2,
		File:            file,
		Line:            line,
		RunID:           r.RunID,
		Rep:             int(r.Rep),
		Reps:            int(r.Reps),
		Entrant:         r.SUT.Entrant,
		Variant:         r.SUT.VariantID,
		Env:             r.Run.EnvID,
		EnvDigest:       r.Run.EnvDigest,
		InfraDigest:     r.Run.Infra.Digest,
		DatasetVersion:  r.Run.DatasetVersion,
		Messages:        variantInt(r.Variant, "batches"),
		EndedAt:         time.UnixMilli(int64(r.Run.TsMs)).UTC(),
		HarnessVersion:  int(r.Run.HarnessVersion),
		HarnessProtocol: SourceSchema2,
		Status:          r.Status,
		Facts:           schema2Facts(r),
	}
	commitUsed := false
	switch {
	case present(r.SUT.Version):
		e.ArmVersion = *r.SUT.Version
	case present(r.SUT.Commit):
		e.ArmVersion = *r.SUT.Commit
		commitUsed = true
	}
	if r.Note != nil {
		e.Note = *r.Note
	}
	e.Caveats = append(e.Caveats, fmt.Sprintf(
		"harness_version %d is the reference harness's protocol, not spatec's protocol of the same number", r.Run.HarnessVersion))
	if v, ok := sensorbatch.SpatecLabel(r.Run.DatasetVersion); ok {
		e.DatasetVersion, e.RecordedDatasetVersion, e.Workload = v, r.Run.DatasetVersion, "sensor-batch"
		e.Caveats = append(e.Caveats, fmt.Sprintf(
			"dataset_version %s is the reference harness's label for the corpus spatec generates as %s (byte for byte: the harness's golden fingerprints, checked by workloads/sensor-batch's golden tests), read as spatec's",
			r.Run.DatasetVersion, v))
	}

	mapped := map[string]bool{}
	if s2CarriesMetrics(r.Status) {
		if v, ok := s2Figure(r.Metrics, "rows_per_s", "records/s"); ok {
			e.HarnessRowsPerS, mapped["rows_per_s"] = v, true
			e.Caveats = append(e.Caveats, "rows_per_s: schema 2's records/s is ClickHouse rows per second (factor 1): count() at the poll that reached the expected rows, duplicates included, over the harness's window, its 1 Hz sampler's first reading to its last; read as harness_rows_per_s, which spatec records over an approximation of that window (within about a second of it), not as spatec's rows_per_s (N distinct rows over spatec's window)")
		}
		if v, ok := s2Figure(r.Metrics, "cores_used", "cores"); ok {
			e.CoresUsed, mapped["cores_used"] = v, true
		}
		if v, ok := s2Figure(r.Metrics, "peak_anon_bytes", "bytes"); ok {
			e.PeakAnonBytes, mapped["peak_anon_bytes"] = v, true
			e.Caveats = append(e.Caveats, "peak_anon_bytes: the cgroup's anon alone; spatec's figure adds shmem (C7)")
		}
	}

	// What the record says that no Entry field carries. A blank or absent
	// optional value says nothing and is not listed.
	var un []string
	add := func(path string, has bool) {
		if has {
			un = append(un, path)
		}
	}
	nonBlank := func(s string) bool { return strings.TrimSpace(s) != "" }
	add("bench", nonBlank(r.Bench))
	add("kind", nonBlank(r.Kind))
	add("sut.commit", present(r.SUT.Commit) && !commitUsed)
	add("sut.image_digest", nonBlank(r.SUT.ImageDigest))
	add("sut.image", nonBlank(r.SUT.Image))
	add("sut.toolchain", present(r.SUT.Toolchain))
	add("run.invocation_id", nonBlank(r.Run.InvocationID))
	add("run.commit", present(r.Run.Commit))
	add("run.trigger", nonBlank(r.Run.Trigger))
	in := r.Run.Infra
	// What the environment's facts carry (schema2Facts) is mapped.
	carried := func(key string) bool { _, ok := e.Facts.Get(key); return ok }
	for _, f := range []struct {
		name string
		has  bool
	}{
		{"broker", nonBlank(in.Broker)}, {"broker_version", nonBlank(in.BrokerVersion) && !carried(FactBrokerVersion)},
		{"broker_image_digest", nonBlank(in.BrokerImageDigest) && !carried(FactBrokerImageID)}, {"broker_cpus", nonBlank(in.BrokerCPUs) && !carried(FactBrokerCPUs)},
		{"broker_memory", nonBlank(in.BrokerMemory) && !carried(FactBrokerMemory)}, {"clickhouse_version", nonBlank(in.ClickHouseVersion) && !carried(FactClickHouseVersion)},
		{"clickhouse_image_digest", nonBlank(in.ClickHouseImageDigest) && !carried(FactClickHouseImageID)}, {"clickhouse_cpus", nonBlank(in.ClickHouseCPUs) && !carried(FactClickHouseCPUs)},
		{"clickhouse_memory", nonBlank(in.ClickHouseMemory) && !carried(FactClickHouseMemory)}, {"partitions", !carried(FactPartitions)},
		{"registry", nonBlank(in.Registry)},
		// 0 is a statement for the required ceiling (none was available)
		// and only the default for the other two.
		{"ceiling_msgs_per_s", true}, {"ceiling_bytes_per_s", in.CeilingBytesPerS != 0},
		{"ceiling_rows_per_s", in.CeilingRowsPerS != 0},
	} {
		add("run.infra."+f.name, f.has)
	}
	for _, k := range sortedKeys(r.Variant) {
		add("variant."+k, k != "batches" || e.Messages == 0)
	}
	for _, k := range sortedKeys(r.Metrics) {
		add("metrics."+k, !mapped[k])
	}
	for _, f := range r.Flags {
		un = append(un, "flags."+f)
	}
	un = append(un, unknown...)
	slices.Sort(un)
	e.Unmapped = slices.Compact(un)
	return e
}

// s2Figure returns metric name converted to the unit an Entry states it in,
// when the record gives it in the unit named (records/s is rows/s with a
// factor of 1, so no arithmetic is involved for the headline figures).
func s2Figure(m map[string]s2Metric, name, unit string) (*float64, bool) {
	v, ok := m[name]
	if !ok || v.Unit != unit {
		return nil, false
	}
	x := v.Value
	return &x, true
}

// ReadFile reads a results file of the reference harness's, when it is
// one: its first non-blank line is a schema-2 record. handled is false for
// any other file (a spatec log), which the caller reads itself; a file
// that cannot be opened is left to the caller too, which says why.
func ReadFile(path string) (entries []Entry, problems []record.Problem, handled bool) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, false
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), record.MaxLineBytes)
	first := []byte(nil)
	for sc.Scan() {
		if line := bytes.TrimSpace(sc.Bytes()); len(line) > 0 {
			first = line
			break
		}
	}
	f.Close()
	if first == nil || !IsSchema2(first) {
		return nil, nil, false
	}
	entries, problems = ReadSchema2(path)
	return entries, problems, true
}

// variantInt is a schema-2 variant knob that holds a positive integer, or 0.
func variantInt(v map[string]json.RawMessage, name string) int64 {
	var n int64
	if raw, ok := v[name]; !ok || json.Unmarshal(raw, &n) != nil || n < 0 {
		return 0
	}
	return n
}
