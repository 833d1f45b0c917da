package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"spatec.dev/spatec/internal/harnessenv"
	"spatec.dev/spatec/runs/interop"
	"spatec.dev/spatec/runs/record"
	"spatec.dev/spatec/schema"
)

// spatecRun files a spatec run of spate on env under results.
func spatecRun(t *testing.T, results string, env *schema.Environment) {
	t.Helper()
	id, err := record.NewRunID()
	if err != nil {
		t.Fatal(err)
	}
	rec := &record.Record{Schema: record.SchemaV1, Status: record.StatusOK, RunID: id, Rep: 1, Reps: 1,
		SUT: record.SUT{Entrant: "spate", Version: "0.1.0", Containers: []record.Container{{Name: "spate", Role: schema.RoleDataPlane}}},
		Run: record.Run{HarnessVersion: record.HarnessVersion, StartedAt: time.Date(2026, 8, 2, 10, 0, 0, 0, time.UTC)},
		Metrics: map[string]record.Metric{
			record.RowsPerS:        {Value: 3_700_000, Unit: "rows/s", HigherIsBetter: true},
			record.HarnessRowsPerS: {Value: 3_600_000, Unit: "rows/s", HigherIsBetter: true},
		},
		Flags: []string{},
	}
	harnessenv.OnHost(env)(rec)
	if err := record.Append(record.PathFor(results, env.Name, "spate", rec.Run.StartedAt), rec); err != nil {
		t.Fatal(err)
	}
}

// `spatec report` over spatec's results and the reference harness's ranks
// them together where the environment spatec's records ran in (read from
// --tree by their env_digest) and the harness's (its records, and the
// profile --harness-env gives) agree, and keeps them apart naming the fact
// that differs where they do not.
func TestReportRanksWithTheHarnessWhereTheEnvironmentAgrees(t *testing.T) {
	tree, results := t.TempDir(), t.TempDir()
	harnessenv.WriteTree(t, tree)
	spatecRun(t, results, harnessenv.Environment(t))
	harnessenv.RecordFile(t, results)
	profile := harnessenv.ProfileFile(t)

	code, out, errOut := cli(t, "report", "--tree", tree, "--harness-env", profile, results)
	if code != exitOK {
		t.Fatalf("report: exit %d\n%s", code, errOut)
	}
	for _, want := range []string{
		"J1 · S1 ranked with the reference harness's runs · c8g-8xl-ec2-docker · workload sensor-batch",
		"the environments agree on: environment c8g-8xl-ec2-docker; host cores 32; host memory 64 GiB; partitions 8;",
		"not compared, stated by one side alone: host architecture aarch64",
		"spate:native (reference harness)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the report lacks %q:\n%s", want, out)
		}
	}

	// The tree's environment gives ClickHouse other caps than the
	// records': spatec's record names an environment the tree no longer
	// declares, so its facts are its own, and the partitions unstated.
	other := t.TempDir()
	harnessenv.WriteTree(t, other, harnessenv.Edit{Old: "memory: 16 * GiB", New: "memory: 12 * GiB"})
	code, out, errOut = cli(t, "report", "--tree", other, "--harness-env", profile, results)
	if code != exitOK || strings.Contains(out, "J1") || !strings.Contains(out, "partitions: not stated by spatec's") {
		t.Errorf("report with another tree: exit %d\n%s\n%s", code, out, errOut)
	}

	// Without the profile, the harness's records state no host: the host
	// is not compared, and said so.
	code, out, _ = cli(t, "report", "--tree", tree, results)
	if code != exitOK || !strings.Contains(out, "J1 · S1") || !strings.Contains(out, "host cores 32 (stated by spatec's alone") {
		t.Errorf("report without the profile: exit %d\n%s", code, out)
	}

	// Records of a ClickHouse of other caps stay apart, with the fact.
	apart := t.TempDir()
	spatecRun(t, apart, harnessenv.Environment(t, harnessenv.Edit{Old: "cpus:   16", New: "cpus:   12"}))
	harnessenv.RecordFile(t, apart)
	treeApart := t.TempDir()
	harnessenv.WriteTree(t, treeApart, harnessenv.Edit{Old: "cpus:   16", New: "cpus:   12"})
	code, out, _ = cli(t, "report", "--tree", treeApart, "--harness-env", profile, apart)
	if code != exitOK || strings.Contains(out, "J1") ||
		!strings.Contains(out, "not ranked with the reference harness's 1 run of c8g-8xl-ec2-docker (env "+harnessenv.EnvDigest(t)+", protocol schema2 1): the environments differ: ClickHouse CPUs 12") {
		t.Errorf("report of other caps: exit %d\n%s", code, out)
	}

	code, _, errOut = cli(t, "report", "--harness-env", results, results)
	if code != exitUsage || !strings.Contains(errOut, "environment profile") {
		t.Errorf("a directory as a profile: exit %d: %s", code, errOut)
	}
}

// `spatec report` over spatec's results and the results the harness
// published of its host, with the profile it published of that host, ranks
// them together: the harness's records, as the harness wrote them, name
// that profile by their env_digest, and its facts and theirs agree with
// spatec's environment of the host.
func TestReportWithTheHarnessPublishedFiles(t *testing.T) {
	dir := harnessenv.Checkout(t, "go test ./cmd/spatec -run TestReportWithTheHarnessPublishedFiles")
	profile := filepath.Join(dir, "environments", harnessenv.Name+".toml")
	p, err := interop.ReadProfile(profile)
	if err != nil {
		t.Fatal(err)
	}
	tree, results := t.TempDir(), t.TempDir()
	harnessenv.WriteTree(t, tree)
	spatecRun(t, results, harnessenv.Environment(t))
	// Without a word on the standard error: the profile is the one the
	// records name, and every record reads.
	code, out, errOut := cli(t, "report", "--tree", tree, "--harness-env", profile, results, filepath.Join(dir, "results", harnessenv.Name))
	if code != exitOK || errOut != "" {
		t.Fatalf("report: exit %d\n%s", code, errOut)
	}
	for _, want := range []string{
		"J1 · S1 ranked with the reference harness's runs · c8g-8xl-ec2-docker · workload sensor-batch",
		" runs (env " + p.Digest + ", protocol schema2 1)",
		"the environments agree on: environment c8g-8xl-ec2-docker; host cores 32; host memory 64 GiB; partitions 8;",
		"not compared, stated by one side alone: host architecture aarch64",
		"spate:native (reference harness)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the report lacks %q:\n%s", want, out)
		}
	}
}
