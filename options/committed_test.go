package options

import (
	"fmt"
	osexec "os/exec"

	"bytes"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"spatec.dev/spatec/internal/testenv"
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

// registryDiff lists the first options whose lines differ between two
// registries, as "- committed" and "+ extracted".
func registryDiff(committed, extracted []byte) string {
	flat := func(b []byte) map[string]string {
		var r Registry
		m := map[string]string{}
		if err := json.Unmarshal(b, &r); err != nil {
			m["(unreadable)"] = err.Error()
			return m
		}
		m["(source)"] = r.Source
		m["(version)"] = r.Version
		var walk func(prefix string, opts []Option)
		walk = func(prefix string, opts []Option) {
			for _, o := range opts {
				fields := o.Fields
				o.Fields = nil
				line, _ := json.Marshal(o)
				m[prefix+o.Key] = string(line)
				walk(prefix+o.Key+".", fields)
			}
		}
		walk("", r.Options)
		return m
	}
	a, b := flat(committed), flat(extracted)
	keys := slices.Collect(maps.Keys(a))
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var out strings.Builder
	n := 0
	for _, k := range keys {
		if a[k] == b[k] {
			continue
		}
		if n++; n > 10 {
			out.WriteString("…\n")
			break
		}
		if v, ok := a[k]; ok {
			fmt.Fprintf(&out, "- %s: %s\n", k, v)
		}
		if v, ok := b[k]; ok {
			fmt.Fprintf(&out, "+ %s: %s\n", k, v)
		}
	}
	if n == 0 {
		out.WriteString("(the options agree; the bytes differ in layout)\n")
	}
	return out.String()
}

// requireTool fails under CI=true, and skips elsewhere, when a command the
// test runs is not on the PATH.
func requireTool(t *testing.T, name string) {
	t.Helper()
	testenv.Require(t, name, func() error {
		_, err := osexec.LookPath(name)
		return err
	})
}
