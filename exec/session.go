package exec

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"spatec.dev/spatec/exec/broker"
	"spatec.dev/spatec/exec/cgroup"
	"spatec.dev/spatec/exec/chstore"
	"spatec.dev/spatec/exec/engine"
	"spatec.dev/spatec/exec/hostlock"
	"spatec.dev/spatec/exec/progress"
	"spatec.dev/spatec/exec/registry"
	"spatec.dev/spatec/results/record"
	"spatec.dev/spatec/schema"
	"spatec.dev/spatec/workloads"
	"spatec.dev/spatec/workloads/checksum"
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
	watching   context.Context
	stopWatch  context.CancelFunc
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

// Open reads the host facts and, unless bare is set, brings up the
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
	id, err := record.NewRunID()
	if err != nil {
		return nil, err
	}
	s := &Session{runner: r, env: env, id: id, infraCgroups: map[string]map[string]string{},
		images: map[string]image{}, hostAddrs: map[string]string{}, infraExits: make(chan exitEvent, 3),
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

// open reads the host facts, makes sure of every image (the
// infrastructure's and the plans' arms'), and brings the infrastructure up.
func (s *Session) open(ctx context.Context, bare bool, plans []*schema.Plan) error {
	r := s.runner
	var err error
	if st, ok := r.Cgroups.(Starter); ok {
		if err := st.Start(ctx); err != nil {
			return err
		}
		s.stopCgroups = st.Stop
	}
	if s.host, err = r.Engine.Info(ctx); err != nil {
		return fmt.Errorf("reading the engine's host facts: %w", err)
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

// checked is a started container whose caps read back as planned.
type checked struct {
	// raw holds the cap files as read back, for the record.
	raw map[string]string
	// group is where the sampler reads the container.
	group Group
	// node is the Kubernetes node its pod runs on; "" on Docker.
	node string
}

// verify reads a started container's caps back from its cgroup, and the
// image it runs from the engine, and refuses on any mismatch or engine
// warning (C6). It returns what it checked: the raw files read, for the
// record, and the group, for the sampler.
func (s *Session) verify(ctx context.Context, name string, created engine.Created, img image, want cgroup.Caps) (checked, error) {
	r := s.runner
	c, err := r.Engine.Inspect(ctx, created.ID)
	if err != nil {
		return checked{}, err
	}
	if !c.Running || c.Pid == 0 && c.Pod == nil {
		logs, _ := r.Engine.Logs(ctx, created.ID, 20)
		return checked{}, &Failure{fmt.Sprintf("container %s exited before its caps could be verified (exit code %d); its log ends:\n%s", name, c.ExitCode, logs)}
	}
	// The group is located once: the caps are read back from it and the
	// sampler reads the same group, so the two cannot disagree.
	group, found, err := r.Cgroups.Find(ctx, c, want)
	verified := false
	defer func() {
		if group != nil && !verified {
			_ = group.Close()
		}
	}()
	var rb cgroup.ReadBack
	if err == nil {
		rb, err = group.ReadBack()
	}
	var mismatches []cgroup.Mismatch
	if err == nil {
		mismatches = cgroup.Verify(want, rb)
	}
	if err != nil || len(mismatches) > 0 {
		// A process that exits while its caps are read has left its cgroup
		// (its /proc entry then names the root group): report the exit,
		// not the caps of a group that is not the container's.
		if f := s.exitedDuringVerify(ctx, name, created.ID); f != nil {
			return checked{}, f
		}
	}
	if err != nil {
		return checked{}, fmt.Errorf("reading the caps of %s back: %w", name, err)
	}
	var problems []string
	if !runsImage(c.ImageID, img.id) {
		problems = append(problems, fmt.Sprintf("container %s runs image %q, not %s, which the run made sure of as %s and records: the name was moved to other content (a rebuild, another process) after the run resolved it",
			name, c.ImageID, img.id, img.ref))
	}
	for _, w := range created.Warnings {
		problems = append(problems, fmt.Sprintf("container %s: the engine dropped a setting: %s", name, w))
	}
	for _, m := range mismatches {
		problems = append(problems, fmt.Sprintf("container %s: %s", name, m))
	}
	for _, f := range found {
		problems = append(problems, fmt.Sprintf("container %s: %s", name, f))
	}
	if len(problems) > 0 {
		return checked{}, refusef("C6: caps do not read back as planned:\n  %s", strings.Join(problems, "\n  "))
	}
	verified = true
	v := checked{raw: rb.Raw, group: group}
	if c.Pod != nil {
		v.node = c.Pod.Node
	}
	return v, nil
}

// runsImage tells whether the image a container runs, as its engine reports
// it (an ID, or repo@digest on Kubernetes), is the one with ID or digest want.
func runsImage(got, want string) bool {
	if got == "" || want == "" {
		return false
	}
	if i := strings.LastIndex(got, "@"); i >= 0 {
		got = got[i+1:]
	}
	return got == want
}

// exitedDuringVerify gives the engine a moment to report a container
// stopped, and describes its exit; nil when it is still running.
func (s *Session) exitedDuringVerify(ctx context.Context, name, id string) error {
	wctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	code, err := s.runner.Engine.Wait(wctx, id)
	if err != nil {
		return nil
	}
	return &Failure{exitOf(ctx, s.runner.Engine, name, id, code).ended("container "+name, "before its caps could be verified")}
}

// checkHost refuses a plan this host cannot hold: more CPUs than it has, or
// swap that the cgroups cannot disable (C5).
func (s *Session) checkHost(ctx context.Context, plan *schema.Plan) error {
	for _, n := range plan.ContainerNames() {
		if err := engine.CheckCPUs(plan.Entrant.Containers[n].CPUs, s.host.NCPU); err != nil {
			return &Refusal{err.Error()}
		}
	}
	if err := s.runner.Cgroups.CheckSwap(ctx, s.host.SwapLimit); err != nil {
		return &Refusal{err.Error()}
	}
	return nil
}

// prefill makes the topic hold the plan's dataset, producing it only when
// the topic is empty, and returns the broker's own message count: the N
// the drain's expectation is computed for (C13). An avro-confluent
// workload's schema is registered first, and its messages carry the id the
// registry gives it. messages, when positive, asks for the first that many
// messages of the dataset instead (a study's scale check): a topic holding
// another part of it is made again.
func (s *Session) prefill(ctx context.Context, plan *schema.Plan, messages int64) (int64, error) {
	r := s.runner
	wl := plan.Workload
	n := wl.Messages
	if messages > 0 {
		if messages > wl.Messages {
			return 0, refusef("a run of the first %d messages of %s, which holds %d", messages, wl.DatasetVersion, wl.Messages)
		}
		n = messages
		if err := s.resize(ctx, plan, messages); err != nil {
			return 0, err
		}
	}
	var schemaID uint32
	if wl.Avro != nil {
		url, err := s.registryURL()
		if err != nil {
			return 0, err
		}
		if schemaID, err = registry.Register(ctx, url, wl.Avro.Subject, wl.Avro.Schema); err != nil {
			return 0, err
		}
		r.logf("registered %s's schema under %s at %s: id %d", wl.Name, wl.Avro.Subject, url, schemaID)
	}
	ds, err := workloads.Open(wl, n, schemaID)
	if err != nil {
		return 0, refusef("%v", err)
	}
	if err := s.broker.EnsureTopic(ctx, wl.Topic, plan.Env.Partitions); err != nil {
		return 0, refusef("%v", err)
	}
	r.Progress.Start(progress.PhasePrefill, n, "msgs")
	_, err = s.broker.Prefill(ctx, wl.Topic, ds, func(done, _ int64) { r.Progress.Set(done) })
	if err != nil {
		r.Progress.Fail(err)
		if errors.Is(err, broker.ErrDepthMismatch) || errors.Is(err, broker.ErrContentMismatch) {
			return 0, &Refusal{err.Error()}
		}
		return 0, fmt.Errorf("prefilling %s: %w", wl.Topic, err)
	}
	r.Progress.End()
	depth, err := s.broker.Depth(ctx, wl.Topic)
	if err != nil {
		return 0, err
	}
	// Every run drains the whole topic: offsets an earlier run committed
	// would let this one start part-way.
	rctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	groups, err := s.broker.ResetGroups(rctx, wl.Topic, func(group string, members int) {
		r.Progress.Printf("waiting for consumer group %s to empty: %d members of a stopped arm stay until their session times out", group, members)
	})
	if err != nil {
		return 0, err
	}
	if len(groups) > 0 {
		r.logf("reset consumer groups %v so the arm reads %s from its start", groups, wl.Topic)
	}
	if depth != n {
		return 0, refusef("topic %s holds %d messages; the run expects %d (C13)", wl.Topic, depth, n)
	}
	return depth, nil
}

// expectation is what a correct arm lands from a dataset, and the
// dataset's size on the wire.
type expectation struct {
	checksum.Expected
	bytes uint64
}

// expect computes what a correct arm lands from the first messages
// messages of the plan's workload, once a session: before the arm starts,
// so that it costs the window nothing.
func (s *Session) expect(ctx context.Context, plan *schema.Plan, messages int64) (expectation, error) {
	wl := plan.Workload
	key := fmt.Sprintf("%s/%d", wl.DatasetVersion, messages)
	if e, ok := s.expected[key]; ok {
		return e, nil
	}
	r := s.runner
	r.Progress.Start(progress.PhaseExpect, 2*messages, "msgs")
	var e expectation
	var err error
	e.Expected, err = workloads.Expect(ctx, wl, messages, func(d int64) { r.Progress.Set(d) })
	if err == nil {
		e.bytes, err = workloads.MessageBytes(ctx, wl, messages, func(d int64) { r.Progress.Set(messages + d) })
	}
	if err != nil {
		r.Progress.Fail(err)
		return e, err
	}
	r.Progress.End()
	s.expected[key] = e
	return e, nil
}

// resize deletes the topic when it holds another number of messages than
// a scale check's run asks for, and waits until the broker has forgotten
// it, so that it is made again with exactly the first messages wanted.
func (s *Session) resize(ctx context.Context, plan *schema.Plan, messages int64) error {
	topic := plan.Workload.Topic
	depth, err := s.broker.Depth(ctx, topic)
	if errors.Is(err, broker.ErrNoTopic) || err == nil && (depth == 0 || depth == messages) {
		return nil
	}
	if err != nil {
		return err
	}
	s.runner.Progress.Printf("topic %s holds %d messages; this run drains the first %d of the dataset, so the topic is made again", topic, depth, messages)
	if err := s.broker.DeleteTopic(ctx, topic); err != nil {
		return err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := s.broker.Partitions(ctx, topic); errors.Is(err, broker.ErrNoTopic) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("topic %s was deleted to be made again with %d messages, but the broker still lists it after 30s", topic, messages)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// prepareTable creates the plan's table as its workload declares it (the
// environment's form of it), and empties it: every repetition starts from
// nothing.
//
// The first run of a session on a table drops and creates it, so it is
// exactly what the plan declares now; later repetitions truncate it, once
// its definition is read back unchanged. A table dropped or altered between
// repetitions (by hand, by another client) is made again from the DDL, and
// the run says so.
func (s *Session) prepareTable(ctx context.Context, plan *schema.Plan) (*chstore.Store, error) {
	table := plan.Table()
	made, ok := s.tables[table]
	if ok {
		now, err := s.store.Definition(ctx, table)
		if err != nil {
			return nil, fmt.Errorf("checking the table before the run: %w", err)
		}
		if now != made {
			what := "was altered"
			if now == "" {
				what = "was dropped"
			}
			s.runner.Progress.Printf("%s %s outside spatec since this session made it; making it again from the DDL of %s", table, what, plan.Workload.Name)
			ok = false
		}
	}
	if !ok {
		if err := s.store.DropTable(ctx, table); err != nil {
			return nil, fmt.Errorf("replacing the table: %w", err)
		}
		if err := s.store.Exec(ctx, plan.Workload.Table.DDL); err != nil {
			return nil, fmt.Errorf("creating %s from the DDL of %s: %w", table, plan.Workload.Name, err)
		}
		def, err := s.store.Definition(ctx, table)
		if err == nil && def == "" {
			err = fmt.Errorf("the DDL of %s ran but made no table %s: does it name another?", plan.Workload.Name, table)
		}
		if err != nil {
			return nil, &Refusal{fmt.Sprintf("C13: the sink table cannot be prepared, so nothing would measure a drain into it: %v", err)}
		}
		s.tables[table] = def
	}
	if err := s.store.Truncate(ctx, table); err != nil {
		return nil, err
	}
	if o := plan.Entrant.SinkObjects; o != nil {
		for _, q := range append(slices.Clone(o.Drop), o.Create...) {
			if err := s.store.Exec(ctx, q); err != nil {
				return nil, fmt.Errorf("making %s's own objects on the sink: %w", plan.Entrant.Name, err)
			}
		}
	}
	return s.store, nil
}

// dropSinkObjects drops what an arm made on the sink for its run; a
// failure is reported, and the next repetition drops them again first.
func (s *Session) dropSinkObjects(plan *schema.Plan) {
	o := plan.Entrant.SinkObjects
	if o == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, q := range o.Drop {
		if err := s.store.Exec(ctx, q); err != nil {
			s.runner.Progress.Printf("dropping %s's own objects on the sink: %v", plan.Entrant.Name, err)
			return
		}
	}
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
