package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/watch"

	"spatec.dev/spatec/exec"
	"spatec.dev/spatec/exec/engine"
	"spatec.dev/spatec/schema"
)

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
	if len(spec.Volumes) > 0 {
		unsupported = append(unsupported, "named volumes (pods share none)")
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
	if len(spec.CapAdd) > 0 {
		unsupported = append(unsupported, "added capabilities ("+strings.Join(spec.CapAdd, ", ")+")")
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
	if pod.Spec.RestartPolicy, err = restartPolicy(spec.Restart); err != nil {
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

// restartPolicy is an engine's restart policy (ContainerSpec.Restart) as
// a pod's: the kubelet starts the container again in the same pod, as the
// Docker engine does in the same container.
func restartPolicy(engine string) (corev1.RestartPolicy, error) {
	switch engine {
	case "", "no":
		return corev1.RestartPolicyNever, nil
	case "on-failure":
		return corev1.RestartPolicyOnFailure, nil
	case "always":
		return corev1.RestartPolicyAlways, nil
	}
	return "", fmt.Errorf("restart policy %q is not one a pod has (\"no\", \"on-failure\", \"always\")", engine)
}

// pod is the shell of every pod the engine makes: spatec's labels, the
// node's network, no service account token or service links, never
// restarted (podFor gives a container its own policy), on place, with
// grace seconds to stop.
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
