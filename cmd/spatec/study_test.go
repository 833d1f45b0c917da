package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"spatec.dev/spatec/internal/testenv"
)

// TestStudyOnLocal runs a whole study as a maintainer would: every point
// of the reference arm's batch × flush grid, on a quarter of the dataset
// and on all of it, two repetitions each, interleaved, on the real engine
// and ClickHouse; then the HTML report, loaded in headless Chromium, shows
// the surface, the recommended point with its justification, the scale
// check, the charts over the window and the history.
func TestStudyOnLocal(t *testing.T) {
	requireServices(t)
	testenv.RequireChromium(t)
	results := t.TempDir()
	code, out, errOut := cli(t, "sweep", "--env", "local", "reference:batch-flush", "--reps", "2", "--results", results)
	if code != exitOK {
		t.Fatalf("sweep: exit %d\n%s\n%s", code, out, errOut)
	}
	if n := strings.Count(out, " ok  rows/s "); n != 24 {
		t.Fatalf("%d ok runs, want 6 points × 2 sizes × 2 reps:\n%s", n, out)
	}
	// Interleaved: every point at every size once before any twice; the
	// quarter of the dataset first, then all of it.
	order := regexp.MustCompile(`reference:(batch-flush-\d) rep (\d)/2 ok .* rows (\d+)/`).FindAllStringSubmatch(out, -1)
	for i, m := range order {
		rep := map[bool]string{true: "1", false: "2"}[i < 12]
		rows := map[bool]string{true: "50000", false: "200000"}[i%12 < 6]
		if m[2] != rep || m[3] != rows {
			t.Fatalf("run %d is %s rep %s over %s rows; want rep %s over %s", i+1, m[1], m[2], m[3], rep, rows)
		}
	}
	if !strings.Contains(errOut, "progress phase=runs done=24 total=24 unit=runs") {
		t.Errorf("no progress over the runs:\n%s", errOut)
	}
	if code, vout, verr := cli(t, "validate", results); code != exitOK {
		t.Fatalf("validate: exit %d\n%s%s", code, vout, verr)
	}

	dir := testenv.Artifacts(t)
	page := filepath.Join(dir, "study.html")
	if code, rout, rerr := cli(t, "report", "--format", "html", "-o", page, results); code != exitOK {
		t.Fatalf("report: exit %d\n%s%s", code, rout, rerr)
	}
	dom, console := testenv.Chromium(t, "--dump-dom", "file://"+page)
	if len(console) > 0 {
		t.Errorf("the page logged to the console:\n%s", strings.Join(console, "\n"))
	}
	for _, want := range []string{
		"Study reference:batch-flush: batch_rows × flush_ms",
		"Recommended: batch_rows=", "the cheapest point within 2.0% of the best throughput",
		`<table class="surface">`, "Over the window", "reference:batch-flush-6: rows landed",
		"reference:batch-flush-1: cores used", "reference:batch-flush-3: arm anon+shmem",
		"not comparable with S2: the first 200000 messages of the dataset vs 50000",
		"<h2>History</h2>", "Rows per core-second", "Peak per row", "exploratory",
		"<b>Scale</b>", "50.0k msgs", "200.0k msgs",
	} {
		if !strings.Contains(dom, want) {
			t.Errorf("the loaded page lacks %q", want)
		}
	}
	// Every point is a cell of the surface at each size (each size is a
	// section of its own), and one of them is the knee.
	if n := strings.Count(dom, " rows/s<br>"); n != 12 {
		t.Errorf("%d measured cells in the surfaces, want 6 at each of 2 sizes", n)
	}
	if n := strings.Count(dom, "<b>Scale</b>"); n != 1 {
		t.Errorf("%d scale checks, want one, in the section of the whole dataset", n)
	}
	if !regexp.MustCompile(`<td class="knee( best)?">`).MatchString(dom) {
		t.Error("no cell of the surface is marked as the recommended point")
	}
	// Three charts over the window per point, each with its repetitions
	// and their median.
	if n := strings.Count(dom, `class="tl rows med"`); n != 12 {
		t.Errorf("%d median lines of rows landed, want one per point and size (12)", n)
	}
	shot := filepath.Join(dir, "study.png")
	if _, console := testenv.Chromium(t, "--screenshot="+shot, "--window-size=1400,3000", "--hide-scrollbars", "file://"+page); len(console) > 0 {
		t.Errorf("the page logged to the console while rendering:\n%s", strings.Join(console, "\n"))
	}
	if st, err := os.Stat(shot); err != nil || st.Size() < 10_000 {
		t.Errorf("no screenshot at %s: %v", shot, err)
	}
	t.Logf("report: %s\nscreenshot: %s", page, shot)
}
