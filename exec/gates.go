package exec

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"spatec.dev/spatec/exec/chstore"
	"spatec.dev/spatec/runs/record"
)

// infraBoundShare is C12's gate: an arm above this share of a ceiling
// measures the infrastructure, not itself.
const infraBoundShare = 0.70

// minReadings is the fewest sampler readings a window may hold for its
// peaks and means to stand for it: below it, a spike between two readings
// (an OOM kill's climb) is missed.
const minReadings = 5

// metrics records what the window measured (C7, C8, C13).
func (run *armRun) metrics(res drainResult) {
	m := run.rec.Metrics
	put := func(name string, v float64, unit string, higher bool) {
		m[name] = record.Metric{Value: v, Unit: unit, HigherIsBetter: higher}
	}
	sum := run.summary
	if res.drain.Elapsed > 0 {
		// A drain that stalls or times out is known to have only once its
		// limit has passed, and the sampler runs until then: its figures
		// are cut to the window the record names, so that the tail after
		// it does not dilute the cores or raise the peaks.
		sum = sum.Until(res.drain.Elapsed)
	}
	for name, v := range sum.Metrics() {
		unit := "bytes"
		if strings.HasSuffix(name, "cores_used") {
			unit = "cores"
		}
		put(name, v, unit, false)
	}
	for _, c := range sum.Containers {
		// Throttling on both sides of the gate (C12): which one sat at its cap.
		put("throttled_s."+c.Name, float64(c.ThrottledUsec)/1e6, "s", false)
		kills := c.OOMKills
		if slices.Contains(run.oomKilled, c.Name) {
			// The engine saw the kill the sampler could not: the group
			// went with the container.
			kills = max(kills, 1)
		}
		put("oom_kills."+c.Name, float64(kills), "count", false)
		restarts := c.Restarts
		if run.fault != nil {
			restarts = max(restarts, run.fault.restarts(run.containerID(c.Name)))
		}
		if restarts > 0 {
			// A scenario's fault restarted it: its figures add both lives.
			put("restarts."+c.Name, float64(restarts), "count", false)
		}
	}
	if sum.Readings > 0 && sum.Readings < minReadings {
		run.rec.Flags = appendOnce(run.rec.Flags, record.FlagUnderSampled)
		run.caveats = appendOnce(run.caveats, fmt.Sprintf("the window held %d sampler readings (%v apart, fewer than %d): its peaks and means may miss what happened in it",
			sum.Readings, sum.Period, minReadings))
	}
	run.heapMetrics()
	run.hostMetrics()
	if sum.Arm.MemoryPeakKind == "lifetime" {
		run.rec.Flags = appendOnce(run.rec.Flags, record.FlagPeakLifetime)
	}
	d := res.drain
	put(record.ExpectedRows, float64(res.want), "count", false)
	if n := run.plan.Entrant.InFlight; n > 0 {
		put(record.RowsInFlight, float64(n), "count", false)
	}
	// A count ClickHouse never gave is absent and flagged, never 0.
	if d.Counted {
		put(record.LandedRows, float64(d.Count), "count", false)
	}
	if d.DistinctCounted {
		put(record.DistinctRows, float64(d.Distinct), "count", true)
		put(record.DuplicateRows, float64(d.Duplicates), "count", false)
	} else {
		run.rec.Flags = appendOnce(run.rec.Flags, record.FlagRowsUncounted)
	}
	window := d.Elapsed.Seconds()
	put(record.WindowSeconds, window, "s", false)
	w := record.Window{SamplerPeriodS: sum.Period.Seconds(), DurationS: window}
	if !res.opened.IsZero() {
		w.OpenedAt = res.opened.UTC()
		w.ClosedAt = w.OpenedAt.Add(d.Elapsed)
	}
	if window > 0 && res.drained && d.DistinctCounted && d.Distinct >= res.want {
		msgs := float64(run.rec.Run.Dataset.Messages)
		put(record.RowsPerS, float64(res.want)/window, "rows/s", true)
		put(record.MsgsPerS, msgs/window, "msg/s", true)
		put(record.BytesPerS, float64(run.expected.bytes)/window, "bytes/s", true)
		// The reference harness's rate, approximated (record.HarnessSpan),
		// beside spatec's: from the instants as recorded (wall clock, in
		// UTC), so that the record and its series give it again exactly.
		starts := make([]time.Time, len(run.rec.SUT.Containers))
		for i, c := range run.rec.SUT.Containers {
			starts[i] = c.StartedAt
		}
		if h, err := record.HarnessSpan(starts, w.OpenedAt, run.landed, int64(res.want)); err == nil {
			w.Harness = &h
			put(record.HarnessRowsPerS, h.RowsPerS(), "rows/s", true)
			put(record.HarnessWindowSeconds, h.DurationS, "s", false)
		} else {
			run.caveats = appendOnce(run.caveats, "no "+record.HarnessRowsPerS+": "+err.Error())
		}
	}
	run.rec.Run.Window = w
}

