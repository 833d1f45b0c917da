package harness

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	toml "github.com/pelletier/go-toml/v2"
	yaml "go.yaml.in/yaml/v3"
)

// Extract reads every setting the harness's files give, from a checkout
// of it (its repository's root, as fsys). What is read, file by file:
//
//   - TOML (an arm's entrant.toml, the environment, the workload, the
//     toolchain, Cargo.toml): every value, keyed by its dotted path; an
//     entrant's prose (what, why, label, blockers) and its presentation
//     (the [entrant] card but its status, [maintainer], [display]) are
//     not settings and are left out.
//   - YAML and properties (configs and their templates): every value,
//     keyed by its dotted path or its property name.
//   - XML (ClickHouse's config.d and users.d): every element's text and
//     attribute, keyed by the element path.
//   - Dockerfiles: each stage's base image (FROM[n]), each ENV and ARG.
//   - SQL: each statement's head (what it makes) and each SETTINGS pair.
//   - Java: each string pair a job sets (setProperty, put, option).
//   - A program (VRL): its digest over its code, comments and blank lines
//     left out, so that a change of its words alone does not move it.
//   - Shell entrypoints: each variable they export with a default.
//   - The harness's prefill producer (harness/src/corpus.rs, its prefill
//     function): each librdkafka setting it sets, since the record
//     batches it writes are what every arm's consumer reads.
//   - Rust (an arm's own src/): each environment variable it reads with
//     a default, each Duration it sets, and each flow mapping of the
//     pipeline it writes (key: {{ a: b }}).
//
// Everything else (READMEs, tests, the website, the harness's driver)
// holds no arm's setting and is not read.
func Extract(fsys fs.FS) ([]Fact, error) {
	var facts []Fact
	for _, file := range []string{"rust-toolchain.toml", "workload/workload.toml", "workload/clickhouse/ddl.sql", "environments/c8g-8xl-ec2-docker.toml"} {
		fs, err := extractFile(fsys, "", file)
		if err != nil {
			return nil, err
		}
		facts = append(facts, fs...)
	}
	pf, err := prefillProducer(fsys)
	if err != nil {
		return nil, err
	}
	facts = append(facts, pf...)
	arms, err := fs.ReadDir(fsys, "entrants")
	if err != nil {
		return nil, fmt.Errorf("listing the harness's entrants: %w", err)
	}
	for _, arm := range arms {
		if !arm.IsDir() {
			continue
		}
		root := path.Join("entrants", arm.Name())
		err := fs.WalkDir(fsys, root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			// An arm's tests hold no setting of the arm.
			if d.IsDir() && (d.Name() == "tests" || p == path.Join(root, "src", "test")) {
				return fs.SkipDir
			}
			if d.IsDir() {
				return nil
			}
			fs, err := extractFile(fsys, arm.Name(), p)
			facts = append(facts, fs...)
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	sortFacts(facts)
	return facts, nil
}

// extractFile reads one file's facts by its kind; a file of no kind
// gives none.
func extractFile(fsys fs.FS, arm, file string) ([]Fact, error) {
	b, err := fs.ReadFile(fsys, file)
	if err != nil {
		return nil, fmt.Errorf("reading the harness's %s: %w", file, err)
	}
	add := func(kvs []kv, err error) ([]Fact, error) {
		if err != nil {
			return nil, fmt.Errorf("the harness's %s: %w", file, err)
		}
		var facts []Fact
		for _, x := range kvs {
			facts = append(facts, Fact{Arm: arm, File: file, Key: x.k, Value: x.v})
		}
		return facts, nil
	}
	base := path.Base(file)
	switch {
	case base == "entrant.toml":
		kvs, err := flatTOML(b)
		return add(slices.DeleteFunc(kvs, entrantProse), err)
	case strings.HasSuffix(base, ".toml"):
		return add(flatTOML(b))
	case strings.HasSuffix(base, ".yaml"), strings.HasSuffix(base, ".yaml.tmpl"), strings.HasSuffix(base, ".yml"):
		return add(flatYAML(b))
	case strings.HasSuffix(base, ".properties"), strings.HasSuffix(base, ".properties.tmpl"):
		return add(properties(b), nil)
	case base == "pom.xml" || strings.HasSuffix(base, "-pom.xml"):
		return add(pomDependencies(b))
	case strings.HasSuffix(base, ".xml"):
		return add(flatXML(b))
	case base == "Dockerfile":
		return add(dockerfile(b), nil)
	case strings.HasSuffix(base, ".sql"):
		return add(sqlSettings(b), nil)
	case strings.HasSuffix(base, ".java"):
		return add(javaPairs(b), nil)
	case strings.HasSuffix(base, ".vrl"):
		return add([]kv{{"program", ProgramDigest(string(b), "#")}}, nil)
	case strings.HasSuffix(base, ".sh"):
		return add(shellDefaults(b), nil)
	case strings.HasSuffix(base, ".rs") && path.Base(path.Dir(file)) == "src":
		return add(rustSettings(b), nil)
	}
	return nil, nil
}

// kv is a key and its value, in a file's order.
type kv struct{ k, v string }

// entrantProse is an entrant.toml key that is no setting: its card, its
// presentation, and the prose of its deviations, constraints and variants.
func entrantProse(x kv) bool {
	if x.k == "entrant.status" {
		return false
	}
	for _, p := range []string{"entrant.", "maintainer.", "display.", "planned."} {
		if strings.HasPrefix(x.k, p) {
			return true
		}
	}
	last := x.k[strings.LastIndexByte(x.k, '.')+1:]
	return slices.Contains([]string{"what", "why", "label", "note", "blockers"}, last)
}

// flatTOML flattens a TOML document.
func flatTOML(b []byte) ([]kv, error) {
	var doc map[string]any
	if err := toml.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	var out []kv
	flatten("", doc, &out)
	return out, nil
}

// flatYAML flattens a YAML document, its aliases expanded.
func flatYAML(b []byte) ([]kv, error) {
	var doc any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	var out []kv
	flatten("", doc, &out)
	return out, nil
}

// flatten writes v's scalars under prefix: a map's keys dotted, a list of
// maps indexed ([n]), a list of scalars as one value.
func flatten(prefix string, v any, out *[]kv) {
	join := func(k string) string {
		if prefix == "" {
			return k
		}
		return prefix + "." + k
	}
	switch t := v.(type) {
	case map[string]any:
		for _, k := range sortedKeys(t) {
			flatten(join(k), t[k], out)
		}
	case []any:
		if !slices.ContainsFunc(t, isComposite) {
			*out = append(*out, kv{prefix, scalarList(t)})
			return
		}
		for i, e := range t {
			flatten(fmt.Sprintf("%s[%d]", prefix, i), e, out)
		}
	default:
		*out = append(*out, kv{prefix, scalar(t)})
	}
}

func isComposite(v any) bool {
	switch v.(type) {
	case map[string]any, []any:
		return true
	}
	return false
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// scalar writes one value as the files write it: strings bare.
func scalar(v any) string {
	switch t := v.(type) {
	case nil:
		return "null"
	case string:
		return t
	case float64:
		return strconv.FormatFloat(t, 'f', -1, 64)
	default:
		return fmt.Sprint(t)
	}
}

// scalarList writes a list of scalars as [a, b].
func scalarList(l []any) string {
	s := make([]string, len(l))
	for i, e := range l {
		s[i] = scalar(e)
	}
	return "[" + strings.Join(s, ", ") + "]"
}

// properties reads a Java properties file's key=value lines; continued
// lines are joined.
func properties(b []byte) []kv {
	var out []kv
	sc := bufio.NewScanner(bytes.NewReader(b))
	var cont string
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if cont != "" {
			line = cont + line
			cont = ""
		}
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		if strings.HasSuffix(line, `\`) {
			cont = strings.TrimSuffix(line, `\`)
			continue
		}
		i := strings.IndexAny(line, "=:")
		if i < 0 {
			out = append(out, kv{line, ""})
			continue
		}
		out = append(out, kv{strings.TrimSpace(line[:i]), strings.TrimSpace(line[i+1:])})
	}
	return out
}

// flatXML reads every element's text and attributes, keyed by the path
// of element names below the root (a.b.c, a.b.c@attr).
func flatXML(b []byte) ([]kv, error) {
	dec := xml.NewDecoder(bytes.NewReader(b))
	var out []kv
	var stack []string
	var text []string
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			stack = append(stack, t.Name.Local)
			text = append(text, "")
			key := strings.Join(stack[1:], ".")
			for _, a := range t.Attr {
				out = append(out, kv{key + "@" + a.Name.Local, a.Value})
			}
		case xml.CharData:
			if len(text) > 0 {
				text[len(text)-1] += string(t)
			}
		case xml.EndElement:
			key := strings.Join(stack[1:], ".")
			if s := strings.TrimSpace(text[len(text)-1]); s != "" && key != "" {
				out = append(out, kv{key, s})
			}
			stack, text = stack[:len(stack)-1], text[:len(text)-1]
		}
	}
}

// pomDependencies reads a Maven project's dependencies and plugins as
// group:artifact = version.
func pomDependencies(b []byte) ([]kv, error) {
	var pom struct {
		Properties struct {
			Any []struct {
				XMLName xml.Name
				Value   string `xml:",chardata"`
			} `xml:",any"`
		} `xml:"properties"`
		Deps []struct {
			Group    string `xml:"groupId"`
			Artifact string `xml:"artifactId"`
			Version  string `xml:"version"`
			Scope    string `xml:"scope"`
		} `xml:"dependencies>dependency"`
	}
	if err := xml.Unmarshal(b, &pom); err != nil {
		return nil, err
	}
	props := map[string]string{}
	var out []kv
	for _, p := range pom.Properties.Any {
		props[p.XMLName.Local] = strings.TrimSpace(p.Value)
		out = append(out, kv{"properties." + p.XMLName.Local, strings.TrimSpace(p.Value)})
	}
	for _, d := range pom.Deps {
		v := d.Version
		if name, ok := strings.CutPrefix(v, "${"); ok {
			if p, ok := props[strings.TrimSuffix(name, "}")]; ok {
				v = p
			}
		}
		if d.Scope == "test" {
			continue
		}
		out = append(out, kv{"dependency." + d.Group + ":" + d.Artifact, v})
	}
	return out, nil
}

// dockerfile reads each stage's base image and each ENV and ARG, lines
// continued with a backslash joined.
func dockerfile(b []byte) []kv {
	var out []kv
	stage := 0
	for _, line := range logicalLines(b) {
		word, rest, _ := strings.Cut(line, " ")
		rest = strings.TrimSpace(rest)
		switch strings.ToUpper(word) {
		case "FROM":
			out = append(out, kv{fmt.Sprintf("FROM[%d]", stage), strings.Fields(rest)[0]})
			stage++
		case "ENV":
			for _, p := range envPairs(rest) {
				out = append(out, kv{"ENV." + p.k, p.v})
			}
		case "ARG":
			k, v, _ := strings.Cut(rest, "=")
			out = append(out, kv{"ARG." + k, unquote(v)})
		}
	}
	return out
}

// logicalLines joins a Dockerfile's continued lines and drops comments
// and heredoc bodies.
func logicalLines(b []byte) []string {
	var out []string
	var cur strings.Builder
	heredoc := ""
	for _, line := range strings.Split(string(b), "\n") {
		if heredoc != "" {
			if strings.TrimSpace(line) == heredoc {
				heredoc = ""
			}
			continue
		}
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "#") || (t == "" && cur.Len() == 0) {
			continue
		}
		if m := heredocStart.FindStringSubmatch(t); m != nil {
			heredoc = m[1]
		}
		if s, ok := strings.CutSuffix(t, `\`); ok {
			cur.WriteString(s + " ")
			continue
		}
		cur.WriteString(t)
		out = append(out, cur.String())
		cur.Reset()
	}
	return out
}

var heredocStart = regexp.MustCompile(`<<-?'?"?([A-Z]+)'?"?`)

// envPairs reads ENV's NAME=value pairs (or the older ENV NAME value).
func envPairs(s string) []kv {
	if !strings.Contains(strings.Fields(s)[0], "=") {
		k, v, _ := strings.Cut(s, " ")
		return []kv{{k, unquote(strings.TrimSpace(v))}}
	}
	var out []kv
	for _, f := range splitWords(s) {
		k, v, _ := strings.Cut(f, "=")
		out = append(out, kv{k, unquote(v)})
	}
	return out
}

// splitWords splits on spaces outside double quotes.
func splitWords(s string) []string {
	var out []string
	var cur strings.Builder
	quoted := false
	for _, r := range s {
		switch {
		case r == '"':
			quoted = !quoted
			cur.WriteRune(r)
		case r == ' ' && !quoted:
			if cur.Len() > 0 {
				out = append(out, cur.String())
				cur.Reset()
			}
		default:
			cur.WriteRune(r)
		}
	}
	if cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}

func unquote(s string) string {
	if len(s) >= 2 && (s[0] == '"' && s[len(s)-1] == '"' || s[0] == '\'' && s[len(s)-1] == '\'') {
		return s[1 : len(s)-1]
	}
	return s
}

// sqlSettings reads each statement's head (its verb and object, e.g.
// "CREATE TABLE x") and the name = value pairs of its SETTINGS clause.
func sqlSettings(b []byte) []kv {
	var out []kv
	for _, stmt := range sqlStatements(string(b)) {
		head := statementHead.FindString(stmt)
		if head == "" {
			continue
		}
		obj := strings.Fields(head)[len(strings.Fields(head))-1]
		out = append(out, kv{"statement." + obj, strings.Join(strings.Fields(head), " ")})
		_, settings, ok := cutFold(stmt, "SETTINGS")
		if !ok {
			continue
		}
		for _, m := range settingPair.FindAllStringSubmatch(settings, -1) {
			out = append(out, kv{obj + ".SETTINGS." + m[1], unquote(m[2])})
		}
	}
	return out
}

var (
	statementHead = regexp.MustCompile(`(?i)^\s*(CREATE|ALTER|INSERT INTO|DROP)\s+(OR REPLACE\s+)?(TABLE|MATERIALIZED VIEW|VIEW|DATABASE|DICTIONARY)?\s*(IF (NOT )?EXISTS\s+)?[\w.` + "`" + `]+`)
	settingPair   = regexp.MustCompile(`(\w+)\s*=\s*('[^']*'|[\w.]+)`)
)

// sqlStatements splits SQL on semicolons, comments dropped.
func sqlStatements(s string) []string {
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		if i := strings.Index(l, "--"); i >= 0 {
			l = l[:i]
		}
		lines = append(lines, l)
	}
	return strings.Split(strings.Join(lines, "\n"), ";")
}

// cutFold is strings.Cut on the last occurrence of a keyword, any case.
func cutFold(s, sep string) (before, after string, ok bool) {
	i := strings.LastIndex(strings.ToUpper(s), sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}

// javaPair is a string pair a job sets: .setProperty("k", "v"),
// .put("k", "v"), .option("k", "v").
var javaPair = regexp.MustCompile(`\.(?:setProperty|put|option|set)\(\s*"([^"]+)"\s*,\s*"([^"]*)"\s*\)`)

func javaPairs(b []byte) []kv {
	var out []kv
	for _, m := range javaPair.FindAllStringSubmatch(string(b), -1) {
		out = append(out, kv{"java." + m[1], m[2]})
	}
	return out
}

// shellDefault is a variable an entrypoint gives a default:
// NAME="${NAME:-value}" or export NAME=value.
var shellDefault = regexp.MustCompile(`(?m)^\s*(?:export\s+)?([A-Z][A-Z0-9_]*)="?\$\{([A-Z][A-Z0-9_]*):-([^}]*)\}"?\s*$|^\s*export\s+([A-Z][A-Z0-9_]*)=("[^"]*"|\S+)\s*$`)

func shellDefaults(b []byte) []kv {
	var out []kv
	for _, m := range shellDefault.FindAllStringSubmatch(string(b), -1) {
		if m[1] != "" {
			out = append(out, kv{"default." + m[1], m[3]})
		} else {
			out = append(out, kv{"export." + m[4], unquote(m[5])})
		}
	}
	return out
}

// ProgramDigest is the first 12 hex digits of the SHA-256 of a program's
// code: its lines trimmed, comments (from the marker to the line's end,
// outside strings) and blank lines left out.
func ProgramDigest(program, comment string) string {
	var code []string
	for _, line := range strings.Split(program, "\n") {
		line = strings.TrimSpace(stripComment(line, comment))
		if line != "" {
			code = append(code, line)
		}
	}
	sum := sha256.Sum256([]byte(strings.Join(code, "\n")))
	return hex.EncodeToString(sum[:])[:12]
}

// stripComment cuts a line at a comment marker outside double quotes.
func stripComment(line, marker string) string {
	quoted := false
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] == '\\' && quoted:
			i++
		case line[i] == '"':
			quoted = !quoted
		case !quoted && strings.HasPrefix(line[i:], marker):
			return line[:i]
		}
	}
	return line
}

// DirFS is the harness's checkout at dir, for Extract.
func DirFS(dir string) fs.FS { return os.DirFS(dir) }

var (
	rustEnvDefault = regexp.MustCompile(`env_(?:u64|str|usize|bool)\(\s*"([A-Z_0-9]+)"\s*,\s*"?([^"),]*)"?\s*\)`)
	rustDuration   = regexp.MustCompile(`(\w+): Duration::from_(secs|millis)\((\d+)\)`)
	rustFlowMap    = regexp.MustCompile(`(\w+): \{\{ ([^{}]*) \}\}`)
)

// rustSettings reads the settings an arm's Rust code writes: environment
// variables with their defaults, durations, and flat flow mappings of the
// configuration it formats (those holding a placeholder left out).
func rustSettings(b []byte) []kv {
	var out []kv
	s := string(b)
	for _, m := range rustEnvDefault.FindAllStringSubmatch(s, -1) {
		out = append(out, kv{"rust.env." + m[1], strings.ReplaceAll(m[2], "_", "")})
	}
	for _, m := range rustDuration.FindAllStringSubmatch(s, -1) {
		unit := map[string]string{"secs": "s", "millis": "ms"}[m[2]]
		out = append(out, kv{"rust." + m[1], m[3] + unit})
	}
	for _, m := range rustFlowMap.FindAllStringSubmatch(s, -1) {
		for _, item := range strings.Split(m[2], ", ") {
			k, v, ok := strings.Cut(item, ": ")
			if !ok || strings.ContainsAny(v, "{}") {
				continue
			}
			out = append(out, kv{"rust." + m[1] + "." + k, strings.Trim(v, `\"`)})
		}
	}
	return out
}

// corpusFile holds the harness's prefill.
const corpusFile = "harness/src/corpus.rs"

var (
	prefillFn  = regexp.MustCompile(`(?m)^pub fn prefill\(`)
	rustSet    = regexp.MustCompile(`\.set\(\s*"([^"]+)"\s*,\s*"([^"]*)"\s*\)`)
	nextRustFn = regexp.MustCompile(`(?m)^(pub )?fn `)
)

// prefillProducer reads the librdkafka settings of the harness's prefill
// function, keyed prefill.NAME.
func prefillProducer(fsys fs.FS) ([]Fact, error) {
	b, err := fs.ReadFile(fsys, corpusFile)
	if err != nil {
		return nil, fmt.Errorf("reading the harness's %s: %w", corpusFile, err)
	}
	loc := prefillFn.FindIndex(b)
	if loc == nil {
		return nil, fmt.Errorf("the harness's %s has no prefill function", corpusFile)
	}
	body := b[loc[1]:]
	if next := nextRustFn.FindIndex(body); next != nil {
		body = body[:next[0]]
	}
	var facts []Fact
	for _, m := range rustSet.FindAllSubmatch(body, -1) {
		if string(m[1]) == "bootstrap.servers" {
			continue // the run's own broker
		}
		facts = append(facts, Fact{File: corpusFile, Key: "prefill." + string(m[1]), Value: string(m[2])})
	}
	return facts, nil
}
