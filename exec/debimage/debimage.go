// Package debimage builds container images from Debian packages, so that a
// real third-party system runs here without a registry: a recipe (#Debian:
// suite, packages, files, user, entrypoint) becomes a root file system
// (mmdebstrap), then an image archive, loaded through the engine's API.
//
// The image is reproducible. mmdebstrap honours SOURCE_DATE_EPOCH, so the
// same packages give the same root file system byte for byte; the files
// layer and the image config are written here with the recipe's epoch as
// every timestamp, and the archive is loaded rather than imported (an
// import stamps the current time into the image). Over the same archive
// state, the same recipe therefore gives the same image ID. A recipe with
// a run step is the exception: its command runs in the loaded image
// through the engine's builder, and what it writes (a JVM's class-data
// archive) is not the same byte for byte from one build to the next.
//
// A recipe is built once. The image carries the recipe's digest as a label,
// and an image of that reference with that label is used as it is. Root
// file systems are kept in a cache directory by the digest of what they are
// made of, so a recipe whose files alone changed is not installed again.
//
// This package is the only place that runs the root file system builder.
package debimage

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"spatec.dev/spatec/exec/artefact"
	"spatec.dev/spatec/exec/compile"
	"spatec.dev/spatec/exec/engine"
	"spatec.dev/spatec/exec/progress"
	"spatec.dev/spatec/schema"
)

// LabelRecipe is the image label that carries the digest of the recipe the
// image was built from.
const LabelRecipe = "dev.spatec.recipe"

// format versions the way an image is assembled from a recipe, and
// rootfsFormat the way its root file system is made. They are part of
// the digests: a change that moves image content must bump them, so that
// images (root file systems) made the old way are made again.
const (
	format       = 2 // 2: a layer of downloads
	rootfsFormat = 1
)

// Engine is what building needs of the container engine.
type Engine interface {
	// ImageDigest identifies an image; a missing one is an
	// *engine.ImageMissingError.
	ImageDigest(ctx context.Context, ref string) (engine.Image, error)
	// LoadImage loads an image archive in `docker save` format.
	LoadImage(ctx context.Context, archive io.Reader) ([]string, error)
	// RemoveUnnamed removes an image no tag names and no container uses.
	RemoveUnnamed(ctx context.Context, id string) error
	// BuildContextDir builds the image tag from a directory holding a
	// Dockerfile, with no network, and returns its ID.
	BuildContextDir(ctx context.Context, tag, dir string, labels map[string]string) (string, error)
}

// RootfsFunc writes the root file system of recipe, its packages for arch,
// to the tar file dst, reporting each step it takes to step.
type RootfsFunc func(ctx context.Context, recipe schema.Debian, arch schema.Arch, dst string, step func(string)) error

// Builder turns recipes into images on one engine.
type Builder struct {
	// Engine is where images are looked up and loaded.
	Engine Engine
	// CacheDir keeps root file systems by the digest of what they are made
	// of; "" keeps none, so every build installs its packages again.
	CacheDir string
	// Progress reports the build; nil reports nothing.
	Progress *progress.Reporter
	// Rootfs makes a root file system; nil means Mmdebstrap.
	Rootfs RootfsFunc
	// Downloads fetches a recipe's downloads (checked, cached by their
	// sha256); nil fetches with no cache.
	Downloads *artefact.Fetcher
	// Compiler compiles a recipe's programs of this tree; nil refuses a
	// recipe that has any. It compiles them for Arch.
	Compiler Compiler
	// Arch is the architecture the image is built for: its packages',
	// its config's, and the programs it compiles (the Compiler's own).
	Arch schema.Arch
}

// Compiler compiles programs of this tree (#Compile).
type Compiler interface {
	// Digest names what c is compiled from, without compiling it.
	Digest(ctx context.Context, c schema.Compile) (string, error)
	// Build returns c's output, compiling it if need be.
	Build(ctx context.Context, c schema.Compile) (compile.Output, error)
}

