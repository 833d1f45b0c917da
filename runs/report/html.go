package report

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"spatec.dev/spatec/runs/record"
)

//go:embed report.html.tmpl
var htmlSource string

// htmlTemplate parses the report template. It is parsed when a report is
// written, not when the package loads: every spatec command links this
// package, and most never write HTML.
func htmlTemplate() (*template.Template, error) {
	return template.New("report").Funcs(template.FuncMap{
		"stat":     statText,
		"median":   medianText,
		"pair":     pair,
		"percent":  percent,
		"rank":     rankText,
		"runs":     runsText,
		"title":    sectionTitle,
		"span":     timeSpan,
		"baseline": baselineText,
		"notes":    armNotes,
		"metric":   func(a *Arm, name string) *Stat { return a.Metrics[name] },
		"spread": func(a *Arm) string {
			if s := a.Metrics[RankedBy]; s != nil {
				return percent(s.Spread)
			}
			return "–"
		},
		"charts":         charts,
		"jointcharts":    jointCharts,
		"jointtitle":     jointTitle,
		"timecharts":     timeCharts,
		"footprintchart": footprintChartOf,
		"scenariochart":  scenarioChartOf,
		"figure":         figureText,
		"undisturbed":    undisturbedText,
		"held":           heldOf,
		"join":           strings.Join,
		"human":          human,
		"bytes":          bytesText,
		"trim":           trim,
		"float":          func(n int64) float64 { return float64(n) },
		"digest":         short,
		"add":            func(a, b float64) float64 { return a + b },
		"mul":            func(a float64, b int) float64 { return a * float64(b) },
		"setting":        func(st *Study, p *Point) string { return st.setting(p) },
		"mark": func(st *Study, p *Point) string {
			var c []string
			if p != nil && p == st.Knee {
				c = append(c, "knee")
			}
			if p != nil && p == st.Best {
				c = append(c, "best")
			}
			return strings.Join(c, " ")
		},
		"evidence": func(a *Arm) string {
			var parts []string
			for _, e := range []string{record.EvidenceMeasured, record.EvidenceExploratory} {
				if n := a.Evidence[e]; n == a.Runs {
					return e
				} else if n > 0 {
					parts = append(parts, fmt.Sprintf("%d %s", n, e))
				}
			}
			return strings.Join(parts, ", ")
		},
		"opt": func(v *float64, unit string) string {
			if v == nil {
				return "–"
			}
			return unitText(*v, unit)
		},
		"plural": plural,
		"f":      func(v float64) string { return fmt.Sprintf("%.1f", v) },
	}).Parse(htmlSource)
}

// WriteHTML writes a self-contained static HTML page: inline CSS, inline SVG
// charts drawn here, no script, and a Content-Security-Policy that forbids
// every network fetch, so the page shows the same thing offline, forever.
func (r *Report) WriteHTML(w io.Writer) error {
	tmpl, err := htmlTemplate()
	if err != nil {
		return fmt.Errorf("parsing the report template: %w", err)
	}
	if err := tmpl.Execute(w, r); err != nil {
		return fmt.Errorf("writing the HTML report: %w", err)
	}
	return nil
}

// chart is a horizontal bar chart, one row per arm: the bar is the median,
// the whisker spans min to max across repetitions.
type chart struct {
	ID, Title, Subtitle string
	Width, Height       int
	LabelX, PlotX       float64 // right edge of labels, left edge of bars
	PlotW               float64
	AxisY               float64
	Ticks               []tick
	Rows                []chartRow
}

type tick struct {
	X     float64
	Label string
}

type chartRow struct {
	Y, MidY     float64 // top of the bar, its centre line
	BarH        float64
	CapTop      float64 // whisker end caps span CapTop..CapBottom
	CapBottom   float64
	Label, Full string // label as shown (maybe shortened), and in full
	Status      string
	Measured    bool
	BarW        float64
	WhiskerX1   float64
	WhiskerX2   float64
	Whisker     bool
	TextX       float64
	Value       string
	Mark        string // status label shown beside a bar that is not ok
}

const (
	chartWidth  = 580
	labelWidth  = 150
	plotWidth   = 290
	rowHeight   = 26
	barHeight   = 14
	chartTop    = 8
	chartBottom = 26
)

