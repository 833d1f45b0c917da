// Package footprint is the minimum-footprint study: how small can an arm
// run? It decides which caps to run (the search) and what the runs found
// (the verdict), from nothing but the runs' outcomes, so that `spatec
// footprint` and the report judge the same points the same way.
//
// The search steps down from the envelope geometrically (the ladder), every
// rung run Reps times with the repetitions interleaved across the rungs, so
// that drift on the host spreads over the whole curve rather than bending
// its end. Below the first rung that degrades it bisects between the last
// cap that held and that one, one cap a round, until the two are within the
// study's resolution.
package footprint

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"spatec.dev/spatec/runs/record"
)

// Axes.
const (
	Memory = "memory"
	CPUs   = "cpus"
)

// Kinds of degradation, worst first.
const (
	KindOOM     = "oom"     // the kernel's OOM killer ended a container
	KindStall   = "stall"   // no row landed for the stall limit, or the drain timed out
	KindFailure = "failure" // the run failed otherwise (a container exited, a gate failed)
	KindRefused = "refused" // the contract refuses the point's plan
	KindSlow    = "slow"    // it drained, below the fraction of the envelope's rate
)

// DefaultKnee is the share of the fastest point's rate within which the
// smallest footprint is recommended over the fastest.
const DefaultKnee = 0.02

// Study is a footprint study as the search needs it.
type Study struct {
	// Axis is Memory (caps in bytes) or CPUs.
	Axis string
	// Full is the envelope on the axis: where the study starts.
	Full float64
	// Floor is the smallest cap the study may try.
	Floor float64
	// Step is the ratio from one rung of the ladder to the next.
	Step float64
	// Resolution is the gap between the last cap that held and the first
	// that degraded at which bisection stops.
	Resolution float64
	// Fraction is the share of the envelope's median rate a point must
	// hold on the median of its repetitions.
	Fraction float64
	// Reps is the repetitions of every point.
	Reps int
}

// Check says what is wrong with the study, if anything.
func (s Study) Check() error {
	switch {
	case s.Axis != Memory && s.Axis != CPUs:
		return fmt.Errorf("axis %q: want %q or %q", s.Axis, Memory, CPUs)
	case !(s.Floor > 0 && s.Floor < s.Full):
		return fmt.Errorf("floor %s is not between 0 and the envelope's %s", s.Show(s.Floor), s.Show(s.Full))
	case !(s.Step > 0 && s.Step < 1):
		return fmt.Errorf("step %v: want a ratio between 0 and 1", s.Step)
	case !(s.Fraction > 0 && s.Fraction < 1):
		return fmt.Errorf("fraction %v: want a share between 0 and 1", s.Fraction)
	case s.Resolution <= 0 || s.Reps < 1:
		return fmt.Errorf("resolution %v and reps %d: want both above 0", s.Resolution, s.Reps)
	}
	return nil
}

// grain is the finest step the engine sets a cap in: a MiB of memory, a
// hundredth of a CPU (the quota's grain).
func (s Study) grain() float64 {
	if s.Axis == Memory {
		return 1 << 20
	}
	return 0.01
}

// round puts a cap on the grain, down, never below the floor.
func (s Study) round(v float64) float64 {
	g := s.grain()
	return max(s.Floor, math.Floor(v/g+1e-9)*g)
}

// Show gives a cap in its unit.
func (s Study) Show(v float64) string { return Show(s.Axis, v) }

// Show gives a cap on an axis in its unit: memory in MiB (GiB where
// whole), CPUs to the quota's grain.
func Show(axis string, v float64) string {
	if axis == Memory {
		if mib := v / (1 << 20); mib >= 1024 && math.Mod(mib, 1024) == 0 {
			return fmt.Sprintf("%.0f GiB", mib/1024)
		}
		return fmt.Sprintf("%.0f MiB", v/(1<<20))
	}
	return fmt.Sprintf("%.2f CPUs", v)
}

// Ladder gives the rungs of the geometric descent: the envelope, then
// each cap Step times the one before it, on the grain, down to the floor.
func (s Study) Ladder() []float64 {
	caps := []float64{s.Full}
	for c := s.Full * s.Step; ; c *= s.Step {
		r := s.round(c)
		if r < caps[len(caps)-1] {
			caps = append(caps, r)
		}
		if r <= s.Floor {
			return caps
		}
	}
}

// Run is one repetition at one cap, as the study reads it.
type Run struct {
	Cap float64
	// Measured says the run drained and was measured (its record carries a
	// measurement); Rate is then its rows/s.
	Measured bool
	Rate     float64
	// Kind is how a run that was not measured failed (KindOOM, KindStall,
	// KindFailure, KindRefused), or KindOOM for a measured run in which
	// the OOM killer still ended a process.
	Kind string
	// Why is the run's own note: the cause, in the record's words.
	Why string
}

