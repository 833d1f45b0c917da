package cgroup

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
)

// Group is one container's cgroup. Its methods may be called from several
// goroutines. Stat and ResetPeak keep files open between calls; Close
// releases them.
type Group struct {
	mode Mode
	root string
	// paths maps a controller to the group's path inside that controller's
	// hierarchy ("/docker/<id>"). On v2 the single entry has key "".
	paths map[string]string

	mu    sync.Mutex
	files *statFiles // opened by the first Stat
	// peak is memory.peak as ResetPeak left it open: on v2 the kernel
	// scopes a reset to the descriptor it was written through, so the
	// window's peak can only be read back through that descriptor.
	peak *heldFile
}

func (f FS) newV2(path string) (*Group, error) {
	path = cleanGroupPath(path)
	dir := filepath.Join(f.root(), path)
	if !isDir(dir) {
		return nil, fmt.Errorf("%s does not exist", dir)
	}
	return &Group{mode: ModeV2, root: f.root(), paths: map[string]string{"": path}}, nil
}

func (f FS) newV1(mode Mode, paths map[string]string) (*Group, error) {
	root := f.root()
	clean := make(map[string]string, len(paths))
	// A fixed order keeps "does not exist" naming the memory group first.
	for _, c := range []string{"memory", "cpu", "cpuacct", optionalV1} {
		p, ok := paths[c]
		if !ok {
			continue
		}
		p = cleanGroupPath(p)
		// <Root>/cpu and <Root>/cpuacct are links to a co-mounted
		// cpu,cpuacct hierarchy on most hosts; following them finds it.
		if !isDir(filepath.Join(root, c, p)) {
			if c == optionalV1 {
				continue
			}
			return nil, fmt.Errorf("%s does not exist", filepath.Join(root, c, p))
		}
		clean[c] = p
	}
	return &Group{mode: mode, root: root, paths: clean}, nil
}

// cleanGroupPath makes a path from /proc/<pid>/cgroup safe to join under a
// root: absolute, cleaned, and without the " (deleted)" suffix the kernel
// appends once a group is removed.
func cleanGroupPath(p string) string {
	p = strings.TrimSuffix(p, " (deleted)")
	return filepath.Clean("/" + p)
}

// inRoot reports whether any of the group's paths is a hierarchy's root.
func (g *Group) inRoot() bool {
	for _, p := range g.paths {
		if p == "/" {
			return true
		}
	}
	return false
}

// Mode is the layout of the host the group was found on.
func (g *Group) Mode() Mode { return g.mode }

// Dir is the group's directory for a controller ("cpu", "memory", "cpuset",
// "cpuacct"). On v2 every controller shares one directory. It is "" when the
// controller was not found for the group.
func (g *Group) Dir(controller string) string {
	if g.mode == ModeV2 {
		return filepath.Join(g.root, g.paths[""])
	}
	p, ok := g.paths[controller]
	if !ok {
		return ""
	}
	return filepath.Join(g.root, controller, p)
}

// Dirs lists every directory the group was found in, keyed by controller
// (v2: key "unified"), for provenance.
func (g *Group) Dirs() map[string]string {
	out := make(map[string]string, len(g.paths))
	if g.mode == ModeV2 {
		out["unified"] = g.Dir("")
		return out
	}
	for c := range g.paths {
		out[c] = g.Dir(c)
	}
	return out
}

// String names the group by its memory directory, the one most messages are
// about.
func (g *Group) String() string { return g.Dir("memory") }
