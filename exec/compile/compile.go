// Package compile builds the programs of this tree that an image carries
// (#Compile): a Rust crate with cargo, a Maven project with mvn, each with
// its committed lock of dependencies, as its own users build it. An
// output is named by the digest of what it is compiled from (the
// project's files, the inputs it declares beyond them, the toolchain's
// version), kept in a cache by that digest, and compiled only when the
// cache lacks it.
package compile

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"spatec.dev/spatec/exec/progress"
	"spatec.dev/spatec/schema"
)

// format versions the way outputs are made; it is part of every digest.
const format = 1

// Tree compiles programs of one checkout.
type Tree struct {
	// Dir is the checkout's root.
	Dir string
	// CacheDir keeps outputs by digest, and cargo's target directory;
	// "" keeps no output, and cargo builds in the crate's own target.
	CacheDir string
	// Progress reports a compilation; nil reports nothing.
	Progress *progress.Reporter
	// Arch is the architecture a program is compiled for; "" is this
	// host's. A crate for another is cross-compiled (cargo's --target,
	// with Debian's cross gcc as linker and C compiler); a jar is the
	// same on every architecture.
	Arch schema.Arch
}

// Output is a compiled program.
type Output struct {
	// Path is the output file.
	Path string
	// Digest names what it was compiled from, "sha256:…".
	Digest string
	// Mode is the file mode it goes into an image with.
	Mode int64
}

// Digest names what c is compiled from: the files of its project (its
// build directory and hidden directories left out), the inputs it declares,
// and the version of the toolchain that compiles it there.
func (t *Tree) Digest(ctx context.Context, c schema.Compile) (string, error) {
	dir, err := t.project(c)
	if err != nil {
		return "", err
	}
	toolchain, err := t.toolchain(ctx, c, dir)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	fmt.Fprintf(h, "spatec compile %d\n%s\n", format, toolchain)
	// A binary is for one architecture (amd64 left out, as before
	// architectures were named); a jar is for all.
	if c.Cargo != nil && !t.arch().IsZero() {
		fmt.Fprintf(h, "for %s\n", t.arch())
	}
	if err := hashDir(h, t.Dir, dir); err != nil {
		return "", err
	}
	for _, in := range slices.Sorted(slices.Values(c.Inputs)) {
		if err := hashFile(h, t.Dir, filepath.Join(t.Dir, filepath.FromSlash(in))); err != nil {
			return "", fmt.Errorf("input %s of %s: %w", in, describe(c), err)
		}
	}
	fmt.Fprintf(h, "%s\n", describe(c))
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// Build returns c's output, from the cache or newly compiled.
func (t *Tree) Build(ctx context.Context, c schema.Compile) (Output, error) {
	digest, err := t.Digest(ctx, c)
	if err != nil {
		return Output{}, err
	}
	name, mode := outputName(c)
	out := Output{Digest: digest, Mode: mode}
	if t.CacheDir == "" {
		out.Path, err = t.compile(ctx, c)
		return out, err
	}
	kept := filepath.Join(t.CacheDir, "compiled", strings.TrimPrefix(digest, "sha256:"), name)
	if _, err := os.Stat(kept); err == nil {
		out.Path = kept
		return out, nil
	}
	built, err := t.compile(ctx, c)
	if err != nil {
		return Output{}, err
	}
	if err := copyFile(built, kept, os.FileMode(mode)); err != nil {
		return Output{}, fmt.Errorf("keeping the output of %s: %w", describe(c), err)
	}
	out.Path = kept
	return out, nil
}

// project is c's directory, which must hold the project's manifest.
func (t *Tree) project(c schema.Compile) (string, error) {
	if t.Dir == "" {
		return "", fmt.Errorf("%s is compiled from this tree, which needs a spatec checkout: run spatec from one", describe(c))
	}
	var rel, manifest string
	switch {
	case c.Cargo != nil:
		rel, manifest = c.Cargo.Crate, "Cargo.toml"
	case c.Maven != nil:
		rel, manifest = c.Maven.Project, "pom.xml"
	default:
		return "", errors.New("a compile step names no build tool: give cargo or maven")
	}
	dir := filepath.Join(t.Dir, filepath.FromSlash(rel))
	if _, err := os.Stat(filepath.Join(dir, manifest)); err != nil {
		return "", fmt.Errorf("%s: no %s in %s", describe(c), manifest, rel)
	}
	return dir, nil
}

// toolchain is the version of what compiles c, as the project's
// directory selects it (rustup reads rust-toolchain.toml there).
func (t *Tree) toolchain(ctx context.Context, c schema.Compile, dir string) (string, error) {
	var cmds [][]string
	if c.Cargo != nil {
		cmds = [][]string{{"rustc", "-V"}, {"cargo", "-V"}}
	} else {
		cmds = [][]string{{"javac", "-version"}, {"mvn", "-v"}}
	}
	var lines []string
	for _, argv := range cmds {
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("%s needs %s: %s %s: %w: %s", describe(c), argv[0], argv[0], argv[1], err, strings.TrimSpace(string(out)))
		}
		first, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
		lines = append(lines, first)
	}
	return strings.Join(lines, "\n"), nil
}

