package debimage

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"spatec.dev/spatec/schema"
)

// mmdebstrapSteps are the messages mmdebstrap prints as it enters each step
// of a build, in order; progress counts them.
var mmdebstrapSteps = []string{
	"I: running apt-get update",
	"I: downloading packages",
	"I: extracting archives",
	"I: installing essential packages",
	"I: installing remaining packages",
	"I: cleaning package lists",
	"I: creating tarball",
	"I: done",
}

// mmdebstrapTail is how many lines of mmdebstrap's output a failure quotes.
const mmdebstrapTail = 15

// Mmdebstrap makes the root file system of recipe with mmdebstrap (Debian's
// package of that name), as a tar file at dst: the apt variant (essential
// packages and apt) plus the recipe's packages, downloaded from the recipe's
// sources, every timestamp clamped to the recipe's epoch.
func Mmdebstrap(ctx context.Context, recipe schema.Debian, dst string, step func(string)) error {
	bin, err := exec.LookPath("mmdebstrap")
	if err != nil {
		return errors.New("building a root file system needs mmdebstrap, which is not installed: apt-get install mmdebstrap (bash .ci/services installs it)")
	}
	dir, err := os.MkdirTemp("", "spatec-mmdebstrap-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	// mmdebstrap reads a mirror argument that names a file as sources.list
	// lines.
	sources := filepath.Join(dir, "recipe.list")
	if err := os.WriteFile(sources, []byte(strings.Join(recipe.Sources, "\n")+"\n"), 0o644); err != nil {
		return err
	}
	args := []string{"--variant=apt", "--format=tar", "--include=" + strings.Join(recipe.Packages, ","), recipe.Suite, dst, sources}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "SOURCE_DATE_EPOCH="+strconv.FormatInt(recipe.Epoch, 10))
	// Interrupted, mmdebstrap unmounts what it mounted in its chroot and
	// removes its temporary directory; killed, it would leave them.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 30 * time.Second
	out, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	cmd.Stdout = cmd.Stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("running mmdebstrap: %w", err)
	}
	var tail []string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		line := sc.Text()
		tail = append(tail, line)
		if len(tail) > mmdebstrapTail {
			tail = tail[1:]
		}
		for _, s := range mmdebstrapSteps {
			if strings.HasPrefix(line, s) {
				step(line)
			}
		}
	}
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("mmdebstrap %s failed: %w; its output ends:\n  %s", strings.Join(args, " "), err, strings.Join(tail, "\n  "))
	}
	return nil
}
