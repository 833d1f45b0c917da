package compiler

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"cuelang.org/go/cue"
	cueerrors "cuelang.org/go/cue/errors"

	"spatec.dev/spatec/schema"
	"spatec.dev/spatec/workloads"
)

// Resolve unifies one entrant variant with one environment into a plan.
// It returns the plan, or every problem found: the contract checks of
// #Plan (all of them, each with the position of the offending field in the
// entrant or environment file) and any structural error (an unknown field, a
// wrong type, a missing field).
func (t *Tree) Resolve(envName, entrantName, variant string) (*schema.Plan, []Problem) {
	return t.resolveDecoded(envName, entrantName, variant, nil)
}

// ResolveFootprint resolves one point of an entrant's footprint study: the
// plan of the study's variant, its data plane given cap (bytes or CPUs) on
// the study's axis in place of the environment's envelope, and everything
// the entrant derives from its envelope derived from that. The contract
// checks the point as it checks any plan.
func (t *Tree) ResolveFootprint(envName, entrantName, study string, cap float64) (*schema.Plan, []Problem) {
	base, problems := t.Resolve(envName, entrantName, "")
	if len(problems) > 0 {
		return nil, problems
	}
	fp, ok := base.Entrant.Footprints[study]
	if !ok {
		return nil, []Problem{{Rule: "usage", Message: fmt.Sprintf("entrant %s has no footprint study %q; it has: %s",
			entrantName, study, strings.Join(slices.Sorted(maps.Keys(base.Entrant.Footprints)), ", "))}}
	}
	point := &schema.FootprintPoint{Study: study, Axis: fp.Axis, Cap: cap, Full: base.Env.Envelope.CPUs, Fraction: fp.Fraction}
	if fp.Axis == schema.AxisMemory {
		point.Cap, point.Full = math.Round(cap), float64(base.Env.Envelope.Memory)
	}
	return t.resolveDecoded(envName, entrantName, fp.Variant, point)
}

// resolveDecoded resolves a plan, at a footprint point when one is given,
// and decodes it.
func (t *Tree) resolveDecoded(envName, entrantName, variant string, point *schema.FootprintPoint) (*schema.Plan, []Problem) {
	pv, variant, problems := t.resolve(envName, entrantName, variant, point)
	if len(problems) > 0 {
		return nil, problems
	}
	plan, err := t.decode(pv, envName, variant)
	if err != nil {
		return nil, fromError(err, "", entrantName+":"+variant+" on "+envName, planSite(pv))
	}
	plan.Footprint = point
	return plan, nil
}

// Check reports every problem of one plan, as Resolve does, without
// decoding it: what `spatec vet` needs.
func (t *Tree) Check(envName, entrantName, variant string) []Problem {
	_, _, problems := t.resolve(envName, entrantName, variant, nil)
	return problems
}

