package exec

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"spatec.dev/spatec/runs/record"
)

// HostCPU is the CPU time the whole host has spent since it booted, as the
// kernel counts it in /proc/stat.
type HostCPU struct {
	// Busy is every CPU's time not idle and not waiting on I/O, the run's
	// containers and spatec itself included.
	Busy time.Duration
	// Steal is time the hypervisor gave the host's virtual CPUs to someone
	// else while they had work; 0 where the kernel does not count it.
	Steal time.Duration
}

// HostCPUReader is a Cgroups on the host whose CPU it can read: Docker's
// local engine. A cluster's nodes are not read.
type HostCPUReader interface {
	HostCPU() (HostCPU, error)
}

// HostCPU reads /proc/stat.
func (h HostCgroups) HostCPU() (HostCPU, error) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return HostCPU{}, fmt.Errorf("reading the host's CPU time: %w", err)
	}
	defer f.Close()
	return parseProcStat(f)
}

// userHz is the unit of /proc/stat's CPU times: USER_HZ, 100 on every
// architecture Linux runs containers on.
const userHz = 100

// parseProcStat reads the aggregate "cpu" line of /proc/stat: user nice
// system idle iowait irq softirq steal (guest time is inside user).
func parseProcStat(r io.Reader) (HostCPU, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || f[0] != "cpu" {
			continue
		}
		if len(f) < 8 {
			return HostCPU{}, fmt.Errorf("reading the host's CPU time: /proc/stat's cpu line has %d fields, want at least 8", len(f)-1)
		}
		var v [8]uint64
		for i := range min(len(f)-1, len(v)) {
			n, err := strconv.ParseUint(f[i+1], 10, 64)
			if err != nil {
				return HostCPU{}, fmt.Errorf("reading the host's CPU time: /proc/stat's cpu line: %w", err)
			}
			v[i] = n
		}
		tick := time.Second / userHz
		busy := v[0] + v[1] + v[2] + v[5] + v[6]
		var steal uint64
		if len(f) > 8 {
			steal = v[7]
		}
		return HostCPU{Busy: time.Duration(busy) * tick, Steal: time.Duration(steal) * tick}, nil
	}
	if err := sc.Err(); err != nil {
		return HostCPU{}, fmt.Errorf("reading the host's CPU time: %w", err)
	}
	return HostCPU{}, errors.New("reading the host's CPU time: /proc/stat has no cpu line")
}

// hostReading is the host's CPU time at one instant of the window, and
// spatec's own.
type hostReading struct {
	at   time.Time
	cpu  HostCPU
	self time.Duration
	ok   bool
}

// selfCPU is the CPU time this process has used: spatec's driver, sampler
// and, where the environment embeds one, broker.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// readHost reads the host's CPU time, where the runner's cgroup tree can.
func (run *armRun) readHost() hostReading {
	h, ok := run.s.runner.Cgroups.(HostCPUReader)
	if !ok {
		return hostReading{}
	}
	cpu, err := h.HostCPU()
	if err != nil {
		run.s.runner.logf("%v; the host's CPU outside the run is not recorded", err)
		return hostReading{}
	}
	return hostReading{at: time.Now(), cpu: cpu, self: selfCPU(), ok: true}
}

// hostMetrics records the CPU the host spent outside the run's containers
// over the window (spatec, the OS, host services, anything else), and the
// CPU the hypervisor stole, and flags the run when together they took more
// than the caps leave of the host's cores: the containers may then not have
// had their caps.
func (run *armRun) hostMetrics() {
	from, to := run.hostFrom, run.hostTo
	if !from.ok || !to.ok || !to.at.After(from.at) {
		return
	}
	wall := to.at.Sub(from.at).Seconds()
	busy := (to.cpu.Busy - from.cpu.Busy).Seconds() / wall
	steal := (to.cpu.Steal - from.cpu.Steal).Seconds() / wall
	inside := 0.0
	for _, c := range run.summary.Containers {
		inside += c.CoresUsed
	}
	outside := max(busy-inside, 0)
	m := run.rec.Metrics
	m[record.HostOutsideCores] = record.Metric{Value: outside, Unit: "cores"}
	m[record.HostStealCores] = record.Metric{Value: steal, Unit: "cores"}
	m[record.SpatecCores] = record.Metric{Value: (to.self - from.self).Seconds() / wall, Unit: "cores"}
	capped := 0.0
	for _, c := range run.plan.Entrant.Containers {
		capped += c.CPUs
	}
	for _, c := range run.s.infra {
		capped += run.s.service(c.service).CPUs
	}
	cores := float64(run.s.host.NCPU)
	budget := cores - capped
	if cores > 0 && outside+steal > budget {
		run.rec.Flags = appendOnce(run.rec.Flags, record.FlagHostBusy)
		run.caveats = appendOnce(run.caveats, fmt.Sprintf("the host was busy outside the run: %.2f cores outside its containers and %.2f stolen by the hypervisor, against the %.2f of %.0f cores its caps leave, so its containers may not have had their caps",
			outside, steal, budget, cores))
	}
}
