package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"spatec.dev/spatec/internal/nearest"
	"spatec.dev/spatec/options"
)

// envPrefix marks the environment variables the arm owns: any variable
// under it that is not a setting below is refused, since a misspelt name
// would otherwise leave its setting at the default without a word.
const envPrefix = "SPATEC_"

// setting is one setting of the arm: the environment variable a plan sets,
// and the flag that wins over it on a command line.
type setting struct {
	env  string
	flag string
	kind options.Type
	// values are an enum's; nothing else is accepted.
	values []string
	// def is the default as the flag parses it; "" for none.
	def string
	// min bounds an int setting from below.
	min *int
	// required settings have no default the arm could run with.
	required bool
	doc      string
	// field is where the setting's value goes: a *string, *int,
	// *float64, *time.Duration, or *[]string (comma-separated).
	field func(*config) any
}

func atLeast(n int) *int { return &n }

// settings are every setting the arm reads, in the order -help lists them.
// The flag set is built from this table, and -settings-json prints it as
// the arm's option registry (options/reference/registry.json), so what a
// plan may set is what the arm parses.
var settings = []setting{
	{env: "SPATEC_BROKERS", flag: "brokers", kind: options.String, required: true,
		doc: "seed brokers, comma-separated host:port", field: func(c *config) any { return &c.Brokers }},
	{env: "SPATEC_TOPIC", flag: "topic", kind: options.String, required: true,
		doc: "topic to drain", field: func(c *config) any { return &c.Topic }},
	{env: "SPATEC_GROUP", flag: "group", kind: options.String, def: "spatec-reference",
		doc: "group the offsets are committed to", field: func(c *config) any { return &c.Group }},
	{env: "SPATEC_CLICKHOUSE", flag: "clickhouse", kind: options.String, def: "127.0.0.1:9000",
		doc: "ClickHouse native protocol host:port", field: func(c *config) any { return &c.ClickHouse }},
	{env: "SPATEC_DATABASE", flag: "database", kind: options.String, def: "default",
		doc: "ClickHouse database", field: func(c *config) any { return &c.Database }},
	{env: "SPATEC_CLICKHOUSE_USER", flag: "user", kind: options.String, def: "default",
		doc: "ClickHouse user", field: func(c *config) any { return &c.User }},
	{env: "SPATEC_CLICKHOUSE_PASSWORD", flag: "password", kind: options.String,
		doc: "ClickHouse password", field: func(c *config) any { return &c.Password }},
	{env: "SPATEC_TABLE", flag: "table", kind: options.String, required: true,
		doc: "table to insert into, optionally database.table", field: func(c *config) any { return &c.Table }},
	{env: "SPATEC_CONSUMERS", flag: "consumers", kind: options.Int, def: "1", min: atLeast(1),
		doc: "consumer parallelism, the topic's partition count", field: func(c *config) any { return &c.Consumers }},
	{env: "SPATEC_BATCH_ROWS", flag: "batch-rows", kind: options.Int, def: "100000", min: atLeast(1),
		doc: "rows per insert", field: func(c *config) any { return &c.BatchRows }},
	{env: "SPATEC_FLUSH_INTERVAL", flag: "flush-interval", kind: options.Duration, def: "500ms",
		doc: "insert a partial batch this long after its first row", field: func(c *config) any { return &c.FlushInterval }},
	{env: "SPATEC_STOP_GRACE", flag: "stop-grace", kind: options.Duration, def: "3s",
		doc: "after SIGTERM, how long to insert the rows held and commit their offsets", field: func(c *config) any { return &c.StopGrace }},
	{env: "SPATEC_WORKLOAD", flag: "workload", kind: options.Enum, values: []string{"json-rows", "sensor-batch"}, def: "json-rows",
		doc: "the workload the arm drains", field: func(c *config) any { return &c.Workload }},
	{env: "SPATEC_REGISTRY", flag: "registry", kind: options.String,
		doc: "the schema registry's URL, for sensor-batch", field: func(c *config) any { return &c.Registry }},
	{env: "SPATEC_DROP_UNIT", flag: "drop-unit", kind: options.String,
		doc: "the unit whose readings the transform drops, for sensor-batch", field: func(c *config) any { return &c.DropUnit }},
	{env: "SPATEC_QUALITY_FLOOR", flag: "quality-floor", kind: options.Float, def: "0",
		doc: "the transform drops a non-null quality below it, for sensor-batch", field: func(c *config) any { return &c.QualityFloor }},
	{env: "SPATEC_FAULT", flag: "fault", kind: options.Enum, values: []string{"skip-upper"},
		doc: "test only: break a step of the transform", field: func(c *config) any { return &c.Fault }},
}

// value is a setting's flag.Value, writing into the config's field.
type value struct{ ptr any }

func (v value) String() string {
	switch p := v.ptr.(type) {
	case *string:
		return *p
	case *int:
		return strconv.Itoa(*p)
	case *float64:
		return strconv.FormatFloat(*p, 'g', -1, 64)
	case *time.Duration:
		return p.String()
	case *[]string:
		return strings.Join(*p, ",")
	}
	return ""
}

