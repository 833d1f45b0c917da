package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"

	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"

	"spatec.dev/spatec/exec/engine"
)

// RegistryDigest asks ref's registry, through the engine, which manifest
// digest ref resolves to now: a tag's current content, without pulling it.
func (e *Engine) RegistryDigest(ctx context.Context, ref string) (string, error) {
	resp, err := e.cli.DistributionInspect(ctx, ref, "")
	if err != nil {
		return "", fmt.Errorf("asking the registry for %s: %w", ref, err)
	}
	return string(resp.Descriptor.Digest), nil
}

// Pull pulls ref from its registry, reporting bytes done of the total
// known so far, over every layer, to progress (when not nil). Errors
// arrive inside the engine's stream, which is read to its end.
func (e *Engine) Pull(ctx context.Context, ref string, progress func(done, total int64)) error {
	rc, err := e.cli.ImagePull(ctx, ref, image.PullOptions{})
	if err != nil {
		return fmt.Errorf("pulling %s: %w", ref, err)
	}
	defer rc.Close()
	type layer struct{ done, total int64 }
	layers := map[string]layer{}
	dec := json.NewDecoder(rc)
	for {
		var msg struct {
			ID             string `json:"id"`
			Status         string `json:"status"`
			Error          string `json:"error"`
			ProgressDetail struct {
				Current int64 `json:"current"`
				Total   int64 `json:"total"`
			} `json:"progressDetail"`
		}
		if err := dec.Decode(&msg); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("pulling %s: reading the engine's answer: %w", ref, err)
		}
		if msg.Error != "" {
			return fmt.Errorf("pulling %s: the engine reports: %s", ref, msg.Error)
		}
		if msg.Status == "Downloading" && msg.ID != "" && progress != nil {
			layers[msg.ID] = layer{msg.ProgressDetail.Current, msg.ProgressDetail.Total}
			var done, total int64
			for _, l := range layers {
				done, total = done+l.done, total+l.total
			}
			progress(done, total)
		}
	}
}

// RemoveImage removes the image ref (its tag, and the image when no other
// tag holds it). A missing image is not an error.
func (e *Engine) RemoveImage(ctx context.Context, ref string) error {
	if _, err := e.cli.ImageRemove(ctx, ref, image.RemoveOptions{PruneChildren: true}); err != nil && !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("removing image %s: %w", ref, err)
	}
	return nil
}

// RemoveUnnamed removes image id when no tag names it any more and no
// container uses it: what building again under the same tag leaves behind,
// which would otherwise fill a bench host's disk one rebuild at a time. An
// image still named or still in use stays, and that is not an error.
func (e *Engine) RemoveUnnamed(ctx context.Context, id string) error {
	img, err := e.cli.ImageInspect(ctx, id)
	switch {
	case cerrdefs.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("looking up the replaced image %s: %w", id, err)
	case len(img.RepoTags) > 0:
		return nil
	}
	if _, err := e.cli.ImageRemove(ctx, id, image.RemoveOptions{PruneChildren: true}); err != nil && !cerrdefs.IsNotFound(err) && !cerrdefs.IsConflict(err) {
		return fmt.Errorf("removing the replaced image %s: %w", id, err)
	}
	return nil
}

// ImageExists reports whether the engine holds the image ref.
func (e *Engine) ImageExists(ctx context.Context, ref string) (bool, error) {
	if _, err := e.cli.ImageInspect(ctx, ref); err != nil {
		if cerrdefs.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("looking up image %s: %w", ref, err)
	}
	return true, nil
}

// ImageDigest identifies the image ref for records: its ID, repository
// digests and labels. A missing image is an *ImageMissingError.
func (e *Engine) ImageDigest(ctx context.Context, ref string) (engine.Image, error) {
	resp, err := e.cli.ImageInspect(ctx, ref)
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return engine.Image{}, &engine.ImageMissingError{Ref: ref}
		}
		return engine.Image{}, fmt.Errorf("looking up image %s: %w", ref, err)
	}
	img := engine.Image{ID: resp.ID, RepoDigests: resp.RepoDigests, Architecture: resp.Architecture}
	if resp.Config != nil {
		img.Labels = resp.Config.Labels
	}
	return img, nil
}

// LoadImage loads an image archive (the format `docker save` writes:
// manifest.json, the image config and its layers) through the engine's API
// and returns the IDs of the images it loaded. Errors arrive inside the
// response stream, which is read to its end.
func (e *Engine) LoadImage(ctx context.Context, archive io.Reader) ([]string, error) {
	resp, err := e.cli.ImageLoad(ctx, archive, client.ImageLoadWithQuiet(true))
	if err != nil {
		return nil, fmt.Errorf("loading an image archive: %w", err)
	}
	defer resp.Body.Close()
	var ids []string
	dec := json.NewDecoder(resp.Body)
	for {
		var msg struct {
			Stream      string `json:"stream"`
			Error       string `json:"error"`
			ErrorDetail *struct {
				Message string `json:"message"`
			} `json:"errorDetail"`
		}
		if err := dec.Decode(&msg); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, fmt.Errorf("loading an image archive: reading the engine's answer: %w", err)
		}
		if msg.ErrorDetail != nil && msg.ErrorDetail.Message != "" {
			msg.Error = msg.ErrorDetail.Message
		}
		if msg.Error != "" {
			return nil, fmt.Errorf("loading an image archive: the engine reports: %s", msg.Error)
		}
		// "Loaded image ID: sha256:…" or "Loaded image: name:tag".
		if id, ok := strings.CutPrefix(strings.TrimSpace(msg.Stream), "Loaded image ID: "); ok {
			ids = append(ids, id)
		} else if ref, ok := strings.CutPrefix(strings.TrimSpace(msg.Stream), "Loaded image: "); ok {
			ids = append(ids, ref)
		}
	}
	return ids, nil
}

