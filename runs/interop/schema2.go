package interop

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// What this file knows about schema 2 was read from the reference harness
// (github.com/spate-etl/benchmark): harness/src/report.rs declares the record
// and how serde reads it, harness/src/validate.rs the rules `bench validate`
// holds every committed record to, and website/plugins/bench-data/index.js
// what the site keeps. None of it is imported; it is restated here so that a
// record spatec writes can be checked in Go, before anyone runs the reference.

// s2SchemaVersion is the only value of `schema` this package reads or writes.
// The reference's validator accepts older numbers and refuses newer ones; its
// site keeps exactly 2 and skips everything else without saying so.
const s2SchemaVersion = 2

// The closed vocabularies of schema 2. serde refuses a value outside them, so
// `bench validate` reports the whole line as unparseable.
var (
	s2Kinds    = []string{"measurement", "verdict"}
	s2Statuses = []string{"ok", "infra_bound", "unsupported", "failed"}
	s2Triggers = []string{"nightly", "manual", "pr", "tuning", "release"}
	s2Flags    = []string{"cpu_cap_throttled", "headroom_unproven", "saturated",
		"third_party_hardware", "unpublishable_environment", "reused_infra"}
	// s2Units is validate.rs's ALLOWED_UNITS. It has no message rate, no
	// seconds and no bare count: spatec's msg/s, s and count have to be
	// converted or left out.
	s2Units = []string{"MB/s", "bytes", "cores", "ratio", "records/s", "rows", "us"}
)

// s2CarriesMetrics mirrors the reference's Status::carries_metrics: the only
// statuses whose records may, and must, carry numbers.
func s2CarriesMetrics(status string) bool { return status == "ok" || status == "infra_bound" }

// s2BarsPublication mirrors Trigger::bars_publication: a record with such a
// trigger is refused anywhere under results/.
func s2BarsPublication(trigger string) bool { return trigger == "pr" || trigger == "tuning" }

// s2Record is a schema-2 record as this package reads and writes it. The
// field order is the reference's, so an exported line reads like one the
// reference wrote. Pointers stand for the reference's Option fields, which
// may be absent or null; omitempty marks the ones it skips when empty.
type s2Record struct {
	Schema  uint64                     `json:"schema"`
	Bench   string                     `json:"bench"`
	Kind    string                     `json:"kind"`
	Status  string                     `json:"status"`
	RunID   string                     `json:"run_id"`
	Rep     uint64                     `json:"rep"`
	Reps    uint64                     `json:"reps"`
	SUT     s2SUT                      `json:"sut"`
	Run     s2Run                      `json:"run"`
	Variant map[string]json.RawMessage `json:"variant"`
	Metrics map[string]s2Metric        `json:"metrics"`
	Note    *string                    `json:"note,omitempty"`
	Flags   []string                   `json:"flags,omitempty"`

	// metricCount is how many members metrics had when read, whether or
	// not each could be decoded.
	metricCount int
}

type s2SUT struct {
	Entrant     string  `json:"entrant"`
	VariantID   string  `json:"variant_id"`
	Version     *string `json:"version,omitempty"`
	Commit      *string `json:"commit,omitempty"`
	ImageDigest string  `json:"image_digest"`
	Image       string  `json:"image"`
	Toolchain   *string `json:"toolchain,omitempty"`
}

type s2Run struct {
	TsMs           uint64  `json:"ts_ms"`
	InvocationID   string  `json:"invocation_id,omitempty"`
	EnvID          string  `json:"env_id"`
	EnvDigest      string  `json:"env_digest"`
	HarnessVersion uint64  `json:"harness_version"`
	DatasetVersion string  `json:"dataset_version"`
	Commit         *string `json:"commit,omitempty"`
	Trigger        string  `json:"trigger"`
	Infra          s2Infra `json:"infra"`
}

