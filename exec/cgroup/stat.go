package cgroup

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// Stat is one reading of a group's counters. Counters are cumulative since
// the group was created; the sampler turns them into window deltas.
type Stat struct {
	// CPUUsageNs is the CPU time consumed (v2 cpu.stat usage_usec × 1000,
	// v1 cpuacct.usage).
	CPUUsageNs uint64
	// NrThrottled counts CFS periods in which the group hit its quota
	// (cpu.stat nr_throttled).
	NrThrottled uint64
	// ThrottledUsec is the time spent throttled (v2 cpu.stat
	// throttled_usec, v1 throttled_time / 1000).
	ThrottledUsec uint64
	// AnonBytes is anonymous memory (v2 memory.stat anon, v1 total_rss).
	AnonBytes uint64
	// ShmemBytes is shared memory (v2 shmem, v1 total_shmem): a memfd heap
	// or /dev/shm is charged here, not to anon.
	ShmemBytes uint64
	// MemoryPeakBytes is the kernel's high-water mark of the group's memory
	// usage (v2 memory.peak, v1 memory.max_usage_in_bytes): since the last
	// ResetPeak that succeeded, else since the group was created. 0 when the
	// kernel does not provide it (v2 before Linux 5.19).
	MemoryPeakBytes uint64
	// OOMKills counts processes of the group killed by the OOM killer (v2
	// memory.events oom_kill, v1 memory.oom_control oom_kill).
	OOMKills uint64
}

// heldFile is a cgroup file kept open across readings. cgroupfs generates
// a file's content afresh on every read at offset 0, so one pread per
// reading replaces an open, read and close: on the bench host that is what
// keeps a 10 Hz sampler over several containers well under 1% of a core.
type heldFile struct {
	f    *os.File
	fd   int
	path string
}

func openHeld(path string, flag int) (*heldFile, error) {
	f, err := os.OpenFile(path, flag, 0)
	if err != nil {
		return nil, err
	}
	return &heldFile{f: f, fd: int(f.Fd()), path: path}, nil
}

// read returns the whole file, growing buf as needed.
func (h *heldFile) read(buf *[]byte) ([]byte, error) {
	for {
		n, err := syscall.Pread(h.fd, *buf, 0)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", h.path, err)
		}
		if n < len(*buf) {
			return (*buf)[:n], nil
		}
		*buf = make([]byte, 2*len(*buf))
	}
}

func (h *heldFile) close() error {
	if h == nil {
		return nil
	}
	return h.f.Close()
}

// statFiles are the files one reading needs, opened once.
type statFiles struct {
	cpuStat   *heldFile // cpu.stat: throttling, and v2 usage
	cpuUsage  *heldFile // v1 cpuacct.usage
	memStat   *heldFile // memory.stat
	oom       *heldFile // v2 memory.events, v1 memory.oom_control
	peak      *heldFile // v2 memory.peak (absent before Linux 5.19), v1 memory.max_usage_in_bytes
	exists    string    // a directory whose disappearance means the group is gone
	buf       []byte
	keysCPU   []string
	keysMem   []string
	keysOOM   []string
	throttleD uint64 // divides the throttled time into µs
}

func (g *Group) openStatFiles() (*statFiles, error) {
	s := &statFiles{buf: make([]byte, 8192), keysOOM: []string{"oom_kill"}}
	var opened []*heldFile
	open := func(dst **heldFile, controller, name string, optional bool) error {
		h, err := openHeld(filepath.Join(g.Dir(controller), name), os.O_RDONLY)
		if err != nil {
			if optional && isNotExist(err) {
				return nil
			}
			return fmt.Errorf("opening %s: %w", filepath.Join(g.Dir(controller), name), err)
		}
		opened = append(opened, h)
		*dst = h
		return nil
	}
	var err error
	if g.mode == ModeV2 {
		s.keysCPU = []string{"usage_usec", "nr_throttled", "throttled_usec"}
		s.keysMem = []string{"anon", "shmem"}
		s.throttleD = 1
		err = errors.Join(
			open(&s.cpuStat, "cpu", "cpu.stat", false),
			open(&s.memStat, "memory", "memory.stat", false),
			open(&s.oom, "memory", "memory.events", false),
			open(&s.peak, "memory", "memory.peak", true),
		)
	} else {
		s.keysCPU = []string{"", "nr_throttled", "throttled_time"}
		s.keysMem = []string{"total_rss", "total_shmem"}
		s.throttleD = 1000
		err = errors.Join(
			open(&s.cpuStat, "cpu", "cpu.stat", false),
			open(&s.cpuUsage, "cpuacct", "cpuacct.usage", false),
			open(&s.memStat, "memory", "memory.stat", false),
			open(&s.oom, "memory", "memory.oom_control", false),
			open(&s.peak, "memory", "memory.max_usage_in_bytes", false),
		)
	}
	if err != nil {
		for _, h := range opened {
			h.close()
		}
		return nil, fmt.Errorf("reading the statistics of %s: %w", g, err)
	}
	s.exists = g.Dir("memory")
	return s, nil
}

func (s *statFiles) close() error {
	return errors.Join(s.cpuStat.close(), s.cpuUsage.close(), s.memStat.close(), s.oom.close(), s.peak.close())
}