// Image is a recipe's image on the engine.
type Image struct {
	// Ref is the image's reference (its tag).
	Ref string
	// ID is the image's content ID, "sha256:…".
	ID string
	// Recipe is the recipe's digest, "sha256:…".
	Recipe string
	// Built tells whether this call built the image; false when the engine
	// already had it.
	Built bool
}

// Digest names a recipe built for arch: the sha256 of its canonical JSON,
// of the architecture (amd64 left out, as before architectures were
// named) and of the way spatec assembles it.
func Digest(r schema.Debian, arch schema.Arch) string {
	return digestJSON(struct {
		Format int           `json:"format"`
		Recipe schema.Debian `json:"recipe"`
		Arch   schema.Arch   `json:"arch,omitzero"`
	}{format, r, arch})
}

// rootfsDigest names what a root file system is made of; a recipe's files,
// user and entrypoint are not part of it.
func rootfsDigest(r schema.Debian, arch schema.Arch) string {
	return digestJSON(struct {
		Format   int         `json:"format"`
		Suite    string      `json:"suite"`
		Sources  []string    `json:"sources"`
		Packages []string    `json:"packages"`
		Epoch    int64       `json:"epoch"`
		Arch     schema.Arch `json:"arch,omitzero"`
	}{rootfsFormat, r.Suite, r.Sources, r.Packages, r.Epoch, arch})
}

func digestJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("encoding a recipe: %v", err)) // plain data: a failure is a bug
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// imageDigest names the image a recipe makes: the recipe's digest, and for
// a recipe that compiles programs of this tree, what each is compiled from.
func (b *Builder) imageDigest(ctx context.Context, recipe schema.Debian) (string, error) {
	if len(recipe.Compile) == 0 {
		return Digest(recipe, b.Arch), nil
	}
	if b.Compiler == nil {
		return "", errors.New("the recipe compiles programs of this tree, and this build has no compiler")
	}
	sources := make([]string, len(recipe.Compile))
	for i, c := range recipe.Compile {
		d, err := b.Compiler.Digest(ctx, c)
		if err != nil {
			return "", err
		}
		sources[i] = d
	}
	return digestJSON(struct {
		Recipe  string   `json:"recipe"`
		Sources []string `json:"sources"`
	}{Digest(recipe, b.Arch), sources}), nil
}

// Ensure makes the engine hold image ref built from recipe: it is used as
// it is when the engine has ref labelled with the digest of the recipe (and
// of what it compiles), and built and loaded otherwise.
func (b *Builder) Ensure(ctx context.Context, ref string, recipe schema.Debian) (Image, error) {
	want, err := b.imageDigest(ctx, recipe)
	if err != nil {
		return Image{}, fmt.Errorf("image %s: %w", ref, err)
	}
	prev, ok, err := engine.Built(ctx, b.Engine.ImageDigest, ref, LabelRecipe, want)
	if err != nil || ok {
		return Image{Ref: ref, ID: prev.ID, Recipe: want}, err
	}

	rootfs, cleanup, err := b.rootfs(ctx, ref, recipe)
	if err != nil {
		return Image{}, err
	}
	defer cleanup()
	downloads, err := b.downloadsLayer(ctx, ref, recipe)
	if err != nil {
		return Image{}, err
	}
	defer os.Remove(downloads)
	// An image whose run step has yet to run is labelled apart, so that a
	// build stopped in between is not taken for a finished one.
	label := want
	if len(recipe.Run) > 0 {
		label = want + beforeRun
	}
	id, err := b.load(ctx, ref, recipe, label, rootfs, downloads)
	if err != nil {
		return Image{}, err
	}
	if len(recipe.Run) > 0 {
		if id, err = b.run(ctx, ref, id, recipe.Run, want); err != nil {
			return Image{}, err
		}
	}
	img, err := b.Engine.ImageDigest(ctx, ref)
	if err != nil {
		return Image{}, fmt.Errorf("image %s: looking it up after loading: %w", ref, err)
	}
	if img.ID != id || img.Labels[LabelRecipe] != want {
		return Image{}, fmt.Errorf("image %s: the engine holds %s (recipe %q) after loading %s (recipe %s); another build replaced it meanwhile",
			ref, img.ID, img.Labels[LabelRecipe], id, want)
	}
	if _, ours := prev.Labels[LabelRecipe]; ours && prev.ID != img.ID {
		if err := b.Engine.RemoveUnnamed(ctx, prev.ID); err != nil {
			return Image{}, fmt.Errorf("image %s: %w", ref, err)
		}
	}
	return Image{Ref: ref, ID: id, Recipe: want, Built: true}, nil
}

