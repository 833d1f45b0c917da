package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"cuelang.org/go/cue/format"
	"golang.org/x/term"

	"spatec.dev/spatec/exec/artefact"
	"spatec.dev/spatec/exec/closure"
	"spatec.dev/spatec/exec/engine/docker"
	"spatec.dev/spatec/exec/progress"
	"spatec.dev/spatec/schema"
)

// cmdPin resolves every image an environment's plans pull (the
// infrastructure's, the arms', the bases of layered builds) to the digest
// its registry publishes now, every download an image build declares
// without its sha256 to the sha256 it has now, and every Maven artifact a
// layered build adds to its runtime closure as Maven resolves it now (each
// jar by URL and sha256), and writes them to envs/<env>/pins.cue, the
// environment's pins: from then on each image runs by that digest and
// each build adds exactly those bytes, and nothing unpinned runs (C16). It
// must run where the registries and repositories can be reached, with
// Maven when there are closures; review the pins before committing.
func cmdPin(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("pin", flag.ContinueOnError)
	fs.SetOutput(stderr)
	env := fs.String("env", "", "environment whose images and downloads to pin")
	tree := fs.String("tree", "", "CUE tree root (default: the checkout around the working directory)")
	if _, err := parseFlags(fs, args); err != nil {
		return err
	}
	if *env == "" || *env == allEnvs {
		return usageError{"usage: spatec pin --env E (one environment)"}
	}
	dir := *tree
	if dir == "" {
		dir = findCheckout()
	}
	if dir == "" {
		return usageError{"spatec pin writes envs/<env>/pins.cue into a checkout: run it from one, or give --tree"}
	}
	t, err := loadTree(dir)
	if err != nil {
		return err
	}
	if err := checkNames(t, *env, nil); err != nil {
		return err
	}
	plans, problems := resolveAll(t, parseSelections(t, *env, nil))
	if len(problems) > 0 {
		return refuse("%s does not resolve; run `spatec vet`: %v", *env, problems[0])
	}
	artifacts, err := mavenArtifacts(plans)
	if err != nil {
		return err
	}
	// Progress on a terminal; a log gets the table below and nothing else.
	var rep *progress.Reporter
	if f, ok := stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		rep = progress.New(stderr)
	}

	pins := map[string]string{}
	if refs := pulledImages(plans); len(refs) > 0 {
		e, err := docker.New(ctx)
		if err != nil {
			return err
		}
		defer e.Close()
		for _, ref := range refs {
			d, err := e.RegistryDigest(ctx, ref)
			if err != nil {
				return fmt.Errorf("pinning %s: %w", ref, err)
			}
			pins[ref] = d
		}
	}
	for _, url := range unpinnedDownloads(plans) {
		sum, err := artefact.Hash(ctx, nil, rep, url)
		if err != nil {
			return fmt.Errorf("pinning %s: %w", url, err)
		}
		pins[url] = "sha256:" + sum
	}
	closures := map[string][]schema.ClosureJar{}
	r := &closure.Resolver{Progress: rep}
	for _, a := range artifacts {
		jars, err := r.Resolve(ctx, a)
		if err != nil {
			return fmt.Errorf("pinning %s: %w", a.Artifact, err)
		}
		closures[a.Artifact] = jars
	}

	var old schema.Environment
	if len(plans) > 0 {
		old = plans[0].Env
	}
	path, err := writePins(filepath.Join(dir, "envs", *env), *env, pins, closures, time.Now().UTC())
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PINNED\tTO\t")
	change := func(was string, ok bool, now string) string {
		switch {
		case !ok:
			return "new"
		case was != now:
			return "moved from " + was
		}
		return ""
	}
	for _, ref := range slices.Sorted(maps.Keys(pins)) {
		was, ok := old.Pins[ref]
		fmt.Fprintf(tw, "%s\t%s\t%s\n", ref, pins[ref], change(was, ok, pins[ref]))
	}
	for _, a := range slices.Sorted(maps.Keys(closures)) {
		now := artefact.ClosureDigest(closures[a])
		was, ok := old.Closures[a]
		fmt.Fprintf(tw, "%s\t%d jars, list %s\t%s\n", a, len(closures[a]), now, change(artefact.ClosureDigest(was), ok, now))
	}
	tw.Flush()
	fmt.Fprintf(stdout, "wrote %s: review the pins, then commit it\n", path)
	return nil
}

