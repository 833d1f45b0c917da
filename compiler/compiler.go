// Package compiler loads the CUE tree (schema, environments, entrants) with
// cuelang.org/go, resolves entrants against environments into plans, and
// turns every problem into a `file:line: rule: message` line.
//
// Each environment and entrant is its own CUE package, loaded and built on
// its own, so one broken file blocks only its own plans.
package compiler

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing/fstest"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/build"
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
	// root is the tree's directory on disk ("" when read from an fs.FS);
	// positions under it are shown relative, after display.
	root, display string
	// plans holds every supported plan, by environment, entrant and
	// variant, when the tree was built as one package.
	plans cue.Value
	// plansValid caches whether every value in plans is concrete and
	// free of errors (nil: not validated yet).
	plansValid *bool
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

// Options says where the tree comes from: a directory on disk, or an
// fs.FS (the tree embedded in the binary).
type Options struct {
	// Dir is the module root on disk (cue.mod/, schema/, envs/,
	// entrants/), read through the operating system.
	Dir string
	// FS holds the module root when Dir is empty.
	FS fs.FS
	// Display prefixes file names in positions, e.g. "" for the current
	// directory or "(embedded)/" for the tree inside the binary.
	Display string
}

// files is the tree as an fs.FS, for listing and reading it.
func (o Options) files() fs.FS {
	if o.Dir != "" {
		return os.DirFS(o.Dir)
	}
	return o.FS
}

// Load reads and builds the tree. It fails only when the schema itself does
// not build; a broken environment or entrant is reported by Problems.
//
// The tree is first built as one generated package that imports every
// environment and entrant and resolves each supported pair into a plan, as
// matrix.cue does for `cue vet`: one evaluation, sharing every import. When
// that package does not build (a syntax error in one file), every package is
// loaded on its own instead, so that one broken file blocks only its own
// plans.
func Load(opts Options) (*Tree, error) {
	envDirs, err := packageDirs(opts.files(), "envs")
	if err != nil {
		return nil, err
	}
	entDirs, err := packageDirs(opts.files(), "entrants")
	if err != nil {
		return nil, err
	}
	t := &Tree{
		ctx:      cuecontext.New(),
		envs:     map[string]unit{},
		entrants: map[string]unit{},
		decoded:  map[string]*schema.Environment{},
		root:     opts.Dir,
		display:  opts.Display,
	}
	if t.loadTogether(opts, envDirs, entDirs) == nil {
		return t, nil
	}
	t.envs, t.entrants, t.broken, t.plans = map[string]unit{}, map[string]unit{}, nil, cue.Value{}
	return t, t.loadApart(opts, envDirs, entDirs)
}

// config is the loader's configuration; overlay adds files to a tree on
// disk.
func (t *Tree) config(opts Options, fsys fs.FS, overlay map[string]load.Source) *load.Config {
	if opts.Dir != "" {
		return &load.Config{Dir: opts.Dir, ModuleRoot: opts.Dir, Overlay: overlay}
	}
	return &load.Config{
		FS:         fsys,
		Dir:        "/",
		ModuleRoot: "/",
		FromFSPath: func(p string) string { return opts.Display + strings.TrimPrefix(p, "/") },
	}
}

// plansDir is where the generated package lives, beside the real ones.
const plansDir = "spatecplans"

// loadTogether builds the whole tree as one generated package.
func (t *Tree) loadTogether(opts Options, envDirs, entDirs []string) error {
	src, err := plansSource(opts.files(), envDirs, entDirs)
	if err != nil {
		return err
	}
	var inst *build.Instance
	if opts.Dir != "" {
		overlay := map[string]load.Source{filepath.Join(opts.Dir, plansDir, "plans.cue"): load.FromString(src)}
		inst = load.Instances([]string{"./" + plansDir}, t.config(opts, nil, overlay))[0]
	} else {
		// An fs.FS cannot take an overlay: copy the tree into one that
		// holds the generated file too.
		fsys := fstest.MapFS{plansDir + "/plans.cue": &fstest.MapFile{Data: []byte(src)}}
		for _, pat := range []string{"cue.mod/module.cue", "schema/*.cue", "envs/*/*.cue", "entrants/*/*.cue"} {
			files, err := fs.Glob(opts.FS, pat)
			if err != nil {
				return err
			}
			for _, f := range files {
				b, err := fs.ReadFile(opts.FS, f)
				if err != nil {
					return err
				}
				fsys[f] = &fstest.MapFile{Data: b}
			}
		}
		inst = load.Instances([]string{"./" + plansDir}, t.config(opts, fsys, nil))[0]
	}
	if inst.Err != nil {
		return inst.Err
	}
	// Errors inside the value (a plan with a problem) are diagnosed by
	// Resolve, plan by plan.
	v := t.ctx.BuildInstance(inst)
	t.plan = v.LookupPath(cue.MakePath(cue.Def("Plan")))
	if !t.plan.Exists() {
		return fmt.Errorf("the generated package has no #Plan: %w", v.Err())
	}
	for _, set := range []struct {
		field string
		dirs  []string
	}{{"env", envDirs}, {"entrant", entDirs}} {
		for i, dir := range set.dirs {
			if err := t.add(opts, dir, set.field, v.LookupPath(cue.MakePath(cue.Str(set.field), cue.Str(fmt.Sprint(i))))); err != nil {
				return err
			}
		}
	}
	// A plan with a problem is an error inside plans, diagnosed by
	// Resolve; only plans that are not a struct at all (a comprehension
	// that failed) send the tree to be built apart.
	t.plans = v.LookupPath(cue.ParsePath("plans"))
	if _, err := t.plans.Fields(); err != nil {
		return err
	}
	return nil
}

