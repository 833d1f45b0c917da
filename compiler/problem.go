package compiler

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/errors"
	"cuelang.org/go/cue/token"
)

// Problem is one thing wrong with a plan or a file, reported as
// `file:line: rule: message`.
type Problem struct {
	// Pos is "file:line", or "" when no file is to blame.
	Pos string
	// Rule is the contract rule id ("C3"), or a schema area ("knobs",
	// "variants", "usage", "layout").
	Rule string
	// Message says what was found, what is allowed and how to fix it.
	Message string
	// Plans are the plans the problem was found in; none for a problem
	// of a file, an environment or the tree.
	Plans []PlanID
	// guarded, until retype reads it, is a field its error disjunct
	// refused, to be said in CUE's own words.
	guarded *guarded
}

func (p Problem) String() string {
	msg := p.Message
	if len(p.Plans) > 0 {
		msg = planLabel(p.Plans) + ": " + msg
	}
	if p.Pos == "" {
		return p.Rule + ": " + msg
	}
	return p.Pos + ": " + p.Rule + ": " + msg
}

// planLabel names a set of plans briefly: "vector:default on bench-96c",
// or "vector (default, small-batch) on bench-96c, retired-32c" when a
// problem is the same in several.
func planLabel(ids []PlanID) string {
	type group struct{ entrant, variants string }
	envsOf := map[group][]string{}
	var order []group
	variants := map[[2]string][]string{} // entrant, env → variants
	for _, id := range ids {
		k := [2]string{id.Entrant, id.Env}
		if !slices.Contains(variants[k], id.Variant) {
			variants[k] = append(variants[k], id.Variant)
		}
	}
	for _, id := range ids {
		vs := variants[[2]string{id.Entrant, id.Env}]
		g := group{id.Entrant, id.Entrant + ":" + vs[0]}
		if len(vs) > 1 {
			g.variants = id.Entrant + " (" + strings.Join(vs, ", ") + ")"
		}
		if _, seen := envsOf[g]; !seen {
			order = append(order, g)
		}
		if !slices.Contains(envsOf[g], id.Env) {
			envsOf[g] = append(envsOf[g], id.Env)
		}
	}
	parts := make([]string, len(order))
	for i, g := range order {
		parts[i] = g.variants + " on " + strings.Join(envsOf[g], ", ")
	}
	return strings.Join(parts, "; ")
}

// posOf returns the "file:line" of the source that gave v its value,
// preferring an environment or entrant file over the schema that
// constrains it: an author fixes their own file, not the schema.
func posOf(v cue.Value) string {
	var best token.Pos
	var walk func(v cue.Value, depth int)
	walk = func(v cue.Value, depth int) {
		if best.IsValid() && !isSchema(best) || depth > 8 {
			return
		}
		op, args := v.Expr()
		if op == cue.AndOp || op == cue.OrOp {
			for _, a := range args {
				walk(a, depth+1)
			}
			return
		}
		if p := v.Pos(); p.IsValid() && (!best.IsValid() || isSchema(best)) {
			best = p
		}
	}
	walk(v, 0)
	if !best.IsValid() {
		return ""
	}
	return fmt.Sprintf("%s:%d", best.Filename(), best.Line())
}

func isSchema(p token.Pos) bool { return isSchemaFile(p.Filename()) }

// isSchemaFile reports whether a file is not the author's: the schema, a
// system's option registry, or the package generated to resolve the plans.
func isSchemaFile(f string) bool {
	return f == "" || strings.Contains(f, "schema/") || strings.Contains(f, "options/") || strings.Contains(f, plansDir+"/")
}

