package exec

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"

	"spatec.dev/spatec/exec/artefact"
	"spatec.dev/spatec/exec/compile"
	"spatec.dev/spatec/exec/debimage"
	"spatec.dev/spatec/exec/engine"
	"spatec.dev/spatec/exec/layered"
	"spatec.dev/spatec/runs/record"
	"spatec.dev/spatec/schema"
)

// image is an image as a container of this session runs it.
type image struct {
	// ref is the reference containers are created from: the declared one,
	// or for a pinned image repo@digest.
	ref string
	// build is how the session made sure of it.
	build *schema.Build
	// id is the image's content ID, "sha256:…".
	id string
	// recipe is the digest of the build it was made from, if spatec built
	// it (a Debian recipe, a layered build).
	recipe string
}

// ensureImage makes the engine hold the image ref, building it as build
// says, or pulling it by its pin (digest, else the environment's) when
// missing (nil build), once per
// session: every container and repetition that names it runs the same
// image. An image an authoritative environment has not pinned, or a
// missing one that may not be pulled, is a refusal.
func (s *Session) ensureImage(ctx context.Context, ref, digest string, build *schema.Build) (image, error) {
	if img, ok := s.images[ref]; ok {
		if !reflect.DeepEqual(img.build, build) {
			return image{}, refusef("image %s is declared twice, built two ways (%s and %s); give each build its own image reference",
				ref, describeBuild(img.build, s.env.Arch), describeBuild(build, s.env.Arch))
		}
		return img, nil
	}
	r := s.runner
	img := image{ref: ref, build: build}
	switch {
	case build == nil:
		pinned, err := s.present(ctx, ref, digest)
		if err != nil {
			return image{}, err
		}
		img.ref = pinned
	case build.Program != "":
		if err := BuildProgram(ctx, r.Engine, r.SourceDir, ref, build.Program, s.env.Arch); err != nil {
			return image{}, err
		}
	case build.Layered != nil:
		// The base is pinned like any image the session runs, and the
		// pin is part of what the build is named by.
		decl := *build.Layered
		base, err := s.present(ctx, decl.From, "")
		if err != nil {
			return image{}, fmt.Errorf("the base of image %s: %w", ref, err)
		}
		decl.From = base
		// What it adds is checked by the environment's pins; CheckPinned
		// refused an image without them before anything started.
		pinned, missing := layered.Pin(decl, &s.env)
		if len(missing) > 0 {
			return image{}, &Refusal{artefact.Refusal(s.env.Name, missing)}
		}
		b := &layered.Builder{Engine: r.Engine, CacheDir: r.cache("downloads"), Progress: r.Progress, Arch: s.env.Arch}
		built, err := b.Ensure(ctx, ref, pinned)
		if err != nil {
			return image{}, err
		}
		img.recipe = built.Digest
		if built.Built {
			r.logf("built image %s (%s) on %s", ref, built.ID, base)
		}
	case build.Debian != nil:
		recipe := *build.Debian
		var missing []artefact.Unpinned
		if recipe.Downloads, missing = artefact.PinDownloads(recipe.Downloads, &s.env); len(missing) > 0 {
			return image{}, &Refusal{artefact.Refusal(s.env.Name, missing)}
		}
		b := &debimage.Builder{Engine: r.Engine, CacheDir: r.cache("rootfs"), Progress: r.Progress, Arch: s.env.Arch,
			Downloads: &artefact.Fetcher{CacheDir: r.cache("downloads"), Progress: r.Progress},
			Compiler:  &compile.Tree{Dir: r.SourceDir, CacheDir: r.cache("compile"), Progress: r.Progress, Arch: s.env.Arch}}
		built, err := b.Ensure(ctx, ref, recipe)
		if err != nil {
			return image{}, err
		}
		img.recipe = built.Recipe
		if built.Built {
			r.logf("built image %s (%s) from recipe %s", ref, built.ID, built.Recipe)
		}
	}
	found, err := r.Engine.ImageDigest(ctx, img.ref)
	if err != nil {
		var missing *engine.ImageMissingError
		if errors.As(err, &missing) {
			return image{}, &Refusal{err.Error()}
		}
		return image{}, err
	}
	// Whatever made it, an image for another architecture would not run
	// here, or would run emulated and be measured so.
	if got := string(schema.ArchOf(found.Architecture)); found.Architecture != "" && got != s.env.Arch.Name() {
		return image{}, refusef("image %s is for %s (its config says %s), and %s runs %s images: %s",
			img.ref, cmp.Or(got, "another architecture"), found.Architecture, s.env.Name, s.env.Arch.Name(), archFix(build))
	}
	img.id = found.ID
	s.images[ref] = img
	return img, nil
}

