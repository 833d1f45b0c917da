package options

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"spatec.dev/spatec/internal/testenv"
)

var updateFlink = flag.Bool("update-flink", false, "rewrite options/flink/registry.json from Flink's own code")

// flinkRepoRoot is the checkout this package is in.
func flinkRepoRoot(t *testing.T) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("no source path for this test")
	}
	return filepath.Dir(filepath.Dir(file))
}

// TestRegistryFlinkIsTheSystems: options/flink/registry.json is what
// Flink 2.2.1's distribution, as the Flink arm's image installs it,
// declares. Needs java, javac, mvn and bash (and, the first time, the wheel
// from PyPI, which the image builds otherwise leave in the download cache).
func TestRegistryFlinkIsTheSystems(t *testing.T) {
	testenv.Require(t, "a JDK and Maven (java, javac, mvn, bash)", func() error {
		for _, tool := range []string{"java", "javac", "mvn", "bash"} {
			if _, err := osexec.LookPath(tool); err != nil {
				return err
			}
		}
		return nil
	})
	root := flinkRepoRoot(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	got, err := ExtractFlink(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	for rel, b := range got {
		file := filepath.Join(root, filepath.FromSlash(rel))
		if *updateFlink {
			if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(file, b, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		have, err := os.ReadFile(file)
		if err != nil {
			t.Fatalf("%v (regenerate: go test ./options -run TestRegistryFlinkIsTheSystems -update-flink)", err)
		}
		if !bytes.Equal(have, b) {
			t.Errorf("%s is not what Flink declares (regenerate: go test ./options -run TestRegistryFlinkIsTheSystems -update-flink):\n%s", rel, flinkRegistryDiff(t, have, b))
		}
	}
}

// TestFlinkWheelIsTheArms: the wheel the registry is read from is the one
// the Flink arm's image installs.
func TestFlinkWheelIsTheArms(t *testing.T) {
	cue, err := os.ReadFile(filepath.Join(flinkRepoRoot(t), "entrants", "flink", "flink.cue"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`url:    "` + flinkWheelURL + `"`, `sha256: "` + flinkWheelSHA256 + `"`, `pin:       "` + flinkVersion + `"`} {
		if !strings.Contains(string(cue), want) {
			t.Errorf("entrants/flink/flink.cue has no %s: the arm's image installs another Flink than the registry is read from", want)
		}
	}
}

// flinkRegistryDiff lists the first options that differ between two
// registries, by key: what the file has (-) and what Flink declares (+).
func flinkRegistryDiff(t *testing.T, have, want []byte) string {
	t.Helper()
	var a, b Registry
	if err := json.Unmarshal(have, &a); err != nil {
		return fmt.Sprintf("the committed file does not parse: %v", err)
	}
	if err := json.Unmarshal(want, &b); err != nil {
		t.Fatal(err)
	}
	var out []string
	if a.System != b.System || a.Version != b.Version || a.Source != b.Source {
		out = append(out, fmt.Sprintf("- %s %s: %s\n+ %s %s: %s", a.System, a.Version, a.Source, b.System, b.Version, b.Source))
	}
	byKey := func(r Registry) map[string]string {
		m := make(map[string]string, len(r.Options))
		for _, o := range r.Options {
			j, _ := json.Marshal(o)
			m[o.Key] = string(j)
		}
		return m
	}
	am, bm := byKey(a), byKey(b)
	keys := make(map[string]bool)
	for k := range am {
		keys[k] = true
	}
	for k := range bm {
		keys[k] = true
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	slices.Sort(sorted)
	n := 0
	for _, k := range sorted {
		if am[k] == bm[k] {
			continue
		}
		if n++; n > 10 {
			out = append(out, "…")
			break
		}
		if am[k] != "" {
			out = append(out, "- "+am[k])
		}
		if bm[k] != "" {
			out = append(out, "+ "+bm[k])
		}
	}
	if len(out) == 0 {
		out = append(out, "the same options, written otherwise")
	}
	return strings.Join(out, "\n")
}
