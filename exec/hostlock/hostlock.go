// Package hostlock keeps measurements on one host one at a time: two runs
// side by side would share the cores, the broker and ClickHouse, and each
// would measure the other.
//
// The lock is a file under /run/lock held with flock(2) for the length of a
// session. The kernel releases it when its holder dies, however it dies, so
// a lock left by a killed spatec is simply taken; the file also says who
// holds it (session, process, start time, environment), so a refused run
// can name the holder, and a run that takes over a dead holder's lock can
// say whose it was.
package hostlock

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// DefaultPath is the host-wide lock file: /run/lock is on every Debian host
// and shared by every user's processes.
const DefaultPath = "/run/lock/spatec.lock"

// Holder says who holds the lock.
type Holder struct {
	// Session is the holding session's id.
	Session string `json:"session"`
	// PID is the holding process.
	PID int `json:"pid"`
	// Started is when it took the lock.
	Started time.Time `json:"started"`
	// Env is the environment it measures in.
	Env string `json:"env"`
}

func (h Holder) String() string {
	return fmt.Sprintf("session %s (environment %s, pid %d, since %s)", h.Session, h.Env, h.PID, h.Started.Format(time.RFC3339))
}

// HeldError says the lock is held by another live process.
type HeldError struct {
	Path   string
	Holder Holder
}

func (e *HeldError) Error() string {
	return fmt.Sprintf("another measurement holds this host: %s, lock %s; wait for it to end, or stop it (kill %d), then run again", e.Holder, e.Path, e.Holder.PID)
}

// Lock is a held lock.
type Lock struct {
	f *os.File
}

// Acquire takes the lock at path for h without waiting. It fails with a
// *HeldError when a live process holds it. When the lock file names a
// holder that is gone (it died holding it), that holder is returned as
// previous.
func Acquire(path string, h Holder) (l *Lock, previous *Holder, err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, nil, fmt.Errorf("taking the host lock %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, nil, fmt.Errorf("taking the host lock %s: %w", path, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		defer f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			held := &HeldError{Path: path}
			if prev, ok := read(f); ok {
				held.Holder = *prev
			}
			return nil, nil, held
		}
		return nil, nil, fmt.Errorf("taking the host lock %s: %w", path, err)
	}
	previous, _ = read(f)
	b, err := json.Marshal(h)
	if err == nil {
		err = f.Truncate(0)
	}
	if err == nil {
		_, err = f.WriteAt(append(b, '\n'), 0)
	}
	if err == nil {
		err = f.Sync()
	}
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("taking the host lock %s: writing its holder: %w", path, err)
	}
	return &Lock{f: f}, previous, nil
}

// read decodes the holder a lock file names, if any.
func read(f *os.File) (*Holder, bool) {
	b, err := io.ReadAll(io.NewSectionReader(f, 0, 1<<16))
	if err != nil || len(b) == 0 {
		return nil, false
	}
	var h Holder
	if json.Unmarshal(b, &h) != nil {
		return nil, false
	}
	return &h, true
}

// Release empties the lock file and lets the lock go.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Truncate(0)
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	l.f = nil
	return err
}
