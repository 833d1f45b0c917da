// Package cgroup reads a running container's cgroup: it finds the group,
// reads the caps the kernel actually enforces and compares them with the
// plan (contract C6), checks the host's swap (C5), and samples CPU and memory
// usage for the measurement window (C7, C8).
//
// Everything goes through an FS, whose roots can point at a fixture tree, so
// the same code is tested against files laid out as the kernel writes them
// (cgroup v1, hybrid and v2) and runs against /sys/fs/cgroup and /proc on the
// bench host.
//
// Groups are found with github.com/containerd/cgroups/v3's /proc/<pid>/cgroup
// parser, and that library's cgroup1/cgroup2 Stat is the reference the tests
// hold Stat to, on fixtures and on the real host. Stat itself reads the few
// files a sample needs through descriptors it keeps open: the library opens
// about ten files per group per reading, which at 10 Hz over four
// containers cost 3% of a core on the bench host, three times the sampler's
// budget (see heldFile). It also reads what the library does not expose:
// v1 total_shmem, and a window-scoped v2 memory.peak. Caps are read back as
// raw strings, which records keep as provenance.
package cgroup

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Default roots of the real host.
const (
	DefaultRoot = "/sys/fs/cgroup"
	DefaultProc = "/proc"
)

// FS names the roots cgroups are read from. The zero value reads the host.
type FS struct {
	// Root is where the cgroup hierarchies are mounted ("/sys/fs/cgroup").
	Root string
	// Proc is the procfs mount ("/proc"), read for <pid>/cgroup and swaps.
	Proc string
}

func (f FS) root() string {
	if f.Root == "" {
		return DefaultRoot
	}
	return f.Root
}

func (f FS) proc() string {
	if f.Proc == "" {
		return DefaultProc
	}
	return f.Proc
}

// Mode is the cgroup layout of a host.
type Mode int

// The layouts spatec understands. On a hybrid host the resource controllers
// (cpu, cpuacct, memory, cpuset) are bound to the v1 hierarchies, so limits
// and statistics are read there; the unified hierarchy holds no controllers.
const (
	ModeUnknown Mode = iota
	ModeV1
	ModeHybrid
	ModeV2
)

// String is the name used in records and messages: "v1", "hybrid", "v2".
func (m Mode) String() string {
	switch m {
	case ModeV1:
		return "v1"
	case ModeHybrid:
		return "hybrid"
	case ModeV2:
		return "v2"
	}
	return "unknown"
}

// Version is the cgroup version whose files hold the limits: 1 on v1 and
// hybrid hosts, 2 on unified hosts, 0 when unknown.
func (m Mode) Version() int {
	switch m {
	case ModeV1, ModeHybrid:
		return 1
	case ModeV2:
		return 2
	}
	return 0
}

// usesV1 reports whether limits and statistics live in v1 hierarchies.
func (m Mode) usesV1() bool { return m == ModeV1 || m == ModeHybrid }

// Mode detects the layout from the files under Root rather than from statfs
// magic numbers, so that it works on fixture trees as well as on the host:
// only a cgroup2 mount has cgroup.controllers at its top, and a hybrid host
// mounts that hierarchy at <Root>/unified beside the v1 controllers.
func (f FS) Mode() (Mode, error) {
	root := f.root()
	if exists(filepath.Join(root, "cgroup.controllers")) {
		return ModeV2, nil
	}
	v1 := false
	for _, c := range []string{"memory", "cpu", "cpuacct"} {
		if exists(filepath.Join(root, c)) {
			v1 = true
			break
		}
	}
	if !v1 {
		if _, err := os.Stat(root); err != nil {
			return ModeUnknown, fmt.Errorf("detecting the cgroup layout: %w", err)
		}
		return ModeUnknown, fmt.Errorf("detecting the cgroup layout: %s has neither cgroup.controllers (cgroup v2) nor memory, cpu or cpuacct directories (cgroup v1); "+
			"is the cgroup filesystem mounted there?", root)
	}
	if exists(filepath.Join(root, "unified", "cgroup.controllers")) {
		return ModeHybrid, nil
	}
	return ModeV1, nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func isDir(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.IsDir()
}

func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }
