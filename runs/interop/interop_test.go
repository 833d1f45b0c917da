package interop

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"spatec.dev/spatec/internal/harnessenv"
	"spatec.dev/spatec/runs/record"
	sensorbatch "spatec.dev/spatec/workloads/sensor-batch"
)

var (
	started = time.Date(2026, 8, 3, 14, 0, 0, 0, time.UTC)
	ended   = started.Add(47*time.Second + 250*time.Millisecond)
	// The arm's last container started 30.8 s into the run, spatec's
	// window opened 800 ms later, and the reference harness's closed at
	// the poll 100 ms before spatec's.
	armStarted   = started.Add(30800 * time.Millisecond)
	windowOpened = armStarted.Add(800 * time.Millisecond)
	harnessSpan  = record.Span{OpenedAt: armStarted, ClosedAt: windowOpened.Add(46400 * time.Millisecond), DurationS: 47.2, Rows: 400_000_003}
)

func digest(c string) string { return "sha256:" + strings.Repeat(c, 64) }

// measured is a spatec record of a measured run with every field such a run
// has: a JVM arm with a control plane, infrastructure on cgroup v2, usable
// ceilings, and metrics in every spatec unit.
func measured(t *testing.T) record.Record {
	t.Helper()
	id, err := record.NewRunID()
	if err != nil {
		t.Fatal(err)
	}
	m := func(v float64, unit string, higher bool) record.Metric {
		return record.Metric{Value: v, Unit: unit, HigherIsBetter: higher}
	}
	r := record.Record{
		Schema: record.SchemaV1,
		Status: record.StatusOK,
		RunID:  id,
		Rep:    2,
		Reps:   3,
		SUT: record.SUT{
			Entrant: "flink", Variant: "jdbc", Version: "1.20.1", VersionPinned: "1.20.1",
			Containers: []record.Container{
				{Name: "jobmanager", Role: "control-plane", Image: "flink:1.20.1", ImageDigest: digest("c"), CPUs: "1.00", MemoryBytes: 2 << 30},
				{Name: "taskmanager", Role: "data-plane", Image: "flink:1.20.1-jdbc", ImageDigest: digest("d"), CPUs: "6.00", MemoryBytes: 24 << 30},
			},
		},
		Run: record.Run{
			Env: "bench-96c", EnvDigest: digest("e"), PlanDigest: digest("f"), InfraDigest: digest("1"),
			SpatecVersion: "0.4.0", SpatecCommit: "76c8f2b", HarnessVersion: record.HarnessVersion,
			StartedAt: started, EndedAt: ended,
			Host: record.Host{Cores: 96, MemoryBytes: 192 << 30, Kernel: "6.8.0", CgroupVersion: "v2", EngineVersion: "27.3.1"},
			Infra: []record.Container{
				{Name: "spatec-redpanda", Role: "broker", Image: "docker.redpanda.com/redpandadata/redpanda:v24.2.1", ImageDigest: digest("2"), Version: "v24.2.1", CPUs: "3.00", MemoryBytes: 8 << 30},
				{Name: "spatec-clickhouse", Role: "clickhouse", Image: "clickhouse/clickhouse-server:24.8", ImageDigest: digest("3"), Version: "24.8.4.13", CPUs: "32.00", MemoryBytes: 32 << 30},
			},
			Cgroups: map[string]map[string]string{
				"spatec-redpanda":   {"cpu.max": "300000 100000\n", "memory.max": "8589934592\n", "memory.swap.max": "0\n"},
				"spatec-clickhouse": {"cpu.max": "3200000 100000\n", "memory.max": "34359738368\n", "memory.swap.max": "0\n"},
				"jobmanager":        {"cpu.max": "100000 100000\n", "memory.max": "2147483648\n", "memory.swap.max": "0\n"},
				"taskmanager":       {"cpu.max": "600000 100000\n", "memory.max": "25769803776\n", "memory.swap.max": "0\n"},
			},
			Dataset: record.Dataset{Workload: "sensor-batch", Version: sensorbatch.DatasetVersion, Messages: 5_442_177, ExpectedRows: 400_000_000},
			Window: record.Window{SamplerPeriodS: 0.1, DurationS: 46.5, OpenedAt: windowOpened, ClosedAt: windowOpened.Add(46500 * time.Millisecond),
				Harness: &harnessSpan},
			Ceilings: map[string]record.Metric{
				"broker_msgs_per_s":     m(2_150_000.4, "msg/s", true),
				"broker_bytes_per_s":    m(1_100_800_000, "bytes/s", true),
				"clickhouse_rows_per_s": m(21_000_000, "rows/s", true),
			},
			CeilingsMeasuredFrom: "network",
		},
		Variant: map[string]any{"parallelism": 32.0, "sink_batch_rows": 100000.0, "format": "jdbc"},
		Metrics: map[string]record.Metric{
			record.RowsPerS:                   m(8_602_150.5, "rows/s", true),
			record.HarnessRowsPerS:            m(harnessSpan.RowsPerS(), "rows/s", true),
			record.HarnessWindowSeconds:       m(47.2, "s", false),
			record.MsgsPerS:                   m(1_075_268.8, "msg/s", true),
			record.BytesPerS:                  m(550_537_634.4, "bytes/s", true),
			record.CoresUsed:                  m(5.75, "cores", false),
			record.DataPlaneCoresUsed:         m(5.5, "cores", false),
			record.ControlPlaneCoresUsed:      m(0.25, "cores", false),
			record.PeakAnonBytes:              m(21_995_020_288, "bytes", false),
			record.DataPlanePeakAnonBytes:     m(21_632_425_984, "bytes", false),
			record.PeakShmemBytes:             m(805_306_368, "bytes", false),
			record.MemoryPeakBytes:            m(22_241_964_032, "bytes", false),
			record.ExpectedRows:               m(400_000_000, "count", false),
			record.DistinctRows:               m(400_000_000, "count", true),
			record.LandedRows:                 m(400_000_003, "count", false),
			record.DuplicateRows:              m(3, "count", false),
			record.WindowSeconds:              m(46.5, "s", false),
			record.JVMHeapConfiguredBytes:     m(18_824_036_352, "bytes", false),
			record.InfraBrokerConsumeShare:    m(0.5, "ratio", false),
			record.InfraClickHouseIngestShare: m(0.41, "ratio", false),
			"throttled_s.taskmanager":         m(12.75, "s", false),
			"throttled_s.spatec-clickhouse":   m(0, "s", false),
			"oom_kills.taskmanager":           m(0, "count", false),
		},
		Flags: []string{record.FlagPeakLifetime},
		Note:  "jvm heap read from the GC log",
	}
	if problems := r.Check(); len(problems) > 0 {
		t.Fatalf("the test's spatec record is not complete: %v", problems)
	}
	return r
}

