// Package compiler loads the CUE tree (schema, environments, entrants) with
// cuelang.org/go, resolves entrants against environments into plans, and
// turns every problem into a `file:line: rule: message` line.
//
// Each environment and entrant is its own CUE package; one that does not
// build blocks only its own plans.
package compiler

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"slices"
	"sort"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/build"
	"cuelang.org/go/cue/cuecontext"
	cueerrors "cuelang.org/go/cue/errors"
	"cuelang.org/go/cue/parser"

	"spatec.dev/spatec/internal/nearest"
	"spatec.dev/spatec/schema"
	"spatec.dev/spatec/workloads"
)

// Tree is a loaded CUE tree: the schema and every environment and entrant
// package in it, each built once.
type Tree struct {
	ctx      *cue.Context
	plan     cue.Value // schema's #Plan definition
	envs     map[string]unit
	entrants map[string]unit
	// workloads are the workload packages, by the name they declare.
	workloads map[string]unit
	// decoded caches each environment decoded into its Go form.
	decoded map[string]*schema.Environment
	// entrantParts caches, by environment and entrant, the parts of an
	// entrant no variant changes, decoded (see decode).
	entrantParts map[string]schema.Entrant
	// variants caches each entrant's variants (Variants).
	variants map[string]variantList
	// display prefixes the tree's file names, as Options.Display.
	display string
	// files is the tree, read again for the schema's doc comments when a
	// problem needs one (docPlan).
	files fs.FS
	// docs is #Plan with its doc comments, once built (docPlan).
	docs *cue.Value
	// plans holds every supported plan, by environment, entrant and
	// variant, when the tree was built as one package.
	plans cue.Value
	// plansValid caches whether every value in plans is concrete and
	// free of errors (nil: not validated yet).
	plansValid *bool
	// broken lists the problems of packages that did not build; they
	// belong to no single plan.
	broken []Problem
	// brokenDirs are the packages that did not build, or whose name
	// cannot be read.
	brokenDirs []string
	// unnamed holds, by directory, each package whose name cannot be
	// read: its plans cannot be made, and Unmade counts them.
	unnamed map[string]cue.Value
	// envProblems holds, by environment, what is wrong with the
	// environment on its own. Its plans report these and nothing else:
	// a missing block would otherwise echo through every entrant.
	envProblems map[string][]Problem
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
// not build; a broken environment or entrant is reported by Broken and
// blocks only its own plans.
//
// The sound packages are built together, as one generated package that
// imports every environment and entrant and resolves each supported pair
// into a plan, as each entrant's plans.cue does for `cue vet`: one evaluation, sharing
// every import. When that package does not evaluate (an entrant whose
// variants or supports are not even a list), each package is built on its
// own instead.
func Load(opts Options) (*Tree, error) {
	t := &Tree{
		ctx:       cuecontext.New(),
		envs:      map[string]unit{},
		entrants:  map[string]unit{},
		workloads: map[string]unit{},
		decoded:   map[string]*schema.Environment{},

		entrantParts: map[string]schema.Entrant{},
		display:      opts.Display,
		files:        opts.files(),
	}
	src, err := newSource(t.ctx, opts.files(), opts.Display)
	if err != nil {
		return nil, err
	}
	schemaInst := src.instance("schema")
	if schemaInst.Err != nil {
		return nil, fmt.Errorf("building the schema: %w", schemaInst.Err)
	}
	var sound []string
	for _, root := range []string{"envs", "entrants"} {
		dirs, err := packageDirs(opts.files(), root)
		if err != nil {
			return nil, err
		}
		for _, dir := range dirs {
			if inst := src.instance(dir); inst.Err != nil {
				t.broken = append(t.broken, fromError(inst.Err, "C15", dir, nil)...)
				t.brokenDirs = append(t.brokenDirs, dir)
				continue
			}
			sound = append(sound, dir)
		}
	}
	t.broken = append(t.broken, src.clauseClashes(sound)...)
	if err := t.loadWorkloads(src, opts.files()); err != nil {
		return nil, err
	}
	broken, brokenDirs := len(t.broken), len(t.brokenDirs)
	if t.buildTogether(src, sound) != nil {
		// Built apart, each package is said again, at its own file
		// rather than the generated package's.
		t.broken, t.brokenDirs, t.unnamed = t.broken[:broken], t.brokenDirs[:brokenDirs], nil
		t.envs, t.entrants, t.plans = map[string]unit{}, map[string]unit{}, cue.Value{}
		t.buildApart(src, schemaInst, sound)
	}
	t.broken = append(t.broken, t.unknownSupports(src)...)
	t.broken = append(t.broken, t.unknownImplements()...)
	t.checkEnvironments(schemaInst.ImportPath)
	return t, nil
}

// checkEnvironments validates each environment on its own, so that its
// problems are reported once, at its own file, rather than as their
// consequences in every plan of it. The environment's own arithmetic
// (#Environment._problems, C4) is read with the field each problem is
// about, so that it is reported at that field's line.
func (t *Tree) checkEnvironments(schemaPath string) {
	t.envProblems = map[string][]Problem{}
	for _, name := range t.Environments() {
		v := t.envs[name].value
		ps := ownProblems(v, schemaPath)
		err := v.Validate(cue.Concrete(true))
		// _failures is _problems again, as errors for the official tool:
		// said once above, at its field's line.
		if err != nil && len(ps) > 0 {
			err = withoutHidden(err, "_failures")
		}
		if err != nil {
			for _, p := range dedupe(fromError(err, "C15", name, envSite(v))) {
				if !slices.ContainsFunc(ps, func(o Problem) bool { return o.Rule == p.Rule && o.Message == p.Message }) {
					ps = append(ps, p)
				}
			}
		}
		if len(ps) == 0 {
			continue
		}
		ps = t.suggest(ps)
		t.envProblems[name] = ps
		t.broken = append(t.broken, ps...)
	}
}

// withoutHidden drops from err every error on a field under the hidden
// field label; nil when none is left.
func withoutHidden(err error, label string) error {
	var out cueerrors.Error
	for _, e := range cueerrors.Errors(err) {
		if !slices.Contains(e.Path(), label) {
			out = cueerrors.Append(out, e)
		}
	}
	if out == nil {
		return nil
	}
	return out
}

// ownProblems decodes an environment's own problems, each at the line of
// the field it names. One that cannot be decoded (its inputs are in
// error) is left to the validation that reports those inputs.
func ownProblems(env cue.Value, schemaPath string) []Problem {
	list, err := env.LookupPath(cue.MakePath(cue.Hid("_problems", schemaPath))).List()
	if err != nil {
		return nil
	}
	at := envSite(env)
	var out []Problem
	for list.Next() {
		var f struct {
			Rule    string `json:"rule"`
			At      string `json:"at"`
			Message string `json:"message"`
		}
		if list.Value().Decode(&f) != nil {
			continue
		}
		out = append(out, Problem{Pos: at.locate(f.At), Rule: f.Rule, Message: f.Message})
	}
	return out
}

// unknownSupports reports every name in an entrant's supports that is not
// an environment of the tree: a typo there would take the entrant out of
// every check in silence.
func (t *Tree) unknownSupports(src *source) []Problem {
	var out []Problem
	envs := t.Environments()
	// An environment whose package did not build is reported at its own
	// file; its directory's name is taken for its own, so that each
	// entrant supporting it does not report it again.
	known := slices.Clone(envs)
	for _, dir := range t.brokenDirs {
		if strings.HasPrefix(dir, "envs/") {
			known = append(known, path.Base(dir))
		}
	}
	for _, name := range t.Entrants() {
		list := t.entrants[name].value.LookupPath(cue.ParsePath("supports"))
		var supports []string
		if list.Decode(&supports) != nil {
			continue // reported with the entrant's other problems
		}
		// A name that is no environment is reported below, once.
		real := slices.DeleteFunc(slices.Clone(supports), func(env string) bool { return !slices.Contains(known, env) })
		out = append(out, src.selfCheckProblems(t.entrants[name].dir, name, real, posOf(list))...)
		for i, env := range supports {
			if slices.Contains(known, env) {
				continue
			}
			out = append(out, Problem{
				Pos:  posOf(list.LookupPath(cue.MakePath(cue.Index(i)))),
				Rule: "supports",
				Message: fmt.Sprintf("%s: supports names %q, which is not an environment of the tree (it has: %s), so the entrant is checked against nothing there; write the environment's name",
					name, env, strings.Join(envs, ", ")),
			})
		}
	}
	return out
}

// unknownImplements reports every name in an entrant's implements that is
// not a workload of the tree: the entrant would never run it, and a plan
// would fall back to another workload without a word. (The official tool
// cannot see this: a CUE package cannot list its sibling packages.)
func (t *Tree) unknownImplements() []Problem {
	var out []Problem
	workloads := t.Workloads()
	for _, name := range t.Entrants() {
		list := t.entrants[name].value.LookupPath(cue.ParsePath("implements"))
		var implements []string
		if list.Decode(&implements) != nil {
			continue // reported with the entrant's other problems
		}
		for i, w := range implements {
			if slices.Contains(workloads, w) {
				continue
			}
			fix := "write a workload's name"
			if near := nearest.Close(w, workloads); near != "" {
				fix = fmt.Sprintf("did you mean %q? write %q", near, near)
			}
			out = append(out, Problem{
				Pos:  posOf(list.LookupPath(cue.MakePath(cue.Index(i)))),
				Rule: "implements",
				Message: fmt.Sprintf("%s: implements names %q, which is not a workload of the tree (it has: %s); %s",
					name, w, strings.Join(nearest.Sorted(w, workloads), ", "), fix),
			})
		}
	}
	return out
}

// plansDir is where the generated package lives, beside the real ones.
const plansDir = "spatecplans"

// buildTogether builds the sound packages as one generated package.
func (t *Tree) buildTogether(src *source, dirs []string) error {
	f, err := parser.ParseFile(src.display+plansDir+"/plans.cue", plansSource(src, dirs), src.parse)
	if err != nil {
		return err
	}
	inst := src.build.NewInstance(src.display+plansDir, nil)
	inst.ImportPath = src.importPath(plansDir, plansDir)
	inst.CanonicalImportPath = src.canonical
	if err := inst.AddSyntax(f); err != nil {
		return err
	}
	if err := inst.Complete(); err != nil {
		return err
	}
	v := t.ctx.BuildInstance(inst)
	t.plan = v.LookupPath(cue.MakePath(cue.Def("Plan")))
	if !t.plan.Exists() {
		return fmt.Errorf("the generated package has no #Plan: %w", v.Err())
	}
	for i, dir := range dirs {
		field := fieldOf(dir)
		if err := t.add(dir, field, v.LookupPath(cue.MakePath(cue.Str(field), cue.Str(fmt.Sprint(i))))); err != nil {
			return err
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

// fieldOf is what a package holds, an environment or an entrant: the
// generated package's field for it.
func fieldOf(dir string) string {
	if strings.HasPrefix(dir, "envs/") {
		return "env"
	}
	return "entrant"
}

// declared is the field a package of that kind declares. An entrant is a
// definition, #entrant: a template that waits for an environment, which the
// official `cue vet -c` does not require to be concrete.
func declared(field string) string {
	if field == "entrant" {
		return "#entrant"
	}
	return field
}

// plansSource generates the package that resolves every supported pair.
// Package i is imported as p<i> and found at env."<i>" or entrant."<i>".
func plansSource(src *source, dirs []string) string {
	var b strings.Builder
	b.WriteString("package " + plansDir + "\n\nimport (\n\t\"list\"\n\t\"" + src.importPath("schema", "schema") + "\"\n")
	for i, dir := range dirs {
		fmt.Fprintf(&b, "\tp%d \"%s\"\n", i, src.importPath(dir, src.pkgs[dir].name))
	}
	b.WriteString(")\n\n#Plan: schema.#Plan\n")
	for _, field := range []string{"env", "entrant"} {
		b.WriteString("\n" + field + ": {\n")
		for i, dir := range dirs {
			if fieldOf(dir) == field {
				fmt.Fprintf(&b, "\t\"%d\": p%d.%s\n", i, i, declared(field))
			}
		}
		b.WriteString("}\n")
	}
	b.WriteString(`
plans: {
	for _, e in env for _, a in entrant if list.Contains(a.supports, e.name) for vn, _ in a.variants {
		(e.name): (a.name): (vn): schema.#Plan & {"env": e, "entrant": a, "variant": vn}
	}
}
`)
	return b.String()
}

// buildApart builds every sound package on its own.
func (t *Tree) buildApart(src *source, schemaInst *build.Instance, dirs []string) {
	t.plan = t.ctx.BuildInstance(schemaInst).LookupPath(cue.MakePath(cue.Def("Plan")))
	for _, dir := range dirs {
		field := fieldOf(dir)
		// An evaluation error inside the package (an unknown field, a wrong
		// type) is reported by Resolve with every other problem of each
		// plan; only a package that does not evaluate at all (a reference
		// to nothing), or whose name cannot be read, is broken here.
		v := t.ctx.BuildInstance(src.instance(dir))
		fv := v.LookupPath(cue.ParsePath(declared(field)))
		if !fv.Exists() && v.Err() != nil {
			t.broken = append(t.broken, fromError(v.Err(), "C15", dir, nil)...)
			t.brokenDirs = append(t.brokenDirs, dir)
			continue
		}
		_ = t.add(dir, field, fv)
	}
}

// add registers one environment or entrant by its declared name, or
// records why it cannot be.
func (t *Tree) add(dir, field string, fv cue.Value) error {
	into := t.entrants
	if field == "env" {
		into = t.envs
	}
	var p Problem
	if !fv.Exists() {
		p = Problem{Pos: t.display + dir, Rule: "layout",
			Message: fmt.Sprintf("package %s declares no `%s:` field; declare `%s: schema.%s & {…}`", dir, declared(field), declared(field), map[string]string{"env": "#Environment", "entrant": "#Entrant"}[field])}
	} else if name, err := fv.LookupPath(cue.ParsePath("name")).String(); err != nil {
		if t.unnamed == nil {
			t.unnamed = map[string]cue.Value{}
		}
		if _, seen := t.unnamed[dir]; !seen {
			t.brokenDirs = append(t.brokenDirs, dir)
		}
		t.unnamed[dir] = fv
		if nv := fv.LookupPath(cue.ParsePath("name")); written(nv) {
			ps := fromError(err, "C15", dir, nil)
			p = ps[0]
			t.broken = append(t.broken, ps[1:]...)
		} else {
			// Said at the file, as the schema says it: with no name,
			// nothing can select the package, and its plans are not made.
			p = Problem{Pos: posOf(fv), Rule: "C15",
				Message: fmt.Sprintf("%s: %s.name is missing; it is required (it is how plans and the command line name it), and without it none of its plans is made: add name: %q", dir, field, path.Base(dir))}
		}
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

// Unmade is a package whose plans could not be made, and how many.
type Unmade struct {
	// Dir is the package, e.g. "entrants/vector".
	Dir string
	// Plans is how many plans it would have had; -1 when that cannot be
	// read (the package does not build).
	Plans int
	// Why says what keeps them from being made.
	Why string
}

// Unmade lists the packages whose plans could not be made: those whose
// name cannot be read, and those that do not build. A plan count that
// leaves them out says so.
func (t *Tree) Unmade() []Unmade {
	var out []Unmade
	for _, dir := range t.brokenDirs {
		u := Unmade{Dir: dir, Plans: -1, Why: "it does not build"}
		if fv, ok := t.unnamed[dir]; ok {
			u.Why = "it has no name"
			u.Plans = t.plansOf(dir, fv)
		}
		out = append(out, u)
	}
	return out
}

// plansOf counts the plans a package with no name would have had: an
// entrant's variants on each environment it supports, or an
// environment's (taken to be named as its directory) of each entrant
// that supports it.
func (t *Tree) plansOf(dir string, fv cue.Value) int {
	variants := func(v cue.Value) int {
		n := 0
		if iter, err := v.LookupPath(cue.ParsePath("variants")).Fields(); err == nil {
			for iter.Next() {
				n++
			}
		}
		return n
	}
	if fieldOf(dir) == "entrant" {
		var supports []string
		if fv.LookupPath(cue.ParsePath("supports")).Decode(&supports) != nil {
			return -1
		}
		n := 0
		for _, env := range supports {
			_, named := t.envs[env]
			_, unnamed := t.unnamed["envs/"+env]
			if named || unnamed {
				n += variants(fv)
			}
		}
		return n
	}
	n := 0
	for _, name := range t.Entrants() {
		if t.Supports(name, path.Base(dir)) {
			n += variants(t.entrants[name].value)
		}
	}
	return n
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
func (t *Tree) Environments() []string { return slices.Sorted(maps.Keys(t.envs)) }

// Entrants returns the entrant names, sorted.
func (t *Tree) Entrants() []string { return slices.Sorted(maps.Keys(t.entrants)) }

// PlanID names one plan: an environment, an entrant and a variant ("" is
// the entrant's default where a plan is asked for).
type PlanID struct{ Env, Entrant, Variant string }

// Plans lists every plan of the tree: each variant of each entrant against
// each environment it supports, sorted by environment, entrant and variant.
func (t *Tree) Plans() []PlanID {
	var out []PlanID
	for _, env := range t.Environments() {
		for _, ent := range t.Entrants() {
			if !t.Supports(ent, env) {
				continue
			}
			variants, _ := t.Variants(ent)
			for _, v := range variants {
				out = append(out, PlanID{env, ent, v})
			}
		}
	}
	return out
}

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
	// Asked once a plan; the entrant's variants are read once.
	if v, ok := t.variants[entrant]; ok {
		return v.names, v.def
	}
	names, def = t.readVariants(entrant)
	if t.variants == nil {
		t.variants = map[string]variantList{}
	}
	t.variants[entrant] = variantList{names, def}
	return names, def
}

// variantList is an entrant's variants, as Variants returns them.
type variantList struct {
	names []string
	def   string
}

func (t *Tree) readVariants(entrant string) (names []string, def string) {
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

// Studies returns the names of the entrant's studies, sorted.
func (t *Tree) Studies(entrant string) []string {
	u, ok := t.entrants[entrant]
	if !ok {
		return nil
	}
	iter, err := u.value.LookupPath(cue.ParsePath("studies")).Fields()
	if err != nil {
		return nil
	}
	var names []string
	for iter.Next() {
		names = append(names, iter.Selector().Unquoted())
	}
	sort.Strings(names)
	return names
}

// StudyPoints returns the variants that are the points of one of the
// entrant's studies, in the study's order.
func (t *Tree) StudyPoints(entrant, study string) []string {
	u, ok := t.entrants[entrant]
	if !ok {
		return nil
	}
	n, err := u.value.LookupPath(cue.MakePath(cue.Str("studies"), cue.Str(study), cue.Str("expanded"))).Len().Int64()
	if err != nil {
		return nil
	}
	points := make([]string, n)
	for i := range points {
		points[i] = fmt.Sprintf("%s-%d", study, i+1)
	}
	return points
}

// StudySizes returns the dataset sizes (messages) a study runs its points
// at, or nil when it runs them on the whole dataset only.
func (t *Tree) StudySizes(env, entrant, study string) []int64 {
	pv := t.plans.LookupPath(cue.MakePath(cue.Str(env), cue.Str(entrant)))
	iter, err := pv.Fields()
	if err != nil || !iter.Next() {
		return nil
	}
	// Any variant's plan resolves the study against the environment.
	var sizes []int64
	if err := iter.Value().LookupPath(cue.MakePath(cue.Str("entrant"), cue.Str("studies"), cue.Str(study), cue.Str("sizes"))).Decode(&sizes); err != nil {
		return nil
	}
	return sizes
}

// HostedWorkload returns a workload as an environment hosts it, decoded,
// with its dataset version.
func (t *Tree) HostedWorkload(env, name string) (schema.Workload, error) {
	e, err := t.Environment(env)
	if err != nil {
		return schema.Workload{}, err
	}
	w, ok := e.Workloads[name]
	if !ok {
		return schema.Workload{}, fmt.Errorf("%s hosts no workload %q; it hosts: %s", env, name, strings.Join(slices.Sorted(maps.Keys(e.Workloads)), ", "))
	}
	return w, nil
}

// Environment returns an environment decoded, its workloads with their
// dataset versions.
func (t *Tree) Environment(name string) (*schema.Environment, error) {
	if _, ok := t.envs[name]; !ok {
		return nil, fmt.Errorf("no environment %q; the tree has: %s", name, strings.Join(t.Environments(), ", "))
	}
	if ps := t.envProblems[name]; len(ps) > 0 {
		return nil, fmt.Errorf("environment %s has problems; run `spatec vet`: %s", name, ps[0])
	}
	return t.decodedEnv(name)
}

// loadWorkloads builds each workload package on its own (environments
// import them, and a broken one is reported with them): `spatec corpus`
// reads a workload with no environment hosting it.
func (t *Tree) loadWorkloads(src *source, fsys fs.FS) error {
	dirs, err := packageDirs(fsys, "workloads")
	if err != nil {
		return err
	}
	for _, dir := range dirs {
		inst := src.instance(dir)
		if inst.Err != nil {
			continue // reported through the environments that import it
		}
		v := t.ctx.BuildInstance(inst).LookupPath(cue.ParsePath("#workload"))
		name, err := v.LookupPath(cue.ParsePath("name")).String()
		if err != nil {
			continue
		}
		t.workloads[name] = unit{dir: dir, value: v, name: name}
	}
	return nil
}

// Workloads returns the names of the tree's workloads, sorted.
func (t *Tree) Workloads() []string { return slices.Sorted(maps.Keys(t.workloads)) }

// Workload returns a workload as its package declares it, sized to
// messages, with its dataset version: what `spatec corpus` computes the
// expectation of, with no environment hosting it (so in the table form the
// workload declares).
func (t *Tree) Workload(name string, messages int64) (schema.Workload, error) {
	u, ok := t.workloads[name]
	if !ok {
		return schema.Workload{}, fmt.Errorf("no workload %q; the tree has: %s", name, strings.Join(t.Workloads(), ", "))
	}
	var w schema.Workload
	v := u.value.FillPath(cue.ParsePath("messages"), messages)
	if err := v.Validate(cue.Concrete(true)); err != nil {
		return w, fmt.Errorf("workload %s (%s): %w", name, u.dir, err)
	}
	if err := v.Decode(&w); err != nil {
		return w, fmt.Errorf("workload %s (%s): %w", name, u.dir, err)
	}
	var err error
	if w.DatasetVersion, err = workloads.Version(w); err != nil {
		return w, err
	}
	return w, nil
}
