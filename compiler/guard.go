package compiler

import (
	"fmt"
	"io/fs"
	"regexp"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/errors"
	"cuelang.org/go/cue/parser"
	"cuelang.org/go/cue/token"
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

// guarded is what a guarded field's problem needs to be said again in
// CUE's own words: the field, and where the author wrote its value.
type guarded struct {
	field, where string
	at           []token.Pos
}

// guards reads the guards among a CUE error's causes: a field left out is
// said as CUE says it ("is missing"), unless the field has another error
// (a guard cannot tell a field left out from one in error); an unknown
// name, as CUE says it ("field not allowed"): said holds those messages,
// each to be given the guard's rule. A field refused by its error
// disjunct is marked for retype.
func guards(errs []errors.Error) (keep []errors.Error, said map[errors.Error]string, marked map[errors.Error]*guarded) {
	said, marked = map[errors.Error]string{}, map[errors.Error]*guarded{}
	others := map[string]bool{} // the fields errors other than _missing are on
	for _, e := range errs {
		if !missingGuard(e) {
			others[fieldPath(e)] = true
		}
	}
	for _, e := range errs {
		format, args := e.Msg()
		msg := fmt.Sprintf(format, args...)
		m := ruleID.FindStringSubmatch(msg)
		switch {
		case m == nil:
		case missingGuard(e):
			field := fieldPath(e)
			if hasErrorUnder(others, field) {
				continue
			}
			said[e] = explain(field, "field is required but not present")
		case unknownGuard.MatchString(msg[len(m[0]):]):
			said[e] = explain(fieldPath(e), "field not allowed")
		default:
			g := &guarded{field: fieldPath(e)}
			for _, p := range errors.Positions(e) {
				if p.IsValid() && !isSchema(p) {
					g.at = append(g.at, p)
				}
			}
			if len(g.at) > 0 {
				marked[e] = g
			}
		}
		keep = append(keep, e)
	}
	return keep, said, marked
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
// refused: the value the author wrote, read at its line, unified with the
// field's type without the disjunct. Its message then names what was
// found ("conflicting values \"4\" and int") and explain makes the hint
// ("write partitions: 4"). A value the type accepts was refused for
// another reason said by another problem (a key given twice): it goes.
func (t *Tree) retype(ps []Problem) []Problem {
	out := ps[:0]
	for _, p := range ps {
		g := p.guarded
		p.guarded = nil
		if g == nil {
			out = append(out, p)
			continue
		}
		msg, ok := t.ownWords(g)
		switch {
		case !ok:
			out = append(out, p)
		case msg != "":
			p.Message = explain(g.field, msg)
			if g.where != "" {
				p.Message = g.where + ": " + p.Message
			}
			out = append(out, p)
		}
	}
	return out
}

// ownWords unifies the value written at one of g.at with the field's type
// without its error disjunct: CUE's message, "" when the type accepts it,
// or false when the value cannot be read on its own (a reference, an
// expression).
func (t *Tree) ownWords(g *guarded) (string, bool) {
	typ, ok := schemaField(t.plan, g.field)
	if !ok {
		return "", false
	}
	var value ast.Expr
	for _, at := range g.at {
		if value, ok = t.literalAt(at); ok {
			break
		}
	}
	if value == nil {
		return "", false
	}
	found := t.ctx.BuildExpr(value)
	if found.Err() != nil {
		return "", false
	}
	alternatives := []cue.Value{typ}
	if op, args := typ.Expr(); op == cue.OrOp {
		alternatives = alternatives[:0]
		for _, a := range args {
			if a.Err() == nil {
				alternatives = append(alternatives, a)
			}
		}
	}
	var first string
	for _, a := range alternatives {
		err := found.Unify(a).Validate(cue.Concrete(true))
		if err == nil {
			return "", true
		}
		if first == "" {
			format, args := errors.Errors(err)[0].Msg()
			first = fmt.Sprintf(format, args...)
		}
	}
	return first, first != ""
}

// literalAt is the literal an author's file has at a position: a
// number, a string, a boolean, or one negated.
func (t *Tree) literalAt(at token.Pos) (ast.Expr, bool) {
	name := strings.TrimPrefix(at.Filename(), t.display)
	src, err := fs.ReadFile(t.files, name)
	if err != nil {
		return nil, false
	}
	f, err := parser.ParseFile(name, src)
	if err != nil {
		return nil, false
	}
	var found ast.Expr
	ast.Walk(f, func(n ast.Node) bool {
		if found != nil {
			return false
		}
		switch x := n.(type) {
		case *ast.BasicLit, *ast.UnaryExpr:
			if p := x.Pos(); p.Line() == at.Line() && p.Column() == at.Column() {
				found = x.(ast.Expr)
				return false
			}
		}
		return true
	}, nil)
	if u, ok := found.(*ast.UnaryExpr); ok {
		if _, lit := u.X.(*ast.BasicLit); !lit {
			return nil, false
		}
	}
	return found, found != nil
}
