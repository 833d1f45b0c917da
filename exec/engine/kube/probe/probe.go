// Package probe is spatec's reader on a Kubernetes node: a small server, run
// in a pod with the node's cgroup tree mounted read-only and the node's
// process table, that locates the containers of a run by pod and container
// id, reads their caps back and samples their usage with spatec's own
// exec/cgroup package, exactly as spatec does on a Docker host. spatec
// reaches it through the API server's pod proxy; the API server's view of a
// pod is not proof of what the kernel enforces.
//
// It changes nothing on the node but for one request: a failure
// scenario's kill of a container spatec found (KillPath).
//
// Every request carries the token the probe was started with, so that
// nothing but the spatec that started it reads through it.
package probe

import (
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"spatec.dev/spatec/exec/cgroup"
)

// Serving starts the line the probe writes to its log once it serves,
// followed by its address ("127.0.0.1:41234"). The probe takes a free port
// of the node's loopback, so probes of two runs, or of two nodes sharing
// one host's network, never contend for one; spatec reads the port here.
const Serving = "spatec-probe: serving on "

// ServingPort reads the port from the probe's log: the last Serving line's.
func ServingPort(log string) (int, bool) {
	port, found := 0, false
	for _, line := range strings.Split(log, "\n") {
		addr, ok := strings.CutPrefix(strings.TrimSpace(line), Serving)
		if !ok {
			continue
		}
		addr, _, _ = strings.Cut(addr, " ")
		if i := strings.LastIndexByte(addr, ':'); i >= 0 {
			if n, err := strconv.Atoi(addr[i+1:]); err == nil && n > 0 {
				port, found = n, true
			}
		}
	}
	return port, found
}

// The probe's requests. Each takes the token and, but for ModePath,
// SwapPath and StatsPath (every container found), the container's pod uid
// and container id (and its QoS class, for FindPath).
const (
	ModePath      = "/mode"
	SwapPath      = "/swap"
	FindPath      = "/find"
	ReadBackPath  = "/readback"
	StatsPath     = "/stats"
	ResetPeakPath = "/resetpeak"
	ClosePath     = "/close"
	FilePath      = "/file"
	// KillPath kills a found container's first process with SIGKILL, as
	// a crash would: a failure scenario's fault. The kubelet sees the
	// container die and its pod's restartPolicy decides what follows.
	KillPath = "/kill"
)

// Found is the answer to FindPath: the group's caps as read back, and the
// other containers whose cpusets hold any of its cores, when it was asked
// to have them to itself.
type Found struct {
	ReadBack cgroup.ReadBack `json:"readBack"`
	Sharers  []string        `json:"sharers,omitempty"`
	// AgeMS is how long ago, when the probe answered, the container's
	// oldest process started, in milliseconds (10 ms resolution): spatec
	// places the container's start on its own clock from it, whatever the
	// node's clock says.
	AgeMS int64 `json:"ageMS"`
}

// Stats is the answer to StatsPath: one reading of every container found
// so far, by "<pod uid>/<container id>", or why it could not be read.
type Stats struct {
	Stats  map[string]cgroup.Stat `json:"stats"`
	Errors map[string]string      `json:"errors,omitempty"`
}

// Reply carries a mode, a swap check or a peak reset.
type Reply struct {
	Mode  cgroup.Mode `json:"mode,omitempty"`
	OK    bool        `json:"ok,omitempty"`
	Error string      `json:"error,omitempty"`
}

// Server answers the probe's requests from one node's cgroup tree.
type Server struct {
	// FS is the node's tree, as mounted in the probe's pod.
	FS cgroup.FS
	// Token is what every request must carry.
	Token string

	mu     sync.Mutex
	groups map[string]*cgroup.Group // by uid/container id
}

