package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"spatec.dev/spatec/internal/testenv"
	"spatec.dev/spatec/runs/record"
)

// TestFootprintOnLocal runs the reference arm's two-point footprint study
// on the real engine and ClickHouse: the envelope holds, 8 MiB does not
// (the OOM killer ends the consumer). The study's verdict, its records
// (each a footprint point, never ranked) and its chart in the HTML report,
// loaded in headless Chromium with the degradation marked, are checked.
func TestFootprintOnLocal(t *testing.T) {
	requireServices(t)
	testenv.RequireChromium(t)
	results := t.TempDir()
	code, out, errOut := cli(t, "footprint", "--env", "local", "reference:smoke", "--results", results)
	if code != exitOK {
		t.Fatalf("footprint: exit %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{
		"smallest cap: 1 GiB holds 1.00× the envelope's rate; 8 MiB did not (oom)",
		"recommended: 1 GiB at ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the verdict lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errOut, "footprint reference:smoke on local: memory from 1 GiB down to 8 MiB") ||
		!strings.Contains(errOut, "progress phase=runs done=4 ") {
		t.Errorf("no account of the study or of its progress:\n%s", errOut)
	}

	// Four records, each a point of the study with its cap: the envelope's
	// measured, 8 MiB's failed with the OOM killer counted.
	if code, vout, verr := cli(t, "validate", results); code != exitOK {
		t.Fatalf("validate: exit %d\n%s%s", code, vout, verr)
	}
	files, _ := filepath.Glob(filepath.Join(results, "local", "reference", "*.jsonl"))
	if len(files) != 1 {
		t.Fatalf("results files: %v, want one", files)
	}
	recs := readRecords(t, files[0])
	byCap := map[float64][]record.Record{}
	for _, r := range recs {
		if r.SUT.Study != "smoke" || r.SUT.Footprint == nil || r.SUT.Footprint.Full != 1<<30 || r.SUT.Footprint.Fraction != 0.9 {
			t.Fatalf("a record that is not the study's point: %+v", r.SUT)
		}
		byCap[r.SUT.Footprint.Cap] = append(byCap[r.SUT.Footprint.Cap], r)
	}
	for _, r := range byCap[1<<30] {
		if r.Status != record.StatusOK || r.SUT.Containers[0].MemoryBytes != 1<<30 {
			t.Errorf("the envelope's run: %s at %d bytes", r.Status, r.SUT.Containers[0].MemoryBytes)
		}
	}
	for _, r := range byCap[8<<20] {
		if r.Status != record.StatusFailed || r.Metrics["oom_kills.consumer"].Value < 1 || r.SUT.Containers[0].MemoryBytes != 8<<20 {
			t.Errorf("the 8 MiB run: %s, oom kills %v, cap %d: %s", r.Status, r.Metrics["oom_kills.consumer"].Value, r.SUT.Containers[0].MemoryBytes, r.Note)
		}
	}
	if len(byCap[1<<30]) != 2 || len(byCap[8<<20]) != 2 {
		t.Fatalf("records by cap: %d at 1 GiB, %d at 8 MiB; want 2 and 2", len(byCap[1<<30]), len(byCap[8<<20]))
	}

	// The report: the study in a table and a chart, no section ranking it.
	_, text, _ := cli(t, "report", results)
	if !strings.Contains(text, "F1 footprint study reference:smoke on local") || strings.Contains(text, "RANK") {
		t.Errorf("the text report lacks the study, or ranks its runs:\n%s", text)
	}
	dir := testenv.Artifacts(t)
	page := filepath.Join(dir, "footprint.html")
	if code, rout, rerr := cli(t, "report", "--format", "html", "-o", page, results); code != exitOK {
		t.Fatalf("report: exit %d\n%s%s", code, rout, rerr)
	}
	dom, console := testenv.Chromium(t, "--dump-dom", "file://"+page)
	if len(console) > 0 {
		t.Errorf("the page logged to the console:\n%s", strings.Join(console, "\n"))
	}
	for _, want := range []string{
		"<h2>Footprint studies</h2>", `id="F1-chart"`, `class="degradation-marker"`, "degrades (oom)",
		"recommended: 1 GiB", `<circle class="fp degraded oom"`,
	} {
		if !strings.Contains(dom, want) {
			t.Errorf("the loaded page lacks %q", want)
		}
	}
	if strings.Contains(dom, "<h2>History</h2>") || strings.Contains(dom, `<section id="S1">`) {
		t.Error("the study's runs are in a section or the history: they are never ranked")
	}
	shot := filepath.Join(dir, "footprint.png")
	if _, console := testenv.Chromium(t, "--screenshot="+shot, "--window-size=1200,1400", "--hide-scrollbars", "file://"+page); len(console) > 0 {
		t.Errorf("the page logged to the console while rendering:\n%s", strings.Join(console, "\n"))
	}
	if st, err := os.Stat(shot); err != nil || st.Size() < 10_000 {
		t.Errorf("no screenshot at %s: %v", shot, err)
	}
	t.Logf("report: %s\nscreenshot: %s", page, shot)
	assertNothingLeft(t)
}
