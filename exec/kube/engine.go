package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	osexec "os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/distribution/reference"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"spatec.dev/spatec/exec"
	"spatec.dev/spatec/exec/engine"
	"spatec.dev/spatec/schema"
)

// labelsAnnotation holds every spatec label of an object as JSON: a label
// value such as a process id ("pid/start") is not a valid Kubernetes label
// value, so only the valid ones are also labels, to select by.
const labelsAnnotation = "spatec.dev/labels"

// Builder makes the images spatec builds (a program of this module, a
// Debian recipe, a layered build) on a local Docker engine and writes them
// as archives for the nodes: *engine.Engine is one.
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
	if _, err := e.Client.CoreV1().Pods(e.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return engine.Created{}, fmt.Errorf("creating pod %s: %w", pod.Name, err)
	}
	return engine.Created{ID: pod.Name}, nil
}

// podFor turns a container spec into a pod and its config map (nil
// without files), refusing what a pod cannot express.
func (e *Engine) podFor(spec engine.ContainerSpec) (*corev1.Pod, *corev1.ConfigMap, error) {
	var unsupported []string
	if spec.CpusetCpus != "" {
		unsupported = append(unsupported, "a CPU list ("+spec.CpusetCpus+"): the kubelet chooses the cores; declare whole CPUs and exclusiveCPUs")
	}
	if len(spec.Binds) > 0 {
		unsupported = append(unsupported, "bind mounts")
	}
	if spec.NoFile > 0 {
		unsupported = append(unsupported, "an open-file limit (a pod inherits the runtime's)")
	}
	if len(spec.Publish) > 0 && spec.NetworkMode != "host" {
		unsupported = append(unsupported, "published ports")
	}
	if spec.NetworkMode != "host" && spec.NetworkMode != "none" {
		unsupported = append(unsupported, "network "+spec.NetworkMode)
	}
	if len(unsupported) > 0 {
		return nil, nil, fmt.Errorf("container %s asks for what a pod here cannot have: %s", spec.Name, strings.Join(unsupported, "; "))
	}
	name := strings.ToLower(spec.Name)
	place := e.Place
	if svc, ok := strings.CutPrefix(spec.Labels[exec.LabelRole], "infra/"); ok {
		if p, ok := e.Services[svc]; ok {
			place = p
		}
	}
	// Kubernetes has no pod without a network: a container that asks for
	// none (a version read, a validator) shares the node's, as the arm does.
	pod, err := e.pod(name, spec.Labels, place, 5)
	if err != nil {
		return nil, nil, fmt.Errorf("container %s: %w", spec.Name, err)
	}
	c := corev1.Container{
		Name:            "main",
		Image:           spec.Image,
		ImagePullPolicy: corev1.PullIfNotPresent,
		Command:         spec.Entrypoint,
		Args:            spec.Args,
		Env:             envVars(spec.Env),
	}
	if spec.NanoCPUs > 0 || spec.Memory > 0 {
		rl := corev1.ResourceList{}
		if spec.NanoCPUs > 0 {
			rl[corev1.ResourceCPU] = *resource.NewMilliQuantity(spec.NanoCPUs/1e6, resource.DecimalSI)
		}
		if spec.Memory > 0 {
			rl[corev1.ResourceMemory] = *resource.NewQuantity(spec.Memory, resource.BinarySI)
		}
		c.Resources = corev1.ResourceRequirements{Requests: rl, Limits: rl.DeepCopy()}
	}
	if h := spec.Health; h != nil {
		// The kubelet runs it; the pod's Ready condition is its outcome.
		c.ReadinessProbe = &corev1.Probe{
			ProbeHandler:   corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: h.Command}},
			PeriodSeconds:  int32(max(1, h.Interval.Round(time.Second)/time.Second)),
			TimeoutSeconds: int32(max(1, h.Timeout.Round(time.Second)/time.Second)),
		}
	}
	for _, h := range slices.Sorted(maps.Keys(spec.Hosts)) {
		pod.Spec.HostAliases = append(pod.Spec.HostAliases, corev1.HostAlias{IP: spec.Hosts[h], Hostnames: []string{h}})
	}
	var cm *corev1.ConfigMap
	if len(spec.Files) > 0 {
		var mounts []corev1.VolumeMount
		var vol corev1.Volume
		cm, mounts, vol = files(name, e.Namespace, pod.Labels, spec.Files)
		cm.Annotations = pod.Annotations
		pod.Spec.Volumes = append(pod.Spec.Volumes, vol)
		c.VolumeMounts = append(c.VolumeMounts, mounts...)
	}
	// Directories every user may write (mode 1777 on Docker): an emptyDir
	// is made world-writable.
	dirs := map[string]*corev1.EmptyDirVolumeSource{}
	for _, d := range spec.OpenDirs {
		dirs[d] = &corev1.EmptyDirVolumeSource{}
	}
	for d, opts := range spec.Tmpfs {
		dirs[d] = &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: tmpfsSize(opts)}
	}
	if spec.ShmSize > 0 {
		dirs["/dev/shm"] = &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: resource.NewQuantity(spec.ShmSize, resource.BinarySI)}
	}
	for i, d := range slices.Sorted(maps.Keys(dirs)) {
		v := fmt.Sprintf("dir%d", i)
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: v, VolumeSource: corev1.VolumeSource{EmptyDir: dirs[d]}})
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: v, MountPath: d})
	}
	pod.Spec.Containers = []corev1.Container{c}
	return pod, cm, nil
}

