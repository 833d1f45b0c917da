package options

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"spatec.dev/spatec/internal/chdb"
)

// ExtractClickHouse reads ClickHouse's options from the engine itself: chDB
// (ClickHouse built as a library, pinned and hash-locked by
// internal/chdb/requirements.txt) in the cached environment of
// internal/chdb. It returns three registries:
//
//   - options/clickhouse/settings.json: every query setting, from
//     system.settings;
//   - options/clickhouse/merge-tree.json: every MergeTree table setting,
//     from system.merge_tree_settings;
//   - options/clickhouse/kafka-engine.json: the Kafka table engine's own
//     settings (kafka_*). No system table lists them, so the names are the
//     kafka_* strings of the engine's library that the engine accepts in
//     CREATE TABLE ... ENGINE = Kafka SETTINGS, and each one's type is
//     read from how the engine refuses a value of the wrong kind. The
//     engine does not say their defaults, so they have none here.
//
// Enum values come from the engine's refusal of a value that is not one of
// them ("Must be one of [...]"), since system.settings does not list them.
//
// Regenerate with
//
//	go test ./options -run TestRegistryClickHouse -update
func ExtractClickHouse(ctx context.Context, root string) (map[string][]byte, error) {
	v, err := chdb.Prepare(ctx, "")
	if err != nil {
		return nil, fmt.Errorf("extracting ClickHouse's options: %w", err)
	}
	s, err := v.Start(ctx, chdb.Options{})
	if err != nil {
		return nil, fmt.Errorf("extracting ClickHouse's options: %w", err)
	}
	defer s.Close()
	x := &chExtractor{s: s}

	chdbVersion, err := x.text(ctx, "SELECT version()")
	if err != nil {
		return nil, err
	}
	source := func(what string) string {
		return fmt.Sprintf("ClickHouse %s as built into chdb-core %s (the wheel hash-locked in internal/chdb/requirements.txt): %s",
			chdbVersion, chdbCoreVersion(), what)
	}

	settings, err := x.table(ctx, "system.settings", "alias_for", func(name, v string) string {
		return "SELECT 1 SETTINGS " + name + " = " + v
	})
	if err != nil {
		return nil, err
	}
	probes := 0
	mergeTree, err := x.table(ctx, "system.merge_tree_settings", "''", func(name, v string) string {
		// A table of its own each time: a value the engine takes makes one.
		probes++
		return fmt.Sprintf("CREATE TABLE spatec_probe_%d (a UInt8) ENGINE = MergeTree ORDER BY a SETTINGS %s = %s", probes, name, v)
	})
	if err != nil {
		return nil, err
	}
	kafka, err := x.kafka(ctx, v)
	if err != nil {
		return nil, err
	}

	out := map[string][]byte{}
	for _, r := range []struct {
		path string
		reg  Registry
	}{
		{"options/clickhouse/settings.json", Registry{System: "ClickHouse", Version: chdbVersion,
			Source: source("every row of system.settings (name, type, default, description, alias_for, is_obsolete, tier); " +
				"an enum's values from the engine's refusal of SELECT 1 SETTINGS <name> = <a value not among them>"),
			Options: settings}},
		{"options/clickhouse/merge-tree.json", Registry{System: "ClickHouse MergeTree", Version: chdbVersion,
			Source: source("every row of system.merge_tree_settings (name, type, default, description, is_obsolete, tier); " +
				"an enum's values from the engine's refusal of CREATE TABLE ... ENGINE = MergeTree SETTINGS <name> = <a value not among them>"),
			Options: mergeTree}},
		{"options/clickhouse/kafka-engine.json", Registry{System: "ClickHouse Kafka engine", Version: chdbVersion,
			Source: source("every kafka_* string in chdb/_chdb.abi3.so that the engine accepts in CREATE TABLE ... ENGINE = Kafka SETTINGS " +
				"(refused as UNKNOWN_SETTING otherwise); each type from the engine's refusal of a value of the wrong kind; " +
				"required: those without which CREATE TABLE is refused; doc: the setting's line in system.table_engines' description of Kafka; " +
				"defaults are not read (the engine does not show them). The SETTINGS clause also takes every query setting (settings.json)"),
			Options: kafka}},
	} {
		b, err := Marshal(r.reg)
		if err != nil {
			return nil, err
		}
		out[r.path] = b
	}
	return out, nil
}