// beforeRun marks the recipe label of an image whose run step has not run.
const beforeRun = " (before its run step)"

// run runs a recipe's run step in the loaded image base, through the
// engine's builder with no network, and tags the result ref, labelled
// with the recipe's digest; it returns the new image's ID. The step's
// output, its last lines quoted on failure, is the builder's.
func (b *Builder) run(ctx context.Context, ref, base string, command []string, recipeDigest string) (string, error) {
	dir, err := os.MkdirTemp("", "spatec-run-*")
	if err != nil {
		return "", fmt.Errorf("image %s: %w", ref, err)
	}
	defer os.RemoveAll(dir)
	// The exec form: the command's words as they are, with no shell.
	words, err := json.Marshal(command)
	if err != nil {
		return "", fmt.Errorf("image %s: encoding its run step: %w", ref, err)
	}
	dockerfile := fmt.Sprintf("FROM %s\nRUN %s\n", base, words)
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(dockerfile), 0o644); err != nil {
		return "", fmt.Errorf("image %s: %w", ref, err)
	}
	b.Progress.Start("image/run", 1, "steps")
	b.Progress.Printf("image %s: running its build's last step: %s", ref, strings.Join(command, " "))
	id, err := b.Engine.BuildContextDir(ctx, ref, dir, map[string]string{LabelRecipe: recipeDigest})
	if err != nil {
		b.Progress.Fail(err)
		return "", fmt.Errorf("image %s: its run step `%s`: %w", ref, strings.Join(command, " "), err)
	}
	b.Progress.Add(1)
	b.Progress.End()
	return id, nil
}

