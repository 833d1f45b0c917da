package harness

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"spatec.dev/spatec/compiler"
)

// TestPublishedIsTheHarnesss: with SPATEC_HARNESS set to a checkout of the
// harness, published.tsv is what the checkout's results summarise to, byte
// for byte.
func TestPublishedIsTheHarnesss(t *testing.T) {
	dir := os.Getenv("SPATEC_HARNESS")
	if dir == "" {
		t.Skip("needs a checkout of spate-etl/benchmark: SPATEC_HARNESS=/path/to/it go test ./harness")
	}
	committed, err := os.ReadFile("published.tsv")
	if err != nil {
		t.Fatal(err)
	}
	figs, err := ReadResults(DirFS(dir), PublishedEnv)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	commit, err := exec.CommandContext(ctx, "git", "-C", dir, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatalf("reading the checkout's commit: %v", err)
	}
	var b bytes.Buffer
	if err := (Published{Commit: strings.TrimSpace(string(commit)), Env: PublishedEnv, Figures: figs}).Write(&b); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b.Bytes(), committed) {
		t.Errorf("harness/published.tsv is not what the harness at %s publishes; regenerate it (go run ./cmd/spatec-harness-facts -published harness/published.tsv %s) and review the diff:\n%s",
			strings.TrimSpace(string(commit)), dir, lineDiff(string(committed), b.String()))
	}
}

// lineDiff lists the lines only one of two texts has.
func lineDiff(old, new string) string {
	o, n := strings.Split(old, "\n"), strings.Split(new, "\n")
	var d []string
	for _, l := range o {
		if !slices.Contains(n, l) {
			d = append(d, "- "+l)
		}
	}
	for _, l := range n {
		if !slices.Contains(o, l) {
			d = append(d, "+ "+l)
		}
	}
	return strings.Join(d, "\n")
}

// The committed figures, as the binary embeds them, name the harness's
// commit and host, and give figures of every arm spatec plans on that host
// at the variant spatec's default plan runs; every variant they give is
// one of spatec's plans (SpatecVariant), so none is shown beside nothing.
func TestPublishedIsComplete(t *testing.T) {
	p, err := PublishedFigures()
	if err != nil {
		t.Fatal(err)
	}
	onDisk, err := os.ReadFile("published.tsv")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(onDisk, publishedTSV) {
		t.Fatal("the embedded published.tsv is not the file on disk")
	}
	problems := completeness(t, p)
	for _, pr := range problems {
		t.Error(pr)
	}
}

// The checkout's tree, loaded once a test binary.
var (
	treeOnce sync.Once
	tree     *compiler.Tree
	treeErr  error
)

func completeness(t *testing.T, p Published) []string {
	t.Helper()
	var problems []string
	if !regexp.MustCompile(`^[0-9a-f]{40}$`).MatchString(p.Commit) {
		problems = append(problems, "the harness's commit "+p.Commit+" is not a full commit id")
	}
	if p.Env != PublishedEnv {
		problems = append(problems, "the figures are of "+p.Env+", not "+PublishedEnv)
	}
	treeOnce.Do(func() { tree, treeErr = compiler.Load(compiler.Options{Dir: ".."}) })
	if treeErr != nil {
		t.Fatal(treeErr)
	}
	var planned []string
	for _, arm := range tree.Entrants() {
		if tree.Supports(arm, PublishedEnv) {
			planned = append(planned, arm)
		}
	}
	if !slices.Equal(planned, PublishedArms()) {
		problems = append(problems, "spatec plans "+strings.Join(planned, ", ")+" on "+PublishedEnv+"; PublishedArms lists "+strings.Join(PublishedArms(), ", "))
	}
	for _, arm := range planned {
		variants, def := tree.Variants(arm)
		hasDefault := false
		for _, f := range p.Figures {
			if f.Arm != arm {
				continue
			}
			v, ok := SpatecVariant(f.Arm, f.Variant)
			switch {
			case !ok:
				problems = append(problems, f.Arm+":"+f.Variant+" of the harness's has no variant of spatec's in SpatecVariant")
			case !slices.Contains(variants, v):
				problems = append(problems, f.Arm+":"+f.Variant+" maps to "+v+", which is not a variant of spatec's "+arm)
			case v == def:
				hasDefault = true
			}
		}
		if !hasDefault {
			problems = append(problems, "no figures of "+arm+" at the harness's counterpart of spatec's default variant "+def)
		}
	}
	for _, f := range p.Figures {
		if !slices.Contains(planned, f.Arm) {
			problems = append(problems, "figures of "+f.Arm+", which spatec does not plan on "+PublishedEnv)
		}
	}
	return problems
}

