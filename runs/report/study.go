package report

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"spatec.dev/spatec/runs/record"
)

// DefaultKnee is the fraction of the best throughput within which the
// cheapest point of a study is recommended over the fastest.
const DefaultKnee = 0.02

// Study is a sweep as the report reads it: the arms of one entrant's study
// in one section, laid out along the knobs that vary between them.
type Study struct {
	Entrant string `json:"entrant"`
	Name    string `json:"name"`
	// Axes are the knobs whose values differ between the points, sorted;
	// Values holds each one's values in ascending order.
	Axes   []string         `json:"axes"`
	Values map[string][]any `json:"values"`
	Points []*Point         `json:"points"`
	all    []*Arm
	// Best is the measured point with the highest median rows/s.
	Best *Point `json:"best,omitempty"`
	// Knee is the recommended point: the cheapest (by peak memory, then
	// cores) within Fraction of the best throughput; KneeWhy gives the
	// numbers that justify it.
	Knee     *Point  `json:"knee,omitempty"`
	KneeWhy  string  `json:"knee_why,omitempty"`
	Fraction float64 `json:"fraction"`
	// Anomalies lists every step along an axis that goes against the
	// others, beyond the points' own spread: stated, never smoothed.
	Anomalies []string `json:"anomalies,omitempty"`
	// Interactions gives, for each ordered pair of axes, the gain from one
	// axis's first value to its last at each value of the other.
	Interactions []string `json:"interactions,omitempty"`
	// Sizes are the dataset sizes the points ran at, smallest first; the
	// surface and the knee are at the largest. Scale sets each point's cost
	// per row at every size side by side, and ScaleFindings says where it
	// grows with the size beyond the spread.
	Sizes         []int64    `json:"sizes,omitempty"`
	Scale         []ScaleRow `json:"scale,omitempty"`
	ScaleFindings []string   `json:"scale_findings,omitempty"`
}

// ScaleRow is one point of a study at every dataset size it ran at.
type ScaleRow struct {
	Setting string
	// Cost is the median core-microseconds a row costs the arm at each of
	// Study.Sizes (cores used × window ÷ rows); 0 where not measured.
	Cost []float64
	// Spread is the largest spread of those medians' runs.
	Spread float64
	// Growth is the cost at the largest size over the cost at the
	// smallest.
	Growth float64
}

// Point is one arm of a study.
type Point struct {
	Label string         `json:"label"`
	Knobs map[string]any `json:"knobs"`
	// Rows, Peak and Cores are the medians of rows/s, arm anon+shmem peak
	// and arm cores; Measured is false when no run of it measured.
	Rows, RowsMin, RowsMax float64
	Peak, Cores            float64
	Measured               bool `json:"measured"`
	arm                    *Arm
}

// studies finds the studies among a section's arms. sizes are the
// sections of the same conditions at other dataset sizes: a study's scale
// check is shown in the largest one.
func studies(sec *Section, sizes []*Section, knee float64) []*Study {
	if knee <= 0 {
		knee = DefaultKnee
	}
	byName := map[[2]string]*Study{}
	arms := slices.Clone(sec.Arms)
	for _, other := range sizes {
		if other.Messages > sec.Messages {
			sizes = nil // the scale check is shown where the size is largest
			break
		}
	}
	for _, other := range sizes {
		arms = append(arms, other.Arms...)
	}
	for _, a := range arms {
		if a.Study == "" {
			continue
		}
		k := [2]string{a.Entrant, a.Study}
		st := byName[k]
		if st == nil {
			st = &Study{Entrant: a.Entrant, Name: a.Study, Fraction: knee, Values: map[string][]any{}}
			byName[k] = st
		}
		st.all = append(st.all, a)
		if !slices.Contains(st.Sizes, a.Messages) {
			st.Sizes = append(st.Sizes, a.Messages)
		}
	}
	for _, st := range byName {
		slices.Sort(st.Sizes)
		for _, a := range st.all {
			if a.Messages == st.Sizes[len(st.Sizes)-1] {
				st.Points = append(st.Points, studyPoint(a))
			}
		}
	}
	var out []*Study
	for _, k := range slices.SortedFunc(maps.Keys(byName), func(a, b [2]string) int {
		return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1]))
	}) {
		st := byName[k]
		st.layout()
		st.recommend()
		st.anomalies()
		st.interactions()
		st.scale()
		out = append(out, st)
	}
	return out
}

