package harness

import (
	"bufio"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path"
	"regexp"
	"slices"
	"strings"

	"spatec.dev/spatec/schema"
)

// Kind is how spatec accounts for a harness fact.
type Kind string

const (
	// Equal: the plan holds the harness's value (resolved through the
	// harness's own defaults and knobs) at the named key.
	Equal Kind = "equal"
	// Same: the same effect spelt otherwise; the plan's value at the
	// named key is the one the account gives, and the account says why.
	Same Kind = "same"
	// Deviation: a difference the entrant declares; its plan on the
	// harness's host lists the deviation.
	Deviation Kind = "deviation"
	// Outside: not a setting of the run (the harness's own build, its
	// driver's names and addresses, its presentation); the account says
	// what it is.
	Outside Kind = "outside"
)

// Entry accounts for the facts of one file whose key matches Key (a
// pattern: * matches any run of characters).
type Entry struct {
	Line  int
	Kind  Kind
	Key   string
	Place string // the spatec place, e.g. tm:/opt/flink/conf/config.yaml
	// SpatecKey is the key at Place; "" means Key (an Equal entry whose
	// Key is a pattern matches each fact under its own key).
	SpatecKey string
	// Value is the plan's value a Same entry asserts; for a Deviation,
	// the deviation's id.
	Value string
	Why   string
}

// Section is the accounts of one harness file of one arm.
type Section struct {
	Line    int
	Arm     string
	File    string
	Place   string // the default spatec place of the file's settings
	Title   string
	Entries []Entry
	// Renames turn a fact's key into spatec's where spatec names a part
	// otherwise (a component, a section): old and new substrings, in
	// order.
	Renames [][2]string
}

// spatecKey is the key an entry reads in the plan for a fact's key.
func (s *Section) spatecKey(e *Entry, key string) string {
	if strings.Contains(e.SpatecKey, "*") {
		return strings.Replace(e.SpatecKey, "*", capture(e.Key, key), 1)
	}
	if e.SpatecKey != "" {
		return e.SpatecKey
	}
	for _, r := range s.Renames {
		key = strings.Replace(key, r[0], r[1], 1)
	}
	return key
}

// Addition is a setting spatec's plan makes that the harness has no fact
// for, declared with why.
type Addition struct {
	Line       int
	Arm        string
	Place, Key string
	Why        string
}

// Accounts is harness/accounts.txt: how each harness fact is accounted
// for, and what spatec adds.
type Accounts struct {
	Path      string
	Sections  []Section
	Additions []Addition
	// Compared lists, per arm, the plan places whose every key must be
	// a fact's or an addition's.
	Compared map[string][]string
}

