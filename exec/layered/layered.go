// Package layered builds an image from a base image and what an entrant
// adds to it: artefacts of a pinned release, downloaded and checked against
// their sha256, and files. It is how a system runs as its users run it (the
// vendor's image) with the plugin or job the benchmark needs (Kafka
// Connect's ClickHouse sink, say), without trusting a moving download.
//
// A Maven artifact it adds goes in with its runtime closure, as the
// environment pinned it (each jar by URL and sha256; `spatec pin` resolves
// it): the build downloads the pinned jars and checks them like any
// download, and resolves nothing itself.
//
// The build is named by the digest of its declaration with its pins,
// carried as a label: an unchanged declaration is not built again, and a
// re-pinned one is. Downloads are kept in a cache directory by their
// checksum.
package layered

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"spatec.dev/spatec/exec/artefact"
	"spatec.dev/spatec/exec/engine"
	"spatec.dev/spatec/exec/progress"
	"spatec.dev/spatec/schema"
)

// LabelBuild is the image label carrying the digest of the declaration the
// image was built from.
const LabelBuild = "dev.spatec.layered"

// format versions how an image is assembled; it is part of the digest.
const format = 2 // 2: a COPY per destination, the base's directories kept

// Engine is what building needs of the container engine.
type Engine interface {
	ImageDigest(ctx context.Context, ref string) (engine.Image, error)
	BuildContextDir(ctx context.Context, tag, dir string, labels map[string]string) (string, error)
}

// Builder builds layered images on one engine.
type Builder struct {
	Engine Engine
	// CacheDir keeps downloads by their sha256; "" keeps none.
	CacheDir string
	// Progress reports downloads; nil reports nothing.
	Progress *progress.Reporter
	// Client fetches downloads; nil means http.DefaultClient.
	Client *http.Client
	// Arch is the architecture the image is for, which names it with its
	// declaration; the base, pulled by its pin on an engine of that
	// architecture, makes it one.
	Arch schema.Arch
}

// Image is a layered image on the engine.
type Image struct {
	Ref, ID string
	// Digest names the declaration it was built from.
	Digest string
	// Built tells whether this call built it.
	Built bool
}

// Pinned is a declaration with what its environment pins for it: every
// download with its sha256, and the jars of each Maven artifact's closure.
type Pinned struct {
	schema.Layered
	// Closures holds the jars of each of Layered.Maven, in order, as
	// downloads into its directory.
	Closures [][]schema.Download
}

// Pin gives l the pins of env. What env has not pinned is returned, and
// an image with anything unpinned is not built.
func Pin(l schema.Layered, env *schema.Environment) (Pinned, []artefact.Unpinned) {
	p := Pinned{Layered: l}
	var missing []artefact.Unpinned
	p.Downloads, missing = artefact.PinDownloads(l.Downloads, env)
	for i := range l.Maven {
		jars, ok := artefact.PinClosure(l.Maven[i], env)
		if !ok {
			missing = append(missing, artefact.Unpinned{Maven: &l.Maven[i]})
		}
		p.Closures = append(p.Closures, jars)
	}
	return p, missing
}

