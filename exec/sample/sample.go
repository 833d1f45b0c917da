// Package sample measures a run's containers from inside the spatec
// process, with no sidecar: a Sampler reads every container's cgroup
// counters once per period and summarises the window into the figures a
// record publishes (contract C7, C8): cores used, the simultaneous
// anon+shmem peak and its shmem component, the kernel's memory peak,
// throttling and OOM kills, per container and per arm.
package sample

import (
	"context"
	"errors"
	"fmt"
	"time"

	"spatec.dev/spatec/exec/cgroup"
)

// Roles a target can have. Data-plane and control-plane containers make up
// the arm; infra containers (broker, ClickHouse) are reported on their own
// and never counted in the arm's figures.
const (
	DataPlane    = "data-plane"
	ControlPlane = "control-plane"
	Infra        = "infra"
)

// DefaultPeriod is the sampling period, and so the window's resolution.
const DefaultPeriod = 100 * time.Millisecond

// Source is what a target is read through. *cgroup.Group is one.
type Source interface {
	Stat() (cgroup.Stat, error)
	ResetPeak() (bool, error)
}

// Target is one container to sample. The sampler does not close the
// group: its owner does, after the window (a v2 window peak is read through
// a descriptor the group holds until then). The one exception is under
// WithRestarts, which closes a *cgroup.Group whose read failed.
type Target struct {
	Name  string
	Role  string // DataPlane, ControlPlane or Infra
	Group Source
}

// Clock is the sampler's time source; tests drive it by hand.
type Clock interface {
	Now() time.Time
	NewTicker(d time.Duration) Ticker
}

// Ticker delivers the sampling ticks.
type Ticker interface {
	C() <-chan time.Time
	Stop()
}

// SystemClock is the real clock.
func SystemClock() Clock { return systemClock{} }

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

func (systemClock) NewTicker(d time.Duration) Ticker { return systemTicker{time.NewTicker(d)} }

type systemTicker struct{ t *time.Ticker }

func (t systemTicker) C() <-chan time.Time { return t.t.C }
func (t systemTicker) Stop()               { t.t.Stop() }

// Reading is one tick: every target's counters at one instant. Stats and
// Errs are indexed like the targets; Errs[i] is set when target i could not
// be read. Once that happens, target i is not read again, unless the sampler
// has WithRestarts.
type Reading struct {
	Index int
	At    time.Time
	Stats []cgroup.Stat
	Errs  []error
}

// Option configures a Sampler.
type Option func(*Sampler)

// WithPeriod sets the sampling period (default DefaultPeriod).
func WithPeriod(d time.Duration) Option { return func(s *Sampler) { s.period = d } }

// WithClock replaces the system clock.
func WithClock(c Clock) Option { return func(s *Sampler) { s.clock = c } }

// WithOrigin opens the window at t, before the first reading, with every
// arm target's counters at zero: right for containers whose cgroups were
// made at or after t (an arm's pods, which start consuming before spatec
// can read them through a node's probe). Their memory peaks are then the
// kernel's since each group was made, which is since t. Infrastructure
// targets, up long before, are measured from their first reading.
func WithOrigin(t time.Time) Option { return func(s *Sampler) { s.origin = t } }

// errBeforeOrigin marks, in the reading at the window's origin, a target
// that is not read there: it is measured from its first real reading.
var errBeforeOrigin = errors.New("not read at the window's origin")

// WithRestarts keeps reading a target after a read fails, at every later
// tick, instead of dropping it. Use it for windows where a container is
// restarted on purpose (a failure scenario): its cgroup goes away for a
// moment and comes back at the same path with its counters at zero, and
// without this option the window would lose the container at the fault and
// everything it did afterwards. The summary then adds up each life's
// counters (see Container.Restarts).
//
// A *cgroup.Group keeps its files open between reads, and those
// descriptors still point at the cgroup that went away. So under this
// option, a failed read closes the group (Close leaves it usable). The next
// Stat opens the files again at the same path. For a v2 group, the new
// life's memory.peak then counts from when the group was recreated, which
// is inside the window. If a read failed while the group still lived,
// its peak from then on would be the lifetime's, since the reset descriptor
// is gone. Reads of a live group's cgroupfs files do not fail in practice.
// Other Sources must find the group again by themselves.
func WithRestarts() Option { return func(s *Sampler) { s.followRestarts = true } }

// WithObserver has f called with every reading as it is taken, from the
// sampling goroutine: for live progress. f must return quickly.
func WithObserver(f func(Reading)) Option { return func(s *Sampler) { s.observe = f } }

