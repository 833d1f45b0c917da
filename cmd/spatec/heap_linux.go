package main

import (
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// adviseHugePages asks the kernel for transparent huge pages on a fresh
// stretch of heap, then hands the stretch back to the allocator, which
// carves the objects that follow out of it. The Go runtime leaves its heap
// to the system's default, and Debian's default ("madvise") grants huge
// pages only on request. The advice is best effort: where THP is off it is
// ignored, and nothing else changes.
func adviseHugePages() {
	const size, huge = 64 << 20, 2 << 20
	// A large allocation comes straight from the OS, mapped but not yet
	// touched, so advising it now shapes its first faults.
	b := make([]byte, size)
	base := uintptr(unsafe.Pointer(&b[0]))
	lo := (huge - base%huge) % huge // to the first 2 MiB boundary
	n := (size - lo) / huge * huge
	_ = unix.Madvise(b[lo:lo+n], unix.MADV_HUGEPAGE)
	b = nil
	runtime.GC() // frees the stretch for the allocator to reuse
}