// An arm missing from the figures, or a variant the table does not map, is
// found.
func TestPublishedCompletenessFails(t *testing.T) {
	p, err := PublishedFigures()
	if err != nil {
		t.Fatal(err)
	}
	without := p
	without.Figures = slices.DeleteFunc(slices.Clone(p.Figures), func(f Figures) bool { return f.Arm == "vector" && f.Variant == "arrow" })
	if pr := completeness(t, without); len(pr) != 1 || !strings.Contains(pr[0], "no figures of vector") {
		t.Errorf("without Vector's default: %q", pr)
	}
	renamed := p
	renamed.Figures = slices.Clone(p.Figures)
	renamed.Figures[0].Variant = "sharded"
	if pr := completeness(t, renamed); !slices.ContainsFunc(pr, func(s string) bool { return strings.Contains(s, "sharded of the harness's has no variant of spatec's") }) {
		t.Errorf("an unmapped variant: %q", pr)
	}
}

// record is one of the harness's records, as its results files hold them.
func record(entrant, variant, status string, ts int64, rows, cores, peak float64, dataPlane bool) string {
	dp := ""
	if dataPlane {
		dp = `,"data_plane_cores_used":{"value":1.5,"unit":"cores"},"data_plane_peak_anon_bytes":{"value":100,"unit":"bytes"}`
	}
	return `{"kind":"measurement","status":"` + status + `","sut":{"entrant":"` + entrant + `","variant_id":"` + variant + `","version":"1.0"},` +
		`"run":{"ts_ms":` + itoa(ts) + `,"env_id":"host","commit":"c` + itoa(ts%2) + `","dataset_version":"d1"},"variant":{"batches":10},` +
		`"metrics":{"rows_per_s":{"value":` + ftoa(rows) + `,"unit":"records/s"},"cores_used":{"value":` + ftoa(cores) + `,"unit":"cores"},` +
		`"peak_anon_bytes":{"value":` + ftoa(peak) + `,"unit":"bytes"}` + dp + `}}` + "\n"
}

func itoa(v int64) string   { return num(float64(v)) }
func ftoa(v float64) string { return num(v) }

