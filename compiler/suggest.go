package compiler

import (
	"fmt"
	"regexp"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/parser"

	"spatec.dev/spatec/internal/nearest"
)

// unknownField finds the field an "unknown field" problem names, and where.
var unknownField = regexp.MustCompile(`unknown field "([^"]+)" at (\S+); files are closed \(C15\): remove it or fix its spelling`)

// unknownKnob finds the name a variant sets that is no knob, and the knobs.
var unknownKnob = regexp.MustCompile(`sets (\S+), which is not a knob of the entrant \(it has: ([^)]*)\); write one of those`)

// missingField finds the field a "missing" problem names.
var missingField = regexp.MustCompile(`(\S+) is missing; it is required \(the schema's doc comment on it says what it holds\): add it`)

// suggest adds to each unknown-field problem the field the schema allows
// there that its name is closest to, and to a variant's unknown knob the
// knob: a misspelling is then named with its fix ("did you mean memory?
// write memory"), not only refused.
func (t *Tree) suggest(ps []Problem) []Problem {
	ps = retype(ps)
	for i, p := range ps {
		if m := missingField.FindStringSubmatchIndex(p.Message); m != nil {
			if doc := t.doc(p.Message[m[2]:m[3]]); doc != "" {
				ps[i].Message = p.Message[:m[0]] + fmt.Sprintf("%s is missing; it is required (the schema says: %s): add it", p.Message[m[2]:m[3]], doc) + p.Message[m[1]:]
			}
			continue
		}
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

// schemaField finds the schema's own field at a path of a plan
// ("entrant.containers.vector") under root, #Plan: a name the schema does
// not know (a container's, a knob's) is any name its pattern allows.
func schemaField(root cue.Value, path string) (cue.Value, bool) {
	if !root.Exists() || path == "" {
		return cue.Value{}, false
	}
	v := root
	for _, sel := range cue.ParsePath(path).Selectors() {
		if sel.LabelType() != cue.StringLabel {
			return cue.Value{}, false
		}
		next, ok := field(v, sel.Unquoted())
		if !ok {
			next = v.LookupPath(cue.MakePath(cue.AnyString))
		}
		if !next.Exists() {
			// A pattern on names ([#Name]: #Scenario) applies once the
			// name is there.
			p := cue.MakePath(sel)
			next = v.FillPath(p, v.Context().CompileString("_")).LookupPath(p)
		}
		if !next.Exists() {
			return cue.Value{}, false
		}
		v = next
	}
	return v, true
}

// doc is the first sentence of the schema's doc comment on a field of a
// plan: what a field that is missing holds.
func (t *Tree) doc(path string) string {
	v, ok := schemaField(t.docPlan(), path)
	if !ok {
		return ""
	}
	for _, d := range v.Doc() {
		text := strings.Join(strings.Fields(d.Text()), " ")
		if i := strings.Index(text, ". "); i >= 0 {
			text = text[:i]
		}
		return strings.TrimSuffix(text, ".")
	}
	return ""
}

// docPlan is the schema's #Plan with its doc comments, built the first
// time a problem needs one: Load parses without comments, which would cost
// every run.
func (t *Tree) docPlan() cue.Value {
	if t.docs != nil {
		return *t.docs
	}
	t.docs = &cue.Value{}
	// A source of its own, whose parser keeps comments; the schema's
	// imports (the JDK's options) load through it.
	src, err := newSource(t.ctx, t.files, "")
	if err != nil {
		return *t.docs
	}
	src.parse = src.parse.Apply(parser.ParseComments)
	inst := src.instance("schema")
	if inst.Err != nil {
		return *t.docs
	}
	v := t.ctx.BuildInstance(inst).LookupPath(cue.MakePath(cue.Def("Plan")))
	t.docs = &v
	return v
}

// allowed lists the fields the schema's #Plan allows at a path of a plan.
func (t *Tree) allowed(path string) []string {
	v, ok := schemaField(t.plan, path)
	if !ok {
		return nil
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
