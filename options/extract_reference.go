package options

import (
	"context"
	"os"
	"path/filepath"
)

// ExtractReference prints the reference arm's registry: the settings table
// of cmd/spatec-reference (settings.go), which the arm builds its flags
// from and reads its SPATEC_ environment through, as the arm itself prints
// it (`go run ./cmd/spatec-reference -settings-json`, from the Go build
// cache the test command fills). Its one file is
// options/reference/registry.json.
//
// To regenerate it after changing the table:
//
//	go test ./options -run TestRegistryReference -update
//
// (-update rewrites every registry, and their CUE.)
func ExtractReference(ctx context.Context, root string) (map[string][]byte, error) {
	b, err := runArm(ctx, root, os.Environ(), "go", "run", "./cmd/spatec-reference", "-settings-json")
	if err != nil {
		return nil, err
	}
	return map[string][]byte{filepath.Join("options", "reference", "registry.json"): b}, nil
}
