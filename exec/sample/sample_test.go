package sample

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"spatec.dev/spatec/exec/cgroup"
)

const mib = 1 << 20

// counters is what the kernel reports for one group at one instant.
type counters struct {
	usageUsec, nrThrottled, throttledUsec uint64
	anon, shmem, peak, oomKill            uint64
}

// tree is a cgroup v2 host in a temporary directory, its files written
// as the kernel writes them and rewritten by the test between ticks.
type tree struct {
	t    testing.TB
	fs   cgroup.FS
	dirs map[string]string
}

func newTree(t testing.TB) *tree {
	t.Helper()
	dir := t.TempDir()
	fs := cgroup.FS{Root: filepath.Join(dir, "sys/fs/cgroup"), Proc: filepath.Join(dir, "proc")}
	tr := &tree{t: t, fs: fs, dirs: map[string]string{}}
	tr.write(filepath.Join(fs.Root, "cgroup.controllers"), "cpuset cpu io memory hugetlb pids rdma misc\n")
	return tr
}

func (tr *tree) write(path, content string) {
	tr.t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		tr.t.Fatal(err)
	}
	// os.WriteFile truncates in place, so a descriptor the group holds on
	// memory.peak sees the new content, as it would the kernel's.
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		tr.t.Fatal(err)
	}
}

// add creates a container's group and locates it the way the executor
// does, through /proc/<pid>/cgroup.
func (tr *tree) add(name string, pid int, c counters) *cgroup.Group {
	tr.t.Helper()
	rel := "/system.slice/docker-" + name + ".scope"
	tr.dirs[name] = filepath.Join(tr.fs.Root, rel)
	tr.write(filepath.Join(tr.fs.Proc, strconv.Itoa(pid), "cgroup"), "0::"+rel+"\n")
	tr.mkgroup(name, c)
	g, err := tr.fs.Locate(pid, "")
	if err != nil {
		tr.t.Fatal(err)
	}
	tr.t.Cleanup(func() { g.Close() })
	return g
}

// mkgroup writes the files of a container's group, as the kernel does when
// it makes the group, with counters c.
func (tr *tree) mkgroup(name string, c counters) {
	tr.t.Helper()
	tr.write(filepath.Join(tr.dirs[name], "memory.max"), "103079215104\n")
	tr.write(filepath.Join(tr.dirs[name], "memory.current"), "0\n")
	tr.write(filepath.Join(tr.dirs[name], "memory.peak"), "0\n")
	tr.set(name, c)
}

func (tr *tree) set(name string, c counters) {
	tr.t.Helper()
	dir := tr.dirs[name]
	tr.write(filepath.Join(dir, "cpu.stat"), fmt.Sprintf("usage_usec %d\nuser_usec %d\nsystem_usec %d\nnr_periods %d\nnr_throttled %d\nthrottled_usec %d\nnr_bursts 0\nburst_usec 0\n",
		c.usageUsec, c.usageUsec*9/10, c.usageUsec-c.usageUsec*9/10, c.nrThrottled*4, c.nrThrottled, c.throttledUsec))
	tr.write(filepath.Join(dir, "memory.stat"), memoryStat(c.anon, c.shmem))
	tr.write(filepath.Join(dir, "memory.events"), fmt.Sprintf("low 0\nhigh 0\nmax 0\noom %d\noom_kill %d\noom_group_kill 0\n", c.oomKill, c.oomKill))
	// A kernel without memory.peak (before 5.19) keeps it missing.
	if _, err := os.Stat(filepath.Join(dir, "memory.peak")); err == nil {
		tr.write(filepath.Join(dir, "memory.peak"), fmt.Sprintf("%d\n", c.peak))
	}
}

