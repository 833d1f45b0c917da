package compiler

import (
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/build"
	"cuelang.org/go/cue/errors"
	"cuelang.org/go/cue/parser"
	"cuelang.org/go/cue/token"
)

// A spatec tree is a closed CUE module: one package per directory, imports
// of its own packages and of CUE's standard library only, no dependencies
// and no build attributes; files beside a package's may be embedded. cue/load answers the general question (module
// dependencies, registries, tags, several packages in a directory) and
// pays for it on every run: about a tenth of `spatec vet` on a 2-core
// machine. A source reads the closed case with cue/parser and assembles
// the instances with cue/build, and refuses anything outside that case with
// a message, so a tree it accepts means the same to `cue vet`.

// moduleFile is the CUE module file at a tree's root.
const moduleFile = "cue.mod/module.cue"

// source parses a tree's packages and builds their instances, each once.
type source struct {
	fsys    fs.FS
	display string // prefixes file names, as Options.Display
	module  string // the module's import path, without its major version
	parse   parser.Config
	build   *build.Context
	pkgs    map[string]*pkg // by directory, e.g. "entrants/flink"
	// copied are the packages clauseClashes found with the package
	// clause of another: an import of one by its directory's name is
	// that problem again.
	copied map[string]bool
}

// pkg is one package directory of the tree.
type pkg struct {
	name    string          // from its package clauses
	inst    *build.Instance // nil while its imports are being loaded
	loading bool
	// checks are an entrant's files that only resolve its plans for the
	// official tool (a check field and nothing else). spatec resolves
	// plans itself, so it leaves them out of the package: the
	// environments they import are not the entrant's to depend on, and
	// one that does not evaluate must not take the entrant with it.
	checks []*ast.File
}

// nameOr is the package's name, or def when the directory holds none.
func (p *pkg) nameOr(def string) string {
	if p == nil || p.name == "" {
		return def
	}
	return p.name
}

// newSource reads the module file. A tree whose module file is missing or
// asks for more than a closed module fails here.
func newSource(ctx *cue.Context, fsys fs.FS, display string) (*source, error) {
	s := &source{fsys: fsys, display: display, pkgs: map[string]*pkg{}}
	src, err := fs.ReadFile(fsys, moduleFile)
	if err != nil {
		return nil, fmt.Errorf("reading the module file: %w; a spatec tree is rooted where %s is", err, moduleFile)
	}
	f, err := parser.ParseFile(display+moduleFile, src)
	if err != nil {
		return nil, fmt.Errorf("reading the module file: %w", err)
	}
	mod := ctx.BuildFile(f)
	var m struct {
		Module   string                   `json:"module"`
		Language struct{ Version string } `json:"language"`
		Deps     map[string]any           `json:"deps"`
	}
	if err := mod.Decode(&m); err != nil {
		return nil, fmt.Errorf("reading the module file: %w", err)
	}
	switch {
	case m.Module == "":
		return nil, fmt.Errorf("%s%s declares no module path; declare `module: \"example.com/tree@v0\"`", display, moduleFile)
	case m.Language.Version == "":
		return nil, fmt.Errorf("%s%s declares no language version; declare `language: version: \"v0.17.0\"`", display, moduleFile)
	case len(m.Deps) > 0:
		return nil, fmt.Errorf("%s%s depends on other modules; a spatec tree imports only its own packages and CUE's standard library: remove `deps`", display, moduleFile)
	}
	s.module = ast.ParseImportPath(m.Module).Path
	s.parse = parser.NewConfig(parser.AllErrors).Apply(parser.Version(m.Language.Version))
	s.build = build.NewContext(build.Loader(s.load))
	return s, nil
}

// importPath is the canonical import path of a directory's package.
func (s *source) importPath(dir, name string) string {
	return ast.ImportPath{Path: s.module + "/" + dir, Qualifier: name}.String()
}

