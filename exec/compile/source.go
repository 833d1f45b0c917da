package compile

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"go/build"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"spatec.dev/spatec/schema"
)

// Source names what an image is built from in this tree, beyond what the
// plan itself spells out: the Go program's sources for a program image,
// each project's files for a recipe that compiles some. It is "" for an
// image whose whole recipe is in the plan (a pulled image, a layered
// build, a recipe of packages and checked downloads).
//
// A reviewed plan carries it, so the program that runs is the one that was
// reviewed. It leaves the toolchain out: that is the host's, and the image
// built on it is named by it as well (Digest).
func (t *Tree) Source(b *schema.Build) (string, error) {
	switch {
	case b == nil:
		return "", nil
	case b.Program != "":
		return t.goProgram(b.Program)
	case b.Debian != nil && len(b.Debian.Compile) > 0:
		h := sha256.New()
		fmt.Fprintf(h, "spatec source %d\n", format)
		for _, c := range b.Debian.Compile {
			dir, err := t.project(c)
			if err != nil {
				return "", err
			}
			fmt.Fprintf(h, "%s\n", describe(c))
			if err := hashDir(h, t.Dir, dir); err != nil {
				return "", err
			}
			for _, in := range slices.Sorted(slices.Values(c.Inputs)) {
				if err := hashFile(h, t.Dir, filepath.Join(t.Dir, filepath.FromSlash(in))); err != nil {
					return "", fmt.Errorf("input %s of %s: %w", in, describe(c), err)
				}
			}
		}
		return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
	}
	return "", nil
}

// goProgram hashes what `go build program` compiles from this module:
// go.mod, go.sum, and the Go files (and embedded files) of every package of
// the module the program imports, directly or not. Packages from other
// modules are pinned by go.sum, the standard library by the toolchain.
func (t *Tree) goProgram(program string) (string, error) {
	if t.Dir == "" {
		return "", fmt.Errorf("the Go program %s is built from this tree, which needs a spatec checkout: run spatec from one", program)
	}
	module, err := modulePath(filepath.Join(t.Dir, "go.mod"))
	if err != nil {
		return "", err
	}
	h := sha256.New()
	fmt.Fprintf(h, "spatec go source %d\n%s\n", format, program)
	for _, f := range []string{"go.mod", "go.sum"} {
		if err := hashFile(h, t.Dir, filepath.Join(t.Dir, f)); err != nil {
			return "", err
		}
	}
	ctx := build.Default
	ctx.CgoEnabled = false // programs are built with CGO_ENABLED=0
	seen := map[string]bool{}
	queue := []string{path.Clean(program)}
	for len(queue) > 0 {
		rel := queue[0]
		queue = queue[1:]
		if seen[rel] {
			continue
		}
		seen[rel] = true
		dir := filepath.Join(t.Dir, filepath.FromSlash(rel))
		pkg, err := ctx.ImportDir(dir, 0)
		if err != nil {
			return "", fmt.Errorf("reading the Go package %s of %s: %w", rel, program, err)
		}
		files := slices.Clone(pkg.GoFiles)
		for _, pattern := range pkg.EmbedPatterns {
			matches, err := filepath.Glob(filepath.Join(dir, filepath.FromSlash(pattern)))
			if err != nil {
				return "", fmt.Errorf("the embed pattern %q of %s: %w", pattern, rel, err)
			}
			for _, m := range matches {
				r, _ := filepath.Rel(dir, m)
				files = append(files, r)
			}
		}
		slices.Sort(files)
		for _, f := range files {
			p := filepath.Join(dir, f)
			if st, err := os.Stat(p); err == nil && st.IsDir() {
				err = hashDir(h, t.Dir, p)
			} else {
				err = hashFile(h, t.Dir, p)
			}
			if err != nil {
				return "", err
			}
		}
		for _, imp := range pkg.Imports {
			if sub, ok := strings.CutPrefix(imp, module+"/"); ok {
				queue = append(queue, "./"+sub)
			}
		}
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// modulePath reads the module line of a go.mod.
func modulePath(gomod string) (string, error) {
	f, err := os.Open(gomod)
	if err != nil {
		return "", fmt.Errorf("reading the module's path: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module "); ok {
			return strings.Trim(strings.TrimSpace(m), `"`), nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("reading %s: %w", gomod, err)
	}
	return "", fmt.Errorf("%s has no module line", gomod)
}
