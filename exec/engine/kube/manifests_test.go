package kube

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"spatec.dev/spatec/exec/jvmflags"
	"spatec.dev/spatec/schema"
)

func kubePlan(cpus float64, jvm bool) *schema.Plan {
	c := schema.Container{
		Role: "data-plane", Image: "spatec-reference:0.1.1", Entrypoint: []string{"/spatec-reference"},
		CPUs: cpus, Memory: 1 << 30, MemorySwap: 1 << 30,
		Environment: map[string]string{"SPATEC_TOPIC": "spatec-events"},
		Files:       map[string]string{"/etc/app/app.conf": "a=1\n", "/etc/app/other.conf": "b=2\n"},
	}
	if jvm {
		c.Runtime = "jvm"
		c.JVM = &schema.JVM{Heap: 512 << 20, GCLog: "-Xlog:gc:file=/spatec-gc/gc.log", FlagsLog: jvmflags.Options("/spatec-gc/vm.log"),
			Options: []string{"-Xms512m", "-Xmx512m"}, OptionsVia: "JAVA_TOOL_OPTIONS"}
	}
	return &schema.Plan{
		Variant: "default",
		Env: schema.Environment{Name: "k8s-single", Runtime: "kubernetes", Network: "host",
			Kubernetes: &schema.Kubernetes{Namespace: "spatec", ExclusiveCPUs: true, Nodes: map[string]schema.Placement{"arm": {Node: "spatec-node"}}}},
		Entrant: schema.Entrant{Name: "reference", Containers: map[string]schema.Container{"consumer": c}},
	}
}

// TestPodsAreGuaranteedAndCarryThePlan: each container is a pod whose
// requests equal its limits (the plan's CPUs and memory), on the named
// node, with the plan's image, command, environment (a JVM's heap and GC
// log handed over as on Docker) and files, and one directory for the GC
// log and the final flags, which the schema writes side by side.
func TestPodsAreGuaranteedAndCarryThePlan(t *testing.T) {
	m, err := ForPlan(kubePlan(1, true))
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Pods) != 1 || len(m.ConfigMaps) != 1 {
		t.Fatalf("%d pods, %d config maps", len(m.Pods), len(m.ConfigMaps))
	}
	pod := m.Pods[0]
	c := pod.Spec.Containers[0]
	if pod.Namespace != "spatec" || pod.Spec.NodeName != "spatec-node" || !pod.Spec.HostNetwork || pod.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("pod %+v", pod.ObjectMeta)
	}
	cpu, mem := c.Resources.Limits[corev1.ResourceCPU], c.Resources.Limits[corev1.ResourceMemory]
	if cpu.String() != "1" || mem.Value() != 1<<30 || qos(c.Resources) != corev1.PodQOSGuaranteed {
		t.Errorf("resources %+v, QoS %s; want 1 CPU and 1 GiB, requests = limits", c.Resources, qos(c.Resources))
	}
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	if env["SPATEC_TOPIC"] != "spatec-events" || env["JAVA_TOOL_OPTIONS"] != "-Xms512m -Xmx512m -Xlog:gc:file=/spatec-gc/gc.log" {
		t.Errorf("environment %v", env)
	}
	var mounts []string
	for _, vm := range c.VolumeMounts {
		mounts = append(mounts, vm.MountPath)
	}
	if strings.Join(mounts, ",") != "/etc/app/app.conf,/etc/app/other.conf,/spatec-gc" {
		t.Errorf("mounts %v", mounts)
	}
	if m.ConfigMaps[0].Data["f0"] != "a=1\n" {
		t.Errorf("config map %v", m.ConfigMaps[0].Data)
	}
	s := m.Summary(true)
	if len(s) != 1 || s[0].QoS != corev1.PodQOSGuaranteed || !s[0].Exclusive || s[0].Node != "spatec-node" {
		t.Errorf("summary %+v", s)
	}
	// The YAML a reviewer reads parses back into the same pod.
	b, err := m.YAML()
	if err != nil {
		t.Fatal(err)
	}
	docs := strings.Split(string(b), "---\n")
	var back corev1.Pod
	if err := yaml.Unmarshal([]byte(docs[len(docs)-1]), &back); err != nil || back.Name != pod.Name || back.Spec.Containers[0].Image != c.Image {
		t.Errorf("the YAML does not read back: %v\n%s", err, docs[len(docs)-1])
	}
}

// TestFractionalCPUsCannotBeExclusive: a plan a cluster with exclusive
// cores could not apply as written is refused, not rounded.
func TestFractionalCPUsCannotBeExclusive(t *testing.T) {
	if _, err := ForPlan(kubePlan(0.5, false)); err == nil || !strings.Contains(err.Error(), "container consumer has 0.5 CPUs; exclusive cores go only to whole CPUs (C6)") {
		t.Fatalf("got %v", err)
	}
	p := kubePlan(0.5, false)
	p.Env.Kubernetes.ExclusiveCPUs = false
	m, err := ForPlan(p)
	if err != nil {
		t.Fatal(err)
	}
	if s := m.Summary(false); s[0].CPUs != "500m" || s[0].Exclusive || s[0].QoS != corev1.PodQOSGuaranteed {
		t.Errorf("summary %+v; want a Guaranteed pod of 500m, not exclusive", s)
	}
}