// rootfs returns the path of recipe's root file system, from the cache or
// newly made, and a function that removes it when it is not kept.
func (b *Builder) rootfs(ctx context.Context, ref string, recipe schema.Debian) (string, func(), error) {
	dir, keep := b.CacheDir, true
	if dir == "" {
		dir, keep = os.TempDir(), false
	}
	name := strings.TrimPrefix(rootfsDigest(recipe, b.Arch), "sha256:") + ".tar"
	final := filepath.Join(dir, name)
	if keep {
		if _, err := os.Stat(final); err == nil {
			return final, func() {}, nil
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", nil, fmt.Errorf("image %s: making the root file system cache %s: %w", ref, dir, err)
	}
	tmp, err := os.CreateTemp(dir, name+".*.partial")
	if err != nil {
		return "", nil, fmt.Errorf("image %s: %w", ref, err)
	}
	tmp.Close()
	// Whatever goes wrong below, no partial root file system is left.
	defer os.Remove(tmp.Name())

	build := b.Rootfs
	if build == nil {
		build = Mmdebstrap
	}
	b.Progress.Start("image/rootfs", int64(len(mmdebstrapSteps)), "steps")
	b.Progress.Printf("building image %s from Debian %s packages for %s: %s", ref, recipe.Suite, b.Arch.Name(), strings.Join(recipe.Packages, " "))
	if err := build(ctx, recipe, b.Arch, tmp.Name(), func(string) { b.Progress.Add(1) }); err != nil {
		b.Progress.Fail(err)
		return "", nil, fmt.Errorf("image %s: %w", ref, err)
	}
	b.Progress.End()
	if !keep {
		kept := tmp.Name() + ".tar"
		if err := os.Rename(tmp.Name(), kept); err != nil {
			return "", nil, fmt.Errorf("image %s: %w", ref, err)
		}
		return kept, func() { os.Remove(kept) }, nil
	}
	if err := os.Rename(tmp.Name(), final); err != nil {
		return "", nil, fmt.Errorf("image %s: keeping the root file system: %w", ref, err)
	}
	return final, func() {}, nil
}

// load writes the image archive of recipe over rootfs into the engine and
// returns the image's ID.
func (b *Builder) load(ctx context.Context, ref string, recipe schema.Debian, recipeDigest, rootfs, downloads string) (string, error) {
	f, err := os.Open(rootfs)
	if err != nil {
		return "", fmt.Errorf("image %s: %w", ref, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("image %s: %w", ref, err)
	}
	dl, err := os.Open(downloads)
	if err != nil {
		return "", fmt.Errorf("image %s: %w", ref, err)
	}
	defer dl.Close()
	dst, err := dl.Stat()
	if err != nil {
		return "", fmt.Errorf("image %s: %w", ref, err)
	}
	b.Progress.Start("image/load", st.Size()+dst.Size(), "bytes")
	type written struct {
		id  string
		err error
	}
	pr, pw := io.Pipe()
	done := make(chan written, 1)
	go func() {
		id, err := writeArchive(&countingWriter{w: pw, add: b.Progress.Add}, ref, recipe, b.Arch, recipeDigest, f, st.Size(), dl, dst.Size())
		pw.CloseWithError(err)
		done <- written{id, err}
	}()
	_, err = b.Engine.LoadImage(ctx, pr)
	// The writer stops at its next write once the reader is gone.
	pr.CloseWithError(errors.New("the engine stopped reading the archive"))
	w := <-done
	if err == nil && w.err != nil {
		err = w.err
	}
	if err != nil {
		b.Progress.Fail(err)
		return "", fmt.Errorf("image %s: %w", ref, err)
	}
	b.Progress.End()
	return w.id, nil
}

// countingWriter reports every write's length.
type countingWriter struct {
	w   io.Writer
	add func(int64)
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.add(int64(n))
	return n, err
}

// writeArchive writes the image archive (`docker save` format) to w: the
// root file system as the first layer, the recipe's downloads as the
// second, its files as the third, the config (declaring arch) and the
// manifest. It returns the image ID, the digest of the config.
func writeArchive(w io.Writer, ref string, recipe schema.Debian, arch schema.Arch, recipeDigest string, rootfs io.Reader, rootfsSize int64, downloads io.Reader, downloadsSize int64) (string, error) {
	epoch := time.Unix(recipe.Epoch, 0).UTC()
	tw := tar.NewWriter(w)
	put := func(name string, size int64, body io.Reader) error {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: size, ModTime: epoch, Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
			return fmt.Errorf("writing the image archive: %w", err)
		}
		if _, err := io.Copy(tw, body); err != nil {
			return fmt.Errorf("writing the image archive (%s): %w", name, err)
		}
		return nil
	}

	// Layer 0: the root file system, hashed as it goes; its directories
	// are noted so that the files layer adds only the ones it lacks.
	h := sha256.New()
	dirs, err := scanTar(io.TeeReader(rootfs, h), func(r io.Reader) error { return put("rootfs/layer.tar", rootfsSize, r) })
	if err != nil {
		return "", err
	}
	base := digest.NewDigestFromBytes(digest.SHA256, h.Sum(nil))

	// Layer 1: the recipe's downloads (made beside the archive, with
	// the directories above them that the root file system lacks).
	dh := sha256.New()
	if err := put("downloads/layer.tar", downloadsSize, io.TeeReader(downloads, dh)); err != nil {
		return "", err
	}
	downloaded := digest.NewDigestFromBytes(digest.SHA256, dh.Sum(nil))

	// Layer 2: the recipe's files.
	files, err := filesLayer(recipe.Files, dirs, epoch)
	if err != nil {
		return "", err
	}
	if err := put("files/layer.tar", int64(len(files)), bytes.NewReader(files)); err != nil {
		return "", err
	}

	cfg := ocispec.Image{
		Created:  &epoch,
		Platform: ocispec.Platform{Architecture: arch.Name(), OS: "linux"},
		Config: ocispec.ImageConfig{
			User:       recipe.User,
			Env:        imageEnv(recipe.Environment),
			Entrypoint: recipe.Entrypoint,
			Labels:     map[string]string{LabelRecipe: recipeDigest},
		},
		RootFS: ocispec.RootFS{Type: "layers", DiffIDs: []digest.Digest{base, downloaded, digest.FromBytes(files)}},
		History: []ocispec.History{
			{Created: &epoch, CreatedBy: fmt.Sprintf("mmdebstrap --variant=apt %s: %s", recipe.Suite, strings.Join(recipe.Packages, " "))},
			{Created: &epoch, CreatedBy: fmt.Sprintf("spatec: %d downloads, each checked against its sha256; %d programs compiled from the tree", len(recipe.Downloads), len(recipe.Compile))},
			{Created: &epoch, CreatedBy: "spatec: " + strings.Join(slices.Sorted(maps.Keys(recipe.Files)), " ")},
		},
	}
	cfgJSON, err := json.Marshal(cfg)
	if err != nil {
		return "", fmt.Errorf("encoding the image config: %w", err)
	}
	id := digest.FromBytes(cfgJSON)
	cfgName := id.Encoded() + ".json"
	if err := put(cfgName, int64(len(cfgJSON)), bytes.NewReader(cfgJSON)); err != nil {
		return "", err
	}
	manifest, err := json.Marshal([]struct {
		Config   string
		RepoTags []string
		Layers   []string
	}{{Config: cfgName, RepoTags: []string{ref}, Layers: []string{"rootfs/layer.tar", "downloads/layer.tar", "files/layer.tar"}}})
	if err != nil {
		return "", fmt.Errorf("encoding the image manifest: %w", err)
	}
	if err := put("manifest.json", int64(len(manifest)), bytes.NewReader(manifest)); err != nil {
		return "", err
	}
	if err := tw.Close(); err != nil {
		return "", fmt.Errorf("writing the image archive: %w", err)
	}
	return id.String(), nil
}

// downloadsLayer writes a layer holding the recipe's downloads (each
// checked against its sha256, archives unpacked) and the programs it
// compiles from the tree to a temporary file and returns its path; the
// layer is empty when there are none. Directories
// are added above every file, 0755 and owned by root, as the layers above
// the root file system may add them again.
func (b *Builder) downloadsLayer(ctx context.Context, ref string, recipe schema.Debian) (string, error) {
	f, err := os.CreateTemp("", "spatec-downloads-*.tar")
	if err != nil {
		return "", fmt.Errorf("image %s: %w", ref, err)
	}
	defer f.Close()
	epoch := time.Unix(recipe.Epoch, 0).UTC()
	tw := tar.NewWriter(f)
	dirs := map[string]bool{"/": true}
	// An archive's entries are spooled to know their size before their
	// header goes out.
	put := func(name string, mode int64, r io.Reader) error {
		clean := path.Clean(name)
		if !path.IsAbs(name) || clean != name || clean == "/" {
			return fmt.Errorf("download destination %q: give a clean absolute path such as /opt/app/app.jar", name)
		}
		var missing []string
		for dir := path.Dir(clean); !dirs[dir]; dir = path.Dir(dir) {
			missing = append(missing, dir)
			dirs[dir] = true
		}
		slices.Reverse(missing)
		for _, dir := range missing {
			if err := tw.WriteHeader(&tar.Header{Name: dir[1:] + "/", Mode: 0o755, ModTime: epoch, Typeflag: tar.TypeDir, Format: tar.FormatPAX}); err != nil {
				return err
			}
		}
		body, err := io.ReadAll(r)
		if err != nil {
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Name: clean[1:], Mode: mode, Size: int64(len(body)), ModTime: epoch, Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
			return err
		}
		_, err = tw.Write(body)
		return err
	}
	fetcher := b.Downloads
	if fetcher == nil {
		fetcher = &artefact.Fetcher{Progress: b.Progress}
	}
	for _, d := range recipe.Downloads {
		file, done, err := fetcher.Fetch(ctx, d)
		if err != nil {
			os.Remove(f.Name())
			return "", fmt.Errorf("image %s: %w", ref, err)
		}
		err = artefact.Place(d, file, put)
		done()
		if err != nil {
			os.Remove(f.Name())
			return "", fmt.Errorf("image %s: adding %s: %w", ref, d.URL, err)
		}
	}
	for _, c := range recipe.Compile {
		if err := b.addCompiled(ctx, c, put); err != nil {
			os.Remove(f.Name())
			return "", fmt.Errorf("image %s: %w", ref, err)
		}
	}
	if err := tw.Close(); err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("image %s: writing its downloads layer: %w", ref, err)
	}
	return f.Name(), nil
}

