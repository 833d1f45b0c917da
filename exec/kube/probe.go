package kube

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"spatec.dev/spatec/exec"
	"spatec.dev/spatec/exec/cgroup"
	"spatec.dev/spatec/exec/engine"
	"spatec.dev/spatec/exec/kube/probe"
)

// ProbeProgram is the program the probe's image is built from.
const ProbeProgram = "./cmd/spatec-probe"

// Probe reads the cgroups of a run's pods on their node, through spatec's
// probe running there (package probe), reached through the API server's pod
// proxy. It is the executor's cgroup tree on Kubernetes (exec.Cgroups).
type Probe struct {
	client    kubernetes.Interface
	namespace string
	node      string
	pod       string
	token     string
}

// ProbeSpec says where and how to start a probe.
type ProbeSpec struct {
	// Node is the node to read.
	Node string
	// Image is the probe's image, on that node.
	Image string
	// Labels mark the probe's pod like everything spatec creates, so
	// teardown and the orphan sweep find it.
	Labels map[string]string
}

// StartProbe runs a probe on a node and waits until it answers. Its pod
// shares the node's network and process table and mounts the node's
// cgroup tree read-only. It requests nothing (BestEffort): what it uses is
// measurement overhead, like the sampler's on a Docker host, and a request
// would take from the node's allocatable CPUs what the plan's pods need.
func StartProbe(ctx context.Context, e *Engine, spec ProbeSpec) (*Probe, error) {
	raw := make([]byte, 16)
	if _, err := rand.Read(raw); err != nil {
		return nil, fmt.Errorf("making the probe's token: %w", err)
	}
	token := hex.EncodeToString(raw)
	name := strings.ToLower("spatec-probe-" + spec.Node + "-" + token[:8])
	labels, annotations, err := podLabels(spec.Labels)
	if err != nil {
		return nil, err
	}
	hostPath := corev1.HostPathDirectory
	grace := int64(1)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.Namespace, Labels: labels, Annotations: annotations},
		Spec: corev1.PodSpec{
			NodeName:                      spec.Node,
			HostNetwork:                   true,
			HostPID:                       true,
			RestartPolicy:                 corev1.RestartPolicyNever,
			AutomountServiceAccountToken:  new(bool),
			EnableServiceLinks:            new(bool),
			TerminationGracePeriodSeconds: &grace,
			Containers: []corev1.Container{{
				Name:            "probe",
				Image:           spec.Image,
				ImagePullPolicy: corev1.PullIfNotPresent,
				Env: []corev1.EnvVar{
					{Name: "SPATEC_PROBE_TOKEN", Value: token},
					{Name: "SPATEC_PROBE_ADDR", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
				},
				VolumeMounts: []corev1.VolumeMount{{Name: "cgroup", MountPath: "/host/sys/fs/cgroup", ReadOnly: true}},
			}},
			Volumes: []corev1.Volume{{Name: "cgroup", VolumeSource: corev1.VolumeSource{
				HostPath: &corev1.HostPathVolumeSource{Path: "/sys/fs/cgroup", Type: &hostPath}}}},
		},
	}
	if _, err := e.Client.CoreV1().Pods(e.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("creating the probe's pod on node %s: %w", spec.Node, err)
	}
	p := &Probe{client: e.Client, namespace: e.Namespace, node: spec.Node, pod: name, token: token}
	if err := e.Start(ctx, name); err != nil {
		return p, fmt.Errorf("starting spatec's probe on node %s: %w", spec.Node, err)
	}
	// Running is not serving: ask until it answers.
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := p.Mode(ctx)
		if err == nil {
			return p, nil
		}
		if time.Now().After(deadline) {
			logs, _ := e.Logs(ctx, name, 20)
			return p, fmt.Errorf("spatec's probe on node %s does not answer through the API server's pod proxy after 30s: %w; its log ends:\n%s", spec.Node, err, logs)
		}
		select {
		case <-ctx.Done():
			return p, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// Pod is the probe's pod.
func (p *Probe) Pod() string { return p.pod }

// get sends one request to the probe and returns its body.
func (p *Probe) get(ctx context.Context, path string, params map[string]string) ([]byte, error) {
	q := map[string]string{"token": p.token}
	for k, v := range params {
		q[k] = v
	}
	b, err := p.client.CoreV1().Pods(p.namespace).ProxyGet("http", p.pod, strconv.Itoa(probe.Port), path, q).DoRaw(ctx)
	if err != nil {
		msg := strings.TrimSpace(string(b))
		if msg == "" {
			msg = err.Error()
		}
		return nil, fmt.Errorf("spatec's probe on node %s (%s): %s", p.node, path, msg)
	}
	return b, nil
}

func (p *Probe) getJSON(ctx context.Context, path string, params map[string]string, out any) error {
	b, err := p.get(ctx, path, params)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("spatec's probe on node %s (%s): reading its answer: %w", p.node, path, err)
	}
	return nil
}

// Mode is the node's cgroup layout.
func (p *Probe) Mode(ctx context.Context) (cgroup.Mode, error) {
	var r probe.Reply
	err := p.getJSON(ctx, probe.ModePath, nil, &r)
	return r.Mode, err
}

// CheckSwap checks the node's swap (C5).
func (p *Probe) CheckSwap(ctx context.Context, accounting bool) error {
	var r probe.Reply
	if err := p.getJSON(ctx, probe.SwapPath, map[string]string{"accounting": strconv.FormatBool(accounting)}, &r); err != nil {
		return err
	}
	if !r.OK {
		return fmt.Errorf("node %s: %s", p.node, r.Error)
	}
	return nil
}

