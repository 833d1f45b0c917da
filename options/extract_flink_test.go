package options

import (
	"context"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"spatec.dev/spatec/internal/testenv"
)

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
	root := rootOfRepo(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	got, err := ExtractFlink(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	compareCommitted(t, got, *update, "go test ./options -run TestRegistryFlinkIsTheSystems -update")
}

// TestFlinkWheelIsTheArms: the wheel the registry is read from is the one
// the Flink arm's image installs.
func TestFlinkWheelIsTheArms(t *testing.T) {
	cue, err := os.ReadFile(filepath.Join(rootOfRepo(t), "entrants", "flink", "flink.cue"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`url:    "` + flinkWheelURL + `"`, `sha256: "` + flinkWheelSHA256 + `"`, `pin:       "` + flinkVersion + `"`} {
		if !strings.Contains(string(cue), want) {
			t.Errorf("entrants/flink/flink.cue has no %s: the arm's image installs another Flink than the registry is read from", want)
		}
	}
}
