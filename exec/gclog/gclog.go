// Package gclog reads what a JVM's garbage-collection log says of its heap,
// for the figures C9 asks JVM arms to publish: the configured heap, the
// committed peak and the live peak, and the compressed-oops mode the JVM
// ran in.
//
// The executor starts every JVM container with Option appended to its
// JAVA_TOOL_OPTIONS, so the log is JDK unified logging (JDK 9 and later) of
// the gc, gc+init and gc+heap tag sets, decorated with uptime, level and
// tags, in one file that is never rotated. Parse understands the
// stop-the-world collectors (G1, Parallel, Serial), whose summary line
// reads `GC(3) Pause Young (Normal) (G1 Evacuation Pause) 34M->25M(55M)`,
// and ZGC, whose per-cycle table carries Capacity and Live rows.
package gclog

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// Path is where, inside the container, the JVM writes the log.
const Path = "/spatec-gc/gc.log"

// Option is the JVM option that writes the log Parse reads to path:
// uptime, level and tags decorate each line, and filecount=0 keeps the JVM
// from rotating the file away during a long run. The schema's #JVM.gcLog
// is Option(Path), which the plan carries to the executor.
func Option(path string) string {
	return "-Xlog:gc,gc+init,gc+heap,gc+heap+coops=debug:file=" + path + ":uptime,level,tags:filecount=0"
}

// File returns the file the -Xlog option among opts (JVM options, as in
// JAVA_TOOL_OPTIONS) writes to.
func File(opts string) (string, error) {
	for _, o := range strings.Fields(opts) {
		spec, ok := strings.CutPrefix(o, "-Xlog:")
		if !ok {
			continue
		}
		if _, rest, ok := strings.Cut(spec, ":file="); ok {
			path, _, _ := strings.Cut(rest, ":")
			return path, nil
		}
	}
	return "", fmt.Errorf("%q has no -Xlog option that writes to a file; want one like %s", opts, Option(Path))
}

// Heap is what a GC log says of the heap. A figure the log does not give
// (no collection ran, or the collector is one Parse does not read) is 0.
type Heap struct {
	// Collector is the collector the JVM used, as it names it ("G1",
	// "Parallel", "Serial", "The Z Garbage Collector").
	Collector string
	// ConfiguredBytes is the maximum heap the JVM was given (-Xmx).
	ConfiguredBytes int64
	// CommittedPeakBytes is the most heap memory the JVM held at once.
	CommittedPeakBytes int64
	// LivePeakBytes is the highest heap occupancy right after a
	// collection: the live set exactly after a full collection (or a ZGC
	// mark), an upper bound of it after a young one.
	LivePeakBytes int64
	// Collections counts the collections read.
	Collections int
	// CompressedOopsMode is the compressed-oops mode the JVM ran in, in
	// its own words: "32-bit" (unscaled), "Zero based", "Non-zero disjoint
	// base", "Non-zero based", or "Disabled"; "" when the log does not say
	// (ZGC, which uses none, logs nothing of them). gc+init gives it
	// ("Compressed Oops: Enabled (Zero based)", "Disabled"), and so does
	// gc+heap+coops for a mode that is enabled. It is what the object
	// alignment and heap base C9 reasons with came to; the alignment
	// itself is the JVM's final flags' to say (package jvmflags): the
	// coops line's oop shift is none in 32-bit mode, whatever the
	// alignment.
	CompressedOopsMode string
}