// ReadAccounts parses the accounts file. Its lines:
//
//	## ARM FILE => PLACE | title           a section: the harness's FILE
//	= KEY [=> PLACE [KEY']]                equal (KEY may be a pattern)
//	~ KEY => PLACE KEY' = VALUE | why      the same effect spelt otherwise
//	! KEY => deviation ID | why            a deviation the entrant declares
//	- KEY | why                            not a setting of the run
//	rename OLD NEW                         spatec's keys name a part otherwise
//	+ ARM PLACE KEY | why                  a setting spatec adds
//	compare ARM PLACE...                   places held whole both ways
func ReadAccounts(p string) (*Accounts, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, fmt.Errorf("reading the harness accounts: %w", err)
	}
	defer f.Close()
	a := &Accounts{Path: p, Compared: map[string][]string{}}
	sc := bufio.NewScanner(f)
	n := 0
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%s:%d: %s", p, n, fmt.Sprintf(format, args...))
	}
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") && !strings.HasPrefix(line, "## ") {
			continue
		}
		body, why, _ := strings.Cut(line, " | ")
		body, why = strings.TrimSpace(body), strings.TrimSpace(why)
		op, rest, _ := strings.Cut(body, " ")
		rest = strings.TrimSpace(rest)
		switch op {
		case "##":
			lhs, place, _ := strings.Cut(rest, " => ")
			f := strings.Fields(lhs)
			if len(f) != 2 {
				return nil, bad("a section is `## ARM FILE => PLACE | title`")
			}
			arm := f[0]
			if arm == "-" {
				arm = ""
			}
			a.Sections = append(a.Sections, Section{Line: n, Arm: arm, File: f[1], Place: strings.TrimSpace(place), Title: why})
			continue
		case "rename":
			f := strings.Fields(rest)
			if len(f) != 2 || len(a.Sections) == 0 {
				return nil, bad("`rename OLD NEW` inside a section")
			}
			s := &a.Sections[len(a.Sections)-1]
			s.Renames = append(s.Renames, [2]string{f[0], f[1]})
			continue
		case "compare":
			f := strings.Fields(rest)
			if len(f) < 2 {
				return nil, bad("`compare ARM PLACE...`")
			}
			a.Compared[f[0]] = append(a.Compared[f[0]], f[1:]...)
			continue
		case "+":
			f := strings.Fields(rest)
			if len(f) != 3 || why == "" {
				return nil, bad("an addition is `+ ARM PLACE KEY | why`")
			}
			a.Additions = append(a.Additions, Addition{Line: n, Arm: f[0], Place: f[1], Key: f[2], Why: why})
			continue
		}
		if len(a.Sections) == 0 {
			return nil, bad("an entry before any section")
		}
		s := &a.Sections[len(a.Sections)-1]
		key, target, _ := strings.Cut(rest, " => ")
		e := Entry{Line: n, Key: strings.TrimSpace(key), Why: why, Place: s.Place}
		target = strings.TrimSpace(target)
		switch op {
		case "=":
			e.Kind = Equal
			if f := strings.Fields(target); len(f) > 0 {
				e.Place = f[0]
				if len(f) > 1 {
					e.SpatecKey = f[1]
				}
			}
		case "~":
			e.Kind = Same
			lhs, val, ok := strings.Cut(target, " = ")
			f := strings.Fields(lhs)
			if !ok || len(f) < 1 || len(f) > 2 || why == "" {
				return nil, bad("`~ KEY => PLACE [KEY'] = VALUE | why`")
			}
			e.Place, e.Value = f[0], strings.TrimSpace(val)
			if len(f) == 2 {
				e.SpatecKey = f[1]
			}
		case "!":
			e.Kind = Deviation
			id, ok := strings.CutPrefix(target, "deviation ")
			if !ok || why == "" {
				return nil, bad("`! KEY => deviation ID | why`")
			}
			e.Value, e.Place = strings.TrimSpace(id), ""
		case "-":
			e.Kind, e.Place = Outside, ""
			if why == "" {
				return nil, bad("`- KEY | why`: say what it is")
			}
		default:
			return nil, bad("unknown entry %q (=, ~, !, -, +, ##, compare)", op)
		}
		if e.Key == "" {
			return nil, bad("an entry names no key")
		}
		s.Entries = append(s.Entries, e)
	}
	return a, sc.Err()
}

// Row is one fact's account against a plan.
type Row struct {
	Fact     Fact
	Resolved string // the fact's value through the harness's defaults
	Entry    *Entry
	Spatec   string // the plan's value, where the entry names one
	// SpatecKey is the key Spatec was read at.
	SpatecKey string
	Problem   string // why the account fails, "" when it holds
}

// Result is the whole account.
type Result struct {
	Rows []Row
	// Problems are failures outside rows: a fact no entry accounts for,
	// an entry no fact matches, a plan setting nobody accounts for.
	Problems []string
}

