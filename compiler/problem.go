package compiler

import (
	"fmt"
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
}

func (p Problem) String() string {
	if p.Pos == "" {
		return p.Rule + ": " + p.Message
	}
	return p.Pos + ": " + p.Rule + ": " + p.Message
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

func isSchema(p token.Pos) bool {
	f := p.Filename()
	return strings.Contains(f, "schema/") || f == ""
}

// fromError turns a CUE error into problems, one per error it holds. The
// rule is inferred from the field the error is on; fallback is used when
// nothing more specific applies. where names what was being compiled.
func fromError(err error, fallback, where string) []Problem {
	var out []Problem
	for _, e := range errors.Errors(err) {
		p := Problem{Rule: ruleFor(e, fallback)}
		var best token.Pos
		for _, pos := range errors.Positions(e) {
			if !best.IsValid() || isSchema(best) && !isSchema(pos) {
				best = pos
			}
		}
		if best.IsValid() {
			p.Pos = fmt.Sprintf("%s:%d", best.Filename(), best.Line())
		}
		format, args := e.Msg()
		msg := fmt.Sprintf(format, args...)
		field := strings.TrimPrefix(strings.Join(e.Path(), "."), "#Plan.")
		p.Message = where + ": " + explain(field, msg)
		out = append(out, p)
	}
	return out
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

// explain rewrites the evaluator's terse messages into what to do.
func explain(field, msg string) string {
	switch {
	case strings.Contains(msg, "field not allowed"):
		name := field
		if i := strings.LastIndex(field, "."); i >= 0 {
			name = field[i+1:]
		}
		return fmt.Sprintf("unknown field %q at %s; files are closed (C15): remove it or fix its spelling", name, field)
	case strings.Contains(msg, "conflicting values") && (strings.HasSuffix(field, ".memory") || strings.HasSuffix(field, ".cpus")):
		return fmt.Sprintf("%s: %s; memory is integer bytes (write 96 * GiB) and CPUs a decimal with at most two places", field, msg)
	case strings.Contains(msg, "incomplete value") || strings.Contains(msg, "field is required but not present"):
		return fmt.Sprintf("%s has no concrete value (%s); give it one", field, msg)
	}
	if field == "" {
		return msg
	}
	return field + ": " + msg
}
