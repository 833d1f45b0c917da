package exec

import (
	"fmt"
	"testing"

	"spatec.dev/spatec/exec/gclog"
	"spatec.dev/spatec/exec/jvmflags"
	"spatec.dev/spatec/schema"
)

// TestContainerEnvHandsTheHeapOver: the plan's heap options go into the
// variable the launcher reads, after what the entrant put there, and the
// GC log's directory is made open to every user.
func TestContainerEnvHandsTheHeapOver(t *testing.T) {
	opt := gclog.Option(gclog.Path)
	jvm := schema.Container{Runtime: "jvm",
		Environment: map[string]string{"KAFKA_HEAP_OPTS": "-XX:MaxDirectMemorySize=768m"},
		JVM:         &schema.JVM{GCLog: opt, Options: []string{"-Xms8192m", "-Xmx8192m"}, OptionsVia: "KAFKA_HEAP_OPTS"}}
	got := containerEnv(jvm)
	if want := "-XX:MaxDirectMemorySize=768m -Xms8192m -Xmx8192m"; got["KAFKA_HEAP_OPTS"] != want || got["JAVA_TOOL_OPTIONS"] != opt {
		t.Errorf("environment %v; want KAFKA_HEAP_OPTS %q and the GC log in JAVA_TOOL_OPTIONS", got, want)
	}
	jvm.JVM.OptionsVia = "JAVA_TOOL_OPTIONS"
	if got, want := containerEnv(jvm)["JAVA_TOOL_OPTIONS"], "-Xms8192m -Xmx8192m "+opt; got != want {
		t.Errorf("JAVA_TOOL_OPTIONS %q, want %q", got, want)
	}
	// A Flink process reads its heap and its JVM options, the GC log's
	// among them, from the config.yaml its plan writes: its environment
	// is left as declared.
	flink := schema.Container{Runtime: "jvm",
		Environment: map[string]string{"SPATEC_TOPIC": "t"},
		JVM: &schema.JVM{GCLog: opt, Flink: "jobmanager", ConfigFile: "/opt/flink/conf/config.yaml",
			Config: map[string]string{"jobmanager.memory.heap.size": "1024m", "env.java.opts.jobmanager": opt}}}
	if got := containerEnv(flink); len(got) != 1 || got["SPATEC_TOPIC"] != "t" {
		t.Errorf("a Flink process's environment %v, want it as declared", got)
	}
	if dirs := openDirs(jvm); len(dirs) != 1 || dirs[0] != "/spatec-gc" {
		t.Errorf("open directories %v, want [/spatec-gc]", dirs)
	}
	// The final flags' file, beside the GC log as the schema writes it,
	// or elsewhere.
	jvm.JVM.FlagsLog = jvmflags.Options(jvmflags.Path)
	if dirs := openDirs(jvm); len(dirs) != 1 || dirs[0] != "/spatec-gc" {
		t.Errorf("open directories %v, want [/spatec-gc]", dirs)
	}
	jvm.JVM.FlagsLog = jvmflags.Options("/var/spatec/vm.log")
	if dirs := openDirs(jvm); len(dirs) != 2 || dirs[1] != "/var/spatec" {
		t.Errorf("open directories %v, want [/spatec-gc /var/spatec]", dirs)
	}
	if dirs := openDirs(schema.Container{Runtime: "go"}); dirs != nil {
		t.Errorf("a Go container gets directories %v", dirs)
	}
}

// TestContainerEnvAsksJVMsForTheirGCLog: a JVM keeps its own
// JAVA_TOOL_OPTIONS with the plan's GC-log option after them, the plan is
// not changed, and a container without a jvm block starts with its
// environment as declared.
func TestContainerEnvAsksJVMsForTheirGCLog(t *testing.T) {
	opt := gclog.Option(gclog.Path)
	declared := map[string]string{"JAVA_TOOL_OPTIONS": "-XX:+UseZGC", "TZ": "UTC"}
	jvm := schema.Container{Runtime: "jvm", Environment: declared, JVM: &schema.JVM{GCLog: opt}}
	got := containerEnv(jvm)
	if want := "-XX:+UseZGC " + opt; got["JAVA_TOOL_OPTIONS"] != want || got["TZ"] != "UTC" {
		t.Errorf("JVM environment %v, want JAVA_TOOL_OPTIONS %q and TZ kept", got, want)
	}
	if declared["JAVA_TOOL_OPTIONS"] != "-XX:+UseZGC" {
		t.Errorf("the plan's environment was changed: %v", declared)
	}
	if got := containerEnv(schema.Container{Runtime: "jvm", JVM: &schema.JVM{GCLog: opt}}); got["JAVA_TOOL_OPTIONS"] != opt {
		t.Errorf("a JVM with no environment: %v", got)
	}
	if got := containerEnv(schema.Container{Runtime: "go", Environment: declared}); len(got) != 2 || got["JAVA_TOOL_OPTIONS"] != "-XX:+UseZGC" {
		t.Errorf("a Go container's environment changed: %v", got)
	}
}