// Stat reads the group's counters.
func (g *Group) Stat() (Stat, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.files == nil {
		f, err := g.openStatFiles()
		if err != nil {
			return Stat{}, err
		}
		g.files = f
	}
	st, err := g.files.read(g.peak)
	if err == nil && !isDir(g.files.exists) {
		err = errors.New("the group no longer exists")
	}
	if err != nil {
		return Stat{}, fmt.Errorf("reading the statistics of %s: %w (did the container exit?)", g, err)
	}
	return st, nil
}

func (s *statFiles) read(resetPeak *heldFile) (Stat, error) {
	var st Stat
	var cpu [3]uint64
	if err := s.keyed(s.cpuStat, s.keysCPU, cpu[:]); err != nil {
		return st, err
	}
	st.NrThrottled, st.ThrottledUsec = cpu[1], cpu[2]/s.throttleD
	if s.cpuUsage != nil {
		v, err := s.single(s.cpuUsage)
		if err != nil {
			return st, err
		}
		st.CPUUsageNs = v
	} else {
		st.CPUUsageNs = cpu[0] * 1000
	}
	var mem [2]uint64
	if err := s.keyed(s.memStat, s.keysMem, mem[:]); err != nil {
		return st, err
	}
	st.AnonBytes, st.ShmemBytes = mem[0], mem[1]
	var oom [1]uint64
	if err := s.keyed(s.oom, s.keysOOM, oom[:]); err != nil {
		return st, err
	}
	st.OOMKills = oom[0]
	peak := s.peak
	if resetPeak != nil {
		peak = resetPeak
	}
	if peak != nil {
		v, err := s.single(peak)
		if err != nil {
			return st, err
		}
		st.MemoryPeakBytes = v
	}
	return st, nil
}

// keyed fills out[i] with the value of keys[i] in a "key value" file; an
// empty key is skipped. Every other key must be present.
func (s *statFiles) keyed(h *heldFile, keys []string, out []uint64) error {
	b, err := h.read(&s.buf)
	if err != nil {
		return err
	}
	found := 0
	want := 0
	for _, k := range keys {
		if k != "" {
			want++
		}
	}
	for len(b) > 0 && found < want {
		var line []byte
		line, b, _ = bytes.Cut(b, []byte{'\n'})
		k, v, ok := bytes.Cut(line, []byte{' '})
		if !ok {
			continue
		}
		for i, key := range keys {
			if key == "" || string(k) != key {
				continue
			}
			n, err := strconv.ParseUint(string(bytes.TrimSpace(v)), 10, 64)
			if err != nil {
				return fmt.Errorf("reading %s: %s is %q, not a number", h.path, key, v)
			}
			out[i] = n
			found++
		}
	}
	if found < want {
		return fmt.Errorf("reading %s: expected the keys %q, found %d of them", h.path, keys, found)
	}
	return nil
}

func (s *statFiles) single(h *heldFile) (uint64, error) {
	b, err := h.read(&s.buf)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseUint(string(bytes.TrimSpace(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("reading %s: expected a number, found %q", h.path, bytes.TrimSpace(b))
	}
	return v, nil
}

// ResetPeak restarts the group's memory high-water mark at its current
// usage, so that a later Stat reports the peak of the measurement window
// rather than of the container's whole life. It reports whether the reset
// took effect; when it did not, err says why, and MemoryPeakBytes stays a
// lifetime figure.
//
// v2: memory.peak accepts a reset from Linux 6.12; the reset applies to
// reads through the descriptor it was written to, which the group keeps
// open until Close. Older kernels refuse the write (5.19 to 6.11) or have
// no memory.peak. v1: writing 0 to memory.max_usage_in_bytes resets it for
// every reader.
func (g *Group) ResetPeak() (bool, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.mode.usesV1() {
		file := filepath.Join(g.Dir("memory"), "memory.max_usage_in_bytes")
		if err := writeExisting(file, "0"); err != nil {
			return false, fmt.Errorf("resetting the memory peak by writing 0 to %s: %w", file, err)
		}
		return true, nil
	}
	file := filepath.Join(g.Dir(""), "memory.peak")
	// cgroupfs ignores O_TRUNC; a fixture file is left holding the value
	// written, which keeps it parseable.
	h, err := openHeld(file, os.O_RDWR|os.O_TRUNC)
	if err != nil {
		if isNotExist(err) {
			return false, fmt.Errorf("resetting the memory peak: %s does not exist (memory.peak needs Linux 5.19)", file)
		}
		return false, fmt.Errorf("resetting the memory peak: opening %s for writing (resets need Linux 6.12): %w", file, err)
	}
	if _, err := h.f.WriteString("0\n"); err != nil {
		h.close()
		return false, fmt.Errorf("resetting the memory peak: writing %s (resets need Linux 6.12): %w", file, err)
	}
	g.peak.close()
	g.peak = h
	return true, nil
}

// Close releases the files Stat and ResetPeak hold open. The group stays
// usable: the next Stat reopens them, and its v2 peak is then the lifetime
// figure again.
func (g *Group) Close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	var err error
	if g.files != nil {
		err = g.files.close()
		g.files = nil
	}
	err = errors.Join(err, g.peak.close())
	g.peak = nil
	return err
}

// writeExisting writes to a file that must already exist: a cgroup
// interface file is never created.
func writeExisting(file, content string) error {
	fh, err := os.OpenFile(file, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	if _, err := fh.WriteString(content); err != nil {
		fh.Close()
		return err
	}
	return fh.Close()
}
