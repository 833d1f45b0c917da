package main

import (
	"strings"
	"testing"
	"time"

	"spatec.dev/spatec/runs/record"
)

// scenarioRun runs the reference arm through one of env's failure
// scenarios and returns its record, checked for what every
// scenario's run must say: the fault injected once the scenario's share of
// the rows had landed, the arm back within its bound, nothing lost (it
// declares at least once), nothing left behind and the log valid.
func scenarioRun(t *testing.T, env, scenario string) (record.Record, string) {
	t.Helper()
	e := requireContainers(t)
	results := t.TempDir()
	args := []string{"exec", "--env", env, "reference", "--scenario", scenario, "--results", results}
	if env == "local-containers" {
		// A third of 5,000 batches is a few seconds in: time enough
		// before the fault and after it for every figure.
		args = append(args, "--tree", shortDrainTree(t))
	}
	b := startCLI(t, args...)
	code := b.wait(t)
	recs := faultOutcome(t, e, "scenario "+scenario, results, 1, 0, "")
	if code != 0 || len(recs) != 1 {
		t.Fatalf("exit %d with %d records; want 0 and one record; stderr:\n%s", code, len(recs), b.stderr.String())
	}
	rec := recs[0]
	sc := rec.Scenario
	if rec.Status != record.StatusOK || sc == nil {
		t.Fatalf("record %s, scenario %+v; want ok with its scenario; note: %s", rec.Status, sc, rec.Note)
	}
	t.Logf("%s: %s", scenario, rec.Note)
	expected := rec.Metrics[record.ExpectedRows].Value
	switch {
	case sc.Name != scenario || !sc.Injected:
		t.Errorf("scenario %q injected %v; want %s injected", sc.Name, sc.Injected, scenario)
	case float64(sc.LandedAtFault) < sc.At*expected*0.9 || float64(sc.LandedAtFault) > expected:
		t.Errorf("%d rows had landed at the fault; want about %.0f%% of %.0f", sc.LandedAtFault, sc.At*100, expected)
	case sc.FaultMS <= 0 || sc.FaultEndMS < sc.FaultMS:
		t.Errorf("fault from %d ms to %d ms; want a fault inside the window", sc.FaultMS, sc.FaultEndMS)
	case sc.FirstRowMS == nil && !sc.Outran || sc.FirstRowMS != nil && *sc.FirstRowMS <= sc.FaultEndMS-sc.FaultMS:
		// Or none, where the drain ended before spatec saw the arm
		// running again (outran; the counts judge it).
		t.Errorf("first row after the fault at %v ms; want one after spatec's part of the fault ended (%d ms)", sc.FirstRowMS, sc.FaultEndMS-sc.FaultMS)
	case sc.Lost != 0 || sc.PreFaultRowsPerS <= 0:
		t.Errorf("%d rows lost, %v rows/s before the fault; want none lost and a rate", sc.Lost, sc.PreFaultRowsPerS)
	case sc.Verdict != record.VerdictRecovered && sc.Verdict != record.VerdictDuplicates || !sc.Held:
		t.Errorf("verdict %s, held %v; want recovered (with or without duplicates), within at-least-once", sc.Verdict, sc.Held)
	case float64(sc.Duplicates) != rec.Metrics[record.DuplicateRows].Value:
		t.Errorf("%d duplicates in the scenario, %v in the metrics; want the same count", sc.Duplicates, rec.Metrics[record.DuplicateRows].Value)
	case !strings.HasPrefix(rec.Note, "scenario "+scenario+": "+sc.Verdict):
		t.Errorf("note %q; want it to begin with the scenario's verdict", rec.Note)
	case sc.Dedup != "MergeTree with non_replicated_deduplication_window = 0: every repeated insert is kept" ||
		sc.DuplicatedInsertedBlocks == nil || *sc.DuplicatedInsertedBlocks != 0:
		// ClickHouse 18.16 has no deduplication without replication.
		t.Errorf("the table's deduplication %q, %v blocks absorbed; want none on ClickHouse 18.16, and 0", sc.Dedup, sc.DuplicatedInsertedBlocks)
	}
	return rec, results
}

