package exec

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"spatec.dev/spatec/exec/broker"
	"spatec.dev/spatec/exec/chstore"
	"spatec.dev/spatec/exec/engine"
	"spatec.dev/spatec/exec/registry"
	"spatec.dev/spatec/schema"
)

// This file is the session's infrastructure: the broker, ClickHouse and a
// schema registry of its own, where the environment has one, brought up as
// the environment declares them, waited for, reached at their address, and
// watched while the arms run.

// up starts the infrastructure as the environment declares it.
func (s *Session) up(ctx context.Context) error {
	r := s.runner
	if s.env.Network == "bridge" {
		s.network = "spatec-" + s.id[len(s.id)-12:]
		if _, err := r.Engine.CreateNetwork(ctx, s.network, s.labels(LabelRun, s.id)); err != nil {
			return err
		}
	}
	versions, err := s.infraVersions(ctx)
	if err != nil {
		return err
	}
	for _, ks := range s.env.Infra.Keyed() {
		key, svc := ks.Key, ks.Service
		switch svc.Run {
		case "container":
			if err := s.startInfra(ctx, key, svc, versions[key]); err != nil {
				return err
			}
		case "embedded":
			if key != schema.ServiceBroker {
				return fmt.Errorf("%s cannot run embedded; only the broker can", key)
			}
			port, err := portOf(svc.HostAddr)
			if err != nil {
				return err
			}
			if s.embedded, err = broker.StartEmbedded(ctx, s.env.Partitions, broker.WithPorts(port)); err != nil {
				return err
			}
			s.hostAddrs[key] = svc.HostAddr
		case "external":
			s.hostAddrs[key] = svc.HostAddr
		}
		r.Progress.Add(1)
	}
	if s.broker, err = broker.NewClient([]string{s.hostAddrs[schema.ServiceBroker]}); err != nil {
		return fmt.Errorf("connecting to the broker at %s: %w", s.hostAddrs[schema.ServiceBroker], err)
	}
	if err := s.ready(ctx, schema.ServiceBroker, s.broker.Ping); err != nil {
		return err
	}
	err = s.ready(ctx, schema.ServiceClickHouse, func(ctx context.Context) error {
		ch := s.env.Infra.ClickHouse
		s.store, err = chstore.Open(ctx, s.hostAddrs[schema.ServiceClickHouse], s.env.Endpoints.Database, ch.User, ch.Password)
		return err
	})
	if err != nil || s.env.Infra.Registry == nil {
		return err
	}
	url, err := s.registryURL()
	if err != nil {
		return err
	}
	return s.ready(ctx, schema.ServiceRegistry, func(ctx context.Context) error { return registry.Ping(ctx, url) })
}

// registryURL is the base of the schema registry's Confluent API as
// spatec reaches it: the registry service's, or the broker's built-in one
// at its published port (or at its own address on the run's network).
func (s *Session) registryURL() (string, error) {
	if reg := s.env.Infra.Registry; reg != nil {
		addr, ok := s.hostAddrs[schema.ServiceRegistry]
		if !ok {
			return "", fmt.Errorf("the schema registry %s has no address spatec reaches", reg.Name)
		}
		return "http://" + addr + reg.Path, nil
	}
	b := s.env.Infra.Broker
	if b.SchemaRegistry == nil {
		return "", fmt.Errorf("%s declares no schema registry: neither infra.registry nor a broker with schemaRegistry", s.env.Name)
	}
	host, _, err := net.SplitHostPort(s.hostAddrs[schema.ServiceBroker])
	if err != nil {
		return "", fmt.Errorf("the broker's address %q: %w", s.hostAddrs[schema.ServiceBroker], err)
	}
	port := b.SchemaRegistry.Port
	if b.HostAddr != "" {
		port = b.SchemaRegistry.HostPort
	}
	return "http://" + net.JoinHostPort(host, strconv.Itoa(port)), nil
}

// defaultInfraTimeout is how long a service started in a container has to
// answer: Redpanda and ClickHouse take seconds after their process starts.
const defaultInfraTimeout = 2 * time.Minute

