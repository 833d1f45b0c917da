package report

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"spatec.dev/spatec/internal/harnessenv"
	"spatec.dev/spatec/internal/testenv"
	"spatec.dev/spatec/runs/interop"
	"spatec.dev/spatec/runs/record"
	"spatec.dev/spatec/schema"
)

// harnessRecord files a record of the reference harness's, in its format,
// of spate's native variant on its host at 3.55M rows/s
// (harnessenv.HostRecord), in a results tree where the harness files it.
func harnessRecord(t *testing.T, root string) string {
	t.Helper()
	return harnessenv.RecordFile(t, root)
}

// harnessRate is that record's rate.
const harnessRate = harnessenv.RecordRate

// jointOptions reads the reference harness's files as `spatec report`
// does, with its profile of the host when withProfile, and spatec's records
// with the environment their digest names, env.
func jointOptions(t *testing.T, env *schema.Environment, withProfile bool) Options {
	t.Helper()
	var profile *interop.Profile
	if withProfile {
		var err error
		if profile, err = interop.ReadProfile(harnessenv.ProfileFile(t)); err != nil {
			t.Fatal(err)
		}
	}
	return Options{
		Foreign: func(path string) ([]HistoryRun, []record.Problem, bool) {
			entries, problems, ok := interop.ReadFile(path)
			runs := make([]HistoryRun, len(entries))
			for i := range entries {
				if profile != nil {
					entries[i].WithProfile(profile)
				}
				runs[i] = HistoryOf(entries[i])
			}
			return runs, problems, ok
		},
		SpatecFacts: func(rec *record.Record) interop.Facts { return interop.SpatecFacts(rec, env) },
	}
}

// spatecOnHost files two repetitions of spatec's spate arm on env: 3.70M
// and 3.72M rows/s over spatec's window, 3.60M and 3.62M over the
// harness's.
func spatecOnHost(t *testing.T, root string, env *schema.Environment) {
	t.Helper()
	appendAll(t, root,
		run(t, "spate", 3.70e6, harnessenv.OnHost(env), harness(3.60e6)),
		run(t, "spate", 3.72e6, harnessenv.OnHost(env), harness(3.62e6)),
	)
}

