package chstore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"
)

var (
	// ErrDrainTimeout reports a drain that did not reach the expected
	// distinct count before its timeout: the run is failed.
	ErrDrainTimeout = errors.New("drain incomplete at timeout")
	// ErrTooManyRows reports more distinct ids than the topic holds: the
	// table was not emptied, or another writer adds rows.
	ErrTooManyRows = errors.New("more distinct ids than expected")
	// ErrStalled reports a drain that made no progress for longer than its
	// stall limit: ClickHouse answered no query, or no new row landed.
	ErrStalled = errors.New("the drain stalled")
)

// DefaultPoll is the polling period of WaitDrained: 10 Hz.
const DefaultPoll = 100 * time.Millisecond

// MaxPoll is the longest polling period WaitDrained accepts: the drain's
// end is known to within one period, and the contract asks for 5 Hz.
const MaxPoll = 200 * time.Millisecond

// maxPollFailures is how many polls in a row may fail before WaitDrained
// gives up: one slow or refused query under load is not a lost server.
const maxPollFailures = 3

// Drain is what WaitDrained observed.
type Drain struct {
	Want       uint64 // the expected distinct count N
	Count      uint64 // rows in the table at the last poll
	Distinct   uint64 // distinct ids at the last poll that measured them
	Duplicates uint64 // Count − Distinct, when Distinct was measured with Count
	// Counted and DistinctCounted tell whether Count and Distinct were
	// measured at all: a figure ClickHouse never gave is unknown, not 0.
	Counted, DistinctCounted bool
	// Elapsed runs from the call to the poll that saw Distinct reach Want
	// (or to the end of waiting).
	Elapsed time.Duration
	// FirstRow is when the first row was seen, from the call; zero if none
	// was.
	FirstRow time.Duration
	Polls    int
}

// DrainOptions say how WaitDrained watches a drain.
type DrainOptions struct {
	// Poll is the polling period, at most MaxPoll; 0 means DefaultPoll.
	Poll time.Duration
	// Timeout bounds the whole drain (C13); it must be positive.
	Timeout time.Duration
	// Identity is the SQL expression of a row's identity, whose distinct
	// values are the rows landed ("id" when empty).
	Identity string
	// Since, when set, is when the drain began (the arm's start, or the
	// instant the caller opened its window), if not after the call:
	// Elapsed and FirstRow count from it.
	Since time.Time
	// Stall, when positive, ends the drain as stalled when ClickHouse has
	// answered no query for that long, when rows have landed and no new
	// one has for that long, or, before the first row, when Activity has
	// not grown for that long since the drain began.
	Stall time.Duration
	// Activity, when not nil, reads a counter of the arm's own work that
	// grows while it runs (its data plane's CPU time). An arm frozen before
	// its first insert lands nothing, so rows alone cannot tell it from one
	// still starting; a counter that stops does. Read once a poll.
	Activity func() (uint64, error)
	// Outage, when not nil and true, says a refused poll is expected (a
	// failure scenario has broken the server on purpose): it then counts
	// toward the stall limit only, instead of ending the drain after
	// three in a row.
	Outage func() bool
	// Progress, when not nil, is called after every poll with the count,
	// the last measured distinct count (0 until count first reaches n)
	// and when the poll was answered, on Elapsed's clock: the poll that
	// ends the drain is reported at Elapsed exactly.
	Progress func(count, distinct uint64, at time.Duration)
}

// queryTimeout bounds one poll: a frozen server must not hold the watch.
func (o DrainOptions) queryTimeout() time.Duration {
	if o.Stall <= 0 {
		return 5 * time.Second
	}
	return min(max(o.Stall/3, time.Second), 5*time.Second)
}

// distinctTimeout bounds the distinct count: the stall limit (30 s
// without one), so that only a server silent for the limit is a stall.
func (o DrainOptions) distinctTimeout() time.Duration {
	if o.Stall <= 0 {
		return 30 * time.Second
	}
	return o.Stall
}

