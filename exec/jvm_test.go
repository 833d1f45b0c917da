package exec

import (
	"testing"

	"spatec.dev/spatec/exec/gclog"
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

// TestHeapMismatchReadsTheJVMsVerdict: a JVM whose log says it ran without
// compressed oops, under a plan that admitted its heap by their ceiling,
// fails C9 naming the options the JVM did not get; one that ran with them
// passes.
func TestHeapMismatchReadsTheJVMsVerdict(t *testing.T) {
	opt := gclog.Option(gclog.Path)
	jvm := &schema.JVM{Heap: 31 << 30, ObjectAlignment: 16, HeapBaseMinAddress: 2 << 30, Ceiling: 62 << 30, GCLog: opt,
		JVMOptions: []string{opt, "-XX:ObjectAlignmentInBytes=16"}}
	run := &armRun{plan: &schema.Plan{Entrant: schema.Entrant{Containers: map[string]schema.Container{"tm": {Runtime: "jvm", JVM: jvm}}}},
		heaps: map[string]gclog.Heap{"tm": {ConfiguredBytes: 31 << 30, CompressedOops: "Disabled"}}}
	err := run.heapMismatch()
	want := "C9: container tm ran its 31 GiB heap with compressed oops disabled, as its GC log says; its plan keeps the heap under their ceiling of 62 GiB (object alignment 16, heap base 2 GiB), so the JVM did not get -XX:ObjectAlignmentInBytes=16"
	if err == nil || err.Error() != want {
		t.Errorf("heapMismatch = %v\nwant %s", err, want)
	}
	run.heaps["tm"] = gclog.Heap{ConfiguredBytes: 31 << 30, CompressedOops: "Enabled (Zero based)", ObjectAlignment: 8}
	want = "C9: container tm ran with 8-byte object alignment, as its GC log's oop shift says; its plan declares 16 (objectAlignment), which its heap's ceiling of 62 GiB assumes"
	if err := run.heapMismatch(); err == nil || err.Error() != want {
		t.Errorf("a JVM at another alignment: %v\nwant %s", err, want)
	}
	run.heaps["tm"] = gclog.Heap{ConfiguredBytes: 31 << 30, CompressedOops: "Enabled (Zero based)", ObjectAlignment: 16}
	if err := run.heapMismatch(); err != nil {
		t.Errorf("a JVM that ran as declared: %v", err)
	}
}
