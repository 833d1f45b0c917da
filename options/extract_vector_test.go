package options

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// TestRegistryVectorIsTheSystems regenerates Vector's registries and
// compares them with the committed ones.
//
// Vector's generated reference is in Vector's repository only, which CI
// cannot fetch (it reaches package registries, not GitHub), so the test
// reads a local clone named by SPATEC_VECTOR_REPO (a git directory holding
// the v0.57.0 commit) and skips when that is unset, under CI too. With it
// set, a missing git or commit fails the test.
func TestRegistryVectorIsTheSystems(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	got, err := ExtractVector(ctx, "..")
	if errors.Is(err, ErrNoVectorRepo) {
		t.Skipf("%v (CI cannot fetch Vector's repository)", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(vectorComponents())+1 {
		t.Fatalf("extracted %d registries, want %d", len(got), len(vectorComponents())+1)
	}
	for _, path := range slices.Sorted(maps.Keys(got)) {
		file := filepath.Join("..", filepath.FromSlash(path))
		if *update {
			if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(file, got[path], 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(file)
		if err != nil {
			t.Errorf("reading %s (rewrite it with -update): %v", path, err)
			continue
		}
		if string(want) != string(got[path]) {
			t.Errorf("%s is not what Vector's reference gives; rewrite it with -update after reviewing:\n%s", path, registryDiff(want, got[path]))
		}
	}
}

// loadVectorRegistries reads the committed registries: the global one and
// each component's, by "<kind>/<type>" ("sinks/clickhouse").
func loadVectorRegistries(t *testing.T) (global Registry, components map[string]Registry) {
	t.Helper()
	read := func(path string) Registry {
		b, err := os.ReadFile(filepath.Join("..", filepath.FromSlash(path)))
		if err != nil {
			t.Fatal(err)
		}
		var r Registry
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return r
	}
	components = map[string]Registry{}
	for _, c := range vectorComponents() {
		components[c.kind+"/"+c.name] = read(c.out)
	}
	return read(vectorGlobalOut), components
}

// vectorConfigProblems lists each key of a Vector configuration that its
// registry does not hold, and each value of the wrong kind or outside an
// enum, as "path: problem".
func vectorConfigProblems(cfg map[string]any, global Registry, components map[string]Registry) []string {
	var problems []string
	var checkBlock func(path string, block map[string]any, opts []Option, in string)
	var checkValue func(path string, v any, o Option, in string)
	checkBlock = func(path string, block map[string]any, opts []Option, in string) {
		for _, k := range slices.Sorted(maps.Keys(block)) {
			i := slices.IndexFunc(opts, func(o Option) bool { return o.Key == k })
			if i < 0 {
				problems = append(problems, fmt.Sprintf("%s%s: not an option of %s", path, k, in))
				continue
			}
			checkValue(path+k, block[k], opts[i], in)
		}
	}
	checkValue = func(path string, v any, o Option, in string) {
		bad := func(want string) {
			problems = append(problems, fmt.Sprintf("%s: %v is not %s (%s)", path, v, want, in))
		}
		switch o.Type {
		case Struct:
			m, ok := v.(map[string]any)
			if !ok {
				bad("a block")
				return
			}
			checkBlock(path+".", m, o.Fields, in)
		case Map:
			m, ok := v.(map[string]any)
			if !ok {
				bad("a map")
				return
			}
			if len(o.Fields) == 1 && o.Fields[0].Key == "*" {
				for _, k := range slices.Sorted(maps.Keys(m)) {
					checkValue(path+"."+k, m[k], o.Fields[0], in)
				}
			}
		case Enum:
			if s, ok := v.(string); !ok || !slices.Contains(o.Values, s) {
				bad("one of " + strings.Join(o.Values, ", "))
			}
		case Bool:
			if _, ok := v.(bool); !ok {
				bad("a bool")
			}
		case Int:
			if _, ok := v.(int); !ok {
				bad("a whole number")
			}
		case Float:
			switch v.(type) {
			case int, float64:
			default:
				bad("a number")
			}
		case String:
			if _, ok := v.(string); !ok {
				bad("a string")
			}
		case List:
			if _, ok := v.([]any); !ok {
				bad("a list")
			}
		}
	}

	for _, k := range slices.Sorted(maps.Keys(cfg)) {
		switch k {
		case "sources", "transforms", "sinks":
			block, ok := cfg[k].(map[string]any)
			if !ok {
				problems = append(problems, fmt.Sprintf("%s: not a map of components", k))
				continue
			}
			for _, id := range slices.Sorted(maps.Keys(block)) {
				comp, ok := block[id].(map[string]any)
				if !ok {
					problems = append(problems, fmt.Sprintf("%s.%s: not a component", k, id))
					continue
				}
				typ, _ := comp["type"].(string)
				reg, ok := components[k+"/"+typ]
				if !ok {
					problems = append(problems, fmt.Sprintf("%s.%s: type %q has no committed registry", k, id, typ))
					continue
				}
				checkBlock(k+"."+id+".", comp, reg.Options, "Vector's "+typ+" "+strings.TrimSuffix(k, "s"))
			}
		default:
			checkBlock("", map[string]any{k: cfg[k]}, global.Options, "Vector's global options")
		}
	}
	return problems
}

// TestVectorPlansUseRegisteredOptions reads the Vector configuration each
// golden plan writes (compiler/testdata/golden/*/vector.*.json, which
// TestEveryPlanResolves keeps equal to the compiled plans) and checks every
// key it sets is an option the committed registries hold, of the right
// kind. It needs no network.
func TestVectorPlansUseRegisteredOptions(t *testing.T) {
	global, components := loadVectorRegistries(t)
	plans, err := filepath.Glob(filepath.Join("..", "compiler", "testdata", "golden", "*", "vector.*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(plans) == 0 {
		t.Fatal("no golden Vector plans under compiler/testdata/golden")
	}
	for _, path := range plans {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Plan struct {
				Entrant struct {
					Containers map[string]struct {
						Files map[string]string `json:"files"`
					} `json:"containers"`
				} `json:"entrant"`
			} `json:"plan"`
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		text, ok := doc.Plan.Entrant.Containers["vector"].Files["/etc/vector/spatec.yaml"]
		if !ok {
			t.Errorf("%s: no /etc/vector/spatec.yaml in the vector container", path)
			continue
		}
		var cfg map[string]any
		if err := yaml.Unmarshal([]byte(text), &cfg); err != nil {
			t.Errorf("%s: the configuration is not YAML: %v", path, err)
			continue
		}
		for _, p := range vectorConfigProblems(cfg, global, components) {
			t.Errorf("%s: %s", path, p)
		}
	}
}

// TestVectorConfigProblemsRefuses shows the check above failing on what it
// exists to catch: a misspelt key, a key nested in the wrong block, a value
// outside an enum, a component with no registry.
func TestVectorConfigProblemsRefuses(t *testing.T) {
	global, components := loadVectorRegistries(t)
	const text = `
api:
  enabeld: false
sources:
  k:
    type: kafka
    bootstrap_servers: b
    group_id: g
    topics: [t]
    decoding: {codec: avro, avro: {schema: s, strip_schema_id: true}}
sinks:
  c:
    type: clickhouse
    inputs: [k]
    endpoint: e
    table: t
    format: arrow
    batch: {max_evnets: 1}
    buffer: {max_events: "many"}
  d:
    type: kafka
`
	var cfg map[string]any
	if err := yaml.Unmarshal([]byte(text), &cfg); err != nil {
		t.Fatal(err)
	}
	got := vectorConfigProblems(cfg, global, components)
	for _, want := range []string{
		"api.enabeld: not an option of Vector's global options",
		"sources.k.decoding.avro.strip_schema_id: not an option of Vector's kafka source",
		"sinks.c.format: arrow is not one of ",
		"sinks.c.batch.max_evnets: not an option of Vector's clickhouse sink",
		"sinks.c.buffer.max_events: many is not a whole number",
		`sinks.d: type "kafka" has no committed registry`,
	} {
		if !slices.ContainsFunc(got, func(p string) bool { return strings.HasPrefix(p, want) }) {
			t.Errorf("no problem %q among:\n%s", want, strings.Join(got, "\n"))
		}
	}
	if len(got) != 6 {
		t.Errorf("%d problems, want 6:\n%s", len(got), strings.Join(got, "\n"))
	}
}
