package options

import (
	"context"
	"testing"
	"time"
)

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
	compareCommitted(t, got, *update, "go test ./options -run TestRegistrySpate -update")
}
