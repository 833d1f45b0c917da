package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"spatec.dev/spatec/runs/interop"
	"spatec.dev/spatec/runs/record"
	"spatec.dev/spatec/runs/report"
	sensorbatch "spatec.dev/spatec/workloads/sensor-batch"
)

// schema2Line is a schema-2 record as the reference harness writes it,
// from the fields its results.rs declares, at a time and rate of the test's.
func schema2Line(runID string, ts time.Time, rowsPerS float64) string {
	return fmt.Sprintf(`{"schema":2,"bench":"kafka_avro_clickhouse","kind":"measurement","status":"ok","run_id":%q,"rep":1,"reps":1,`+
		`"sut":{"entrant":"vector","variant_id":"default","version":"0.57.0","image_digest":"sha256:%s","image":"timberio/vector"},`+
		`"run":{"ts_ms":%d,"invocation_id":%q,"env_id":"c8g-8xl-ec2-docker","env_digest":"28d3432df6fc","harness_version":1,"dataset_version":"d2-60d7e5bb2a82","commit":"9daa373080ff","trigger":"manual",`+
		`"infra":{"digest":"d867b69febf3","broker":"redpanda","broker_version":"v26.1.13","broker_image_digest":"sha256:%s","broker_cpus":"300000 100000","broker_memory":"8589934592",`+
		`"clickhouse_version":"26.3.17.56","clickhouse_image_digest":"sha256:%s","clickhouse_cpus":"1600000 100000","clickhouse_memory":"17179869184","partitions":8,"registry":"redpanda-builtin","ceiling_msgs_per_s":300175,"ceiling_bytes_per_s":1220274633,"ceiling_rows_per_s":5988571}},`+
		`"variant":{"parallelism":8,"batches":1500000},"metrics":{"rows_per_s":{"value":%g,"unit":"records/s","higher_is_better":true},"cores_used":{"value":5.5,"unit":"cores","higher_is_better":false}},"flags":[]}`,
		runID, strings.Repeat("a", 64), ts.UnixMilli(), runID, strings.Repeat("b", 64), strings.Repeat("c", 64), rowsPerS)
}

