package record

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// A run is written ahead: when it starts, its record as known then (its
// provenance, the plan, the host) goes into a pending file beside the logs;
// when it ends, the finished record is appended to the log and the pending
// file removed. A spatec killed in between (SIGKILL, a power cut) leaves
// the pending file, and the next run under the same results root records
// that run as failed (Recover), so that no run that started goes unrecorded
// (C14).

// pendingDir is where pending records live under a results root. Its name
// starts with a dot so that readers of the logs pass it by.
const pendingDir = ".pending"

// Pending is a run that has started and is not yet recorded.
type Pending struct {
	// Process is the spatec process running it ("pid/start"): while that
	// process lives, the run is its own.
	Process string `json:"process"`
	// Record is the run's record as known when it started.
	Record Record `json:"record"`
}

func pendingPath(root, runID string) string {
	return filepath.Join(root, pendingDir, runID+".json")
}

// WritePending writes p under root, replacing it whole (a new file renamed
// into place, then synced), so a reader never sees half of one.
func WritePending(root string, p Pending) error {
	if err := appendable(&p.Record); err != nil {
		return fmt.Errorf("writing pending run: %w", err)
	}
	b, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("writing pending run %s: %w", p.Record.RunID, err)
	}
	path := pendingPath(root, p.Record.RunID)
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("writing pending run %s: %w", p.Record.RunID, err)
	}
	tmp, err := os.CreateTemp(dir, ".write-*")
	if err != nil {
		return fmt.Errorf("writing pending run %s: %w", p.Record.RunID, err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(b)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err == nil {
		err = syncDir(dir)
	}
	if err != nil {
		return fmt.Errorf("writing pending run %s to %s: %w", p.Record.RunID, path, err)
	}
	return nil
}

// RemovePending removes the pending file of a run that is now recorded.
func RemovePending(root, runID string) error {
	if err := os.Remove(pendingPath(root, runID)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing pending run %s: %w", runID, err)
	}
	return nil
}

// ListPending reads every pending run under root, oldest first.
func ListPending(root string) ([]Pending, error) {
	entries, err := os.ReadDir(filepath.Join(root, pendingDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading pending runs: %w", err)
	}
	var out []Pending
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".json") || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		path := filepath.Join(root, pendingDir, e.Name())
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("reading pending run %s: %w", path, err)
		}
		var p Pending
		if err := json.Unmarshal(b, &p); err != nil {
			return nil, fmt.Errorf("reading pending run %s: %w", path, err)
		}
		out = append(out, p)
	}
	// Run ids are UUIDv7: by name is by start.
	slices.SortFunc(out, func(a, b Pending) int { return strings.Compare(a.Record.RunID, b.Record.RunID) })
	return out, nil
}
