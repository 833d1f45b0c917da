// Package cgrouptest creates real cgroup v1 groups on the host for tests
// and benchmarks, the way the Docker engine creates a container's, and
// removes them afterwards. It needs root and a v1 (or hybrid) host.
package cgrouptest

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"spatec.dev/spatec/internal/testenv"
)

// Root is where the host's v1 hierarchies are mounted.
const Root = "/sys/fs/cgroup"

// Controllers are the hierarchies a group is created in: what spatec reads
// a container's caps and usage from. cpu and cpuacct may be one co-mounted
// hierarchy reached through two links.
func Controllers() []string { return []string{"memory", "cpu", "cpuacct"} }

// Probe says why groups cannot be created here, or nil if they can.
func Probe() error {
	if os.Geteuid() != 0 {
		return errors.New("creating cgroups needs root")
	}
	if _, err := os.Stat(filepath.Join(Root, "cgroup.controllers")); err == nil {
		return errors.New("this host runs cgroup v2 only; these groups are v1")
	}
	for _, c := range Controllers() {
		dir := filepath.Join(Root, c, "spatec-probe-"+strconv.Itoa(os.Getpid()))
		if err := os.Mkdir(dir, 0o755); err != nil {
			return fmt.Errorf("the %s hierarchy is not writable: %w", c, err)
		}
		if err := os.Remove(dir); err != nil {
			return fmt.Errorf("removing probe group %s: %w", dir, err)
		}
	}
	return nil
}

// Require skips the test (fails it under CI=true) unless groups can be
// created here.
func Require(tb testing.TB) {
	tb.Helper()
	testenv.Require(tb, "a writable cgroup v1 hierarchy (root)", Probe)
}

// Limits are the caps written into a new group; 0 leaves one unlimited.
type Limits struct {
	// CPUQuotaUs is the CFS quota over a 100000 µs period.
	CPUQuotaUs int64
	// MemoryBytes is the memory limit, written to memory.limit_in_bytes
	// and, where the kernel accounts swap, memory.memsw.limit_in_bytes.
	MemoryBytes int64
}

// Group is one group created for a test.
type Group struct {
	// Name is the group's directory name in every hierarchy.
	Name string
	// Dirs are its directories, by controller.
	Dirs map[string]string
	// SwapAccounting says whether the kernel has memsw files.
	SwapAccounting bool
}

// New creates a group named spatec-test-<random> in each controller's
// hierarchy with the given limits, and removes it when the test ends.
func New(tb testing.TB, l Limits) *Group {
	tb.Helper()
	var rnd [6]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		tb.Fatal(err)
	}
	g := &Group{Name: "spatec-test-" + hex.EncodeToString(rnd[:]), Dirs: map[string]string{}}
	for _, c := range Controllers() {
		dir := filepath.Join(Root, c, g.Name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			tb.Fatalf("creating cgroup %s: %v", dir, err)
		}
		g.Dirs[c] = dir
		tb.Cleanup(func() {
			if err := os.Remove(dir); err != nil {
				tb.Errorf("removing cgroup %s: %v", dir, err)
			}
		})
	}
	g.SwapAccounting = exists(filepath.Join(g.Dirs["memory"], "memory.memsw.limit_in_bytes"))
	if l.CPUQuotaUs > 0 {
		g.write(tb, "cpu", "cpu.cfs_period_us", 100000)
		g.write(tb, "cpu", "cpu.cfs_quota_us", l.CPUQuotaUs)
	}
	if l.MemoryBytes > 0 {
		// memsw may never be below the memory limit: the memory limit
		// goes first, as Docker does it.
		g.write(tb, "memory", "memory.limit_in_bytes", l.MemoryBytes)
		if g.SwapAccounting {
			g.write(tb, "memory", "memory.memsw.limit_in_bytes", l.MemoryBytes)
		}
	}
	return g
}

func (g *Group) write(tb testing.TB, controller, file string, v int64) {
	tb.Helper()
	path := filepath.Join(g.Dirs[controller], file)
	if err := os.WriteFile(path, []byte(strconv.FormatInt(v, 10)), 0); err != nil {
		tb.Fatalf("writing %s: %v", path, err)
	}
}

// Start starts cmd in its own process group, moves it into g, and kills the
// process group when the test ends, before g is removed. The process runs
// outside g until moved: a command whose usage matters should wait for a
// go-ahead (a line on stdin, say). It returns the pid.
func (g *Group) Start(tb testing.TB, cmd *exec.Cmd) int {
	tb.Helper()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		tb.Fatalf("starting %s: %v", cmd.Path, err)
	}
	pid := cmd.Process.Pid
	tb.Cleanup(func() {
		syscall.Kill(-pid, syscall.SIGKILL)
		cmd.Wait()
	})
	for _, c := range Controllers() {
		path := filepath.Join(g.Dirs[c], "cgroup.procs")
		if err := os.WriteFile(path, []byte(strconv.Itoa(pid)), 0); err != nil {
			tb.Fatalf("moving pid %d into %s: %v", pid, path, err)
		}
	}
	return pid
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// Files writes a tree of files, by path relative to a new temporary
// directory, and returns that directory: a node's cgroup tree and process
// table as fixtures, for code that reads them through paths.
func Files(tb testing.TB, files map[string]string) string {
	tb.Helper()
	root := tb.TempDir()
	for f, content := range files {
		p := filepath.Join(root, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	return root
}
