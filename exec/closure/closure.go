// Package closure resolves the runtime closure of a Maven artifact with
// Maven itself, on a host that reaches its repositories, and pins each jar
// by the URL its repository publishes it at and its sha256: what `spatec
// pin` writes into an environment's closures, and what a layered build
// then downloads and checks (#MavenArtifact). Maven decides what the
// closure is (its mediation of versions, its exclusions, its scopes), as
// for the system's own users; spatec only records the outcome.
package closure

import (
	"bytes"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"spatec.dev/spatec/exec/artefact"
	"spatec.dev/spatec/exec/progress"
	"spatec.dev/spatec/schema"
)

// DependencyPlugin is the Maven plugin that collects the closure, at the
// version the public harness collects its converter's with. It is named
// with its version on Maven's command line: a prefix would be resolved to
// whatever version the repository lists last.
const DependencyPlugin = "org.apache.maven.plugins:maven-dependency-plugin:3.8.1"

// Resolver resolves closures with Maven.
type Resolver struct {
	// Maven is the mvn command; "" finds mvn on PATH.
	Maven string
	// Central is Maven Central's URL, searched after every repository an
	// artifact declares, for Maven's plugins too; "" is artefact.Central.
	Central string
	// LocalRepository is Maven's local repository; "" is Maven's own
	// (~/.m2/repository), where what Maven has fetched before is reused.
	LocalRepository string
	// Settings is a Maven settings file read instead of the user's; "" is
	// the user's own.
	Settings string
	// Client asks the repositories where each jar is published; nil is
	// http.DefaultClient.
	Client *http.Client
	// Progress reports Maven's resolution and the jars' lookups; nil
	// reports nothing.
	Progress *progress.Reporter
}

// coordinates is groupId:artifactId:version.
var coordinates = regexp.MustCompile(`^([A-Za-z0-9_.-]+):([A-Za-z0-9_.-]+):([A-Za-z0-9_.-]+)$`)

// Resolve resolves a's runtime closure (a and every dependency of compile
// or runtime scope; provided, test and system scopes stay out) and returns
// each jar, in the order of its path in the repository, with the URL of
// the first of a's repositories, then Maven Central, that publishes it.
func (r *Resolver) Resolve(ctx context.Context, a schema.MavenArtifact) ([]schema.ClosureJar, error) {
	m := coordinates.FindStringSubmatch(a.Artifact)
	if m == nil {
		return nil, fmt.Errorf("maven artifact %q: give groupId:artifactId:version", a.Artifact)
	}
	if strings.HasSuffix(m[3], "SNAPSHOT") {
		return nil, fmt.Errorf("maven artifact %s is a snapshot, whose content moves under its version: pin a release", a.Artifact)
	}
	mvn := r.Maven
	if mvn == "" {
		mvn = "mvn"
	}
	if _, err := exec.LookPath(mvn); err != nil {
		return nil, fmt.Errorf("resolving the closure of %s needs Maven, which spatec pin runs to resolve it as Maven's users do, and %s is not found (%v): install Maven (Debian's maven package) on this host", a.Artifact, mvn, err)
	}
	central := r.Central
	if central == "" {
		central = artefact.Central
	}
	repos := append(append([]string(nil), a.Repositories...), central)
	for i, u := range repos {
		if !strings.HasSuffix(u, "/") {
			repos[i] = u + "/"
		}
	}

	dir, err := os.MkdirTemp("", "spatec-closure-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	pom, err := projectPOM(m[1], m[2], m[3], repos)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "pom.xml"), pom, 0o644); err != nil {
		return nil, err
	}
	out := filepath.Join(dir, "closure")
	args := []string{"-B", "-ntp",
		// A download whose checksum file disagrees fails the resolution
		// instead of being warned about.
		"--strict-checksums",
		"-f", filepath.Join(dir, "pom.xml")}
	if r.Settings != "" {
		args = append(args, "-s", r.Settings)
	}
	if r.LocalRepository != "" {
		args = append(args, "-Dmaven.repo.local="+r.LocalRepository)
	}
	args = append(args, DependencyPlugin+":copy-dependencies",
		"-DincludeScope=runtime", "-Dmdep.useRepositoryLayout=true", "-DoutputDirectory="+out)
	r.Progress.Start("pin/maven "+a.Artifact, 0, "")
	cmd := exec.CommandContext(ctx, mvn, args...)
	cmd.Dir = dir
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Run(); err != nil {
		err = fmt.Errorf("resolving the closure of %s with Maven (%s %s): %w\n%s", a.Artifact, mvn, strings.Join(args, " "), err, tail(log.String(), 40))
		r.Progress.Fail(err)
		return nil, err
	}
	r.Progress.End()

	files, err := closureFiles(out)
	if err != nil {
		return nil, fmt.Errorf("the closure of %s: %w", a.Artifact, err)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("maven resolved no jar for %s", a.Artifact)
	}
	r.Progress.Start("pin/jars "+a.Artifact, int64(len(files)), "jars")
	var jars []schema.ClosureJar
	for _, rel := range files {
		j, err := r.locate(ctx, filepath.Join(out, filepath.FromSlash(rel)), rel, repos)
		if err != nil {
			err = fmt.Errorf("the closure of %s: %w", a.Artifact, err)
			r.Progress.Fail(err)
			return nil, err
		}
		jars = append(jars, j)
		r.Progress.Add(1)
	}
	r.Progress.End()
	return jars, nil
}