// studyPoint reads a point's medians off its arm.
func studyPoint(a *Arm) *Point {
	p := &Point{Label: a.Label, Knobs: a.Knobs, arm: a}
	if r := a.Metrics[record.RowsPerS]; r != nil {
		p.Rows, p.RowsMin, p.RowsMax, p.Measured = r.Median, r.Min, r.Max, true
	}
	if m := a.Metrics[record.PeakAnonBytes]; m != nil {
		p.Peak = m.Median
	}
	if m := a.Metrics[record.CoresUsed]; m != nil {
		p.Cores = m.Median
	}
	return p
}

// scale sets each point's cost per row at every size side by side. The
// corpus's first N messages are a valid dataset of N, so a point's cost
// per row should not grow with N; where it does beyond the runs' spread,
// that is a finding (something in the arm grows with what it has seen).
func (st *Study) scale() {
	if len(st.Sizes) < 2 {
		return
	}
	bySetting := map[string][]*Arm{}
	var order []string
	for _, a := range st.all {
		s := st.setting(&Point{Knobs: a.Knobs})
		if bySetting[s] == nil {
			order = append(order, s)
		}
		bySetting[s] = append(bySetting[s], a)
	}
	slices.SortFunc(order, func(x, y string) int {
		a, b := bySetting[x][0], bySetting[y][0]
		for _, ax := range st.Axes {
			if c := compareValues(a.Knobs[ax], b.Knobs[ax]); c != 0 {
				return c
			}
		}
		return 0
	})
	for _, s := range order {
		row := ScaleRow{Setting: s, Cost: make([]float64, len(st.Sizes))}
		for _, a := range bySetting[s] {
			i := slices.Index(st.Sizes, a.Messages)
			if c := a.Metrics[CoreMicrosPerRow]; c != nil {
				row.Cost[i] = c.Median
				row.Spread = max(row.Spread, c.Spread)
			}
		}
		first, last := row.Cost[0], row.Cost[len(row.Cost)-1]
		if first > 0 && last > 0 {
			row.Growth = last / first
			if row.Growth > 1+row.Spread {
				st.ScaleFindings = append(st.ScaleFindings, fmt.Sprintf("%s: a row costs %.2f× as much at %s messages as at %s (%.2f against %.2f core-µs), beyond the runs' %s spread: super-linear",
					s, row.Growth, human(float64(st.Sizes[len(st.Sizes)-1])), human(float64(st.Sizes[0])), last, first, pct(row.Spread)))
			}
		}
		st.Scale = append(st.Scale, row)
	}
}

// layout finds the axes: the knobs whose values differ between points.
func (st *Study) layout() {
	seen := map[string]map[string]any{}
	for _, p := range st.Points {
		for k, v := range p.Knobs {
			if seen[k] == nil {
				seen[k] = map[string]any{}
			}
			seen[k][fmt.Sprint(v)] = v
		}
	}
	for _, k := range slices.Sorted(maps.Keys(seen)) {
		if len(seen[k]) < 2 {
			continue
		}
		st.Axes = append(st.Axes, k)
		vals := slices.Collect(maps.Values(seen[k]))
		slices.SortFunc(vals, compareValues)
		st.Values[k] = vals
	}
	slices.SortFunc(st.Points, func(a, b *Point) int {
		for _, ax := range st.Axes {
			if c := compareValues(a.Knobs[ax], b.Knobs[ax]); c != 0 {
				return c
			}
		}
		return 0
	})
}

// compareValues orders knob values: numbers by value, anything else by
// its text.
func compareValues(a, b any) int {
	fa, oka := a.(float64)
	fb, okb := b.(float64)
	if oka && okb {
		return cmp.Compare(fa, fb)
	}
	return cmp.Compare(fmt.Sprint(a), fmt.Sprint(b))
}