// WaitDrained polls table until its distinct ids reach n, the expected
// count fixed from the broker before the arm started.
//
// Each period (poll ≤ MaxPoll; 0 means DefaultPoll) it reads count(),
// which MergeTree answers from part metadata; only once count reaches n
// does it also compute the distinct identities (uniqExact of o.Identity). Distinct ids cannot outnumber rows, so
// this sees the end at the same poll as computing both every time would,
// without a full scan of the table competing with the arm for the server
// five times a second.
//
// Every query has a deadline. A server that refuses three polls in a row
// is lost, and the drain ends at once; one that answers nothing for the
// stall limit, or a table that stops growing for it, ends the drain as
// stalled (ErrStalled), with the counts of the moment.
//
// When the timeout passes first, the returned error wraps ErrDrainTimeout and
// Drain holds both counts, measured once more after the deadline so the
// failed record has exact figures. A cancelled ctx (an interrupted run)
// likewise returns both counts with ctx's error. Rows that land after the
// end (duplicates from the arm's last batches) are not in Drain: call
// Counts once the arm has stopped for the final duplicate count.
func (s *Store) WaitDrained(ctx context.Context, table string, n uint64, o DrainOptions) (Drain, error) {
	if err := checkTable(table); err != nil {
		return Drain{}, err
	}
	poll, timeout := o.Poll, o.Timeout
	if poll == 0 {
		poll = DefaultPoll
	}
	if poll < 0 || poll > MaxPoll {
		return Drain{}, fmt.Errorf("waiting for %s to drain: poll period %v is outside (0, %v]; the drain end must be known at 5 Hz or better", table, poll, MaxPoll)
	}
	if timeout <= 0 {
		return Drain{}, fmt.Errorf("waiting for %s to drain: timeout %v must be positive", table, timeout)
	}
	start := time.Now()
	if !o.Since.IsZero() && !o.Since.After(start) {
		start = o.Since
	}
	waitCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ticker := time.NewTicker(poll)
	defer ticker.Stop()

	d := Drain{Want: n}
	failures := 0
	answered, grew := start, start // the last poll answered, the last that saw new rows
	// The arm's work when it was last seen to grow: a started container's
	// counter begins at 0, so the first reading above it is growth.
	var work uint64
	worked := start
	for {
		before := d.Count
		counted, err := s.pollOnce(waitCtx, table, o, &d)
		now := time.Now()
		d.Elapsed = now.Sub(start)
		if counted {
			answered = now
		}
		if o.Activity != nil {
			if w, err := o.Activity(); err == nil && w > work {
				work, worked = w, now
			}
		}
		if err == nil {
			failures = 0
			if d.Count > before {
				grew = now
			}
			if d.FirstRow == 0 && d.Count > 0 {
				d.FirstRow = d.Elapsed
			}
			if o.Progress != nil {
				o.Progress(d.Count, d.Distinct, d.Elapsed)
			}
			switch {
			case d.Distinct > n:
				return d, fmt.Errorf("%w: %s holds %d distinct ids, more than the %d the topic holds; was it truncated before the run, or does another writer insert into it?",
					ErrTooManyRows, table, d.Distinct, n)
			case d.Distinct == n && d.Count >= n:
				return d, nil
			}
		} else if failures++; waitCtx.Err() == nil && failures >= maxPollFailures && !noAnswer(err) && (o.Outage == nil || !o.Outage()) {
			// The server refuses (lost mid-run): the run fails now
			// rather than at the timeout.
			return d, fmt.Errorf("waiting for %s to drain (after %v, %s): %w", table, d.Elapsed.Round(time.Millisecond), d.sofar(), err)
		}
		if o.Stall > 0 && waitCtx.Err() == nil {
			switch {
			case now.Sub(answered) > o.Stall:
				return d, fmt.Errorf("%w: ClickHouse at %s answered no query for %v (stall limit %v; each query may take %v); %d rows had landed when it last answered",
					ErrStalled, s.addr, now.Sub(answered).Round(100*time.Millisecond), o.Stall, o.queryTimeout(), d.Count)
			case d.Count > 0 && now.Sub(grew) > o.Stall:
				return d, fmt.Errorf("%w: no new row landed in %s for %v (stall limit %v); when it stalled, %s",
					ErrStalled, table, now.Sub(grew).Round(100*time.Millisecond), o.Stall, d.sofar())
			case d.Count == 0 && o.Activity != nil && now.Sub(worked) > o.Stall:
				return d, fmt.Errorf("%w: the arm did no work for %v before its first row landed in %s (its work counter, the data plane's CPU time, stood still at %v; stall limit %v)",
					ErrStalled, now.Sub(worked).Round(100*time.Millisecond), table, time.Duration(work).Round(time.Millisecond), o.Stall)
			}
		}
		select {
		case <-ticker.C:
			continue
		case <-waitCtx.Done():
		}
		d.Elapsed = time.Since(start)
		return s.incomplete(ctx, table, o.identity(), d, timeout)
	}
}

