package harness

import (
	"bufio"
	"bytes"
	"cmp"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"math"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
)

// PublishedEnv is the harness's host: the one environment it publishes
// results of, and the one spatec plans on under the harness's settings.
const PublishedEnv = "c8g-8xl-ec2-docker"

// PublishedArms are the arms spatec plans on PublishedEnv; published.tsv
// must carry figures of each.
func PublishedArms() []string {
	return []string{"clickhouse-kafka-engine", "flink", "kafka-connect", "spate", "vector"}
}

// SpatecVariant is the variant of spatec's that runs what the harness's
// variant of an arm runs, so that a published figure is set beside the plan
// that is expected to reproduce it. Each harness default is spatec's
// default; spate's and Vector's second variants keep the harness's name
// (spate's default is itself named native, as the harness's is). A variant
// not listed has no counterpart in spatec's plans.
func SpatecVariant(arm, variant string) (string, bool) {
	v, ok := map[[2]string]string{
		{"clickhouse-kafka-engine", "distributed"}: "default", // the Kafka engine forwarding through a Distributed table
		{"flink", "rowbinary-nt"}:                  "default", // RowBinary with names and types
		{"kafka-connect", "rowbinary-mv"}:          "default", // RowBinary into a materialised view
		{"spate", "native"}:                        "native",
		{"spate", "rowbinary"}:                     "rowbinary",
		{"vector", "arrow"}:                        "default", // ArrowStream
		{"vector", "json-each-row"}:                "json-each-row",
	}[[2]string{arm, variant}]
	return v, ok
}

// Figures summarise the measurements the harness published of one arm at
// one variant: the records of kind measurement and status ok, and of each
// metric the median (the mean of the middle two over an even count), and of
// rows/s the range too. A zero data-plane figure is one the records do not
// give.
type Figures struct {
	Arm, Variant string
	// Version is the arm's version as the records give it; several are
	// joined with commas.
	Version string
	// N counts the records summarised; NotCounted the variant's other
	// records (another kind or status). A variant with none of kind
	// measurement and status ok has no figures.
	N, NotCounted int
	// RowsPerS is in records/s, over the harness's window.
	RowsPerS, RowsPerSMin, RowsPerSMax float64
	// Cores and DataPlaneCores are cores used, arm total and data plane.
	Cores, DataPlaneCores float64
	// Peak and DataPlanePeak are anon memory peaks, in bytes.
	Peak, DataPlanePeak float64
	// Dataset is the records' dataset version and Batches the messages
	// each run drained.
	Dataset string
	Batches int64
	// Months are the record files read (YYYY-MM) and Commits the
	// harness's commits the runs were made at, in order of first run;
	// First and Last bound the runs' times.
	Months, Commits []string
	First, Last     time.Time
}

// Published is the figures the harness published of its host, read from
// its checkout at one commit.
type Published struct {
	Commit, Env string
	Figures     []Figures
}

// Lookup is the figures of an arm at a variant of the harness's.
func (p Published) Lookup(arm, variant string) (Figures, bool) {
	i := slices.IndexFunc(p.Figures, func(f Figures) bool { return f.Arm == arm && f.Variant == variant })
	if i < 0 {
		return Figures{}, false
	}
	return p.Figures[i], true
}

// publishedRecord is what the summary reads of one of the harness's
// records.
type publishedRecord struct {
	Kind   string `json:"kind"`
	Status string `json:"status"`
	SUT    struct {
		Entrant   string `json:"entrant"`
		VariantID string `json:"variant_id"`
		Version   string `json:"version"`
	} `json:"sut"`
	Run struct {
		Commit  string `json:"commit"`
		TsMs    int64  `json:"ts_ms"`
		EnvID   string `json:"env_id"`
		Dataset string `json:"dataset_version"`
	} `json:"run"`
	Variant struct {
		Batches int64 `json:"batches"`
	} `json:"variant"`
	Metrics map[string]struct {
		Value *float64 `json:"value"`
		Unit  string   `json:"unit"`
	} `json:"metrics"`
}