// Handler serves the requests.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc(ModePath, s.auth(func(w http.ResponseWriter, r *http.Request) {
		m, err := s.FS.Mode()
		reply(w, Reply{Mode: m}, err)
	}))
	mux.HandleFunc(SwapPath, s.auth(func(w http.ResponseWriter, r *http.Request) {
		err := cgroup.CheckSwap(s.FS, r.FormValue("accounting") == "true")
		rep := Reply{OK: err == nil}
		if err != nil {
			rep.Error = err.Error()
		}
		reply(w, rep, nil)
	}))
	mux.HandleFunc(FindPath, s.auth(s.find))
	mux.HandleFunc(ReadBackPath, s.auth(s.withGroup(func(w http.ResponseWriter, r *http.Request, g *cgroup.Group) {
		rb, err := g.ReadBack()
		reply(w, rb, err)
	})))
	mux.HandleFunc(StatsPath, s.auth(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		out := Stats{Stats: make(map[string]cgroup.Stat, len(s.groups))}
		for key, g := range s.groups {
			st, err := g.Stat()
			if err != nil {
				if out.Errors == nil {
					out.Errors = map[string]string{}
				}
				out.Errors[key] = err.Error()
				continue
			}
			out.Stats[key] = st
		}
		reply(w, out, nil)
	}))
	mux.HandleFunc(ResetPeakPath, s.auth(s.withGroup(func(w http.ResponseWriter, r *http.Request, g *cgroup.Group) {
		ok, err := g.ResetPeak()
		reply(w, Reply{OK: ok}, err)
	})))
	mux.HandleFunc(ClosePath, s.auth(func(w http.ResponseWriter, r *http.Request) {
		key := r.FormValue("uid") + "/" + r.FormValue("container")
		s.mu.Lock()
		g := s.groups[key]
		delete(s.groups, key)
		s.mu.Unlock()
		var err error
		if g != nil {
			err = g.Close()
		}
		reply(w, Reply{OK: true}, err)
	}))
	mux.HandleFunc(FilePath, s.auth(s.file))
	mux.HandleFunc(KillPath, s.auth(s.withGroup(func(w http.ResponseWriter, r *http.Request, g *cgroup.Group) {
		reply(w, Reply{OK: true}, s.kill(g))
	})))
	return mux
}

func (s *Server) auth(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.FormValue("token")), []byte(s.Token)) != 1 {
			http.Error(w, "spatec probe: wrong or missing token", http.StatusForbidden)
			return
		}
		h(w, r)
	}
}

// find locates a container's group, keeps it open for the readings that
// follow, and reads its caps back.
func (s *Server) find(w http.ResponseWriter, r *http.Request) {
	uid, id := r.FormValue("uid"), r.FormValue("container")
	g, err := s.FS.LocatePod(r.FormValue("qos"), uid, id)
	if err != nil {
		reply(w, nil, err)
		return
	}
	rb, err := g.ReadBack()
	if err != nil {
		_ = g.Close()
		reply(w, nil, err)
		return
	}
	found := Found{ReadBack: rb}
	if found.AgeMS, err = s.age(g); err != nil {
		_ = g.Close()
		reply(w, nil, err)
		return
	}
	if n, _ := strconv.Atoi(r.FormValue("exclusive")); n > 0 {
		if found.Sharers, err = s.FS.CpusetSharers(g, rb.Raw["cpuset.cpus"]); err != nil {
			_ = g.Close()
			reply(w, nil, err)
			return
		}
	}
	s.mu.Lock()
	if s.groups == nil {
		s.groups = map[string]*cgroup.Group{}
	}
	if old := s.groups[uid+"/"+id]; old != nil {
		_ = old.Close()
	}
	s.groups[uid+"/"+id] = g
	s.mu.Unlock()
	reply(w, found, nil)
}

func (s *Server) withGroup(h func(http.ResponseWriter, *http.Request, *cgroup.Group)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		key := r.FormValue("uid") + "/" + r.FormValue("container")
		s.mu.Lock()
		g := s.groups[key]
		s.mu.Unlock()
		if g == nil {
			http.Error(w, fmt.Sprintf("spatec probe: container %s was not found first (%s)", key, FindPath), http.StatusNotFound)
			return
		}
		h(w, r, g)
	}
}

