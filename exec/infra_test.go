package exec

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"spatec.dev/spatec/exec/broker"
	"spatec.dev/spatec/exec/burn/burntest"
	"spatec.dev/spatec/exec/engine/docker"
	"spatec.dev/spatec/schema"
)

// infraTest readies a test of container infrastructure: the engine, the
// host's ClickHouse, the burn image and a context.
func infraTest(t *testing.T) (*docker.Engine, context.Context) {
	e := newEngine(t)
	requireClickHouse(t)
	burntest.Image(t, e)
	ctx, _ := testContext(t, 60*time.Second)
	return e, ctx
}

// containerBrokerEnv is testEnv with the broker declared as a container,
// the way the bench environments declare Redpanda. No broker image runs
// here, so burn stands in for the container's process (started, capped and
// read back like Redpanda would be), and the broker it stands for answers
// at brokerAddr.
func containerBrokerEnv(t *testing.T, brokerAddr string, burnArgs ...string) schema.Environment {
	env := testEnv(brokerAddr, clickhouseAddr(), testDatabase(t))
	b := &env.Infra.Broker
	b.Run = "container"
	b.Name = entrantName("spatec-broker")
	b.Image = &schema.Image{Ref: burntest.Tag}
	b.Args = burnArgs
	return env
}

// TestContainerInfraIsWaitedFor: a broker container that answers only some
// time after it starts is waited for, its caps are read back (C6 applies to
// the infrastructure), and closing the session removes it.
func TestContainerInfraIsWaitedFor(t *testing.T) {
	e, ctx := infraTest(t)
	addr := freeAddr(t)
	_, p, _ := net.SplitHostPort(addr)
	port, _ := strconv.Atoi(p)
	env := containerBrokerEnv(t, addr, "-cpu", "0")

	const late = 1500 * time.Millisecond
	started := make(chan *broker.Embedded, 1)
	go func() {
		time.Sleep(late)
		b, err := broker.StartEmbedded(ctx, testPartitions, broker.WithPorts(port))
		if err != nil {
			t.Errorf("starting the late broker: %v", err)
		}
		started <- b
	}()
	t.Cleanup(func() {
		if b := <-started; b != nil {
			b.Close()
		}
	})

	begin := time.Now()
	s, err := newRunner(t, e, nil).Open(ctx, env, false)
	if err != nil {
		t.Fatalf("opening a session on a late broker: %s", describe(err))
	}
	if waited := time.Since(begin); waited < late {
		t.Errorf("Open returned after %s, before the broker answered (%s)", waited, late)
	}
	if raw := s.infraCgroups[env.Infra.Broker.Name]; len(raw) == 0 {
		t.Errorf("the broker container's caps were not read back: %v", s.infraCgroups)
	}
	s.Close()
	assertNothingLeft(t, e, LabelRun, s.id)
}

// TestInfraContainerExitIsReported: a broker container that exits before
// it answers fails the session at once, naming the container, its exit
// code and the end of its log.
func TestInfraContainerExitIsReported(t *testing.T) {
	e, ctx := infraTest(t)
	env := containerBrokerEnv(t, freeAddr(t), "-hold", "1s", "-exit", "3")
	r := newRunner(t, e, nil)
	r.InfraTimeout = 40 * time.Second
	begin := time.Now()
	s, err := r.Open(ctx, env, false)
	if err == nil {
		s.Close()
		t.Fatal("a session whose broker exited opened")
	}
	var f *Failure
	want := fmt.Sprintf("the broker container %s exited with code 3 before it answered", env.Infra.Broker.Name)
	if !errors.As(err, &f) || !strings.Contains(f.Reason, want) || !strings.Contains(f.Reason, "exiting with code 3") {
		t.Errorf("got %s\nwant a failure containing %q and the log line", describe(err), want)
	}
	if waited := time.Since(begin); waited > 20*time.Second {
		t.Errorf("the exit was noticed after %s, not at once", waited)
	}
	// Only these tests start broker containers, one at a time.
	assertNothingLeft(t, e, LabelRole, "infra/broker")
}

// TestInfraTimeoutNamesTheService: a broker container that never answers
// fails the session after the runner's InfraTimeout, naming the service,
// its container, its address, the time waited and where to look.
func TestInfraTimeoutNamesTheService(t *testing.T) {
	e, ctx := infraTest(t)
	addr := freeAddr(t)
	env := containerBrokerEnv(t, addr, "-cpu", "0")
	r := newRunner(t, e, nil)
	r.InfraTimeout = time.Second
	s, err := r.Open(ctx, env, false)
	if err == nil {
		s.Close()
		t.Fatal("a session whose broker never answered opened")
	}
	want := fmt.Sprintf("the broker (container %s) did not answer at %s within 1s", env.Infra.Broker.Name, addr)
	if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "docker logs "+env.Infra.Broker.Name) {
		t.Errorf("got %v\nwant an error containing %q and how to see its log", err, want)
	}
	assertNothingLeft(t, e, LabelRole, "infra/broker")
}
