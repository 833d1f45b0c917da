package record

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"spatec.dev/spatec/internal/testenv"
)

func TestAppendRoundTrip(t *testing.T) {
	root := t.TempDir()
	rec := sample(t)
	path := PathFor(root, rec.Run.Env, rec.SUT.Entrant, rec.Run.StartedAt)
	if err := Append(path, rec); err != nil {
		t.Fatal(err)
	}
	var back []*Record
	if ps := ScanFile(path, ScanOptions{Strict: true}, func(_ int, r *Record) { back = append(back, r) }); len(ps) != 0 {
		t.Fatalf("reading back: %s", render(ps))
	}
	if len(back) != 1 || back[0].RunID != rec.RunID || back[0].Metrics[RowsPerS] != rec.Metrics[RowsPerS] ||
		back[0].Run.Cgroups["reference"]["cpu.cfs_quota_us"] != "100000\n" {
		t.Fatalf("read back %+v, want the record written", back)
	}
	if ps := Validate(root); len(ps) != 0 {
		t.Fatalf("a tree written by Append is not clean:\n%s", render(ps))
	}
}

func TestCheckRoot(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "new", "results")
	if err := CheckRoot(missing); err != nil {
		t.Fatalf("a missing root: %v; want it created", err)
	}
	if st, err := os.Stat(missing); err != nil || !st.IsDir() {
		t.Fatalf("the missing root was not created: %v", err)
	}
	file := filepath.Join(dir, "results.txt")
	writeFile(t, file, "not a directory\n")
	if err := CheckRoot(file); err == nil || !strings.Contains(err.Error(), "is a file, not a directory; give --results a directory") {
		t.Errorf("a regular file: %v", err)
	}
	full := testenv.SmallTmpfs(t, 256<<10)
	if err := CheckRoot(full); err == nil || !strings.Contains(err.Error(), "a run needs at least 1048576 to record its results") {
		t.Errorf("a root with 256 KiB: %v", err)
	}
	if left, _ := os.ReadDir(full); len(left) != 0 {
		t.Errorf("the check left %v behind", left)
	}
}

// TestAppendOnAFullDiskLeavesNoPartialLine fills a real (tmpfs) file system
// between two records: the second fails, the file is cut back to its first
// record, and the log still validates.
func TestAppendOnAFullDiskLeavesNoPartialLine(t *testing.T) {
	root := testenv.SmallTmpfs(t, 64<<10)
	first := sample(t)
	path := PathFor(root, first.Run.Env, first.SUT.Entrant, first.Run.StartedAt)
	if err := Append(path, first); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	testenv.Fill(t, root)
	second := sample(t)
	second.Note = strings.Repeat("a long note that takes more room than the page the log has left. ", 200)
	err = Append(path, second)
	if err == nil || !strings.Contains(err.Error(), "no space left on device") {
		t.Fatalf("Append on a full disk: %v; want the write's error", err)
	}
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(after) != string(before) {
		t.Fatalf("after a failed append the log holds %d bytes, %d before; want it as it was", len(after), len(before))
	}
	if ps := Validate(root); len(ps) != 0 {
		t.Errorf("the log does not validate after a failed append:\n%s", render(ps))
	}
}

func TestAppendNeverTruncates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "local", "reference", "2026-03.jsonl")
	before := line(t, sample(t)) + line(t, sample(t))
	writeFile(t, path, before)

	rec := sample(t)
	if err := Append(path, rec); err != nil {
		t.Fatal(err)
	}
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(after), before) {
		t.Fatalf("the existing content was changed:\nbefore: %q\nafter:  %q", before, after)
	}
	if got, want := string(after[len(before):]), line(t, rec); got != want {
		t.Fatalf("appended %q, want %q", got, want)
	}
}

func TestAppendAfterInterruptedWriteStartsAFreshLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "local", "reference", "2026-03.jsonl")
	first := sample(t)
	partial := line(t, sample(t))[:100] // a write cut short: no newline
	writeFile(t, path, line(t, first)+partial)

	rec := sample(t)
	if err := Append(path, rec); err != nil {
		t.Fatal(err)
	}
	var ids []string
	ps := ScanFile(path, ScanOptions{}, func(_ int, r *Record) { ids = append(ids, r.RunID) })
	if len(ids) != 2 || ids[0] != first.RunID || ids[1] != rec.RunID {
		t.Fatalf("records read %v, want %s then %s", ids, first.RunID, rec.RunID)
	}
	assertProblems(t, ps, []string{path + ":2: truncated record: the line ends in the middle of a JSON value"})
}