// Account holds each fact against the plans of the harness's host (each
// arm's default variant): every fact must be accounted for by an entry
// that holds, and every setting of a compared place must be a fact's or a
// declared addition.
func Account(facts Facts, a *Accounts, plans map[string]schema.Plan, tree fs.FS) Result {
	var res Result
	problem := func(format string, args ...any) { res.Problems = append(res.Problems, fmt.Sprintf(format, args...)) }
	sections := map[string]*Section{}
	for i := range a.Sections {
		s := &a.Sections[i]
		sections[s.Arm+" "+s.File] = s
	}
	used := map[*Entry]bool{}
	claimed := map[string]bool{} // arm place key, of the plan
	envs := harnessEnv(facts)
	// Each plan place is read once, however many facts name it.
	type placed struct {
		vals map[string]string
		err  error
	}
	read := map[string]placed{}
	place := func(p schema.Plan, where string) (map[string]string, error) {
		key := p.Entrant.Name + " " + where
		r, ok := read[key]
		if !ok {
			r.vals, r.err = Place(p, tree, where)
			read[key] = r
		}
		return r.vals, r.err
	}
	for _, f := range facts.List {
		s := sections[f.Arm+" "+f.File]
		if s == nil {
			problem("%s: the harness's %s (arm %q) has no section `## %s %s => PLACE`; its fact %s = %q is not accounted for",
				a.Path, f.File, f.Arm, armOr(f.Arm), f.File, f.Key, f.Value)
			continue
		}
		e := match(s, f.Key)
		if e == nil {
			problem("%s:%d: no entry accounts for the harness's %s %s = %q (%s); add one: `= %s`, `~ %s => PLACE KEY = VALUE | why`, `! %s => deviation ID | why` or `- %s | why`",
				a.Path, s.Line, f.File, f.Key, f.Value, armOr(f.Arm), f.Key, f.Key, f.Key, f.Key)
			continue
		}
		used[e] = true
		r := Row{Fact: f, Resolved: resolve(f, envs, facts), Entry: e}
		p, ok := plans[f.Arm]
		if !ok && f.Arm == "" {
			p, ok = plans["spate"]
		}
		switch e.Kind {
		case Equal, Same:
			if !ok {
				r.Problem = fmt.Sprintf("no plan of %s on the harness's host", f.Arm)
				break
			}
			key := s.spatecKey(e, f.Key)
			r.SpatecKey = key
			vals, err := place(p, e.Place)
			if err != nil {
				r.Problem = err.Error()
				break
			}
			v, has := vals[key]
			r.Spatec = v
			claimed[f.Arm+" "+e.Place+" "+key] = true
			// A program's digest stands for its text.
			claimed[f.Arm+" "+e.Place+" "+strings.TrimSuffix(key, "#digest")] = true
			claimed[f.Arm+" "+e.Place+" "+key+"#digest"] = true
			want := r.Resolved
			if e.Kind == Same {
				want = e.Value
				if strings.Contains(e.Key, "*") {
					want = strings.Replace(want, "*", capture(e.Key, f.Key), 1)
				}
			}
			switch {
			case !has:
				r.Problem = fmt.Sprintf("%s holds no %s (it holds %s)", e.Place, key, nearKeys(vals, key))
			case v != want && e.Kind == Equal:
				r.Problem = fmt.Sprintf("the harness has %s = %q, the plan's %s has %s = %q: not equal; make them equal, or account for it (`~`, with why, or `!` and a deviation the entrant declares)", f.Key, clip(r.Resolved), e.Place, key, clip(v))
			case v != want:
				r.Problem = fmt.Sprintf("the account says the plan's %s has %s = %q, it has %q; the setting changed without its account", e.Place, key, clip(e.Value), clip(v))
			}
		case Deviation:
			if !ok {
				r.Problem = fmt.Sprintf("no plan of %s on the harness's host", f.Arm)
				break
			}
			if !slices.ContainsFunc(p.Entrant.Deviations, func(d schema.Deviation) bool { return d.ID == e.Value }) {
				r.Problem = fmt.Sprintf("the account names deviation %q, which %s's plan does not declare (it declares %s)", e.Value, f.Arm, deviationIDs(p))
			}
			r.Spatec = e.Value
		}
		if r.Problem != "" {
			r.Problem = fmt.Sprintf("%s:%d: %s", a.Path, e.Line, r.Problem)
		}
		res.Rows = append(res.Rows, r)
	}
	for _, s := range a.Sections {
		for i := range s.Entries {
			if e := &s.Entries[i]; !used[e] {
				problem("%s:%d: the entry for %s matches no fact of the harness's %s; remove it, or the harness moved", a.Path, e.Line, e.Key, s.File)
			}
		}
	}
	for _, arm := range slices.Sorted(maps.Keys(a.Compared)) {
		p, ok := plans[arm]
		if !ok {
			problem("%s: compare names %s, which has no plan on the harness's host", a.Path, arm)
			continue
		}
		for _, where := range a.Compared[arm] {
			vals, err := place(p, where)
			if err != nil {
				problem("%s: %v", a.Path, err)
				continue
			}
			for _, k := range slices.Sorted(maps.Keys(vals)) {
				added := slices.ContainsFunc(a.Additions, func(ad Addition) bool {
					return ad.Arm == arm && ad.Place == where && glob(ad.Key, k)
				})
				if !claimed[arm+" "+where+" "+k] && !added {
					problem("%s: %s's plan sets %s = %q in %s, which no harness fact accounts for and no addition declares; add `+ %s %s %s | why`, or remove it",
						a.Path, arm, k, clip(vals[k]), where, arm, where, k)
				}
			}
		}
	}
	for _, ad := range a.Additions {
		p, ok := plans[ad.Arm]
		if !ok {
			continue
		}
		if vals, err := place(p, ad.Place); err == nil {
			if !slices.ContainsFunc(slices.Collect(maps.Keys(vals)), func(k string) bool { return glob(ad.Key, k) }) {
				problem("%s:%d: the addition %s is not in %s's %s; remove it", a.Path, ad.Line, ad.Key, ad.Arm, ad.Place)
			}
		}
	}
	return res
}

