package sample

import (
	"errors"
	"sort"
	"time"

	"spatec.dev/spatec/exec/cgroup"
)

// Peak kinds: whether a memory peak covers the window or the container's
// whole life (the kernel refused the reset).
const (
	PeakWindow   = "window"
	PeakLifetime = "lifetime"
)

// Summary is what one window measured.
type Summary struct {
	Start, End time.Time
	// Window is End − Start.
	Window time.Duration
	// Period is the sampling period: the window's resolution.
	Period time.Duration
	// Readings counts the ticks taken, the first and last included.
	Readings   int
	Containers []Container
	Arm        Arm
	// Series is the window reading by reading, for what a chart over time
	// shows: warm-up, stalls, a GC sawtooth, the drain's tail.
	Series Series
	trail  trail
}

// trail is what Until needs of every reading beyond the series: the exact
// instants (the series' are whole milliseconds, too coarse for the cores
// of a short window), the counters the series leaves out, and why a
// reading failed. It costs 8 bytes a reading and 40 a container, about 7
// MB for five containers over an hour at 10 Hz. Each run of failed
// readings adds a few bytes more.
type trail struct {
	// at are the readings' offsets from Start.
	at []time.Duration
	// stats are indexed like the targets, then like at; a reading that
	// failed is zero.
	stats [][]trailStat
	// failures are, per target, the runs of readings that failed, in
	// order. The series cannot tell a failed reading from one not taken
	// before the origin (both are -1), and under WithRestarts a target can
	// fail and then be read again.
	failures [][]failure
}

// failure starts a run of failed readings of one target. The run lasts
// until the target's next successful reading, or to the window's end.
type failure struct {
	// at is the index of the run's first reading.
	at int
	// err is that reading's error.
	err string
}

// trailStat is the part of a reading's cgroup.Stat that the series does
// not keep.
type trailStat struct {
	shmem, nrThrottled, throttledUsec, oomKills, memoryPeak uint64
}

// Series holds every reading of the window. It grows with the window: 8
// bytes a reading and 16 a container, about 3 MB for five containers over
// an hour at 10 Hz.
type Series struct {
	// OffsetsMS are the readings' times, in milliseconds from the first.
	OffsetsMS []int64
	// Containers are indexed like the targets.
	Containers []ContainerSeries
}

// ContainerSeries is one container's readings, aligned with
// Series.OffsetsMS; a reading that failed is -1 in both.
type ContainerSeries struct {
	Name, Role string
	// CPUUsageNs is the cumulative CPU time at each reading.
	CPUUsageNs []int64
	// AnonShmemBytes is anon + shmem at each reading (C7).
	AnonShmemBytes []int64
}

// Container is one target's share of the window.
type Container struct {
	Name string
	Role string
	// Samples counts the readings that succeeded.
	Samples int
	// Restarts counts the restarts seen in the window: successful readings
	// where a cumulative counter (CPU time, throttled periods or time, OOM
	// kills) was lower than at the target's previous successful reading.
	// Only a new cgroup starting again from zero does that. When it is not
	// 0, the figures span the container's lives: the cumulative figures add
	// up each life's growth, and MemoryPeakBytes is the largest life's peak.
	// What a life did after its last reading is lost with its cgroup.
	//
	// A gap of failed readings alone is not a restart. A read can fail
	// while the group lives (a probe's read timing out), and taking that as
	// a restart would count the group's whole CPU time since it was made a
	// second time. A real restart shows as a drop: the sampler reads the
	// new group within a period of its appearing, long before its
	// counters can pass the old life's.
	Restarts int
	// CoresUsed is CPU time over wall time between the first and the last
	// successful reading. The CPU time is the sum of its growth between
	// successive successful readings, across restarts.
	CoresUsed float64
	// PeakAnonBytes is the largest anon+shmem of any reading (C7);
	// PeakAnonShmemBytes is the shmem part of that reading.
	PeakAnonBytes      uint64
	PeakAnonShmemBytes uint64
	// PeakShmemBytes is the largest shmem of any reading.
	PeakShmemBytes uint64
	// MemoryPeakBytes is the kernel's high-water mark at the last reading
	// (memory.peak, v1 max_usage_in_bytes); MemoryPeakKind says whether it
	// covers the window or the container's life, MemoryPeakNote why not.
	// A restarted cgroup's mark covers only its new life. So after a
	// restart, this is the largest of each life's mark as last read.
	MemoryPeakBytes uint64
	MemoryPeakKind  string
	MemoryPeakNote  string
	// Throttling and OOM kills during the window, summed like CPU time.
	ThrottledPeriods uint64
	ThrottledUsec    uint64
	OOMKills         uint64
	// Err is why the target could not be read at the window's close, ""
	// if it could. Without WithRestarts, a target's first failure ends its
	// sampling, so this is that failure. With it, Err is the first failure
	// of the run of failed readings that reached the close.
	Err string
}

