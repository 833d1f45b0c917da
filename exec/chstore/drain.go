package chstore

import (
	"context"
	"errors"
	"fmt"
	"time"
)

var (
	// ErrDrainTimeout reports a drain that did not reach the expected
	// distinct count before its timeout: the run is failed.
	ErrDrainTimeout = errors.New("drain incomplete at timeout")
	// ErrTooManyRows reports more distinct ids than the topic holds: the
	// table was not emptied, or another writer adds rows.
	ErrTooManyRows = errors.New("more distinct ids than expected")
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
	// Elapsed runs from the call to the poll that saw Distinct reach Want
	// (or to the end of waiting).
	Elapsed time.Duration
	// FirstRow is when the first row was seen, from the call; zero if none
	// was.
	FirstRow time.Duration
	Polls    int
}

// WaitDrained polls table until its distinct ids reach n, the expected
// count fixed from the broker before the arm started.
//
// Each period (poll ≤ MaxPoll; 0 means DefaultPoll) it reads count(),
// which MergeTree answers from part metadata; only once count reaches n
// does it also compute uniqExact(id). Distinct ids cannot outnumber rows, so
// this sees the end at the same poll as computing both every time would,
// without a full scan of the table competing with the arm for the server
// five times a second.
//
// progress, when not nil, is called after every poll with the count and
// the last measured distinct count (0 until count first reaches n).
//
// When timeout passes first, the returned error wraps ErrDrainTimeout and
// Drain holds both counts, measured once more after the deadline so the
// failed record has exact figures. A cancelled ctx (an interrupted run)
// likewise returns both counts with ctx's error. Rows that land after the
// end (duplicates from the arm's last batches) are not in Drain: call
// Counts once the arm has stopped for the final duplicate count.
func (s *Store) WaitDrained(ctx context.Context, table string, n uint64, poll, timeout time.Duration,
	progress func(count, distinct uint64)) (Drain, error) {
	if err := checkTable(table); err != nil {
		return Drain{}, err
	}
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
	waitCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ticker := time.NewTicker(poll)
	defer ticker.Stop()

	d := Drain{Want: n}
	failures := 0
	for {
		err := s.pollOnce(waitCtx, table, &d)
		d.Elapsed = time.Since(start)
		if err == nil {
			failures = 0
			if d.FirstRow == 0 && d.Count > 0 {
				d.FirstRow = d.Elapsed
			}
			if progress != nil {
				progress(d.Count, d.Distinct)
			}
			switch {
			case d.Distinct > n:
				return d, fmt.Errorf("%w: %s holds %d distinct ids, more than the %d the topic holds; was it truncated before the run, or does another writer insert into it?",
					ErrTooManyRows, table, d.Distinct, n)
			case d.Distinct == n && d.Count >= n:
				return d, nil
			}
		} else if failures++; waitCtx.Err() == nil && failures >= maxPollFailures {
			// The server stopped answering (lost mid-run): the run
			// fails now rather than at the timeout.
			return d, fmt.Errorf("waiting for %s to drain (%d of %d distinct ids after %v): %w", table, d.Distinct, n, d.Elapsed.Round(time.Millisecond), err)
		}
		select {
		case <-ticker.C:
			continue
		case <-waitCtx.Done():
		}
		d.Elapsed = time.Since(start)
		return s.incomplete(ctx, table, d, timeout)
	}
}

func (s *Store) pollOnce(ctx context.Context, table string, d *Drain) error {
	d.Polls++
	count, err := s.Count(ctx, table)
	if err != nil {
		return err
	}
	d.Count = count
	if count < d.Want {
		return nil
	}
	count, distinct, err := s.Counts(ctx, table)
	if err != nil {
		return err
	}
	d.Count, d.Distinct, d.Duplicates = count, distinct, count-distinct
	return nil
}

// incomplete measures both counts once more after the wait ended without
// reaching N, and says why it ended.
func (s *Store) incomplete(ctx context.Context, table string, d Drain, timeout time.Duration) (Drain, error) {
	final, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if count, distinct, err := s.Counts(final, table); err == nil {
		d.Count, d.Distinct, d.Duplicates = count, distinct, count-distinct
	}
	if err := ctx.Err(); err != nil {
		return d, fmt.Errorf("waiting for %s to drain, interrupted after %v with %d of %d distinct ids (%d rows): %w",
			table, d.Elapsed.Round(time.Millisecond), d.Distinct, d.Want, d.Count, err)
	}
	return d, fmt.Errorf("%w: after %v %s holds %d of %d distinct ids (%d rows, %d duplicates)",
		ErrDrainTimeout, timeout, table, d.Distinct, d.Want, d.Count, d.Duplicates)
}
