package report

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"spatec.dev/spatec/runs/interop"
	"spatec.dev/spatec/runs/record"
)

// JointRanking says how a joint section ranks, for a reader.
const JointRanking = "a joint section ranks spatec's runs and the reference harness's together by harness_rows_per_s, " +
	"the one rate both tools define: the rows count() gave at the first poll that reached N, duplicates included, " +
	"over the window from the arm's last container start to that poll (spatec records it beside its own rate, schema 2 as its rows_per_s); " +
	"it does so only where the workload, the dataset and its size, and every fact of the environment that both sides' records state " +
	"(the environment, the host, the partitions, the infrastructure's images, versions and caps, the arm's envelope) agree. " +
	"spatec's rows_per_s is not defined for the harness's runs, and is shown for spatec's, not ranked; " +
	"the harness's peak memory is the cgroup's anon alone and spatec's anon+shmem (C7), so neither is shown"

// harnessName names the other tool for a reader.
const harnessName = "the reference harness"

// Joint says what a joint section sets together.
type Joint struct {
	// Section is the section of spatec's runs ranked here, and
	// SpatecProtocol their protocol.
	Section        string `json:"section"`
	SpatecProtocol string `json:"spatec_protocol"`
	// HarnessEnv, HarnessEnvDigest and HarnessProtocol are the reference
	// harness's runs' environment, its digest (of the harness's profile)
	// and their protocol; HarnessRuns how many there are.
	HarnessEnv       string `json:"harness_env"`
	HarnessEnvDigest string `json:"harness_env_digest"`
	HarnessProtocol  string `json:"harness_protocol"`
	HarnessRuns      int    `json:"harness_runs"`
	// Agreement is the facts the two sides' environments agree on, and
	// those one side alone states, which are not compared.
	Agreement interop.Agreement `json:"agreement"`
}

// Agreed lists the facts both sides state, equal, for a reader: both
// forms where they are written differently (an image by two addresses of
// its repository).
func (j *Joint) Agreed() []string {
	out := make([]string, 0, len(j.Agreement.Agree))
	for _, p := range j.Agreement.Agree {
		t := p.Label + " " + p.Spatec.Shown
		if p.Other.Shown != p.Spatec.Shown {
			t += " = " + p.Other.Shown
		}
		out = append(out, t)
	}
	return out
}

// infraDiffers says how b's environment, as its record states it, differs
// from a's, two records of one section (one environment digest): "" when it
// does not. The infrastructure's images, versions and caps, the host's
// cores and the data plane's caps are the record's own facts.
func infraDiffers(a, b *record.Record) string {
	if a.Run.Host.Cores != b.Run.Host.Cores {
		return fmt.Sprintf("its runs counted %d and %d host cores", a.Run.Host.Cores, b.Run.Host.Cores)
	}
	if len(a.Run.Infra) != len(b.Run.Infra) {
		return "its runs ran beside different infrastructure containers"
	}
	for i, x := range a.Run.Infra {
		y := b.Run.Infra[i]
		if x.Role != y.Role || x.ImageDigest != y.ImageDigest || x.Version != y.Version || x.CPUs != y.CPUs || x.MemoryBytes != y.MemoryBytes {
			return fmt.Sprintf("its runs ran beside different %s containers (image, version or caps: run %s and run %s)", x.Role, a.RunID, b.RunID)
		}
	}
	dp := func(r *record.Record) record.Container {
		for _, c := range r.SUT.Containers {
			if c.Role == "data-plane" {
				return c
			}
		}
		return record.Container{}
	}
	if x, y := dp(a), dp(b); x.CPUs != y.CPUs || x.MemoryBytes != y.MemoryBytes {
		return fmt.Sprintf("its arms' data planes had different caps (run %s and run %s)", a.RunID, b.RunID)
	}
	return ""
}

// harnessGroup is the other tool's runs under one set of conditions: one
// environment at one digest, protocol, workload, dataset and size, and the
// same facts of the environment.
type harnessGroup struct {
	env, digest, protocol, workload, dataset string
	messages                                 int64
	facts                                    interop.Facts
	runs                                     []HistoryRun
	matched                                  bool
}

