package testenv

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// ChromiumPath is Debian's chromium, which `.ci/services` installs.
const ChromiumPath = "/usr/bin/chromium"

// RequireChromium fails under CI=true, and skips elsewhere, when headless
// Chromium is not installed; SPATEC_BROWSER_TESTS=0 skips the browser
// tests on purpose.
func RequireChromium(t *testing.T) {
	t.Helper()
	if os.Getenv("SPATEC_BROWSER_TESTS") == "0" {
		t.Skip("browser tests disabled by SPATEC_BROWSER_TESTS=0")
	}
	Require(t, "chromium ("+ChromiumPath+", Debian package chromium)", func() error {
		st, err := os.Stat(ChromiumPath)
		if err != nil {
			return err
		}
		if st.Mode()&0o111 == 0 {
			return errors.New(ChromiumPath + " is not executable")
		}
		return nil
	})
}

// Chromium runs headless Chromium on args and returns its stdout and the
// console lines of its log: with --enable-logging=stderr every console
// message (log, error, uncaught exception, CSP violation) is logged as a
// CONSOLE line. It reaches nothing on the network: background networking
// and every update channel are off.
func Chromium(t *testing.T, args ...string) (stdout string, console []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	base := []string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir(), "--enable-logging=stderr", "--v=0",
	}
	cmd := exec.CommandContext(ctx, ChromiumPath, append(base, args...)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, errOut.String())
	}
	for _, l := range strings.Split(errOut.String(), "\n") {
		if strings.Contains(l, ":CONSOLE") || strings.Contains(l, "Uncaught") {
			console = append(console, l)
		}
	}
	return out.String(), console
}

// Artifacts is where a test keeps what it renders (pages, screenshots):
// $SPATEC_TEST_ARTIFACTS when set, so CI can publish them, else a
// temporary directory.
func Artifacts(t *testing.T) string {
	dir := os.Getenv("SPATEC_TEST_ARTIFACTS")
	if dir == "" {
		return t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}
