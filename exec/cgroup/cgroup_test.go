package cgroup

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const (
	fixtureID = "3f6c2a9e8b1d4c7f9a0e5b2d6c8f1a3e7b9d0c2f4a6e8b1d3c5f7a9e0b2d4c6f"
	gib       = int64(1) << 30
)

// fixture is one tree under testdata, laid out as the kernel and Docker
// lay out a host: v1 with the cgroupfs driver (docker/<id>, cpu and cpuacct
// co-mounted), hybrid with the systemd driver (system.slice/docker-<id>.scope,
// separate cpu and cpuacct) and v2 with the systemd driver.
type fixture struct {
	name string
	mode Mode
	pid  int
	dirs map[string]string // relative to the fixture's cgroup root
}

var fixtures = []fixture{
	{"v1", ModeV1, 4243, map[string]string{
		"cpu":     "cpu/docker/" + fixtureID,
		"cpuacct": "cpuacct/docker/" + fixtureID,
		"memory":  "memory/docker/" + fixtureID,
		"cpuset":  "cpuset/docker/" + fixtureID,
	}},
	{"hybrid", ModeHybrid, 4244, map[string]string{
		"cpu":     "cpu/system.slice/docker-" + fixtureID + ".scope",
		"cpuacct": "cpuacct/system.slice/docker-" + fixtureID + ".scope",
		"memory":  "memory/system.slice/docker-" + fixtureID + ".scope",
		"cpuset":  "cpuset/system.slice/docker-" + fixtureID + ".scope",
	}},
	{"v2", ModeV2, 4242, map[string]string{
		"unified": "system.slice/docker-" + fixtureID + ".scope",
	}},
}

func fixtureFS(dir string) FS {
	return FS{Root: filepath.Join(dir, "sys/fs/cgroup"), Proc: filepath.Join(dir, "proc")}
}

func (fx fixture) fs() FS { return fixtureFS(filepath.Join("testdata", fx.name)) }

// copyFixture gives a test its own writable copy of a fixture tree.
func copyFixture(t *testing.T, name string) FS {
	t.Helper()
	dst := t.TempDir()
	if err := os.CopyFS(dst, os.DirFS(filepath.Join("testdata", name))); err != nil {
		t.Fatalf("copying fixture %s: %v", name, err)
	}
	return fixtureFS(dst)
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// planned is the cap set every fixture was written with: 32 CPUs pinned to
// 0-31, 96 GiB of memory and no swap.
var planned = Caps{NanoCPUs: 32e9, CpusetCpus: "0-31", Memory: 96 * gib, MemorySwap: 96 * gib}

func TestModeDetectedFromFiles(t *testing.T) {
	for _, fx := range fixtures {
		got, err := fx.fs().Mode()
		if err != nil {
			t.Fatalf("%s: %v", fx.name, err)
		}
		if got != fx.mode {
			t.Errorf("%s: mode %s, want %s", fx.name, got, fx.mode)
		}
	}
	empty := t.TempDir()
	if _, err := (FS{Root: empty}).Mode(); err == nil || !strings.Contains(err.Error(), "neither cgroup.controllers") {
		t.Errorf("empty root: want an error naming what is missing, got %v", err)
	}
	if _, err := (FS{Root: filepath.Join(empty, "nope")}).Mode(); err == nil {
		t.Error("missing root: want an error")
	}
}

func TestModeVersionAndNames(t *testing.T) {
	want := map[Mode][2]any{ModeV1: {"v1", 1}, ModeHybrid: {"hybrid", 1}, ModeV2: {"v2", 2}, ModeUnknown: {"unknown", 0}}
	for m, w := range want {
		if m.String() != w[0] || m.Version() != w[1] {
			t.Errorf("mode %d: %s/%d, want %v", m, m, m.Version(), w)
		}
	}
}

func TestLocateThroughProc(t *testing.T) {
	for _, fx := range fixtures {
		t.Run(fx.name, func(t *testing.T) {
			fs := fx.fs()
			g, err := fs.Locate(fx.pid, "")
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			if g.Mode() != fx.mode {
				t.Errorf("mode %s, want %s", g.Mode(), fx.mode)
			}
			want := map[string]string{}
			for c, d := range fx.dirs {
				want[c] = filepath.Join(fs.Root, d)
			}
			if got := g.Dirs(); !reflect.DeepEqual(got, want) {
				t.Errorf("dirs\n got %v\nwant %v", got, want)
			}
		})
	}
}

func TestLocateFallsBackToDriverLayouts(t *testing.T) {
	for _, fx := range fixtures {
		t.Run(fx.name, func(t *testing.T) {
			fs := fx.fs()
			// No pid, and a pid whose /proc entry is gone (the process
			// exited and its cgroup file went with it).
			for _, pid := range []int{0, 999999} {
				g, err := fs.Locate(pid, fixtureID)
				if err != nil {
					t.Fatalf("pid %d: %v", pid, err)
				}
				if got, want := g.Dir("memory"), filepath.Join(fs.Root, fx.dirs[map[bool]string{true: "unified", false: "memory"}[fx.mode == ModeV2]]); got != want {
					t.Errorf("pid %d: memory dir %s, want %s", pid, got, want)
				}
			}
		})
	}
}

func TestLocateNamesWhatItTried(t *testing.T) {
	fs := fixtures[0].fs()
	_, err := fs.Locate(999999, "0000")
	if err == nil {
		t.Fatal("want an error for an unknown container")
	}
	for _, part := range []string{"container 0000 (pid 999999)", "proc/999999/cgroup", "memory/docker/0000", "memory/system.slice/docker-0000.scope", "still running"} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("error %q does not mention %q", err, part)
		}
	}
	if _, err := fs.Locate(0, "../etc"); err == nil || !strings.Contains(err.Error(), "not a plain name") {
		t.Errorf("want a refusal of a path-like container id, got %v", err)
	}
	if _, err := fs.Locate(0, ""); err == nil {
		t.Error("want an error when neither pid nor id is given")
	}
}

