package exec

import (
	"fmt"
	"io"
	"time"

	"spatec.dev/spatec/exec/engine"
	"spatec.dev/spatec/exec/progress"
	"spatec.dev/spatec/exec/sample"
)

// Runner holds what every run needs: the boundaries to the host and how to
// report.
type Runner struct {
	// Engine is the container engine.
	Engine engine.Engine
	// Cgroups reads the containers' cgroups: HostCgroups for the local
	// engine (its roots are injectable), a node's probe on Kubernetes.
	Cgroups Cgroups
	// Clock drives the sampler; nil means the system clock.
	Clock sample.Clock
	// Period is the sampler period; 0 means 100 ms.
	Period time.Duration
	// Progress reports phases; nil reports nothing.
	Progress *progress.Reporter
	// Log receives one line per notable step; nil discards.
	Log io.Writer
	// Version and Commit identify this spatec in records.
	Version, Commit string
	// SourceDir is the module checkout that programs declared by a
	// container's build are compiled from.
	SourceDir string
	// Results, when set, is the results root this runner records under:
	// opening a session records there, as failed, the runs that earlier
	// spatec processes started and died before recording.
	Results string
	// LockPath, when set, is the host-wide lock a session holds while it is
	// open (hostlock.DefaultPath for the CLI): one measurement at a time on
	// a host. A runner that holds it owns the engine, so opening a session
	// also removes what killed runs left behind. "" takes no lock and
	// sweeps nothing (tests running sessions side by side).
	LockPath string
	// NoPull refuses an image the engine does not hold instead of pulling
	// it: for hosts that must not reach a registry (--pull=never).
	NoPull bool
	// CacheDir keeps what is slow to make and the same every time: the
	// root file systems of Debian recipes (rootfs/) and the downloads of
	// layered images, by checksum (downloads/). "" keeps nothing.
	CacheDir string
	// InfraTimeout is how long an infrastructure container has to answer
	// after it starts; 0 means two minutes.
	InfraTimeout time.Duration
}

func (r *Runner) now() time.Time {
	if r.Clock != nil {
		return r.Clock.Now()
	}
	return time.Now()
}

func (r *Runner) logf(format string, args ...any) {
	if r.Log != nil {
		fmt.Fprintf(r.Log, format+"\n", args...)
	}
}
