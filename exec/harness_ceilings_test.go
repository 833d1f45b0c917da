package exec

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"spatec.dev/spatec/exec/ceiling"
	"spatec.dev/spatec/exec/chstore"
	"spatec.dev/spatec/internal/harnessenv"
	"spatec.dev/spatec/runs/record"
	"spatec.dev/spatec/schema"
	"spatec.dev/spatec/workloads"
)

// importedAt is when the tests import.
var importedAt = time.Date(2026, 8, 1, 12, 0, 0, 0, time.UTC)

// harnessSample is how many of the corpus's first messages the tests take
// the mean message size over: the whole 1.5M-message dataset gives 4065.0
// bytes, the first 20,000 4063.8, well within C12's 5%.
const harnessSample = 20_000

// harnessPlan is a plan of no arm on the harness's host as spatec declares
// it, running sensor-batch, and the mean size of its messages.
func harnessPlan(t *testing.T, edits ...harnessenv.Edit) (*schema.Plan, float64) {
	t.Helper()
	env := harnessenv.Environment(t, edits...)
	wl := env.Workloads["sensor-batch"]
	b, err := workloads.MessageBytes(context.Background(), wl, harnessSample, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &schema.Plan{Env: *env, Workload: wl}, float64(b) / harnessSample
}

func importHarness(t *testing.T, path string, p *schema.Plan, messageBytes float64) (*Ceilings, error) {
	t.Helper()
	f, err := ReadHarnessCeilings(path)
	if err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	return f.Import(p.Env, p.Workload, messageBytes, importedAt, "0.1.0")
}

// The harness's ceilings of its host, imported for an environment of its
// host's caps, are spatec's ceilings of that environment: every figure
// mapped with its unit, every format named as spatec names it, and where
// they came from said.
func TestImportTheHarnessCeilings(t *testing.T) {
	path := harnessenv.CeilingsFile(t)
	file := harnessenv.HostCeilings()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	p, mb := harnessPlan(t)
	c, err := importHarness(t, path, p, mb)
	if err != nil {
		t.Fatalf("import: %v", err)
	}
	if c.Env != harnessenv.Name || c.InfraDigest != p.InfraDigest() || c.Partitions != 8 || c.Workload != "sensor-batch" ||
		c.MessageBytes != 4065 || c.MeasuredFrom != MeasuredInNetwork || !c.MeasuredAt.Equal(time.Date(2026, 7, 28, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("conditions %+v", c)
	}
	// The harness's megabyte is 10^6 bytes.
	if c.Broker.MessagesPerSec != 300_000 || c.Broker.BytesPerSec != 1219.5e6 {
		t.Errorf("broker %+v; want 300000 msg/s and 1219.5 MB/s as bytes/s", c.Broker)
	}
	ch := c.ClickHouse
	if ch.Format != ceiling.Native || ch.RowsPerSec != 30_000_000 || ch.Concurrency != 64 || len(ch.Levels) != 8 ||
		ch.Levels[5] != (chstore.IngestLevel{Concurrency: 64, RowsPerSec: 30_000_000}) {
		t.Errorf("the gate's ClickHouse ceiling %s %v rows/s at %d writers, levels %v; want Native's 30000000 at 64 of 8 levels", ch.Format, ch.RowsPerSec, ch.Concurrency, ch.Levels)
	}
	// Each format under ClickHouse's name, with the file's figure and
	// ladder.
	names := map[string]string{"arrow_stream": "ArrowStream", "json_each_row": "JSONEachRow", "native": "Native",
		"rowbinary": "RowBinary", "rowbinary_nt": "RowBinaryWithNamesAndTypes"}
	if len(ch.Formats) != len(file.ClickHouse) {
		t.Errorf("formats %+v; want %d", ch.Formats, len(file.ClickHouse))
	}
	for _, in := range file.ClickHouse {
		i := slices.IndexFunc(ch.Formats, func(f ceiling.FormatCeiling) bool { return f.Format == names[in.Format] })
		if i < 0 {
			t.Errorf("%s is not imported as %s: %+v", in.Format, names[in.Format], ch.Formats)
			continue
		}
		if f := ch.Formats[i]; f.RowsPerSec != float64(in.RowsPerS) || f.Concurrency != int(in.Threads) || len(f.Levels) != len(in.Sweep) {
			t.Errorf("format %s: %v rows/s at %d, %d levels; want %d at %d, %d", f.Format, f.RowsPerSec, f.Concurrency, len(f.Levels), in.RowsPerS, in.Threads, len(in.Sweep))
		}
	}
	sum := sha256.Sum256(raw)
	imp := c.Imported
	if imp == nil {
		t.Fatal("imported ceilings do not say where they came from")
	}
	// d867b69febf3 is the harness's own digest of its host's
	// infrastructure, as its published ceilings and records carry it.
	if imp.File != path || imp.SHA256 != "sha256:"+hex.EncodeToString(sum[:]) || imp.Date != harnessenv.CeilingsDate || imp.InfraDigest != "d867b69febf3" ||
		imp.InfraKey != "redpanda|3|8g|16|16g|8" || imp.Client != "inside" || imp.DatasetVersion != "d2-60d7e5bb2a82" ||
		!imp.ImportedAt.Equal(importedAt) || len(imp.Passes) != 6 || len(imp.NotMapped) != 0 ||
		imp.Formats["rowbinary_nt"] != "RowBinaryWithNamesAndTypes" || !strings.Contains(imp.From, "spate-etl/benchmark") {
		t.Errorf("provenance %+v", imp)
	}
	// Imported, they gate this plan's runs as measured ones do.
	if err := c.Usable(p, mb); err != nil {
		t.Errorf("imported ceilings are not usable by the plan they were imported for: %v", err)
	}
	out := CeilingsPath(t.TempDir(), c.Env, c.Workload)
	if err := c.Write(out); err != nil {
		t.Fatal(err)
	}
	back, err := LoadCeilings(out)
	if err != nil || back.Imported == nil || back.Imported.SHA256 != imp.SHA256 || len(back.ClickHouse.Formats) != 5 {
		t.Errorf("read back %+v, %v", back, err)
	}
}

// The ceilings the harness published of its host import for spatec's
// environment of that host as they are: measured under the infrastructure
// spatec's caps give, on the corpus spatec generates, from inside, with
// Native's ceiling and every format named.
func TestImportTheHarnessPublishedCeilings(t *testing.T) {
	dir := harnessenv.Checkout(t, "go test ./exec -run TestImportTheHarnessPublishedCeilings")
	path := filepath.Join(dir, "environments", "ceilings", harnessenv.Name+".json")
	p, mb := harnessPlan(t)
	c, err := importHarness(t, path, p, mb)
	if err != nil {
		t.Fatalf("import: %v", err)
	}
	imp := c.Imported
	if imp.InfraDigest != harnessenv.InfraDigest() || imp.InfraKey != harnessenv.InfraKey() || imp.Client != "inside" ||
		imp.DatasetVersion != "d2-60d7e5bb2a82" || len(imp.NotMapped) != 0 || len(imp.Passes) != 1+len(c.ClickHouse.Formats) {
		t.Errorf("provenance %+v", imp)
	}
	if c.ClickHouse.Format != ceiling.Native || c.ClickHouse.RowsPerSec <= 0 || len(c.ClickHouse.Levels) == 0 || c.Broker.MessagesPerSec <= 0 ||
		c.Broker.BytesPerSec <= 0 || c.MeasuredAt.IsZero() {
		t.Errorf("ceilings %+v", c.Figures)
	}
	if err := c.Usable(p, mb); err != nil {
		t.Errorf("the published ceilings are not usable by the plan they were imported for: %v", err)
	}
	t.Logf("imported %s: broker %.0f msg/s, ClickHouse %s %.0f rows/s, measured %s", path, c.Broker.MessagesPerSec,
		c.ClickHouse.Format, c.ClickHouse.RowsPerSec, imp.Date)
}

// editedCeilings is the host's ceilings file with edit made to it as JSON.
func editedCeilings(t *testing.T, edit func(m map[string]any)) string {
	t.Helper()
	raw, err := os.ReadFile(harnessenv.CeilingsFile(t))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "edited.json")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func ingestOf(m map[string]any, format string) map[string]any {
	for _, c := range m["clickhouse"].([]any) {
		if c := c.(map[string]any); c["format"] == format {
			return c
		}
	}
	return nil
}

// Each fact of the file that differs from the environment's plan refuses
// the import, with the fact named: a ceiling measured under other caps,
// at another partition count or message size, on another corpus or from
// elsewhere is stale (C12), and writing it as the environment's would be
// a lie.
func TestImportRefusesCeilingsOfAnotherPlan(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edits []harnessenv.Edit
		file  func(m map[string]any)
		// bytes, when not 0, is the plan's mean message size.
		bytes float64
		want  []string
	}{
		{name: "broker caps", edits: []harnessenv.Edit{{Old: "cpus:   3\n", New: "cpus:   2\n"}}, want: []string{
			"the broker's consume ceiling and the ClickHouse ceilings in arrow_stream, json_each_row, native, rowbinary, rowbinary_nt: measured under the harness's infrastructure d867b69febf3, and c8g-8xl-ec2-docker's caps, written as the harness writes its own (redpanda|2|8g|16|16g|8), are ",
			"the broker's consume ceiling: the broker had 3 CPUs, and the environment gives it 2",
		}},
		{name: "broker memory", edits: []harnessenv.Edit{{Old: "memory: 8 * GiB\n\t\t\targs", New: "memory: 6 * GiB\n\t\t\targs"}}, want: []string{
			"(redpanda|3|6g|16|16g|8)",
		}},
		{name: "ClickHouse caps", edits: []harnessenv.Edit{{Old: "memory: 16 * GiB", New: "memory: 12 * GiB"}}, want: []string{
			"(redpanda|3|8g|16|12g|8)",
			"the ClickHouse ceilings in arrow_stream, json_each_row, native, rowbinary, rowbinary_nt: ClickHouse had 16g of memory, and the environment gives it 12g",
		}},
		{name: "ClickHouse image", edits: []harnessenv.Edit{{Old: "clickhouse-server:26.3", New: "clickhouse-server:26.2"}}, want: []string{
			"ClickHouse ran image clickhouse/clickhouse-server:26.3, and the environment declares clickhouse/clickhouse-server:26.2",
		}},
		{name: "partitions", edits: []harnessenv.Edit{{Old: "partitions: 8", New: "partitions: 16"}}, want: []string{
			"the broker's consume ceiling: measured at 8 partitions, and c8g-8xl-ec2-docker has 16",
			"(redpanda|3|8g|16|16g|16)",
		}},
		{name: "message size", bytes: 4300, want: []string{
			"the broker's consume ceiling: measured at 4065-byte messages, and c8g-8xl-ec2-docker's sensor-batch messages are 4300 bytes on average (more than 5% off)",
		}},
		{name: "corpus", file: func(m map[string]any) {
			m["consume"].(map[string]any)["provenance"].(map[string]any)["dataset_version"] = "d2-000000000000"
		}, want: []string{
			"the broker's consume ceiling: measured on the harness's corpus d2-000000000000, which is no corpus spatec generates; workload sensor-batch of c8g-8xl-ec2-docker is sensor-batch@1c12224f4f7f",
		}},
		{name: "client outside", file: func(m map[string]any) { ingestOf(m, "native")["client"] = "outside" }, want: []string{
			`the ClickHouse ceiling in native: measured by a client recorded as "outside", not "inside"`,
		}},
		{name: "client unstated", file: func(m map[string]any) { delete(m["consume"].(map[string]any), "client") }, want: []string{
			"the broker's consume ceiling: measured by a client the file does not place",
		}},
		{name: "services on the host", edits: []harnessenv.Edit{{Old: `network: "bridge"`, New: `network: "host"`}}, want: []string{
			`c8g-8xl-ec2-docker's services are not on a run network of spatec's (network "host")`,
		}},
		{name: "formats: no native", file: func(m map[string]any) {
			var kept []any
			for _, c := range m["clickhouse"].([]any) {
				if c.(map[string]any)["format"] != "native" {
					kept = append(kept, c)
				}
			}
			m["clickhouse"] = kept
		}, want: []string{
			"the file has no ClickHouse ceiling in native (its formats: arrow_stream, json_each_row, rowbinary, rowbinary_nt), and Native's is the one the gate holds every arm to",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, mb := harnessPlan(t, tc.edits...)
			if tc.bytes != 0 {
				mb = tc.bytes
			}
			path := harnessenv.CeilingsFile(t)
			if tc.file != nil {
				path = editedCeilings(t, tc.file)
			}
			c, err := importHarness(t, path, p, mb)
			var ref *Refusal
			if !errors.As(err, &ref) {
				t.Fatalf("import: %v (ceilings %+v); want a refusal", err, c)
			}
			for _, want := range append(tc.want, "C12: the reference harness's ceilings in "+path, "do not describe c8g-8xl-ec2-docker's plan") {
				if !strings.Contains(ref.Reason, want) {
					t.Errorf("the refusal does not say %q:\n%s", want, ref.Reason)
				}
			}
		})
	}
}

// A format spatec has no name for is left out and listed; the rest is
// imported.
func TestImportListsTheFormatsNotMapped(t *testing.T) {
	path := editedCeilings(t, func(m map[string]any) {
		in := map[string]any{}
		for k, v := range ingestOf(m, "rowbinary") {
			in[k] = v
		}
		in["format"] = "protobuf"
		m["clickhouse"] = append(m["clickhouse"].([]any), in)
	})
	p, mb := harnessPlan(t)
	c, err := importHarness(t, path, p, mb)
	if err != nil {
		t.Fatalf("import: %v", err)
	}
	if len(c.Imported.NotMapped) != 1 || c.Imported.NotMapped[0] != "protobuf" || len(c.ClickHouse.Formats) != 5 {
		t.Errorf("not mapped %v, formats %d; want protobuf left out of 6", c.Imported.NotMapped, len(c.ClickHouse.Formats))
	}
}

// A file that is not the harness's ceilings is not read as ceilings.
func TestReadHarnessCeilingsRefusesAnotherFile(t *testing.T) {
	for name, body := range map[string]string{
		"spatec's own ceilings": `{"env":"x","infra_digest":"sha256:0","partitions":8,"workload":"sensor-batch","message_bytes":4065}`,
		"an unknown member":     `{"consume":{"msgs_per_s":1,"mb_per_s":1,"message_bytes":1,"partitions":1,"provenance":{"date":"2026-07-30"}},"clickhouse":[],"extra":1}`,
		"no ingest ceiling":     `{"consume":{"msgs_per_s":1,"mb_per_s":1,"message_bytes":1,"partitions":1,"provenance":{"date":"2026-07-30"}}}`,
		"not JSON":              `consume = 1`,
	} {
		p := filepath.Join(t.TempDir(), "c.json")
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadHarnessCeilings(p); err == nil {
			t.Errorf("%s: read as the harness's ceilings", name)
		}
	}
}

// The gate holds a run of the harness's host to the imported ceilings: a
// drain well inside them is ok, one above 70% of the broker's consume
// ceiling is infra_bound, and each record says whose ceilings it was
// gated against.
func TestGateUsesImportedCeilings(t *testing.T) {
	p, mb := harnessPlan(t)
	c, err := importHarness(t, harnessenv.CeilingsFile(t), p, mb)
	if err != nil {
		t.Fatal(err)
	}
	path := CeilingsPath(t.TempDir(), p.Env.Name, p.Workload.Name)
	if err := c.Write(path); err != nil {
		t.Fatal(err)
	}
	const messages, rows = 1_500_000, 110_250_000
	gate := func(window time.Duration) (*armRun, error) {
		run := &armRun{plan: p, rec: record.Record{
			Run:     record.Run{Dataset: record.Dataset{Messages: messages, ExpectedRows: rows}},
			Metrics: map[string]record.Metric{}, Flags: []string{},
		}, expected: expectation{bytes: messages * 4065}}
		d := chstore.Drain{Want: rows, Counted: true, DistinctCounted: true, Count: rows, Distinct: rows, Elapsed: window}
		err := run.gate(drainResult{want: rows, drained: true, drain: d}, path)
		run.finish(err, time.Now())
		return run, err
	}
	const provenance = "C12: gated against ceilings imported from the reference harness (spate-etl/benchmark): "

	// 30 s: 3.68M rows/s, 50k msg/s: 17% of the broker's ceiling, 12% of
	// Native's.
	run, err := gate(30 * time.Second)
	if err != nil || run.rec.Status != record.StatusOK {
		t.Fatalf("gate: %v, status %s (%s); want ok", err, run.rec.Status, run.rec.Note)
	}
	m := run.rec.Metrics
	if s := m[record.InfraBrokerConsumeShare].Value; s < 0.166 || s > 0.168 {
		t.Errorf("broker share %v; want 50000/300000 = 0.167", s)
	}
	if s := m[record.InfraClickHouseIngestShare].Value; s < 0.122 || s > 0.123 {
		t.Errorf("ClickHouse share %v; want 3675000/30000000 = 0.1225", s)
	}
	if run.rec.Run.Ceilings["clickhouse_rows_per_s"].Value != 30_000_000 || run.rec.Run.Ceilings["broker_msgs_per_s"].Value != 300_000 ||
		run.rec.Run.CeilingsMeasuredFrom != MeasuredInNetwork {
		t.Errorf("run.ceilings %v from %q", run.rec.Run.Ceilings, run.rec.Run.CeilingsMeasuredFrom)
	}
	if !strings.Contains(run.rec.Note, provenance+c.Imported.File+" ("+c.Imported.SHA256+"), measured "+harnessenv.CeilingsDate+" under its infrastructure d867b69febf3, client inside") ||
		len(run.rec.Flags) != 0 {
		t.Errorf("note %q, flags %v; want the ceilings' provenance and no flag", run.rec.Note, run.rec.Flags)
	}

	// 6 s: 250k msg/s, 83% of the broker's ceiling.
	run, err = gate(6 * time.Second)
	var ib *infraBound
	if !errors.As(err, &ib) || run.rec.Status != record.StatusInfraBound ||
		!strings.Contains(run.rec.Note, "broker messages/s at 83% of its ceiling") || !strings.Contains(run.rec.Note, provenance) {
		t.Errorf("gate: %v, status %s, note %q; want infra_bound on the broker's imported ceiling", err, run.rec.Status, run.rec.Note)
	}

	// Another partition count since the import: stale, as measured
	// ceilings would be.
	p.Env.Partitions = 16
	run, err = gate(30 * time.Second)
	if err != nil || !strings.Contains(run.rec.Note, "measured at 8 partitions, the plan has 16") {
		t.Errorf("gate: %v, note %q; want the imported ceilings stale", err, run.rec.Note)
	}
}
