package interop

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"spatec.dev/spatec/runs/record"
	sensorbatch "spatec.dev/spatec/workloads/sensor-batch"
)

// Supplied holds the facts a schema-2 record requires that a spatec record
// does not hold. Export never guesses them; a caller who knows them (from the
// environment file, or from why the run was started) passes them to
// ExportWith, and the exported note names every one as supplied at export
// rather than recorded by spatec.
type Supplied struct {
	// Bench is schema 2's suite name, which spatec does not record. The
	// reference's one suite is "kafka_avro_clickhouse", its Avro
	// sensor-batch corpus into ClickHouse: what spatec's sensor-batch
	// workload runs too; spatec's json-rows workload is a suite the
	// reference does not have.
	Bench string
	// Trigger is what caused the run: "nightly", "manual" or "release".
	// spatec does not record it. "pr" and "tuning" are refused, because the
	// reference's validator refuses such a record under results/.
	Trigger string
	// Broker is the broker family, e.g. "redpanda". spatec records the
	// broker container's image, digest and version, but not its family.
	Broker string
	// Registry names the schema registry implementation, which spatec does
	// not record.
	Registry string
	// Partitions is the topic's partition count; spatec's record does not
	// carry it (it is inside the environment its env_digest hashes).
	Partitions int
}

// MissingError is Export's refusal: fields schema 2 requires for which the
// spatec record (and whatever was Supplied) has no value. Writing a
// placeholder would put an invented fact in front of the reference's readers,
// so every such field is listed instead, all at once.
type MissingError struct {
	RunID string
	// Fields are schema-2 paths (e.g. "run.trigger"), sorted.
	Fields []string
	// Reasons says, per field, why spatec has no value for it.
	Reasons map[string]string
}

func (e *MissingError) Error() string {
	parts := make([]string, len(e.Fields))
	for i, f := range e.Fields {
		parts[i] = f + " (" + e.Reasons[f] + ")"
	}
	return fmt.Sprintf("run %s cannot be written as schema 2 without inventing %d required field(s): %s",
		e.RunID, len(e.Fields), strings.Join(parts, "; "))
}

func (e *MissingError) need(field, why string) {
	if _, dup := e.Reasons[field]; !dup {
		e.Fields = append(e.Fields, field)
	}
	e.Reasons[field] = why
}

// Export is ExportWith with nothing supplied. A spatec record never holds
// bench, run.trigger, run.infra.broker, run.infra.registry or
// run.infra.partitions, all of which schema 2 requires, so Export alone
// always returns a *MissingError naming at least those; its use is to say,
// for a given record, everything that stands between it and schema 2.
func Export(r record.Record) ([]byte, error) {
	return ExportWith(r, Supplied{})
}

