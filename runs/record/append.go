package record

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// PathFor returns where a record of env and entrant appended at t belongs:
// <root>/<env>/<entrant>/<YYYY-MM>.jsonl, the month taken in UTC so that
// hosts in different zones agree on the file.
func PathFor(root, env, entrant string, t time.Time) string {
	return filepath.Join(root, env, entrant, t.UTC().Format("2006-01")+".jsonl")
}

// MinFree is the room a results root must have for a run to start: a
// record is a few KiB, and a run that measures only to find it cannot record
// the result has wasted the measurement.
const MinFree = 1 << 20

// CheckRoot makes sure records can be appended under root before anything
// is measured: root is a directory (created when missing), writable, with
// MinFree bytes free. The error says what is wrong and how to fix it.
func CheckRoot(root string) error {
	st, err := os.Stat(root)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if _, err := mkdirAll(root); err != nil {
			return fmt.Errorf("results %s does not exist and cannot be created: %v; give --results a directory that can be", root, err)
		}
	case err != nil:
		return fmt.Errorf("results %s cannot be read: %v; give --results a directory", root, err)
	case !st.IsDir():
		return fmt.Errorf("results %s is a file, not a directory; give --results a directory (it is created when missing)", root)
	}
	probe, err := os.CreateTemp(root, ".spatec-write-check-*")
	if err != nil {
		return fmt.Errorf("results directory %s is not writable: %v; fix its permissions or give --results another directory", root, err)
	}
	probe.Close()
	os.Remove(probe.Name())
	var fsys unix.Statfs_t
	if err := unix.Statfs(root, &fsys); err != nil {
		return fmt.Errorf("results directory %s: reading its free space: %v", root, err)
	}
	if free := int64(fsys.Bavail) * int64(fsys.Bsize); free < MinFree {
		return fmt.Errorf("results directory %s has %d bytes free; a run needs at least %d to record its results; free some space there or give --results another directory", root, free, MinFree)
	}
	return nil
}

// Append writes rec as one JSON line at the end of the log at path, creating
// the file and its directories when missing.
//
// The line is written with a single write under an exclusive flock, so
// concurrent runs (goroutines or processes) never interleave, and the file
// is fsync'd before Append returns, together with its directory when the
// file is new, so a record that Append reported written survives a crash.
// The file is opened O_APPEND. A write that fails part-way (a full disk)
// is undone: the file is cut back to the length it had under the lock, so
// no partial line is left and nothing recorded before is touched.
//
// Append refuses only a record it could not file or identify (unknown schema
// or status, bad run id, missing env or entrant). Other gaps, such as missing
// provenance, are written anyway: C14 wants every run recorded, and Validate
// reports the gap with its location.
func Append(path string, rec *Record) error {
	if err := appendable(rec); err != nil {
		return fmt.Errorf("appending a record to %s: %w", path, err)
	}
	line, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("appending run %s to %s: encoding the record: %w", rec.RunID, path, err)
	}
	line = append(line, '\n')

	dir := filepath.Dir(path)
	created, err := mkdirAll(dir)
	if err != nil {
		return fmt.Errorf("appending run %s: creating %s: %w", rec.RunID, dir, err)
	}
	_, statErr := os.Stat(path)
	fresh := errors.Is(statErr, fs.ErrNotExist)

	// O_RDWR rather than O_WRONLY: the last byte is read back below.
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return fmt.Errorf("appending run %s: opening %s: %w", rec.RunID, path, err)
	}
	defer f.Close()

	if err := flock(f, unix.LOCK_EX); err != nil {
		return fmt.Errorf("appending run %s: locking %s: %w", rec.RunID, path, err)
	}
	// Closing the file releases the lock as well; the explicit unlock only
	// makes it end before the deferred Close.
	defer flock(f, unix.LOCK_UN)

	// A writer killed mid-write can leave a last line without its newline.
	// Gluing the next record onto it would corrupt a good record as well;
	// starting on a fresh line keeps the damage to the line that has it,
	// where Validate reports it as truncated.
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("appending run %s: inspecting %s: %w", rec.RunID, path, err)
	}
	if size := st.Size(); size > 0 {
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, size-1); err != nil {
			return fmt.Errorf("appending run %s: reading the end of %s: %w", rec.RunID, path, err)
		}
		if last[0] != '\n' {
			line = append([]byte{'\n'}, line...)
		}
	}

	size := st.Size()
	undo := func(err error) error {
		if terr := f.Truncate(size); terr != nil {
			return fmt.Errorf("%w; and cutting %s back to its %d bytes failed too: %v", err, path, size, terr)
		}
		_ = f.Sync()
		return err
	}
	if _, err := f.Write(line); err != nil {
		return undo(fmt.Errorf("appending run %s: writing to %s: %w", rec.RunID, path, err))
	}
	if err := f.Sync(); err != nil {
		return undo(fmt.Errorf("appending run %s: syncing %s: %w", rec.RunID, path, err))
	}
	// A new file's directory entry, and any directory created for it, is
	// durable only once its parent directory is synced.
	if fresh {
		if err := syncDir(dir); err != nil {
			return fmt.Errorf("appending run %s: %w", rec.RunID, err)
		}
	}
	for _, d := range created {
		if err := syncDir(filepath.Dir(d)); err != nil {
			return fmt.Errorf("appending run %s: %w", rec.RunID, err)
		}
	}
	return nil
}

// appendable holds the checks without which a record could not be found or
// identified later.
func appendable(rec *Record) error {
	if rec == nil {
		return errors.New("the record is nil")
	}
	if rec.Schema != SchemaV1 {
		return fmt.Errorf("schema is %q; set it to record.SchemaV1 (%q)", rec.Schema, SchemaV1)
	}
	if !rec.Status.Known() {
		return fmt.Errorf("status %q is not one of %s", rec.Status, statusList())
	}
	if rec.RunID == "" {
		return errors.New("run_id is empty; set it from record.NewRunID")
	}
	for _, f := range []struct{ what, name string }{
		{"run.env", rec.Run.Env},
		{"sut.entrant", rec.SUT.Entrant},
	} {
		if err := plainName(f.name); err != nil {
			return fmt.Errorf("%s %w; it names a directory of the results tree", f.what, err)
		}
	}
	return nil
}

// plainName accepts a name usable as one path component.
func plainName(s string) error {
	switch {
	case s == "":
		return errors.New("is empty")
	case s == "." || s == "..", strings.ContainsAny(s, `/\`):
		return fmt.Errorf("%q is not a plain name (no slashes, not . or ..)", s)
	}
	return nil
}

// mkdirAll is os.MkdirAll that also returns the directories it created,
// outermost first, so their parents can be synced.
func mkdirAll(dir string) ([]string, error) {
	var missing []string
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		missing = append([]string{d}, missing...)
		if filepath.Dir(d) == d {
			break
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return missing, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("opening directory %s to sync it: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("syncing directory %s: %w", dir, err)
	}
	return nil
}

// flock takes or releases a whole-file lock, retrying when a signal
// interrupts the wait.
func flock(f *os.File, how int) error {
	for {
		err := unix.Flock(int(f.Fd()), how)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}
