package layered

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"

	"spatec.dev/spatec/exec/burn/burntest"
	"spatec.dev/spatec/exec/engine"
	"spatec.dev/spatec/internal/testenv"
	"spatec.dev/spatec/schema"
)

// release is a zip as a project publishes one: its jars under a versioned
// directory, and files around them that do not go into the image.
func release(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for name, body := range map[string]string{
		"pkg-1.0/lib/a.jar":  "jar a",
		"pkg-1.0/lib/b.jar":  "jar b",
		"pkg-1.0/README.txt": "not wanted",
	} {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(body))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// server publishes the release and a plain file on the loopback, counting
// requests.
func server(t *testing.T, zipped []byte) (*httptest.Server, *atomic.Int64) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		switch r.URL.Path {
		case "/pkg-1.0.zip":
			w.Write(zipped)
		case "/tool.bin":
			w.Write([]byte("tool"))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

func TestLayeredImageOnALocalBase(t *testing.T) {
	e := testenv.Docker(t)
	ctx := context.Background()
	base := burntest.Image(t, e)
	zipped := release(t)
	srv, hits := server(t, zipped)
	prefix := "pkg-1.0/lib/"
	decl := schema.Layered{
		From: base,
		Downloads: []schema.Download{
			{URL: srv.URL + "/pkg-1.0.zip", SHA256: sum(zipped), To: "/opt/plugins/pkg", Unzip: &prefix},
			{URL: srv.URL + "/tool.bin", SHA256: sum([]byte("tool")), To: "/opt/tool.bin"},
		},
		Files:      map[string]string{"/etc/app/app.properties": "key=value\n"},
		Entrypoint: []string{"/burn", "-version"},
	}
	ref := "spatec-layered-test:" + uuid.NewString()[:8]
	t.Cleanup(func() { _ = e.RemoveImage(context.Background(), ref) })
	b := &Builder{Engine: e, CacheDir: t.TempDir()}
	img, err := b.Ensure(ctx, ref, decl)
	if err != nil {
		t.Fatal(err)
	}
	if !img.Built || img.Digest != Digest(decl, "") {
		t.Fatalf("Ensure = %+v; want a build of %s", img, Digest(decl, ""))
	}
	// The rebuild below takes ref away from this image; remove it by id.
	t.Cleanup(func() { _ = e.RemoveImage(context.Background(), img.ID) })
	code, out, err := e.RunOnce(ctx, engine.ContainerSpec{Name: "spatec-layered-" + uuid.NewString()[:8], Image: ref, NetworkMode: "none"}, nil)
	if err != nil || code != 0 || !strings.Contains(out, "burn "+burntest.Version) {
		t.Fatalf("the image's entrypoint: code %d, %v, %q", code, err, out)
	}
	created, err := e.Create(ctx, engine.ContainerSpec{Name: "spatec-layered-" + uuid.NewString()[:8], Image: ref, NetworkMode: "none"})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Remove(ctx, created.ID)
	for file, want := range map[string]string{
		"/opt/plugins/pkg/a.jar":  "jar a",
		"/opt/plugins/pkg/b.jar":  "jar b",
		"/opt/tool.bin":           "tool",
		"/etc/app/app.properties": "key=value\n",
	} {
		if got, err := e.ReadFile(ctx, created.ID, file, 1<<10); err != nil || string(got) != want {
			t.Errorf("%s in the image: %q, %v; want %q", file, got, err, want)
		}
	}
	if _, err := e.ReadFile(ctx, created.ID, "/opt/plugins/pkg/README.txt", 1<<10); !errors.Is(err, engine.ErrNoFile) {
		t.Errorf("a file outside the unzip prefix went in: %v", err)
	}

	again, err := b.Ensure(ctx, ref, decl)
	if err != nil || again.Built || again.ID != img.ID {
		t.Errorf("Ensure of the same declaration: %+v, %v; want the image as built", again, err)
	}
	decl.Files["/etc/app/app.properties"] = "key=other\n"
	if _, err := b.Ensure(ctx, ref, decl); err != nil {
		t.Fatal(err)
	}
	if got := hits.Load(); got != 2 {
		t.Errorf("%d downloads for two builds of the same artefacts; want them fetched once each", got)
	}
}

func TestLayeredImageRefusesWhatDoesNotCheck(t *testing.T) {
	e := testenv.Docker(t)
	ctx := context.Background()
	zipped := release(t)
	srv, _ := server(t, zipped)
	ref := "spatec-layered-test:" + uuid.NewString()[:8]
	t.Cleanup(func() { _ = e.RemoveImage(context.Background(), ref) })
	b := &Builder{Engine: e, CacheDir: t.TempDir()}

	wrong := strings.Repeat("0", 64)
	decl := schema.Layered{From: burntest.Image(t, e), Downloads: []schema.Download{{URL: srv.URL + "/pkg-1.0.zip", SHA256: wrong, To: "/opt/pkg.zip"}}}
	_, err := b.Ensure(ctx, ref, decl)
	if err == nil || !strings.Contains(err.Error(), "has sha256 "+sum(zipped)+"; the build declares "+wrong) {
		t.Errorf("a download with another checksum: %v", err)
	}
	if ok, _ := e.ImageExists(ctx, ref); ok {
		t.Error("an image was built from a download that did not check")
	}

	decl = schema.Layered{From: "spatec-no-such-base:0"}
	var missing *engine.ImageMissingError
	if _, err := b.Ensure(ctx, ref, decl); !errors.As(err, &missing) || !strings.Contains(err.Error(), "is built on spatec-no-such-base:0") {
		t.Errorf("a missing base: %v", err)
	}
}

// The build copies each destination the declaration names, never the
// whole tree over /: a copied directory takes root's ownership, and a base
// image that runs as its own user (Kafka's, owning /opt/kafka) would lose
// the directories it writes to.
func TestLayeredCopiesOnlyWhatItAdds(t *testing.T) {
	prefix := "lib/"
	got := copies(schema.Layered{
		Downloads: []schema.Download{
			{To: "/opt/kafka/plugins/ckc", Unzip: &prefix},
			{To: "/opt/kafka/libs/extra.jar"},
		},
		Files: map[string]string{"/opt/spatec/worker.properties": "", "/etc/a.conf": ""},
	})
	want := []string{
		"rootfs/opt/kafka/plugins/ckc/ /opt/kafka/plugins/ckc/",
		"rootfs/opt/kafka/libs/extra.jar /opt/kafka/libs/extra.jar",
		"rootfs/etc/a.conf /etc/a.conf",
		"rootfs/opt/spatec/worker.properties /opt/spatec/worker.properties",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("COPY instructions:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestTheArchitectureNamesTheBuild: a base pinned by a multi-platform
// index is the same reference on every architecture, so the build is named
// with the architecture it is for: an image built on amd64 is never taken
// for the arm64 one, and an amd64 build keeps the name it had before
// architectures were named.
func TestTheArchitectureNamesTheBuild(t *testing.T) {
	decl := schema.Layered{From: "apache/kafka@sha256:" + strings.Repeat("a", 64), Files: map[string]string{"/opt/x": "x"}}
	if Digest(decl, schema.AMD64) != Digest(decl, "") {
		t.Error("an amd64 build is named apart from the name it had")
	}
	if Digest(decl, schema.ARM64) == Digest(decl, schema.AMD64) {
		t.Error("an arm64 build has the amd64 build's name")
	}
	b := &Builder{Arch: schema.ARM64}
	if got, want := b.digest(decl), Digest(decl, schema.ARM64); got != want {
		t.Errorf("the builder names its build %s, want %s", got, want)
	}
}
