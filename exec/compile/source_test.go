package compile

import (
	"os"
	"path/filepath"
	"testing"

	"spatec.dev/spatec/schema"
)

// A Go program's source digest follows the packages it imports from the
// module, and nothing else in the module.
func TestSourceFollowsWhatTheProgramImports(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, content string) {
		t.Helper()
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.test/m\n\ngo 1.22\n")
	write("go.sum", "")
	write("cmd/arm/main.go", "package main\n\nimport \"example.test/m/lib\"\n\nfunc main() { lib.Run() }\n")
	write("lib/lib.go", "package lib\n\nfunc Run() {}\n")
	write("other/other.go", "package other\n")
	tree := &Tree{Dir: dir}
	build := &schema.Build{Program: "./cmd/arm"}
	digest := func() string {
		t.Helper()
		d, err := tree.Source(build)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	first := digest()
	write("other/other.go", "package other\n\n// not imported by the arm\n")
	if d := digest(); d != first {
		t.Errorf("a package the program does not import changed its digest: %s → %s", first, d)
	}
	write("lib/lib.go", "package lib\n\nfunc Run() { println() }\n")
	if d := digest(); d == first {
		t.Errorf("an imported package changed and the digest did not: %s", d)
	}
	if d, err := tree.Source(&schema.Build{Layered: &schema.Layered{}}); err != nil || d != "" {
		t.Errorf("a layered build, spelt out in the plan: source %q, %v; want none", d, err)
	}
}