var supplied = Supplied{Bench: "kafka_json_clickhouse", Trigger: "manual", Broker: "redpanda", Registry: "redpanda-builtin", Partitions: 32}

func decodeMap(t *testing.T, line []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(line, &m); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, line)
	}
	return m
}

func dig(m map[string]any, path ...string) any {
	var v any = m
	for _, p := range path {
		o, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = o[p]
	}
	return v
}

// (a) A measured spatec record, with the facts spatec does not record
// supplied, exports to a line the reference's rules accept, with every unit
// converted exactly.
func TestExportedMeasuredRecordPassesTheReferenceRules(t *testing.T) {
	r := measured(t)
	line, err := ExportWith(r, supplied)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.ContainsRune(line, '\n') {
		t.Fatalf("an exported record must be one line:\n%s", line)
	}
	if problems := CheckSchema2(line); len(problems) > 0 {
		t.Fatalf("the reference would refuse the exported record:\n%s\n%s", strings.Join(problems, "\n"), line)
	}
	if !IsSchema2(line) {
		t.Error("IsSchema2 does not recognise an exported line")
	}

	m := decodeMap(t, line)
	metric := func(name string) (float64, string, bool) {
		v, ok := dig(m, "metrics", name).(map[string]any)
		if !ok {
			return 0, "", false
		}
		return v["value"].(float64), v["unit"].(string), true
	}
	for _, c := range []struct {
		name, unit string
		want       float64
	}{
		{"rows_per_s", "records/s", harnessSpan.RowsPerS()},
		{"harness_window_us", "us", 47.2e6},
		{"spatec_rows_per_s", "records/s", 8_602_150.5},
		{"spatec_window_us", "us", 46.5e6},
		{"bytes_per_s", "MB/s", 550_537_634.4 / 1e6},
		{"throttled_us.taskmanager", "us", 12.75e6},
		{"cores_used", "cores", 5.75},
		{"peak_anon_bytes", "bytes", 21_995_020_288},
		{"duplicate_rows", "rows", 3},
		{"infra_broker_consume_share", "ratio", 0.5},
	} {
		v, u, ok := metric(c.name)
		if !ok || u != c.unit || v != c.want {
			t.Errorf("metrics.%s = %v %q (present %v); want %v %q", c.name, v, u, ok, c.want, c.unit)
		}
	}
	for _, gone := range []string{"msgs_per_s", "oom_kills.taskmanager", "window_s", "window_us", "throttled_s.taskmanager", "harness_rows_per_s", "harness_window_s"} {
		if _, _, ok := metric(gone); ok {
			t.Errorf("metrics.%s was exported; schema 2 has no unit for it under that name", gone)
		}
	}

	for path, want := range map[string]any{
		"status":                              "ok",
		"kind":                                "measurement",
		"bench":                               "kafka_json_clickhouse",
		"sut.variant_id":                      "jdbc",
		"sut.version":                         "1.20.1",
		"sut.image_digest":                    digest("d"),
		"sut.image":                           "flink:1.20.1-jdbc",
		"run.ts_ms":                           float64(ended.UnixMilli()),
		"run.env_id":                          "bench-96c",
		"run.harness_version":                 float64(record.HarnessVersion),
		"run.dataset_version":                 "d2-60d7e5bb2a82",
		"variant.batches":                     float64(5_442_177),
		"run.commit":                          "76c8f2b",
		"run.trigger":                         "manual",
		"run.infra.digest":                    digest("1"),
		"run.infra.broker_version":            "v24.2.1",
		"run.infra.broker_cpus":               "300000 100000",
		"run.infra.clickhouse_memory":         "34359738368",
		"run.infra.partitions":                float64(32),
		"run.infra.ceiling_msgs_per_s":        float64(2_150_000),
		"run.infra.ceiling_bytes_per_s":       float64(1_100_800_000),
		"run.infra.ceiling_rows_per_s":        float64(21_000_000),
		"variant.format":                      "jdbc",
		"metrics.rows_per_s.higher_is_better": true,
	} {
		if got := dig(m, strings.Split(path, ".")...); got != want {
			t.Errorf("%s = %#v; want %#v", path, got, want)
		}
	}
	if _, ok := dig(m, "run", "invocation_id").(string); ok {
		t.Error("run.invocation_id was written; spatec has none, and harness 1 does not require it")
	}
	flags, _ := m["flags"].([]any)
	if !slices.Contains(flags, any("cpu_cap_throttled")) || slices.Contains(flags, any("peak_lifetime")) {
		t.Errorf("flags %v; want cpu_cap_throttled (the task manager was throttled) and no spatec-only flag", flags)
	}
	note, _ := m["note"].(string)
	for _, want := range []string{
		"harness_version 1 is spatec's measurement protocol",
		"only rows_per_s follows the reference's definition",
		"rows_per_s approximates the reference harness's rate, computed by spatec from its own instants (spatec's harness_rows_per_s)",
		"spatec_rows_per_s is spatec's own rate, the N distinct rows over spatec_window_us",
		"dataset_version d2-60d7e5bb2a82 is the reference harness's label for its corpus, carried because this record's dataset, spatec's sensor-batch@1c12224f4f7f, is that corpus: its first 1000 batches have the harness's golden fingerprints",
		"variant.batches is the batches drained",
		"peak_anon_bytes and data_plane_peak_anon_bytes count anon+shmem",
		"msgs_per_s",
		"peak_lifetime",
		"broker_msgs_per_s 2150000.4 to 2150000",
		"supplied at export, not recorded by spatec: bench, run.trigger, run.infra.broker, run.infra.registry, run.infra.partitions",
		"control-plane container jobmanager",
		"spatec note: jvm heap read from the GC log",
	} {
		if !strings.Contains(note, want) {
			t.Errorf("note lacks %q:\n%s", want, note)
		}
	}
}

