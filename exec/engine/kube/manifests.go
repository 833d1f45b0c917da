// Package kube turns a plan into what a Kubernetes cluster runs: one pod
// per container, Guaranteed (requests equal limits), placed on the node the
// environment names, with the plan's files as config maps. It is the plan
// half of the Kubernetes target: `spatec plan -o k8s` prints its manifests
// for review.
package kube

import (
	"cmp"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"spatec.dev/spatec/exec/gclog"
	"spatec.dev/spatec/exec/jvmflags"
	"spatec.dev/spatec/schema"
)

// Labels every object of a run carries, so that teardown and the orphan
// sweep find them by label, as on Docker.
const (
	LabelPlan    = "spatec.dev/plan"
	LabelEntrant = "spatec.dev/entrant"
	LabelRole    = "spatec.dev/role"
)

// Manifests are the objects of one plan's arm.
type Manifests struct {
	ConfigMaps []*corev1.ConfigMap
	Pods       []*corev1.Pod
}

// Pod is one container of a plan as a pod, with what a reviewer checks.
type Pod struct {
	Name      string
	Container string
	Node      string // the node's name, or its labels as k=v,…
	QoS       corev1.PodQOSClass
	CPUs      string // the CPU request = limit
	Exclusive bool   // whole CPUs under the static CPU manager
}

// ForPlan builds the arm's objects for a plan on a Kubernetes environment.
// It refuses a plan whose caps a cluster could not apply as written.
func ForPlan(p *schema.Plan) (*Manifests, error) {
	k := p.Env.Kubernetes
	if p.Env.Runtime != "kubernetes" || k == nil {
		return nil, fmt.Errorf("environment %s runs on %s, not on Kubernetes", p.Env.Name, cmp.Or(p.Env.Runtime, "docker"))
	}
	place, ok := k.Nodes["arm"]
	if !ok {
		return nil, fmt.Errorf("environment %s places no arm: add kubernetes.nodes.arm", p.Env.Name)
	}
	m := &Manifests{}
	digest := strings.TrimPrefix(p.Digest(), "sha256:")[:12]
	for _, name := range p.ContainerNames() {
		c := p.Entrant.Containers[name]
		if k.ExclusiveCPUs && c.CPUs != float64(int64(c.CPUs)) {
			return nil, fmt.Errorf("container %s has %v CPUs; exclusive cores go only to whole CPUs (C6)", name, c.CPUs)
		}
		podName := objectName(p.Entrant.Name, name, digest)
		labels := map[string]string{LabelPlan: digest, LabelEntrant: p.Entrant.Name, LabelRole: c.Role}
		pod := planPod(p, podName, labels, place, corev1.Container{
			Name:            name,
			Image:           c.Image,
			ImagePullPolicy: corev1.PullIfNotPresent,
			Command:         c.Entrypoint,
			Args:            c.Args,
			Env:             envVars(c.StartEnvironment()),
			Resources:       guaranteed(c.CPUs, c.Memory),
		})
		if len(c.Files) > 0 {
			cm, mounts, vol := files(podName, k.Namespace, labels, c.Files)
			m.ConfigMaps = append(m.ConfigMaps, cm)
			pod.Spec.Volumes = append(pod.Spec.Volumes, vol)
			pod.Spec.Containers[0].VolumeMounts = mounts
		}
		if c.JVM != nil {
			// The GC log's directory and the final flags', writable
			// whatever user the image runs as, as on Docker; the schema
			// writes both files in one.
			mount := func(name, dir string) {
				pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
				pod.Spec.Containers[0].VolumeMounts = append(pod.Spec.Containers[0].VolumeMounts, corev1.VolumeMount{Name: name, MountPath: dir})
			}
			gcDir := ""
			if file, err := gclog.File(c.JVM.GCLog); err == nil {
				gcDir = path.Dir(file)
				mount("gc-log", gcDir)
			}
			if file, err := jvmflags.File(c.JVM.FlagsLog); err == nil && path.Dir(file) != gcDir {
				mount("jvm-flags", path.Dir(file))
			}
		}
		m.Pods = append(m.Pods, pod)
	}
	for _, s := range p.Env.Infra.Keyed() {
		if s.Service.Run != "container" {
			continue
		}
		if err := m.addService(p, s.Key, s.Service, digest); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// addService adds the pod (and config map) of a service that runs in one.
func (m *Manifests) addService(p *schema.Plan, key string, svc schema.Service, digest string) error {
	k := p.Env.Kubernetes
	if k.ExclusiveCPUs && svc.CPUs != float64(int64(svc.CPUs)) {
		return fmt.Errorf("the %s has %v CPUs; exclusive cores go only to whole CPUs (C6)", key, svc.CPUs)
	}
	place, ok := k.Nodes[key]
	if !ok {
		place = k.Nodes["arm"]
	}
	if svc.Image == nil {
		return fmt.Errorf("the %s runs in a pod and declares no image (C11)", key)
	}
	name := strings.ToLower(svc.Name)
	labels := map[string]string{LabelPlan: digest, LabelRole: "infra." + key}
	c := corev1.Container{
		Name:            key,
		Image:           svc.Image.Ref,
		ImagePullPolicy: corev1.PullIfNotPresent,
		Args:            svc.Args,
		Env:             envVars(svc.Environment),
		Resources:       guaranteed(svc.CPUs, svc.Memory),
	}
	if h := svc.Health; h != nil {
		c.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: h.Command}}}
	}
	pod := planPod(p, name, labels, place, c)
	if len(svc.Files) > 0 {
		cm, mounts, vol := files(name, k.Namespace, labels, svc.Files)
		m.ConfigMaps = append(m.ConfigMaps, cm)
		pod.Spec.Volumes = append(pod.Spec.Volumes, vol)
		pod.Spec.Containers[0].VolumeMounts = mounts
	}
	m.Pods = append(m.Pods, pod)
	return nil
}