// fromError turns a CUE error into problems, one per error it holds. The
// rule is inferred from the field the error is on; fallback is used when
// nothing more specific applies. where names what was being compiled.
//
// at, when not nil, is the value the error's paths are relative to.
func fromError(err error, fallback, where string, at *site) []Problem {
	var out []Problem
	errs, said, marked := guards(disjunctions(rootCauses(errors.Errors(err))))
	for _, e := range errs {
		format, args := e.Msg()
		msg := fmt.Sprintf(format, args...)
		// The schema's check of implements is the official tool's; spatec
		// vet says the same at the name's own line (unknownImplements).
		if slices.Contains(e.Path(), "_workloadsKnown") {
			continue
		}
		// A required field the author wrote, in error only through what
		// it is made from, is not missing: its cause is said.
		if missingGuard(e) && at != nil && len(errs) > 1 && written(at.value(fieldPath(e))) {
			continue
		}
		// cue/build says only "import failed"; its cause says why.
		if cause := errors.Unwrap(e); format == "import failed" && cause != nil {
			msg += ": " + cause.Error()
		}
		field := fieldPath(e)
		p := Problem{Rule: ruleFor(e, fallback), Pos: blame(errors.Positions(e), field)}
		if (p.Pos == "" || isSchemaFile(p.Pos)) && at != nil {
			if pos := at.locate(field); pos != "" {
				p.Pos = pos
			}
		}
		// A check written with error("Cn: …") in the schema names its rule.
		if m := ruleID.FindStringSubmatch(msg); m != nil {
			p.Rule, msg = m[1], msg[len(m[0]):]
			p.Message = msg
			if s, ok := said[e]; ok {
				p.Message = s
				if where != "" {
					p.Message = where + ": " + s
				}
			}
			if g := marked[e]; g != nil && at != nil {
				g.where, g.value = where, at.value(field)
				p.guarded = g
			}
		} else {
			p.Message = explain(field, msg) + twice(msg, errors.Positions(e))
			if where != "" {
				p.Message = where + ": " + p.Message
			}
		}
		out = append(out, p)
	}
	return out
}

var ruleID = regexp.MustCompile(`^(C[0-9]+): `)

// twoValues reads a conflict between two values, each a string, a number
// or a boolean.
var twoValues = regexp.MustCompile(`^conflicting values ("[^"]*"|-?[0-9.]+|true|false) and ("[^"]*"|-?[0-9.]+|true|false)`)

// twice says, of a conflict between two values an author wrote (a key
// given twice, in one file or two), where both are, so that one is kept.
func twice(msg string, at []token.Pos) string {
	// Two values, not a value and the type the schema declares.
	if !twoValues.MatchString(msg) {
		return ""
	}
	var lines []string
	for _, p := range at {
		if s := p.Position().String(); p.IsValid() && !isSchemaFile(s) && !slices.Contains(lines, s) {
			lines = append(lines, s)
		}
	}
	if len(lines) < 2 {
		return ""
	}
	for i, l := range lines {
		if j := strings.LastIndex(l, ":"); j > 0 {
			lines[i] = l[:j] // file:line, without the column
		}
	}
	return fmt.Sprintf("; the field is given two values (%s): keep one", strings.Join(lines, " and "))
}

// fieldPath is the path of the field an error is on, as a plan names it:
// "env.infra.clickhouse" whether the error came from a plan, from the
// entrant's view of its environment, or from the generated package.
func fieldPath(e errors.Error) string {
	field := strings.TrimPrefix(strings.Join(e.Path(), "."), "#Plan.")
	field = generatedIndex.ReplaceAllString(field, "$1")
	// plans.<env>.<entrant>.<variant> is how the generated package
	// reaches a plan; the author's field is the plan's own path.
	field = generatedPlan.ReplaceAllString(field, "")
	if rest, ok := strings.CutPrefix(field, "entrant.env."); ok {
		field = "env." + rest // the entrant's view of its environment
	}
	// A guard's error on a field left out is about that field.
	return strings.Replace(field, "._missing.", ".", 1)
}

var (
	generatedIndex = regexp.MustCompile(`^(env|entrant)\."[0-9]+"`)
	generatedPlan  = regexp.MustCompile(`^plans\.("[^"]*"|[^."]+)\.("[^"]*"|[^."]+)\.("[^"]*"|[^."]+)\.`)
)

