package kube

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"spatec.dev/spatec/exec/engine"
)

// A container run under a controller (engine.ContainerSpec.Replaced), for a
// failure scenario that deletes the arm's pod, is a ReplicaSet of one pod,
// as a Deployment runs a service: when its pod is deleted, the ReplicaSet
// controller makes a new one at once, which the scheduler places once the
// node has room for it (the old one still holds its CPUs through its
// grace), as on any cluster. Its pods restart Always (a ReplicaSet's
// must). The engine's id for it is the ReplicaSet's name;
// Inspect, Wait and Logs read its current pod.
//
// Not a Job: a Job whose pod ends with exit code 0, as an arm that stops
// cleanly on SIGTERM does when its pod is deleted, has completed, and
// makes no other.

// setLabel selects a ReplicaSet's pods: its own name.
const setLabel = "spatec.dev/replicaset"

// replacedAnnotation counts the pods of a ReplicaSet spatec deleted
// (Replace), each made again by the controller: the restarts of the
// container it runs, since a ReplicaSet keeps no count of the pods it
// made.
const replacedAnnotation = "spatec.dev/replaced"

// replicaSetFor wraps a pod in a ReplicaSet of one that runs it and makes
// it again when it is deleted.
func replicaSetFor(pod *corev1.Pod) *appsv1.ReplicaSet {
	one := int32(1)
	meta := *pod.ObjectMeta.DeepCopy()
	tmpl := metav1.ObjectMeta{Labels: map[string]string{setLabel: pod.Name}, Annotations: pod.Annotations}
	for k, v := range pod.Labels {
		tmpl.Labels[k] = v
	}
	spec := *pod.Spec.DeepCopy()
	spec.RestartPolicy = corev1.RestartPolicyAlways
	if node := spec.NodeName; node != "" {
		// Placed by the scheduler, on the same node: a pod bound by name
		// that the node has no room for fails at once, and the set would
		// make one after another while the old pod holds its CPUs; the
		// scheduler holds the new one until the node has room, as it
		// would on any cluster.
		spec.NodeName = ""
		spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
			}}},
		}}
	}
	return &appsv1.ReplicaSet{
		ObjectMeta: meta,
		Spec: appsv1.ReplicaSetSpec{
			Replicas: &one,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{setLabel: pod.Name}},
			Template: corev1.PodTemplateSpec{ObjectMeta: tmpl, Spec: spec},
		},
	}
}

// replicaSet reads the ReplicaSet named id; nil, with no error, when
// there is none.
func (e *Engine) replicaSet(ctx context.Context, id string) (*appsv1.ReplicaSet, error) {
	rs, err := e.Client.AppsV1().ReplicaSets(e.Namespace).Get(ctx, id, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading replica set %s: %w", id, err)
	}
	return rs, nil
}

// replicaSetOf is the ReplicaSet id names when no pod has that name; nil
// when it names a pod, or nothing.
func (e *Engine) replicaSetOf(ctx context.Context, id string) (*appsv1.ReplicaSet, error) {
	_, err := e.Client.CoreV1().Pods(e.Namespace).Get(ctx, id, metav1.GetOptions{})
	if err == nil {
		return nil, nil
	}
	if !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("reading pod %s: %w", id, err)
	}
	return e.replicaSet(ctx, id)
}

// setPods lists the pods of the ReplicaSet named id, newest first.
func (e *Engine) setPods(ctx context.Context, id string) ([]corev1.Pod, error) {
	list, err := e.Client.CoreV1().Pods(e.Namespace).List(ctx, metav1.ListOptions{LabelSelector: setLabel + "=" + id})
	if err != nil {
		return nil, fmt.Errorf("listing the pods of replica set %s: %w", id, err)
	}
	pods := list.Items
	slices.SortFunc(pods, func(a, b corev1.Pod) int { return b.CreationTimestamp.Compare(a.CreationTimestamp.Time) })
	return pods, nil
}

// current is the newest of pods that is not being deleted; nil when
// every one is going and the next is not made yet.
func current(pods []corev1.Pod) *corev1.Pod {
	for i := range pods {
		if pods[i].DeletionTimestamp == nil {
			return &pods[i]
		}
	}
	return nil
}

