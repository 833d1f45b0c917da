// Package layered builds an image from a base image and what an entrant
// adds to it: artefacts of a pinned release, downloaded and checked against
// their sha256, and files. It is how a system runs as its users run it (the
// vendor's image) with the plugin or job the benchmark needs (Kafka
// Connect's ClickHouse sink, say), without trusting a moving download.
//
// The build is named by the digest of its declaration, carried as a label:
// an unchanged declaration is not built again. Downloads are kept in a
// cache directory by their checksum.
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

// Digest names a declaration built for arch. The base's pin may be a
// multi-platform index, the same on every architecture, so the
// architecture is named with it: an image built for one is never taken for
// another's (amd64 is left out, as it was before).
func Digest(l schema.Layered, arch schema.Arch) string {
	b, err := json.Marshal(struct {
		Format  int            `json:"format"`
		Layered schema.Layered `json:"layered"`
		Arch    schema.Arch    `json:"arch,omitzero"`
	}{format, l, arch})
	if err != nil {
		panic(fmt.Sprintf("encoding a layered build: %v", err)) // plain data: a failure is a bug
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// digest names l as this builder builds it.
func (b *Builder) digest(l schema.Layered) string { return Digest(l, b.Arch) }

// Ensure makes the engine hold image ref built from l: as it is when the
// engine has ref built from the same declaration, else built on l.From,
// which must be on the engine already (the session pulls it by its pin).
func (b *Builder) Ensure(ctx context.Context, ref string, l schema.Layered) (Image, error) {
	want := b.digest(l)
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
	if err := b.context(ctx, dir, l); err != nil {
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
// lose its /opt/kafka).
func copies(l schema.Layered) []string {
	var out []string
	for _, d := range l.Downloads {
		if d.Unzip != nil || d.Untar != nil {
			out = append(out, fmt.Sprintf("rootfs%s/ %s/", d.To, d.To))
		} else {
			out = append(out, fmt.Sprintf("rootfs%s %s", d.To, d.To))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(l.Files)) {
		out = append(out, fmt.Sprintf("rootfs%s %s", name, name))
	}
	return out
}

// context writes the build context: a Dockerfile, and under rootfs/ every
// file and download at its place in the image.
func (b *Builder) context(ctx context.Context, dir string, l schema.Layered) error {
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
	for _, d := range l.Downloads {
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
