package sample

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"spatec.dev/spatec/exec/cgroup"
)

// exits reads as scripted until its container exits, before reading gone.
type exits struct {
	*scripted
	gone, reads int
}

func (e *exits) Stat() (cgroup.Stat, error) {
	e.reads++
	if e.reads > e.gone {
		return cgroup.Stat{}, errors.New("container exited")
	}
	return e.scripted.Stat()
}

// refusing is a kernel that will not reset the peak: it is the group's
// lifetime's.
type refusing struct{ *scripted }

func (refusing) ResetPeak() (bool, error) { return false, nil }

// stalled is a drain that stalled after its third reading (200 ms): in the
// tail the sampler kept reading, the data plane burnt two cores under
// throttling, the arm's memory spiked and the OOM killer struck, and the
// broker's container exited.
var stalled = map[string][]cgroup.Stat{
	"dp": {
		{CPUUsageNs: 0, AnonBytes: 100 * mib, MemoryPeakBytes: 100 * mib},
		{CPUUsageNs: 100e6, AnonBytes: 100 * mib, ShmemBytes: 80 * mib, MemoryPeakBytes: 185 * mib, NrThrottled: 1, ThrottledUsec: 10_000},
		{CPUUsageNs: 200e6, AnonBytes: 120 * mib, ShmemBytes: 20 * mib, MemoryPeakBytes: 190 * mib, NrThrottled: 2, ThrottledUsec: 20_000},
		{CPUUsageNs: 400e6, AnonBytes: 400 * mib, MemoryPeakBytes: 410 * mib, NrThrottled: 5, ThrottledUsec: 80_000},
		{CPUUsageNs: 600e6, AnonBytes: 500 * mib, MemoryPeakBytes: 520 * mib, NrThrottled: 8, ThrottledUsec: 140_000, OOMKills: 1},
		{CPUUsageNs: 800e6, AnonBytes: 50 * mib, MemoryPeakBytes: 520 * mib, NrThrottled: 11, ThrottledUsec: 200_000, OOMKills: 1},
	},
	"cp": {
		{CPUUsageNs: 0, AnonBytes: 50 * mib, MemoryPeakBytes: 55 * mib},
		{CPUUsageNs: 10e6, AnonBytes: 40 * mib, MemoryPeakBytes: 55 * mib},
		{CPUUsageNs: 20e6, AnonBytes: 60 * mib, ShmemBytes: 30 * mib, MemoryPeakBytes: 95 * mib},
		{CPUUsageNs: 30e6, AnonBytes: 300 * mib, ShmemBytes: 100 * mib, MemoryPeakBytes: 410 * mib},
		{CPUUsageNs: 40e6, AnonBytes: 50 * mib, MemoryPeakBytes: 410 * mib},
		{CPUUsageNs: 50e6, AnonBytes: 50 * mib, MemoryPeakBytes: 410 * mib},
	},
	"broker": {
		{CPUUsageNs: 0, AnonBytes: 1000 * mib},
		{CPUUsageNs: 50e6, AnonBytes: 1000 * mib},
		{CPUUsageNs: 100e6, AnonBytes: 1000 * mib},
		{CPUUsageNs: 150e6, AnonBytes: 1000 * mib},
	},
}

// stalledTargets are fresh sources for the stalled script; the broker's
// container exits before reading brokerGone, and a kernel that refuses
// the reset holds the control plane's group if cpLifetime.
func stalledTargets(brokerGone int, cpLifetime bool) []Target {
	src := func(name string) *scripted { return &scripted{stats: append([]cgroup.Stat(nil), stalled[name]...)} }
	var cp Source = src("cp")
	if cpLifetime {
		cp = refusing{src("cp")}
	}
	return []Target{
		{Name: "dp", Role: DataPlane, Group: src("dp")},
		{Name: "cp", Role: ControlPlane, Group: cp},
		{Name: "broker", Role: Infra, Group: &exits{scripted: src("broker"), gone: brokerGone}},
	}
}

// sampleFor takes n readings, 100 ms apart, then closes the window.
func sampleFor(t *testing.T, targets []Target, n int, opts ...Option) Summary {
	t.Helper()
	d := startDriver(t, targets, opts...)
	for range n - 2 {
		d.tick()
	}
	s, _ := d.finish()
	return s
}

