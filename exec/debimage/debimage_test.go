package debimage

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"spatec.dev/spatec/exec/artefact"
	"spatec.dev/spatec/exec/burn/burntest"
	"spatec.dev/spatec/exec/engine"
	"spatec.dev/spatec/exec/engine/docker"
	"spatec.dev/spatec/exec/gclog"
	"spatec.dev/spatec/internal/testenv"
	"spatec.dev/spatec/schema"
)

func recipe() schema.Debian {
	return schema.Debian{
		Suite:      "bookworm",
		Sources:    []string{"deb http://deb.debian.org/debian bookworm main"},
		Packages:   []string{"tzdata"},
		Files:      map[string]string{"/etc/app/conf.d/app.xml": "<app/>\n"},
		User:       "root",
		Entrypoint: []string{"/burn", "-version"},
		Epoch:      1704067200,
	}
}

func TestDigestCoversEveryField(t *testing.T) {
	base := Digest(recipe(), "")
	changes := map[string]func(*schema.Debian){
		"suite":       func(r *schema.Debian) { r.Suite = "trixie" },
		"sources":     func(r *schema.Debian) { r.Sources = []string{"deb http://mirror.example/debian bookworm main"} },
		"packages":    func(r *schema.Debian) { r.Packages = append(r.Packages, "curl") },
		"files":       func(r *schema.Debian) { r.Files["/etc/app/conf.d/app.xml"] = "<other/>\n" },
		"user":        func(r *schema.Debian) { r.User = "nobody" },
		"entrypoint":  func(r *schema.Debian) { r.Entrypoint = []string{"/bin/true"} },
		"run":         func(r *schema.Debian) { r.Run = []string{"/bin/true"} },
		"environment": func(r *schema.Debian) { r.Environment = map[string]string{"A": "b"} },
		"epoch":       func(r *schema.Debian) { r.Epoch++ },
	}
	for field, change := range changes {
		r := recipe()
		change(&r)
		if Digest(r, "") == base {
			t.Errorf("changing %s leaves the recipe digest %s unchanged", field, base)
		}
	}
	if Digest(recipe(), "") != base {
		t.Error("the same recipe gives two digests")
	}

	// The root file system is made of the packages only.
	r := recipe()
	r.Files["/etc/other"] = "x"
	r.User, r.Entrypoint = "nobody", []string{"/bin/true"}
	if rootfsDigest(r, "") != rootfsDigest(recipe(), "") {
		t.Error("files, user or entrypoint changed the root file system's digest")
	}
	r.Packages = []string{"curl"}
	if rootfsDigest(r, "") == rootfsDigest(recipe(), "") {
		t.Error("other packages kept the root file system's digest")
	}
}

// entries lists a tar's entries as "name mode" lines.
func entries(t *testing.T, b []byte) []string {
	t.Helper()
	var out []string
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, h.Name+" "+os.FileMode(h.Mode).String())
	}
}

func TestFilesLayerAddsOnlyMissingDirectories(t *testing.T) {
	have := map[string]bool{"/": true, "/etc": true, "/var": true, "/var/lib": true, "/var/lib/app": true}
	files := map[string]string{
		"/etc/app/conf.d/a.xml": "a",
		"/etc/app/conf.d/b.xml": "b",
		"/var/lib/app/seed":     "s",
	}
	b, err := filesLayer(files, have, time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(entries(t, b), "\n")
	want := strings.Join([]string{
		"etc/app/ -rwxr-xr-x", "etc/app/conf.d/ -rwxr-xr-x",
		"etc/app/conf.d/a.xml -rw-r--r--", "etc/app/conf.d/b.xml -rw-r--r--",
		// /var/lib/app exists below: its owner and mode stay the package's.
		"var/lib/app/seed -rw-r--r--",
	}, "\n")
	if got != want {
		t.Errorf("files layer:\n%s\nwant:\n%s", got, want)
	}

	for _, bad := range []string{"etc/relative", "/etc/../etc/x", "/"} {
		if _, err := filesLayer(map[string]string{bad: "x"}, have, time.Unix(0, 0)); err == nil || !strings.Contains(err.Error(), "clean absolute path") {
			t.Errorf("file %q: err = %v, want a clean-absolute-path error", bad, err)
		}
	}
}

// fakeRootfs stands in for mmdebstrap: a root file system holding the burn
// binary, so the image runs, and counting its calls.
type fakeRootfs struct {
	burn  []byte
	calls int
	// arch is the architecture the last call was asked for.
	arch schema.Arch
}

func (f *fakeRootfs) build(_ context.Context, _ schema.Debian, arch schema.Arch, dst string, step func(string)) error {
	f.calls++
	f.arch = arch
	passwd := []byte("root:x:0:0:root:/root:/bin/sh\n")
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range []struct {
		h    tar.Header
		body []byte
	}{
		{tar.Header{Name: "./", Typeflag: tar.TypeDir, Mode: 0o755}, nil},
		{tar.Header{Name: "./etc/", Typeflag: tar.TypeDir, Mode: 0o755}, nil},
		{tar.Header{Name: "./etc/passwd", Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(passwd))}, passwd},
		{tar.Header{Name: "./burn", Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(f.burn))}, f.burn},
	} {
		e.h.ModTime = time.Unix(1704067200, 0)
		if err := tw.WriteHeader(&e.h); err != nil {
			return err
		}
		if _, err := tw.Write(e.body); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	step("I: done")
	return os.WriteFile(dst, buf.Bytes(), 0o644)
}

