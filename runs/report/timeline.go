package report

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"spatec.dev/spatec/runs/record"
)

// maxTimelines bounds the runs of an arm whose series a report reads: the
// last ones measured. A report over years of records reads a handful of
// series files an arm, not every one.
const maxTimelines = 5

// Timeline names one run's series file, read when its chart is drawn.
type Timeline struct {
	Log   string // the results file the record is in
	RunID string
	Rep   int
	Ref   record.SeriesRef
}

// TimeChart is one chart over the window: every repetition's line, thin,
// and their median, bold, for each quantity drawn.
type TimeChart struct {
	ID, Title, Subtitle string
	Width, Height       int
	PlotX, PlotY        float64
	PlotW, PlotH        float64
	XTicks, YTicks      []tick
	Lines               []TimeLine
	Legend              []string // the classes drawn, in order, for the key
	Notes               []string // series that could not be read, and why
}

// TimeLine is one polyline of a chart.
type TimeLine struct {
	Class  string // the quantity: rows, data-plane, control-plane, infra, memory
	Median bool
	Points string // SVG polyline points
	Title  string
}

// curve is one quantity of one run over the window: seconds and values.
type curve struct{ t, v []float64 }

// timeCharts draws the charts over time of every arm of a section that
// kept its series.
func timeCharts(sec *Section) []TimeChart {
	var out []TimeChart
	for i, a := range sec.Arms {
		if len(a.Timelines) == 0 {
			continue
		}
		runs := map[string][]curve{}
		var notes []string
		for _, tl := range a.Timelines {
			s, err := record.ReadSeries(tl.Log, tl.RunID, tl.Ref)
			if err != nil {
				notes = append(notes, fmt.Sprintf("rep %d (run %s): %v", tl.Rep, tl.RunID, err))
				continue
			}
			for class, c := range curves(s) {
				runs[class] = append(runs[class], c)
			}
		}
		id := fmt.Sprintf("%s-t%d", sec.ID, i+1)
		n := len(a.Timelines) - len(notes)
		sub := fmt.Sprintf("%d of %s, thin; their median, bold", n, plural(a.Measured, "measured run"))
		out = append(out,
			drawTime(id+"-rows", a.Label+": rows landed", sub, "rows", runs, []string{"rows"}, notes),
			drawTime(id+"-cpu", a.Label+": cores used", sub, "cores", runs, []string{"data-plane", "control-plane", "infra"}, notes),
			drawTime(id+"-mem", a.Label+": arm anon+shmem", sub, "bytes", runs, []string{"memory"}, notes),
		)
	}
	return out
}

// curves turns a series into the quantities drawn: rows landed, cores used
// by each role over each sampling interval, and the arm's anon+shmem.
func curves(s *record.Series) map[string]curve {
	out := map[string]curve{}
	rows := curve{}
	for i, t := range s.Rows.OffsetsMS {
		rows.t = append(rows.t, float64(t)/1000)
		rows.v = append(rows.v, float64(s.Rows.Landed[i]))
	}
	out["rows"] = rows
	for _, role := range []string{"data-plane", "control-plane", "infra"} {
		var c curve
		for i := 1; i < len(s.OffsetsMS); i++ {
			dt := float64(s.OffsetsMS[i]-s.OffsetsMS[i-1]) / 1000
			sum, ok, any := 0.0, dt > 0, false
			for _, sc := range s.Containers {
				if sc.Role != role {
					continue
				}
				any = true
				a, b := sc.CPUUsageNs[i-1], sc.CPUUsageNs[i]
				if a < 0 || b < 0 {
					ok = false
					break
				}
				sum += float64(b-a) / 1e9 / dt
			}
			if any && ok {
				c.t = append(c.t, float64(s.OffsetsMS[i])/1000)
				c.v = append(c.v, sum)
			}
		}
		if len(c.t) > 0 {
			out[role] = c
		}
	}
	var mem curve
	for i, t := range s.OffsetsMS {
		sum, ok := 0.0, true
		for _, sc := range s.Containers {
			if sc.Role == "infra" {
				continue
			}
			if sc.AnonShmemBytes[i] < 0 {
				ok = false
				break
			}
			sum += float64(sc.AnonShmemBytes[i])
		}
		if ok {
			mem.t = append(mem.t, float64(t)/1000)
			mem.v = append(mem.v, sum)
		}
	}
	out["memory"] = mem
	return out
}

