package probe

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	osexec "os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"spatec.dev/spatec/exec/cgroup"
	"spatec.dev/spatec/exec/cgroup/cgrouptest"
)

// node lays out a v1 node's tree and process table as the probe's pod sees
// them: a Guaranteed pod's container with CPU 1, whose process started 2 s
// after boot, and a burstable container still on CPU 1 beside it.
func node(t *testing.T) cgroup.FS {
	t.Helper()
	mine := "kubepods/podu1/c1"
	files := map[string]string{
		"cgroup/cpu/" + mine + "/cpu.cfs_quota_us":               "-1",
		"cgroup/cpu/" + mine + "/cpu.cfs_period_us":              "100000",
		"cgroup/memory/" + mine + "/memory.limit_in_bytes":       "134217728",
		"cgroup/memory/" + mine + "/memory.memsw.limit_in_bytes": "134217728",
		"cgroup/memory/" + mine + "/cgroup.procs":                "4242\n",
		"cgroup/cpuacct/" + mine + "/cpuacct.usage":              "0",
		"cgroup/cpuset/" + mine + "/cpuset.cpus":                 "1",
		"cgroup/cpuset/kubepods/burstable/podu2/c2/cpuset.cpus":  "0-1",
		"proc/uptime":                    "12.50 20.00",
		"proc/4242/stat":                 "4242 (spatec-ref) S 1 4242 4242 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 200 1 1",
		"proc/4242/root/var/log/app.log": "hello from inside",
	}
	root := cgrouptest.Files(t, files)
	return cgroup.FS{Root: filepath.Join(root, "cgroup"), Proc: filepath.Join(root, "proc")}
}

