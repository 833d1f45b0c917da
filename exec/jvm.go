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
	"spatec.dev/spatec/exec/jvmflags"
	"spatec.dev/spatec/runs/record"
	"spatec.dev/spatec/schema"
)

// maxGCLog bounds how much of a GC log is read back. The gc, gc+init and
// gc+heap tags write a few lines per collection, so a long run stays far
// below it.
const maxGCLog = 256 << 20

// maxVMLog bounds how much of a JVM's copy of its console output is read
// back. The final flags open it (some 90 KB); what follows is whatever
// else the JVM prints, which for a JVM arm is little.
const maxVMLog = 1 << 20

// containerEnv is the environment a container starts with: its declared
// one, and for a JVM the plan's heap options (#JVM.options) in the variable
// its launcher reads them from (#JVM.optionsVia), so it runs with the heap
// its plan declares (C9), with the other JVM options, the final flags'
// file among them (#JVM.flagsLog), and the plan's GC-log option
// (#JVM.gcLog) appended to JAVA_TOOL_OPTIONS, which every JVM reads at
// start-up, so that its heap figures can be read back after the window.
func containerEnv(c schema.Container) map[string]string { return c.StartEnvironment() }

// openDirs are the directories a container needs made, open to every
// user, before it starts: a JVM's GC-log directory and its final flags'
// (the same one, as the schema writes them), so that the files can be
// written whatever user the image runs as and whether or not it has /tmp.
func openDirs(c schema.Container) []string {
	if c.JVM == nil {
		return nil
	}
	var dirs []string
	if file, err := gclog.File(c.JVM.GCLog); err == nil {
		dirs = append(dirs, path.Dir(file))
	}
	if file, err := jvmflags.File(c.JVM.FlagsLog); err == nil && !slices.Contains(dirs, path.Dir(file)) {
		dirs = append(dirs, path.Dir(file))
	}
	return dirs
}

// readHeaps reads each JVM container's GC log back into run.heaps, and its
// final flags into run.flags, and records in the record's container what
// the JVM ran with: its object alignment and its compressed-oops mode. A
// file that cannot be read or parsed is not a failure of the run (C9 asks
// for the figures "where the GC log gives them"): the record is flagged,
// what could not be read is not checked, and the note says why.
func (run *armRun) readHeaps(ctx context.Context) {
	for _, c := range run.containers {
		decl := run.plan.Entrant.Containers[c.name]
		if decl.Runtime != "jvm" {
			continue
		}
		if h, err := run.readHeap(ctx, c.id, decl.JVM); err != nil {
			run.rec.Flags = appendOnce(run.rec.Flags, record.FlagJVMHeapUnread)
			run.caveats = append(run.caveats, fmt.Sprintf("C9: the heap of %s is not recorded: %v", c.name, err))
		} else {
			run.heaps[c.name] = h
		}
		if f, err := run.readFlags(ctx, c.id, decl.JVM); err != nil {
			run.rec.Flags = appendOnce(run.rec.Flags, record.FlagJVMFlagsUnread)
			run.caveats = append(run.caveats, fmt.Sprintf("C9: the object alignment of %s is not recorded: its final flags could not be read: %v", c.name, err))
		} else {
			run.flags[c.name] = f
		}
		mode := run.oopsMode(c.name)
		if mode == "" {
			flags := "could not be read"
			if _, ok := run.flags[c.name]; ok {
				flags = "say only that it used them"
			}
			run.rec.Flags = appendOnce(run.rec.Flags, record.FlagJVMFlagsUnread)
			run.caveats = append(run.caveats, fmt.Sprintf("C9: the compressed-oops mode of %s is not recorded: its GC log names none, and its final flags %s", c.name, flags))
		}
		for i := range run.rec.SUT.Containers {
			if rc := &run.rec.SUT.Containers[i]; rc.Name == c.name {
				rc.JVMObjectAlignmentBytes = run.flags[c.name].ObjectAlignment
				rc.JVMCompressedOopsMode = mode
			}
		}
	}
}

// oopsMode is the compressed-oops mode a JVM container ran in, in HotSpot's
// words: "Disabled" where its final flags say it used none (ZGC's log says
// nothing of them), else the mode its GC log names; "" where neither says.
func (run *armRun) oopsMode(name string) string {
	if f, ok := run.flags[name]; ok && !f.CompressedOops {
		return "Disabled"
	}
	return run.heaps[name].CompressedOopsMode
}

