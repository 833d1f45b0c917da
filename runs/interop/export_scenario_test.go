package interop

import (
	"strings"
	"testing"

	"spatec.dev/spatec/runs/record"
)

// TestScenarioRunIsNotExported: a run disturbed on purpose by a failure
// scenario is refused by the export, which would rank it in schema 2.
func TestScenarioRunIsNotExported(t *testing.T) {
	r := record.Record{Schema: record.SchemaV1, RunID: "r1", Rep: 1, Reps: 1, Status: record.StatusOK,
		SUT: record.SUT{Entrant: "reference"},
		Scenario: &record.Scenario{Name: "clickhouse-restart", Component: "clickhouse", Action: "restart", At: 0.3, RecoveryS: 60,
			Injected: true, Verdict: record.VerdictRecovered, Held: true}}
	_, err := Export(r)
	if err == nil || !strings.Contains(err.Error(), "a run of failure scenario clickhouse-restart") {
		t.Errorf("exported a scenario's run: %v", err)
	}
}