// Arm is the arm's figures: its data-plane and control-plane containers,
// infra excluded (C8). Memory peaks are simultaneous: the largest sum over
// the arm's containers at one reading, not the sum of each one's peak.
type Arm struct {
	CoresUsed             float64 `json:"cores_used"`
	DataPlaneCoresUsed    float64 `json:"data_plane_cores_used"`
	ControlPlaneCoresUsed float64 `json:"control_plane_cores_used"`

	PeakAnonBytes   uint64 `json:"peak_anon_bytes"`
	PeakShmemBytes  uint64 `json:"peak_shmem_bytes"`
	MemoryPeakBytes uint64 `json:"memory_peak_bytes"`

	DataPlanePeakAnonBytes   uint64 `json:"data_plane_peak_anon_bytes"`
	DataPlanePeakShmemBytes  uint64 `json:"data_plane_peak_shmem_bytes"`
	DataPlaneMemoryPeakBytes uint64 `json:"data_plane_memory_peak_bytes"`

	// MemoryPeakKind is PeakLifetime if any arm container's is.
	MemoryPeakKind string `json:"memory_peak_kind"`
}

// Metrics returns the arm's figures under the record's metric names.
// MemoryPeakBytes sums the containers' own peaks, which may fall at
// different instants: it bounds the arm's peak from above.
func (s Summary) Metrics() map[string]float64 {
	a := s.Arm
	return map[string]float64{
		"cores_used":                   a.CoresUsed,
		"data_plane_cores_used":        a.DataPlaneCoresUsed,
		"control_plane_cores_used":     a.ControlPlaneCoresUsed,
		"peak_anon_bytes":              float64(a.PeakAnonBytes),
		"peak_shmem_bytes":             float64(a.PeakShmemBytes),
		"memory_peak_bytes":            float64(a.MemoryPeakBytes),
		"data_plane_peak_anon_bytes":   float64(a.DataPlanePeakAnonBytes),
		"data_plane_peak_shmem_bytes":  float64(a.DataPlanePeakShmemBytes),
		"data_plane_memory_peak_bytes": float64(a.DataPlaneMemoryPeakBytes),
	}
}

// Until returns the summary as it would have been had the sampler stopped
// at offset d from Start: the readings after d are dropped, and every
// figure is taken again from those kept. A window's owner uses it when the
// window it reports ended before the sampler was stopped (a drain that
// stalled is only known to have once the stall limit has passed), so that
// the tail it did not report does not count in its figures. A d that
// covers the whole window returns s unchanged; a negative d keeps no
// reading.
func (s Summary) Until(d time.Duration) Summary {
	t := s.trail
	// A summary not built by a sampler keeps nothing to cut it by.
	if d >= s.Window || len(t.at) != s.Readings {
		return s
	}
	n := sort.Search(len(t.at), func(k int) bool { return t.at[k] > d })
	// The kept readings are played again through a window, so that a cut
	// summary is taken exactly as a whole one is.
	targets := make([]Target, len(s.Containers))
	for i, c := range s.Containers {
		targets[i] = Target{Name: c.Name, Role: c.Role}
	}
	w := newWindow(targets, s.Period)
	for i, c := range s.Containers {
		w.acc[i].peakWindow = c.MemoryPeakKind != PeakLifetime
		w.acc[i].peakNote = c.MemoryPeakNote
	}
	// failing is each target's current run of failed readings, nil
	// between runs; runs counts the runs begun, indexing t.failures.
	failing := make([]error, len(targets))
	runs := make([]int, len(targets))
	for k := range n {
		r := Reading{Index: k, At: s.Start.Add(t.at[k]), Stats: make([]cgroup.Stat, len(targets)), Errs: make([]error, len(targets))}
		for i, c := range s.Containers {
			cs := s.Series.Containers[i]
			if f := t.failures[i]; runs[i] < len(f) && f[runs[i]].at == k {
				failing[i] = errors.New(f[runs[i]].err)
				runs[i]++
			}
			if cs.CPUUsageNs[k] >= 0 {
				failing[i] = nil
			}
			switch {
			case failing[i] != nil:
				r.Errs[i] = failing[i]
			case cs.CPUUsageNs[k] < 0:
				r.Errs[i] = errBeforeOrigin
			default:
				x := t.stats[i][k]
				r.Stats[i] = cgroup.Stat{
					CPUUsageNs: uint64(cs.CPUUsageNs[k]),
					AnonBytes:  uint64(cs.AnonShmemBytes[k]) - x.shmem, ShmemBytes: x.shmem,
					NrThrottled: x.nrThrottled, ThrottledUsec: x.throttledUsec, OOMKills: x.oomKills,
					MemoryPeakBytes: x.memoryPeak,
				}
				if c.MemoryPeakKind == PeakLifetime {
					// The kernel refused the reset: its peak reaches back
					// before the window opened, and no cut can make it the
					// window's. It stays as read last, its kind saying what
					// it covers.
					r.Stats[i].MemoryPeakBytes = c.MemoryPeakBytes
				}
			}
		}
		w.add(r)
	}
	cut, _ := w.summary()
	return cut
}