// closureFiles lists the jars copy-dependencies laid out under dir, by
// their paths in a repository. A closure's jars go into one directory by
// file name, so two of one name are refused.
func closureFiles(dir string) ([]string, error) {
	var files []string
	named := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		name := d.Name()
		switch {
		// The local repository's own records, beside each artifact.
		case name == "_remote.repositories", strings.HasPrefix(name, "maven-metadata"),
			strings.HasSuffix(name, ".sha1"), strings.HasSuffix(name, ".md5"), strings.HasSuffix(name, ".lastUpdated"):
			return nil
		// A dependency of type pom only gathers others; it is no code.
		case strings.HasSuffix(name, ".pom"):
			return nil
		case !strings.HasSuffix(name, ".jar"):
			return fmt.Errorf("it holds %s, which is not a jar", name)
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if other, ok := named[name]; ok {
			return fmt.Errorf("it holds %s and %s, of one file name, which would overwrite each other in one directory", other, rel)
		}
		named[name] = rel
		files = append(files, rel)
		return nil
	})
	return files, err
}

// locate pins the jar Maven put at file, rel being its path in a
// repository: its sha256, and the URL of the first of repos that publishes
// it. A repository's checksum file, where it publishes one, must match the
// jar Maven resolved: the URL is pinned for those bytes.
func (r *Resolver) locate(ctx context.Context, file, rel string, repos []string) (schema.ClosureJar, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return schema.ClosureJar{}, err
	}
	s256, s1 := sha256.Sum256(b), sha1.Sum(b)
	for _, repo := range repos {
		url := repo + rel
		status, err := r.request(ctx, http.MethodHead, url, nil)
		if err != nil {
			return schema.ClosureJar{}, err
		}
		switch {
		case status == http.StatusNotFound || status == http.StatusForbidden || status == http.StatusGone:
			continue // not here: S3-backed repositories answer 403 for a missing key
		case status != http.StatusOK:
			return schema.ClosureJar{}, fmt.Errorf("HEAD %s: the repository answered %d", url, status)
		}
		var sum bytes.Buffer
		switch status, err := r.request(ctx, http.MethodGet, url+".sha1", &sum); {
		case err != nil:
			return schema.ClosureJar{}, err
		case status == http.StatusOK:
			published, _, _ := strings.Cut(strings.TrimSpace(sum.String()), " ")
			if !strings.EqualFold(published, hex.EncodeToString(s1[:])) {
				return schema.ClosureJar{}, fmt.Errorf("%s publishes sha1 %s, and the jar Maven resolved has %s: Maven took it from another repository, or the local repository holds another build of it", url, published, hex.EncodeToString(s1[:]))
			}
		}
		return schema.ClosureJar{URL: url, SHA256: hex.EncodeToString(s256[:])}, nil
	}
	return schema.ClosureJar{}, fmt.Errorf("maven resolved %s, and none of %s publishes it: it came from a repository a dependency's POM declares; add that repository to the artifact's repositories", path.Base(rel), strings.Join(repos, ", "))
}

