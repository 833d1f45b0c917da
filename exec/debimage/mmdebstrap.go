package debimage

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
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
// packages and apt) plus the recipe's packages for arch, downloaded from
// the recipe's sources, every timestamp clamped to the recipe's epoch.
func Mmdebstrap(ctx context.Context, recipe schema.Debian, arch schema.Arch, dst string, step func(string)) error {
	bin, err := exec.LookPath("mmdebstrap")
	if err != nil {
		return errors.New("building a root file system needs mmdebstrap, which is not installed: apt-get install mmdebstrap (bash .ci/services installs it)")
	}
	if err := canRun(arch); err != nil {
		return err
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
	args := mmdebstrapArgs(recipe, arch, dst, sources)
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

// mmdebstrapArgs are mmdebstrap's arguments for recipe's root file system
// on arch, written to dst, from the sources.list file sources.
func mmdebstrapArgs(recipe schema.Debian, arch schema.Arch, dst, sources string) []string {
	return []string{"--variant=apt", "--format=tar", "--architectures=" + arch.Name(),
		"--include=" + strings.Join(recipe.Packages, ","), recipe.Suite, dst, sources}
}

// qemuNames are the names Debian's qemu-user-static registers its
// interpreters under in binfmt_misc, by the architecture they run.
var qemuNames = map[schema.Arch]string{schema.AMD64: "qemu-x86_64", schema.ARM64: "qemu-aarch64"}

// binfmtDir is where the kernel lists the interpreters binfmt_misc runs
// foreign binaries with.
const binfmtDir = "/proc/sys/fs/binfmt_misc"

// canRun refuses a root file system for another architecture than this
// host's unless the kernel runs that architecture's binaries: mmdebstrap
// runs the packages' maintainer scripts inside it.
func canRun(arch schema.Arch) error {
	if arch.Name() == runtime.GOARCH {
		return nil
	}
	name, ok := qemuNames[arch]
	if !ok {
		return fmt.Errorf("a root file system for %s cannot be built here: spatec knows no emulator for it", arch.Name())
	}
	b, err := os.ReadFile(filepath.Join(binfmtDir, name))
	if err == nil && strings.HasPrefix(string(b), "enabled") {
		return nil
	}
	return fmt.Errorf("a root file system for %s, built on this %s host, runs its packages' scripts under emulation, and the kernel has no %s interpreter enabled (%s): apt-get install qemu-user-static binfmt-support, with binfmt_misc mounted (mount -t binfmt_misc binfmt_misc %s); bench/aarch64.sh does both",
		arch.Name(), runtime.GOARCH, name, filepath.Join(binfmtDir, name), binfmtDir)
}
