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
	"archive/zip"
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

	"spatec.dev/spatec/exec/engine"
	"spatec.dev/spatec/exec/progress"
	"spatec.dev/spatec/schema"
)

// LabelBuild is the image label carrying the digest of the declaration the
// image was built from.
const LabelBuild = "dev.spatec.layered"

// format versions how an image is assembled; it is part of the digest.
const format = 1

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
}

// Image is a layered image on the engine.
type Image struct {
	Ref, ID string
	// Digest names the declaration it was built from.
	Digest string
	// Built tells whether this call built it.
	Built bool
}

// Digest names a declaration.
func Digest(l schema.Layered) string {
	b, err := json.Marshal(struct {
		Format  int            `json:"format"`
		Layered schema.Layered `json:"layered"`
	}{format, l})
	if err != nil {
		panic(fmt.Sprintf("encoding a layered build: %v", err)) // plain data: a failure is a bug
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Ensure makes the engine hold image ref built from l: as it is when the
// engine has ref built from the same declaration, else built on l.From,
// which must be on the engine already (the session pulls it by its pin).
func (b *Builder) Ensure(ctx context.Context, ref string, l schema.Layered) (Image, error) {
	want := Digest(l)
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

// context writes the build context: a Dockerfile, and under rootfs/ every
// file and download at its place in the image.
func (b *Builder) context(ctx context.Context, dir string, l schema.Layered) error {
	rootfs := filepath.Join(dir, "rootfs")
	put := func(name string, r io.Reader) error {
		if !path.IsAbs(name) || path.Clean(name) != name {
			return fmt.Errorf("%q: give a clean absolute path in the image", name)
		}
		dst := filepath.Join(rootfs, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
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
	for _, d := range l.Downloads {
		file, err := b.fetch(ctx, d)
		if err != nil {
			return err
		}
		if d.Unzip == nil {
			f, err := os.Open(file)
			if err != nil {
				return err
			}
			err = put(d.To, f)
			f.Close()
			if err != nil {
				return fmt.Errorf("adding %s: %w", d.URL, err)
			}
			continue
		}
		if err := unzip(file, *d.Unzip, d.To, put); err != nil {
			return fmt.Errorf("unpacking %s: %w", d.URL, err)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(l.Files)) {
		if err := put(name, strings.NewReader(l.Files[name])); err != nil {
			return fmt.Errorf("file %w", err)
		}
	}
	var df strings.Builder
	fmt.Fprintf(&df, "FROM %s\nCOPY rootfs/ /\n", l.From)
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

// fetch returns the path of download d, from the cache or fetched, once its
// sha256 is the one declared.
func (b *Builder) fetch(ctx context.Context, d schema.Download) (string, error) {
	dir, keep := b.CacheDir, true
	if dir == "" {
		dir, keep = os.TempDir(), false
	}
	final := filepath.Join(dir, d.SHA256)
	if keep {
		if _, err := os.Stat(final); err == nil {
			return final, nil
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.URL, nil)
	if err != nil {
		return "", fmt.Errorf("downloading %s: %w", d.URL, err)
	}
	client := b.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", fmt.Errorf("downloading %s: %w", d.URL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("downloading %s: the server answered %s", d.URL, resp.Status)
	}
	tmp, err := os.CreateTemp(dir, d.SHA256+".*.partial")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	b.Progress.Start("image/download", resp.ContentLength, "bytes")
	h := sha256.New()
	_, err = io.Copy(io.MultiWriter(tmp, h, progressWriter{b.Progress}), resp.Body)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		b.Progress.Fail(err)
		return "", fmt.Errorf("downloading %s: %w", d.URL, err)
	}
	b.Progress.End()
	if got := hex.EncodeToString(h.Sum(nil)); got != d.SHA256 {
		return "", fmt.Errorf("%s has sha256 %s; the build declares %s: the published artefact changed, or the declaration is wrong; check the release and fix the checksum only if the new artefact is the one to measure", d.URL, got, d.SHA256)
	}
	if !keep {
		kept := tmp.Name() + ".download"
		return kept, os.Rename(tmp.Name(), kept)
	}
	return final, os.Rename(tmp.Name(), final)
}

type progressWriter struct{ p *progress.Reporter }

func (w progressWriter) Write(b []byte) (int, error) {
	w.p.Add(int64(len(b)))
	return len(b), nil
}

// unzip hands put every regular file of the zip at file whose name starts
// with prefix, at to joined with the rest of its name.
func unzip(file, prefix, to string, put func(string, io.Reader) error) error {
	zr, err := zip.OpenReader(file)
	if err != nil {
		return err
	}
	defer zr.Close()
	n := 0
	for _, f := range zr.File {
		rest, ok := strings.CutPrefix(f.Name, prefix)
		if !ok || rest == "" || f.FileInfo().IsDir() {
			continue
		}
		if strings.Contains(rest, "..") {
			return fmt.Errorf("entry %q leaves its directory", f.Name)
		}
		r, err := f.Open()
		if err != nil {
			return err
		}
		err = put(path.Join(to, rest), r)
		r.Close()
		if err != nil {
			return fmt.Errorf("entry %s: %w", f.Name, err)
		}
		n++
	}
	if n == 0 {
		return fmt.Errorf("no file under %q in the archive", prefix)
	}
	return nil
}