// Each variant is summarised apart from its arm's others: over an even
// count the median is the mean of the middle two; a failed run is counted
// apart; a data plane the records do not give is an empty cell; the file
// reads back as written.
func TestReadResults(t *testing.T) {
	fsys := fstest.MapFS{
		"results/host/a/2026-06.jsonl": {Data: []byte(record("a", "x", "ok", 1000, 10, 2, 300, true) + record("a", "x", "failed", 2000, 1, 1, 1, true))},
		"results/host/a/2026-07.jsonl": {Data: []byte(record("a", "x", "ok", 3001, 40, 4, 100, true) + record("a", "x", "ok", 5000, 20, 3, 200, true) +
			record("a", "x", "ok", 4000, 30, 5, 400, true) + record("a", "y", "ok", 6000, 7, 1, 50, false))},
	}
	figs, err := ReadResults(fsys, "host")
	if err != nil {
		t.Fatal(err)
	}
	if len(figs) != 2 {
		t.Fatalf("%d figures: %+v", len(figs), figs)
	}
	x, y := figs[0], figs[1]
	if x.N != 4 || x.NotCounted != 1 || x.RowsPerS != 25 || x.RowsPerSMin != 10 || x.RowsPerSMax != 40 ||
		x.Cores != 3.5 || x.Peak != 250 || x.DataPlaneCores != 1.5 ||
		!slices.Equal(x.Months, []string{"2026-06", "2026-07"}) || !slices.Equal(x.Commits, []string{"c0", "c1"}) ||
		x.First.UnixMilli() != 1000 || x.Last.UnixMilli() != 5000 {
		t.Errorf("a:x = %+v", x)
	}
	if y.N != 1 || y.DataPlaneCores != 0 || y.DataPlanePeak != 0 || !slices.Equal(y.Months, []string{"2026-07"}) {
		t.Errorf("a:y = %+v", y)
	}
	var b bytes.Buffer
	p := Published{Commit: strings.Repeat("ab", 20), Env: "host", Figures: figs}
	if err := p.Write(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "\na\ty\t1.0\t1\t0\t7\t7\t7\t1\t\t50\t\td1\t10\t2026-07\tc0\t") {
		t.Errorf("a:y written as:\n%s", b.String())
	}
	back, err := ReadPublished(bytes.NewReader(b.Bytes()), "test")
	if err != nil {
		t.Fatal(err)
	}
	var again bytes.Buffer
	if err := back.Write(&again); err != nil {
		t.Fatal(err)
	}
	if again.String() != b.String() {
		t.Errorf("read back and written again:\n%s\nnot\n%s", again.String(), b.String())
	}
}

// A record the summary cannot take is an error naming its line: another
// unit, another host, another corpus within a variant.
func TestReadResultsRefuses(t *testing.T) {
	for name, tc := range map[string]struct{ data, want string }{
		"unit":    {strings.Replace(record("a", "x", "ok", 1, 1, 1, 1, true), `"records/s"`, `"rows/s"`, 1), "2026-07.jsonl:1: rows_per_s in rows/s, not records/s"},
		"host":    {strings.Replace(record("a", "x", "ok", 1, 1, 1, 1, true), `"env_id":"host"`, `"env_id":"other"`, 1), "a record of a on other"},
		"corpus":  {record("a", "x", "ok", 1, 1, 1, 1, true) + strings.Replace(record("a", "x", "ok", 2, 1, 1, 1, true), `"batches":10`, `"batches":20`, 1), "2026-07.jsonl:2: a:x measured on dataset d1 of 10 batches and on d1 of 20"},
		"missing": {strings.Replace(record("a", "x", "ok", 1, 1, 1, 1, true), `"cores_used"`, `"cpu"`, 1), "no cores_used"},
	} {
		_, err := ReadResults(fstest.MapFS{"results/host/a/2026-07.jsonl": {Data: []byte(tc.data)}}, "host")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
	}
}

// A line of published.tsv that lost a cell or holds a figure that is not
// one is an error naming it.
func TestReadPublishedRefuses(t *testing.T) {
	good := publishedHeader + strings.Repeat("0", 40) + "\n" + publishedEnv + "host\n"
	line := "a\tx\t1.0\t3\t0\t2\t1\t3\t1\t\t5\t\td1\t10\t2026-07\tc1\t2026-07-01T00:00:00Z\t2026-07-02T00:00:00Z\n"
	if _, err := ReadPublished(strings.NewReader(good+line), "t"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ text, want string }{
		{good + strings.Replace(line, "\t3\t0\t2\t", "\t3\t0\t-2\t", 1), "rows_per_s_median \"-2\" is not a positive number"},
		{good + strings.Replace(line, "\t2026-07\t", "\t\t", 1), "no record summarised"},
		{good + strings.Replace(line, "\td1\t", "\t", 1), "17 cells"},
		{good + strings.Replace(line, "\t2\t1\t3\t", "\t4\t1\t3\t", 1), "not within its range"},
		{publishedEnv + "host\n" + line, "no header"},
	} {
		if _, err := ReadPublished(strings.NewReader(tc.text), "t"); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v, want %q", err, tc.want)
		}
	}
}
