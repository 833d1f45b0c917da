package options

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
)

// ExtractSpate prints the spate arm's registry: the SETTINGS table of the
// crate entrants/spate/arm (src/settings.rs), which the arm reads its
// SPATEC_ environment through, as the arm itself prints it (`cargo run
// --release --locked --bin spate-arm -- --settings-json`). Its one file is
// options/spate/registry.json. spate's own pipeline file is not the arm's:
// its keys are spate's, not in this registry.
//
// cargo builds in CARGO_TARGET_DIR when it is set, and otherwise in the
// target directory the test command (.ci/test) and spatec's image builds
// share, ${XDG_CACHE_HOME:-$HOME/.cache}/spatec/compile/cargo-target,
// where `cargo test --release --locked` has compiled the arm already; run
// cold, it compiles the crate and its dependencies first.
//
// To regenerate it after changing the table:
//
//	go test ./options -run TestRegistrySpate -update
//
// (-update rewrites every registry, and their CUE.)
func ExtractSpate(ctx context.Context, root string) (map[string][]byte, error) {
	env := os.Environ()
	if os.Getenv("CARGO_TARGET_DIR") == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			return nil, fmt.Errorf("finding the cargo target directory the test command fills: %w", err)
		}
		env = append(env, "CARGO_TARGET_DIR="+filepath.Join(cache, "spatec", "compile", "cargo-target"))
	}
	env = append(env, "CARGO_TERM_COLOR=never", "CARGO_TERM_PROGRESS_WHEN=never")
	b, err := runArm(ctx, filepath.Join(root, "entrants", "spate", "arm"), env,
		"cargo", "run", "--quiet", "--release", "--locked", "--bin", "spate-arm", "--", "--settings-json")
	if err != nil {
		return nil, err
	}
	return map[string][]byte{filepath.Join("options", "spate", "registry.json"): b}, nil
}