// ExportWith returns r as one schema-2 JSON line, without a trailing newline,
// that the reference's validator and its site loader would accept (checked
// with CheckSchema2 before it is returned).
//
// Values are carried over, never invented: what spatec did not observe and
// schema 2 treats as optional is left out; a required field with no spatec
// value and nothing in s is listed in a *MissingError. Units are converted
// exactly (rows/s to records/s ×1, bytes/s to MB/s ÷10^6, s to µs ×10^6);
// metrics schema 2 has no unit for (msg/s, counts of events) are left out and
// named in the note. Schema 2's rows_per_s is the reference harness's
// rate, so it is written from spatec's harness_rows_per_s (spatec's
// approximation of it, from its own instants, and the note says so), and
// spatec's own rate and window go
// out as spatec_rows_per_s and spatec_window_us. The dataset_version is the
// reference harness's label for the one spatec dataset the golden tests of
// workloads/sensor-batch find to be its corpus (with the size in
// variant.batches, as the reference states it), and spatec's own label for
// any other. The note says what the numbers mean where schema 2 would read
// them otherwise: harness_version numbers spatec's protocol, rows_per_s is
// the harness's definition, which dataset_version is carried and why, and
// peak_anon_bytes counts anon+shmem.
//
// Statuses map faithfully: ok and infra_bound keep their names and metrics;
// failed stays failed and refused becomes failed (the reference records its
// own refusals that way), both without metrics, which schema 2 forbids on
// them.
func ExportWith(r record.Record, s Supplied) ([]byte, error) {
	if r.Schema != record.SchemaV1 {
		return nil, fmt.Errorf("run %s: schema %q is not %q, so its fields cannot be mapped with confidence", r.RunID, r.Schema, record.SchemaV1)
	}
	if err := s.check(); err != nil {
		return nil, fmt.Errorf("run %s: %w", r.RunID, err)
	}
	if f := r.SUT.Footprint; f != nil {
		// Schema 2 cannot say that a run left the envelope on purpose: its
		// readers would rank it beside the comparison's.
		return nil, fmt.Errorf("run %s: a point of footprint study %s (its data plane given %v of the envelope's %v %s) left the envelope on purpose, and schema 2 cannot say so; it is not exported", r.RunID, r.SUT.Study, f.Cap, f.Full, f.Axis)
	}
	if sc := r.Scenario; sc != nil {
		// Nor can it say that a fault was injected mid-drain: its readers
		// would rank what the fault cost as the arm's rate.
		return nil, fmt.Errorf("run %s: a run of failure scenario %s (the %s's %s injected mid-drain) was disturbed on purpose, and schema 2 cannot say so; it is not exported", r.RunID, sc.Name, sc.Component, sc.Action)
	}
	miss := &MissingError{RunID: r.RunID, Reasons: map[string]string{}}
	var notes, supplied []string
	blank := func(v string) bool { return strings.TrimSpace(v) == "" }

	out := s2Record{Schema: s2SchemaVersion, Kind: "measurement", RunID: r.RunID}
	if blank(r.RunID) {
		miss.need("run_id", "the spatec record has no run_id")
	}
	if r.Rep < 1 || r.Reps < r.Rep {
		return nil, fmt.Errorf("run %s: rep %d of %d is not a valid repetition, in spatec or in schema 2", r.RunID, r.Rep, r.Reps)
	}
	out.Rep, out.Reps = uint64(r.Rep), uint64(r.Reps)

	switch r.Status {
	case record.StatusOK, record.StatusInfraBound, record.StatusFailed:
		out.Status = string(r.Status)
	case record.StatusRefused:
		out.Status = "failed"
		notes = append(notes, "spatec status refused (a contract check stopped the run before its window opened) is written as failed, which is how the reference records its own refusals")
	default:
		return nil, fmt.Errorf("run %s: status %q is not a spatec status, so it has no schema-2 counterpart", r.RunID, r.Status)
	}

	if s.Bench != "" {
		out.Bench = s.Bench
		supplied = append(supplied, "bench")
	} else {
		miss.need("bench", "spatec records no suite name (the reference's kafka_avro_clickhouse is its sensor-batch corpus into ClickHouse)")
	}

	// The system under test. Schema 2 names one image per arm; spatec's
	// arm has exactly one data-plane container (C3), whose image is the arm's.
	out.SUT.Entrant = r.SUT.Entrant
	if blank(r.SUT.Entrant) {
		miss.need("sut.entrant", "the spatec record has no sut.entrant")
	}
	out.SUT.VariantID = r.SUT.Variant
	if r.SUT.Variant == "" {
		notes = append(notes, "an empty sut.variant_id is spatec's default variant of the entrant")
	}
	if blank(r.SUT.Version) {
		miss.need("sut.version", "spatec read no version inside the image, and records no upstream commit, schema 2's alternative")
	} else {
		v := r.SUT.Version
		out.SUT.Version = &v
	}
	var dataPlane *record.Container
	for i := range r.SUT.Containers {
		c := &r.SUT.Containers[i]
		if c.Role == "data-plane" && dataPlane == nil {
			dataPlane = c
			continue
		}
		notes = append(notes, fmt.Sprintf("%s container %s ran image %s (%s), not carried: schema 2 names one image per arm",
			c.Role, c.Name, c.Image, c.ImageDigest))
	}
	if dataPlane == nil {
		miss.need("sut.image_digest", "the spatec record names no data-plane container")
		miss.need("sut.image", "the spatec record names no data-plane container")
	} else {
		out.SUT.ImageDigest, out.SUT.Image = dataPlane.ImageDigest, dataPlane.Image
		if blank(dataPlane.ImageDigest) {
			miss.need("sut.image_digest", "spatec recorded no image digest for the data-plane container")
		}
		if blank(dataPlane.Image) {
			miss.need("sut.image", "spatec recorded no image for the data-plane container")
		}
	}

	// Provenance.
	if r.Run.EndedAt.IsZero() || r.Run.EndedAt.UnixMilli() < 0 {
		miss.need("run.ts_ms", "spatec's run.ended_at is unset; ts_ms is when the record was built, after the window closed")
	} else {
		out.Run.TsMs = uint64(r.Run.EndedAt.UnixMilli())
	}
	out.Run.EnvID, out.Run.EnvDigest = r.Run.Env, r.Run.EnvDigest
	var harnessCorpus bool
	out.Run.DatasetVersion, harnessCorpus, notes = exportDataset(r.Run.Dataset, notes)
	for _, f := range []struct{ field, value, spatec string }{
		{"run.env_id", r.Run.Env, "run.env"},
		{"run.env_digest", r.Run.EnvDigest, "run.env_digest"},
		{"run.dataset_version", r.Run.Dataset.Version, "run.dataset.version"},
	} {
		if blank(f.value) {
			miss.need(f.field, "spatec's "+f.spatec+" is empty")
		}
	}
	if r.Run.HarnessVersion < 1 {
		miss.need("run.harness_version", "spatec's run.harness_version is unset")
	} else {
		out.Run.HarnessVersion = uint64(r.Run.HarnessVersion)
		notes = append(notes, fmt.Sprintf("harness_version %d is spatec's measurement protocol %d (a drain until distinct rows reach N, spatec's sampler and gates), not the reference harness's protocol %d: only rows_per_s follows the reference's definition, and the other figures are not to be compared with reference records",
			r.Run.HarnessVersion, r.Run.HarnessVersion, r.Run.HarnessVersion))
		if r.Run.HarnessVersion >= 2 {
			miss.need("run.invocation_id", "the reference requires one from harness_version 2 on, and spatec records no invocation id")
		}
	}
	if !blank(r.Run.SpatecCommit) {
		c := r.Run.SpatecCommit
		out.Run.Commit = &c
	}
	if s.Trigger != "" {
		out.Run.Trigger = s.Trigger
		supplied = append(supplied, "run.trigger")
	} else {
		miss.need("run.trigger", "spatec does not record what caused a run")
	}

	// The shared infrastructure, as read back from its containers.
	in := &out.Run.Infra
	in.Digest = r.Run.InfraDigest
	if blank(r.Run.InfraDigest) {
		miss.need("run.infra.digest", "spatec's run.infra_digest is empty")
	}
	if s.Broker != "" {
		in.Broker = s.Broker
		supplied = append(supplied, "run.infra.broker")
	} else {
		miss.need("run.infra.broker", "spatec records the broker's image and version, not its family")
	}
	if s.Registry != "" {
		in.Registry = s.Registry
		supplied = append(supplied, "run.infra.registry")
	} else {
		miss.need("run.infra.registry", "spatec does not record a schema registry")
	}
	if s.Partitions > 0 {
		in.Partitions = int64(s.Partitions)
		supplied = append(supplied, "run.infra.partitions")
	} else {
		miss.need("run.infra.partitions", "spatec's record does not carry the topic's partition count")
	}
	v1 := false
	for _, svc := range []struct {
		role                          string
		version, digest, cpus, memory *string
	}{
		{"broker", &in.BrokerVersion, &in.BrokerImageDigest, &in.BrokerCPUs, &in.BrokerMemory},
		{"clickhouse", &in.ClickHouseVersion, &in.ClickHouseImageDigest, &in.ClickHouseCPUs, &in.ClickHouseMemory},
	} {
		field := func(name string) string { return "run.infra." + svc.role + "_" + name }
		var c *record.Container
		for i := range r.Run.Infra {
			if r.Run.Infra[i].Role == svc.role {
				c = &r.Run.Infra[i]
				break
			}
		}
		if c == nil {
			for _, name := range []string{"version", "image_digest", "cpus", "memory"} {
				miss.need(field(name), "spatec's run.infra has no "+svc.role+" container")
			}
			continue
		}
		*svc.version, *svc.digest = c.Version, c.ImageDigest
		if blank(c.Version) {
			miss.need(field("version"), "spatec read no version inside the "+svc.role+" image")
		}
		if blank(c.ImageDigest) {
			miss.need(field("image_digest"), "spatec recorded no image digest for "+c.Name)
		}
		files := r.Run.Cgroups[c.Name]
		cpus, fromV1, ok := cpuMax(files)
		if ok {
			*svc.cpus = cpus
			v1 = v1 || fromV1
		} else {
			miss.need(field("cpus"), "spatec read no CPU cap back from "+c.Name+"'s cgroup")
		}
		mem, fromV1, ok := memoryMax(files)
		if ok {
			*svc.memory = mem
			v1 = v1 || fromV1
		} else {
			miss.need(field("memory"), "spatec read no memory cap back from "+c.Name+"'s cgroup")
		}
	}
	if v1 {
		notes = append(notes, "infra caps read from cgroup v1 are written in cpu.max form (quota period, -1 as max) and memory.limit_in_bytes as read")
	}
	var rounded []string
	ceiling := func(key, unit, field string, required bool) (uint64, bool) {
		m, ok := r.Run.Ceilings[key]
		switch {
		case !ok:
			// 0 is the reference's own "no ceiling was available" for the
			// required one, and "not stated" for the others.
			return 0, true
		case m.Unit != unit || m.Value < 0 || math.IsNaN(m.Value) || m.Value > math.MaxInt64:
			if required {
				miss.need(field, fmt.Sprintf("spatec's ceiling %s is %v %s, which does not convert to an integer %s", key, m.Value, m.Unit, unit))
			} else {
				notes = append(notes, fmt.Sprintf("ceiling %s (%v %s) not carried", key, m.Value, m.Unit))
			}
			return 0, false
		}
		v := math.Round(m.Value)
		if v != m.Value {
			rounded = append(rounded, fmt.Sprintf("%s %s to %s", key, strconv.FormatFloat(m.Value, 'f', -1, 64), strconv.FormatFloat(v, 'f', -1, 64)))
		}
		return uint64(v), true
	}
	in.CeilingMsgsPerS, _ = ceiling("broker_msgs_per_s", "msg/s", "run.infra.ceiling_msgs_per_s", true)
	in.CeilingBytesPerS, _ = ceiling("broker_bytes_per_s", "bytes/s", "run.infra.ceiling_bytes_per_s", false)
	in.CeilingRowsPerS, _ = ceiling("clickhouse_rows_per_s", "rows/s", "run.infra.ceiling_rows_per_s", false)
	if len(rounded) > 0 {
		notes = append(notes, "ceilings are integers in schema 2, rounded from spatec's: "+strings.Join(rounded, ", "))
	}

	// The knobs, as spatec recorded them.
	out.Variant = map[string]json.RawMessage{}
	for _, k := range sortedKeys(r.Variant) {
		b, err := json.Marshal(r.Variant[k])
		if err != nil {
			return nil, fmt.Errorf("run %s: variant %s: %w", r.RunID, k, err)
		}
		out.Variant[k] = b
	}
	// The reference's label covers its corpus at any size, and states the
	// size in variant.batches, which its site keeps records apart by.
	if n := r.Run.Dataset.Messages; harnessCorpus && n > 0 {
		if _, taken := out.Variant["batches"]; taken {
			notes = append(notes, fmt.Sprintf("variant.batches is spatec's knob of that name, not the %d batches drained (run.dataset.messages)", n))
		} else {
			out.Variant["batches"] = json.RawMessage(strconv.FormatInt(n, 10))
			notes = append(notes, "variant.batches is the batches drained, spatec's run.dataset.messages")
		}
	}

	// The numbers, only where schema 2 allows them.
	out.Metrics = map[string]s2Metric{}
	if r.Status.CarriesMeasurement() {
		notes = append(notes, exportMetrics(r.Metrics, out.Metrics)...)
	} else if len(r.Metrics) > 0 {
		notes = append(notes, fmt.Sprintf("%d spatec metric(s) of this %s run not carried: schema 2 allows no metrics on a failed record", len(r.Metrics), r.Status))
	}
	if len(out.Metrics) == 0 && r.Status.CarriesMeasurement() {
		return nil, fmt.Errorf("run %s: status %s but no metric converts to schema 2; a measured record without numbers would be refused", r.RunID, r.Status)
	}

	// Flags: only the ones that mean the same thing in both tools.
	var dropped []string
	for _, f := range r.Flags {
		if f == record.FlagHeadroomUnproven {
			out.Flags = append(out.Flags, "headroom_unproven")
		} else {
			dropped = append(dropped, f)
		}
	}
	if r.Status.CarriesMeasurement() && armThrottled(r) {
		out.Flags = append(out.Flags, "cpu_cap_throttled")
		notes = append(notes, "cpu_cap_throttled is derived from spatec's throttled_s.<container> above 0 for an arm container")
	}
	if len(dropped) > 0 {
		notes = append(notes, "spatec flags with no schema-2 counterpart: "+strings.Join(dropped, ", "))
	}
	notes = append(notes, "reused_infra and third_party_hardware are absent because spatec does not record them, not because they are known to be false")
	if len(supplied) > 0 {
		notes = append(notes, "supplied at export, not recorded by spatec: "+strings.Join(supplied, ", "))
	}

	if len(miss.Fields) > 0 {
		slices.Sort(miss.Fields)
		return nil, miss
	}

	head := "exported from a spatec record (" + record.SchemaV1
	if r.Run.SpatecVersion != "" {
		head += ", spatec " + r.Run.SpatecVersion
	}
	note := head + "): " + strings.Join(notes, "; ")
	if r.Note != "" {
		note += "; spatec note: " + r.Note
	}
	out.Note = &note

	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		return nil, fmt.Errorf("run %s: encoding the schema-2 record: %w", r.RunID, err)
	}
	line := bytes.TrimRight(buf.Bytes(), "\n")
	if problems := CheckSchema2(line); len(problems) > 0 {
		return nil, fmt.Errorf("run %s: the schema-2 record would be refused by the reference: %s", r.RunID, strings.Join(problems, "; "))
	}
	return line, nil
}