// memoryStat is a v2 memory.stat as Linux 6.x writes it; shmem is part of
// file and of the anon LRU lists.
func memoryStat(anon, shmem uint64) string {
	return fmt.Sprintf(`anon %d
file %d
kernel 9928704
kernel_stack 1179648
pagetables 1859584
sec_pagetables 0
percpu 11520
sock 4096
vmalloc 12288
shmem %d
zswap 0
zswapped 0
file_mapped %d
file_dirty 0
file_writeback 0
swapcached 0
anon_thp 0
file_thp 0
shmem_thp 0
inactive_anon %d
active_anon 4096
inactive_file 6262784
active_file 6651904
unevictable 0
slab_reclaimable 3452416
slab_unreclaimable 3313968
slab 6766384
workingset_refault_anon 0
workingset_refault_file 0
workingset_activate_anon 0
workingset_activate_file 0
workingset_restore_anon 0
workingset_restore_file 0
workingset_nodereclaim 0
pgscan 0
pgsteal 0
pgscan_kswapd 0
pgscan_direct 0
pgscan_khugepaged 0
pgsteal_kswapd 0
pgsteal_direct 0
pgsteal_khugepaged 0
pgfault 415237
pgmajfault 12
pgrefill 0
pgactivate 69
pgdeactivate 0
pglazyfree 0
pglazyfreed 0
zswpin 0
zswpout 0
zswpwb 0
thp_fault_alloc 0
thp_collapse_alloc 0
thp_swpout 0
thp_swpout_fallback 0
`, anon, shmem+12914688, shmem, shmem, anon+shmem-4096+4096)
}

// fakeClock is moved by the test; its ticker fires when the test says.
type fakeClock struct {
	mu   sync.Mutex
	now  time.Time
	tick chan time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), tick: make(chan time.Time)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	return c.now
}

func (c *fakeClock) NewTicker(time.Duration) Ticker { return fakeTicker{c.tick} }

type fakeTicker struct{ c chan time.Time }

func (t fakeTicker) C() <-chan time.Time { return t.c }
func (t fakeTicker) Stop()               {}

// driver runs a Sampler on a fake clock and waits for each reading, so the
// test rewrites files only between readings.
type driver struct {
	t        *testing.T
	clock    *fakeClock
	period   time.Duration
	readings chan Reading
	cancel   context.CancelFunc
	done     chan struct{}
	summary  Summary
	err      error
}

