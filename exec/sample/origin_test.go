package sample

import (
	"context"
	"sync"
	"testing"
	"time"

	"spatec.dev/spatec/exec/cgroup"
)

// scripted returns its stats in turn, repeating the last, and counts peak
// resets.
type scripted struct {
	mu     sync.Mutex
	stats  []cgroup.Stat
	resets int
}

func (s *scripted) Stat() (cgroup.Stat, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats[0]
	if len(s.stats) > 1 {
		s.stats = s.stats[1:]
	}
	return st, nil
}

func (s *scripted) ResetPeak() (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.resets++
	return true, nil
}

// TestWindowFromOrigin: with an origin, an arm container's figures run from
// it with its counters at zero there, and its peak is not reset (it is the
// kernel's since the group was made); the infrastructure is measured from
// its first reading, its peak reset, as without an origin.
func TestWindowFromOrigin(t *testing.T) {
	dp := &scripted{stats: []cgroup.Stat{{CPUUsageNs: 400e6, AnonBytes: 10 << 20}, {CPUUsageNs: 450e6, AnonBytes: 30 << 20}}}
	broker := &scripted{stats: []cgroup.Stat{{CPUUsageNs: 10e9, AnonBytes: 1 << 30}, {CPUUsageNs: 10.05e9, AnonBytes: 1 << 30}}}
	clock := newFakeClock()
	origin := clock.Now().Add(-time.Second)
	s, err := New([]Target{{Name: "dp", Role: DataPlane, Group: dp}, {Name: "broker", Role: Infra, Group: broker}},
		WithClock(clock), WithOrigin(origin), WithObserver(func(Reading) {}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan Summary)
	go func() {
		sum, err := s.Run(ctx)
		if err != nil {
			t.Error(err)
		}
		done <- sum
	}()
	// The first reading is taken at once; the last when the window closes,
	// 100 ms later.
	time.Sleep(50 * time.Millisecond)
	clock.advance(100 * time.Millisecond)
	cancel()
	sum := <-done

	if sum.Readings != 3 || !sum.Start.Equal(origin) || sum.Window != 1100*time.Millisecond {
		t.Errorf("window: %d readings from %v for %v; want 3 from the origin %v, for 1.1s", sum.Readings, sum.Start, sum.Window, origin)
	}
	c := sum.Containers
	if !near(c[0].CoresUsed, 0.45/1.1) || c[0].Samples != 3 {
		t.Errorf("dp: %v cores over %d samples; want 0.45 s of CPU over the 1.1 s since the origin, 3 samples", c[0].CoresUsed, c[0].Samples)
	}
	if !near(c[1].CoresUsed, 0.5) || c[1].Samples != 2 {
		t.Errorf("broker: %v cores over %d samples; want 0.05 s over the 0.1 s it was read, 2 samples", c[1].CoresUsed, c[1].Samples)
	}
	if dp.resets != 0 || broker.resets != 1 || c[0].MemoryPeakKind != PeakWindow {
		t.Errorf("peak resets: dp %d, broker %d (dp's peak %s); want the arm's kept since its group was made", dp.resets, broker.resets, c[0].MemoryPeakKind)
	}
	if got := sum.Series.Containers[1].CPUUsageNs[0]; got != -1 {
		t.Errorf("the broker's series at the origin reads %d, want -1 (not read)", got)
	}
}