// rootCauses drops the errors that only follow from another one: a
// missing field is reported where it is missing, not again at every field
// that refers to it ("required field missing: clickhouse") or interpolates
// it. With no root among them, every error is kept.
func rootCauses(errs []errors.Error) []errors.Error {
	missing := map[string]bool{}
	for _, e := range errs {
		if format, _ := e.Msg(); strings.Contains(format, "field is required but not present") && len(e.Path()) > 0 {
			missing[e.Path()[len(e.Path())-1]] = true
		}
	}
	// A builtin that cannot encode a value (yaml.Marshal of a file), or an
	// interpolation of a value in error, only echoes the error in the
	// value: with that error present, it goes.
	builtin := func(format string) bool {
		return strings.HasPrefix(format, "error in call to ") || strings.HasPrefix(format, "invalid interpolation")
	}
	echoed := map[string]bool{} // the fields with such an echo
	for _, e := range errs {
		if format, _ := e.Msg(); builtin(format) {
			echoed[strings.Join(e.Path(), "\x00")] = true
		}
	}
	echo := func(e errors.Error) bool {
		format, _ := e.Msg()
		msg := message(e)
		switch {
		case builtin(format):
			return true
		case ruleID.MatchString(msg) && !fieldGuard(e) && echoed[strings.Join(e.Path(), "\x00")]:
			// A guard (#Bytes' error disjunct) on a field the schema
			// computes from a value in error (a heap of list.Min):
			// refused for what it is made from.
			return true
		}
		// An operation on a field that has an error of its own
		// (!parallelism of a string) follows from that error.
		m := invalidOperation.FindStringSubmatch(msg)
		if m == nil {
			return false
		}
		for _, o := range errs {
			if p := o.Path(); len(p) > 0 && !invalidOperation.MatchString(message(o)) && slices.Contains(identifier.FindAllString(m[1], -1), p[len(p)-1]) {
				return true
			}
		}
		return false
	}
	var causes int
	for _, e := range errs {
		if !echo(e) {
			causes++
		}
	}
	if len(missing) == 0 && (causes == 0 || causes == len(errs)) {
		return errs
	}
	var out []errors.Error
	for _, e := range errs {
		format, args := e.Msg()
		msg := fmt.Sprintf(format, args...)
		name, isRef := strings.CutPrefix(msg, "required field missing: ")
		if isRef && missing[name] || len(missing) > 0 && msg == "invalid interpolation" || causes > 0 && echo(e) {
			continue
		}
		out = append(out, e)
	}
	return out
}

// disjunctions says each field a disjunction refused once, in what is
// allowed there, never as a conflict with a default the author did not
// write. CUE reports an empty disjunction as a header ("2 errors in empty
// disjunction:") and one error per alternative: for `*0.5 | number & <1`
// given 1.5, "conflicting values 0.5 and 1.5" (the default, not a value of
// the author's) and "invalid value 1.5 (out of bound <1)". The header
// goes; a conflict with one of the schema's literals goes where another
// alternative says what is allowed; where every alternative is a literal
// (an enum, `*"amd64" | "arm64"`), they become one "invalid value "arm"
// (allowed: "amd64", "arm64")". A header with no alternatives of its own
// (a hidden field computed from one in error) is a consequence, and goes
// when anything else is said.
func disjunctions(errs []errors.Error) []errors.Error {
	type group struct {
		header   bool
		literals []errors.Error // conflicts with a literal of the schema's
		others   int
	}
	groups := map[string]*group{}
	at := func(e errors.Error) *group {
		k := strings.Join(e.Path(), "\x00")
		if groups[k] == nil {
			groups[k] = &group{}
		}
		return groups[k]
	}
	for _, e := range errs {
		g := at(e)
		switch msg := message(e); {
		case emptyDisjunction.MatchString(msg):
			g.header = true
		case schemaLiteral(e, msg):
			g.literals = append(g.literals, e)
		default:
			g.others++
		}
	}
	said := 0 // errors other than a header or a default
	for _, g := range groups {
		said += g.others
		if len(g.literals) > 0 && (!g.header || g.others == 0) {
			said++
		}
	}
	var out []errors.Error
	for _, e := range errs {
		g, msg := at(e), message(e)
		switch {
		case emptyDisjunction.MatchString(msg):
			if said == 0 {
				out = append(out, e)
			}
		case !g.header || !schemaLiteral(e, msg):
			out = append(out, e)
		case g.others > 0:
			// Another alternative says what is allowed.
		case e == g.literals[0]:
			out = append(out, enumError(e, g.literals))
		}
	}
	return out
}

// message is an error's message, formatted.
func message(e errors.Error) string {
	format, args := e.Msg()
	return fmt.Sprintf(format, args...)
}

// schemaLiteral reports whether an error is a conflict between two
// literals one of which the schema wrote (a default, an enum's member):
// a key given twice by the author has no schema position.
func schemaLiteral(e errors.Error, msg string) bool {
	if !twoValues.MatchString(msg) {
		return false
	}
	return slices.ContainsFunc(errors.Positions(e), func(p token.Pos) bool { return p.IsValid() && isSchema(p) })
}

