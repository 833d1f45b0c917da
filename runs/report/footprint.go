package report

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"spatec.dev/spatec/runs/footprint"
	"spatec.dev/spatec/runs/record"
)

// Footprint is a footprint study as the report reads it: one arm's
// data-plane cap tightened from the envelope, every cap run, the verdict.
// Its records left the envelope on purpose, so they are in no section and
// never ranked beside the comparison's.
type Footprint struct {
	ID       string  `json:"id"`
	Env      string  `json:"env"`
	Entrant  string  `json:"entrant"`
	Variant  string  `json:"variant,omitempty"`
	Study    string  `json:"study"`
	Axis     string  `json:"axis"`
	Full     float64 `json:"full"`
	Fraction float64 `json:"fraction"`
	Records  int     `json:"records"`
	// Points are the caps run, largest first.
	Points []*FootprintPoint `json:"points"`
	// Smallest is the smallest cap that held with every larger one
	// holding, FirstDegraded the cap below it that did not; Fastest and
	// Recommended (the smallest within the knee of the fastest) are caps
	// too. Each is 0 where there is none.
	Smallest      float64  `json:"smallest,omitempty"`
	FirstDegraded float64  `json:"first_degraded,omitempty"`
	DegradedKind  string   `json:"degraded_kind,omitempty"`
	Fastest       float64  `json:"fastest,omitempty"`
	Recommended   float64  `json:"recommended,omitempty"`
	Findings      []string `json:"findings"`

	runs map[float64][]*record.Record
}

// FootprintPoint is one cap of a footprint study: its verdict and the
// medians of its measured runs.
type FootprintPoint struct {
	Cap      float64 `json:"cap"`
	Label    string  `json:"label"`
	Runs     int     `json:"runs"`
	Measured int     `json:"measured"`
	// Rate, RateMin and RateMax are rows/s over the measured runs.
	Rate, RateMin, RateMax float64
	// Cores, PeakAnon and MemoryPeak are the medians of the arm's cores,
	// anon+shmem peak and memory.peak; OOMKills counts the kills over
	// every run.
	Cores      float64 `json:"cores"`
	PeakAnon   float64 `json:"peak_anon_bytes"`
	MemoryPeak float64 `json:"memory_peak_bytes"`
	OOMKills   int     `json:"oom_kills"`
	// HeapConfigured, HeapCommitted and HeapLive are a JVM data plane's,
	// from its GC log; 0 where there is none.
	HeapConfigured float64 `json:"jvm_heap_configured_bytes,omitempty"`
	HeapCommitted  float64 `json:"jvm_heap_committed_peak_bytes,omitempty"`
	HeapLive       float64 `json:"jvm_heap_live_peak_bytes,omitempty"`
	Degraded       bool    `json:"degraded"`
	Kind           string  `json:"kind,omitempty"`
	Why            string  `json:"why,omitempty"`
}

type footprintKey struct{ env, envDigest, entrant, variant, study, axis, dataset string }

// addFootprint keeps a footprint point's record for its study.
func (b *builder) addFootprint(rec *record.Record) {
	f := rec.SUT.Footprint
	k := footprintKey{rec.Run.Env, rec.Run.EnvDigest, rec.SUT.Entrant, rec.SUT.Variant, rec.SUT.Study, f.Axis, rec.Run.Dataset.Version}
	fp := b.footprints[k]
	if fp == nil {
		fp = &Footprint{Env: k.env, Entrant: k.entrant, Variant: k.variant, Study: k.study, Axis: k.axis, Full: f.Full, Fraction: f.Fraction,
			runs: map[float64][]*record.Record{}}
		b.footprints[k] = fp
	}
	fp.Records++
	fp.runs[f.Cap] = append(fp.runs[f.Cap], rec)
}

// finishFootprints judges every footprint study read.
func (b *builder) finishFootprints() {
	for _, fp := range b.footprints {
		fp.judge()
		b.rep.Footprints = append(b.rep.Footprints, fp)
	}
	slices.SortFunc(b.rep.Footprints, func(a, b *Footprint) int {
		return cmp.Or(cmp.Compare(a.Env, b.Env), cmp.Compare(a.Entrant, b.Entrant), cmp.Compare(a.Study, b.Study))
	})
	for i, fp := range b.rep.Footprints {
		fp.ID = fmt.Sprintf("F%d", i+1)
	}
}

func (fp *Footprint) judge() {
	study := footprint.Study{Axis: fp.Axis, Full: fp.Full, Fraction: fp.Fraction}
	var runs []footprint.Run
	for _, recs := range fp.runs {
		for _, rec := range recs {
			runs = append(runs, footprint.RunOf(rec))
		}
	}
	res := footprint.Judge(study, runs, footprint.DefaultKnee)
	for _, p := range res.Points {
		pt := &FootprintPoint{Cap: p.Cap, Label: study.Show(p.Cap), Runs: len(p.Runs), Measured: p.Measured,
			Rate: p.Median, RateMin: p.Min, RateMax: p.Max, Degraded: p.Degraded, Kind: p.Kind, Why: p.Why}
		// What the arm used is read from every run that recorded it, a
		// failed one too: at a cap that kills the arm, how close it came
		// is the finding.
		med := func(name string) float64 {
			var vs []float64
			for _, rec := range fp.runs[p.Cap] {
				if m, ok := rec.Metrics[name]; ok {
					vs = append(vs, m.Value)
				}
			}
			if m := medianOf(vs); m != nil {
				return *m
			}
			return 0
		}
		pt.Cores, pt.PeakAnon, pt.MemoryPeak = med(record.CoresUsed), med(record.PeakAnonBytes), med(record.MemoryPeakBytes)
		pt.HeapConfigured, pt.HeapCommitted, pt.HeapLive = med(record.JVMHeapConfiguredBytes), med(record.JVMHeapCommittedPeakBytes), med(record.JVMHeapLivePeakBytes)
		for _, rec := range fp.runs[p.Cap] {
			for name, m := range rec.Metrics {
				if strings.HasPrefix(name, "oom_kills.") {
					pt.OOMKills += int(m.Value)
				}
			}
		}
		fp.Points = append(fp.Points, pt)
	}
	if res.Smallest != nil {
		fp.Smallest, fp.Fastest, fp.Recommended = res.Smallest.Cap, res.Fastest.Cap, res.Recommended.Cap
	}
	if d := res.FirstDegraded; d != nil {
		fp.FirstDegraded, fp.DegradedKind = d.Cap, d.Kind
	}
	fp.Findings = footprint.Findings(study, res)
	fp.runs = nil
}

