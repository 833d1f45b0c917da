package main

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"spatec.dev/spatec/exec"
	"spatec.dev/spatec/exec/engine/kube"
	"spatec.dev/spatec/runs/record"
	"spatec.dev/spatec/schema"
)

// probeImage is the tag of the probe's image, built from this checkout.
const probeImage = "spatec-probe:local"

// onKubernetes points r at the environment's cluster: its pods are the
// containers, and the cgroups are read on the node by spatec's probe,
// which the session starts there. The local Docker engine, b, builds the
// images spatec makes.
func onKubernetes(ctx context.Context, r *exec.Runner, b kube.Builder, env schema.Environment) error {
	k := env.Kubernetes
	if k == nil {
		return fmt.Errorf("environment %s runs on Kubernetes and declares no kubernetes block", env.Name)
	}
	cfg, err := kubeConfig(k.Kubeconfig)
	if err != nil {
		return err
	}
	// The sampler reads every container ten times a second through the
	// probe; client-go's default of 5 requests a second would throttle it.
	cfg.QPS, cfg.Burst = 200, 400
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("reaching the cluster of %s: %w", env.Name, err)
	}
	// A user whose rights end at the namespace may not read it: its pods
	// then say whether it is there.
	if _, err := client.CoreV1().Namespaces().Get(ctx, k.Namespace, metav1.GetOptions{}); err != nil && !apierrors.IsForbidden(err) {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("namespace %s does not exist on the cluster of %s: create it (kubectl create namespace %s) and give spatec's user the rights docs/kubernetes.md lists (pods, configmaps, pods/log, pods/portforward in it)", k.Namespace, env.Name, k.Namespace)
		}
		return fmt.Errorf("reading namespace %s on the cluster of %s: %w", k.Namespace, env.Name, err)
	}
	// Each placement goes to one node, which a probe of spatec's reads: a
	// placement by labels is resolved to the one node that has them.
	resolve := func(p schema.Placement) (string, error) {
		n, err := kube.NodeFor(ctx, client, p)
		if err != nil {
			return "", err
		}
		return n.Name, nil
	}
	node, err := resolve(k.Nodes["arm"])
	if err != nil {
		return fmt.Errorf("placing the arm of %s: %w", env.Name, err)
	}
	place := schema.Placement{Node: node}
	e := &kube.Engine{Client: client, Namespace: k.Namespace, Place: place, Services: map[string]schema.Placement{}, Builder: b, Load: k.ImageLoad}
	nodes := []string{node}
	for _, svc := range []string{"broker", "clickhouse"} {
		p, ok := k.Nodes[svc]
		if !ok {
			continue
		}
		n, err := resolve(p)
		if err != nil {
			return fmt.Errorf("placing the %s of %s: %w", svc, env.Name, err)
		}
		e.Services[svc] = schema.Placement{Node: n}
		nodes = append(nodes, n)
	}
	self, err := exec.SelfProcess()
	if err != nil {
		return err
	}
	id, err := record.NewRunID()
	if err != nil {
		return err
	}
	// The session starts the probes once it owns the nodes, and stops them.
	p := kube.NewProbes(e, cfg, kube.ProbeSpec{Image: probeImage,
		Labels: map[string]string{exec.LabelRun: id, exec.LabelRole: "probe", exec.LabelProcess: self}}, nodes)
	r.Progress.Printf("building spatec's probe for nodes %s", strings.Join(p.Nodes(), ", "))
	if err := exec.BuildProgram(ctx, e, r.SourceDir, probeImage, kube.ProbeProgram, env.Arch); err != nil {
		return fmt.Errorf("building spatec's probe: %w", err)
	}
	e.Files, e.Kill = p.ReadFile, p.Kill
	r.Engine, r.Cgroups = e, p
	return nil
}

// kubeConfig reads a kubeconfig file, or the pod's own service account
// when spatec runs in the cluster (path "").
func kubeConfig(path string) (*rest.Config, error) {
	if path == "" {
		cfg, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("no kubeconfig is declared and spatec does not run in a pod (%w): declare kubernetes.kubeconfig", err)
		}
		return cfg, nil
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("reading kubeconfig %s: %w", path, err)
	}
	return cfg, nil
}