// (b) Export alone names every required field spatec never records.
func TestExportWithNothingSuppliedNamesEveryFieldSpatecDoesNotRecord(t *testing.T) {
	_, err := Export(measured(t))
	var miss *MissingError
	if !errors.As(err, &miss) {
		t.Fatalf("Export = %v; want a *MissingError", err)
	}
	want := []string{"bench", "run.infra.broker", "run.infra.partitions", "run.infra.registry", "run.trigger"}
	if !slices.Equal(miss.Fields, want) {
		t.Errorf("missing %v; want %v", miss.Fields, want)
	}
	for _, f := range want {
		if miss.Reasons[f] == "" || !strings.Contains(err.Error(), f) {
			t.Errorf("%s: no reason given, or not in the message %q", f, err)
		}
	}
}

// (b) A record lacking provenance schema 2 requires is refused with every
// such field listed, not only the first.
func TestExportRefusesARecordLackingRequiredFieldsAndListsThemAll(t *testing.T) {
	r := measured(t)
	r.SUT.Version = ""
	r.SUT.Containers[1].ImageDigest = ""
	r.Run.EndedAt = time.Time{}
	r.Run.Infra = r.Run.Infra[1:] // no broker
	delete(r.Run.Cgroups, "spatec-clickhouse")

	_, err := ExportWith(r, supplied)
	var miss *MissingError
	if !errors.As(err, &miss) {
		t.Fatalf("ExportWith = %v; want a *MissingError", err)
	}
	want := []string{
		"run.infra.broker_cpus", "run.infra.broker_image_digest", "run.infra.broker_memory", "run.infra.broker_version",
		"run.infra.clickhouse_cpus", "run.infra.clickhouse_memory",
		"run.ts_ms", "sut.image_digest", "sut.version",
	}
	if !slices.Equal(miss.Fields, want) {
		t.Errorf("missing\n%v\nwant\n%v", miss.Fields, want)
	}

	// A spatec protocol numbered 2 would make the reference demand an
	// invocation id, which spatec does not have.
	r = measured(t)
	r.Run.HarnessVersion = 2
	_, err = ExportWith(r, supplied)
	if !errors.As(err, &miss) || !slices.Equal(miss.Fields, []string{"run.invocation_id"}) {
		t.Errorf("harness_version 2: %v; want run.invocation_id missing", err)
	}
}

// A refused or failed run maps onto schema 2's failed, without the metrics
// schema 2 forbids there, and is still accepted.
func TestExportMapsStatusesFaithfully(t *testing.T) {
	for _, c := range []struct {
		status record.Status
		want   string
		note   string
	}{
		{record.StatusInfraBound, "infra_bound", "rows_per_s approximates the reference harness's rate"},
		{record.StatusFailed, "failed", "not carried: schema 2 allows no metrics on a failed record"},
		{record.StatusRefused, "failed", "spatec status refused"},
	} {
		r := measured(t)
		r.Status = c.status
		line, err := ExportWith(r, supplied)
		if err != nil {
			t.Fatalf("%s: %v", c.status, err)
		}
		if problems := CheckSchema2(line); len(problems) > 0 {
			t.Errorf("%s: refused by the reference's rules: %v", c.status, problems)
		}
		m := decodeMap(t, line)
		metrics, _ := m["metrics"].(map[string]any)
		if m["status"] != c.want || (c.want == "failed") != (len(metrics) == 0) {
			t.Errorf("%s: status %v with %d metrics; want %s", c.status, m["status"], len(metrics), c.want)
		}
		if note, _ := m["note"].(string); !strings.Contains(note, c.note) {
			t.Errorf("%s: note lacks %q: %s", c.status, c.note, note)
		}
	}
}

