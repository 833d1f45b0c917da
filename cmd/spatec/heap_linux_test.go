package main

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// TestHeapGetsHugePages checks the mechanism behind prepareHeap: after it,
// objects the program allocates land in memory the kernel may back with
// transparent huge pages. Without the advice, on a host whose THP mode is
// "madvise" (Debian's default), no Go heap mapping is eligible.
func TestHeapGetsHugePages(t *testing.T) {
	mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || strings.Contains(string(mode), "[never]") {
		t.Skipf("transparent huge pages are off here (%q, %v): the advice is ignored by design", mode, err)
	}
	prepareHeap()
	// Allocate as compiling does: many small objects, some MiB of them.
	objs := make([]*[256]byte, 0, 32<<10)
	for range cap(objs) {
		objs = append(objs, new([256]byte))
	}
	ranges := eligibleMappings(t)
	eligible := 0
	for _, o := range objs[len(objs)/2:] {
		addr := uintptr(unsafe.Pointer(o))
		for _, r := range ranges {
			if r[0] <= addr && addr < r[1] {
				eligible++
				break
			}
		}
	}
	if eligible == 0 {
		t.Errorf("none of %d objects allocated after prepareHeap is in a mapping eligible for huge pages", len(objs)/2)
	}
}

// eligibleMappings lists the mappings the kernel may back with transparent
// huge pages, from /proc/self/smaps.
func eligibleMappings(t *testing.T) [][2]uintptr {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out [][2]uintptr
	var cur [2]uintptr
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if lo, hi, ok := mappingRange(line); ok {
			cur = [2]uintptr{lo, hi}
		} else if strings.HasPrefix(line, "THPeligible:") && strings.HasSuffix(strings.TrimSpace(line), "1") {
			out = append(out, cur)
		}
	}
	return out
}

// mappingRange reads the "lo-hi perms …" line that opens a mapping.
func mappingRange(line string) (lo, hi uintptr, ok bool) {
	span, _, found := strings.Cut(line, " ")
	a, b, dash := strings.Cut(span, "-")
	if !found || !dash {
		return 0, 0, false
	}
	l, err1 := strconv.ParseUint(a, 16, 64)
	h, err2 := strconv.ParseUint(b, 16, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return uintptr(l), uintptr(h), true
}