// request sends one request and returns the status, copying a 200's body
// into body when given.
func (r *Resolver) request(ctx context.Context, method, url string, body io.Writer) (int, error) {
	client := r.Client
	if client == nil {
		client = http.DefaultClient
	}
	req, err := http.NewRequestWithContext(ctx, method, url, nil)
	if err != nil {
		return 0, fmt.Errorf("%s %s: %w", method, url, err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("%s %s: %w", method, url, err)
	}
	defer resp.Body.Close()
	if body != nil && resp.StatusCode == http.StatusOK {
		if _, err := io.Copy(body, io.LimitReader(resp.Body, 1<<10)); err != nil {
			return 0, fmt.Errorf("%s %s: %w", method, url, err)
		}
	}
	return resp.StatusCode, nil
}

// repository is a Maven repository of the project's POM.
type repository struct {
	ID        string  `xml:"id"`
	URL       string  `xml:"url"`
	Releases  enabled `xml:"releases"`
	Snapshots enabled `xml:"snapshots"`
}

type enabled struct {
	Enabled bool `xml:"enabled"`
}

// projectPOM is a project whose only dependency is the artifact, with its
// repositories in order and Maven Central (the last of repos) last, for
// plugins too. A repository's id is derived from its URL, since Maven's
// local repository reuses a file only for the repository id it came from:
// a file fetched from another URL under the same id would be taken as this
// one's. Central keeps the id "central" under which Maven records what it
// fetches from Central, so that a plugin fetched before is found.
func projectPOM(group, artifact, version string, repos []string) ([]byte, error) {
	type dependency struct {
		GroupID    string `xml:"groupId"`
		ArtifactID string `xml:"artifactId"`
		Version    string `xml:"version"`
	}
	type project struct {
		XMLName            xml.Name     `xml:"project"`
		NS                 string       `xml:"xmlns,attr"`
		ModelVersion       string       `xml:"modelVersion"`
		GroupID            string       `xml:"groupId"`
		ArtifactID         string       `xml:"artifactId"`
		Version            string       `xml:"version"`
		Packaging          string       `xml:"packaging"`
		Repositories       []repository `xml:"repositories>repository"`
		PluginRepositories []repository `xml:"pluginRepositories>pluginRepository"`
		Dependencies       []dependency `xml:"dependencies>dependency"`
	}
	p := project{NS: "http://maven.apache.org/POM/4.0.0", ModelVersion: "4.0.0",
		GroupID: "dev.spatec.pin", ArtifactID: "closure", Version: "0", Packaging: "pom",
		Dependencies: []dependency{{group, artifact, version}}}
	for i, u := range repos {
		id := "central"
		if i < len(repos)-1 {
			sum := sha256.Sum256([]byte(u))
			id = "spatec-" + hex.EncodeToString(sum[:6])
		}
		p.Repositories = append(p.Repositories, repository{ID: id, URL: u, Releases: enabled{true}})
	}
	p.PluginRepositories = []repository{p.Repositories[len(p.Repositories)-1]}
	b, err := xml.MarshalIndent(p, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("writing the closure's POM: %w", err)
	}
	return append([]byte(xml.Header), b...), nil
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