func get(t *testing.T, srv *httptest.Server, path string, q url.Values) (int, string) {
	t.Helper()
	resp, err := http.Get(srv.URL + path + "?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func TestProbeReadsAPodsContainer(t *testing.T) {
	s := &Server{FS: node(t), Token: "secret"}
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	q := url.Values{"token": {"secret"}, "qos": {"Guaranteed"}, "uid": {"u1"}, "container": {"c1"}, "exclusive": {"1"}}

	if code, body := get(t, srv, FindPath, url.Values{"token": {"wrong"}, "uid": {"u1"}, "container": {"c1"}}); code != http.StatusForbidden || !strings.Contains(body, "token") {
		t.Errorf("a wrong token: %d %q, want 403", code, body)
	}
	if code, body := get(t, srv, ReadBackPath, q); code != http.StatusNotFound || !strings.Contains(body, "was not found first") {
		t.Errorf("a reading before find: %d %q", code, body)
	}
	code, body := get(t, srv, FindPath, q)
	if code != http.StatusOK {
		t.Fatalf("find: %d %s", code, body)
	}
	var f Found
	if err := json.Unmarshal([]byte(body), &f); err != nil {
		t.Fatal(err)
	}
	if ms := cgroup.Verify(cgroup.Caps{ExclusiveCPUs: 1, Memory: 128 << 20, MemorySwap: 128 << 20}, f.ReadBack); len(ms) != 0 {
		t.Errorf("caps read through the probe: %v", ms)
	}
	// Started at tick 200 (2 s after boot), answered at 12.5 s of uptime.
	if f.AgeMS != 10500 {
		t.Errorf("age %d ms, want 10500", f.AgeMS)
	}
	if len(f.Sharers) != 1 || f.Sharers[0] != "/kubepods/burstable/podu2/c2: 0-1" {
		t.Errorf("sharers %q, want the burstable container on 0-1", f.Sharers)
	}
	if code, body := get(t, srv, ReadBackPath, q); code != http.StatusOK || !strings.Contains(body, `"cpuset.cpus":"1"`) {
		t.Errorf("read-back: %d %s", code, body)
	}
	fq := url.Values{"token": {"secret"}, "qos": {"Guaranteed"}, "uid": {"u1"}, "container": {"c1"}, "path": {"/var/log/app.log"}, "limit": {"10"}}
	if code, body := get(t, srv, FilePath, fq); code != http.StatusOK || body != "hello from" {
		t.Errorf("a file inside the container, 10 bytes: %d %q", code, body)
	}
	if code, body := get(t, srv, FindPath, url.Values{"token": {"secret"}, "qos": {"Burstable"}, "uid": {"u1"}, "container": {"c1"}}); code != http.StatusInternalServerError || !strings.Contains(body, "kubepods/burstable/podu1/c1") {
		t.Errorf("a container looked for under the wrong QoS class: %d %q", code, body)
	}
}

// TestServingPort: spatec reads the port the probe took from its log's
// serving line, and nothing else.
func TestServingPort(t *testing.T) {
	for _, c := range []struct {
		log  string
		port int
		ok   bool
	}{
		{Serving + "127.0.0.1:41234 from /host/sys/fs/cgroup\n", 41234, true},
		{"something else\n" + Serving + "[::1]:5 from /x", 5, true},
		{"spatec-probe: SPATEC_PROBE_TOKEN is required\n", 0, false},
		{Serving + "127.0.0.1:zero from /x", 0, false},
		{"", 0, false},
	} {
		if port, ok := ServingPort(c.log); port != c.port || ok != c.ok {
			t.Errorf("ServingPort(%q) = %d, %v; want %d, %v", c.log, port, ok, c.port, c.ok)
		}
	}
}

// TestProbeKillsAFoundContainer: a failure scenario's kill ends the
// container's first process (its init, so the kernel ends the rest) with
// SIGKILL, and only in a container spatec found first. The process is a
// real one, started here; the node's tree around it is laid out.
func TestProbeKillsAFoundContainer(t *testing.T) {
	sleeper := osexec.Command("sleep", "60")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer sleeper.Process.Kill()
	pid := strconv.Itoa(sleeper.Process.Pid)
	// A later process of the container, which must be left alone: its pid
	// is one no process has (the kernel's pid_max is at most 2^22).
	const later = "4194999"
	mine := "kubepods/podu1/c1"
	root := cgrouptest.Files(t, map[string]string{
		"cgroup/cpu/" + mine + "/cpu.cfs_quota_us":         "-1",
		"cgroup/cpu/" + mine + "/cpu.cfs_period_us":        "100000",
		"cgroup/memory/" + mine + "/memory.limit_in_bytes": "134217728",
		"cgroup/memory/" + mine + "/cgroup.procs":          later + "\n" + pid + "\n",
		"cgroup/cpuacct/" + mine + "/cpuacct.usage":        "0",
		"cgroup/cpuset/" + mine + "/cpuset.cpus":           "1",
		"proc/uptime":                                      "12.50 20.00",
		"proc/" + pid + "/stat":                            pid + " (sleep) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 200 1 1",
		"proc/" + later + "/stat":                          later + " (sleep) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 900 1 1",
	})
	s := &Server{FS: cgroup.FS{Root: filepath.Join(root, "cgroup"), Proc: filepath.Join(root, "proc")}, Token: "secret"}
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	q := url.Values{"token": {"secret"}, "qos": {"Guaranteed"}, "uid": {"u1"}, "container": {"c1"}}

	if code, body := get(t, srv, KillPath, q); code != http.StatusNotFound || !strings.Contains(body, "was not found first") {
		t.Errorf("a kill before find: %d %q, want 404", code, body)
	}
	if code, body := get(t, srv, FindPath, q); code != http.StatusOK {
		t.Fatalf("find: %d %s", code, body)
	}
	if code, body := get(t, srv, KillPath, q); code != http.StatusOK || !strings.Contains(body, `"ok":true`) {
		t.Fatalf("kill: %d %s", code, body)
	}
	err := sleeper.Wait()
	var exit *osexec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Errorf("the container's first process ended with %v; want killed by SIGKILL", err)
	}
}
