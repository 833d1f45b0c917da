package options

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
)

// VectorRepoEnv names the environment variable that holds the path of a
// Vector git directory to regenerate the registries from.
const VectorRepoEnv = "SPATEC_VECTOR_REPO"

// The release read: its tag, and the commit the tag names, pinned so that a
// moved tag or a clone of another history is refused rather than read.
const (
	vectorVersion = "0.57.0"
	vectorTag     = "v0.57.0"
	vectorCommit  = "8832452f57afb536ea0de53a093f9fd1b669ccec"
)

// ErrNoVectorRepo is returned by ExtractVector when VectorRepoEnv is unset.
var ErrNoVectorRepo = errors.New("options: " + VectorRepoEnv + " is not set: it names the Vector git directory the registries are generated from")

// vectorRef is where the generated reference lives in Vector's tree.
const vectorRef = "website/cue/reference/"

// vectorComponent is one component an entrant configures, and the
// registry written for it.
type vectorComponent struct {
	out  string // the committed file, relative to the repository root
	kind string // sources, transforms or sinks
	name string // the component's type, as a configuration names it
}

// vectorComponents are the components spatec's Vector entrant configures.
func vectorComponents() []vectorComponent {
	return []vectorComponent{
		{"options/vector/kafka-source.json", "sources", "kafka"},
		{"options/vector/remap-transform.json", "transforms", "remap"},
		{"options/vector/clickhouse-sink.json", "sinks", "clickhouse"},
	}
}

// vectorGlobalOut is the registry of Vector's top-level configuration.
const vectorGlobalOut = "options/vector/global.json"

// ExtractVector generates Vector's registries (options/vector/
// kafka-source.json, remap-transform.json, clickhouse-sink.json and
// global.json) from the Vector git directory VectorRepoEnv names; root,
// spatec's repository root, is not read: the outputs are keyed relative to
// it. It returns ErrNoVectorRepo when the variable is unset.
//
// It reads the component reference Vector generates from its own
// configuration types: `make generate-component-docs` runs `vector
// generate-schema` (the JSON schema of every configurable Rust type) and
// turns it into website/cue/reference/**/generated/*.cue, which the release
// commits. So these files are the code's own account of what each
// component reads, with its defaults, enums and required fields, at the
// release's commit, and reading them needs no Rust toolchain.
//
// Those files live only in Vector's repository, which CI cannot fetch. To
// regenerate, point SPATEC_VECTOR_REPO at a clone (a git directory; bare is
// fine) that holds the v0.57.0 commit, then:
//
//	SPATEC_VECTOR_REPO=/path/to/vector.git go test ./options -run TestRegistryVectorIsTheSystems -update
//
// which rewrites options/vector/*.json.
func ExtractVector(ctx context.Context, root string) (map[string][]byte, error) {
	gitDir := os.Getenv(VectorRepoEnv)
	if gitDir == "" {
		return nil, ErrNoVectorRepo
	}
	return ExtractVectorFrom(ctx, gitDir)
}

