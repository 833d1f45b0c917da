package compiler

import (
	"encoding/json"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"spatec.dev/spatec"
	"strings"
	"testing"
	"testing/fstest"

	"spatec.dev/spatec/schema"
)

var update = flag.Bool("update", false, "rewrite the golden plans under testdata/golden")

// realTree copies the project's CUE tree into a map so a test can replace
// one file with a broken version of it.
func realTree(t *testing.T) fstest.MapFS {
	t.Helper()
	// The files the binary embeds, read from the checkout, so that a
	// test sees what spatec plans from.
	m := fstest.MapFS{}
	root := os.DirFS("..")
	err := fs.WalkDir(spatec.Tree, ".", func(f string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(root, f)
		if err != nil {
			return err
		}
		m[f] = &fstest.MapFile{Data: b}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func loadTree(t *testing.T, fsys fs.FS) *Tree {
	t.Helper()
	tr, err := Load(Options{FS: fsys})
	if err != nil {
		t.Fatalf("loading the tree: %v", err)
	}
	return tr
}

// TestEveryPlanResolves resolves every entrant variant against every
// environment it supports, and compares each with its golden plan.
func TestEveryPlanResolves(t *testing.T) {
	tr := loadTree(t, os.DirFS(".."))
	if b := tr.Broken(); len(b) > 0 {
		t.Fatalf("broken packages: %v", b)
	}
	n := 0
	for _, id := range tr.Plans() {
		p, problems := tr.Resolve(id.Env, id.Entrant, id.Variant)
		if len(problems) > 0 {
			t.Errorf("%s:%s on %s: %v", id.Entrant, id.Variant, id.Env, problems)
			continue
		}
		n++
		checkGolden(t, filepath.Join("testdata", "golden", id.Env, id.Entrant+"."+id.Variant+".json"), p)
	}
	if n < 13 {
		t.Errorf("resolved %d plans; the tree has at least 13", n)
	}
}

func checkGolden(t *testing.T, path string, p *schema.Plan) {
	t.Helper()
	got, err := json.MarshalIndent(schema.NewDocument(*p), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden plan (run `go test ./compiler -update` to create it): %v", err)
	}
	if string(want) != string(got) {
		t.Errorf("%s differs from the resolved plan; review the change and run `go test ./compiler -update`\n got: %s", path, got)
	}
}

// TestC1WorkedExamples pins the contract's worked examples exactly.
func TestC1WorkedExamples(t *testing.T) {
	const gib = int64(1) << 30
	tr := loadTree(t, os.DirFS(".."))
	cases := []struct {
		env, entrant string
		cpus         float64
		memory       int64
		budget       string
	}{
		{"bench-96c", "vector", 32, 96 * gib, "3 + 32 + 32 leaves 29 of 96 cores for the driver, sampler and OS"},
		{"retired-32c", "vector", 6, 24 * gib, "3 + 16 + 6 + 7 (reserve) leaves 0 of 32 cores for the driver, sampler and OS"},
	}
	for _, c := range cases {
		p, problems := tr.Resolve(c.env, c.entrant, "")
		if len(problems) > 0 {
			t.Fatalf("%s: %v", c.env, problems)
		}
		if p.Env.Envelope.CPUs != c.cpus || p.Env.Envelope.Memory != c.memory {
			t.Errorf("%s envelope = %v CPU / %d bytes, want %v / %d", c.env, p.Env.Envelope.CPUs, p.Env.Envelope.Memory, c.cpus, c.memory)
		}
		if got := p.BudgetSummary(true); got != c.budget {
			t.Errorf("%s budget = %q, want %q", c.env, got, c.budget)
		}
		dp := p.Entrant.Containers["vector"]
		if dp.CPUs != c.cpus || dp.Memory != c.memory || dp.MemorySwap != dp.Memory {
			t.Errorf("%s data plane = %+v, want the envelope with swap = memory", c.env, dp)
		}
		if _, k, _ := p.ParallelismKnob(); fmt.Sprint(k.Value) != fmt.Sprint(p.Env.Partitions) {
			t.Errorf("%s parallelism = %v, want %d partitions", c.env, k.Value, p.Env.Partitions)
		}
	}
}

// TestReserveHoldsTheControlPlane: on the harness's host, the reserve the
// envelope is derived with (C1) holds Flink's JobManager, as the harness
// runs it: the host's 32 cores are counted once, the JobManager inside the
// 7 held back, and the plan says so.
func TestReserveHoldsTheControlPlane(t *testing.T) {
	const gib = 1 << 30
	tr := loadTree(t, os.DirFS(".."))
	p, problems := tr.Resolve("c8g-8xl-ec2-docker", "flink", "")
	if len(problems) > 0 {
		t.Fatal(joinProblems(problems))
	}
	if e := p.Env.Envelope; e.CPUs != 6 || e.Memory != 24*gib {
		t.Errorf("envelope %+v, want 6 CPUs and 24 GiB", e)
	}
	if jm := p.Entrant.Containers["jm"]; jm.Role != "control-plane" || jm.CPUs != 1 || jm.Memory != 2*gib {
		t.Errorf("JobManager %+v, want a control plane of 1 CPU and 2 GiB", jm)
	}
	if b := p.Budget.CPUs; !b.ControlPlaneInReserve || b.Used != 32 || b.Left != 0 {
		t.Errorf("CPU budget %+v, want the reserve holding the control plane, 32 of 32 cores used", b)
	}
	for cpus, want := range map[bool]string{
		true:  "3 + 16 + 6 + 7 (reserve, holding the control plane's 1) leaves 0 of 32 cores, and the reserve 6, for the driver, sampler and OS",
		false: "8 GiB + 16 GiB + 24 GiB + 8 GiB (reserve, holding the control plane's 2 GiB) leaves 8 GiB of 64 GiB, and the reserve 6 GiB, for the driver, sampler and OS",
	} {
		if got := p.BudgetSummary(cpus); got != want {
			t.Errorf("budget %q, want %q", got, want)
		}
	}
	// An arm with no control plane leaves the reserve whole.
	v, problems := tr.Resolve("c8g-8xl-ec2-docker", "vector", "")
	if len(problems) > 0 {
		t.Fatal(joinProblems(problems))
	}
	if got, want := v.BudgetSummary(true), "3 + 16 + 6 + 7 (reserve) leaves 0 of 32 cores for the driver, sampler and OS"; got != want {
		t.Errorf("budget %q, want %q", got, want)
	}
}

// TestDigestDetectsEdits checks that a document whose content changed after
// review fails its check.
func TestDigestDetectsEdits(t *testing.T) {
	tr := loadTree(t, os.DirFS(".."))
	p, problems := tr.Resolve("local", "reference", "")
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	doc := schema.NewDocument(*p)
	b, _ := json.Marshal(doc)
	var back schema.Document
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if err := back.Check(); err != nil {
		t.Fatalf("an unedited plan must check: %v", err)
	}
	c := back.Plan.Entrant.Containers["consumer"]
	c.CPUs = 1
	back.Plan.Entrant.Containers["consumer"] = c
	if err := back.Check(); err == nil || !strings.Contains(err.Error(), "does not match its content") {
		t.Fatalf("an edited plan must fail its digest check, got %v", err)
	}
}

// A variant may run another workload than the entrant's default: each
// plan's workload is its own variant's, whichever plan was decoded first.
func TestEachVariantRunsItsOwnWorkload(t *testing.T) {
	tr, err := Load(Options{FS: realTree(t)})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ variant, workload string }{{"json-rows", "json-rows"}, {"default", "sensor-batch"}, {"json-rows", "json-rows"}} {
		p, ps := tr.Resolve("local-containers", "reference", tc.variant)
		if len(ps) > 0 {
			t.Fatal(ps)
		}
		if p.Workload.Name != tc.workload || p.Entrant.Runs != tc.workload || p.Entrant.Containers["consumer"].Environment["SPATEC_WORKLOAD"] != tc.workload {
			t.Errorf("reference:%s runs %s (entrant says %s, its container %s); want %s",
				tc.variant, p.Workload.Name, p.Entrant.Runs, p.Entrant.Containers["consumer"].Environment["SPATEC_WORKLOAD"], tc.workload)
		}
	}
}

// An environment's table and the columns it declares for an arm's own
// table of the same shape (typed) agree, and both with the insert's column
// order: three spellings of one table cannot drift apart.
func TestTypedColumnsAreTheDDLs(t *testing.T) {
	tr, err := Load(Options{FS: realTree(t)})
	if err != nil {
		t.Fatal(err)
	}
	for _, env := range tr.Environments() {
		e, err := tr.Environment(env)
		if err != nil {
			t.Fatal(err)
		}
		for name, w := range e.Workloads {
			if w.Table.Typed == "" {
				continue
			}
			var typed, ordered []string
			for _, col := range splitTopLevel(w.Table.Typed) {
				typed = append(typed, strings.Join(strings.Fields(col), " "))
				ordered = append(ordered, strings.Fields(col)[0])
			}
			if strings.Join(ordered, ",") != strings.Join(w.Table.Columns, ",") {
				t.Errorf("%s %s: typed columns %v; the inserts write %v", env, name, ordered, w.Table.Columns)
			}
			ddl := ddlColumns(w.Table.DDL)
			if strings.Join(ddl, ", ") != strings.Join(typed, ", ") {
				t.Errorf("%s %s: the DDL's columns are\n  %s\nand typed says\n  %s", env, name, strings.Join(ddl, ", "), strings.Join(typed, ", "))
			}
		}
	}
}

// splitTopLevel splits a column list at the commas outside parentheses.
func splitTopLevel(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, r := range s {
		switch r {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, strings.TrimSpace(s[start:i]))
				start = i + 1
			}
		}
	}
	return append(out, strings.TrimSpace(s[start:]))
}

// ddlColumns are a CREATE TABLE's stored columns ("name Type"), comments
// and MATERIALIZED columns left out.
func ddlColumns(ddl string) []string {
	var lines []string
	for _, l := range strings.Split(ddl, "\n") {
		if i := strings.Index(l, "--"); i >= 0 {
			l = l[:i]
		}
		lines = append(lines, l)
	}
	body := strings.Join(lines, " ")
	open := strings.Index(body, "(")
	depth, end := 0, -1
	for i := open; i < len(body); i++ {
		if body[i] == '(' {
			depth++
		} else if body[i] == ')' {
			if depth--; depth == 0 {
				end = i
				break
			}
		}
	}
	var out []string
	for _, col := range splitTopLevel(body[open+1 : end]) {
		if col == "" || strings.Contains(col, "MATERIALIZED") {
			continue
		}
		out = append(out, strings.Join(strings.Fields(col), " "))
	}
	return out
}