// archFix says how to get an image for the environment's architecture.
func archFix(b *schema.Build) string {
	if b == nil {
		return "pin a digest that serves that architecture (a multi-platform index, which the engine resolves to its own), or remove the image so that it is pulled again"
	}
	if b.Layered != nil {
		return "its base " + b.Layered.From + " is for another architecture: remove it, so that it is pulled again by its pin on this engine"
	}
	return "remove the image, and spatec builds it again"
}

// checkSources refuses a plan whose images spatec builds from the tree are
// built from other sources now than when it was planned: a reviewed plan
// runs the program that was reviewed (C16). A reviewed plan that pins no
// sources for such an image is refused too: nothing would bind it.
func (s *Session) checkSources(plan *schema.Plan, evidence string) error {
	tree := compile.Tree{Dir: s.runner.SourceDir}
	for _, n := range plan.ContainerNames() {
		c := plan.Entrant.Containers[n]
		want, pinned := plan.Sources[c.Image]
		if !pinned && evidence != record.EvidenceMeasured {
			continue
		}
		got, err := tree.Source(c.Build)
		if err != nil {
			return refusef("C16: the sources of image %s cannot be read, so nothing shows it is the program the plan was made with: %v", c.Image, err)
		}
		switch {
		case got == "":
		case !pinned:
			return refusef("C16: the plan pins no sources for image %s, which spatec builds from this tree, so it does not bind the program that would run; plan it again with `spatec plan --env %s %s:%s -o json`, review it, and run that",
				c.Image, plan.Env.Name, plan.Entrant.Name, plan.Variant)
		case got != want:
			return refusef("C16: image %s was planned from sources %s, and this tree gives %s: %s changed since the plan was made; check out the tree it was made from, or plan it again with `spatec plan --env %s %s:%s -o json` and review it",
				c.Image, want, got, compiledFrom(c.Build), plan.Env.Name, plan.Entrant.Name, plan.Variant)
		}
	}
	return nil
}

// compiledFrom names what in the tree an image is built from.
func compiledFrom(b *schema.Build) string {
	if b.Program != "" {
		return "the Go program " + b.Program + " (or a package of this module it imports)"
	}
	var projects []string
	for _, c := range b.Debian.Compile {
		if c.Cargo != nil {
			projects = append(projects, c.Cargo.Crate)
		} else if c.Maven != nil {
			projects = append(projects, c.Maven.Project)
		}
	}
	return "what its recipe compiles (" + strings.Join(projects, ", ") + ")"
}

// pinned is the reference a container runs for the image ref: ref itself
// when it carries a digest, else repo@digest from digest (an infrastructure
// image's own) or the environment's pins. An authoritative environment
// refuses an image that is neither (C16); a fixture runs ref as written.
func (s *Session) pinned(ref, digest string) (string, error) {
	if strings.Contains(ref, "@") {
		return ref, nil
	}
	if digest == "" {
		digest = s.env.Pins[ref]
	}
	if digest != "" {
		repo := ref
		if i := strings.LastIndex(repo, ":"); i > strings.LastIndex(repo, "/") {
			repo = repo[:i] // the tag; a registry's port stays
		}
		return repo + "@" + digest, nil
	}
	if s.env.Class == "authoritative" {
		return "", refusef("C16: image %s is not pinned in %s, so what runs could change under the same name; run `spatec pin --env %s` on a host that reaches its registry, review the digests it writes to envs/%s/pins.cue, and commit them",
			ref, s.env.Name, s.env.Name, s.env.Name)
	}
	return ref, nil
}

