package testenv

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Cue finds the official cue command: on PATH, or where `go install` puts
// it (`bash .ci/test` installs it).
func Cue(t testing.TB) string {
	t.Helper()
	var path string
	Require(t, "the cue command (GOFLAGS= go install cuelang.org/go/cmd/cue@v0.17.1)", func() error {
		if p, err := exec.LookPath("cue"); err == nil {
			path = p
			return nil
		}
		out, err := exec.Command("go", "env", "GOPATH").Output()
		if err != nil {
			return err
		}
		p := filepath.Join(strings.TrimSpace(string(out)), "bin", "cue")
		if _, err := os.Stat(p); err != nil {
			return errors.New("not on PATH nor in $(go env GOPATH)/bin")
		}
		path = p
		return nil
	})
	return path
}
