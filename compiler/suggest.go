package compiler

import (
	"fmt"
	"regexp"
	"strings"

	"cuelang.org/go/cue"

	"spatec.dev/spatec/internal/nearest"
)

// unknownField finds the field an "unknown field" problem names, and where.
var unknownField = regexp.MustCompile(`unknown field "([^"]+)" at (\S+); files are closed \(C15\): remove it or fix its spelling`)

// unknownKnob finds the name a variant sets that is no knob, and the knobs.
var unknownKnob = regexp.MustCompile(`sets (\S+), which is not a knob of the entrant \(it has: ([^)]*)\); write one of those`)

// suggest adds to each unknown-field problem the field the schema allows
// there that its name is closest to, and to a variant's unknown knob the
// knob: a misspelling is then named with its fix ("did you mean memory?
// write memory"), not only refused.
func (t *Tree) suggest(ps []Problem) []Problem {
	for i, p := range ps {
		if m := unknownKnob.FindStringSubmatchIndex(p.Message); m != nil {
			name, knobs := p.Message[m[2]:m[3]], strings.Split(p.Message[m[4]:m[5]], ", ")
			if near := nearest.Close(name, knobs); near != "" {
				ps[i].Message = p.Message[:m[1]-len("write one of those")] + fmt.Sprintf("did you mean %s? write %s", near, near) + p.Message[m[1]:]
			}
			continue
		}
		m := unknownField.FindStringSubmatchIndex(p.Message)
		if m == nil {
			continue
		}
		name, at := p.Message[m[2]:m[3]], p.Message[m[4]:m[5]]
		parent := strings.TrimSuffix(strings.TrimSuffix(at, name), ".")
		near := nearest.Close(name, t.allowed(parent))
		if near == "" {
			continue
		}
		ps[i].Message = p.Message[:m[0]] + fmt.Sprintf("unknown field %q at %s; files are closed (C15): did you mean %s? write %s", name, at, near, near) + p.Message[m[1]:]
	}
	return ps
}

// allowed lists the fields the schema's #Plan allows at a path of a plan
// ("entrant.containers.vector"): a name the schema does not know (a
// container's, a knob's) is any name its pattern allows.
func (t *Tree) allowed(path string) []string {
	if !t.plan.Exists() || path == "" {
		return nil
	}
	v := t.plan
	for _, sel := range cue.ParsePath(path).Selectors() {
		if sel.LabelType() != cue.StringLabel {
			return nil
		}
		next, ok := field(v, sel.Unquoted())
		if !ok {
			next = v.LookupPath(cue.MakePath(cue.AnyString))
		}
		if !next.Exists() {
			return nil
		}
		v = next
	}
	iter, err := v.Fields(cue.Optional(true))
	if err != nil {
		return nil
	}
	var out []string
	for iter.Next() {
		if sel := iter.Selector(); sel.LabelType() == cue.StringLabel {
			out = append(out, sel.Unquoted())
		}
	}
	return out
}

// field finds a field of a struct by name, required and optional ones
// too (a plain lookup finds neither).
func field(v cue.Value, name string) (cue.Value, bool) {
	iter, err := v.Fields(cue.Optional(true))
	if err != nil {
		return cue.Value{}, false
	}
	for iter.Next() {
		if sel := iter.Selector(); sel.LabelType() == cue.StringLabel && sel.Unquoted() == name {
			return iter.Value(), true
		}
	}
	return cue.Value{}, false
}