// enumError says, of the conflicts of one value with each literal of an
// enum, the value found and the literals allowed.
func enumError(first errors.Error, conflicts []errors.Error) errors.Error {
	count := map[string]int{}
	var order []string
	for _, e := range conflicts {
		m := twoValues.FindStringSubmatch(message(e))
		for _, v := range m[1:3] {
			if count[v] == 0 {
				order = append(order, v)
			}
			count[v]++
		}
	}
	found := ""
	var allowed []string
	for _, v := range order {
		if count[v] == len(conflicts) && found == "" && len(conflicts) > 1 {
			found = v
			continue
		}
		allowed = append(allowed, v)
	}
	if found == "" {
		// One literal alternative: the author's value is the second CUE
		// names, as it names the schema's first here.
		m := twoValues.FindStringSubmatch(message(first))
		found, allowed = m[2], []string{m[1]}
	}
	return said{first, fmt.Sprintf("invalid value %s (allowed: %s)", found, strings.Join(allowed, ", "))}
}

// said is an error with another message, its path and positions kept.
type said struct {
	cause errors.Error
	msg   string
}

func (s said) Position() token.Pos         { return s.cause.Position() }
func (s said) InputPositions() []token.Pos { return s.cause.InputPositions() }
func (s said) Path() []string              { return s.cause.Path() }
func (s said) Msg() (string, []any)        { return "%s", []any{s.msg} }
func (s said) Error() string               { return s.msg }

// invalidOperation reads the operation CUE could not apply, and
// identifier the names of the fields in it.
var (
	invalidOperation = regexp.MustCompile(`^invalid operation (.+) \(`)
	identifier       = regexp.MustCompile(`[A-Za-z_#][A-Za-z0-9_]*`)
)

// written reports whether a value has a position in an author's file.
func written(v cue.Value) bool {
	p := posOf(v)
	return p != "" && !isSchemaFile(p)
}

// blame picks the position an author should look at: a line of their own
// file rather than the schema's, in the environment file when the field
// belongs to the environment, else in the entrant; within that file the
// deepest line, which is the field itself rather than the struct around it.
func blame(positions []token.Pos, field string) string {
	wantDir := "entrants/"
	if strings.HasPrefix(field, "env.") {
		wantDir = "envs/"
	}
	score := func(p token.Pos) int {
		switch {
		case isSchema(p):
			return 0
		case strings.Contains(p.Filename(), wantDir):
			return 2
		}
		return 1
	}
	var best token.Pos
	for _, p := range positions {
		switch {
		case !best.IsValid(), score(p) > score(best):
			best = p
		case score(p) == score(best) && p.Filename() == best.Filename() && p.Line() > best.Line():
			best = p
		}
	}
	if !best.IsValid() {
		return ""
	}
	return fmt.Sprintf("%s:%d", best.Filename(), best.Line())
}

// ruleFor names the contract rule a structural error breaks, from the path
// of the field it is on.
func ruleFor(e errors.Error, fallback string) string {
	format, _ := e.Msg()
	path := e.Path()
	has := func(s string) bool {
		for _, p := range path {
			if p == s {
				return true
			}
		}
		return false
	}
	last := ""
	if len(path) > 0 {
		last = path[len(path)-1]
	}
	switch {
	case strings.Contains(format, "not allowed"):
		return "C15"
	case has("envelope") && last == "cpus":
		return "C1"
	case last == "memorySwap":
		return "C5"
	case has("jvm"):
		return "C9"
	case has("knobs") && last == "value" && strings.Contains(format, "mismatched types"):
		// A value of another type than its knob declares is not exact.
		return "C15"
	case has("knobs"):
		return "knobs"
	case has("variants"):
		return "variants"
	case has("version"):
		return "C16"
	case has("infra") && (last == "image" || last == "digest" || last == "ref"):
		return "C16"
	case has("infra"):
		return "C11"
	case last == "cpus" || last == "memory":
		return "C15"
	case last == "role":
		return "C3"
	}
	if fallback != "" {
		return fallback
	}
	return "C15"
}

// knobValue is the path of a knob's value.
var knobValue = regexp.MustCompile(`(?:^|\.)knobs\.([^.]+)\.value$`)

// explain rewrites the evaluator's terse messages into what to do.
// outOfBound reads a bound a value broke: "invalid value 0 (out of bound >0)".
var outOfBound = regexp.MustCompile(`^invalid value (\S+) \(out of bound (>=|<=|!=|>|<)([^)]+)\)$`)