// followedThrough checks that the sampler read the container the fault
// restarted after the fault as before it, and counted the restart.
func followedThrough(t *testing.T, results string, rec record.Record, container string) {
	t.Helper()
	if rec.Series == nil {
		t.Fatal("the record names no series")
	}
	s, err := record.ReadSeries(record.PathFor(results, rec.Run.Env, rec.SUT.Entrant, rec.Run.StartedAt), rec.RunID, *rec.Series)
	if err != nil {
		t.Fatal(err)
	}
	before, after := 0, 0
	for _, c := range s.Containers {
		if c.Name != container {
			continue
		}
		for i, at := range s.OffsetsMS {
			switch {
			case c.CPUUsageNs[i] < 0:
			case at < rec.Scenario.FaultMS:
				before++
			case at > rec.Scenario.FaultEndMS:
				after++
			}
		}
	}
	if before == 0 || after == 0 {
		t.Errorf("container %s was read %d times before the fault and %d after it; want both", container, before, after)
	}
	if got := rec.Metrics["restarts."+container].Value; got != 1 {
		t.Errorf("restarts.%s = %v; want 1", container, got)
	}
}

// TestScenarioClickHouseRestarted: ClickHouse restarted a third of the
// way through the reference arm's drain. Outside a scenario the same
// restart fails the run (TestFaultClickHouseRestarted); here the run goes
// on through it, and the record says when rows landed again.
func TestScenarioClickHouseRestarted(t *testing.T) {
	rec, results := scenarioRun(t, "local-containers", "clickhouse-restart")
	followedThrough(t, results, rec, "spatec-clickhouse")
	if sc := rec.Scenario; sc.Component != "clickhouse" || sc.Action != "restart" {
		t.Errorf("scenario hit %s with %s; want clickhouse, restart", sc.Component, sc.Action)
	}
}

// TestScenarioDataPlaneKilled: the arm's own process killed (SIGKILL from
// the host, as a crash) and started again by its restart policy; its
// workers resume from the committed offsets.
func TestScenarioDataPlaneKilled(t *testing.T) {
	rec, results := scenarioRun(t, "local-containers", "data-plane-kill")
	followedThrough(t, results, rec, "consumer")
	if sc := rec.Scenario; sc.Restart != "on-failure" || time.Duration(*sc.FirstRowMS)*time.Millisecond > time.Duration(sc.RecoveryS)*time.Second {
		t.Errorf("restart policy %q, first row after %d ms; want on-failure, within %d s", sc.Restart, *sc.FirstRowMS, sc.RecoveryS)
	}
}

// TestScenarioClickHouseCutOff: the arm cut off from ClickHouse for 10 s
// (every packet between them dropped, in ClickHouse's network namespace)
// while spatec, on the host, still counts the rows. Nothing lands through
// the cut; once it is mended the arm's connections resume, and nothing
// is lost.
func TestScenarioClickHouseCutOff(t *testing.T) {
	rec, results := scenarioRun(t, "local-containers", "clickhouse-partition")
	sc := rec.Scenario
	if sc.Component != "clickhouse" || sc.Action != "partition" || sc.FaultEndMS-sc.FaultMS < int64(sc.PauseS)*1000 {
		t.Errorf("scenario hit %s with %s for %d ms; want clickhouse cut off for %d s", sc.Component, sc.Action, sc.FaultEndMS-sc.FaultMS, sc.PauseS)
	}
	if got := rec.Metrics["restarts.spatec-clickhouse"].Value; got != 0 {
		t.Errorf("ClickHouse restarted %v times; a partition leaves it running", got)
	}
	// The polls went on through the cut, and saw no row land in it once
	// the inserts already past the cut had (a second's grace).
	s, err := record.ReadSeries(record.PathFor(results, rec.Run.Env, rec.SUT.Entrant, rec.Run.StartedAt), rec.RunID, *rec.Series)
	if err != nil {
		t.Fatal(err)
	}
	var polls int
	var first, last int64 = -1, -1
	for i, at := range s.Rows.OffsetsMS {
		if at >= sc.FaultMS+1000 && at <= sc.FaultEndMS {
			polls++
			if first < 0 {
				first = s.Rows.Landed[i]
			}
			last = s.Rows.Landed[i]
		}
	}
	if polls < 50 || last != first {
		t.Errorf("%d polls through the cut, rows landed %d to %d; want the polls to go on and the count to hold still", polls, first, last)
	}
	if !strings.Contains(rec.Note, "scenario clickhouse-partition") {
		t.Errorf("note %q; want the scenario's outcome", rec.Note)
	}
}
