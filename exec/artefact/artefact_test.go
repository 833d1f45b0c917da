package artefact

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
	"path/filepath"
	"strings"
	"testing"

	"spatec.dev/spatec/schema"
)

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// tarGz is a gzip-compressed tar of files (name → body), each with mode.
func tarGz(t *testing.T, files map[string]string, mode int64) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for name, body := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: mode, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		io.WriteString(tw, body)
	}
	tw.Close()
	zw.Close()
	return buf.Bytes()
}

type placed struct {
	mode int64
	body string
}

func collect(got map[string]placed) Put {
	return func(name string, mode int64, r io.Reader) error {
		b, err := io.ReadAll(r)
		got[name] = placed{mode, string(b)}
		return err
	}
}

// A tar.gz is unpacked under its prefix at its destination, each file
// keeping its mode, and nothing outside the prefix goes in.
func TestUntarKeepsModesUnderThePrefix(t *testing.T) {
	archive := tarGz(t, map[string]string{"app/bin/run.sh": "#!/bin/sh\n", "app/lib/a.jar": "jar", "other/x": "no"}, 0o755)
	file := filepath.Join(t.TempDir(), "a.tar.gz")
	if err := os.WriteFile(file, archive, 0o644); err != nil {
		t.Fatal(err)
	}
	prefix := "app"
	got := map[string]placed{}
	if err := Place(schema.Download{URL: "u", To: "/opt/app", Untar: &prefix}, file, collect(got)); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got["/opt/app/bin/run.sh"].mode != 0o755 || got["/opt/app/lib/a.jar"].body != "jar" {
		t.Fatalf("placed %v", got)
	}
	none := "nothing"
	if err := Place(schema.Download{URL: "u", To: "/opt", Untar: &none}, file, collect(map[string]placed{})); err == nil || !strings.Contains(err.Error(), `no file under "nothing"`) {
		t.Fatalf("a prefix matching nothing: %v", err)
	}
}

// A download whose checksum is not the declared one is refused, and is not
// kept; one that matches is fetched once and then read from the cache.
func TestFetchChecksAndCaches(t *testing.T) {
	body := []byte("the release artefact")
	hits := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits++
		w.Write(body)
	}))
	defer srv.Close()
	cache := t.TempDir()
	f := Fetcher{CacheDir: cache}
	ctx := context.Background()
	if _, _, err := f.Fetch(ctx, schema.Download{URL: srv.URL, SHA256: sum([]byte("another")), To: "/x"}); err == nil || !strings.Contains(err.Error(), "the published artefact changed") {
		t.Fatalf("a wrong checksum: %v", err)
	}
	entries, _ := os.ReadDir(cache)
	if len(entries) != 0 {
		t.Fatalf("a refused download left %v in the cache", entries)
	}
	for range 2 {
		path, done, err := f.Fetch(ctx, schema.Download{URL: srv.URL, SHA256: sum(body), To: "/x"})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(path)
		done()
		if !bytes.Equal(b, body) {
			t.Fatalf("fetched %q", b)
		}
	}
	if hits != 2 { // the refused one, then one fetch for two calls
		t.Fatalf("the server was asked %d times; want 2", hits)
	}
}
