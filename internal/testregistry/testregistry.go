// Package testregistry serves container images over the registry API (the
// OCI distribution protocol's pull side) on the loopback, so that pulling
// by digest and resolving tags to digests are tested against the real
// Docker engine here, where no public registry can be reached. The engine
// speaks plain HTTP to a registry on 127.0.0.0/8.
package testregistry

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// Registry is a running registry.
type Registry struct {
	// Host is its address, host:port, the prefix of its image names.
	Host string

	mu        sync.Mutex
	manifests map[string][]byte // "name:reference" -> manifest
	blobs     map[string][]byte // digest -> content
	// Pulls counts the manifest requests by digest.
	pulls int
}

const (
	manifestType = "application/vnd.docker.distribution.manifest.v2+json"
	configType   = "application/vnd.docker.container.image.v1+json"
	layerType    = "application/vnd.docker.image.rootfs.diff.tar.gzip"
)

// Start serves a registry until the test ends.
func Start(t testing.TB) *Registry {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &Registry{Host: ln.Addr().String(), manifests: map[string][]byte{}, blobs: map[string][]byte{}}
	srv := &http.Server{Handler: r, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return r
}

func digestOf(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

// Push publishes an image name:tag whose one layer holds files (path to
// content, each 0755) and whose entrypoint is entrypoint, and returns the
// manifest's digest: what a registry reports for the tag.
func (r *Registry) Push(t testing.TB, name, tag string, files map[string][]byte, entrypoint []string) string {
	t.Helper()
	var layer bytes.Buffer
	tw := tar.NewWriter(&layer)
	for path, body := range files {
		if err := tw.WriteHeader(&tar.Header{Name: strings.TrimPrefix(path, "/"), Mode: 0o755, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write(body)
	}
	tw.Close()
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(layer.Bytes())
	zw.Close()
	config, err := json.Marshal(map[string]any{
		"architecture": "amd64", "os": "linux",
		"config": map[string]any{"Entrypoint": entrypoint},
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{digestOf(layer.Bytes())}},
	})
	if err != nil {
		t.Fatal(err)
	}
	manifest, err := json.Marshal(map[string]any{
		"schemaVersion": 2, "mediaType": manifestType,
		"config": map[string]any{"mediaType": configType, "size": len(config), "digest": digestOf(config)},
		"layers": []map[string]any{{"mediaType": layerType, "size": gz.Len(), "digest": digestOf(gz.Bytes())}},
	})
	if err != nil {
		t.Fatal(err)
	}
	d := digestOf(manifest)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.blobs[digestOf(config)] = config
	r.blobs[digestOf(gz.Bytes())] = gz.Bytes()
	r.manifests[name+":"+tag] = manifest
	r.manifests[name+":"+d] = manifest
	return d
}

// Pulls returns how many manifests were asked for by digest.
func (r *Registry) Pulls() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pulls
}

// ServeHTTP answers /v2/, /v2/<name>/manifests/<ref> and
// /v2/<name>/blobs/<digest>.
func (r *Registry) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	path := strings.TrimPrefix(req.URL.Path, "/v2/")
	if path == "" || path == req.URL.Path {
		w.Header().Set("Docker-Distribution-API-Version", "registry/2.0")
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if i := strings.LastIndex(path, "/manifests/"); i >= 0 {
		name, ref := path[:i], path[i+len("/manifests/"):]
		m, ok := r.manifests[name+":"+ref]
		if !ok {
			http.Error(w, `{"errors":[{"code":"MANIFEST_UNKNOWN"}]}`, http.StatusNotFound)
			return
		}
		if strings.HasPrefix(ref, "sha256:") && req.Method == http.MethodGet {
			r.pulls++
		}
		w.Header().Set("Content-Type", manifestType)
		w.Header().Set("Docker-Content-Digest", digestOf(m))
		w.Header().Set("Content-Length", fmt.Sprint(len(m)))
		if req.Method != http.MethodHead {
			w.Write(m)
		}
		return
	}
	if i := strings.LastIndex(path, "/blobs/"); i >= 0 {
		b, ok := r.blobs[path[i+len("/blobs/"):]]
		if !ok {
			http.Error(w, `{"errors":[{"code":"BLOB_UNKNOWN"}]}`, http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Length", fmt.Sprint(len(b)))
		w.Header().Set("Docker-Content-Digest", digestOf(b))
		if req.Method != http.MethodHead {
			w.Write(b)
		}
		return
	}
	http.NotFound(w, req)
}
