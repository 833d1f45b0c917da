package report

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"spatec.dev/spatec/internal/testenv"
	"spatec.dev/spatec/runs/record"
)

// reportWithTwoSections is the demo section plus an older, incomparable one.
func reportWithTwoSections(t *testing.T) *Report {
	t.Helper()
	root := t.TempDir()
	demo(t, root)
	appendAll(t, root,
		run(t, "reference", 40000, at(-48*time.Hour), func(r *record.Record) { r.Run.Dataset.Version = "corpus-v0" }),
		run(t, "reference", 41000, at(-47*time.Hour), func(r *record.Record) { r.Run.Dataset.Version = "corpus-v0" }),
	)
	writeRaw(t, filepath.Join(root, "local", "reference", "2026-03.jsonl"), "{\"schema\":\"spatec.record/v1\",\"status\":\"ok\",\"ru")
	rep, _ := load(t, root, Options{})
	if len(rep.Sections) != 2 || len(rep.Problems) != 1 {
		t.Fatalf("fixture: %d sections, %d problems; want 2 and 1", len(rep.Sections), len(rep.Problems))
	}
	return rep
}

func TestHTMLIsSelfContained(t *testing.T) {
	var buf bytes.Buffer
	if err := reportWithTwoSections(t).WriteHTML(&buf); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	for _, banned := range []string{"http://", "https://", "<script", "<link", "<img", "<iframe", "src=", "@import", "@font-face"} {
		if strings.Contains(page, banned) {
			t.Errorf("the page contains %q: it must load nothing from anywhere", banned)
		}
	}
	for _, u := range regexp.MustCompile(`url\([^)]*\)`).FindAllString(page, -1) {
		if u != "url(#hatch-infra)" {
			t.Errorf("the page references %s; only in-document references are allowed", u)
		}
	}
	if !strings.Contains(page, `content="default-src 'none'; style-src 'unsafe-inline'"`) {
		t.Error("the page lacks the Content-Security-Policy that forbids network access")
	}
	for _, want := range []string{
		`<svg class="chart" id="S1-c1"`, `<svg class="chart" id="S2-c4"`,
		`<rect class="bar infra_bound"`, `<tspan class="mark infra_bound">· infra_bound</tspan>`,
		`<rect class="bar failed"`, `<tspan class="mark failed">· failed</tspan>`,
		"not comparable with S2: dataset corpus-v1 vs corpus-v0",
		"truncated record",
		"<p class=\"ranking\">ranked by rows_per_s, spatec&#39;s rate",
		"<th>Rows/s, harness window<br>median [min–max], not ranked</th>",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
}

func TestHTMLRendersInChromium(t *testing.T) {
	testenv.RequireChromium(t)
	dir := testenv.Artifacts(t)
	page := filepath.Join(dir, "report.html")
	f, err := os.Create(page)
	if err != nil {
		t.Fatal(err)
	}
	if err := reportWithTwoSections(t).WriteHTML(f); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	url := "file://" + page

	dom, console := testenv.Chromium(t, "--dump-dom", url)
	if len(console) > 0 {
		t.Errorf("the page logged to the console:\n%s", strings.Join(console, "\n"))
	}
	// The DOM after load, as the browser parsed it: every chart is there
	// and has its bars.
	charts := regexp.MustCompile(`<svg class="chart" id="(S\d-c\d)"`).FindAllStringSubmatch(dom, -1)
	if len(charts) != 10 {
		t.Errorf("%d charts in the loaded page, want 10 (5 per section, 2 sections)", len(charts))
	}
	if n := strings.Count(dom, `<rect class="bar `); n < 4*4+4 {
		t.Errorf("%d bars in the loaded page; want at least 20", n)
	}
	for _, want := range []string{"Throughput", "Throughput, the reference harness's window (approximated)", "Rows/s per core", "Data-plane cores", "Anon+shmem peak", "· infra_bound", "· failed", "ranked by rows_per_s"} {
		if !strings.Contains(dom, want) {
			t.Errorf("the loaded page lacks %q", want)
		}
	}

	shot := filepath.Join(dir, "report.png")
	_, console = testenv.Chromium(t, "--screenshot="+shot, "--window-size=1280,2000", "--hide-scrollbars", url)
	if len(console) > 0 {
		t.Errorf("the page logged to the console while rendering:\n%s", strings.Join(console, "\n"))
	}
	t.Logf("report: %s\nscreenshot: %s", page, shot)
	checkScreenshot(t, shot)
}

// checkScreenshot asserts the picture is the right size and shows the status
// colours: bars were actually painted.
func checkScreenshot(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot %s: %v", path, err)
	}
	b := img.Bounds()
	if b.Dx() != 1280 || b.Dy() != 2000 {
		t.Errorf("screenshot is %dx%d, want 1280x2000", b.Dx(), b.Dy())
	}
	colours := map[string][3]uint32{"ok": {0x2f, 0x6d, 0xb5}, "failed": {0xc0, 0x39, 0x2b}, "infra_bound": {0xc7, 0x7c, 0x02}}
	seen := map[string]int{}
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, _ := img.At(x, y).RGBA()
			for name, c := range colours {
				if near(r>>8, c[0]) && near(g>>8, c[1]) && near(bl>>8, c[2]) {
					seen[name]++
				}
			}
		}
	}
	for name := range colours {
		if seen[name] < 50 {
			t.Errorf("the screenshot shows almost no %s colour (%d pixels): were the bars drawn?", name, seen[name])
		}
	}
}

func near(a, b uint32) bool { return a+6 >= b && b+6 >= a }

// The console check must be able to fail: a page that logs an error and
// throws is caught.
func TestChromiumConsoleCheckCatchesErrors(t *testing.T) {
	testenv.RequireChromium(t)
	page := filepath.Join(t.TempDir(), "bad.html")
	if err := os.WriteFile(page, []byte(`<!DOCTYPE html><p>x</p><script>console.error("bad-marker"); missingFunction();</script>`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, console := testenv.Chromium(t, "--dump-dom", "file://"+page)
	joined := strings.Join(console, "\n")
	if !strings.Contains(joined, "bad-marker") || !strings.Contains(joined, "Uncaught ReferenceError") {
		t.Fatalf("the console check missed a logged error and an exception; console lines:\n%s", joined)
	}
}
