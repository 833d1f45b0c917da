package interop

import (
	"strings"
	"testing"

	"spatec.dev/spatec/runs/record"
)

// TestFootprintPointIsNotExported: a run that left the envelope on
// purpose is refused by the export, which would rank it in schema 2.
func TestFootprintPointIsNotExported(t *testing.T) {
	r := record.Record{Schema: record.SchemaV1, RunID: "r1", Rep: 1, Reps: 1, Status: record.StatusOK,
		SUT: record.SUT{Entrant: "reference", Study: "memory", Footprint: &record.Footprint{Axis: "memory", Cap: 1 << 29, Full: 1 << 30, Fraction: 0.9}}}
	_, err := Export(r)
	if err == nil || !strings.Contains(err.Error(), "a point of footprint study memory") {
		t.Errorf("exported a footprint point: %v", err)
	}
}