// testRef is an image reference of the test's own, removed when it ends.
func testRef(t *testing.T, e *docker.Engine) string {
	ref := "spatec-debimage-test:" + uuid.NewString()[:8]
	t.Cleanup(func() { _ = e.RemoveImage(context.Background(), ref) })
	return ref
}

// TestTheArchitectureReachesTheBuild: a recipe built for arm64 asks its
// root file system for arm64 (mmdebstrap's --architectures), is named
// apart from the same recipe on amd64, so that neither is taken for the
// other, and is loaded as an arm64 image, as the engine reports it. (The
// root file system here is the fake's: a real arm64 one is
// bench/aarch64.sh's, under emulation.)
func TestTheArchitectureReachesTheBuild(t *testing.T) {
	r := recipe()
	if Digest(r, schema.AMD64) != Digest(r, "") || rootfsDigest(r, schema.AMD64) != rootfsDigest(r, "") {
		t.Error("an amd64 recipe is named as before architectures were named")
	}
	if Digest(r, schema.ARM64) == Digest(r, schema.AMD64) || rootfsDigest(r, schema.ARM64) == rootfsDigest(r, schema.AMD64) {
		t.Error("a recipe for arm64 is named as the same recipe for amd64")
	}
	args := mmdebstrapArgs(r, schema.ARM64, "/tmp/rootfs.tar", "/tmp/recipe.list")
	if !slices.Contains(args, "--architectures=arm64") {
		t.Errorf("mmdebstrap %q; want --architectures=arm64", args)
	}

	e := testenv.Docker(t)
	ctx := context.Background()
	fake := &fakeRootfs{burn: readFile(t, burntest.Binary(t))}
	b := &Builder{Engine: e, Rootfs: fake.build, Arch: schema.ARM64}
	ref := testRef(t, e)
	img, err := b.Ensure(ctx, ref, r)
	if err != nil {
		t.Fatal(err)
	}
	if fake.arch != schema.ARM64 || img.Recipe != Digest(r, schema.ARM64) {
		t.Errorf("root file system asked for %q, image of recipe %s; want arm64, %s", fake.arch, img.Recipe, Digest(r, schema.ARM64))
	}
	got, err := e.ImageDigest(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if got.Architecture != "arm64" {
		t.Errorf("the engine reports the image for %q, want arm64", got.Architecture)
	}
}

func TestRecipeImageRunsWithItsFilesAndIsBuiltOnce(t *testing.T) {
	e := testenv.Docker(t)
	ctx := context.Background()
	fake := &fakeRootfs{burn: readFile(t, burntest.Binary(t))}
	b := &Builder{Engine: e, CacheDir: t.TempDir(), Rootfs: fake.build}
	ref := testRef(t, e)

	img, err := b.Ensure(ctx, ref, recipe())
	if err != nil {
		t.Fatal(err)
	}
	if !img.Built || img.Recipe != Digest(recipe(), "") || !strings.HasPrefix(img.ID, "sha256:") {
		t.Fatalf("first Ensure = %+v, want a built image of recipe %s", img, Digest(recipe(), ""))
	}
	// The image runs its entrypoint, as its user.
	runsBurn(t, e, ref)
	// The recipe's file is in it, under directories the root file system
	// lacked.
	if got := imageFile(t, e, ref, "/etc/app/conf.d/app.xml"); string(got) != "<app/>\n" {
		t.Fatalf("recipe file in the image: %q", got)
	}

	// Unchanged: not built again.
	again, err := b.Ensure(ctx, ref, recipe())
	if err != nil {
		t.Fatal(err)
	}
	if again.Built || again.ID != img.ID || fake.calls != 1 {
		t.Errorf("second Ensure = %+v after %d root file system builds; want the same image, not built", again, fake.calls)
	}

	// The files changed: a new image over the cached root file system.
	changed := recipe()
	changed.Files["/etc/app/conf.d/app.xml"] = "<app debug=\"1\"/>\n"
	third, err := b.Ensure(ctx, ref, changed)
	if err != nil {
		t.Fatal(err)
	}
	if !third.Built || third.ID == img.ID || fake.calls != 1 {
		t.Errorf("Ensure of changed files = %+v after %d root file system builds; want a new image over the cached root file system", third, fake.calls)
	}
	if ok, err := e.ImageExists(ctx, img.ID); err != nil || ok {
		t.Errorf("the image the changed recipe replaced is still on the engine (%v)", err)
	}
}

func TestSameRecipeGivesTheSameImageID(t *testing.T) {
	e := testenv.Docker(t)
	ctx := context.Background()
	fake := &fakeRootfs{burn: readFile(t, burntest.Binary(t))}
	// No cache: each build makes its root file system anew.
	b := &Builder{Engine: e, Rootfs: fake.build}
	first, err := b.Ensure(ctx, testRef(t, e), recipe())
	if err != nil {
		t.Fatal(err)
	}
	second, err := b.Ensure(ctx, testRef(t, e), recipe())
	if err != nil {
		t.Fatal(err)
	}
	if fake.calls != 2 || first.ID != second.ID {
		t.Errorf("two builds (%d root file systems) gave images %s and %s; want one ID", fake.calls, first.ID, second.ID)
	}
}

func TestFailedRootfsLeavesNothing(t *testing.T) {
	e := testenv.Docker(t)
	dir := t.TempDir()
	b := &Builder{Engine: e, CacheDir: dir, Rootfs: func(_ context.Context, _ schema.Debian, _ schema.Arch, dst string, _ func(string)) error {
		if err := os.WriteFile(dst, []byte("half a tar"), 0o644); err != nil {
			return err
		}
		return io.ErrUnexpectedEOF
	}}
	ref := testRef(t, e)
	if _, err := b.Ensure(context.Background(), ref, recipe()); err == nil || !strings.Contains(err.Error(), ref) {
		t.Fatalf("Ensure with a failing root file system: err = %v, want one naming %s", err, ref)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("the cache holds %v after a failed build", left)
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A recipe's downloads are checked, unpacked where it says, their modes
// kept, in a layer of their own: the system's release artefacts over its
// distribution's packages.
func TestRecipeDownloadsGoInChecked(t *testing.T) {
	e := testenv.Docker(t)
	ctx := context.Background()
	var archive bytes.Buffer
	zw := gzip.NewWriter(&archive)
	tw := tar.NewWriter(zw)
	for name, body := range map[string]string{"rel-1.0/bin/run.sh": "#!/bin/sh\necho ran\n", "rel-1.0/lib/a.jar": "jar"} {
		tw.WriteHeader(&tar.Header{Name: name, Mode: 0o755, Size: int64(len(body)), Typeflag: tar.TypeReg})
		io.WriteString(tw, body)
	}
	tw.Close()
	zw.Close()
	jar := []byte("a single jar")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, ".tar.gz") {
			w.Write(archive.Bytes())
			return
		}
		w.Write(jar)
	}))
	defer srv.Close()
	sha := func(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }
	prefix := "rel-1.0"
	r := recipe()
	r.Downloads = []schema.Download{
		{URL: srv.URL + "/rel-1.0.tar.gz", SHA256: sha(archive.Bytes()), To: "/opt/rel", Untar: &prefix},
		{URL: srv.URL + "/one.jar", SHA256: sha(jar), To: "/opt/rel/lib/one.jar"},
	}
	fake := &fakeRootfs{burn: readFile(t, burntest.Binary(t))}
	b := &Builder{Engine: e, CacheDir: t.TempDir(), Rootfs: fake.build, Downloads: &artefact.Fetcher{CacheDir: t.TempDir()}}
	ref := testRef(t, e)
	if _, err := b.Ensure(ctx, ref, r); err != nil {
		t.Fatal(err)
	}
	created, err := e.Create(ctx, engine.ContainerSpec{Name: "spatec-debimage-" + uuid.NewString()[:8], Image: ref, NetworkMode: "none"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Remove(context.Background(), created.ID) })
	for file, want := range map[string]string{"/opt/rel/bin/run.sh": "#!/bin/sh\necho ran\n", "/opt/rel/lib/a.jar": "jar", "/opt/rel/lib/one.jar": "a single jar"} {
		got, err := e.ReadFile(ctx, created.ID, file, 1<<10)
		if err != nil || string(got) != want {
			t.Errorf("%s in the image: %q, %v", file, got, err)
		}
	}

	// A checksum that does not match refuses the build.
	r.Downloads[1].SHA256 = sha([]byte("something else"))
	if _, err := b.Ensure(ctx, testRef(t, e), r); err == nil || !strings.Contains(err.Error(), "the published artefact changed") {
		t.Fatalf("a download of another checksum: %v", err)
	}
}