// addCompiled compiles c (or takes it from the cache) and puts its output
// at c.To.
func (b *Builder) addCompiled(ctx context.Context, c schema.Compile, put func(string, int64, io.Reader) error) error {
	if b.Compiler == nil {
		return errors.New("the recipe compiles programs of this tree, and this build has no compiler")
	}
	out, err := b.Compiler.Build(ctx, c)
	if err != nil {
		return err
	}
	f, err := os.Open(out.Path)
	if err != nil {
		return err
	}
	defer f.Close()
	return put(c.To, out.Mode, f)
}

// scanTar hands the tar stream r to consume whole and returns the
// directories it holds, as clean absolute paths.
func scanTar(r io.Reader, consume func(io.Reader) error) (map[string]bool, error) {
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- consume(pr) }()
	dirs := map[string]bool{"/": true}
	tr := tar.NewReader(io.TeeReader(r, pw))
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			pw.CloseWithError(err)
			<-done
			return nil, fmt.Errorf("reading the root file system: %w", err)
		}
		if hdr.Typeflag == tar.TypeDir {
			dirs[path.Clean("/"+hdr.Name)] = true
		}
	}
	// The end-of-archive blocks and padding go along too.
	if _, err := io.Copy(io.Discard, io.TeeReader(r, pw)); err != nil {
		pw.CloseWithError(err)
		<-done
		return nil, fmt.Errorf("reading the root file system: %w", err)
	}
	pw.Close()
	return dirs, <-done
}