// Find locates a pod's container on the node and keeps it open there for
// the readings that follow. A container planned with cores of its own
// also has the node's other containers checked: any whose cpuset holds
// one of them is a problem.
func (p *Probe) Find(ctx context.Context, c engine.Container, want cgroup.Caps) (exec.Group, []string, error) {
	if c.Pod == nil {
		return nil, nil, fmt.Errorf("container %s is not a pod's: the probe reads pods only", c.Name)
	}
	if c.Pod.Node != p.node {
		return nil, nil, fmt.Errorf("pod %s runs on node %s; spatec's probe reads node %s", c.Name, c.Pod.Node, p.node)
	}
	params := map[string]string{"qos": c.Pod.QoS, "uid": c.Pod.UID, "container": c.Pod.ContainerID, "exclusive": strconv.Itoa(want.ExclusiveCPUs)}
	var found probe.Found
	// The static CPU manager takes a new container's cores out of the
	// other containers' cpusets in its reconcile loop, not at once: until
	// then they do share them. The window waits for that, within bounds.
	deadline := time.Now().Add(exclusiveWait)
	for {
		found = probe.Found{}
		if err := p.getJSON(ctx, probe.FindPath, params, &found); err != nil {
			return nil, nil, err
		}
		found.Sharers = p.appContainers(ctx, found.Sharers)
		if len(found.Sharers) == 0 || time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	g := &remoteGroup{probe: p, uid: c.Pod.UID, id: c.Pod.ContainerID, first: &found.ReadBack,
		started: time.Now().Add(-time.Duration(found.AgeMS) * time.Millisecond)}
	var problems []string
	for _, s := range found.Sharers {
		problems = append(problems, fmt.Sprintf("cpuset.cpus: its cores are not its own %s after it started: container group %s on node %s may run on them", exclusiveWait, s, p.node))
	}
	if c.Pod.QoS != cgroup.QoSGuaranteed && (want.Memory > 0 || want.ExclusiveCPUs > 0 || want.NanoCPUs > 0) {
		problems = append(problems, fmt.Sprintf("its pod's QoS class is %s; a pod whose caps are the plan's is Guaranteed (requests equal limits)", c.Pod.QoS))
	}
	return g, problems, nil
}

// appContainers keeps the sharers that are containers the node's pods
// run, as the API server lists them: a pod's sandbox (pause) container
// stays on the shared pool by design, and only sleeps. When the pods
// cannot be listed (spatec's rights end at its namespace), every sharer
// is kept.
func (p *Probe) appContainers(ctx context.Context, sharers []string) []string {
	if len(sharers) == 0 {
		return nil
	}
	pods, err := p.client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + p.node})
	if err != nil {
		return sharers
	}
	ids := map[string]bool{}
	for _, pod := range pods.Items {
		for _, cs := range slices.Concat(pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses, pod.Status.EphemeralContainerStatuses) {
			if _, id, ok := strings.Cut(cs.ContainerID, "://"); ok {
				ids[id] = true
			}
		}
	}
	var kept []string
	for _, s := range sharers {
		group, _, _ := strings.Cut(s, ":")
		id := path.Base(group)
		for _, prefix := range []string{"cri-containerd-", "crio-", "docker-"} {
			id = strings.TrimPrefix(id, prefix)
		}
		if ids[strings.TrimSuffix(id, ".scope")] {
			kept = append(kept, s)
		}
	}
	return kept
}

// exclusiveWait is how long a container given cores of its own may share
// them after it starts: the kubelet's CPU manager reconciles the other
// containers' cpusets every 10 seconds by default
// (cpuManagerReconcilePeriod).
const exclusiveWait = 15 * time.Second

// ReadFile reads a file inside a pod's running container.
func (p *Probe) ReadFile(ctx context.Context, pod engine.PodRef, file string, limit int64) ([]byte, error) {
	return p.get(ctx, probe.FilePath, map[string]string{"qos": pod.QoS, "uid": pod.UID, "container": pod.ContainerID, "path": file, "limit": strconv.FormatInt(limit, 10)})
}

// remoteGroup is a container's group read through the probe.
type remoteGroup struct {
	probe   *Probe
	uid, id string
	// first is the read-back Find made, returned by the first ReadBack so
	// that the caps verified are the ones found.
	first *cgroup.ReadBack
	// started is when the container's first process started, on spatec's
	// clock (to within the probe's 10 ms and one round trip).
	started time.Time
}

// Started is when the container started: its cgroup's counters were zero
// then, so a window may open there (exec's sampler origin).
func (g *remoteGroup) Started() time.Time { return g.started }

// readTimeout bounds one reading: a sampler tick must not wait on a
// stalled API server for long.
const readTimeout = 5 * time.Second

func (g *remoteGroup) params() map[string]string {
	return map[string]string{"uid": g.uid, "container": g.id}
}

func (g *remoteGroup) ReadBack() (cgroup.ReadBack, error) {
	if rb := g.first; rb != nil {
		g.first = nil
		return *rb, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
	defer cancel()
	var rb cgroup.ReadBack
	err := g.probe.getJSON(ctx, probe.ReadBackPath, g.params(), &rb)
	return rb, err
}

func (g *remoteGroup) Stat() (cgroup.Stat, error) {
	ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
	defer cancel()
	var st cgroup.Stat
	err := g.probe.getJSON(ctx, probe.StatPath, g.params(), &st)
	return st, err
}

func (g *remoteGroup) ResetPeak() (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
	defer cancel()
	var r probe.Reply
	err := g.probe.getJSON(ctx, probe.ResetPeakPath, g.params(), &r)
	return r.OK, err
}

func (g *remoteGroup) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
	defer cancel()
	_, err := g.probe.get(ctx, probe.ClosePath, g.params())
	return err
}
