package main

// docs/harness.md sets each setting of the public harness beside spatec's.
// This test holds the page to both sides: every spatec value it names is in
// the plan it names, and, with the harness at hand, every harness value is
// in the harness's file.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"spatec.dev/spatec/schema"
)

// harnessEnv is the host the page compares on: the harness's own.
const harnessEnv = "c8g-8xl-ec2-docker"

// tableRow is one row of the page: its setting, and the values each side
// names, each a substring of the place it names.
type tableRow struct {
	line    int
	arm     string // the section's entrant, "" for the workload and infrastructure
	setting string
	harness []located
	spatec  []located
}

// located is `text` in `where`.
type located struct{ text, where string }

// locatedPair finds `text` in `where` in a cell.
var locatedPair = regexp.MustCompile("`([^`]+)` in `([^`]+)`")

// sectionArms maps the page's section titles to entrants.
var sectionArms = map[string]string{
	"Flink": "flink", "ClickHouse's Kafka engine": "clickhouse-kafka-engine", "spate": "spate",
	"Vector": "vector", "Kafka Connect": "kafka-connect",
}

// readHarnessTable reads the rows of docs/harness.md.
func readHarnessTable(t *testing.T, path string) []tableRow {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []tableRow
	arm, n := "", 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		n++
		line := sc.Text()
		if title, ok := strings.CutPrefix(line, "## "); ok {
			arm = sectionArms[title]
			continue
		}
		if !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| setting |") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), " | ")
		if len(cells) != 4 {
			t.Fatalf("%s:%d: a row of %d cells; the table has 4 (setting, harness, spatec, difference)", path, n, len(cells))
		}
		r := tableRow{line: n, arm: arm, setting: strings.TrimSpace(cells[0])}
		for _, m := range locatedPair.FindAllStringSubmatch(cells[1], -1) {
			r.harness = append(r.harness, located{m[1], m[2]})
		}
		for _, m := range locatedPair.FindAllStringSubmatch(cells[2], -1) {
			r.spatec = append(r.spatec, located{m[1], m[2]})
		}
		if len(r.spatec) == 0 {
			t.Errorf("%s:%d (%s): the spatec cell names no `value` in `place`", path, n, r.setting)
		}
		rows = append(rows, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return rows
}

// spatecText is what a place of spatec's names, in plan p (the arm's
// default plan on the harness's host) or in the tree at root.
func spatecText(t *testing.T, p schema.Plan, root, where string) (string, error) {
	t.Helper()
	jsonOf := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	scope, what, ok := strings.Cut(where, ":")
	if !ok {
		return "", fmt.Errorf("%q is not scope:place", where)
	}
	switch scope {
	case "tree":
		b, err := os.ReadFile(filepath.Join(root, what))
		return string(b), err
	case "plan":
		switch what {
		case "ddl":
			return p.Workload.Table.DDL, nil
		case "checksum":
			return jsonOf(p.Workload.Checksum), nil
		case "workload":
			return jsonOf(p.Workload), nil
		case "env":
			return jsonOf(p.Env), nil
		case "deviations":
			var ids []string
			for _, d := range p.Entrant.Deviations {
				ids = append(ids, d.ID)
			}
			return strings.Join(ids, "\n"), nil
		}
		return "", fmt.Errorf("no plan place %q (ddl, checksum, workload, env, deviations)", what)
	}
	c, ok := p.Entrant.Containers[scope]
	if !ok {
		return "", fmt.Errorf("%s has no container %s (it has %v)", p.Entrant.Name, scope, slices.Sorted(maps.Keys(p.Entrant.Containers)))
	}
	switch what {
	case "env":
		var lines []string
		for _, k := range slices.Sorted(maps.Keys(c.Environment)) {
			lines = append(lines, k+"="+c.Environment[k])
		}
		return strings.Join(lines, "\n"), nil
	case "jvm":
		if c.JVM == nil {
			return "", fmt.Errorf("container %s runs no JVM", scope)
		}
		return strings.Join(append(slices.Clone(c.JVM.Options), c.JVM.JVMOptions...), " "), nil
	case "entrypoint":
		return strings.Join(c.Entrypoint, " "), nil
	case "volumes":
		return jsonOf(c.Volumes), nil
	}
	text, ok := c.Files[what]
	if !ok {
		return "", fmt.Errorf("container %s writes no file %s (it writes %v)", scope, what, slices.Sorted(maps.Keys(c.Files)))
	}
	return text, nil
}

// harnessPage reads docs/harness.md from the checkout.
func harnessPage(t *testing.T) (root, page string, rows []tableRow) {
	t.Helper()
	root = findCheckout()
	if root == "" {
		t.Fatal("the test runs outside a spatec checkout")
	}
	page = filepath.Join(root, "docs", "harness.md")
	rows = readHarnessTable(t, page)
	if len(rows) < 50 {
		t.Fatalf("%s has %d rows; the page sets every arm's settings side by side", page, len(rows))
	}
	return root, page, rows
}

// TestHarnessTable: every spatec value docs/harness.md names is where it
// says in the plans of the harness's host, so a setting changed without
// the page fails here.
func TestHarnessTable(t *testing.T) {
	root, page, rows := harnessPage(t)
	plans := map[string]schema.Plan{}
	for _, d := range planAll(t) {
		p := d.Plan
		if p.Env.Name == harnessEnv && p.Entrant.Variants[p.Variant].Default {
			plans[p.Entrant.Name] = p
		}
	}
	for _, arm := range sectionArms {
		if _, ok := plans[arm]; !ok {
			t.Fatalf("no default plan of %s on %s", arm, harnessEnv)
		}
	}
	for _, r := range rows {
		// The workload's and the infrastructure's rows read any plan.
		p := plans[r.arm]
		if r.arm == "" {
			p = plans["spate"]
		}
		for _, l := range r.spatec {
			text, err := spatecText(t, p, root, l.where)
			switch {
			case err != nil:
				t.Errorf("%s:%d (%s): %v", page, r.line, r.setting, err)
			case !strings.Contains(text, l.text):
				t.Errorf("%s:%d (%s): %s on %s: %s does not hold %q; the setting changed without the page",
					page, r.line, r.setting, p.Entrant.Name, harnessEnv, l.where, l.text)
			}
		}
	}
}

// TestHarnessTableHoldsTheHarness: with SPATEC_HARNESS set to a checkout
// of the harness, every harness value docs/harness.md names is in its
// file, so a harness that moved fails here.
func TestHarnessTableHoldsTheHarness(t *testing.T) {
	_, page, rows := harnessPage(t)
	harness := os.Getenv("SPATEC_HARNESS")
	if harness == "" {
		t.Skip("the harness's side needs a checkout of spate-etl/benchmark: SPATEC_HARNESS=/path/to/it go test ./cmd/spatec -run TestHarnessTable")
	}
	for _, r := range rows {
		for _, l := range r.harness {
			b, err := os.ReadFile(filepath.Join(harness, l.where))
			switch {
			case err != nil:
				t.Errorf("%s:%d (%s): the harness's %s: %v", page, r.line, r.setting, l.where, err)
			case !strings.Contains(string(b), l.text):
				t.Errorf("%s:%d (%s): the harness's %s does not hold %q; it changed since the page was written",
					page, r.line, r.setting, l.where, l.text)
			}
		}
	}
}
