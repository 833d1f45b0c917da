package record

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// drainAt is a drain on a known timeline: the control plane starts at t0,
// the data plane 300 ms later, spatec's window opens at 450 ms (the caps
// verified) and its polls, every 100 ms from there, count the rows landed:
// none until the first row at 2 s (offset), then a steady climb whose
// count() reaches N at 9.8 s with duplicates among them, so that the
// distinct rows, which close spatec's window, reach N two polls later,
// when count() is N+5.
func drainAt(t0 time.Time, want int64) (starts []time.Time, opened time.Time, rows SeriesRows) {
	starts = []time.Time{t0, t0.Add(300 * time.Millisecond)}
	opened = t0.Add(450 * time.Millisecond)
	for off := int64(100); off <= 10_000; off += 100 {
		var n int64
		switch {
		case off < 2_000:
		case off <= 9_800:
			n = 1 + (want-1)*(off-2_000)/7_800
		case off == 9_900:
			n = want + 3
		default:
			n = want + 5
		}
		rows.OffsetsMS = append(rows.OffsetsMS, off)
		rows.Landed = append(rows.Landed, n)
	}
	return starts, opened, rows
}

// TestHarnessSpanOnAKnownTimeline: the reference harness's window opens at
// the arm's last container start, not at the first row and not where
// spatec's opens, and closes at the first poll whose count() reached N,
// which it counts duplicates and all.
func TestHarnessSpanOnAKnownTimeline(t *testing.T) {
	t0 := time.Date(2026, 8, 3, 14, 0, 0, 0, time.UTC)
	const want = 1_000_000
	starts, opened, rows := drainAt(t0, want)
	s, err := HarnessSpan(starts, opened, rows, want)
	if err != nil {
		t.Fatal(err)
	}
	closeOff := int64(0)
	for i, n := range rows.Landed {
		if n >= want {
			closeOff = rows.OffsetsMS[i]
			break
		}
	}
	if closeOff != 9_800 {
		t.Fatalf("the synthetic drain reaches N at %d ms; the test expects 9800", closeOff)
	}
	wantSpan := Span{OpenedAt: t0.Add(300 * time.Millisecond), ClosedAt: t0.Add(450*time.Millisecond + 9_800*time.Millisecond), DurationS: 9.95, Rows: want}
	if s != wantSpan {
		t.Fatalf("span %+v; want %+v", s, wantSpan)
	}
	if got := s.RowsPerS(); got != float64(want)/9.95 {
		t.Errorf("rate %v; want %v", got, float64(want)/9.95)
	}

	// Where the first row lands moves neither bound.
	late := rows
	late.Landed = append([]int64(nil), rows.Landed...)
	for i := range late.Landed {
		if late.OffsetsMS[i] < 5_000 {
			late.Landed[i] = 0
		}
	}
	if s2, err := HarnessSpan(starts, opened, late, want); err != nil || s2 != s {
		t.Errorf("with the first row at 5 s: %+v, %v; want the same span", s2, err)
	}
}

func TestHarnessSpanSaysWhyItCannotBeComputed(t *testing.T) {
	t0 := time.Date(2026, 8, 3, 14, 0, 0, 0, time.UTC)
	starts, opened, rows := drainAt(t0, 1000)
	short := SeriesRows{OffsetsMS: rows.OffsetsMS[:30], Landed: rows.Landed[:30]}
	for name, c := range map[string]struct {
		starts []time.Time
		opened time.Time
		rows   SeriesRows
		want   string
	}{
		"no starts":          {nil, opened, rows, "start instants were not recorded"},
		"one start unknown":  {[]time.Time{t0, {}}, opened, rows, "a container's start instant was not recorded"},
		"no opening":         {starts, time.Time{}, rows, "window opened was not recorded"},
		"incomplete drain":   {starts, opened, short, "no poll of the drain counted the 1000 rows expected"},
		"start after drain":  {[]time.Time{t0.Add(time.Minute)}, opened, rows, "is not after the arm's last container started"},
		"polls out of shape": {starts, opened, SeriesRows{OffsetsMS: []int64{1}}, "0 counts for 1 times"},
	} {
		if _, err := HarnessSpan(c.starts, c.opened, c.rows, 1000); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want it to say %q", name, err, c.want)
		}
	}
}

// withHarnessWindow gives rec the instants and the window of drainAt, and
// returns the series that goes with it.
func withHarnessWindow(t *testing.T, rec *Record) *Series {
	t.Helper()
	t0 := rec.Run.StartedAt.Add(5 * time.Second)
	starts, opened, rows := drainAt(t0, rec.Run.Dataset.ExpectedRows)
	rec.SUT.Containers = append(rec.SUT.Containers, Container{Name: "coordinator", Role: "control-plane", Image: "spatec/reference:1.0.0",
		ImageDigest: rec.SUT.Containers[0].ImageDigest, CPUs: "0.50", MemoryBytes: 1 << 30})
	rec.SUT.Containers[1].StartedAt, rec.SUT.Containers[0].StartedAt = starts[0], starts[1]
	rec.Run.Window.OpenedAt = opened
	s := sampleSeries(rec.RunID)
	s.Rows = rows
	span, err := rec.HarnessSpanFrom(s)
	if err != nil {
		t.Fatal(err)
	}
	rec.Run.Window.Harness = &span
	rec.Metrics[HarnessRowsPerS] = Metric{Value: span.RowsPerS(), Unit: "rows/s", HigherIsBetter: true}
	rec.Metrics[HarnessWindowSeconds] = Metric{Value: span.DurationS, Unit: "s"}
	return s
}

