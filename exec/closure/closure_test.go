package closure

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"spatec.dev/spatec/exec/burn/burntest"
	"spatec.dev/spatec/exec/engine"
	"spatec.dev/spatec/exec/layered"
	"spatec.dev/spatec/internal/testenv"
	"spatec.dev/spatec/schema"
)

// artifact is one artifact of the fixture repositories: its POM's
// dependencies, and a jar of its own.
type artifact struct {
	repo, group, id, version string
	deps                     []dep
}

type dep struct{ group, id, version, scope string }

func (a artifact) dir() string {
	return strings.ReplaceAll(a.group, ".", "/") + "/" + a.id + "/" + a.version + "/"
}

func (a artifact) pom() []byte {
	var deps strings.Builder
	for _, d := range a.deps {
		fmt.Fprintf(&deps, "<dependency><groupId>%s</groupId><artifactId>%s</artifactId><version>%s</version><scope>%s</scope></dependency>",
			d.group, d.id, d.version, d.scope)
	}
	return fmt.Appendf(nil, `<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>
<groupId>%s</groupId><artifactId>%s</artifactId><version>%s</version><packaging>jar</packaging>
<dependencies>%s</dependencies></project>
`, a.group, a.id, a.version, deps.String())
}

// jar is a jar of one entry naming the artifact, the same bytes every run.
func (a artifact) jar(t *testing.T) []byte {
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	w, err := zw.CreateHeader(&zip.FileHeader{Name: "META-INF/" + a.id + ".txt", Method: zip.Deflate,
		Modified: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(w, "%s:%s:%s\n", a.group, a.id, a.version)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// repoServer serves Maven repositories on the loopback: under /<repo>/ the
// fixture's files, and under /central/, after the fixture's, the files of
// the local repository the plugin was fetched into (fallback), so that
// Maven finds its plugin without leaving the loopback. Every file has its
// .sha1, as Maven Central publishes them. It records what it was asked.
type repoServer struct {
	*httptest.Server
	files    map[string][]byte
	fallback string

	mu     sync.Mutex
	served []string // GET and HEAD paths answered 200
}

func newRepoServer(t *testing.T, files map[string][]byte, fallback string) *repoServer {
	s := &repoServer{files: files, fallback: fallback}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func (s *repoServer) file(p string) ([]byte, bool) {
	if b, ok := s.files[p]; ok {
		return b, true
	}
	rest, ok := strings.CutPrefix(p, "/central/")
	if !ok || s.fallback == "" || strings.Contains(rest, "..") {
		return nil, false
	}
	b, err := os.ReadFile(filepath.Join(s.fallback, filepath.FromSlash(rest)))
	return b, err == nil
}

func (s *repoServer) serve(w http.ResponseWriter, r *http.Request) {
	p := path.Clean(r.URL.Path)
	body, ok := s.file(p)
	if !ok {
		if jar, isSum := strings.CutSuffix(p, ".sha1"); isSum {
			if b, found := s.file(jar); found {
				sum := sha1.Sum(b)
				body, ok = []byte(hex.EncodeToString(sum[:])), true
			}
		}
	}
	if !ok {
		http.NotFound(w, r)
		return
	}
	s.mu.Lock()
	s.served = append(s.served, r.Method+" "+p)
	s.mu.Unlock()
	w.Header().Set("Content-Length", fmt.Sprint(len(body)))
	if r.Method != http.MethodHead {
		w.Write(body)
	}
}

func (s *repoServer) log() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.served)
}

func requireMaven(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"java", "mvn"} {
		testenv.Require(t, tool+" (spatec pin resolves Maven closures with Maven)", func() error {
			_, err := exec.LookPath(tool)
			return err
		})
	}
}

// TestResolveFromALoopbackRepository resolves a converter's closure as
// `spatec pin` resolves Confluent's: the converter and a serializer from a
// repository of their own, a codec the serializer needs at runtime from
// Central, and an API the converter is built against (provided) left out.
// Maven runs with a fresh local repository, no user settings, and Central
// on the loopback, so it reaches nothing else; the plugin comes from the
// local repository .ci/test fetched it into, served as Central.
func TestResolveFromALoopbackRepository(t *testing.T) {
	requireMaven(t)
	const g = "dev.spatec.fixture"
	arts := []artifact{
		{repo: "vendor", group: g, id: "converter", version: "1.0", deps: []dep{
			{g, "serializer", "1.0", "compile"},
			{g, "api", "1.0", "provided"},
		}},
		{repo: "vendor", group: g, id: "serializer", version: "1.0", deps: []dep{{g, "codec", "2.0", "runtime"}}},
		{repo: "central", group: g, id: "codec", version: "2.0"},
		{repo: "central", group: g, id: "api", version: "1.0"},
	}
	files := map[string][]byte{}
	jars := map[string][]byte{}
	for _, a := range arts {
		base := "/" + a.repo + "/" + a.dir() + a.id + "-" + a.version
		files[base+".pom"] = a.pom()
		files[base+".jar"] = a.jar(t)
		jars[a.id] = files[base+".jar"]
	}
	srv := newRepoServer(t, files, filepath.Join(javaUserHome(t), ".m2", "repository"))
	settings := filepath.Join(t.TempDir(), "settings.xml")
	if err := os.WriteFile(settings, []byte("<settings/>\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := &Resolver{Central: srv.URL + "/central/", LocalRepository: t.TempDir(), Settings: settings}

	got, err := r.Resolve(t.Context(), schema.MavenArtifact{
		Repositories: []string{srv.URL + "/vendor/"},
		Artifact:     g + ":converter:1.0",
		To:           "/opt/plugins/converter",
	})
	if err != nil {
		t.Fatalf("%v\n(the plugin %s must be in %s: `cd exec/closure/testdata/plugin && mvn -B -q validate` fetches it, as .ci/test does)", err, DependencyPlugin, srv.fallback)
	}
	sum := func(id string) string {
		s := sha256.Sum256(jars[id])
		return hex.EncodeToString(s[:])
	}
	want := []schema.ClosureJar{
		{URL: srv.URL + "/central/dev/spatec/fixture/codec/2.0/codec-2.0.jar", SHA256: sum("codec")},
		{URL: srv.URL + "/vendor/dev/spatec/fixture/converter/1.0/converter-1.0.jar", SHA256: sum("converter")},
		{URL: srv.URL + "/vendor/dev/spatec/fixture/serializer/1.0/serializer-1.0.jar", SHA256: sum("serializer")},
	}
	if !slices.Equal(got, want) {
		t.Errorf("closure:\n%v\nwant:\n%v", got, want)
	}
	// Maven took its plugin from the loopback's Central, and nothing from
	// the fixture that the closure leaves out.
	log := srv.log()
	if !slices.Contains(log, "GET /central/org/apache/maven/plugins/maven-dependency-plugin/3.8.1/maven-dependency-plugin-3.8.1.jar") {
		t.Errorf("the plugin was not fetched from the loopback; served:\n%s", strings.Join(log, "\n"))
	}
	for _, l := range log {
		if strings.Contains(l, "/api-1.0.jar") {
			t.Errorf("the provided API was fetched: %s", l)
		}
	}

	// The closure as an environment pins it goes into a layered image:
	// its jars, downloaded from the loopback and checked, in its directory.
	t.Run("built", func(t *testing.T) {
		e := testenv.Docker(t)
		a := schema.MavenArtifact{Repositories: []string{srv.URL + "/vendor/"}, Artifact: g + ":converter:1.0", To: "/opt/plugins/converter"}
		env := &schema.Environment{Name: "fixture", Closures: map[string][]schema.ClosureJar{a.Artifact: got}}
		pinned, missing := layered.Pin(schema.Layered{From: burntest.Image(t, e), Maven: []schema.MavenArtifact{a}}, env)
		if len(missing) > 0 {
			t.Fatalf("unpinned: %v", missing)
		}
		ref := "spatec-closure-test:" + uuid.NewString()[:8]
		t.Cleanup(func() { _ = e.RemoveImage(context.Background(), ref) })
		b := &layered.Builder{Engine: e}
		img, err := b.Ensure(t.Context(), ref, pinned)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = e.RemoveImage(context.Background(), img.ID) })
		created, err := e.Create(t.Context(), engine.ContainerSpec{Name: "spatec-closure-" + uuid.NewString()[:8], Image: ref, NetworkMode: "none"})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Remove(context.Background(), created.ID)
		for _, id := range []string{"converter-1.0", "serializer-1.0", "codec-2.0"} {
			name, _, _ := strings.Cut(id, "-")
			file := "/opt/plugins/converter/" + id + ".jar"
			if b, err := e.ReadFile(t.Context(), created.ID, file, 1<<12); err != nil || !bytes.Equal(b, jars[name]) {
				t.Errorf("%s in the image: %d bytes, %v; want the %s jar the repository serves", file, len(b), err, name)
			}
		}
		if _, err := e.ReadFile(t.Context(), created.ID, "/opt/plugins/converter/api-1.0.jar", 1<<12); !errors.Is(err, engine.ErrNoFile) {
			t.Errorf("the provided API is in the image: %v", err)
		}
	})
}

// The plugin the test finds in the local repository is the one .ci/test
// fetches with testdata/plugin, and the one Resolve runs.
func TestPluginFetchedForTheTestsIsTheOneResolveRuns(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "plugin", "pom.xml"))
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(DependencyPlugin, ":")
	want := fmt.Sprintf("<groupId>%s</groupId>\n        <artifactId>%s</artifactId>\n        <!-- Keep it equal to closure.DependencyPlugin. -->\n        <version>%s</version>", parts[0], parts[1], parts[2])
	if !strings.Contains(string(b), want) {
		t.Errorf("testdata/plugin/pom.xml does not fetch %s", DependencyPlugin)
	}
}

func TestResolveNeedsMaven(t *testing.T) {
	r := &Resolver{Maven: filepath.Join(t.TempDir(), "mvn")}
	_, err := r.Resolve(t.Context(), schema.MavenArtifact{Artifact: "g:a:1.0", To: "/x"})
	if err == nil || !strings.Contains(err.Error(), "resolving the closure of g:a:1.0 needs Maven") || !strings.Contains(err.Error(), "install Maven") {
		t.Errorf("without Maven: %v", err)
	}
	if _, err := r.Resolve(t.Context(), schema.MavenArtifact{Artifact: "g:a:1.0-SNAPSHOT", To: "/x"}); err == nil || !strings.Contains(err.Error(), "snapshot") {
		t.Errorf("a snapshot: %v", err)
	}
}

// javaUserHome is the home directory Maven's local repository is under:
// the JVM's user.home, which it takes from the user's entry in the
// password database, not from $HOME.
func javaUserHome(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("java", "-XshowSettings:properties", "-version").CombinedOutput()
	if err != nil {
		t.Fatalf("asking the JVM for user.home: %v\n%s", err, out)
	}
	for _, l := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "user.home = "); ok {
			return v
		}
	}
	t.Fatalf("the JVM states no user.home:\n%s", out)
	return ""
}
