package options

import (
	"context"
	"testing"
	"time"
)

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
	compareCommitted(t, got, *update, "go test ./options -run TestRegistryReference -update")
}
