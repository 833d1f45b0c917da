package report

import (
	"bytes"
	"strings"
	"testing"

	"spatec.dev/spatec/runs/record"
)

// atCap makes a run a footprint point of the reference arm's memory study.
func atCap(capMiB float64, oomKilled bool) func(*record.Record) {
	return func(r *record.Record) {
		r.SUT.Study = "memory"
		r.SUT.Footprint = &record.Footprint{Axis: "memory", Cap: capMiB * (1 << 20), Full: 1 << 30, Fraction: 0.9}
		r.Run.PlanDigest = "sha256:plan-footprint"
		if oomKilled {
			r.Status = record.StatusFailed
			r.Metrics = map[string]record.Metric{"oom_kills.consumer": {Value: 1, Unit: "count"}}
			r.Note = "container consumer was killed by the kernel's OOM killer during the drain: it reached its memory cap of 16 MiB (exit code 137); its log ends:\n…"
		}
	}
}

// TestFootprintStudyIsNeverRanked: a footprint study's runs are in no
// section (the envelope's runs are ranked as before, alone), and the study
// is judged: the smallest cap that held, the first that did not and how,
// the recommendation; the text gives its table, the HTML its chart with
// the degradation marked and the recommendation labelled.
func TestFootprintStudyIsNeverRanked(t *testing.T) {
	root := t.TempDir()
	var recs []*record.Record
	for rep := range 2 {
		recs = append(recs,
			run(t, "reference", 10_000),
			run(t, "reference", 10_000+float64(rep)*50, atCap(1024, false)),
			run(t, "reference", 9_950, atCap(512, false)),
			run(t, "reference", 6_000, atCap(256, false)),
			run(t, "reference", 0, atCap(128, true)),
		)
	}
	appendAll(t, root, recs...)
	rep, problems := load(t, root, Options{})
	if len(problems) > 0 {
		t.Fatalf("problems: %v", problems)
	}
	if len(rep.Sections) != 1 || len(rep.Sections[0].Arms) != 1 || rep.Sections[0].Records != 2 {
		t.Fatalf("the envelope's runs alone are ranked: %d sections, %+v", len(rep.Sections), rep.Sections)
	}
	if len(rep.Footprints) != 1 {
		t.Fatalf("%d footprint studies, want 1", len(rep.Footprints))
	}
	fp := rep.Footprints[0]
	if fp.Records != 8 || len(fp.Points) != 4 || fp.Smallest != 512<<20 || fp.FirstDegraded != 256<<20 || fp.DegradedKind != "slow" || fp.Recommended != 512<<20 {
		t.Errorf("study: %d records, %d points, smallest %v, first degraded %v (%s), recommended %v",
			fp.Records, len(fp.Points), fp.Smallest, fp.FirstDegraded, fp.DegradedKind, fp.Recommended)
	}
	if last := fp.Points[3]; last.Kind != "oom" || last.OOMKills != 2 || !strings.Contains(last.Why, "2 of 2 runs were OOM-killed") {
		t.Errorf("the 128 MiB point: %+v", last)
	}

	var text bytes.Buffer
	if err := rep.WriteTable(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"F1 footprint study reference:memory on local (memory, from the envelope's 1 GiB; degraded below 0.90× its rate; never ranked)",
		"smallest cap: 512 MiB holds 0.99× the envelope's rate; 256 MiB did not (slow)",
		"recommended: 512 MiB",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("the text report lacks %q:\n%s", want, text.String())
		}
	}
	var html bytes.Buffer
	if err := rep.WriteHTML(&html); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`id="F1-chart"`, `class="degradation-marker"`, "degrades (slow)", "recommended: 512 MiB", `class="threshold"`} {
		if !strings.Contains(html.String(), want) {
			t.Errorf("the HTML report lacks %s", want)
		}
	}
}
