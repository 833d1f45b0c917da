package exec

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"

	"spatec.dev/spatec/exec/chstore"
	"spatec.dev/spatec/schema"
)

// Ceilings is what the infrastructure can absorb under an environment's
// caps (C12): written by `spatec ceiling --measure`, read by every run.
type Ceilings struct {
	// Env, InfraDigest, Partitions and MessageBytes say what the ceilings
	// were measured under; a run under anything else finds them stale.
	Env          string `json:"env"`
	InfraDigest  string `json:"infra_digest"`
	Partitions   int    `json:"partitions"`
	MessageBytes int    `json:"message_bytes"`
	// Broker is the consume ceiling: raw fetch, no consumer group.
	Broker struct {
		MessagesPerSec float64 `json:"messages_per_s"`
		BytesPerSec    float64 `json:"bytes_per_s"`
	} `json:"broker"`
	// ClickHouse is the ingest ceiling, per wire format.
	ClickHouse struct {
		Format      string                `json:"format"`
		RowsPerSec  float64               `json:"rows_per_s"`
		Concurrency int                   `json:"concurrency"`
		Levels      []chstore.IngestLevel `json:"levels"`
	} `json:"clickhouse"`
	MeasuredAt    time.Time `json:"measured_at"`
	SpatecVersion string    `json:"spatec_version"`
}

// CeilingsPath is where an environment's ceilings live under a results root.
func CeilingsPath(results, env string) string {
	return filepath.Join(results, env, "ceilings.json")
}

// LoadCeilings reads a ceilings file.
func LoadCeilings(path string) (*Ceilings, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("no ceilings at %s; measure them with `spatec ceiling --measure`", path)
	}
	if err != nil {
		return nil, fmt.Errorf("reading ceilings: %w", err)
	}
	var c Ceilings
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("reading ceilings %s: %w", path, err)
	}
	return &c, nil
}

// Usable says why the ceilings cannot gate this plan, or nil: measured under
// other infrastructure caps, another partition count, or a message size
// more than 5% off is stale (C12).
func (c *Ceilings) Usable(p *schema.Plan) error {
	var why []string
	if c.InfraDigest != p.InfraDigest() {
		why = append(why, "they were measured under other infrastructure caps")
	}
	if c.Partitions != p.Env.Partitions {
		why = append(why, fmt.Sprintf("they were measured at %d partitions, the plan has %d", c.Partitions, p.Env.Partitions))
	}
	if want := float64(p.Env.Workload.MessageBytes); math.Abs(float64(c.MessageBytes)-want) > 0.05*want {
		why = append(why, fmt.Sprintf("they were measured at %d-byte messages, the plan's are %d (more than 5%% off)", c.MessageBytes, p.Env.Workload.MessageBytes))
	}
	if c.Broker.MessagesPerSec <= 0 || c.Broker.BytesPerSec <= 0 || c.ClickHouse.RowsPerSec <= 0 {
		why = append(why, "a ceiling is missing")
	}
	if len(why) > 0 {
		return fmt.Errorf("the ceilings are stale: %v; measure again with `spatec ceiling --measure --env %s`", why, p.Env.Name)
	}
	return nil
}

// MeasureCeilings runs the ceiling pass on the session's infrastructure:
// the broker's consume ceiling over the prefilled topic, and ClickHouse's
// native ingest ceiling with a concurrency sweep into a scratch table.
func (s *Session) MeasureCeilings(ctx context.Context, plan *schema.Plan) (*Ceilings, error) {
	r := s.runner
	if _, err := s.prefill(ctx, plan); err != nil {
		return nil, err
	}
	wl := plan.Env.Workload
	c := &Ceilings{Env: plan.Env.Name, InfraDigest: plan.InfraDigest(), Partitions: plan.Env.Partitions,
		MessageBytes: wl.MessageBytes, MeasuredAt: r.now().UTC(), SpatecVersion: r.Version}

	r.Progress.Start("ceiling/broker", 0, "")
	bc, err := s.broker.ConsumeCeiling(ctx, wl.Topic, 0)
	if err != nil {
		r.Progress.Fail(err)
		return nil, fmt.Errorf("measuring the consume ceiling: %w", err)
	}
	r.Progress.End()
	c.Broker.MessagesPerSec, c.Broker.BytesPerSec = bc.MessagesPerSec, bc.BytesPerSec

	table := wl.Database + ".spatec_ceiling"
	if err := s.store.Exec(ctx, chstore.DefaultDDL(table)); err != nil {
		return nil, err
	}
	defer func() { _ = s.store.DropTable(context.WithoutCancel(ctx), table) }()
	r.Progress.Start("ceiling/clickhouse", 0, "")
	sweep, err := s.store.IngestCeiling(ctx, table, chstore.IngestOptions{
		Spec: s.corpus(plan),
		Progress: func(l chstore.IngestLevel) {
			r.Progress.Printf("clickhouse ingest: %d writers, %.0f rows/s", l.Concurrency, l.RowsPerSec)
		},
	})
	if err != nil {
		r.Progress.Fail(err)
		return nil, fmt.Errorf("measuring the ingest ceiling: %w", err)
	}
	r.Progress.End()
	c.ClickHouse.Format, c.ClickHouse.RowsPerSec = "Native", sweep.Best.RowsPerSec
	c.ClickHouse.Concurrency, c.ClickHouse.Levels = sweep.Best.Concurrency, sweep.Levels
	return c, nil
}

// Write stores the ceilings at path.
func (c *Ceilings) Write(path string) error {
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("writing ceilings: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing ceilings: %w", err)
	}
	return nil
}