// planPod is a plan's pod of one container c, placed on place, on the
// node's network when the environment shares it.
func planPod(p *schema.Plan, name string, labels map[string]string, place schema.Placement, c corev1.Container) *corev1.Pod {
	return &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: p.Env.Kubernetes.Namespace, Labels: labels},
		Spec: corev1.PodSpec{
			RestartPolicy:                corev1.RestartPolicyNever,
			HostNetwork:                  p.Env.Network == "host",
			AutomountServiceAccountToken: new(bool),
			NodeName:                     place.Node,
			NodeSelector:                 place.Labels,
			Containers:                   []corev1.Container{c},
		},
	}
}

// Summary says, pod by pod, what a reviewer checks: QoS class, node, CPUs.
func (m *Manifests) Summary(exclusive bool) []Pod {
	var out []Pod
	for _, p := range m.Pods {
		c := p.Spec.Containers[0]
		node := p.Spec.NodeName
		if node == "" {
			var sel []string
			for _, k := range slices.Sorted(maps.Keys(p.Spec.NodeSelector)) {
				sel = append(sel, k+"="+p.Spec.NodeSelector[k])
			}
			node = strings.Join(sel, ",")
		}
		cpu := c.Resources.Limits[corev1.ResourceCPU]
		out = append(out, Pod{Name: p.Name, Container: c.Name, Node: node, QoS: qos(c.Resources),
			CPUs: cpu.String(), Exclusive: exclusive && cpu.MilliValue()%1000 == 0})
	}
	return out
}

// YAML writes every object as one YAML stream, config maps first.
func (m *Manifests) YAML() ([]byte, error) {
	var docs []string
	for _, cm := range m.ConfigMaps {
		b, err := yaml.Marshal(cm)
		if err != nil {
			return nil, fmt.Errorf("writing config map %s: %w", cm.Name, err)
		}
		docs = append(docs, string(b))
	}
	for _, p := range m.Pods {
		b, err := yaml.Marshal(p)
		if err != nil {
			return nil, fmt.Errorf("writing pod %s: %w", p.Name, err)
		}
		docs = append(docs, string(b))
	}
	return []byte(strings.Join(docs, "---\n")), nil
}

// guaranteed sets requests equal to limits: the only way a pod is
// Guaranteed, and so the only way its caps are the plan's.
func guaranteed(cpus float64, memory int64) corev1.ResourceRequirements {
	rl := corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewMilliQuantity(int64(cpus*1000+0.5), resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(memory, resource.BinarySI),
	}
	return corev1.ResourceRequirements{Requests: rl, Limits: rl.DeepCopy()}
}

// qos is the QoS class the API server assigns a one-container pod with
// these resources: Guaranteed when CPU and memory requests equal their
// limits.
func qos(r corev1.ResourceRequirements) corev1.PodQOSClass {
	for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, okR := r.Requests[res]
		lim, okL := r.Limits[res]
		if !okR || !okL || req.Cmp(lim) != 0 {
			return corev1.PodQOSBurstable
		}
	}
	return corev1.PodQOSGuaranteed
}

func envVars(env map[string]string) []corev1.EnvVar {
	var out []corev1.EnvVar
	for _, k := range slices.Sorted(maps.Keys(env)) {
		out = append(out, corev1.EnvVar{Name: k, Value: env[k]})
	}
	return out
}

// files puts a container's files in a config map and mounts each at its
// path.
func files(name, namespace string, labels map[string]string, fs map[string]string) (*corev1.ConfigMap, []corev1.VolumeMount, corev1.Volume) {
	cm := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: name + "-files", Namespace: namespace, Labels: labels},
		Data:       map[string]string{},
	}
	var mounts []corev1.VolumeMount
	for i, path := range slices.Sorted(maps.Keys(fs)) {
		key := fmt.Sprintf("f%d", i) // config map keys cannot hold a path
		cm.Data[key] = fs[path]
		mounts = append(mounts, corev1.VolumeMount{Name: "files", MountPath: path, SubPath: key, ReadOnly: true})
	}
	vol := corev1.Volume{Name: "files", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: cm.Name}}}}
	return cm, mounts, vol
}

// objectName is a DNS-1123 name for a container's pod.
func objectName(entrant, container, digest string) string {
	return strings.ToLower(fmt.Sprintf("spatec-%s-%s-%s", entrant, container, digest))
}