// TestRunStepKeepsWhatItWrites: a recipe's run step runs once in the
// built image, with the image's environment; what it writes is in the
// image, whose entrypoint is still the recipe's, and the image is not
// built again. A step that fails fails the build, in its own words, and
// leaves no image the recipe's label names.
func TestRunStepKeepsWhatItWrites(t *testing.T) {
	e := testenv.Docker(t)
	ctx := context.Background()
	fake := &fakeRootfs{burn: readFile(t, burntest.Binary(t))}
	b := &Builder{Engine: e, CacheDir: t.TempDir(), Rootfs: fake.build}
	ref := testRef(t, e)

	r := recipe()
	// burn -gclog writes where JAVA_TOOL_OPTIONS' -Xlog asks, as a
	// training start writes its class-data archive.
	r.Environment = map[string]string{"JAVA_TOOL_OPTIONS": gclog.Option("/var/made/gc.log")}
	r.Run = []string{"/burn", "-gclog", "-exit", "0"}
	img, err := b.Ensure(ctx, ref, r)
	if err != nil {
		t.Fatal(err)
	}
	if !img.Built || img.Recipe != Digest(r, "") {
		t.Fatalf("Ensure = %+v, want a built image of recipe %s", img, Digest(r, ""))
	}
	got, err := e.ImageDigest(ctx, ref)
	if err != nil || got.ID != img.ID || got.Labels[LabelRecipe] != img.Recipe {
		t.Fatalf("the engine holds %+v (%v); want %s labelled %s", got, err, img.ID, img.Recipe)
	}
	runsBurn(t, e, ref)
	if made := imageFile(t, e, ref, "/var/made/gc.log"); len(made) == 0 {
		t.Fatal("what the run step wrote is empty")
	}
	if again, err := b.Ensure(ctx, ref, r); err != nil || again.Built || again.ID != img.ID {
		t.Errorf("second Ensure = %+v, %v; want the same image, not built", again, err)
	}

	failing := recipe()
	failing.Run = []string{"/burn", "-exit", "3"}
	failedRef := testRef(t, e)
	_, err = b.Ensure(ctx, failedRef, failing)
	if err == nil || !strings.Contains(err.Error(), "its run step `/burn -exit 3`") || !strings.Contains(err.Error(), "exiting with code 3") {
		t.Fatalf("Ensure with a failing run step: err = %v; want the step and its output named", err)
	}
	if left, err := e.ImageDigest(ctx, failedRef); err == nil && left.Labels[LabelRecipe] == Digest(failing, "") {
		t.Errorf("a failed run step left %s labelled as built", left.ID)
	}
}