// Digest names a declaration with its pins, built for arch. The base's pin
// may be a multi-platform index, the same on every architecture, so the
// architecture is named with it: an image built for one is never taken for
// another's (amd64 is left out, as it was before).
func Digest(p Pinned, arch schema.Arch) string {
	b, err := json.Marshal(struct {
		Format   int                 `json:"format"`
		Layered  schema.Layered      `json:"layered"`
		Closures [][]schema.Download `json:"closures,omitempty"`
		Arch     schema.Arch         `json:"arch,omitzero"`
	}{format, p.Layered, p.Closures, arch})
	if err != nil {
		panic(fmt.Sprintf("encoding a layered build: %v", err)) // plain data: a failure is a bug
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Ensure makes the engine hold image ref built from p: as it is when the
// engine has ref built from the same declaration, pins and architecture,
// else built on p.From, which must be on the engine already (the session
// pulls it by its pin).
func (b *Builder) Ensure(ctx context.Context, ref string, p Pinned) (Image, error) {
	if len(p.Closures) != len(p.Maven) {
		return Image{}, fmt.Errorf("image %s adds %d Maven closures and %d are pinned", ref, len(p.Maven), len(p.Closures))
	}
	for _, d := range p.Downloads {
		if d.SHA256 == "" {
			return Image{}, fmt.Errorf("image %s: download %s has no sha256 to check it by", ref, d.URL)
		}
	}
	l := p.Layered
	want := Digest(p, b.Arch)
	if img, ok, err := engine.Built(ctx, b.Engine.ImageDigest, ref, LabelBuild, want); err != nil || ok {
		return Image{Ref: ref, ID: img.ID, Digest: want}, err
	}
	if _, err := b.Engine.ImageDigest(ctx, l.From); err != nil {
		return Image{}, fmt.Errorf("image %s is built on %s: %w", ref, l.From, err)
	}
	dir, err := os.MkdirTemp("", "spatec-layered-")
	if err != nil {
		return Image{}, err
	}
	defer os.RemoveAll(dir)
	if err := b.context(ctx, dir, p); err != nil {
		return Image{}, fmt.Errorf("image %s: %w", ref, err)
	}
	id, err := b.Engine.BuildContextDir(ctx, ref, dir, map[string]string{LabelBuild: want})
	if err != nil {
		return Image{}, err
	}
	return Image{Ref: ref, ID: id, Digest: want, Built: true}, nil
}

// copies are the COPY instructions that put the context's rootfs/ into the
// image: one per destination the declaration names, not one of the whole
// tree, since a copied directory takes root's ownership over the base
// image's own (a base that runs as another user, such as Kafka's, would
// lose its /opt/kafka). A Maven closure's directory is one destination,
// however many jars it holds: an image has a bounded number of layers.
func copies(l schema.Layered) []string {
	var out []string
	for _, d := range l.Downloads {
		if d.Unzip != nil || d.Untar != nil {
			out = append(out, fmt.Sprintf("rootfs%s/ %s/", d.To, d.To))
		} else {
			out = append(out, fmt.Sprintf("rootfs%s %s", d.To, d.To))
		}
	}
	for _, m := range l.Maven {
		out = append(out, fmt.Sprintf("rootfs%s/ %s/", m.To, m.To))
	}
	for _, name := range slices.Sorted(maps.Keys(l.Files)) {
		out = append(out, fmt.Sprintf("rootfs%s %s", name, name))
	}
	return out
}

// context writes the build context: a Dockerfile, and under rootfs/ every
// file, download and closure's jar at its place in the image.
func (b *Builder) context(ctx context.Context, dir string, p Pinned) error {
	l := p.Layered
	rootfs := filepath.Join(dir, "rootfs")
	put := func(name string, mode int64, r io.Reader) error {
		if !path.IsAbs(name) || path.Clean(name) != name {
			return fmt.Errorf("%q: give a clean absolute path in the image", name)
		}
		dst := filepath.Join(rootfs, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, os.FileMode(mode))
		if err != nil {
			return err
		}
		if _, err := io.Copy(f, r); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}
	if err := os.MkdirAll(rootfs, 0o755); err != nil {
		return err
	}
	fetcher := artefact.Fetcher{CacheDir: b.CacheDir, Progress: b.Progress, Client: b.Client}
	downloads := slices.Clone(l.Downloads)
	for i, jars := range p.Closures {
		// The directory is made even for a closure with no jar, so that
		// its COPY has something to copy.
		to := l.Maven[i].To
		if !path.IsAbs(to) || path.Clean(to) != to {
			return fmt.Errorf("maven %s: to %q: give a clean absolute path in the image", l.Maven[i].Artifact, to)
		}
		if err := os.MkdirAll(filepath.Join(rootfs, filepath.FromSlash(to)), 0o755); err != nil {
			return err
		}
		// Two jars of one name (from two groups) would overwrite each
		// other in the directory, and the image would lack one.
		named := map[string]string{}
		for _, j := range jars {
			if other, ok := named[j.To]; ok {
				return fmt.Errorf("the closure of %s puts %s and %s both at %s", l.Maven[i].Artifact, other, j.URL, j.To)
			}
			named[j.To] = j.URL
		}
		downloads = append(downloads, jars...)
	}
	for _, d := range downloads {
		file, done, err := fetcher.Fetch(ctx, d)
		if err != nil {
			return err
		}
		err = artefact.Place(d, file, put)
		done()
		if err != nil {
			return fmt.Errorf("unpacking %s: %w", d.URL, err)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(l.Files)) {
		if err := put(name, 0o644, strings.NewReader(l.Files[name])); err != nil {
			return fmt.Errorf("file %w", err)
		}
	}
	var df strings.Builder
	fmt.Fprintf(&df, "FROM %s\n", l.From)
	for _, c := range copies(l) {
		fmt.Fprintf(&df, "COPY %s\n", c)
	}
	if l.User != "" {
		fmt.Fprintf(&df, "USER %s\n", l.User)
	}
	if len(l.Entrypoint) > 0 {
		e, err := json.Marshal(l.Entrypoint)
		if err != nil {
			return err
		}
		fmt.Fprintf(&df, "ENTRYPOINT %s\n", e)
	}
	return os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(df.String()), 0o644)
}