// Sampler samples a fixed set of targets over one window.
type Sampler struct {
	targets []Target
	period  time.Duration
	clock   Clock
	observe func(Reading)
	origin  time.Time
	// followRestarts is WithRestarts.
	followRestarts bool
}

// New checks the targets and returns a Sampler for them.
func New(targets []Target, opts ...Option) (*Sampler, error) {
	s := &Sampler{targets: targets, period: DefaultPeriod, clock: SystemClock()}
	for _, o := range opts {
		o(s)
	}
	if s.period <= 0 {
		return nil, fmt.Errorf("sampler period is %v; it must be positive (default %v)", s.period, DefaultPeriod)
	}
	if len(targets) == 0 {
		return nil, errors.New("sampler has no targets: give it at least the data-plane container")
	}
	seen := map[string]bool{}
	for i, t := range targets {
		switch {
		case t.Name == "":
			return nil, fmt.Errorf("sampler target %d has no name", i)
		case seen[t.Name]:
			return nil, fmt.Errorf("sampler target %q is listed twice", t.Name)
		case t.Role != DataPlane && t.Role != ControlPlane && t.Role != Infra:
			return nil, fmt.Errorf("sampler target %q has role %q; the roles are %q, %q and %q", t.Name, t.Role, DataPlane, ControlPlane, Infra)
		case t.Group == nil:
			return nil, fmt.Errorf("sampler target %q has no cgroup", t.Name)
		}
		seen[t.Name] = true
	}
	return s, nil
}

// Period is the sampling period.
func (s *Sampler) Period() time.Duration { return s.period }

// Run opens the window, samples until ctx is done, takes a last reading and
// returns the window's summary. Ending ctx is how a window is closed, so it
// is not an error. The summary is complete even when a target failed part
// way (its container exited, say): the failure is in the target's Err and
// in the returned error. Under WithRestarts, a target that could be read
// again by the close did not fail. Its gap shows in the series and in its
// Restarts.
func (s *Sampler) Run(ctx context.Context) (Summary, error) {
	w := s.open()
	ticker := s.clock.NewTicker(s.period)
	defer ticker.Stop()
	if !s.origin.IsZero() {
		r := Reading{At: s.origin, Stats: make([]cgroup.Stat, len(s.targets)), Errs: make([]error, len(s.targets))}
		for i, t := range s.targets {
			if t.Role == Infra {
				r.Errs[i] = errBeforeOrigin
			}
		}
		w.add(r)
	}
	s.read(w)
	for {
		select {
		case <-ctx.Done():
			s.read(w)
			return w.summary()
		case <-ticker.C():
			s.read(w)
		}
	}
}

// open resets the targets' memory peaks so that they cover the window
// where the kernel allows it.
func (s *Sampler) open() *window {
	w := newWindow(s.targets, s.period)
	for i, t := range s.targets {
		if !s.origin.IsZero() && t.Role != Infra {
			w.acc[i].peakWindow = true // since the group was made
			continue
		}
		ok, err := t.Group.ResetPeak()
		w.acc[i].peakWindow = ok
		if err != nil {
			w.acc[i].peakNote = err.Error()
		}
	}
	return w
}

// read takes one reading of every target still readable: every target
// under WithRestarts, otherwise those that have not failed yet.
func (s *Sampler) read(w *window) {
	r := Reading{Index: w.readings, At: s.clock.Now(), Stats: make([]cgroup.Stat, len(s.targets)), Errs: make([]error, len(s.targets))}
	for i, t := range s.targets {
		if w.acc[i].err != nil && !s.followRestarts {
			r.Errs[i] = w.acc[i].err
			continue
		}
		st, err := t.Group.Stat()
		if err != nil {
			err = fmt.Errorf("sampling %s (%s): %w", t.Name, t.Role, err)
			if s.followRestarts {
				release(t.Group)
			}
		}
		r.Stats[i], r.Errs[i] = st, err
	}
	w.add(r)
	if s.observe != nil {
		s.observe(r)
	}
}

// release closes a *cgroup.Group so that its next Stat opens the group's
// files again at its path, where a restarted container's new cgroup
// appears. The group's own Close documents that the group stays usable
// after it. Other Sources are left alone: a remote group's Close, for
// example, gives the group up for good.
func release(src Source) {
	if g, ok := src.(*cgroup.Group); ok {
		// A failure to close only leaks a descriptor of a cgroup that is
		// gone. The next read reports whatever is still wrong.
		_ = g.Close()
	}
}
