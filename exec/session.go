package exec

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"spatec.dev/spatec/exec/broker"
	"spatec.dev/spatec/exec/cgroup"
	"spatec.dev/spatec/exec/chstore"
	"spatec.dev/spatec/exec/engine"
	"spatec.dev/spatec/exec/hostlock"
	"spatec.dev/spatec/exec/progress"
	"spatec.dev/spatec/runs/record"
	"spatec.dev/spatec/schema"
)

// Session is the infrastructure of one environment, up for the length of
// one `spatec exec`: every repetition of every arm runs on the same broker
// and ClickHouse (C11), which start once and are verified like any arm (C6).
type Session struct {
	runner *Runner
	env    schema.Environment
	id     string // labels the infrastructure containers
	host   engine.HostInfo
	mode   cgroup.Mode

	embedded *broker.Embedded
	broker   *broker.Client
	store    *chstore.Store
	// infraCgroups are the infrastructure containers' caps as read back.
	infraCgroups map[string]map[string]string
	infra        []infraContainer
	network      string
	// tables holds each table made this session from its DDL, as the
	// server showed its definition once made.
	tables map[string]string
	// expected holds the expectations computed this session, by dataset
	// version and size.
	expected map[string]expectation
	// images holds every image the session made sure of, by reference.
	images map[string]image
	// hostAddrs are the addresses spatec reaches the services at, by
	// service: as declared, or the container's own on the run's network.
	hostAddrs map[string]string
	// process identifies this spatec process on everything it creates.
	process string
	// lock is the host lock, when the runner takes one.
	lock *hostlock.Lock
	// infraExits receives the infrastructure containers that stop on their
	// own; watching ends with the session.
	infraExits chan exitEvent
	// faulted holds the containers a failure scenario broke on purpose,
	// by ID: their watchers wait for them to run again rather than
	// report an exit.
	faultMu   sync.Mutex
	faulted   map[string]bool
	watching  context.Context
	stopWatch context.CancelFunc
	// stopCgroups stops what the cgroup reader started, if anything.
	stopCgroups func()
}

// labels are the labels of an object the session creates: kv as pairs,
// and the process that created it.
func (s *Session) labels(kv ...string) map[string]string {
	l := map[string]string{LabelProcess: s.process}
	for i := 0; i+1 < len(kv); i += 2 {
		l[kv[i]] = kv[i+1]
	}
	return l
}

// infraContainer is a running infrastructure container.
type infraContainer struct {
	service string // broker or clickhouse
	name    string
	id      string
	image   image
	group   Group
	// version is what its image runs, when the service says how to read it.
	version string
	// node is the Kubernetes node its pod runs on; "" on Docker.
	node string
}

// Open reads the host facts, refusing an environment of another
// architecture than the engine's, and, unless bare is set, brings up the
// environment's infrastructure. A bare session has none: it serves only
// hold runs of arms that need no broker or ClickHouse (spatec's own tests
// of caps and measurement).
func (r *Runner) Open(ctx context.Context, env schema.Environment, bare bool, plans ...*schema.Plan) (*Session, error) {
	var blocked []string
	for _, p := range plans {
		if p.Entrant.Blocked != "" {
			blocked = append(blocked, fmt.Sprintf("%s cannot run yet: %s", p.Entrant.Name, p.Entrant.Blocked))
		}
	}
	if len(blocked) > 0 {
		return nil, refusef("%s", strings.Join(blocked, "; "))
	}
	if err := CheckPinned(env, plans); err != nil {
		return nil, err
	}
	// A plan for another architecture is refused before it takes
	// anything, the host's lock included.
	host, err := r.Engine.Info(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the engine's host facts: %w", err)
	}
	if err := checkArch(env, host); err != nil {
		return nil, err
	}
	id, err := record.NewRunID()
	if err != nil {
		return nil, err
	}
	s := &Session{runner: r, env: env, id: id, host: host, infraCgroups: map[string]map[string]string{},
		images: map[string]image{}, hostAddrs: map[string]string{}, infraExits: make(chan exitEvent, 3), faulted: map[string]bool{},
		tables: map[string]string{}, expected: map[string]expectation{}}
	s.watching, s.stopWatch = context.WithCancel(context.WithoutCancel(ctx))
	if s.process, err = processID(os.Getpid()); err != nil {
		return nil, err
	}
	if err := s.own(ctx); err != nil {
		return nil, err
	}
	if err := s.open(ctx, bare, plans); err != nil {
		// Whatever was started goes, and the host lock with it.
		s.Close()
		return nil, err
	}
	return s, nil
}

