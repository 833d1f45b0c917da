package kube

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"spatec.dev/spatec/exec/cgroup"
	"spatec.dev/spatec/internal/testenv"
	"spatec.dev/spatec/schema"
)

// do sends one API request and decodes the answer into out (when not nil),
// returning the status code.
func do(t *testing.T, api testenv.KubeAPI, method, path string, body, out any) int {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, api.Server+path, r)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := api.Client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v\n%s", method, path, err, b)
		}
	}
	if resp.StatusCode >= 300 && resp.StatusCode != http.StatusNotFound && resp.StatusCode != http.StatusConflict {
		t.Fatalf("%s %s: %s\n%s", method, path, resp.Status, b)
	}
	return resp.StatusCode
}

// TestKubeGuaranteedPod runs a plan's pod, as ForPlan makes it,
// on the single-node cluster the test command stands up: the API server
// makes it Guaranteed, and the caps read back from the node's cgroups by
// spatec's own cgroup package are the plan's (its cpuset exclusive, the
// CFS quota dropped, as the kubelet does for exclusive cores). A cap
// changed behind the plan's back is caught; deleting the pod leaves
// nothing on the node.
func TestKubeGuaranteedPod(t *testing.T) {
	api := testenv.Kubernetes(t)
	p := &schema.Plan{
		Variant: "default",
		Env: schema.Environment{Name: "k8s-single", Runtime: "kubernetes", Network: "host",
			Kubernetes: &schema.Kubernetes{Namespace: "spatec", ExclusiveCPUs: true, Nodes: map[string]schema.Placement{"arm": {Node: "spatec-node"}}}},
		Entrant: schema.Entrant{Name: "probe", Containers: map[string]schema.Container{"hold": {
			Role: "data-plane", Image: "docker.io/spatec/pause:1", CPUs: 1, Memory: 128 << 20, MemorySwap: 128 << 20,
		}}},
	}
	m, err := ForPlan(p)
	if err != nil {
		t.Fatal(err)
	}
	pod := m.Pods[0]
	do(t, api, "POST", "/api/v1/namespaces", map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]string{"name": "spatec"}}, nil)
	podPath := "/api/v1/namespaces/spatec/pods/" + pod.Name
	do(t, api, "DELETE", podPath+"?gracePeriodSeconds=0", nil, nil) // a pod a killed test left
	waitGone(t, api, podPath)
	if code := do(t, api, "POST", "/api/v1/namespaces/spatec/pods", pod, nil); code != http.StatusCreated {
		t.Fatalf("creating the pod: %d", code)
	}
	defer func() {
		do(t, api, "DELETE", podPath+"?gracePeriodSeconds=0", nil, nil)
		waitGone(t, api, podPath)
	}()

	var got corev1.Pod
	deadline := time.Now().Add(90 * time.Second)
	for {
		do(t, api, "GET", podPath, nil, &got)
		if got.Status.Phase == corev1.PodRunning && len(got.Status.ContainerStatuses) == 1 && got.Status.ContainerStatuses[0].ContainerID != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the pod is %s after 90s: %+v", got.Status.Phase, got.Status)
		}
		time.Sleep(500 * time.Millisecond)
	}
	if got.Status.QOSClass != corev1.PodQOSGuaranteed {
		t.Fatalf("QoS class %s, want Guaranteed", got.Status.QOSClass)
	}
	id := strings.TrimPrefix(got.Status.ContainerStatuses[0].ContainerID, "containerd://")
	dir := filepath.Join("/sys/fs/cgroup/memory/kubepods", "pod"+string(got.UID), id)
	procs, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		t.Fatalf("the container's cgroup on the node: %v", err)
	}
	pid, err := strconv.Atoi(strings.Fields(string(procs))[0])
	if err != nil {
		t.Fatal(err)
	}
	want := cgroup.Caps{CpusetCpus: "1", Memory: 128 << 20, MemorySwap: 128 << 20}
	fs := cgroup.FS{}
	rb, mismatches, err := fs.VerifyContainer(pid, id, want)
	if err != nil || len(mismatches) > 0 {
		t.Fatalf("caps read back from the node: %v %v\n%v", err, mismatches, rb.Raw)
	}
	if rb.CPUQuotaUs != -1 || rb.Raw["cpuset.cpus"] != "1" {
		t.Errorf("quota %d, cpuset %q: want no CFS quota and CPU 1 to itself", rb.CPUQuotaUs, rb.Raw["cpuset.cpus"])
	}
	t.Logf("pod %s (uid %s): %v", pod.Name, got.UID, rb.Raw)

	// A cap changed behind the plan's back is caught by the same read-back.
	if err := os.WriteFile(filepath.Join(dir, "memory.limit_in_bytes"), []byte(fmt.Sprint(64<<20)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, mismatches, err := fs.VerifyContainer(pid, id, want); err != nil || len(mismatches) == 0 || !strings.Contains(fmt.Sprint(mismatches), "memory.limit_in_bytes") {
		t.Errorf("a changed memory limit was not caught: %v %v", err, mismatches)
	}
	do(t, api, "DELETE", podPath+"?gracePeriodSeconds=0", nil, nil)
	waitGone(t, api, podPath)
	deadline = time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(filepath.Dir(dir)); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the pod's cgroup %s is still on the node 30s after the pod was deleted", filepath.Dir(dir))
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func waitGone(t *testing.T, api testenv.KubeAPI, path string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for do(t, api, "GET", path, nil, nil) != http.StatusNotFound {
		if time.Now().After(deadline) {
			t.Fatalf("%s is still there after 60s", path)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