// chdbCoreVersion is the version requirements.txt pins.
func chdbCoreVersion() string {
	m := regexp.MustCompile(`(?m)^chdb-core==(\S+)`).FindStringSubmatch(chdb.Requirements)
	if m == nil {
		return "(unpinned)"
	}
	return m[1]
}

type chExtractor struct {
	s *chdb.Session
}

func (x *chExtractor) text(ctx context.Context, q string) (string, error) {
	r, err := x.s.Query(ctx, q)
	if err != nil {
		return "", fmt.Errorf("reading ClickHouse's options: %w", err)
	}
	return r.Text(0, 0)
}

// probe runs a statement meant to be refused and returns how: nil when the
// engine took it.
func (x *chExtractor) probe(ctx context.Context, stmt string) (*chdb.Error, error) {
	_, err := x.s.Run(ctx, stmt)
	if err == nil {
		return nil, nil
	}
	var ce *chdb.Error
	if errors.As(err, &ce) {
		return ce, nil
	}
	return nil, fmt.Errorf("probing ClickHouse: %w", err)
}

// The engine's words for a value it refuses: one of an enum's values
// expected, one character expected.
var (
	mustBeOneOf = regexp.MustCompile(`Must be one of \[([^\]]*)\]`)
	quotedValue = regexp.MustCompile(`'((?:[^'\\]|\\.)*)'`)
)

// autoN is a default the engine works out on the machine it runs on.
var autoN = regexp.MustCompile(`^auto\(\d+\)$`)

// notAValue is a value no ClickHouse enum has; quoted as SQL.
const notAValue = "'spatec-not-a-value'"

// table reads a system table of settings. aliasCol is the column naming the
// setting an alias stands for (” when the table has none); probeStmt makes
// the statement that sets one setting to a value, to read an enum's values
// from the engine's refusal.
func (x *chExtractor) table(ctx context.Context, table, aliasCol string, probeStmt func(name, value string) string) ([]Option, error) {
	r, err := x.s.Query(ctx, fmt.Sprintf(
		"SELECT name, type, default, description, %s, is_obsolete OR tier = 'Obsolete' FROM %s ORDER BY name", aliasCol, table))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", table, err)
	}
	var opts []Option
	index := map[string]int{}
	for i := range r.Rows {
		var f [5]string
		for c := range f {
			if f[c], err = r.Text(i, c); err != nil {
				return nil, fmt.Errorf("reading %s row %d: %w", table, i, err)
			}
		}
		obsolete, err := r.Uint64(i, 5)
		if err != nil {
			return nil, fmt.Errorf("reading %s row %d: %w", table, i, err)
		}
		name, typ, def, desc, alias := f[0], f[1], f[2], f[3], f[4]
		// "auto(2)" is the engine's choice on this machine (its cores):
		// the default is "auto" anywhere.
		if autoN.MatchString(def) {
			def = "auto"
		}
		o := Option{Key: name, Default: &def, Deprecated: obsolete == 1, Use: alias}
		unit := ""
		switch {
		case typ == "Bool":
			o.Type = Bool
		case typ == "NonZeroUInt64":
			o.Type, o.Min = Int, num(1)
		case strings.HasPrefix(typ, "UInt"):
			o.Type, o.Min = Int, num(0)
		case strings.HasPrefix(typ, "Int"):
			o.Type = Int
		case typ == "Float" || typ == "Double":
			o.Type = Float
		case typ == "Seconds" || typ == "Milliseconds":
			// ClickHouse writes spans as a number of its unit.
			o.Type, o.Min = Int, num(0)
			unit = "In " + strings.ToLower(typ) + ". "
		case typ == "String" || typ == "Char" || typ == "URI" || typ == "Timezone":
			o.Type = String
		case typ == "Map":
			o.Type = Map
		default:
			// The engine's own refusal names the values it takes.
			e, err := x.probe(ctx, probeStmt(name, notAValue))
			if err != nil {
				return nil, err
			}
			values := enumValues(e)
			if values == nil {
				// 'auto' or a number (MaxThreads, UInt64Auto, ...) and
				// the like: the engine parses its own text.
				o.Type = String
				unit = "ClickHouse type " + typ + ". "
				break
			}
			o.Type, o.Values = Enum, values
			// A set of values (JoinAlgorithm) takes a comma-separated list.
			if len(values) > 1 {
				e, err := x.probe(ctx, probeStmt(name, "'"+values[0]+","+values[1]+"'"))
				if err != nil {
					return nil, err
				}
				if e == nil || enumValues(e) == nil && !strings.Contains(e.Message, values[0]+","+values[1]) {
					o.Type = List
				}
			}
		}
		o.Doc = strings.TrimSpace(unit + firstSentence(desc))
		index[name] = len(opts)
		opts = append(opts, o)
	}
	for _, o := range opts {
		if o.Use == "" {
			continue
		}
		i, ok := index[o.Use]
		if !ok {
			return nil, fmt.Errorf("%s: %s is an alias for %s, which the table does not list", table, o.Key, o.Use)
		}
		opts[i].Fallback = append(opts[i].Fallback, o.Key)
	}
	for i := range opts {
		sort.Strings(opts[i].Fallback)
	}
	return opts, nil
}