// A spatec run and the reference harness's run, of one workload
// and dataset in environments whose every fact both state agrees, are
// ranked together by the rate both define, and the report says on which
// facts, and which facts one side alone states.
func TestJointRankingWhereTheEnvironmentAgrees(t *testing.T) {
	env := harnessenv.Environment(t)
	root := t.TempDir()
	spatecOnHost(t, root, env)
	harnessRecord(t, root)
	rep, problems := load(t, root, jointOptions(t, env, true))
	if len(problems) > 0 || len(rep.Sections) != 1 || rep.ForeignRuns != 1 {
		t.Fatalf("problems %v, %d sections, %d foreign runs", problems, len(rep.Sections), rep.ForeignRuns)
	}
	if len(rep.Joint) != 1 {
		t.Fatalf("%d joint sections; section S1 says: %v", len(rep.Joint), rep.Sections[0].HarnessApart)
	}
	j := rep.Joint[0]
	if j.ID != "J1" || j.RankedBy != record.HarnessRowsPerS || j.Joint.Section != "S1" || j.Joint.HarnessEnvDigest != harnessenv.EnvDigest(t) ||
		j.Joint.HarnessProtocol != "schema2 1" || j.Joint.HarnessRuns != 1 || rep.JointRanking != JointRanking {
		t.Errorf("joint section %+v %+v", j, j.Joint)
	}
	if rep.Sections[0].RankedBy != record.RowsPerS || len(rep.Sections[0].HarnessApart) != 0 {
		t.Errorf("spatec's section ranks by %s, apart %v", rep.Sections[0].RankedBy, rep.Sections[0].HarnessApart)
	}
	ours, theirs := arm(t, j, "spate"), arm(t, j, "spate:native (reference harness)")
	if ours.Rank != 1 || theirs.Rank != 2 || ours.Source != "spatec" || theirs.Source != "the reference harness" {
		t.Errorf("ranks %d (%s), %d (%s); want spatec's arm first, by 3.61M against 3.55M", ours.Rank, ours.Source, theirs.Rank, theirs.Source)
	}
	if s := theirs.Metrics[record.HarnessRowsPerS]; s == nil || s.Median != harnessRate || theirs.Metrics[record.RowsPerS] != nil {
		t.Errorf("the harness's arm: %v, spatec's rate %v; want its rate as the harness's alone", s, theirs.Metrics[record.RowsPerS])
	}
	if s := ours.Metrics[record.HarnessRowsPerS]; s == nil || s.Median != 3.61e6 || ours.VsBaseline != "baseline" || theirs.VsBaseline != "0.98×" ||
		j.BaselineWhy != "leader by median harness_rows_per_s" {
		t.Errorf("spatec's arm %v (%s), the harness's %s, baseline %q", s, ours.VsBaseline, theirs.VsBaseline, j.BaselineWhy)
	}
	// The spatec section's own ranking is untouched by the joint one.
	if a := arm(t, rep.Sections[0], "spate"); a.Rank != 1 || a.Source != "" || a.VsBaseline != "baseline" {
		t.Errorf("spatec's own arm %+v", a)
	}
	agreed := strings.Join(j.Joint.Agreed(), "; ")
	for _, want := range []string{"environment c8g-8xl-ec2-docker", "host cores 32", "host memory 64 GiB", "partitions 8",
		"broker image docker.redpanda.com/redpandadata/redpanda:v26.1.13 = redpandadata/redpanda:v26.1.13", "broker image ID sha256:ae0a858eddd0",
		"broker version v26.1.13", "broker CPUs 3", "broker memory 8 GiB", "ClickHouse image clickhouse/clickhouse-server:26.3",
		"ClickHouse version 26.3.17.56", "ClickHouse CPUs 16", "ClickHouse memory 16 GiB"} {
		if !strings.Contains(agreed, want) {
			t.Errorf("agreed facts %q lack %q", agreed, want)
		}
	}

	var table, page bytes.Buffer
	if err := rep.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	if err := rep.WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Ranked with the reference harness's runs: a joint section ranks spatec's runs and the reference harness's together by harness_rows_per_s",
		"J1 · S1 ranked with the reference harness's runs · c8g-8xl-ec2-docker · workload sensor-batch · dataset sensor-batch@1c12224f4f7f · 1.50M messages",
		"ranked by harness_rows_per_s; spatec's runs: S1",
		"the reference harness's: 1 run (env " + harnessenv.EnvDigest(t) + ", protocol schema2 1)",
		"the environments agree on: environment c8g-8xl-ec2-docker; host cores 32; host memory 64 GiB; partitions 8; broker image",
		"not compared, stated by one side alone: host architecture aarch64 (stated by the reference harness's alone",
		"the arm's envelope CPUs 6 (stated by spatec's alone",
		"spate:native (reference harness)  the reference harness  ok      1     3.55M",
	} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("the table lacks %q:\n%s", want, table.String())
		}
	}
	for _, want := range []string{
		`<h2 id="joint">Ranked with the reference harness's runs</h2>`, `<section id="J1" class="joint">`,
		"<b>The environments agree on</b> environment c8g-8xl-ec2-docker; host cores 32",
		`<svg class="chart" id="J1-c1"`, `<svg class="chart" id="J1-c2"`,
		"<td>spate:native (reference harness)</td><td class=\"st\">the reference harness</td>",
		"and ranked beside spatec's where the environment agrees (1 joint section)",
	} {
		if !strings.Contains(page.String(), want) {
			t.Errorf("the page lacks %s", want)
		}
	}
}

