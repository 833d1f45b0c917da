package exec

import (
	"context"
	"errors"
	"fmt"
	"time"

	"spatec.dev/spatec/schema"
)

// Built is one image BuildImages made, or could not make.
type Built struct {
	// Ref is the image's reference, as declared.
	Ref string
	// Build says how spatec makes it.
	Build *schema.Build
	// ID is its content ID, "sha256:…".
	ID string
	// Architecture is the one its config declares, as the engine reports
	// it.
	Architecture string
	// Recipe names the Debian recipe or layered build it was made from;
	// "" for a Go program.
	Recipe string
	// Took is how long making it took; next to nothing when the engine
	// had it already.
	Took time.Duration
	// Err says why it could not be made; nil when it was.
	Err error
}

// BuildImages makes every image spatec builds for the plans on env (their
// containers' and env's services'; not those pulled) for env's
// architecture, on the runner's engine, whatever the engine's own: the
// images a session makes sure of before it starts anything, made without
// a session, so that the images of another host can be built and looked
// at here (bench/aarch64.sh builds the arm64 ones of c8g-8xl-ec2-docker on
// an x86-64 host). Nothing runs and nothing is pulled but a layered
// build's pinned base. An image that cannot be made says why, and the
// others are made all the same; each image is made once.
func (r *Runner) BuildImages(ctx context.Context, env schema.Environment, plans ...*schema.Plan) []Built {
	s := &Session{runner: r, env: env, images: map[string]image{}}
	var out []Built
	seen := map[string]bool{}
	build := func(ref string, b *schema.Build) {
		if b == nil || seen[ref] {
			return
		}
		seen[ref] = true
		start := time.Now()
		img, err := s.ensureImage(ctx, ref, "", b)
		built := Built{Ref: ref, Build: b, ID: img.id, Recipe: img.recipe, Took: time.Since(start), Err: err}
		var refused *Refusal
		if errors.As(err, &refused) {
			built.Err = errors.New(refused.Reason)
		}
		if err == nil {
			found, err := r.Engine.ImageDigest(ctx, img.ref)
			if err != nil {
				built.Err = fmt.Errorf("looking image %s up once made: %w", ref, err)
			}
			built.Architecture = found.Architecture
		}
		out = append(out, built)
	}
	for _, svc := range env.Infra.Services() {
		if svc.Image != nil {
			build(svc.Image.Ref, svc.Build)
		}
	}
	for _, p := range plans {
		for _, n := range p.ContainerNames() {
			c := p.Entrant.Containers[n]
			build(c.Image, c.Build)
		}
	}
	return out
}