// The metrics summarised, with the unit the columns of published.tsv are
// in; a record in another unit is an error, not a figure.
var publishedUnits = []struct{ name, unit string }{
	{"rows_per_s", "records/s"},
	{"cores_used", "cores"},
	{"data_plane_cores_used", "cores"},
	{"peak_anon_bytes", "bytes"},
	{"data_plane_peak_anon_bytes", "bytes"},
}

// ReadResults summarises the results the harness published of env in its
// checkout (results/<env>/<arm>/<YYYY-MM>.jsonl), per arm and variant.
func ReadResults(fsys fs.FS, env string) ([]Figures, error) {
	dir := path.Join("results", env)
	arms, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("listing the harness's results of %s: %w", env, err)
	}
	var out []Figures
	for _, arm := range arms {
		if !arm.IsDir() {
			continue
		}
		files, err := fs.Glob(fsys, path.Join(dir, arm.Name(), "*.jsonl"))
		if err != nil {
			return nil, fmt.Errorf("listing the harness's results of %s: %w", arm.Name(), err)
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("%s/%s: no record file", dir, arm.Name())
		}
		figs, err := readArm(fsys, arm.Name(), env, files)
		if err != nil {
			return nil, err
		}
		out = append(out, figs...)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no measurement of status ok", dir)
	}
	return out, nil
}

// variantRuns gathers one variant's records while an arm's files are read.
type variantRuns struct {
	fig     Figures
	values  map[string][]float64
	months  map[string]bool
	commits map[string]time.Time // each commit's first run
	version []string
}

func readArm(fsys fs.FS, arm, env string, files []string) ([]Figures, error) {
	byVariant := map[string]*variantRuns{}
	notCounted := map[string]int{}
	for _, file := range files {
		month := strings.TrimSuffix(path.Base(file), ".jsonl")
		if _, err := time.Parse("2006-01", month); err != nil {
			return nil, fmt.Errorf("%s: not a month's record file (YYYY-MM.jsonl)", file)
		}
		b, err := fs.ReadFile(fsys, file)
		if err != nil {
			return nil, fmt.Errorf("reading the harness's results: %w", err)
		}
		for n, line := range bytes.Split(b, []byte("\n")) {
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			var r publishedRecord
			if err := json.Unmarshal(line, &r); err != nil {
				return nil, fmt.Errorf("%s:%d: %w", file, n+1, err)
			}
			if r.SUT.Entrant != arm || r.Run.EnvID != env {
				return nil, fmt.Errorf("%s:%d: a record of %s on %s in the results of %s on %s", file, n+1, r.SUT.Entrant, r.Run.EnvID, arm, env)
			}
			if r.Kind != "measurement" || r.Status != "ok" {
				notCounted[r.SUT.VariantID]++
				continue
			}
			v := byVariant[r.SUT.VariantID]
			if v == nil {
				v = &variantRuns{fig: Figures{Arm: arm, Variant: r.SUT.VariantID, Dataset: r.Run.Dataset, Batches: r.Variant.Batches},
					values: map[string][]float64{}, months: map[string]bool{}, commits: map[string]time.Time{}}
				byVariant[r.SUT.VariantID] = v
			}
			if err := v.add(r); err != nil {
				return nil, fmt.Errorf("%s:%d: %w", file, n+1, err)
			}
			v.months[month] = true
		}
	}
	var out []Figures
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range byVariant {
			if !yield(k) {
				return
			}
		}
	}) {
		v := byVariant[name]
		f := v.fig
		f.NotCounted = notCounted[name]
		rows := v.values["rows_per_s"]
		f.N = len(rows)
		f.RowsPerS, f.RowsPerSMin, f.RowsPerSMax = medianOf(rows), slices.Min(rows), slices.Max(rows)
		f.Cores, f.DataPlaneCores = medianOf(v.values["cores_used"]), medianOf(v.values["data_plane_cores_used"])
		f.Peak, f.DataPlanePeak = medianOf(v.values["peak_anon_bytes"]), medianOf(v.values["data_plane_peak_anon_bytes"])
		f.Version = strings.Join(v.version, ",")
		f.Months = slices.Sorted(func(yield func(string) bool) {
			for m := range v.months {
				if !yield(m) {
					return
				}
			}
		})
		for c := range v.commits {
			f.Commits = append(f.Commits, c)
		}
		slices.SortFunc(f.Commits, func(a, b string) int { return cmp.Or(v.commits[a].Compare(v.commits[b]), cmp.Compare(a, b)) })
		out = append(out, f)
	}
	return out, nil
}

