package interop

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"spatec.dev/spatec/internal/harnessenv"
	"spatec.dev/spatec/runs/record"
	"spatec.dev/spatec/schema"
)

// hostEntry is a record of the harness's host in its format
// (harnessenv.HostRecord), filed where the harness files it, and read.
func hostEntry(t *testing.T) Entry {
	t.Helper()
	entries, problems := ReadSchema2(harnessenv.RecordFile(t, t.TempDir()))
	if len(problems) > 0 || len(entries) != 1 {
		t.Fatalf("%d entries, problems %v", len(entries), problems)
	}
	return entries[0]
}

func factValue(t *testing.T, fs Facts, key string) string {
	t.Helper()
	f, ok := fs.Get(key)
	if !ok {
		t.Errorf("no fact %s in %v", key, fs)
	}
	return f.Value
}

// A schema-2 record states its environment's name, partitions and the
// infrastructure's caps (read back from the cgroups), image IDs and
// versions; the harness's profile whose digest is the record's env_digest
// adds the host and the images by reference.
func TestSchema2FactsAndTheProfileOfTheirDigest(t *testing.T) {
	e := hostEntry(t)
	for key, want := range map[string]string{
		FactEnv: "c8g-8xl-ec2-docker", FactPartitions: "8",
		FactBrokerCPUs: "3", FactBrokerMemory: "8589934592", FactClickHouseCPUs: "16", FactClickHouseMemory: "17179869184",
		FactBrokerImageID: harnessenv.BrokerImageID, FactBrokerVersion: "v26.1.13",
		FactClickHouseImageID: harnessenv.ClickHouseImageID, FactClickHouseVersion: "26.3.17.56",
	} {
		if got := factValue(t, e.Facts, key); got != want {
			t.Errorf("%s = %q; want %q", key, got, want)
		}
	}
	if _, ok := e.Facts.Get(FactHostCores); ok {
		t.Error("a schema-2 record states no host; its profile does")
	}

	p, err := ReadProfile(harnessenv.ProfileFile(t))
	if err != nil {
		t.Fatal(err)
	}
	// The harness's digest of the file's bytes, as the record names it.
	if p.ID != "c8g-8xl-ec2-docker" || p.Digest != harnessenv.EnvDigest(t) || e.EnvDigest != p.Digest {
		t.Fatalf("profile %s at %s, the record's env_digest %s; want the record's env_id and env_digest", p.ID, p.Digest, e.EnvDigest)
	}
	if !e.WithProfile(p) {
		t.Fatal("the profile of the record's env_digest was not applied")
	}
	for key, want := range map[string]string{
		FactHostCores: "32", FactHostMemory: "68719476736", FactHostArch: "aarch64",
		FactBrokerImage: "redpandadata/redpanda:v26.1.13", FactClickHouseImage: "clickhouse/clickhouse-server:26.3",
	} {
		if got := factValue(t, e.Facts, key); got != want {
			t.Errorf("%s = %q; want %q", key, got, want)
		}
	}

	// The same profile edited by a byte is another declaration: it
	// describes no record that names this one.
	raw, err := os.ReadFile(p.Path)
	if err != nil {
		t.Fatal(err)
	}
	edited := filepath.Join(t.TempDir(), "c8g-8xl-ec2-docker.toml")
	if err := os.WriteFile(edited, append(raw, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	q, err := ReadProfile(edited)
	if err != nil {
		t.Fatal(err)
	}
	if fresh := hostEntry(t); fresh.WithProfile(q) {
		t.Errorf("a profile of digest %s was applied to a record of digest %s", q.Digest, fresh.EnvDigest)
	}
	if _, err := ReadProfile(harnessenv.RecordFile(t, t.TempDir())); err == nil {
		t.Error("a record was read as a profile")
	}
}

// spatecRecord is a spatec run of an arm on env, as the executor records it.
func spatecRecord(env *schema.Environment) *record.Record {
	rec := &record.Record{Run: record.Run{HarnessVersion: 1}, SUT: record.SUT{Entrant: "spate",
		Containers: []record.Container{{Name: "spate", Role: schema.RoleDataPlane}}}}
	harnessenv.OnHost(env)(rec)
	return rec
}

// A spatec run on an environment of the harness's host and the harness's
// own record agree on every fact both state; what one alone states is
// listed and not compared.
func TestSpatecAndHarnessFactsAgreeOnOneHost(t *testing.T) {
	p, err := ReadProfile(harnessenv.ProfileFile(t))
	if err != nil {
		t.Fatal(err)
	}
	agreeOnEveryFact(t, harnessenv.Environment(t), hostEntry(t), p)
}

// agreeOnEveryFact holds e, with the profile p its env_digest names, to a
// spatec run on env, harnessenv's environment: every fact both state
// agrees, each of the host, the partitions and the infrastructure is
// compared, and what one side alone states is listed.
func agreeOnEveryFact(t *testing.T, env *schema.Environment, e Entry, p *Profile) {
	t.Helper()
	if !e.WithProfile(p) {
		t.Fatalf("%s:%d: the profile %s (digest %s) is not the one its env_digest %s names", e.File, e.Line, p.Path, p.Digest, e.EnvDigest)
	}
	a := Compare(SpatecFacts(spatecRecord(env), env), e.Facts, "the reference harness")
	if !a.Agrees() {
		t.Fatalf("%s:%d: differ %+v, missing %v", e.File, e.Line, a.Differ, a.Missing)
	}
	var agreed []string
	for _, f := range a.Agree {
		agreed = append(agreed, f.Key)
	}
	for _, want := range []string{FactEnv, FactHostCores, FactHostMemory, FactPartitions, FactBrokerImage, FactBrokerImageID, FactBrokerVersion,
		FactBrokerCPUs, FactBrokerMemory, FactClickHouseImage, FactClickHouseImageID, FactClickHouseVersion, FactClickHouseCPUs, FactClickHouseMemory} {
		if !slices.Contains(agreed, want) {
			t.Errorf("%s:%d: %s not compared; compared %v", e.File, e.Line, want, agreed)
		}
	}
	unstated := strings.Join(a.Unstated, "\n")
	for _, want := range []string{"host architecture aarch64 (stated by the reference harness's alone", "the arm's envelope CPUs 6 (stated by spatec's alone", "the arm's envelope memory 24 GiB"} {
		if !strings.Contains(unstated, want) {
			t.Errorf("%s:%d: unstated facts %q lack %q", e.File, e.Line, a.Unstated, want)
		}
	}
}

// Every record the harness published of its host names, by its
// env_digest, the profile the harness publishes of it, and agrees with a
// spatec run on harnessenv's environment on every fact both state: the
// images' IDs and versions harnessenv gives spatec's runs are the ones
// the harness's records name.
func TestSpatecAgreesWithEveryPublishedHarnessRecord(t *testing.T) {
	dir := harnessenv.Checkout(t, "go test ./runs/interop -run TestSpatecAgreesWithEveryPublishedHarnessRecord")
	p, err := ReadProfile(filepath.Join(dir, "environments", harnessenv.Name+".toml"))
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(dir, "results", harnessenv.Name, "*", "*.jsonl"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no results of %s in %s: %v", harnessenv.Name, dir, err)
	}
	env, n := harnessenv.Environment(t), 0
	for _, f := range files {
		entries, problems := ReadSchema2(f)
		if len(problems) > 0 {
			t.Errorf("%s: %v", f, problems)
		}
		for _, e := range entries {
			agreeOnEveryFact(t, env, e, p)
			n++
		}
	}
	t.Logf("%d records of %d files agree with spatec's environment of the harness's host", n, len(files))
}

// One fact that differs keeps the two apart, and is named with both
// values; a fact that must be compared and that one side does not state
// keeps them apart too.
func TestCompareNamesWhatDiffers(t *testing.T) {
	e := hostEntry(t)
	env := harnessenv.Environment(t, harnessenv.Edit{Old: "partitions: 8", New: "partitions: 16"})
	a := Compare(SpatecFacts(spatecRecord(env), env), e.Facts, "the reference harness")
	if a.Agrees() || len(a.Differ) != 1 || a.Differ[0].Key != FactPartitions || a.Differ[0].Spatec.Value != "16" || a.Differ[0].Other.Value != "8" {
		t.Errorf("differ %+v; want partitions 16 vs 8 alone", a.Differ)
	}

	env = harnessenv.Environment(t, harnessenv.Edit{Old: "cpus:   16", New: "cpus:   12"})
	a = Compare(SpatecFacts(spatecRecord(env), env), e.Facts, "the reference harness")
	if a.Agrees() || len(a.Differ) != 1 || a.Differ[0].Label != "ClickHouse CPUs" || a.Differ[0].Spatec.Shown != "12" || a.Differ[0].Other.Shown != "16" {
		t.Errorf("differ %+v; want ClickHouse CPUs 12 vs 16 alone", a.Differ)
	}

	// A record whose environment is not at hand (edited since, or not in
	// the tree) does not state its partitions.
	env = harnessenv.Environment(t)
	a = Compare(SpatecFacts(spatecRecord(env), nil), e.Facts, "the reference harness")
	if a.Agrees() || len(a.Missing) != 1 || !strings.Contains(a.Missing[0], "partitions: not stated by spatec's") {
		t.Errorf("missing %v; want the partitions", a.Missing)
	}
	edited := harnessenv.Environment(t, harnessenv.Edit{Old: "memory: 24 * GiB", New: "memory: 20 * GiB"})
	if _, ok := SpatecFacts(spatecRecord(env), edited).Get(FactPartitions); ok {
		t.Error("the facts of an environment of another digest were read as the record's")
	}
}