// enumValues reads the values the engine lists when it refuses one.
func enumValues(e *chdb.Error) []string {
	if e == nil {
		return nil
	}
	m := mustBeOneOf.FindStringSubmatch(e.Message)
	if m == nil {
		return nil
	}
	var values []string
	for _, q := range quotedValue.FindAllStringSubmatch(m[1], -1) {
		values = append(values, q[1])
	}
	return values
}

func num(f float64) *float64 { return &f }

// firstSentence is the first sentence of a description, on one line, at
// most about 160 characters.
func firstSentence(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	for i := 0; i+1 < len(s); i++ {
		if s[i] == '.' && s[i+1] == ' ' && !abbreviation(s[:i]) {
			s = s[:i+1]
			break
		}
	}
	if len(s) > 160 {
		cut := 157
		for cut > 0 && s[cut]&0xC0 == 0x80 { // keep whole UTF-8 characters
			cut--
		}
		s = strings.TrimSpace(s[:cut]) + "…"
	}
	return s
}

// abbreviation tells a full stop that ends "e.g" or "i.e" from one that
// ends a sentence.
func abbreviation(before string) bool {
	for _, a := range []string{"e.g", "i.e", "etc", "vs"} {
		if strings.HasSuffix(strings.ToLower(before), a) {
			return true
		}
	}
	return false
}

// kafkaBase are the settings the four-argument form Kafka(...) takes; each
// is probed below, whether the engine refuses a table without it.
var kafkaBase = []string{
	"kafka_broker_list = '127.0.0.1:1'",
	"kafka_topic_list = 't'",
	"kafka_group_name = 'g'",
	"kafka_format = 'JSONEachRow'",
}

