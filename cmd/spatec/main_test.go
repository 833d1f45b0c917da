package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	osexec "os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"spatec.dev/spatec/exec"
	"spatec.dev/spatec/exec/engine/docker"
	"spatec.dev/spatec/exec/gclog"
	"spatec.dev/spatec/internal/harnessenv"
	"spatec.dev/spatec/internal/testenv"
	"spatec.dev/spatec/runs/record"
	"spatec.dev/spatec/schema"
)

// cli runs the command in-process, as main would, and returns its exit
// code and output.
func cli(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestPlanShowsTheBudget(t *testing.T) {
	code, out, errOut := cli(t, "plan", "--env", "bench-96c", "vector")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"envelope 32 CPUs / 96 GiB = min(32 partitions, 96 cores − 35 infra − 0 reserve)",
		"3 + 32 + 32 leaves 29 of 96 cores for the driver, sampler and OS",
		"vector             data-plane        32    96 GiB  96 GiB",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("plan output lacks %q:\n%s", want, out)
		}
	}
}

func TestPlanSaysHowImagesAreBuilt(t *testing.T) {
	code, out, errOut := cli(t, "plan", "--env", "local-containers", "clickhouse-kafka-engine")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"image spatec-clickhouse:18.16.1: built from Debian bookworm packages clickhouse-server=18.16.1+ds-7.3+b2 clickhouse-client=18.16.1+ds-7.3+b2 tzdata for amd64 (recipe sha256:",
		"image spatec-kafka:4.4.0: built from Debian trixie packages openjdk-21-jre-headless for amd64 and 47 checked downloads (recipe sha256:",
		"image spatec-apicurio:3.3.3: built from Debian trixie packages openjdk-21-jre-headless for amd64 and 1 checked download (recipe sha256:",
	} {
		if strings.Count(out, want) != 1 {
			t.Errorf("plan output says %d times %q:\n%s", strings.Count(out, want), want, out)
		}
	}
}

func TestPlanJSONIsAVersionedDocument(t *testing.T) {
	code, out, errOut := cli(t, "plan", "--env", "retired-32c", "-o", "json", "kafka-connect")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var doc schema.Document
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.APIVersion != schema.APIVersion || doc.Check() != nil {
		t.Fatalf("document %s / %v", doc.APIVersion, doc.Check())
	}
	if got := doc.Plan.Entrant.Containers["worker"].JVM.Heap; got != 20<<30 {
		t.Errorf("kafka-connect heap on retired-32c = %d, want the 20 GiB floor (the harness's 20480m)", got)
	}
}