// check refuses supplied values the reference would refuse.
func (s Supplied) check() error {
	var bad []string
	if s.Trigger != "" && !slices.Contains(s2Triggers, s.Trigger) {
		bad = append(bad, fmt.Sprintf("trigger %q is not one of %s", s.Trigger, strings.Join(s2Triggers, ", ")))
	} else if s2BarsPublication(s.Trigger) {
		bad = append(bad, fmt.Sprintf("trigger %q bars publication, and the reference's validator refuses such a record under results/", s.Trigger))
	}
	for _, f := range []struct{ name, v string }{{"bench", s.Bench}, {"broker", s.Broker}, {"registry", s.Registry}} {
		if f.v != "" && strings.TrimSpace(f.v) == "" {
			bad = append(bad, f.name+" is blank")
		}
	}
	if s.Partitions < 0 || s.Partitions > math.MaxInt32 {
		bad = append(bad, fmt.Sprintf("partitions %d is not a partition count", s.Partitions))
	}
	if len(bad) > 0 {
		return fmt.Errorf("supplied values the reference would refuse: %s", strings.Join(bad, "; "))
	}
	return nil
}

// exportMetrics converts every metric schema 2 has a unit for into out and
// returns the note clauses saying what was converted, what was left out, and
// what the carried figures mean.
func exportMetrics(in map[string]record.Metric, out map[string]s2Metric) []string {
	var (
		notes      []string
		conversion = map[string]bool{}
		left       []string
	)
	for _, name := range sortedKeys(in) {
		m := in[name]
		to, unit, value, how, why := convertMetric(name, m)
		if why == "" {
			if _, taken := out[to]; taken {
				why = "its converted name " + to + " is taken"
			}
		}
		if why != "" {
			left = append(left, name+" ("+why+")")
			continue
		}
		out[to] = s2Metric{Value: value, Unit: unit, HigherIsBetter: m.HigherIsBetter}
		if how != "" {
			conversion[how] = true
		}
	}
	if len(conversion) > 0 {
		notes = append(notes, "units converted: "+strings.Join(sortedKeys(conversion), ", "))
	}
	if _, ok := out[s2RowsPerS]; ok {
		notes = append(notes, "rows_per_s approximates the reference harness's rate, computed by spatec from its own instants (spatec's harness_rows_per_s): "+
			"the rows count() gave at the first 100 ms poll that reached the expected rows, duplicates included, over harness_window_us, from the arm's last container start to that poll; "+
			"the harness's own window is its 1 Hz sampler's, whole seconds, within about a second of this one")
	} else {
		notes = append(notes, "no rows_per_s: the record carries no harness_rows_per_s (the arm's start was not recorded, or the drain did not complete), so the reference harness's figure cannot be given")
	}
	if _, ok := out[exportName[record.RowsPerS]]; ok {
		notes = append(notes, "spatec_rows_per_s is spatec's own rate, the N distinct rows over spatec_window_us (from when spatec began to watch the table, the caps verified, to the poll that saw N distinct rows); cores_used and the other rates are over spatec's window too")
	}
	var anon []string
	for _, k := range []string{record.PeakAnonBytes, record.DataPlanePeakAnonBytes} {
		if _, ok := out[k]; ok {
			anon = append(anon, k)
		}
	}
	if len(anon) > 0 {
		notes = append(notes, strings.Join(anon, " and ")+" count anon+shmem (spatec contract C7), where the reference's count anon alone")
	}
	if len(left) > 0 {
		notes = append(notes, "spatec metrics not carried: "+strings.Join(left, ", "))
	}
	return notes
}

