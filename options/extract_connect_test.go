package options

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"spatec.dev/spatec/internal/testenv"
)

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
	if *update {
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
			t.Errorf("%s/%s is committed, but Connect's definitions give no such registry (rerun with -update)", connectDir, filepath.Base(f))
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
				t.Fatalf("%s is not committed (rerun with -update): %v", rel, err)
			}
			if os.Getenv(ConnectClickHouseZipEnv) == "" && bytes.Contains(want, []byte(".zip (sha256:")) {
				t.Skipf("%s holds ClickHouse's connector's keys, read from its release zip: set %s to regenerate it", rel, ConnectClickHouseZipEnv)
			}
			if !bytes.Equal(got[rel], want) {
				t.Errorf("%s is not what Connect's definitions give (rerun with -update):\n%s", rel, registryDiff(want, got[rel]))
			}
		})
	}
}