func (g *harnessGroup) describe() string {
	return fmt.Sprintf("%s's %s of %s (env %s, protocol %s)", harnessName, plural(len(g.runs), "run"), g.env, short(g.digest), g.protocol)
}

// groups gathers the other tool's runs by their conditions, in the order
// first read.
func groups(runs []HistoryRun) []*harnessGroup {
	var out []*harnessGroup
	byKey := map[string]*harnessGroup{}
	for _, h := range runs {
		k := strings.Join([]string{h.Env, h.EnvDigest, h.Harness, h.Workload, h.Dataset, fmt.Sprint(h.Messages), h.Facts.Key()}, "\x00")
		g := byKey[k]
		if g == nil {
			g = &harnessGroup{env: h.Env, digest: h.EnvDigest, protocol: h.Harness, workload: h.Workload, dataset: h.Dataset, messages: h.Messages, facts: h.Facts}
			byKey[k] = g
			out = append(out, g)
		}
		g.runs = append(g.runs, h)
	}
	return out
}

// joint sets every section of spatec's runs beside the other tool's runs of
// the same workload, dataset and size: ranked together in a joint section
// where their environments' facts agree, kept apart, with the facts that
// differ, where they do not.
func (b *builder) joint(baseline string) {
	if len(b.rep.foreign) == 0 {
		return
	}
	gs := groups(b.rep.foreign)
	for _, sec := range b.rep.Sections {
		var facts interop.Facts
		for _, g := range gs {
			if g.workload != sec.Workload || g.dataset != sec.DatasetVersion || g.messages != sec.Messages || g.workload == "" {
				continue
			}
			g.matched = true
			if sec.varies != "" {
				sec.HarnessApart = append(sec.HarnessApart, fmt.Sprintf("not ranked with %s: no one set of facts describes this section's environment: %s", g.describe(), sec.varies))
				continue
			}
			if facts == nil {
				facts = b.sectionFacts(sec)
			}
			a := interop.Compare(facts, g.facts, harnessName)
			if !a.Agrees() {
				why := apart(g, a)
				if _, ok := facts.Get(interop.FactPartitions); !ok {
					why += spatecUnstated(sec)
				}
				sec.HarnessApart = append(sec.HarnessApart, why)
				continue
			}
			j := jointSection(sec, g, a, len(b.rep.Joint)+1)
			rank(j, baseline)
			b.rep.Joint = append(b.rep.Joint, j)
		}
	}
	for _, g := range gs {
		if !g.matched {
			b.rep.HarnessUnmatched = append(b.rep.HarnessUnmatched, fmt.Sprintf("%s, workload %s, dataset %s: no section of spatec's runs has that workload, dataset and size, so they are in the history alone",
				g.describe(), orNone(g.workload), datasetText(cmp.Or(g.dataset, "(unnamed)"), g.messages)))
		}
	}
	if len(b.rep.Joint) > 0 {
		b.rep.JointRanking = JointRanking
	}
}

// sectionFacts are the facts of a section's environment: its first
// record's, every later one having stated the same (infraDiffers).
func (b *builder) sectionFacts(sec *Section) interop.Facts {
	if b.facts != nil {
		return b.facts(sec.first)
	}
	return interop.SpatecFacts(sec.first, nil)
}

// apart says why a group of the other tool's runs is not ranked with a
// section: each fact that differs with both values, each that must be
// compared and is not stated.
func apart(g *harnessGroup, a interop.Agreement) string {
	var why []string
	for _, p := range a.Differ {
		why = append(why, fmt.Sprintf("%s %s (spatec's, from %s) vs %s (%s's, from %s)", p.Label, p.Spatec.Shown, p.Spatec.From, p.Other.Shown, harnessName, p.Other.From))
	}
	why = append(why, a.Missing...)
	return fmt.Sprintf("not ranked with %s: the environments differ: %s", g.describe(), strings.Join(why, "; "))
}

// spatecUnstated says, after a fact spatec's records did not state, where
// they state it: the environment their digest names.
func spatecUnstated(sec *Section) string {
	return fmt.Sprintf(" (spatec's records state the host, the partitions and the images by reference through the environment their env_digest names, and no environment %s of digest %s was at hand: give the tree that declares it with --tree)", sec.Env, short(sec.EnvDigest))
}