// gate records what the window measured, and applies completeness (C13)
// and the ceilings (C12) to a finished drain whose correctness gates
// passed; it says the record's status through the error it returns.
func (run *armRun) gate(res drainResult, ceilingsPath string) error {
	run.metrics(res)
	if !res.drain.DistinctCounted || res.drain.Distinct < res.want {
		return &Failure{"C13: " + landed(res.drain, res.want)}
	}
	c, err := LoadCeilings(ceilingsPath)
	if err == nil {
		err = c.Usable(run.plan, float64(run.expected.bytes)/float64(max(run.rec.Run.Dataset.Messages, 1)))
	}
	if err != nil {
		run.rec.Flags = appendOnce(run.rec.Flags, record.FlagHeadroomUnproven)
		run.rec.Note = "C12: headroom unproven: " + err.Error()
		return nil
	}
	m := run.rec.Metrics
	shares := map[string]float64{
		"broker messages/s": m[record.MsgsPerS].Value / c.Broker.MessagesPerSec,
		"broker bytes/s":    m[record.BytesPerS].Value / c.Broker.BytesPerSec,
		"ClickHouse rows/s": m[record.RowsPerS].Value / c.ClickHouse.RowsPerSec,
	}
	run.rec.Metrics[record.InfraBrokerConsumeShare] = record.Metric{Value: max(shares["broker messages/s"], shares["broker bytes/s"]), Unit: "ratio"}
	run.rec.Metrics[record.InfraClickHouseIngestShare] = record.Metric{Value: shares["ClickHouse rows/s"], Unit: "ratio"}
	run.rec.Run.Ceilings = map[string]record.Metric{
		"broker_msgs_per_s":     {Value: c.Broker.MessagesPerSec, Unit: "msg/s", HigherIsBetter: true},
		"broker_bytes_per_s":    {Value: c.Broker.BytesPerSec, Unit: "bytes/s", HigherIsBetter: true},
		"clickhouse_rows_per_s": {Value: c.ClickHouse.RowsPerSec, Unit: "rows/s", HigherIsBetter: true},
	}
	run.rec.Run.CeilingsMeasuredFrom = c.MeasuredFrom
	if imp := c.Imported; imp != nil {
		// The record says whose ceilings it was gated against.
		run.caveats = appendOnce(run.caveats, fmt.Sprintf("C12: gated against ceilings imported from %s: %s (%s), measured %s under its infrastructure %s, client %s",
			imp.From, imp.File, imp.SHA256, imp.Date, imp.InfraDigest, imp.Client))
	}
	var over []string
	for _, k := range slices.Sorted(maps.Keys(shares)) {
		if shares[k] > infraBoundShare {
			over = append(over, fmt.Sprintf("%s at %.0f%% of its ceiling", k, 100*shares[k]))
		}
	}
	if len(over) > 0 {
		return &infraBound{fmt.Sprintf("C12: the arm ran above %.0f%% of an infrastructure ceiling: %s", 100*infraBoundShare, strings.Join(over, ", "))}
	}
	return nil
}

// infraBound is a complete drain that ran into an infrastructure ceiling:
// recorded as infra_bound, kept, and not an error of the run.
type infraBound struct{ reason string }

func (e *infraBound) Error() string { return e.reason }

// finish sets the record's status, note and end time from the run's outcome.
func (run *armRun) finish(err error, now time.Time) {
	run.rec.Run.EndedAt = now.UTC()
	var (
		ref *Refusal
		ib  *infraBound
	)
	switch {
	case err == nil:
		run.rec.Status = record.StatusOK
	case errors.As(err, &ib):
		run.rec.Status = record.StatusInfraBound
		run.rec.Note = ib.reason
	case errors.As(err, &ref):
		run.rec.Status = record.StatusRefused
		run.rec.Note = "REFUSED: " + ref.Reason
	default:
		run.rec.Status = record.StatusFailed
		run.rec.Note = err.Error()
	}
	if sc := run.rec.Scenario; sc != nil && run.rec.Status != record.StatusRefused {
		// The scenario's outcome is what the run was for: it comes first.
		run.rec.Note = strings.TrimSuffix(scenarioNote(sc)+"; "+run.rec.Note, "; ")
	}
	if len(run.caveats) > 0 {
		run.rec.Note = strings.TrimPrefix(run.rec.Note+"; "+strings.Join(run.caveats, "; "), "; ")
	}
	for _, c := range run.containers {
		_ = c.group.Close()
	}
}

