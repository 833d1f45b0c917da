package options

import (
	"context"
	"flag"
	"testing"
	"time"
)

var updateSpate = flag.Bool("update-spate", false, "rewrite options/spate/registry.json from the spate arm's settings table")

// TestRegistrySpateIsTheSystems: the committed registry of the spate arm
// is what the crate's own settings table prints, through cargo (warm from
// the test command's `cargo test --release --locked` in the same target
// directory).
func TestRegistrySpateIsTheSystems(t *testing.T) {
	requireTool(t, "cargo")
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	got, err := ExtractSpate(ctx, "..")
	if err != nil {
		t.Fatal(err)
	}
	compareCommitted(t, got, *update || *updateSpate, "go test ./options -run TestRegistrySpate -update-spate")
}