// jointSection ranks a section's arms and a group's together.
func jointSection(sec *Section, g *harnessGroup, a interop.Agreement, n int) *Section {
	j := &Section{
		ID: fmt.Sprintf("J%d", n), Env: sec.Env, EnvDigest: sec.EnvDigest, HarnessVersion: sec.HarnessVersion,
		Workload: sec.Workload, DatasetVersion: sec.DatasetVersion, Messages: sec.Messages,
		Records: sec.Records + len(g.runs), FirstRun: sec.FirstRun, LastRun: sec.LastRun,
		RankedBy: record.HarnessRowsPerS,
		Joint: &Joint{Section: sec.ID, SpatecProtocol: fmt.Sprintf("spatec %d", sec.HarnessVersion),
			HarnessEnv: g.env, HarnessEnvDigest: g.digest, HarnessProtocol: g.protocol, HarnessRuns: len(g.runs), Agreement: a},
	}
	for _, arm := range sec.Arms {
		c := *arm
		c.Source = "spatec"
		c.Rank, c.Tied, c.TiedWith, c.Ratio, c.VsBaseline = 0, false, nil, 0, ""
		c.Notes = slices.Clone(arm.Notes)
		j.Arms = append(j.Arms, &c)
	}
	arms := map[armName]*Arm{}
	var order []armName
	for _, h := range g.runs {
		if t := h.Started; !t.IsZero() {
			if j.FirstRun.IsZero() || t.Before(j.FirstRun) {
				j.FirstRun = t
			}
			if t.After(j.LastRun) {
				j.LastRun = t
			}
		}
		n := armName{h.Entrant, h.Variant}
		arm := arms[n]
		if arm == nil {
			label := h.Entrant
			if h.Variant != "" {
				label += ":" + h.Variant
			}
			arm = &Arm{Label: label + " (reference harness)", Entrant: h.Entrant, Variant: h.Variant, Source: harnessName,
				Messages: h.Messages, Status: record.StatusOK, StatusCounts: map[record.Status]int{},
				Metrics: map[string]*Stat{}, series: map[string]*series{}}
			arms[n] = arm
			order = append(order, n)
		}
		st := record.Status(h.Status)
		arm.Runs++
		arm.StatusCounts[st]++
		if st.Severity() > arm.Status.Severity() {
			arm.Status = st
		}
		arm.RunIDs = append(arm.RunIDs, h.RunID)
		if h.HarnessRowsPerS == nil {
			continue
		}
		arm.Measured++
		addValue(arm, record.HarnessRowsPerS, *h.HarnessRowsPerS, "rows/s", true)
		if h.Cores != nil {
			addValue(arm, record.CoresUsed, *h.Cores, "cores", false)
		}
	}
	for _, n := range order {
		arm := arms[n]
		arm.aggregate()
		j.Arms = append(j.Arms, arm)
	}
	return j
}

// addValue adds one run's reading to an arm read from the other tool's
// records, whose units are the ones HistoryRun states.
func addValue(arm *Arm, name string, v float64, unit string, higher bool) {
	sr := arm.series[name]
	if sr == nil {
		sr = &series{first: record.Metric{Unit: unit, HigherIsBetter: higher}}
		arm.series[name] = sr
	}
	sr.values = append(sr.values, v)
}

// HistoryOf is a run read from the reference harness's records as the
// history and the joint sections know it: its dataset in spatec's name,
// its rate as the harness's, its environment's facts.
func HistoryOf(e interop.Entry) HistoryRun {
	return HistoryRun{
		Source: "schema-2", RunID: e.RunID, Entrant: e.Entrant, Variant: e.Variant, Env: e.Env, EnvDigest: e.EnvDigest,
		Started: e.Time(), Harness: fmt.Sprintf("%s %d", e.HarnessProtocol, e.HarnessVersion), ArmVersion: e.ArmVersion,
		Status: e.Status, Workload: e.Workload, Dataset: e.DatasetVersion, Messages: e.Messages,
		RowsPerS: e.RowsPerS, HarnessRowsPerS: e.HarnessRowsPerS, Cores: e.CoresUsed, Peak: e.PeakAnonBytes,
		Facts: e.Facts,
	}
}
