package report

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"spatec.dev/spatec/runs/record"
)

// rank orders a section's arms by the median of the rate it ranks by
// (RankedBy, spatec's rate, for a section of spatec's runs; the reference
// harness's for a joint one), picks the baseline, and computes ratios and
// ties.
//
// Two arms are tied when their [min, max] ranges overlap, or when their
// medians differ by less than the instrument's resolution (the coarser of
// the two arms' sampler period over window). Tied arms share a rank: the
// data cannot say which is faster, so the report does not either.
func rank(sec *Section, baseline string) {
	by := sec.rankedBy()
	slices.SortFunc(sec.Arms, func(a, b *Arm) int {
		ta, tb := a.Metrics[by], b.Metrics[by]
		switch {
		case ta != nil && tb != nil:
			return cmp.Or(cmp.Compare(tb.Median, ta.Median), cmp.Compare(a.Label, b.Label))
		case ta != nil:
			return -1
		case tb != nil:
			return 1
		}
		return cmp.Compare(a.Label, b.Label)
	})

	var ranked []*Arm
	for _, a := range sec.Arms {
		if a.Metrics[by] != nil {
			ranked = append(ranked, a)
		}
	}
	for i, a := range ranked {
		a.Rank = i + 1
		if i > 0 && tied(ranked[i-1], a, by) {
			a.Rank = ranked[i-1].Rank
		}
		for _, b := range ranked {
			if b != a && tied(a, b, by) {
				a.Tied = true
				a.TiedWith = append(a.TiedWith, b.Label)
			}
		}
	}

	base, why := chooseBaseline(ranked, baseline, by)
	if base == nil {
		sec.BaselineWhy = why
		return
	}
	sec.Baseline, sec.BaselineWhy = base.Label, why
	bt := base.Metrics[by].Median
	for _, a := range ranked {
		if bt > 0 {
			a.Ratio = a.Metrics[by].Median / bt
		}
		switch {
		case a == base:
			a.VsBaseline = "baseline"
		case tied(a, base, by):
			a.VsBaseline = "tied"
		case a.Ratio > 0:
			a.VsBaseline = fmt.Sprintf("%.2f×", a.Ratio)
		}
	}
}

func tied(a, b *Arm, by string) bool {
	x, y := a.Metrics[by], b.Metrics[by]
	if x == nil || y == nil {
		return false
	}
	if x.Min <= y.Max && y.Min <= x.Max {
		return true
	}
	hi := math.Max(math.Abs(x.Median), math.Abs(y.Median))
	if hi == 0 {
		return true
	}
	return math.Abs(x.Median-y.Median)/hi < math.Max(a.Resolution, b.Resolution)
}

// chooseBaseline finds the requested arm, or falls back to the leader: the
// fastest arm whose every run was ok, since an infra_bound or partly failed
// arm is a poor yardstick. When no arm is entirely ok, the fastest arm is
// used and the reason says so.
func chooseBaseline(ranked []*Arm, requested, by string) (*Arm, string) {
	// The rate's name, where it is not spatec's rows/s.
	rate := "rows/s"
	if by != RankedBy {
		rate = by
	}
	if len(ranked) == 0 {
		return nil, fmt.Sprintf("no arm has a %s measurement, so there is no baseline", rate)
	}
	fallback := ""
	if requested != "" {
		var matches []*Arm
		for _, a := range ranked {
			if a.Label == requested {
				matches = []*Arm{a}
				break
			}
			if a.Entrant == requested {
				matches = append(matches, a)
			}
		}
		switch len(matches) {
		case 1:
			return matches[0], "chosen baseline"
		case 0:
			fallback = fmt.Sprintf("the chosen baseline %q has no %s measurement in this section; ", requested, rate)
		default:
			var labels []string
			for _, m := range matches {
				labels = append(labels, m.Label)
			}
			fallback = fmt.Sprintf("the chosen baseline %q matches %s (name one as entrant:variant); ", requested, strings.Join(labels, ", "))
		}
	}
	for _, a := range ranked {
		if a.Status == record.StatusOK {
			return a, fallback + "leader by median " + rate
		}
	}
	return ranked[0], fallback + "leader by median " + rate + " (no arm has only ok runs)"
}
