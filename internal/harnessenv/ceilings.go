package harnessenv

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	sensorbatch "spatec.dev/spatec/workloads/sensor-batch"
)

// The harness's ceilings file (environments/ceilings/<env_id>.json, as
// harness/src/ceiling.rs declares it), every member its reader knows. The
// figures are this package's own, of the size the harness measures on its
// host; what they must agree with (the infrastructure digest, the corpus,
// the services' images and caps, the message size) is computed.
type (
	// Ceilings is the file.
	Ceilings struct {
		Consume    Consume  `json:"consume"`
		ClickHouse []Ingest `json:"clickhouse"`
	}
	// Consume is the broker's consume ceiling.
	Consume struct {
		MsgsPerS     uint64     `json:"msgs_per_s"`
		MBPerS       float64    `json:"mb_per_s"`
		MessageBytes uint64     `json:"message_bytes"`
		Partitions   int        `json:"partitions"`
		Broker       string     `json:"broker"`
		Threads      uint64     `json:"threads"`
		Client       string     `json:"client"`
		Window       Window     `json:"window"`
		BrokerCgroup Cgroup     `json:"broker_cgroup"`
		Provenance   Provenance `json:"provenance"`
	}
	// Window is the consume pass's measuring window.
	Window struct {
		RequestedS         float64 `json:"requested_s"`
		ActualS            float64 `json:"actual_s"`
		MessagesRead       uint64  `json:"messages_read"`
		TopicDepth         uint64  `json:"topic_depth"`
		CalibratedMsgsPerS uint64  `json:"calibrated_msgs_per_s"`
	}
	// Cgroup is what a service's cgroup used over a pass.
	Cgroup struct {
		Cores       float64 `json:"cores"`
		CapCores    float64 `json:"cap_cores"`
		UserShare   float64 `json:"user_share"`
		NrThrottled uint64  `json:"nr_throttled"`
		ThrottledUs uint64  `json:"throttled_us"`
	}
	// Ingest is ClickHouse's ceiling in one insert format.
	Ingest struct {
		Format       string       `json:"format"`
		RowsPerS     uint64       `json:"rows_per_s"`
		MBPerS       float64      `json:"mb_per_s"`
		RowBytes     uint64       `json:"row_bytes"`
		Threads      uint64       `json:"threads"`
		ClickHouse   string       `json:"clickhouse"`
		Client       string       `json:"client"`
		Sweep        []SweepPoint `json:"sweep"`
		TargetCgroup Cgroup       `json:"target_cgroup"`
		Landed       Landed       `json:"landed"`
		Parts        Parts        `json:"parts"`
		Network      Network      `json:"network"`
		Settle       Settle       `json:"settle"`
		StoppedAt    *Stopped     `json:"stopped_at,omitempty"`
		Provenance   Provenance   `json:"provenance"`
	}
	// SweepPoint is one rung of the concurrency ladder.
	SweepPoint struct {
		Concurrency uint64 `json:"concurrency"`
		RowsPerS    uint64 `json:"rows_per_s"`
	}
	// Landed counts the rows posted and the rows ClickHouse counted.
	Landed struct {
		Posted  uint64 `json:"posted"`
		Counted uint64 `json:"counted"`
	}
	// Parts is what ClickHouse's part log says of a pass.
	Parts struct {
		PartsWritten uint64 `json:"parts_written"`
		RowsWritten  uint64 `json:"rows_written"`
		Merges       uint64 `json:"merges"`
		RowsMerged   uint64 `json:"rows_merged"`
	}
	// Network is the inserts' time on the wire.
	Network struct {
		Inserts    uint64  `json:"inserts"`
		DurationMs float64 `json:"duration_ms"`
		WaitingMs  float64 `json:"waiting_ms"`
	}
	// Settle is how long the parts took to settle between rungs.
	Settle struct {
		MaxWaitS      float64 `json:"max_wait_s"`
		AtConcurrency uint64  `json:"at_concurrency"`
		QuietMs       uint64  `json:"quiet_ms"`
	}
	// Stopped is the rung that could not be driven, and who refused it.
	Stopped struct {
		Concurrency uint64 `json:"concurrency"`
		RefusedBy   string `json:"refused_by"`
		Error       string `json:"error"`
	}
	// Provenance is what a pass was measured against.
	Provenance struct {
		Date           string `json:"date"`
		DatasetVersion string `json:"dataset_version"`
		InfraDigest    string `json:"infra_digest"`
		Host           string `json:"host"`
		Rig            string `json:"rig"`
	}
)

// CeilingsDate is the day the ceilings file says its passes were measured.
const CeilingsDate = "2026-07-28"

// messageBytes is the mean size of the harness's 1.5M sensor-batch
// messages, which the consume ceiling is measured at.
const messageBytes = 4065

