package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"spatec.dev/spatec/exec/engine"
	"spatec.dev/spatec/schema"
)

// labelsAnnotation holds every spatec label of an object as JSON: a label
// value such as a process id ("pid/start") is not a valid Kubernetes label
// value, so only the valid ones are also labels, to select by.
const labelsAnnotation = "spatec.dev/labels"

// Builder makes the images spatec builds (a program of this module, a
// Debian recipe, a layered build) on a local Docker engine and writes them
// as archives for the nodes: *docker.Engine is one.
type Builder interface {
	BuildScratchImage(ctx context.Context, img engine.ScratchImage) (string, error)
	LoadImage(ctx context.Context, archive io.Reader) ([]string, error)
	BuildContextDir(ctx context.Context, tag, dir string, labels map[string]string) (string, error)
	ImageDigest(ctx context.Context, ref string) (engine.Image, error)
	SaveImage(ctx context.Context, ref string) (io.ReadCloser, error)
	RemoveUnnamed(ctx context.Context, id string) error
}

// Engine runs a plan's containers as pods on a cluster, through client-go:
// what the executor asks of a container engine (exec.Engine), in the
// cluster's terms. Each container is a pod of one container, Guaranteed
// when it has caps (requests equal limits), on the node the environment
// places the arm on, on that node's network; its files are a config map.
// Create creates the pod, which the kubelet starts at once; Start waits for
// it to run.
type Engine struct {
	// Client reaches the API server.
	Client kubernetes.Interface
	// Namespace holds everything the engine creates.
	Namespace string
	// Place is where the arm's pods go, and every pod's that Services
	// does not place.
	Place schema.Placement
	// Services places the infrastructure's pods, by service ("broker",
	// "clickhouse").
	Services map[string]schema.Placement
	// Builder builds the images spatec makes; nil when it makes none.
	Builder Builder
	// Load is the command that makes an image archive, read on its
	// standard input, available to the nodes (`ctr -n k8s.io images
	// import -` on a node's containerd); empty when the nodes can only
	// pull.
	Load []string
	// Files reads a file inside a running container: the node's probe.
	Files func(ctx context.Context, pod engine.PodRef, file string, limit int64) ([]byte, error)
	// Kill kills a running container's first process on its node, as a
	// crash would: the node's probe.
	Kill func(ctx context.Context, pod engine.PodRef) error

	mu sync.Mutex
	// built are the images this engine built and loaded, by reference.
	built map[string]engine.Image
}

// Info describes the node the pods go to.
func (e *Engine) Info(ctx context.Context) (engine.HostInfo, error) {
	node, err := e.node(ctx)
	if err != nil {
		return engine.HostInfo{}, err
	}
	ni := node.Status.NodeInfo
	cpu := node.Status.Capacity[corev1.ResourceCPU]
	mem := node.Status.Capacity[corev1.ResourceMemory]
	h := engine.HostInfo{
		EngineVersion:   ni.ContainerRuntimeVersion + ", kubelet " + ni.KubeletVersion,
		NCPU:            int(cpu.Value()),
		MemTotal:        mem.Value(),
		KernelVersion:   ni.KernelVersion,
		OperatingSystem: ni.OSImage,
		Architecture:    ni.Architecture,
		CPUCFSQuota:     true,
		MemoryLimit:     true,
		// Whether the node's kernel accounts swap is the probe's to
		// tell; without it, the node must have no swap (C5).
		SwapLimit: false,
	}
	if v, err := e.Client.Discovery().ServerVersion(); err == nil {
		h.APIVersion = v.GitVersion
	}
	return h, nil
}

// node is the node the arm's pods go to.
func (e *Engine) node(ctx context.Context) (*corev1.Node, error) {
	return NodeFor(ctx, e.Client, e.Place)
}

// NodeFor is the node a placement names: the one named, else the only one
// with its labels.
func NodeFor(ctx context.Context, client kubernetes.Interface, place schema.Placement) (*corev1.Node, error) {
	if place.Node != "" {
		n, err := client.CoreV1().Nodes().Get(ctx, place.Node, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("reading node %s: %w", place.Node, err)
		}
		return n, nil
	}
	sel := metav1.FormatLabelSelector(&metav1.LabelSelector{MatchLabels: place.Labels})
	list, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("listing the nodes with labels %s: %w", sel, err)
	}
	if len(list.Items) != 1 {
		return nil, fmt.Errorf("%d nodes have labels %s; a run's pods go to one node: name it (kubernetes.nodes.arm.node)", len(list.Items), sel)
	}
	return &list.Items[0], nil
}

