package options

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the registries and their CUE from the systems")

// TestRegistryCUEIsTheJSONs renders each options directory's registries
// (*.json) as the CUE package the entrants import and asserts it is the
// committed registry.cue; -update rewrites it.
func TestRegistryCUEIsTheJSONs(t *testing.T) {
	jsons, err := filepath.Glob("*/*.json")
	if err != nil {
		t.Fatal(err)
	}
	byDir := map[string]map[string]Registry{}
	for _, j := range jsons {
		dir := filepath.Dir(j)
		if byDir[dir] == nil {
			byDir[dir] = map[string]Registry{}
		}
		if byDir[dir][filepath.Base(j)], err = Read(j); err != nil {
			t.Fatal(err)
		}
	}
	if len(byDir) == 0 {
		t.Fatal("no registries under options/")
	}
	for dir, files := range byDir {
		got, err := CUE(dir, files, LayoutOf(filepath.Base(dir)))
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		path := filepath.Join(dir, "registry.cue")
		if *update {
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (go test ./options -run TestRegistryCUE -update writes it)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is not what its registries give (go test ./options -run TestRegistryCUE -update rewrites it); first difference:\n%s", path, firstDiff(string(want), string(got)))
		}
	}
}

// TestRegistryJVMIsTheSystems reads the JDK's options again and asserts
// they are the committed ones. The version and source lines follow the
// JDK the test runs on (Debian updates it); the options must not move.
func TestRegistryJVMIsTheSystems(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	requireTool(t, "java")
	got, err := ExtractJVM(ctx, "..")
	if err != nil {
		t.Fatal(err)
	}
	compareRegistries(t, got, *update, func(r *Registry) { r.Source = "" })
}

// compareRegistries asserts each file of got equals the committed one
// (under the repository root, which is ..), after norm; with write, it
// rewrites them instead.
func compareRegistries(t *testing.T, got map[string][]byte, write bool, norm func(*Registry)) {
	t.Helper()
	for path, b := range got {
		full := filepath.Join("..", path)
		if write {
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(full, b, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := Read(full)
		if err != nil {
			t.Fatalf("%v (-update writes it)", err)
		}
		var now Registry
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "r.json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		if now, err = Read(filepath.Join(dir, "r.json")); err != nil {
			t.Fatal(err)
		}
		norm(&want)
		norm(&now)
		w, _ := Marshal(want)
		g, _ := Marshal(now)
		if !bytes.Equal(w, g) {
			t.Errorf("%s is not what the system gives now (-update rewrites it):\n%s", path, registryDiff(w, g))
		}
	}
}

// firstDiff shows the first line where two texts differ, with the line
// before it.
func firstDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < max(len(w), len(g)); i++ {
		var a, b string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if a != b {
			prev := ""
			if i > 0 && i-1 < len(w) {
				prev = "  " + w[i-1] + "\n"
			}
			return prev + "- " + a + "\n+ " + b
		}
	}
	return "(equal)"
}
