package cgroup

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/containerd/cgroups/v3"
	"spatec.dev/spatec/exec/cgroup/cgrouptest"
)

func TestRealHostV1Group(t *testing.T) {
	cgrouptest.Require(t)

	// The library's statfs-based detection and the file-based one agree
	// on the real root.
	libMode := map[cgroups.CGMode]Mode{cgroups.Legacy: ModeV1, cgroups.Hybrid: ModeHybrid, cgroups.Unified: ModeV2}[cgroups.Mode()]
	if m, _ := (FS{}).Mode(); m != libMode {
		t.Errorf("file-based mode %s, library mode %s", m, libMode)
	}

	const (
		memLimit = 256 << 20
		quota    = 50000 // 0.5 CPU over Docker's period
		anonSize = 4 << 20
		shmSize  = 8 << 20
		// The shell may still be finishing its last time slice while
		// the group is read twice.
		cpuSlack = 50e6
	)
	cg := cgrouptest.New(t, cgrouptest.Limits{CPUQuotaUs: quota, MemoryBytes: memLimit})

	// A shell that waits to be moved into the group, then allocates anon
	// memory (a shell variable) and shared memory (files in /dev/shm),
	// and reports each step.
	shm := filepath.Join("/dev/shm", cg.Name)
	t.Cleanup(func() { os.Remove(shm); os.Remove(shm + ".2") })
	script := fmt.Sprintf(`read go; x=$(head -c %d /dev/zero | tr '\0' a); head -c %d /dev/zero > %s; echo ready; `+
		`read more; head -c %d /dev/zero > %s.2; echo again; read done; echo ${#x}`, anonSize, shmSize, shm, shmSize, shm)
	cmd := exec.Command("sh", "-c", script)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	pid := cg.Start(t, cmd)
	out := bufio.NewReader(stdout)
	step := func(send, want string) {
		t.Helper()
		if _, err := io.WriteString(stdin, send+"\n"); err != nil {
			t.Fatal(err)
		}
		if line, err := out.ReadString('\n'); err != nil || line != want+"\n" {
			t.Fatalf("the test process answered %q (%v), want %q", line, err, want)
		}
	}
	step("go", "ready")

	fs := FS{}
	g, err := fs.Locate(pid, "")
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	for _, c := range cgrouptest.Controllers() {
		if got := g.Dir(c); got != cg.Dirs[c] {
			t.Errorf("%s dir %s, want %s", c, got, cg.Dirs[c])
		}
	}

	rb, err := g.ReadBack()
	if err != nil {
		t.Fatal(err)
	}
	if rb.Raw["cpu.cfs_quota_us"] != strconv.Itoa(quota) || rb.Raw["cpu.cfs_period_us"] != "100000" ||
		rb.Raw["memory.limit_in_bytes"] != strconv.Itoa(memLimit) {
		t.Errorf("raw read-back %v", rb.Raw)
	}
	want := Caps{NanoCPUs: 5e8, Memory: memLimit, MemorySwap: memLimit}
	if ms := Verify(want, rb); len(ms) != 0 {
		t.Errorf("the applied caps should verify, got %q", mismatchText(ms))
	}
	if rb.SwapAccounting != cg.SwapAccounting {
		t.Errorf("swap accounting %v, want %v", rb.SwapAccounting, cg.SwapAccounting)
	}
	if err := CheckSwap(fs, rb.SwapAccounting); err != nil {
		t.Logf("host swap check: %v", err)
	}
	wrong := want
	wrong.Memory, wrong.MemorySwap = 2*memLimit, 2*memLimit
	ms := Verify(wrong, rb)
	if len(ms) == 0 || ms[0].String() != fmt.Sprintf("memory.limit_in_bytes: want %d, found %d", 2*memLimit, memLimit) {
		t.Errorf("got %q", mismatchText(ms))
	}

	s, err := g.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if s.CPUUsageNs == 0 {
		t.Error("the group ran a shell pipeline, yet reports no CPU time")
	}
	if s.ShmemBytes < shmSize {
		t.Errorf("shmem %d, want at least the %d-byte /dev/shm file", s.ShmemBytes, shmSize)
	}
	if s.AnonBytes < anonSize {
		t.Errorf("anon %d, want at least the %d-byte shell variable", s.AnonBytes, anonSize)
	}
	if s.MemoryPeakBytes < s.AnonBytes+s.ShmemBytes {
		t.Errorf("peak %d below anon+shmem %d", s.MemoryPeakBytes, s.AnonBytes+s.ShmemBytes)
	}
	t.Logf("stat of %s: %+v", g, s)
	assertMatchesLibrary(t, g, s, cpuSlack)

	// A reset restarts the high-water mark at the current usage: the
	// pipeline's transient memory (head and tr) leaves it.
	ok, err := g.ResetPeak()
	if !ok || err != nil {
		t.Fatalf("v1 peak reset: %v %v", ok, err)
	}
	after, err := g.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if after.MemoryPeakBytes > s.MemoryPeakBytes || after.MemoryPeakBytes < after.ShmemBytes {
		t.Errorf("peak after reset %d, before %d, shmem %d", after.MemoryPeakBytes, s.MemoryPeakBytes, after.ShmemBytes)
	}

	// More work and more shared memory, read through the descriptors the
	// first Stat opened: cgroupfs regenerates them on every read.
	step("more", "again")
	later, err := g.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if later.CPUUsageNs <= after.CPUUsageNs || later.ShmemBytes < after.ShmemBytes+shmSize || later.MemoryPeakBytes < later.AnonBytes+later.ShmemBytes {
		t.Errorf("after more work and %d more bytes of shmem: before %+v, after %+v", shmSize, after, later)
	}
	assertMatchesLibrary(t, g, later, cpuSlack)

	// Releasing the shell ends the only process of the group.
	stdin.Close()
	rest, _ := io.ReadAll(out)
	if got := strings.TrimSpace(string(rest)); got != strconv.Itoa(anonSize) {
		t.Errorf("the shell variable held %s bytes, want %d", got, anonSize)
	}
}