func TestAppendRefusesARecordItCouldNotFile(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(r *Record)
		want string
	}{
		{"no schema", func(r *Record) { r.Schema = "" }, `schema is ""; set it to record.SchemaV1`},
		{"unknown status", func(r *Record) { r.Status = "great" }, `status "great" is not one of ok, infra_bound, refused, failed`},
		{"no run id", func(r *Record) { r.RunID = "" }, "run_id is empty"},
		{"env escapes the tree", func(r *Record) { r.Run.Env = "../etc" }, `run.env "../etc" is not a plain name`},
		{"no entrant", func(r *Record) { r.SUT.Entrant = "" }, "sut.entrant is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := sample(t)
			tc.edit(rec)
			path := filepath.Join(t.TempDir(), "x.jsonl")
			err := Append(path, rec)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Append error = %v, want it to contain %q", err, tc.want)
			}
			if _, statErr := os.Stat(path); !os.IsNotExist(statErr) {
				t.Fatalf("a refused record created %s", path)
			}
		})
	}
}

// bigRecord carries a note far larger than PIPE_BUF (4 KiB), the size up to
// which the kernel would keep unlocked appends whole anyway, so the tests
// exercise the lock rather than the kernel's atomicity.
func bigRecord(t testing.TB, writer string, i int) *Record {
	rec := sample(t)
	rec.Note = fmt.Sprintf("%s-%d:%s", writer, i, strings.Repeat("x", 96<<10))
	return rec
}

func TestAppendConcurrentGoroutines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "local", "reference", "2026-03.jsonl")
	const writers, each = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				if err := Append(path, bigRecord(t, "g"+strconv.Itoa(w), i)); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	checkWholeLines(t, path, writers*each)
}

// childEnv makes the test binary, re-executed, act as one appending process.
const childEnv = "SPATEC_RECORD_TEST_APPEND_CHILD"

func TestAppendConcurrentProcesses(t *testing.T) {
	if spec := os.Getenv(childEnv); spec != "" {
		appendAsChild(t, spec)
		return
	}
	path := filepath.Join(t.TempDir(), "local", "reference", "2026-03.jsonl")
	const procs, each = 4, 25
	var cmds []*exec.Cmd
	for p := range procs {
		cmd := exec.Command(os.Args[0], "-test.run=^TestAppendConcurrentProcesses$", "-test.count=1")
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s|p%d|%d", childEnv, path, p, each))
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("child output:\n%s", out.String())
			}
		})
		cmds = append(cmds, cmd)
	}
	// The parent appends at the same time, from goroutines of its own.
	var wg sync.WaitGroup
	for g := range 2 {
		wg.Go(func() {
			for i := range each {
				if err := Append(path, bigRecord(t, "parent"+strconv.Itoa(g), i)); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	for _, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("child %v: %v", cmd.Env[len(cmd.Env)-1], err)
		}
	}
	checkWholeLines(t, path, (procs+2)*each)
}

func appendAsChild(t *testing.T, spec string) {
	parts := strings.Split(spec, "|")
	if len(parts) != 3 {
		t.Fatalf("bad %s: %q", childEnv, spec)
	}
	n, err := strconv.Atoi(parts[2])
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := Append(parts[0], bigRecord(t, parts[1], i)); err != nil {
			t.Fatal(err)
		}
	}
}

// checkWholeLines asserts the file holds exactly want complete records, each
// writer's records all present, none interleaved or lost.
func checkWholeLines(t *testing.T, path string, want int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	ids := map[string]bool{}
	notes := map[string]bool{}
	n := 0
	for sc.Scan() {
		n++
		var rec Record
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("line %d is not a whole record (%d bytes): %v", n, len(sc.Bytes()), err)
		}
		if ids[rec.RunID] {
			t.Fatalf("line %d repeats run %s", n, rec.RunID)
		}
		ids[rec.RunID] = true
		notes[rec.Note[:strings.IndexByte(rec.Note, ':')]] = true
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if n != want || len(notes) != want {
		t.Fatalf("%d lines with %d distinct writer/sequence marks, want %d of each", n, len(notes), want)
	}
}