// at is the curve's value at time x: its last point at or before x, or
// false past its end or before its start.
func (c curve) at(x float64) (float64, bool) {
	if len(c.t) == 0 || x < c.t[0] || x > c.t[len(c.t)-1] {
		return 0, false
	}
	i, _ := slices.BinarySearch(c.t, x)
	if i == len(c.t) || c.t[i] > x {
		i--
	}
	return c.v[i], true
}

// median is, at each point of a grid over the longest run, the median of
// the runs still going.
func median(cs []curve) curve {
	end := 0.0
	for _, c := range cs {
		if n := len(c.t); n > 0 {
			end = max(end, c.t[n-1])
		}
	}
	const steps = 200
	var m curve
	for k := 0; k <= steps; k++ {
		x := end * float64(k) / steps
		var vs []float64
		for _, c := range cs {
			if v, ok := c.at(x); ok {
				vs = append(vs, v)
			}
		}
		if len(vs) == 0 {
			continue
		}
		slices.Sort(vs)
		v := vs[len(vs)/2]
		if len(vs)%2 == 0 {
			v = (vs[len(vs)/2-1] + vs[len(vs)/2]) / 2
		}
		m.t = append(m.t, x)
		m.v = append(m.v, v)
	}
	return m
}

// drawTime lays out one chart of the classes given.
func drawTime(id, title, sub, unit string, runs map[string][]curve, classes []string, notes []string) TimeChart {
	ch := TimeChart{ID: id, Title: title, Subtitle: sub, Width: 380, Height: 190,
		PlotX: 58, PlotY: 8, PlotW: 310, PlotH: 150, Notes: notes}
	xMax, yMax := 0.0, 0.0
	for _, class := range classes {
		for _, c := range runs[class] {
			for i := range c.t {
				xMax, yMax = max(xMax, c.t[i]), max(yMax, c.v[i])
			}
		}
	}
	if xMax == 0 {
		xMax = 1
	}
	if yMax == 0 {
		yMax = 1
	}
	if unit == "bytes" {
		yMax = niceCeil(yMax/(1<<20)) * (1 << 20) // round MiB, not bytes
	} else {
		yMax = niceCeil(yMax)
	}
	x := func(v float64) float64 { return ch.PlotX + v/xMax*ch.PlotW }
	y := func(v float64) float64 { return ch.PlotY + ch.PlotH - v/yMax*ch.PlotH }
	poly := func(c curve) string {
		var b strings.Builder
		stride := max(1, len(c.t)/300)
		for i := 0; i < len(c.t); i += stride {
			fmt.Fprintf(&b, "%.1f,%.1f ", x(c.t[i]), y(c.v[i]))
		}
		if n := len(c.t); n > 0 && (n-1)%stride != 0 {
			fmt.Fprintf(&b, "%.1f,%.1f", x(c.t[n-1]), y(c.v[n-1]))
		}
		return strings.TrimSpace(b.String())
	}
	for _, class := range classes {
		cs := runs[class]
		if len(cs) == 0 {
			continue
		}
		ch.Legend = append(ch.Legend, class)
		for i, c := range cs {
			ch.Lines = append(ch.Lines, TimeLine{Class: class, Points: poly(c), Title: fmt.Sprintf("%s, run %d", class, i+1)})
		}
		ch.Lines = append(ch.Lines, TimeLine{Class: class, Median: true, Points: poly(median(cs)), Title: class + ", median"})
	}
	for k := 0; k <= 4; k++ {
		v := xMax * float64(k) / 4
		ch.XTicks = append(ch.XTicks, tick{X: x(v), Label: fmt.Sprintf("%.2gs", v)})
		w := yMax * float64(k) / 4
		ch.YTicks = append(ch.YTicks, tick{X: y(w), Label: unitText(w, unit)})
	}
	return ch
}

// niceCeil rounds up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

// unitText labels an axis value.
func unitText(v float64, unit string) string {
	switch unit {
	case "bytes":
		return bytesText(v)
	case "cores":
		return fmt.Sprintf("%.2g", v)
	}
	return human(v)
}
