package exec

import (
	"context"

	"spatec.dev/spatec/exec/cgroup"
	"spatec.dev/spatec/exec/engine"
)

// Cgroups is where the executor reads a started container's caps and usage:
// the host's own cgroup tree for containers of the local Docker engine
// (HostCgroups), or a Kubernetes node's, through spatec's probe on it
// (kube.Probe). Both read with the exec/cgroup package.
type Cgroups interface {
	// Mode is the cgroup layout the containers run under.
	Mode(ctx context.Context) (cgroup.Mode, error)
	// Find locates a running container's group, as the engine reported it.
	// want is the caps the plan gives it: a tree that can check more than
	// the group's files (cores no other container shares) checks it here,
	// and returns what it found as problems.
	Find(ctx context.Context, c engine.Container, want cgroup.Caps) (Group, []string, error)
	// CheckSwap refuses a host whose swap the cgroups cannot keep the
	// containers from (C5); accounting is whether the kernel accounts swap
	// per group.
	CheckSwap(ctx context.Context, accounting bool) error
}

// Starter is a Cgroups that runs something of its own to read with (a
// node's probe): the session starts it once it owns the host, after the
// sweep has removed what a killed spatec left, and stops it when it closes.
type Starter interface {
	Start(ctx context.Context) error
	Stop()
}

// Group is one container's cgroup: its caps, read back before the window
// and again during it (C6), and its usage, sampled (C7, C8).
type Group interface {
	ReadBack() (cgroup.ReadBack, error)
	Stat() (cgroup.Stat, error)
	ResetPeak() (bool, error)
	Close() error
}

// HostCgroups reads the cgroup tree of the host spatec runs on, where the
// Docker engine's containers are.
type HostCgroups struct{ FS cgroup.FS }

// Mode reads the host's layout.
func (h HostCgroups) Mode(context.Context) (cgroup.Mode, error) { return h.FS.Mode() }

// Find locates the container's group by its main process, else by Docker's
// layouts.
func (h HostCgroups) Find(_ context.Context, c engine.Container, _ cgroup.Caps) (Group, []string, error) {
	g, err := h.FS.Locate(c.Pid, c.ID)
	if err != nil {
		return nil, nil, err
	}
	return g, nil, nil
}

// CheckSwap checks the host's swap.
func (h HostCgroups) CheckSwap(_ context.Context, accounting bool) error {
	return cgroup.CheckSwap(h.FS, accounting)
}