func TestLocateRefusesAMissingGroup(t *testing.T) {
	// /proc names a group whose directory is gone: a removed container
	// must not load as an empty group reporting zeros.
	fs := copyFixture(t, "v2")
	if err := os.RemoveAll(filepath.Join(fs.Root, fixtures[2].dirs["unified"])); err != nil {
		t.Fatal(err)
	}
	_, err := fs.Locate(4242, "")
	if err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("want a missing-directory error, got %v", err)
	}
}

func TestReadBackRawAndParsed(t *testing.T) {
	v1Raw := map[string]string{
		"cpu.cfs_quota_us":            "3200000",
		"cpu.cfs_period_us":           "100000",
		"memory.limit_in_bytes":       "103079215104",
		"memory.memsw.limit_in_bytes": "103079215104",
		"cpuset.cpus":                 "0-31",
	}
	wantRaw := map[string]map[string]string{
		"v1":     v1Raw,
		"hybrid": v1Raw,
		"v2": {
			"cpu.max":         "3200000 100000",
			"memory.max":      "103079215104",
			"memory.swap.max": "0",
			"cpuset.cpus":     "0-31",
		},
	}
	for _, fx := range fixtures {
		t.Run(fx.name, func(t *testing.T) {
			g, err := fx.fs().Locate(fx.pid, "")
			if err != nil {
				t.Fatal(err)
			}
			rb, err := g.ReadBack()
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(rb.Raw, wantRaw[fx.name]) {
				t.Errorf("raw\n got %v\nwant %v", rb.Raw, wantRaw[fx.name])
			}
			if rb.CPUQuotaUs != 3200000 || rb.CPUPeriodUs != 100000 || rb.MemoryBytes != 96*gib ||
				rb.MemorySwapBytes != 96*gib || !rb.SwapAccounting || rb.CpusetCpus != "0-31" || rb.Mode != fx.mode {
				t.Errorf("parsed %+v", rb)
			}
			if m := Verify(planned, rb); len(m) != 0 {
				t.Errorf("the planned caps should match, got %v", m)
			}
		})
	}
}

func readBack(t *testing.T, fs FS, pid int) ReadBack {
	t.Helper()
	g, err := fs.Locate(pid, "")
	if err != nil {
		t.Fatal(err)
	}
	rb, err := g.ReadBack()
	if err != nil {
		t.Fatal(err)
	}
	return rb
}

func mismatchText(ms []Mismatch) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.String()
	}
	return out
}