// TestHeapMismatchReadsTheJVMsVerdict: a JVM that ran without compressed
// oops, under a plan that admitted its heap by their ceiling, fails C9
// naming the container, both modes, and what the JVM's final flags show
// (or, without them, the options it may not have got); one that ran in
// the declared mode passes.
func TestHeapMismatchReadsTheJVMsVerdict(t *testing.T) {
	run := alignedRun(16)
	run.heaps["tm"] = gclog.Heap{ConfiguredBytes: 31 << 30, CompressedOopsMode: "Disabled"}
	want := "C9: container tm ran in compressed-oops mode Disabled, as the JVM says; its plan's 31 GiB heap at object alignment 16 and heap base 2 GiB takes mode Zero based, under their ceiling of 62 GiB, so the JVM did not get -XX:ObjectAlignmentInBytes=16"
	if err := run.heapMismatch(); err == nil || err.Error() != want {
		t.Errorf("heapMismatch = %v\nwant %s", err, want)
	}
	// The final flags say why: an option turned them off.
	run.flags["tm"] = jvmflags.Flags{ObjectAlignment: 16, CompressedOops: false, CompressedOopsOrigin: "command line", HeapBaseMinAddress: 2 << 30, MaxHeapSize: 31 << 30}
	want = "C9: container tm ran in compressed-oops mode Disabled, as the JVM says; its plan's 31 GiB heap at object alignment 16 and heap base 2 GiB takes mode Zero based, under their ceiling of 62 GiB, so an option turned them off (-XX:-UseCompressedOops)"
	if err := run.heapMismatch(); err == nil || err.Error() != want {
		t.Errorf("compressed oops turned off: %v\nwant %s", err, want)
	}
	run.heaps["tm"] = gclog.Heap{ConfiguredBytes: 31 << 30, CompressedOopsMode: "Zero based"}
	run.flags["tm"] = jvmflags.Flags{ObjectAlignment: 16, CompressedOops: true, CompressedOopsOrigin: "ergonomic", HeapBaseMinAddress: 2 << 30, MaxHeapSize: 31 << 30}
	if err := run.heapMismatch(); err != nil {
		t.Errorf("a JVM that ran as declared: %v", err)
	}
}

// TestObjectAlignmentIsTheFlags: the alignment a JVM ran with is its final
// flags' ObjectAlignmentInBytes, in every mode, 32-bit included, where the
// GC log's oop shift is none: one other than the plan's fails C9 with both
// values and the container.
func TestObjectAlignmentIsTheFlags(t *testing.T) {
	run := alignedRun(16)
	run.plan.Entrant.Containers["tm"].JVM.Heap = 1 << 30 // 32-bit at heap base 2 GiB
	run.heaps["tm"] = gclog.Heap{ConfiguredBytes: 1 << 30, CompressedOopsMode: "32-bit"}
	run.flags["tm"] = jvmflags.Flags{ObjectAlignment: 8, CompressedOops: true, CompressedOopsOrigin: "ergonomic", HeapBaseMinAddress: 2 << 30, MaxHeapSize: 1 << 30}
	want := "C9: container tm ran with 8-byte object alignment, as its final flags say (ObjectAlignmentInBytes); its plan declares 16 (objectAlignment), which its heap's ceiling of 62 GiB assumes"
	if err := run.heapMismatch(); err == nil || err.Error() != want {
		t.Errorf("heapMismatch = %v\nwant %s", err, want)
	}
	f := run.flags["tm"]
	f.ObjectAlignment = 16
	run.flags["tm"] = f
	if err := run.heapMismatch(); err != nil {
		t.Errorf("a JVM at the declared alignment: %v", err)
	}
}

