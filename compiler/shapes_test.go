package compiler

import (
	"fmt"
	"os/exec"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/parser"
	"cuelang.org/go/cue/token"
)

// A mutation is one careless edit of an author's file, made by a shape
// rather than written by hand: every environment and entrant of the tree
// gets each shape, so a new one is covered with no new case.
type mutation struct {
	shape string
	file  string
	field string // the top-level field edited
	line  int    // the line of the edit, in the edited file
	old   string // the line as it was
	new   string // the line as the edit leaves it ("" deletes it)
	// rule is the rule both tools must name; "" leaves it to spatec vet
	// (the official tool must then name the same).
	rule string
	// message is a substring of spatec vet's problem.
	message string
	// anyLine accepts a problem anywhere in the file: a field left out has
	// no line of its own.
	anyLine bool
	// fix is the hint applied to the edited line, when the problem's hint
	// is a literal edit; the tree must then pass.
	fix func(problem string) (string, bool)
}

// topFields lists the fields of the struct a file declares (env or
// #entrant), with their lines, and whether each fits on one line.
type topField struct {
	label    string
	line     int
	oneLine  bool
	value    ast.Expr
	required bool
}

func declaredFields(t *testing.T, file string, src []byte, required map[string]bool) []topField {
	t.Helper()
	f, err := parser.ParseFile(file, src)
	if err != nil {
		t.Fatalf("parsing %s: %v", file, err)
	}
	var out []topField
	for _, d := range f.Decls {
		fd, ok := d.(*ast.Field)
		if !ok {
			continue
		}
		label, _, _ := ast.LabelName(fd.Label)
		if label != "env" && label != "#entrant" {
			continue
		}
		b, ok := fd.Value.(*ast.BinaryExpr)
		if !ok {
			continue
		}
		st, ok := b.Y.(*ast.StructLit)
		if !ok {
			continue
		}
		for _, e := range st.Elts {
			ef, ok := e.(*ast.Field)
			if !ok {
				continue
			}
			name, _, err := ast.LabelName(ef.Label)
			if err != nil {
				continue
			}
			out = append(out, topField{label: name, line: ef.Pos().Line(), oneLine: ef.Pos().Line() == ef.End().Line(),
				value: ef.Value, required: required[name]})
		}
	}
	return out
}

// requiredFields are the fields the schema requires of an environment
// and of an entrant.
func requiredFields(t *testing.T, tr *Tree) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for _, part := range []string{"env", "entrant"} {
		v, ok := field(tr.plan, part)
		if !ok {
			t.Fatalf("#Plan has no %s", part)
		}
		iter, err := v.Fields(cue.Optional(true))
		if err != nil {
			t.Fatal(err)
		}
		out[part] = map[string]bool{}
		for iter.Next() {
			if sel := iter.Selector(); sel.ConstraintType() == cue.RequiredConstraint {
				out[part][sel.Unquoted()] = true
			}
		}
	}
	return out
}