func (x *chExtractor) kafka(ctx context.Context, v *chdb.Venv) ([]Option, error) {
	lib, err := filepath.Glob(filepath.Join(v.Dir, "lib", "python3*", "site-packages", "chdb", "_chdb*.so"))
	if err != nil || len(lib) != 1 {
		return nil, fmt.Errorf("finding chDB's library in %s: %d found (%v)", v.Dir, len(lib), err)
	}
	names, err := prefixedStrings(lib[0], "kafka_")
	if err != nil {
		return nil, err
	}
	docs, err := x.kafkaDocs(ctx)
	if err != nil {
		return nil, err
	}

	n := 0
	create := func(settings ...string) string {
		n++
		return fmt.Sprintf("CREATE TABLE spatec_kafka_probe_%d (a String) ENGINE = Kafka SETTINGS %s", n, strings.Join(settings, ", "))
	}
	with := func(name, value string) string {
		var s []string
		for _, b := range kafkaBase {
			if !strings.HasPrefix(b, name+" ") {
				s = append(s, b)
			}
		}
		return create(append(s, name+" = "+value)...)
	}
	// How the engine answers the complete table: what a missing required
	// setting changes.
	base, err := x.probe(ctx, create(kafkaBase...))
	if err != nil {
		return nil, err
	}

	var opts []Option
	for _, name := range names {
		e, err := x.probe(ctx, with(name, "'\x01'"))
		if err != nil {
			return nil, err
		}
		if e != nil && e.Name == "UNKNOWN_SETTING" {
			continue
		}
		o := Option{Key: name, Doc: docs[name]}
		switch {
		case e == nil:
			o.Type = String
		case enumValues(e) != nil:
			o.Type, o.Values = Enum, enumValues(e)
		case e.Name == "CANNOT_PARSE_BOOL":
			o.Type = Bool
		case strings.HasPrefix(e.Name, "CANNOT_PARSE"):
			o.Type = Int
			neg, err := x.probe(ctx, with(name, "-1"))
			if err != nil {
				return nil, err
			}
			if neg != nil && strings.Contains(neg.Message, "out of range of unsigned") {
				o.Min = num(0)
			}
		default:
			// Parsed as text: refused later, for what it says, if at all.
			o.Type = String
		}
		for _, b := range kafkaBase {
			if !strings.HasPrefix(b, name+" ") {
				continue
			}
			var rest []string
			for _, c := range kafkaBase {
				if c != b {
					rest = append(rest, c)
				}
			}
			e, err := x.probe(ctx, create(rest...))
			if err != nil {
				return nil, err
			}
			o.Required = e != nil && (base == nil || e.Message != base.Message)
		}
		opts = append(opts, o)
	}
	if len(opts) == 0 {
		return nil, fmt.Errorf("the Kafka engine of %s took none of the %d kafka_* names of its library", lib[0], len(names))
	}
	return opts, nil
}

// kafkaDoc is a setting's line in the Kafka engine's own description:
// "- `kafka_x` — text".
var kafkaDoc = regexp.MustCompile("(?m)^- `(kafka_[a-z0-9_]+)`\\s*[—–-]+\\s*(.*)$")

func (x *chExtractor) kafkaDocs(ctx context.Context) (map[string]string, error) {
	desc, err := x.text(ctx, "SELECT description FROM system.table_engines WHERE name = 'Kafka'")
	if err != nil {
		return nil, err
	}
	docs := map[string]string{}
	for _, m := range kafkaDoc.FindAllStringSubmatch(desc, -1) {
		if _, ok := docs[m[1]]; !ok {
			docs[m[1]] = firstSentence(m[2])
		}
	}
	return docs, nil
}

// prefixedStrings lists, sorted, the distinct NUL-terminated strings of a
// file that are prefix followed by lower-case letters, digits and '_' — the
// way a setting's name sits in a library, alone or as the tail of a longer
// string the linker merged it into.
func prefixedStrings(path, prefix string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading the names in %s: %w", path, err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	seen := map[string]bool{}
	var cur []byte
	for {
		b, err := r.ReadByte()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading the names in %s: %w", path, err)
		}
		if b == 0 {
			if i := lastRun(cur, prefix); i >= 0 && len(cur)-i > len(prefix) {
				seen[string(cur[i:])] = true
			}
			cur = cur[:0]
			continue
		}
		if len(cur) < 256 {
			cur = append(cur, b)
		} else {
			cur = cur[:0]
		}
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, nil
}

// lastRun is where the name at the end of s starts: the last position
// from which s is prefix and name characters to its end; -1 when none.
func lastRun(s []byte, prefix string) int {
	i := len(s)
	for i > 0 {
		c := s[i-1]
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' {
			i--
			continue
		}
		break
	}
	tail := string(s[i:])
	j := strings.Index(tail, prefix)
	if j < 0 {
		return -1
	}
	return i + j
}
