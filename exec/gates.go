package exec

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"spatec.dev/spatec/exec/record"
)

// infraBoundShare is C12's gate: an arm above this share of a ceiling
// measures the infrastructure, not itself.
const infraBoundShare = 0.70

// metrics records what the window measured (C7, C8, C13).
func (run *armRun) metrics(res drainResult) {
	m := run.rec.Metrics
	put := func(name string, v float64, unit string, higher bool) {
		m[name] = record.Metric{Value: v, Unit: unit, HigherIsBetter: higher}
	}
	sum := run.summary
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
		put("oom_kills."+c.Name, float64(c.OOMKills), "count", false)
	}
	run.heapMetrics()
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
	run.rec.Run.Window = record.Window{SamplerPeriodS: sum.Period.Seconds(), DurationS: window}
	if window > 0 && d.DistinctCounted && d.Distinct >= res.want {
		wl := run.plan.Env.Workload
		msgs := float64(run.rec.Run.Dataset.Messages)
		put(record.RowsPerS, float64(res.want)/window, "rows/s", true)
		put(record.MsgsPerS, msgs/window, "msg/s", true)
		put(record.BytesPerS, msgs*float64(wl.MessageBytes)/window, "bytes/s", true)
	}
}

// gate applies completeness (C13) and the ceilings (C12) to a finished
// drain, and says the record's status through the error it returns.
func (run *armRun) gate(res drainResult, ceilingsPath string) error {
	run.metrics(res)
	if !res.drain.DistinctCounted || res.drain.Distinct < res.want {
		return &Failure{"C13: " + landed(res.drain, res.want)}
	}
	c, err := LoadCeilings(ceilingsPath)
	if err == nil {
		err = c.Usable(run.plan)
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
	if len(run.heapNotes) > 0 {
		run.rec.Note = strings.TrimPrefix(run.rec.Note+"; "+strings.Join(run.heapNotes, "; "), "; ")
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
