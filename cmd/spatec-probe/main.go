// Command spatec-probe is spatec's reader on a Kubernetes node (see package
// exec/engine/kube/probe). spatec runs it in a pod of its own on each node a run
// uses, with the node's cgroup tree mounted read-only and the node's
// process table, and reads every container's caps and usage through it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"spatec.dev/spatec/exec/cgroup"
	"spatec.dev/spatec/exec/engine/kube/probe"
)

func main() {
	root := flag.String("cgroup", "/host/sys/fs/cgroup", "the node's cgroup tree, as mounted in the pod")
	proc := flag.String("proc", "/proc", "the node's process table (the pod shares the node's PID namespace)")
	addr := flag.String("addr", "127.0.0.1", "the address to serve on: the node's loopback, which spatec reaches through a port-forward")
	port := flag.Int("port", 0, "the port to serve on; 0 takes a free one, which the log's first line names")
	version := flag.Bool("version", false, "print the version and exit")
	flag.Parse()
	if *version {
		fmt.Println("spatec-probe 0.1.0")
		return
	}
	token := os.Getenv("SPATEC_PROBE_TOKEN")
	if token == "" {
		fmt.Fprintln(os.Stderr, "spatec-probe: SPATEC_PROBE_TOKEN is required")
		os.Exit(2)
	}
	s := &probe.Server{FS: cgroup.FS{Root: *root, Proc: *proc}, Token: token}
	if _, err := s.FS.Mode(); err != nil {
		fmt.Fprintf(os.Stderr, "spatec-probe: %v\n", err)
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	ln, err := net.Listen("tcp", net.JoinHostPort(*addr, strconv.Itoa(*port)))
	if err != nil {
		fmt.Fprintf(os.Stderr, "spatec-probe: %v\n", err)
		os.Exit(1)
	}
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	fmt.Fprintf(os.Stderr, "%s%s from %s\n", probe.Serving, ln.Addr(), *root)
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintf(os.Stderr, "spatec-probe: %v\n", err)
		os.Exit(1)
	}
}
