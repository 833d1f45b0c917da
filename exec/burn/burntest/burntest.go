// Package burntest builds the burn program and its FROM scratch image for
// tests that need a workload of known behaviour on a real Docker engine.
//
// The binary is built with the go command of the running test (go test puts
// its GOROOT/bin first on PATH), statically, so the image needs nothing but
// the kernel and no registry.
package burntest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"spatec.dev/spatec/exec/engine"
	"spatec.dev/spatec/exec/engine/docker"
	"spatec.dev/spatec/internal/testregistry"
)

const (
	// Tag names the burn image on the engine.
	Tag = "spatec-burn:test"
	// Entrypoint is the burn binary's path inside the image.
	Entrypoint = "/burn"
	// Version is what `burn -version` prints after "burn ".
	Version = "1.0.0"
	// SHA256Label is the image label carrying the binary's SHA-256.
	SHA256Label = "dev.spatec.burn.sha256"

	pkg          = "spatec.dev/spatec/exec/burn"
	buildTimeout = 3 * time.Minute
)

// image remembers the one build of this test binary's run: every test of a
// package shares the image, and building it again would only cost time.
var image struct {
	once sync.Once
	err  error
}

// Image builds the burn image Tag on e, once per test binary run, and
// returns Tag. It fails the test when the build fails.
func Image(t testing.TB, e *docker.Engine) string {
	t.Helper()
	image.once.Do(func() { image.err = buildImage(e) })
	if image.err != nil {
		t.Fatalf("building the burn image %s: %v", Tag, image.err)
	}
	return Tag
}

// Binary builds the burn binary into a test temporary directory and returns
// its path.
func Binary(t testing.TB) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "burn")
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	if err := goBuild(ctx, out); err != nil {
		t.Fatal(err)
	}
	return out
}

func buildImage(e *docker.Engine) error {
	dir, err := os.MkdirTemp("", "spatec-burn-")
	if err != nil {
		return fmt.Errorf("creating a build directory: %w", err)
	}
	// Only the image is kept; the binary's directory goes at once.
	defer os.RemoveAll(dir)

	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	out := filepath.Join(dir, "burn")
	if err := goBuild(ctx, out); err != nil {
		return err
	}
	bin, err := os.ReadFile(out)
	if err != nil {
		return fmt.Errorf("reading the burn binary: %w", err)
	}
	sum := sha256.Sum256(bin)
	_, err = e.BuildScratchImage(ctx, engine.ScratchImage{
		Tag:        Tag,
		Files:      map[string][]byte{Entrypoint: bin},
		Entrypoint: []string{Entrypoint},
		Labels:     map[string]string{SHA256Label: hex.EncodeToString(sum[:])},
	})
	return err
}

// goBuild builds burn statically for Linux on this machine's architecture,
// which is the engine's: the tests talk to a local engine.
func goBuild(ctx context.Context, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", out, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
	if msg, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building %s with CGO_ENABLED=0: %w\n%s", pkg, err, msg)
	}
	return nil
}

// Publish pushes the burn program, built for this test, to reg as the image
// spatec/burn:1.0, and returns the tag's full reference and the manifest
// digest the registry reports for it.
func Publish(t testing.TB, reg *testregistry.Registry) (tag, digest string) {
	t.Helper()
	bin, err := os.ReadFile(Binary(t))
	if err != nil {
		t.Fatal(err)
	}
	digest = reg.Push(t, "spatec/burn", "1.0", map[string][]byte{Entrypoint: bin}, []string{Entrypoint})
	return reg.Host + "/spatec/burn:1.0", digest
}