// runsBurn runs image ref and fails the test unless its entrypoint, the
// test recipe's burn -version, answers.
func runsBurn(t *testing.T, e *docker.Engine, ref string) {
	t.Helper()
	code, out, err := e.RunOnce(context.Background(), engine.ContainerSpec{Name: "spatec-debimage-" + uuid.NewString()[:8], Image: ref, NetworkMode: "none"}, nil)
	if err != nil || code != 0 || !strings.Contains(out, "burn "+burntest.Version) {
		t.Fatalf("running the image: code %d, err %v, output %q; want the recipe's entrypoint", code, err, out)
	}
}

// imageFile reads file from image ref, through a container made for it
// and removed again, so that nothing keeps the image in use.
func imageFile(t *testing.T, e *docker.Engine, ref, file string) []byte {
	t.Helper()
	ctx := context.Background()
	created, err := e.Create(ctx, engine.ContainerSpec{Name: "spatec-debimage-" + uuid.NewString()[:8], Image: ref, NetworkMode: "none"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := e.Remove(ctx, created.ID); err != nil {
			t.Fatal(err)
		}
	}()
	got, err := e.ReadFile(ctx, created.ID, file, 1<<16)
	if err != nil {
		t.Fatalf("reading %s in the image: %v", file, err)
	}
	return got
}