// heapMismatch fails a run whose JVM ran with another heap, object
// alignment or compressed-oops mode than its plan declares (C9): the
// figures would describe another configuration, and the heap would not be
// held to the ceiling C9 admitted it under.
func (run *armRun) heapMismatch() error {
	var lines []string
	names := slices.Sorted(maps.Keys(run.plan.Entrant.Containers))
	for _, name := range names {
		decl := run.plan.Entrant.Containers[name].JVM
		if decl == nil {
			continue
		}
		h, f := run.heaps[name], run.flags[name]
		// The JVM rounds the heap it is given up to its alignment (G1's
		// region), so a declared heap off that grain runs a little larger.
		align := f.HeapAlignment()
		aligned := (decl.Heap + align - 1) / align * align
		if got := h.ConfiguredBytes; got > 0 && got != decl.Heap && got != aligned {
			grain := ""
			if aligned != decl.Heap {
				grain = fmt.Sprintf(" (%s at the JVM's heap alignment of %s)", schema.FormatBytes(aligned), schema.FormatBytes(align))
			}
			lines = append(lines, fmt.Sprintf("container %s ran with a %s heap, as its GC log says; its plan declares %s%s",
				name, schema.FormatBytes(got), schema.FormatBytes(decl.Heap), grain))
		}
		if got, want := f.ObjectAlignment, decl.ObjectAlignment; got > 0 && want > 0 && got != want {
			lines = append(lines, fmt.Sprintf("container %s ran with %d-byte object alignment, as its final flags say (ObjectAlignmentInBytes); its plan declares %d (objectAlignment), which its heap's ceiling of %s assumes",
				name, got, want, schema.FormatBytes(decl.Ceiling)))
		}
		// C9 admits the heap under the compressed-oops ceiling its
		// alignment and heap base make, in the mode they imply.
		if got, want := run.oopsMode(name), decl.CompressedOopsMode(); got != "" && want != "" && got != want {
			lines = append(lines, fmt.Sprintf("container %s ran in compressed-oops mode %s, as the JVM says; its plan's %s heap at object alignment %d and heap base %s takes mode %s, under their ceiling of %s, so %s",
				name, got, schema.FormatBytes(decl.Heap), decl.ObjectAlignment, schema.FormatBytes(decl.HeapBaseMinAddress), want,
				schema.FormatBytes(decl.Ceiling), run.missed(name, decl)))
		}
	}
	if len(lines) == 0 {
		return nil
	}
	return &Failure{"C9: " + strings.Join(lines, "; ")}
}

// missed says why a JVM may have run in another compressed-oops mode than
// its plan's: what its final flags show of what the mode follows from, or,
// without them, the plan's options the mode follows from, which the JVM may
// not have got.
func (run *armRun) missed(name string, decl *schema.JVM) string {
	f, ok := run.flags[name]
	if !ok {
		extra := slices.DeleteFunc(slices.Clone(decl.JVMOptions), func(o string) bool {
			return !strings.HasPrefix(o, "-XX:ObjectAlignmentInBytes=") && !strings.HasPrefix(o, "-XX:HeapBaseMinAddress=")
		})
		if len(extra) == 0 {
			return "an option turned them off (such as -XX:-UseCompressedOops)"
		}
		return "the JVM did not get " + strings.Join(extra, " ")
	}
	if !f.CompressedOops && f.CompressedOopsOrigin == "command line" {
		return "an option turned them off (-XX:-UseCompressedOops)"
	}
	return fmt.Sprintf("its final flags give MaxHeapSize %s, ObjectAlignmentInBytes %d, HeapBaseMinAddress %s and UseCompressedOops %v (%s)",
		schema.FormatBytes(f.MaxHeapSize), f.ObjectAlignment, schema.FormatBytes(f.HeapBaseMinAddress), f.CompressedOops, f.CompressedOopsOrigin)
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

// readFlags copies out of a container the file its plan's flagsLog options
// have the JVM write its final flags to, and parses it.
func (run *armRun) readFlags(ctx context.Context, id string, jvm *schema.JVM) (jvmflags.Flags, error) {
	if jvm == nil {
		return jvmflags.Flags{}, errors.New("it declares no jvm block, so no flags were asked for")
	}
	path, err := jvmflags.File(jvm.FlagsLog)
	if err != nil {
		return jvmflags.Flags{}, err
	}
	b, err := run.s.runner.Engine.ReadFile(ctx, id, path, maxVMLog)
	if err != nil {
		return jvmflags.Flags{}, err
	}
	return jvmflags.Parse(bytes.NewReader(b))
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
