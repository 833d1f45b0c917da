package exec

import (
	"testing"

	"spatec.dev/spatec/exec/gclog"
	"spatec.dev/spatec/schema"
)

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
