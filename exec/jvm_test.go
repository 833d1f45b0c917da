package exec

import (
	"testing"

	"spatec.dev/spatec/exec/gclog"
	"spatec.dev/spatec/schema"
)

// TestContainerEnvAsksJVMsForTheirGCLog: a JVM keeps its own
// JAVA_TOOL_OPTIONS with the GC-log option after them, the plan is not
// changed, and other runtimes start with their environment as declared.
func TestContainerEnvAsksJVMsForTheirGCLog(t *testing.T) {
	declared := map[string]string{"JAVA_TOOL_OPTIONS": "-XX:+UseZGC", "TZ": "UTC"}
	jvm := schema.Container{Runtime: "jvm", Environment: declared}
	got := containerEnv(jvm)
	if want := "-XX:+UseZGC " + gclog.Option(gclog.Path); got["JAVA_TOOL_OPTIONS"] != want || got["TZ"] != "UTC" {
		t.Errorf("JVM environment %v, want JAVA_TOOL_OPTIONS %q and TZ kept", got, want)
	}
	if declared["JAVA_TOOL_OPTIONS"] != "-XX:+UseZGC" {
		t.Errorf("the plan's environment was changed: %v", declared)
	}
	if got := containerEnv(schema.Container{Runtime: "jvm"}); got["JAVA_TOOL_OPTIONS"] != gclog.Option(gclog.Path) {
		t.Errorf("a JVM with no environment: %v", got)
	}
	if got := containerEnv(schema.Container{Runtime: "go", Environment: declared}); len(got) != 2 || got["JAVA_TOOL_OPTIONS"] != "-XX:+UseZGC" {
		t.Errorf("a Go container's environment changed: %v", got)
	}
}
