package main

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"spatec.dev/spatec/exec"
	"spatec.dev/spatec/internal/harnessenv"
)

// sampleTree is a tree whose one environment is the reference harness's
// host, drained over 20,000 messages rather than its 1.5M, so that the
// mean message size the import holds the file to (4063.8 bytes here, 4065.0
// over the whole dataset) takes a fraction of a second.
func sampleTree(t *testing.T, edits ...harnessenv.Edit) string {
	t.Helper()
	dir := t.TempDir()
	harnessenv.WriteTree(t, dir, append(edits, harnessenv.Edit{Old: "messages: 1_500_000", New: "messages: 20_000"})...)
	return dir
}

// `spatec ceiling --import` writes the harness's ceilings as the
// environment's, and `spatec ceiling` shows where they came from; a file
// that does not describe the plan is REFUSED (exit 3), one that is not the
// harness's ceilings a usage error (exit 2).
func TestCeilingImport(t *testing.T) {
	file := harnessenv.CeilingsFile(t)
	results := t.TempDir()
	tree := sampleTree(t)
	code, out, errOut := cli(t, "ceiling", "--tree", tree, "--env", harnessenv.Name, "--import", file, "--results", results)
	if code != exitOK {
		t.Fatalf("import: exit %d: %s", code, errOut)
	}
	path := exec.CeilingsPath(results, harnessenv.Name, "sensor-batch")
	c, err := exec.LoadCeilings(path)
	if err != nil || c.Imported == nil || c.ClickHouse.RowsPerSec != 30_000_000 || c.Broker.MessagesPerSec != 300_000 {
		t.Fatalf("written %+v, %v", c, err)
	}
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(raw)
	code, shown, errOut := cli(t, "ceiling", "--tree", tree, "--env", harnessenv.Name, "--results", results)
	if code != exitOK {
		t.Fatalf("show: exit %d: %s", code, errOut)
	}
	for _, o := range []string{out, shown} {
		for _, want := range []string{
			"ceilings of c8g-8xl-ec2-docker for sensor-batch (" + path,
			"30000000 rows/s (Native, 64 writers): the ceiling the gate holds every arm to",
			"6100000 rows/s (RowBinaryWithNamesAndTypes, 32 writers)",
			"imported", "from the reference harness (spate-etl/benchmark): " + file + " (sha256:" + hex.EncodeToString(sum[:6]),
			"measured " + harnessenv.CeilingsDate + " under its infrastructure d867b69febf3 (redpanda|3|8g|16|16g|8), client inside, corpus d2-60d7e5bb2a82",
			"formats: arrow_stream as ArrowStream, json_each_row as JSONEachRow, native as Native, rowbinary as RowBinary, rowbinary_nt as RowBinaryWithNamesAndTypes",
		} {
			if !strings.Contains(o, want) {
				t.Errorf("the output lacks %q:\n%s", want, o)
			}
		}
	}

	// Another ClickHouse: refused, and nothing written.
	other := t.TempDir()
	code, _, errOut = cli(t, "ceiling", "--tree", sampleTree(t, harnessenv.Edit{Old: "cpus:   16", New: "cpus:   12"}),
		"--env", harnessenv.Name, "--import", file, "--results", other)
	if code != exitRefused || !strings.Contains(errOut, "REFUSED: C12: the reference harness's ceilings in "+file) ||
		!strings.Contains(errOut, "ClickHouse had 16 CPUs, and the environment gives it 12") {
		t.Errorf("exit %d: %s; want REFUSED naming ClickHouse's CPUs", code, errOut)
	}
	if _, err := os.Stat(exec.CeilingsPath(other, harnessenv.Name, "sensor-batch")); err == nil {
		t.Error("refused ceilings were written")
	}

	// Not the harness's ceilings: spatec's own file given by mistake.
	code, _, errOut = cli(t, "ceiling", "--tree", tree, "--env", harnessenv.Name, "--import", path, "--results", t.TempDir())
	if code != exitUsage || !strings.Contains(errOut, "is not the reference harness's ceilings file") {
		t.Errorf("exit %d: %s; want a usage error", code, errOut)
	}
	code, _, _ = cli(t, "ceiling", "--tree", tree, "--env", harnessenv.Name, "--import", file, "--measure")
	if code != exitUsage {
		t.Errorf("--import with --measure: exit %d; want a usage error", code)
	}
	code, _, errOut = cli(t, "ceiling", "--tree", tree, "--env", harnessenv.Name, "--import", filepath.Join(t.TempDir(), "none.json"))
	if code != exitUsage || !strings.Contains(errOut, "reading the reference harness's ceilings") {
		t.Errorf("a missing file: exit %d: %s; want a usage error", code, errOut)
	}
}

// `spatec ceiling --import` takes the ceilings file the harness published
// of its host, as the harness wrote it, for spatec's environment of that
// host.
func TestCeilingImportOfTheHarnessPublishedFile(t *testing.T) {
	dir := harnessenv.Checkout(t, "go test ./cmd/spatec -run TestCeilingImportOfTheHarnessPublishedFile")
	file := filepath.Join(dir, "environments", "ceilings", harnessenv.Name+".json")
	results := t.TempDir()
	code, out, errOut := cli(t, "ceiling", "--tree", sampleTree(t), "--env", harnessenv.Name, "--import", file, "--results", results)
	if code != exitOK {
		t.Fatalf("import: exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"rows/s (Native, ", "from the reference harness (spate-etl/benchmark): " + file,
		"under its infrastructure " + harnessenv.InfraDigest() + " (" + harnessenv.InfraKey() + "), client inside, corpus d2-60d7e5bb2a82",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the output lacks %q:\n%s", want, out)
		}
	}
	if _, err := exec.LoadCeilings(exec.CeilingsPath(results, harnessenv.Name, "sensor-batch")); err != nil {
		t.Error(err)
	}
}
