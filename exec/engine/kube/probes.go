package kube

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/client-go/rest"

	"spatec.dev/spatec/exec"
	"spatec.dev/spatec/exec/cgroup"
	"spatec.dev/spatec/exec/engine"
)

// Probes reads the cgroups of a run's pods on every node the run uses:
// the arm on one, the broker or ClickHouse on others, say. Each node has
// its own probe, and each pod is read by the probe of the node it runs on.
// It is the executor's cgroup tree on Kubernetes (exec.Cgroups).
type Probes struct {
	nodes  []string
	byNode map[string]*Probe
}

// NewProbes returns the probes for nodes, each started on its node as spec
// says (spec.Node is set per node); Start runs them.
func NewProbes(e *Engine, config *rest.Config, spec ProbeSpec, nodes []string) *Probes {
	ps := &Probes{byNode: map[string]*Probe{}}
	for _, n := range nodes {
		if ps.byNode[n] != nil {
			continue
		}
		s := spec
		s.Node = n
		ps.nodes = append(ps.nodes, n)
		ps.byNode[n] = NewProbe(e, config, s)
	}
	return ps
}

// Nodes are the nodes read, in the order given.
func (ps *Probes) Nodes() []string { return slices.Clone(ps.nodes) }

// Start runs a probe on every node. When one does not answer, those
// already running are stopped.
func (ps *Probes) Start(ctx context.Context) error {
	for i, n := range ps.nodes {
		if err := ps.byNode[n].Start(ctx); err != nil {
			for _, m := range ps.nodes[:i+1] {
				ps.byNode[m].Stop()
			}
			return err
		}
	}
	return nil
}

// Stop removes every node's probe.
func (ps *Probes) Stop() {
	for _, n := range ps.nodes {
		ps.byNode[n].Stop()
	}
}

// Mode is the cgroup layout of the run's nodes. The executor plans and
// reads every container's caps in one layout, so nodes whose layouts
// differ cannot serve one run.
func (ps *Probes) Mode(ctx context.Context) (cgroup.Mode, error) {
	var mode cgroup.Mode
	var first string
	for _, n := range ps.nodes {
		m, err := ps.byNode[n].Mode(ctx)
		if err != nil {
			return cgroup.ModeUnknown, err
		}
		if first == "" {
			mode, first = m, n
			continue
		}
		if m != mode {
			return cgroup.ModeUnknown, fmt.Errorf("node %s runs cgroup %s and node %s cgroup %s; a run's caps are read in one layout: place its pods on nodes of one kind", first, mode, n, m)
		}
	}
	return mode, nil
}

// CheckSwap checks the swap of every node (C5), and names each that fails.
func (ps *Probes) CheckSwap(ctx context.Context, accounting bool) error {
	var errs []error
	for _, n := range ps.nodes {
		if err := ps.byNode[n].CheckSwap(ctx, accounting); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Find locates a pod's container with the probe of its node.
func (ps *Probes) Find(ctx context.Context, c engine.Container, want cgroup.Caps) (exec.Group, []string, error) {
	if c.Pod == nil {
		return nil, nil, fmt.Errorf("container %s is not a pod's: the probe reads pods only", c.Name)
	}
	p, err := ps.of(c.Pod.Node)
	if err != nil {
		return nil, nil, fmt.Errorf("container %s: %w", c.Name, err)
	}
	return p.Find(ctx, c, want)
}

// ReadFile reads a file inside a pod's running container, on its node.
func (ps *Probes) ReadFile(ctx context.Context, pod engine.PodRef, file string, limit int64) ([]byte, error) {
	p, err := ps.of(pod.Node)
	if err != nil {
		return nil, fmt.Errorf("reading %s in pod %s: %w", file, pod.UID, err)
	}
	return p.ReadFile(ctx, pod, file, limit)
}

// Kill kills a pod's container on its node, as a crash would: the
// container must have been found there first (Find).
func (ps *Probes) Kill(ctx context.Context, pod engine.PodRef) error {
	p, err := ps.of(pod.Node)
	if err != nil {
		return fmt.Errorf("killing pod %s's container: %w", pod.UID, err)
	}
	return p.Kill(ctx, pod)
}

// of is the probe of node: one of the nodes the environment's placements
// (kubernetes.nodes) resolved to.
func (ps *Probes) of(node string) (*Probe, error) {
	p := ps.byNode[node]
	if p == nil {
		return nil, fmt.Errorf("it runs on node %s, and spatec's probes read nodes %s only, where the environment places the run's pods (kubernetes.nodes)", node, strings.Join(ps.nodes, ", "))
	}
	return p, nil
}