// resolve finds or builds the plan value and diagnoses it; variant "" is
// the entrant's default, and the variant used is returned. At a footprint
// point the plan is always built here: the tree resolves only the
// environment's own envelope.
func (t *Tree) resolve(envName, entrantName, variant string, point *schema.FootprintPoint) (cue.Value, string, []Problem) {
	env, ok := t.envs[envName]
	if !ok {
		return cue.Value{}, "", []Problem{{Rule: "usage", Message: fmt.Sprintf("no environment %q; the tree has: %s", envName, strings.Join(t.Environments(), ", "))}}
	}
	ent, ok := t.entrants[entrantName]
	if !ok {
		return cue.Value{}, "", []Problem{{Rule: "usage", Message: fmt.Sprintf("no entrant %q; the tree has: %s", entrantName, strings.Join(t.Entrants(), ", "))}}
	}
	names, def := t.Variants(entrantName)
	if variant == "" {
		variant = def
	}
	if !slices.Contains(names, variant) {
		return cue.Value{}, "", []Problem{{Pos: posOf(ent.value.LookupPath(cue.ParsePath("variants"))), Rule: "usage",
			Message: fmt.Sprintf("entrant %s has no variant %q; it has: %s", entrantName, variant, strings.Join(names, ", "))}}
	}
	if ps := t.envProblems[envName]; len(ps) > 0 {
		return cue.Value{}, variant, ps
	}

	// The plan was resolved when the tree was built as one package; else
	// (a tree built apart, a pair the entrant does not list) unify here.
	var pv cue.Value
	if point == nil {
		pv = t.plans.LookupPath(cue.MakePath(cue.Str(envName), cue.Str(entrantName), cue.Str(variant)))
	}
	built := pv.Exists()
	if !built {
		// Assemble the inputs first and unify them with #Plan once: each
		// FillPath on #Plan itself would evaluate the whole plan again.
		in := t.ctx.CompileString("{}").
			FillPath(cue.ParsePath("env"), env.value).
			FillPath(cue.ParsePath("entrant"), ent.value).
			FillPath(cue.ParsePath("variant"), variant)
		if point != nil {
			var capV any = point.Cap
			if point.Axis == schema.AxisMemory {
				capV = int64(point.Cap)
			}
			in = in.FillPath(cue.ParsePath("footprint"), map[string]any{"study": point.Study, "axis": point.Axis, "cap": capV})
		}
		pv = t.plan.Unify(in)
	}

	id := PlanID{Env: envName, Entrant: entrantName, Variant: variant}
	if point != nil {
		id.Variant = fmt.Sprintf("%s (footprint %s at %s)", variant, point.Study, point.Show())
	}
	// The common case first: no contract problem, and every value concrete
	// and free of errors. Only a plan that fails either way pays for the
	// full diagnosis below.
	if n, err := pv.LookupPath(cue.ParsePath("problems")).Len().Int64(); err == nil && n == 0 &&
		(built && t.allPlansValid() || pv.Validate(cue.Concrete(true)) == nil) {
		return pv, variant, nil
	}

	// Structural problems (an unknown field, a wrong type) are reported
	// whatever the checks say: they may keep some checks from evaluating.
	// The parts' errors are read together, so that an error that only
	// follows from another (an interpolation of a field in error) goes
	// even when the two are found in different parts.
	var problems []Problem
	var structural cueerrors.Error
	// An entrant's system configuration is closed in a definition of its
	// own (#settings), which plain validation does not visit: its errors
	// are read there first, where their positions are the author's, and
	// the same errors met again where the configuration is copied into a
	// file are dropped below as said.
	said := map[string]bool{}
	if err := pv.LookupPath(cue.ParsePath("entrant")).Validate(cue.Concrete(true), cue.Definitions(true)); err != nil {
		for _, e := range cueerrors.Errors(err) {
			if inDefinition(e.Path()) && !strings.Contains(e.Error(), "incomplete") {
				structural = cueerrors.Append(structural, e)
				said[message(e)] = true
			}
		}
	}
	for _, part := range []string{"env", "entrant", "workload", "budget"} {
		if err := pv.LookupPath(cue.ParsePath(part)).Validate(cue.Concrete(true)); err != nil {
			for _, e := range cueerrors.Errors(err) {
				if !said[message(e)] {
					structural = cueerrors.Append(structural, e)
				}
			}
		}
	}
	if structural != nil {
		problems = fromError(structural, "", "", planSite(pv))
	}
	problems = append(problems, t.checks(pv, id)...)
	if len(problems) == 0 {
		// Nothing found, yet it is not valid: report why.
		problems = fromError(pv.Validate(cue.Concrete(true)), "", "", planSite(pv))
	}
	for i := range problems {
		if problems[i].Plans == nil && !strings.HasPrefix(problems[i].Message, envName+": ") {
			problems[i].Plans = []PlanID{id}
		}
	}
	return pv, variant, dedupe(t.suggest(problems))
}

// inDefinition says whether an error's path passes through a definition
// of the entrant's own (entrant.#settings.…).
func inDefinition(path []string) bool {
	for _, l := range path[min(1, len(path)):] {
		if strings.HasPrefix(l, "#") {
			return true
		}
	}
	return false
}