// sofar says what the polls had counted, and only that: distinct ids are
// measured once the count reaches N, so before then they are not known.
func (d Drain) sofar() string {
	switch {
	case d.DistinctCounted:
		return fmt.Sprintf("%d of %d distinct ids (%d rows)", d.Distinct, d.Want, d.Count)
	case d.Counted:
		return fmt.Sprintf("%d rows of %d counted (distinct ids not measured yet)", d.Count, d.Want)
	}
	return fmt.Sprintf("no count of the %d rows answered yet", d.Want)
}

// noAnswer tells a server that does not answer (a frozen one: the query's
// deadline or a read timed out) from one that refuses: the first may come
// back and is given the stall limit, the second is lost.
func noAnswer(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

// identity is the SQL expression of a row's identity.
func (o DrainOptions) identity() string {
	if o.Identity == "" {
		return "id"
	}
	return o.Identity
}

// pollOnce reads the table's count, and its distinct count once the count
// reaches the expected rows; counted says whether the count was answered.
// The count has the poll's deadline. The distinct count, a scan of the
// whole table, has the longer distinctTimeout: a server that has just
// answered the count is alive, and on a small share of a core the scan can
// take longer than a poll may.
func (s *Store) pollOnce(ctx context.Context, table string, o DrainOptions, d *Drain) (counted bool, err error) {
	d.Polls++
	qctx, cancel := context.WithTimeout(ctx, o.queryTimeout())
	count, err := s.Count(qctx, table)
	cancel()
	if err != nil {
		return false, err
	}
	d.Count, d.Counted = count, true
	if count < d.Want {
		return true, nil
	}
	dctx, cancel := context.WithTimeout(ctx, o.distinctTimeout())
	count, distinct, err := s.Counts(dctx, table, o.identity())
	cancel()
	if err != nil {
		return true, err
	}
	d.Count, d.Distinct, d.Duplicates, d.DistinctCounted = count, distinct, count-distinct, true
	return true, nil
}

// incomplete measures both counts once more after the wait ended without
// reaching N, and says why it ended.
func (s *Store) incomplete(ctx context.Context, table, identity string, d Drain, timeout time.Duration) (Drain, error) {
	final, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if count, distinct, err := s.Counts(final, table, identity); err == nil {
		d.Count, d.Distinct, d.Duplicates = count, distinct, count-distinct
		d.Counted, d.DistinctCounted = true, true
	}
	if err := ctx.Err(); err != nil {
		return d, fmt.Errorf("waiting for %s to drain, interrupted after %v with %d of %d distinct ids (%d rows): %w",
			table, d.Elapsed.Round(time.Millisecond), d.Distinct, d.Want, d.Count, err)
	}
	return d, fmt.Errorf("%w: after %v %s holds %d of %d distinct ids (%d rows, %d duplicates)",
		ErrDrainTimeout, timeout, table, d.Distinct, d.Want, d.Count, d.Duplicates)
}