// authorFiles are the files that declare an environment or an entrant.
func authorFiles(fsys fstest.MapFS) []string {
	var out []string
	for name, f := range fsys {
		if path.Ext(name) != ".cue" || path.Base(name) == "plans.cue" {
			continue
		}
		if strings.HasPrefix(name, "envs/") && strings.Contains(string(f.Data), "\nenv: schema.#Environment") ||
			strings.HasPrefix(name, "entrants/") && strings.Contains(string(f.Data), "\n#entrant: schema.#Entrant") {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

var (
	containerImage = regexp.MustCompile(`^\s+image:\s`)
	gibLine        = regexp.MustCompile(`^(\s*envelope: memory: )\d+ \* GiB$`)
	hostGiB        = regexp.MustCompile(`^(\s*memory: )(\d+) \* GiB$`)
)

// mutations makes every shape's edit of every author file.
func mutations(t *testing.T, fsys fstest.MapFS, tr *Tree) []mutation {
	required := requiredFields(t, tr)
	var out []mutation
	for _, file := range authorFiles(fsys) {
		src := string(fsys[file].Data)
		lines := strings.Split(src, "\n")
		kind := "entrant"
		if strings.HasPrefix(file, "envs/") {
			kind = "env"
		}
		fields := declaredFields(t, file, fsys[file].Data, required[kind])
		first := func(ok func(topField) bool) (topField, bool) {
			for _, f := range fields {
				if ok(f) {
					return f, true
				}
			}
			return topField{}, false
		}
		// A misspelt name: two letters of a field's name swapped.
		// (Not a field declared `_` for the file to refer to, env or
		// workload: misspelt, its references break before it is read.)
		if f, ok := first(func(f topField) bool {
			id, isRef := f.value.(*ast.Ident)
			return len(f.label) >= 5 && !(isRef && id.Name == "_")
		}); ok {
			bad := f.label[:1] + f.label[2:3] + f.label[1:2] + f.label[3:]
			old := lines[f.line-1]
			out = append(out, mutation{shape: "misspelt name", file: file, field: f.label, line: f.line, old: old,
				new: strings.Replace(old, f.label+":", bad+":", 1), rule: "C15",
				message: fmt.Sprintf("unknown field %q", bad) + " at ",
				fix: func(p string) (string, bool) {
					m := regexp.MustCompile(`did you mean (\S+)\? write (\S+)`).FindStringSubmatch(p)
					if m == nil {
						return "", false
					}
					return strings.Replace(old, f.label+":", m[2]+":", 1), true
				}})
		}
		// A misspelt name inside a container: its image, which nothing
		// refers to (a name referred to breaks its references first).
		if kind == "entrant" {
			for i, in := 0, false; i < len(lines); i++ {
				in = in || strings.HasPrefix(strings.TrimSpace(lines[i]), "containers:")
				if !in || !containerImage.MatchString(lines[i]) {
					continue
				}
				old := lines[i]
				out = append(out, mutation{shape: "misspelt name in a container", file: file, field: "image", line: i + 1, old: old,
					new: strings.Replace(old, "image:", "imgae:", 1), rule: "C15", message: `unknown field "imgae" at entrant.containers.`,
					fix: func(p string) (string, bool) {
						m := regexp.MustCompile(`did you mean (\S+)\? write (\S+)`).FindStringSubmatch(p)
						if m == nil {
							return "", false
						}
						return strings.Replace(old, "image:", m[2]+":", 1), true
					}})
				break
			}
		}
		// A required field left out.
		if f, ok := first(func(f topField) bool { return f.required && f.oneLine && f.label != "name" }); ok {
			out = append(out, mutation{shape: "missing field", file: file, field: f.label, line: f.line, old: lines[f.line-1],
				message: f.label + " is missing", anyLine: true})
		}
		// A value of the wrong type: a number written as a string.
		if f, ok := first(func(f topField) bool {
			lit, ok := f.value.(*ast.BasicLit)
			return f.oneLine && ok && (lit.Kind == token.INT || lit.Kind == token.FLOAT)
		}); ok {
			old := lines[f.line-1]
			i := strings.Index(old, ":") + 1
			out = append(out, mutation{shape: "wrong type", file: file, field: f.label, line: f.line, old: old,
				new: old[:i] + " " + strconv.Quote(strings.TrimSpace(old[i:])), rule: "C15", message: "conflicting values",
				fix: literalFix(f.label, old[:i], `a number, not a string: write (\w+): (\S+)`)})
		}
		// A key given twice with different values.
		if f, ok := first(func(f topField) bool { return f.label == "description" && f.oneLine }); ok {
			old := lines[f.line-1]
			indent := old[:len(old)-len(strings.TrimLeft(old, "\t "))]
			out = append(out, mutation{shape: "duplicate key", file: file, field: f.label, line: f.line + 1, old: old,
				new: old + "\n" + indent + `description: "another description"`, rule: "C15", message: "conflicting values",
				// "Keep one": the line as it was, without the second value.
				fix: func(p string) (string, bool) { return old, strings.HasSuffix(p, ": keep one") }})
		}
		// A value out of its bound: a topic of no partitions.
		if f, ok := first(func(f topField) bool { return f.label == "partitions" && f.oneLine }); ok {
			old := lines[f.line-1]
			i := strings.Index(old, ":") + 1
			out = append(out, mutation{shape: "out of bound", file: file, field: f.label, line: f.line, old: old,
				new: old[:i] + " 0", rule: "C15", message: "invalid value 0 (out of bound >0); write a value above 0",
				fix: literalFix(f.label, old[:i], `write (\w+): (-?\d+)$`)})
		}
		// A wrong unit: the host's memory written in MiB where GiB was
		// meant. No envelope then fits, so the hint names the host.
		if f, ok := first(func(f topField) bool { return f.label == "host" }); ok && kind == "env" {
			for i := f.line; i < len(lines); i++ {
				m := hostGiB.FindStringSubmatch(lines[i])
				if m == nil {
					continue
				}
				old := lines[i]
				out = append(out, mutation{shape: "wrong unit", file: file, field: "host.memory", line: i + 1, old: old,
					new: m[1] + m[2] + " * schema.MiB", rule: "C4", message: "no envelope fits",
					fix: func(p string) (string, bool) {
						h := regexp.MustCompile(`raise host\.memory to at least (\d+) (GiB|MiB)`).FindStringSubmatch(p)
						if h == nil {
							return "", false
						}
						return m[1] + h[1] + " * schema." + h[2], true
					}})
				break
			}
		}
		// An environment that overflows its own host's memory.
		if kind == "env" {
			for i, l := range lines {
				if m := gibLine.FindStringSubmatch(l); m != nil {
					old := l
					out = append(out, mutation{shape: "environment overflow", file: file, field: "envelope", line: i + 1, old: old,
						new: m[1] + "100000 * GiB", rule: "C4", message: "exceeds the host's",
						fix: func(p string) (string, bool) {
							h := regexp.MustCompile(`lower envelope\.memory to at most (\d+) (GiB|MiB)`).FindStringSubmatch(p)
							if h == nil {
								return "", false
							}
							return m[1] + h[1] + " * schema." + h[2], true
						}})
					break
				}
			}
		}
	}
	return out
}

// literalFix applies a hint that says "write <label>: <value>" to the
// line whose text up to its value is head.
func literalFix(label, head, hint string) func(string) (string, bool) {
	re := regexp.MustCompile(hint)
	return func(p string) (string, bool) {
		m := re.FindStringSubmatch(p)
		if m == nil || m[1] != label {
			return "", false
		}
		return head + " " + m[2], true
	}
}

// TestMutationsByShape: for each shape of careless edit (a misspelt name,
// a required field left out, a number written as a string, a memory in
// the wrong unit, a key given twice, a value out of its bound, an
// environment that overflows its host), made to every environment
// and entrant of the tree, spatec vet refuses it at the edited line (a
// field left out: in its file) with a rule, the official `cue vet -c`
// refuses it too, naming the same rule, and a hint that is a literal
// edit, applied, passes.
func TestMutationsByShape(t *testing.T) {
	cue := cueTool(t)
	base := realTree(t)
	tr := loadTree(t, base)
	muts := mutations(t, base, tr)
	shapes := map[string]int{}
	for _, m := range muts {
		shapes[m.shape]++
	}
	if n := len(authorFiles(base)); shapes["misspelt name"] != n || shapes["missing field"] != n {
		t.Fatalf("every one of the %d author files gets each shape; made %v", n, shapes)
	}
	if shapes["misspelt name in a container"] == 0 {
		t.Fatalf("no entrant's container was given a misspelt name; made %v", shapes)
	}
	for _, m := range muts {
		t.Run(m.shape+" "+m.file, func(t *testing.T) {
			t.Parallel()
			fsys := fstest.MapFS{}
			for k, v := range base {
				fsys[k] = v
			}
			lines := strings.Split(string(base[m.file].Data), "\n")
			idx := m.line - 1
			if m.shape == "duplicate key" {
				idx = m.line - 2
			}
			if lines[idx] != m.old {
				t.Fatalf("fixture: line %d of %s is %q, not %q", idx+1, m.file, lines[idx], m.old)
			}
			if m.new == "" && m.shape == "missing field" {
				lines = append(lines[:idx:idx], lines[idx+1:]...)
			} else {
				lines[idx] = m.new
			}
			edited := strings.Join(lines, "\n")
			fsys[m.file] = &fstest.MapFile{Data: []byte(edited)}

			// spatec vet: every problem of the tree.
			et := loadTree(t, fsys)
			ps := et.Broken()
			for _, id := range et.Plans() {
				ps = append(ps, et.Check(id.Env, id.Entrant, id.Variant)...)
			}
			ps = Dedupe(ps)
			var found *Problem
			for i, p := range ps {
				if !strings.Contains(p.String(), m.message) || !strings.HasPrefix(p.Pos, m.file+":") {
					continue
				}
				if !m.anyLine && p.Pos != fmt.Sprintf("%s:%d", m.file, m.line) {
					continue
				}
				found = &ps[i]
				break
			}
			if found == nil {
				t.Fatalf("spatec vet: no problem saying %q at %s:%d; got:\n%s", m.message, m.file, m.line, joinProblems(ps))
			}
			if found.Rule == "" || m.rule != "" && found.Rule != m.rule {
				t.Errorf("spatec vet names rule %q, want %q: %s", found.Rule, m.rule, found)
			}

			// The official tool, on the edited package.
			dir := t.TempDir()
			files := map[string][]byte{}
			for name, f := range fsys {
				files[name] = f.Data
			}
			writeTree(t, dir, files)
			cmd := exec.Command(cue, "vet", "-c", "./"+path.Dir(m.file))
			cmd.Dir = dir
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("cue vet -c ./%s accepts what spatec vet refuses: %s", path.Dir(m.file), found)
			}
			if !strings.Contains(string(out), found.Rule+": ") {
				t.Errorf("cue vet refuses it without naming %s, the rule spatec vet names:\n%s", found.Rule, out)
			}

			// The hint, applied literally, passes.
			if m.fix == nil {
				return
			}
			fixedLine, ok := m.fix(found.Message)
			if !ok {
				t.Fatalf("the problem gives no literal fix: %s", found)
			}
			lines[idx] = fixedLine
			fsys[m.file] = &fstest.MapFile{Data: []byte(strings.Join(lines, "\n"))}
			ft := loadTree(t, fsys)
			fps := ft.Broken()
			for _, id := range ft.Plans() {
				fps = append(fps, ft.Check(id.Env, id.Entrant, id.Variant)...)
			}
			if len(fps) > 0 {
				t.Errorf("the hint applied (%q) still fails:\n%s", fixedLine, joinProblems(Dedupe(fps)))
			}
		})
	}
}
