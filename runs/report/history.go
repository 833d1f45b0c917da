package report

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"spatec.dev/spatec/runs/interop"
	"spatec.dev/spatec/runs/record"
)

// HistoryRun is one run as the history table knows it, from a spatec
// record or from another tool's (the public reference harness's schema 2).
type HistoryRun struct {
	// Source is "spatec" or the other tool's schema ("schema-2").
	Source    string
	RunID     string
	Entrant   string
	Variant   string
	Env       string
	EnvDigest string
	Started   time.Time
	// Harness is the measurement protocol, named with its tool: the same
	// number means different protocols in two tools.
	Harness    string
	ArmVersion string
	Status     string
	// Workload names the workload, where the corpus is one of spatec's.
	Workload string
	// Dataset is the corpus drained, in spatec's name for it (a reference
	// harness's label for a corpus spatec generates too is read as
	// spatec's), and Messages how many of its messages; 0 when unknown.
	Dataset  string
	Messages int64
	// The headline figures, nil where the run did not observe them.
	// RowsPerS is spatec's rate over spatec's window; HarnessRowsPerS is
	// the reference harness's definition, which both tools' records carry.
	RowsPerS, HarnessRowsPerS, Cores, Peak *float64
	// Facts are what the run's record (and the declaration its
	// environment digest names) states of its environment: a joint section
	// ranks it with spatec's runs only where they agree.
	Facts interop.Facts
}

// History is one arm over every sitting that ran it.
type History struct {
	Arm      string     `json:"arm"`
	Sittings []*Sitting `json:"sittings"`
	// Charts draw the sittings' medians, one rate a chart: spatec's
	// rows/s, and the reference harness's, which both tools' sittings
	// carry. Nil where no sitting has the rate.
	Charts []*HistoryChart `json:"-"`
}

// Sitting is the runs of one arm on one day under one set of conditions
// (environment digest, protocol, arm version, dataset and its size): the
// unit a history compares.
type Sitting struct {
	Date       string `json:"date"`
	Source     string `json:"source"`
	Env        string `json:"env"`
	EnvDigest  string `json:"env_digest"`
	Harness    string `json:"harness"`
	ArmVersion string `json:"arm_version"`
	Dataset    string `json:"dataset,omitempty"`
	Messages   int64  `json:"messages,omitempty"`
	Runs       int    `json:"runs"`
	Measured   int    `json:"measured"`
	// Medians of the measured runs' headline figures; nil when none
	// observed them. RowsPerS is spatec's rate, HarnessRowsPerS the
	// reference harness's definition.
	RowsPerS        *float64 `json:"rows_per_s,omitempty"`
	HarnessRowsPerS *float64 `json:"harness_rows_per_s,omitempty"`
	Cores           *float64 `json:"cores,omitempty"`
	Peak            *float64 `json:"peak,omitempty"`
}

// HistoryChart draws one rate's medians over sittings, one line per source,
// environment digest and dataset: sittings under other conditions are never
// joined.
type HistoryChart struct {
	ID string
	// Title names the rate drawn.
	Title         string
	Width, Height int
	PlotX, PlotY  float64
	PlotW, PlotH  float64
	YTicks        []tick
	Lines         []HistoryLine
}

// HistoryLine is one environment digest's sittings.
type HistoryLine struct {
	Label  string
	Class  string
	Points string
	Dots   []historyDot
}

type historyDot struct {
	X, Y  float64
	Title string
}

// historyAcc gathers runs into arms and sittings as they are read, so
// that a history over years of records holds one entry a sitting, not one
// a run.
type historyAcc struct {
	arms map[armName]*armHistory
}

type armName struct{ entrant, variant string }

// armHistory is one arm's sittings. The runs of a sitting mostly come one
// after another in a log, so the last one is tried before the map.
type armHistory struct {
	sittings map[sittingKey]*sittingAcc
	lastKey  sittingKey
	last     *sittingAcc
}

type sittingKey struct {
	year, month, day                               int
	source, env, digest, harness, version, dataset string
	messages                                       int64
}