// plansSource generates the package that resolves every supported pair.
func plansSource(fsys fs.FS, envDirs, entDirs []string) (string, error) {
	var b strings.Builder
	b.WriteString("package " + plansDir + "\n\nimport (\n\t\"list\"\n\t\"spatec.dev/spatec/schema\"\n")
	var envs, ents strings.Builder
	for i, dir := range append(append([]string{}, envDirs...), entDirs...) {
		pkg, err := packageName(fsys, dir)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "\tp%d \"spatec.dev/spatec/%s:%s\"\n", i, dir, pkg)
		if i < len(envDirs) {
			fmt.Fprintf(&envs, "\t\"%d\": p%d.env\n", i, i)
		} else {
			fmt.Fprintf(&ents, "\t\"%d\": p%d.entrant\n", i-len(envDirs), i)
		}
	}
	b.WriteString(")\n\n#Plan: schema.#Plan\n\nenv: {\n" + envs.String() + "}\n\nentrant: {\n" + ents.String() + "}\n\n")
	b.WriteString(`plans: {
	for _, e in env for _, a in entrant if list.Contains(a.supports, e.name) for vn, _ in a.variants {
		(e.name): (a.name): (vn): schema.#Plan & {"env": e, "entrant": a, "variant": vn}
	}
}
`)
	return b.String(), nil
}

var packageClause = regexp.MustCompile(`(?m)^package\s+([A-Za-z_][A-Za-z0-9_]*)`)

// packageName reads the package clause of a directory's files.
func packageName(fsys fs.FS, dir string) (string, error) {
	files, err := fs.Glob(fsys, dir+"/*.cue")
	if err != nil || len(files) == 0 {
		return "", fmt.Errorf("%s holds no .cue file", dir)
	}
	b, err := fs.ReadFile(fsys, files[0])
	if err != nil {
		return "", err
	}
	m := packageClause.FindSubmatch(b)
	if m == nil {
		return "", fmt.Errorf("%s has no package clause", files[0])
	}
	return string(m[1]), nil
}

// loadApart loads and builds every package on its own.
func (t *Tree) loadApart(opts Options, envDirs, entDirs []string) error {
	args := []string{"./schema"}
	for _, d := range append(append([]string{}, envDirs...), entDirs...) {
		args = append(args, "./"+d)
	}
	insts := load.Instances(args, t.config(opts, opts.FS, nil))
	if err := insts[0].Err; err != nil {
		return fmt.Errorf("loading the schema: %w", err)
	}
	sv := t.ctx.BuildInstance(insts[0])
	if err := sv.Err(); err != nil {
		return fmt.Errorf("building the schema: %w", err)
	}
	t.plan = sv.LookupPath(cue.MakePath(cue.Def("Plan")))
	for i, inst := range insts[1:] {
		dir := args[i+1][2:]
		field := "entrant"
		if strings.HasPrefix(dir, "envs/") {
			field = "env"
		}
		if inst.Err != nil {
			t.broken = append(t.broken, fromError(inst.Err, "C15", dir, nil)...)
			continue
		}
		// An evaluation error inside the package (an unknown field, a wrong
		// type) is reported by Resolve with every other problem of each
		// plan; only a package whose name cannot be read is broken here.
		_ = t.add(opts, dir, field, t.ctx.BuildInstance(inst).LookupPath(cue.ParsePath(field)))
	}
	return nil
}

// add registers one environment or entrant by its declared name, or
// records why it cannot be.
func (t *Tree) add(opts Options, dir, field string, fv cue.Value) error {
	into := t.entrants
	if field == "env" {
		into = t.envs
	}
	var p Problem
	if !fv.Exists() {
		p = Problem{Pos: opts.Display + dir, Rule: "layout",
			Message: fmt.Sprintf("package %s declares no `%s:` field; declare `%s: schema.%s & {…}`", dir, field, field, map[string]string{"env": "#Environment", "entrant": "#Entrant"}[field])}
	} else if name, err := fv.LookupPath(cue.ParsePath("name")).String(); err != nil {
		ps := fromError(err, "C15", dir, nil)
		p = ps[0]
		t.broken = append(t.broken, ps[1:]...)
	} else if prev, dup := into[name]; dup {
		p = Problem{Pos: posOf(fv.LookupPath(cue.ParsePath("name"))), Rule: "layout",
			Message: fmt.Sprintf("%s %q is declared twice (%s and %s); rename one", field, name, prev.dir, dir)}
	} else {
		into[name] = unit{dir: dir, value: fv, name: name}
		return nil
	}
	t.broken = append(t.broken, p)
	return errors.New(p.String())
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
func (t *Tree) Broken() []Problem { return t.shown(t.broken) }

// shown rewrites positions in a tree on disk relative to it, so problems
// name files as the author sees them.
func (t *Tree) shown(ps []Problem) []Problem {
	if t.root == "" {
		return ps
	}
	prefix := t.root + string(filepath.Separator)
	for i := range ps {
		if rest, ok := strings.CutPrefix(ps[i].Pos, prefix); ok {
			ps[i].Pos = t.display + rest
		}
	}
	return ps
}

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