func TestExportRefusesSuppliedValuesTheReferenceWouldRefuse(t *testing.T) {
	for _, s := range []Supplied{
		{Bench: "b", Trigger: "tuning", Broker: "redpanda", Registry: "r", Partitions: 1},
		{Bench: "b", Trigger: "sometimes", Broker: "redpanda", Registry: "r", Partitions: 1},
		{Bench: "b", Trigger: "manual", Broker: "redpanda", Registry: "r", Partitions: -4},
	} {
		if _, err := ExportWith(measured(t), s); err == nil || errors.As(err, new(*MissingError)) {
			t.Errorf("%+v: %v; want a refusal of the supplied value", s, err)
		}
	}
}

// baseSchema2 is a schema-2 record written from the fields report.rs
// declares, with values of the kind the reference's results hold.
func baseSchema2() map[string]any {
	metric := func(v float64, unit string, higher bool) map[string]any {
		return map[string]any{"value": v, "unit": unit, "higher_is_better": higher}
	}
	return map[string]any{
		"schema": 2, "bench": "kafka_avro_clickhouse", "kind": "measurement", "status": "ok",
		"run_id": "019fc000-0000-7000-8000-000000000001", "rep": 1, "reps": 3,
		"sut": map[string]any{
			"entrant": "vector", "variant_id": "native", "version": "0.57.0",
			"image_digest": digest("a"), "image": "spate-bench-vector",
		},
		"run": map[string]any{
			"ts_ms": 1785500000123, "invocation_id": "019fc000-0000-7000-8000-0000000000ff",
			"env_id": "c8g-8xl-ec2-docker", "env_digest": "28d3432df6fc", "harness_version": 1,
			"dataset_version": "d2-60d7e5bb2a82", "commit": "9daa373080ff", "trigger": "manual",
			"infra": map[string]any{
				"digest": "d867b69febf3", "broker": "redpanda", "broker_version": "v26.1.13",
				"broker_image_digest": digest("b"), "broker_cpus": "300000 100000", "broker_memory": "8589934592",
				"clickhouse_version": "26.3.17.56", "clickhouse_image_digest": digest("c"),
				"clickhouse_cpus": "1600000 100000", "clickhouse_memory": "17179869184",
				"partitions": 8, "registry": "redpanda-builtin", "ceiling_msgs_per_s": 300175,
			},
		},
		"variant": map[string]any{"mode": "drain", "approach": "realistic", "wire_format": "native", "batches": 1500000},
		"metrics": map[string]any{
			"rows_per_s":      metric(405180.5, "records/s", true),
			"cores_used":      metric(5.25, "cores", false),
			"peak_anon_bytes": metric(734003200, "bytes", false),
			"cpu_us_per_row":  metric(12.5, "us", false),
			"duplicate_rows":  metric(0, "rows", false),
		},
		"note":  "33 sampler samples over 32.1s",
		"flags": []any{"reused_infra", "cpu_cap_throttled"},
	}
}

