package testenv

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"spatec.dev/spatec/internal/chdb"
)

// ChDB starts a chDB session (ClickHouse's current engine, in process) for
// the length of the test, making its Python environment the first time
// (internal/chdb, cached by its requirements). Without python3, its venv
// module or pip, or without PyPI the first time, it fails under CI=true
// and skips elsewhere.
func ChDB(t testing.TB, o chdb.Options) *chdb.Session {
	t.Helper()
	var v *chdb.Venv
	Require(t, "chDB's Python environment (python3 with venv and pip; PyPI the first time)", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
		defer cancel()
		var err error
		v, err = chdb.Prepare(ctx, "")
		return err
	})
	if v.Made > 0 {
		t.Logf("made chDB's environment %s in %v", v.Dir, v.Made.Round(time.Millisecond))
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := v.Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// What the test ran on ClickHouse 26.x, listed.
		ran := s.Ran()
		lines := make([]string, len(ran))
		for i, r := range ran {
			lines[i] = fmt.Sprintf("%3d. %s", i+1, r)
		}
		t.Logf("ran %d statements on chDB (ClickHouse %s):\n%s", len(ran), s.Version, strings.Join(lines, "\n"))
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}