var (
	// line splits `[0.270s][info][gc,heap ] GC(10) …` into its tags and
	// its message.
	line = regexp.MustCompile(`^(?:\[[^\]]*\])*\[([a-z0-9, ]+)\]\s?(.*)$`)
	// pause is a stop-the-world collection's summary: before, after and
	// committed sizes.
	pause = regexp.MustCompile(`^GC\(\d+\) Pause (Young|Full)\b.* (\d+[BKMG])->(\d+[BKMG])\((\d+[BKMG])\)`)
	// committed is the committed size of any other summary (a G1 remark).
	committed = regexp.MustCompile(`->\d+[BKMG]\((\d+[BKMG])\)`)
	// zCycle is a ZGC cycle's summary line.
	zCycle = regexp.MustCompile(`^GC\(\d+\) Garbage Collection \(`)
	// zRow is one row of a ZGC cycle's heap table: its label, then
	// values such as `22M (34%)` or `-`.
	zRow  = regexp.MustCompile(`^GC\(\d+\)\s+(Capacity|Live):\s+(.*)$`)
	zCell = regexp.MustCompile(`(\d+[BKMG]) \(\d+%\)`)
	// maxHeap is the configured maximum: `Heap Max Capacity: 64M` (G1,
	// Parallel, Serial) or `Max Capacity: 64M` (ZGC), in gc+init.
	maxHeap = regexp.MustCompile(`^(?:Heap )?Max Capacity: (\d+[BKMG])$`)
	// coopsMode is gc+heap+coops's account of the compressed-oops mode:
	// `… Compressed Oops mode: Zero based, Oop shift amount: 4`, or
	// `… mode: Non-zero based: 0x0000000840000000, Oop shift amount: 3`.
	coopsMode = regexp.MustCompile(`Compressed Oops mode: ([^,:]+)`)
	// initOops is gc+init's: `Compressed Oops: Enabled (Zero based)` or
	// `Compressed Oops: Disabled`.
	initOops = regexp.MustCompile(`^Compressed Oops: (?:Enabled \((.+)\)|(Disabled))$`)
)

// Parse reads a GC log. It fails only on a log with no line of the JDK's
// unified format, which says the option was not applied.
func Parse(r io.Reader) (Heap, error) {
	var h Heap
	seen := 0
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		m := line.FindStringSubmatch(strings.TrimRight(sc.Text(), "\r"))
		if m == nil {
			continue
		}
		seen++
		tags, msg := strings.ReplaceAll(m[1], " ", ""), strings.TrimSpace(m[2])
		switch tags {
		case "gc":
			h.readSummary(msg)
		case "gc,init":
			if mm := maxHeap.FindStringSubmatch(msg); mm != nil {
				h.ConfiguredBytes = size(mm[1])
			}
			// gc+init's word wins over gc+heap+coops': it is the
			// summary, and the one that also says Disabled.
			if mm := initOops.FindStringSubmatch(msg); mm != nil {
				h.CompressedOopsMode = mm[1] + mm[2]
			}
		case "gc,heap":
			h.readZRow(msg)
		case "gc,heap,coops":
			if mm := coopsMode.FindStringSubmatch(msg); mm != nil && h.CompressedOopsMode == "" {
				h.CompressedOopsMode = strings.TrimSpace(mm[1])
			}
		}
	}
	if err := sc.Err(); err != nil {
		return h, fmt.Errorf("reading the GC log: %w", err)
	}
	if seen == 0 {
		return h, fmt.Errorf("the GC log has no line of the JDK's unified logging; was the JVM started with %s?", Option(Path))
	}
	return h, nil
}

// readSummary reads a [gc] line: the collector in use, or a collection.
func (h *Heap) readSummary(msg string) {
	if c, ok := strings.CutPrefix(msg, "Using "); ok {
		h.Collector = c
		return
	}
	if m := pause.FindStringSubmatch(msg); m != nil {
		h.Collections++
		h.LivePeakBytes = max(h.LivePeakBytes, size(m[3]))
		h.CommittedPeakBytes = max(h.CommittedPeakBytes, size(m[4]))
		return
	}
	if zCycle.MatchString(msg) && !strings.HasSuffix(msg, "Aborted") {
		h.Collections++ // its sizes are in the table rows
		return
	}
	if m := committed.FindStringSubmatch(msg); m != nil {
		h.CommittedPeakBytes = max(h.CommittedPeakBytes, size(m[1]))
	}
}

// readZRow reads a row of ZGC's per-cycle table: Capacity is committed
// heap, Live the live set marked.
func (h *Heap) readZRow(msg string) {
	m := zRow.FindStringSubmatch(msg)
	if m == nil {
		return
	}
	for _, c := range zCell.FindAllStringSubmatch(m[2], -1) {
		if m[1] == "Capacity" {
			h.CommittedPeakBytes = max(h.CommittedPeakBytes, size(c[1]))
		} else {
			h.LivePeakBytes = max(h.LivePeakBytes, size(c[1]))
		}
	}
}

// size reads the JDK's `25M` (B, K, M or G: powers of 1024).
func size(s string) int64 {
	n, _ := strconv.ParseInt(s[:len(s)-1], 10, 64)
	switch s[len(s)-1] {
	case 'K':
		n <<= 10
	case 'M':
		n <<= 20
	case 'G':
		n <<= 30
	}
	return n
}
