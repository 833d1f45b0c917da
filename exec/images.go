package exec

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"reflect"
	"strings"

	"spatec.dev/spatec/exec/debimage"
	"spatec.dev/spatec/exec/engine"
	"spatec.dev/spatec/exec/layered"
	"spatec.dev/spatec/schema"
)

// image is an image as a container of this session runs it.
type image struct {
	// ref is the reference containers are created from.
	ref string
	// build is how the session made sure of it.
	build *schema.Build
	// id is the image's content ID, "sha256:…".
	id string
	// recipe is the digest of the Debian recipe it was built from, if any.
	recipe string
}

// ensureImage makes the engine hold the image ref, building it as build
// says (nil: it must be there already), once per session: every container
// and repetition that names it runs the same image. A missing image is a
// refusal; nothing is pulled.
func (s *Session) ensureImage(ctx context.Context, ref string, build *schema.Build) (image, error) {
	if img, ok := s.images[ref]; ok {
		if !reflect.DeepEqual(img.build, build) {
			return image{}, refusef("image %s is declared twice, built two ways (%s and %s); give each build its own image reference",
				ref, describeBuild(img.build), describeBuild(build))
		}
		return img, nil
	}
	r := s.runner
	img := image{ref: ref, build: build}
	switch {
	case build == nil:
	case build.Program != "":
		if err := r.buildProgram(ctx, ref, build.Program); err != nil {
			return image{}, err
		}
	case build.Layered != nil:
		b := &layered.Builder{Engine: r.Engine, CacheDir: r.cache("downloads"), Progress: r.Progress}
		built, err := b.Ensure(ctx, ref, *build.Layered)
		if err != nil {
			var missing *engine.ImageMissingError
			if errors.As(err, &missing) {
				return image{}, &Refusal{err.Error()}
			}
			return image{}, err
		}
		img.recipe = built.Digest
		if built.Built {
			r.logf("built image %s (%s) on %s", ref, built.ID, build.Layered.From)
		}
	case build.Debian != nil:
		b := &debimage.Builder{Engine: r.Engine, CacheDir: r.cache("rootfs"), Progress: r.Progress}
		built, err := b.Ensure(ctx, ref, *build.Debian)
		if err != nil {
			return image{}, err
		}
		img.recipe = built.Recipe
		if built.Built {
			r.logf("built image %s (%s) from recipe %s", ref, built.ID, built.Recipe)
		}
	}
	found, err := r.Engine.ImageDigest(ctx, ref)
	if err != nil {
		var missing *engine.ImageMissingError
		if errors.As(err, &missing) {
			return image{}, &Refusal{err.Error()}
		}
		return image{}, err
	}
	img.id = found.ID
	s.images[ref] = img
	return img, nil
}

// buildProgram compiles a Go program of this module statically and builds
// it into a FROM scratch image tagged ref, so that it needs no registry.
func (r *Runner) buildProgram(ctx context.Context, ref, program string) error {
	if r.SourceDir == "" {
		return fmt.Errorf("image %s is built from %s, which needs a spatec checkout: run spatec from one", ref, program)
	}
	dir, err := os.MkdirTemp("", "spatec-build-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	name := path.Base(program)
	bin := filepath.Join(dir, name)
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", bin, program)
	cmd.Dir = r.SourceDir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building %s for image %s: %w\n%s", program, ref, err, out)
	}
	b, err := os.ReadFile(bin)
	if err != nil {
		return err
	}
	_, err = r.Engine.BuildScratchImage(ctx, engine.ScratchImage{
		Tag:        ref,
		Files:      map[string][]byte{name: b},
		Entrypoint: []string{"/" + name},
		Labels:     map[string]string{"dev.spatec.program": program},
	})
	return err
}

// cache is the directory of the runner's cache for one kind of thing, or ""
// when the runner keeps none.
func (r *Runner) cache(kind string) string {
	if r.CacheDir == "" {
		return ""
	}
	return filepath.Join(r.CacheDir, kind)
}

// describeBuild says in a few words how an image is made.
func describeBuild(b *schema.Build) string {
	switch {
	case b == nil:
		return "present on the engine"
	case b.Program != "":
		return "from the program " + b.Program
	case b.Debian != nil:
		return "from Debian recipe " + debimage.Digest(*b.Debian)
	case b.Layered != nil:
		return "on " + b.Layered.From + ", build " + layered.Digest(*b.Layered)
	}
	return "from an empty build"
}

// serviceRef is the reference an infrastructure service runs: by digest
// when it is pinned (C16), else as written.
func serviceRef(svc schema.Service) string {
	if svc.Image.Digest != "" {
		repo := svc.Image.Ref
		if i := strings.LastIndex(repo, ":"); i > strings.LastIndex(repo, "/") {
			repo = repo[:i] // the tag; a registry's port stays
		}
		return repo + "@" + svc.Image.Digest
	}
	return svc.Image.Ref
}