// setting names a point by its axes: "batch_rows=20000, flush_ms=500".
func (st *Study) setting(p *Point) string {
	parts := make([]string, len(st.Axes))
	for i, ax := range st.Axes {
		parts[i] = fmt.Sprintf("%s=%v", ax, p.Knobs[ax])
	}
	return strings.Join(parts, ", ")
}

// recommend picks the knee: not the peak, but the cheapest point whose
// throughput is within the fraction of the best.
func (st *Study) recommend() {
	for _, p := range st.Points {
		if p.Measured && (st.Best == nil || p.Rows > st.Best.Rows) {
			st.Best = p
		}
	}
	if st.Best == nil {
		return
	}
	floor := st.Best.Rows * (1 - st.Fraction)
	for _, p := range st.Points {
		if !p.Measured || p.Rows < floor {
			continue
		}
		if st.Knee == nil || p.Peak < st.Knee.Peak || p.Peak == st.Knee.Peak && p.Cores < st.Knee.Cores {
			st.Knee = p
		}
	}
	k, b := st.Knee, st.Best
	if k == b {
		st.KneeWhy = fmt.Sprintf("%s is both the fastest (%s rows/s) and, of the points within %s of it, the cheapest (%s peak, %s cores)",
			st.setting(k), human(k.Rows), pct(st.Fraction), bytesText(k.Peak), trim(k.Cores))
		return
	}
	st.KneeWhy = fmt.Sprintf("%s gives %s rows/s, %s of the best (%s at %s), with a peak of %s against %s and %s cores against %s",
		st.setting(k), human(k.Rows), pct(k.Rows/b.Rows), human(b.Rows), st.setting(b),
		bytesText(k.Peak), bytesText(b.Peak), trim(k.Cores), trim(b.Cores))
}

// anomalies walks every axis with the other axes held, and states each
// run of steps that changes direction beyond the points' own spread.
func (st *Study) anomalies() {
	for _, ax := range st.Axes {
		for _, line := range st.lines(ax) {
			var steps []int // +1 up, -1 down, 0 within the spread
			for i := 1; i < len(line.points); i++ {
				a, b := line.points[i-1], line.points[i]
				noise := (a.RowsMax-a.RowsMin)/2 + (b.RowsMax-b.RowsMin)/2
				switch d := b.Rows - a.Rows; {
				case d > noise:
					steps = append(steps, 1)
				case -d > noise:
					steps = append(steps, -1)
				default:
					steps = append(steps, 0)
				}
			}
			if !slices.Contains(steps, 1) || !slices.Contains(steps, -1) {
				continue
			}
			vals := make([]string, len(line.points))
			for i, p := range line.points {
				vals[i] = fmt.Sprintf("%v: %s", p.Knobs[ax], human(p.Rows))
			}
			where := ""
			if line.held != "" {
				where = " at " + line.held
			}
			st.Anomalies = append(st.Anomalies, fmt.Sprintf("rows/s along %s%s is not monotonic: %s", ax, where, strings.Join(vals, " → ")))
		}
	}
}

// axisLine is the measured points along one axis with the others held.
type axisLine struct {
	held   string
	points []*Point
}

// lines lists, for an axis, one line per setting of the other axes.
func (st *Study) lines(ax string) []axisLine {
	var order []string
	by := map[string]*axisLine{}
	for _, p := range st.Points {
		if !p.Measured {
			continue
		}
		var held []string
		for _, other := range st.Axes {
			if other != ax {
				held = append(held, fmt.Sprintf("%s=%v", other, p.Knobs[other]))
			}
		}
		k := strings.Join(held, ", ")
		if by[k] == nil {
			by[k] = &axisLine{held: k}
			order = append(order, k)
		}
		by[k].points = append(by[k].points, p)
	}
	out := make([]axisLine, len(order))
	for i, k := range order {
		l := *by[k]
		slices.SortFunc(l.points, func(a, b *Point) int { return compareValues(a.Knobs[ax], b.Knobs[ax]) })
		out[i] = l
	}
	return out
}