// charts builds the charts of a section: both rates, each on its own axis.
func charts(s *Section) []chart {
	specs := []struct{ metric, title, subtitle string }{
		{RankedBy, "Throughput", "rows/s over spatec's window (the rate ranked), median with min–max across repetitions; higher is better"},
		{ShownBeside, "Throughput, the reference harness's window (approximated)", "rows/s over spatec's approximation of the reference harness's window (within about a second of it), not ranked; higher is better"},
		{RowsPerSPerCore, "Rows/s per core", "rows/s over the cores the whole arm used; higher is better"},
		{record.DataPlaneCoresUsed, "Data-plane cores", "cores used by the data plane alone; lower is leaner"},
		{record.PeakAnonBytes, "Anon+shmem peak", "peak anonymous + shared memory of the arm; lower is leaner"},
	}
	out := make([]chart, 0, len(specs))
	for i, sp := range specs {
		if sp.metric == ShownBeside && !slices.ContainsFunc(s.Arms, func(a *Arm) bool { return a.Metrics[sp.metric] != nil }) {
			continue // records from before the harness's rate was recorded
		}
		out = append(out, buildChart(fmt.Sprintf("%s-c%d", s.ID, i+1), sp.title, sp.subtitle, sp.metric, s.Arms))
	}
	return out
}

// jointCharts builds the charts of a joint section: the rate it ranks by,
// the one both tools define, and the cores each arm used.
func jointCharts(s *Section) []chart {
	return []chart{
		buildChart(s.ID+"-c1", "Throughput, the reference harness's window (the rate ranked)",
			"rows/s over the reference harness's window in its records, and over spatec's approximation of it (within about a second) in spatec's, median with min–max across repetitions; higher is better", s.RankedBy, s.Arms),
		buildChart(s.ID+"-c2", "Cores", "cores used by the whole arm over its tool's window; lower is leaner", record.CoresUsed, s.Arms),
	}
}

func buildChart(id, title, subtitle, metric string, arms []*Arm) chart {
	c := chart{
		ID: id, Title: title, Subtitle: subtitle, Width: chartWidth,
		LabelX: labelWidth - 8, PlotX: labelWidth, PlotW: plotWidth,
	}
	top := 0.0
	unit := ""
	for _, a := range arms {
		if s := a.Metrics[metric]; s != nil {
			top = math.Max(top, s.Max)
			unit = s.Unit
		}
	}
	top, step := niceScale(top, unit == "bytes")
	scale := func(v float64) float64 { return c.PlotX + math.Max(v, 0)/top*c.PlotW }

	for i, a := range arms {
		y := chartTop + float64(i)*rowHeight
		row := chartRow{
			Y: y + (rowHeight-barHeight)/2, MidY: y + rowHeight/2, BarH: barHeight,
			CapTop: y + rowHeight/2 - 6, CapBottom: y + rowHeight/2 + 6,
			Full: a.Label, Label: shorten(a.Label, 21), Status: string(a.Status)}
		if a.Status != record.StatusOK {
			row.Mark = string(a.Status)
		}
		if s := a.Metrics[metric]; s != nil {
			row.Measured = true
			row.BarW = scale(s.Median) - c.PlotX
			row.WhiskerX1, row.WhiskerX2 = scale(s.Min), scale(s.Max)
			row.Whisker = s.N > 1 && s.Max > s.Min
			row.TextX = math.Max(row.WhiskerX2, c.PlotX+row.BarW) + 6
			row.Value = value(s.Median, s.Unit)
		} else {
			row.TextX = c.PlotX + 4
			row.Value = "no measurement"
		}
		c.Rows = append(c.Rows, row)
	}
	c.AxisY = chartTop + float64(len(arms))*rowHeight
	c.Height = int(c.AxisY) + chartBottom
	for v := 0.0; v <= top*1.0000001; v += step {
		c.Ticks = append(c.Ticks, tick{X: scale(v), Label: value(v, unit)})
	}
	return c
}

// niceScale rounds top up to a round axis end, returning it and a tick step
// giving three to six ticks: 1, 2 or 5 times a power of ten, or for bytes a
// power of two, so a memory axis reads 256 MiB, 512 MiB, not 476.8 MiB.
func niceScale(top float64, binary bool) (float64, float64) {
	if top <= 0 || math.IsNaN(top) || math.IsInf(top, 0) {
		return 1, 0.25
	}
	raw := top / 4
	if binary && raw >= 1 {
		step := math.Pow(2, math.Ceil(math.Log2(raw)))
		return math.Ceil(top/step) * step, step
	}
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag * 10
	for _, m := range []float64{1, 2, 5, 10} {
		if raw <= m*mag {
			step = m * mag
			break
		}
	}
	return math.Ceil(top/step) * step, step
}

func shorten(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return strings.TrimSpace(string(r[:n-1])) + "…"
}