type sittingAcc struct {
	runs, measured             int
	rows, harness, cores, peak []float64
}

func (a *historyAcc) sitting(entrant, variant string, k sittingKey) *sittingAcc {
	if a.arms == nil {
		a.arms = map[armName]*armHistory{}
	}
	h := a.arms[armName{entrant, variant}]
	if h == nil {
		h = &armHistory{sittings: map[sittingKey]*sittingAcc{}}
		a.arms[armName{entrant, variant}] = h
	}
	if h.last == nil || h.lastKey != k {
		s := h.sittings[k]
		if s == nil {
			s = &sittingAcc{}
			h.sittings[k] = s
		}
		h.lastKey, h.last = k, s
	}
	h.last.runs++
	return h.last
}

func keyOf(t time.Time, source, env, digest, harness, version, dataset string, messages int64) sittingKey {
	y, m, d := t.UTC().Date()
	return sittingKey{y, int(m), d, source, env, digest, harness, version, dataset, messages}
}

// addRecord adds a spatec record.
func (a *historyAcc) addRecord(rec *record.Record) {
	s := a.sitting(rec.SUT.Entrant, rec.SUT.Variant, keyOf(rec.Run.StartedAt, "spatec", rec.Run.Env, rec.Run.EnvDigest,
		"spatec "+strconv.Itoa(rec.Run.HarnessVersion), rec.SUT.Version, rec.Run.Dataset.Version, rec.Run.Dataset.Messages))
	if !rec.Status.CarriesMeasurement() {
		return
	}
	s.measured++
	for _, f := range []struct {
		name string
		out  *[]float64
	}{{record.RowsPerS, &s.rows}, {record.HarnessRowsPerS, &s.harness}, {record.CoresUsed, &s.cores}, {record.PeakAnonBytes, &s.peak}} {
		if m, ok := rec.Metrics[f.name]; ok {
			*f.out = append(*f.out, m.Value)
		}
	}
}

// add adds a run read from another tool's records, whose figures are there
// only when it carries a measurement.
func (a *historyAcc) add(h HistoryRun) {
	s := a.sitting(h.Entrant, h.Variant, keyOf(h.Started, h.Source, h.Env, h.EnvDigest, h.Harness, h.ArmVersion, h.Dataset, h.Messages))
	measured := false
	for _, f := range []struct {
		v   *float64
		out *[]float64
	}{{h.RowsPerS, &s.rows}, {h.HarnessRowsPerS, &s.harness}, {h.Cores, &s.cores}, {h.Peak, &s.peak}} {
		if f.v != nil {
			*f.out = append(*f.out, *f.v)
			measured = true
		}
	}
	if measured {
		s.measured++
	}
}

// histories lays the arms out, oldest sitting first.
func (a *historyAcc) histories() []*History {
	names := slices.Collect(maps.Keys(a.arms))
	label := func(n armName) string {
		if n.variant == "" {
			return n.entrant
		}
		return n.entrant + ":" + n.variant
	}
	slices.SortFunc(names, func(x, y armName) int { return cmp.Compare(label(x), label(y)) })
	var out []*History
	for i, arm := range names {
		hist := &History{Arm: label(arm)}
		for k, acc := range a.arms[arm].sittings {
			hist.Sittings = append(hist.Sittings, &Sitting{
				Date: fmt.Sprintf("%04d-%02d-%02d", k.year, k.month, k.day), Source: k.source, Env: k.env, EnvDigest: k.digest,
				Harness: k.harness, ArmVersion: k.version, Dataset: k.dataset, Messages: k.messages, Runs: acc.runs, Measured: acc.measured,
				RowsPerS: medianOf(acc.rows), HarnessRowsPerS: medianOf(acc.harness), Cores: medianOf(acc.cores), Peak: medianOf(acc.peak),
			})
		}
		slices.SortFunc(hist.Sittings, func(a, b *Sitting) int {
			// Every field of the sitting's key takes part: the sittings come
			// out of a map, and a report must read the same each time.
			return cmp.Or(cmp.Compare(a.Date, b.Date), cmp.Compare(a.EnvDigest, b.EnvDigest), cmp.Compare(a.Source, b.Source),
				cmp.Compare(a.Env, b.Env), cmp.Compare(a.Harness, b.Harness), cmp.Compare(a.ArmVersion, b.ArmVersion),
				cmp.Compare(a.Dataset, b.Dataset), cmp.Compare(a.Messages, b.Messages))
		})
		// One rate a chart: the two windows never share an axis.
		for j, c := range []struct {
			title string
			rate  func(*Sitting) *float64
		}{
			{"median rows/s over spatec's window (the rate ranked)", func(s *Sitting) *float64 { return s.RowsPerS }},
			{"median rows/s over the reference harness's window, in both tools' records", func(s *Sitting) *float64 { return s.HarnessRowsPerS }},
		} {
			if ch := historyChart(fmt.Sprintf("H%d-%d", i+1, j+1), c.title, hist.Sittings, c.rate); ch != nil {
				hist.Charts = append(hist.Charts, ch)
			}
		}
		out = append(out, hist)
	}
	return out
}