// compile runs the build tool and returns the path of what it wrote.
func (t *Tree) compile(ctx context.Context, c schema.Compile) (string, error) {
	dir, err := t.project(c)
	if err != nil {
		return "", err
	}
	var cmd *exec.Cmd
	var built string
	var steps int64
	var step string
	switch {
	case c.Cargo != nil:
		// With a cache, one target directory for every crate: cargo
		// shares the dependencies they have in common, and .ci/test's
		// `cargo test --release` fills it with them first. Without one,
		// the crate's own.
		target := filepath.Join(dir, "target")
		if t.CacheDir != "" {
			target = filepath.Join(t.CacheDir, "cargo-target")
		}
		cross, err := t.cross(ctx, c, dir)
		if err != nil {
			return "", err
		}
		args, env := cargoBuild(c.Cargo.Bin, cross)
		cmd = exec.CommandContext(ctx, "cargo", args...)
		cmd.Env = append(append(os.Environ(), "CARGO_TARGET_DIR="+target, "CARGO_TERM_COLOR=never", "CARGO_TERM_PROGRESS_WHEN=never"), env...)
		built = filepath.Join(target, cross.triple, "release", c.Cargo.Bin)
		steps, step = lockedPackages(filepath.Join(dir, "Cargo.lock")), "Compiling "
	case c.Maven != nil:
		cmd = exec.CommandContext(ctx, "mvn", "-B", "-DskipTests", "package")
		built = filepath.Join(dir, "target", c.Maven.Jar)
		step = "[INFO] --- "
	}
	cmd.Dir = dir
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", err
	}
	cmd.Stderr = cmd.Stdout
	t.Progress.Start("image/compile", steps, "steps")
	t.Progress.Printf("compiling %s", describe(c))
	if err := cmd.Start(); err != nil {
		t.Progress.Fail(err)
		return "", fmt.Errorf("compiling %s: %w", describe(c), err)
	}
	var tail []string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), step) {
			t.Progress.Add(1)
		}
		if tail = append(tail, line); len(tail) > 30 {
			tail = tail[1:]
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Progress.Fail(err)
		return "", fmt.Errorf("compiling %s: %s failed: %w; its output ends:\n  %s", describe(c), strings.Join(cmd.Args, " "), err, strings.Join(tail, "\n  "))
	}
	t.Progress.End()
	if _, err := os.Stat(built); err != nil {
		return "", fmt.Errorf("compiling %s: %s wrote no %s", describe(c), strings.Join(cmd.Args, " "), built)
	}
	return built, nil
}

// arch is the architecture programs are compiled for.
func (t *Tree) arch() schema.Arch {
	if t.Arch == "" {
		return schema.Arch(runtime.GOARCH)
	}
	return t.Arch
}

// crossTarget is what cross-compiling a crate for an architecture takes:
// Rust's target triple, and the prefix of Debian's cross tools for it
// (gcc-aarch64-linux-gnu installs aarch64-linux-gnu-gcc).
type crossTarget struct {
	triple, gnu string
}

// crossTargets are the architectures a crate can be cross-compiled for.
var crossTargets = map[schema.Arch]crossTarget{
	schema.AMD64: {"x86_64-unknown-linux-gnu", "x86_64-linux-gnu"},
	schema.ARM64: {"aarch64-unknown-linux-gnu", "aarch64-linux-gnu"},
}