// TestHarnessWindowIsCheckedAgainstItsSeries: the reference harness's
// window a record carries is derived, so validate derives it again from the
// record's instants and its series, and reports a record whose figures
// disagree with their window, or whose window disagrees with its series.
func TestHarnessWindowIsCheckedAgainstItsSeries(t *testing.T) {
	root := t.TempDir()
	path := filepath.Join(root, "local", "reference", "2026-03.jsonl")
	good, edited, moved := sample(t), sample(t), sample(t)
	var lines string
	for _, rec := range []*Record{good, edited, moved} {
		s := withHarnessWindow(t, rec)
		if rec == moved {
			// The series says N were counted a poll before the record's
			// window closed.
			s.Rows.Landed[len(s.Rows.Landed)-4] = rec.Run.Dataset.ExpectedRows
		}
		ref, err := WriteSeries(path, s)
		if err != nil {
			t.Fatal(err)
		}
		rec.Series = &ref
	}
	edited.Metrics[HarnessRowsPerS] = Metric{Value: 2 * edited.Metrics[HarnessRowsPerS].Value, Unit: "rows/s", HigherIsBetter: true}
	for _, rec := range []*Record{good, edited, moved} {
		lines += line(t, rec)
	}
	writeFile(t, path, lines)
	if msgs := good.Check(); len(msgs) > 0 {
		t.Fatalf("a record with its harness window has problems: %v", msgs)
	}
	_, problems := ValidateTree(root)
	assertProblems(t, problems, []string{
		path + ":2: run " + edited.RunID + ": metric harness_rows_per_s is ",
		path + ":3: run " + moved.RunID + ": run.window.harness is ",
	})
}

// harnessWindow is the reference harness's window by its own rules, on a
// timeline: its samplers start at start, a sidecar's first reading comes
// sidecar later and the next once a second; it polls count() a second
// after start and once a second from there, and removes the samplers
// removal after the first poll that saw the target, which was reached at
// reached. Its window is the readings', first to last before the removal.
func harnessWindow(start time.Time, sidecar, removal time.Duration, reached time.Time) time.Duration {
	poll := start.Add(time.Second)
	for poll.Before(reached) {
		poll = poll.Add(time.Second)
	}
	first := start.Add(sidecar)
	readings := poll.Add(removal).Sub(first) / time.Second // whole seconds of readings after the first
	if poll.Add(removal).Sub(first)%time.Second == 0 {
		readings-- // a reading at the removal's instant is not taken
	}
	return readings * time.Second
}

// TestHarnessSpanIsWithinASecondOfTheHarnesss: over sidecar start-ups
// under a second, removals after the poll and instants the target is
// reached, the window HarnessSpan gives from spatec's 100 ms polls is
// within 1.1 s of the harness's own, as HarnessSpan's doc says; the
// harness's is a whole number of seconds.
func TestHarnessSpanIsWithinASecondOfTheHarnesss(t *testing.T) {
	t0 := time.Date(2026, 8, 3, 14, 0, 0, 0, time.UTC)
	start := t0.Add(300 * time.Millisecond) // the arm's last container start
	opened := start.Add(150 * time.Millisecond)
	const bound = 1100 * time.Millisecond
	var worst time.Duration
	for sidecar := 50 * time.Millisecond; sidecar < time.Second; sidecar += 150 * time.Millisecond {
		for _, removal := range []time.Duration{10 * time.Millisecond, 120 * time.Millisecond, 400 * time.Millisecond} {
			for reach := 20_000 * time.Millisecond; reach < 22_000*time.Millisecond; reach += 70 * time.Millisecond {
				reached := start.Add(reach)
				var rows SeriesRows
				for off := int64(100); off <= 25_000; off += 100 {
					n := int64(0)
					if !opened.Add(time.Duration(off) * time.Millisecond).Before(reached) {
						n = 1000
					}
					rows.OffsetsMS = append(rows.OffsetsMS, off)
					rows.Landed = append(rows.Landed, n)
				}
				s, err := HarnessSpan([]time.Time{t0, start}, opened, rows, 1000)
				if err != nil {
					t.Fatal(err)
				}
				h := harnessWindow(start, sidecar, removal, reached)
				if h%time.Second != 0 {
					t.Fatalf("the harness's window %v is not whole seconds", h)
				}
				diff := time.Duration(s.DurationS*float64(time.Second)) - h
				worst = max(worst, diff.Abs())
				if diff.Abs() > bound {
					t.Errorf("sidecar %v, removal %v, target reached %v after the start: HarnessSpan %v s, the harness's window %v, %v apart; the doc says within %v",
						sidecar, removal, reach, s.DurationS, h, diff, bound)
				}
			}
		}
	}
	t.Logf("at most %v apart", worst)
}