// decode turns a resolved plan value into its Go form. The environment is
// the same in every plan of it, so it is decoded once.
func (t *Tree) decode(pv cue.Value, envName, variant string) (*schema.Plan, error) {
	plan := schema.Plan{Variant: variant}
	env, err := t.decodedEnv(envName)
	if err != nil {
		return nil, err
	}
	plan.Env = *env
	ent := pv.LookupPath(cue.ParsePath("entrant"))
	// What a variant cannot change (its name, its versions, the list of
	// variants itself) is decoded once for each entrant on an environment:
	// an entrant with a study has many variants, and each plan of it would
	// otherwise decode every one of them again.
	key := envName + "\x00" + plan.Entrant.Name
	if name, err := ent.LookupPath(cue.ParsePath("name")).String(); err == nil {
		key = envName + "\x00" + name
	}
	shared, ok := t.entrantParts[key]
	if !ok {
		var s struct {
			Name        string                    `json:"name"`
			Description string                    `json:"description"`
			Supports    []string                  `json:"supports"`
			Implements  []string                  `json:"implements"`
			Version     schema.Version            `json:"version"`
			Variants    map[string]schema.Variant `json:"variants"`
			Footprints  map[string]schema.Footprint
		}
		for _, f := range []struct {
			name string
			into any
		}{{"name", &s.Name}, {"description", &s.Description}, {"supports", &s.Supports}, {"implements", &s.Implements}, {"version", &s.Version}, {"variants", &s.Variants}, {"footprints", &s.Footprints}} {
			if err := ent.LookupPath(cue.ParsePath(f.name)).Decode(f.into); err != nil {
				return nil, err
			}
		}
		shared = schema.Entrant{Name: s.Name, Description: s.Description, Supports: s.Supports,
			Implements: s.Implements, Version: s.Version, Variants: s.Variants}
		if len(s.Footprints) > 0 {
			shared.Footprints = s.Footprints
		}
		t.entrantParts[key] = shared
	}
	plan.Entrant = shared
	// The rest may follow the variant: its workload (the environment's,
	// as decoded with it), its knobs, its containers.
	if err := ent.LookupPath(cue.ParsePath("runs")).Decode(&plan.Entrant.Runs); err != nil {
		return nil, err
	}
	wl, ok := env.Workloads[plan.Entrant.Runs]
	if !ok {
		return nil, fmt.Errorf("%s hosts no workload %q", envName, plan.Entrant.Runs)
	}
	plan.Workload = wl
	for _, f := range []struct {
		name string
		into any
	}{{"blocked", &plan.Entrant.Blocked}, {"knobs", &plan.Entrant.Knobs}, {"containers", &plan.Entrant.Containers},
		{"deviations", &plan.Entrant.Deviations}, {"sizing", &plan.Entrant.Sizing}, {"validate", &plan.Entrant.Validate}} {
		if err := ent.LookupPath(cue.ParsePath(f.name)).Decode(f.into); err != nil {
			return nil, err
		}
	}
	var objects schema.SinkObjects
	if err := ent.LookupPath(cue.ParsePath("sinkObjects")).Decode(&objects); err != nil {
		return nil, err
	}
	if len(objects.Create) > 0 || len(objects.Drop) > 0 {
		plan.Entrant.SinkObjects = &objects
	}
	if err := ent.LookupPath(cue.ParsePath("restart")).Decode(&plan.Entrant.Restart); err != nil {
		return nil, err
	}
	if v := ent.LookupPath(cue.ParsePath("guarantee")); v.Exists() {
		plan.Entrant.Guarantee = &schema.Guarantee{}
		if err := v.Decode(plan.Entrant.Guarantee); err != nil {
			return nil, err
		}
	}
	if v := ent.LookupPath(cue.ParsePath("inFlight")); v.Exists() {
		if err := v.Decode(&plan.Entrant.InFlight); err != nil {
			return nil, err
		}
	}
	// The budget is fourteen numbers and two flags: read one by one, they
	// cost a third of what decoding the struct does, which orders its
	// fields first.
	budget := pv.LookupPath(cue.ParsePath("budget"))
	for _, line := range []struct {
		name string
		into *schema.BudgetLine
	}{{"cpus", &plan.Budget.CPUs}, {"memory", &plan.Budget.Memory}} {
		for _, f := range []struct {
			name string
			into *float64
		}{{"infra", &line.into.Infra}, {"envelope", &line.into.Envelope}, {"controlPlane", &line.into.ControlPlane},
			{"reserve", &line.into.Reserve}, {"host", &line.into.Host}, {"used", &line.into.Used}, {"left", &line.into.Left}} {
			v, err := budget.LookupPath(cue.MakePath(cue.Str(line.name), cue.Str(f.name))).Float64()
			if err != nil {
				return nil, fmt.Errorf("reading budget.%s.%s: %w", line.name, f.name, err)
			}
			*f.into = v
		}
		v, err := budget.LookupPath(cue.MakePath(cue.Str(line.name), cue.Str("controlPlaneInReserve"))).Bool()
		if err != nil {
			return nil, fmt.Errorf("reading budget.%s.controlPlaneInReserve: %w", line.name, err)
		}
		line.into.ControlPlaneInReserve = v
	}
	return &plan, nil
}