type s2Infra struct {
	Digest                string `json:"digest"`
	Broker                string `json:"broker"`
	BrokerVersion         string `json:"broker_version"`
	BrokerImageDigest     string `json:"broker_image_digest"`
	BrokerCPUs            string `json:"broker_cpus"`
	BrokerMemory          string `json:"broker_memory"`
	ClickHouseVersion     string `json:"clickhouse_version"`
	ClickHouseImageDigest string `json:"clickhouse_image_digest"`
	ClickHouseCPUs        string `json:"clickhouse_cpus"`
	ClickHouseMemory      string `json:"clickhouse_memory"`
	Partitions            int64  `json:"partitions"`
	Registry              string `json:"registry"`
	// CeilingMsgsPerS is required; 0 is the reference's own way of saying
	// no ceiling was available. The other two default to 0, read as "not
	// stated", so they are left out rather than written as 0.
	CeilingMsgsPerS  uint64 `json:"ceiling_msgs_per_s"`
	CeilingBytesPerS uint64 `json:"ceiling_bytes_per_s,omitempty"`
	CeilingRowsPerS  uint64 `json:"ceiling_rows_per_s,omitempty"`
}

type s2Metric struct {
	Value          float64     `json:"value"`
	Unit           string      `json:"unit"`
	HigherIsBetter bool        `json:"higher_is_better"`
	CI95           *[2]float64 `json:"ci95,omitempty"`
	N              *uint64     `json:"n,omitempty"`
}

// CheckSchema2 returns every reason the reference would not accept line as a
// schema-2 record, one message each; nil means `bench validate` and the
// site's loader would both take it.
//
// Three sources of rules, because acceptance is decided in three places:
//
//   - the reference's reader: validate.rs parses each line with serde into
//     its Report type before checking anything, so a missing required
//     field, a null where no Option is, a number that is not an integer of
//     the right width, a value outside a closed vocabulary, a field given
//     twice, invalid UTF-8 (the file is read as a Rust string) or broken JSON
//     each makes the line unparseable. serde stops at the first; this
//     reports all of them. Unknown fields are ignored there, and here.
//   - validate.rs's per-record rules (check_record): no schema newer than 2;
//     an invocation_id from harness 2 on; no trigger that bars publication;
//     no unpublishable_environment flag; an image digest that is present
//     and sha256:-prefixed; a version or a commit; non-blank env_id,
//     env_digest and dataset_version; units from the allowed set; status and
//     metrics agreeing in both directions; 1 <= rep <= reps.
//   - the site's loader, which keeps only objects whose schema is exactly
//     the number 2 and drops the rest silently.
//
// The one validate.rs rule it cannot apply is tree-wide: a run_id seen
// twice. ReadSchema2 applies it within a file.
func CheckSchema2(line []byte) []string {
	rec, c := decodeSchema2(line)
	if rec == nil {
		return c.problems
	}
	return append(c.problems, rec.rules(c)...)
}

// IsSchema2 reports whether line is a JSON object whose schema field is the
// number 2, so a caller reading a mixed file can send the line to
// ReadSchema2's rules rather than spatec's. Only the top-level members up to
// schema are read, so a schema-2 line cut short after that field is still
// recognised, and its damage is reported by the schema-2 reader.
func IsSchema2(line []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return false
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return false
		}
		if key, _ := t.(string); key != "schema" {
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				return false
			}
			continue
		}
		t, err = dec.Token()
		if err != nil {
			return false
		}
		n, ok := t.(json.Number)
		if !ok {
			return false
		}
		f, err := n.Float64()
		return err == nil && f == s2SchemaVersion
	}
	return false
}

// checker collects what is wrong with one line, and which paths could not be
// read, so that a rule about a field that is missing or malformed does not
// pile a second message on the first.
type checker struct {
	problems []string
	bad      map[string]bool
	// unknown holds the paths of members the reference's types do not
	// declare. They are not errors (serde skips them) but they are
	// information that nothing reads.
	unknown []string
}

func (c *checker) fail(path, format string, args ...any) {
	c.bad[path] = true
	msg := fmt.Sprintf(format, args...)
	if path != "" {
		msg = path + ": " + msg
	}
	c.problems = append(c.problems, msg)
}

// usable reports whether path and every object above it were read.
func (c *checker) usable(path string) bool {
	for p := path; ; {
		if c.bad[p] {
			return false
		}
		i := strings.LastIndexByte(p, '.')
		if i < 0 {
			return true
		}
		p = p[:i]
	}
}

// presence says how the reference's type treats an absent or null member.
type presence int

const (
	// required: a plain field; absent and null both fail the parse.
	required presence = iota
	// defaulted: #[serde(default)] on a plain type; absent is the default,
	// null still fails.
	defaulted
	// optional: an Option; absent and null both mean None.
	optional
)