// pod is the shell of every pod the engine makes: spatec's labels, the
// node's network, no service account token or service links, never
// restarted, on place, with grace seconds to stop.
func (e *Engine) pod(name string, spatec map[string]string, place schema.Placement, grace int64) (*corev1.Pod, error) {
	labels, annotations, err := podLabels(spatec)
	if err != nil {
		return nil, err
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.Namespace, Labels: labels, Annotations: annotations},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			HostNetwork:                   true,
			AutomountServiceAccountToken:  new(bool),
			EnableServiceLinks:            new(bool),
			NodeName:                      place.Node,
			NodeSelector:                  place.Labels,
			TerminationGracePeriodSeconds: &grace,
		},
	}, nil
}

// tmpfsSize reads the size= of Docker's tmpfs options, nil without one.
func tmpfsSize(opts string) *resource.Quantity {
	for _, o := range strings.Split(opts, ",") {
		if v, ok := strings.CutPrefix(o, "size="); ok {
			if q, err := resource.ParseQuantity(strings.ToUpper(strings.TrimSuffix(v, "b")) + "i"); err == nil {
				return &q
			}
		}
	}
	return nil
}

// podLabels splits spatec's labels into the Kubernetes labels they can be
// (to select by) and an annotation holding all of them.
func podLabels(l map[string]string) (map[string]string, map[string]string, error) {
	b, err := json.Marshal(l)
	if err != nil {
		return nil, nil, err
	}
	labels := map[string]string{}
	for k, v := range l {
		if len(validation.IsQualifiedName(k)) == 0 && len(validation.IsValidLabelValue(v)) == 0 {
			labels[k] = v
		}
	}
	return labels, map[string]string{labelsAnnotation: string(b)}, nil
}

// spatecLabels reads an object's spatec labels back.
func spatecLabels(meta metav1.ObjectMeta) map[string]string {
	var l map[string]string
	if err := json.Unmarshal([]byte(meta.Annotations[labelsAnnotation]), &l); err != nil || l == nil {
		return maps.Clone(meta.Labels)
	}
	return l
}

// Start waits until the pod's container runs (or has already ended, which
// Inspect then reports), and fails with the kubelet's reason when it
// cannot start: an image the node lacks, a pod the node does not admit.
func (e *Engine) Start(ctx context.Context, id string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var last string
	err := e.watchPod(ctx, id, func(p *corev1.Pod) (bool, error) {
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

// watchPod calls done with the pod at each change until it returns true or
// an error. It reads the pod first, then watches from that version, so no
// change between the two is missed.
func (e *Engine) watchPod(ctx context.Context, name string, done func(*corev1.Pod) (bool, error)) error {
	pods := e.Client.CoreV1().Pods(e.Namespace)
	for {
		p, err := pods.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("reading pod %s: %w", name, err)
		}
		if ok, err := done(p); ok || err != nil {
			return err
		}
		w, err := pods.Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String(), ResourceVersion: p.ResourceVersion})
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("watching pod %s: %w", name, err)
		}
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			if ok, err := done(p); ok || err != nil {
				w.Stop()
				return err
			}
			if ev.Type == watch.Deleted {
				w.Stop()
				return fmt.Errorf("pod %s was deleted", name)
			}
		}
		w.Stop()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		// The API server ends watches now and then: read and watch again.
	}
}

