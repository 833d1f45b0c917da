package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"spatec.dev/spatec/exec"
	"spatec.dev/spatec/internal/testenv"
	"spatec.dev/spatec/runs/record"
)

// kubeNamespace is the namespace envs/k8s-single runs in.
const kubeNamespace = "spatec"

// requireCluster fails under CI, and skips elsewhere, without the test
// cluster, the Docker engine that builds the arm's image and ClickHouse;
// it returns a client of the cluster, its namespace made.
func requireCluster(t *testing.T) kubernetes.Interface {
	t.Helper()
	testenv.Kubernetes(t)
	requireServices(t)
	cfg, err := clientcmd.BuildConfigFromFlags("", testenv.KubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: kubeNamespace}}
	if _, err := client.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	return client
}

// leftInNamespace lists the pods, ReplicaSets and config maps in the
// namespace.
func leftInNamespace(t *testing.T, client kubernetes.Interface) []string {
	t.Helper()
	ctx := context.Background()
	pods, err := client.CoreV1().Pods(kubeNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cms, err := client.CoreV1().ConfigMaps(kubeNamespace).List(ctx, metav1.ListOptions{LabelSelector: exec.LabelRun})
	if err != nil {
		t.Fatal(err)
	}
	sets, err := client.AppsV1().ReplicaSets(kubeNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, p := range pods.Items {
		left = append(left, "pod "+p.Name)
	}
	for _, rs := range sets.Items {
		left = append(left, "replica set "+rs.Name)
	}
	for _, c := range cms.Items {
		left = append(left, "config map "+c.Name)
	}
	return left
}

// TestKubeExec runs the reference arm twice on the cluster the
// test command stands up, in each of its environments. On k8s-single the
// arm is a Guaranteed pod on a core of its own, beside the embedded broker
// and the host's ClickHouse; on k8s-pods the broker and ClickHouse are
// Guaranteed pods too, each under its CFS quota; on k8s-two they run on
// the second node, whose pods live under a cgroup root of their own. Every
// pod is read back and sampled on its node by that node's probe; each run
// drains the topic into ClickHouse and is recorded ok with every figure
// and each container's node, and nothing is left in the namespace.
func TestKubeExec(t *testing.T) {
	client := requireCluster(t)
	pods := map[string]map[string]string{
		"consumer":          {"cpu.cfs_quota_us": "50000", "memory.limit_in_bytes": "1073741824"},
		"spatec-broker":     {"cpu.cfs_quota_us": "25000", "memory.limit_in_bytes": "536870912"},
		"spatec-clickhouse": {"cpu.cfs_quota_us": "25000", "memory.limit_in_bytes": "1610612736"},
	}
	for _, tc := range []struct {
		env     string
		cgroups map[string]map[string]string
		nodes   map[string]string
	}{
		{"k8s-single", map[string]map[string]string{
			"consumer": {"cpuset.cpus": "1", "cpu.cfs_quota_us": "-1", "memory.limit_in_bytes": "1073741824"},
		}, map[string]string{"consumer": "spatec-node"}},
		{"k8s-pods", pods, map[string]string{"consumer": "spatec-node", "spatec-broker": "spatec-node", "spatec-clickhouse": "spatec-node"}},
		{"k8s-two", pods, map[string]string{"consumer": "spatec-node", "spatec-broker": "spatec-node2", "spatec-clickhouse": "spatec-node2"}},
	} {
		t.Run(tc.env, func(t *testing.T) { execOnKubernetes(t, client, tc.env, tc.cgroups, tc.nodes) })
	}
}

func execOnKubernetes(t *testing.T, client kubernetes.Interface, env string, cgroups map[string]map[string]string, nodes map[string]string) {
	results := t.TempDir()
	var stdout, stderr syncBuffer
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	code := run(ctx, []string{"exec", "--env", env, "reference", "--reps", "2", "--results", results}, &stdout, &stderr)
	if code != exitOK {
		t.Fatalf("exit %d; stdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	recs := allRecords(t, results)
	if len(recs) != 2 {
		t.Fatalf("%d records, want 2", len(recs))
	}
	for _, r := range recs {
		if r.Status != record.StatusOK {
			t.Errorf("run %s: %s (%s), want ok", r.RunID, r.Status, r.Note)
		}
		for c, files := range cgroups {
			for f, want := range files {
				if got := r.Run.Cgroups[c][f]; got != want {
					t.Errorf("run %s: %s read back %s %q, want %q", r.RunID, c, f, got, want)
				}
			}
		}
		ran := map[string]string{}
		for _, c := range slices.Concat(r.SUT.Containers, r.Run.Infra) {
			ran[c.Name] = c.Node
		}
		for c, want := range nodes {
			if ran[c] != want {
				t.Errorf("run %s: container %s recorded on node %q, want %q", r.RunID, c, ran[c], want)
			}
		}
		if !strings.Contains(r.Run.Host.EngineVersion, "kubelet v1.34.4") {
			t.Errorf("run %s: engine version %q does not name the kubelet", r.RunID, r.Run.Host.EngineVersion)
		}
		for _, m := range []string{record.RowsPerS, record.CoresUsed, record.PeakAnonBytes, record.DistinctRows} {
			if v, ok := r.Metrics[m]; !ok || v.Value <= 0 {
				t.Errorf("run %s: %s is %v, want a positive figure", r.RunID, m, v)
			}
		}
		if d := r.Metrics[record.DistinctRows].Value; d != 200_000 {
			t.Errorf("run %s: %v distinct rows, want 200000", r.RunID, d)
		}
	}
	if left := leftInNamespace(t, client); len(left) > 0 {
		t.Errorf("left in namespace %s: %v", kubeNamespace, left)
	}
	t.Logf("%s", stdout.String())
}

// TestKubeFaultCapChangedOnTheNode gives the arm pod's container a CFS quota
// on the node as soon as it runs, behind spatec's and the kubelet's back
// (a core of its own has none): the probe's read-back catches it, before
// the window opens (refused) or during it (failed), with what it found.
func TestKubeFaultCapChangedOnTheNode(t *testing.T) {
	client := requireCluster(t)
	results := t.TempDir()
	b := startCLI(t, "exec", "--env", "k8s-single", "reference", "--results", results)
	b.waitFor(t, "phase=verify state=start", 5*time.Minute)

	var file string
	for deadline := time.Now().Add(time.Minute); file == ""; {
		pods, err := client.CoreV1().Pods(kubeNamespace).List(context.Background(), metav1.ListOptions{LabelSelector: exec.LabelEntrant + "=reference"})
		if err != nil {
			t.Fatal(err)
		}
		if len(pods.Items) == 1 && len(pods.Items[0].Status.ContainerStatuses) == 1 && pods.Items[0].Status.ContainerStatuses[0].ContainerID != "" {
			p := pods.Items[0]
			_, cid, _ := strings.Cut(p.Status.ContainerStatuses[0].ContainerID, "://")
			file = filepath.Join("/sys/fs/cgroup/cpu/kubepods", "pod"+string(p.UID), cid, "cpu.cfs_quota_us")
		}
		if time.Now().After(deadline) {
			t.Fatalf("the arm's pod did not run within a minute: %+v", pods.Items)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := os.WriteFile(file, []byte("30000"), 0o644); err != nil {
		t.Fatal(err)
	}
	code := b.wait(t)
	recs := allRecords(t, results)
	if len(recs) != 1 {
		t.Fatalf("%d records, want 1; stderr:\n%s", len(recs), b.stderr.String())
	}
	wants := map[record.Status][]string{
		record.StatusRefused: {"C6: caps do not read back as planned", "container consumer: cpu.cfs_quota_us: want -1, found 30000"},
		record.StatusFailed:  {"C6: caps changed during the window", "container consumer: cpu.cfs_quota_us read", `and "30000" from`},
	}
	wantCode := map[record.Status]int{record.StatusRefused: exitRefused, record.StatusFailed: exitProblems}
	rec := recs[0]
	if _, ok := wants[rec.Status]; !ok || code != wantCode[rec.Status] {
		t.Fatalf("exit %d, record %s (%s); want refused (exit %d) or failed (exit %d)", code, rec.Status, rec.Note, exitRefused, exitProblems)
	}
	for _, w := range wants[rec.Status] {
		if !strings.Contains(rec.Note, w) {
			t.Errorf("%s run: note %q does not say %q", rec.Status, rec.Note, w)
		}
	}
	t.Logf("caught %s: %s", rec.Status, rec.Note)
	if left := leftInNamespace(t, client); len(left) > 0 {
		t.Errorf("left in namespace %s: %v", kubeNamespace, left)
	}
}

// TestKubeInterruptTearsDown interrupts a run on the cluster (SIGINT, then
// SIGTERM) while its arm's pod starts: the run is recorded failed and
// interrupted, and the namespace is left empty, the probe's pod included.
func TestKubeInterruptTearsDown(t *testing.T) {
	client := requireCluster(t)
	bin := buildSpatec(t)
	for _, sig := range []os.Signal{os.Interrupt, syscall.SIGTERM} {
		results := t.TempDir()
		cmd, stderr := startUntil(t, bin, "phase=verify state=start", "exec", "--env", "k8s-single", "reference", "--results", results)
		if err := cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		if code := cmd.ProcessState.ExitCode(); code != exitProblems {
			t.Errorf("%v: exit %d, want %d; stderr:\n%s", sig, code, exitProblems, stderr.String())
		}
		recs := allRecords(t, results)
		if len(recs) != 1 || recs[0].Status != record.StatusFailed || !slices.Contains(recs[0].Flags, record.FlagInterrupted) {
			t.Errorf("%v: records %+v; want one failed and interrupted", sig, recs)
		}
		if left := leftInNamespace(t, client); len(left) > 0 {
			t.Errorf("%v: left in namespace %s: %v", sig, kubeNamespace, left)
		}
	}
}

// TestKubeKilledThenRunAgain kills spatec (SIGKILL) while its arm's pod
// starts: its pods stay on the cluster. The next run removes them, records
// the killed run as failed, and runs ok.
func TestKubeKilledThenRunAgain(t *testing.T) {
	client := requireCluster(t)
	results := t.TempDir()
	killAt(t, "phase=verify state=start", "exec", "--env", "k8s-single", "reference", "--results", results)
	if left := leftInNamespace(t, client); len(left) == 0 {
		t.Fatal("after SIGKILL nothing of the run is left; want its probe's pod at least")
	}
	runAfterKill(t, "k8s-single", results, "spatec-probe-spatec-node-")
	recs := allRecords(t, results)
	if len(recs) != 2 || recs[0].Status != record.StatusFailed || !slices.Contains(recs[0].Flags, record.FlagInterrupted) || recs[1].Status != record.StatusOK {
		t.Errorf("records %+v; want the killed run failed and interrupted, then an ok run", recs)
	}
	if left := leftInNamespace(t, client); len(left) > 0 {
		t.Errorf("left in namespace %s: %v", kubeNamespace, left)
	}
}

// TestKubeScenarioDataPlaneKilled: on k8s-pods the arm's container is
// killed on its node a third of the way through the drain (SIGKILL from
// spatec's probe, as a crash) and the kubelet starts a new container in
// its pod, by the pod's restartPolicy (the entrant's on-failure). The
// probe follows the pod to its new container, so the series reads the
// arm after the fault as before it and counts the restart; the scenario's
// figures and verdict are those any scenario's run must give, and nothing
// is left on the cluster.
func TestKubeScenarioDataPlaneKilled(t *testing.T) {
	kubeScenario(t, "data-plane-kill", "kill", "on-failure")
}

// TestKubeScenarioPodDeleted: on k8s-pods the arm's pod is deleted a
// third of the way through the drain, as `kubectl delete pod` does (its
// process sent SIGTERM and given the pod's grace; the reference arm then
// stops cleanly, exit code 0), and the ReplicaSet the arm runs under in
// this scenario makes a new pod, with a new uid. The probe follows the set
// to its new pod, so the series reads the arm after the fault as before
// it and counts the pod made again; the figures and verdict are those any
// scenario's run must give, and nothing, neither set nor pod, is left on
// the cluster.
func TestKubeScenarioPodDeleted(t *testing.T) {
	kubeScenario(t, "data-plane-delete", "delete", "always")
}

// kubeScenario runs one of k8s-pods' scenarios on the arm's data plane and
// checks, beside what any scenario's run must give, that the sampler
// followed the arm through it, that the record names the action and the
// restart policy the data plane ran with, and that nothing is left.
func kubeScenario(t *testing.T, scenario, action, restart string) {
	t.Helper()
	client := requireCluster(t)
	rec, results := scenarioRun(t, "k8s-pods", scenario)
	if rec.Scenario.Outran {
		// Every row landed before the new pod's status reached the API
		// server (two runs in six of the delete here): the window
		// closed before there was a new container to read, and the
		// record says the recovery was not timed.
		t.Logf("the drain outran the fault: no reading after it to check")
	} else {
		followedThrough(t, results, rec, "consumer")
	}
	if sc := rec.Scenario; sc.Component != "data-plane" || sc.Action != action || sc.Restart != restart {
		t.Errorf("scenario hit %s with %s, restart policy %q; want data-plane, %s, %s", sc.Component, sc.Action, sc.Restart, action, restart)
	}
	// A deleted pod's process is sent SIGTERM, and the reference arm's
	// clean stop inserts what it holds and commits its offsets before the
	// pod's grace ends: the new pod writes nothing twice.
	if sc := rec.Scenario; action == "delete" && sc.Duplicates != 0 {
		t.Errorf("%d rows written twice after the pod was deleted; want none from an arm that stops cleanly", sc.Duplicates)
	}
	if left := leftInNamespace(t, client); len(left) > 0 {
		t.Errorf("left in namespace %s: %v", kubeNamespace, left)
	}
}

// TestKubePlacedByLabels places the arm by the node's labels: it runs on
// the one node that has them; labels no node has stop the run before
// anything is created, naming them.
func TestKubePlacedByLabels(t *testing.T) {
	client := requireCluster(t)
	byLabel := func(value string) string {
		return copyTree(t, map[string][2]string{"envs/k8s-single/env.cue": {`nodes: arm: node: "spatec-node"`,
			`nodes: arm: labels: "kubernetes.io/hostname": "` + value + `"`}})
	}
	results := t.TempDir()
	code, out, errOut := cli(t, "exec", "--tree", byLabel("spatec-node"), "--env", "k8s-single", "reference", "--results", results)
	if code != exitOK {
		t.Fatalf("placed by labels: exit %d\n%s\n%s", code, out, errOut)
	}
	if recs := allRecords(t, results); len(recs) != 1 || recs[0].Status != record.StatusOK {
		t.Errorf("records %+v; want one ok", recs)
	}
	code, _, errOut = cli(t, "exec", "--tree", byLabel("no-such-node"), "--env", "k8s-single", "reference", "--results", t.TempDir())
	if code == exitOK || !strings.Contains(errOut, "placing the arm of k8s-single: 0 nodes have labels kubernetes.io/hostname=no-such-node") {
		t.Errorf("labels no node has: exit %d\n%s", code, errOut)
	}
	if left := leftInNamespace(t, client); len(left) > 0 {
		t.Errorf("left in namespace %s: %v", kubeNamespace, left)
	}
}

// TestKubeLeastRights runs on the cluster as a user with only the rights
// docs/kubernetes.md says spatec needs: its Role and ClusterRole, read
// from that page's own block and bound to the test cluster's user `spatec`.
func TestKubeLeastRights(t *testing.T) {
	client := requireCluster(t)
	const kubeconfig = "/run/spatec-k8s/spatec.kubeconfig"
	if _, err := os.Stat(kubeconfig); err != nil {
		t.Fatalf("the test cluster's least-rights user: %v (bash .ci/k8s down && bash .ci/k8s up writes it)", err)
	}
	page, err := os.ReadFile("../../docs/kubernetes.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(page), "The rights of items 2 and 3")
	if _, block, ok = strings.Cut(block, "```yaml\n"); !ok {
		t.Fatal("docs/kubernetes.md: no RBAC block after \"The rights of items 2 and 3\"")
	}
	block, _, _ = strings.Cut(block, "```")
	docs := strings.Split(block, "---\n")
	if len(docs) != 2 {
		t.Fatalf("docs/kubernetes.md's RBAC block has %d documents, want a Role and a ClusterRole", len(docs))
	}
	var role rbacv1.Role
	var cluster rbacv1.ClusterRole
	if err := yaml.UnmarshalStrict([]byte(docs[0]), &role); err != nil {
		t.Fatalf("docs/kubernetes.md's Role: %v", err)
	}
	if err := yaml.UnmarshalStrict([]byte(docs[1]), &cluster); err != nil {
		t.Fatalf("docs/kubernetes.md's ClusterRole: %v", err)
	}
	ctx := context.Background()
	rbac := client.RbacV1()
	subject := []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: "spatec", APIGroup: rbacv1.GroupName}}
	_ = rbac.Roles(kubeNamespace).Delete(ctx, role.Name, metav1.DeleteOptions{})
	_ = rbac.ClusterRoles().Delete(ctx, cluster.Name, metav1.DeleteOptions{})
	_ = rbac.RoleBindings(kubeNamespace).Delete(ctx, "spatec", metav1.DeleteOptions{})
	_ = rbac.ClusterRoleBindings().Delete(ctx, "spatec-nodes", metav1.DeleteOptions{})
	for _, err := range []error{
		func() error {
			_, err := rbac.Roles(kubeNamespace).Create(ctx, &role, metav1.CreateOptions{})
			return err
		}(),
		func() error { _, err := rbac.ClusterRoles().Create(ctx, &cluster, metav1.CreateOptions{}); return err }(),
		func() error {
			_, err := rbac.RoleBindings(kubeNamespace).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "spatec"},
				Subjects: subject, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name}}, metav1.CreateOptions{})
			return err
		}(),
		func() error {
			_, err := rbac.ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "spatec-nodes"},
				Subjects: subject, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: cluster.Name}}, metav1.CreateOptions{})
			return err
		}(),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	// The user has those rights and no others.
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	as, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := as.CoreV1().Secrets(kubeNamespace).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("user spatec listing secrets: %v; want it forbidden", err)
	}
	tree := copyTree(t, map[string][2]string{"envs/k8s-pods/env.cue": {`kubeconfig: "/run/spatec-k8s/admin.kubeconfig"`, `kubeconfig: "` + kubeconfig + `"`}})
	results := t.TempDir()
	code, out, errOut := cli(t, "exec", "--tree", tree, "--env", "k8s-pods", "reference", "--results", results)
	if code != exitOK {
		t.Fatalf("as user spatec: exit %d\n%s\n%s", code, out, errOut)
	}
	if recs := allRecords(t, results); len(recs) != 1 || recs[0].Status != record.StatusOK {
		t.Errorf("records %+v; want one ok", recs)
	}
	if left := leftInNamespace(t, client); len(left) > 0 {
		t.Errorf("left in namespace %s: %v", kubeNamespace, left)
	}
}
