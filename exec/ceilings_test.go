package exec

import (
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"spatec.dev/spatec/exec/chstore"
	"spatec.dev/spatec/runs/record"
	"spatec.dev/spatec/schema"
)

// freshCeilings are ceilings measured under exactly p's infrastructure.
func freshCeilings(p *schema.Plan) *Ceilings {
	c := &Ceilings{
		Env: p.Env.Name, InfraDigest: p.InfraDigest(), Partitions: p.Env.Partitions,
		Workload: p.Workload.Name, MessageBytes: p.Workload.Generator.MessageBytes, MeasuredFrom: measuredFrom(p.Env),
	}
	c.Broker.MessagesPerSec, c.Broker.BytesPerSec = 100_000, 100_000*float64(p.Workload.Generator.MessageBytes)
	c.ClickHouse.RowsPerSec = 200_000
	return c
}

func TestCeilingsUsable(t *testing.T) {
	plan := func() *schema.Plan {
		p := burnPlan(holdEnv(), "burn", 0.5, 64*mib)
		p.Workload.Generator.MessageBytes = 200
		return p
	}
	for _, tc := range []struct {
		name   string
		adjust func(p *schema.Plan, c *Ceilings)
		// stale lists what the error must say; empty means usable.
		stale []string
	}{
		{name: "measured under this plan"},
		{name: "message size 5% larger", adjust: func(_ *schema.Plan, c *Ceilings) { c.MessageBytes = 210 }},
		{name: "message size 5% smaller", adjust: func(_ *schema.Plan, c *Ceilings) { c.MessageBytes = 190 }},
		{name: "other arm caps", adjust: func(p *schema.Plan, _ *Ceilings) {
			// The arm's own caps are not the infrastructure's.
			c := p.Entrant.Containers["burn"]
			c.CPUs = 1
			p.Entrant.Containers["burn"] = c
			p.Env.Envelope.CPUs = 1
		}},
		{name: "other infrastructure caps", adjust: func(p *schema.Plan, _ *Ceilings) {
			p.Env.Infra.ClickHouse.Memory *= 2
		}, stale: []string{"other infrastructure caps"}},
		{name: "other partitions", adjust: func(p *schema.Plan, _ *Ceilings) {
			p.Env.Partitions = 8
		}, stale: []string{"measured at 4 partitions, the plan has 8"}},
		{name: "message size more than 5% larger", adjust: func(_ *schema.Plan, c *Ceilings) { c.MessageBytes = 211 }, stale: []string{
			"measured at 211-byte messages, the plan's are 200 (more than 5% off)",
		}},
		{name: "message size more than 5% smaller", adjust: func(_ *schema.Plan, c *Ceilings) { c.MessageBytes = 189 }, stale: []string{
			"measured at 189-byte messages",
		}},
		{name: "measured from the host for services on the run's network", adjust: func(p *schema.Plan, c *Ceilings) {
			p.Env.Network, c.MeasuredFrom = "bridge", MeasuredFromHost
		}, stale: []string{`measured from "host", and local's are measured from its run network`}},
		{name: "a ceiling missing", adjust: func(_ *schema.Plan, c *Ceilings) { c.ClickHouse.RowsPerSec = 0 }, stale: []string{
			"a ceiling is missing",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := plan()
			c := freshCeilings(p)
			if tc.adjust != nil {
				tc.adjust(p, c)
			}
			err := c.Usable(p, float64(p.Workload.Generator.MessageBytes))
			if len(tc.stale) == 0 {
				if err != nil {
					t.Fatalf("Usable: %v; want usable", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Usable: nil; want stale (%v)", tc.stale)
			}
			for _, want := range append(tc.stale, "the ceilings are stale", "spatec ceiling --measure --env local") {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("Usable: %q does not say %q", err, want)
				}
			}
		})
	}
}

func TestCeilingsWriteLoad(t *testing.T) {
	p := burnPlan(holdEnv(), "burn", 0.5, 64*mib)
	c := freshCeilings(p)
	c.MeasuredAt = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	c.ClickHouse.Levels = []chstore.IngestLevel{{Concurrency: 2, RowsPerSec: 200_000}}
	root := t.TempDir()
	path := CeilingsPath(root, p.Env.Name, p.Workload.Name)
	if want := filepath.Join(root, p.Env.Name, "ceilings", p.Workload.Name+".json"); path != want {
		t.Errorf("CeilingsPath = %s; want %s", path, want)
	}
	if _, err := LoadCeilings(path); err == nil || !strings.Contains(err.Error(), "spatec ceiling --measure") {
		t.Errorf("LoadCeilings of a missing file: %v; want how to measure them", err)
	}
	if err := c.Write(path); err != nil {
		t.Fatal(err)
	}
	got, err := LoadCeilings(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.InfraDigest != c.InfraDigest || got.ClickHouse.RowsPerSec != c.ClickHouse.RowsPerSec ||
		!got.MeasuredAt.Equal(c.MeasuredAt) || len(got.ClickHouse.Levels) != 1 {
		t.Errorf("read back %+v; wrote %+v", got, c)
	}
	if err := got.Usable(p, float64(p.Workload.Generator.MessageBytes)); err != nil {
		t.Errorf("ceilings read back are not usable: %v", err)
	}
}

// TestGateStaleAndFreshCeilings complements gate_status_test.go: stale
// ceilings keep a complete run but flag it, and usable ones record the
// arm's rates, its shares of each ceiling and the ceilings themselves.
func TestGateStaleAndFreshCeilings(t *testing.T) {
	const n = 20_000
	newRun := func(p *schema.Plan) *armRun {
		return &armRun{plan: p, rec: record.Record{
			Run:     record.Run{Dataset: record.Dataset{Messages: n, ExpectedRows: n}},
			Metrics: map[string]record.Metric{}, Flags: []string{},
		}, expected: expectation{bytes: n * 200}}
	}
	// A 2 s drain of n rows of 200 bytes: 10 000 rows/s and msg/s.
	drained := drainResult{want: n, drained: true, drain: chstore.Drain{Want: n, Counted: true, DistinctCounted: true, Count: n, Distinct: n, Elapsed: 2 * time.Second}}
	plan := func() *schema.Plan {
		p := burnPlan(holdEnv(), "burn", 0.5, 64*mib)
		p.Workload.Generator.MessageBytes = 200
		return p
	}
	write := func(t *testing.T, c *Ceilings) string {
		path := filepath.Join(t.TempDir(), "ceilings.json")
		if err := c.Write(path); err != nil {
			t.Fatal(err)
		}
		return path
	}

	t.Run("stale", func(t *testing.T) {
		p := plan()
		c := freshCeilings(p)
		c.Partitions = 16
		run := newRun(p)
		err := run.gate(drained, write(t, c))
		run.finish(err, time.Now())
		if err != nil || run.rec.Status != record.StatusOK {
			t.Fatalf("gate: %v, status %s; a complete run under stale ceilings is kept", err, run.rec.Status)
		}
		if !contains(run.rec.Flags, record.FlagHeadroomUnproven) || !strings.Contains(run.rec.Note, "measured at 16 partitions, the plan has 4") {
			t.Errorf("flags %v, note %q; want stale ceilings flagged %s with the reason", run.rec.Flags, run.rec.Note, record.FlagHeadroomUnproven)
		}
		if _, ok := run.rec.Metrics[record.InfraClickHouseIngestShare]; ok || run.rec.Run.Ceilings != nil {
			t.Errorf("stale ceilings were used: metrics %v, run.ceilings %v", run.rec.Metrics, run.rec.Run.Ceilings)
		}
	})

	t.Run("fresh", func(t *testing.T) {
		p := plan()
		run := newRun(p)
		if err := run.gate(drained, write(t, freshCeilings(p))); err != nil {
			t.Fatalf("gate: %v", err)
		}
		m := run.rec.Metrics
		for name, want := range map[string]float64{
			record.RowsPerS: 10_000, record.MsgsPerS: 10_000, record.BytesPerS: 2_000_000,
			record.InfraBrokerConsumeShare: 0.1, record.InfraClickHouseIngestShare: 0.05,
			record.ExpectedRows: n, record.DistinctRows: n, record.DuplicateRows: 0, record.WindowSeconds: 2,
		} {
			if got, ok := m[name]; !ok || math.Abs(got.Value-want) > 1e-9*want {
				t.Errorf("%s = %v (present %v); want %v", name, got.Value, ok, want)
			}
		}
		for name, metric := range m {
			if !record.KnownUnit(metric.Unit) {
				t.Errorf("%s has unit %q, not a known unit", name, metric.Unit)
			}
		}
		if got := run.rec.Run.Ceilings["clickhouse_rows_per_s"].Value; got != 200_000 || len(run.rec.Run.Ceilings) != 3 {
			t.Errorf("run.ceilings = %v; want the three ceilings gated against", run.rec.Run.Ceilings)
		}
		if len(run.rec.Flags) != 0 || run.rec.Note != "" {
			t.Errorf("flags %v, note %q; want none", run.rec.Flags, run.rec.Note)
		}
	})
}