func TestVerifyReportsEachField(t *testing.T) {
	with := func(f func(*Caps)) Caps { c := planned; f(&c); return c }
	cases := []struct {
		name string
		want Caps
		v1   []string
		v2   []string
	}{
		{"cpus", with(func(c *Caps) { c.NanoCPUs = 16e9 }),
			[]string{"cpu.cfs_quota_us: want 1600000, found 3200000"},
			[]string{"cpu.max: want 1600000 100000, found 3200000 100000"}},
		{"no cpu quota planned", with(func(c *Caps) { c.NanoCPUs = 0 }),
			[]string{"cpu.cfs_quota_us: want -1, found 3200000"},
			[]string{"cpu.max: want max 100000, found 3200000 100000"}},
		{"memory", with(func(c *Caps) { c.Memory = 1 * gib; c.MemorySwap = 1 * gib }),
			[]string{"memory.limit_in_bytes: want 1073741824, found 103079215104", "memory.memsw.limit_in_bytes: want 1073741824, found 103079215104"},
			[]string{"memory.max: want 1073741824, found 103079215104"}},
		{"swap allowed", with(func(c *Caps) { c.MemorySwap = 100 * gib }),
			[]string{"memory.memsw.limit_in_bytes: want 107374182400, found 103079215104"},
			[]string{"memory.swap.max: want 4294967296, found 0"}},
		{"swap left to Docker's default", with(func(c *Caps) { c.MemorySwap = 0 }),
			[]string{"memory.memsw.limit_in_bytes: want 206158430208, found 103079215104"},
			[]string{"memory.swap.max: want 103079215104, found 0"}},
		{"cpuset", with(func(c *Caps) { c.CpusetCpus = "0-15" }),
			[]string{"cpuset.cpus: want 0-15, found 0-31"},
			[]string{"cpuset.cpus: want 0-15, found 0-31"}},
		{"cpuset spelled out", with(func(c *Caps) { c.CpusetCpus = "0,1,2-31" }), nil, nil},
		{"cpuset not declared", with(func(c *Caps) { c.CpusetCpus = "" }), nil, nil},
	}
	for _, fx := range fixtures {
		rb := readBack(t, fx.fs(), fx.pid)
		for _, c := range cases {
			want := c.v1
			if fx.mode == ModeV2 {
				want = c.v2
			}
			got := mismatchText(Verify(c.want, rb))
			if len(got) == 0 && len(want) == 0 {
				continue
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s/%s:\n got %q\nwant %q", fx.name, c.name, got, want)
			}
		}
	}
}

func TestVerifyMismatchFields(t *testing.T) {
	rb := readBack(t, fixtures[0].fs(), fixtures[0].pid)
	ms := Verify(Caps{NanoCPUs: 32e9, Memory: 1 * gib, MemorySwap: 96 * gib}, rb)
	want := Mismatch{File: "memory.limit_in_bytes", Want: "1073741824", Got: "103079215104"}
	if len(ms) != 1 || ms[0] != want {
		t.Fatalf("got %+v, want [%+v]", ms, want)
	}
}

func TestUnlimitedFormsNeverMatchAFiniteCap(t *testing.T) {
	cases := []struct {
		fixture, file, content string
		want                   string
	}{
		{"v1", "memory/docker/" + fixtureID + "/memory.limit_in_bytes", "9223372036854771712\n",
			"memory.limit_in_bytes: want 103079215104, found 9223372036854771712 (unlimited)"},
		{"v1", "memory/docker/" + fixtureID + "/memory.memsw.limit_in_bytes", "9223372036854771712\n",
			"memory.memsw.limit_in_bytes: want 103079215104, found 9223372036854771712 (unlimited)"},
		{"v1", "cpu/docker/" + fixtureID + "/cpu.cfs_quota_us", "-1\n",
			"cpu.cfs_quota_us: want 3200000, found -1 (unlimited)"},
		{"v2", "system.slice/docker-" + fixtureID + ".scope/memory.max", "max\n",
			"memory.max: want 103079215104, found max"},
		{"v2", "system.slice/docker-" + fixtureID + ".scope/memory.swap.max", "max\n",
			"memory.swap.max: want 0, found max"},
		{"v2", "system.slice/docker-" + fixtureID + ".scope/cpu.max", "max 100000\n",
			"cpu.max: want 3200000 100000, found max 100000"},
	}
	for _, c := range cases {
		fs := copyFixture(t, c.fixture)
		writeFile(t, filepath.Join(fs.Root, c.file), c.content)
		pid := 4243
		if c.fixture == "v2" {
			pid = 4242
		}
		rb := readBack(t, fs, pid)
		got := mismatchText(Verify(planned, rb))
		if len(got) != 1 || got[0] != c.want {
			t.Errorf("%s %s=%q:\n got %q\nwant %q", c.fixture, filepath.Base(c.file), strings.TrimSpace(c.content), got, c.want)
		}
	}
}