// Classify gives the kind of a failed run from its note and whether the
// OOM killer was counted.
func Classify(note string, oomKills bool) string {
	switch {
	case oomKills || strings.Contains(note, "OOM killer"):
		return KindOOM
	case strings.Contains(note, "stalled") || strings.Contains(note, "timed out"):
		return KindStall
	case strings.HasPrefix(note, "REFUSED") || strings.Contains(note, "refused"):
		return KindRefused
	}
	return KindFailure
}

// RunOf reads a footprint point's record as the study judges it.
func RunOf(rec *record.Record) Run {
	run := Run{Measured: rec.Status.CarriesMeasurement(), Rate: rec.Metrics[record.RowsPerS].Value, Why: rec.Note}
	if f := rec.SUT.Footprint; f != nil {
		run.Cap = f.Cap
	}
	oom := false
	for name, m := range rec.Metrics {
		if strings.HasPrefix(name, "oom_kills.") && m.Value > 0 {
			oom = true
		}
	}
	if !run.Measured || oom {
		run.Kind = Classify(rec.Note, oom)
	}
	return run
}

// Findings says a study's verdict in sentences.
func Findings(s Study, res Result) []string {
	switch {
	case res.Full == nil:
		return []string{"nothing ran at the envelope"}
	case res.Full.Degraded:
		return []string{"the envelope itself did not hold (" + res.Full.Kind + ": " + res.Full.Why + "): no smaller cap can be judged"}
	}
	var out []string
	if res.FirstDegraded == nil {
		out = append(out, fmt.Sprintf("smallest cap: every cap run held, down to %s: the arm may run smaller still", s.Show(res.Smallest.Cap)))
	} else {
		out = append(out, fmt.Sprintf("smallest cap: %s holds %.2f× the envelope's rate; %s did not (%s)",
			s.Show(res.Smallest.Cap), res.Smallest.Median/res.Full.Median, s.Show(res.FirstDegraded.Cap), res.FirstDegraded.Kind))
	}
	out = append(out, fmt.Sprintf("fastest: %s at %.0f rows/s; recommended: %s at %.0f rows/s, the smallest cap within %.0f%% of the fastest",
		s.Show(res.Fastest.Cap), res.Fastest.Median, s.Show(res.Recommended.Cap), res.Recommended.Median, res.Knee*100))
	for _, a := range res.Anomalies {
		out = append(out, "anomaly: "+a)
	}
	return out
}

// Point is one cap and what its repetitions found.
type Point struct {
	Cap  float64 `json:"cap"`
	Runs []Run   `json:"-"`
	// Median, Min and Max are over the measured runs' rates.
	Median, Min, Max float64
	Measured         int `json:"measured"`
	// Degraded says the point did not hold, Kind how, Why with which
	// numbers or in which words.
	Degraded bool   `json:"degraded"`
	Kind     string `json:"kind,omitempty"`
	Why      string `json:"why,omitempty"`
}

// judge decides one point against the envelope's median rate (0 when the
// envelope itself has none).
func (p *Point) judge(fullRate, fraction float64) {
	var rates []float64
	kinds := map[string]int{}
	for _, r := range p.Runs {
		if r.Measured {
			rates = append(rates, r.Rate)
		}
		if r.Kind != "" {
			kinds[r.Kind]++
		}
	}
	slices.Sort(rates)
	p.Measured = len(rates)
	p.Median, p.Min, p.Max = 0, 0, 0
	if len(rates) > 0 {
		p.Median, p.Min, p.Max = median(rates), rates[0], rates[len(rates)-1]
	}
	p.Degraded, p.Kind, p.Why = false, "", ""
	worst := func() string {
		for _, k := range []string{KindOOM, KindStall, KindRefused, KindFailure} {
			if kinds[k] > 0 {
				return k
			}
		}
		return KindFailure
	}
	switch {
	case len(p.Runs) == 0:
		return
	case 2*len(rates) <= len(p.Runs) || kinds[KindOOM] > 0:
		// Most repetitions failed, or a process was OOM-killed even where
		// the drain finished: the cap does not hold the arm.
		p.Degraded, p.Kind = true, worst()
		bad := 0
		for _, r := range p.Runs {
			if !r.Measured || r.Kind == KindOOM {
				bad++
			}
		}
		p.Why = fmt.Sprintf("%d of %d runs %s", bad, len(p.Runs), said(p.Kind))
		for _, r := range p.Runs {
			if r.Kind == p.Kind && r.Why != "" {
				first, _, _ := strings.Cut(r.Why, "\n")
				p.Why += ": " + strings.TrimSuffix(first, "; its log ends:")
				break
			}
		}
	case fullRate > 0 && p.Median < fraction*fullRate:
		p.Degraded, p.Kind = true, KindSlow
		p.Why = fmt.Sprintf("median %.0f rows/s is %.2f× the envelope's %.0f, below the %.2f the study requires", p.Median, p.Median/fullRate, fullRate, fraction)
	}
}

