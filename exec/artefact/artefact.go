// Package artefact fetches the artefacts an image build adds (a plugin, a
// job, a release's jars), refusing any whose sha256 is not the one
// declared, keeps them in a cache by that checksum, and unpacks archives:
// what the layered and the Debian builds share.
package artefact

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"

	"spatec.dev/spatec/exec/progress"
	"spatec.dev/spatec/schema"
)

// Fetcher fetches downloads.
type Fetcher struct {
	// CacheDir keeps downloads by their sha256; "" keeps none.
	CacheDir string
	// Progress reports downloads; nil reports nothing.
	Progress *progress.Reporter
	// Client fetches; nil means http.DefaultClient.
	Client *http.Client
}

// Fetch returns the path of download d, from the cache or fetched, once its
// sha256 is the one declared. A file fetched without a cache is removed by
// the returned function; one in the cache stays.
func (f *Fetcher) Fetch(ctx context.Context, d schema.Download) (string, func(), error) {
	dir, keep := f.CacheDir, true
	if dir == "" {
		dir, keep = os.TempDir(), false
	}
	final := filepath.Join(dir, d.SHA256)
	if keep {
		if _, err := os.Stat(final); err == nil {
			return final, func() {}, nil
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.URL, nil)
	if err != nil {
		return "", nil, fmt.Errorf("downloading %s: %w", d.URL, err)
	}
	client := f.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", nil, fmt.Errorf("downloading %s: %w", d.URL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", nil, fmt.Errorf("downloading %s: the server answered %s", d.URL, resp.Status)
	}
	tmp, err := os.CreateTemp(dir, d.SHA256+".*.partial")
	if err != nil {
		return "", nil, err
	}
	defer os.Remove(tmp.Name())
	f.Progress.Start("image/download", resp.ContentLength, "bytes")
	h := sha256.New()
	_, err = io.Copy(io.MultiWriter(tmp, h, progressWriter{f.Progress}), resp.Body)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		f.Progress.Fail(err)
		return "", nil, fmt.Errorf("downloading %s: %w", d.URL, err)
	}
	f.Progress.End()
	if got := hex.EncodeToString(h.Sum(nil)); got != d.SHA256 {
		return "", nil, fmt.Errorf("%s has sha256 %s; the build declares %s: the published artefact changed, or the declaration is wrong; check the release and fix the checksum only if the new artefact is the one to measure", d.URL, got, d.SHA256)
	}
	if !keep {
		kept := tmp.Name() + ".download"
		if err := os.Rename(tmp.Name(), kept); err != nil {
			return "", nil, err
		}
		return kept, func() { os.Remove(kept) }, nil
	}
	if err := os.Rename(tmp.Name(), final); err != nil {
		return "", nil, err
	}
	return final, func() {}, nil
}

type progressWriter struct{ p *progress.Reporter }

func (w progressWriter) Write(b []byte) (int, error) {
	w.p.Add(int64(len(b)))
	return len(b), nil
}

// Put places one file of a build at its absolute path in the image, with
// its mode.
type Put func(name string, mode int64, r io.Reader) error

// Place hands put download d, fetched at file: the file itself at d.To, or,
// for an archive (d.Unzip, d.Untar), every regular file under the archive's
// prefix at d.To joined with the rest of its name.
func Place(d schema.Download, file string, put Put) error {
	switch {
	case d.Unzip != nil:
		return unzip(file, *d.Unzip, d.To, put)
	case d.Untar != nil:
		return untar(file, *d.Untar, d.To, put)
	}
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := put(d.To, 0o644, f); err != nil {
		return fmt.Errorf("adding %s: %w", d.URL, err)
	}
	return nil
}

// under is where an archive entry goes, or "" when it is not under prefix.
func under(name, prefix, to string) (string, error) {
	rest, ok := strings.CutPrefix(path.Clean("/"+name), path.Clean("/"+prefix))
	if !ok || rest == "" || (rest[0] != '/' && prefix != "" && prefix != "/") {
		return "", nil
	}
	if strings.Contains(rest, "..") {
		return "", fmt.Errorf("entry %q leaves its directory", name)
	}
	return path.Join(to, rest), nil
}

func unzip(file, prefix, to string, put Put) error {
	zr, err := zip.OpenReader(file)
	if err != nil {
		return err
	}
	defer zr.Close()
	n := 0
	for _, f := range zr.File {
		if f.FileInfo().IsDir() {
			continue
		}
		dst, err := under(f.Name, prefix, to)
		if err != nil || dst == "" {
			if err != nil {
				return err
			}
			continue
		}
		r, err := f.Open()
		if err != nil {
			return err
		}
		err = put(dst, int64(f.Mode().Perm()|0o644), r)
		r.Close()
		if err != nil {
			return fmt.Errorf("entry %s: %w", f.Name, err)
		}
		n++
	}
	if n == 0 {
		return fmt.Errorf("no file under %q in the archive", prefix)
	}
	return nil
}

// untar unpacks a gzip-compressed tar archive, keeping each file's mode
// (a launcher script stays executable).
func untar(file, prefix, to string, put Put) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return fmt.Errorf("reading the archive: %w", err)
	}
	tr := tar.NewReader(zr)
	n := 0
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("reading the archive: %w", err)
		}
		if hdr.Typeflag != tar.TypeReg {
			continue
		}
		dst, err := under(hdr.Name, prefix, to)
		if err != nil {
			return err
		}
		if dst == "" {
			continue
		}
		if err := put(dst, hdr.Mode&0o777|0o644, tr); err != nil {
			return fmt.Errorf("entry %s: %w", hdr.Name, err)
		}
		n++
	}
	if n == 0 {
		return fmt.Errorf("no file under %q in the archive", prefix)
	}
	return nil
}