// ready calls probe until the service answers. A service spatec started in
// a container is given the runner's InfraTimeout, and one that exits
// meanwhile is reported with its log; an embedded or external service must
// answer at once.
func (s *Session) ready(ctx context.Context, key string, probe func(context.Context) error) error {
	r := s.runner
	timeout := r.InfraTimeout
	if timeout <= 0 {
		timeout = defaultInfraTimeout
	}
	if h := s.service(key).Health; h != nil && r.InfraTimeout <= 0 {
		timeout = time.Duration(h.WithinMS) * time.Millisecond
	}
	deadline := time.Now().Add(timeout)
	c := s.infraOf(key)
	for tries := 0; ; tries++ {
		err := s.healthy(ctx, key, c)
		if err == nil {
			pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			err = probe(pctx)
			cancel()
			if err == nil {
				return nil
			}
		}
		if c != nil && tries == 0 {
			r.Progress.Printf("waiting up to %s for the %s (container %s) to answer at %s", timeout, key, c.name, s.hostAddrs[key])
		}
		switch {
		case ctx.Err() != nil:
			return fmt.Errorf("waiting for the %s at %s: %w", key, s.hostAddrs[key], context.Cause(ctx))
		case c == nil:
			return err
		case time.Now().After(deadline):
			return fmt.Errorf("the %s (container %s) did not answer at %s within %s: %w; its log and `docker logs %s` say why",
				key, c.name, s.hostAddrs[key], timeout, err, c.name)
		}
		if info, ierr := r.Engine.Inspect(ctx, c.id); ierr == nil && !info.Running {
			logs, _ := r.Engine.Logs(ctx, c.id, 20)
			return &Failure{fmt.Sprintf("the %s container %s exited with code %d before it answered at %s; its log ends:\n%s",
				key, c.name, info.ExitCode, s.hostAddrs[key], logs)}
		}
		select {
		case <-ctx.Done():
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// healthy reports whether a service's own health check, when it declares
// one, has passed: before it has, a port may be open on a server that is
// still starting.
func (s *Session) healthy(ctx context.Context, key string, c *infraContainer) error {
	svc := s.service(key)
	if c == nil || svc.Health == nil {
		return nil
	}
	info, err := s.runner.Engine.Inspect(ctx, c.id)
	if err != nil {
		return err
	}
	if info.Health == "healthy" {
		return nil
	}
	why := "it has not passed yet"
	if info.HealthOutput != "" {
		why = "it last said: " + info.HealthOutput
	}
	return fmt.Errorf("its health check `%s` is %q; %s", strings.Join(svc.Health.Command, " "), info.Health, why)
}

// service is the environment's declaration of a service.
func (s *Session) service(key string) schema.Service {
	svc, _ := s.env.Infra.Service(key)
	return svc
}

// infraOf is the container a service runs in, or nil when spatec did not
// start it in one.
func (s *Session) infraOf(key string) *infraContainer {
	for i := range s.infra {
		if s.infra[i].service == key {
			return &s.infra[i]
		}
	}
	return nil
}

// infraVersions reads the version inside each infrastructure container's
// image (C16), by service key, all at once: each is a short-lived
// container of its own, and a JVM's answer takes seconds.
func (s *Session) infraVersions(ctx context.Context) (map[string]string, error) {
	var (
		g        errgroup.Group
		mu       sync.Mutex
		versions = map[string]string{}
	)
	for _, ks := range s.env.Infra.Keyed() {
		key, svc := ks.Key, ks.Service
		if svc.Run != "container" || svc.Version == nil {
			continue
		}
		// The images are the session's, made sure of by prepare: found
		// here, one after another, before anything reads them at once.
		img, err := s.ensureImage(ctx, svc.Image.Ref, svc.Image.Digest, svc.Build)
		if err != nil {
			return nil, err
		}
		g.Go(func() error {
			v, err := s.readVersion(ctx, svc.Name, img, s.id, svc.Version.Command, svc.Version.Match)
			if err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			versions[key] = v
			return nil
		})
	}
	return versions, g.Wait()
}

// startInfra starts one infrastructure container under its caps and
// verifies them: C6 applies to the infrastructure too. version is what
// its image said it runs (infraVersions).
func (s *Session) startInfra(ctx context.Context, key string, svc schema.Service, version string) error {
	r := s.runner
	img, err := s.ensureImage(ctx, svc.Image.Ref, svc.Image.Digest, svc.Build)
	if err != nil {
		return err
	}
	spec := engine.ContainerSpec{
		Name:       svc.Name,
		Image:      img.ref,
		ImageID:    img.id,
		Args:       svc.Args,
		Env:        svc.Environment,
		Files:      svc.Files,
		NoFile:     svc.NoFile,
		Labels:     s.labels(LabelRun, s.id, LabelRole, "infra/"+key),
		NanoCPUs:   schema.NanoCPUs(svc.CPUs),
		CpusetCpus: svc.Cpuset,
		Memory:     svc.Memory,
		MemorySwap: svc.MemorySwap,
		NetworkMode: func() string {
			if s.network != "" {
				return s.network
			}
			return "host"
		}(),
	}
	if s.network != "" {
		spec.Publish = svc.Publish
	}
	if h := svc.Health; h != nil {
		spec.Health = &engine.HealthCheck{
			Command:  h.Command,
			Interval: time.Duration(h.IntervalMS) * time.Millisecond,
			Timeout:  time.Duration(h.TimeoutMS) * time.Millisecond,
		}
	}
	created, err := r.Engine.Create(ctx, spec)
	if err != nil {
		var missing *engine.ImageMissingError
		if errors.As(err, &missing) {
			return refusef("%s: %v", s.env.Name, err)
		}
		return err
	}
	if err := r.Engine.Start(ctx, created.ID); err != nil {
		return fmt.Errorf("starting %s: %w", svc.Name, err)
	}
	v, err := s.verify(ctx, svc.Name, created, img, plannedCaps(s.env, spec))
	if err != nil {
		return err
	}
	s.infraCgroups[svc.Name] = v.raw
	s.infra = append(s.infra, infraContainer{service: key, name: svc.Name, id: created.ID, image: img, group: v.group, version: version, node: v.node})
	go s.watchInfra(key+" container "+svc.Name, created.ID)
	return s.reach(ctx, key, svc, created.ID)
}

// restartGrace is how long a stopped infrastructure container is watched
// for running again, to tell a restart from an exit.
const restartGrace = 3 * time.Second

// watchInfra reports an infrastructure container that stops while the
// session is open: every run on it from then on measures nothing.
func (s *Session) watchInfra(name, id string) {
	e := s.runner.Engine
	code, err := e.Wait(s.watching, id)
	for err == nil && s.watching.Err() == nil && s.exitExpected(id) {
		// A failure scenario's own fault: watch it again once it runs.
		if !awaitRunning(s.watching, e, id) {
			return
		}
		code, err = e.Wait(s.watching, id)
	}
	if err != nil || s.watching.Err() != nil {
		return
	}
	ev := exitOf(context.Background(), e, name, id, code)
	// A restarted container runs again within moments: that, not an
	// exit, is what the run's note must say.
	for deadline := time.Now().Add(restartGrace); time.Now().Before(deadline) && !ev.restarted; time.Sleep(200 * time.Millisecond) {
		if c, err := e.Inspect(s.watching, id); err == nil && c.Running {
			ev.restarted = true
		}
	}
	select {
	case s.infraExits <- ev:
	default:
	}
}

// reach settles the address spatec uses for a service in a container: the
// declared hostAddr, or else the container's own address on the run's
// network, at the port of the address the arms use. The host routes to the
// networks the run created, so no published port (and no port proxy, which
// would set a ceiling of its own) stands between spatec and the service.
func (s *Session) reach(ctx context.Context, key string, svc schema.Service, id string) error {
	if svc.HostAddr != "" {
		s.hostAddrs[key] = svc.HostAddr
		return nil
	}
	port, err := portOf(svc.Addr)
	if err != nil {
		return fmt.Errorf("%s: %w", svc.Name, err)
	}
	c, err := s.runner.Engine.Inspect(ctx, id)
	if err != nil {
		return err
	}
	ip := c.Addresses[s.network]
	if s.network == "" || ip == "" {
		return fmt.Errorf("%s declares no hostAddr and has no address on the run's network (network %q, addresses %v); declare hostAddr or run the environment on a bridge network", svc.Name, s.network, c.Addresses)
	}
	s.hostAddrs[key] = net.JoinHostPort(ip, strconv.Itoa(port))
	return nil
}

// watchBroker asks the broker for its metadata once a second until ctx
// ends, each time with a deadline, and ends the drain through stop when it
// has answered nothing for the stall limit: a frozen broker starves every
// arm, and the window would measure the freeze.
func (s *Session) watchBroker(ctx context.Context, stall time.Duration, stop context.CancelCauseFunc) {
	if stall <= 0 {
		return
	}
	deadline := min(max(stall/3, time.Second), 5*time.Second)
	answered := time.Now()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		pctx, cancel := context.WithTimeout(ctx, deadline)
		err := s.broker.Ping(pctx)
		cancel()
		switch {
		case ctx.Err() != nil:
			return
		case err == nil:
			answered = time.Now()
		case time.Since(answered) > stall:
			stop(&Failure{fmt.Sprintf("the drain stalled: the broker at %s answered nothing for %v (stall limit %v; each request may take %v): %v",
				s.hostAddrs[schema.ServiceBroker], time.Since(answered).Round(100*time.Millisecond), stall, deadline, err)})
			return
		}
	}
}

func portOf(addr string) (int, error) {
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		return 0, fmt.Errorf("address %q: %w", addr, err)
	}
	return strconv.Atoi(p)
}
