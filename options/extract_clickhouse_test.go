package options

import (
	"context"
	"testing"
	"time"

	"spatec.dev/spatec/internal/chdb"
	"spatec.dev/spatec/internal/testenv"
)

// TestRegistryClickHouseIsTheSystems regenerates ClickHouse's registries from
// chDB's engine (the environment internal/chdb caches) and compares them
// with the committed files.
func TestRegistryClickHouseIsTheSystems(t *testing.T) {
	testenv.Require(t, "chDB's Python environment (python3 with venv and pip; PyPI the first time)", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
		defer cancel()
		_, err := chdb.Prepare(ctx, "")
		return err
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	got, err := ExtractClickHouse(ctx, rootOfRepo(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("extracted in %v", time.Since(start).Round(time.Millisecond))
	compareCommitted(t, got, *update, "go test ./options -run TestRegistryClickHouse -update")
}
