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
	"spatec.dev/spatec/exec/record"
	"spatec.dev/spatec/internal/testenv"
)

// TestLocalContainersComparesTwoRealArms is the bench path at this
// machine's scale: the broker program and Debian's ClickHouse in
// containers on the run's network, the ceilings measured from inside it,
// and two real arms, ClickHouse's Kafka engine and the reference consumer,
// interleaved over two repetitions, then compared.
func TestLocalContainersComparesTwoRealArms(t *testing.T) {
	requireServices(t)
	testenv.Require(t, "mmdebstrap (builds the Debian ClickHouse image)", func() error {
		_, err := osexec.LookPath("mmdebstrap")
		return err
	})
	results := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	runCLI := func(args ...string) string {
		t.Helper()
		var out, errOut strings.Builder
		if code := run(ctx, append(args, "--results", results), &out, &errOut); code != exitOK {
			t.Fatalf("spatec %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, out.String(), errOut.String())
		}
		return out.String()
	}

	out := runCLI("ceiling", "--measure", "--env", "local-containers")
	t.Logf("\n%s", out)
	c, err := exec.LoadCeilings(exec.CeilingsPath(results, "local-containers", "json-rows"))
	if err != nil {
		t.Fatal(err)
	}
	if c.MeasuredFrom != exec.MeasuredInNetwork || c.Broker.MessagesPerSec <= 0 || c.ClickHouse.RowsPerSec <= 0 {
		t.Fatalf("ceilings %+v; want both measured from the run's network", c)
	}
	assertNothingLeft(t)

	out = runCLI("exec", "--env", "local-containers", "clickhouse-kafka-engine", "reference", "--reps", "2")
	t.Logf("\n%s", out)
	required := []string{
		record.PeakAnonBytes, record.PeakShmemBytes, record.MemoryPeakBytes, // C7
		record.DataPlanePeakAnonBytes, record.DataPlanePeakShmemBytes, record.DataPlaneMemoryPeakBytes,
		record.CoresUsed, record.DataPlaneCoresUsed, record.ControlPlaneCoresUsed, // C8
		record.ExpectedRows, record.DistinctRows, record.LandedRows, record.DuplicateRows, // C13
		record.RowsPerS, record.InfraBrokerConsumeShare, record.InfraClickHouseIngestShare, // C12
	}
	for entrant, version := range map[string]string{"clickhouse-kafka-engine": "18.16.1", "reference": "0.1.0"} {
		recs := readRecords(t, record.PathFor(results, "local-containers", entrant, time.Now()))
		if len(recs) != 2 {
			t.Fatalf("%s: %d records, want 2", entrant, len(recs))
		}
		for i, rec := range recs {
			if !rec.Status.CarriesMeasurement() || rec.Rep != i+1 {
				t.Errorf("%s record %d: status %s rep %d, note %q", entrant, i, rec.Status, rec.Rep, rec.Note)
			}
			for _, m := range required {
				if _, ok := rec.Metrics[m]; !ok {
					t.Errorf("%s record %d lacks metric %s", entrant, i, m)
				}
			}
			if got := rec.Metrics[record.DistinctRows].Value; got != 200_000 {
				t.Errorf("%s record %d: %v distinct rows, want 200000", entrant, i, got)
			}
			// C16: the version is read inside the image.
			if rec.SUT.Version != version {
				t.Errorf("%s record %d: version %q read inside the image, want %q", entrant, i, rec.SUT.Version, version)
			}
			if rec.Run.CeilingsMeasuredFrom != exec.MeasuredInNetwork || len(rec.Run.Ceilings) != 3 {
				t.Errorf("%s record %d: gated against ceilings %v measured from %q", entrant, i, rec.Run.Ceilings, rec.Run.CeilingsMeasuredFrom)
			}
			// The infrastructure ran in containers under read-back caps,
			// ClickHouse from the Debian recipe.
			infra := map[string]record.Container{}
			for _, c := range rec.Run.Infra {
				infra[c.Role] = c
			}
			if ch := infra["clickhouse"]; ch.Recipe == "" || !strings.HasPrefix(ch.ImageDigest, "sha256:") || ch.Version != "18.16.1" {
				t.Errorf("%s record %d: ClickHouse ran %+v; want an image built from its recipe, version 18.16.1", entrant, i, ch)
			}
			if b := infra["broker"]; b.Version != "0.1.0" {
				t.Errorf("%s record %d: broker %+v; want its version read inside its image", entrant, i, b)
			}
			for _, name := range []string{"spatec-broker", "spatec-clickhouse"} {
				if len(rec.Run.Cgroups[name]) == 0 {
					t.Errorf("%s record %d: no caps read back for %s", entrant, i, name)
				}
			}
		}
	}
	assertNothingLeft(t)

	code, out, errOut := cli(t, "report", results, "--format", "json")
	if code != exitOK {
		t.Fatalf("report: exit %d\n%s", code, errOut)
	}
	var rep struct {
		Sets []struct {
			Arms []struct {
				Entrant string `json:"entrant"`
			} `json:"arms"`
		} `json:"sections"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("report: %v\n%s", err, out)
	}
	var arms []string
	for _, s := range rep.Sets {
		for _, a := range s.Arms {
			arms = append(arms, a.Entrant)
		}
	}
	if len(rep.Sets) != 1 || len(arms) != 2 {
		t.Errorf("report compares %v in %d sets; want both arms side by side in one", arms, len(rep.Sets))
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
	code, out, errOut := cli(t, "exec", "--env", "local-containers", "reference", "--hold", "5s", "--results", t.TempDir())
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
