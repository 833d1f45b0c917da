package harness

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"spatec.dev/spatec/compiler"
	"spatec.dev/spatec/schema"
)

var update = flag.Bool("update", false, "rewrite docs/harness.md's tables from the account")

// hostEnv is the harness's own host, the environment the account holds.
const hostEnv = "c8g-8xl-ec2-docker"

// armsOfHost are the entrants the harness runs there.
var armsOfHost = []string{"clickhouse-kafka-engine", "flink", "kafka-connect", "spate", "vector"}

var (
	plansOnce sync.Once
	plansErr  error
	hostPlans map[string]schema.Plan
)

// defaultPlans resolves each arm's default variant on the harness's host
// from the checkout's tree, once a test binary.
func defaultPlans(t *testing.T) map[string]schema.Plan {
	t.Helper()
	plansOnce.Do(func() {
		tree, err := compiler.Load(compiler.Options{Dir: ".."})
		if err != nil {
			plansErr = err
			return
		}
		hostPlans = map[string]schema.Plan{}
		for _, arm := range armsOfHost {
			_, def := tree.Variants(arm)
			p, problems := tree.Resolve(hostEnv, arm, def)
			if len(problems) > 0 {
				plansErr = fmt.Errorf("%s: %s: %s", problems[0].Pos, problems[0].Rule, problems[0].Message)
				return
			}
			hostPlans[arm] = *p
		}
	})
	if plansErr != nil {
		t.Fatalf("planning the arms on %s: %v", hostEnv, plansErr)
	}
	return hostPlans
}

func readBoth(t *testing.T) (Facts, *Accounts) {
	t.Helper()
	facts, err := ReadFacts("facts.tsv")
	if err != nil {
		t.Fatal(err)
	}
	a, err := ReadAccounts("accounts.txt")
	if err != nil {
		t.Fatal(err)
	}
	return facts, a
}

// TestEveryHarnessFactIsAccountedFor: each of the harness's settings is
// equal in spatec's plan on the harness's host, the same effect spelt
// otherwise, a deviation the entrant declares, or no setting of the run;
// and each setting of the compared places is a fact's or a declared
// addition.
func TestEveryHarnessFactIsAccountedFor(t *testing.T) {
	facts, a := readBoth(t)
	res := Account(facts, a, defaultPlans(t), os.DirFS(".."))
	for _, r := range res.Rows {
		if r.Problem != "" {
			t.Error(r.Problem)
		}
	}
	for _, p := range res.Problems {
		t.Error(p)
	}
	if len(res.Rows) < 500 {
		t.Errorf("%d facts accounted for; the harness's files give over 500", len(res.Rows))
	}
}

// TestHarnessPage: docs/harness.md's tables are the account's, whole.
func TestHarnessPage(t *testing.T) {
	facts, a := readBoth(t)
	res := Account(facts, a, defaultPlans(t), os.DirFS(".."))
	page := filepath.Join("..", "docs", "harness.md")
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	intro, _, _ := strings.Cut(string(b), "\n<!-- Written by")
	want := Page(intro, facts, a, res)
	if *update {
		if err := os.WriteFile(page, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if string(b) != want {
		t.Errorf("%s is not the account's page; run `go test ./harness -run TestHarnessPage -update` and review the diff", page)
	}
	// A difference is never called none: the page names each row's kind,
	// and an account's reason may not say otherwise.
	for _, r := range res.Rows {
		if r.Entry.Kind != Equal && strings.HasPrefix(strings.ToLower(r.Entry.Why), "none") {
			t.Errorf("accounts.txt:%d: %s is accounted %s, yet its reason says %q", r.Entry.Line, r.Fact.Key, r.Entry.Kind, r.Entry.Why)
		}
	}
}

// TestFactsAreTheHarnesss: with SPATEC_HARNESS set to a checkout of the
// harness, the facts read from it are the committed ones, so a harness
// that moved fails here.
func TestFactsAreTheHarnesss(t *testing.T) {
	dir := os.Getenv("SPATEC_HARNESS")
	if dir == "" {
		t.Skip("needs a checkout of spate-etl/benchmark: SPATEC_HARNESS=/path/to/it go test ./harness")
	}
	committed, err := ReadFacts("facts.tsv")
	if err != nil {
		t.Fatal(err)
	}
	got, err := Extract(DirFS(dir))
	if err != nil {
		t.Fatal(err)
	}
	key := func(f Fact) string { return f.Arm + "\t" + f.ID() }
	have := map[string]string{}
	for _, f := range committed.List {
		have[key(f)] = f.Value
	}
	for _, f := range got {
		v, ok := have[key(f)]
		switch {
		case !ok:
			t.Errorf("the harness has a new setting %s %s = %q; regenerate harness/facts.tsv (go run ./cmd/spatec-harness-facts -o harness/facts.tsv %s) and account for it", f.File, f.Key, f.Value, dir)
		case v != f.Value:
			t.Errorf("the harness's %s %s is now %q, the facts say %q; regenerate and account for it", f.File, f.Key, f.Value, v)
		}
		delete(have, key(f))
	}
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range have {
			if !yield(k) {
				return
			}
		}
	}) {
		t.Errorf("the harness no longer has %s; regenerate harness/facts.tsv", strings.ReplaceAll(k, "\t", " "))
	}
}