func schema2Line(t *testing.T, edit func(m map[string]any)) string {
	t.Helper()
	m := baseSchema2()
	if edit != nil {
		edit(m)
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func writeLines(t *testing.T, lines ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "2026-08.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// (c) Schema-2 records become Entries with their figures in spatec's units,
// and what could not be carried is named.
func TestReadSchema2MapsFiguresAndNamesWhatIsNotCarried(t *testing.T) {
	failed := schema2Line(t, func(m map[string]any) {
		m["status"], m["metrics"], m["run_id"] = "failed", map[string]any{}, "019fc000-0000-7000-8000-000000000002"
		delete(m["sut"].(map[string]any), "version")
		m["sut"].(map[string]any)["commit"] = "4f1c2ab"
		m["note"] = "REFUSED: pinned version mismatch"
	})
	path := writeLines(t, schema2Line(t, nil)+"\n", "\n", failed+"\n")
	entries, problems := ReadSchema2(path)
	if len(problems) > 0 || len(entries) != 2 {
		t.Fatalf("%d entries, problems %v; want 2 and none", len(entries), problems)
	}

	e := entries[0]
	if e.Source != SourceSchema2 || e.File != path || e.Line != 1 || e.HarnessProtocol != SourceSchema2 || e.HarnessVersion != 1 {
		t.Errorf("provenance %+v", e)
	}
	if e.HarnessRowsPerS == nil || *e.HarnessRowsPerS != 405180.5 || e.RowsPerS != nil {
		t.Errorf("HarnessRowsPerS %v, RowsPerS %v; want 405180.5 as the harness's rate (records/s are rows/s), and no spatec rate", e.HarnessRowsPerS, e.RowsPerS)
	}
	if e.DatasetVersion != sensorbatch.DatasetVersion || e.RecordedDatasetVersion != "d2-60d7e5bb2a82" || e.Workload != "sensor-batch" || e.Messages != 1_500_000 {
		t.Errorf("dataset %s (recorded %s), workload %q, %d messages; want spatec's %s, 1500000 batches", e.DatasetVersion, e.RecordedDatasetVersion, e.Workload, e.Messages, sensorbatch.DatasetVersion)
	}
	if e.CoresUsed == nil || *e.CoresUsed != 5.25 || e.PeakAnonBytes == nil || *e.PeakAnonBytes != 734003200 || e.PeakAnonIncludesShmem {
		t.Errorf("cores %v, peak %v (shmem %v); want 5.25, 734003200 anon alone", e.CoresUsed, e.PeakAnonBytes, e.PeakAnonIncludesShmem)
	}
	if !e.StartedAt.IsZero() || !e.EndedAt.Equal(time.UnixMilli(1785500000123)) || !e.Time().Equal(e.EndedAt) {
		t.Errorf("started %v ended %v; schema 2 records only when the record was built", e.StartedAt, e.EndedAt)
	}
	if e.Entrant != "vector" || e.Variant != "native" || e.Env != "c8g-8xl-ec2-docker" || e.EnvDigest != "28d3432df6fc" ||
		e.InfraDigest != "d867b69febf3" || e.ArmVersion != "0.57.0" || e.Status != "ok" {
		t.Errorf("identity %+v", e)
	}
	for _, want := range []string{"bench", "run.trigger", "run.invocation_id", "run.infra.broker", "run.infra.registry", "sut.image_digest",
		"metrics.cpu_us_per_row", "metrics.duplicate_rows", "variant.mode", "flags.reused_infra"} {
		if !slices.Contains(e.Unmapped, want) {
			t.Errorf("Unmapped lacks %s: %v", want, e.Unmapped)
		}
	}
	for _, carried := range []string{"metrics.rows_per_s", "metrics.cores_used", "run.env_id", "note", "run.infra.ceiling_bytes_per_s", "variant.batches",
		"run.infra.partitions", "run.infra.broker_cpus", "run.infra.clickhouse_memory", "run.infra.clickhouse_image_digest"} {
		if slices.Contains(e.Unmapped, carried) {
			t.Errorf("Unmapped lists %s, which is carried or absent", carried)
		}
	}

	f := entries[1]
	if f.Line != 3 || f.Status != "failed" || f.HarnessRowsPerS != nil || f.CoresUsed != nil || f.ArmVersion != "4f1c2ab" || f.Note != "REFUSED: pinned version mismatch" {
		t.Errorf("failed entry %+v", f)
	}
}

// (d) Damaged lines are each reported at their line, and every good line
// around them is still read.
func TestReadSchema2ReportsEveryDamagedLineAndReadsTheRest(t *testing.T) {
	good := schema2Line(t, nil)
	second := schema2Line(t, func(m map[string]any) { m["run_id"] = "019fc000-0000-7000-8000-000000000003" })
	spatec, err := json.Marshal(measured(t))
	if err != nil {
		t.Fatal(err)
	}
	lines := []string{
		good + "\n",                       // 1
		`{"schema":2,"bench":"x",` + "\n", // 2: cut short mid-record
		"not json at all\n",               // 3
		string(spatec) + "\n",             // 4: a spatec record
		schema2Line(t, func(m map[string]any) { m["schema"] = 3 }) + "\n",                              // 5
		schema2Line(t, func(m map[string]any) { delete(m["run"].(map[string]any), "trigger") }) + "\n", // 6
		good + "\n",   // 7: the same run again
		second + "\n", // 8
		schema2Line(t, func(m map[string]any) {
			m["run_id"] = "019fc000-0000-7000-8000-000000000004"
			m["run"].(map[string]any)["trigger"] = "tuning"
		}) + "\n", // 9: parseable, refused by the validator, kept
		`[1,2]` + "\n",     // 10
		good[:len(good)/2], // 11: last line, no newline
	}
	path := writeLines(t, lines...)
	entries, problems := ReadSchema2(path)

	var got []int
	for _, e := range entries {
		got = append(got, e.Line)
	}
	if !slices.Equal(got, []int{1, 8, 9}) {
		t.Errorf("entries from lines %v; want 1, 8, 9", got)
	}
	want := map[int]string{
		2:  "truncated",
		3:  "not valid JSON",
		4:  "a spatec record",
		5:  "schema 3",
		6:  "run.trigger: missing",
		7:  "already read at line 1",
		9:  "kept, but",
		10: "not a JSON object",
		11: "no newline",
	}
	seen := map[int]bool{}
	for _, p := range problems {
		if p.File != path || p.Line == 0 {
			t.Errorf("problem without file:line: %v", p)
		}
		seen[p.Line] = true
		if w, ok := want[p.Line]; !ok || !strings.Contains(p.Message, w) {
			t.Errorf("%v; want a problem containing %q", p, w)
		}
	}
	for line := range want {
		if !seen[line] {
			t.Errorf("line %d: no problem reported", line)
		}
	}
	if !strings.Contains(problems[0].String(), path+":2: ") {
		t.Errorf("problem renders as %q; want file:line", problems[0])
	}
}

// (e) A record of the reference's host with every member schema 2 has,
// optional ones included, as the reference writes one
// (harnessenv.HostRecord), passes the rules restated in CheckSchema2 and
// reads into an Entry: the figures it carries mapped, the rest named.
func TestARecordWithEveryMemberIsAcceptedAndRead(t *testing.T) {
	rec := harnessenv.HostRecord(t)
	path := harnessenv.RecordFile(t, t.TempDir())
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if missing := membersMissing(t, raw); len(missing) > 0 {
		t.Fatalf("the record lacks members of schema 2: %v", missing)
	}
	if !IsSchema2(raw) {
		t.Fatal("IsSchema2 does not recognise a schema-2 record")
	}
	if problems := CheckSchema2(raw); len(problems) > 0 {
		t.Fatalf("CheckSchema2 refuses a record with every member: %v", problems)
	}
	entries, problems := ReadSchema2(path)
	if len(problems) > 0 || len(entries) != 1 {
		t.Fatalf("%d entries, problems %v", len(entries), problems)
	}
	e := entries[0]
	if e.Entrant != rec.SUT.Entrant || e.Variant != rec.SUT.VariantID || e.ArmVersion != rec.SUT.Version ||
		e.HarnessRowsPerS == nil || *e.HarnessRowsPerS != harnessenv.RecordRate || e.RowsPerS != nil ||
		e.DatasetVersion != sensorbatch.DatasetVersion || e.RecordedDatasetVersion != sensorbatch.HarnessDatasetVersion || e.Messages != 1_500_000 ||
		e.CoresUsed == nil || *e.CoresUsed != rec.Metrics["cores_used"].Value ||
		e.PeakAnonBytes == nil || *e.PeakAnonBytes != rec.Metrics["peak_anon_bytes"].Value ||
		e.Env != rec.Run.EnvID || e.EnvDigest != rec.Run.EnvDigest || e.InfraDigest != rec.Run.Infra.Digest ||
		!e.EndedAt.Equal(time.UnixMilli(rec.Run.TsMs)) || e.Note != rec.Note || e.Status != "ok" {
		t.Errorf("entry %+v", e)
	}
	// The commit is named, not carried, where the version is the arm's.
	for _, want := range []string{"metrics.throttled_us", "metrics.ch_written_rows", "sut.image", "sut.toolchain", "sut.commit", "run.commit",
		"run.invocation_id", "run.infra.ceiling_rows_per_s", "run.infra.ceiling_bytes_per_s", "variant.wire_format", "flags.cpu_cap_throttled"} {
		if !slices.Contains(e.Unmapped, want) {
			t.Errorf("Unmapped lacks %s: %v", want, e.Unmapped)
		}
	}
	for _, carried := range []string{"metrics.rows_per_s", "metrics.cores_used", "metrics.peak_anon_bytes", "variant.batches", "run.infra.partitions"} {
		if slices.Contains(e.Unmapped, carried) {
			t.Errorf("Unmapped lists %s, which is carried", carried)
		}
	}
}

// membersMissing lists the members of schema 2 (s2Record's, as the
// reference declares them) that line does not hold; a member of every
// metric ("metrics.*.ci95") is held when one metric holds it, and the
// variant's knobs are free.
func membersMissing(t *testing.T, line []byte) []string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(line, &m); err != nil {
		t.Fatal(err)
	}
	held := map[string]bool{}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		o, ok := v.(map[string]any)
		if !ok {
			return
		}
		for k, v := range o {
			if prefix == "metrics." || prefix == "variant." {
				k = "*"
			}
			held[prefix+k] = true
			walk(prefix+k+".", v)
		}
	}
	walk("", m)
	var missing []string
	for _, p := range s2Members(reflect.TypeFor[s2Record](), "") {
		if !held[p] {
			missing = append(missing, p)
		}
	}
	return missing
}

// s2Members are the JSON paths of typ's members, a map's elements as "*".
func s2Members(typ reflect.Type, prefix string) []string {
	var paths []string
	for f := range typ.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "" || name == "-" {
			continue
		}
		p := prefix + name
		paths = append(paths, p)
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Map {
			paths = append(paths, p+".*")
			ft, p = ft.Elem(), p+".*"
		}
		if ft.Kind() == reflect.Struct {
			paths = append(paths, s2Members(ft, p+".")...)
		}
	}
	return paths
}

