package exec

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"spatec.dev/spatec/exec/chstore"
	"spatec.dev/spatec/exec/progress"
	"spatec.dev/spatec/exec/sample"
	"spatec.dev/spatec/runs/record"
	"spatec.dev/spatec/schema"
)

// Options says how to run one arm once.
type Options struct {
	// Hold, when positive, runs the arm without a drain: the topic filled
	// and the table made as for a drain, then start, verify, and sample
	// until it passes or the arm exits. Nothing is recorded; it checks
	// caps and measurement, not throughput.
	Hold time.Duration
	// Rep and Reps number this repetition (1-based).
	Rep, Reps int
	// Results is the results root records are appended under; "" records
	// nothing.
	Results string
	// Ceilings is the ceilings file the run is gated against (C12).
	Ceilings string
	// Evidence is record.EvidenceMeasured for a plan reviewed before it
	// ran, else record.EvidenceExploratory.
	Evidence string
	// Messages, when positive, drains the first that many messages of the
	// plan's dataset instead of all of it: a study's scale check. The
	// corpus's message i is a pure function of i, so they are a valid
	// dataset of that size; the record says how many.
	Messages int64
	// Scenario, when not empty, names the environment's failure scenario
	// the run goes through: its fault injected mid-drain, the run goes on
	// through it, and the record says how the arm came through.
	Scenario string
}

// Result is what a run produced: its record (also appended when Results is
// set) and, for a hold run, the sampler summary.
type Result struct {
	Record  record.Record
	Summary sample.Summary
}

// Run executes one arm of plan on the session's infrastructure. A run that is
// refused or fails still returns its Result, whose record says what happened;
// the error is a *Refusal or a *Failure. An infra_bound run is a measured
// outcome, not an error: its record says so, and Run returns no error.
func (s *Session) Run(ctx context.Context, plan *schema.Plan, opts Options) (*Result, error) {
	r := s.runner
	res := &Result{}
	run, err := s.newRun(plan, opts)
	if err != nil {
		return nil, err
	}
	res.Record = run.rec
	recording := opts.Results != "" && opts.Hold <= 0
	if recording {
		// Written ahead: should this process die before the end, the next
		// run under this root records this one as failed (C14).
		ahead := run.rec
		ahead.Status = record.StatusFailed
		ahead.Note = killedNote
		ahead.Flags = append(slices.Clone(ahead.Flags), record.FlagInterrupted)
		if err := record.WritePending(opts.Results, record.Pending{Process: s.process, Record: ahead}); err != nil {
			return res, &Refusal{fmt.Sprintf("C14: the run could not be written ahead, so it could not be recorded either: %v", err)}
		}
	}
	defer func() {
		// Teardown runs whatever happened, on a context of its own: a run
		// interrupted by Ctrl-C must still remove what it started.
		r.Progress.Start(progress.PhaseTeardown, 0, "")
		tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 60*time.Second)
		defer cancel()
		if err := r.Engine.RemoveByLabel(tctx, LabelRun, run.id); err != nil {
			r.logf("teardown of run %s: %v", run.id, err)
			r.Progress.Fail(err)
		} else {
			r.Progress.End()
		}
	}()

	err = s.execute(ctx, run, opts)
	if err != nil && ctx.Err() != nil && !slices.Contains(run.rec.Flags, record.FlagInterrupted) {
		// Interrupted before the window (while images were made, the
		// topic filled or the arm started): the step's error is the
		// cancellation's echo, and the run is not a refusal.
		run.rec.Flags = append(run.rec.Flags, record.FlagInterrupted)
		err = &Failure{fmt.Sprintf("interrupted before the window opened (%v): %v", context.Cause(ctx), err)}
	}
	res.Summary = run.summary
	run.finish(err, r.now())
	res.Record = run.rec
	if ib := (*infraBound)(nil); errors.As(err, &ib) {
		err = nil
	}
	if recording {
		path := record.PathFor(opts.Results, plan.Env.Name, plan.Entrant.Name, run.rec.Run.StartedAt)
		if s := run.series(); s != nil {
			// The series first, so that the record never names a file
			// that is not there; a series that cannot be written costs
			// the charts, not the record.
			if ref, err := record.WriteSeries(path, s); err != nil {
				r.logf("%v; the run is recorded without its series", err)
			} else {
				res.Record.Series = &ref
			}
		}
		aerr := record.Append(path, &res.Record)
		// Recorded, or handed to the caller whole: either way the pending
		// record must not be recorded again as a killed run.
		if perr := record.RemovePending(opts.Results, run.id); perr != nil {
			r.logf("%v", perr)
		}
		if aerr != nil {
			return res, errors.Join(err, &Unrecorded{Path: path, Err: aerr})
		}
		r.logf("recorded %s run %s in %s", run.rec.Status, run.id, path)
	}
	return res, err
}

// execute is the flow of one run, in order. Each step returns a *Refusal
// (before the window opens) or a *Failure (after), so the record's status
// follows from the error alone.
func (s *Session) execute(ctx context.Context, run *armRun, opts Options) error {
	r := s.runner
	plan := run.plan

	// A failure scenario is known, and the arm declares what it is held
	// to, before anything starts.
	if opts.Scenario != "" && opts.Hold <= 0 {
		f, err := run.newFault(ctx, opts.Scenario)
		run.fault = f
		if err != nil {
			return err
		}
	}

	// Before anything starts: the host can hold the plan (C5, CPUs).
	if err := s.checkHost(ctx, plan); err != nil {
		return err
	}

	// What the plan was reviewed with is what the tree builds (C16).
	if err := s.checkSources(plan, opts.Evidence); err != nil {
		return err
	}

	// Images, and the version each entrant pins (C16).
	if err := run.prepareImages(ctx); err != nil {
		return err
	}

	var store *chstore.Store
	var want uint64
	// A hold run on a session with infrastructure gets the same topic and
	// table as a drain, so a consumer has something to read and somewhere
	// to write.
	if opts.Hold <= 0 || s.broker != nil {
		// The dataset, and N fixed from the broker before the arm starts
		// (C13): the rows its messages yield, in closed form.
		n, err := s.prefill(ctx, plan, opts.Messages)
		if err != nil {
			return err
		}
		if run.expected, err = s.expect(ctx, plan, n); err != nil {
			return err
		}
		want = run.expected.Rows
		wl := plan.Workload
		run.rec.Run.Dataset = record.Dataset{Workload: wl.Name, Version: wl.DatasetVersion, Messages: n,
			ExpectedRows: int64(want), Bytes: int64(run.expected.bytes)}
		if store, err = s.prepareTable(ctx, plan); err != nil {
			return err
		}
		defer s.dropSinkObjects(plan)
	}

	// The arm: control planes first, every cap read back (C6).
	if err := run.start(ctx); err != nil {
		return err
	}
	if run.fault != nil {
		if err := run.fault.aim(run); err != nil {
			return err
		}
	}

	// The window: sample from outside while the arm drains (or holds).
	if opts.Hold > 0 {
		return run.hold(ctx, opts.Hold)
	}
	drain, err := run.drain(ctx, store, want)
	if err != nil {
		return err
	}

	// Gates: completeness (C13), the checksum and the duplicates, then
	// the ceilings (C12).
	r.Progress.Start(progress.PhaseGates, 0, "")
	defer r.Progress.End()
	if err := run.correct(ctx, store, drain); err != nil {
		run.metrics(drain)
		return err
	}
	return run.gate(drain, opts.Ceilings)
}
