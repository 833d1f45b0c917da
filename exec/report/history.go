package report

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"spatec.dev/spatec/exec/record"
)

// HistoryRun is one run as the history table knows it, from a spatec
// record or from another tool's (the public reference harness's schema 2).
type HistoryRun struct {
	// Source is "spatec" or the other tool's schema ("schema-2").
	Source    string
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
	// The headline figures, nil where the run did not observe them.
	RowsPerS, Cores, Peak *float64
}

// History is one arm over every sitting that ran it.
type History struct {
	Arm      string     `json:"arm"`
	Sittings []*Sitting `json:"sittings"`
	Chart    *HistoryChart
}

// Sitting is the runs of one arm on one day under one set of conditions
// (environment digest, protocol, arm version): the unit a history compares.
type Sitting struct {
	Date       string `json:"date"`
	Source     string `json:"source"`
	Env        string `json:"env"`
	EnvDigest  string `json:"env_digest"`
	Harness    string `json:"harness"`
	ArmVersion string `json:"arm_version"`
	Runs       int    `json:"runs"`
	Measured   int    `json:"measured"`
	// Medians of the measured runs' headline figures; nil when none
	// observed them.
	RowsPerS, Cores, Peak *float64
}

// HistoryChart draws the headline (median rows/s) over sittings, one line
// per environment digest: sittings under other conditions are never joined.
type HistoryChart struct {
	ID            string
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

// historyOf is a spatec record as history.
func historyOf(rec *record.Record) HistoryRun {
	h := HistoryRun{
		Source: "spatec", Entrant: rec.SUT.Entrant, Variant: rec.SUT.Variant, Env: rec.Run.Env,
		EnvDigest: rec.Run.EnvDigest, Started: rec.Run.StartedAt,
		Harness: fmt.Sprintf("spatec %d", rec.Run.HarnessVersion), ArmVersion: rec.SUT.Version, Status: string(rec.Status),
	}
	if rec.Status.CarriesMeasurement() {
		get := func(name string) *float64 {
			if m, ok := rec.Metrics[name]; ok {
				v := m.Value
				return &v
			}
			return nil
		}
		h.RowsPerS, h.Cores, h.Peak = get(record.RowsPerS), get(record.CoresUsed), get(record.PeakAnonBytes)
	}
	return h
}

// histories groups runs into arms and sittings, oldest sitting first.
func histories(runs []HistoryRun) []*History {
	type sittingKey struct{ date, source, env, digest, harness, version string }
	arms := map[string]map[sittingKey][]HistoryRun{}
	for _, h := range runs {
		arm := h.Entrant
		if h.Variant != "" {
			arm += ":" + h.Variant
		}
		k := sittingKey{h.Started.UTC().Format(time.DateOnly), h.Source, h.Env, h.EnvDigest, h.Harness, h.ArmVersion}
		if arms[arm] == nil {
			arms[arm] = map[sittingKey][]HistoryRun{}
		}
		arms[arm][k] = append(arms[arm][k], h)
	}
	var out []*History
	for i, arm := range slices.Sorted(maps.Keys(arms)) {
		hist := &History{Arm: arm}
		for k, rs := range arms[arm] {
			s := &Sitting{Date: k.date, Source: k.source, Env: k.env, EnvDigest: k.digest, Harness: k.harness, ArmVersion: k.version, Runs: len(rs)}
			var rows, cores, peak []float64
			for _, h := range rs {
				if h.RowsPerS != nil {
					s.Measured++
					rows = append(rows, *h.RowsPerS)
				}
				if h.Cores != nil {
					cores = append(cores, *h.Cores)
				}
				if h.Peak != nil {
					peak = append(peak, *h.Peak)
				}
			}
			s.RowsPerS, s.Cores, s.Peak = medianOf(rows), medianOf(cores), medianOf(peak)
			hist.Sittings = append(hist.Sittings, s)
		}
		slices.SortFunc(hist.Sittings, func(a, b *Sitting) int {
			return cmp.Or(cmp.Compare(a.Date, b.Date), cmp.Compare(a.EnvDigest, b.EnvDigest), cmp.Compare(a.Source, b.Source))
		})
		hist.Chart = historyChart(fmt.Sprintf("H%d", i+1), hist.Sittings)
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

// historyChart draws the median rows/s of each sitting, x by the sitting's
// place in time, one line per environment digest (and source).
func historyChart(id string, sittings []*Sitting) *HistoryChart {
	ch := &HistoryChart{ID: id, Width: 520, Height: 170, PlotX: 58, PlotY: 8, PlotW: 330, PlotH: 130}
	yMax := 0.0
	for _, s := range sittings {
		if s.RowsPerS != nil {
			yMax = max(yMax, *s.RowsPerS)
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
		if s.RowsPerS == nil {
			continue
		}
		key := s.Source + " " + short(s.EnvDigest)
		l := lines[key]
		if l == nil {
			l = &HistoryLine{Label: fmt.Sprintf("%s, %s %s", s.Env, s.Source, short(s.EnvDigest)), Class: fmt.Sprintf("h%d", len(order)%6)}
			lines[key] = l
			order = append(order, key)
		}
		px, py := x(i), y(*s.RowsPerS)
		l.Points = strings.TrimSpace(l.Points + fmt.Sprintf(" %.1f,%.1f", px, py))
		l.Dots = append(l.Dots, historyDot{X: px, Y: py, Title: fmt.Sprintf("%s: %s rows/s (%s)", s.Date, human(*s.RowsPerS), l.Label)})
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
