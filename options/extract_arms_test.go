package options

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// checkArmRegistry runs extract (which needs tool) on the repository and
// asserts that each file it gives is the committed one; with update set,
// it rewrites them instead. Outside CI a missing tool skips the test;
// under CI=true it fails it.
func checkArmRegistry(t *testing.T, tool string, update bool, flagName string, extract func(context.Context, string) (map[string][]byte, error)) {
	t.Helper()
	if _, err := exec.LookPath(tool); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the extractor needs %s: %v", tool, err)
		}
		t.Skipf("the extractor needs %s: %v", tool, err)
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	start := time.Now()
	files, err := extract(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("extracted in %v", time.Since(start).Round(time.Millisecond))
	for _, path := range slices.Sorted(maps.Keys(files)) {
		got, file := files[path], filepath.Join(root, path)
		if update {
			if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(file, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(file)
		if errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s is not committed; write it with -%s", path, flagName)
			continue
		} else if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(want, got) {
			t.Errorf("%s is not what the arm declares; rewrite it with -%s:\n%s", path, flagName, armRegistryDiff(want, got))
		}
	}
}

// armRegistryDiff says how two registry files differ: the header fields,
// then the first options that differ, each as committed (-) and as
// extracted (+).
func armRegistryDiff(want, got []byte) string {
	var w, g Registry
	if json.Unmarshal(want, &w) != nil || json.Unmarshal(got, &g) != nil {
		return fmt.Sprintf("- %s\n+ %s", want, got)
	}
	var out strings.Builder
	for _, f := range [][3]string{{"system", w.System, g.System}, {"version", w.Version, g.Version}, {"source", w.Source, g.Source}} {
		if f[1] != f[2] {
			fmt.Fprintf(&out, "- %s: %q\n+ %s: %q\n", f[0], f[1], f[0], f[2])
		}
	}
	byKey := func(r Registry) map[string]string {
		m := map[string]string{}
		for _, o := range r.Options {
			b, _ := json.Marshal(o)
			m[o.Key] = string(b)
		}
		return m
	}
	wm, gm := byKey(w), byKey(g)
	var keys []string
	for k := range wm {
		keys = append(keys, k)
	}
	for k := range gm {
		if _, ok := wm[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	shown := 0
	for _, k := range keys {
		if wm[k] == gm[k] {
			continue
		}
		if shown++; shown > 10 {
			out.WriteString("…\n")
			break
		}
		if wm[k] != "" {
			fmt.Fprintf(&out, "- %s\n", wm[k])
		}
		if gm[k] != "" {
			fmt.Fprintf(&out, "+ %s\n", gm[k])
		}
	}
	if out.Len() == 0 {
		return "(the same options; the bytes differ: indentation, order or the final newline)"
	}
	return out.String()
}