// filesLayer is a layer holding files, each 0644 and owned by root, with
// the directories above them that the layers below lack (0755, root).
func filesLayer(files map[string]string, have map[string]bool, epoch time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	added := map[string]bool{}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		clean := path.Clean(name)
		if !path.IsAbs(name) || clean != name || clean == "/" {
			return nil, fmt.Errorf("recipe file %q: give a clean absolute path such as /etc/app/app.conf", name)
		}
		var missing []string
		for dir := path.Dir(clean); !have[dir] && !added[dir]; dir = path.Dir(dir) {
			missing = append(missing, dir)
			added[dir] = true
		}
		slices.Reverse(missing)
		for _, dir := range missing {
			if err := tw.WriteHeader(&tar.Header{Name: dir[1:] + "/", Mode: 0o755, ModTime: epoch, Typeflag: tar.TypeDir, Format: tar.FormatPAX}); err != nil {
				return nil, fmt.Errorf("writing the files layer: %w", err)
			}
		}
		body := files[name]
		if err := tw.WriteHeader(&tar.Header{Name: clean[1:], Mode: 0o644, Size: int64(len(body)), ModTime: epoch, Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
			return nil, fmt.Errorf("writing the files layer: %w", err)
		}
		if _, err := io.WriteString(tw, body); err != nil {
			return nil, fmt.Errorf("writing the files layer: %w", err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("writing the files layer: %w", err)
	}
	return buf.Bytes(), nil
}

// defaultPath is Debian's PATH for root, which the image carries unless the
// recipe sets another.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// imageEnv is the image's environment as sorted KEY=VALUE entries.
func imageEnv(env map[string]string) []string {
	out := []string{}
	if _, ok := env["PATH"]; !ok {
		out = append(out, "PATH="+defaultPath)
	}
	for _, k := range slices.Sorted(maps.Keys(env)) {
		out = append(out, k+"="+env[k])
	}
	return out
}
