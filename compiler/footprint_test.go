package compiler

import (
	"strings"
	"testing"

	"spatec.dev/spatec/schema"
)

// TestFootprintPointFollowsTheEntrant: a footprint point is the plan with
// the data plane given the study's cap, and what the entrant derives from
// its envelope (Flink's process size, and so its heap) follows by the
// entrant's own rule; the point is a plan of its own.
func TestFootprintPointFollowsTheEntrant(t *testing.T) {
	tr := loadTree(t, realTree(t))
	full, ps := tr.Resolve("local-containers", "flink", "")
	if len(ps) > 0 {
		t.Fatalf("the envelope's plan: %s", joinProblems(ps))
	}
	point, ps := tr.ResolveFootprint("local-containers", "flink", "memory", float64(1536*schema.MiB))
	if len(ps) > 0 {
		t.Fatalf("the point's plan: %s", joinProblems(ps))
	}
	tm := point.Entrant.Containers["tm"]
	if tm.Memory != 1536*schema.MiB {
		t.Errorf("the TaskManager is given %s, want the cap of 1536 MiB", schema.FormatBytes(tm.Memory))
	}
	if want := int64(1536-128) * schema.MiB; tm.JVM.ProcessSize != want {
		t.Errorf("its process is %s, want the cap less 128 MiB (%s), the entrant's own rule", schema.FormatBytes(tm.JVM.ProcessSize), schema.FormatBytes(want))
	}
	if fullHeap := full.Entrant.Containers["tm"].JVM.Heap; tm.JVM.Heap >= fullHeap {
		t.Errorf("the heap at the point (%s) does not follow the cap below the envelope's (%s)", schema.FormatBytes(tm.JVM.Heap), schema.FormatBytes(fullHeap))
	}
	if jm := point.Entrant.Containers["jm"]; jm.Memory != full.Entrant.Containers["jm"].Memory {
		t.Errorf("the control plane moved with the data plane's cap: %s", schema.FormatBytes(jm.Memory))
	}
	if point.Footprint == nil || point.Footprint.Cap != float64(1536*schema.MiB) || point.Footprint.Full != float64(full.Env.Envelope.Memory) {
		t.Errorf("the plan does not say it is a footprint point: %+v", point.Footprint)
	}
	if point.Digest() == full.Digest() || point.EnvDigest() != full.EnvDigest() {
		t.Errorf("a point is a plan of its own on the same environment: digests %s/%s, environments %s/%s",
			point.Digest(), full.Digest(), point.EnvDigest(), full.EnvDigest())
	}

	// The CPU axis: the reference arm's consumer gets the cap.
	cpu, ps := tr.ResolveFootprint("local", "reference", "cpus", 0.25)
	if len(ps) > 0 {
		t.Fatalf("the CPU point's plan: %s", joinProblems(ps))
	}
	if c := cpu.Entrant.Containers["consumer"].CPUs; c != 0.25 {
		t.Errorf("the consumer is given %v CPUs, want the cap of 0.25", c)
	}

	// A study the entrant does not declare is named with those it does.
	if _, ps := tr.ResolveFootprint("local", "reference", "memroy", 1); len(ps) != 1 || !strings.Contains(ps[0].Message, "no footprint study \"memroy\"; it has: cpus, memory") {
		t.Errorf("an unknown study: %s", joinProblems(ps))
	}
}
