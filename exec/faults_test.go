package exec

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"spatec.dev/spatec/exec/burn/burntest"
	"spatec.dev/spatec/exec/progress"
	"spatec.dev/spatec/runs/record"
	"spatec.dev/spatec/schema"
)

// TestDrainFaults runs the faults of a drain on one session, in the order a
// topic allows: each leaves a record saying what happened, and nothing
// running.
func TestDrainFaults(t *testing.T) {
	watch := newPhaseWatch()
	s, env, e := drainSession(t, watch, "")
	burntest.Image(t, e)
	results := t.TempDir()
	n := env.Workloads[jsonRows].Rows()

	// run runs a burn arm with args under plan's workload as adjusted by
	// adjust, on ctx, and checks that nothing of it is left.
	run := func(t *testing.T, ctx context.Context, adjust func(*schema.Plan), args ...string) (*Result, error) {
		t.Helper()
		plan := burnPlan(env, entrantName("burn"), 0.5, 64*mib, args...)
		if adjust != nil {
			adjust(plan)
		}
		cleanupLabel(t, e, LabelEntrant, plan.Entrant.Name)
		res, err := s.Run(ctx, plan, Options{Rep: 1, Reps: 1, Results: results})
		if res == nil {
			t.Fatalf("Run returned no result; error: %v", err)
		}
		assertNothingLeft(t, e, LabelRun, res.Record.RunID, LabelEntrant, plan.Entrant.Name)
		return res, err
	}
	failed := func(t *testing.T, res *Result, err error) *Failure {
		t.Helper()
		var f *Failure
		if !errors.As(err, &f) {
			t.Fatalf("Run returned %s; want a *Failure", describe(err))
		}
		if res.Record.Status != record.StatusFailed || !noteGives(res.Record.Note, f.Reason) {
			t.Errorf("record status %s, note %q; want failed with the reason %q", res.Record.Status, res.Record.Note, f.Reason)
		}
		t.Logf("failure: %s", f.Reason)
		return f
	}

	t.Run("arm crashes during the drain", func(t *testing.T) {
		ctx, _ := testContext(t, 60*time.Second)
		res, err := run(t, ctx, nil, "-hold", "1s", "-exit", "7")
		f := failed(t, res, err)
		for _, want := range []string{
			"container burn exited during the drain with code 7",
			"burn: exiting with code 7 as asked",
			fmt.Sprintf("0 distinct rows of %d landed", n),
		} {
			if !strings.Contains(f.Reason, want) {
				t.Errorf("failure %q does not contain %q", f.Reason, want)
			}
		}
		if got := res.Record.Metrics[record.DistinctRows]; got.Unit != "count" || got.Value != 0 {
			t.Errorf("distinct_rows = %+v; want a count of 0", got)
		}
		if got := res.Record.Metrics[record.ExpectedRows].Value; got != float64(n) {
			t.Errorf("expected_rows = %v; want %d", got, n)
		}
	})

	t.Run("interrupted during the drain", func(t *testing.T) {
		ctx, cancel := testContext(t, 60*time.Second)
		done := make(chan struct{})
		defer close(done)
		// Ctrl-C, as the CLI turns SIGINT and SIGTERM into a cancelled
		// context, once the window is open.
		afterPhase(watch, progress.PhaseDrain, time.Second, done, cancel)
		res, err := run(t, ctx, nil) // burn holds until stopped, inserting nothing
		f := failed(t, res, err)
		if !strings.Contains(f.Reason, "interrupted during the drain") {
			t.Errorf("failure %q does not say it was interrupted", f.Reason)
		}
		if !contains(res.Record.Flags, record.FlagInterrupted) {
			t.Errorf("flags %v; want %s", res.Record.Flags, record.FlagInterrupted)
		}
	})

	t.Run("drain timeout", func(t *testing.T) {
		ctx, _ := testContext(t, 60*time.Second)
		res, err := run(t, ctx, func(p *schema.Plan) { p.Workload.DrainTimeout = 3 })
		f := failed(t, res, err)
		for _, want := range []string{"C13", "timed out after 3s", fmt.Sprintf("0 distinct rows of %d landed (0 in all)", n)} {
			if !strings.Contains(f.Reason, want) {
				t.Errorf("failure %q does not contain %q", f.Reason, want)
			}
		}
		if w := res.Record.Metrics[record.WindowSeconds].Value; w < 3 {
			t.Errorf("window_s = %v; a drain that timed out at 3 s lasted at least that", w)
		}
	})

	t.Run("topic depth does not match", func(t *testing.T) {
		ctx, _ := testContext(t, 60*time.Second)
		wl := env.Workloads[jsonRows]
		more := wl.Messages + 1000
		res, err := run(t, ctx, func(p *schema.Plan) {
			p.Workload.Messages = more
		})
		var ref *Refusal
		if !errors.As(err, &ref) {
			t.Fatalf("Run returned %s; want a *Refusal", describe(err))
		}
		for _, want := range []string{wl.Topic, fmt.Sprintf("holds %d messages", wl.Messages), fmt.Sprintf("the plan expects %d", more)} {
			if !strings.Contains(ref.Reason, want) {
				t.Errorf("refusal %q does not contain %q", ref.Reason, want)
			}
		}
		if res.Record.Status != record.StatusRefused || !noteGives(res.Record.Note, "REFUSED: "+ref.Reason) {
			t.Errorf("record status %s, note %q; want refused with the reason", res.Record.Status, res.Record.Note)
		}
		if len(res.Record.Run.Cgroups) != 0 {
			t.Errorf("run.cgroups = %v; no container should have started", res.Record.Run.Cgroups)
		}
	})

	// Every outcome was recorded, and the log validates.
	recs := logLines(t, results)
	var statuses []string
	for _, r := range recs {
		statuses = append(statuses, string(r.Status))
	}
	if got, want := strings.Join(statuses, " "), "failed failed failed refused"; got != want {
		t.Errorf("recorded statuses %q; want %q", got, want)
	}
	if problems := record.Validate(results); len(problems) != 0 {
		t.Errorf("record.Validate: %v", problems)
	}
}