// canonical is how every instance names its imports, so that a package
// imported with its qualifier and without it is one instance, under one
// import path.
func (s *source) canonical(importPath string) string {
	ip := ast.ParseImportPath(importPath)
	dir, ok := strings.CutPrefix(ip.Path, s.module+"/")
	if !ok {
		return ip.Canonical().String()
	}
	s.instance(dir) // learns its package name
	if name := s.pkgs[dir].name; ip.Qualifier == "" || ip.Qualifier == name {
		return s.importPath(dir, name)
	}
	return importPath // a qualifier that does not match: load says so
}

// instance returns the built instance of a directory's package; its Err
// holds every problem that keeps it from building.
func (s *source) instance(dir string) *build.Instance {
	if p, ok := s.pkgs[dir]; ok {
		if p.loading {
			return s.failed(dir, errors.Newf(token.NoPos, "%s%s imports itself through its imports; break the cycle", s.display, dir))
		}
		return p.inst
	}
	p := &pkg{loading: true}
	s.pkgs[dir] = p
	files, name, err := s.parseDir(dir)
	p.name = name
	if strings.HasPrefix(dir, "entrants/") {
		files = slices.DeleteFunc(files, func(f *ast.File) bool {
			if onlyCheck(f) {
				p.checks = append(p.checks, f)
				return true
			}
			return false
		})
	}
	inst := s.build.NewInstance(s.display+dir, nil)
	inst.ImportPath = s.importPath(dir, name)
	inst.CanonicalImportPath = s.canonical
	// A module and its root, for the files a package embeds (@embed): a
	// workload's .avsc and DDL are files of their own, read by the arms'
	// tests as well.
	inst.Module, inst.Root = s.module, "."
	inst.Err = err
	for _, f := range files {
		if err := inst.AddSyntax(f); err != nil {
			inst.Err = errors.Append(inst.Err, err)
		}
	}
	if inst.Err == nil {
		_ = inst.Complete() // its errors are in inst.Err
	}
	p.inst, p.loading = inst, false
	return inst
}

// failed is an instance that cannot be built, for the reason given.
func (s *source) failed(dir string, err errors.Error) *build.Instance {
	inst := s.build.NewInstance(s.display+dir, nil)
	inst.Err = err
	return inst
}

// load resolves an import for cue/build. The standard library is left to
// the evaluator (nil); anything outside the module is refused.
func (s *source) load(pos token.Pos, importPath string) *build.Instance {
	ip := ast.ParseImportPath(importPath)
	dir, ok := strings.CutPrefix(ip.Path, s.module+"/")
	if !ok {
		if first, _, _ := strings.Cut(ip.Path, "/"); !strings.Contains(first, ".") {
			return nil // CUE's standard library
		}
		return s.failed(ip.Path, errors.Newf(pos, "import %q: a spatec tree imports only its own packages (%s/…) and CUE's standard library", importPath, s.module))
	}
	inst := s.instance(dir)
	if name := s.pkgs[dir].name; inst.Err == nil && ip.Qualifier != "" && ip.Qualifier != name {
		return s.failed(dir, errors.Newf(pos, "import %q: %s holds package %s; import it as %q", importPath, dir, name, s.importPath(dir, name)))
	}
	return inst
}

