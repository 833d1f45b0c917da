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
		pod, _, err := e.podFor(engine.ContainerSpec{Name: "consumer", Image: "spatec-reference:0.1.0", NetworkMode: "host", Restart: restart})
		if err != nil {
			t.Fatalf("restart %q: %v", restart, err)
		}
		if pod.Spec.RestartPolicy != want {
			t.Errorf("restart %q: the pod's restartPolicy is %s; want %s", restart, pod.Spec.RestartPolicy, want)
		}
	}
	_, _, err := e.podFor(engine.ContainerSpec{Name: "consumer", Image: "spatec-reference:0.1.0", NetworkMode: "host", Restart: "unless-stopped"})
	if err == nil || !strings.Contains(err.Error(), `restart policy "unless-stopped" is not one a pod has ("no", "on-failure", "always")`) {
		t.Errorf("restart unless-stopped: %v; want it refused with the policies a pod has", err)
	}
}