// TestClickHouseLostMidDrain: spatec's connection to ClickHouse goes through
// a proxy that is closed inside the window, as if the server were lost. The
// run fails at once rather than at its timeout, and says so.
func TestClickHouseLostMidDrain(t *testing.T) {
	requireClickHouse(t)
	proxy := startProxy(t, clickhouseAddr())
	watch := newPhaseWatch()
	s, env, e := drainSession(t, watch, proxy.addr())
	burntest.Image(t, e)
	results := t.TempDir()

	ctx, _ := testContext(t, 60*time.Second)
	done := make(chan struct{})
	defer close(done)
	afterPhase(watch, progress.PhaseDrain, 500*time.Millisecond, done, proxy.close)

	plan := burnPlan(env, entrantName("burn"), 0.5, 64*mib)
	cleanupLabel(t, e, LabelEntrant, plan.Entrant.Name)
	res, err := s.Run(ctx, plan, Options{Rep: 1, Reps: 1, Results: results})
	if res == nil {
		t.Fatalf("Run returned no result; error: %v", err)
	}
	assertNothingLeft(t, e, LabelRun, res.Record.RunID, LabelEntrant, plan.Entrant.Name)
	var f *Failure
	if !errors.As(err, &f) {
		t.Fatalf("Run returned %s; want a *Failure", describe(err))
	}
	t.Logf("failure: %s", f.Reason)
	if !strings.Contains(f.Reason, "watching ClickHouse during the drain") || strings.Contains(f.Reason, "timed out") {
		t.Errorf("failure %q; want the lost server named, not a timeout", f.Reason)
	}
	if !strings.Contains(f.Reason, fmt.Sprintf("of %d landed", env.Workloads[jsonRows].Messages)) {
		t.Errorf("failure %q does not give the counts", f.Reason)
	}
	recs := logLines(t, results)
	if len(recs) != 1 || recs[0].Status != record.StatusFailed || !noteGives(recs[0].Note, f.Reason) {
		t.Errorf("recorded %+v; want one failed record with the reason", recs)
	}
	if problems := record.Validate(results); len(problems) != 0 {
		t.Errorf("record.Validate: %v", problems)
	}
}

