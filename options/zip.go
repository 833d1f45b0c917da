package options

import (
	"archive/zip"
	"io"
	"os"
)

// unzipEntry writes one entry of a zip archive to the file to: the
// extractors that read a system's jars out of its release archive.
func unzipEntry(f *zip.File, to string) error {
	r, err := f.Open()
	if err != nil {
		return err
	}
	defer r.Close()
	w, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(w, r); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}