// convertMetric maps one spatec metric onto schema 2's units. why is empty
// when it converts; how names the conversion applied, if any.
//
// Each conversion is one IEEE-754 multiplication or division by a power of
// ten, or none, so the result is the exact value correctly rounded.
func convertMetric(name string, m record.Metric) (to, unit string, value float64, how, why string) {
	if renamed, ok := exportName[name]; ok {
		name = renamed
	}
	base, suffix, _ := strings.Cut(name, ".")
	if suffix != "" {
		suffix = "." + suffix
	}
	switch m.Unit {
	case "rows/s":
		return name, "records/s", m.Value, "rows/s to records/s ×1 (a schema-2 record is one ClickHouse row)", ""
	case "bytes/s":
		return name, "MB/s", m.Value / 1e6, "bytes/s to MB/s ÷10^6", ""
	case "s":
		to = name
		if b, ok := strings.CutSuffix(base, "_s"); ok {
			to = b + "_us" + suffix
		}
		return to, "us", m.Value * 1e6, "s to us ×10^6 (a name ending _s renamed _us)", ""
	case "count":
		if strings.HasSuffix(base, "_rows") {
			return name, "rows", m.Value, "count of rows to rows", ""
		}
		return "", "", 0, "", "a count of something other than rows, and schema 2's only count unit is rows"
	case "msg/s":
		return "", "", 0, "", "schema 2 has no message-rate unit, and its records/s means rows"
	case "cores", "bytes", "ratio":
		return name, m.Unit, m.Value, "", ""
	}
	return "", "", 0, "", fmt.Sprintf("unit %q has no schema-2 counterpart", m.Unit)
}