func TestUnlimitedFormsMatchNoCap(t *testing.T) {
	fs := copyFixture(t, "v1")
	dir := filepath.Join(fs.Root, "memory/docker", fixtureID)
	writeFile(t, filepath.Join(dir, "memory.limit_in_bytes"), "9223372036854771712\n")
	writeFile(t, filepath.Join(dir, "memory.memsw.limit_in_bytes"), "9223372036854771712\n")
	writeFile(t, filepath.Join(fs.Root, "cpu/docker", fixtureID, "cpu.cfs_quota_us"), "-1\n")
	rb := readBack(t, fs, 4243)
	if rb.MemoryBytes != -1 || rb.MemorySwapBytes != -1 || rb.CPUQuotaUs != -1 {
		t.Errorf("parsed %+v, want -1 for each unlimited value", rb)
	}
	if m := Verify(Caps{MemorySwap: -1}, rb); len(m) != 0 {
		t.Errorf("no caps planned, none applied: got %v", mismatchText(m))
	}
}

func TestCPUQuotaComparedAsARatio(t *testing.T) {
	// 1600000 µs per 50000 µs is 32 CPUs, as is Docker's 3200000/100000.
	if !cpuMatches(32e9, 1600000, 50000) {
		t.Error("an equal ratio over another period should match")
	}
	if cpuMatches(32e9, 1600001, 50000) {
		t.Error("a ratio off by 1 µs should not match")
	}
	fs := copyFixture(t, "v1")
	dir := filepath.Join(fs.Root, "cpu/docker", fixtureID)
	writeFile(t, filepath.Join(dir, "cpu.cfs_period_us"), "50000\n")
	got := mismatchText(Verify(planned, readBack(t, fs, 4243)))
	want := []string{"cpu.cfs_quota_us: want 3200000, found 3200000", "cpu.cfs_period_us: want 100000, found 50000"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	// A quota no period can express exactly says how to fix the plan.
	ms := Verify(Caps{NanoCPUs: 1_000_005, Memory: 96 * gib, MemorySwap: 96 * gib}, readBack(t, fixtures[2].fs(), 4242))
	if len(ms) != 1 || !strings.Contains(ms[0].Hint, "steps of 0.01") {
		t.Errorf("got %q, want a hint about the 0.01 CPU grain", mismatchText(ms))
	}
}

func TestVerifyExplainsPageRounding(t *testing.T) {
	fs := copyFixture(t, "v2")
	writeFile(t, filepath.Join(fs.Root, fixtures[2].dirs["unified"], "memory.max"), "999997440\n")
	ms := Verify(Caps{NanoCPUs: 32e9, CpusetCpus: "0-31", Memory: 1e9, MemorySwap: 1e9}, readBack(t, fs, 4242))
	if len(ms) != 1 || ms[0].File != "memory.max" || !strings.Contains(ms[0].Hint, "multiple of 4096") {
		t.Errorf("got %q, want a page-rounding hint on memory.max", mismatchText(ms))
	}
}

func TestVerifyWithoutSwapAccounting(t *testing.T) {
	for _, c := range []struct{ fixture, file string }{
		{"v1", "memory/docker/" + fixtureID + "/memory.memsw.limit_in_bytes"},
		{"v2", "system.slice/docker-" + fixtureID + ".scope/memory.swap.max"},
	} {
		fs := copyFixture(t, c.fixture)
		if err := os.Remove(filepath.Join(fs.Root, c.file)); err != nil {
			t.Fatal(err)
		}
		pid := 4243
		if c.fixture == "v2" {
			pid = 4242
		}
		rb := readBack(t, fs, pid)
		if rb.SwapAccounting {
			t.Errorf("%s: swap accounting reported without %s", c.fixture, filepath.Base(c.file))
		}
		// No swap planned: nothing to compare here; CheckSwap decides.
		if m := Verify(planned, rb); len(m) != 0 {
			t.Errorf("%s: got %q, want no mismatch", c.fixture, mismatchText(m))
		}
		// Swap planned on a kernel that cannot limit it: refused.
		withSwap := planned
		withSwap.MemorySwap = 2 * planned.Memory
		ms := Verify(withSwap, rb)
		if len(ms) != 1 || ms[0].Got != "absent" || !strings.Contains(ms[0].Hint, "no swap accounting") {
			t.Errorf("%s: got %q, want the swap file reported absent", c.fixture, mismatchText(ms))
		}
	}
}

func TestVerifyReportsAbsentCapFiles(t *testing.T) {
	fs := copyFixture(t, "v2")
	dir := filepath.Join(fs.Root, fixtures[2].dirs["unified"])
	for _, f := range []string{"cpu.max", "cpuset.cpus"} {
		if err := os.Remove(filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	got := mismatchText(Verify(planned, readBack(t, fs, 4242)))
	want := []string{
		"cpu.max: want 3200000 100000, found absent",
		"cpuset.cpus: want 0-31, found absent (the cpuset controller is not available for the group)",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestReadBackRejectsMalformedFiles(t *testing.T) {
	fs := copyFixture(t, "v2")
	writeFile(t, filepath.Join(fs.Root, fixtures[2].dirs["unified"], "cpu.max"), "3200000\n")
	g, err := fs.Locate(4242, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.ReadBack(); err == nil || !strings.Contains(err.Error(), `found "3200000"`) {
		t.Errorf("want an error quoting the malformed content, got %v", err)
	}
}

func TestCheckSwap(t *testing.T) {
	if err := CheckSwap(fixtures[2].fs(), false); err != nil {
		t.Errorf("no swap on the host: %v", err)
	}
	err := CheckSwap(fixtures[0].fs(), false)
	if err == nil {
		t.Fatal("active swap without accounting must be refused")
	}
	for _, part := range []string{"C5:", "/dev/sda2 (partition, 2097148 KiB)", "swapoff -a", "swapaccount=1"} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("%q does not mention %q", err, part)
		}
	}
	if err := CheckSwap(fixtures[1].fs(), false); err == nil || !strings.Contains(err.Error(), "/swap file (file, 1048572 KiB)") {
		t.Errorf("want the escaped swap file name decoded, got %v", err)
	}
	if err := CheckSwap(fixtures[0].fs(), true); err != nil {
		t.Errorf("with swap accounting the limits are checked per container: %v", err)
	}
	if err := CheckSwap(FS{Proc: t.TempDir()}, false); err == nil || !strings.HasPrefix(err.Error(), "C5:") {
		t.Errorf("an unreadable swaps file must refuse, got %v", err)
	}
}

func TestStat(t *testing.T) {
	want := map[string]Stat{
		"v1": {CPUUsageNs: 83421337123, NrThrottled: 117, ThrottledUsec: 2345678,
			AnonBytes: 724566016, ShmemBytes: 0, MemoryPeakBytes: 812916736, OOMKills: 1},
		"hybrid": {CPUUsageNs: 83421337123, NrThrottled: 117, ThrottledUsec: 2345678,
			AnonBytes: 59768832, ShmemBytes: 844103680, MemoryPeakBytes: 812916736, OOMKills: 1},
		"v2": {CPUUsageNs: 83421337000, NrThrottled: 117, ThrottledUsec: 2345678,
			AnonBytes: 59768832, ShmemBytes: 844103680, MemoryPeakBytes: 938475520, OOMKills: 1},
	}
	for _, fx := range fixtures {
		g, err := fx.fs().Locate(fx.pid, "")
		if err != nil {
			t.Fatal(err)
		}
		got, err := g.Stat()
		if err != nil {
			t.Fatalf("%s: %v", fx.name, err)
		}
		if got != want[fx.name] {
			t.Errorf("%s:\n got %+v\nwant %+v", fx.name, got, want[fx.name])
		}
	}
}

func TestStatOfARemovedGroupFails(t *testing.T) {
	for _, fx := range fixtures {
		fs := copyFixture(t, fx.name)
		g, err := fs.Locate(fx.pid, "")
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range fx.dirs {
			if err := os.RemoveAll(filepath.Join(fs.Root, d)); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := g.Stat(); err == nil {
			t.Errorf("%s: a removed group must not read as zeros", fx.name)
		}
	}
}

func TestResetPeakV1(t *testing.T) {
	fs := copyFixture(t, "v1")
	g, err := fs.Locate(4243, "")
	if err != nil {
		t.Fatal(err)
	}
	ok, err := g.ResetPeak()
	if !ok || err != nil {
		t.Fatalf("reset: %v %v", ok, err)
	}
	b, err := os.ReadFile(filepath.Join(g.Dir("memory"), "memory.max_usage_in_bytes"))
	if err != nil || string(b) != "0" {
		t.Errorf("memory.max_usage_in_bytes after reset: %q %v, want the 0 written", b, err)
	}
}

func TestResetPeakV2ReadsThroughTheResetDescriptor(t *testing.T) {
	fs := copyFixture(t, "v2")
	g, err := fs.Locate(4242, "")
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	ok, err := g.ResetPeak()
	if !ok || err != nil {
		t.Fatalf("reset: %v %v", ok, err)
	}
	// The kernel now answers reads through the reset descriptor with the
	// window's peak; the fixture plays that part by rewriting the file in
	// place, which the held descriptor sees.
	peakFile := filepath.Join(g.Dir("memory"), "memory.peak")
	fh, err := os.OpenFile(peakFile, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fh.WriteString("123456789\n"); err != nil {
		t.Fatal(err)
	}
	fh.Close()
	s, err := g.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if s.MemoryPeakBytes != 123456789 {
		t.Errorf("peak %d, want the value read through the held descriptor", s.MemoryPeakBytes)
	}
	if g.peak == nil {
		t.Error("the reset descriptor must stay open until Close")
	}
	if err := g.Close(); err != nil || g.peak != nil {
		t.Errorf("close: %v", err)
	}
}

func TestResetPeakV2WithoutMemoryPeak(t *testing.T) {
	fs := copyFixture(t, "v2")
	g, err := fs.Locate(4242, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(g.Dir("memory"), "memory.peak")); err != nil {
		t.Fatal(err)
	}
	ok, err := g.ResetPeak()
	if ok || err == nil || !strings.Contains(err.Error(), "5.19") {
		t.Errorf("got %v %v, want a failed reset naming the kernel version needed", ok, err)
	}
	s, err := g.Stat()
	if err != nil || s.MemoryPeakBytes != 0 {
		t.Errorf("stat without memory.peak: %+v %v, want a zero peak", s, err)
	}
}

func TestVerifyContainer(t *testing.T) {
	rb, ms, err := fixtures[1].fs().VerifyContainer(0, fixtureID, planned)
	if err != nil || len(ms) != 0 || rb.Mode != ModeHybrid {
		t.Errorf("got %v %v %v", rb.Mode, ms, err)
	}
	if _, _, err := fixtures[1].fs().VerifyContainer(0, "0000", planned); err == nil {
		t.Error("want an error for a container that cannot be found")
	}
}

func TestParseCPUList(t *testing.T) {
	got, err := parseCPUList("0-2,5, 7")
	if err == nil {
		t.Errorf("a space inside the list is not the kernel's format: got %v", got)
	}
	got, err = parseCPUList("0-2,5,7-8")
	if err != nil || !reflect.DeepEqual(got, map[int]bool{0: true, 1: true, 2: true, 5: true, 7: true, 8: true}) {
		t.Errorf("got %v %v", got, err)
	}
	for _, bad := range []string{"a", "3-1", "1-", "-1"} {
		if _, err := parseCPUList(bad); err == nil {
			t.Errorf("%q: want an error", bad)
		}
	}
}

// TestLocateRefusesTheRootGroupForAContainer: a container's process that has
// left its group (exiting) is listed in the root cgroup; its limits are
// the host's, so Locate must not return it, and falls back to the Docker
// layout for the container's id.
func TestLocateRefusesTheRootGroupForAContainer(t *testing.T) {
	fsys := copyFixture(t, "v1")
	const id = "3f6c2a9e8b1d4c7f9a0e5b2d6c8f1a3e7b9d0c2f4a6e8b1d3c5f7a9e0b2d4c6f"
	dir := filepath.Join(fsys.Proc, "5000")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	root := "9:memory:/\n2:cpu,cpuacct:/\n8:cpuset:/\n"
	if err := os.WriteFile(filepath.Join(dir, "cgroup"), []byte(root), 0o644); err != nil {
		t.Fatal(err)
	}
	g, err := fsys.Locate(5000, id)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if want := filepath.Join(fsys.Root, "memory", "docker", id); g.Dir("memory") != want {
		t.Fatalf("located %s, want the container's %s", g.Dir("memory"), want)
	}
	// Without a container id the root group is what the pid names.
	if g, err := fsys.Locate(5000, ""); err != nil || !g.inRoot() {
		t.Fatalf("pid alone: %v, %v", g, err)
	}
}
