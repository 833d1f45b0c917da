package options

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
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

// registryDiff shows the first options that differ between two registries,
// as -committed / +extracted lines.
func registryDiff(committed, extracted []byte) string {
	var a, b Registry
	if err := json.Unmarshal(committed, &a); err != nil {
		return fmt.Sprintf("the committed file is not a registry: %v", err)
	}
	if err := json.Unmarshal(extracted, &b); err != nil {
		return fmt.Sprintf("the extracted file is not a registry: %v", err)
	}
	var out []string
	line := func(sign string, v any) {
		j, _ := json.Marshal(v)
		out = append(out, sign+" "+string(j))
	}
	if a.System != b.System || a.Version != b.Version || a.Source != b.Source {
		line("-", Registry{System: a.System, Version: a.Version, Source: a.Source})
		line("+", Registry{System: b.System, Version: b.Version, Source: b.Source})
	}
	am, bm := map[string]Option{}, map[string]Option{}
	keys := map[string]bool{}
	for _, o := range a.Options {
		am[o.Key], keys[o.Key] = o, true
	}
	for _, o := range b.Options {
		bm[o.Key], keys[o.Key] = o, true
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	shown := 0
	for _, k := range sorted {
		ao, inA := am[k]
		bo, inB := bm[k]
		aj, _ := json.Marshal(ao)
		bj, _ := json.Marshal(bo)
		if inA == inB && bytes.Equal(aj, bj) {
			continue
		}
		if shown == 10 {
			out = append(out, "…and more")
			break
		}
		shown++
		if inA {
			line("-", ao)
		}
		if inB {
			line("+", bo)
		}
	}
	if len(out) == 0 {
		out = append(out, "(the same options; the bytes differ in layout)")
	}
	return strings.Join(out, "\n")
}