// add takes one measurement into its variant's figures.
func (v *variantRuns) add(r publishedRecord) error {
	for _, m := range publishedUnits {
		got, ok := r.Metrics[m.name]
		if !ok || got.Value == nil {
			if strings.HasPrefix(m.name, "data_plane_") {
				continue // an arm without a separate data plane
			}
			return fmt.Errorf("no %s in a measurement of %s:%s", m.name, r.SUT.Entrant, r.SUT.VariantID)
		}
		if got.Unit != m.unit {
			return fmt.Errorf("%s in %s, not %s", m.name, got.Unit, m.unit)
		}
		v.values[m.name] = append(v.values[m.name], *got.Value)
	}
	if r.Run.Dataset != v.fig.Dataset || r.Variant.Batches != v.fig.Batches {
		return fmt.Errorf("%s:%s measured on dataset %s of %d batches and on %s of %d: summarised apart, they would be one figure of two corpora",
			r.SUT.Entrant, r.SUT.VariantID, v.fig.Dataset, v.fig.Batches, r.Run.Dataset, r.Variant.Batches)
	}
	if !slices.Contains(v.version, r.SUT.Version) {
		v.version = append(v.version, r.SUT.Version)
	}
	t := time.UnixMilli(r.Run.TsMs).UTC()
	if first, ok := v.commits[r.Run.Commit]; !ok || t.Before(first) {
		v.commits[r.Run.Commit] = t
	}
	if v.fig.First.IsZero() || t.Before(v.fig.First) {
		v.fig.First = t
	}
	if t.After(v.fig.Last) {
		v.fig.Last = t
	}
	return nil
}

