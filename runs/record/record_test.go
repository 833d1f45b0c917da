package record

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// sample returns a complete, valid record of env "local", entrant "reference".
func sample(t testing.TB) *Record {
	t.Helper()
	id, err := NewRunID()
	if err != nil {
		t.Fatal(err)
	}
	started := time.Date(2026, 3, 14, 9, 26, 53, 0, time.UTC)
	return &Record{
		Schema: SchemaV1,
		Status: StatusOK,
		RunID:  id,
		Rep:    1,
		Reps:   3,
		SUT: SUT{
			Entrant: "reference", Variant: "", Version: "1.0.0", VersionPinned: "1.0.0",
			Containers: []Container{{
				Name: "reference", Role: "data-plane", Image: "spatec/reference:1.0.0",
				ImageDigest: "sha256:" + strings.Repeat("ab", 32), CPUs: "1.00", MemoryBytes: 2 << 30,
			}},
		},
		Run: Run{
			Env: "local", EnvDigest: "sha256:e1", PlanDigest: "sha256:p1", InfraDigest: "sha256:i1",
			SpatecVersion: "0.1.0", SpatecCommit: "71393b9", HarnessVersion: HarnessVersion,
			StartedAt: started, EndedAt: started.Add(42 * time.Second),
			Host:    Host{Cores: 2, MemoryBytes: 24 << 30, Kernel: "6.18.0", CgroupVersion: "v1", EngineVersion: "20.10.24"},
			Cgroups: map[string]map[string]string{"reference": {"cpu.cfs_quota_us": "100000\n", "cpu.cfs_period_us": "100000\n"}},
			Dataset: Dataset{Version: "corpus-v1", Messages: 10000, ExpectedRows: 100000},
			Window:  Window{SamplerPeriodS: 0.1, DurationS: 40},
		},
		Variant: map[string]any{"batch_rows": 10000.0},
		Metrics: map[string]Metric{
			RowsPerS:  {Value: 2500, Unit: "rows/s", HigherIsBetter: true},
			CoresUsed: {Value: 0.98, Unit: "cores"},
		},
		Flags: []string{},
	}
}

func line(t testing.TB, rec *Record) string {
	t.Helper()
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	return string(b) + "\n"
}

// mutated returns rec as a JSON line after edit has changed its generic form,
// for fixtures that Append would refuse to write.
func mutated(t testing.TB, rec *Record, edit func(m map[string]any)) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(line(t, rec)), &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b) + "\n"
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestPathFor(t *testing.T) {
	// 23:30 on the last day of January at UTC-5 is already February in UTC.
	at := time.Date(2026, 1, 31, 23, 30, 0, 0, time.FixedZone("EST", -5*3600))
	got := PathFor("results", "local", "reference", at)
	if want := filepath.Join("results", "local", "reference", "2026-02.jsonl"); got != want {
		t.Fatalf("PathFor = %s, want %s", got, want)
	}
	env, entrant, ok := Layout(got)
	if !ok || env != "local" || entrant != "reference" {
		t.Fatalf("Layout(%s) = %q, %q, %v", got, env, entrant, ok)
	}
}

func TestNewRunIDIsVersion7(t *testing.T) {
	rec := sample(t)
	if msgs := rec.Check(); len(msgs) != 0 {
		t.Fatalf("a fresh sample record has problems: %v", msgs)
	}
	other := sample(t)
	if rec.RunID == other.RunID {
		t.Fatalf("two run ids are equal: %s", rec.RunID)
	}
}

