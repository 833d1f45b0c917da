package compiler

import (
	"os"
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