func TestUntilCountsOnlyTheReadingsUpToTheCut(t *testing.T) {
	whole := sampleFor(t, stalledTargets(4, false), 6)
	// The tail is what the cut must leave out.
	if !near(whole.Arm.DataPlaneCoresUsed, 1.6) || whole.Containers[0].OOMKills != 1 || whole.Arm.PeakAnonBytes != 800*mib {
		t.Fatalf("whole window: %v data-plane cores, %d OOM kills, arm peak %d MiB; want 1.6, 1, 800",
			whole.Arm.DataPlaneCoresUsed, whole.Containers[0].OOMKills, whole.Arm.PeakAnonBytes/mib)
	}

	s := whole.Until(250 * time.Millisecond)
	if s.Readings != 3 || s.Window != 200*time.Millisecond || !s.Start.Equal(whole.Start) || s.Period != whole.Period {
		t.Errorf("cut: %d readings over %v from %v; want 3 over 200ms from %v", s.Readings, s.Window, s.Start, whole.Start)
	}
	a := s.Arm
	// 200 ms of CPU over 200 ms, not the tail's two cores.
	if !near(a.DataPlaneCoresUsed, 1) || !near(a.ControlPlaneCoresUsed, 0.1) || !near(a.CoresUsed, 1.1) {
		t.Errorf("cores: arm %v, data plane %v, control plane %v; want 1.1, 1, 0.1", a.CoresUsed, a.DataPlaneCoresUsed, a.ControlPlaneCoresUsed)
	}
	// Simultaneous, at the third reading: dp 140 MiB and cp 90 MiB, 50 of
	// it shmem; not the tail's 800.
	if a.PeakAnonBytes != 230*mib || a.PeakShmemBytes != 50*mib {
		t.Errorf("arm peak %d MiB with %d MiB shmem; want 230 with 50", a.PeakAnonBytes/mib, a.PeakShmemBytes/mib)
	}
	if a.DataPlanePeakAnonBytes != 180*mib || a.DataPlanePeakShmemBytes != 80*mib {
		t.Errorf("data-plane peak %d MiB with %d MiB shmem; want 180 with 80", a.DataPlanePeakAnonBytes/mib, a.DataPlanePeakShmemBytes/mib)
	}
	if a.MemoryPeakBytes != 285*mib || a.DataPlaneMemoryPeakBytes != 190*mib || a.MemoryPeakKind != PeakWindow {
		t.Errorf("memory peak %d MiB, data plane %d MiB, kind %s; want 285, 190, window", a.MemoryPeakBytes/mib, a.DataPlaneMemoryPeakBytes/mib, a.MemoryPeakKind)
	}
	want := []Container{
		{Name: "dp", Role: DataPlane, Samples: 3, CoresUsed: 1, PeakAnonBytes: 180 * mib, PeakAnonShmemBytes: 80 * mib, PeakShmemBytes: 80 * mib,
			MemoryPeakBytes: 190 * mib, MemoryPeakKind: PeakWindow, ThrottledPeriods: 2, ThrottledUsec: 20_000},
		{Name: "cp", Role: ControlPlane, Samples: 3, CoresUsed: 0.1, PeakAnonBytes: 90 * mib, PeakAnonShmemBytes: 30 * mib, PeakShmemBytes: 30 * mib,
			MemoryPeakBytes: 95 * mib, MemoryPeakKind: PeakWindow},
		// Its container exited in the tail, after the cut: not in the window.
		{Name: "broker", Role: Infra, Samples: 3, CoresUsed: 0.5, PeakAnonBytes: 1000 * mib, MemoryPeakKind: PeakWindow},
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
	if got := s.Series.OffsetsMS; !reflect.DeepEqual(got, []int64{0, 100, 200}) {
		t.Errorf("series offsets %v, want the three readings kept", got)
	}
	if got := s.Series.Containers[0].AnonShmemBytes; !reflect.DeepEqual(got, []int64{100 * mib, 180 * mib, 140 * mib}) {
		t.Errorf("data-plane series %v", got)
	}
	m := s.Metrics()
	if !near(m["cores_used"], 1.1) || m["peak_anon_bytes"] != 230*mib || m["memory_peak_bytes"] != 285*mib {
		t.Errorf("metrics %v", m)
	}
}

func TestUntilIsTheSummaryOfASamplerStoppedThere(t *testing.T) {
	for _, c := range []struct {
		cut        time.Duration
		kept       int
		brokerGone int
	}{
		{100 * time.Millisecond, 2, 4}, // a cut on a reading keeps it
		{150 * time.Millisecond, 2, 4},
		{250 * time.Millisecond, 3, 4},
		{400 * time.Millisecond, 5, 4},  // the broker's exit is in the window
		{250 * time.Millisecond, 3, 2},  // and here too, at the third reading
		{150 * time.Millisecond, 2, 2},  // but not here
		{450 * time.Millisecond, 5, 10}, // the broker never exits
	} {
		whole := sampleFor(t, stalledTargets(c.brokerGone, false), 6)
		stopped := sampleFor(t, stalledTargets(c.brokerGone, false), c.kept)
		if got := whole.Until(c.cut); !reflect.DeepEqual(got, stopped) {
			t.Errorf("cut at %v (broker gone at reading %d):\n got %+v\nwant %+v", c.cut, c.brokerGone, got, stopped)
		}
	}
}

func TestUntilPastTheWindowChangesNothing(t *testing.T) {
	whole := sampleFor(t, stalledTargets(4, false), 6)
	for _, d := range []time.Duration{500 * time.Millisecond, 8 * time.Second} {
		s := whole.Until(d)
		if !reflect.DeepEqual(s, whole) {
			t.Errorf("cut at %v of a 500ms window:\n got %+v\nwant %+v", d, s, whole)
		}
		if s.Readings != 6 || !near(s.Arm.DataPlaneCoresUsed, 1.6) || s.Arm.PeakAnonBytes != 800*mib || s.Containers[0].ThrottledUsec != 200_000 {
			t.Errorf("cut at %v: %d readings, %v data-plane cores, arm peak %d MiB, %d µs throttled; want 6, 1.6, 800, 200000",
				d, s.Readings, s.Arm.DataPlaneCoresUsed, s.Arm.PeakAnonBytes/mib, s.Containers[0].ThrottledUsec)
		}
	}
	// A summary no sampler built has nothing to cut by.
	bare := Summary{Period: 100 * time.Millisecond, Readings: 3, Window: time.Second}
	if s := bare.Until(time.Millisecond); !reflect.DeepEqual(s, bare) {
		t.Errorf("a bare summary was cut: %+v", s)
	}
}

func TestUntilLeavesALifetimePeak(t *testing.T) {
	s := sampleFor(t, stalledTargets(4, true), 6).Until(250 * time.Millisecond)
	cp := s.Containers[1]
	// The kernel's peak since the group was made, as read at the close.
	if cp.MemoryPeakKind != PeakLifetime || cp.MemoryPeakBytes != 410*mib {
		t.Errorf("control plane: peak %d MiB (%s); want the lifetime's 410", cp.MemoryPeakBytes/mib, cp.MemoryPeakKind)
	}
	if s.Arm.MemoryPeakKind != PeakLifetime || s.Arm.MemoryPeakBytes != 600*mib || s.Arm.DataPlaneMemoryPeakBytes != 190*mib {
		t.Errorf("arm memory peak %d MiB (%s), data plane %d MiB; want 190+410 lifetime, 190",
			s.Arm.MemoryPeakBytes/mib, s.Arm.MemoryPeakKind, s.Arm.DataPlaneMemoryPeakBytes/mib)
	}
	// Its other figures are cut like any container's.
	if cp.Samples != 3 || cp.PeakAnonBytes != 90*mib || !near(cp.CoresUsed, 0.1) {
		t.Errorf("control plane: %+v", cp)
	}
}

func TestUntilFromAnOrigin(t *testing.T) {
	// With an origin the first reading is the origin's: the arm at zero,
	// the broker not read. The cut keeps both kinds as they were.
	dp := &scripted{stats: []cgroup.Stat{{CPUUsageNs: 400e6, AnonBytes: 10 * mib}, {CPUUsageNs: 500e6, AnonBytes: 30 * mib}, {CPUUsageNs: 900e6, AnonBytes: 300 * mib}}}
	broker := &scripted{stats: []cgroup.Stat{{CPUUsageNs: 10e9, AnonBytes: 1 << 30}, {CPUUsageNs: 10.05e9, AnonBytes: 1 << 30}, {CPUUsageNs: 10.5e9, AnonBytes: 1 << 30}}}
	w := newWindow([]Target{{Name: "dp", Role: DataPlane}, {Name: "broker", Role: Infra}}, 100*time.Millisecond)
	w.acc[0].peakWindow, w.acc[1].peakWindow = true, true
	origin := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	w.add(Reading{At: origin, Stats: make([]cgroup.Stat, 2), Errs: []error{nil, errBeforeOrigin}})
	for k, at := range []time.Duration{time.Second, 1100 * time.Millisecond, 1200 * time.Millisecond} {
		a, _ := dp.Stat()
		b, _ := broker.Stat()
		w.add(Reading{Index: k + 1, At: origin.Add(at), Stats: []cgroup.Stat{a, b}, Errs: make([]error, 2)})
	}
	whole, err := w.summary()
	if err != nil {
		t.Fatal(err)
	}
	s := whole.Until(1150 * time.Millisecond)
	c := s.Containers
	if s.Readings != 3 || s.Window != 1100*time.Millisecond || c[0].Err != "" || c[1].Err != "" {
		t.Errorf("cut: %d readings over %v, errors %q %q; want 3 over 1.1s, none", s.Readings, s.Window, c[0].Err, c[1].Err)
	}
	if !near(c[0].CoresUsed, 0.5/1.1) || c[0].Samples != 3 || c[0].PeakAnonBytes != 30*mib {
		t.Errorf("dp: %v cores over %d samples, peak %d MiB; want 0.5 s of CPU over 1.1 s, 3 samples, 30 MiB", c[0].CoresUsed, c[0].Samples, c[0].PeakAnonBytes/mib)
	}
	if !near(c[1].CoresUsed, 0.5) || c[1].Samples != 2 || s.Series.Containers[1].CPUUsageNs[0] != -1 {
		t.Errorf("broker: %v cores over %d samples, series %v; want 0.5, 2, not read at the origin", c[1].CoresUsed, c[1].Samples, s.Series.Containers[1].CPUUsageNs)
	}
}

func TestUntilWithARestartInTheWindow(t *testing.T) {
	whole := func() Summary {
		_, targets := restartTargets()
		return sampleFor(t, targets, 6, WithRestarts())
	}()
	for _, c := range []struct {
		cut  time.Duration
		kept int
	}{
		{150 * time.Millisecond, 2}, // before the fault
		{250 * time.Millisecond, 3}, // in the gap: the data plane unreadable at the cut
		{300 * time.Millisecond, 4},
		{400 * time.Millisecond, 5}, // the new life's first reading
		{450 * time.Millisecond, 5},
	} {
		_, targets := restartTargets()
		stopped := sampleFor(t, targets, c.kept, WithRestarts())
		got := whole.Until(c.cut)
		if !reflect.DeepEqual(got, stopped) {
			t.Errorf("cut at %v:\n got %+v\nwant %+v", c.cut, got, stopped)
		}
		dp := got.Containers[0]
		if inGap := c.kept == 3 || c.kept == 4; (dp.Err != "") != inGap {
			t.Errorf("cut at %v: data-plane error %q; want one only when the cut is in the gap", c.cut, dp.Err)
		}
	}
	// Past the restart the cut keeps both lives: 50 ms of CPU and 20 ms
	// over 400 ms, with the first life's memory peak.
	s := whole.Until(400 * time.Millisecond)
	if dp := s.Containers[0]; dp.Restarts != 1 || dp.CoresUsed != 0.175 || dp.MemoryPeakBytes != 160*mib || dp.OOMKills != 1 || dp.Err != "" {
		t.Errorf("cut past the restart: %+v; want 1 restart, 0.175 cores, a 160 MiB peak, 1 OOM kill, no error", dp)
	}
}
