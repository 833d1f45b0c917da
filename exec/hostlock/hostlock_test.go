package hostlock

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func holder(session string) Holder {
	return Holder{Session: session, PID: os.Getpid(), Started: time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC), Env: "local"}
}

func TestOneHolderAtATime(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run", "spatec.lock")
	first, prev, err := Acquire(path, holder("s1"))
	if err != nil || prev != nil {
		t.Fatalf("first Acquire: %v, previous %v", err, prev)
	}
	// flock locks belong to an open file, so a second open in this same
	// process is refused as another process would be.
	_, _, err = Acquire(path, holder("s2"))
	var held *HeldError
	if !errors.As(err, &held) || held.Holder.Session != "s1" ||
		!strings.Contains(err.Error(), "another measurement holds this host: session s1 (environment local, pid") {
		t.Fatalf("second Acquire: %v; want a HeldError naming s1", err)
	}
	if err := first.Release(); err != nil {
		t.Fatal(err)
	}
	second, prev, err := Acquire(path, holder("s2"))
	if err != nil || prev != nil {
		t.Fatalf("Acquire after a release: %v, previous %v; a released lock names no one", err, prev)
	}
	second.Release()
}

// TestDeadHoldersLockIsTakenOver: a holder that dies keeps its name in the
// file, but the kernel drops its lock; the next Acquire takes it and says
// whose it was.
func TestDeadHoldersLockIsTakenOver(t *testing.T) {
	path := filepath.Join(t.TempDir(), "spatec.lock")
	dead, _, err := Acquire(path, holder("gone"))
	if err != nil {
		t.Fatal(err)
	}
	dead.f.Close() // died holding it: no Release
	l, prev, err := Acquire(path, holder("next"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	if prev == nil || prev.Session != "gone" {
		t.Fatalf("previous holder %+v; want the dead session", prev)
	}
	b, _ := os.ReadFile(path)
	if !strings.Contains(string(b), `"session":"next"`) {
		t.Errorf("the lock file says %s; want the new holder", b)
	}
}
