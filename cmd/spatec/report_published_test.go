package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"spatec.dev/spatec/harness"
	"spatec.dev/spatec/internal/harnessenv"
	"spatec.dev/spatec/runs/record"
	"spatec.dev/spatec/schema"
)

// threeDigits writes a rate as the report does, for the figures the test
// takes from the committed file: three significant digits, k or M.
func threeDigits(v float64) string {
	unit, d := "k", 1e3
	if v >= 1e6 {
		unit, d = "M", 1e6
	}
	v /= d
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f%s", v, unit)
	case v >= 10:
		return fmt.Sprintf("%.1f%s", v, unit)
	}
	return fmt.Sprintf("%.2f%s", v, unit)
}

// publishedLine is the line of the published table that starts with plan:
// its cells, split on runs of two or more spaces.
func publishedLine(t *testing.T, out, plan string) []string {
	t.Helper()
	_, table, ok := strings.Cut(out, "The public harness's published figures")
	if !ok {
		t.Fatalf("no published figures in the report:\n%s", out)
	}
	for _, line := range strings.Split(table, "\n") {
		if strings.HasPrefix(line, plan+" ") {
			return regexp.MustCompile(`\s{2,}`).Split(strings.TrimSpace(line), -1)
		}
	}
	t.Fatalf("no line of %s in the published figures:\n%s", plan, table)
	return nil
}

// wantFigures checks a line of the published table against the committed
// figures of the harness's arm and variant.
func wantFigures(t *testing.T, cells []string, arm, variant, spatec string) {
	t.Helper()
	pub, err := harness.PublishedFigures()
	if err != nil {
		t.Fatal(err)
	}
	f, ok := pub.Lookup(arm, variant)
	if !ok {
		t.Fatalf("harness/published.tsv has no %s:%s", arm, variant)
	}
	want := []string{cells[0], variant, f.Version,
		fmt.Sprintf("%s [%s–%s]", threeDigits(f.RowsPerS), threeDigits(f.RowsPerSMin), threeDigits(f.RowsPerSMax)),
		fmt.Sprint(f.N), fmt.Sprintf("%.2f / %.2f", f.Cores, f.DataPlaneCores), "", spatec}
	if len(cells) != len(want) {
		t.Fatalf("%s: %d cells %q, want %d", cells[0], len(cells), cells, len(want))
	}
	for i, w := range want {
		if i == 6 {
			if !strings.HasSuffix(cells[i], "GiB") && !strings.HasSuffix(cells[i], "MiB") {
				t.Errorf("%s: peak %q", cells[0], cells[i])
			}
			continue
		}
		if cells[i] != w {
			t.Errorf("%s: cell %d is %q, want %q (from harness/published.tsv)", cells[0], i, cells[i], w)
		}
	}
}

// Before spatec has any record of the harness's host, `spatec report --env`
// of it, in a checkout with no results directory or given an empty one,
// shows the harness's published figures beside each of spatec's plans
// there, labelled with the harness's commit, each value the committed
// file's.
func TestReportShowsThePublishedFiguresWithoutRecords(t *testing.T) {
	pub, err := harness.PublishedFigures()
	if err != nil {
		t.Fatal(err)
	}
	empty := t.TempDir()
	t.Chdir(empty)
	for _, args := range [][]string{
		{"report", "--env", harness.PublishedEnv},
		{"report", "--env", harness.PublishedEnv, empty},
	} {
		code, out, errOut := cli(t, args...)
		if code != exitOK || errOut != "" {
			t.Fatalf("%q: exit %d\n%s", args, code, errOut)
		}
		for _, want := range []string{
			"no usable records",
			"The public harness's published figures · c8g-8xl-ec2-docker · spate-etl/benchmark at commit " + pub.Commit,
			"what a run of spatec's plan there is expected to reproduce",
			"the peak is the cgroup's anon alone",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("%q: the report lacks %q:\n%s", args, want, out)
			}
		}
		wantFigures(t, publishedLine(t, out, "flink:default"), "flink", "rowbinary-nt", "no run")
		wantFigures(t, publishedLine(t, out, "vector:default"), "vector", "arrow", "no run")
		wantFigures(t, publishedLine(t, out, "spate:native"), "spate", "native", "no run")
		wantFigures(t, publishedLine(t, out, "clickhouse-kafka-engine:default"), "clickhouse-kafka-engine", "distributed", "no run")
		wantFigures(t, publishedLine(t, out, "kafka-connect:default"), "kafka-connect", "rowbinary-mv", "no run")
		if cells := publishedLine(t, out, "vector:small-batch"); cells[1] != "none published" {
			t.Errorf("vector:small-batch: %q", cells)
		}
	}

	// Another environment has none; nor has a report of no environment
	// and no records of the host.
	for _, args := range [][]string{{"report", "--env", "local-containers", empty}, {"report", empty}} {
		if code, out, errOut := cli(t, args...); code != exitOK || strings.Contains(out, "published figures") {
			t.Errorf("%q: exit %d\n%s\n%s", args, code, out, errOut)
		}
	}
	// Nor is a missing results directory read as none for it.
	if code, _, errOut := cli(t, "report", "--env", "local-containers"); code == exitOK || !strings.Contains(errOut, "no such file") {
		t.Errorf("local-containers without results: exit %d: %s", code, errOut)
	}
}