// sizeString and numberString read a size or a number written as a string
// out of a conflict ("96G", "4"), to say how to write it.
var (
	sizeString   = regexp.MustCompile(`conflicting values "([0-9]+) ?([KMGT])(?:i?B)?"`)
	boolString   = regexp.MustCompile(`conflicting values "(true|false)" and bool `)
	numberString = regexp.MustCompile(`conflicting values "([0-9]+(?:\.[0-9]+)?)"`)
)

// lastName is a field path's last label: "partitions" of "env.partitions".
func lastName(field string) string {
	return field[strings.LastIndex(field, ".")+1:]
}

func explain(field, msg string) string {
	switch {
	case strings.Contains(msg, "field not allowed"):
		name := field
		if i := strings.LastIndex(field, "."); i >= 0 {
			name = field[i+1:]
		}
		return fmt.Sprintf("unknown field %q at %s; files are closed (C15): remove it or fix its spelling", name, field)
	case strings.Contains(msg, "conflicting values") && strings.HasSuffix(field, "envelope.cpus"):
		return fmt.Sprintf("%s: %s; the envelope's cpus are derived as min(partitions, host cores − infra cpus − reserve cpus): remove the hand-written value", field, msg)
	case strings.Contains(msg, "conflicting values") && (strings.HasSuffix(field, ".memory") || strings.HasSuffix(field, ".memorySwap")):
		if m := sizeString.FindStringSubmatch(msg); m != nil {
			return fmt.Sprintf("%s: %s; memory is integer bytes, not a string: write %s * %siB", field, msg, m[1], m[2])
		}
		return fmt.Sprintf("%s: %s; memory is integer bytes: write it with a unit, e.g. 96 * GiB", field, msg)
	case strings.Contains(msg, "conflicting values") && strings.HasSuffix(field, ".cpus"):
		if m := numberString.FindStringSubmatch(msg); m != nil {
			return fmt.Sprintf("%s: %s; CPUs are a number, not a string: write %s", field, msg, m[1])
		}
		if twoValues.MatchString(msg) {
			return field + ": " + msg // two values: twice says where
		}
		return fmt.Sprintf("%s: %s; CPUs are a number with at most two decimal places", field, msg)
	case strings.HasSuffix(field, ".cpus") && strings.Contains(msg, "out of bound >0"):
		return fmt.Sprintf("%s: %s; a container needs some CPU to run at all: give it at least 0.01 (the quota grain), a data plane envelope.cpus, a control plane at most env.controlPlane.cpus", field, msg)
	case strings.HasSuffix(field, ".memory") && strings.Contains(msg, "out of bound >0"):
		return fmt.Sprintf("%s: %s; a container needs memory to run at all: give it integer bytes above 0 (write 1 * GiB), a data plane envelope.memory", field, msg)
	case boolString.MatchString(msg):
		return fmt.Sprintf("%s: %s; a boolean, not a string: write %s: %s", field, msg, lastName(field), boolString.FindStringSubmatch(msg)[1])
	case numberString.MatchString(msg) && strings.Contains(msg, "mismatched types string"):
		return fmt.Sprintf("%s: %s; a number, not a string: write %s: %s", field, msg, lastName(field), numberString.FindStringSubmatch(msg)[1])
	case knobValue.MatchString(field) && strings.Contains(msg, "mismatched types"):
		knob := knobValue.FindStringSubmatch(field)[1]
		return fmt.Sprintf("knob %s has a value of the wrong type (%s); values are exact (C15): give %s a value of the type its knob declares (its type field)", knob, msg, knob)
	case outOfBound.MatchString(msg):
		m := outOfBound.FindStringSubmatch(msg)
		hint := fmt.Sprintf("%s: %s; write a value %s %s", field, msg, map[string]string{">": "above", ">=": "at least", "<": "below", "<=": "at most", "!=": "other than"}[m[2]], m[3])
		// An integer bound has a nearest value that keeps it: say it.
		if n, err := strconv.Atoi(m[3]); err == nil && !strings.Contains(m[1], ".") {
			if v, ok := map[string]int{">": n + 1, ">=": n, "<": n - 1, "<=": n}[m[2]]; ok {
				hint += fmt.Sprintf(": write %s: %d", lastName(field), v)
			}
		}
		return hint
	case strings.Contains(msg, "field is required but not present"):
		return fmt.Sprintf("%s is missing; it is required (the schema's doc comment on it says what it holds): add it", field)
	case strings.Contains(msg, "incomplete value"):
		return fmt.Sprintf("%s has no concrete value (%s); give it one", field, msg)
	}
	if field == "" {
		return msg
	}
	return field + ": " + msg
}