// s2RowsPerS is schema 2's throughput: the reference harness's definition.
const s2RowsPerS = "rows_per_s"

// exportName renames the spatec metrics whose schema-2 names mean
// something else: schema 2's rows_per_s is the reference harness's rate,
// which spatec records as harness_rows_per_s, so spatec's own rate and
// window go out under names of their own.
var exportName = map[string]string{
	record.HarnessRowsPerS: s2RowsPerS,
	record.RowsPerS:        "spatec_rows_per_s",
	record.WindowSeconds:   "spatec_window_s",
}

// exportDataset returns the dataset_version a record is exported with,
// whether it is the reference harness's label (its corpus is the
// harness's), and notes with what it is. The harness's label is carried
// for the one spatec dataset the golden tests of workloads/sensor-batch
// find to be its corpus; any other dataset keeps spatec's own label.
func exportDataset(d record.Dataset, notes []string) (string, bool, []string) {
	if strings.TrimSpace(d.Version) == "" {
		return d.Version, false, notes // refused as missing
	}
	if label, ok := sensorbatch.HarnessLabel(d.Version); ok {
		return label, true, append(notes, fmt.Sprintf(
			"dataset_version %s is the reference harness's label for its corpus, carried because this record's dataset, spatec's %s, is that corpus: "+
				"its first %d batches have the harness's golden fingerprints (workloads/sensor-batch, TestHarnessLabelIsLicensedByTheGoldenFingerprints)",
			label, d.Version, sensorbatch.HarnessGolden().Batches))
	}
	why := "the reference harness has no corpus of that workload"
	if d.Workload == "sensor-batch" || strings.HasPrefix(d.Version, "sensor-batch@") {
		why = fmt.Sprintf("it is not %s, the sensor-batch corpus whose fingerprints match the harness's, so the harness's label %s does not name it", sensorbatch.DatasetVersion, sensorbatch.HarnessDatasetVersion)
	}
	return d.Version, false, append(notes, fmt.Sprintf("dataset_version %s is spatec's own label: %s", d.Version, why))
}

