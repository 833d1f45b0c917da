package main

import (
	"context"
	"encoding/json"
	"os"
	osexec "os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"spatec.dev/spatec/exec"
	"spatec.dev/spatec/internal/testenv"
	"spatec.dev/spatec/runs/record"
)

// TestLocalContainersRunsBothWorkloads is the bench path at this machine's
// scale: Apache Kafka, Debian's ClickHouse and Apicurio Registry in
// containers on the run's network, the ceilings of both workloads
// measured from inside it, then, interleaved over two repetitions, two
// real arms compared on json-rows (ClickHouse's Kafka engine and the
// reference consumer), the reference consumer and Flink (its job built
// from this tree) on the benchmark's sensor-batch workload passing every
// gate, the reference's wrong-transform variant failing the checksum gate
// with both values, and spate (its arm built from this tree) failed in
// ClickHouse 18.16's own words.
func TestLocalContainersRunsBothWorkloads(t *testing.T) {
	requireServices(t)
	testenv.Require(t, "mmdebstrap (builds the Debian images)", func() error {
		_, err := osexec.LookPath("mmdebstrap")
		return err
	})
	results := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()
	runCLI := func(want int, args ...string) string {
		t.Helper()
		var out, errOut strings.Builder
		if code := run(ctx, append(args, "--results", results), &out, &errOut); code != want {
			t.Fatalf("spatec %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, want, out.String(), errOut.String())
		}
		return out.String()
	}

	out := runCLI(exitOK, "ceiling", "--measure", "--env", "local-containers")
	t.Logf("\n%s", out)
	for _, w := range []string{"json-rows", "sensor-batch"} {
		c, err := exec.LoadCeilings(exec.CeilingsPath(results, "local-containers", w))
		if err != nil {
			t.Fatal(err)
		}
		if c.Workload != w || c.MeasuredFrom != exec.MeasuredInNetwork || c.Broker.MessagesPerSec <= 0 || c.ClickHouse.RowsPerSec <= 0 {
			t.Fatalf("%s ceilings %+v; want both measured from the run's network", w, c)
		}
	}
	assertNothingLeft(t)

	// Failed runs (the wrong transform's, spate's): exit 1. One rep each:
	// repetitions are TestExecLocalReference's and the fault tests'.
	out = runCLI(exitProblems, "exec", "--env", "local-containers", "clickhouse-kafka-engine", "reference:json-rows", "reference", "reference:wrong-transform", "flink", "spate")
	t.Logf("\n%s", out)
	required := []string{
		record.PeakAnonBytes, record.PeakShmemBytes, record.MemoryPeakBytes, // C7
		record.DataPlanePeakAnonBytes, record.DataPlanePeakShmemBytes, record.DataPlaneMemoryPeakBytes,
		record.CoresUsed, record.DataPlaneCoresUsed, record.ControlPlaneCoresUsed, // C8
		record.ExpectedRows, record.DistinctRows, record.LandedRows, record.DuplicateRows, // C13
		record.RowsPerS, record.InfraBrokerConsumeShare, record.InfraClickHouseIngestShare, // C12
	}
	byVariant := map[string][]record.Record{}
	for _, entrant := range []string{"clickhouse-kafka-engine", "reference", "flink", "spate"} {
		for _, rec := range readRecords(t, record.PathFor(results, "local-containers", entrant, time.Now())) {
			byVariant[entrant+":"+rec.SUT.Variant] = append(byVariant[entrant+":"+rec.SUT.Variant], rec)
		}
	}
	for arm, want := range map[string]struct {
		workload, version string
		rows              float64
	}{
		"clickhouse-kafka-engine:default": {"json-rows", "18.16.1", 200_000},
		"reference:json-rows":             {"json-rows", "0.1.1", 200_000},
		"reference:default":               {"sensor-batch", "0.1.1", 1_470_000},
		"flink:default":                   {"sensor-batch", "2.2.1", 1_470_000},
	} {
		recs := byVariant[arm]
		if len(recs) != 1 {
			t.Fatalf("%s: %d records, want 1", arm, len(recs))
		}
		for i, rec := range recs {
			if !rec.Status.CarriesMeasurement() || rec.Rep != i+1 {
				t.Errorf("%s record %d: status %s rep %d, note %q", arm, i, rec.Status, rec.Rep, rec.Note)
			}
			for _, m := range required {
				if _, ok := rec.Metrics[m]; !ok {
					t.Errorf("%s record %d lacks metric %s", arm, i, m)
				}
			}
			if got := rec.Metrics[record.DistinctRows].Value; got != want.rows {
				t.Errorf("%s record %d: %v distinct rows, want %v", arm, i, got, want.rows)
			}
			if d := rec.Run.Dataset; d.Workload != want.workload || !strings.HasPrefix(d.Version, want.workload+"@") {
				t.Errorf("%s record %d: dataset %+v, want workload %s", arm, i, d, want.workload)
			}
			// The correctness gates, each with what it compared.
			var gates []string
			for _, g := range rec.Gates {
				if !g.Passed {
					t.Errorf("%s record %d: gate %s failed: %s", arm, i, g.Name, g.Note)
				}
				gates = append(gates, g.Name)
			}
			if strings.Join(gates, ",") != "loss,checksum,duplicates" {
				t.Errorf("%s record %d: gates %v, want loss, checksum, duplicates", arm, i, gates)
			}
			// C16: the version is read inside the image.
			if rec.SUT.Version != want.version {
				t.Errorf("%s record %d: version %q read inside the image, want %q", arm, i, rec.SUT.Version, want.version)
			}
			if rec.Run.CeilingsMeasuredFrom != exec.MeasuredInNetwork || len(rec.Run.Ceilings) != 3 {
				t.Errorf("%s record %d: gated against ceilings %v measured from %q", arm, i, rec.Run.Ceilings, rec.Run.CeilingsMeasuredFrom)
			}
			// The infrastructure ran in containers under read-back caps,
			// each from its recipe, its version read inside its image.
			infra := map[string]record.Container{}
			for _, c := range rec.Run.Infra {
				infra[c.Role] = c
			}
			for role, version := range map[string]string{"clickhouse": "18.16.1", "broker": "4.4.0", "registry": "3.3.3"} {
				if c := infra[role]; c.Recipe == "" || !strings.HasPrefix(c.ImageDigest, "sha256:") || c.Version != version {
					t.Errorf("%s record %d: the %s ran %+v; want an image built from its recipe, version %s", arm, i, role, c, version)
				}
			}
			for _, name := range []string{"spatec-broker", "spatec-clickhouse", "spatec-registry"} {
				if len(rec.Run.Cgroups[name]) == 0 {
					t.Errorf("%s record %d: no caps read back for %s", arm, i, name)
				}
			}
		}
	}
	for i, rec := range byVariant["reference:wrong-transform"] {
		var checksum *record.Gate
		for j := range rec.Gates {
			if rec.Gates[j].Name == record.GateChecksum {
				checksum = &rec.Gates[j]
			}
		}
		if rec.Status != record.StatusFailed || checksum == nil || checksum.Passed ||
			checksum.Expected["name_sum"] == checksum.Found["name_sum"] || !strings.Contains(rec.Note, "checksum: name_sum is "+checksum.Found["name_sum"]) ||
			!strings.Contains(rec.Note, "the closed form for 20000 messages is "+checksum.Expected["name_sum"]) {
			t.Errorf("wrong-transform record %d: status %s, note %q, checksum gate %+v; want failed on name_sum with both values", i, rec.Status, rec.Note, checksum)
		}
	}
	if n := len(byVariant["reference:wrong-transform"]); n != 1 {
		t.Errorf("%d wrong-transform records, want 1", n)
	}
	// spate 0.1 reads a table's columns ordered by system.columns'
	// position, which 18.16 does not have: each run fails in the server's
	// words, from the arm's own log, having landed nothing.
	for i, rec := range byVariant["spate:native"] {
		if rec.Status != record.StatusFailed || !strings.Contains(rec.Note, "exited during the drain") ||
			!strings.Contains(rec.Note, "Unknown identifier: position") || !strings.Contains(rec.Note, "0 distinct rows of 1470000 landed") ||
			rec.SUT.Version != "0.1.0" {
			t.Errorf("spate record %d: status %s, version %q, note %q; want failed with ClickHouse's own message", i, rec.Status, rec.SUT.Version, rec.Note)
		}
	}
	if n := len(byVariant["spate:native"]); n != 1 {
		t.Errorf("%d spate records, want 1", n)
	}
	assertNothingLeft(t)

	code, out, errOut := cli(t, "report", results, "--format", "json")
	if code != exitOK {
		t.Fatalf("report: exit %d\n%s", code, errOut)
	}
	var rep struct {
		Sets []struct {
			Workload string `json:"workload"`
			Arms     []struct {
				Entrant string `json:"entrant"`
				Variant string `json:"variant"`
			} `json:"arms"`
		} `json:"sections"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("report: %v\n%s", err, out)
	}
	arms := map[string][]string{}
	for _, s := range rep.Sets {
		for _, a := range s.Arms {
			arms[s.Workload] = append(arms[s.Workload], a.Entrant+":"+a.Variant)
		}
	}
	if len(rep.Sets) != 2 || len(arms["json-rows"]) != 2 || len(arms["sensor-batch"]) != 4 {
		t.Errorf("report sets %v; want the json-rows arms side by side, and the sensor-batch ones in a set of their own", arms)
	}
	if code, vout, verr := cli(t, "validate", results); code != exitOK {
		t.Errorf("validate: exit %d\n%s%s", code, vout, verr)
	}
	_ = os.RemoveAll(results)
}

// TestHoldBringsTheInfrastructureUp: a hold run starts the broker and
// ClickHouse and fills the topic, so a real consumer has something to read
// while its caps and measurement are checked.
func TestHoldBringsTheInfrastructureUp(t *testing.T) {
	requireServices(t)
	testenv.Require(t, "mmdebstrap (builds the Debian ClickHouse image)", func() error {
		_, err := osexec.LookPath("mmdebstrap")
		return err
	})
	// The 5,000-batch corpus: more than the consumer drains in the 5 s held.
	code, out, errOut := cli(t, "exec", "--tree", shortDrainTree(t), "--env", "local-containers", "reference", "--hold", "5s", "--results", t.TempDir())
	if code != exitOK || !strings.Contains(out, "reference:default held ") || !strings.Contains(errOut, "phase=prefill state=end") {
		t.Fatalf("hold: exit %d\n%s\n%s", code, out, errOut)
	}
	var cores float64
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "consumer ") {
			f := strings.Fields(line)
			cores, _ = strconv.ParseFloat(f[3], 64)
		}
	}
	if cores <= 0.05 {
		t.Errorf("the consumer used %v cores while held; with the topic filled it reads and inserts:\n%s", cores, out)
	}
	assertNothingLeft(t)
}