func containerStatus(p *corev1.Pod) *corev1.ContainerStatus {
	if len(p.Status.ContainerStatuses) == 0 {
		return nil
	}
	return &p.Status.ContainerStatuses[0]
}

// Inspect reports the pod's container as the engine's container state.
func (e *Engine) Inspect(ctx context.Context, id string) (engine.Container, error) {
	p, err := e.Client.CoreV1().Pods(e.Namespace).Get(ctx, id, metav1.GetOptions{})
	if err != nil {
		return engine.Container{}, fmt.Errorf("reading pod %s: %w", id, err)
	}
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
		return c, nil
	}
	c.ImageID = cs.ImageID
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
		c.Pod = &engine.PodRef{Node: p.Spec.NodeName, UID: string(p.UID), QoS: string(p.Status.QOSClass), ContainerID: cid}
	}
	return c, nil
}

// Wait blocks until the pod's container has ended and returns its exit
// code.
func (e *Engine) Wait(ctx context.Context, id string) (int, error) {
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

// Logs returns the last lines of the container's output.
func (e *Engine) Logs(ctx context.Context, id string, lines int) (string, error) {
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
	return e.deletePods(ctx, []string{id}, int64(max(1, grace.Round(time.Second)/time.Second)))
}

// deletePods deletes pods and waits until they are gone: an exclusive
// core returns to the node only once its pod has ended, and the next
// run's pod needs it.
func (e *Engine) deletePods(ctx context.Context, names []string, grace int64) error {
	pods := e.Client.CoreV1().Pods(e.Namespace)
	var errs []error
	for _, n := range names {
		if err := pods.Delete(ctx, n, metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting pod %s: %w", n, err))
		}
	}
	deadline := time.Now().Add(time.Duration(grace)*time.Second + time.Minute)
	for _, n := range names {
		for {
			_, err := pods.Get(ctx, n, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				break
			}
			if err == nil && time.Now().After(deadline) {
				err = fmt.Errorf("pod %s is still there a minute after it was deleted", n)
			}
			if err != nil {
				errs = append(errs, err)
				break
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(250 * time.Millisecond):
			}
		}
	}
	return errors.Join(errs...)
}

// RemoveByLabel deletes every pod and config map of the namespace that
// carries the label, and waits until the pods are gone.
func (e *Engine) RemoveByLabel(ctx context.Context, key, value string) error {
	owned, err := e.ListOwned(ctx, key)
	if err != nil {
		return err
	}
	var pods []string
	var errs []error
	for _, o := range owned {
		if o.Labels[key] != value {
			continue
		}
		if o.Kind == "container" {
			pods = append(pods, o.Name)
		} else if err := e.Client.CoreV1().ConfigMaps(e.Namespace).Delete(ctx, o.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting config map %s: %w", o.Name, err))
		}
	}
	errs = append(errs, e.deletePods(ctx, pods, 1))
	return errors.Join(errs...)
}

// ListOwned lists the pods ("container") and config maps ("configmap") of
// the namespace that carry the label key.
func (e *Engine) ListOwned(ctx context.Context, key string) ([]engine.Owned, error) {
	opts := metav1.ListOptions{LabelSelector: key}
	pods, err := e.Client.CoreV1().Pods(e.Namespace).List(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("listing the pods labelled %s in namespace %s: %w", key, e.Namespace, err)
	}
	cms, err := e.Client.CoreV1().ConfigMaps(e.Namespace).List(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("listing the config maps labelled %s in namespace %s: %w", key, e.Namespace, err)
	}
	var out []engine.Owned
	for _, p := range pods.Items {
		out = append(out, engine.Owned{Kind: "container", ID: p.Name, Name: p.Name, Labels: spatecLabels(p.ObjectMeta), Created: p.CreationTimestamp.Time})
	}
	for _, c := range cms.Items {
		out = append(out, engine.Owned{Kind: "configmap", ID: c.Name, Name: c.Name, Labels: spatecLabels(c.ObjectMeta), Created: c.CreationTimestamp.Time})
	}
	return out, nil
}

// ImageExists reports whether the image can run on the run's nodes: every
// node the engine places pods on holds it, as its status lists it, or this
// engine loaded it there, or the builder holds it (ImageDigest then loads
// it onto the nodes).
func (e *Engine) ImageExists(ctx context.Context, ref string) (bool, error) {
	if _, ok := e.loaded(ref); ok {
		return true, nil
	}
	if held, err := e.nodesHold(ctx, ref); err != nil || held {
		return held, err
	}
	if e.Builder == nil {
		return false, nil
	}
	_, err := e.Builder.ImageDigest(ctx, ref)
	var missing *engine.ImageMissingError
	if errors.As(err, &missing) {
		return false, nil
	}
	return err == nil, err
}

// nodesHold reports whether every node the run uses lists the image by
// this name.
func (e *Engine) nodesHold(ctx context.Context, ref string) (bool, error) {
	nodes, err := e.nodes(ctx)
	if err != nil {
		return false, err
	}
	for _, n := range nodes {
		if nodeImage(n, ref) == nil {
			return false, nil
		}
	}
	return true, nil
}

// nodes are the nodes the engine places pods on: the arm's, then each
// service's, each once.
func (e *Engine) nodes(ctx context.Context) ([]*corev1.Node, error) {
	places := []schema.Placement{e.Place}
	for _, svc := range slices.Sorted(maps.Keys(e.Services)) {
		places = append(places, e.Services[svc])
	}
	var out []*corev1.Node
	for _, p := range places {
		n, err := NodeFor(ctx, e.Client, p)
		if err != nil {
			return nil, err
		}
		if !slices.ContainsFunc(out, func(o *corev1.Node) bool { return o.Name == n.Name }) {
			out = append(out, n)
		}
	}
	return out, nil
}

// nodeImage is the node's image listed under ref's name, or nil.
func nodeImage(n *corev1.Node, ref string) *corev1.ContainerImage {
	want := normalize(ref)
	for i, img := range n.Status.Images {
		for _, name := range img.Names {
			if normalize(name) == want {
				return &n.Status.Images[i]
			}
		}
	}
	return nil
}

// normalize writes a reference in full ("docker.io/library/x:tag"), as a
// node lists it.
func normalize(ref string) string {
	n, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return ref
	}
	return reference.TagNameOnly(n).String()
}