// Every record the reference published passes the rules restated in
// CheckSchema2 and reads into an Entry with its rate, its arm and its
// dataset: the check that those rules are not stricter than the reference
// itself, on its own archive.
func TestTheHarnessPublishedRecordsAreAcceptedAndRead(t *testing.T) {
	dir := harnessenv.Checkout(t, "go test ./runs/interop -run TestTheHarnessPublishedRecordsAreAcceptedAndRead")
	files, err := filepath.Glob(filepath.Join(dir, "results", "*", "*", "*.jsonl"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no results files in %s: %v", dir, err)
	}
	lines := 0
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for i, line := range bytes.Split(bytes.TrimSpace(raw), []byte("\n")) {
			n++
			if !IsSchema2(line) {
				t.Errorf("%s:%d: IsSchema2 does not recognise the reference's own record", f, i+1)
			}
			if problems := CheckSchema2(line); len(problems) > 0 {
				t.Errorf("%s:%d: CheckSchema2 refuses a record the reference published: %v", f, i+1, problems)
			}
		}
		entries, problems := ReadSchema2(f)
		if len(problems) > 0 || len(entries) != n {
			t.Errorf("%s: %d entries of %d lines, problems %v", f, len(entries), n, problems)
		}
		arm := filepath.Base(filepath.Dir(f))
		for _, e := range entries {
			if e.Entrant != arm || e.Env != filepath.Base(filepath.Dir(filepath.Dir(f))) || e.Variant == "" || e.ArmVersion == "" ||
				(e.Status == "ok" && (e.HarnessRowsPerS == nil || *e.HarnessRowsPerS <= 0 || e.CoresUsed == nil || e.PeakAnonBytes == nil)) ||
				e.RowsPerS != nil || e.DatasetVersion != sensorbatch.DatasetVersion || e.Messages <= 0 || len(e.Unmapped) == 0 {
				t.Errorf("%s:%d: entry %+v", f, e.Line, e)
			}
		}
		lines += n
	}
	t.Logf("%d records of %d files accepted and read", lines, len(files))
}