// mavenArtifacts lists the Maven artifacts the plans' layered builds add,
// once each. The environment pins one closure an artifact, so an artifact
// declared with two lists of repositories, which may resolve to two
// closures, is refused.
func mavenArtifacts(plans []*schema.Plan) ([]schema.MavenArtifact, error) {
	byName := map[string]schema.MavenArtifact{}
	for _, b := range builds(plans) {
		if b.Layered == nil {
			continue
		}
		for _, m := range b.Layered.Maven {
			if was, ok := byName[m.Artifact]; ok && !slices.Equal(was.Repositories, m.Repositories) {
				return nil, fmt.Errorf("maven artifact %s is declared with repositories %v and %v; the environment pins one closure of it, so declare it with the same repositories everywhere", m.Artifact, was.Repositories, m.Repositories)
			}
			byName[m.Artifact] = m
		}
	}
	out := make([]schema.MavenArtifact, 0, len(byName))
	for _, a := range slices.Sorted(maps.Keys(byName)) {
		out = append(out, byName[a])
	}
	return out, nil
}

// unpinnedDownloads lists the URLs of the downloads the plans' builds
// declare without their sha256: the environment pins them.
func unpinnedDownloads(plans []*schema.Plan) []string {
	urls := map[string]bool{}
	for _, b := range builds(plans) {
		var ds []schema.Download
		switch {
		case b.Layered != nil:
			ds = b.Layered.Downloads
		case b.Debian != nil:
			ds = b.Debian.Downloads
		}
		for _, d := range ds {
			if d.SHA256 == "" {
				urls[d.URL] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(urls))
}

// builds lists every image build of the plans: their containers' and
// their environment's services'.
func builds(plans []*schema.Plan) []*schema.Build {
	var out []*schema.Build
	for _, p := range plans {
		for _, svc := range p.Env.Infra.Services() {
			if svc.Run == "container" && svc.Build != nil {
				out = append(out, svc.Build)
			}
		}
		for _, c := range p.Entrant.Containers {
			if c.Build != nil {
				out = append(out, c.Build)
			}
		}
	}
	return out
}

// pulledImages lists the image references plans run that spatec does not
// build itself and that carry no digest: what must be pinned.
func pulledImages(plans []*schema.Plan) []string {
	refs := map[string]bool{}
	add := func(ref string) {
		if ref != "" && !strings.Contains(ref, "@") {
			refs[ref] = true
		}
	}
	for _, p := range plans {
		for _, svc := range p.Env.Infra.Services() {
			if svc.Run == "container" && svc.Image != nil && svc.Build == nil && svc.Image.Digest == "" {
				add(svc.Image.Ref)
			}
		}
		for _, c := range p.Entrant.Containers {
			switch {
			case c.Build == nil:
				add(c.Image)
			case c.Build.Layered != nil:
				add(c.Build.Layered.From)
			}
		}
	}
	return slices.Sorted(maps.Keys(refs))
}

// writePins writes pins and closures as the environment's pins.cue in
// dir, in the package of the environment's own files, and returns its
// path.
func writePins(dir, env string, pins map[string]string, closures map[string][]schema.ClosureJar, at time.Time) (string, error) {
	pkg, err := packageOf(dir)
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "// Code generated by `spatec pin --env %s`; DO NOT EDIT.\n", env)
	fmt.Fprintf(&b, "// The registry digests of the images %s runs, the sha256 of the downloads\n// its builds declare without one, and the jars of the Maven closures they\n// add, as published at %s. Run `spatec pin` again to move a pin.\n\n", env, at.Format(time.RFC3339))
	fmt.Fprintf(&b, "package %s\n\nenv: pins: {\n", pkg)
	for _, ref := range slices.Sorted(maps.Keys(pins)) {
		fmt.Fprintf(&b, "\t%q: %q\n", ref, pins[ref])
	}
	b.WriteString("}\n")
	if len(closures) > 0 {
		b.WriteString("\nenv: closures: {\n")
		for _, a := range slices.Sorted(maps.Keys(closures)) {
			fmt.Fprintf(&b, "\t%q: [\n", a)
			for _, j := range closures[a] {
				fmt.Fprintf(&b, "\t\t{url: %q, sha256: %q},\n", j.URL, j.SHA256)
			}
			b.WriteString("\t]\n")
		}
		b.WriteString("}\n")
	}
	src, err := format.Source(b.Bytes())
	if err != nil {
		return "", fmt.Errorf("formatting the pins: %w", err)
	}
	path := filepath.Join(dir, "pins.cue")
	if err := os.WriteFile(path, src, 0o644); err != nil {
		return "", fmt.Errorf("writing the pins: %w", err)
	}
	return path, nil
}

// packageOf reads the package name of the CUE files in dir.
func packageOf(dir string) (string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.cue"))
	if err != nil || len(files) == 0 {
		return "", fmt.Errorf("no CUE file in %s to take the package name from", dir)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		for _, line := range strings.Split(string(b), "\n") {
			if name, ok := strings.CutPrefix(strings.TrimSpace(line), "package "); ok {
				return strings.TrimSpace(name), nil
			}
		}
	}
	return "", fmt.Errorf("no package clause in the CUE files of %s", dir)
}
