package cgroup

import (
	"os/exec"
	"testing"

	"spatec.dev/spatec/exec/cgroup/cgrouptest"
)

// BenchmarkVerify measures what refusing or accepting one container costs:
// locating its group through /proc, reading its caps back and comparing
// them. The target is well under 50 ms per container.
func BenchmarkVerify(b *testing.B) {
	for _, fx := range fixtures {
		b.Run(fx.name, func(b *testing.B) {
			fs := fx.fs()
			for b.Loop() {
				_, ms, err := fs.VerifyContainer(fx.pid, fixtureID, planned)
				if err != nil || len(ms) != 0 {
					b.Fatal(err, ms)
				}
			}
		})
	}
	// The real host: a group created like a container's, on cgroupfs,
	// where the kernel generates each file on read.
	b.Run("host", func(b *testing.B) {
		pid := hostGroup(b)
		want := Caps{NanoCPUs: 5e8, Memory: 256 << 20, MemorySwap: 256 << 20}
		for b.Loop() {
			_, ms, err := FS{}.VerifyContainer(pid, "", want)
			if err != nil || len(ms) != 0 {
				b.Fatal(err, ms)
			}
		}
	})
}

// hostGroup creates a v1 group capped at 0.5 CPU and 256 MiB with a
// sleeping process in it, and returns the process's pid.
func hostGroup(b *testing.B) int {
	b.Helper()
	if err := cgrouptest.Probe(); err != nil {
		b.Skipf("no host group: %v", err)
	}
	g := cgrouptest.New(b, cgrouptest.Limits{CPUQuotaUs: 50000, MemoryBytes: 256 << 20})
	return g.Start(b, exec.Command("sleep", "600"))
}

// BenchmarkStat is one reading of one group's counters, the unit of a
// sampler tick.
func BenchmarkStat(b *testing.B) {
	for _, fx := range fixtures {
		b.Run(fx.name, func(b *testing.B) {
			g, err := fx.fs().Locate(fx.pid, "")
			if err != nil {
				b.Fatal(err)
			}
			defer g.Close()
			for b.Loop() {
				if _, err := g.Stat(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("host", func(b *testing.B) {
		g, err := FS{}.Locate(hostGroup(b), "")
		if err != nil {
			b.Fatal(err)
		}
		defer g.Close()
		for b.Loop() {
			if _, err := g.Stat(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