// object is one decoded JSON object and where it sits in the record.
type object struct {
	path string
	vals map[string]json.RawMessage
	keys []string
}

func (o object) at(name string) string {
	if o.path == "" {
		return name
	}
	return o.path + "." + name
}

// members decodes raw as a JSON object, in key order. A key given twice keeps
// its last value, as a map does, and is listed in dups.
func members(raw []byte) (keys []string, vals map[string]json.RawMessage, dups []string, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, nil, nil, false
	}
	vals = map[string]json.RawMessage{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, nil, nil, false
		}
		key, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, nil, false
		}
		if _, seen := vals[key]; seen {
			dups = append(dups, key)
		} else {
			keys = append(keys, key)
		}
		vals[key] = v
	}
	return keys, vals, dups, true
}

// structObject reads raw as the object for one of the reference's structs:
// serde refuses a field given twice there, and ignores fields it does not
// declare (collected as unknown).
func (c *checker) structObject(path string, raw []byte, declared ...string) (object, bool) {
	keys, vals, dups, ok := members(raw)
	if !ok {
		c.fail(path, "is %s, where the reference expects an object", jsonKind(raw))
		return object{}, false
	}
	o := object{path: path, vals: vals, keys: keys}
	for _, d := range dups {
		c.fail(o.at(d), "given twice; the reference's reader refuses a duplicated field")
	}
	for _, k := range keys {
		if !slices.Contains(declared, k) {
			c.unknown = append(c.unknown, o.at(k))
		}
	}
	return o, true
}

// get returns member name of o, applying p. ok is false when there is no
// value to read, whether or not that was a problem.
func (c *checker) get(o object, name string, p presence) (json.RawMessage, bool) {
	raw, present := o.vals[name]
	switch {
	case !present:
		if p == required {
			c.fail(o.at(name), "missing; the reference's reader requires it, so `bench validate` cannot parse the line")
		}
		return nil, false
	case string(raw) == "null":
		if p != optional {
			c.fail(o.at(name), "null; the reference reads it as a plain value, not an optional one")
		}
		return nil, false
	}
	return raw, true
}

func (c *checker) str(o object, name string, p presence) (string, bool) {
	raw, ok := c.get(o, name, p)
	if !ok {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		c.fail(o.at(name), "is %s, where the reference expects a string", jsonKind(raw))
		return "", false
	}
	return s, true
}

// optStr reads an Option<String>: nil when absent or null.
func (c *checker) optStr(o object, name string) *string {
	if s, ok := c.str(o, name, optional); ok {
		return &s
	}
	return nil
}

func (c *checker) enum(o object, name string, p presence, set []string) (string, bool) {
	s, ok := c.str(o, name, p)
	if !ok {
		return "", false
	}
	if !slices.Contains(set, s) {
		c.fail(o.at(name), "%q is not one of %s", s, strings.Join(set, ", "))
		return "", false
	}
	return s, true
}

