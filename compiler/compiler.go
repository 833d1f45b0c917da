// Package compiler loads the CUE tree (schema, environments, entrants) with
// cuelang.org/go, resolves entrants against environments into plans, and
// turns every problem into a `file:line: rule: message` line.
//
// Each environment and entrant is its own CUE package, loaded and built on
// its own, so one broken file blocks only its own plans.
package compiler

import (
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
	"cuelang.org/go/cue/load"

	"spatec.dev/spatec/schema"
)

// Tree is a loaded CUE tree: the schema and every environment and entrant
// package in it, each built once.
type Tree struct {
	ctx      *cue.Context
	plan     cue.Value // schema's #Plan definition
	envs     map[string]unit
	entrants map[string]unit
	// decoded caches each environment decoded into its Go form.
	decoded map[string]*schema.Environment
	// broken lists the problems of packages that did not build; they
	// belong to no single plan.
	broken []Problem
}

// unit is one built environment or entrant package.
type unit struct {
	dir   string    // e.g. "entrants/flink"
	value cue.Value // the package's `env` or `entrant` field
	name  string    // the declared name
}

// Options says where the tree comes from.
type Options struct {
	// FS holds the module root: cue.mod/, schema/, envs/, entrants/.
	FS fs.FS
	// Display prefixes file names in positions, e.g. "" for the current
	// directory or "(embedded)/" for the tree inside the binary.
	Display string
}

// Load reads and builds the tree. It fails only when the schema itself does
// not build; a broken environment or entrant is reported by Problems.
func Load(opts Options) (*Tree, error) {
	envDirs, err := packageDirs(opts.FS, "envs")
	if err != nil {
		return nil, err
	}
	entDirs, err := packageDirs(opts.FS, "entrants")
	if err != nil {
		return nil, err
	}
	args := []string{"./schema"}
	for _, d := range append(append([]string{}, envDirs...), entDirs...) {
		args = append(args, "./"+d)
	}
	cfg := &load.Config{
		FS:         opts.FS,
		Dir:        "/",
		ModuleRoot: "/",
		FromFSPath: func(p string) string { return opts.Display + strings.TrimPrefix(p, "/") },
	}
	insts := load.Instances(args, cfg)
	t := &Tree{
		ctx:      cuecontext.New(),
		envs:     map[string]unit{},
		entrants: map[string]unit{},
		decoded:  map[string]*schema.Environment{},
	}
	if err := insts[0].Err; err != nil {
		return nil, fmt.Errorf("loading the schema: %w", err)
	}
	sv := t.ctx.BuildInstance(insts[0])
	if err := sv.Err(); err != nil {
		return nil, fmt.Errorf("building the schema: %w", err)
	}
	t.plan = sv.LookupPath(cue.MakePath(cue.Def("Plan")))
	for i, inst := range insts[1:] {
		dir := args[i+1][2:]
		field, into := "entrant", t.entrants
		if strings.HasPrefix(dir, "envs/") {
			field, into = "env", t.envs
		}
		if inst.Err != nil {
			t.broken = append(t.broken, fromError(inst.Err, "C15", dir, nil)...)
			continue
		}
		// An evaluation error inside the package (an unknown field, a wrong
		// type) is reported by Resolve with every other problem of each
		// plan; only a package whose name cannot be read is broken here.
		v := t.ctx.BuildInstance(inst)
		fv := v.LookupPath(cue.ParsePath(field))
		if !fv.Exists() {
			t.broken = append(t.broken, Problem{Pos: opts.Display + dir, Rule: "layout",
				Message: fmt.Sprintf("package %s declares no `%s:` field; declare `%s: schema.%s & {…}`", dir, field, field, map[string]string{"env": "#Environment", "entrant": "#Entrant"}[field])})
			continue
		}
		name, err := fv.LookupPath(cue.ParsePath("name")).String()
		if err != nil {
			t.broken = append(t.broken, fromError(err, "C15", dir, nil)...)
			continue
		}
		if _, dup := into[name]; dup {
			t.broken = append(t.broken, Problem{Pos: posOf(fv.LookupPath(cue.ParsePath("name"))), Rule: "layout",
				Message: fmt.Sprintf("%s %q is declared twice (%s and %s); rename one", field, name, into[name].dir, dir)})
			continue
		}
		into[name] = unit{dir: dir, value: fv, name: name}
	}
	return t, nil
}

// packageDirs lists the directories under root that hold .cue files.
func packageDirs(fsys fs.FS, root string) ([]string, error) {
	files, err := fs.Glob(fsys, root+"/*/*.cue")
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", root, err)
	}
	seen := map[string]bool{}
	var dirs []string
	for _, f := range files {
		d := path.Dir(f)
		if !seen[d] {
			seen[d] = true
			dirs = append(dirs, d)
		}
	}
	sort.Strings(dirs)
	return dirs, nil
}

// Environments returns the environment names, sorted.
func (t *Tree) Environments() []string { return sortedKeys(t.envs) }

// Entrants returns the entrant names, sorted.
func (t *Tree) Entrants() []string { return sortedKeys(t.entrants) }

// Broken returns the problems of packages that did not build.
func (t *Tree) Broken() []Problem { return t.broken }

// Supports reports whether the entrant lists the environment.
func (t *Tree) Supports(entrant, env string) bool {
	u, ok := t.entrants[entrant]
	if !ok {
		return false
	}
	var names []string
	if err := u.value.LookupPath(cue.ParsePath("supports")).Decode(&names); err != nil {
		return false
	}
	for _, n := range names {
		if n == env {
			return true
		}
	}
	return false
}

// Variants returns the entrant's variant names and its default (or "" when
// the entrant does not have exactly one default: the plan reports that).
func (t *Tree) Variants(entrant string) (names []string, def string) {
	u, ok := t.entrants[entrant]
	if !ok {
		return nil, ""
	}
	var defaults []string
	iter, err := u.value.LookupPath(cue.ParsePath("variants")).Fields()
	if err != nil {
		return nil, ""
	}
	for iter.Next() {
		n := iter.Selector().Unquoted()
		names = append(names, n)
		if d, err := iter.Value().LookupPath(cue.ParsePath("default")).Bool(); err == nil && d {
			defaults = append(defaults, n)
		}
	}
	sort.Strings(names)
	if len(defaults) == 1 {
		return names, defaults[0]
	}
	if len(names) > 0 {
		return names, names[0]
	}
	return names, ""
}

func sortedKeys(m map[string]unit) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
