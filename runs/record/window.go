package record

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Span is one window of a drain: its bounds, its length and the rows a
// rate over it counts.
type Span struct {
	OpenedAt  time.Time `json:"opened_at"`
	ClosedAt  time.Time `json:"closed_at"`
	DurationS float64   `json:"duration_s"`
	// Rows is the rate's numerator: for the reference harness's window,
	// ClickHouse's count() (duplicates included) at the poll that closed
	// it.
	Rows int64 `json:"rows"`
}

// RowsPerS is the rate over the span.
func (s Span) RowsPerS() float64 { return float64(s.Rows) / s.DurationS }

// HarnessSpan approximates the window the public reference harness
// divides a drain's rows by, from what a spatec run records, without
// measuring anything more. It is an approximation, and is named one
// wherever it is shown.
//
// The harness (spate-etl/benchmark) starts every container of the arm
// (driver.rs, run_arm: ArmContainers::start), then a sampler per container
// (a sidecar container reading the cgroup once a second), and polls
// count() once a second, a second after the samplers were started, until
// it reaches the expected rows; it removes the samplers there, before the
// table quiesces (driver.rs, hold_drain_window). Its window is the
// samplers' own timestamps, first reading to last (sampler.rs,
// Samples::summarise; the longest of an arm's, SutCost::sum), and its
// rate is the count of that last poll over it (SutCost::rows_per_s). So
// its window is a whole number of its sampler's seconds (within 70 ms,
// methodology/measurement.md): it opens at the first reading, later than
// the samplers' start by the sidecar's own start-up, and ends at the last
// reading before the samplers were removed, just after the first 1 s
// poll at which the count had reached the target. How the sidecar's
// start-up falls against that poll is not something spatec sees (it runs
// no sidecar, and its own sampler reads every 100 ms), so the harness's
// window cannot be given exactly. By the rules above, while the sidecar
// reads within a second of its start, the harness's window is within
// 1.1 s of this one either way (a 100 ms poll's worth more than its own
// one-second resolution; TestHarnessSpanIsWithinASecondOfTheHarnesss),
// and a second further for each second more the sidecar takes. What is computed here is
// the definition the harness states, "from container start to the
// instant the drain completes":
//
//   - it opens at the latest of starts, the arm's containers' start
//     instants (every container is running when the harness's sampler
//     starts);
//   - it closes at the first of the drain's polls (rows, offsets from
//     opened, the instant spatec's window opened) whose count reached want;
//   - Rows is that poll's count, duplicates included, as the harness's is.
//
// The close is known to the millisecond of the series' offsets, so the
// same record and series give the same span wherever it is computed.
func HarnessSpan(starts []time.Time, opened time.Time, rows SeriesRows, want int64) (Span, error) {
	if len(starts) == 0 {
		return Span{}, errors.New("the arm's containers' start instants were not recorded")
	}
	var open time.Time
	for _, t := range starts {
		if t.IsZero() {
			return Span{}, errors.New("a container's start instant was not recorded")
		}
		if t.After(open) {
			open = t
		}
	}
	if opened.IsZero() {
		return Span{}, errors.New("the instant spatec's window opened was not recorded, so the polls cannot be placed in time")
	}
	if len(rows.OffsetsMS) != len(rows.Landed) {
		return Span{}, fmt.Errorf("the drain's polls hold %d counts for %d times", len(rows.Landed), len(rows.OffsetsMS))
	}
	if want <= 0 {
		return Span{}, fmt.Errorf("%d rows expected: no drain to close a window on", want)
	}
	for i, n := range rows.Landed {
		if n < want {
			continue
		}
		closed := opened.Add(time.Duration(rows.OffsetsMS[i]) * time.Millisecond)
		d := closed.Sub(open).Seconds()
		if d <= 0 || math.IsNaN(d) {
			return Span{}, fmt.Errorf("the poll that counted %d rows (%v) is not after the arm's last container started (%v)", n, closed, open)
		}
		return Span{OpenedAt: open, ClosedAt: closed, DurationS: d, Rows: n}, nil
	}
	return Span{}, fmt.Errorf("no poll of the drain counted the %d rows expected", want)
}

// HarnessSpanFrom is HarnessSpan over a record and its series: the arm's
// containers' starts (sut.containers[].started_at), spatec's window's
// opening (run.window.opened_at), the series' polls and N
// (run.dataset.expected_rows).
func (r *Record) HarnessSpanFrom(s *Series) (Span, error) {
	starts := make([]time.Time, len(r.SUT.Containers))
	for i, c := range r.SUT.Containers {
		starts[i] = c.StartedAt
	}
	return HarnessSpan(starts, r.Run.Window.OpenedAt, s.Rows, r.Run.Dataset.ExpectedRows)
}
