package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	osexec "os/exec"
	"slices"
	"strings"

	"github.com/distribution/reference"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"spatec.dev/spatec/exec/engine"
	"spatec.dev/spatec/schema"
)

// ImageExists reports whether the image can run on the run's nodes: every
// node the engine places pods on holds it, as its status lists it, or this
// engine loaded it there, or the builder holds it (ImageDigest then loads
// it onto the nodes).
func (e *Engine) ImageExists(ctx context.Context, ref string) (bool, error) {
	if _, ok := e.loaded(ref); ok {
		return true, nil
	}
	if held, err := e.nodesHold(ctx, ref); err != nil || held {
		return held, err
	}
	if e.Builder == nil {
		return false, nil
	}
	_, err := e.Builder.ImageDigest(ctx, ref)
	var missing *engine.ImageMissingError
	if errors.As(err, &missing) {
		return false, nil
	}
	return err == nil, err
}

// nodesHold reports whether every node the run uses lists the image by
// this name.
func (e *Engine) nodesHold(ctx context.Context, ref string) (bool, error) {
	nodes, err := e.nodes(ctx)
	if err != nil {
		return false, err
	}
	for _, n := range nodes {
		if nodeImage(n, ref) == nil {
			return false, nil
		}
	}
	return true, nil
}

// nodes are the nodes the engine places pods on: the arm's, then each
// service's, each once.
func (e *Engine) nodes(ctx context.Context) ([]*corev1.Node, error) {
	places := []schema.Placement{e.Place}
	for _, svc := range slices.Sorted(maps.Keys(e.Services)) {
		places = append(places, e.Services[svc])
	}
	var out []*corev1.Node
	for _, p := range places {
		n, err := NodeFor(ctx, e.Client, p)
		if err != nil {
			return nil, err
		}
		if !slices.ContainsFunc(out, func(o *corev1.Node) bool { return o.Name == n.Name }) {
			out = append(out, n)
		}
	}
	return out, nil
}

// nodeImage is the node's image listed under ref's name, or nil.
func nodeImage(n *corev1.Node, ref string) *corev1.ContainerImage {
	want := normalize(ref)
	for i, img := range n.Status.Images {
		for _, name := range img.Names {
			if normalize(name) == want {
				return &n.Status.Images[i]
			}
		}
	}
	return nil
}

// normalize writes a reference in full ("docker.io/library/x:tag"), as a
// node lists it.
func normalize(ref string) string {
	n, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return ref
	}
	return reference.TagNameOnly(n).String()
}

// Pull refuses: a node pulls its images itself, and a pull inside a run's
// start would be measured as start-up.
func (e *Engine) Pull(ctx context.Context, ref string, _ func(done, total int64)) error {
	return fmt.Errorf("spatec does not pull onto nodes: pull %s onto the run's nodes (%s) first (crictl pull), or load it there", ref, e.nodeNames(ctx))
}

// nodeNames names the run's nodes for a message, or its placements when
// the nodes cannot be read.
func (e *Engine) nodeNames(ctx context.Context) string {
	nodes, err := e.nodes(ctx)
	if err != nil {
		return e.placeName()
	}
	names := make([]string, len(nodes))
	for i, n := range nodes {
		names[i] = n.Name
	}
	return strings.Join(names, ", ")
}

func (e *Engine) placeName() string {
	if e.Place.Node != "" {
		return e.Place.Node
	}
	return metav1.FormatLabelSelector(&metav1.LabelSelector{MatchLabels: e.Place.Labels})
}

