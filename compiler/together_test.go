package compiler

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

// TestTreeBuildsAsOnePackage checks the fast path is taken on a sound
// tree and around a package with a syntax error, and that a tree whose
// plans cannot even be enumerated is built apart.
func TestTreeBuildsAsOnePackage(t *testing.T) {
	if tr := loadTree(t, os.DirFS("..")); !tr.plans.Exists() {
		t.Fatal("a sound tree must build as one package")
	}
	fsys := realTree(t)
	fsys[vectorFile] = &fstest.MapFile{Data: []byte("package vector\nentrant: {\n")}
	if tr := loadTree(t, fsys); !tr.plans.Exists() || len(tr.Broken()) == 0 {
		t.Fatal("a syntax error must be reported, and the other packages still built as one")
	}
	fsys = realTree(t)
	src := string(fsys[vectorFile].Data)
	fsys[vectorFile] = &fstest.MapFile{Data: []byte(strings.Replace(src, `supports: ["bench-96c", "retired-32c", "c8g-8xl-ec2-docker"]`, `supports: "bench-96c"`, 1))}
	tr := loadTree(t, fsys)
	if tr.plans.Exists() {
		t.Fatal("a tree whose plans cannot be enumerated must be built apart")
	}
	if _, problems := tr.Resolve("bench-96c", "spate", ""); len(problems) > 0 {
		t.Errorf("spate must still plan: %v", problems)
	}
}

// TestTreeLayout checks what the loader refuses, each with the file, what
// was found and the fix.
func TestTreeLayout(t *testing.T) {
	cases := []struct {
		name, file, content, want string
	}{
		{"second package", "entrants/vector/extra.cue", "package other\n", "entrants/vector/vector.cue is package vector, but entrants/vector/extra.cue is package other; a directory holds one package"},
		{"no package clause", "entrants/vector/extra.cue", "x: 1\n", "entrants/vector/extra.cue has no package clause"},
		{"build attribute", "entrants/vector/extra.cue", "@if(fast)\npackage vector\n", "@if(fast): build attributes select files by tag"},
		{"foreign import", "entrants/vector/extra.cue", "package vector\nimport \"example.com/other\"\nx: other.y\n", `import "example.com/other": a spatec tree imports only its own packages`},
		{"wrong qualifier", "entrants/vector/extra.cue", "package vector\nimport \"spatec.dev/spatec/schema:nope\"\nx: nope.y\n", `schema holds package schema; import it as "spatec.dev/spatec/schema"`},
		{"syntax error", "entrants/vector/extra.cue", "package vector\nx: {\n", "entrants/vector/extra.cue:2: C15: entrants/vector: expected '}', found 'EOF'"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fsys := realTree(t)
			fsys[tc.file] = &fstest.MapFile{Data: []byte(tc.content)}
			tr := loadTree(t, fsys)
			var got []string
			for _, p := range tr.Broken() {
				got = append(got, p.String())
			}
			if !strings.Contains(strings.Join(got, "\n"), tc.want) {
				t.Fatalf("broken packages:\n%s\nwant a problem containing %q", strings.Join(got, "\n"), tc.want)
			}
			if _, problems := tr.Resolve("bench-96c", "spate", ""); len(problems) > 0 {
				t.Errorf("spate must still plan: %v", problems)
			}
		})
	}
	fsys := realTree(t)
	fsys["cue.mod/module.cue"] = &fstest.MapFile{Data: []byte("module: \"spatec.dev/spatec@v0\"\nlanguage: version: \"v0.17.0\"\ndeps: \"example.com/x@v0\": v: \"v0.1.0\"\n")}
	if _, err := Load(Options{FS: fsys}); err == nil || !strings.Contains(err.Error(), "depends on other modules") {
		t.Errorf("a module with dependencies: got %v", err)
	}
}

// TestTreeOnDisk loads a tree from a directory, as the CLI does in a
// checkout, and names files relative to it.
func TestTreeOnDisk(t *testing.T) {
	dir := t.TempDir()
	for name, f := range realTree(t) {
		data := f.Data
		if name == flinkFile {
			data = []byte(strings.Replace(string(data), "cpus:    envelope.cpus", "cpus:    30", 1))
		}
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tr, err := Load(Options{Dir: dir, Display: "tree/"})
	if err != nil {
		t.Fatal(err)
	}
	if !tr.plans.Exists() {
		t.Fatal("a tree on disk must build as one package")
	}
	_, problems := tr.Resolve("bench-96c", "flink", "")
	src, err := os.ReadFile(filepath.Join(dir, flinkFile))
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("tree/%s:%d", flinkFile, lineOf(t, string(src), "cpus:    30"))
	if len(problems) != 1 || problems[0].Pos != want || problems[0].Rule != "C3" {
		t.Fatalf("got %v, want one C3 problem at %s", problems, want)
	}
	if p, problems := tr.Resolve("bench-96c", "vector", ""); p == nil || len(problems) > 0 {
		t.Fatalf("vector must plan from disk: %v", problems)
	}
}