// SaveImage writes the image ref as an archive in the format LoadImage
// reads (`docker save`), for another runtime to import.
func (e *Engine) SaveImage(ctx context.Context, ref string) (io.ReadCloser, error) {
	rc, err := e.cli.ImageSave(ctx, []string{ref})
	if err != nil {
		return nil, fmt.Errorf("saving image %s: %w", ref, err)
	}
	return rc, nil
}

// BuildScratchImage builds an image FROM scratch holding img.Files, through
// the engine's classic builder: no registry, no base image. It returns the
// image ID.
func (e *Engine) BuildScratchImage(ctx context.Context, img engine.ScratchImage) (string, error) {
	buildCtx, err := scratchContext(img)
	if err != nil {
		return "", fmt.Errorf("building image %s: %w", img.Tag, err)
	}
	platform := ""
	if img.Arch != "" {
		// The classic builder declares a FROM scratch image for the
		// platform it is asked; the engine's own otherwise.
		platform = "linux/" + img.Arch
	}
	return e.build(ctx, img.Tag, bytes.NewReader(buildCtx), img.Labels, platform)
}

// scratchContext writes the build context in memory: the files under
// rootfs/ and a generated Dockerfile copying them to /.
func scratchContext(img engine.ScratchImage) ([]byte, error) {
	if img.Tag == "" {
		return nil, errors.New("no tag given")
	}
	if len(img.Files) == 0 {
		return nil, errors.New("no files given; a scratch image holds only the files it is given")
	}
	if len(img.Entrypoint) == 0 {
		return nil, errors.New("no entrypoint given; a scratch image has no shell to fall back on")
	}
	files := make(map[string][]byte, len(img.Files))
	for name, data := range img.Files {
		clean := path.Clean("/" + name)
		if clean == "/" || slices.Contains(strings.Split(name, "/"), "..") {
			return nil, fmt.Errorf("file path %q: want a path inside the image such as \"burn\" or \"etc/app.conf\"", name)
		}
		files[clean] = data
	}
	if _, ok := files[img.Entrypoint[0]]; !ok {
		return nil, fmt.Errorf("entrypoint %q is not one of the image's files %v; give its absolute path inside the image", img.Entrypoint[0], slices.Sorted(maps.Keys(files)))
	}
	entrypoint, err := json.Marshal(img.Entrypoint)
	if err != nil {
		return nil, fmt.Errorf("encoding the entrypoint: %w", err)
	}
	dockerfile := fmt.Sprintf("FROM scratch\nCOPY rootfs/ /\nENTRYPOINT %s\n", entrypoint)

	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	// A fixed time keeps the context identical for identical files, so the
	// builder's cache applies.
	var epoch time.Time
	add := func(hdr *tar.Header, data []byte) error {
		hdr.ModTime = epoch
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	if err := add(&tar.Header{Name: "Dockerfile", Mode: 0o644, Size: int64(len(dockerfile)), Typeflag: tar.TypeReg}, []byte(dockerfile)); err != nil {
		return nil, fmt.Errorf("writing the build context: %w", err)
	}
	dirs := map[string]bool{}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		// Parent directories first, each once.
		for dir := path.Dir(name); dir != "/"; dir = path.Dir(dir) {
			if dirs[dir] {
				break
			}
			dirs[dir] = true
		}
	}
	for _, dir := range slices.Sorted(maps.Keys(dirs)) {
		if err := add(&tar.Header{Name: "rootfs" + dir + "/", Mode: 0o755, Typeflag: tar.TypeDir}, nil); err != nil {
			return nil, fmt.Errorf("writing the build context: %w", err)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		data := files[name]
		if err := add(&tar.Header{Name: "rootfs" + name, Mode: 0o755, Size: int64(len(data)), Typeflag: tar.TypeReg}, data); err != nil {
			return nil, fmt.Errorf("writing the build context: %w", err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("writing the build context: %w", err)
	}
	return buf.Bytes(), nil
}

// BuildContextDir builds the image tag from a build context directory with
// its own Dockerfile, through the engine's classic builder with no network,
// and returns the image ID. Without a registry the Dockerfile can only
// start FROM scratch or from an image already on the engine.
func (e *Engine) BuildContextDir(ctx context.Context, tag, dir string, labels map[string]string) (string, error) {
	buildCtx, err := tarDir(dir)
	if err != nil {
		return "", fmt.Errorf("building image %s from %s: %w", tag, dir, err)
	}
	return e.build(ctx, tag, bytes.NewReader(buildCtx), labels, "")
}

// tarDir packs a directory as a build context.
func tarDir(dir string) ([]byte, error) {
	if _, err := os.Stat(filepath.Join(dir, "Dockerfile")); err != nil {
		return nil, fmt.Errorf("a build context needs a Dockerfile: %w", err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		var link string
		if info.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		} else if !info.Mode().IsRegular() && !info.IsDir() {
			return fmt.Errorf("%s: only files, directories and symlinks can go into a build context", p)
		}
		hdr, err := tar.FileInfoHeader(info, link)
		if err != nil {
			return err
		}
		hdr.Name = filepath.ToSlash(rel)
		if info.IsDir() {
			hdr.Name += "/"
		}
		hdr.Uid, hdr.Gid, hdr.Uname, hdr.Gname = 0, 0, "", ""
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if !info.Mode().IsRegular() {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(tw, f)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("packing the build context: %w", err)
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("packing the build context: %w", err)
	}
	return buf.Bytes(), nil
}

// build sends a build context to the engine's classic builder (BuildKit
// needs a session this adapter does not run) and drains the response
// stream, where build errors arrive: the HTTP status is 200 either way.
// platform ("linux/arm64"), when set, is the one the image is declared
// for; "" is the engine's.
func (e *Engine) build(ctx context.Context, tag string, buildCtx io.Reader, labels map[string]string, platform string) (string, error) {
	// What tag names now, so that a rebuild does not leave it behind.
	prev, err := e.cli.ImageInspect(ctx, tag)
	if err != nil && !cerrdefs.IsNotFound(err) {
		return "", fmt.Errorf("building image %s: looking up the image it names now: %w", tag, err)
	}
	resp, err := e.cli.ImageBuild(ctx, buildCtx, build.ImageBuildOptions{
		Tags:        []string{tag},
		Dockerfile:  "Dockerfile",
		Labels:      labels,
		Remove:      true,
		ForceRemove: true,
		Version:     build.BuilderV1,
		Platform:    platform,
		// A step that runs (RUN) addresses nothing beyond its container.
		NetworkMode: "none",
	})
	if err != nil {
		return "", fmt.Errorf("building image %s: %w", tag, err)
	}
	defer resp.Body.Close()
	id, err := drainBuild(resp.Body)
	if err != nil {
		return "", fmt.Errorf("building image %s: %w", tag, err)
	}
	if id == "" {
		// Engines that do not send the ID in the stream still have the tag.
		img, err := e.ImageDigest(ctx, tag)
		if err != nil {
			return "", fmt.Errorf("building image %s: reading the built image's ID: %w", tag, err)
		}
		id = img.ID
	}
	if prev.ID != "" && prev.ID != id && prev.Config != nil && sharesKey(prev.Config.Labels, labels) {
		if err := e.RemoveUnnamed(ctx, prev.ID); err != nil {
			return "", fmt.Errorf("building image %s: %w", tag, err)
		}
	}
	return id, nil
}

// sharesKey tells whether an image's labels carry one of the keys a build
// sets: whether this tool built it, for the same purpose.
func sharesKey(have, build map[string]string) bool {
	for k := range build {
		if _, ok := have[k]; ok {
			return true
		}
	}
	return false
}

// buildMessage is one line of the engine's build stream (the JSON message
// format of the Engine API).
type buildMessage struct {
	Stream      string `json:"stream"`
	Error       string `json:"error"`
	ErrorDetail *struct {
		Message string `json:"message"`
	} `json:"errorDetail"`
	Aux *struct {
		ID string `json:"ID"`
	} `json:"aux"`
}

// buildTailLines is how much of the build output an error quotes.
const buildTailLines = 5

// drainBuild reads the build stream to its end, returning the built image's
// ID when the stream names it, or the error the stream carries together
// with the build output that led to it.
func drainBuild(r io.Reader) (string, error) {
	var id string
	var tail []string
	dec := json.NewDecoder(r)
	for {
		var msg buildMessage
		if err := dec.Decode(&msg); err != nil {
			if errors.Is(err, io.EOF) {
				return id, nil
			}
			return "", fmt.Errorf("reading the build output: %w", err)
		}
		for line := range strings.SplitSeq(msg.Stream, "\n") {
			// "--->" only separates steps; it says nothing in an error.
			if line = strings.TrimSpace(line); line != "" && line != "--->" {
				tail = append(tail, line)
			}
		}
		if len(tail) > buildTailLines {
			tail = tail[len(tail)-buildTailLines:]
		}
		if msg.Aux != nil && msg.Aux.ID != "" {
			id = msg.Aux.ID
		}
		text := msg.Error
		if msg.ErrorDetail != nil && msg.ErrorDetail.Message != "" {
			text = msg.ErrorDetail.Message
		}
		if text != "" {
			return "", fmt.Errorf("the engine reports: %s (build output before it: %s)", strings.TrimSpace(text), strings.Join(tail, " | "))
		}
	}
}