// ImageDigest identifies an image for records: one spatec built by its
// content id, one the nodes pulled by its registry digest, which must be
// the same on every node the run uses. An image the builder holds (built
// by an earlier spatec, or a Debian recipe's) is loaded onto the nodes
// first, so that what is recorded is what the nodes run.
func (e *Engine) ImageDigest(ctx context.Context, ref string) (engine.Image, error) {
	if img, ok := e.loaded(ref); ok {
		return img, nil
	}
	if e.Builder != nil {
		if img, err := e.Builder.ImageDigest(ctx, ref); err == nil {
			if err := e.load(ctx, ref); err != nil {
				return engine.Image{}, err
			}
			return img, nil
		}
	}
	nodes, err := e.nodes(ctx)
	if err != nil {
		return engine.Image{}, err
	}
	// Every node the run uses must hold it, by one digest: a record names
	// one image.
	var found engine.Image
	var first string
	for _, n := range nodes {
		img := nodeImage(n, ref)
		if img == nil {
			return engine.Image{}, &engine.ImageMissingError{Ref: ref}
		}
		var digest string
		for _, name := range img.Names {
			if _, d, ok := strings.Cut(name, "@"); ok {
				digest = d
				if first == "" {
					found, first = engine.Image{ID: d, RepoDigests: []string{name}}, n.Name
				}
				break
			}
		}
		switch {
		case digest == "":
			return engine.Image{}, fmt.Errorf("image %s is on node %s by name only (%s): the node reports no digest to record; pin it by digest", ref, n.Name, strings.Join(img.Names, ", "))
		case digest != found.ID:
			return engine.Image{}, fmt.Errorf("image %s is %s on node %s and %s on node %s: a run's nodes must hold one image; pin it by digest", ref, found.ID, first, digest, n.Name)
		}
	}
	return found, nil
}

func (e *Engine) loaded(ref string) (engine.Image, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	img, ok := e.built[normalize(ref)]
	return img, ok
}

// BuildScratchImage builds the image with the builder and loads it onto
// the nodes.
func (e *Engine) BuildScratchImage(ctx context.Context, img engine.ScratchImage) (string, error) {
	if e.Builder == nil {
		return "", fmt.Errorf("image %s is built by spatec, and this environment has no builder", img.Tag)
	}
	id, err := e.Builder.BuildScratchImage(ctx, img)
	if err != nil {
		return "", err
	}
	return id, e.load(ctx, img.Tag)
}

// LoadImage loads an archive with the builder and onto the nodes.
func (e *Engine) LoadImage(ctx context.Context, archive io.Reader) ([]string, error) {
	if e.Builder == nil {
		return nil, errors.New("loading an image archive: this environment has no builder")
	}
	refs, err := e.Builder.LoadImage(ctx, archive)
	if err != nil {
		return nil, err
	}
	for _, r := range refs {
		if err := e.load(ctx, r); err != nil {
			return nil, err
		}
	}
	return refs, nil
}

// RemoveUnnamed removes an image a rebuild left on the builder. What the
// nodes hold is theirs to collect: the kubelet's image garbage collection
// removes images no pod uses.
func (e *Engine) RemoveUnnamed(ctx context.Context, id string) error {
	if e.Builder == nil {
		return nil
	}
	return e.Builder.RemoveUnnamed(ctx, id)
}

// BuildContextDir builds the image with the builder and loads it onto the
// nodes.
func (e *Engine) BuildContextDir(ctx context.Context, tag, dir string, labels map[string]string) (string, error) {
	if e.Builder == nil {
		return "", fmt.Errorf("image %s is built by spatec, and this environment has no builder", tag)
	}
	id, err := e.Builder.BuildContextDir(ctx, tag, dir, labels)
	if err != nil {
		return "", err
	}
	return id, e.load(ctx, tag)
}

// load writes the builder's image ref as an archive into the Load command.
func (e *Engine) load(ctx context.Context, ref string) error {
	if len(e.Load) == 0 {
		return fmt.Errorf("image %s was built here, and the environment declares no kubernetes.imageLoad command to bring it to the run's nodes (%s): declare one that loads an archive onto each of them, or push the image to a registry the nodes pull from and pin it", ref, e.nodeNames(ctx))
	}
	img, err := e.Builder.ImageDigest(ctx, ref)
	if err != nil {
		return err
	}
	archive, err := e.Builder.SaveImage(ctx, ref)
	if err != nil {
		return err
	}
	defer archive.Close()
	cmd := osexec.CommandContext(ctx, e.Load[0], e.Load[1:]...)
	cmd.Stdin = archive
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("loading image %s onto the run's nodes (%s) with %s: %w\n%s", ref, e.nodeNames(ctx), strings.Join(e.Load, " "), err, out)
	}
	e.mu.Lock()
	if e.built == nil {
		e.built = map[string]engine.Image{}
	}
	e.built[normalize(ref)] = img
	e.mu.Unlock()
	return nil
}