// Show gives a cap of the study in its unit.
func (fp *Footprint) Show(v float64) string { return footprint.Show(fp.Axis, v) }

// footprintChart draws a footprint study: rows/s (left axis) and the arm's
// anon+shmem peak (right axis) against the cap, on a logarithmic axis as
// the ladder halves it; the rate the study requires as a dashed line, the
// degradation marked where it begins, the recommendation labelled.
type footprintChart struct {
	ID, Title                   string
	Width, Height               int
	PlotX, PlotY, PlotW, PlotH  float64
	XTicks, RateTicks, MemTicks []tick
	RateLine, MemLine           string
	Dots                        []footprintDot
	Threshold                   float64 // y of the required rate; 0 when none
	ThresholdLabel              string
	Marker                      float64 // x of the degradation; 0 when none
	MarkerLabel                 string
	Recommended                 *footprintDot
	RecommendedLabel            string
}

type footprintDot struct {
	X, Y, MemY float64
	Class      string
	Title      string
}

func footprintChartOf(fp *Footprint) footprintChart {
	c := footprintChart{ID: fp.ID + "-chart", Title: fmt.Sprintf("%s:%s on %s", fp.Entrant, fp.Study, fp.Env),
		Width: 580, Height: 260, PlotX: 70, PlotY: 14, PlotW: 430, PlotH: 200}
	if len(fp.Points) == 0 {
		return c
	}
	lo, hi := fp.Points[len(fp.Points)-1].Cap, fp.Points[0].Cap
	x := func(v float64) float64 {
		if hi <= lo {
			return c.PlotX + c.PlotW/2
		}
		return c.PlotX + (math.Log(v)-math.Log(lo))/(math.Log(hi)-math.Log(lo))*c.PlotW
	}
	topRate, topMem := 0.0, 0.0
	for _, p := range fp.Points {
		topRate, topMem = max(topRate, p.RateMax), max(topMem, p.PeakAnon)
	}
	topRate, rateStep := niceScale(topRate, false)
	topMem, memStep := niceScale(topMem, true)
	yRate := func(v float64) float64 { return c.PlotY + c.PlotH - v/topRate*c.PlotH }
	yMem := func(v float64) float64 { return c.PlotY + c.PlotH - v/topMem*c.PlotH }
	for v := 0.0; v <= topRate*1.0000001; v += rateStep {
		c.RateTicks = append(c.RateTicks, tick{X: yRate(v), Label: value(v, "rows/s")})
	}
	for v := 0.0; v <= topMem*1.0000001; v += memStep {
		c.MemTicks = append(c.MemTicks, tick{X: yMem(v), Label: value(v, "bytes")})
	}
	var rate, mem []string
	for i := len(fp.Points) - 1; i >= 0; i-- {
		p := fp.Points[i]
		c.XTicks = append(c.XTicks, tick{X: x(p.Cap), Label: p.Label})
		d := footprintDot{X: x(p.Cap), Y: yRate(p.Rate), MemY: yMem(p.PeakAnon), Class: "held",
			Title: fmt.Sprintf("%s: %.0f rows/s, peak %s", p.Label, p.Rate, bytesText(p.PeakAnon))}
		if p.Degraded {
			d.Class = "degraded " + p.Kind
			d.Title += " · " + p.Kind + ": " + p.Why
		}
		c.Dots = append(c.Dots, d)
		if p.Measured > 0 {
			rate = append(rate, fmt.Sprintf("%.1f,%.1f", d.X, d.Y))
			mem = append(mem, fmt.Sprintf("%.1f,%.1f", d.X, d.MemY))
		}
		if p.Cap == fp.Recommended {
			r := d
			c.Recommended, c.RecommendedLabel = &r, "recommended: "+p.Label
		}
	}
	c.RateLine, c.MemLine = strings.Join(rate, " "), strings.Join(mem, " ")
	for _, p := range fp.Points {
		if p.Cap == fp.Full && !p.Degraded {
			c.Threshold = yRate(fp.Fraction * p.Rate)
			c.ThresholdLabel = fmt.Sprintf("%.2f× the envelope's rate", fp.Fraction)
		}
	}
	if fp.FirstDegraded > 0 {
		// The degradation begins between the last cap that held and the
		// first that did not; the line stands at the latter.
		c.Marker = x(fp.FirstDegraded)
		c.MarkerLabel = "degrades (" + fp.DegradedKind + ")"
	}
	return c
}