// CreateNetwork refuses: pods join the node's network.
func (e *Engine) CreateNetwork(context.Context, string, map[string]string) (string, error) {
	return "", errors.New("on Kubernetes pods join the node's network (network: \"host\"); a run network of its own is Docker's")
}

// Create creates the container's config map and pod. The kubelet starts
// it as soon as it is bound to its node.
func (e *Engine) Create(ctx context.Context, spec engine.ContainerSpec) (engine.Created, error) {
	pod, cm, err := e.podFor(spec)
	if err != nil {
		return engine.Created{}, err
	}
	if cm != nil {
		if _, err := e.Client.CoreV1().ConfigMaps(e.Namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			return engine.Created{}, fmt.Errorf("creating config map %s for %s: %w", cm.Name, spec.Name, err)
		}
	}
	if spec.Replaced {
		rs := replicaSetFor(pod)
		if _, err := e.Client.AppsV1().ReplicaSets(e.Namespace).Create(ctx, rs, metav1.CreateOptions{}); err != nil {
			return engine.Created{}, fmt.Errorf("creating replica set %s: %w", rs.Name, err)
		}
		return engine.Created{ID: rs.Name}, nil
	}
	if _, err := e.Client.CoreV1().Pods(e.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return engine.Created{}, fmt.Errorf("creating pod %s: %w", pod.Name, err)
	}
	return engine.Created{ID: pod.Name}, nil
}

// Start waits until the pod's container runs (or has already ended, which
// Inspect then reports), and fails with the kubelet's reason when it
// cannot start: an image the node lacks, a pod the node does not admit.
func (e *Engine) Start(ctx context.Context, id string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var last string
	pod, err := e.startedPod(ctx, id)
	if err != nil {
		return err
	}
	err = e.watchPod(ctx, pod, func(p *corev1.Pod) (bool, error) {
		if p.Status.Phase == corev1.PodFailed && len(p.Status.ContainerStatuses) == 0 {
			return false, fmt.Errorf("pod %s failed before it started: %s: %s", id, p.Status.Reason, p.Status.Message)
		}
		cs := containerStatus(p)
		if cs == nil {
			last = string(p.Status.Phase)
			return false, nil
		}
		switch {
		case cs.State.Running != nil && cs.ContainerID != "", cs.State.Terminated != nil:
			return true, nil
		case cs.State.Waiting != nil:
			w := cs.State.Waiting
			last = w.Reason + ": " + w.Message
			switch w.Reason {
			case "ErrImageNeverPull", "ErrImagePull", "ImagePullBackOff", "InvalidImageName", "CreateContainerConfigError", "CreateContainerError", "RunContainerError":
				return false, fmt.Errorf("pod %s cannot start: %s", id, last)
			}
		}
		return false, nil
	})
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("pod %s did not start within 2 minutes (last: %s)", id, last)
	}
	return err
}