// window accumulates readings as they come, so that a long window costs
// no more memory than a short one.
type window struct {
	targets  []Target
	period   time.Duration
	start    time.Time
	end      time.Time
	readings int
	acc      []accumulator
	arm, dp  simultaneousPeak
	series   Series
	trail    trail
}

type accumulator struct {
	peakWindow bool
	peakNote   string
	// err is the failure that began the target's current run of failed
	// readings, nil while its readings succeed.
	err error

	samples         int
	firstAt, lastAt time.Time
	last            cgroup.Stat
	// The cumulative counters' growth, summed reading to reading so that a
	// restart's drop to zero starts a new life instead of cancelling the
	// old one's growth.
	cpuNs, nrThrottled, throttledUsec, oomKills uint64
	restarts                                    int
	// peakBefore is the largest memory peak of the lives before the
	// current one, each as last read.
	peakBefore              uint64
	peakAnon, peakAnonShmem uint64
	peakShmem               uint64
}

// simultaneousPeak tracks the largest per-reading sum of anon+shmem over a
// set of containers, with the shmem part of that same reading.
type simultaneousPeak struct{ total, shmem uint64 }

func (p *simultaneousPeak) add(total, shmem uint64) {
	if total > p.total {
		p.total, p.shmem = total, shmem
	}
}

func newWindow(targets []Target, period time.Duration) *window {
	w := &window{targets: targets, period: period, acc: make([]accumulator, len(targets))}
	w.series.Containers = make([]ContainerSeries, len(targets))
	w.trail.stats = make([][]trailStat, len(targets))
	w.trail.failures = make([][]failure, len(targets))
	for i, t := range targets {
		w.series.Containers[i] = ContainerSeries{Name: t.Name, Role: t.Role}
	}
	return w
}

func (w *window) add(r Reading) {
	if w.readings == 0 {
		w.start = r.At
	}
	w.end = r.At
	w.readings++
	w.series.OffsetsMS = append(w.series.OffsetsMS, r.At.Sub(w.start).Milliseconds())
	w.trail.at = append(w.trail.at, r.At.Sub(w.start))
	var armTotal, armShmem, dpTotal, dpShmem uint64
	for i, st := range r.Stats {
		a := &w.acc[i]
		cs := &w.series.Containers[i]
		if errors.Is(r.Errs[i], errBeforeOrigin) {
			cs.CPUUsageNs = append(cs.CPUUsageNs, -1)
			cs.AnonShmemBytes = append(cs.AnonShmemBytes, -1)
			w.trail.stats[i] = append(w.trail.stats[i], trailStat{})
			continue
		}
		if r.Errs[i] != nil {
			if a.err == nil {
				a.err = r.Errs[i]
				w.trail.failures[i] = append(w.trail.failures[i], failure{at: w.readings - 1, err: a.err.Error()})
			}
			cs.CPUUsageNs = append(cs.CPUUsageNs, -1)
			cs.AnonShmemBytes = append(cs.AnonShmemBytes, -1)
			w.trail.stats[i] = append(w.trail.stats[i], trailStat{})
			continue
		}
		cs.CPUUsageNs = append(cs.CPUUsageNs, int64(st.CPUUsageNs))
		cs.AnonShmemBytes = append(cs.AnonShmemBytes, int64(st.AnonBytes+st.ShmemBytes))
		w.trail.stats[i] = append(w.trail.stats[i], trailStat{
			shmem: st.ShmemBytes, nrThrottled: st.NrThrottled, throttledUsec: st.ThrottledUsec,
			oomKills: st.OOMKills, memoryPeak: st.MemoryPeakBytes,
		})
		// A reading that succeeds ends any run of failures: the target
		// came back (WithRestarts).
		a.err = nil
		if a.samples == 0 {
			a.firstAt = r.At
		} else {
			a.grow(st)
		}
		a.last, a.lastAt = st, r.At
		a.samples++
		total := st.AnonBytes + st.ShmemBytes
		if total > a.peakAnon {
			a.peakAnon, a.peakAnonShmem = total, st.ShmemBytes
		}
		a.peakShmem = max(a.peakShmem, st.ShmemBytes)
		switch w.targets[i].Role {
		case DataPlane:
			dpTotal += total
			dpShmem += st.ShmemBytes
			fallthrough
		case ControlPlane:
			armTotal += total
			armShmem += st.ShmemBytes
		}
	}
	w.arm.add(armTotal, armShmem)
	w.dp.add(dpTotal, dpShmem)
}

