package compiler

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

// TestTreeBuildsAsOnePackage checks the fast path is taken on a sound tree,
// and that a syntax error falls back to building each package apart.
func TestTreeBuildsAsOnePackage(t *testing.T) {
	if tr := loadTree(t, os.DirFS("..")); !tr.plans.Exists() {
		t.Fatal("a sound tree must build as one package")
	}
	fsys := realTree(t)
	fsys[vectorFile] = &fstest.MapFile{Data: []byte("package vector\nentrant: {\n")}
	if tr := loadTree(t, fsys); tr.plans.Exists() {
		t.Fatal("a tree with a syntax error must be built apart")
	}
}

// TestTreeOnDisk loads a tree from a directory, as the CLI does in a
// checkout, and names files relative to it.
func TestTreeOnDisk(t *testing.T) {
	dir := t.TempDir()
	for name, f := range realTree(t) {
		data := f.Data
		if name == flinkFile {
			data = []byte(strings.Replace(string(data), "cpus:    env.envelope.cpus", "cpus:    30", 1))
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
	if len(problems) != 1 || problems[0].Pos != "tree/"+flinkFile+":67" || problems[0].Rule != "C3" {
		t.Fatalf("got %v, want one C3 problem at tree/%s:67", problems, flinkFile)
	}
	if p, problems := tr.Resolve("bench-96c", "vector", ""); p == nil || len(problems) > 0 {
		t.Fatalf("vector must plan from disk: %v", problems)
	}
}