// cross is the target c is cross-compiled for, the zero crossTarget when
// it is compiled for this host. It refuses, saying what to install, a
// host that lacks the target's standard library or its cross linker.
func (t *Tree) cross(ctx context.Context, c schema.Compile, dir string) (crossTarget, error) {
	arch := t.arch()
	if string(arch) == runtime.GOARCH {
		return crossTarget{}, nil
	}
	ct, ok := crossTargets[arch]
	if !ok {
		return crossTarget{}, fmt.Errorf("%s cannot be compiled for %s: spatec knows no Rust target for it", describe(c), arch)
	}
	// The toolchain the crate's directory selects (rust-toolchain.toml)
	// must hold the target's standard library.
	sysrootCmd := exec.CommandContext(ctx, "rustc", "--print", "sysroot")
	sysrootCmd.Dir = dir
	out, err := sysrootCmd.Output()
	sysroot := strings.TrimSpace(string(out))
	if err == nil {
		_, err = os.Stat(filepath.Join(sysroot, "lib", "rustlib", ct.triple, "lib"))
	}
	if err != nil {
		return crossTarget{}, fmt.Errorf("%s for %s on this %s host needs Rust's standard library for %s, which its toolchain (%s) lacks: rustup target add %s, in %s",
			describe(c), arch, runtime.GOARCH, ct.triple, sysroot, ct.triple, dir)
	}
	// A crate that builds a C or C++ library (librdkafka, under spate's
	// Kafka connector, builds both) builds it with these.
	for _, tool := range []string{"gcc", "g++"} {
		if _, err := exec.LookPath(ct.gnu + "-" + tool); err != nil {
			return crossTarget{}, fmt.Errorf("%s for %s on this %s host is linked, and its C and C++ compiled, by Debian's cross compilers, and %s-%s is not installed: apt-get install gcc-%s g++-%[6]s",
				describe(c), arch, runtime.GOARCH, ct.gnu, tool, strings.ReplaceAll(ct.gnu, "_", "-"))
		}
	}
	return ct, nil
}

// cargoBuild is the cargo command line that builds the binary bin, and the
// environment it adds: for a cross target, the target, and Debian's cross
// gcc as the target's linker and, with its g++ and ar, as the compilers of
// the crates that build C or C++ (cc-rs reads CC_<triple>; librdkafka's
// configure script reads CC, CXX and AR), the host's own compilers kept
// for what runs on the host.
func cargoBuild(bin string, cross crossTarget) (args, env []string) {
	args = []string{"build", "--release", "--locked", "--bin", bin}
	if cross.triple == "" {
		return args, nil
	}
	under := strings.ReplaceAll(cross.triple, "-", "_")
	gcc, ar := cross.gnu+"-gcc", cross.gnu+"-ar"
	return append(args, "--target", cross.triple), []string{
		"CARGO_TARGET_" + strings.ToUpper(under) + "_LINKER=" + gcc,
		"CC_" + under + "=" + gcc,
		"CXX_" + under + "=" + cross.gnu + "-g++",
		"AR_" + under + "=" + ar,
		"CC=" + gcc,
		"CXX=" + cross.gnu + "-g++",
		"AR=" + ar,
		"HOST_CC=cc",
		"HOST_CXX=c++",
	}
}

// lockedPackages counts the packages a Cargo.lock holds: about how many
// crates a cold build compiles.
func lockedPackages(lock string) int64 {
	b, err := os.ReadFile(lock)
	if err != nil {
		return 0
	}
	return int64(strings.Count(string(b), "[[package]]"))
}

// describe names c in messages.
func describe(c schema.Compile) string {
	switch {
	case c.Cargo != nil:
		return fmt.Sprintf("the Rust crate %s (binary %s)", c.Cargo.Crate, c.Cargo.Bin)
	case c.Maven != nil:
		return fmt.Sprintf("the Maven project %s (%s)", c.Maven.Project, c.Maven.Jar)
	}
	return "a program"
}

// outputName is the file name and image mode of c's output.
func outputName(c schema.Compile) (string, int64) {
	if c.Cargo != nil {
		return c.Cargo.Bin, 0o755
	}
	return c.Maven.Jar, 0o644
}

// hashDir hashes every regular file under dir, by its path from root, in
// lexical order; build directories (target) and hidden ones are left out.
func hashDir(h io.Writer, root, dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != dir && (d.Name() == "target" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if !d.Type().IsRegular() {
			return nil
		}
		return hashFile(h, root, p)
	})
}

// hashFile hashes one file's path from root, its executable bit and its
// content.
func hashFile(h io.Writer, root, p string) error {
	st, err := os.Stat(p)
	if err != nil {
		return err
	}
	rel, err := filepath.Rel(root, p)
	if err != nil {
		return err
	}
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	fmt.Fprintf(h, "%s %o %d\n", filepath.ToSlash(rel), st.Mode().Perm()&0o111, st.Size())
	_, err = io.Copy(h, f)
	return err
}

// copyFile copies src to dst, with mode, through a temporary file beside
// dst, so that dst is whole or absent.
func copyFile(src, dst string, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp, err := os.CreateTemp(filepath.Dir(dst), filepath.Base(dst)+".*.partial")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, in); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), mode); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), dst)
}