// HostCeilings is a ceilings file of the harness's host: a consume ceiling
// of 300,000 messages/s and ClickHouse's in five formats, Native's the
// highest at 30M rows/s over 64 inserters of 8 rungs.
func HostCeilings() Ceilings {
	prov := func(rig string) Provenance {
		return Provenance{Date: CeilingsDate, DatasetVersion: sensorbatch.HarnessDatasetVersion, InfraDigest: InfraDigest(),
			Host: hostDescription, Rig: rig + " (composed by spatec's tests)"}
	}
	const msgs = 300_000
	c := Ceilings{Consume: Consume{
		MsgsPerS: msgs, MBPerS: msgs * messageBytes / 1e6, MessageBytes: messageBytes, Partitions: partitions,
		Broker: fmt.Sprintf("%s, %d CPU", brokerImage, brokerCPUs), Threads: 4, Client: "inside",
		Window:       Window{RequestedS: 8, ActualS: 8.1, MessagesRead: 2_430_000, TopicDepth: 12_000_000, CalibratedMsgsPerS: 360_000},
		BrokerCgroup: Cgroup{Cores: 0.7, CapCores: brokerCPUs, UserShare: 0.45},
		Provenance:   prov("bench ceiling --measure --seconds 8 --threads 4"),
	}}
	ingest := func(format string, rowBytes uint64, sweep ...SweepPoint) Ingest {
		best := sweep[0]
		for _, s := range sweep {
			if s.RowsPerS > best.RowsPerS {
				best = s
			}
		}
		// Eight seconds a rung, every row posted counted.
		var posted uint64
		for _, s := range sweep {
			posted += s.RowsPerS * 8
		}
		return Ingest{
			Format: format, RowsPerS: best.RowsPerS, MBPerS: float64(best.RowsPerS*rowBytes) / 1e6, RowBytes: rowBytes,
			Threads: best.Concurrency, Client: "inside", Sweep: sweep,
			ClickHouse:   fmt.Sprintf("%s, %d CPU, %s memory", clickHouseImage, clickHouseCPUs, dockerMemory(clickHouseMemory)),
			TargetCgroup: Cgroup{Cores: 16.1, CapCores: clickHouseCPUs, UserShare: 0.9, NrThrottled: 80, ThrottledUs: 100_000_000},
			Landed:       Landed{Posted: posted, Counted: posted},
			Parts:        Parts{PartsWritten: posted / 100_000, RowsWritten: posted, Merges: posted / 1_000_000, RowsMerged: posted / 2},
			Network:      Network{Inserts: posted / 15_000, DurationMs: 3_000_000, WaitingMs: 100_000},
			Settle:       Settle{MaxWaitS: 25, AtConcurrency: sweep[len(sweep)-1].Concurrency, QuietMs: 2000},
			Provenance:   prov(fmt.Sprintf("bench ceiling --measure --seconds 8 --ingest-max %d", sweep[len(sweep)-1].Concurrency)),
		}
	}
	at := func(n, rows uint64) SweepPoint { return SweepPoint{Concurrency: n, RowsPerS: rows} }
	rowBinary := ingest("rowbinary", 93,
		at(2, 900_000), at(4, 1_400_000), at(8, 2_800_000), at(16, 5_200_000), at(32, 6_000_000), at(64, 5_950_000), at(128, 5_900_000))
	// The ladder stopped short of 256 inserters: ClickHouse refused more.
	rowBinary.StoppedAt = &Stopped{Concurrency: 256, RefusedBy: "target", Error: "Code: 252. TOO_MANY_PARTS"}
	c.ClickHouse = []Ingest{
		ingest("arrow_stream", 115,
			at(2, 3_200_000), at(4, 6_500_000), at(8, 9_800_000), at(16, 14_800_000), at(32, 18_500_000), at(64, 20_000_000), at(128, 19_300_000)),
		ingest("json_each_row", 252,
			at(2, 850_000), at(4, 1_700_000), at(8, 3_400_000), at(16, 4_000_000), at(32, 4_200_000), at(64, 5_200_000), at(128, 5_800_000), at(256, 5_790_000)),
		ingest("native", 65,
			at(2, 1_800_000), at(4, 5_100_000), at(8, 9_600_000), at(16, 18_500_000), at(32, 26_700_000), at(64, 30_000_000), at(128, 29_200_000), at(256, 29_200_000)),
		rowBinary,
		ingest("rowbinary_nt", 93,
			at(2, 680_000), at(4, 1_370_000), at(8, 2_700_000), at(16, 5_150_000), at(32, 6_100_000), at(64, 6_000_000), at(128, 5_900_000)),
	}
	return c
}

// Ingest is the file's ceiling in format, the harness's name of it.
func (c Ceilings) Ingest(format string) (Ingest, bool) {
	for _, in := range c.ClickHouse {
		if in.Format == format {
			return in, true
		}
	}
	return Ingest{}, false
}

// CeilingsBytes is HostCeilings as the harness writes the file: JSON
// indented by two spaces.
func CeilingsBytes(t testing.TB) []byte {
	t.Helper()
	b, err := json.MarshalIndent(HostCeilings(), "", "  ")
	if err != nil {
		t.Fatalf("harnessenv: writing the ceilings: %v", err)
	}
	return append(b, '\n')
}

// CeilingsFile writes CeilingsBytes where the harness keeps it
// (environments/ceilings/<env_id>.json) under a directory of the test's,
// and returns its path.
func CeilingsFile(t testing.TB) string {
	t.Helper()
	return writeFile(t, filepath.Join(t.TempDir(), "environments", "ceilings", Name+".json"), CeilingsBytes(t))
}
