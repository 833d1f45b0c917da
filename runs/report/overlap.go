package report

import (
	"fmt"
	"strings"

	"spatec.dev/spatec/runs/record"
)

// overlap says whether two condition sets of one environment (two
// environment digests, two harness versions, two sittings) can be set side
// by side: only an arm measured in both, agreeing within its spread, shows
// that what changed between them did not move the numbers. Without one
// they stay apart.
func overlap(a, b *Section) string {
	var agree, disagree []string
	for _, x := range a.Arms {
		for _, y := range b.Arms {
			if x.Label != y.Label {
				continue
			}
			sx, sy := x.Metrics[record.RowsPerS], y.Metrics[record.RowsPerS]
			if sx == nil || sy == nil {
				continue
			}
			// Their min–max ranges meet: the two sets measure this
			// point alike, within what each repetition varies.
			line := fmt.Sprintf("%s %s [%s–%s] in %s, %s [%s–%s] in %s",
				x.Label, human(sx.Median), human(sx.Min), human(sx.Max), a.ID, human(sy.Median), human(sy.Min), human(sy.Max), b.ID)
			if sx.Min <= sy.Max && sy.Min <= sx.Max {
				agree = append(agree, line)
			} else {
				disagree = append(disagree, line)
			}
		}
	}
	switch {
	case len(agree) == 0 && len(disagree) == 0:
		return fmt.Sprintf("no arm is measured in both %s and %s: without an overlap point they stay separate (not comparable)", a.ID, b.ID)
	case len(disagree) > 0:
		return fmt.Sprintf("overlap with %s disagrees: %s; the conditions moved the numbers, so the sets stay separate", b.ID, strings.Join(disagree, "; "))
	}
	return fmt.Sprintf("overlap with %s agrees within the spread: %s; the sets may be read side by side, each within its own conditions", b.ID, strings.Join(agree, "; "))
}
