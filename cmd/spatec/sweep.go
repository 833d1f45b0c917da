package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"spatec.dev/spatec/compiler"
	"spatec.dev/spatec/internal/nearest"
	"spatec.dev/spatec/runs/record"
)

// cmdSweep runs every point of a study, each point × repetition once,
// interleaved so that drift over the sitting spreads over every point
// rather than biasing the last ones.
func cmdSweep(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("sweep", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f execFlags
	f.register(fs)
	reps := fs.Int("reps", 2, "repetitions of every point")
	args, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if f.env == "" || len(args) != 1 || !strings.Contains(args[0], ":") {
		return usageError{"usage: spatec sweep --env E entrant:study [--reps N]"}
	}
	if *reps < 1 {
		return usageError{"--reps must be at least 1"}
	}
	t, err := loadTree(f.tree)
	if err != nil {
		return err
	}
	entrant, study, _ := strings.Cut(args[0], ":")
	if err := checkNames(t, f.env, []string{entrant}); err != nil {
		return err
	}
	points := t.StudyPoints(entrant, study)
	if len(points) == 0 {
		studies := t.Studies(entrant)
		msg := fmt.Sprintf("entrant %s has no study %q", entrant, study)
		if len(studies) == 0 {
			return usageError{msg + "; it declares none (studies: in its CUE)"}
		}
		return usageError{fmt.Sprintf("%s; it has: %s", msg, strings.Join(nearest.Sorted(study, studies), ", "))}
	}
	ids := make([]compiler.PlanID, len(points))
	for i, v := range points {
		ids[i] = compiler.PlanID{Env: f.env, Entrant: entrant, Variant: v}
	}
	plans, problems := resolveAll(t, ids)
	if len(problems) > 0 {
		return refusal{fmt.Errorf("the study violates the contract:\n%s", problemLines(problems))}
	}
	// Each point at each size of the scale check, the smallest first.
	sizes := t.StudySizes(f.env, entrant, study)
	if len(sizes) == 0 {
		sizes = []int64{0}
	}
	var runs []armSpec
	for _, n := range sizes {
		for _, p := range plans {
			runs = append(runs, armSpec{plan: p, messages: n})
		}
	}
	fmt.Fprintf(stderr, "sweep %s:%s on %s: %d points × %d sizes × %d reps = %d runs\n", entrant, study, f.env, len(plans), len(sizes), *reps, len(runs)**reps)
	return runArms(ctx, f, runs, *reps, 0, record.EvidenceExploratory, stdout, stderr)
}