// proxy forwards TCP connections to a target until closed, when it drops
// every connection and refuses new ones.
type proxy struct {
	l      net.Listener
	mu     sync.Mutex
	conns  []net.Conn
	closed bool
}

func startProxy(t *testing.T, target string) *proxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{l: l}
	t.Cleanup(p.close)
	go func() {
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", target)
			if err != nil {
				in.Close()
				continue
			}
			if !p.track(in, out) {
				return
			}
			go func() { _, _ = io.Copy(out, in); out.Close() }()
			go func() { _, _ = io.Copy(in, out); in.Close() }()
		}
	}()
	return p
}

func (p *proxy) addr() string { return p.l.Addr().String() }

// track registers a forwarded pair; false (and both closed) when the proxy
// is closed.
func (p *proxy) track(c ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		for _, x := range c {
			x.Close()
		}
		return false
	}
	p.conns = append(p.conns, c...)
	return true
}

// close stops accepting and drops every forwarded connection.
func (p *proxy) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.closed = true
	p.l.Close()
	for _, c := range p.conns {
		c.Close()
	}
}

// TestSessionCloseRemovesEverything: on a bridge environment the session
// creates a network of its own; a run interrupted inside its window (the
// CLI turns SIGINT and SIGTERM into a cancelled context) removes its
// containers, and closing the session removes the network: nothing labelled
// with the session or the run is left.
func TestSessionCloseRemovesEverything(t *testing.T) {
	e := newEngine(t)
	requireClickHouse(t)
	burntest.Image(t, e)
	env := testEnv(freeAddr(t), clickhouseAddr(), testDatabase(t))
	env.Network = "bridge"
	watch := newPhaseWatch()
	ctx, cancel := testContext(t, 60*time.Second)
	s, err := newRunner(t, e, watch).Open(ctx, env, false)
	if err != nil {
		t.Fatalf("opening the session: %v", err)
	}
	cleanupLabel(t, e, LabelRun, s.id)
	closed := false
	defer func() {
		if !closed {
			s.Close()
		}
	}()

	left, err := e.ListByLabel(ctx, LabelRun, s.id)
	if err != nil {
		t.Fatal(err)
	}
	if len(left.Networks) != 1 || left.Networks[0] != s.network {
		t.Fatalf("the session's label holds networks %v; want its network %s", left.Networks, s.network)
	}

	done := make(chan struct{})
	defer close(done)
	afterPhase(watch, progress.PhaseDrain, time.Second, done, cancel)
	plan := burnPlan(env, entrantName("burn"), 0.5, 64*mib)
	cleanupLabel(t, e, LabelEntrant, plan.Entrant.Name)
	res, err := s.Run(ctx, plan, Options{})
	var f *Failure
	if !errors.As(err, &f) || !contains(res.Record.Flags, record.FlagInterrupted) {
		t.Fatalf("Run returned %s with flags %v; want an interrupted *Failure", describe(err), res.Record.Flags)
	}
	assertNothingLeft(t, e, LabelRun, res.Record.RunID, LabelEntrant, plan.Entrant.Name)

	s.Close()
	closed = true
	assertNothingLeft(t, e, LabelRun, s.id)
}

// noteGives reports whether a record's note is the reason a run failed or
// was refused, followed by nothing or by the caveats of the run (a host busy
// outside it): what the host did beside a run is not the test's to fix.
func noteGives(note, reason string) bool {
	return note == reason || strings.HasPrefix(note, reason+"; the host was busy outside the run: ")
}
