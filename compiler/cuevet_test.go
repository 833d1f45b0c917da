package compiler

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"spatec.dev/spatec/internal/testenv"
)

// cueTool is the official cue command.
func cueTool(t *testing.T) string { return testenv.Cue(t) }

var checkRule = regexp.MustCompile(`^C[0-9]+$`)

// typeErrors are the broken inputs the schema's types refuse (a conflict,
// a closed struct, a constraint) rather than a contract check: cue vet
// names the field and the conflict, not a rule id.
var typeErrors = map[string]bool{
	// The value breaks the knob's own disjunction (*262_144 | int), which
	// CUE reports, before the schema's guard.
	"C15 knob of the wrong type set by a variant": true,
	// The envelope's cpus are derived: an error disjunct there would
	// blame a hand-written value for every error they are derived from.
	"C1 envelope written by hand": true,
	// Fields of nested blocks with no error disjunct of their own.
	"default: a footprint's step out of bounds":     true,
	"default: a reserve below zero":                 true,
	"default: an architecture no platform names":    true,
	"default: a drain timeout written as a string":  true,
	"default: a key given twice beside its default": true,
}

// TestCueVetAgrees: every broken input spatec vet reports is refused by
// the official tool too (`cue vet -c ./...`, where each entrant
// package resolves its own plans), and a contract check's rule id is in
// what it prints, so an author who only runs `cue vet` is told the same
// rule.
func TestCueVetAgrees(t *testing.T) {
	cue := cueTool(t)
	base := realTree(t)
	for _, c := range slices.Concat(mustFails, optionMustFails) {
		if c.spatecOnly != "" {
			continue // only spatec vet sees it
		}
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			files := map[string][]byte{}
			for name, f := range base {
				files[name] = f.Data
			}
			edited := strings.Replace(string(files[c.file]), c.old, c.new, 1)
			if c.old2 != "" {
				edited = strings.Replace(edited, c.old2, c.new2, 1)
			}
			files[c.file] = []byte(edited)
			if e := c.cueEdit; e[0] != "" {
				if !strings.Contains(string(files[e[0]]), e[1]) {
					t.Fatalf("fixture: %q not in %s", e[1], e[0])
				}
				files[e[0]] = []byte(strings.Replace(string(files[e[0]]), e[1], e[2], 1))
				if !strings.Contains(string(files[e[0]]), "retired32c \"") {
					files[e[0]] = []byte(strings.Replace(string(files[e[0]]), "\nimport (\n", "\nimport (\n\tretired32c \"spatec.dev/spatec/envs/retired-32c:retired32c\"\n", 1))
				}
			}
			writeTree(t, dir, files)
			cmd := exec.Command(cue, "vet", "-c", "./...")
			cmd.Dir = dir
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("cue vet -c ./... accepts what spatec vet refuses (%s: %s)", c.rule, c.message)
			}
			named := strings.Contains(string(out), c.rule+": ")
			if checkRule.MatchString(c.rule) && !typeErrors[c.name] && !named {
				t.Errorf("cue vet refuses it without naming %s:\n%s", c.rule, out)
			}
			if typeErrors[c.name] && named {
				t.Errorf("cue vet names %s now: drop the case from typeErrors", c.rule)
			}
		})
	}
}

// TestCueVetSeesANewEntrant: a new entrant package, a copy of vector with
// its parallelism broken, is refused by the official tool with nothing
// edited anywhere else, and the committed tree passes.
func TestCueVetSeesANewEntrant(t *testing.T) {
	cue := cueTool(t)
	dir := t.TempDir()
	files := map[string][]byte{}
	for name, f := range realTree(t) {
		files[name] = f.Data
	}
	vet := func() (string, error) {
		cmd := exec.Command(cue, "vet", "-c", "./...")
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	writeTree(t, dir, files)
	if out, err := vet(); err != nil {
		t.Fatalf("the committed tree: %v\n%s", err, out)
	}
	for _, f := range []string{"vector.cue", "plans.cue"} {
		src := strings.Replace(string(files["entrants/vector/"+f]), "package vector", "package myarm", 1)
		src = strings.Replace(src, `name:        "vector"`, `name:        "myarm"`, 1)
		src = strings.Replace(src, "value:       env.partitions\n", "value:       env.partitions + 1\n", 1)
		files["entrants/myarm/"+f] = []byte(src)
	}
	writeTree(t, dir, files)
	out, err := vet()
	if err == nil || !strings.Contains(out, "C10: myarm: parallelism knob sources is 33; bench-96c has 32 partitions") {
		t.Fatalf("cue vet -c ./... on a new entrant with its parallelism broken: %v\n%s", err, out)
	}
}

// writeTree writes files (path → content) under dir.
func writeTree(t *testing.T, dir string, files map[string][]byte) {
	t.Helper()
	for name, data := range files {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestEnvironmentCheckedAlone: an environment no entrant supports yet is
// still checked, by both tools, at its own line: here one whose envelope
// overflows its host's memory, a copy of bench-96c under another name.
func TestEnvironmentCheckedAlone(t *testing.T) {
	cue := cueTool(t)
	fsys := realTree(t)
	src := strings.Replace(string(fsys[benchFile].Data), "package bench96c", "package spare96c", 1)
	src = strings.Replace(src, `name:        "bench-96c"`, `name:        "spare-96c"`, 1)
	src = strings.Replace(src, "envelope: memory: 96 * GiB", "envelope: memory: 190 * GiB", 1)
	if !strings.Contains(src, "spare-96c") || !strings.Contains(src, "190 * GiB") {
		t.Fatal("fixture: bench-96c's name or envelope line changed")
	}
	const spare = "envs/spare-96c/env.cue"
	fsys[spare] = &fstest.MapFile{Data: []byte(src)}
	want := fmt.Sprintf("%s:%d: C4: spare-96c: infra 40 GiB + envelope 190 GiB + reserve 0 GiB = 230 GiB exceeds the host's 192 GiB (memory) before any entrant adds to it; lower envelope.memory to at most 150 GiB",
		spare, lineOf(t, src, "envelope: memory: 190 * GiB"))
	if ps := loadTree(t, fsys).Broken(); len(ps) != 1 || !strings.HasPrefix(ps[0].String(), want) {
		t.Fatalf("spatec vet: want one problem starting %q; got:\n%s", want, joinProblems(ps))
	}

	dir := t.TempDir()
	files := map[string][]byte{}
	for name, f := range fsys {
		files[name] = f.Data
	}
	writeTree(t, dir, files)
	cmd := exec.Command(cue, "vet", "-c", "./envs/spare-96c")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "C4: spare-96c: infra 40 GiB + envelope 190 GiB") {
		t.Fatalf("cue vet -c ./envs/spare-96c on an environment that overflows its host: %v\n%s", err, out)
	}
}