// TestRecordsRoundTripWithTheReference: spatec's own records, exported as
// schema 2, pass the reference validator's rules; and schema-2 records
// beside spatec's are read by validate and report as history, in the
// history table with the sittings they came from.
func TestRecordsRoundTripWithTheReference(t *testing.T) {
	requireContainers(t)
	results := t.TempDir()
	// A short drain: what is exported is a record, whatever its length.
	if code, out, errOut := cli(t, "exec", "--tree", shortDrainTree(t), "--env", "local-containers", "reference", "--results", results); code != exitOK {
		t.Fatalf("exec: exit %d\n%s\n%s", code, out, errOut)
	}

	// Without the facts spatec does not record, nothing is exported and
	// each one is named.
	code, _, errOut := cli(t, "export", "--to", "schema2", "-o", filepath.Join(t.TempDir(), "x.jsonl"), results)
	if code == exitOK || !strings.Contains(errOut, "run.trigger (spatec does not record what caused a run)") {
		t.Fatalf("export without the supplied facts: exit %d\n%s", code, errOut)
	}
	out := filepath.Join(t.TempDir(), "schema2.jsonl")
	code, _, errOut = cli(t, "export", "--to", "schema2", "--bench", "spatec-corpus-v1", "--trigger", "manual",
		"--broker", "kfake", "--registry", "none", "--partitions", "4", "-o", out, results)
	if code != exitOK {
		t.Fatalf("export: exit %d\n%s", code, errOut)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSpace(data), []byte("\n"))
	if len(lines) != 1 {
		t.Fatalf("%d lines exported, want the one run", len(lines))
	}
	if ps := interop.CheckSchema2(lines[0]); len(ps) > 0 {
		t.Fatalf("the exported record breaks the reference's rules:\n%s\n%s", strings.Join(ps, "\n"), lines[0])
	}

	// Two sittings of the reference harness's, a month apart, beside
	// spatec's own log.
	hist := filepath.Join(results, "c8g-8xl-ec2-docker", "vector", "2026-07.jsonl")
	if err := os.MkdirAll(filepath.Dir(hist), 0o755); err != nil {
		t.Fatal(err)
	}
	day := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	var b strings.Builder
	for i, id := range []string{"019fb41a-9318-7c61-abe0-000000000001", "019fb41a-9318-7c61-abe0-000000000002", "019fb41a-9318-7c61-abe0-000000000003"} {
		ts := day.AddDate(0, 0, 30*(i/2)).Add(time.Duration(i) * time.Minute)
		b.WriteString(schema2Line(id, ts, 1e6+float64(i)*1e5) + "\n")
	}
	if err := os.WriteFile(hist, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	code, vout, verr := cli(t, "validate", results)
	if code != exitOK || !strings.Contains(vout, "and 3 schema-2 records of the reference harness in 1 files, read as history), 0 problems") {
		t.Fatalf("validate: exit %d\n%s%s", code, vout, verr)
	}
	code, rout, rerr := cli(t, "report", "--format", "json", results)
	if code != exitOK {
		t.Fatalf("report: exit %d\n%s", code, rerr)
	}
	var rep report.Report
	if err := json.Unmarshal([]byte(rout), &rep); err != nil {
		t.Fatal(err)
	}
	sittings := map[string][]*report.Sitting{}
	for _, h := range rep.History {
		sittings[h.Arm] = h.Sittings
	}
	v := sittings["vector:default"]
	if len(v) != 2 || v[0].Date != "2026-07-01" || v[0].Runs != 2 || v[1].Date != "2026-07-31" || v[0].Source != "schema-2" || v[0].Harness != "schema2 1" {
		t.Errorf("vector's history %+v; want the two sittings of the reference harness", v)
	}
	if r := sittings["reference:default"]; len(r) != 1 || r[0].Source != "spatec" || r[0].Harness != fmt.Sprintf("spatec %d", record.HarnessVersion) {
		t.Errorf("the reference arm's history %+v; want its one spatec sitting", r)
	}
	if rep.ForeignRuns != 3 || rep.Records != 1 {
		t.Errorf("%d foreign runs and %d records; want 3 and 1 (foreign runs are history only)", rep.ForeignRuns, rep.Records)
	}
}

// TestReportSetsReferenceRecordsOnSpatecsDataset: the reference harness's
// records of its corpus are read into the report's history under spatec's
// name for that corpus and size, beside spatec's own runs of it, with their
// rate as the harness's rate and never as spatec's.
func TestReportSetsReferenceRecordsOnSpatecsDataset(t *testing.T) {
	results := t.TempDir()
	day := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	hist := filepath.Join(results, "c8g-8xl-ec2-docker", "vector", "2026-07.jsonl")
	if err := os.MkdirAll(filepath.Dir(hist), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hist, []byte(schema2Line("019fb41a-9318-7c61-abe0-000000000001", day, 405_180)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	id, err := record.NewRunID()
	if err != nil {
		t.Fatal(err)
	}
	own := &record.Record{Schema: record.SchemaV1, Status: record.StatusOK, RunID: id, Rep: 1, Reps: 1,
		SUT: record.SUT{Entrant: "vector", Variant: "default", Version: "0.57.0"},
		Run: record.Run{Env: "local-containers", EnvDigest: "sha256:e", HarnessVersion: record.HarnessVersion, StartedAt: day.AddDate(0, 1, 0),
			Dataset: record.Dataset{Workload: "sensor-batch", Version: sensorbatch.DatasetVersion, Messages: 1_500_000, ExpectedRows: 110_250_000}},
		Metrics: map[string]record.Metric{
			record.RowsPerS:        {Value: 470_000, Unit: "rows/s", HigherIsBetter: true},
			record.HarnessRowsPerS: {Value: 455_000, Unit: "rows/s", HigherIsBetter: true},
		},
		Flags: []string{},
	}
	if err := record.Append(record.PathFor(results, own.Run.Env, "vector", own.Run.StartedAt), own); err != nil {
		t.Fatal(err)
	}
	code, rout, rerr := cli(t, "report", "--format", "json", results)
	if code != exitOK {
		t.Fatalf("report: exit %d\n%s", code, rerr)
	}
	var rep report.Report
	if err := json.Unmarshal([]byte(rout), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.History) != 1 || len(rep.History[0].Sittings) != 2 {
		t.Fatalf("history %+v; want vector's two sittings", rep.History)
	}
	ref, spatec := rep.History[0].Sittings[0], rep.History[0].Sittings[1]
	for _, s := range []*report.Sitting{ref, spatec} {
		if s.Dataset != sensorbatch.DatasetVersion || s.Messages != 1_500_000 || s.HarnessRowsPerS == nil {
			t.Errorf("%s sitting on %s × %d, harness rate %v; want both on %s × 1500000 with the harness's rate", s.Source, s.Dataset, s.Messages, s.HarnessRowsPerS, sensorbatch.DatasetVersion)
		}
	}
	if ref.Source != "schema-2" || *ref.HarnessRowsPerS != 405_180 || ref.RowsPerS != nil || spatec.RowsPerS == nil || *spatec.HarnessRowsPerS != 455_000 {
		t.Errorf("the reference's sitting %+v, spatec's %+v; want the reference's rate as the harness's only", ref, spatec)
	}
	if rep.RankedBy != record.RowsPerS {
		t.Errorf("the report ranks by %q", rep.RankedBy)
	}
}
