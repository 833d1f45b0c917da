package main

import (
	"context"
	"fmt"
	"io"
	"runtime/debug"
)

// version is the spatec release; the commit comes from the build info.
const version = "0.1.0"

// buildInfo returns the version and the VCS commit the binary was built
// from ("unknown" outside a checkout, "+dirty" when it had changes).
func buildInfo() (ver, commit string) {
	commit = "unknown"
	if bi, ok := debug.ReadBuildInfo(); ok {
		var rev, dirty string
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					dirty = "+dirty"
				}
			}
		}
		if rev != "" {
			commit = rev + dirty
		}
	}
	return version, commit
}

func cmdVersion(_ context.Context, _ []string, stdout, _ io.Writer) error {
	v, c := buildInfo()
	fmt.Fprintf(stdout, "spatec %s (commit %s)\n", v, c)
	return nil
}
