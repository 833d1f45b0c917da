package kube

import (
	"slices"
	"testing"

	"spatec.dev/spatec/exec/cgroup"
)

func TestPodProblems(t *testing.T) {
	want := cgroup.Caps{ExclusiveCPUs: 1, Memory: 128 << 20}
	if got := podProblems("n1", nil, cgroup.QoSGuaranteed, want); len(got) != 0 {
		t.Errorf("a Guaranteed pod on its own core: %q", got)
	}
	got := podProblems("n1", []string{"/kubepods/burstable/podb/c2: 0-1"}, cgroup.QoSBurstable, want)
	if !slices.Equal(got, []string{
		"cpuset.cpus: its cores are not its own 15s after it started: container group /kubepods/burstable/podb/c2: 0-1 on node n1 may run on them",
		"its pod's QoS class is Burstable; a pod whose caps are the plan's is Guaranteed (requests equal limits)",
	}) {
		t.Errorf("a Burstable pod sharing its core: %q", got)
	}
	if got := podProblems("n1", nil, cgroup.QoSBestEffort, cgroup.Caps{}); len(got) != 0 {
		t.Errorf("an uncapped pod (a version read) need not be Guaranteed: %q", got)
	}
}
