package kube

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"

	"spatec.dev/spatec/exec"
	"spatec.dev/spatec/exec/cgroup"
	"spatec.dev/spatec/exec/engine"
	"spatec.dev/spatec/exec/engine/kube/probe"
	"spatec.dev/spatec/schema"
)

// ProbeProgram is the program the probe's image is built from.
const ProbeProgram = "./cmd/spatec-probe"

// Probe reads the cgroups of a run's pods on their node, through spatec's
// probe running there (package probe). The probe serves on the node's
// loopback only; spatec reaches it through a port-forward (the API server
// to the kubelet to the pod), one connection kept alive for every request.
// It is the executor's cgroup tree on Kubernetes (exec.Cgroups).
type Probe struct {
	engine *Engine
	config *rest.Config
	spec   ProbeSpec
	node   string
	pod    string
	token  string

	forward *portforward.PortForwarder
	base    string // http://127.0.0.1:<local port>
	http    *http.Client

	// The last reading of every container, shared by the sampler's
	// readings of one tick: one request a tick, however many containers.
	mu      sync.Mutex
	batch   probe.Stats
	batchAt time.Time
}

// batchFresh is how old a reading of every container may be and still
// serve a container's reading: the sampler reads its targets one after
// another within a tick, 100 ms apart from the next.
const batchFresh = 20 * time.Millisecond

// stat is one container's reading, from a reading of every container no
// older than batchFresh.
func (p *Probe) stat(key string) (cgroup.Stat, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, have := p.batch.Stats[key]
	_, failed := p.batch.Errors[key]
	if time.Since(p.batchAt) > batchFresh || !have && !failed {
		ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
		defer cancel()
		var all probe.Stats
		if err := p.getJSON(ctx, probe.StatsPath, nil, &all); err != nil {
			return cgroup.Stat{}, err
		}
		p.batch, p.batchAt = all, time.Now()
	}
	if msg, ok := p.batch.Errors[key]; ok {
		return cgroup.Stat{}, fmt.Errorf("spatec's probe on node %s: %s", p.node, msg)
	}
	st, ok := p.batch.Stats[key]
	if !ok {
		return cgroup.Stat{}, fmt.Errorf("spatec's probe on node %s holds no container %s", p.node, key)
	}
	return st, nil
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

// NewProbe returns a probe to run on spec.Node with e, reached with
// config; Start runs it.
func NewProbe(e *Engine, config *rest.Config, spec ProbeSpec) *Probe {
	return &Probe{engine: e, config: config, spec: spec, node: spec.Node}
}

// Start runs the probe on its node and waits until it answers. Its pod
// shares the node's network and process table and mounts the node's
// cgroup tree read-only. It requests nothing (BestEffort): what it uses is
// measurement overhead, like the sampler's on a Docker host, and a request
// would take from the node's allocatable CPUs what the plan's pods need.
//
// It is started by the session once it owns the node, after the sweep has
// removed what a killed spatec left, its probe among it.
func (p *Probe) Start(ctx context.Context) error {
	e, spec := p.engine, p.spec
	raw := make([]byte, 16)
	if _, err := rand.Read(raw); err != nil {
		return fmt.Errorf("making the probe's token: %w", err)
	}
	token := hex.EncodeToString(raw)
	name := strings.ToLower("spatec-probe-" + spec.Node + "-" + token[:8])
	pod, err := e.pod(name, spec.Labels, schema.Placement{Node: spec.Node}, 1)
	if err != nil {
		return err
	}
	hostPath := corev1.HostPathDirectory
	pod.Spec.HostPID = true
	pod.Spec.Containers = []corev1.Container{{
		Name:            "probe",
		Image:           spec.Image,
		ImagePullPolicy: corev1.PullIfNotPresent,
		Env:             []corev1.EnvVar{{Name: "SPATEC_PROBE_TOKEN", Value: token}},
		VolumeMounts:    []corev1.VolumeMount{{Name: "cgroup", MountPath: "/host/sys/fs/cgroup", ReadOnly: true}},
	}}
	pod.Spec.Volumes = []corev1.Volume{{Name: "cgroup", VolumeSource: corev1.VolumeSource{
		HostPath: &corev1.HostPathVolumeSource{Path: "/sys/fs/cgroup", Type: &hostPath}}}}
	if _, err := e.Client.CoreV1().Pods(e.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the probe's pod on node %s: %w", spec.Node, err)
	}
	p.pod, p.token = name, token
	if err := e.Start(ctx, name); err != nil {
		return fmt.Errorf("starting spatec's probe on node %s: %w", spec.Node, err)
	}
	// Running is not serving: wait until its log names the port it took,
	// then ask until it answers, as long as it runs.
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := p.connect(ctx)
		if err == nil {
			if _, err = p.Mode(ctx); err == nil {
				return nil
			}
		}
		c, ierr := e.Inspect(ctx, name)
		if ierr == nil && !c.Running || time.Now().After(deadline) {
			logs, lerr := e.Logs(ctx, name, 20)
			if lerr != nil {
				logs = lerr.Error()
			}
			return fmt.Errorf("spatec's probe on node %s does not answer through a port-forward (%s): %w; its log ends:\n%s", spec.Node, c.Status, err, logs)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// connect reads the port the probe serves on from its log and opens the
// port-forward to it, once.
func (p *Probe) connect(ctx context.Context) error {
	if p.forward != nil {
		return nil
	}
	logs, err := p.engine.Logs(ctx, p.pod, 0)
	if err != nil {
		return err
	}
	port, ok := probe.ServingPort(logs)
	if !ok {
		return fmt.Errorf("its log does not name its port yet")
	}
	return p.forwardPort(ctx, port)
}

// forwardPort opens the port-forward to port on the probe's pod, on a
// free port of spatec's loopback.
func (p *Probe) forwardPort(ctx context.Context, port int) error {
	transport, upgrader, err := spdy.RoundTripperFor(p.config)
	if err != nil {
		return fmt.Errorf("reaching spatec's probe on node %s: %w", p.node, err)
	}
	u := p.engine.Client.CoreV1().RESTClient().Post().Resource("pods").Namespace(p.engine.Namespace).Name(p.pod).SubResource("portforward").URL()
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, http.MethodPost, u)
	stop, ready := make(chan struct{}), make(chan struct{})
	var errOut strings.Builder
	fw, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{"0:" + strconv.Itoa(port)}, stop, ready, io.Discard, &syncWriter{b: &errOut})
	if err != nil {
		return fmt.Errorf("forwarding a port to spatec's probe on node %s: %w", p.node, err)
	}
	failed := make(chan error, 1)
	go func() { failed <- fw.ForwardPorts() }()
	select {
	case <-ready:
	case err := <-failed:
		return fmt.Errorf("forwarding a port to spatec's probe on node %s: %v", p.node, err)
	case <-ctx.Done():
		close(stop)
		return ctx.Err()
	}
	ports, err := fw.GetPorts()
	if err != nil || len(ports) != 1 {
		close(stop)
		return fmt.Errorf("forwarding a port to spatec's probe on node %s: %v", p.node, err)
	}
	p.forward = fw
	p.base = fmt.Sprintf("http://127.0.0.1:%d", ports[0].Local)
	p.http = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4, IdleConnTimeout: time.Minute}}
	return nil
}