// TestCompressedOopsModeOtherThanTheHeapImplies: a JVM whose mode is not
// the one its declared heap, alignment and heap base imply (here a heap
// placed from a higher base than the plan's, so not zero based) fails C9
// with both modes and the JVM's flags.
func TestCompressedOopsModeOtherThanTheHeapImplies(t *testing.T) {
	run := alignedRun(8)
	run.plan.Entrant.Containers["tm"].JVM.Heap = 8 << 30
	run.heaps["tm"] = gclog.Heap{ConfiguredBytes: 8 << 30, CompressedOopsMode: "Non-zero based"}
	run.flags["tm"] = jvmflags.Flags{ObjectAlignment: 8, CompressedOops: true, CompressedOopsOrigin: "ergonomic", HeapBaseMinAddress: 33 << 30, MaxHeapSize: 8 << 30}
	want := "C9: container tm ran in compressed-oops mode Non-zero based, as the JVM says; its plan's 8 GiB heap at object alignment 8 and heap base 2 GiB takes mode Zero based, under their ceiling of 30 GiB, so its final flags give MaxHeapSize 8 GiB, ObjectAlignmentInBytes 8, HeapBaseMinAddress 33 GiB and UseCompressedOops true (ergonomic)"
	if err := run.heapMismatch(); err == nil || err.Error() != want {
		t.Errorf("heapMismatch = %v\nwant %s", err, want)
	}
	// ZGC uses none, and its plan says so: its flags' Disabled is no
	// mismatch, though its log names no mode.
	run.plan.Entrant.Containers["tm"].JVM.GC = "ZGC"
	run.heaps["tm"] = gclog.Heap{ConfiguredBytes: 8 << 30}
	run.flags["tm"] = jvmflags.Flags{ObjectAlignment: 8, CompressedOops: false, CompressedOopsOrigin: "ergonomic", HeapBaseMinAddress: 2 << 30, MaxHeapSize: 8 << 30}
	if got := run.oopsMode("tm"); got != "Disabled" {
		t.Errorf("ZGC's mode %q, want Disabled", got)
	}
	if err := run.heapMismatch(); err != nil {
		t.Errorf("ZGC as declared: %v", err)
	}
}

// alignedRun is a run of one TaskManager, tm, whose plan declares a 31 GiB
// G1 heap at the given alignment from the default heap base, with the
// schema's JVM options.
func alignedRun(alignment int) *armRun {
	opt := gclog.Option(gclog.Path)
	flags := jvmflags.Options(jvmflags.Path)
	jvm := &schema.JVM{Heap: 31 << 30, ObjectAlignment: alignment, HeapBaseMinAddress: 2 << 30, Ceiling: 32<<30*int64(alignment)/8 - 2<<30, GC: "G1",
		GCLog: opt, FlagsLog: flags, JVMOptions: append(append([]string{opt}, flags...), "-XX:+UseG1GC")}
	if alignment != 8 {
		jvm.JVMOptions = append(jvm.JVMOptions, fmt.Sprintf("-XX:ObjectAlignmentInBytes=%d", alignment))
	}
	return &armRun{plan: &schema.Plan{Entrant: schema.Entrant{Containers: map[string]schema.Container{"tm": {Runtime: "jvm", JVM: jvm}}}},
		heaps: map[string]gclog.Heap{}, flags: map[string]jvmflags.Flags{}}
}

// TestHeapAtTheJVMsAlignment: the JVM rounds a heap up to its alignment
// (G1's region, 2 MiB at least), so a declared heap off that grain runs
// that much larger and is the declared one; a larger one is not.
func TestHeapAtTheJVMsAlignment(t *testing.T) {
	run := alignedRun(8)
	decl := run.plan.Entrant.Containers["tm"].JVM
	decl.Heap = 17946 << 20 // the harness's TaskManager heap: 8 MiB regions make it 17952 MiB
	flags := jvmflags.Flags{ObjectAlignment: 8, CompressedOops: true, HeapBaseMinAddress: 2 << 30, MaxHeapSize: 17952 << 20, G1RegionSize: 8 << 20}
	run.flags["tm"] = flags
	run.heaps["tm"] = gclog.Heap{ConfiguredBytes: 17952 << 20, CompressedOopsMode: "Zero based"}
	if err := run.heapMismatch(); err != nil {
		t.Errorf("a heap the JVM rounded to its regions: %v", err)
	}
	run.heaps["tm"] = gclog.Heap{ConfiguredBytes: 17960 << 20, CompressedOopsMode: "Zero based"}
	want := "C9: container tm ran with a 17960 MiB heap, as its GC log says; its plan declares 17946 MiB (17952 MiB at the JVM's heap alignment of 8 MiB)"
	if err := run.heapMismatch(); err == nil || err.Error() != want {
		t.Errorf("heapMismatch = %v\nwant %s", err, want)
	}
	// Without G1's regions, the card table's 2 MiB.
	flags.G1RegionSize = 0
	run.flags["tm"] = flags
	decl.Heap = 1069 << 20
	run.heaps["tm"] = gclog.Heap{ConfiguredBytes: 1070 << 20, CompressedOopsMode: "32-bit"}
	if err := run.heapMismatch(); err != nil {
		t.Errorf("a heap the JVM rounded to 2 MiB: %v", err)
	}
}
