package testenv

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// SmallTmpfs mounts a tmpfs of size bytes in a directory of the test's own
// and unmounts it when the test ends: a real file system that fills up, for
// tests of what happens on a full disk. Mounting needs root; without it the
// test fails under CI and skips elsewhere.
func SmallTmpfs(t testing.TB, size int64) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tmpfs")
	Require(t, "root (to mount a small tmpfs)", func() error {
		if err := os.Mkdir(dir, 0o755); err != nil {
			return err
		}
		return unix.Mount("tmpfs", dir, "tmpfs", 0, "size="+strconv.FormatInt(size, 10))
	})
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmounting the test tmpfs %s: %v", dir, err)
		}
	})
	return dir
}

// Fill writes into dir until its file system is full, and returns the
// bytes written.
func Fill(t testing.TB, dir string) int64 {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	block := make([]byte, 4096)
	var n int64
	for {
		w, err := f.Write(block)
		n += int64(w)
		if err != nil {
			return n
		}
	}
}
