package cgroup

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Kubernetes QoS classes, as the API server writes them in a pod's status.
const (
	QoSGuaranteed = "Guaranteed"
	QoSBurstable  = "Burstable"
	QoSBestEffort = "BestEffort"
)

// PodLayouts are the paths the kubelet gives a pod's container under each
// hierarchy: its cgroupfs driver nests kubepods/[burstable|besteffort/]
// pod<uid>/<container id>; its systemd driver writes the same tree as
// slices, with the uid's dashes as underscores and the container in a
// runtime scope.
func PodLayouts(qos, uid, containerID string) []string {
	class := ""
	switch qos {
	case QoSBurstable:
		class = "burstable"
	case QoSBestEffort:
		class = "besteffort"
	}
	fs := "/kubepods"
	slice := "/kubepods.slice"
	uslice := strings.ReplaceAll(uid, "-", "_")
	if class != "" {
		fs += "/" + class
		slice += "/kubepods-" + class + ".slice/kubepods-" + class + "-pod" + uslice + ".slice"
	} else {
		slice += "/kubepods-pod" + uslice + ".slice"
	}
	return []string{
		fs + "/pod" + uid + "/" + containerID,
		slice + "/cri-containerd-" + containerID + ".scope",
		slice + "/crio-" + containerID + ".scope",
		slice + "/docker-" + containerID + ".scope",
	}
}

// LocatePod finds the cgroup of a pod's container on the node whose tree f
// reads, by the kubelet's layouts (PodLayouts). A kubelet given a cgroup
// root of its own (kind's nodes run theirs under /kubelet) nests the same
// tree deeper: the container is then found by its name below a group
// naming its pod (searchPod).
func (f FS) LocatePod(qos, uid, containerID string) (*Group, error) {
	for _, s := range []string{uid, containerID} {
		if s == "" || strings.ContainsAny(s, "/\x00.") {
			return nil, fmt.Errorf("locating a pod's cgroup: %q is not a plain uid or container id", s)
		}
	}
	mode, err := f.Mode()
	if err != nil {
		return nil, err
	}
	g, err := f.locateAt(mode, PodLayouts(qos, uid, containerID))
	if err == nil {
		return g, nil
	}
	p, serr := f.searchPod(mode, qos, uid, containerID)
	if serr == nil {
		if g, serr = f.locateAt(mode, []string{p}); serr == nil {
			return g, nil
		}
	}
	return nil, fmt.Errorf("locating container %s of pod %s (%s) on the node: %w; searching the tree: %v; is the pod still running, and is the node's cgroup tree mounted at %s?",
		containerID, uid, qos, err, serr, f.root())
}

// searchPod walks the tree (v1: the memory hierarchy) for the container's
// group under a cgroup root of the kubelet's own: a directory named as the
// kubelet's runtimes name a container, inside its pod's, inside its QoS
// class's when the pod is not Guaranteed. It runs once per container, and
// a node's tree holds some thousands of groups at most.
func (f FS) searchPod(mode Mode, qos, uid, containerID string) (string, error) {
	base := f.root()
	if mode != ModeV2 {
		base = filepath.Join(base, "memory")
	}
	names := []string{containerID, "cri-containerd-" + containerID + ".scope", "crio-" + containerID + ".scope", "docker-" + containerID + ".scope"}
	pods := []string{"pod" + uid, "pod" + strings.ReplaceAll(uid, "-", "_") + ".slice"}
	class := map[string]string{QoSBurstable: "burstable", QoSBestEffort: "besteffort"}[qos]
	var found []string
	err := filepath.WalkDir(base, func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() || !slices.Contains(names, d.Name()) {
			return nil // a group gone since the walk listed it is no match
		}
		parts := strings.Split(filepath.Dir(path), string(filepath.Separator))
		pod := parts[len(parts)-1]
		if !slices.ContainsFunc(pods, func(p string) bool { return strings.HasSuffix(pod, p) }) {
			return nil
		}
		// Guaranteed pods sit in no class's group.
		in := ""
		for _, p := range parts {
			for _, c := range []string{"burstable", "besteffort"} {
				if p == c || strings.HasSuffix(p, "-"+c+".slice") {
					in = c
				}
			}
		}
		if in == class {
			found = append(found, strings.TrimPrefix(path, base))
		}
		return filepath.SkipDir
	})
	switch {
	case err != nil:
		return "", fmt.Errorf("walking %s: %w", base, err)
	case len(found) == 0:
		return "", fmt.Errorf("no group of container %s under a group of pod %s (%s) in %s", containerID, uid, qos, base)
	case len(found) > 1:
		return "", fmt.Errorf("container %s of pod %s has %d groups in %s: %s", containerID, uid, len(found), base, strings.Join(found, ", "))
	}
	return found[0], nil
}