// ExtractVectorFrom generates Vector's registries from the git directory
// gitDir, at the pinned commit of the release.
func ExtractVectorFrom(ctx context.Context, gitDir string) (map[string][]byte, error) {
	g := vectorGit{ctx: ctx, dir: gitDir}
	if err := g.checkRelease(); err != nil {
		return nil, err
	}
	cctx := cuecontext.New()
	load := func(path, at string) (cue.Value, error) {
		src, err := g.show(vectorRef + path)
		if err != nil {
			return cue.Value{}, err
		}
		v := cctx.CompileBytes(src, cue.Filename(path))
		if v.Err() != nil {
			return cue.Value{}, fmt.Errorf("options: compiling Vector's %s: %w", path, v.Err())
		}
		v = v.LookupPath(cue.ParsePath(at))
		if !v.Exists() {
			return cue.Value{}, fmt.Errorf("options: Vector's %s has no %s", path, at)
		}
		return v, nil
	}

	out := map[string][]byte{}
	for _, c := range vectorComponents() {
		basePath := "components/generated/" + c.kind + ".cue"
		base, err := load(basePath, "generated.components."+c.kind+".configuration")
		if err != nil {
			return nil, err
		}
		ownPath := "components/" + c.kind + "/generated/" + c.name + ".cue"
		own, err := load(ownPath, "generated.components."+c.kind+"."+c.name+".configuration")
		if err != nil {
			return nil, err
		}
		baseOpts, err := vectorOptions(base, c.kind)
		if err != nil {
			return nil, err
		}
		ownOpts, err := vectorOptions(own, c.name)
		if err != nil {
			return nil, err
		}
		// A component's own option of the same name as a shared one is
		// the one its configuration type declares, so it wins.
		opts := ownOpts
		for _, o := range baseOpts {
			if !slices.ContainsFunc(opts, func(p Option) bool { return p.Key == o.Key }) {
				opts = append(opts, o)
			}
		}
		// components.cue, not the schema, adds the tag every component is
		// selected by; Vector refuses a component without it.
		opts = append(opts, Option{
			Key:      "type",
			Type:     Enum,
			Values:   []string{c.name},
			Required: true,
			Doc:      "The component type.",
		})
		sortOptions(opts)
		reg := Registry{
			System:  "Vector",
			Version: vectorVersion,
			Source: fmt.Sprintf("github.com/vectordotdev/vector tag %s, commit %s: every option of %s%s (the %s's own) and %s%s (what every one of its %s takes), "+
				"the CUE Vector generates from its configuration types (`make generate-component-docs`), read with cuelang.org/go; "+
				"plus `type`, the tag %scomponents.cue gives every component",
				vectorTag, vectorCommit, vectorRef, ownPath, strings.TrimSuffix(c.kind, "s"), vectorRef, basePath, c.kind, vectorRef),
			Options: opts,
		}
		b, err := Marshal(reg)
		if err != nil {
			return nil, err
		}
		out[c.out] = b
	}

	const globalPath = "generated/configuration.cue"
	global, err := load(globalPath, "generated.configuration.configuration")
	if err != nil {
		return nil, err
	}
	opts, err := vectorOptions(global, "configuration")
	if err != nil {
		return nil, err
	}
	for i := range opts {
		switch opts[i].Key {
		case "sources", "transforms", "sinks":
			// Each component's options are its own registry's; the
			// shared ones listed here under "*" are in those too.
			opts[i].Fields = nil
		}
	}
	reg := Registry{
		System:  "Vector",
		Version: vectorVersion,
		Source: fmt.Sprintf("github.com/vectordotdev/vector tag %s, commit %s: every top-level option of %s%s, the CUE Vector generates from its configuration types (`make generate-component-docs`), read with cuelang.org/go; "+
			"sources, transforms and sinks are maps whose entries are in the components' own registries",
			vectorTag, vectorCommit, vectorRef, globalPath),
		Options: opts,
	}
	b, err := Marshal(reg)
	if err != nil {
		return nil, err
	}
	out[vectorGlobalOut] = b
	return out, nil
}

// vectorGit reads files of the pinned commit from a git directory.
type vectorGit struct {
	ctx context.Context
	dir string
}

