package exec

import (
	"errors"
	"testing"
	"time"

	"spatec.dev/spatec/exec/chstore"
	"spatec.dev/spatec/schema"
)

// TestRowsLandedBeforeTheWindow: a table that already holds rows when the
// window opens fails the run (C13), saying how many of how many: the
// window would not cover the drain, and the rate would be too high.
func TestRowsLandedBeforeTheWindow(t *testing.T) {
	requireClickHouse(t)
	env := testEnv("127.0.0.1:1", clickhouseAddr(), testDatabase(t))
	ctx, _ := testContext(t, 30*time.Second)
	store, err := chstore.Open(ctx, clickhouseAddr(), env.Endpoints.Database, "default", "")
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if err := store.Exec(ctx, env.Workloads[jsonRows].Table.DDL); err != nil {
		t.Fatal(err)
	}
	run := &armRun{plan: &schema.Plan{Env: env, Workload: env.Workloads[jsonRows]}}
	if err := run.landedEarly(ctx, store, 200); err != nil {
		t.Fatalf("an empty table: %v", err)
	}
	table := run.plan.Table()
	if err := store.Exec(ctx, "INSERT INTO "+table+" (id) SELECT number FROM system.numbers LIMIT 3"); err != nil {
		t.Fatal(err)
	}
	err = run.landedEarly(ctx, store, 200)
	var f *Failure
	if !errors.As(err, &f) || f.Reason != "C13: 3 of 200 rows had landed before the window opened: the arm's start and the verification of its caps took longer than its first inserts, so the window would not cover the drain" {
		t.Errorf("three rows before the window: %v; want a C13 failure naming 3 of 200", err)
	}
}