func medianOf(vs []float64) *float64 {
	if len(vs) == 0 {
		return nil
	}
	slices.Sort(vs)
	m := vs[len(vs)/2]
	if len(vs)%2 == 0 {
		m = (vs[len(vs)/2-1] + vs[len(vs)/2]) / 2
	}
	return &m
}

// historyChart draws one rate's median for each sitting, x by the
// sitting's place in time, one line per environment digest, source and
// dataset; nil when no sitting has the rate.
func historyChart(id, title string, sittings []*Sitting, rate func(*Sitting) *float64) *HistoryChart {
	ch := &HistoryChart{ID: id, Title: title, Width: 760, Height: 170, PlotX: 58, PlotY: 8, PlotW: 330, PlotH: 130}
	yMax := 0.0
	for _, s := range sittings {
		if v := rate(s); v != nil {
			yMax = max(yMax, *v)
		}
	}
	if yMax == 0 {
		return nil
	}
	yMax = niceCeil(yMax)
	n := len(sittings)
	x := func(i int) float64 {
		if n == 1 {
			return ch.PlotX + ch.PlotW/2
		}
		return ch.PlotX + float64(i)/float64(n-1)*ch.PlotW
	}
	y := func(v float64) float64 { return ch.PlotY + ch.PlotH - v/yMax*ch.PlotH }
	lines := map[string]*HistoryLine{}
	var order []string
	for i, s := range sittings {
		v := rate(s)
		if v == nil {
			continue
		}
		key := fmt.Sprintf("%s %s %s %d", s.Source, short(s.EnvDigest), s.Dataset, s.Messages)
		l := lines[key]
		if l == nil {
			l = &HistoryLine{Label: fmt.Sprintf("%s, %s %s", s.Env, s.Source, short(s.EnvDigest)), Class: fmt.Sprintf("h%d", len(order)%6)}
			if s.Dataset != "" {
				l.Label += ", " + datasetText(s.Dataset, s.Messages)
			}
			lines[key] = l
			order = append(order, key)
		}
		px, py := x(i), y(*v)
		l.Points = strings.TrimSpace(l.Points + fmt.Sprintf(" %.1f,%.1f", px, py))
		l.Dots = append(l.Dots, historyDot{X: px, Y: py, Title: fmt.Sprintf("%s: %s rows/s (%s)", s.Date, human(*v), l.Label)})
	}
	for _, k := range order {
		ch.Lines = append(ch.Lines, *lines[k])
	}
	for k := 0; k <= 4; k++ {
		w := yMax * float64(k) / 4
		ch.YTicks = append(ch.YTicks, tick{X: y(w), Label: human(w)})
	}
	return ch
}

// datasetText names a dataset and, when known, how many of its messages.
func datasetText(dataset string, messages int64) string {
	if messages <= 0 {
		return dataset
	}
	return dataset + ", " + human(float64(messages)) + " msgs"
}