// startedPod is the pod that id starts: itself, or a ReplicaSet's first
// pod, once the controller has made it.
func (e *Engine) startedPod(ctx context.Context, id string) (string, error) {
	rs, err := e.replicaSetOf(ctx, id)
	if err != nil || rs == nil {
		return id, err
	}
	for {
		pods, err := e.setPods(ctx, id)
		if err != nil {
			return "", err
		}
		if p := current(pods); p != nil {
			return p.Name, nil
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("replica set %s made no pod within 2 minutes: does a controller manager run its ReplicaSet controller? %w", id, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Inspect reports the pod's container as the engine's container state;
// for a ReplicaSet (engine.ContainerSpec.Replaced), its current pod's.
func (e *Engine) Inspect(ctx context.Context, id string) (engine.Container, error) {
	p, err := e.Client.CoreV1().Pods(e.Namespace).Get(ctx, id, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		if rs, rerr := e.replicaSet(ctx, id); rerr != nil || rs != nil {
			if rerr != nil {
				return engine.Container{}, rerr
			}
			return e.inspectSet(ctx, rs)
		}
	}
	if err != nil {
		return engine.Container{}, fmt.Errorf("reading pod %s: %w", id, err)
	}
	return containerOf(p, id), nil
}

// containerOf reports pod p's container as container id.
func containerOf(p *corev1.Pod, id string) engine.Container {
	c := engine.Container{ID: id, Name: id, Labels: spatecLabels(p.ObjectMeta), Status: "created", NetworkMode: "host"}
	if len(p.Spec.Containers) > 0 {
		spec := p.Spec.Containers[0]
		c.Image = spec.Image
		cpu := spec.Resources.Limits[corev1.ResourceCPU]
		mem := spec.Resources.Limits[corev1.ResourceMemory]
		c.Resources = engine.Resources{NanoCPUs: cpu.MilliValue() * 1e6, Memory: mem.Value(), MemorySwap: mem.Value()}
	}
	cs := containerStatus(p)
	if cs == nil {
		return c
	}
	c.ImageID, c.Restarts = cs.ImageID, int(cs.RestartCount)
	if spec := p.Spec.Containers; len(spec) > 0 && spec[0].ReadinessProbe != nil {
		c.Health = "starting"
		if cs.Ready {
			c.Health = "healthy"
		}
	}
	switch {
	case cs.State.Running != nil:
		c.Status, c.Running, c.StartedAt = "running", true, cs.State.Running.StartedAt.Time
	case cs.State.Terminated != nil:
		t := cs.State.Terminated
		c.Status, c.ExitCode, c.StartedAt, c.FinishedAt = "exited", int(t.ExitCode), t.StartedAt.Time, t.FinishedAt.Time
		c.OOMKilled = t.Reason == "OOMKilled"
		if t.Reason != "Completed" && t.Reason != "Error" {
			c.Error = strings.TrimSpace(t.Reason + " " + t.Message)
		}
	case cs.State.Waiting != nil:
		c.Error = strings.TrimSpace(cs.State.Waiting.Reason + " " + cs.State.Waiting.Message)
	}
	if cs.ContainerID != "" {
		_, cid, _ := strings.Cut(cs.ContainerID, "://")
		c.Pod = &engine.PodRef{Name: p.Name, Node: p.Spec.NodeName, UID: string(p.UID), QoS: string(p.Status.QOSClass), ContainerID: cid}
	}
	return c
}

// Crash kills the pod's container on its node (Kill), as a crash or the
// OOM killer would: the kubelet sees it die, and the pod's restartPolicy
// decides whether it runs again (engine.Crasher).
func (e *Engine) Crash(ctx context.Context, c engine.Container) error {
	switch {
	case !c.Running || c.Pod == nil:
		return fmt.Errorf("pod %s's container is not running", c.ID)
	case e.Kill == nil:
		return fmt.Errorf("pod %s: no probe on its node to kill its container", c.ID)
	}
	return e.Kill(ctx, *c.Pod)
}

// Wait blocks until the pod's container has ended and returns its exit
// code; for a ReplicaSet, its current pod's (-1 when that pod is
// deleted).
func (e *Engine) Wait(ctx context.Context, id string) (int, error) {
	if rs, err := e.replicaSetOf(ctx, id); err != nil || rs != nil {
		if err != nil {
			return -1, err
		}
		return e.waitSet(ctx, id)
	}
	code := -1
	err := e.watchPod(ctx, id, func(p *corev1.Pod) (bool, error) {
		if cs := containerStatus(p); cs != nil && cs.State.Terminated != nil {
			code = int(cs.State.Terminated.ExitCode)
			return true, nil
		}
		if p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
			return true, nil
		}
		return false, nil
	})
	return code, err
}

// Logs returns the last lines of the container's output; for a
// ReplicaSet, its newest pod's.
func (e *Engine) Logs(ctx context.Context, id string, lines int) (string, error) {
	if rs, err := e.replicaSetOf(ctx, id); err != nil || rs != nil {
		if err != nil {
			return "", err
		}
		pods, err := e.setPods(ctx, id)
		if err != nil || len(pods) == 0 {
			return "", errors.Join(err, fmt.Errorf("replica set %s has no pod to read the log of", id))
		}
		id = pods[0].Name
	}
	opts := &corev1.PodLogOptions{}
	if lines > 0 {
		n := int64(lines)
		opts.TailLines = &n
	}
	b, err := e.Client.CoreV1().Pods(e.Namespace).GetLogs(id, opts).Do(ctx).Raw()
	if err != nil {
		return "", fmt.Errorf("reading the log of pod %s: %w", id, err)
	}
	return string(b), nil
}

// ReadFile reads a file inside the running container, through the node's
// probe.
func (e *Engine) ReadFile(ctx context.Context, id, file string, limit int64) ([]byte, error) {
	c, err := e.Inspect(ctx, id)
	if err != nil {
		return nil, err
	}
	if c.Pod == nil || !c.Running || e.Files == nil {
		return nil, fmt.Errorf("reading %s in pod %s: the container is not running, or no probe reads its node", file, id)
	}
	return e.Files(ctx, *c.Pod, file, limit)
}

// Stop deletes the pod, giving its container grace to end, and waits
// until the API server has let go of it (the kubelet has stopped it).
func (e *Engine) Stop(ctx context.Context, id string, grace time.Duration) error {
	secs := int64(max(1, grace.Round(time.Second)/time.Second))
	if rs, err := e.replicaSetOf(ctx, id); err != nil || rs != nil {
		if err != nil {
			return err
		}
		return e.deleteReplicaSets(ctx, []string{id}, secs)
	}
	return e.deletePods(ctx, []string{id}, secs)
}

// RemoveByLabel deletes every ReplicaSet, pod and config map of the namespace
// that carries the label, and waits until the pods are gone.
func (e *Engine) RemoveByLabel(ctx context.Context, key, value string) error {
	o, err := e.owned(ctx, key)
	if err != nil {
		return err
	}
	var pods, sets []string
	var errs []error
	for _, p := range o.pods.Items {
		if spatecLabels(p.ObjectMeta)[key] == value && !ownedBySet(p) {
			pods = append(pods, p.Name)
		}
	}
	for _, rs := range o.sets.Items {
		if spatecLabels(rs.ObjectMeta)[key] == value {
			sets = append(sets, rs.Name)
		}
	}
	for _, c := range o.cms.Items {
		if spatecLabels(c.ObjectMeta)[key] != value {
			continue
		}
		if err := e.Client.CoreV1().ConfigMaps(e.Namespace).Delete(ctx, c.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting config map %s: %w", c.Name, err))
		}
	}
	errs = append(errs, e.deleteReplicaSets(ctx, sets, 1), e.deletePods(ctx, pods, 1))
	return errors.Join(errs...)
}

// ListOwned lists the pods and ReplicaSets ("container": a set's pods
// are its own) and config maps ("configmap") of the namespace that carry the
// label key.
func (e *Engine) ListOwned(ctx context.Context, key string) ([]engine.Owned, error) {
	o, err := e.owned(ctx, key)
	if err != nil {
		return nil, err
	}
	var out []engine.Owned
	for _, p := range o.pods.Items {
		if !ownedBySet(p) {
			out = append(out, engine.Owned{Kind: "container", ID: p.Name, Name: p.Name, Labels: spatecLabels(p.ObjectMeta), Created: p.CreationTimestamp.Time})
		}
	}
	for _, rs := range o.sets.Items {
		out = append(out, engine.Owned{Kind: "container", ID: rs.Name, Name: rs.Name, Labels: spatecLabels(rs.ObjectMeta), Created: rs.CreationTimestamp.Time})
	}
	for _, c := range o.cms.Items {
		out = append(out, engine.Owned{Kind: "configmap", ID: c.Name, Name: c.Name, Labels: spatecLabels(c.ObjectMeta), Created: c.CreationTimestamp.Time})
	}
	return out, nil
}

// labelled are a namespace's objects that carry one label.
type labelled struct {
	pods *corev1.PodList
	sets *appsv1.ReplicaSetList
	cms  *corev1.ConfigMapList
}

func (e *Engine) owned(ctx context.Context, key string) (labelled, error) {
	var o labelled
	var err error
	opts := metav1.ListOptions{LabelSelector: key}
	if o.pods, err = e.Client.CoreV1().Pods(e.Namespace).List(ctx, opts); err != nil {
		return o, fmt.Errorf("listing the pods labelled %s in namespace %s: %w", key, e.Namespace, err)
	}
	if o.sets, err = e.Client.AppsV1().ReplicaSets(e.Namespace).List(ctx, opts); err != nil {
		return o, fmt.Errorf("listing the replica sets labelled %s in namespace %s: %w", key, e.Namespace, err)
	}
	if o.cms, err = e.Client.CoreV1().ConfigMaps(e.Namespace).List(ctx, opts); err != nil {
		return o, fmt.Errorf("listing the config maps labelled %s in namespace %s: %w", key, e.Namespace, err)
	}
	return o, nil
}

// RunOnce runs a short-lived pod to its end and returns its exit code and
// output, then deletes it whatever happened.
func (e *Engine) RunOnce(ctx context.Context, spec engine.ContainerSpec, onLine func(string)) (int, string, error) {
	created, err := e.Create(ctx, spec)
	if err != nil {
		return -1, "", err
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		_ = e.deletePods(dctx, []string{created.ID}, 1)
		_ = e.Client.CoreV1().ConfigMaps(e.Namespace).Delete(dctx, created.ID+"-files", metav1.DeleteOptions{})
	}()
	if err := e.Start(ctx, created.ID); err != nil {
		return -1, "", err
	}
	code, err := e.Wait(ctx, created.ID)
	if err != nil {
		return -1, "", err
	}
	out, err := e.Logs(ctx, created.ID, 0)
	if err != nil {
		return code, "", err
	}
	if onLine != nil {
		for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
			onLine(l)
		}
	}
	return code, out, nil
}