// Each of validate.rs's per-record rules, and the reader's structural ones,
// breaks a good record with its own message.
func TestCheckSchema2AppliesEveryRule(t *testing.T) {
	if p := CheckSchema2([]byte(schema2Line(t, nil))); len(p) > 0 {
		t.Fatalf("a good record is refused: %v", p)
	}
	set := func(path string, v any) func(m map[string]any) {
		return func(m map[string]any) {
			keys := strings.Split(path, ".")
			o := m
			for _, k := range keys[:len(keys)-1] {
				o = o[k].(map[string]any)
			}
			if v == nil {
				delete(o, keys[len(keys)-1])
			} else {
				o[keys[len(keys)-1]] = v
			}
		}
	}
	for _, c := range []struct {
		name string
		edit func(m map[string]any)
		want string
	}{
		{"newer schema", set("schema", 3), "newer than schema 2"},
		{"older schema", set("schema", 1), "skip this one silently"},
		{"harness 2 without invocation", func(m map[string]any) {
			set("run.harness_version", 2)(m)
			set("run.invocation_id", "")(m)
		}, "run.invocation_id is empty"},
		{"tuning trigger", set("run.trigger", "tuning"), "bars publication"},
		{"pr trigger", set("run.trigger", "pr"), "bars publication"},
		{"fixture flag", set("flags", []any{"unpublishable_environment"}), "unpublishable_environment"},
		{"empty digest", set("sut.image_digest", " "), "sut.image_digest is empty"},
		{"digest without algorithm", set("sut.image_digest", "deadbeef"), "not a sha256"},
		{"no version, blank commit", func(m map[string]any) {
			set("sut.version", nil)(m)
			set("sut.commit", "  ")(m)
		}, "neither sut.version nor sut.commit"},
		{"empty env_id", set("run.env_id", ""), "run.env_id is empty"},
		{"empty env_digest", set("run.env_digest", ""), "run.env_digest is empty"},
		{"empty dataset", set("run.dataset_version", ""), "run.dataset_version is empty"},
		{"unit", set("metrics.rows_per_s.unit", "rows/s"), `unit "rows/s"`},
		{"ok without metrics", set("metrics", map[string]any{}), "metrics is empty"},
		{"failed with metrics", set("status", "failed"), "carries no metrics"},
		{"rep 0", set("rep", 0), "rep 0 of 3"},
		{"rep above reps", set("rep", 4), "rep 4 of 3"},
		{"missing field", set("run.infra.registry", nil), "run.infra.registry: missing"},
		{"null field", set("sut.image", json.RawMessage("null")), "sut.image: null"},
		{"float integer", set("rep", 1.5), "fraction"},
		{"negative u32", set("reps", -1), "out of range"},
		{"i32 overflow", set("run.infra.partitions", 1<<31), "out of range for i32"},
		{"unknown status", set("status", "refused"), `"refused" is not one of`},
		{"unknown flag", set("flags", []any{"peak_lifetime"}), `"peak_lifetime" is not one of`},
		{"string for bool", set("metrics.cores_used.higher_is_better", "no"), "expects true or false"},
		{"variant not object", set("variant", []any{}), "variant: is an array"},
	} {
		t.Run(c.name, func(t *testing.T) {
			problems := CheckSchema2([]byte(schema2Line(t, c.edit)))
			if len(problems) != 1 || !strings.Contains(problems[0], c.want) {
				t.Errorf("problems %q; want exactly one containing %q", problems, c.want)
			}
		})
	}

	dup := strings.Replace(schema2Line(t, nil), `"bench":`, `"bench":"again","bench":`, 1)
	if p := CheckSchema2([]byte(dup)); len(p) != 1 || !strings.Contains(p[0], "given twice") {
		t.Errorf("duplicated field: %q", p)
	}
	if p := CheckSchema2([]byte{'{', 0xff, '}'}); len(p) != 1 || !strings.Contains(p[0], "UTF-8") {
		t.Errorf("invalid UTF-8: %q", p)
	}
	if p := CheckSchema2([]byte(`{"schema":2,`)); len(p) != 1 || !strings.Contains(p[0], "truncated") {
		t.Errorf("truncated: %q", p)
	}
	// Fields the reference does not declare are ignored by its reader.
	extra := schema2Line(t, set("sut.extra", "x"))
	if p := CheckSchema2([]byte(extra)); len(p) > 0 {
		t.Errorf("unknown field refused: %q", p)
	}
}

func TestIsSchema2(t *testing.T) {
	spatec, _ := json.Marshal(map[string]any{"schema": record.SchemaV1})
	for line, want := range map[string]bool{
		`{"schema":2,"bench":"x"}`:    true,
		`{"run_id":"a","schema":2}`:   true,
		`{"schema":2,"bench":"cut sh`: true,
		`{"schema":2.0}`:              true,
		`{"schema":"2"}`:              false,
		`{"schema":1}`:                false,
		string(spatec):                false,
		`[{"schema":2}]`:              false,
		`not json`:                    false,
		`{"sut":{"schema":2},"x":1}`:  false,
	} {
		if got := IsSchema2([]byte(line)); got != want {
			t.Errorf("IsSchema2(%s) = %v; want %v", line, got, want)
		}
	}
}

func TestFromRecordCarriesSpatecFigures(t *testing.T) {
	r := measured(t)
	e := FromRecord("results/bench-96c/flink/2026-08.jsonl", 7, r)
	if e.Source != SourceSpatec || e.HarnessProtocol != SourceSpatec || e.Line != 7 || !e.StartedAt.Equal(started) ||
		!e.EndedAt.Equal(ended) || e.EnvDigest != digest("e") || e.InfraDigest != digest("1") || !e.PeakAnonIncludesShmem {
		t.Errorf("entry %+v", e)
	}
	if e.RowsPerS == nil || *e.RowsPerS != 8_602_150.5 || e.HarnessRowsPerS == nil || *e.HarnessRowsPerS != harnessSpan.RowsPerS() ||
		e.DatasetVersion != sensorbatch.DatasetVersion || e.Workload != "sensor-batch" || e.Messages != 5_442_177 ||
		e.CoresUsed == nil || *e.CoresUsed != 5.75 ||
		e.PeakAnonBytes == nil || *e.PeakAnonBytes != 21_995_020_288 || e.Unmapped != nil {
		t.Errorf("figures %+v", e)
	}
	r.Status = record.StatusFailed
	if e := FromRecord("f", 1, r); e.RowsPerS != nil || e.HarnessRowsPerS != nil || e.CoresUsed != nil || e.PeakAnonBytes != nil {
		t.Error("a failed run's partial figures were carried as a measurement")
	}
}