// medianOf is the median of vs, the mean of the middle two over an even
// count (as spatec's report takes it); 0 for none.
func medianOf(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	if len(s)%2 == 0 {
		return (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return s[len(s)/2]
}

// publishedHeader starts published.tsv; the commit follows it, then the
// environment on the next line.
const (
	publishedHeader = "# The public harness's published results, summarised by `go run ./cmd/spatec-harness-facts -published FILE` at commit "
	publishedEnv    = "# environment "
)

// publishedColumns are published.tsv's columns, in order.
var publishedColumns = []string{
	"arm", "variant", "version", "n", "not_counted",
	"rows_per_s_median", "rows_per_s_min", "rows_per_s_max",
	"cores_used_median", "data_plane_cores_used_median",
	"peak_anon_bytes_median", "data_plane_peak_anon_bytes_median",
	"dataset_version", "batches", "months", "commits", "first_run", "last_run",
}

// Write writes the figures as published.tsv: a header naming the commit
// and the environment, the columns, then a line an arm and variant, sorted.
func (p Published) Write(w io.Writer) error {
	figs := slices.Clone(p.Figures)
	slices.SortFunc(figs, func(a, b Figures) int { return cmp.Or(cmp.Compare(a.Arm, b.Arm), cmp.Compare(a.Variant, b.Variant)) })
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "%s%s\n%s%s\n", publishedHeader, p.Commit, publishedEnv, p.Env)
	fmt.Fprintf(bw, "# %s\n", strings.Join(publishedColumns, "\t"))
	for _, f := range figs {
		cells := []string{f.Arm, f.Variant, f.Version, strconv.Itoa(f.N), strconv.Itoa(f.NotCounted),
			num(f.RowsPerS), num(f.RowsPerSMin), num(f.RowsPerSMax),
			num(f.Cores), optNum(f.DataPlaneCores), num(f.Peak), optNum(f.DataPlanePeak),
			f.Dataset, strconv.FormatInt(f.Batches, 10), strings.Join(f.Months, ","), strings.Join(f.Commits, ","),
			f.First.Format(time.RFC3339), f.Last.Format(time.RFC3339)}
		for i := range cells {
			cells[i] = escaper.Replace(cells[i])
		}
		fmt.Fprintln(bw, strings.Join(cells, "\t"))
	}
	return bw.Flush()
}

// num writes a figure exactly: the file is compared byte for byte with a
// fresh summary.
func num(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// optNum writes a figure the records may not give as an empty cell.
func optNum(v float64) string {
	if v == 0 {
		return ""
	}
	return num(v)
}

// ReadPublished reads a published.tsv that Write wrote; name says where
// it was read from, for errors.
func ReadPublished(r io.Reader, name string) (Published, error) {
	var p Published
	sc := bufio.NewScanner(r)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		if c, ok := strings.CutPrefix(line, publishedHeader); ok {
			p.Commit = c
			continue
		}
		if e, ok := strings.CutPrefix(line, publishedEnv); ok {
			p.Env = e
			continue
		}
		if strings.HasPrefix(line, "#") || line == "" {
			continue
		}
		f, err := parseFigures(strings.Split(line, "\t"))
		if err != nil {
			return Published{}, fmt.Errorf("%s:%d: %w", name, n, err)
		}
		p.Figures = append(p.Figures, f)
	}
	if err := sc.Err(); err != nil {
		return Published{}, fmt.Errorf("reading %s: %w", name, err)
	}
	if p.Commit == "" || p.Env == "" {
		return Published{}, fmt.Errorf("%s: no header naming the harness's commit and environment", name)
	}
	return p, nil
}

func parseFigures(cells []string) (Figures, error) {
	if len(cells) != len(publishedColumns) {
		return Figures{}, fmt.Errorf("%d cells; a line has %d (%s)", len(cells), len(publishedColumns), strings.Join(publishedColumns, ", "))
	}
	for i := range cells {
		cells[i] = unescape(cells[i])
	}
	var errs []string
	float := func(i int, optional bool) float64 {
		if cells[i] == "" && optional {
			return 0
		}
		v, err := strconv.ParseFloat(cells[i], 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
			errs = append(errs, fmt.Sprintf("%s %q is not a positive number", publishedColumns[i], cells[i]))
		}
		return v
	}
	integer := func(i int) int64 {
		v, err := strconv.ParseInt(cells[i], 10, 64)
		if err != nil || v < 0 {
			errs = append(errs, fmt.Sprintf("%s %q is not a count", publishedColumns[i], cells[i]))
		}
		return v
	}
	stamp := func(i int) time.Time {
		t, err := time.Parse(time.RFC3339, cells[i])
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s %q is not a time", publishedColumns[i], cells[i]))
		}
		return t
	}
	list := func(s string) []string {
		if s == "" {
			return nil
		}
		return strings.Split(s, ",")
	}
	f := Figures{Arm: cells[0], Variant: cells[1], Version: cells[2], N: int(integer(3)), NotCounted: int(integer(4)),
		RowsPerS: float(5, false), RowsPerSMin: float(6, false), RowsPerSMax: float(7, false),
		Cores: float(8, false), DataPlaneCores: float(9, true), Peak: float(10, false), DataPlanePeak: float(11, true),
		Dataset: cells[12], Batches: integer(13), Months: list(cells[14]), Commits: list(cells[15]),
		First: stamp(16), Last: stamp(17)}
	for i, c := range []string{f.Arm, f.Variant, f.Version, f.Dataset} {
		if c == "" {
			errs = append(errs, publishedColumns[[]int{0, 1, 2, 12}[i]]+" is empty")
		}
	}
	if f.N == 0 || len(f.Months) == 0 || len(f.Commits) == 0 {
		errs = append(errs, "no record summarised (n, months and commits are each needed)")
	}
	if !(f.RowsPerSMin <= f.RowsPerS && f.RowsPerS <= f.RowsPerSMax) {
		errs = append(errs, "the median rows/s is not within its range")
	}
	if len(errs) > 0 {
		return Figures{}, fmt.Errorf("%s:%s: %s", f.Arm, f.Variant, strings.Join(errs, "; "))
	}
	return f, nil
}

//go:embed published.tsv
var publishedTSV []byte

// PublishedFigures is published.tsv as committed with this build: the
// harness's figures spatec's report sets beside its plans.
func PublishedFigures() (Published, error) {
	return ReadPublished(bytes.NewReader(publishedTSV), "harness/published.tsv")
}
