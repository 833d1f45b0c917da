package options

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"spatec.dev/spatec/internal/testenv"
)

var updateConnect = flag.Bool("update-connect", false, "rewrite options/connect/*.json from Connect's own definitions")

// TestRegistryConnectIsTheSystems regenerates Kafka Connect's registries
// from the runtime's ConfigDefs and asserts that the committed files are
// what they give, no more and no fewer. connector.json, when committed with
// ClickHouse's connector's keys merged in, can be regenerated only from its
// release zip (GitHub, which CI does not reach): without
// SPATEC_CLICKHOUSE_CONNECT_ZIP that one file is skipped, under CI too.
func TestRegistryConnectIsTheSystems(t *testing.T) {
	for _, tool := range []string{"java", "javac", "mvn"} {
		testenv.Require(t, tool+" (builds and runs entrants/kafka-connect/check, which prints Connect's registries)", func() error {
			_, err := exec.LookPath(tool)
			return err
		})
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	got, err := ExtractConnect(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, filepath.FromSlash(connectDir))
	committed, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if *updateConnect {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range committed {
			if _, ok := got[connectDir+"/"+filepath.Base(f)]; !ok {
				if err := os.Remove(f); err != nil {
					t.Fatal(err)
				}
			}
		}
		for rel, text := range got {
			if err := os.WriteFile(filepath.Join(root, filepath.FromSlash(rel)), text, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	for _, f := range committed {
		if _, ok := got[connectDir+"/"+filepath.Base(f)]; !ok {
			t.Errorf("%s/%s is committed, but Connect's definitions give no such registry (rerun with -update-connect)", connectDir, filepath.Base(f))
		}
	}
	for _, rel := range slices.Sorted(func(yield func(string) bool) {
		for k := range got {
			if !yield(k) {
				return
			}
		}
	}) {
		t.Run(path.Base(rel), func(t *testing.T) {
			want, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
			if err != nil {
				t.Fatalf("%s is not committed (rerun with -update-connect): %v", rel, err)
			}
			if os.Getenv(ConnectClickHouseZipEnv) == "" && bytes.Contains(want, []byte(".zip (sha256:")) {
				t.Skipf("%s holds ClickHouse's connector's keys, read from its release zip: set %s to regenerate it", rel, ConnectClickHouseZipEnv)
			}
			if !bytes.Equal(got[rel], want) {
				t.Errorf("%s is not what Connect's definitions give (rerun with -update-connect):\n%s", rel, connectDiff(want, got[rel]))
			}
		})
	}
}

// connectDiff names the first options that differ between two registries,
// committed (-) and regenerated (+).
func connectDiff(committed, regenerated []byte) string {
	var a, b Registry
	if err := json.Unmarshal(committed, &a); err != nil {
		return "the committed file is not a registry: " + err.Error()
	}
	if err := json.Unmarshal(regenerated, &b); err != nil {
		return "the regenerated file is not a registry: " + err.Error()
	}
	var lines []string
	for _, f := range []struct{ name, a, b string }{{"system", a.System, b.System}, {"version", a.Version, b.Version}, {"source", a.Source, b.Source}} {
		if f.a != f.b {
			lines = append(lines, fmt.Sprintf("- %s: %s", f.name, f.a), fmt.Sprintf("+ %s: %s", f.name, f.b))
		}
	}
	byKey := func(opts []Option) map[string]string {
		m := make(map[string]string, len(opts))
		for _, o := range opts {
			text, _ := json.Marshal(o)
			m[o.Key] = string(text)
		}
		return m
	}
	ma, mb := byKey(a.Options), byKey(b.Options)
	var keys []string
	for k := range ma {
		keys = append(keys, k)
	}
	for k := range mb {
		if _, ok := ma[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	shown := 0
	for _, k := range keys {
		if ma[k] == mb[k] {
			continue
		}
		if shown++; shown > 10 {
			lines = append(lines, "  …")
			break
		}
		if ma[k] != "" {
			lines = append(lines, "- "+ma[k])
		}
		if mb[k] != "" {
			lines = append(lines, "+ "+mb[k])
		}
	}
	if len(lines) == 0 {
		return "  (the same options; the files differ in layout)"
	}
	return strings.Join(lines, "\n")
}