// present pins ref and makes sure the engine holds it, pulling it by its
// digest, with progress, when it is missing and the runner may pull. Only
// a pinned image is pulled: a tag's content can change between two pulls.
func (s *Session) present(ctx context.Context, ref, digest string) (string, error) {
	r := s.runner
	pinned, err := s.pinned(ref, digest)
	if err != nil {
		return "", err
	}
	ok, err := r.Engine.ImageExists(ctx, pinned)
	if err != nil || ok {
		return pinned, err
	}
	if !strings.Contains(pinned, "@") {
		return "", &Refusal{(&engine.ImageMissingError{Ref: pinned}).Error() + "; or pin it (spatec pin) so that spatec pulls it by its digest"}
	}
	if r.NoPull {
		return "", refusef("image %s is not on this engine, and pulling is off (--pull=never): load it first (docker load, or pull it where a registry can be reached)", pinned)
	}
	r.Progress.Start("image/pull", 0, "bytes")
	r.Progress.Printf("pulling %s", pinned)
	err = r.Engine.Pull(ctx, pinned, func(done, total int64) {
		r.Progress.SetTotal(total)
		r.Progress.Set(done)
	})
	if err != nil {
		r.Progress.Fail(err)
		return "", &Refusal{fmt.Sprintf("image %s is not on this engine and could not be pulled: %v", pinned, err)}
	}
	r.Progress.End()
	return pinned, nil
}

// BuildProgram compiles a Go program of the module checked out at src
// statically for Linux on arch and builds it into a FROM scratch image
// tagged ref on e, declared for arch, so that it needs no registry.
func BuildProgram(ctx context.Context, e engine.Engine, src, ref, program string, arch schema.Arch) error {
	dir, err := os.MkdirTemp("", "spatec-build-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin, err := CompileProgram(ctx, src, program, dir, arch)
	if err != nil {
		return fmt.Errorf("image %s: %w", ref, err)
	}
	b, err := os.ReadFile(bin)
	if err != nil {
		return err
	}
	name := filepath.Base(bin)
	_, err = e.BuildScratchImage(ctx, engine.ScratchImage{
		Tag:        ref,
		Files:      map[string][]byte{name: b},
		Entrypoint: []string{"/" + name},
		Labels:     map[string]string{"dev.spatec.program": program},
		Arch:       arch.Name(),
	})
	return err
}

// CompileProgram compiles a Go program of the module checked out at src,
// statically (no cgo), for Linux on arch, into dir, and returns the
// binary's path. Go cross-compiles by itself: any host builds for any
// architecture.
func CompileProgram(ctx context.Context, src, program, dir string, arch schema.Arch) (string, error) {
	if src == "" {
		return "", fmt.Errorf("%s is built from this module, which needs a spatec checkout: run spatec from one", program)
	}
	bin := filepath.Join(dir, path.Base(program))
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", bin, program)
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch.Name())
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building %s for linux/%s: %w\n%s", program, arch.Name(), err, out)
	}
	return bin, nil
}

// cache is the directory of the runner's cache for one kind of thing, or ""
// when the runner keeps none.
func (r *Runner) cache(kind string) string {
	if r.CacheDir == "" {
		return ""
	}
	return filepath.Join(r.CacheDir, kind)
}

// describeBuild says in a few words how an image is made for arch.
func describeBuild(b *schema.Build, arch schema.Arch) string {
	switch {
	case b == nil:
		return "present on the engine"
	case b.Program != "":
		return "from the program " + b.Program
	case b.Debian != nil:
		return "from Debian recipe " + debimage.Digest(*b.Debian, arch)
	case b.Layered != nil:
		return "on " + b.Layered.From + ", build " + layered.Digest(layered.Pinned{Layered: *b.Layered}, arch)
	}
	return "from an empty build"
}