// checks collects the problems of every rule in #Plan.checks. A rule whose
// check cannot evaluate (because of a structural error elsewhere) is skipped
// here: that error is reported by the structural pass.
//
// A message of the entrant's ("vector: …", "vector on bench-96c: …") loses
// that prefix: the problem names its plan instead. A message of the
// environment's ("bench-96c: …") is the same in every plan of it and
// keeps it.
func (t *Tree) checks(pv cue.Value, id PlanID) []Problem {
	iter, err := pv.LookupPath(cue.ParsePath("checks")).Fields()
	if err != nil {
		return nil
	}
	var out []Problem
	for iter.Next() {
		// Element by element: a problem whose message cannot be built
		// (its inputs are in error) does not hide the others.
		elems, err := iter.Value().List()
		if err != nil {
			continue
		}
		for elems.Next() {
			var f struct {
				Rule    string `json:"rule"`
				At      string `json:"at"`
				Message string `json:"message"`
			}
			if err := elems.Value().Decode(&f); err != nil {
				continue
			}
			p := Problem{
				Pos:     posOf(pv.LookupPath(cue.ParsePath(f.At))),
				Rule:    f.Rule,
				Message: f.Message,
			}
			if isSchemaFile(p.Pos) {
				p.Pos = studyPos(pv, id.Variant, f.At, p.Pos)
			}
			if strings.HasPrefix(f.Message, id.Env+": ") {
				out = append(out, p)
				continue
			}
			for _, prefix := range []string{id.Entrant + " on " + id.Env + ": ", id.Entrant + ": "} {
				p.Message = strings.TrimPrefix(p.Message, prefix)
			}
			p.Plans = []PlanID{id}
			out = append(out, p)
		}
	}
	return out
}

// studyPos blames a problem of a study's point on the study that made it:
// the point's variant is generated by the schema, so its own position is
// the schema's.
func studyPos(pv cue.Value, variant, at, pos string) string {
	prefix := "entrant.variants." + strconv.Quote(variant)
	rest, ok := strings.CutPrefix(at, prefix)
	if !ok {
		return pos
	}
	study, err := pv.LookupPath(cue.ParsePath(prefix + ".study")).String()
	if err != nil {
		return pos
	}
	base := "entrant.studies." + strconv.Quote(study)
	candidates := []string{base}
	if knob, ok := strings.CutPrefix(rest, ".set."); ok {
		candidates = []string{base + ".grid." + knob, base + ".points", base}
	}
	for _, c := range candidates {
		if p := posOf(pv.LookupPath(cue.ParsePath(c))); p != "" && !isSchemaFile(p) {
			return p
		}
	}
	return pos
}

// site is the value a CUE error's field paths are relative to: a plan, or
// an environment on its own.
type site struct {
	// locate finds a position for a field path when the error itself
	// only points into the schema (an error("…") check).
	locate func(field string) string
	// value is a field's value there.
	value func(field string) cue.Value
}

