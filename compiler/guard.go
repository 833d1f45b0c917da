package compiler

import (
	"fmt"
	"regexp"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/errors"
)

// The schema guards some fields with an error disjunct, `int & >0 |
// error("C15: …")`, and the top of an environment and an entrant with a
// pattern (any other name) and _missing (a required field left out), so
// that the official `cue vet` names the rule too. Each guard replaces
// CUE's own message, which said what was found and which spatec vet's
// hints are made from; the functions here give it back.

// unknownGuard reads the pattern's message: `unknown field "calss": an
// environment has no such field; …`.
var unknownGuard = regexp.MustCompile(`^unknown field "[^"]*": an? \w+ has no such field`)

// guarded is a field its error disjunct refused: its path, the plan or
// environment it was found in, and its value there, whose conjuncts are
// what the author wrote and the schema's type.
type guarded struct {
	field, where string
	value        cue.Value
}

// guards reads the guards among a CUE error's causes: a field left out is
// said as CUE says it ("is missing"), unless the field has another error
// (a guard cannot tell a field left out from one in error); an unknown
// name, as CUE says it ("field not allowed"): said holds those messages,
// each to be given the guard's rule. A field refused by its error
// disjunct is marked for retype.
func guards(errs []errors.Error) (keep []errors.Error, said map[errors.Error]string, marked map[errors.Error]*guarded) {
	said, marked = map[errors.Error]string{}, map[errors.Error]*guarded{}
	others := map[string]bool{}  // the fields errors other than _missing are on
	refused := map[string]bool{} // the fields a guard refused
	for _, e := range errs {
		if !missingGuard(e) {
			others[fieldPath(e)] = true
		}
		if format, args := e.Msg(); ruleID.MatchString(fmt.Sprintf(format, args...)) {
			refused[fieldPath(e)] = true
		}
	}
	for _, e := range errs {
		format, args := e.Msg()
		msg := fmt.Sprintf(format, args...)
		m := ruleID.FindStringSubmatch(msg)
		switch {
		case m == nil && emptyDisjunction.MatchString(msg) && refused[fieldPath(e)]:
			continue // the guard's error says it
		case m == nil:
		case missingGuard(e):
			field := fieldPath(e)
			if hasErrorUnder(others, field) {
				continue
			}
			said[e] = explain(field, "field is required but not present")
		case unknownGuard.MatchString(msg[len(m[0]):]):
			said[e] = explain(fieldPath(e), "field not allowed")
		case fieldGuard(e):
			marked[e] = &guarded{field: fieldPath(e)}
		}
		keep = append(keep, e)
	}
	return keep, said, marked
}

// emptyDisjunction is CUE's summary of a disjunction none of whose
// alternatives held: "2 errors in empty disjunction:".
var emptyDisjunction = regexp.MustCompile(`^[0-9]+ errors in empty disjunction`)

// fieldGuard reports whether an error is a field's error disjunct's: on
// a field an author writes (not a hidden check's, _failures), with the
// author's line among its positions.
func fieldGuard(e errors.Error) bool {
	for _, label := range e.Path() {
		if strings.HasPrefix(label, "_") {
			return false
		}
	}
	for _, p := range errors.Positions(e) {
		// A system's option registry says itself what was written and
		// what the system takes instead.
		if strings.Contains(p.Filename(), "options/") {
			return false
		}
	}
	for _, p := range errors.Positions(e) {
		if p.IsValid() && !isSchema(p) {
			return true
		}
	}
	return false
}

// missingGuard reports whether an error is _missing's.
func missingGuard(e errors.Error) bool {
	path := e.Path()
	return len(path) >= 2 && path[len(path)-2] == "_missing"
}

// hasErrorUnder reports whether any of fields is field or one inside it.
func hasErrorUnder(fields map[string]bool, field string) bool {
	for f := range fields {
		if f == field || strings.HasPrefix(f, field+".") {
			return true
		}
	}
	return false
}

