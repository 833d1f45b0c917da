package options

import (
	"context"
	"flag"
	"testing"
	"time"
)

var updateReference = flag.Bool("update-reference", false, "rewrite options/reference/registry.json from the reference arm's settings table")

// TestRegistryReferenceIsTheSystems: the committed registry of the
// reference arm is what the arm's own settings table prints.
func TestRegistryReferenceIsTheSystems(t *testing.T) {
	requireTool(t, "go")
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	got, err := ExtractReference(ctx, "..")
	if err != nil {
		t.Fatal(err)
	}
	compareCommitted(t, got, *update || *updateReference, "go test ./options -run TestRegistryReference -update-reference")
}