// planSite finds the nearest author-written position of a field path in
// the plan, walking up to its parents; a field of the entrant or
// environment that none of its parents places (a required block left out)
// is blamed on that file's name line, where the author declared it.
func planSite(pv cue.Value) *site {
	value := func(field string) cue.Value { return pv.LookupPath(cue.ParsePath(field)) }
	return &site{value: value, locate: func(field string) string {
		owner := ""
		for _, o := range []string{"entrant", "env"} {
			if strings.HasPrefix(field, o+".") {
				owner = o
			}
		}
		// Not the owner itself: its file's name line is nearer the author.
		for field != "" && field != owner {
			if pos := posOf(pv.LookupPath(cue.ParsePath(field))); pos != "" && !isSchemaFile(pos) {
				return pos
			}
			i := strings.LastIndex(field, ".")
			if i < 0 {
				break
			}
			field = field[:i]
		}
		if owner != "" {
			if pos := posOf(pv.LookupPath(cue.ParsePath(owner + ".name"))); !isSchemaFile(pos) {
				return pos
			}
		}
		return ""
	}}
}

// envSite finds the nearest position in an environment's own file for a
// field path of a plan ("env.infra.clickhouse"); a missing field is
// blamed on the block that should hold it.
func envSite(env cue.Value) *site {
	value := func(field string) cue.Value { return env.LookupPath(cue.ParsePath(strings.TrimPrefix(field, "env."))) }
	return &site{value: value, locate: func(field string) string {
		field = strings.TrimPrefix(field, "env.")
		for field != "" {
			if pos := posOf(env.LookupPath(cue.ParsePath(field))); pos != "" && !isSchemaFile(pos) {
				return pos
			}
			i := strings.LastIndex(field, ".")
			if i < 0 {
				break
			}
			field = field[:i]
		}
		return posOf(env.LookupPath(cue.ParsePath("name")))
	}}
}

// Dedupe reports each problem once, in the order first found: the same
// problem at the same line in several plans (an entrant's unknown field is
// one in each of its variants and environments) becomes one problem that
// names them all.
func Dedupe(ps []Problem) []Problem {
	type key struct{ pos, rule, message string }
	at := map[key]int{}
	var out []Problem
	for _, p := range ps {
		k := key{p.Pos, p.Rule, p.Message}
		i, seen := at[k]
		if !seen {
			at[k] = len(out)
			out = append(out, Problem{Pos: p.Pos, Rule: p.Rule, Message: p.Message, Plans: slices.Clone(p.Plans)})
			continue
		}
		for _, id := range p.Plans {
			if !slices.Contains(out[i].Plans, id) {
				out[i].Plans = append(out[i].Plans, id)
			}
		}
	}
	return out
}

func dedupe(ps []Problem) []Problem {
	seen := map[string]bool{}
	out := ps[:0]
	for _, p := range ps {
		k := p.String()
		if !seen[k] {
			seen[k] = true
			out = append(out, p)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Pos < out[j].Pos })
	return out
}

// decodedEnv decodes an environment once and keeps it for every plan of it.
func (t *Tree) decodedEnv(name string) (*schema.Environment, error) {
	if e, ok := t.decoded[name]; ok {
		return e, nil
	}
	var e schema.Environment
	if err := t.envs[name].value.Decode(&e); err != nil {
		return nil, err
	}
	for wn, w := range e.Workloads {
		v, err := workloads.Version(w)
		if err != nil {
			return nil, err
		}
		w.DatasetVersion = v
		e.Workloads[wn] = w
	}
	t.decoded[name] = &e
	return &e, nil
}

// allPlansValid reports whether every plan built with the tree is concrete
// and free of errors: one validation of them all costs less than one of
// each.
func (t *Tree) allPlansValid() bool {
	if t.plansValid == nil {
		ok := t.plans.Validate(cue.Concrete(true)) == nil
		t.plansValid = &ok
	}
	return *t.plansValid
}
