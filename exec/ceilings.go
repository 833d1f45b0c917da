package exec

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"spatec.dev/spatec/exec/ceiling"
	"spatec.dev/spatec/exec/engine"
	"spatec.dev/spatec/schema"
)

// Ceilings is what the infrastructure can absorb under an environment's
// caps (C12): written by `spatec ceiling --measure`, read by every run.
type Ceilings struct {
	// Env, InfraDigest, Partitions, Workload and MessageBytes (the mean
	// size of a message) say what the ceilings were measured under; a run
	// under anything else finds them stale.
	Env          string `json:"env"`
	InfraDigest  string `json:"infra_digest"`
	Partitions   int    `json:"partitions"`
	Workload     string `json:"workload"`
	MessageBytes int    `json:"message_bytes"`
	ceiling.Figures
	// MeasuredFrom says where the measuring client ran: MeasuredInNetwork
	// or MeasuredFromHost.
	MeasuredFrom  string    `json:"measured_from"`
	MeasuredAt    time.Time `json:"measured_at"`
	SpatecVersion string    `json:"spatec_version"`
	// Imported says where ceilings spatec did not measure came from (the
	// reference harness's file, its digest, its provenance); nil for
	// ceilings spatec measured. Imported ceilings were held to the
	// environment's plan when they were imported, and are held to each
	// run's plan as measured ones are.
	Imported *Imported `json:"imported,omitempty"`
}

// Where a ceiling pass measures from.
const (
	// MeasuredInNetwork: a client in a container on the run's network,
	// reaching the services the way the arms do.
	MeasuredInNetwork = "run network"
	// MeasuredFromHost: spatec's own process, for services on the host.
	MeasuredFromHost = "host"
)

// measuredFrom is where the ceilings of env must be measured from: inside
// the run's network when its services run in containers there.
func measuredFrom(env schema.Environment) string {
	if env.Network == "bridge" {
		return MeasuredInNetwork
	}
	return MeasuredFromHost
}