// armThrottled reports whether spatec saw any of the arm's own containers
// throttled by its CPU cap during the window: schema 2's cpu_cap_throttled.
func armThrottled(r record.Record) bool {
	for _, c := range r.SUT.Containers {
		if m, ok := r.Metrics["throttled_s."+c.Name]; ok && m.Unit == "s" && m.Value > 0 {
			return true
		}
	}
	return false
}

// cpuMax returns a container's CPU cap in cgroup v2 cpu.max form
// ("<quota> <period>", or "max <period>"), the form schema 2 records. On
// cgroup v1 the same two numbers are in cpu.cfs_quota_us and
// cpu.cfs_period_us, with -1 for no limit.
func cpuMax(files map[string]string) (value string, fromV1, ok bool) {
	if v, ok := files["cpu.max"]; ok && strings.TrimSpace(v) != "" {
		return strings.TrimSpace(v), false, true
	}
	q, okQ := files["cpu.cfs_quota_us"]
	p, okP := files["cpu.cfs_period_us"]
	q, p = strings.TrimSpace(q), strings.TrimSpace(p)
	if !okQ || !okP || q == "" || p == "" {
		return "", false, false
	}
	if q == "-1" {
		q = "max"
	}
	return q + " " + p, true, true
}

// memoryMax returns a container's memory cap as the kernel wrote it:
// memory.max on cgroup v2, memory.limit_in_bytes on v1.
func memoryMax(files map[string]string) (value string, fromV1, ok bool) {
	if v, ok := files["memory.max"]; ok && strings.TrimSpace(v) != "" {
		return strings.TrimSpace(v), false, true
	}
	if v, ok := files["memory.limit_in_bytes"]; ok && strings.TrimSpace(v) != "" {
		return strings.TrimSpace(v), true, true
	}
	return "", false, false
}