// file reads a file inside the container, through its main process's root
// (a JVM's GC log): the probe shares the node's process table. The group
// is located afresh, leaving the one held for readings alone.
func (s *Server) file(w http.ResponseWriter, r *http.Request) {
	g, err := s.FS.LocatePod(r.FormValue("qos"), r.FormValue("uid"), r.FormValue("container"))
	if err != nil {
		http.Error(w, "spatec probe: "+err.Error(), http.StatusNotFound)
		return
	}
	defer g.Close()
	name := path.Clean("/" + r.FormValue("path"))
	limit, err := strconv.ParseInt(r.FormValue("limit"), 10, 64)
	if err != nil || limit <= 0 {
		http.Error(w, "spatec probe: limit must be a positive number of bytes", http.StatusBadRequest)
		return
	}
	pids, err := g.PIDs()
	if err != nil || len(pids) == 0 {
		http.Error(w, fmt.Sprintf("spatec probe: no process in %s to read %s through: %v", g, name, err), http.StatusNotFound)
		return
	}
	f, err := os.Open(filepath.Join(s.FS.Proc, pids[0], "root", name))
	if err != nil {
		http.Error(w, "spatec probe: "+err.Error(), http.StatusNotFound)
		return
	}
	defer f.Close()
	w.Header().Set("Content-Type", "application/octet-stream")
	_, _ = io.Copy(w, io.LimitReader(f, limit))
}

// kill ends the group's oldest process, the container's own first one,
// with SIGKILL: in its PID namespace it is init, so the kernel ends every
// other process of the container with it. Only a container spatec found
// (withGroup) can be killed so.
func (s *Server) kill(g *cgroup.Group) error {
	pid, _, err := s.oldest(g)
	if err != nil {
		return err
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("killing process %d of %s: %w", pid, g, err)
	}
	return nil
}

// age is how long ago the group's oldest process started: /proc/uptime
// less the process's start (field 22 of /proc/<pid>/stat, in clock ticks
// since boot; Linux reports them at 100 per second).
func (s *Server) age(g *cgroup.Group) (int64, error) {
	b, err := os.ReadFile(filepath.Join(s.FS.Proc, "uptime"))
	if err != nil {
		return 0, fmt.Errorf("reading the node's uptime: %w", err)
	}
	up, err := strconv.ParseFloat(strings.Fields(string(b))[0], 64)
	if err != nil {
		return 0, fmt.Errorf("reading the node's uptime: %w", err)
	}
	_, ticks, err := s.oldest(g)
	if err != nil {
		return 0, err
	}
	return int64((up - ticks/100) * 1000), nil
}

// oldest is the group's first process still there, and its start in
// clock ticks since boot.
func (s *Server) oldest(g *cgroup.Group) (int, float64, error) {
	pids, err := g.PIDs()
	if err != nil {
		return 0, 0, err
	}
	first, oldest := 0, -1.0
	for _, pid := range pids {
		b, err := os.ReadFile(filepath.Join(s.FS.Proc, pid, "stat"))
		if err != nil {
			continue // exited since the list was read
		}
		i := strings.LastIndexByte(string(b), ')')
		f := strings.Fields(string(b[i+1:]))
		if i < 0 || len(f) < 20 {
			continue
		}
		ticks, err := strconv.ParseFloat(f[19], 64)
		if err != nil {
			continue
		}
		n, err := strconv.Atoi(pid)
		if err != nil {
			continue
		}
		if oldest < 0 || ticks < oldest {
			first, oldest = n, ticks
		}
	}
	if oldest < 0 {
		return 0, 0, fmt.Errorf("no process of %s could be read", g)
	}
	return first, oldest, nil
}

// reply writes v as JSON, or err as a 500 whose body is its message.
func reply(w http.ResponseWriter, v any, err error) {
	if err != nil {
		http.Error(w, "spatec probe: "+strings.TrimSpace(err.Error()), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
