package kube

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"spatec.dev/spatec/exec"
	"spatec.dev/spatec/exec/cgroup"
	"spatec.dev/spatec/exec/engine"
	"spatec.dev/spatec/internal/testenv"
	"spatec.dev/spatec/runs/record"
	"spatec.dev/spatec/schema"
)

// BenchmarkReading sets one sampler tick over three Guaranteed pods'
// containers read on the node directly (what spatec does on a Docker host)
// beside the same tick through spatec's probe and its port-forward (what
// it does on Kubernetes: one request a tick), on the test cluster.
// cpu-µs/tick is the CPU a tick costs in every process it passes through
// (read from /proc): at 10 ticks a second, 1000 cpu-µs/tick is 1% of a
// core. The idle CPU of the cluster's daemons over the run is in both.
//
//	bash .ci/k8s up && go test ./exec/engine/kube -run '^$' -bench Reading -benchtime 2000x
func BenchmarkReading(b *testing.B) {
	testenv.Kubernetes(b)
	docker := testenv.Docker(b)
	ctx := context.Background()
	cfg, err := clientcmd.BuildConfigFromFlags("", testenv.KubeconfigPath)
	if err != nil {
		b.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 1000, 1000
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	e := &Engine{Client: client, Namespace: "spatec", Place: placeTestNode, Builder: docker,
		Load: []string{"ctr", "-a", "/run/spatec-k8s/containerd.sock", "-n", "k8s.io", "images", "import", "-"}}
	run, err := record.NewRunID()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = e.RemoveByLabel(context.Background(), exec.LabelRun, run) })
	src, err := filepath.Abs("../..")
	if err != nil {
		b.Fatal(err)
	}
	if err := exec.BuildProgram(ctx, e, src, "spatec-probe:local", ProbeProgram, schema.Arch(runtime.GOARCH)); err != nil {
		b.Fatal(err)
	}
	p := NewProbe(e, cfg, ProbeSpec{Node: placeTestNode.Node, Image: "spatec-probe:local", Labels: map[string]string{exec.LabelRun: run}})
	if err := p.Start(ctx); err != nil {
		b.Fatal(err)
	}
	// Three containers, as a run with a broker, ClickHouse and one arm
	// container samples.
	var host, remote []exec.Group
	for i := range 3 {
		created, err := e.Create(ctx, engine.ContainerSpec{Name: fmt.Sprintf("spatec-bench-hold-%d", i), Image: "docker.io/spatec/pause:1",
			NanoCPUs: 25e7, Memory: 64 << 20, MemorySwap: 64 << 20, NetworkMode: "host", Labels: map[string]string{exec.LabelRun: run}})
		if err != nil {
			b.Fatal(err)
		}
		if err := e.Start(ctx, created.ID); err != nil {
			b.Fatal(err)
		}
		c, err := e.Inspect(ctx, created.ID)
		if err != nil || c.Pod == nil {
			b.Fatalf("the pod: %v %+v", err, c)
		}
		h, err := cgroup.FS{}.LocatePod(c.Pod.QoS, c.Pod.UID, c.Pod.ContainerID)
		if err != nil {
			b.Fatal(err)
		}
		defer h.Close()
		r, _, err := p.Find(ctx, c, cgroup.Caps{})
		if err != nil {
			b.Fatal(err)
		}
		defer r.Close()
		host, remote = append(host, h), append(remote, r)
	}
	// Every process a reading passes through: this one, the API server,
	// the kubelet and containerd (the port-forward), and the probe.
	pids := []int{os.Getpid(), findProcess(b, "/spatec-probe")}
	for _, name := range []string{"apiserver", "kubelet", "containerd"} {
		pids = append(pids, pidFile(b, "/run/spatec-k8s/"+name+".pid"))
	}
	spent := func() (d time.Duration) {
		for _, pid := range pids {
			d += cpuTime(b, pid)
		}
		return d
	}
	newTick := func() {
		// The next tick is 100 ms later: never within batchFresh.
		p.mu.Lock()
		p.batchAt = time.Time{}
		p.mu.Unlock()
	}
	for _, s := range []struct {
		name string
		g    []exec.Group
		tick func()
	}{{"host", host, func() {}}, {"probe", remote, newTick}} {
		b.Run(s.name, func(b *testing.B) {
			before := spent()
			b.ResetTimer()
			for range b.N {
				// One tick: every container read, one after another.
				for _, g := range s.g {
					if _, err := g.Stat(); err != nil {
						b.Fatal(err)
					}
				}
				s.tick()
			}
			b.StopTimer()
			b.ReportMetric(float64((spent()-before).Microseconds())/float64(b.N), "cpu-µs/tick")
		})
	}
}

// placeTestNode is the test cluster's only node.
var placeTestNode = schema.Placement{Node: "spatec-node"}

func pidFile(b *testing.B, path string) int {
	raw, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		b.Fatal(err)
	}
	return pid
}

// findProcess is the pid of the process whose command line starts with
// name.
func findProcess(b *testing.B, name string) int {
	dirs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, d := range dirs {
		raw, err := os.ReadFile(d)
		if err == nil && strings.HasPrefix(string(raw), name) {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(d)))
			return pid
		}
	}
	b.Fatalf("no process %s", name)
	return 0
}

// cpuTime is a process's user and system time, from /proc/<pid>/stat.
func cpuTime(b *testing.B, pid int) time.Duration {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		b.Fatal(err)
	}
	f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+1:]))
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}