// syncWriter lets the port-forward write its errors from its goroutines.
type syncWriter struct {
	mu sync.Mutex
	b  *strings.Builder
}

func (w *syncWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(b)
}

// Stop removes the probe's pod.
func (p *Probe) Stop() {
	if p.forward != nil {
		p.forward.Close()
		p.forward = nil
	}
	if p.pod == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_ = p.engine.deletePods(ctx, []string{p.pod}, 1)
	p.pod = ""
}

// get sends one request to the probe and returns its body.
func (p *Probe) get(ctx context.Context, path string, params map[string]string) ([]byte, error) {
	q := map[string]string{"token": p.token}
	for k, v := range params {
		q[k] = v
	}
	if p.base == "" {
		return nil, fmt.Errorf("spatec's probe on node %s is not running", p.node)
	}
	v := url.Values{}
	for k, x := range q {
		v.Set(k, x)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.base+path+"?"+v.Encode(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := p.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("spatec's probe on node %s (%s): %w", p.node, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("spatec's probe on node %s (%s): %w", p.node, path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("spatec's probe on node %s (%s): %s", p.node, path, strings.TrimSpace(string(b)))
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
	g := &remoteGroup{probe: p, pod: c.Name, uid: c.Pod.UID, qos: c.Pod.QoS, id: c.Pod.ContainerID, first: &found.ReadBack,
		started: time.Now().Add(-time.Duration(found.AgeMS) * time.Millisecond)}
	return g, podProblems(p.node, found.Sharers, c.Pod.QoS, want), nil
}

// podProblems are what makes a pod's caps not the plan's beyond its
// cgroup's files: containers that share the cores it should have to
// itself, and a QoS class other than Guaranteed for a capped pod. The
// executor refuses on them as on any cap that does not read back (C6).
func podProblems(node string, sharers []string, qos string, want cgroup.Caps) []string {
	var problems []string
	for _, s := range sharers {
		problems = append(problems, fmt.Sprintf("cpuset.cpus: its cores are not its own %s after it started: container group %s on node %s may run on them", exclusiveWait, s, node))
	}
	if qos != cgroup.QoSGuaranteed && (want.Memory > 0 || want.ExclusiveCPUs > 0 || want.NanoCPUs > 0) {
		problems = append(problems, fmt.Sprintf("its pod's QoS class is %s; a pod whose caps are the plan's is Guaranteed (requests equal limits)", qos))
	}
	return problems
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
	pods, err := p.engine.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + p.node})
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

// Kill kills a pod's container, found before, with SIGKILL on the node.
func (p *Probe) Kill(ctx context.Context, pod engine.PodRef) error {
	var r probe.Reply
	if err := p.getJSON(ctx, probe.KillPath, map[string]string{"uid": pod.UID, "container": pod.ContainerID}, &r); err != nil {
		return fmt.Errorf("killing container %s of pod %s on node %s: %w", pod.ContainerID, pod.UID, p.node, err)
	}
	return nil
}

// remoteGroup is a container's group read through the probe. When the
// pod's restartPolicy starts its container again (a failure scenario's
// crash), the kubelet makes a new container, with a new id and group, in
// the same pod; when a Job's pod is deleted (a scenario's delete), the
// Job makes a new pod, with a new uid too: a reading that fails looks for
// the new one and goes on there, so that the sampler follows the restart
// as it does on Docker and the caps are held to the plan in the new group
// too (C6).
type remoteGroup struct {
	probe         *Probe
	pod, uid, qos string
	// first is the read-back Find made, returned by the first ReadBack so
	// that the caps verified are the ones found.
	first *cgroup.ReadBack
	// started is when the container's first process started, on spatec's
	// clock (to within the probe's 10 ms and one round trip).
	started time.Time

	mu sync.Mutex
	// id is the container read now: the pod's latest.
	id string
}

// Started is when the container started: its cgroup's counters were zero
// then, so a window may open there (exec's sampler origin).
func (g *remoteGroup) Started() time.Time { return g.started }

// readTimeout bounds one reading: a sampler tick must not wait on a
// stalled API server for long.
const readTimeout = 5 * time.Second

func (g *remoteGroup) params() map[string]string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return map[string]string{"uid": g.uid, "container": g.id}
}

// key names the container read now in the probe's readings.
func (g *remoteGroup) key() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.uid + "/" + g.id
}

// follow finds the pod's container again when the kubelet has started a
// new one, and says whether the group now reads it.
func (g *remoteGroup) follow() bool {
	ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
	defer cancel()
	c, err := g.probe.engine.Inspect(ctx, g.pod)
	g.mu.Lock()
	defer g.mu.Unlock()
	if err != nil || !c.Running || c.Pod == nil || c.Pod.ContainerID == g.id || c.Pod.Node != g.probe.node {
		return false
	}
	var found probe.Found
	if err := g.probe.getJSON(ctx, probe.FindPath, map[string]string{"qos": c.Pod.QoS, "uid": c.Pod.UID, "container": c.Pod.ContainerID}, &found); err != nil {
		return false
	}
	// The old container's group is gone with it; the probe lets it go.
	_, _ = g.probe.get(ctx, probe.ClosePath, map[string]string{"uid": g.uid, "container": g.id})
	g.uid, g.qos, g.id = c.Pod.UID, c.Pod.QoS, c.Pod.ContainerID
	return true
}

// retry is read again in the pod's new container if it failed because
// the old one had gone.
func retry[T any](g *remoteGroup, read func() (T, error)) (T, error) {
	v, err := read()
	if err != nil && g.follow() {
		return read()
	}
	return v, err
}

func (g *remoteGroup) ReadBack() (cgroup.ReadBack, error) {
	if rb := g.first; rb != nil {
		g.first = nil
		return *rb, nil
	}
	return retry(g, func() (cgroup.ReadBack, error) {
		ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
		defer cancel()
		var rb cgroup.ReadBack
		err := g.probe.getJSON(ctx, probe.ReadBackPath, g.params(), &rb)
		return rb, err
	})
}

func (g *remoteGroup) Stat() (cgroup.Stat, error) {
	return retry(g, func() (cgroup.Stat, error) { return g.probe.stat(g.key()) })
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