// TestJVMFieldsAreWhatHotSpotRuns: a JVM container's object alignment and
// compressed-oops mode travel in the record as written, and a value no
// HotSpot runs with is a defect of the record.
func TestJVMFieldsAreWhatHotSpotRuns(t *testing.T) {
	rec := sample(t)
	c := &rec.SUT.Containers[0]
	c.JVMObjectAlignmentBytes, c.JVMCompressedOopsMode = 8, "32-bit"
	if !strings.Contains(line(t, rec), `"jvm_object_alignment_bytes":8,"jvm_compressed_oops_mode":"32-bit"`) {
		t.Errorf("the record's line: %s", line(t, rec))
	}
	if msgs := rec.Check(); len(msgs) != 0 {
		t.Errorf("a JVM as HotSpot runs it: %v", msgs)
	}
	c.JVMObjectAlignmentBytes, c.JVMCompressedOopsMode = 12, "zero-based"
	got := strings.Join(rec.Check(), "; ")
	want := `container reference: jvm_object_alignment_bytes 12 is not an object alignment HotSpot runs with (a power of two from 8 to 256); container reference: jvm_compressed_oops_mode "zero-based" is not one HotSpot names (32-bit, Zero based, Non-zero disjoint base, Non-zero based, Disabled)`
	if got != want {
		t.Errorf("Check = %s\nwant %s", got, want)
	}
	// A container that runs no JVM carries neither.
	c.JVMObjectAlignmentBytes, c.JVMCompressedOopsMode = 0, ""
	if strings.Contains(line(t, rec), "jvm_") {
		t.Errorf("a container without a JVM: %s", line(t, rec))
	}
}

func TestStatusSeverityOrder(t *testing.T) {
	// Worst wins: failed > refused > infra_bound > ok.
	order := []Status{StatusOK, StatusInfraBound, StatusRefused, StatusFailed, Status("exploded")}
	for i := 1; i < len(order); i++ {
		if order[i].Severity() <= order[i-1].Severity() {
			t.Errorf("%s (%d) should be worse than %s (%d)", order[i], order[i].Severity(), order[i-1], order[i-1].Severity())
		}
	}
	if StatusFailed.CarriesMeasurement() || StatusRefused.CarriesMeasurement() || !StatusInfraBound.CarriesMeasurement() {
		t.Error("only ok and infra_bound records carry measurements")
	}
}

func TestWindowResolution(t *testing.T) {
	if got := (Window{SamplerPeriodS: 0.1, DurationS: 20}).Resolution(); got != 0.005 {
		t.Errorf("0.1 s over 20 s: resolution %v, want 0.005", got)
	}
	if got := (Window{SamplerPeriodS: 0.1}).Resolution(); got != 0 {
		t.Errorf("no window: resolution %v, want 0 (unknown)", got)
	}
}

func TestScanFileReportsEveryUnusableLineAndContinues(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "local", "reference", "2026-03.jsonl")
	good1, good2 := sample(t), sample(t)
	other := sample(t)
	other.Run.Env = "bench96"
	writeFile(t, path, line(t, good1)+
		"{not json\n"+
		"\n"+
		line(t, other)+
		line(t, good2)+
		`{"schema":"spatec.record/v1","status":"ok","run_id":"x","sut":{"entr`)

	var got []int
	problems := ScanFile(path, ScanOptions{Env: "local"}, func(n int, rec *Record) { got = append(got, n) })
	if !slices.Equal(got, []int{1, 5}) {
		t.Errorf("records passed on at lines %v, want [1 5]", got)
	}
	want := []string{
		path + ":2: not a valid record",
		path + ":4: run " + other.RunID + ` belongs to environment "bench96", not "local"`,
		path + ":6: truncated record: the last line has no newline",
	}
	assertProblems(t, problems, want)
}

// assertProblems checks that problems, rendered, start with want in order.
func assertProblems(t *testing.T, problems []Problem, want []string) {
	t.Helper()
	if len(problems) != len(want) {
		t.Errorf("got %d problems, want %d:\n%s", len(problems), len(want), render(problems))
		return
	}
	for i, p := range problems {
		if !strings.HasPrefix(p.String(), want[i]) {
			t.Errorf("problem %d:\n got: %s\nwant prefix: %s", i, p, want[i])
		}
	}
}

func render(ps []Problem) string {
	var b strings.Builder
	for _, p := range ps {
		b.WriteString("  " + p.String() + "\n")
	}
	return b.String()
}

