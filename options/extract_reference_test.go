package options

import (
	"flag"
	"testing"
)

var updateReference = flag.Bool("update-reference", false, "rewrite options/reference/registry.json from the reference arm's settings table")

// TestRegistryReferenceIsTheSystems: the committed registry of the
// reference arm is what the arm's own settings table prints.
func TestRegistryReferenceIsTheSystems(t *testing.T) {
	checkArmRegistry(t, "go", *updateReference, "update-reference", ExtractReference)
}