// With spatec's runs of the harness's host, the report sets each plan's
// harness-window rate beside the figures the harness published of it, in
// the table and the HTML page, whether or not --env names the host; a
// record of the default variant that leaves it unnamed is the default
// plan's.
func TestReportSetsSpatecsRunsBesideThePublishedFigures(t *testing.T) {
	results := t.TempDir()
	env := harnessenv.Environment(t)
	spatecRun(t, results, env) // spate, its default variant unnamed: 3.60M
	id, err := record.NewRunID()
	if err != nil {
		t.Fatal(err)
	}
	rec := &record.Record{Schema: record.SchemaV1, Status: record.StatusOK, RunID: id, Rep: 1, Reps: 1,
		SUT: record.SUT{Entrant: "flink", Variant: "default", Version: "2.2.1", Containers: []record.Container{{Name: "flink-taskmanager", Role: schema.RoleDataPlane}}},
		Run: record.Run{HarnessVersion: record.HarnessVersion, StartedAt: time.Date(2026, 8, 2, 11, 0, 0, 0, time.UTC)},
		Metrics: map[string]record.Metric{
			record.RowsPerS:        {Value: 2_150_000, Unit: "rows/s", HigherIsBetter: true},
			record.HarnessRowsPerS: {Value: 2_010_000, Unit: "rows/s", HigherIsBetter: true},
		},
		Flags: []string{},
	}
	harnessenv.OnHost(env)(rec)
	if err := record.Append(record.PathFor(results, env.Name, "flink", rec.Run.StartedAt), rec); err != nil {
		t.Fatal(err)
	}

	for _, args := range [][]string{{"report", "--env", harness.PublishedEnv, results}, {"report", results}} {
		code, out, errOut := cli(t, args...)
		if code != exitOK {
			t.Fatalf("%q: exit %d\n%s", args, code, errOut)
		}
		wantFigures(t, publishedLine(t, out, "flink:default"), "flink", "rowbinary-nt", "S1 flink:default: 2.01M (n 1)")
		wantFigures(t, publishedLine(t, out, "spate:native"), "spate", "native", "S1 spate: 3.60M (n 1)")
		wantFigures(t, publishedLine(t, out, "spate:rowbinary"), "spate", "rowbinary", "no run")
	}

	page := filepath.Join(t.TempDir(), "report.html")
	if code, _, errOut := cli(t, "report", "--env", harness.PublishedEnv, "--format", "html", "-o", page, results); code != exitOK {
		t.Fatalf("html: exit %d\n%s", code, errOut)
	}
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := harness.PublishedFigures()
	if err != nil {
		t.Fatal(err)
	}
	f, _ := pub.Lookup("flink", "rowbinary-nt")
	for _, want := range []string{
		"<h2>The public harness&#39;s published figures · c8g-8xl-ec2-docker · spate-etl/benchmark at commit " + pub.Commit + "</h2>",
		"<tr><td>flink:default</td><td class=\"st\">rowbinary-nt</td><td class=\"st\">2.2.1</td><td>" +
			fmt.Sprintf("%s [%s–%s]", threeDigits(f.RowsPerS), threeDigits(f.RowsPerSMin), threeDigits(f.RowsPerSMax)) + "</td><td>" + fmt.Sprint(f.N) + "</td>",
		"S1 flink:default: 2.01M (n 1)",
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the HTML report lacks %q", want)
		}
	}
}
