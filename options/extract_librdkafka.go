package options

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"spatec.dev/spatec/internal/chdb"
)

//go:embed librdkafka_props.py
var librdkafkaPropsPy string

// ExtractLibrdkafka reads librdkafka's configuration properties from
// librdkafka itself: the library bundled in the confluent-kafka wheel that
// internal/chdb/requirements.txt pins and hash-locks (installed into the
// same cached environment as chDB), loaded with ctypes, printing its own
// table with rd_kafka_conf_properties_show(). It returns
// options/librdkafka/registry.json.
//
// Keys are flat: a property's scope (global or topic; consumer, producer
// or both) opens its doc. A key that is both a global and a topic
// property is given as the global one, which is what setting it on the
// global configuration sets.
//
// Regenerate with
//
//	go test ./options -run TestRegistryLibrdkafka -update
func ExtractLibrdkafka(ctx context.Context, root string) (map[string][]byte, error) {
	v, err := chdb.Prepare(ctx, "")
	if err != nil {
		return nil, fmt.Errorf("extracting librdkafka's options: %w", err)
	}
	dir, err := os.MkdirTemp("", "spatec-librdkafka-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	script := filepath.Join(dir, "librdkafka_props.py")
	if err := os.WriteFile(script, []byte(librdkafkaPropsPy), 0o644); err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, v.Python, script)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("printing librdkafka's properties with %s: %w\n%s", v.Python, err, stderr.String())
	}
	reg, err := parseLibrdkafkaTable(out)
	if err != nil {
		return nil, err
	}
	b, err := Marshal(reg)
	if err != nil {
		return nil, err
	}
	return map[string][]byte{"options/librdkafka/registry.json": b}, nil
}

// confluentKafkaVersion is the version requirements.txt pins.
func confluentKafkaVersion() string {
	m := regexp.MustCompile(`(?m)^confluent-kafka==(\S+)`).FindStringSubmatch(chdb.Requirements)
	if m == nil {
		return "(unpinned)"
	}
	return m[1]
}

// A row of the table: property | C/P | range | default | importance |
// description <br>*Type: t*. A default may hold '|' itself (a shell
// command), so the columns after the range are found from the importance.
var (
	rdRow    = regexp.MustCompile(`^(\S+)\s*\|\s*([CP*])\s*\|([^|]*)\|(.*)\|\s*(low|medium|high)\s*\|\s*(.*)$`)
	rdType   = regexp.MustCompile(`\s*<br>\*Type: ([^*]+)\*\s*$`)
	rdMinMax = regexp.MustCompile(`^(-?[0-9.e+]+) \.\. (-?[0-9.e+]+)$`)
	rdAlias  = regexp.MustCompile("^Alias for `([^`]+)`:")
)

// parseLibrdkafkaTable reads what librdkafka_props.py prints: a version
// line, then librdkafka's markdown tables of global and topic properties.
func parseLibrdkafkaTable(out []byte) (Registry, error) {
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	if !sc.Scan() || !strings.HasPrefix(sc.Text(), "librdkafka ") {
		return Registry{}, fmt.Errorf("librdkafka's table does not open with its version: %.80q", out)
	}
	version := strings.TrimPrefix(sc.Text(), "librdkafka ")
	reg := Registry{
		System:  "librdkafka",
		Version: version,
		Source: fmt.Sprintf("librdkafka %s as bundled in the confluent-kafka %s wheel (hash-locked in internal/chdb/requirements.txt; "+
			"ClickHouse 26.3 bundles ClickHouse's fork of librdkafka 2.14.1 from 26.3.14.19 on, and PyPI has no wheel of 2.14.1): "+
			"every row of the global and topic property tables librdkafka prints with rd_kafka_conf_properties_show(), loaded with ctypes",
			version, confluentKafkaVersion()),
	}
	scope := ""
	index := map[string]int{}
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "## Global"):
			scope = "global"
			continue
		case strings.HasPrefix(line, "## Topic"):
			scope = "topic"
			continue
		}
		m := rdRow.FindStringSubmatch(line)
		if m == nil || m[1] == "Property" {
			continue
		}
		if scope == "" {
			return Registry{}, fmt.Errorf("librdkafka's property %s comes before its table's heading", m[1])
		}
		key, cp, rng, def, desc := m[1], m[2], strings.TrimSpace(m[3]), strings.TrimSpace(m[4]), m[6]
		t := rdType.FindStringSubmatch(desc)
		if t == nil {
			return Registry{}, fmt.Errorf("librdkafka's property %s has no type: %q", key, desc)
		}
		desc = desc[:len(desc)-len(t[0])]
		o := Option{Key: key}
		switch t[1] {
		case "integer", "float":
			o.Type = Int
			if t[1] == "float" {
				o.Type = Float
			}
			if mm := rdMinMax.FindStringSubmatch(rng); mm != nil {
				lo, err1 := strconv.ParseFloat(mm[1], 64)
				hi, err2 := strconv.ParseFloat(mm[2], 64)
				if err1 != nil || err2 != nil {
					return Registry{}, fmt.Errorf("librdkafka's property %s: range %q", key, rng)
				}
				o.Min, o.Max = &lo, &hi
			}
		case "boolean":
			o.Type = Bool
		case "enum value":
			o.Type, o.Values = Enum, splitValues(rng)
		case "CSV flags":
			// Flags without a range (builtin.features) take any.
			o.Type, o.Values = List, splitValues(rng)
		case "pattern list":
			o.Type = List
		case "string":
			o.Type = String
		case "see dedicated API":
			// Set through a function of librdkafka's API, not as text.
			o.Type = Any
		default:
			return Registry{}, fmt.Errorf("librdkafka's property %s has a type this extractor does not know: %q", key, t[1])
		}
		if def != "" {
			o.Default = &def
		}
		if a := rdAlias.FindStringSubmatch(desc); a != nil {
			o.Use = a[1]
		}
		o.Deprecated = strings.Contains(desc, "**DEPRECATED**")
		role := map[string]string{"C": "consumer", "P": "producer", "*": "consumer and producer"}[cp]
		if i, ok := index[key]; ok {
			// The global property is the one a key sets; say there is a
			// topic one too.
			reg.Options[i].Doc = strings.Replace(reg.Options[i].Doc, "["+scope0(reg.Options[i].Doc)+",", "[global and topic,", 1)
			continue
		}
		o.Doc = "[" + scope + ", " + role + "] " + firstSentence(desc)
		index[key] = len(reg.Options)
		reg.Options = append(reg.Options, o)
	}
	if err := sc.Err(); err != nil {
		return Registry{}, err
	}
	if len(reg.Options) == 0 {
		return Registry{}, fmt.Errorf("librdkafka printed no properties")
	}
	for _, o := range reg.Options {
		if o.Use == "" {
			continue
		}
		i, ok := index[o.Use]
		if !ok {
			return Registry{}, fmt.Errorf("librdkafka's %s is an alias for %s, which it does not list", o.Key, o.Use)
		}
		reg.Options[i].Fallback = append(reg.Options[i].Fallback, o.Key)
		sort.Strings(reg.Options[i].Fallback)
	}
	return reg, nil
}

// scope0 is the scope a doc opens with ("global").
func scope0(doc string) string {
	s := strings.TrimPrefix(doc, "[")
	if i := strings.IndexByte(s, ','); i >= 0 {
		return s[:i]
	}
	return ""
}

// splitValues reads a range column's values: "none, gzip".
func splitValues(rng string) []string {
	if rng == "" {
		return nil
	}
	return strings.Split(rng, ", ")
}
