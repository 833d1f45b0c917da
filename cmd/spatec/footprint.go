package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"text/tabwriter"

	"spatec.dev/spatec/compiler"
	"spatec.dev/spatec/exec"
	"spatec.dev/spatec/internal/nearest"
	"spatec.dev/spatec/runs/footprint"
	"spatec.dev/spatec/runs/record"
	"spatec.dev/spatec/schema"
)

// cmdFootprint runs a footprint study: the arm's data-plane cap stepped
// down from the envelope until it degrades, then bisected, every point's
// repetitions interleaved with the others of its round.
func cmdFootprint(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("footprint", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f execFlags
	f.register(fs)
	reps := fs.Int("reps", 0, "repetitions of every point (default: the study's)")
	args, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if f.env == "" || len(args) != 1 || !strings.Contains(args[0], ":") {
		return usageError{"usage: spatec footprint --env E entrant:study [--reps N]"}
	}
	if *reps < 0 {
		return usageError{"--reps must be at least 1"}
	}
	t, err := loadTree(f.tree)
	if err != nil {
		return err
	}
	entrant, name, _ := strings.Cut(args[0], ":")
	if err := checkNames(t, f.env, []string{entrant}); err != nil {
		return err
	}
	base, problems := t.Resolve(f.env, entrant, "")
	if len(problems) > 0 {
		return refusal{fmt.Errorf("the plan violates the contract:\n%s", problemLines(problems))}
	}
	decl, ok := base.Entrant.Footprints[name]
	if !ok {
		names := slices.Sorted(maps.Keys(base.Entrant.Footprints))
		msg := fmt.Sprintf("entrant %s has no footprint study %q", entrant, name)
		if len(names) == 0 {
			return usageError{msg + "; it declares none (footprints: in its CUE)"}
		}
		return usageError{fmt.Sprintf("%s; it has: %s", msg, strings.Join(nearest.Sorted(name, names), ", "))}
	}
	study := studyOf(base, decl)
	if *reps > 0 {
		study.Reps = *reps
	}
	if err := study.Check(); err != nil {
		return refusal{fmt.Errorf("footprint study %s: %w", name, err)}
	}
	sched := &footprintSchedule{t: t, env: f.env, entrant: entrant, name: name, study: study,
		search: footprint.New(study), tree: cmp.Or(f.tree, findCheckout())}
	fmt.Fprintf(stderr, "footprint %s:%s on %s: %s from %s down to %s (×%.2f a rung), then bisected until the gap is within %s; %d reps a point\n",
		entrant, name, f.env, study.Axis, study.Show(study.Full), study.Show(study.Floor), study.Step, study.Show(study.Resolution), study.Reps)
	err = runSeries(ctx, f, []*schema.Plan{base}, sched, 0, record.EvidenceExploratory, stdout, stderr)
	writeVerdict(stdout, study, sched.search.Result(), base)
	// A degraded point is the study's finding, not a failure of the
	// command: only what stopped the study is.
	var prob problemsError
	if errors.As(err, &prob) {
		return nil
	}
	return err
}

// studyOf reads a declared footprint study against its plan's envelope.
func studyOf(p *schema.Plan, d schema.Footprint) footprint.Study {
	full := p.Env.Envelope.CPUs
	if d.Axis == schema.AxisMemory {
		full = float64(p.Env.Envelope.Memory)
	}
	return footprint.Study{Axis: d.Axis, Full: full, Floor: d.Floor, Step: d.Step,
		Resolution: d.Resolution, Fraction: d.Fraction, Reps: d.Reps}
}

// footprintSchedule is a footprint study's search as a schedule: each
// round's caps resolved into plans by the contract, each run's outcome
// handed back to the search.
type footprintSchedule struct {
	t                  *compiler.Tree
	env, entrant, name string
	study              footprint.Study
	search             *footprint.Search
	tree               string
	done               int
}

func (s *footprintSchedule) round() ([]armSpec, int, bool) {
	for {
		caps := s.search.Round()
		if caps == nil {
			return nil, 0, false
		}
		var arms []armSpec
		for _, c := range caps {
			p, problems := s.t.ResolveFootprint(s.env, s.entrant, s.name, c)
			if len(problems) == 0 {
				if err := pinSources(s.tree, []*schema.Plan{p}); err != nil {
					problems = []compiler.Problem{{Rule: "C16", Message: err.Error()}}
				}
			}
			if len(problems) > 0 {
				// The contract refuses the point's plan (a JVM heap below its
				// floor, say): it is a finding at that cap, run nowhere.
				for range s.study.Reps {
					s.search.Add(footprint.Run{Cap: c, Kind: footprint.KindRefused, Why: "REFUSED: " + problemLines(problems)})
				}
				continue
			}
			arms = append(arms, armSpec{plan: p})
		}
		if len(arms) > 0 {
			return arms, s.study.Reps, true
		}
	}
}

func (s *footprintSchedule) ran(a armSpec, res *exec.Result, err error) {
	s.done++
	if res == nil {
		s.search.Add(footprint.Run{Cap: a.plan.Footprint.Cap, Kind: footprint.KindFailure, Why: fmt.Sprint(err)})
		return
	}
	s.search.Add(footprint.RunOf(&res.Record))
}

// total estimates the whole study: the ladder, and the bisection rounds
// its widest gap needs at the resolution.
func (s *footprintSchedule) total() int {
	l := s.study.Ladder()
	gap := l[0] - l[1]
	rounds := int(math.Ceil(math.Log2(max(gap/s.study.Resolution, 1))))
	return max(s.done+s.study.Reps, (len(l)+rounds)*s.study.Reps)
}

// writeVerdict prints what the study found: every point, then the
// smallest cap that held, how the next degraded, and the recommendation.
func writeVerdict(w io.Writer, s footprint.Study, res footprint.Result, p *schema.Plan) {
	fmt.Fprintf(w, "\nfootprint of %s on %s (%s; degraded below %.2f× the envelope's rate):\n", p.Entrant.Name, p.Env.Name, s.Axis, s.Fraction)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CAP\tRUNS\tROWS/S (MEDIAN)\tRANGE\tVERDICT")
	for _, pt := range res.Points {
		verdict := "holds"
		if pt.Degraded {
			verdict = pt.Kind + ": " + pt.Why
		}
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.0f–%.0f\t%s\n", s.Show(pt.Cap), len(pt.Runs), pt.Median, pt.Min, pt.Max, verdict)
	}
	tw.Flush()
	for _, line := range footprint.Findings(s, res) {
		fmt.Fprintln(w, line)
	}
}

// problemLines joins problems one a line.
func problemLines(ps []compiler.Problem) string {
	msgs := make([]string, len(ps))
	for i, p := range ps {
		msgs[i] = p.String()
	}
	return strings.Join(msgs, "\n")
}