// One fact that differs keeps the two tools' runs apart, each in its own
// place, and the report names the fact with both values and where each was
// read; so does a fact one side cannot state.
func TestHarnessRunsKeptApartWhereAFactDiffers(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edits []harnessenv.Edit
		want  string
	}{
		{"partitions", []harnessenv.Edit{{Old: "partitions: 8", New: "partitions: 16"}},
			"partitions 16 (spatec's, from environment c8g-8xl-ec2-docker, the declaration of the record's env_digest) vs 8 (the reference harness's, from run.infra.partitions)"},
		{"ClickHouse caps", []harnessenv.Edit{{Old: "cpus:   16", New: "cpus:   12"}},
			"ClickHouse CPUs 12 (spatec's, from run.infra[spatec-clickhouse].cpus) vs 16 (the reference harness's, from run.infra.clickhouse_cpus (cpu.max read back))"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := harnessenv.Environment(t, tc.edits...)
			root := t.TempDir()
			spatecOnHost(t, root, env)
			harnessRecord(t, root)
			rep, problems := load(t, root, jointOptions(t, env, true))
			if len(problems) > 0 || len(rep.Joint) != 0 || len(rep.Sections) != 1 {
				t.Fatalf("problems %v, %d joint sections; want the runs apart", problems, len(rep.Joint))
			}
			apart := rep.Sections[0].HarnessApart
			if len(apart) != 1 || !strings.Contains(apart[0], "not ranked with the reference harness's 1 run of c8g-8xl-ec2-docker (env "+harnessenv.EnvDigest(t)+", protocol schema2 1): the environments differ: "+tc.want) {
				t.Fatalf("apart %q; want %q named", apart, tc.want)
			}
			if strings.Count(apart[0], " vs ") != 1 {
				t.Errorf("apart %q names more than the one fact that differs", apart[0])
			}
			var table, page bytes.Buffer
			if err := rep.WriteTable(&table); err != nil {
				t.Fatal(err)
			}
			if err := rep.WriteHTML(&page); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(table.String(), tc.want) || strings.Contains(table.String(), "J1") {
				t.Errorf("the table does not keep them apart naming %q:\n%s", tc.want, table.String())
			}
			if !strings.Contains(page.String(), `<p class="nc apart">not ranked with the reference harness&#39;s 1 run`) || strings.Contains(page.String(), `id="J1"`) ||
				!strings.Contains(page.String(), "read into the history only: none shares a workload, dataset and environment with spatec's") {
				t.Error("the page does not keep them apart")
			}
		})
	}

	t.Run("spatec's environment not at hand", func(t *testing.T) {
		env := harnessenv.Environment(t)
		root := t.TempDir()
		spatecOnHost(t, root, env)
		harnessRecord(t, root)
		opts := jointOptions(t, env, true)
		opts.SpatecFacts = nil
		rep, _ := load(t, root, opts)
		if apart := rep.Sections[0].HarnessApart; len(rep.Joint) != 0 || len(apart) != 1 ||
			!strings.Contains(apart[0], "partitions: not stated by spatec's, so the environments cannot be shown to agree") ||
			!strings.Contains(apart[0], "give the tree that declares it with --tree") {
			t.Errorf("joint %d, apart %q", len(rep.Joint), apart)
		}
	})

	t.Run("another dataset size", func(t *testing.T) {
		env := harnessenv.Environment(t)
		root := t.TempDir()
		half := func(r *record.Record) { r.Run.Dataset.Messages, r.Run.Dataset.ExpectedRows = 750_000, 55_125_000 }
		appendAll(t, root, run(t, "spate", 3.70e6, harnessenv.OnHost(env), half))
		harnessRecord(t, root)
		rep, _ := load(t, root, jointOptions(t, env, true))
		if len(rep.Joint) != 0 || len(rep.Sections[0].HarnessApart) != 0 || len(rep.HarnessUnmatched) != 1 ||
			!strings.Contains(rep.HarnessUnmatched[0], "no section of spatec's runs has that workload, dataset and size, so they are in the history alone") {
			t.Errorf("joint %d, unmatched %q", len(rep.Joint), rep.HarnessUnmatched)
		}
	})
}

// The page with a joint section loads in headless Chromium without a
// console message, with the joint section's charts and bars of both
// tools' arms.
func TestJointReportRendersInChromium(t *testing.T) {
	testenv.RequireChromium(t)
	env := harnessenv.Environment(t)
	root := t.TempDir()
	spatecOnHost(t, root, env)
	harnessRecord(t, root)
	rep, problems := load(t, root, jointOptions(t, env, true))
	if len(problems) > 0 || len(rep.Joint) != 1 {
		t.Fatalf("problems %v, %d joint sections", problems, len(rep.Joint))
	}
	page := filepath.Join(testenv.Artifacts(t), "joint.html")
	f, err := os.Create(page)
	if err != nil {
		t.Fatal(err)
	}
	if err := rep.WriteHTML(f); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	dom, console := testenv.Chromium(t, "--dump-dom", "file://"+page)
	if len(console) > 0 {
		t.Errorf("the page logged to the console:\n%s", strings.Join(console, "\n"))
	}
	if n := len(regexp.MustCompile(`<svg class="chart" id="J1-c\d"`).FindAllString(dom, -1)); n != 2 {
		t.Errorf("%d charts of the joint section in the loaded page; want 2", n)
	}
	joint := dom[strings.Index(dom, `<section id="J1"`):]
	if n := strings.Count(joint, `<rect class="bar ok"`); n != 4 {
		t.Errorf("%d bars in the joint section; want 4 (two arms, two charts)", n)
	}
	for _, want := range []string{"Ranked with the reference harness's runs", "The environments agree on", "spate:native (reference harness)", "Throughput, the reference harness's window (the rate ranked)"} {
		if !strings.Contains(dom, want) {
			t.Errorf("the loaded page lacks %q", want)
		}
	}
	t.Logf("report: %s", page)
}