func (w *window) summary() (Summary, error) {
	s := Summary{
		Start: w.start, End: w.end, Window: w.end.Sub(w.start), Period: w.period, Readings: w.readings,
		Containers: make([]Container, len(w.targets)), Series: w.series, trail: w.trail,
	}
	s.Arm = Arm{
		PeakAnonBytes: w.arm.total, PeakShmemBytes: w.arm.shmem,
		DataPlanePeakAnonBytes: w.dp.total, DataPlanePeakShmemBytes: w.dp.shmem,
		MemoryPeakKind: PeakWindow,
	}
	var errs []error
	for i, t := range w.targets {
		a := w.acc[i]
		c := Container{
			Name: t.Name, Role: t.Role, Samples: a.samples,
			PeakAnonBytes: a.peakAnon, PeakAnonShmemBytes: a.peakAnonShmem, PeakShmemBytes: a.peakShmem,
			Restarts:         a.restarts,
			MemoryPeakBytes:  max(a.peakBefore, a.last.MemoryPeakBytes),
			MemoryPeakKind:   PeakWindow,
			MemoryPeakNote:   a.peakNote,
			ThrottledPeriods: a.nrThrottled,
			ThrottledUsec:    a.throttledUsec,
			OOMKills:         a.oomKills,
		}
		if !a.peakWindow {
			c.MemoryPeakKind = PeakLifetime
		}
		if wall := a.lastAt.Sub(a.firstAt); wall > 0 {
			c.CoresUsed = float64(a.cpuNs) / float64(wall.Nanoseconds())
		}
		if a.err != nil {
			c.Err = a.err.Error()
			errs = append(errs, a.err)
		}
		s.Containers[i] = c
		if t.Role == Infra {
			continue
		}
		s.Arm.CoresUsed += c.CoresUsed
		s.Arm.MemoryPeakBytes += c.MemoryPeakBytes
		if c.MemoryPeakKind == PeakLifetime {
			s.Arm.MemoryPeakKind = PeakLifetime
		}
		if t.Role == DataPlane {
			s.Arm.DataPlaneCoresUsed += c.CoresUsed
			s.Arm.DataPlaneMemoryPeakBytes += c.MemoryPeakBytes
		} else {
			s.Arm.ControlPlaneCoresUsed += c.CoresUsed
		}
	}
	return s, errors.Join(errs...)
}

// grow adds how much the cumulative counters grew from the previous
// successful reading to st. Within a cgroup's life they only grow, so any
// of them lower at st means the cgroup was made again (its container
// restarted) and counts from zero. All the new life's counts came after
// the old life's last reading, so each counter's value is its growth.
func (a *accumulator) grow(st cgroup.Stat) {
	prev := a.last
	if st.CPUUsageNs < prev.CPUUsageNs || st.NrThrottled < prev.NrThrottled ||
		st.ThrottledUsec < prev.ThrottledUsec || st.OOMKills < prev.OOMKills {
		a.restarts++
		a.peakBefore = max(a.peakBefore, prev.MemoryPeakBytes)
		prev = cgroup.Stat{}
	}
	a.cpuNs += st.CPUUsageNs - prev.CPUUsageNs
	a.nrThrottled += st.NrThrottled - prev.NrThrottled
	a.throttledUsec += st.ThrottledUsec - prev.ThrottledUsec
	a.oomKills += st.OOMKills - prev.OOMKills
}