// planAll runs `spatec plan --env all -o json` and decodes its documents.
func planAll(t *testing.T) []schema.Document {
	t.Helper()
	code, out, errOut := cli(t, "plan", "--env", "all", "-o", "json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var docs []schema.Document
	if err := json.Unmarshal([]byte(out), &docs); err != nil {
		t.Fatal(err)
	}
	return docs
}

// TestPlanAllEnvironments plans every variant of every entrant in every
// environment it supports, the same plans `spatec vet` and `cue vet -c .`
// check.
func TestPlanAllEnvironments(t *testing.T) {
	docs := planAll(t)
	got := map[string]bool{}
	for _, d := range docs {
		got[d.Plan.Env.Name+"/"+d.Plan.Entrant.Name+":"+d.Plan.Variant] = true
	}
	// One of each kind: an entrant only one environment supports, a
	// non-default variant, and the fixture.
	for _, want := range []string{"bench-96c/flink:default", "retired-32c/vector:small-batch", "local/reference:small-batch"} {
		if !got[want] {
			t.Errorf("no plan %s among %v", want, slices.Sorted(maps.Keys(got)))
		}
	}
	if got["retired-32c/flink:default"] {
		t.Error("flink does not list retired-32c, yet it was planned there")
	}
	_, vetOut, _ := cli(t, "vet")
	if want := fmt.Sprintf("%d plans,", len(docs)); !strings.HasPrefix(vetOut, want) || len(got) != len(docs) {
		t.Errorf("plan --env all gave %d documents (%d distinct); vet says %q", len(docs), len(got), vetOut)
	}
}

// TestPlansAskJVMsForTheLogTheExecutorReads: the GC-log option every JVM
// plan carries (#JVM.gcLog) is the one exec/gclog reads, so the heap
// figures of C9 can be recorded.
func TestPlansAskJVMsForTheLogTheExecutorReads(t *testing.T) {
	docs := planAll(t)
	jvms := 0
	for _, d := range docs {
		for name, c := range d.Plan.Entrant.Containers {
			if c.Runtime != "jvm" {
				continue
			}
			jvms++
			if c.JVM == nil || c.JVM.GCLog != gclog.Option(gclog.Path) {
				t.Errorf("%s:%s on %s, container %s: gcLog %+v, want %q", d.Plan.Entrant.Name, d.Plan.Variant, d.Plan.Env.Name, name, c.JVM, gclog.Option(gclog.Path))
			}
		}
	}
	if jvms == 0 {
		t.Error("no JVM container in the tree's plans")
	}
}

func TestVetFindsNoProblemInTheTree(t *testing.T) {
	code, out, errOut := cli(t, "vet")
	if code != exitOK || !strings.Contains(out, "no problems") {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
}

func TestUsageErrorsExit2(t *testing.T) {
	for _, args := range [][]string{{}, {"nope"}, {"plan"}, {"plan", "--env", "local", "-o", "yaml"}, {"exec", "--reps", "0", "--env", "local", "reference"}, {"exec", "--env", "all", "reference"}} {
		if code, _, _ := cli(t, args...); code != exitUsage {
			t.Errorf("spatec %v: exit %d, want %d", args, code, exitUsage)
		}
	}
}

// TestEditedPlanIsRefused checks that a reviewed plan whose content changed
// after review is refused with exit 3, before anything touches the host.
func TestEditedPlanIsRefused(t *testing.T) {
	_, out, _ := cli(t, "plan", "--env", "local", "-o", "json", "reference")
	edited := strings.Replace(out, `"cpus": 0.5`, `"cpus": 1.5`, 1)
	if edited == out {
		t.Fatal("fixture: no cpus field to edit")
	}
	path := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(path, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := cli(t, "exec", path)
	if code != exitRefused || !strings.HasPrefix(errOut, "REFUSED: ") || !strings.Contains(errOut, "digest does not match its content") {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
}

// TestExecLocalReference is the end-to-end run of issue 4: the real Docker
// engine, the real ClickHouse, the embedded broker and the reference arm,
// three repetitions, three ok records with every metric C7, C8 and C13
// require.
func TestExecLocalReference(t *testing.T) {
	requireServices(t)
	results := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var out, errOut bytes.Buffer
	code := run(ctx, []string{"exec", "--env", "local", "reference", "--reps", "3", "--results", results}, &out, &errOut)
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errOut.String())
	}
	t.Logf("\n%s", out.String())

	path := record.PathFor(results, "local", "reference", time.Now())
	recs := readRecords(t, path)
	if len(recs) != 3 {
		t.Fatalf("%s holds %d records, want 3", path, len(recs))
	}
	required := []string{
		record.PeakAnonBytes, record.PeakShmemBytes, record.MemoryPeakBytes, // C7
		record.DataPlanePeakAnonBytes, record.DataPlanePeakShmemBytes, record.DataPlaneMemoryPeakBytes,
		record.CoresUsed, record.DataPlaneCoresUsed, record.ControlPlaneCoresUsed, // C8
		record.ExpectedRows, record.DistinctRows, record.LandedRows, record.DuplicateRows, // C13
		record.RowsPerS, record.WindowSeconds,
	}
	for i, rec := range recs {
		if rec.Run.Evidence != record.EvidenceExploratory {
			t.Errorf("record %d: evidence %q, want %q for a plan resolved on the spot", i, rec.Run.Evidence, record.EvidenceExploratory)
		}
		if rec.Status != record.StatusOK || rec.Rep != i+1 || rec.Reps != 3 {
			t.Errorf("record %d: status %s rep %d/%d, note %q", i, rec.Status, rec.Rep, rec.Reps, rec.Note)
		}
		for _, m := range required {
			if _, ok := rec.Metrics[m]; !ok {
				t.Errorf("record %d lacks metric %s", i, m)
			}
		}
		if got, want := rec.Metrics[record.DistinctRows].Value, rec.Metrics[record.ExpectedRows].Value; got != want || want != 200_000 {
			t.Errorf("record %d: %v distinct rows of %v, want 200000 of 200000", i, got, want)
		}
		if rec.Metrics[record.DataPlaneCoresUsed].Value <= 0 || rec.Metrics[record.PeakAnonBytes].Value <= 0 {
			t.Errorf("record %d: nothing measured: %+v", i, rec.Metrics)
		}
		if len(rec.Run.Cgroups["consumer"]) == 0 || rec.SUT.Version != "0.1.1" {
			t.Errorf("record %d: provenance incomplete: cgroups %v, version %q", i, rec.Run.Cgroups, rec.SUT.Version)
		}
		// The window over time is kept beside the log: every reading of
		// the consumer, and the rows landed up to all of them.
		if rec.Series == nil {
			t.Errorf("record %d names no series", i)
			continue
		}
		s, err := record.ReadSeries(path, rec.RunID, *rec.Series)
		if err != nil {
			t.Errorf("record %d: %v", i, err)
			continue
		}
		window := rec.Metrics[record.WindowSeconds].Value
		if n := len(s.OffsetsMS); n < int(window/0.1)/2 || s.Containers[0].Name != "consumer" {
			t.Errorf("record %d: %d readings over a %.1f s window, first container %s", i, n, window, s.Containers[0].Name)
		}
		if n := len(s.Rows.Landed); n == 0 || s.Rows.Landed[n-1] < 200_000 {
			t.Errorf("record %d: rows over time %v do not reach the 200000 landed", i, s.Rows.Landed)
		}
	}
	if code, vout, verr := cli(t, "validate", results); code != exitOK {
		t.Errorf("validate: exit %d\n%s%s", code, vout, verr)
	}
	assertNothingLeft(t)
}

func readRecords(t *testing.T, path string) []record.Record {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var recs []record.Record
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r record.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		recs = append(recs, r)
	}
	return recs
}

// assertNothingLeft checks that no container spatec started remains.
func assertNothingLeft(t *testing.T) {
	t.Helper()
	e, err := docker.New(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	// Every container and network spatec creates carries a run label.
	left, err := e.ListByLabel(context.Background(), exec.LabelRun, "")
	if err != nil {
		t.Fatal(err)
	}
	if !left.Empty() {
		t.Errorf("left behind: %+v", left)
	}
}

// requireServices fails under CI=true, and skips elsewhere, when the Docker
// engine or ClickHouse is not there.
func requireServices(t *testing.T) {
	t.Helper()
	testenv.Docker(t)
	testenv.RequireClickHouse(t)
}

// TestInterruptTearsDown sends SIGINT to a real spatec process in the middle
// of a drain: the run is recorded as failed and interrupted, and nothing it
// started is left running.
func TestInterruptTearsDown(t *testing.T) {
	requireServices(t)
	bin := buildSpatec(t)
	results := t.TempDir()
	cmd := osexec.Command(bin, "exec", "--env", "local", "reference", "--results", results)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	var seen []string
	for sc.Scan() {
		seen = append(seen, sc.Text())
		if strings.Contains(sc.Text(), "phase=drain state=start") {
			if err := cmd.Process.Signal(os.Interrupt); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	for sc.Scan() {
		seen = append(seen, sc.Text())
	}
	err = cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != exitProblems {
		t.Fatalf("exit %d (%v), want %d; stderr:\n%s", code, err, exitProblems, strings.Join(seen, "\n"))
	}
	recs := readRecords(t, record.PathFor(results, "local", "reference", time.Now()))
	if len(recs) != 1 || recs[0].Status != record.StatusFailed || !slices.Contains(recs[0].Flags, record.FlagInterrupted) {
		t.Fatalf("records: %+v", recs)
	}
	assertNothingLeft(t)
}

// TestReviewedPlanRuns runs a plan document as reviewed: the record names
// the document's digest.
func TestReviewedPlanRuns(t *testing.T) {
	requireServices(t)
	_, out, _ := cli(t, "plan", "--env", "local", "-o", "json", "reference:small-batch")
	var doc schema.Document
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	results := t.TempDir()
	code, stdout, stderr := cli(t, "exec", path, "--results", results)
	if code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	recs := readRecords(t, record.PathFor(results, "local", "reference", time.Now()))
	if len(recs) != 1 || recs[0].Run.PlanDigest != doc.Digest || recs[0].SUT.Variant != "small-batch" {
		t.Fatalf("records %+v, want one of plan %s", recs, doc.Digest)
	}
	// A plan reviewed before it ran gives measured evidence.
	if recs[0].Run.Evidence != record.EvidenceMeasured {
		t.Errorf("evidence %q, want %q for a run of a reviewed plan", recs[0].Run.Evidence, record.EvidenceMeasured)
	}
	assertNothingLeft(t)
}

// TestFaultReviewedPlanProgramChanged: a plan reviewed, then the reference
// arm's program edited in the tree, is refused before anything is built or
// started; so is a reviewed plan that pins no sources at all.
func TestFaultReviewedPlanProgramChanged(t *testing.T) {
	requireServices(t)
	tree := copyTree(t, nil)
	// The program's own directory copied, so that it can be edited; the
	// rest of cmd/ stays linked to the checkout.
	cmdDir := filepath.Join(tree, "cmd")
	if err := os.Remove(cmdDir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(cmdDir, "spatec-reference"), 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(filepath.Join("..", "..", "cmd"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		src, _ := filepath.Abs(filepath.Join("..", "..", "cmd", e.Name()))
		if e.Name() != "spatec-reference" {
			if err := os.Symlink(src, filepath.Join(cmdDir, e.Name())); err != nil {
				t.Fatal(err)
			}
			continue
		}
		files, _ := os.ReadDir(src)
		for _, f := range files {
			b, err := os.ReadFile(filepath.Join(src, f.Name()))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(cmdDir, e.Name(), f.Name()), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	code, out, errOut := cli(t, "plan", "--tree", tree, "--env", "local", "-o", "json", "reference")
	var doc schema.Document
	if code != exitOK || json.Unmarshal([]byte(out), &doc) != nil || !strings.HasPrefix(doc.Plan.Sources["spatec-reference:0.1.1"], "sha256:") {
		t.Fatalf("plan: exit %d, sources %v\n%s", code, doc.Plan.Sources, errOut)
	}
	planned := doc.Plan.Sources["spatec-reference:0.1.1"]
	dir := t.TempDir()
	write := func(name string, d schema.Document) string {
		b, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	reviewed := write("plan.json", doc)
	main := filepath.Join(cmdDir, "spatec-reference", "main.go")
	f, err := os.OpenFile(main, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(f, "\n// An edit after the review.")
	f.Close()

	code, _, errOut = cli(t, "exec", "--tree", tree, reviewed, "--results", t.TempDir())
	want := "REFUSED: C16: image spatec-reference:0.1.1 was planned from sources " + planned + ", and this tree gives sha256:"
	if code != exitRefused || !strings.Contains(errOut, want) ||
		!strings.Contains(errOut, "the Go program ./cmd/spatec-reference (or a package of this module it imports) changed since the plan was made") ||
		strings.Contains(errOut, "phase=infra") {
		t.Errorf("a reviewed plan whose program changed: exit %d; want %d saying %q before anything starts:\n%s", code, exitRefused, want, errOut)
	}

	t.Logf("fault-row|a reviewed plan whose program changed in the tree|%s|0|0", firstLine(errOut))

	doc.Plan.Sources = nil
	unpinned := write("unpinned.json", schema.NewDocument(doc.Plan))
	code, _, errOut = cli(t, "exec", "--tree", tree, unpinned, "--results", t.TempDir())
	if want := "REFUSED: reference rep 1: C16: the plan pins no sources for image spatec-reference:0.1.1, which spatec builds from this tree"; code != exitRefused || !strings.Contains(errOut, want) {
		t.Errorf("a reviewed plan without sources: exit %d; want %d saying %q:\n%s", code, exitRefused, want, errOut)
	}
	assertNothingLeft(t)
}

// firstLine is the first line of s that says something, abbreviated.
func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, "REFUSED:") {
			if len(l) > 160 {
				l = l[:160] + "…"
			}
			return l
		}
	}
	return "no refusal"
}

// TestMisspeltNamesAreUsageErrors: a name the tree does not have is a
// usage error (exit 2) naming the candidates, closest first, before
// anything is resolved or started; REFUSED is kept for the contract and
// the host.
func TestMisspeltNamesAreUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"plan", "--env", "bench96c"}, `no environment "bench96c"; the tree has: bench-96c, `},
		{[]string{"plan", "--env", "nope", "-o", "json"}, `no environment "nope"; the tree has: `},
		{[]string{"exec", "--env", "local", "referenc"}, `no entrant "referenc"; the tree has: reference, `},
		{[]string{"exec", "--env", "local", "reference:nosuch"}, `entrant reference has no variant "nosuch"; it has: default, json-rows, small-batch`},
		{[]string{"exec", "--env", "nope", "reference"}, `no environment "nope"`},
		{[]string{"exec", "--env", "bench-96c", "reference"}, "entrant reference does not run in bench-96c; it supports: k8s-pods, k8s-single, k8s-two, local, local-containers"},
		{[]string{"ceiling", "--measure", "--env", "nope"}, `no environment "nope"`},
		{[]string{"pin", "--env", "nope"}, `no environment "nope"`},
	} {
		code, out, errOut := cli(t, tc.args...)
		if code != exitUsage || out != "" || !strings.Contains(errOut, tc.want) || strings.Contains(errOut, "REFUSED") {
			t.Errorf("spatec %s: exit %d, stdout %q, stderr %q; want exit %d saying %q", strings.Join(tc.args, " "), code, out, errOut, exitUsage, tc.want)
		}
	}
}

// TestPlanForKubernetes: on a Kubernetes environment, `spatec plan` shows
// each container's pod, QoS class and node, the infrastructure's too when
// it runs in pods, and `-o k8s` prints the manifests.
func TestPlanForKubernetes(t *testing.T) {
	code, out, errOut := cli(t, "plan", "--env", "k8s-single", "reference")
	if code != exitOK || !strings.Contains(out, "consumer  spatec-reference-consumer-") ||
		!strings.Contains(out, "on node spatec-node  QoS Guaranteed  1 CPU, exclusive cores (static CPU manager)") {
		t.Fatalf("plan: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = cli(t, "plan", "--env", "k8s-single", "-o", "k8s", "reference")
	for _, want := range []string{"kind: Pod", "nodeName: spatec-node", "namespace: spatec", "cpu: \"1\"", "memory: 1Gi", "hostNetwork: true"} {
		if code != exitOK || !strings.Contains(out, want) {
			t.Errorf("plan -o k8s: exit %d, no %q in\n%s%s", code, want, out, errOut)
		}
	}
	if code, _, errOut := cli(t, "plan", "--env", "local", "-o", "k8s", "reference"); code != exitUsage || !strings.Contains(errOut, "environment local runs on docker, not on Kubernetes") {
		t.Errorf("plan -o k8s on a Docker environment: exit %d\n%s", code, errOut)
	}
	code, out, errOut = cli(t, "plan", "--env", "k8s-pods", "reference")
	for _, want := range []string{"consumer  spatec-reference-consumer-", "  QoS Guaranteed  500m CPU\n",
		"broker  spatec-broker  on node spatec-node  QoS Guaranteed  250m CPU", "clickhouse  spatec-clickhouse  on node spatec-node  QoS Guaranteed  250m CPU",
		"data-plane-delete: delete the arm's pod, made again by its ReplicaSet once 30% of the rows have landed; recovery bound 60 s"} {
		if code != exitOK || !strings.Contains(out, want) {
			t.Errorf("plan on k8s-pods: exit %d, no %q in\n%s%s", code, want, out, errOut)
		}
	}
}

// TestNoTreeIsAUsageError: a --tree that names no tree is the command
// line's mistake (exit 2), and says what a tree is.
func TestNoTreeIsAUsageError(t *testing.T) {
	code, _, errOut := cli(t, "vet", "--tree", filepath.Join(t.TempDir(), "nonexistent"))
	if code != exitUsage || !strings.Contains(errOut, "is not a spatec tree: it has no cue.mod/module.cue") {
		t.Errorf("exit %d, stderr %q; want exit %d naming cue.mod/module.cue", code, errOut, exitUsage)
	}
}

// TestAnArmOfAnotherArchitectureIsRefused: an environment declared for
// another architecture than the engine's (the harness's Graviton host, on
// an x86-64 engine) is refused with the reason and what to do, exit 3,
// before anything is built, pulled or started, and before the host's lock
// is taken.
func TestAnArmOfAnotherArchitectureIsRefused(t *testing.T) {
	testenv.Docker(t)
	env, arch, engineArch := "c8g-8xl-ec2-docker", "arm64", "x86_64"
	if runtime.GOARCH == "arm64" {
		env, arch, engineArch = "bench-96c", "amd64", "aarch64"
	}
	results := filepath.Join(t.TempDir(), "results")
	code, _, errOut := cli(t, "exec", "--env", env, "vector", "--results", results)
	want := "REFUSED: " + env + " is an " + arch + " environment (its arch), and the engine reports architecture " + engineArch +
		": what spatec builds for it would not run on this host, or would run emulated and be measured so; run it on an " + arch + " host"
	if code != exitRefused || !strings.Contains(errOut, want) {
		t.Fatalf("exit %d; want %d saying %q:\n%s", code, exitRefused, want, errOut)
	}
	for _, step := range []string{"phase=", "pulling", "building", "host lock"} {
		if strings.Contains(errOut, step) {
			t.Errorf("the refusal came after %q:\n%s", step, errOut)
		}
	}
	if _, err := os.Stat(results); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("results %s after a refusal: %v; want it never made", results, err)
	}
}

// TestRefusedExecLeavesNoResults: a refused exec creates no results
// directory that did not exist.
func TestRefusedExecLeavesNoResults(t *testing.T) {
	results := filepath.Join(t.TempDir(), "results")
	code, _, errOut := cli(t, "exec", "--env", "bench-96c", "kafka-connect", "--results", results)
	if code != exitRefused {
		t.Fatalf("exit %d, want %d: %s", code, exitRefused, errOut)
	}
	if _, err := os.Stat(results); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("results %s after a refusal: %v; want it never made", results, err)
	}
}

// TestPlanOfAnEnvironmentAlone: `spatec plan --env` on an environment no
// entrant supports says so, and still checks the environment's own
// arithmetic: one whose envelope overflows its host fails with C4 at its
// own line.
func TestPlanOfAnEnvironmentAlone(t *testing.T) {
	code, out, errOut := cli(t, "plan", "--tree", sampleTree(t), "--env", harnessenv.Name)
	if code != exitOK || out != "" || !strings.Contains(errOut, harnessenv.Name+": no entrant supports it yet") {
		t.Fatalf("plan of a sound environment alone: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, _, errOut = cli(t, "plan", "--tree", sampleTree(t, harnessenv.Edit{Old: "envelope: memory: 24 * GiB", New: "envelope: memory: 60 * GiB"}), "--env", harnessenv.Name)
	want := "C4: " + harnessenv.Name + ": infra 24 GiB + envelope 60 GiB + reserve 8 GiB = 92 GiB exceeds the host's 64 GiB (memory) before any entrant adds to it"
	if code != exitProblems || !strings.Contains(errOut, harnessenv.Dir+"/env.cue:") || !strings.Contains(errOut, want) {
		t.Fatalf("plan of an environment that overflows its host: exit %d, want %q at its file:\n%s", code, want, errOut)
	}
}

// TestValidateRefusesAPlainFile: a file that is neither a results tree nor
// records is a usage error, not "0 records, 0 problems".
func TestValidateRefusesAPlainFile(t *testing.T) {
	f := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(f, []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := cli(t, "validate", f)
	if code != exitUsage || out != "" || !strings.Contains(errOut, "not a results tree nor a .jsonl file of records") {
		t.Fatalf("validate of a plain file: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// TestVetCountsThePlansItCouldNotMake: an entrant whose name is gone is
// said at its file, and the count of plans says how many more could not
// be made and why, rather than dropping them in silence.
func TestVetCountsThePlansItCouldNotMake(t *testing.T) {
	tree := copyTree(t, map[string][2]string{"entrants/vector/vector.cue": {"\tname:        \"vector\"\n", ""}})
	code, _, errOut := cli(t, "vet", "--tree", tree)
	if code == exitOK {
		t.Fatal("vet accepts an entrant with no name")
	}
	src, err := os.ReadFile(filepath.Join(tree, "entrants/vector/vector.cue"))
	if err != nil {
		t.Fatal(err)
	}
	line := strings.Count(string(src[:bytes.Index(src, []byte("#entrant: schema.#Entrant & {"))]), "\n") + 1
	for _, want := range []string{
		fmt.Sprintf("entrants/vector/vector.cue:%d: C15: entrants/vector: entrant.name is missing", line),
		"; 9 more could not be made (entrants/vector: it has no name, 9 plan(s))\n",
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("vet does not say %q:\n%s", want, errOut)
		}
	}
}
