package harnessenv

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	sensorbatch "spatec.dev/spatec/workloads/sensor-batch"
)

// Record is a measurement record of the harness's schema 2 (its
// harness/src/report.rs), with every member the format has, the optional
// ones included: a reader of the format is tested on all of it.
type Record struct {
	Schema  int               `json:"schema"`
	Bench   string            `json:"bench"`
	Kind    string            `json:"kind"`
	Status  string            `json:"status"`
	RunID   string            `json:"run_id"`
	Rep     int               `json:"rep"`
	Reps    int               `json:"reps"`
	SUT     RecordSUT         `json:"sut"`
	Run     RecordRun         `json:"run"`
	Variant map[string]any    `json:"variant"`
	Metrics map[string]Metric `json:"metrics"`
	Note    string            `json:"note"`
	Flags   []string          `json:"flags"`
}

// RecordSUT is the arm a record measured.
type RecordSUT struct {
	Entrant     string `json:"entrant"`
	VariantID   string `json:"variant_id"`
	Version     string `json:"version"`
	Commit      string `json:"commit"`
	ImageDigest string `json:"image_digest"`
	Image       string `json:"image"`
	Toolchain   string `json:"toolchain"`
}

// RecordRun is where and how the arm ran.
type RecordRun struct {
	TsMs           int64       `json:"ts_ms"`
	InvocationID   string      `json:"invocation_id"`
	EnvID          string      `json:"env_id"`
	EnvDigest      string      `json:"env_digest"`
	HarnessVersion int         `json:"harness_version"`
	DatasetVersion string      `json:"dataset_version"`
	Commit         string      `json:"commit"`
	Trigger        string      `json:"trigger"`
	Infra          RecordInfra `json:"infra"`
}

// RecordInfra is the shared infrastructure as the run read it back: the
// caps from the services' cgroups (cpu.max, memory.max), the images' IDs
// and the versions inside them, and the ceilings the run was gated against.
type RecordInfra struct {
	Digest                string `json:"digest"`
	Broker                string `json:"broker"`
	BrokerVersion         string `json:"broker_version"`
	BrokerImageDigest     string `json:"broker_image_digest"`
	BrokerCPUs            string `json:"broker_cpus"`
	BrokerMemory          string `json:"broker_memory"`
	ClickHouseVersion     string `json:"clickhouse_version"`
	ClickHouseImageDigest string `json:"clickhouse_image_digest"`
	ClickHouseCPUs        string `json:"clickhouse_cpus"`
	ClickHouseMemory      string `json:"clickhouse_memory"`
	Partitions            int    `json:"partitions"`
	Registry              string `json:"registry"`
	CeilingMsgsPerS       uint64 `json:"ceiling_msgs_per_s"`
	CeilingBytesPerS      uint64 `json:"ceiling_bytes_per_s"`
	CeilingRowsPerS       uint64 `json:"ceiling_rows_per_s"`
}

// Metric is one figure of a record; CI95 and N are the format's optional
// interval and sample count.
type Metric struct {
	Value          float64     `json:"value"`
	Unit           string      `json:"unit"`
	HigherIsBetter bool        `json:"higher_is_better"`
	CI95           *[2]float64 `json:"ci95,omitempty"`
	N              *uint64     `json:"n,omitempty"`
}

// RecordRate is HostRecord's rows_per_s.
const RecordRate = 3_550_000.0

// The record's run: the 1.5M batches of the harness's dataset, of which the
// transform keeps 73.5 rows each, drained in 31 s.
const (
	recordBatches = 1_500_000
	recordRows    = recordBatches * 735 / 10
	recordSeconds = 31.0
)