// open makes sure of every image (the infrastructure's and the plans'
// arms'), and brings the infrastructure up.
func (s *Session) open(ctx context.Context, bare bool, plans []*schema.Plan) error {
	r := s.runner
	var err error
	if st, ok := r.Cgroups.(Starter); ok {
		if err := st.Start(ctx); err != nil {
			return err
		}
		s.stopCgroups = st.Stop
	}
	if s.mode, err = r.Cgroups.Mode(ctx); err != nil {
		return fmt.Errorf("reading the cgroup mode: %w", err)
	}
	if err := s.prepare(ctx, bare, plans); err != nil {
		return err
	}
	if bare {
		return nil
	}
	r.Progress.Start(progress.PhaseInfra, int64(len(s.env.Infra.Keyed())), "services")
	if err := s.up(ctx); err != nil {
		r.Progress.Fail(err)
		return err
	}
	r.Progress.End()
	return nil
}

// prepare checks that each plan's programs are the ones it was made with,
// makes sure of every image before anything starts (built, found
// or pulled, each reporting progress of its own), naming at once every one
// that cannot be had, and runs each plan's validators.
func (s *Session) prepare(ctx context.Context, bare bool, plans []*schema.Plan) error {
	env := s.env
	// A program changed since its plan was made is not built at all.
	for _, p := range plans {
		if err := s.checkSources(p, ""); err != nil {
			return err
		}
	}
	var refused []string
	ensure := func(what, ref, digest string, build *schema.Build) error {
		_, err := s.ensureImage(ctx, ref, digest, build)
		var no *Refusal
		if errors.As(err, &no) {
			refused = append(refused, what+": "+no.Reason)
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		return nil
	}
	for _, svc := range env.Infra.Services() {
		if bare || svc.Run != "container" {
			continue
		}
		if svc.Image == nil {
			return refusef("%s: %s runs as a container but declares no image (C11)", env.Name, svc.Name)
		}
		if err := ensure("the image of "+svc.Name, svc.Image.Ref, svc.Image.Digest, svc.Build); err != nil {
			return err
		}
	}
	for _, p := range plans {
		for _, n := range p.ContainerNames() {
			c := p.Entrant.Containers[n]
			if err := ensure(fmt.Sprintf("%s: container %s", p.Entrant.Name, n), c.Image, "", c.Build); err != nil {
				return err
			}
		}
	}
	if len(refused) > 0 {
		return refusef("images:\n  %s", strings.Join(refused, "\n  "))
	}
	for _, p := range plans {
		if err := s.validate(ctx, p); err != nil {
			return err
		}
	}
	return nil
}

// validate runs the system's own checks of a plan's configuration (the
// entrant's validate list), each in its container's image with the
// container's files and environment and no network, and refuses the plan
// with the system's own message when one fails. The services' names
// resolve to the loopback there, so a check that resolves them (a
// ClickHouse cluster definition) passes without reaching them.
func (s *Session) validate(ctx context.Context, p *schema.Plan) error {
	r := s.runner
	for i, v := range p.Entrant.Validate {
		c := p.Entrant.Containers[v.Container]
		r.Progress.Printf("checking the configuration of %s with its own %s", p.Entrant.Name, strings.Join(v.Command, " "))
		vctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		code, out, err := r.Engine.RunOnce(vctx, engine.ContainerSpec{
			Name:        fmt.Sprintf("spatec-validate-%s-%d-%s", p.Entrant.Name, i, s.id[len(s.id)-8:]),
			Image:       s.images[c.Image].ref,
			ImageID:     s.images[c.Image].id,
			Entrypoint:  v.Command,
			Env:         containerEnv(c),
			Files:       c.Files,
			OpenDirs:    openDirs(c),
			Hosts:       map[string]string{p.Env.Infra.Broker.Name: "127.0.0.1", p.Env.Infra.ClickHouse.Name: "127.0.0.1"},
			Labels:      s.labels(LabelRun, s.id, LabelRole, "validate"),
			NetworkMode: "none",
		}, nil)
		cancel()
		if err != nil {
			return fmt.Errorf("checking the configuration of %s (%s): %w", p.Entrant.Name, strings.Join(v.Command, " "), err)
		}
		if code != 0 {
			lines := strings.Split(strings.TrimSpace(out), "\n")
			return refusef("%s: its configuration does not pass its own check, %s (exit code %d); it says:\n  %s",
				p.Entrant.Name, strings.Join(v.Command, " "), code, strings.Join(lines[max(0, len(lines)-20):], "\n  "))
		}
	}
	return nil
}

// own takes the host lock, when the runner asks for one, and removes what
// runs whose process is gone left behind: from here on, nothing else
// measures on this host.
func (s *Session) own(ctx context.Context) error {
	r := s.runner
	if r.LockPath == "" {
		return nil
	}
	lock, previous, err := hostlock.Acquire(r.LockPath, hostlock.Holder{Session: s.id, PID: os.Getpid(), Started: r.now().UTC(), Env: s.env.Name})
	var held *hostlock.HeldError
	if errors.As(err, &held) {
		return &Refusal{err.Error()}
	}
	if err != nil {
		return err
	}
	s.lock = lock
	if previous != nil {
		r.Progress.Printf("took over the host lock from %s: its process is gone", previous)
	}
	orphans, err := r.sweep(ctx)
	for _, o := range orphans {
		r.Progress.Printf("removed what run %s left %s ago (its spatec process is gone): %s", o.Run, r.now().Sub(o.Since).Round(time.Second), o)
	}
	if err == nil && r.Results != "" {
		var recovered []record.Record
		recovered, err = r.recoverPending(r.Results)
		for _, rec := range recovered {
			r.Progress.Printf("recorded run %s of %s (started %s) as failed: its spatec process died before recording it",
				rec.RunID, rec.SUT.Entrant, rec.Run.StartedAt.Format(time.RFC3339))
		}
	}
	if err != nil {
		s.lock.Release()
		s.lock = nil
	}
	return err
}

// Close removes the infrastructure containers and closes the clients.
func (s *Session) Close() {
	r := s.runner
	s.stopWatch()
	if s.broker != nil {
		s.broker.Close()
	}
	if s.store != nil {
		_ = s.store.Close()
	}
	if s.embedded != nil {
		s.embedded.Close()
	}
	for _, c := range s.infra {
		_ = c.group.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := r.Engine.RemoveByLabel(ctx, LabelRun, s.id); err != nil {
		r.logf("removing the infrastructure of session %s: %v", s.id, err)
	}
	if s.stopCgroups != nil {
		s.stopCgroups()
	}
	if err := s.lock.Release(); err != nil {
		r.logf("releasing the host lock: %v", err)
	}
}

// Host returns the engine's host facts.
func (s *Session) Host() engine.HostInfo { return s.host }

// Broker is the session's client of its broker.
func (s *Session) Broker() *broker.Client { return s.broker }

// RegistryURL is the base of the session's schema registry's Confluent
// API, as spatec reaches it.
func (s *Session) RegistryURL() (string, error) { return s.registryURL() }

// checkArch refuses an environment declared for another architecture than
// the engine's, before anything is built or started: its images are built
// for the environment's (C16), and would not run on this host, or would
// run emulated and be measured so.
func checkArch(env schema.Environment, host engine.HostInfo) error {
	want := env.Arch.Name()
	got := string(schema.ArchOf(host.Architecture))
	if got == want {
		return nil
	}
	reported := "no architecture"
	if host.Architecture != "" {
		reported = "architecture " + host.Architecture
	}
	return refusef("%s is an %s environment (its arch), and the engine reports %s: what spatec builds for it would not run on this host, or would run emulated and be measured so; run it on an %s host, or plan the arm for an environment of this host's architecture",
		env.Name, want, reported, want)
}