// Set parses text as the field's type; its errors complete "SPATEC_X=%q
// is" and "invalid value %q for flag -x:".
func (v value) Set(text string) error {
	switch p := v.ptr.(type) {
	case *string:
		*p = text
	case *int:
		n, err := strconv.Atoi(text)
		if err != nil {
			return fmt.Errorf("not an integer")
		}
		*p = n
	case *float64:
		f, err := strconv.ParseFloat(text, 64)
		if err != nil {
			return fmt.Errorf("not a number")
		}
		*p = f
	case *time.Duration:
		d, err := time.ParseDuration(text)
		if err != nil {
			return fmt.Errorf("not a duration (such as 500ms)")
		}
		*p = d
	case *[]string:
		*p = nil
		for _, s := range strings.Split(text, ",") {
			if s = strings.TrimSpace(s); s != "" {
				*p = append(*p, s)
			}
		}
	default:
		return fmt.Errorf("the arm has no parser for %T", v.ptr)
	}
	return nil
}

// bindSettings puts every setting into fs, each starting from its
// environment variable (looked up in env) or else its default, and
// returns the problems of the environment's values.
func bindSettings(fs *flag.FlagSet, cfg *config, env map[string]string) []error {
	var errs []error
	for _, s := range settings {
		v := value{s.field(cfg)}
		if s.def != "" {
			if err := v.Set(s.def); err != nil {
				errs = append(errs, fmt.Errorf("the default of %s, %q, is %w", s.env, s.def, err))
			}
		}
		if text := env[s.env]; text != "" {
			if err := v.Set(text); err != nil {
				errs = append(errs, fmt.Errorf("%s=%q is %w", s.env, text, err))
			}
		}
		fs.Var(v, s.flag, s.help())
	}
	return errs
}

// help is the setting's line in -help.
func (s setting) help() string {
	doc := s.doc
	if len(s.values) > 0 {
		doc += ": " + strings.Join(s.values, " or ")
	}
	return doc + " (" + s.env + ")"
}

// checkSettings reports each value the table rules out: a required
// setting left empty, an int below its bound, a value outside its enum.
func checkSettings(cfg *config) []error {
	var errs []error
	for _, s := range settings {
		v := value{s.field(cfg)}
		text := v.String()
		switch {
		case s.required && text == "":
			errs = append(errs, fmt.Errorf("no %s: set -%s or %s", s.flag, s.flag, s.env))
		case s.min != nil && *v.ptr.(*int) < *s.min:
			errs = append(errs, fmt.Errorf("%s is %s; it must be at least %d (%s)", s.flag, text, *s.min, s.env))
		// An enum without a default may be left empty: none of it.
		case len(s.values) > 0 && (text != "" || s.def != "") && !slices.Contains(s.values, text):
			errs = append(errs, fmt.Errorf("%s %q is not one this arm knows; give %s (%s)", s.flag, text, strings.Join(s.values, " or "), s.env))
		}
	}
	return errs
}

// unknownSettings refuses each variable under the arm's prefix that is
// not one of its settings, naming the setting it is nearest to.
func unknownSettings(env map[string]string) []error {
	known := make([]string, len(settings))
	for i, s := range settings {
		known[i] = s.env
	}
	var names []string
	for name := range env {
		if strings.HasPrefix(name, envPrefix) && !slices.Contains(known, name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	var errs []error
	for _, name := range names {
		if near := nearest.Close(name, known); near != "" {
			errs = append(errs, fmt.Errorf("%s is not a setting of this arm; did you mean %s?", name, near))
		} else {
			errs = append(errs, fmt.Errorf("%s is not a setting of this arm; it reads %s", name, strings.Join(known, ", ")))
		}
	}
	return errs
}

// registry is the settings table as the arm's option registry: one option
// per environment variable, sorted by it.
func registry() options.Registry {
	opts := make([]options.Option, 0, len(settings))
	for _, s := range settings {
		o := options.Option{Key: s.env, Type: s.kind, Values: s.values, Required: s.required, Doc: s.doc}
		if s.def != "" {
			o.Default = &s.def
		}
		if s.min != nil {
			m := float64(*s.min)
			o.Min = &m
		}
		opts = append(opts, o)
	}
	slices.SortFunc(opts, func(a, b options.Option) int { return strings.Compare(a.Key, b.Key) })
	return options.Registry{
		System:  "spatec-reference",
		Version: version,
		Source:  "the settings table of cmd/spatec-reference (settings.go), from which the arm builds its flags and reads its environment; printed by spatec-reference -settings-json",
		Options: opts,
	}
}

// printRegistry writes the registry as JSON, indented by two spaces.
func printRegistry(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(registry()); err != nil {
		return fmt.Errorf("writing the settings as JSON: %w", err)
	}
	return nil
}