func startDriver(t *testing.T, targets []Target, opts ...Option) *driver {
	t.Helper()
	d := &driver{t: t, clock: newFakeClock(), period: 100 * time.Millisecond, readings: make(chan Reading), done: make(chan struct{})}
	opts = append([]Option{WithPeriod(d.period), WithClock(d.clock), WithObserver(func(r Reading) { d.readings <- r })}, opts...)
	s, err := New(targets, opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	d.cancel = cancel
	go func() {
		defer close(d.done)
		d.summary, d.err = s.Run(ctx)
	}()
	d.wait() // the reading that opens the window
	return d
}

func (d *driver) wait() Reading {
	d.t.Helper()
	select {
	case r := <-d.readings:
		return r
	case <-d.done:
		d.t.Fatalf("the sampler stopped early: %v", d.err)
	}
	return Reading{}
}

func (d *driver) tick() Reading {
	d.t.Helper()
	d.clock.tick <- d.clock.advance(d.period)
	return d.wait()
}

// finish closes the window one period after the last tick.
func (d *driver) finish() (Summary, error) {
	d.t.Helper()
	d.clock.advance(d.period)
	d.cancel()
	d.wait()
	<-d.done
	return d.summary, d.err
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// The arm's script: a data plane whose anon+shmem peaks at the second
// reading, a control plane that peaks at the fourth, and a broker (infra)
// far bigger than both that must stay out of the arm's figures.
var script = map[string][]counters{
	"dp": {
		{usageUsec: 5_000_000, nrThrottled: 10, throttledUsec: 1000, anon: 100 * mib},
		{usageUsec: 5_050_000, nrThrottled: 12, throttledUsec: 2000, anon: 100 * mib, shmem: 200 * mib, peak: 300 * mib},
		{usageUsec: 5_100_000, nrThrottled: 15, throttledUsec: 4000, anon: 150 * mib, peak: 305 * mib},
		{usageUsec: 5_150_000, nrThrottled: 20, throttledUsec: 6000, anon: 100 * mib, shmem: 20 * mib, peak: 305 * mib, oomKill: 1},
		{usageUsec: 5_200_000, nrThrottled: 25, throttledUsec: 7000, anon: 100 * mib, peak: 310 * mib, oomKill: 1},
	},
	"cp": {
		{usageUsec: 70_000, anon: 50 * mib},
		{usageUsec: 80_000, anon: 50 * mib, peak: 60 * mib},
		{usageUsec: 90_000, anon: 50 * mib, peak: 60 * mib},
		{usageUsec: 100_000, anon: 200 * mib, shmem: 50 * mib, peak: 255 * mib},
		{usageUsec: 110_000, anon: 50 * mib, peak: 260 * mib},
	},
	"broker": {
		{usageUsec: 0, anon: 4000 * mib},
		{usageUsec: 100_000, anon: 4000 * mib, peak: 4100 * mib},
		{usageUsec: 200_000, anon: 4000 * mib, peak: 4100 * mib},
		{usageUsec: 300_000, anon: 4000 * mib, peak: 4100 * mib},
		{usageUsec: 400_000, anon: 4000 * mib, peak: 4100 * mib},
	},
}

func scriptedTargets(t *testing.T) (*tree, []Target) {
	tr := newTree(t)
	return tr, []Target{
		{Name: "dp", Role: DataPlane, Group: tr.add("dp", 101, script["dp"][0])},
		{Name: "cp", Role: ControlPlane, Group: tr.add("cp", 102, script["cp"][0])},
		{Name: "broker", Role: Infra, Group: tr.add("broker", 103, script["broker"][0])},
	}
}

// play sets reading i's counters of every scripted container.
func play(tr *tree, i int) {
	for name, steps := range script {
		if _, ok := tr.dirs[name]; ok {
			tr.set(name, steps[i])
		}
	}
}

func TestSummaryOfAScriptedWindow(t *testing.T) {
	tr, targets := scriptedTargets(t)
	d := startDriver(t, targets)
	for i := 1; i <= 3; i++ {
		play(tr, i)
		r := d.tick()
		if r.Index != i {
			t.Fatalf("reading %d reported index %d", i, r.Index)
		}
	}
	play(tr, 4)
	s, err := d.finish()
	if err != nil {
		t.Fatal(err)
	}

	if s.Readings != 5 || s.Window != 400*time.Millisecond || s.Period != 100*time.Millisecond {
		t.Errorf("readings %d, window %v, period %v; want 5, 400ms, 100ms", s.Readings, s.Window, s.Period)
	}
	// Δcpu / Δwall: 200 ms of CPU over 400 ms is half a core.
	a := s.Arm
	if !near(a.DataPlaneCoresUsed, 0.5) || !near(a.ControlPlaneCoresUsed, 0.1) || !near(a.CoresUsed, 0.6) {
		t.Errorf("cores: arm %v, data plane %v, control plane %v; want 0.6, 0.5, 0.1", a.CoresUsed, a.DataPlaneCoresUsed, a.ControlPlaneCoresUsed)
	}
	// Simultaneous: at the fourth reading dp holds 120 MiB and cp 250 MiB.
	// The sum of each one's own peak (300 + 250) never happened.
	if a.PeakAnonBytes != 370*mib || a.PeakShmemBytes != 70*mib {
		t.Errorf("arm peak %d MiB with %d MiB shmem; want 370 with 70", a.PeakAnonBytes/mib, a.PeakShmemBytes/mib)
	}
	if a.DataPlanePeakAnonBytes != 300*mib || a.DataPlanePeakShmemBytes != 200*mib {
		t.Errorf("data-plane peak %d MiB with %d MiB shmem; want 300 with 200", a.DataPlanePeakAnonBytes/mib, a.DataPlanePeakShmemBytes/mib)
	}
	if a.MemoryPeakBytes != 570*mib || a.DataPlaneMemoryPeakBytes != 310*mib || a.MemoryPeakKind != PeakWindow {
		t.Errorf("memory peak %d MiB, data plane %d MiB, kind %s; want 570, 310, window", a.MemoryPeakBytes/mib, a.DataPlaneMemoryPeakBytes/mib, a.MemoryPeakKind)
	}

	want := []Container{
		{Name: "dp", Role: DataPlane, Samples: 5, CoresUsed: 0.5, PeakAnonBytes: 300 * mib, PeakAnonShmemBytes: 200 * mib, PeakShmemBytes: 200 * mib,
			MemoryPeakBytes: 310 * mib, MemoryPeakKind: PeakWindow, ThrottledPeriods: 15, ThrottledUsec: 6000, OOMKills: 1},
		{Name: "cp", Role: ControlPlane, Samples: 5, CoresUsed: 0.1, PeakAnonBytes: 250 * mib, PeakAnonShmemBytes: 50 * mib, PeakShmemBytes: 50 * mib,
			MemoryPeakBytes: 260 * mib, MemoryPeakKind: PeakWindow},
		{Name: "broker", Role: Infra, Samples: 5, CoresUsed: 1, PeakAnonBytes: 4000 * mib,
			MemoryPeakBytes: 4100 * mib, MemoryPeakKind: PeakWindow},
	}
	// The series keeps every reading: its time, and each container's
	// cumulative CPU and anon+shmem.
	if !slices.Equal(s.Series.OffsetsMS, []int64{0, 100, 200, 300, 400}) {
		t.Errorf("series offsets %v, want every 100 ms", s.Series.OffsetsMS)
	}
	dp := s.Series.Containers[0]
	if dp.Name != "dp" || dp.Role != DataPlane ||
		!slices.Equal(dp.CPUUsageNs, []int64{5_000_000_000, 5_050_000_000, 5_100_000_000, 5_150_000_000, 5_200_000_000}) ||
		!slices.Equal(dp.AnonShmemBytes, []int64{100 * mib, 300 * mib, 150 * mib, 120 * mib, 100 * mib}) {
		t.Errorf("data-plane series %+v", dp)
	}
	for i, c := range s.Containers {
		w := want[i]
		if !near(c.CoresUsed, w.CoresUsed) {
			t.Errorf("%s: cores %v, want %v", c.Name, c.CoresUsed, w.CoresUsed)
		}
		c.CoresUsed = w.CoresUsed
		if c != w {
			t.Errorf("%s:\n got %+v\nwant %+v", c.Name, c, w)
		}
	}
}

func TestSummaryMetricNames(t *testing.T) {
	s := Summary{Arm: Arm{CoresUsed: 1.5, DataPlaneCoresUsed: 1.25, ControlPlaneCoresUsed: 0.25, PeakAnonBytes: 3, PeakShmemBytes: 2,
		MemoryPeakBytes: 4, DataPlanePeakAnonBytes: 5, DataPlanePeakShmemBytes: 6, DataPlaneMemoryPeakBytes: 7}}
	m := s.Metrics()
	want := map[string]float64{"cores_used": 1.5, "data_plane_cores_used": 1.25, "control_plane_cores_used": 0.25,
		"peak_anon_bytes": 3, "peak_shmem_bytes": 2, "memory_peak_bytes": 4,
		"data_plane_peak_anon_bytes": 5, "data_plane_peak_shmem_bytes": 6, "data_plane_memory_peak_bytes": 7}
	if len(m) != len(want) {
		t.Errorf("got %v, want %v", m, want)
	}
	for k, v := range want {
		if m[k] != v {
			t.Errorf("%s = %v, want %v", k, m[k], v)
		}
	}
	// The JSON form carries the same names.
	b, err := json.Marshal(s.Arm)
	if err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	for k, v := range want {
		if back[k] != v {
			t.Errorf("json %s = %v, want %v", k, back[k], v)
		}
	}
}

func TestLifetimePeakWhenTheKernelRefusesAReset(t *testing.T) {
	tr, targets := scriptedTargets(t)
	// A kernel before 5.19 has no memory.peak at all.
	if err := os.Remove(filepath.Join(tr.dirs["cp"], "memory.peak")); err != nil {
		t.Fatal(err)
	}
	d := startDriver(t, targets)
	s, err := d.finish()
	if err != nil {
		t.Fatal(err)
	}
	cp := s.Containers[1]
	if cp.MemoryPeakKind != PeakLifetime || !strings.Contains(cp.MemoryPeakNote, "5.19") {
		t.Errorf("control plane: kind %q note %q; want lifetime with the reason", cp.MemoryPeakKind, cp.MemoryPeakNote)
	}
	if s.Containers[0].MemoryPeakKind != PeakWindow || s.Arm.MemoryPeakKind != PeakLifetime {
		t.Errorf("data plane kind %q, arm kind %q; want window, lifetime", s.Containers[0].MemoryPeakKind, s.Arm.MemoryPeakKind)
	}
}

func TestATargetThatDisappearsIsReportedAndTheRestSummarised(t *testing.T) {
	tr, targets := scriptedTargets(t)
	d := startDriver(t, targets)
	play(tr, 1)
	d.tick()
	// The broker's container exits: its group goes away.
	if err := os.RemoveAll(tr.dirs["broker"]); err != nil {
		t.Fatal(err)
	}
	delete(tr.dirs, "broker")
	play(tr, 2)
	r := d.tick()
	if r.Errs[2] == nil || r.Errs[0] != nil {
		t.Errorf("reading errors %v; want only the broker's", r.Errs)
	}
	play(tr, 3)
	s, err := d.finish()
	if err == nil || !strings.Contains(err.Error(), "sampling broker (infra)") {
		t.Errorf("want the broker's failure returned, got %v", err)
	}
	b := s.Containers[2]
	if b.Samples != 2 || !strings.Contains(b.Err, "no longer exists") || !near(b.CoresUsed, 1) {
		t.Errorf("broker: %+v", b)
	}
	if s.Containers[0].Samples != 4 || !near(s.Arm.DataPlaneCoresUsed, 0.5) {
		t.Errorf("the data plane must be summarised in full: %+v", s.Containers[0])
	}
	// In the series, the readings it missed are -1, not 0.
	if got := s.Series.Containers[2].AnonShmemBytes; !slices.Equal(got, []int64{4000 * mib, 4000 * mib, -1, -1}) {
		t.Errorf("broker series %v, want its two readings then -1", got)
	}
}

func TestNewRejectsBadTargets(t *testing.T) {
	g := newTree(t).add("x", 1, counters{})
	cases := []struct {
		targets []Target
		opts    []Option
		want    string
	}{
		{nil, nil, "no targets"},
		{[]Target{{Name: "a", Role: "worker", Group: g}}, nil, `role "worker"`},
		{[]Target{{Name: "a", Role: DataPlane, Group: g}, {Name: "a", Role: Infra, Group: g}}, nil, "listed twice"},
		{[]Target{{Role: DataPlane, Group: g}}, nil, "no name"},
		{[]Target{{Name: "a", Role: DataPlane}}, nil, "no cgroup"},
		{[]Target{{Name: "a", Role: DataPlane, Group: g}}, []Option{WithPeriod(0)}, "must be positive"},
	}
	for _, c := range cases {
		if _, err := New(c.targets, c.opts...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("want an error containing %q, got %v", c.want, err)
		}
	}
	s, err := New([]Target{{Name: "a", Role: DataPlane, Group: g}})
	if err != nil || s.Period() != DefaultPeriod {
		t.Errorf("default period: %v %v", s, err)
	}
}

func TestRunOnTheSystemClock(t *testing.T) {
	g := newTree(t).add("x", 1, counters{usageUsec: 10, anon: mib})
	s, err := New([]Target{{Name: "x", Role: DataPlane, Group: g}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	sum, err := s.Run(ctx)
	// A window closed at once still has its opening and closing readings.
	if err != nil || sum.Readings != 2 || sum.Containers[0].PeakAnonBytes != mib || sum.End.Before(sum.Start) {
		t.Errorf("got %+v, %v", sum, err)
	}
}

func TestMeasureOverheadRejectsBadTargets(t *testing.T) {
	if _, err := MeasureOverhead(context.Background(), nil, DefaultPeriod, time.Millisecond); err == nil {
		t.Error("want an error for no targets")
	}
}

func TestSamplerOverV1Groups(t *testing.T) {
	// The hybrid fixture: Docker's systemd driver on a v1 host, a JVM
	// whose heap lives in a memfd (57 MiB anon, 805 MiB shmem).
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("..", "cgroup", "testdata", "hybrid"))); err != nil {
		t.Fatal(err)
	}
	fs := cgroup.FS{Root: filepath.Join(dir, "sys/fs/cgroup"), Proc: filepath.Join(dir, "proc")}
	g, err := fs.Locate(4244, "")
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	d := startDriver(t, []Target{{Name: "flink", Role: DataPlane, Group: g}})
	s, err := d.finish()
	if err != nil {
		t.Fatal(err)
	}
	c := s.Containers[0]
	if c.PeakAnonBytes != 59768832+844103680 || c.PeakAnonShmemBytes != 844103680 || c.MemoryPeakKind != PeakWindow {
		t.Errorf("got %+v; want anon+shmem 903872512 with 844103680 shmem, a window peak", c)
	}
	if s.Arm.PeakAnonBytes != c.PeakAnonBytes || s.Arm.DataPlanePeakShmemBytes != 844103680 {
		t.Errorf("arm %+v", s.Arm)
	}
	// v1 resets by writing 0 to max_usage_in_bytes.
	b, err := os.ReadFile(filepath.Join(g.Dir("memory"), "memory.max_usage_in_bytes"))
	if err != nil || string(b) != "0" {
		t.Errorf("max_usage_in_bytes %q %v, want the reset's 0", b, err)
	}
}

// TestC7ZGCHeapCountsAsShmem is the contract's own example: a JVM on ZGC
// keeps its heap in a memfd, charged to shmem. G1 anon=691M shmem=0
// publishes 691M; ZGC anon=57M shmem=805M must publish 862M, not the 57M
// anon alone would.
func TestC7ZGCHeapCountsAsShmem(t *testing.T) {
	for _, c := range []struct {
		gc               string
		anon, shmem, pub uint64
	}{{"G1", 691 * mib, 0, 691 * mib}, {"ZGC", 57 * mib, 805 * mib, 862 * mib}} {
		w := newWindow([]Target{{Name: "jvm", Role: DataPlane}}, 100*time.Millisecond)
		at := time.Unix(0, 0)
		for i, scale := range []uint64{1, 2, 2} { // the heap grows, then holds
			w.add(Reading{Index: i, At: at.Add(time.Duration(i) * 100 * time.Millisecond),
				Stats: []cgroup.Stat{{AnonBytes: c.anon * scale / 2, ShmemBytes: c.shmem * scale / 2}}, Errs: []error{nil}})
		}
		s, err := w.summary()
		if err != nil {
			t.Fatal(err)
		}
		if s.Arm.PeakAnonBytes != c.pub || s.Arm.PeakShmemBytes != c.shmem || s.Arm.DataPlanePeakAnonBytes != c.pub {
			t.Errorf("C7: %s anon=%dM shmem=%dM published peak_anon_bytes %dM (shmem %dM); want %dM (shmem %dM)",
				c.gc, c.anon/mib, c.shmem/mib, s.Arm.PeakAnonBytes/mib, s.Arm.PeakShmemBytes/mib, c.pub/mib, c.shmem/mib)
		}
	}
}

// step is one read of a restarting source: its counters, or why the read
// failed.
type step struct {
	st  cgroup.Stat
	err error
}

// restarting reads its steps in turn, repeating the last, and counts the
// reads.
type restarting struct {
	mu    sync.Mutex
	steps []step
	reads int
}

func (r *restarting) Stat() (cgroup.Stat, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reads++
	s := r.steps[0]
	if len(r.steps) > 1 {
		r.steps = r.steps[1:]
	}
	return s.st, s.err
}

func (r *restarting) ResetPeak() (bool, error) { return true, nil }

var errGone = errors.New("the group no longer exists")

// restartSteps is a data plane killed after the second reading and
// restarted by its restart policy: its cgroup is gone for two readings,
// then back at the same path with every counter starting again from zero.
// The first life burns 50 ms of CPU between its readings and has a process
// OOM-killed. The second life burns 80 ms.
var restartSteps = []step{
	{st: cgroup.Stat{CPUUsageNs: 1e9, AnonBytes: 100 * mib, MemoryPeakBytes: 150 * mib, NrThrottled: 4, ThrottledUsec: 40_000}},
	{st: cgroup.Stat{CPUUsageNs: 1.05e9, AnonBytes: 120 * mib, MemoryPeakBytes: 160 * mib, NrThrottled: 5, ThrottledUsec: 50_000, OOMKills: 1}},
	{err: errGone},
	{err: errGone},
	{st: cgroup.Stat{CPUUsageNs: 20e6, AnonBytes: 30 * mib, MemoryPeakBytes: 40 * mib, NrThrottled: 1, ThrottledUsec: 2_000}},
	{st: cgroup.Stat{CPUUsageNs: 80e6, AnonBytes: 90 * mib, ShmemBytes: 10 * mib, MemoryPeakBytes: 110 * mib, NrThrottled: 2, ThrottledUsec: 5_000}},
}

// restartTargets are a data plane that restarts as restartSteps says and a
// steady control plane (10 ms of CPU a reading).
func restartTargets() (*restarting, []Target) {
	dp := &restarting{steps: append([]step(nil), restartSteps...)}
	cp := &scripted{}
	for k := range 6 {
		cp.stats = append(cp.stats, cgroup.Stat{CPUUsageNs: uint64(k) * 10e6, AnonBytes: 50 * mib})
	}
	return dp, []Target{{Name: "dp", Role: DataPlane, Group: dp}, {Name: "cp", Role: ControlPlane, Group: cp}}
}

func TestWithRestartsFollowsATargetThroughItsRestart(t *testing.T) {
	src, targets := restartTargets()
	d := startDriver(t, targets, WithRestarts())
	for k := 1; k <= 4; k++ {
		r := d.tick()
		if failed := r.Errs[0] != nil; failed != (k == 2 || k == 3) {
			t.Errorf("reading %d: data-plane error %v; want one only while its cgroup is gone (readings 2 and 3)", k, r.Errs[0])
		}
	}
	s, err := d.finish()
	if err != nil {
		t.Errorf("the data plane came back, so the window did not fail: %v", err)
	}
	if src.reads != 6 {
		t.Errorf("the data plane was read %d times; want every reading's 6, the gap's included", src.reads)
	}
	dp := s.Series.Containers[0]
	if !slices.Equal(dp.CPUUsageNs, []int64{1e9, 1.05e9, -1, -1, 20e6, 80e6}) ||
		!slices.Equal(dp.AnonShmemBytes, []int64{100 * mib, 120 * mib, -1, -1, 30 * mib, 100 * mib}) {
		t.Errorf("data-plane series %+v; want -1 through the gap and the new life's counters after it", dp)
	}
	// Both lives' CPU, 50 ms and 80 ms, over the 500 ms window. The
	// counter's drop to 20 ms is the new life's first reading, not a loss.
	// Throttling and OOM kills add up alike. The memory peak is the first
	// life's: the second's 110 MiB counts only since its own start.
	want := Container{Name: "dp", Role: DataPlane, Samples: 4, Restarts: 1, CoresUsed: 0.26,
		PeakAnonBytes: 120 * mib, PeakShmemBytes: 10 * mib, MemoryPeakBytes: 160 * mib, MemoryPeakKind: PeakWindow,
		ThrottledPeriods: 1 + 2, ThrottledUsec: 10_000 + 5_000, OOMKills: 1}
	if got := s.Containers[0]; got != want {
		t.Errorf("data plane:\n got %+v\nwant %+v", got, want)
	}
	if cp := s.Containers[1]; cp.Restarts != 0 || cp.Samples != 6 || !near(cp.CoresUsed, 0.1) {
		t.Errorf("control plane %+v; want 6 samples, 0.1 cores, no restart", cp)
	}
	if !near(s.Arm.DataPlaneCoresUsed, 0.26) || !near(s.Arm.CoresUsed, 0.36) || s.Arm.DataPlaneMemoryPeakBytes != 160*mib {
		t.Errorf("arm %+v; want 0.26 data-plane cores, 0.36 in all, a 160 MiB data-plane memory peak", s.Arm)
	}
}

func TestWithoutRestartsATargetStopsAtItsFirstFailure(t *testing.T) {
	src, targets := restartTargets()
	d := startDriver(t, targets)
	for range 4 {
		d.tick()
	}
	s, err := d.finish()
	if err == nil || !strings.Contains(err.Error(), "sampling dp (data-plane)") {
		t.Errorf("want the data plane's failure returned, got %v", err)
	}
	if src.reads != 3 {
		t.Errorf("the data plane was read %d times; want 3, none after it failed", src.reads)
	}
	if got := s.Series.Containers[0].CPUUsageNs; !slices.Equal(got, []int64{1e9, 1.05e9, -1, -1, -1, -1}) {
		t.Errorf("data-plane series %v; want its two readings then -1", got)
	}
	want := Container{Name: "dp", Role: DataPlane, Samples: 2, CoresUsed: 0.5,
		PeakAnonBytes: 120 * mib, MemoryPeakBytes: 160 * mib, MemoryPeakKind: PeakWindow,
		ThrottledPeriods: 1, ThrottledUsec: 10_000, OOMKills: 1,
		Err: "sampling dp (data-plane): the group no longer exists"}
	if got := s.Containers[0]; got != want {
		t.Errorf("data plane:\n got %+v\nwant %+v", got, want)
	}
}

// TestWithRestartsReadsARecreatedGroupAtItsPath runs the sampler on real
// groups. A restarted container's cgroup is a new directory at the old
// path. The descriptors the group held still point at the old one, so only
// a group that opens its files again reads the new life.
func TestWithRestartsReadsARecreatedGroupAtItsPath(t *testing.T) {
	tr, targets := scriptedTargets(t)
	others := func(i int) {
		tr.set("cp", script["cp"][i])
		tr.set("broker", script["broker"][i])
	}
	d := startDriver(t, targets, WithRestarts())
	play(tr, 1)
	d.tick()
	// The data plane is killed: its cgroup goes.
	dir := tr.dirs["dp"]
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	others(2)
	if r := d.tick(); r.Errs[0] == nil || r.Errs[1] != nil {
		t.Fatalf("reading errors %v; want only the data plane's", r.Errs)
	}
	// Its restart policy starts it again: the same path, counters at zero.
	tr.mkgroup("dp", counters{usageUsec: 30_000, anon: 40 * mib, peak: 45 * mib})
	others(3)
	if r := d.tick(); r.Errs[0] != nil || r.Stats[0].CPUUsageNs != 30e6 || r.Stats[0].MemoryPeakBytes != 45*mib {
		t.Fatalf("after the restart the data plane read %+v, %v; want the new group's 30 ms of CPU and 45 MiB peak", r.Stats[0], r.Errs[0])
	}
	tr.set("dp", counters{usageUsec: 60_000, anon: 50 * mib, peak: 55 * mib})
	others(4)
	s, err := d.finish()
	if err != nil {
		t.Fatal(err)
	}
	// 50 ms of CPU in the first life, 60 ms in the second, over 400 ms.
	// The throttling is the first life's. The new group was never throttled.
	want := Container{Name: "dp", Role: DataPlane, Samples: 4, Restarts: 1, CoresUsed: 0.275,
		PeakAnonBytes: 300 * mib, PeakAnonShmemBytes: 200 * mib, PeakShmemBytes: 200 * mib,
		MemoryPeakBytes: 300 * mib, MemoryPeakKind: PeakWindow, ThrottledPeriods: 2, ThrottledUsec: 1000}
	if got := s.Containers[0]; got != want {
		t.Errorf("data plane:\n got %+v\nwant %+v", got, want)
	}
	if got := s.Series.Containers[0].CPUUsageNs; !slices.Equal(got, []int64{5e9, 5.05e9, -1, 30e6, 60e6}) {
		t.Errorf("data-plane series %v", got)
	}
}

// TestOnlyACounterThatGoesBackIsARestart: a drop between two successful
// readings is a restart, gap or not. A gap after which every counter has
// kept growing is one life whose reads failed for a while.
func TestOnlyACounterThatGoesBackIsARestart(t *testing.T) {
	at := time.Unix(0, 0)
	for _, c := range []struct {
		name     string
		steps    []step
		restarts int
		cpuNs    float64
		oom      uint64
	}{
		{"a drop with no gap", []step{
			{st: cgroup.Stat{CPUUsageNs: 300e6}}, {st: cgroup.Stat{CPUUsageNs: 400e6}},
			{st: cgroup.Stat{CPUUsageNs: 10e6}}, {st: cgroup.Stat{CPUUsageNs: 50e6}},
		}, 1, 100e6 + 50e6, 0},
		{"a gap with no drop", []step{
			{st: cgroup.Stat{CPUUsageNs: 300e6}}, {err: errGone},
			{st: cgroup.Stat{CPUUsageNs: 500e6, OOMKills: 1}}, {st: cgroup.Stat{CPUUsageNs: 600e6, OOMKills: 1}},
		}, 0, 300e6, 1},
		{"only the OOM kills go back", []step{
			{st: cgroup.Stat{CPUUsageNs: 0, OOMKills: 2}}, {err: errGone},
			{st: cgroup.Stat{CPUUsageNs: 100e6, OOMKills: 1}}, {st: cgroup.Stat{CPUUsageNs: 200e6, OOMKills: 1}},
		}, 1, 200e6, 1},
		{"two restarts", []step{
			{st: cgroup.Stat{CPUUsageNs: 300e6}}, {st: cgroup.Stat{CPUUsageNs: 20e6}},
			{st: cgroup.Stat{CPUUsageNs: 10e6}}, {st: cgroup.Stat{CPUUsageNs: 30e6}},
		}, 2, 20e6 + 30e6, 0},
	} {
		w := newWindow([]Target{{Name: "dp", Role: DataPlane}}, 100*time.Millisecond)
		for k, s := range c.steps {
			w.add(Reading{Index: k, At: at.Add(time.Duration(k) * 100 * time.Millisecond), Stats: []cgroup.Stat{s.st}, Errs: []error{s.err}})
		}
		s, err := w.summary()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		dp := s.Containers[0]
		if dp.Restarts != c.restarts || dp.CoresUsed != c.cpuNs/300e6 || dp.OOMKills != c.oom {
			t.Errorf("%s: %d restarts, %v cores, %d OOM kills; want %d, %v, %d",
				c.name, dp.Restarts, dp.CoresUsed, dp.OOMKills, c.restarts, c.cpuNs/300e6, c.oom)
		}
	}
}