// CeilingsPath is where an environment's ceilings for a workload live
// under a results root: the ingest ceiling is in the workload's rows.
func CeilingsPath(results, env, workload string) string {
	return filepath.Join(results, env, "ceilings", workload+".json")
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

// Usable says why the ceilings cannot gate this plan, whose messages are
// messageBytes long on average, or nil: measured under other
// infrastructure caps, another partition count, another workload, or a
// message size more than 5% off is stale (C12).
func (c *Ceilings) Usable(p *schema.Plan, messageBytes float64) error {
	var why []string
	if c.InfraDigest != p.InfraDigest() {
		why = append(why, "they were measured under other infrastructure caps")
	}
	if c.Partitions != p.Env.Partitions {
		why = append(why, fmt.Sprintf("they were measured at %d partitions, the plan has %d", c.Partitions, p.Env.Partitions))
	}
	if c.Workload != p.Workload.Name {
		why = append(why, fmt.Sprintf("they were measured on workload %q, the plan runs %s", c.Workload, p.Workload.Name))
	}
	if math.Abs(float64(c.MessageBytes)-messageBytes) > 0.05*messageBytes {
		why = append(why, fmt.Sprintf("they were measured at %d-byte messages, the plan's are %.0f (more than 5%% off)", c.MessageBytes, messageBytes))
	}
	if want := measuredFrom(p.Env); c.MeasuredFrom != want {
		why = append(why, fmt.Sprintf("they were measured from %q, and %s's are measured from its %s", c.MeasuredFrom, p.Env.Name, want))
	}
	if c.Broker.MessagesPerSec <= 0 || c.Broker.BytesPerSec <= 0 || c.ClickHouse.RowsPerSec <= 0 {
		why = append(why, "a ceiling is missing")
	}
	if len(why) > 0 {
		return fmt.Errorf("the ceilings are stale: %v; measure again with `spatec ceiling --measure --env %s`", why, p.Env.Name)
	}
	return nil
}

// ceilingImage is the image of the in-network ceiling client.
const ceilingImage = "spatec-ceiling:0.1.0"

// MeasureCeilings runs the ceiling pass on the session's infrastructure:
// the broker's consume ceiling over the prefilled topic, and ClickHouse's
// native ingest ceiling with a concurrency sweep into a scratch table. For
// services in containers on the run's network it runs the measuring client
// in a container on that network, as an arm would reach them; for services
// on the host, in this process.
func (s *Session) MeasureCeilings(ctx context.Context, wl schema.Workload) (*Ceilings, error) {
	r := s.runner
	// A plan of no arm: the environment and the workload.
	plan := &schema.Plan{Env: s.env, Workload: wl}
	n, err := s.prefill(ctx, plan, wl.Messages)
	if err != nil {
		return nil, err
	}
	exp, err := s.expect(ctx, plan, n)
	if err != nil {
		return nil, err
	}
	c := &Ceilings{Env: s.env.Name, InfraDigest: plan.InfraDigest(), Partitions: s.env.Partitions, Workload: wl.Name,
		MessageBytes: int(math.Round(float64(exp.bytes) / float64(n))), MeasuredFrom: measuredFrom(s.env), MeasuredAt: r.now().UTC(), SpatecVersion: r.Version}

	r.Progress.Start("ceiling", 0, "")
	if c.MeasuredFrom == MeasuredInNetwork {
		c.Figures, err = s.measureInNetwork(ctx, plan, n)
	} else {
		c.Figures, err = ceiling.Measure(ctx, ceiling.Target{
			Brokers: []string{s.hostAddrs[schema.ServiceBroker]}, ClickHouse: s.hostAddrs[schema.ServiceClickHouse],
			User: s.env.Endpoints.ClickHouseUser, Password: s.env.Endpoints.ClickHousePassword,
			Database: s.env.Endpoints.Database, Workload: wl, Messages: n,
		}, r.Progress.Printf)
	}
	if err != nil {
		r.Progress.Fail(err)
		return nil, err
	}
	r.Progress.End()
	return c, nil
}

// measureInNetwork runs cmd/spatec-ceiling in a container on the run's
// network and reads its figures, relaying what it says as it goes.
func (s *Session) measureInNetwork(ctx context.Context, plan *schema.Plan, messages int64) (ceiling.Figures, error) {
	r := s.runner
	var f ceiling.Figures
	img, err := s.ensureImage(ctx, ceilingImage, "", &schema.Build{Program: "./cmd/spatec-ceiling"})
	if err != nil {
		return f, err
	}
	workload, err := json.Marshal(plan.Workload)
	if err != nil {
		return f, err
	}
	name := "spatec-ceiling-" + s.id[len(s.id)-12:]
	r.Progress.Printf("measuring the ceilings from container %s on network %s", name, s.network)
	code, out, err := r.Engine.RunOnce(ctx, engine.ContainerSpec{
		Name:  name,
		Image: img.ref,
		Args: []string{
			"-brokers", plan.Env.Endpoints.Brokers, "-clickhouse", plan.Env.Endpoints.ClickHouse,
			"-user", plan.Env.Endpoints.ClickHouseUser, "-password", plan.Env.Endpoints.ClickHousePassword,
			"-database", plan.Env.Endpoints.Database, "-workload", string(workload),
			"-messages", strconv.FormatInt(messages, 10),
		},
		Labels:      s.labels(LabelRun, s.id, LabelRole, "ceiling"),
		NetworkMode: s.network,
	}, func(line string) {
		if !strings.HasPrefix(line, "{") {
			r.Progress.Printf("%s", line)
		}
	})
	if err != nil {
		return f, fmt.Errorf("running the ceiling client %s: %w", name, err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	last := lines[len(lines)-1]
	if code != 0 || json.Unmarshal([]byte(last), &f) != nil {
		return f, fmt.Errorf("the ceiling client %s exited with code %d; its output ends:\n%s", name, code, strings.Join(lines[max(0, len(lines)-10):], "\n"))
	}
	return f, nil
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