func armOr(arm string) string {
	if arm == "" {
		return "-"
	}
	return arm
}

// match finds the entry for key: an exact key first, then the first
// pattern that matches.
func match(s *Section, key string) *Entry {
	for i := range s.Entries {
		if s.Entries[i].Key == key {
			return &s.Entries[i]
		}
	}
	// The longest pattern that matches is the most particular.
	var best *Entry
	for i := range s.Entries {
		if e := &s.Entries[i]; strings.Contains(e.Key, "*") && glob(e.Key, key) && (best == nil || len(e.Key) > len(best.Key)) {
			best = e
		}
	}
	return best
}

// clip shortens a value for a message.
func clip(v string) string {
	if len(v) > 100 {
		return v[:97] + "…"
	}
	return v
}

// capture is what the first * of pattern matched in s.
func capture(pattern, s string) string {
	re := "^" + strings.Replace(strings.ReplaceAll(regexp.QuoteMeta(pattern), `\*`, ".*"), ".*", "(.*?)", 1) + "$"
	if m := regexp.MustCompile(re).FindStringSubmatch(s); len(m) > 1 {
		return m[1]
	}
	return ""
}

// glob matches a pattern whose * matches any run of characters.
func glob(pattern, s string) bool {
	re := "^" + strings.ReplaceAll(regexp.QuoteMeta(pattern), `\*`, ".*") + "$"
	return regexp.MustCompile(re).MatchString(s)
}

// harnessEnv is each arm's Dockerfile ENV, the defaults its templates'
// placeholders fall back on.
func harnessEnv(facts Facts) map[string]map[string]string {
	env := map[string]map[string]string{}
	for _, f := range facts.List {
		if name, ok := strings.CutPrefix(f.Key, "ENV."); ok && path.Base(f.File) == "Dockerfile" {
			if env[f.Arm] == nil {
				env[f.Arm] = map[string]string{}
			}
			env[f.Arm][name] = f.Value
		}
	}
	return env
}

var (
	interpolation = regexp.MustCompile(`\$\{([A-Z_0-9]+)(?::-([^}]*))?\}`)
	atPlaceholder = regexp.MustCompile(`@([A-Z_0-9]+)@`)
	knobRef       = regexp.MustCompile(`\{\{knob:(\w+)\}\}`)
)