// inspectSet reports the ReplicaSet's current pod as the container; none
// running while it has no current pod. Its restarts count the pods spatec
// deleted and the set made again, and its pod's own restarts.
func (e *Engine) inspectSet(ctx context.Context, rs *appsv1.ReplicaSet) (engine.Container, error) {
	pods, err := e.setPods(ctx, rs.Name)
	if err != nil {
		return engine.Container{}, err
	}
	var c engine.Container
	if p := current(pods); p != nil {
		c = containerOf(p, rs.Name)
	} else {
		c = containerOf(&corev1.Pod{ObjectMeta: rs.Spec.Template.ObjectMeta, Spec: rs.Spec.Template.Spec}, rs.Name)
	}
	c.Labels = spatecLabels(rs.ObjectMeta)
	replaced, _ := strconv.Atoi(rs.Annotations[replacedAnnotation])
	c.Restarts += replaced
	return c, nil
}

// waitSet blocks until the ReplicaSet's current pod's container has ended
// or the pod is being deleted, and returns its exit code (-1 for a pod
// deleted); while the set has no current pod, until it has one.
func (e *Engine) waitSet(ctx context.Context, id string) (int, error) {
	for {
		pods, err := e.setPods(ctx, id)
		if err != nil {
			return -1, err
		}
		if p := current(pods); p != nil {
			code, gone := -1, false
			err := e.watchPod(ctx, p.Name, func(p *corev1.Pod) (bool, error) {
				if cs := containerStatus(p); cs != nil && cs.State.Terminated != nil {
					code = int(cs.State.Terminated.ExitCode)
					return true, nil
				}
				gone = p.DeletionTimestamp != nil
				return gone || p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded, nil
			})
			if err != nil && ctx.Err() == nil && !gone {
				// Deleted between the list and the watch.
				if _, gerr := e.Client.CoreV1().Pods(e.Namespace).Get(ctx, p.Name, metav1.GetOptions{}); apierrors.IsNotFound(gerr) {
					return -1, nil
				}
			}
			return code, err
		}
		select {
		case <-ctx.Done():
			return -1, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
		if rs, err := e.replicaSet(ctx, id); err != nil || rs == nil {
			return -1, errors.Join(err, fmt.Errorf("replica set %s was deleted", id))
		}
	}
}

// Replace deletes the ReplicaSet's current pod as `kubectl delete pod`
// does: its container is sent SIGTERM and given the pod's grace period to
// end, and the ReplicaSet controller makes a new pod (engine.Replacer).
// The deletion is counted on the set first, so that the new pod, once it
// runs, is seen as the container restarted.
func (e *Engine) Replace(ctx context.Context, c engine.Container) error {
	switch {
	case !c.Running || c.Pod == nil:
		return fmt.Errorf("%s has no running pod", c.ID)
	case c.Pod.Name == c.ID:
		return fmt.Errorf("pod %s runs under no controller, so nothing would make it again (engine.ContainerSpec.Replaced)", c.ID)
	}
	sets := e.Client.AppsV1().ReplicaSets(e.Namespace)
	rs, err := sets.Get(ctx, c.ID, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading replica set %s: %w", c.ID, err)
	}
	n, _ := strconv.Atoi(rs.Annotations[replacedAnnotation])
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, replacedAnnotation, strconv.Itoa(n+1))
	if _, err := sets.Patch(ctx, c.ID, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("counting the deletion on replica set %s: %w", c.ID, err)
	}
	// The pod inspected, not one made since under the same name.
	uid := types.UID(c.Pod.UID)
	err = e.Client.CoreV1().Pods(e.Namespace).Delete(ctx, c.Pod.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil {
		return fmt.Errorf("deleting pod %s of replica set %s: %w", c.Pod.Name, c.ID, err)
	}
	return nil
}

// deleteReplicaSets deletes ReplicaSets and every pod they made, and
// waits until the pods are gone. The pods are deleted here, not left to
// the garbage collector, which a cluster may not run promptly: a pod
// outliving its run would hold the node's cores.
func (e *Engine) deleteReplicaSets(ctx context.Context, names []string, grace int64) error {
	var errs []error
	var pods []string
	for _, n := range names {
		err := e.Client.AppsV1().ReplicaSets(e.Namespace).Delete(ctx, n, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting replica set %s: %w", n, err))
			continue
		}
		ps, err := e.setPods(ctx, n)
		if err != nil {
			errs = append(errs, err)
		}
		for _, p := range ps {
			pods = append(pods, p.Name)
		}
	}
	return errors.Join(append(errs, e.deletePods(ctx, pods, grace))...)
}

// ownedBySet says whether a ReplicaSet made the pod: the set, not the
// pod, is then what the engine lists and removes.
func ownedBySet(p corev1.Pod) bool {
	return slices.ContainsFunc(p.OwnerReferences, func(r metav1.OwnerReference) bool { return r.Kind == "ReplicaSet" })
}
