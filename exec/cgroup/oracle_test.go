package cgroup

import (
	"testing"

	"github.com/containerd/cgroups/v3/cgroup1"
	"github.com/containerd/cgroups/v3/cgroup2"
)

// libraryStat reads a group through github.com/containerd/cgroups/v3, the
// reference Stat is checked against. It opens every file afresh, which is
// why the sampler does not use it (see heldFile). The library's v1 memory
// statistics have no shmem: that field stays 0.
func libraryStat(t *testing.T, g *Group) Stat {
	t.Helper()
	if g.mode == ModeV2 {
		m, err := cgroup2.Load(g.paths[""], cgroup2.WithMountpoint(g.root))
		if err != nil {
			t.Fatal(err)
		}
		ms, err := m.Stat()
		if err != nil {
			t.Fatal(err)
		}
		s := Stat{
			CPUUsageNs: ms.CPU.UsageUsec * 1000, NrThrottled: ms.CPU.NrThrottled, ThrottledUsec: ms.CPU.ThrottledUsec,
			AnonBytes: ms.Memory.Anon, ShmemBytes: ms.Memory.Shmem, MemoryPeakBytes: ms.Memory.MaxUsage,
		}
		if ms.MemoryEvents != nil {
			s.OOMKills = ms.MemoryEvents.OomKill
		}
		return s
	}
	hierarchy := func() ([]cgroup1.Subsystem, error) {
		return []cgroup1.Subsystem{
			cgroup1.NewCpu(g.root), cgroup1.NewCpuacct(g.root),
			cgroup1.NewMemory(g.root, cgroup1.IgnoreModules("memsw", "kmem", "kmem.tcp")),
		}, nil
	}
	path := func(n cgroup1.Name) (string, error) {
		if p, ok := g.paths[string(n)]; ok {
			return p, nil
		}
		return "", cgroup1.ErrControllerNotActive
	}
	cg, err := cgroup1.Load(path, cgroup1.WithHierarchy(hierarchy))
	if err != nil {
		t.Fatal(err)
	}
	ms, err := cg.Stat()
	if err != nil {
		t.Fatal(err)
	}
	return Stat{
		CPUUsageNs: ms.CPU.Usage.Total, NrThrottled: ms.CPU.Throttling.ThrottledPeriods,
		ThrottledUsec: ms.CPU.Throttling.ThrottledTime / 1000,
		AnonBytes:     ms.Memory.TotalRSS, MemoryPeakBytes: ms.Memory.Usage.Max, OOMKills: ms.MemoryOomControl.OomKill,
	}
}

// assertMatchesLibrary compares Stat with the library's reading, taken
// after it; v1 shmem, which the library does not read, is left out. On a
// live group the CPU counter may move on between the two readings by up
// to cpuSlack.
func assertMatchesLibrary(t *testing.T, g *Group, got Stat, cpuSlack uint64) {
	t.Helper()
	want := libraryStat(t, g)
	if g.mode.usesV1() {
		want.ShmemBytes = got.ShmemBytes
	}
	if want.CPUUsageNs >= got.CPUUsageNs && want.CPUUsageNs-got.CPUUsageNs <= cpuSlack {
		want.CPUUsageNs = got.CPUUsageNs
	}
	if got != want {
		t.Errorf("%s: Stat disagrees with the cgroups library\n  Stat    %+v\n  library %+v", g, got, want)
	}
}

func TestStatAgreesWithTheLibrary(t *testing.T) {
	for _, fx := range fixtures {
		g, err := fx.fs().Locate(fx.pid, "")
		if err != nil {
			t.Fatal(err)
		}
		s, err := g.Stat()
		if err != nil {
			t.Fatal(err)
		}
		assertMatchesLibrary(t, g, s, 0)
		g.Close()
	}
}