// retype says again, in CUE's own words, what a field's error disjunct
// refused: the value the author wrote, evaluated (one of the field's
// conjuncts), unified with the others without their error disjuncts. Its
// message then names what was found ("conflicting values \"4\" and int")
// and explain makes the hint ("write partitions: 4"). A value the type
// accepts was refused for another reason said by another problem (a key
// given twice): it goes.
//
// A guarded field whose own value is in error was refused for what it is
// made from (a heap derived from a memory in error): a consequence, which
// goes when its cause is reported.
func retype(ps []Problem) []Problem {
	type said struct {
		msg             string
		ok, consequence bool
	}
	words := make([]said, len(ps))
	causes := 0
	for i, p := range ps {
		if p.guarded != nil {
			w := &words[i]
			w.msg, w.ok, w.consequence = ownWords(p.guarded.value)
		}
		if !words[i].consequence {
			causes++
		}
	}
	out := ps[:0]
	for i, p := range ps {
		g, w := p.guarded, words[i]
		p.guarded = nil
		switch {
		case g == nil, !w.ok && !(w.consequence && causes > 0):
			out = append(out, p)
		case !w.ok:
		case w.msg != "":
			p.Message = explain(g.field, w.msg)
			if g.where != "" {
				p.Message = g.where + ": " + p.Message
			}
			out = append(out, p)
		}
	}
	return out
}

// ownWords checks what the author wrote for a field against each of the
// schema's conjuncts of it, their error disjuncts left out: CUE's message
// for the first it breaks, "" when it breaks none, or not ok when the
// type still holds the guard (#Bytes & >=16 * MiB). A field with no value
// of its own to read (one derived from a field in error) is a
// consequence.
func ownWords(v cue.Value) (msg string, ok, consequence bool) {
	var found cue.Value
	var types []cue.Value
	if op, conjuncts := v.Expr(); op == cue.AndOp {
		for _, c := range conjuncts {
			// The author's value, or the schema's reference to it (a
			// knob's value: setBy, what its variant sets).
			p := c.Pos()
			_, ref := c.ReferencePath()
			if (p.IsValid() && !isSchema(p) || len(ref.Selectors()) > 0) && c.IsConcrete() && c.Err() == nil {
				if !found.Exists() {
					found = c
				}
				continue
			}
			types = append(types, c)
		}
	}
	if !found.Exists() {
		return "", false, true
	}
	// Afresh, so that CUE names what was found first ("conflicting values
	// \"4\" and int"), as explain reads it.
	found = v.Context().CompileString(fmt.Sprint(found))
	if found.Err() != nil {
		return "", false, false
	}
	for _, typ := range types {
		if said := breaks(found, typ); said != "" {
			// A type the disjunct is still part of says only the guard's
			// words again.
			return said, !ruleID.MatchString(said), false
		}
	}
	return "", true, false
}

// breaks says how found breaks a type: CUE's message, or of literals
// alone (an enum), the list of them; "" when it keeps it. Of a default
// and a type ("*0.3 | number & >0 & <1"), the type says what is allowed.
func breaks(found, typ cue.Value) string {
	var said string
	var allowed []string
	for _, a := range disjuncts(typ, 4) {
		if a.Err() != nil {
			continue // the guard itself
		}
		err := a.Unify(found).Validate(cue.Concrete(true))
		if err == nil {
			return ""
		}
		if a.IsConcrete() {
			allowed = append(allowed, fmt.Sprint(a))
			continue
		}
		if said == "" {
			format, args := errors.Errors(err)[0].Msg()
			said = fmt.Sprintf(format, args...)
		}
	}
	if said == "" && len(allowed) > 0 {
		said = fmt.Sprintf("invalid value %v (allowed: %s)", found, strings.Join(allowed, ", "))
	}
	// What was found first, as explain reads it.
	if m := twoTypes.FindStringSubmatch(said); m != nil && m[1] != fmt.Sprint(found) {
		said = fmt.Sprintf("conflicting values %s and %s (mismatched types %s and %s)", m[2], m[1], m[4], m[3])
	}
	return said
}

// twoTypes reads CUE's conflict between values of two types.
var twoTypes = regexp.MustCompile(`^conflicting values (.+) and (.+) \(mismatched types (\S+) and (\S+)\)$`)

// disjuncts are the alternatives of a type, through the definitions it
// refers to (memory!: #Bytes).
func disjuncts(v cue.Value, depth int) []cue.Value {
	if depth == 0 {
		return []cue.Value{v}
	}
	switch op, args := v.Expr(); op {
	case cue.OrOp:
		var out []cue.Value
		for _, a := range args {
			out = append(out, disjuncts(a, depth-1)...)
		}
		return out
	case cue.SelectorOp:
		if root, path := v.ReferencePath(); len(path.Selectors()) > 0 {
			return disjuncts(root.LookupPath(path), depth-1)
		}
	}
	return []cue.Value{v}
}
