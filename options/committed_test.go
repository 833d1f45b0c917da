package options

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"testing"
)

// rootOfRepo is the repository's root: the parent of this package.
func rootOfRepo(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Dir(wd)
}

// compareCommitted fails for each committed registry file that is not what
// the extractor gave, showing the first keys that differ; with update it
// writes them instead. how is the command that rewrites them.
func compareCommitted(t *testing.T, got map[string][]byte, update bool, how string) {
	t.Helper()
	root := rootOfRepo(t)
	paths := make([]string, 0, len(got))
	for p := range got {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		file := filepath.Join(root, filepath.FromSlash(p))
		if update {
			if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(file, got[p], 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(file)
		if err != nil {
			t.Errorf("%s: %v (write it with %s)", p, err, how)
			continue
		}
		if !bytes.Equal(want, got[p]) {
			t.Errorf("%s is not what the system gives (rewrite it with %s):\n%s", p, how, registryDiff(want, got[p]))
		}
	}
}
