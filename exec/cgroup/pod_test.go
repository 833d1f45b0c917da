package cgroup

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// kubeletTree lays out a v1 node as the kubelet's cgroupfs driver writes
// it: a Guaranteed pod's container with CPU 1 to itself beside its pod's
// sandbox on the shared pool, a burstable pod's container, and pod-level
// groups spanning all.
func kubeletTree(t *testing.T, cpuset, otherCpuset string) (FS, string) {
	return kubeletTreeUnder(t, "", cpuset, otherCpuset)
}

// kubeletTreeUnder is kubeletTree under a cgroup root of the kubelet's own
// (prefix, such as "kubelet/").
func kubeletTreeUnder(t *testing.T, prefix, cpuset, otherCpuset string) (FS, string) {
	t.Helper()
	root := t.TempDir()
	const uid, cid = "5b1c7a9e-0c4d-4f55-9b1a-2f7e9d3c8a10", "3f9a"
	mine := prefix + "kubepods/pod" + uid + "/" + cid
	other := prefix + "kubepods/burstable/podfeed/beef"
	for _, c := range []string{"memory", "cpu", "cpuacct", "cpuset"} {
		for _, dir := range []string{mine, other, prefix + "kubepods/pod" + uid + "/pause"} {
			if err := os.MkdirAll(filepath.Join(root, c, dir), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	for file, content := range map[string]string{
		"cpu/" + mine + "/cpu.cfs_quota_us":                              "-1",
		"cpu/" + mine + "/cpu.cfs_period_us":                             "100000",
		"memory/" + mine + "/memory.limit_in_bytes":                      "134217728",
		"memory/" + mine + "/memory.memsw.limit_in_bytes":                "134217728",
		"memory/" + mine + "/cgroup.procs":                               "4242\n",
		"cpuset/" + mine + "/cpuset.cpus":                                cpuset,
		"cpuset/" + prefix + "kubepods/pod" + uid + "/cpuset.cpus":       "0-1",
		"cpuset/" + prefix + "kubepods/burstable/podfeed/cpuset.cpus":    "0-1",
		"cpuset/" + other + "/cpuset.cpus":                               otherCpuset,
		"cpuset/" + prefix + "kubepods/pod" + uid + "/pause/cpuset.cpus": "0-1",
	} {
		if err := os.WriteFile(filepath.Join(root, file), []byte(content+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return FS{Root: root}, uid + "/" + cid
}

func TestLocatePodAndExclusiveCores(t *testing.T) {
	fs, ids := kubeletTree(t, "1", "0")
	uid, cid, _ := strings.Cut(ids, "/")
	if _, err := fs.LocatePod(QoSBurstable, uid, cid); err == nil || !strings.Contains(err.Error(), "burstable/pod"+uid) {
		t.Errorf("a Guaranteed pod's container looked up as Burstable: got %v, want the burstable path named as missing", err)
	}
	g, err := fs.LocatePod(QoSGuaranteed, uid, cid)
	if err != nil {
		t.Fatal(err)
	}
	if pids, err := g.PIDs(); err != nil || len(pids) != 1 || pids[0] != "4242" {
		t.Errorf("PIDs: %v %v", pids, err)
	}
	rb, err := g.ReadBack()
	if err != nil {
		t.Fatal(err)
	}
	want := Caps{ExclusiveCPUs: 1, Memory: 128 << 20, MemorySwap: 128 << 20}
	if ms := Verify(want, rb); len(ms) != 0 {
		t.Errorf("a container with CPU 1 to itself and no quota: %q", mismatchText(ms))
	}
	if ms := Verify(Caps{ExclusiveCPUs: 2, Memory: 128 << 20, MemorySwap: 128 << 20}, rb); len(ms) != 1 ||
		!strings.Contains(ms[0].String(), "cpuset.cpus: want 2 CPUs of its own, found 1") || !strings.Contains(ms[0].Hint, "static CPU manager") {
		t.Errorf("one core where two were planned: %q", mismatchText(ms))
	}
	if sharers, err := fs.CpusetSharers(g, rb.Raw["cpuset.cpus"]); err != nil || len(sharers) != 0 {
		t.Errorf("no other container is on CPU 1, got %v %v", sharers, err)
	}
}

func TestExclusiveCoresSharedOrQuotaed(t *testing.T) {
	fs, ids := kubeletTree(t, "1", "0-1")
	uid, cid, _ := strings.Cut(ids, "/")
	g, err := fs.LocatePod(QoSGuaranteed, uid, cid)
	if err != nil {
		t.Fatal(err)
	}
	sharers, err := fs.CpusetSharers(g, "1")
	if err != nil || len(sharers) != 1 || sharers[0] != "/kubepods/burstable/podfeed/beef: 0-1" {
		t.Errorf("the shared pool's container on CPU 1 is a sharer: got %v %v", sharers, err)
	}
	// A CFS quota on exclusive cores is not the plan's cap either.
	if err := os.WriteFile(filepath.Join(fs.Root, "cpu", "kubepods", "pod"+uid, cid, "cpu.cfs_quota_us"), []byte("50000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rb, err := g.ReadBack()
	if err != nil {
		t.Fatal(err)
	}
	if ms := Verify(Caps{ExclusiveCPUs: 1, Memory: 128 << 20, MemorySwap: 128 << 20}, rb); len(ms) != 1 || ms[0].File != "cpu.cfs_quota_us" {
		t.Errorf("a quota on exclusive cores: %q", mismatchText(ms))
	}
}

func TestPodLayouts(t *testing.T) {
	got := PodLayouts(QoSBurstable, "a-b", "c1")
	if got[0] != "/kubepods/burstable/poda-b/c1" ||
		got[1] != "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-poda_b.slice/cri-containerd-c1.scope" {
		t.Errorf("layouts: %q", got)
	}
}

// TestLocatePodUnderACgroupRootOfItsOwn: a kubelet whose cgroup root is
// /kubelet (as kind's nodes run theirs) nests its tree there; the pod's
// container is found below it, by either driver's names, in its QoS class
// only, and the cores' sharers are looked for in that tree.
func TestLocatePodUnderACgroupRootOfItsOwn(t *testing.T) {
	fs, ids := kubeletTreeUnder(t, "kubelet/", "1", "0-1")
	uid, cid, _ := strings.Cut(ids, "/")
	g, err := fs.LocatePod(QoSGuaranteed, uid, cid)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(fs.Root, "memory/kubelet/kubepods/pod"+uid+"/"+cid); g.Dir("memory") != want {
		t.Errorf("found %s; want %s", g.Dir("memory"), want)
	}
	if _, err := fs.LocatePod(QoSBurstable, uid, cid); err == nil || !strings.Contains(err.Error(), "no group of container "+cid+" under a group of pod "+uid+" (Burstable)") {
		t.Errorf("a Guaranteed pod's container looked up as Burstable: %v", err)
	}
	sharers, err := fs.CpusetSharers(g, "1")
	if err != nil || len(sharers) != 1 || sharers[0] != "/kubelet/kubepods/burstable/podfeed/beef: 0-1" {
		t.Errorf("the shared pool's container on CPU 1, under /kubelet: got %v %v", sharers, err)
	}

	// The systemd driver's names under a root of its own.
	root := t.TempDir()
	scope := "kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-burstable.slice/kubelet-kubepods-burstable-poda_b.slice/cri-containerd-c1.scope"
	for _, c := range []string{"memory", "cpu", "cpuacct", "cpuset"} {
		if err := os.MkdirAll(filepath.Join(root, c, scope), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	sd := FS{Root: root}
	if g, err := sd.LocatePod(QoSBurstable, "a-b", "c1"); err != nil || !strings.HasSuffix(g.Dir("cpu"), scope) {
		t.Errorf("a burstable pod under kubelet.slice: %v", err)
	}
	if _, err := sd.LocatePod(QoSBestEffort, "a-b", "c1"); err == nil {
		t.Error("a burstable pod's container was found as BestEffort")
	}

	// A group outside any kubelet's tree has no sharers to look for.
	if err := os.MkdirAll(filepath.Join(root, "cpuset", "docker", "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range requiredV1 {
		if err := os.MkdirAll(filepath.Join(root, c, "docker", "x"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	d, err := sd.locateAt(ModeV1, []string{"/docker/x"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sd.CpusetSharers(d, "1"); err == nil || !strings.Contains(err.Error(), "is not inside a kubelet's tree") {
		t.Errorf("a group outside the kubelet's tree: %v", err)
	}
}
