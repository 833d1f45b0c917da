package exec

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
)

// capWatchPeriod is how often the caps are read again inside the window.
// Reading one group's caps costs about 0.2 ms, so once a second over a few
// containers is far below what the sampler measures.
const capWatchPeriod = time.Second

// capWatch holds the caps verified before the window to the end of it (C6):
// a cap changed while the arm ran (a `docker update`, an operator's write to
// the cgroup) means the run was not measured under its plan. It reads every
// container's caps again once a second while the window is open and once
// more at its end, and keeps the first moment each file was seen changed.
type capWatch struct {
	start   time.Time
	targets []capTarget
	// restarts is set when a failure scenario may restart a container in
	// the window. A restarted container's cgroup is made again before its
	// runtime writes the limits into it (runc adds the process, then sets
	// the resources), so a reading can fall in between and see no caps at
	// all. Such a change counts only if the next reading confirms it: a
	// cap that reads as verified again one period later was the new
	// group being set up, not a change.
	restarts bool

	mu      sync.Mutex
	changes map[string]*capChange // by container and file
}

// capTarget is one container whose caps are held.
type capTarget struct {
	name     string
	group    Group
	verified map[string]string // the files as read back before the window
}

// capChange is a cap file that no longer reads as verified.
type capChange struct {
	container, file, verified, now string
	// at is when it was first seen changed, from the window's start.
	at time.Duration
	// seen is how many readings in a row found it changed.
	seen int
}

func newCapWatch(start time.Time, targets []capTarget, restarts bool) *capWatch {
	return &capWatch{start: start, targets: targets, restarts: restarts, changes: map[string]*capChange{}}
}

// run reads the caps every capWatchPeriod until ctx ends.
func (w *capWatch) run(ctx context.Context) {
	t := time.NewTicker(capWatchPeriod)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			w.check()
		}
	}
}

// check reads every container's caps once and notes what changed. A group
// that cannot be read (its container exited) is skipped: the exit is
// reported on its own.
func (w *capWatch) check() map[string]map[string]string {
	now := make(map[string]map[string]string, len(w.targets))
	for _, t := range w.targets {
		rb, err := t.group.ReadBack()
		if err != nil {
			continue
		}
		now[t.name] = rb.Raw
		at := time.Since(w.start)
		for _, file := range slices.Sorted(maps.Keys(t.verified)) {
			got, ok := rb.Raw[file]
			if !ok {
				continue
			}
			key := t.name + "/" + file
			w.mu.Lock()
			c, seen := w.changes[key]
			switch {
			case got == t.verified[file]:
				if seen && c.seen == 1 && w.restarts {
					delete(w.changes, key)
				}
			case seen:
				c.now = got
				c.seen++
			default:
				w.changes[key] = &capChange{container: t.name, file: file, verified: t.verified[file], now: got, at: at, seen: 1}
			}
			w.mu.Unlock()
		}
	}
	return now
}

// finish reads the caps a last time and returns that reading, for the
// record, and a failure naming every change seen in the window, or nil.
func (w *capWatch) finish() (map[string]map[string]string, error) {
	end := w.check()
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.changes) == 0 {
		return end, nil
	}
	var lines []string
	for _, key := range slices.Sorted(maps.Keys(w.changes)) {
		c := w.changes[key]
		lines = append(lines, fmt.Sprintf("container %s: %s read %q when verified and %q from %.1fs into the window",
			c.container, c.file, c.verified, c.now, c.at.Seconds()))
	}
	return end, &Failure{"C6: caps changed during the window, so the run was not measured under its plan:\n  " + strings.Join(lines, "\n  ")}
}