// HostRecord is a record of spate's native variant on the harness's host,
// at RecordRate: what a run of the harness there writes, in its format. Its
// run.env_digest is the digest of ProfileBytes, its infrastructure digest
// InfraDigest, and its ceilings HostCeilings' in the native format.
func HostRecord(t testing.TB) Record {
	t.Helper()
	ceilings := HostCeilings()
	native, ok := ceilings.Ingest("native")
	if !ok {
		t.Fatal("harnessenv: the host's ceilings have no native format")
	}
	m := func(v float64, unit string, higher bool) Metric {
		return Metric{Value: v, Unit: unit, HigherIsBetter: higher}
	}
	rate := m(RecordRate, "records/s", true)
	low, high, reps := RecordRate*0.99, RecordRate*1.01, uint64(3)
	rate.CI95, rate.N = &[2]float64{low, high}, &reps
	const cores = 5.75
	cpuUs := cores * recordSeconds * 1e6
	return Record{
		Schema: 2, Bench: "kafka_avro_clickhouse", Kind: "measurement", Status: "ok",
		RunID: "01984a11-2c00-7000-8000-00000000a001", Rep: 1, Reps: 3,
		SUT: RecordSUT{Entrant: "spate", VariantID: "native", Version: "0.1.0", Commit: "5e1f0c2a9b7d",
			ImageDigest: imageID("spate-bench-spate"), Image: "spate-bench-spate", Toolchain: "rustc 1.97.1"},
		Run: RecordRun{
			TsMs: time.Date(2026, 7, 28, 15, 0, 0, 0, time.UTC).UnixMilli(), InvocationID: "01984a10-f000-7000-8000-00000000a000",
			EnvID: Name, EnvDigest: EnvDigest(t), HarnessVersion: 1, DatasetVersion: sensorbatch.HarnessDatasetVersion,
			Commit: "c0ffee12d00d", Trigger: "manual",
			Infra: RecordInfra{
				Digest: InfraDigest(), Broker: brokerKind, BrokerVersion: BrokerVersion, BrokerImageDigest: BrokerImageID,
				BrokerCPUs: cpuMax(brokerCPUs), BrokerMemory: strconv.FormatInt(brokerMemory, 10),
				ClickHouseVersion: ClickHouseVersion, ClickHouseImageDigest: ClickHouseImageID,
				ClickHouseCPUs: cpuMax(clickHouseCPUs), ClickHouseMemory: strconv.FormatInt(clickHouseMemory, 10),
				Partitions: partitions, Registry: registry,
				CeilingMsgsPerS: ceilings.Consume.MsgsPerS, CeilingBytesPerS: uint64(ceilings.Consume.MBPerS * 1e6),
				CeilingRowsPerS: native.RowsPerS,
			},
		},
		Variant: map[string]any{"approach": "realistic", "batches": recordBatches, "mode": "drain", "partitions": partitions,
			"shards": 8, "threads": 8, "inflight": 4, "wire_format": "native"},
		Metrics: map[string]Metric{
			"rows_per_s":          rate,
			"rows_per_s_per_core": m(RecordRate/cores, "records/s", true),
			"cores_used":          m(cores, "cores", false),
			"cpu_us_per_row":      m(cpuUs/recordRows, "us", false),
			"peak_anon_bytes":     m(1_000_000_000, "bytes", false),
			"ch_written_rows":     m(recordRows, "rows", false),
			"duplicate_rows":      m(0, "rows", false),
			"throttled_us":        m(80_000_000, "us", false),
		},
		Note:  "composed by spatec's tests in the harness's format; 31 sampler samples over 31.0s",
		Flags: []string{"reused_infra", "cpu_cap_throttled"},
	}
}

// imageID is an image ID (a sha256 content digest) standing for name's.
func imageID(name string) string {
	sum := sha256.Sum256([]byte(name))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Line is the record as one line of a results file.
func (r Record) Line(t testing.TB) []byte {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatalf("harnessenv: writing the record: %v", err)
	}
	return append(b, '\n')
}

// RecordFile writes HostRecord where the harness files it in a results
// tree under root (<env_id>/<entrant>/<year-month>.jsonl), and returns its
// path.
func RecordFile(t testing.TB, root string) string {
	t.Helper()
	return writeFile(t, filepath.Join(root, Name, "spate", "2026-07.jsonl"), HostRecord(t).Line(t))
}
