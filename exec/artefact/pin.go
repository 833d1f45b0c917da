package artefact

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"path"
	"strings"

	"spatec.dev/spatec/exec/progress"
	"spatec.dev/spatec/schema"
)

// Central is Maven Central's URL, the repository every Maven closure is
// resolved from after the ones its artifact declares.
const Central = "https://repo.maven.apache.org/maven2/"

// Unpinned is something an image build adds that its environment has not
// pinned: a download declared without its sha256, or a Maven artifact whose
// closure is not among the environment's closures. Nothing would check what
// it puts into the image, so no run builds it (C16).
type Unpinned struct {
	// URL is the download's, when it is a download.
	URL string
	// Maven is the artifact, when it is a closure.
	Maven *schema.MavenArtifact
}

// String names what is unpinned.
func (u Unpinned) String() string {
	if u.Maven != nil {
		return "the runtime closure of Maven artifact " + u.Maven.Artifact + " (into " + u.Maven.To + ")"
	}
	return "download " + u.URL
}

// Reach says where `spatec pin` must be able to reach to pin it: the
// download's host, or the artifact's repositories and Maven Central.
func (u Unpinned) Reach() string {
	if u.Maven != nil {
		return strings.Join(append(append([]string(nil), u.Maven.Repositories...), "Maven Central"), " and ")
	}
	return u.URL
}

// Refusal says why an image with unpinned artefacts is not built in env,
// and the command that pins them.
func Refusal(env string, unpinned []Unpinned) string {
	var what, reach []string
	for _, u := range unpinned {
		what = append(what, u.String())
		reach = append(reach, u.Reach())
	}
	verb := "are"
	if len(what) == 1 {
		verb = "is"
	}
	return fmt.Sprintf("C16: %s %s not pinned in %s, so nothing would check what goes into the image; run `spatec pin --env %s` on a host that reaches %s, review what it writes to envs/%s/pins.cue, and commit it",
		strings.Join(what, " and "), verb, env, env, strings.Join(dedupe(reach), " and "), env)
}

func dedupe(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

// PinDownloads gives each download its sha256: its own, or the one env's
// pins hold for its URL. Those that have neither are returned unpinned.
func PinDownloads(ds []schema.Download, env *schema.Environment) ([]schema.Download, []Unpinned) {
	out := make([]schema.Download, len(ds))
	var missing []Unpinned
	for i, d := range ds {
		if d.SHA256 == "" {
			if pin, ok := env.Pins[d.URL]; ok {
				d.SHA256 = strings.TrimPrefix(pin, "sha256:")
			} else {
				missing = append(missing, Unpinned{URL: d.URL})
			}
		}
		out[i] = d
	}
	return out, missing
}

// PinClosure gives the jars of m's closure as downloads into m.To, each
// under its file name, from env's closures; ok is false when env has not
// pinned it.
func PinClosure(m schema.MavenArtifact, env *schema.Environment) (jars []schema.Download, ok bool) {
	pinned, ok := env.Closures[m.Artifact]
	if !ok {
		return nil, false
	}
	for _, j := range pinned {
		jars = append(jars, schema.Download{URL: j.URL, SHA256: j.SHA256, To: path.Join(m.To, path.Base(j.URL))})
	}
	return jars, true
}

// ClosureDigest names a pinned closure: the sha256 of its jars' lines,
// "<sha256>  <url>", in the order pinned.
func ClosureDigest(jars []schema.ClosureJar) string {
	h := sha256.New()
	for _, j := range jars {
		fmt.Fprintf(h, "%s  %s\n", j.SHA256, j.URL)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// Hash fetches url and returns its sha256, reporting progress: how `spatec
// pin` pins a download declared without one.
func Hash(ctx context.Context, client *http.Client, p *progress.Reporter, url string) (string, error) {
	if client == nil {
		client = http.DefaultClient
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", fmt.Errorf("downloading %s: %w", url, err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", fmt.Errorf("downloading %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("downloading %s: the server answered %s", url, resp.Status)
	}
	p.Start("pin/download", resp.ContentLength, "bytes")
	h := sha256.New()
	if _, err := io.Copy(io.MultiWriter(h, progressWriter{p}), resp.Body); err != nil {
		p.Fail(err)
		return "", fmt.Errorf("downloading %s: %w", url, err)
	}
	p.End()
	return hex.EncodeToString(h.Sum(nil)), nil
}
