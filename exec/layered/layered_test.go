package layered

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"maps"
	"net/http"
	"net/http/httptest"
	"path"
	"slices"
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
	img, err := b.Ensure(ctx, ref, Pinned{Layered: decl})
	if err != nil {
		t.Fatal(err)
	}
	if !img.Built || img.Digest != Digest(Pinned{Layered: decl}, "") {
		t.Fatalf("Ensure = %+v; want a build of %s", img, Digest(Pinned{Layered: decl}, ""))
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

	again, err := b.Ensure(ctx, ref, Pinned{Layered: decl})
	if err != nil || again.Built || again.ID != img.ID {
		t.Errorf("Ensure of the same declaration: %+v, %v; want the image as built", again, err)
	}
	decl.Files["/etc/app/app.properties"] = "key=other\n"
	if _, err := b.Ensure(ctx, ref, Pinned{Layered: decl}); err != nil {
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
	_, err := b.Ensure(ctx, ref, Pinned{Layered: decl})
	if err == nil || !strings.Contains(err.Error(), "has sha256 "+sum(zipped)+"; the build declares "+wrong) {
		t.Errorf("a download with another checksum: %v", err)
	}
	if ok, _ := e.ImageExists(ctx, ref); ok {
		t.Error("an image was built from a download that did not check")
	}

	decl = schema.Layered{From: "spatec-no-such-base:0"}
	var missing *engine.ImageMissingError
	if _, err := b.Ensure(ctx, ref, Pinned{Layered: decl}); !errors.As(err, &missing) || !strings.Contains(err.Error(), "is built on spatec-no-such-base:0") {
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
		Maven: []schema.MavenArtifact{{Artifact: "g:a:1", To: "/opt/kafka/plugins/avro"}},
		Files: map[string]string{"/opt/spatec/worker.properties": "", "/etc/a.conf": ""},
	})
	want := []string{
		"rootfs/opt/kafka/plugins/ckc/ /opt/kafka/plugins/ckc/",
		"rootfs/opt/kafka/libs/extra.jar /opt/kafka/libs/extra.jar",
		"rootfs/opt/kafka/plugins/avro/ /opt/kafka/plugins/avro/",
		"rootfs/etc/a.conf /etc/a.conf",
		"rootfs/opt/spatec/worker.properties /opt/spatec/worker.properties",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("COPY instructions:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestLayeredImageWithAPinnedClosure builds an image adding a Maven
// artifact's closure as its environment pinned it, from a repository on
// the loopback: the jars land in the artifact's directory under their file
// names, and a re-pinned closure is another build.
func TestLayeredImageWithAPinnedClosure(t *testing.T) {
	e := testenv.Docker(t)
	ctx := context.Background()
	jars := map[string][]byte{
		"/maven/dev/spatec/converter/1.0/converter-1.0.jar":   []byte("converter jar"),
		"/maven/dev/spatec/serializer/1.0/serializer-1.0.jar": []byte("serializer jar"),
		"/central/dev/spatec/codec/2.0/codec-2.0.jar":         []byte("codec jar"),
	}
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if b, ok := jars[r.URL.Path]; ok {
			w.Write(b)
			return
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(srv.Close)
	artifact := schema.MavenArtifact{Repositories: []string{srv.URL + "/maven/"}, Artifact: "dev.spatec:converter:1.0", To: "/opt/plugins/converter"}
	decl := schema.Layered{From: burntest.Image(t, e), Maven: []schema.MavenArtifact{artifact}}

	env := &schema.Environment{Name: "fixture"}
	if _, missing := Pin(decl, env); len(missing) != 1 || missing[0].Maven == nil || missing[0].Maven.Artifact != artifact.Artifact {
		t.Fatalf("unpinned: %v; want the closure of %s", missing, artifact.Artifact)
	}
	var closure []schema.ClosureJar
	for _, p := range slices.Sorted(maps.Keys(jars)) {
		closure = append(closure, schema.ClosureJar{URL: srv.URL + p, SHA256: sum(jars[p])})
	}
	env.Closures = map[string][]schema.ClosureJar{artifact.Artifact: closure}
	pinned, missing := Pin(decl, env)
	if len(missing) > 0 {
		t.Fatalf("unpinned with the closure pinned: %v", missing)
	}

	ref := "spatec-layered-test:" + uuid.NewString()[:8]
	t.Cleanup(func() { _ = e.RemoveImage(context.Background(), ref) })
	b := &Builder{Engine: e, CacheDir: t.TempDir()}
	img, err := b.Ensure(ctx, ref, pinned)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.RemoveImage(context.Background(), img.ID) })
	created, err := e.Create(ctx, engine.ContainerSpec{Name: "spatec-layered-" + uuid.NewString()[:8], Image: ref, NetworkMode: "none"})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Remove(ctx, created.ID)
	for p, body := range jars {
		file := "/opt/plugins/converter/" + path.Base(p)
		if got, err := e.ReadFile(ctx, created.ID, file, 1<<10); err != nil || !bytes.Equal(got, body) {
			t.Errorf("%s in the image: %q, %v; want %q", file, got, err, body)
		}
	}
	if got := hits.Load(); got != 3 {
		t.Errorf("%d requests for a closure of 3 jars", got)
	}

	// The same jars at another checksum: a re-pin names another image,
	// and a build that does not check is refused.
	closure[0].SHA256 = strings.Repeat("0", 64)
	repinned, _ := Pin(decl, env)
	if Digest(repinned, "") == img.Digest {
		t.Error("a re-pinned closure names the same build")
	}
	if _, err := b.Ensure(ctx, ref, repinned); err == nil || !strings.Contains(err.Error(), "the build declares "+strings.Repeat("0", 64)) {
		t.Errorf("a closure's jar with another checksum: %v", err)
	}
}

// TestTheArchitectureNamesTheBuild: a base pinned by a multi-platform
// index is the same reference on every architecture, so the build is named
// with the architecture it is for: an image built on amd64 is never taken
// for the arm64 one, and an amd64 build keeps the name it had before
// architectures were named.
func TestTheArchitectureNamesTheBuild(t *testing.T) {
	decl := Pinned{Layered: schema.Layered{From: "apache/kafka@sha256:" + strings.Repeat("a", 64), Files: map[string]string{"/opt/x": "x"}}}
	if Digest(decl, schema.AMD64) != Digest(decl, "") {
		t.Error("an amd64 build is named apart from the name it had")
	}
	if Digest(decl, schema.ARM64) == Digest(decl, schema.AMD64) {
		t.Error("an arm64 build has the amd64 build's name")
	}
	if Digest(decl, schema.ARM64) == Digest(decl, "") {
		t.Error("an arm64 build keeps the amd64 name")
	}
}
