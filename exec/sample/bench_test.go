package sample

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"spatec.dev/spatec/exec/cgroup"
	"spatec.dev/spatec/exec/cgroup/cgrouptest"
)

var overheadFor = flag.Duration("sampler.overhead", 0,
	"run BenchmarkSamplerOverhead for this long (the performance target is measured over 30s)")

// fourGroups locates the same fixture group four times: each Target reads
// its own files, as four containers would.
func fourGroups(tb testing.TB, fs cgroup.FS, pid int) []Target {
	tb.Helper()
	roles := []string{DataPlane, ControlPlane, Infra, Infra}
	targets := make([]Target, len(roles))
	for i, role := range roles {
		g, err := fs.Locate(pid, "")
		if err != nil {
			tb.Fatalf("locating the groups of pid %d: %v", pid, err)
		}
		tb.Cleanup(func() { g.Close() })
		targets[i] = Target{Name: fmt.Sprintf("c%d", i), Role: role, Group: g}
	}
	return targets
}

func v2Fixture(tb testing.TB) []Target {
	tb.Helper()
	dir := tb.TempDir()
	src := filepath.Join("..", "cgroup", "testdata", "v2")
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		tb.Fatal(err)
	}
	return fourGroups(tb, cgroup.FS{Root: filepath.Join(dir, "sys/fs/cgroup"), Proc: filepath.Join(dir, "proc")}, 4242)
}

// v1Fixture works on a copy: the sampler resets peaks, which writes to the
// tree.
func v1Fixture(tb testing.TB) []Target {
	tb.Helper()
	dir := tb.TempDir()
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("..", "cgroup", "testdata", "v1"))); err != nil {
		tb.Fatal(err)
	}
	return fourGroups(tb, cgroup.FS{Root: filepath.Join(dir, "sys/fs/cgroup"), Proc: filepath.Join(dir, "proc")}, 4243)
}

// hostGroups creates four v1 groups on this host, each with a sleeping
// process, and targets them. Each is capped at 0.5 CPU and 256 MiB.
func hostGroups(tb testing.TB) []Target {
	tb.Helper()
	if err := cgrouptest.Probe(); err != nil {
		tb.Skipf("no host groups: %v", err)
	}
	roles := []string{DataPlane, ControlPlane, Infra, Infra}
	targets := make([]Target, len(roles))
	for i, role := range roles {
		cg := cgrouptest.New(tb, cgrouptest.Limits{CPUQuotaUs: 50000, MemoryBytes: 256 << 20})
		g, err := cgroup.FS{}.Locate(cg.Start(tb, exec.Command("sleep", "600")), "")
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { g.Close() })
		targets[i] = Target{Name: cg.Name, Role: role, Group: g}
	}
	return targets
}

// BenchmarkSampleTick is one tick over 4 containers. At 10 Hz a tick of
// t ns costs t × 10 / 1e9 of a core: under 1% needs t under 1 ms.
func BenchmarkSampleTick(b *testing.B) {
	for _, c := range []struct {
		name    string
		targets func(testing.TB) []Target
	}{{"v2-fixture", v2Fixture}, {"v1-fixture", v1Fixture}, {"host", hostGroups}} {
		b.Run(c.name, func(b *testing.B) {
			s, err := New(c.targets(b))
			if err != nil {
				b.Fatal(err)
			}
			w := newWindow(s.targets, s.period)
			for b.Loop() {
				s.read(w)
			}
			if _, err := w.summary(); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)*10/1e9*100, "%core@10Hz")
		})
	}
}

// BenchmarkSamplerOverhead runs the real sampler at 100 ms over 4 host
// groups for -sampler.overhead and reports the process's CPU time
// over wall time:
//
//	go test -run '^$' -bench SamplerOverhead -benchtime 1x -sampler.overhead 30s ./exec/sample/
func BenchmarkSamplerOverhead(b *testing.B) {
	if *overheadFor <= 0 {
		b.Skip("set -sampler.overhead (30s for the performance target)")
	}
	targets := hostGroups(b)
	var frac float64
	for b.Loop() {
		f, err := MeasureOverhead(context.Background(), targets, DefaultPeriod, *overheadFor)
		if err != nil {
			b.Fatal(err)
		}
		frac = f
	}
	b.ReportMetric(frac*100, "%core")
	b.ReportMetric(float64(*overheadFor/time.Second), "s")
}

// BenchmarkWindowResolution runs the real sampler with the system clock at
// 100 ms and at 1 s over the same 4 fixture containers and reports the median
// gap between two readings of each: a window's start and end are known to
// within that gap. The target is 100 ms or less, ten times finer than a 1 s
// sampler.
func BenchmarkWindowResolution(b *testing.B) {
	targets := v1Fixture(b)
	gap := func(period, window time.Duration) time.Duration {
		var last time.Time
		var gaps []time.Duration
		s, err := New(targets, WithPeriod(period), WithObserver(func(r Reading) {
			if !last.IsZero() {
				gaps = append(gaps, r.At.Sub(last))
			}
			last = r.At
		}))
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), window)
		defer cancel()
		if _, err := s.Run(ctx); err != nil {
			b.Fatal(err)
		}
		// The median, because the closing reading comes when the window
		// ends, not on a tick.
		slices.Sort(gaps)
		return gaps[len(gaps)/2]
	}
	var fine, coarse time.Duration
	for b.Loop() {
		fine = gap(100*time.Millisecond, 3050*time.Millisecond)
		coarse = gap(time.Second, 3050*time.Millisecond)
	}
	b.ReportMetric(float64(fine.Microseconds())/1000, "ms-gap@100ms")
	b.ReportMetric(float64(coarse.Microseconds())/1000, "ms-gap@1s")
	b.ReportMetric(float64(coarse)/float64(fine), "1s/100ms")
}