// Pull refuses: a node pulls its images itself, and a pull inside a run's
// start would be measured as start-up.
func (e *Engine) Pull(ctx context.Context, ref string, _ func(done, total int64)) error {
	return fmt.Errorf("spatec does not pull onto nodes: pull %s onto the run's nodes (%s) first (crictl pull), or load it there", ref, e.nodeNames(ctx))
}

// nodeNames names the run's nodes for a message, or its placements when
// the nodes cannot be read.
func (e *Engine) nodeNames(ctx context.Context) string {
	nodes, err := e.nodes(ctx)
	if err != nil {
		return e.placeName()
	}
	names := make([]string, len(nodes))
	for i, n := range nodes {
		names[i] = n.Name
	}
	return strings.Join(names, ", ")
}

func (e *Engine) placeName() string {
	if e.Place.Node != "" {
		return e.Place.Node
	}
	return metav1.FormatLabelSelector(&metav1.LabelSelector{MatchLabels: e.Place.Labels})
}

// ImageDigest identifies an image for records: one spatec built by its
// content id, one the nodes pulled by its registry digest, which must be
// the same on every node the run uses. An image the builder holds (built
// by an earlier spatec, or a Debian recipe's) is loaded onto the nodes
// first, so that what is recorded is what the nodes run.
func (e *Engine) ImageDigest(ctx context.Context, ref string) (engine.Image, error) {
	if img, ok := e.loaded(ref); ok {
		return img, nil
	}
	if e.Builder != nil {
		if img, err := e.Builder.ImageDigest(ctx, ref); err == nil {
			if err := e.load(ctx, ref); err != nil {
				return engine.Image{}, err
			}
			return img, nil
		}
	}
	nodes, err := e.nodes(ctx)
	if err != nil {
		return engine.Image{}, err
	}
	// Every node the run uses must hold it, by one digest: a record names
	// one image.
	var found engine.Image
	var first string
	for _, n := range nodes {
		img := nodeImage(n, ref)
		if img == nil {
			return engine.Image{}, &engine.ImageMissingError{Ref: ref}
		}
		var digest string
		for _, name := range img.Names {
			if _, d, ok := strings.Cut(name, "@"); ok {
				digest = d
				if first == "" {
					found, first = engine.Image{ID: d, RepoDigests: []string{name}}, n.Name
				}
				break
			}
		}
		switch {
		case digest == "":
			return engine.Image{}, fmt.Errorf("image %s is on node %s by name only (%s): the node reports no digest to record; pin it by digest", ref, n.Name, strings.Join(img.Names, ", "))
		case digest != found.ID:
			return engine.Image{}, fmt.Errorf("image %s is %s on node %s and %s on node %s: a run's nodes must hold one image; pin it by digest", ref, found.ID, first, digest, n.Name)
		}
	}
	return found, nil
}

