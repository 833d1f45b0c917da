package record

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// SeriesV1 is the schema of a series file.
const SeriesV1 = "spatec.series/v1"

// Series is a run's window over time: every sampler reading of every
// container, and the rows landed at every poll of the drain. It is kept
// beside the log, one gzip'd JSON file a run, because it is a thousand
// times the size of the record: a report reads it only for the charts it
// draws.
type Series struct {
	Schema string `json:"schema"`
	RunID  string `json:"run_id"`
	// PeriodS is the sampler's period.
	PeriodS float64 `json:"period_s"`
	// OffsetsMS are the sampler's readings, in milliseconds from its
	// first.
	OffsetsMS  []int64           `json:"t_ms"`
	Containers []SeriesContainer `json:"containers"`
	// Rows are the drain's polls, in milliseconds from the opening of
	// spatec's window (the record's run.window.opened_at): within a few
	// milliseconds of the sampler's first reading on Docker, at it on
	// Kubernetes. The reference harness's window is derived from them
	// (HarnessSpan).
	Rows SeriesRows `json:"rows"`
}

// SeriesContainer is one container's readings, aligned with OffsetsMS; a
// reading that failed is -1.
type SeriesContainer struct {
	Name string `json:"name"`
	// Role is data-plane, control-plane or infra.
	Role string `json:"role"`
	// CPUUsageNs is the cumulative CPU time at each reading.
	CPUUsageNs []int64 `json:"cpu_ns"`
	// AnonShmemBytes is anon + shmem at each reading (C7).
	AnonShmemBytes []int64 `json:"anon_shmem_bytes"`
}

// SeriesRows is the rows landed over the window: the table's count() at
// each poll, duplicates included.
type SeriesRows struct {
	OffsetsMS []int64 `json:"t_ms"`
	Landed    []int64 `json:"landed"`
}

// SeriesRef is how a record names its series file: by path, relative to
// the log's directory, and by content.
type SeriesRef struct {
	File   string `json:"file"`
	SHA256 string `json:"sha256"`
	// Readings counts the sampler's readings in it.
	Readings int `json:"readings"`
}

// Check returns every inconsistency of a series, one message each.
func (s *Series) Check() []string {
	var out []string
	if s.Schema != SeriesV1 {
		out = append(out, fmt.Sprintf("schema is %q; this spatec reads %q", s.Schema, SeriesV1))
	}
	if s.PeriodS <= 0 {
		out = append(out, fmt.Sprintf("period_s is %v; it must be positive", s.PeriodS))
	}
	if !increasing(s.OffsetsMS) {
		out = append(out, "t_ms does not increase")
	}
	for _, c := range s.Containers {
		if len(c.CPUUsageNs) != len(s.OffsetsMS) || len(c.AnonShmemBytes) != len(s.OffsetsMS) {
			out = append(out, fmt.Sprintf("container %s has %d CPU and %d memory readings for %d times", c.Name, len(c.CPUUsageNs), len(c.AnonShmemBytes), len(s.OffsetsMS)))
		}
	}
	if len(s.Rows.OffsetsMS) != len(s.Rows.Landed) {
		out = append(out, fmt.Sprintf("rows has %d counts for %d times", len(s.Rows.Landed), len(s.Rows.OffsetsMS)))
	}
	if !increasing(s.Rows.OffsetsMS) {
		out = append(out, "rows.t_ms does not increase")
	}
	return out
}

func increasing(v []int64) bool {
	for i := 1; i < len(v); i++ {
		if v[i] < v[i-1] {
			return false
		}
	}
	return true
}

// seriesDir is where a log's series files are, beside it.
const seriesDir = "series"

var runIDPattern = regexp.MustCompile(`^[0-9a-f-]{36}$`)

// WriteSeries writes s beside the log at logPath, as
// series/<run id>.json.gz, and returns the reference the record carries.
// The file is written whole under a temporary name, synced and renamed, so
// a reference never names a partial file.
func WriteSeries(logPath string, s *Series) (SeriesRef, error) {
	if !runIDPattern.MatchString(s.RunID) {
		return SeriesRef{}, fmt.Errorf("writing a series: run id %q is not a UUID", s.RunID)
	}
	s.Schema = SeriesV1
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if err := json.NewEncoder(zw).Encode(s); err != nil {
		return SeriesRef{}, fmt.Errorf("encoding the series of run %s: %w", s.RunID, err)
	}
	if err := zw.Close(); err != nil {
		return SeriesRef{}, fmt.Errorf("compressing the series of run %s: %w", s.RunID, err)
	}
	rel := seriesDir + "/" + s.RunID + ".json.gz"
	path := filepath.Join(filepath.Dir(logPath), filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return SeriesRef{}, fmt.Errorf("writing the series of run %s: %w", s.RunID, err)
	}
	if err := writeSynced(path, buf.Bytes()); err != nil {
		return SeriesRef{}, fmt.Errorf("writing the series of run %s: %w", s.RunID, err)
	}
	sum := sha256.Sum256(buf.Bytes())
	return SeriesRef{File: rel, SHA256: hex.EncodeToString(sum[:]), Readings: len(s.OffsetsMS)}, nil
}

func writeSynced(path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, path)
}

// ErrSeriesMissing says a record's series file is not where it says.
var ErrSeriesMissing = errors.New("series file missing")

// ReadSeries reads the series a record of the log at logPath refers to,
// checking its digest, its run and its consistency.
func ReadSeries(logPath string, runID string, ref SeriesRef) (*Series, error) {
	if ref.File == "" || strings.Contains(ref.File, "..") || filepath.IsAbs(ref.File) {
		return nil, fmt.Errorf("series.file %q must name a file under the log's directory", ref.File)
	}
	path := filepath.Join(filepath.Dir(logPath), filepath.FromSlash(ref.File))
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s (the record refers to it; was it deleted or not copied with the log?)", ErrSeriesMissing, path)
	}
	if err != nil {
		return nil, fmt.Errorf("reading series %s: %w", path, err)
	}
	sum := sha256.Sum256(data)
	if got := hex.EncodeToString(sum[:]); got != ref.SHA256 {
		return nil, fmt.Errorf("series %s has sha256 %s, but the record says %s: the file changed after the run", path, got, ref.SHA256)
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("series %s: %w", path, err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("series %s: %w", path, err)
	}
	var s Series
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("series %s: %w", path, err)
	}
	problems := s.Check()
	if s.RunID != runID {
		problems = append(problems, fmt.Sprintf("it is the series of run %s, not of run %s", s.RunID, runID))
	}
	if len(s.OffsetsMS) != ref.Readings {
		problems = append(problems, fmt.Sprintf("it holds %d readings; the record says %d", len(s.OffsetsMS), ref.Readings))
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("series %s: %s", path, strings.Join(problems, "; "))
	}
	return &s, nil
}
