package kube

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"spatec.dev/spatec/exec/engine"
	"spatec.dev/spatec/schema"
)

// TestPodRestartPolicy: a container's restart policy (a failure
// scenario's data plane: the entrant's restart) is its pod's, so the
// kubelet starts it again as the Docker engine would; every other
// container is never restarted; a policy a pod cannot have is refused
// with the ones it can.
func TestPodRestartPolicy(t *testing.T) {
	e := &Engine{Namespace: "spatec", Place: schema.Placement{Node: "spatec-node"}}
	for restart, want := range map[string]corev1.RestartPolicy{
		"":           corev1.RestartPolicyNever,
		"no":         corev1.RestartPolicyNever,
		"on-failure": corev1.RestartPolicyOnFailure,
		"always":     corev1.RestartPolicyAlways,
	} {
		pod, _, err := e.podFor(engine.ContainerSpec{Name: "consumer", Image: "spatec-reference:0.1.1", NetworkMode: "host", Restart: restart})
		if err != nil {
			t.Fatalf("restart %q: %v", restart, err)
		}
		if pod.Spec.RestartPolicy != want {
			t.Errorf("restart %q: the pod's restartPolicy is %s; want %s", restart, pod.Spec.RestartPolicy, want)
		}
	}
	_, _, err := e.podFor(engine.ContainerSpec{Name: "consumer", Image: "spatec-reference:0.1.1", NetworkMode: "host", Restart: "unless-stopped"})
	if err == nil || !strings.Contains(err.Error(), `restart policy "unless-stopped" is not one a pod has ("no", "on-failure", "always")`) {
		t.Errorf("restart unless-stopped: %v; want it refused with the policies a pod has", err)
	}
}

// TestReplicaSetForPod: a container run under a controller (a scenario
// that deletes the arm's pod) is a ReplicaSet of one whose template is
// the pod it would have been, restarting Always (a set's pods must),
// placed by the scheduler on the pod's node (so that a new pod waits for
// room rather than failing), selecting its pods by its own name and
// carrying spatec's labels, which teardown and the orphan sweep find it by.
func TestReplicaSetForPod(t *testing.T) {
	e := &Engine{Namespace: "spatec", Place: schema.Placement{Node: "spatec-node"}}
	spec := engine.ContainerSpec{Name: "consumer", Image: "spatec-reference:0.1.1", NetworkMode: "host", Restart: "on-failure",
		Labels: map[string]string{"spatec.dev/run": "r1", "spatec.dev/process": "12/34"}}
	pod, _, err := e.podFor(spec)
	if err != nil {
		t.Fatal(err)
	}
	rs := replicaSetFor(pod)
	s := rs.Spec
	switch {
	case rs.Name != pod.Name || rs.Namespace != "spatec" || *s.Replicas != 1:
		t.Errorf("replica set %s/%s of %d; want one pod, named as the pod, %s/spatec", rs.Namespace, rs.Name, *s.Replicas, pod.Name)
	case s.Selector.MatchLabels[setLabel] != pod.Name || s.Template.Labels[setLabel] != pod.Name:
		t.Errorf("selector %v, template labels %v; want both %s=%s", s.Selector.MatchLabels, s.Template.Labels, setLabel, pod.Name)
	case s.Template.Spec.RestartPolicy != corev1.RestartPolicyAlways || s.Template.Spec.Containers[0].Image != spec.Image:
		t.Errorf("template %+v; want the pod's spec, restarting Always", s.Template.Spec)
	case s.Template.Spec.NodeName != "" || s.Template.Spec.Affinity == nil ||
		s.Template.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchFields[0].Values[0] != "spatec-node":
		t.Errorf("template placed on %q with affinity %+v; want the scheduler to place it on spatec-node by name", s.Template.Spec.NodeName, s.Template.Spec.Affinity)
	case pod.Spec.RestartPolicy != corev1.RestartPolicyOnFailure:
		t.Errorf("the pod's own restartPolicy became %s; want it left OnFailure", pod.Spec.RestartPolicy)
	case s.Template.Labels["spatec.dev/run"] != "r1" || spatecLabels(s.Template.ObjectMeta)["spatec.dev/process"] != "12/34" || spatecLabels(rs.ObjectMeta)["spatec.dev/process"] != "12/34":
		t.Errorf("set labels %v, template labels %v and annotations %v; want spatec's on both", rs.Labels, s.Template.Labels, s.Template.Annotations)
	}
}