// resolve is a fact's value as the harness runs it: its image's ENV
// for a ${NAME:-default}, @NAME@ or from_env placeholder, the default
// variant's knob for {{knob:x}}.
func resolve(f Fact, envs map[string]map[string]string, facts Facts) string {
	env := envs[f.Arm]
	if strings.HasSuffix(f.Key, "@from_env") {
		if v, ok := env[f.Value]; ok {
			return v
		}
		return f.Value
	}
	v := interpolation.ReplaceAllStringFunc(f.Value, func(m string) string {
		sub := interpolation.FindStringSubmatch(m)
		if x, ok := env[sub[1]]; ok {
			return x
		}
		return sub[2]
	})
	v = atPlaceholder.ReplaceAllStringFunc(v, func(m string) string {
		if x, ok := env[strings.Trim(m, "@")]; ok {
			return x
		}
		return m
	})
	return knobRef.ReplaceAllStringFunc(v, func(m string) string {
		name := knobRef.FindStringSubmatch(m)[1]
		for _, g := range facts.List {
			if g.Arm == f.Arm && path.Base(g.File) == "entrant.toml" && strings.HasSuffix(g.Key, "].knobs."+name) && strings.HasPrefix(g.Key, "variants[0]") {
				return g.Value
			}
		}
		return m
	})
}

func deviationIDs(p schema.Plan) string {
	var ids []string
	for _, d := range p.Entrant.Deviations {
		ids = append(ids, d.ID)
	}
	return "[" + strings.Join(ids, ", ") + "]"
}

// nearKeys lists a place's keys that share key's last part, or its first
// few keys, for a message.
func nearKeys(vals map[string]string, key string) string {
	last := key[strings.LastIndexAny(key, ".@")+1:]
	var near []string
	for _, k := range slices.Sorted(maps.Keys(vals)) {
		if strings.Contains(k, last) {
			near = append(near, k)
		}
	}
	if len(near) == 0 {
		near = slices.Sorted(maps.Keys(vals))
		if len(near) > 8 {
			near = append(near[:8], "…")
		}
	}
	return strings.Join(near, ", ")
}

// Place is a plan's settings at a place, flattened to keys as the
// harness's facts are:
//
//	CONTAINER:FILE     a file the container is given (YAML, XML,
//	                   properties or SQL, by its name)
//	CONTAINER:env      its environment
//	CONTAINER:jvm      its JVM options (-Xmx, -XX:Name, -XX:+Flag, -D…)
//	CONTAINER:run      its image, caps, entrypoint and arguments
//	plan:entrant       the entrant's declarations (JSON paths)
//	plan:workload      the workload (JSON paths)
//	plan:env           the environment (JSON paths)
//	plan:ddl           the workload's table (its statement and SETTINGS)
//	tree:PATH          a file of spatec's tree (TOML, YAML or XML), from
//	                   the tree's root
//	go:PATH            a Go file of spatec's tree: each package-level
//	                   constant and variable, as written
//
// A YAML value of several lines (a program) is also given as KEY#digest,
// its ProgramDigest.
func Place(p schema.Plan, tree fs.FS, place string) (map[string]string, error) {
	scope, what, ok := strings.Cut(place, ":")
	if !ok {
		return nil, fmt.Errorf("%q is not SCOPE:WHAT", place)
	}
	if scope == "go" {
		return goConsts(tree, what)
	}
	if scope == "tree" {
		b, err := fs.ReadFile(tree, what)
		if err != nil {
			return nil, fmt.Errorf("reading spatec's %s: %w", what, err)
		}
		return placeOf(what, string(b), scope)
	}
	if scope == "plan" {
		var v any
		switch what {
		case "ddl":
			return placeOf("ddl.sql", p.Workload.Table.DDL, scope)

		case "entrant":
			v = p.Entrant
		case "workload":
			v = p.Workload
		case "env":
			v = p.Env
		default:
			return nil, fmt.Errorf("no plan place %q (entrant, workload, env)", what)
		}
		return jsonPaths(v)
	}
	c, ok := p.Entrant.Containers[scope]
	if !ok {
		return nil, fmt.Errorf("%s has no container %s (it has %s)", p.Entrant.Name, scope, strings.Join(slices.Sorted(maps.Keys(p.Entrant.Containers)), ", "))
	}
	out := map[string]string{}
	switch what {
	case "env":
		maps.Copy(out, c.Environment)
		return out, nil
	case "jvm":
		if c.JVM == nil {
			return nil, fmt.Errorf("container %s of %s runs no JVM", scope, p.Entrant.Name)
		}
		for _, o := range append(slices.Clone(c.JVM.Options), c.JVM.JVMOptions...) {
			k, v := jvmOption(o)
			out[k] = v
		}
		return out, nil
	case "run":
		out["image"] = c.Image
		out["cpus"] = fmt.Sprint(c.CPUs)
		out["memory"] = fmt.Sprint(c.Memory)
		out["entrypoint"] = strings.Join(c.Entrypoint, " ")
		out["args"] = strings.Join(c.Args, " ")
		return out, nil
	}
	text, ok := c.Files[what]
	if !ok {
		return nil, fmt.Errorf("container %s of %s writes no file %s (it writes %s)", scope, p.Entrant.Name, what, strings.Join(slices.Sorted(maps.Keys(c.Files)), ", "))
	}
	return placeOf(what, text, scope)
}