func appendOnce(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// rowsPerQuery bounds the rows one checksum query reads over distinct
// rows: the server holds them all at once.
const rowsPerQuery = 2_000_000

// correct applies the correctness gates to the quiesced table, in order,
// each recorded with what it expected and what it found: loss (the
// distinct identities are the rows the dataset yields, C13), checksum
// (every sum over the distinct rows is the generator's closed form) and
// duplicates (every duplicate is an exact copy of its row; how many there
// are is a metric, never a failure). A gate that fails ends the judging:
// what follows it would report its consequences.
func (run *armRun) correct(ctx context.Context, store *chstore.Store, res drainResult) error {
	d, want := res.drain, res.want
	loss := record.Gate{Name: record.GateLoss, Expected: map[string]string{"distinct_rows": strconv.FormatUint(want, 10)}, Found: map[string]string{}}
	if d.DistinctCounted {
		loss.Found["distinct_rows"] = strconv.FormatUint(d.Distinct, 10)
	}
	loss.Passed = d.DistinctCounted && d.Distinct == want
	if !loss.Passed {
		loss.Note = "C13: " + landed(d, want)
		run.rec.Gates = append(run.rec.Gates, loss)
		return &Failure{loss.Note}
	}
	run.rec.Gates = append(run.rec.Gates, loss)
	if res.quiesceErr != nil {
		return &Failure{fmt.Sprintf("the gates could not read the table: %v", res.quiesceErr)}
	}

	wl := run.plan.Workload
	names := slices.Sorted(maps.Keys(wl.Checksum))
	messages := run.rec.Run.Dataset.Messages
	sums, opts := chstore.WorkloadChecksum(wl, messages, d.Duplicates > 0, rowsPerQuery)
	qctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	got, err := store.Checksum(qctx, run.plan.Table(), sums, opts)
	cancel()
	sum := record.Gate{Name: record.GateChecksum, Expected: map[string]string{}, Found: map[string]string{}}
	if err != nil {
		sum.Note = fmt.Sprintf("the checksum could not be read: %v", err)
		run.rec.Gates = append(run.rec.Gates, sum)
		return &Failure{sum.Note}
	}
	run.s.runner.logf("checksum of %s over %d rows: %d queries in %v", run.plan.Table(), got.Rows, got.Queries, got.Elapsed.Round(time.Millisecond))
	var wrong []string
	for _, n := range names {
		exp := run.expected.Sums[n]
		sum.Expected[n], sum.Found[n] = exp.String(), got.Sums[n].String()
		if got.Sums[n].Cmp(exp) != 0 {
			wrong = append(wrong, fmt.Sprintf("%s is %s on the sink; the closed form for %d messages is %s (it checks %s)", n, got.Sums[n], messages, exp, wl.Checksum[n].Doc))
		}
	}
	dup := record.Gate{Name: record.GateDuplicates, Passed: true,
		Expected: map[string]string{"distinct_copies": strconv.FormatUint(d.Distinct, 10)},
		Found:    map[string]string{"duplicate_rows": strconv.FormatUint(d.Duplicates, 10), "distinct_copies": strconv.FormatUint(d.Distinct, 10)}}
	if opts.Distinct {
		// Rows whose identity and summed values are both the same are one
		// copy; two copies of a row that disagree are two.
		dup.Found["distinct_copies"] = strconv.FormatUint(got.Rows, 10)
		dup.Passed = got.Rows == d.Distinct
		if !dup.Passed {
			dup.Note = fmt.Sprintf("duplicates: %d rows are copies of %d distinct rows, but %d of those copies disagree with another copy of their row: the arm wrote one row two ways",
				d.Duplicates, d.Distinct, got.Rows-d.Distinct)
		}
	}
	sum.Passed = len(wrong) == 0
	if !dup.Passed {
		// The copies that disagree are the cause; the sums they move are
		// its consequence.
		sum.Passed, sum.Note = false, "the sums are over copies that disagree: see the duplicates gate"
		run.rec.Gates = append(run.rec.Gates, dup, sum)
		return &Failure{dup.Note}
	}
	if !sum.Passed {
		sum.Note = "checksum: " + strings.Join(wrong, "; ")
		run.rec.Gates = append(run.rec.Gates, sum, dup)
		return &Failure{sum.Note}
	}
	run.rec.Gates = append(run.rec.Gates, sum, dup)
	return nil
}