// PIDs lists the processes in the group (its memory controller's
// cgroup.procs, v1; cgroup.procs, v2).
func (g *Group) PIDs() ([]string, error) {
	file := filepath.Join(g.Dir("memory"), "cgroup.procs")
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("listing the processes of %s: %w", g, err)
	}
	return strings.Fields(string(b)), nil
}

// CpusetSharers lists the other containers under the kubelet's tree
// (kubepods or kubepods.slice) whose cpuset holds any of cpus, as
// "<group path>: <their cpus>": a container given cores of its own by the
// static CPU manager shares them with none. Pod-level groups, whose cpuset
// spans every CPU, are not containers and are skipped, and so are the
// other containers of self's own pod: its sandbox (pause) stays on the
// shared pool and only sleeps.
func (f FS) CpusetSharers(self *Group, cpus string) ([]string, error) {
	mine, err := parseCPUList(cpus)
	if err != nil {
		return nil, fmt.Errorf("the container's cpuset %q: %w", cpus, err)
	}
	base := filepath.Join(f.root(), "cpuset")
	file := "cpuset.cpus"
	if self.mode == ModeV2 {
		base, file = f.root(), "cpuset.cpus.effective"
	}
	own := filepath.Clean(self.Dir("cpuset"))
	// The kubelet's tree is the group's nearest ancestor named as the
	// kubelet names it (kubepods, kubepods.slice, kubelet-kubepods.slice
	// under a cgroup root of its own), wherever it is.
	root := filepath.Dir(own)
	for !(filepath.Base(root) == "kubepods" || strings.HasSuffix(filepath.Base(root), "kubepods.slice")) {
		if len(root) <= len(base) {
			return nil, fmt.Errorf("group %s is not inside a kubelet's tree (kubepods or kubepods.slice): cannot tell which containers may share its cores", own)
		}
		root = filepath.Dir(root)
	}
	var out []string
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() || filepath.Dir(path) == filepath.Dir(own) || !isContainerGroup(path, root) {
			return err
		}
		b, err := os.ReadFile(filepath.Join(path, file))
		if err != nil {
			return nil // gone since the walk listed it
		}
		theirs, err := parseCPUList(string(b))
		if err != nil {
			return nil
		}
		for c := range mine {
			if theirs[c] {
				out = append(out, fmt.Sprintf("%s: %s", strings.TrimPrefix(path, base), strings.TrimSpace(string(b))))
				break
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("walking %s for containers sharing cores: %w", root, err)
	}
	return out, nil
}

// isContainerGroup tells a container's group from the kubelet's own
// levels (QoS classes, pods) by its depth and name below root.
func isContainerGroup(path, root string) bool {
	rel, err := filepath.Rel(root, path)
	if err != nil || rel == "." {
		return false
	}
	parts := strings.Split(rel, string(filepath.Separator))
	last := parts[len(parts)-1]
	switch {
	case strings.HasSuffix(last, ".scope"):
		return true
	case strings.HasSuffix(last, ".slice"), strings.HasPrefix(last, "pod"), last == "burstable", last == "besteffort":
		return false
	}
	// cgroupfs: kubepods/pod<uid>/<id> or kubepods/<class>/pod<uid>/<id>.
	return len(parts) >= 2 && strings.HasPrefix(parts[len(parts)-2], "pod")
}
