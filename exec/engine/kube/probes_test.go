package kube

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes/fake"

	"spatec.dev/spatec/exec/cgroup"
	"spatec.dev/spatec/exec/cgroup/cgrouptest"
	"spatec.dev/spatec/exec/engine"
	"spatec.dev/spatec/exec/engine/kube/probe"
)

// fixtureNode is a node as its probe's pod sees it: a v1 tree (or a v2
// one) holding one Guaranteed pod's container with memory limit mem, and
// the process table, with swap when swap is set.
func fixtureNode(t *testing.T, v2 bool, uid, cid string, mem, file string, swap bool) cgroup.FS {
	t.Helper()
	group := "kubepods/pod" + uid + "/" + cid
	files := map[string]string{
		"proc/uptime":                    "12.50 20.00",
		"proc/4242/stat":                 "4242 (app) S 1 4242 4242 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 200 1 1",
		"proc/4242/root/var/log/app.log": file,
		"proc/swaps":                     "Filename Type Size Used Priority\n",
	}
	if swap {
		files["proc/swaps"] += "/swapfile file 1048576 0 -2\n"
	}
	if v2 {
		files["cgroup/cgroup.controllers"] = "cpu memory cpuset"
		files["cgroup/"+group+"/memory.max"] = mem
		files["cgroup/"+group+"/cgroup.procs"] = "4242\n"
	} else {
		files["cgroup/cpu/"+group+"/cpu.cfs_quota_us"] = "50000"
		files["cgroup/cpu/"+group+"/cpu.cfs_period_us"] = "100000"
		files["cgroup/memory/"+group+"/memory.limit_in_bytes"] = mem
		files["cgroup/memory/"+group+"/memory.memsw.limit_in_bytes"] = mem
		files["cgroup/memory/"+group+"/cgroup.procs"] = "4242\n"
		files["cgroup/cpuacct/"+group+"/cpuacct.usage"] = "0"
		files["cgroup/cpuset/"+group+"/cpuset.cpus"] = "0-1"
	}
	root := cgrouptest.Files(t, files)
	return cgroup.FS{Root: filepath.Join(root, "cgroup"), Proc: filepath.Join(root, "proc")}
}

// probeOn serves fs with spatec's probe server, as a port-forward would
// reach it, and returns the client's probe for node.
func probeOn(t *testing.T, e *Engine, node string, fs cgroup.FS) *Probe {
	t.Helper()
	srv := httptest.NewServer((&probe.Server{FS: fs, Token: "t-" + node}).Handler())
	t.Cleanup(srv.Close)
	return &Probe{engine: e, node: node, token: "t-" + node, base: srv.URL, http: srv.Client()}
}

// TestProbesReadEachPodOnItsNode: with the arm on one node and a service
// on another, each pod is read by the probe of its own node; a pod on a
// node no placement names, nodes of two cgroup layouts, and a node with
// swap are each refused by name.
func TestProbesReadEachPodOnItsNode(t *testing.T) {
	ctx := context.Background()
	e := &Engine{Client: fake.NewClientset(), Namespace: "spatec"}
	ps := &Probes{nodes: []string{"node-a", "node-b"}, byNode: map[string]*Probe{
		"node-a": probeOn(t, e, "node-a", fixtureNode(t, false, "ua", "ca", "134217728", "log on a", false)),
		"node-b": probeOn(t, e, "node-b", fixtureNode(t, false, "ub", "cb", "268435456", "log on b", true)),
	}}

	if m, err := ps.Mode(ctx); err != nil || m != cgroup.ModeV1 {
		t.Errorf("Mode = %v, %v; want v1", m, err)
	}
	on := func(node, uid, cid string) engine.Container {
		return engine.Container{Name: "c-" + uid, Pod: &engine.PodRef{Node: node, UID: uid, QoS: cgroup.QoSGuaranteed, ContainerID: cid}}
	}
	for _, c := range []struct {
		node, uid, cid string
		mem            int64
		log            string
	}{{"node-a", "ua", "ca", 134217728, "log on a"}, {"node-b", "ub", "cb", 268435456, "log on b"}} {
		g, problems, err := ps.Find(ctx, on(c.node, c.uid, c.cid), cgroup.Caps{})
		if err != nil || len(problems) > 0 {
			t.Fatalf("Find on %s: %v, %v", c.node, problems, err)
		}
		rb, err := g.ReadBack()
		if err != nil || rb.MemoryBytes != c.mem {
			t.Errorf("read-back on %s: %+v, %v; want memory limit %d", c.node, rb, err, c.mem)
		}
		got, err := ps.ReadFile(ctx, *on(c.node, c.uid, c.cid).Pod, "/var/log/app.log", 1<<10)
		if err != nil || string(got) != c.log {
			t.Errorf("file on %s: %q, %v; want %q", c.node, got, err, c.log)
		}
	}

	_, _, err := ps.Find(ctx, on("node-z", "uz", "cz"), cgroup.Caps{})
	if want := "container c-uz: it runs on node node-z, and spatec's probes read nodes node-a, node-b only"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a pod on another node: %v; want %q", err, want)
	}
	if err := ps.CheckSwap(ctx, false); err == nil || !strings.Contains(err.Error(), "node node-b: C5: swap is active on this host (/swapfile") || strings.Contains(err.Error(), "node-a") {
		t.Errorf("swap on node-b alone: %v; want C5 for node-b only", err)
	}

	ps.nodes = append(ps.nodes, "node-c")
	ps.byNode["node-c"] = probeOn(t, e, "node-c", fixtureNode(t, true, "uc", "cc", "134217728", "", false))
	if _, err := ps.Mode(ctx); err == nil || !strings.Contains(err.Error(), "node node-a runs cgroup v1 and node node-c cgroup v2") {
		t.Errorf("nodes of two layouts: %v", err)
	}
}

// TestNewProbesOnePerNode: a node named by several placements gets one
// probe.
func TestNewProbesOnePerNode(t *testing.T) {
	ps := NewProbes(&Engine{}, nil, ProbeSpec{Image: "spatec-probe:local"}, []string{"node-a", "node-b", "node-a"})
	if got := strings.Join(ps.Nodes(), ","); got != "node-a,node-b" {
		t.Errorf("nodes %s; want node-a,node-b", got)
	}
	if ps.byNode["node-b"].spec.Node != "node-b" || ps.byNode["node-b"].spec.Image != "spatec-probe:local" {
		t.Errorf("node-b's probe: %+v", ps.byNode["node-b"].spec)
	}
}