// interactions states, for each pair of axes, how much one axis's sweep
// gains at each value of the other: equal gains mean the knobs act apart.
func (st *Study) interactions() {
	for _, a := range st.Axes {
		for _, b := range st.Axes {
			if a == b {
				continue
			}
			vals := st.Values[a]
			var parts []string
			for _, bv := range st.Values[b] {
				first, last := st.find(a, vals[0], b, bv), st.find(a, vals[len(vals)-1], b, bv)
				if first == nil || last == nil || first.Rows == 0 {
					continue
				}
				parts = append(parts, fmt.Sprintf("%.2f× at %s=%v", last.Rows/first.Rows, b, bv))
			}
			if len(parts) > 1 {
				st.Interactions = append(st.Interactions, fmt.Sprintf("%s %v → %v gains %s", a, vals[0], vals[len(vals)-1], strings.Join(parts, ", ")))
			}
		}
	}
}

// find is the measured point with a=av and b=bv, when there is exactly
// one (a study of two axes; with more, the other axes must agree too and
// a pair does not pick one point).
func (st *Study) find(a string, av any, b string, bv any) *Point {
	var found *Point
	for _, p := range st.Points {
		if p.Measured && fmt.Sprint(p.Knobs[a]) == fmt.Sprint(av) && fmt.Sprint(p.Knobs[b]) == fmt.Sprint(bv) {
			if found != nil {
				return nil
			}
			found = p
		}
	}
	return found
}

// Surface is a study laid out as tables: rows along the first axis,
// columns along the second, one table per value of a third.
type Surface struct {
	Title   string
	RowAxis string
	ColAxis string
	Cols    []any
	Rows    []SurfaceRow
}

// SurfaceRow is one value of the row axis.
type SurfaceRow struct {
	Value any
	Cells []*Point
}

// Surfaces lays the study out for the page.
func (st *Study) Surfaces() []Surface {
	if len(st.Axes) == 0 {
		return nil
	}
	rowAxis, colAxis := st.Axes[0], ""
	cols := []any{nil}
	if len(st.Axes) > 1 {
		colAxis = st.Axes[1]
		cols = st.Values[colAxis]
	}
	pages := []any{nil}
	pageAxis := ""
	if len(st.Axes) > 2 {
		pageAxis = st.Axes[2]
		pages = st.Values[pageAxis]
	}
	var out []Surface
	for _, pv := range pages {
		s := Surface{RowAxis: rowAxis, ColAxis: colAxis, Cols: cols}
		if pageAxis != "" {
			s.Title = fmt.Sprintf("%s=%v", pageAxis, pv)
		}
		for _, rv := range st.Values[rowAxis] {
			row := SurfaceRow{Value: rv}
			for _, cv := range cols {
				var cell *Point
				for _, p := range st.Points {
					if fmt.Sprint(p.Knobs[rowAxis]) == fmt.Sprint(rv) &&
						(colAxis == "" || fmt.Sprint(p.Knobs[colAxis]) == fmt.Sprint(cv)) &&
						(pageAxis == "" || fmt.Sprint(p.Knobs[pageAxis]) == fmt.Sprint(pv)) {
						cell = p
					}
				}
				row.Cells = append(row.Cells, cell)
			}
			s.Rows = append(s.Rows, row)
		}
		out = append(out, s)
	}
	return out
}

// human writes a rate with a k or M suffix.
func human(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case a >= 1e3:
		return fmt.Sprintf("%.1fk", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}

func pct(f float64) string { return fmt.Sprintf("%.1f%%", 100*f) }

func trim(v float64) string { return fmt.Sprintf("%.2f", v) }

// bytesText writes a byte count in MiB or GiB.
func bytesText(v float64) string {
	if v >= 1<<30 {
		return fmt.Sprintf("%.2f GiB", v/(1<<30))
	}
	return fmt.Sprintf("%.0f MiB", v/(1<<20))
}
