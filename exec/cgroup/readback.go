package cgroup

import (
	"fmt"
	"math"
	"math/bits"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Caps are the limits a plan declares for one container, in the terms of
// Docker's HostConfig, which is how the executor applies them.
type Caps struct {
	// NanoCPUs is the CPU quota in billionths of a CPU: 32 CPUs is 32e9.
	// Docker applies it as a CFS quota over a 100000 µs period, so 32 CPUs
	// read back as "3200000 100000". 0 means no quota.
	NanoCPUs int64
	// CpusetCpus is the CPU list the container is pinned to ("0-3,8"); ""
	// means none was declared, and none is checked.
	CpusetCpus string
	// ExclusiveCPUs, when positive, is a CPU cap of whole cores the
	// container has to itself, as Kubernetes' static CPU manager gives a
	// Guaranteed pod's container: its cpuset holds exactly that many CPUs,
	// and it has no CFS quota (since 1.33 the kubelet drops the quota of
	// such containers). NanoCPUs and CpusetCpus are then zero. That no
	// other container shares those cores is checked on the node
	// (FS.CpusetSharers).
	ExclusiveCPUs int
	// Memory is the memory limit in bytes; 0 means none.
	Memory int64
	// MemorySwap is the combined memory+swap limit, as Docker takes it:
	// equal to Memory means no swap (contract C5); -1 means unlimited swap;
	// 0 means unset, which Docker turns into twice Memory.
	MemorySwap int64
}

// dockerCFSPeriod is the period Docker applies NanoCPUs with, in µs.
const dockerCFSPeriod = 100000

// ReadBack is what the kernel enforces on a group, as read from its files.
type ReadBack struct {
	Mode Mode
	// Dirs are the directories read, by controller (v2: "unified").
	Dirs map[string]string
	// Raw holds each file read, by name ("cpu.max"), with its content
	// trimmed of surrounding space, for provenance. A file the group does
	// not have is not in Raw.
	Raw map[string]string

	// CPUQuotaUs and CPUPeriodUs are the CFS bandwidth; the quota is -1
	// when there is none.
	CPUQuotaUs, CPUPeriodUs int64
	// MemoryBytes is the memory limit, -1 when unlimited.
	MemoryBytes int64
	// SwapAccounting says whether the kernel accounts swap for the group
	// (the swap limit file exists). Without it swap cannot be limited per
	// container, and CheckSwap must confirm the host has no swap (C5).
	SwapAccounting bool
	// MemorySwapBytes is the combined memory+swap limit in Docker's terms
	// (v1 memsw; v2 memory.max + memory.swap.max), -1 when unlimited, 0
	// without swap accounting.
	MemorySwapBytes int64
	// CpusetCpus is the CPU list of the group, "" when not read.
	CpusetCpus string
}

// unlimitedFloor: v1 reports "no limit" as the largest page-rounded
// counter, 9223372036854771712 with 4 KiB pages (less with larger pages).
// Anything at or above the 64 KiB-page figure is no limit.
const unlimitedFloor = math.MaxInt64 &^ (1<<16 - 1)

// parseLimit reads a limit file's content: -1 for no limit ("max", "-1",
// or the page-rounded maximum), else the value.
func parseLimit(raw string) (int64, error) {
	if raw == "max" || raw == "-1" {
		return -1, nil
	}
	v, err := strconv.ParseUint(raw, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("expected a number, \"max\" or \"-1\", found %q", raw)
	}
	if v >= unlimitedFloor {
		return -1, nil
	}
	return int64(v), nil
}

// ReadBack reads the caps the kernel enforces on the group: v2 cpu.max,
// memory.max, memory.swap.max and cpuset.cpus; v1 cpu.cfs_quota_us,
// cpu.cfs_period_us, memory.limit_in_bytes, memory.memsw.limit_in_bytes and
// cpuset.cpus. A file the group lacks is left out of Raw and reported by
// Verify when the plan needs it; an unreadable or malformed file is an
// error.
func (g *Group) ReadBack() (ReadBack, error) {
	rb := ReadBack{Mode: g.mode, Dirs: g.Dirs(), Raw: map[string]string{}, CPUQuotaUs: -1, MemoryBytes: -1}
	read := func(controller, name string) (string, bool, error) {
		dir := g.Dir(controller)
		if dir == "" {
			return "", false, nil
		}
		file := filepath.Join(dir, name)
		b, err := os.ReadFile(file)
		if isNotExist(err) {
			return "", false, nil
		}
		if err != nil {
			return "", false, fmt.Errorf("reading back %s: %w", file, err)
		}
		s := strings.TrimSpace(string(b))
		rb.Raw[name] = s
		return s, true, nil
	}
	limit := func(controller, name string, dst *int64) (bool, error) {
		s, ok, err := read(controller, name)
		if !ok || err != nil {
			return ok, err
		}
		v, err := parseLimit(s)
		if err != nil {
			return true, fmt.Errorf("reading back %s: %w", filepath.Join(g.Dir(controller), name), err)
		}
		*dst = v
		return true, nil
	}
	var err error
	if g.mode == ModeV2 {
		s, ok, err := read("cpu", "cpu.max")
		if err != nil {
			return rb, err
		}
		if ok {
			q, p, found := strings.Cut(s, " ")
			period, perr := strconv.ParseInt(p, 10, 64)
			if !found || perr != nil {
				return rb, fmt.Errorf("reading back %s: expected \"<quota|max> <period>\", found %q", filepath.Join(g.Dir("cpu"), "cpu.max"), s)
			}
			rb.CPUPeriodUs = period
			if rb.CPUQuotaUs, err = parseLimit(q); err != nil {
				return rb, fmt.Errorf("reading back %s: quota: %w", filepath.Join(g.Dir("cpu"), "cpu.max"), err)
			}
		}
		if _, err := limit("memory", "memory.max", &rb.MemoryBytes); err != nil {
			return rb, err
		}
		var swap int64
		if rb.SwapAccounting, err = limit("memory", "memory.swap.max", &swap); err != nil {
			return rb, err
		}
		if rb.SwapAccounting {
			rb.MemorySwapBytes = -1
			if swap >= 0 && rb.MemoryBytes >= 0 {
				rb.MemorySwapBytes = rb.MemoryBytes + swap
			}
		}
	} else {
		if _, err := limit("cpu", "cpu.cfs_quota_us", &rb.CPUQuotaUs); err != nil {
			return rb, err
		}
		if _, err := limit("cpu", "cpu.cfs_period_us", &rb.CPUPeriodUs); err != nil {
			return rb, err
		}
		if _, err := limit("memory", "memory.limit_in_bytes", &rb.MemoryBytes); err != nil {
			return rb, err
		}
		if rb.SwapAccounting, err = limit("memory", "memory.memsw.limit_in_bytes", &rb.MemorySwapBytes); err != nil {
			return rb, err
		}
	}
	if rb.CpusetCpus, _, err = read("cpuset", "cpuset.cpus"); err != nil {
		return rb, err
	}
	return rb, nil
}

// Mismatch is one cap the kernel does not enforce as planned.
type Mismatch struct {
	// File is the cgroup file compared ("memory.limit_in_bytes").
	File string
	// Want is the content the plan implies, Got the content found ("absent"
	// when the group has no such file).
	Want, Got string
	// Hint, when set, says what likely caused it.
	Hint string
}

func (m Mismatch) String() string {
	got := m.Got
	if v, err := parseLimit(m.Got); err == nil && v == -1 && m.Got != "max" {
		got += " (unlimited)"
	}
	s := fmt.Sprintf("%s: want %s, found %s", m.File, m.Want, got)
	if m.Hint != "" {
		s += " (" + m.Hint + ")"
	}
	return s
}

const absent = "absent"

// Verify compares the caps read back with the caps planned and returns
// every difference (C6), in a stable order. "No limit" matches only no
// limit, whatever form the kernel writes it in, so an unlimited group
// never passes for a finite cap.
//
// Without swap accounting (no memsw / memory.swap.max file) a plan without
// swap is not a mismatch here: the caller must then run CheckSwap, which
// refuses a host that has swap at all (C5). A plan asking for swap on such
// a kernel is a mismatch.
func Verify(want Caps, got ReadBack) []Mismatch {
	var out []Mismatch
	add := func(file, w string, wantV int64) {
		raw, ok := got.Raw[file]
		if !ok && wantV == -1 {
			// No file, no limit: nothing is capped, as planned.
			return
		}
		if !ok {
			out = append(out, Mismatch{File: file, Want: w, Got: absent, Hint: "the group has no such file; is the controller enabled for it?"})
			return
		}
		v, err := parseLimit(raw)
		if err == nil && v == wantV {
			return
		}
		m := Mismatch{File: file, Want: w, Got: raw}
		if page := int64(os.Getpagesize()); err == nil && wantV > 0 && v == wantV/page*page {
			m.Hint = fmt.Sprintf("the kernel rounds memory limits down to whole %d-byte pages: declare a multiple of %d", page, page)
		}
		out = append(out, m)
	}
	memWant := limitOrUnlimited(want.Memory)
	swapWant := combinedSwap(want)
	swapFile := "memory.memsw.limit_in_bytes"
	if got.Mode == ModeV2 {
		swapFile = "memory.swap.max"
	}
	if got.Mode == ModeV2 {
		if raw, ok := got.Raw["cpu.max"]; (!ok && want.NanoCPUs > 0) || !cpuMatches(want.NanoCPUs, got.CPUQuotaUs, got.CPUPeriodUs) {
			if !ok {
				raw = absent
			}
			out = append(out, Mismatch{File: "cpu.max", Want: cpuMaxText(want.NanoCPUs), Got: raw, Hint: cpuHint(want.NanoCPUs)})
		}
		add("memory.max", limitText(memWant, "max"), memWant)
		if _, ok := got.Raw[swapFile]; ok || swapWant != memWant {
			swap := int64(-1)
			if swapWant >= 0 && memWant >= 0 {
				swap = swapWant - memWant
			}
			add(swapFile, limitText(swap, "max"), swap)
		}
	} else {
		if !cpuMatches(want.NanoCPUs, got.CPUQuotaUs, got.CPUPeriodUs) {
			quota := int64(-1)
			if want.NanoCPUs > 0 {
				quota = want.NanoCPUs * dockerCFSPeriod / 1e9
			}
			qraw, ok := got.Raw["cpu.cfs_quota_us"]
			if !ok {
				qraw = absent
			}
			out = append(out, Mismatch{File: "cpu.cfs_quota_us", Want: strconv.FormatInt(quota, 10), Got: qraw, Hint: cpuHint(want.NanoCPUs)})
			if praw := got.Raw["cpu.cfs_period_us"]; want.NanoCPUs > 0 && praw != strconv.Itoa(dockerCFSPeriod) {
				if praw == "" {
					praw = absent
				}
				out = append(out, Mismatch{File: "cpu.cfs_period_us", Want: strconv.Itoa(dockerCFSPeriod), Got: praw})
			}
		}
		add("memory.limit_in_bytes", limitText(memWant, "unlimited"), memWant)
		if _, ok := got.Raw[swapFile]; ok || swapWant != memWant {
			add(swapFile, limitText(swapWant, "unlimited"), swapWant)
		}
	}
	for i := range out {
		if out[i].File == swapFile && out[i].Got == absent {
			out[i].Hint = "the kernel has no swap accounting, so a swap limit can be neither applied nor verified"
		}
	}
	if want.CpusetCpus != "" {
		out = append(out, verifyCpuset(want.CpusetCpus, got)...)
	}
	if want.ExclusiveCPUs > 0 {
		out = append(out, verifyExclusive(want.ExclusiveCPUs, got)...)
	}
	return out
}

func limitOrUnlimited(v int64) int64 {
	if v <= 0 {
		return -1
	}
	return v
}

// combinedSwap is the memory+swap limit Docker applies for want.
func combinedSwap(want Caps) int64 {
	switch {
	case want.MemorySwap < 0:
		return -1
	case want.MemorySwap == 0 && want.Memory > 0:
		return 2 * want.Memory
	case want.MemorySwap == 0:
		return -1
	}
	return want.MemorySwap
}

func limitText(v int64, unlimited string) string {
	if v < 0 {
		return unlimited
	}
	return strconv.FormatInt(v, 10)
}

// cpuMatches compares quota/period with nano-CPUs exactly: a group whose
// period differs from Docker's still matches when the ratio is the same.
func cpuMatches(nano, quota, period int64) bool {
	if nano <= 0 {
		return quota == -1
	}
	if quota <= 0 || period <= 0 {
		return false
	}
	// quota/period == nano/1e9, compared in 128 bits.
	h1, l1 := bits.Mul64(uint64(quota), 1e9)
	h2, l2 := bits.Mul64(uint64(nano), uint64(period))
	return h1 == h2 && l1 == l2
}

func cpuMaxText(nano int64) string {
	if nano <= 0 {
		return fmt.Sprintf("max %d", dockerCFSPeriod)
	}
	return fmt.Sprintf("%d %d", nano*dockerCFSPeriod/1e9, dockerCFSPeriod)
}

// cpuHint explains the one planned value no quota can express exactly.
func cpuHint(nano int64) string {
	if nano > 0 && nano*dockerCFSPeriod%1e9 != 0 {
		return fmt.Sprintf("%d nano-CPUs is not a whole number of microseconds per %d µs period; declare CPUs in steps of 0.01", nano, dockerCFSPeriod)
	}
	return ""
}

func verifyCpuset(want string, got ReadBack) []Mismatch {
	raw, ok := got.Raw["cpuset.cpus"]
	if !ok {
		return []Mismatch{{File: "cpuset.cpus", Want: want, Got: absent, Hint: "the cpuset controller is not available for the group"}}
	}
	w, err := parseCPUList(want)
	if err != nil {
		return []Mismatch{{File: "cpuset.cpus", Want: want, Got: raw, Hint: "the planned CPU list is malformed: " + err.Error()}}
	}
	g, err := parseCPUList(raw)
	if err != nil {
		return []Mismatch{{File: "cpuset.cpus", Want: want, Got: raw, Hint: "the kernel's CPU list is malformed: " + err.Error()}}
	}
	if len(w) != len(g) {
		return []Mismatch{{File: "cpuset.cpus", Want: want, Got: raw}}
	}
	for cpu := range w {
		if !g[cpu] {
			return []Mismatch{{File: "cpuset.cpus", Want: want, Got: raw}}
		}
	}
	return nil
}

// verifyExclusive checks a cpuset of n whole CPUs; the CFS quota, which
// must be absent, is checked with the other CPU caps (NanoCPUs 0).
func verifyExclusive(n int, got ReadBack) []Mismatch {
	want := fmt.Sprintf("%d CPUs of its own", n)
	raw, ok := got.Raw["cpuset.cpus"]
	if !ok {
		return []Mismatch{{File: "cpuset.cpus", Want: want, Got: absent, Hint: "the cpuset controller is not available for the group"}}
	}
	cpus, err := parseCPUList(raw)
	if err != nil {
		return []Mismatch{{File: "cpuset.cpus", Want: want, Got: raw, Hint: "the kernel's CPU list is malformed: " + err.Error()}}
	}
	if len(cpus) != n {
		return []Mismatch{{File: "cpuset.cpus", Want: want, Got: raw,
			Hint: "the kubelet gives whole cores of their own only to a Guaranteed pod's containers with whole CPUs, under its static CPU manager policy (cpuManagerPolicy: static)"}}
	}
	return nil
}

// parseCPUList reads the kernel's list format ("0-3,8,10-11"), so that
// "0,1,2,3" and the "0-3" the kernel writes back compare equal.
func parseCPUList(s string) (map[int]bool, error) {
	set := map[int]bool{}
	if strings.TrimSpace(s) == "" {
		return set, nil
	}
	for _, part := range strings.Split(strings.TrimSpace(s), ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return nil, fmt.Errorf("%q is not a CPU number", lo)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return nil, fmt.Errorf("%q is not a CPU range", part)
			}
		}
		if b-a > 1<<16 {
			return nil, fmt.Errorf("%q is not a plausible CPU range", part)
		}
		for c := a; c <= b; c++ {
			set[c] = true
		}
	}
	return set, nil
}

// VerifyContainer locates a container's group, reads its caps back and
// compares them with want. Callers also run CheckSwap once per host when
// any group lacks swap accounting.
func (f FS) VerifyContainer(pid int, containerID string, want Caps) (ReadBack, []Mismatch, error) {
	g, err := f.Locate(pid, containerID)
	if err != nil {
		return ReadBack{}, nil, err
	}
	defer g.Close()
	rb, err := g.ReadBack()
	if err != nil {
		return rb, nil, err
	}
	return rb, Verify(want, rb), nil
}
