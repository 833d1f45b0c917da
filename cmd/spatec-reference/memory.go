package main

import (
	"strconv"
	"strings"
)

// memoryFiles are where a container reads its own memory cap: cgroup v2,
// then v1.
var memoryFiles = []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}

// limitHeap keeps the Go heap inside the container's memory cap: the
// collector runs harder as the heap nears three quarters of the cap,
// rather than letting a doubling heap reach the OOM killer. It does
// nothing when GOMEMLIMIT is set, or no cap can be read. It returns the
// limit it set through set (debug.SetMemoryLimit), 0 for none.
func limitHeap(getenv func(string) string, read func(string) ([]byte, error), set func(int64) int64) int64 {
	if getenv("GOMEMLIMIT") != "" {
		return 0
	}
	for _, f := range memoryFiles {
		b, err := read(f)
		if err != nil {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		// "max" (v2) and a near-2^63 number (v1) mean no cap.
		if err != nil || n <= 0 || n >= 1<<60 {
			return 0
		}
		limit := n / 4 * 3
		set(limit)
		return limit
	}
	return 0
}