// placeOf flattens a file's text by its name's kind.
func placeOf(what, text, scope string) (map[string]string, error) {
	out := map[string]string{}
	var kvs []kv
	var err error
	switch {
	case strings.HasSuffix(what, ".yaml"), strings.HasSuffix(what, ".yml"):
		kvs, err = flatYAML([]byte(text))
	case strings.HasSuffix(what, ".xml"):
		kvs, err = flatXML([]byte(text))
	case strings.HasSuffix(what, ".properties"):
		kvs = properties([]byte(text))
	case strings.HasSuffix(what, ".sql"):
		kvs = sqlSettings([]byte(text))
	case strings.HasSuffix(what, ".toml"):
		kvs, err = flatTOML([]byte(text))
	default:
		return nil, fmt.Errorf("%s's %s is of no kind a place reads", scope, what)
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s's %s: %w", scope, what, err)
	}
	for _, x := range kvs {
		out[x.k] = x.v
		if strings.Contains(strings.TrimSpace(x.v), "\n") {
			out[x.k+"#digest"] = ProgramDigest(x.v, "#")
		}
	}
	return out, nil
}

// jvmOption splits a JVM option into a key and value: -Xmx8g is -Xmx and
// 8g, -XX:Name=v is -XX:Name and v, -XX:+Flag is -XX:Flag and +, -Dk=v is
// -Dk and v; anything else is its own key, valued "on".
func jvmOption(o string) (string, string) {
	for _, p := range []string{"-Xmx", "-Xms", "-Xss", "-Xmn"} {
		if v, ok := strings.CutPrefix(o, p); ok {
			return p, v
		}
	}
	if name, ok := strings.CutPrefix(o, "-XX:"); ok {
		if name != "" && (name[0] == '+' || name[0] == '-') {
			return "-XX:" + name[1:], name[:1]
		}
		k, v, _ := strings.Cut(name, "=")
		return "-XX:" + k, v
	}
	if k, v, ok := strings.Cut(o, "="); ok {
		return k, v
	}
	return o, "on"
}

// jsonPaths flattens a value's JSON.
func jsonPaths(v any) (map[string]string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var doc any
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	var kvs []kv
	flatten("", doc, &kvs)
	out := map[string]string{}
	for _, x := range kvs {
		out[x.k] = x.v
	}
	return out, nil
}

// goConsts reads a Go file's package-level constants and variables, each
// as its source writes it.
func goConsts(tree fs.FS, file string) (map[string]string, error) {
	src, err := fs.ReadFile(tree, file)
	if err != nil {
		return nil, fmt.Errorf("reading spatec's %s: %w", file, err)
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, src, 0)
	if err != nil {
		return nil, fmt.Errorf("parsing spatec's %s: %w", file, err)
	}
	out := map[string]string{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || (g.Tok != token.CONST && g.Tok != token.VAR) {
			continue
		}
		for _, spec := range g.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				if i < len(vs.Values) {
					out[name.Name] = string(src[fset.Position(vs.Values[i].Pos()).Offset:fset.Position(vs.Values[i].End()).Offset])
				}
			}
		}
	}
	return out, nil
}