// parseDir parses every .cue file of a directory (those named _* or .* are
// ignored, as cue/load does), checking that they make one package without
// build attributes. It reports every syntax error, not only the first.
func (s *source) parseDir(dir string) (files []*ast.File, name string, errs errors.Error) {
	names, err := fs.Glob(s.fsys, dir+"/*.cue")
	if err != nil {
		return nil, "", errors.Promote(err, "listing "+s.display+dir)
	}
	var first string // the file that set name
	for _, fn := range names {
		if base := path.Base(fn); strings.HasPrefix(base, "_") || strings.HasPrefix(base, ".") {
			continue
		}
		src, err := fs.ReadFile(s.fsys, fn)
		if err != nil {
			errs = errors.Append(errs, errors.Promote(err, "reading "+s.display+fn))
			continue
		}
		f, err := parser.ParseFile(s.display+fn, src, s.parse)
		if err != nil {
			errs = errors.Append(errs, errors.Promote(err, ""))
			continue
		}
		// Where the file is, which @embed reads the files it names
		// beside. (cue/load records the same; SetFSLoc is the token
		// package's hook for loaders.)
		if tf := f.Pos().File(); tf != nil {
			tf.SetFSLoc(token.FSLoc{FS: s.fsys, Path: fn})
		}
		for _, d := range f.Preamble() {
			if a, ok := d.(*ast.Attribute); ok && strings.HasPrefix(a.Text, "@if(") {
				errs = errors.Append(errs, errors.Newf(a.Pos(), "%s: build attributes select files by tag, and a plan must not depend on tags: remove it", a.Text))
			}
		}
		switch n := f.PackageName(); {
		case n == "":
			errs = errors.Append(errs, errors.Newf(f.Pos(), "%s%s has no package clause; declare `package <name>` first", s.display, fn))
			continue
		case name == "":
			name, first = n, fn
		case n != name:
			errs = errors.Append(errs, errors.Newf(f.Pos(), "%s%s is package %s, but %s%s is package %s; a directory holds one package", s.display, fn, n, s.display, first, name))
			continue
		}
		files = append(files, f)
	}
	if len(names) == 0 {
		errs = errors.Append(errs, errors.Newf(token.NoPos, "%s%s holds no .cue file", s.display, dir))
	}
	return files, name, errs
}

// selfCheck is the field an entrant package resolves its own plans in
// (schema.#Plans), so that the official tool checks it on its own.
const selfCheck = "check"

// onlyCheck tells a file whose one field is the self-check.
func onlyCheck(f *ast.File) bool {
	fields := 0
	found := false
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.Field); ok {
			fields++
			if l, _, _ := ast.LabelName(fd.Label); l == selfCheck {
				found = true
			}
		}
	}
	return found && fields == 1
}

// selfCheckProblems reports an entrant package that does not resolve its
// own plans against every environment it supports: `cue vet -c
// ./entrants/<name>` (or ./...) would not check those plans. at is where
// the supports list is.
func (s *source) selfCheckProblems(dir, name string, supports []string, at string) []Problem {
	p := s.pkgs[dir]
	if p == nil || p.inst == nil {
		return nil
	}
	hint := fmt.Sprintf("add %s/plans.cue as entrants/vector/plans.cue is written (package %s; let entrant = #entrant; check: schema.#Plans & {#entrant: entrant, #envs: {…}}), with each environment %s supports imported and in #envs", dir, p.name, name)
	declared, file := false, ""
	imported := map[string]string{} // environment directory → file
	for _, f := range append(slices.Clone(p.checks), p.inst.Files...) {
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.Field); ok {
				if l, _, _ := ast.LabelName(fd.Label); l == selfCheck {
					declared, file = true, f.Filename
				}
			}
		}
		for spec := range f.ImportSpecs() {
			path, err := strconv.Unquote(spec.Path.Value)
			if err != nil {
				continue
			}
			if env, ok := strings.CutPrefix(ast.ParseImportPath(path).Unqualified().String(), s.module+"/envs/"); ok {
				imported[env] = f.Filename
			}
		}
	}
	if !declared {
		return []Problem{{Pos: at, Rule: "layout", Message: fmt.Sprintf(
			"%s: its package resolves none of its plans (no %s field of schema.#Plans), so the official `cue vet` checks nothing of it; %s", name, selfCheck, hint)}}
	}
	var out []Problem
	// An environment imported with a qualifier that is not its package's
	// name (a copy that kept its package clause): the official tool
	// refuses the import; spatec, which builds its plans itself, would
	// not see it.
	for _, f := range p.checks {
		for spec := range f.ImportSpecs() {
			path, err := strconv.Unquote(spec.Path.Value)
			if err != nil {
				continue
			}
			ip := ast.ParseImportPath(path)
			dir, ok := strings.CutPrefix(ip.Path, s.module+"/")
			q := s.pkgs[dir]
			if !ok || ip.Qualifier == "" || q == nil || q.name == "" || q.name == ip.Qualifier || s.copied[dir] && ip.Qualifier == packageName(dir) {
				continue
			}
			pos := spec.Pos().Position()
			out = append(out, Problem{Pos: fmt.Sprintf("%s:%d", pos.Filename, pos.Line), Rule: "layout", Message: fmt.Sprintf(
				"%s: imports %q, but %s is package %s, so the official tool finds no package %s there; %s",
				name, path, dir, q.name, ip.Qualifier, clauseFix(dir, q.name))})
		}
	}
	for _, env := range supports {
		if _, ok := imported[env]; !ok {
			out = append(out, Problem{Pos: file + ":1", Rule: "layout", Message: fmt.Sprintf(
				"%s: supports %s, which its %s does not resolve against, so the official `cue vet` does not check that pair; import %q and add it to #envs",
				name, env, selfCheck, s.importPath("envs/"+env, s.pkgs["envs/"+env].nameOr(env)))})
		}
	}
	return out
}