func said(kind string) string {
	switch kind {
	case KindOOM:
		return "were OOM-killed"
	case KindStall:
		return "stalled"
	case KindRefused:
		return "were refused"
	}
	return "failed"
}

func median(sorted []float64) float64 {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

// Search decides the caps of each round and keeps every run's outcome.
type Search struct {
	study  Study
	points map[float64]*Point
	// phase is "ladder" until the ladder has run, then "bisect", then
	// "done".
	phase     string
	good, bad float64
}

// New starts a search.
func New(s Study) *Search {
	return &Search{study: s, points: map[float64]*Point{}, phase: "ladder"}
}

// Add records one run.
func (s *Search) Add(r Run) {
	p := s.points[r.Cap]
	if p == nil {
		p = &Point{Cap: r.Cap}
		s.points[r.Cap] = p
	}
	p.Runs = append(p.Runs, r)
}

// Phase says where the search is: "ladder", "bisect" or "done".
func (s *Search) Phase() string { return s.phase }

// Round gives the caps to run next, each Reps times with the repetitions
// interleaved across them; nil when the search is done. The runs of a
// round are added before the next is asked for.
func (s *Search) Round() []float64 {
	switch s.phase {
	case "ladder":
		s.phase = "bisect"
		return s.study.Ladder()
	case "bisect":
		res := s.Result()
		if res.Full == nil || res.Full.Degraded || res.FirstDegraded == nil {
			// The envelope itself does not hold, or every rung down to
			// the floor does: nothing to bisect.
			s.phase = "done"
			return nil
		}
		s.good, s.bad = res.Smallest.Cap, res.FirstDegraded.Cap
		mid := s.study.round((s.good + s.bad) / 2)
		if s.good-s.bad <= s.study.Resolution || mid >= s.good || mid <= s.bad {
			s.phase = "done"
			return nil
		}
		return []float64{mid}
	}
	return nil
}

// Result is what the study found.
type Result struct {
	// Points are every cap run, largest first.
	Points []*Point
	// Full is the envelope's point: the rate the others are held to.
	Full *Point
	// Smallest is the smallest cap that held with every larger cap run
	// holding too; FirstDegraded the cap below it that did not (nil when
	// every cap run held).
	Smallest, FirstDegraded *Point
	// Fastest is the held point with the highest median rate; Recommended
	// the smallest held cap within Knee of it (the methodology's knee: the
	// fastest is not always what to ship).
	Fastest, Recommended *Point
	Knee                 float64
	// Anomalies are caps that held below one that degraded: stated, never
	// smoothed.
	Anomalies []string
}

// Result judges every point run so far.
func (s *Search) Result() Result { return Judge(s.study, s.runs(), DefaultKnee) }

func (s *Search) runs() []Run {
	var out []Run
	for _, p := range s.points {
		out = append(out, p.Runs...)
	}
	return out
}

// Judge judges runs of a study: each cap against the envelope's median
// rate, and the study's verdict.
func Judge(s Study, runs []Run, knee float64) Result {
	byCap := map[float64]*Point{}
	for _, r := range runs {
		p := byCap[r.Cap]
		if p == nil {
			p = &Point{Cap: r.Cap}
			byCap[r.Cap] = p
		}
		p.Runs = append(p.Runs, r)
	}
	res := Result{Knee: knee}
	for _, p := range byCap {
		res.Points = append(res.Points, p)
	}
	slices.SortFunc(res.Points, func(a, b *Point) int { return cmp.Compare(b.Cap, a.Cap) })
	res.Full = byCap[s.Full]
	fullRate := 0.0
	if res.Full != nil {
		res.Full.judge(0, s.Fraction)
		if !res.Full.Degraded {
			fullRate = res.Full.Median
		}
	}
	for _, p := range res.Points {
		p.judge(fullRate, s.Fraction)
	}
	if res.Full == nil || res.Full.Degraded {
		return res
	}
	for _, p := range res.Points {
		if p.Degraded {
			if res.FirstDegraded == nil {
				res.FirstDegraded = p
			}
			continue
		}
		if res.FirstDegraded == nil {
			res.Smallest = p
		} else {
			res.Anomalies = append(res.Anomalies, fmt.Sprintf("%s held (%.0f rows/s) below %s, which did not (%s)", s.Show(p.Cap), p.Median, s.Show(res.FirstDegraded.Cap), res.FirstDegraded.Kind))
		}
		if res.Fastest == nil || p.Median > res.Fastest.Median {
			res.Fastest = p
		}
	}
	for _, p := range res.Points {
		if !p.Degraded && p.Cap >= res.Smallest.Cap && p.Median >= (1-knee)*res.Fastest.Median {
			res.Recommended = p
		}
	}
	return res
}
