// Package testenv decides what a test does when a real component it needs
// (the Docker engine, ClickHouse, Chromium) is not there.
//
// Under CI=true a missing component is a failure: CI installs and starts every
// service through .ci/services, so its absence there is a broken setup, never
// a reason to skip. Elsewhere the test skips and says how to start it.
package testenv

import (
	"os"
	"testing"
)

// InCI reports whether the tests run under CI, where nothing may skip.
func InCI() bool { return os.Getenv("CI") == "true" }

// Require fails (under CI) or skips (elsewhere) the test when probe reports
// that the component is unavailable. what names the component.
func Require(t testing.TB, what string, probe func() error) {
	t.Helper()
	err := probe()
	if err == nil {
		return
	}
	if InCI() {
		t.Fatalf("%s is required under CI=true and is not available: %v", what, err)
	}
	t.Skipf("%s not available (%v); start it with: bash .ci/services", what, err)
}