// packageName is the name a package is given after its directory: the
// directory's letters and digits ("new-env" → newenv), as the tree's
// packages are named and imported.
func packageName(dir string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, strings.ToLower(path.Base(dir)))
}

// clauseFix says how to name a package after its directory.
func clauseFix(dir, name string) string {
	want := packageName(dir)
	if want == "" || want == name {
		return fmt.Sprintf("import it as %q", dir+":"+name)
	}
	return fmt.Sprintf("a copied package keeps the package clause of its original: write `package %s` in each of %s's files, and import it as \"…/%s:%s\"", want, dir, dir, want)
}

// clauseClashes reports packages of envs/ and entrants/ that declare the
// same package name: the mark of a directory copied with its package
// clause left as it was. The copy (the one not named after its
// directory, else the later) is blamed, at its package clause.
func (s *source) clauseClashes(dirs []string) []Problem {
	byName := map[string][]string{}
	for _, dir := range dirs {
		if p := s.pkgs[dir]; p != nil && p.name != "" {
			byName[p.name] = append(byName[p.name], dir)
		}
	}
	var out []Problem
	for name, ds := range byName {
		if len(ds) < 2 {
			continue
		}
		for _, dir := range ds {
			if packageName(dir) == name {
				continue // the original, named after its directory
			}
			if !slices.ContainsFunc(ds, func(d string) bool { return packageName(d) == name }) && dir == ds[0] {
				continue // none is named after its directory: blame the later ones
			}
			if s.copied == nil {
				s.copied = map[string]bool{}
			}
			s.copied[dir] = true
			others := slices.DeleteFunc(slices.Clone(ds), func(d string) bool { return d == dir })
			out = append(out, Problem{Pos: s.clausePos(dir), Rule: "layout", Message: fmt.Sprintf(
				"%s is package %s, as %s is; %s", dir, name, strings.Join(others, " and "), clauseFix(dir, name))})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Pos < out[j].Pos })
	return out
}

// clausePos is the "file:line" of a package's first package clause.
func (s *source) clausePos(dir string) string {
	p := s.pkgs[dir]
	if p == nil || p.inst == nil {
		return s.display + dir
	}
	for _, f := range append(slices.Clone(p.inst.Files), p.checks...) {
		for _, d := range f.Decls {
			if pk, ok := d.(*ast.Package); ok {
				pos := pk.Pos().Position()
				return fmt.Sprintf("%s:%d", pos.Filename, pos.Line)
			}
		}
	}
	return s.display + dir
}
