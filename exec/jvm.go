package exec

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"spatec.dev/spatec/exec/gclog"
	"spatec.dev/spatec/runs/record"
	"spatec.dev/spatec/schema"
)

// maxGCLog bounds how much of a GC log is read back. The gc, gc+init and
// gc+heap tags write a few lines per collection, so a long run stays far
// below it.
const maxGCLog = 256 << 20

// containerEnv is the environment a container starts with: its declared
// one, and for a JVM the plan's heap options (#JVM.options) in the variable
// its launcher reads them from (#JVM.optionsVia), so it runs with the heap
// its plan declares (C9), and the plan's GC-log option (#JVM.gcLog)
// appended to JAVA_TOOL_OPTIONS, which every JVM reads at start-up, so
// that its heap figures can be read back after the window.
func containerEnv(c schema.Container) map[string]string { return c.StartEnvironment() }

// openDirs are the directories a container needs made, open to every
// user, before it starts: a JVM's GC-log directory, so that the log can be
// written whatever user the image runs as and whether or not it has /tmp.
func openDirs(c schema.Container) []string {
	if c.JVM == nil {
		return nil
	}
	file, err := gclog.File(c.JVM.GCLog)
	if err != nil {
		return nil
	}
	return []string{path.Dir(file)}
}

// readHeaps reads each JVM container's GC log back into run.heaps. A log
// that cannot be read or parsed is not a failure of the run (C9 asks for
// the figures "where the GC log allows"): the record is flagged and its
// note says why.
func (run *armRun) readHeaps(ctx context.Context) {
	for _, c := range run.containers {
		decl := run.plan.Entrant.Containers[c.name]
		if decl.Runtime != "jvm" {
			continue
		}
		h, err := run.readHeap(ctx, c.id, decl.JVM)
		if err != nil {
			run.rec.Flags = appendOnce(run.rec.Flags, record.FlagJVMHeapUnread)
			run.caveats = append(run.caveats, fmt.Sprintf("C9: the heap of %s is not recorded: %v", c.name, err))
			continue
		}
		run.heaps[c.name] = h
	}
}

// heapMismatch fails a run whose JVM ran with another heap than its plan
// declares (C9): the figures would describe another configuration.
func (run *armRun) heapMismatch() error {
	var lines []string
	for _, name := range slices.Sorted(maps.Keys(run.heaps)) {
		decl := run.plan.Entrant.Containers[name].JVM
		if decl == nil {
			continue
		}
		h := run.heaps[name]
		if got := h.ConfiguredBytes; got > 0 && got != decl.Heap {
			lines = append(lines, fmt.Sprintf("container %s ran with a %s heap, as its GC log says; its plan declares %s",
				name, schema.FormatBytes(got), schema.FormatBytes(decl.Heap)))
		}
		if got, want := h.ObjectAlignment, decl.ObjectAlignment; got > 0 && want > 0 && got != want {
			lines = append(lines, fmt.Sprintf("container %s ran with %d-byte object alignment, as its GC log's oop shift says; its plan declares %d (objectAlignment), which its heap's ceiling of %s assumes",
				name, got, want, schema.FormatBytes(decl.Ceiling)))
		}
		// C9 admits the heap under the compressed-oops ceiling its
		// alignment and heap base make; the JVM's verdict says whether it
		// was given them.
		if h.CompressedOops != "" && !strings.HasPrefix(h.CompressedOops, "Enabled") {
			missed := "an option turned them off (such as -XX:-UseCompressedOops)"
			if extra := slices.DeleteFunc(slices.Clone(decl.JVMOptions), func(o string) bool { return o == decl.GCLog }); len(extra) > 0 {
				missed = "the JVM did not get " + strings.Join(extra, " ")
			}
			lines = append(lines, fmt.Sprintf("container %s ran its %s heap with compressed oops %s, as its GC log says; its plan keeps the heap under their ceiling of %s (object alignment %d, heap base %s), so %s",
				name, schema.FormatBytes(decl.Heap), strings.ToLower(h.CompressedOops), schema.FormatBytes(decl.Ceiling),
				decl.ObjectAlignment, schema.FormatBytes(decl.HeapBaseMinAddress), missed))
		}
	}
	if len(lines) == 0 {
		return nil
	}
	return &Failure{"C9: " + strings.Join(lines, "; ")}
}

// readHeap copies out of a container the GC log its plan's gcLog option
// names, and parses it.
func (run *armRun) readHeap(ctx context.Context, id string, jvm *schema.JVM) (gclog.Heap, error) {
	if jvm == nil {
		return gclog.Heap{}, errors.New("it declares no jvm block, so no GC log was asked for")
	}
	path, err := gclog.File(jvm.GCLog)
	if err != nil {
		return gclog.Heap{}, err
	}
	b, err := run.s.runner.Engine.ReadFile(ctx, id, path, maxGCLog)
	if err != nil {
		return gclog.Heap{}, err
	}
	return gclog.Parse(bytes.NewReader(b))
}

// heapMetrics puts the JVM heap figures (C9) into the record: per container
// as jvm_heap_*.<container>, and the data plane's also without a suffix. A
// figure the log does not give is left out.
func (run *armRun) heapMetrics() {
	for name, h := range run.heaps {
		dataPlane := run.plan.Entrant.Containers[name].Role == schema.RoleDataPlane
		for metric, v := range map[string]int64{
			record.JVMHeapConfiguredBytes:    h.ConfiguredBytes,
			record.JVMHeapCommittedPeakBytes: h.CommittedPeakBytes,
			record.JVMHeapLivePeakBytes:      h.LivePeakBytes,
		} {
			if v <= 0 {
				continue
			}
			m := record.Metric{Value: float64(v), Unit: "bytes"}
			run.rec.Metrics[metric+"."+name] = m
			if dataPlane {
				run.rec.Metrics[metric] = m
			}
		}
	}
}
