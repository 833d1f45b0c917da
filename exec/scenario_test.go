package exec

import (
	"strings"
	"testing"

	"spatec.dev/spatec/runs/record"
	"spatec.dev/spatec/schema"
)

// TestJudgeAScenario reads a scenario's figures from a drain's polls: the
// fault at 4 s (10,000 rows landed, 2,500 rows/s), spatec's part of it
// over at 5 s, the first row again at 6 s, the rate over the trailing 2 s
// back to 90% of 2,500 rows/s at 8 s.
func TestJudgeAScenario(t *testing.T) {
	rows := record.SeriesRows{
		OffsetsMS: []int64{0, 1000, 2000, 3000, 4000, 5000, 5500, 6000, 7000, 8000, 9000},
		Landed:    []int64{0, 2000, 5000, 8000, 10000, 10000, 10000, 10500, 12000, 15000, 20000},
	}
	fig := func(ms *int64) int64 {
		if ms == nil {
			return -1
		}
		return *ms
	}
	for _, tc := range []struct {
		name             string
		guarantee        string
		count, distinct  uint64
		verdict          string
		held             bool
		lost, duplicates int64
	}{
		{"clean", schema.AtLeastOnce, 20000, 20000, record.VerdictRecovered, true, 0, 0},
		{"written twice", schema.AtLeastOnce, 20300, 20000, record.VerdictDuplicates, true, 0, 300},
		{"written twice, exactly once declared", schema.ExactlyOnce, 20300, 20000, record.VerdictDuplicates, false, 0, 300},
		{"lost", schema.AtLeastOnce, 19900, 19900, record.VerdictLoss, false, 100, 0},
		{"lost, none declared", schema.NoGuarantee, 19900, 19900, record.VerdictLoss, true, 100, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := &record.Scenario{FaultMS: 4000, FaultEndMS: 5000, RecoveryS: 60, Guarantee: tc.guarantee}
			judge(out, rows, 20000, tc.count, tc.distinct, true)
			if out.LandedAtFault != 10000 || out.PreFaultRowsPerS != 2500 {
				t.Errorf("at the fault: %d rows, %v rows/s; want 10000 and 2500", out.LandedAtFault, out.PreFaultRowsPerS)
			}
			if got := fig(out.FirstRowMS); got != 2000 {
				t.Errorf("first row after the fault at %d ms; want 2000 (the poll at 6 s)", got)
			}
			if got := fig(out.RateBackMS); got != 4000 {
				t.Errorf("rate back after %d ms; want 4000 (6,000 rows over 6-8 s is 2,500 rows/s)", got)
			}
			if out.Verdict != tc.verdict || out.Held != tc.held || out.Lost != tc.lost || out.Duplicates != tc.duplicates {
				t.Errorf("verdict %s held %v lost %d duplicates %d; want %s %v %d %d", out.Verdict, out.Held, out.Lost, out.Duplicates, tc.verdict, tc.held, tc.lost, tc.duplicates)
			}
		})
	}
	t.Run("no row after the fault", func(t *testing.T) {
		stuck := record.SeriesRows{OffsetsMS: rows.OffsetsMS[:6], Landed: rows.Landed[:6]}
		out := &record.Scenario{FaultMS: 4000, FaultEndMS: 5000, RecoveryS: 60, Guarantee: schema.NoGuarantee}
		judge(out, stuck, 20000, 10000, 10000, true)
		if out.Verdict != record.VerdictNotRecovered || out.Held || out.FirstRowMS != nil || out.RateBackMS != nil || out.Lost != 10000 {
			t.Errorf("verdict %s held %v first row %v rate back %v lost %d; want not-recovered, not held, neither figure, 10000 lost",
				out.Verdict, out.Held, out.FirstRowMS, out.RateBackMS, out.Lost)
		}
	})
	t.Run("every row landed before the fault ended", func(t *testing.T) {
		outran := record.SeriesRows{OffsetsMS: []int64{0, 4000, 4500, 5000}, Landed: []int64{0, 10000, 15000, 20000}}
		out := &record.Scenario{FaultMS: 4000, FaultEndMS: 5000, RecoveryS: 60, Guarantee: schema.AtLeastOnce}
		judge(out, outran, 20000, 20000, 20000, true)
		if out.FirstRowMS != nil || !out.Outran || !strings.HasPrefix(out.Note, "every expected row had landed by the end of spatec's part of the fault") {
			t.Errorf("first row %v, outran %v, note %q; want none, and the note saying the drain outran the fault", out.FirstRowMS, out.Outran, out.Note)
		}
		// The arm was seen running again within its bound, and every row
		// landed once: it recovered, untimed.
		if out.Verdict != record.VerdictRecovered || !out.Held {
			t.Errorf("verdict %s, held %v; want recovered, within at-least-once", out.Verdict, out.Held)
		}
		if note := scenarioNote(out); !strings.Contains(note, "recovered, within its declared at-least-once guarantee; its recovery not timed; 0 rows lost, 0 written twice") {
			t.Errorf("note %q; want it to say the recovery was not timed", note)
		}
		// Seen running again only at the bound: every row in by then
		// may be inserts the old process had sent, so no recovery.
		out = &record.Scenario{FaultMS: 4000, FaultEndMS: 64000, RecoveryS: 60, Guarantee: schema.AtLeastOnce}
		judge(out, outran, 20000, 20000, 20000, true)
		if out.Outran || out.Verdict != record.VerdictNotRecovered {
			t.Errorf("outran %v, verdict %s; want not-recovered, not outran, when the bound ended the fault", out.Outran, out.Verdict)
		}
	})
	t.Run("an insert completing during the fault is no recovery", func(t *testing.T) {
		late := record.SeriesRows{OffsetsMS: []int64{0, 4000, 4500, 5000, 5500}, Landed: []int64{0, 10000, 11000, 11000, 11000}}
		out := &record.Scenario{FaultMS: 4000, FaultEndMS: 5000, RecoveryS: 60, Guarantee: schema.AtLeastOnce}
		judge(out, late, 20000, 11000, 11000, true)
		if out.FirstRowMS != nil || out.Verdict != record.VerdictNotRecovered {
			t.Errorf("first row %v, verdict %s; want none and not-recovered", out.FirstRowMS, out.Verdict)
		}
	})
}