func (g vectorGit) git(args ...string) ([]byte, error) {
	cmd := exec.CommandContext(g.ctx, "git", append([]string{"--git-dir", g.dir}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("options: git %s in %s: %w: %s", strings.Join(args, " "), g.dir, err, strings.TrimSpace(stderr.String()))
	}
	return b, nil
}

func (g vectorGit) show(path string) ([]byte, error) {
	return g.git("show", vectorCommit+":"+path)
}

// checkRelease refuses a clone whose tag names another commit, or whose
// pinned commit is not the release's version.
func (g vectorGit) checkRelease() error {
	if _, err := g.git("cat-file", "-e", vectorCommit+"^{commit}"); err != nil {
		return fmt.Errorf("options: the Vector repository lacks %s's commit %s: %w", vectorTag, vectorCommit, err)
	}
	// A clone without tags is read by the commit alone.
	if tagged, err := g.git("rev-parse", "--verify", "--quiet", "refs/tags/"+vectorTag+"^{commit}"); err == nil {
		if got := strings.TrimSpace(string(tagged)); got != vectorCommit {
			return fmt.Errorf("options: %s in %s names commit %s, not the pinned %s", vectorTag, g.dir, got, vectorCommit)
		}
	}
	cargo, err := g.show("Cargo.toml")
	if err != nil {
		return err
	}
	m := regexp.MustCompile(`(?m)^version = "([^"]+)"`).FindSubmatch(cargo)
	if m == nil || string(m[1]) != vectorVersion {
		return fmt.Errorf("options: Cargo.toml at %s does not say version %s", vectorCommit, vectorVersion)
	}
	return nil
}

// vectorOptions converts the options of one generated `configuration` (or
// an object's `options`) block; where names the block in errors.
func vectorOptions(block cue.Value, where string) ([]Option, error) {
	it, err := block.Fields()
	if err != nil {
		return nil, fmt.Errorf("options: listing %s: %w", where, err)
	}
	var opts []Option
	for it.Next() {
		key := it.Selector().Unquoted()
		o, err := vectorOption(key, it.Value(), where+"."+key)
		if err != nil {
			return nil, err
		}
		opts = append(opts, o)
	}
	sortOptions(opts)
	return opts, nil
}

// vectorOption converts one generated option: {description, required,
// deprecated, relevant_when, type: {<kind>: {default, enum, options, ...}}}.
func vectorOption(key string, v cue.Value, where string) (Option, error) {
	o := Option{Key: key}
	if d := v.LookupPath(cue.ParsePath("description")); d.Exists() {
		s, err := d.String()
		if err != nil {
			return o, fmt.Errorf("options: %s description: %w", where, err)
		}
		o.Doc = vectorFirstSentence(s)
	}
	flag := func(name string) (bool, error) {
		f := v.LookupPath(cue.ParsePath(name))
		if !f.Exists() {
			return false, nil
		}
		b, err := f.Bool()
		if err != nil {
			return false, fmt.Errorf("options: %s %s: %w", where, name, err)
		}
		return b, nil
	}
	required, err := flag("required")
	if err != nil {
		return o, err
	}
	if o.Deprecated, err = flag("deprecated"); err != nil {
		return o, err
	}
	// An option required only when relevant_when holds (a variant's field,
	// such as decoding.avro when codec = "avro") is not required of every
	// configuration; the registry has no place for the condition.
	o.Required = required && !v.LookupPath(cue.ParsePath("relevant_when")).Exists()

	types, err := v.LookupPath(cue.ParsePath("type")).Fields()
	if err != nil {
		return o, fmt.Errorf("options: %s type: %w", where, err)
	}
	var kinds []string
	var tvs []cue.Value
	for types.Next() {
		kinds = append(kinds, types.Selector().Unquoted())
		tvs = append(tvs, types.Value())
	}
	if len(kinds) != 1 {
		// Vector writes an untagged union as several types (request
		// concurrency: "adaptive", "none" or a number); a value of any of
		// them is read. Its string alternatives, if it names them, are
		// kept as values, and the default of whichever type has one.
		o.Type = Any
		for i, k := range kinds {
			if k == "string" {
				if enum := tvs[i].LookupPath(cue.ParsePath("enum")); enum.Exists() {
					if o.Values, err = vectorEnum(enum, where); err != nil {
						return o, err
					}
				}
			}
			if o.Default == nil {
				if o.Default, err = vectorDefault(tvs[i], where); err != nil {
					return o, err
				}
			}
		}
		return o, nil
	}
	tv := tvs[0]
	switch kinds[0] {
	case "bool":
		o.Type = Bool
	case "string":
		o.Type = String
		if enum := tv.LookupPath(cue.ParsePath("enum")); enum.Exists() {
			o.Type = Enum
			if o.Values, err = vectorEnum(enum, where); err != nil {
				return o, err
			}
		}
	case "ascii_char":
		o.Type = String
	case "uint":
		o.Type = Int
		zero := 0.0
		o.Min = &zero
	case "int":
		o.Type = Int
	case "float":
		o.Type = Float
	case "array":
		o.Type = List
	case "*":
		o.Type = Any
	case "object":
		o.Type = Struct
		fields := tv.LookupPath(cue.ParsePath("options"))
		if !fields.Exists() {
			o.Type = Map
			break
		}
		if o.Fields, err = vectorOptions(fields, where); err != nil {
			return o, err
		}
		// An object whose only option is "*" is a map: the "*" field
		// says what each entry holds. One with none is a free map.
		if len(o.Fields) == 0 || (len(o.Fields) == 1 && o.Fields[0].Key == "*") {
			o.Type = Map
		}
	default:
		return o, fmt.Errorf("options: %s has type %q, which the converter does not know", where, kinds[0])
	}
	o.Default, err = vectorDefault(tv, where)
	return o, err
}

// vectorEnum is the values of a generated string enum, sorted.
func vectorEnum(enum cue.Value, where string) ([]string, error) {
	it, err := enum.Fields()
	if err != nil {
		return nil, fmt.Errorf("options: %s enum: %w", where, err)
	}
	var values []string
	for it.Next() {
		values = append(values, it.Selector().Unquoted())
	}
	slices.Sort(values)
	return values, nil
}

// vectorDefault is the default one type of an option declares, as text:
// a string as itself, anything else as JSON; nil when it declares none.
func vectorDefault(tv cue.Value, where string) (*string, error) {
	d := tv.LookupPath(cue.ParsePath("default"))
	if !d.Exists() || d.Kind() == cue.NullKind {
		return nil, nil
	}
	var text string
	var err error
	if d.Kind() == cue.StringKind {
		text, err = d.String()
	} else {
		var b []byte
		b, err = d.MarshalJSON()
		text = string(b)
	}
	if err != nil {
		return nil, fmt.Errorf("options: %s default: %w", where, err)
	}
	return &text, nil
}

var (
	// vectorMDRefLink and vectorMDURLLink are Markdown links, [text][ref] and
	// [text](url): a doc keeps their text.
	vectorMDRefLink = regexp.MustCompile(`\[([^\]]+)\]\[[^\]]*\]`)
	vectorMDURLLink = regexp.MustCompile(`\[([^\]]+)\]\([^)]*\)`)
	vectorSpaces    = regexp.MustCompile(`\s+`)
	// vectorSentenceEnd is a full stop that ends a sentence: followed by a
	// space, not after "e.g" or "i.e".
	vectorSentenceEnd = regexp.MustCompile(`[.!?](\s|$)`)
)

// vectorFirstSentence is the first sentence of a Markdown description, on one
// line, at most about 160 characters.
func vectorFirstSentence(desc string) string {
	para, _, _ := strings.Cut(strings.TrimSpace(desc), "\n\n")
	s := vectorSpaces.ReplaceAllString(para, " ")
	s = vectorMDRefLink.ReplaceAllString(s, "$1")
	s = vectorMDURLLink.ReplaceAllString(s, "$1")
	s = strings.TrimSpace(s)
	for _, loc := range vectorSentenceEnd.FindAllStringIndex(s, -1) {
		before := strings.ToLower(s[:loc[0]])
		if strings.HasSuffix(before, "e.g") || strings.HasSuffix(before, "i.e") {
			continue
		}
		s = s[:loc[0]+1]
		break
	}
	const limit = 160
	if len(s) > limit {
		cut := strings.LastIndex(s[:limit], " ")
		if cut < limit/2 {
			cut = limit
		}
		s = strings.TrimRight(s[:cut], " ,;:") + "…"
	}
	return s
}