func (e *Engine) loaded(ref string) (engine.Image, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	img, ok := e.built[normalize(ref)]
	return img, ok
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

// BuildScratchImage builds the image with the builder and loads it onto
// the nodes.
func (e *Engine) BuildScratchImage(ctx context.Context, img engine.ScratchImage) (string, error) {
	if e.Builder == nil {
		return "", fmt.Errorf("image %s is built by spatec, and this environment has no builder", img.Tag)
	}
	id, err := e.Builder.BuildScratchImage(ctx, img)
	if err != nil {
		return "", err
	}
	return id, e.load(ctx, img.Tag)
}

// LoadImage loads an archive with the builder and onto the nodes.
func (e *Engine) LoadImage(ctx context.Context, archive io.Reader) ([]string, error) {
	if e.Builder == nil {
		return nil, errors.New("loading an image archive: this environment has no builder")
	}
	refs, err := e.Builder.LoadImage(ctx, archive)
	if err != nil {
		return nil, err
	}
	for _, r := range refs {
		if err := e.load(ctx, r); err != nil {
			return nil, err
		}
	}
	return refs, nil
}

// RemoveUnnamed removes an image a rebuild left on the builder. What the
// nodes hold is theirs to collect: the kubelet's image garbage collection
// removes images no pod uses.
func (e *Engine) RemoveUnnamed(ctx context.Context, id string) error {
	if e.Builder == nil {
		return nil
	}
	return e.Builder.RemoveUnnamed(ctx, id)
}

// BuildContextDir builds the image with the builder and loads it onto the
// nodes.
func (e *Engine) BuildContextDir(ctx context.Context, tag, dir string, labels map[string]string) (string, error) {
	if e.Builder == nil {
		return "", fmt.Errorf("image %s is built by spatec, and this environment has no builder", tag)
	}
	id, err := e.Builder.BuildContextDir(ctx, tag, dir, labels)
	if err != nil {
		return "", err
	}
	return id, e.load(ctx, tag)
}

// load writes the builder's image ref as an archive into the Load command.
func (e *Engine) load(ctx context.Context, ref string) error {
	if len(e.Load) == 0 {
		return fmt.Errorf("image %s was built here, and the environment declares no kubernetes.imageLoad command to bring it to the run's nodes (%s): declare one that loads an archive onto each of them, or push the image to a registry the nodes pull from and pin it", ref, e.nodeNames(ctx))
	}
	img, err := e.Builder.ImageDigest(ctx, ref)
	if err != nil {
		return err
	}
	archive, err := e.Builder.SaveImage(ctx, ref)
	if err != nil {
		return err
	}
	defer archive.Close()
	cmd := osexec.CommandContext(ctx, e.Load[0], e.Load[1:]...)
	cmd.Stdin = archive
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("loading image %s onto the run's nodes (%s) with %s: %w\n%s", ref, e.nodeNames(ctx), strings.Join(e.Load, " "), err, out)
	}
	e.mu.Lock()
	if e.built == nil {
		e.built = map[string]engine.Image{}
	}
	e.built[normalize(ref)] = img
	e.mu.Unlock()
	return nil
}