// The fast decoder and encoding/json must read a record identically.
func TestFastDecodeMatchesEncodingJSON(t *testing.T) {
	rec := sample(t)
	rec.Variant = map[string]any{"batch_rows": 10000.0, "compression": "lz4", "idempotent": true, "tags": []any{"a", "b"}}
	rec.Run.Infra = []Container{{Name: "broker", Role: "broker", Image: "kfake", ImageDigest: "sha256:00", CPUs: "0.50", MemoryBytes: 1 << 30}}
	rec.Run.Ceilings = map[string]Metric{"broker_msgs_per_s": {Value: 1e6, Unit: "msg/s", HigherIsBetter: true}}
	rec.Flags = []string{FlagPeakLifetime}
	rec.SUT.Containers[0].JVMObjectAlignmentBytes, rec.SUT.Containers[0].JVMCompressedOopsMode = 16, "Zero based"
	rec.Note = "tail: \"quoted\" \u00e9\n\tsecond line"
	withHarnessWindow(t, rec)
	raw := []byte(line(t, rec))

	var fast, std Record
	if err := fastDecode(raw, &fast); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &std); err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(fast)
	b, _ := json.Marshal(std)
	if string(a) != string(b) || !fast.Run.StartedAt.Equal(std.Run.StartedAt) || !fast.Run.Window.Harness.OpenedAt.Equal(std.Run.Window.Harness.OpenedAt) {
		t.Fatalf("the decoders disagree:\nfast: %s\nstd:  %s", a, b)
	}
	if string(a)+"\n" != string(raw) {
		t.Fatalf("decoding and re-encoding changed the record:\n in: %s\nout: %s", raw, a)
	}
}

// Lines are decoded in parallel batches; fn must still see them in file
// order with their own line numbers, and problems must carry the right ones.
func TestScanFileKeepsOrderAcrossBatches(t *testing.T) {
	path := filepath.Join(t.TempDir(), "local", "reference", "2026-03.jsonl")
	var b strings.Builder
	var wantRecs, wantBad []int
	for n := 1; n <= 3*batchLines+17; n++ {
		if n%97 == 0 {
			b.WriteString("corrupt line\n")
			wantBad = append(wantBad, n)
			continue
		}
		rec := sample(t)
		rec.Note = strconv.Itoa(n)
		b.WriteString(line(t, rec))
		wantRecs = append(wantRecs, n)
	}
	writeFile(t, path, b.String())

	var got []int
	problems := ScanFile(path, ScanOptions{Env: "local"}, func(n int, rec *Record) {
		if rec.Note != strconv.Itoa(n) {
			t.Fatalf("line %d carries the record of line %s", n, rec.Note)
		}
		got = append(got, n)
	})
	if !slices.Equal(got, wantRecs) {
		t.Errorf("records at lines %v…, want %v…", got[:min(10, len(got))], wantRecs[:10])
	}
	var bad []int
	for _, p := range problems {
		bad = append(bad, p.Line)
	}
	if !slices.Equal(bad, wantBad) {
		t.Errorf("problems at lines %v, want %v", bad, wantBad)
	}
}

// TestFootprintPointSaysWhereItStood: a footprint point's cap is checked,
// since a report keeps such runs apart from the comparison by it.
func TestFootprintPointSaysWhereItStood(t *testing.T) {
	rec := sample(t)
	rec.SUT.Study = "memory"
	rec.SUT.Footprint = &Footprint{Axis: "memory", Cap: 1 << 29, Full: 1 << 30, Fraction: 0.9}
	if msgs := rec.Check(); len(msgs) != 0 {
		t.Errorf("a footprint point: %v", msgs)
	}
	rec.SUT.Footprint.Cap = 2 << 30
	if got := strings.Join(rec.Check(), "; "); got != "sut.footprint.cap 2147483648.00 is not between 0 and the envelope's 1073741824.00" {
		t.Errorf("Check = %s", got)
	}
}

func TestAScenarioSaysWhatItTimed(t *testing.T) {
	rec := sample(t)
	first := int64(1700)
	rec.Scenario = &Scenario{Name: "data-plane-delete", Component: "data-plane", Action: "delete", At: 0.33, RecoveryS: 60,
		Injected: true, FaultMS: 2000, FaultEndMS: 4000, Verdict: VerdictRecovered, Held: true, FirstRowMS: &first}
	if msgs := rec.Check(); len(msgs) != 0 {
		t.Errorf("a scenario's run: %v", msgs)
	}
	rec.Scenario.Outran = true
	if got := strings.Join(rec.Check(), "; "); got != "scenario.outran says no recovery was timed, yet first_row_after_fault_ms or rate_back_after_fault_ms is set" {
		t.Errorf("Check = %s", got)
	}
}
