package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sensorbatch "spatec.dev/spatec/workloads/sensor-batch"
)

func corpusJSON(t *testing.T, args ...string) corpusOut {
	t.Helper()
	code, out, errOut := cli(t, append([]string{"corpus", "-o", "json"}, args...)...)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var c corpusOut
	if err := json.Unmarshal([]byte(out), &c); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return c
}

// The expectation for the harness's published dataset (its records report,
// for batches: 1500000, ch_written_rows 110,250,000 and ceilings whose
// bytes/messages ratio is about 4,065) is that dataset's, from the tree's
// workload declaration alone.
func TestCorpusMatchesThePublishedRecord(t *testing.T) {
	c := corpusJSON(t, "--workload", "sensor-batch", "--batches", "1500000")
	if c.ExpectedRows != 110_250_000 {
		t.Errorf("expected_rows = %d; the published records report 110250000", c.ExpectedRows)
	}
	if d := math.Abs(c.MeanMessageBytes-4065) / 4065; d > 0.01 {
		t.Errorf("mean_message_bytes = %.1f, %.2f%% from the published 4065", c.MeanMessageBytes, 100*d)
	}
	if !strings.HasPrefix(c.DatasetVersion, "sensor-batch@") || c.Messages != 1_500_000 {
		t.Errorf("workload %q, %d messages, dataset %q", c.Workload, c.Messages, c.DatasetVersion)
	}
}

// The tree's constants are the harness's: over the first 1000 batches the
// checksum is the one the harness's golden test pins (HarnessGolden, beside
// the label it licenses).
func TestCorpusIsTheHarnessCorpus(t *testing.T) {
	want := sensorbatch.HarnessGolden()
	c := corpusJSON(t, "--workload", "sensor-batch", "--batches", fmt.Sprint(want.Batches))
	if c.ExpectedRows != want.Rows {
		t.Errorf("expected_rows = %d; the harness's is %d", c.ExpectedRows, want.Rows)
	}
	for k, v := range want.Sums {
		if c.Checksum[k] != v {
			t.Errorf("checksum %s = %s; the harness's is %s", k, c.Checksum[k], v)
		}
	}
	if c.DatasetVersion != sensorbatch.DatasetVersion {
		t.Errorf("dataset_version %s; the harness's label is licensed for %s", c.DatasetVersion, sensorbatch.DatasetVersion)
	}
}

func TestCorpusUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"corpus", "--batches", "10"}, "--workload is required"},
		{[]string{"corpus", "--workload", "sensor-batch"}, "--batches is 0"},
		{[]string{"corpus", "--workload", "nope", "--batches", "10"}, `no workload "nope"; the tree has: json-rows, sensor-batch`},
	} {
		code, _, errOut := cli(t, tc.args...)
		if code != exitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, %q; want %d saying %q", tc.args, code, errOut, exitUsage, tc.want)
		}
	}
}

// The corpus the arms' own tests decode (workloads/sensor-batch/testdata/
// arms: the Rust and Java transform tests read it) is still what `corpus
// --messages` writes, with the expectation it prints beside it. After a
// change to the workload, write both again:
//
//	spatec corpus --workload sensor-batch --batches 24 -o json \
//	  --messages workloads/sensor-batch/testdata/arms/messages.bin \
//	  > workloads/sensor-batch/testdata/arms/expected.json
func TestArmsCorpusIsTheGenerators(t *testing.T) {
	dir := filepath.Join("..", "..", "workloads", "sensor-batch", "testdata", "arms")
	file := filepath.Join(t.TempDir(), "messages.bin")
	code, out, errOut := cli(t, "corpus", "--workload", "sensor-batch", "--batches", "24", "-o", "json", "--messages", file)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, c := range []struct{ committed, written string }{
		{filepath.Join(dir, "expected.json"), out},
		{filepath.Join(dir, "messages.bin"), string(mustRead(t, file))},
	} {
		if got := string(mustRead(t, c.committed)); got != c.written {
			t.Errorf("%s is not what corpus writes now (%d bytes, %d committed); write it again as this test's comment says", c.committed, len(c.written), len(got))
		}
	}
	var c corpusOut
	if err := json.Unmarshal([]byte(out), &c); err != nil {
		t.Fatal(err)
	}
	if c.Transform == nil || c.Transform.DropUnit != "drop" || c.Transform.QualityFloor != 0.2 || c.SchemaID != 1 {
		t.Errorf("corpus prints transform %+v, schema id %d; want the workload's (drop, 0.2) and 1", c.Transform, c.SchemaID)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
