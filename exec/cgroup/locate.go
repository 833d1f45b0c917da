package cgroup

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/containerd/cgroups/v3"
)

// The v1 controllers a container's caps and usage are read from. cpuset is
// optional: it is only needed when a plan pins CPUs.
var requiredV1 = []string{"cpu", "cpuacct", "memory"}

const optionalV1 = "cpuset"

// Locate finds the cgroup of a running container.
//
// The primary source is <Proc>/<pid>/cgroup, which names the group whatever
// created it (Docker's cgroupfs driver, its systemd driver, a custom
// --cgroup-parent). When pid is 0, or that file or the groups it names are
// missing, Locate falls back to the two Docker layouts for containerID:
// docker/<id> (cgroupfs driver) and system.slice/docker-<id>.scope (systemd
// driver). Every candidate directory must exist: the cgroup library happily
// "loads" a missing group and then reports zeros.
func (f FS) Locate(pid int, containerID string) (*Group, error) {
	if pid <= 0 && containerID == "" {
		return nil, fmt.Errorf("locating a cgroup: neither a pid nor a container id was given")
	}
	if strings.ContainsAny(containerID, "/\x00") || containerID == "." || containerID == ".." {
		return nil, fmt.Errorf("locating a cgroup: container id %q is not a plain name", containerID)
	}
	mode, err := f.Mode()
	if err != nil {
		return nil, err
	}
	var tried []string
	if pid > 0 {
		g, err := f.locateByPID(mode, pid)
		if err == nil && containerID != "" && g.inRoot() {
			// A container's process in the root group has left its own
			// group, exiting: the root's limits are not the container's.
			err = fmt.Errorf("process %d is in the root cgroup, not in a container's (has it exited?)", pid)
		}
		if err == nil {
			return g, nil
		}
		tried = append(tried, err.Error())
	}
	if containerID != "" {
		g, err := f.locateByLayout(mode, containerID)
		if err == nil {
			return g, nil
		}
		tried = append(tried, err.Error())
	}
	what := "container " + containerID
	if containerID == "" {
		what = "process " + strconv.Itoa(pid)
	} else if pid > 0 {
		what += " (pid " + strconv.Itoa(pid) + ")"
	}
	return nil, fmt.Errorf("locating the cgroup of %s on a %s host: %s; is it still running, and are the cgroup root %s and proc root %s right?",
		what, mode, strings.Join(tried, "; "), f.root(), f.proc())
}

func (f FS) locateByPID(mode Mode, pid int) (*Group, error) {
	file := filepath.Join(f.proc(), strconv.Itoa(pid), "cgroup")
	legacy, unified, err := cgroups.ParseCgroupFileUnified(file)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", file, err)
	}
	if mode == ModeV2 {
		if unified == "" {
			return nil, fmt.Errorf("%s has no unified (0::) line", file)
		}
		return f.newV2(unified)
	}
	paths := make(map[string]string, len(requiredV1)+1)
	for _, c := range requiredV1 {
		p, ok := legacy[c]
		if !ok {
			return nil, fmt.Errorf("%s has no %s line", file, c)
		}
		paths[c] = p
	}
	if p, ok := legacy[optionalV1]; ok {
		paths[optionalV1] = p
	}
	return f.newV1(mode, paths)
}

func (f FS) locateByLayout(mode Mode, id string) (*Group, error) {
	g, err := f.locateAt(mode, []string{"/docker/" + id, "/system.slice/docker-" + id + ".scope"})
	if err != nil {
		return nil, fmt.Errorf("no Docker layout matched (%w)", err)
	}
	return g, nil
}

// locateAt returns the group at the first of paths that exists under
// every controller the executor reads.
func (f FS) locateAt(mode Mode, paths []string) (*Group, error) {
	var missing []string
	for _, p := range paths {
		var g *Group
		var err error
		if mode == ModeV2 {
			g, err = f.newV2(p)
		} else {
			byController := map[string]string{optionalV1: p}
			for _, c := range requiredV1 {
				byController[c] = p
			}
			g, err = f.newV1(mode, byController)
		}
		if err == nil {
			return g, nil
		}
		missing = append(missing, err.Error())
	}
	return nil, errors.New(strings.Join(missing, "; "))
}