func (c *checker) boolean(o object, name string, p presence) (bool, bool) {
	raw, ok := c.get(o, name, p)
	if !ok {
		return false, false
	}
	switch string(raw) {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	c.fail(o.at(name), "is %s, where the reference expects true or false", jsonKind(raw))
	return false, false
}

// integerText returns the integer raw holds, as text, when it is written as
// a plain integer. serde reads a JSON number written with a fraction or an
// exponent as a float, and a float is never an integer to it, not even 2.0.
func (c *checker) integerText(o object, name string, p presence, typ string) (string, bool) {
	raw, ok := c.get(o, name, p)
	if !ok {
		return "", false
	}
	if jsonKind(raw) != "a number" {
		c.fail(o.at(name), "is %s, where the reference expects an integer (%s)", jsonKind(raw), typ)
		return "", false
	}
	s := string(raw)
	if strings.ContainsAny(s, ".eE") {
		c.fail(o.at(name), "%s has a fraction or an exponent; the reference reads only a plain integer as %s", s, typ)
		return "", false
	}
	return s, true
}

// unsigned reads an unsigned integer no larger than hi.
func (c *checker) unsigned(o object, name string, p presence, hi uint64, typ string) (uint64, bool) {
	s, ok := c.integerText(o, name, p, typ)
	if !ok {
		return 0, false
	}
	if s == "-0" {
		return 0, true
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil || v > hi {
		c.fail(o.at(name), "%s is out of range for %s", s, typ)
		return 0, false
	}
	return v, true
}

func (c *checker) u32(o object, name string, p presence) (uint64, bool) {
	return c.unsigned(o, name, p, math.MaxUint32, "u32")
}

func (c *checker) u64(o object, name string, p presence) (uint64, bool) {
	return c.unsigned(o, name, p, math.MaxUint64, "u64")
}

func (c *checker) i32(o object, name string, p presence) (int64, bool) {
	s, ok := c.integerText(o, name, p, "i32")
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < math.MinInt32 || v > math.MaxInt32 {
		c.fail(o.at(name), "%s is out of range for i32", s)
		return 0, false
	}
	return v, true
}

func (c *checker) float(path string, raw json.RawMessage) (float64, bool) {
	if jsonKind(raw) != "a number" {
		c.fail(path, "is %s, where the reference expects a number", jsonKind(raw))
		return 0, false
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil {
		c.fail(path, "%s does not fit a 64-bit float", raw)
		return 0, false
	}
	return f, true
}

func jsonKind(raw []byte) string {
	s := bytes.TrimSpace(raw)
	if len(s) == 0 {
		return "empty"
	}
	switch s[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// truncated reports whether raw is the start of a JSON value that stops
// before the value ends, as an interrupted append leaves it.
func truncated(raw []byte) bool {
	var v any
	return errors.Is(json.NewDecoder(bytes.NewReader(raw)).Decode(&v), io.ErrUnexpectedEOF)
}

// decodeSchema2 reads line the way the reference's reader does, returning
// what it could read and the checker holding every structural problem. A nil
// record means the line is not a JSON object at all.
func decodeSchema2(line []byte) (*s2Record, *checker) {
	c := &checker{bad: map[string]bool{}}
	line = bytes.TrimSpace(line)
	if !utf8.Valid(line) {
		c.fail("", "not valid UTF-8; the reference reads a results file as one Rust string, so `bench validate` cannot read the file at all")
		return nil, c
	}
	if !json.Valid(line) {
		if truncated(line) {
			c.fail("", "truncated: the line ends inside a JSON value, as an interrupted append leaves it")
		} else {
			var v any
			err := json.Unmarshal(line, &v)
			c.fail("", "not valid JSON: %v", err)
		}
		return nil, c
	}
	if jsonKind(line) != "an object" {
		c.fail("", "is %s, not a JSON object; the site skips it silently and the validator cannot parse it", jsonKind(line))
		return nil, c
	}

	top, _ := c.structObject("", line, "schema", "bench", "kind", "status", "run_id", "rep", "reps",
		"sut", "run", "variant", "metrics", "note", "flags")
	r := &s2Record{}
	r.Schema, _ = c.u32(top, "schema", required)
	r.Bench, _ = c.str(top, "bench", required)
	r.Kind, _ = c.enum(top, "kind", required, s2Kinds)
	r.Status, _ = c.enum(top, "status", required, s2Statuses)
	r.RunID, _ = c.str(top, "run_id", required)
	r.Rep, _ = c.u32(top, "rep", required)
	r.Reps, _ = c.u32(top, "reps", required)

	if raw, ok := c.get(top, "sut", required); ok {
		if o, ok := c.structObject("sut", raw, "entrant", "variant_id", "version", "commit", "image_digest", "image", "toolchain"); ok {
			r.SUT.Entrant, _ = c.str(o, "entrant", required)
			r.SUT.VariantID, _ = c.str(o, "variant_id", required)
			r.SUT.Version = c.optStr(o, "version")
			r.SUT.Commit = c.optStr(o, "commit")
			r.SUT.ImageDigest, _ = c.str(o, "image_digest", required)
			r.SUT.Image, _ = c.str(o, "image", required)
			r.SUT.Toolchain = c.optStr(o, "toolchain")
		}
	}

	if raw, ok := c.get(top, "run", required); ok {
		if o, ok := c.structObject("run", raw, "ts_ms", "invocation_id", "env_id", "env_digest", "harness_version",
			"dataset_version", "commit", "trigger", "infra"); ok {
			r.Run.TsMs, _ = c.u64(o, "ts_ms", required)
			r.Run.InvocationID, _ = c.str(o, "invocation_id", defaulted)
			r.Run.EnvID, _ = c.str(o, "env_id", required)
			r.Run.EnvDigest, _ = c.str(o, "env_digest", required)
			r.Run.HarnessVersion, _ = c.u32(o, "harness_version", required)
			r.Run.DatasetVersion, _ = c.str(o, "dataset_version", required)
			r.Run.Commit = c.optStr(o, "commit")
			r.Run.Trigger, _ = c.enum(o, "trigger", required, s2Triggers)
			if raw, ok := c.get(o, "infra", required); ok {
				decodeInfra(c, raw, &r.Run.Infra)
			}
		}
	}

	if raw, ok := c.get(top, "variant", required); ok {
		if _, vals, _, ok := members(raw); ok {
			r.Variant = vals
		} else {
			c.fail("variant", "is %s, where the reference expects an object", jsonKind(raw))
		}
	}

	if raw, ok := c.get(top, "metrics", required); ok {
		if keys, vals, _, ok := members(raw); ok {
			r.Metrics = map[string]s2Metric{}
			for _, name := range keys {
				if m, ok := decodeMetric(c, "metrics."+name, vals[name]); ok {
					r.Metrics[name] = m
				}
			}
			r.metricCount = len(keys)
		} else {
			c.fail("metrics", "is %s, where the reference expects an object", jsonKind(raw))
		}
	}

	r.Note = c.optStr(top, "note")

	if raw, ok := c.get(top, "flags", defaulted); ok {
		var items []json.RawMessage
		if json.Unmarshal(raw, &items) != nil {
			c.fail("flags", "is %s, where the reference expects an array", jsonKind(raw))
		} else {
			for i, it := range items {
				var f string
				path := fmt.Sprintf("flags[%d]", i)
				if json.Unmarshal(it, &f) != nil {
					c.fail(path, "is %s, where the reference expects a flag name", jsonKind(it))
				} else if !slices.Contains(s2Flags, f) {
					c.fail(path, "%q is not one of %s", f, strings.Join(s2Flags, ", "))
				} else {
					r.Flags = append(r.Flags, f)
				}
			}
		}
	}
	return r, c
}

func decodeInfra(c *checker, raw []byte, in *s2Infra) {
	o, ok := c.structObject("run.infra", raw, "digest", "broker", "broker_version", "broker_image_digest",
		"broker_cpus", "broker_memory", "clickhouse_version", "clickhouse_image_digest", "clickhouse_cpus",
		"clickhouse_memory", "partitions", "registry", "ceiling_msgs_per_s", "ceiling_bytes_per_s", "ceiling_rows_per_s")
	if !ok {
		return
	}
	for _, f := range []struct {
		name string
		dst  *string
	}{
		{"digest", &in.Digest}, {"broker", &in.Broker}, {"broker_version", &in.BrokerVersion},
		{"broker_image_digest", &in.BrokerImageDigest}, {"broker_cpus", &in.BrokerCPUs},
		{"broker_memory", &in.BrokerMemory}, {"clickhouse_version", &in.ClickHouseVersion},
		{"clickhouse_image_digest", &in.ClickHouseImageDigest}, {"clickhouse_cpus", &in.ClickHouseCPUs},
		{"clickhouse_memory", &in.ClickHouseMemory}, {"registry", &in.Registry},
	} {
		*f.dst, _ = c.str(o, f.name, required)
	}
	in.Partitions, _ = c.i32(o, "partitions", required)
	in.CeilingMsgsPerS, _ = c.u64(o, "ceiling_msgs_per_s", required)
	in.CeilingBytesPerS, _ = c.u64(o, "ceiling_bytes_per_s", defaulted)
	in.CeilingRowsPerS, _ = c.u64(o, "ceiling_rows_per_s", defaulted)
}

// decodeMetric reads one metric. It returns whatever it could read, with ok
// false if any part of the metric was unusable.
func decodeMetric(c *checker, path string, raw []byte) (m s2Metric, isObject bool) {
	o, ok := c.structObject(path, raw, "value", "unit", "higher_is_better", "ci95", "n")
	if !ok {
		return s2Metric{}, false
	}
	if v, ok := c.get(o, "value", required); ok {
		m.Value, _ = c.float(o.at("value"), v)
	}
	m.Unit, _ = c.str(o, "unit", required)
	m.HigherIsBetter, _ = c.boolean(o, "higher_is_better", required)
	if v, ok := c.get(o, "ci95", optional); ok {
		var pair []json.RawMessage
		if json.Unmarshal(v, &pair) != nil || len(pair) != 2 {
			c.fail(o.at("ci95"), "is not a pair of numbers [low, high]")
		} else {
			lo, ok1 := c.float(o.at("ci95[0]"), pair[0])
			hi, ok2 := c.float(o.at("ci95[1]"), pair[1])
			if ok1 && ok2 {
				m.CI95 = &[2]float64{lo, hi}
			}
		}
	}
	if n, ok := c.u64(o, "n", optional); ok {
		m.N = &n
	}
	return m, true
}

// rules applies validate.rs's check_record, and the site's schema filter, to
// whatever of r could be read. A rule whose fields could not be read is
// skipped: their problem is already reported.
func (r *s2Record) rules(c *checker) []string {
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	blank := func(s string) bool { return strings.TrimSpace(s) == "" }

	if c.usable("schema") {
		switch {
		case r.Schema > s2SchemaVersion:
			add("schema %d is newer than schema 2: the reference's validator refuses a record from a newer harness, and its site keeps only schema 2", r.Schema)
		case r.Schema < s2SchemaVersion:
			add("schema %d: the reference's validator accepts an older record, but its site keeps only schema 2 and would skip this one silently", r.Schema)
		}
	}
	if c.usable("run.harness_version") && c.usable("run.invocation_id") &&
		r.Run.HarnessVersion >= 2 && blank(r.Run.InvocationID) {
		add("run.invocation_id is empty, and from harness_version 2 on the reference requires it: without it repetitions of one sweep cannot be told from two sweeps")
	}
	if c.usable("run.trigger") && s2BarsPublication(r.Run.Trigger) {
		add("run.trigger is %s, which bars publication: the reference's validator refuses such a record under results/", r.Run.Trigger)
	}
	if c.usable("flags") && slices.Contains(r.Flags, "unpublishable_environment") {
		add("flags carry unpublishable_environment: a run on synthetic fixture data, which the reference's validator refuses")
	}
	if c.usable("sut.image_digest") {
		switch {
		case blank(r.SUT.ImageDigest):
			add("sut.image_digest is empty; the reference requires the digest of the image that ran")
		case !strings.HasPrefix(r.SUT.ImageDigest, "sha256:"):
			add("sut.image_digest %q is not a sha256:… digest as docker inspect reports it", r.SUT.ImageDigest)
		}
	}
	if c.usable("sut.version") && c.usable("sut.commit") && !present(r.SUT.Version) && !present(r.SUT.Commit) {
		add("neither sut.version nor sut.commit is set; the reference requires one of them to say what was measured")
	}
	for _, f := range []struct {
		path, value string
	}{{"run.env_id", r.Run.EnvID}, {"run.env_digest", r.Run.EnvDigest}, {"run.dataset_version", r.Run.DatasetVersion}} {
		if c.usable(f.path) && blank(f.value) {
			add("%s is empty; it decides which records this one may share an axis with", f.path)
		}
	}
	for _, name := range sortedKeys(r.Metrics) {
		if !c.usable("metrics." + name + ".unit") {
			continue
		}
		if u := r.Metrics[name].Unit; !slices.Contains(s2Units, u) {
			add("metrics.%s has unit %q, which is not one of %s", name, u, strings.Join(s2Units, ", "))
		}
	}
	if c.usable("status") && c.usable("metrics") {
		switch n := r.metricCount; {
		case s2CarriesMetrics(r.Status) && n == 0:
			add("status %s says the record carries numbers, but metrics is empty", r.Status)
		case !s2CarriesMetrics(r.Status) && n > 0:
			add("status %s carries no metrics, but %d are attached", r.Status, n)
		}
	}
	if c.usable("rep") && c.usable("reps") && (r.Rep == 0 || r.Rep > r.Reps) {
		add("rep %d of %d: repetitions are numbered from 1 up to reps", r.Rep, r.Reps)
	}
	return out
}

// present is validate.rs's reading of an optional string: absent, empty and
// blank all count as not there.
func present(s *string) bool { return s != nil && strings.TrimSpace(*s) != "" }

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