// prepareImages builds the images the plan builds itself, checks the others
// are present, records their digests, and reads the entrant's version
// inside its image: a mismatch with the pin refuses the run (C16).
func (run *armRun) prepareImages(ctx context.Context) error {
	for _, n := range run.plan.ContainerNames() {
		c := run.plan.Entrant.Containers[n]
		img, err := run.s.ensureImage(ctx, c.Image, "", c.Build)
		if err != nil {
			var ref *Refusal
			if errors.As(err, &ref) {
				return refusef("%s: container %s: %v", run.plan.Entrant.Name, n, ref.Reason)
			}
			return err
		}
		run.rec.SUT.Containers = append(run.rec.SUT.Containers, record.Container{
			Name: n, Role: c.Role, Image: img.ref, ImageDigest: img.id, Recipe: img.recipe,
			CPUs: fmt.Sprintf("%.2f", c.CPUs), MemoryBytes: c.Memory,
		})
	}

	v := run.plan.Entrant.Version
	probe := run.plan.Entrant.Containers[v.Container]
	version, err := run.s.readVersion(ctx, run.plan.Entrant.Name, run.s.images[probe.Image], run.id, v.Command, v.Match)
	if err != nil {
		return err
	}
	run.rec.SUT.Version = version
	if version != v.Pin {
		return refusef("C16: %s: image %s runs version %s; the entrant pins %s: rebuild the image at the pinned version or update the pin",
			run.plan.Entrant.Name, probe.Image, version, v.Pin)
	}
	return nil
}

// readVersion runs command inside image, with no network, and returns the
// first group of match in what it prints: the version of what the image
// runs, read where it runs (C16). Labels carry run.
func (s *Session) readVersion(ctx context.Context, what string, img image, run string, command []string, match string) (string, error) {
	re, err := regexp.Compile(match)
	if err != nil {
		return "", refusef("C16: %s: version.match %q is not a regular expression: %v", what, match, err)
	}
	code, out, err := s.runner.Engine.RunOnce(ctx, engine.ContainerSpec{
		// Named for what it reads too: a session reads its services'
		// versions at once.
		Name:        "spatec-version-" + run[len(run)-12:] + "-" + versionName(what),
		Image:       img.ref,
		ImageID:     img.id,
		Entrypoint:  command,
		Labels:      s.labels(LabelRun, run),
		NetworkMode: "none",
	}, nil)
	if err != nil {
		return "", fmt.Errorf("reading the version of %s inside %s: %w", what, img.ref, err)
	}
	m := re.FindStringSubmatch(out)
	if code != 0 || len(m) < 2 {
		return "", refusef("C16: %s: %s printed no version matching %q (exit code %d); output:\n%s",
			what, strings.Join(command, " "), match, code, strings.TrimSpace(out))
	}
	return m[1], nil
}

// versionName is what, as a container and pod name allows it: lower-case
// letters, digits and hyphens, at most 24 of them.
func versionName(what string) string {
	b := []byte(strings.ToLower(what))
	for i, c := range b {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			b[i] = '-'
		}
	}
	return strings.Trim(string(b[:min(len(b), 24)]), "-")
}

// CheckPinned refuses plans whose images add what env has not pinned: a
// download declared without its sha256, or a Maven artifact whose closure
// env does not hold. Nothing would check what goes into the image, in a
// fixture as anywhere (there is nothing else to check the jars by), so
// nothing starts (C16). Each image is named once, with the command that
// pins it.
func CheckPinned(env schema.Environment, plans []*schema.Plan) error {
	var refused []string
	seen := map[string]bool{}
	check := func(what, ref string, b *schema.Build) {
		if b == nil || seen[ref] {
			return
		}
		seen[ref] = true
		var missing []artefact.Unpinned
		switch {
		case b.Layered != nil:
			_, missing = layered.Pin(*b.Layered, &env)
		case b.Debian != nil:
			_, missing = artefact.PinDownloads(b.Debian.Downloads, &env)
		}
		if len(missing) > 0 {
			refused = append(refused, fmt.Sprintf("%s: image %s: %s", what, ref, artefact.Refusal(env.Name, missing)))
		}
	}
	for _, svc := range env.Infra.Services() {
		if svc.Run == "container" && svc.Image != nil {
			check("the image of "+svc.Name, svc.Image.Ref, svc.Build)
		}
	}
	for _, p := range plans {
		for _, n := range p.ContainerNames() {
			c := p.Entrant.Containers[n]
			check(fmt.Sprintf("%s: container %s", p.Entrant.Name, n), c.Image, c.Build)
		}
	}
	if len(refused) > 0 {
		return refusef("%s", strings.Join(refused, "\nREFUSED: "))
	}
	return nil
}
