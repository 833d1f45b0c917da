package options

import (
	"flag"
	"testing"
)

var updateSpate = flag.Bool("update-spate", false, "rewrite options/spate/registry.json from the spate arm's settings table")

// TestRegistrySpateIsTheSystems: the committed registry of the spate arm
// is what the crate's own settings table prints, through cargo (warm from
// the test command's `cargo test --release --locked` in the same target
// directory).
func TestRegistrySpateIsTheSystems(t *testing.T) {
	checkArmRegistry(t, "cargo", *updateSpate, "update-spate", ExtractSpate)
}
