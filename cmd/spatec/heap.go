package main

import "runtime/debug"

// prepareHeap readies the heap for compiling the tree, which allocates some
// tens of MiB in a burst and keeps little.
//
// Collecting at 4x the live heap instead of 2x halves the collector's CPU,
// which on a busy host competes with the evaluation. And most of the cost
// left is the first touch of each fresh heap page: a page fault per 4 KiB,
// about 12 µs each in a VM (the 2-core test machine), which came to a
// quarter of `spatec plan`. Where the kernel grants transparent huge pages
// on request, adviseHugePages makes that one fault per 2 MiB.
func prepareHeap() {
	debug.SetGCPercent(400)
	adviseHugePages()
}

// prepareReadHeap readies the heap for reading a results tree, which
// decodes every record once and keeps only aggregates: collecting at 4x
// the live heap instead of 2x takes about a fifth off a report over 100k
// records (bench/run.sh report).
func prepareReadHeap() { debug.SetGCPercent(400) }