// The reference harness's dataset_version is carried for the one spatec
// dataset whose corpus has its golden fingerprints; every other dataset
// keeps spatec's own label, and the note says why.
func TestExportCarriesTheHarnessLabelOnlyForItsCorpus(t *testing.T) {
	for _, c := range []struct {
		name             string
		dataset          record.Dataset
		version, note    string
		batches          any
		notesVariantSize bool
	}{
		{"the harness's corpus, a quarter of it", record.Dataset{Workload: "sensor-batch", Version: sensorbatch.DatasetVersion, Messages: 375_000},
			"d2-60d7e5bb2a82", "is that corpus: its first 1000 batches have the harness's golden fingerprints", float64(375_000), true},
		{"another sensor-batch corpus", record.Dataset{Workload: "sensor-batch", Version: "sensor-batch@9bc54b34ead3", Messages: 1_500_000},
			"sensor-batch@9bc54b34ead3", "dataset_version sensor-batch@9bc54b34ead3 is spatec's own label: it is not sensor-batch@1c12224f4f7f, the sensor-batch corpus whose fingerprints match the harness's", nil, false},
		{"json-rows", record.Dataset{Workload: "json-rows", Version: "json-rows@39afa9d73c30", Messages: 100_000},
			"json-rows@39afa9d73c30", "dataset_version json-rows@39afa9d73c30 is spatec's own label: the reference harness has no corpus of that workload", nil, false},
	} {
		r := measured(t)
		r.Run.Dataset = c.dataset
		r.Run.Dataset.ExpectedRows = 400_000_000
		line, err := ExportWith(r, supplied)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		m := decodeMap(t, line)
		note, _ := m["note"].(string)
		if got := dig(m, "run", "dataset_version"); got != c.version || !strings.Contains(note, c.note) {
			t.Errorf("%s: dataset_version %v; want %s, and the note to say %q:\n%s", c.name, got, c.version, c.note, note)
		}
		if got := dig(m, "variant", "batches"); got != c.batches || strings.Contains(note, "variant.batches is the batches drained") != c.notesVariantSize {
			t.Errorf("%s: variant.batches %v; want %v (the size beside the harness's label only)", c.name, got, c.batches)
		}
	}
}

// A spatec record exported and read back meets spatec's own records on one
// dataset, of one size, with the reference harness's rate where an Entry
// keeps it: a report sets them side by side.
func TestExportAndReadBackMeetOnOneDataset(t *testing.T) {
	r := measured(t)
	line, err := ExportWith(r, supplied)
	if err != nil {
		t.Fatal(err)
	}
	entries, problems := ReadSchema2(writeLines(t, string(line)+"\n"))
	if len(problems) > 0 || len(entries) != 1 {
		t.Fatalf("%d entries, problems %v", len(entries), problems)
	}
	back, own := entries[0], FromRecord("results/bench-96c/flink/2026-08.jsonl", 1, r)
	if back.DatasetVersion != own.DatasetVersion || back.Workload != own.Workload || back.Messages != own.Messages {
		t.Errorf("read back as %s (%s, %d messages); spatec's record is %s (%s, %d)", back.DatasetVersion, back.Workload, back.Messages, own.DatasetVersion, own.Workload, own.Messages)
	}
	if back.HarnessRowsPerS == nil || own.HarnessRowsPerS == nil || *back.HarnessRowsPerS != *own.HarnessRowsPerS || back.RowsPerS != nil {
		t.Errorf("the harness's rate read back %v, recorded %v; spatec's read back %v (want none: schema 2's rows_per_s is the harness's)", back.HarnessRowsPerS, own.HarnessRowsPerS, back.RowsPerS)
	}
	if slices.Contains(back.Unmapped, "metrics.rows_per_s") || !slices.Contains(back.Unmapped, "metrics.spatec_rows_per_s") {
		t.Errorf("unmapped %v; want rows_per_s carried and spatec's own rate named as not", back.Unmapped)
	}
}

// A record without the reference harness's rate (from before it was
// recorded) is exported without a rows_per_s, never with spatec's rate
// under that name.
func TestExportWithoutTheHarnessRateSaysSo(t *testing.T) {
	r := measured(t)
	delete(r.Metrics, record.HarnessRowsPerS)
	delete(r.Metrics, record.HarnessWindowSeconds)
	r.Run.Window.Harness = nil
	line, err := ExportWith(r, supplied)
	if err != nil {
		t.Fatal(err)
	}
	m := decodeMap(t, line)
	if _, ok := dig(m, "metrics", "rows_per_s").(map[string]any); ok {
		t.Error("rows_per_s was exported without the harness's figure")
	}
	if v, _ := dig(m, "metrics", "spatec_rows_per_s", "value").(float64); v != 8_602_150.5 {
		t.Errorf("spatec_rows_per_s %v; want spatec's own rate", v)
	}
	if note, _ := m["note"].(string); !strings.Contains(note, "no rows_per_s: the record carries no harness_rows_per_s") {
		t.Errorf("the note does not say why there is no rows_per_s:\n%s", note)
	}
}
