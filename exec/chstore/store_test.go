package chstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"

	"spatec.dev/spatec/internal/testenv"
	"spatec.dev/spatec/workloads/json-rows"
)

// testAddr is the ClickHouse the tests use; .ci/services starts one.
func testAddr() string { return testenv.ClickHouseAddr() }

// openTestStore opens a database of the test's own, dropped afterwards.
func openTestStore(t testing.TB, opts ...Option) *Store {
	t.Helper()
	testenv.RequireClickHouse(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	db := fmt.Sprintf("spatec_test_chstore_%d_%d", os.Getpid(), time.Now().UnixNano()%1e6)
	s, err := Open(ctx, testAddr(), db, "default", "", opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := s.Exec(ctx, "DROP DATABASE IF EXISTS "+db); err != nil {
			t.Errorf("dropping the test database: %v", err)
		}
		s.Close()
	})
	return s
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

var spec = jsonrows.Spec{Dataset: "v1", Messages: 500, EventsPerMessage: 2, MessageBytes: 300}

// newTable creates the corpus table and returns its name.
func newTable(t *testing.T, s *Store) string {
	t.Helper()
	if err := s.Exec(testCtx(t), DefaultDDL("events")); err != nil {
		t.Fatal(err)
	}
	return "events"
}

func insertMessages(t testing.TB, s *Store, table string, first, n int64) {
	t.Helper()
	var r Rows
	if err := r.AppendMessages(spec, first, n); err != nil {
		t.Fatal(err)
	}
	if err := s.Insert(context.Background(), table, &r); err != nil {
		t.Fatal(err)
	}
}

func TestOpenCreatesTheDatabase(t *testing.T) {
	s := openTestStore(t)
	var n uint64
	err := s.conn.QueryRow(testCtx(t), "SELECT count() FROM system.databases WHERE name = ?", s.Database()).Scan(&n)
	if err != nil || n != 1 {
		t.Fatalf("database %s: %d found (err %v), want 1", s.Database(), n, err)
	}
}

func TestCountsSeeDistinctIDsAndDuplicates(t *testing.T) {
	s := openTestStore(t)
	table := newTable(t, s)
	ctx := testCtx(t)
	insertMessages(t, s, table, 0, spec.Messages)
	insertMessages(t, s, table, 0, 50) // 100 duplicate rows
	count, distinct, err := s.Counts(ctx, table, "id")
	if err != nil {
		t.Fatal(err)
	}
	if count != 1100 || distinct != 1000 {
		t.Fatalf("counts are %d rows, %d distinct; want 1100 rows, 1000 distinct", count, distinct)
	}
	var sample jsonrows.Event
	var ts time.Time
	err = s.conn.QueryRow(ctx, "SELECT id, ts, user_id, kind, value, payload FROM "+table+" WHERE id = 777 LIMIT 1").
		Scan(&sample.ID, &ts, &sample.UserID, &sample.Kind, &sample.Value, &sample.Payload)
	if err != nil {
		t.Fatal(err)
	}
	sample.TS = uint32(ts.Unix())
	evs, _ := spec.AppendEvents(nil, 777/2)
	if sample != evs[1] {
		t.Fatalf("row 777 reads back as %+v, want %+v", sample, evs[1])
	}
	if err := s.Truncate(ctx, table); err != nil {
		t.Fatal(err)
	}
	if count, distinct, err = s.Counts(ctx, table, "id"); err != nil || count != 0 || distinct != 0 {
		t.Fatalf("after truncate: %d rows, %d distinct (err %v), want none", count, distinct, err)
	}
}

func TestWaitDrainedEndsWhenDistinctReachesN(t *testing.T) {
	s := openTestStore(t)
	table := newTable(t, s)
	ctx := testCtx(t)
	var polls, lastAt atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		// Land the rows in steps, the last step repeating earlier
		// messages as an at-least-once arm might.
		for first := int64(0); first < spec.Messages; first += 100 {
			insertMessages(t, s, table, first, 100)
			time.Sleep(50 * time.Millisecond)
		}
		insertMessages(t, s, table, 0, 10)
	}()
	d, err := s.WaitDrained(ctx, table, uint64(spec.Rows()), DrainOptions{Timeout: 20 * time.Second, Progress: func(count, distinct uint64, at time.Duration) {
		polls.Add(1)
		lastAt.Store(int64(at))
		if distinct > count {
			t.Errorf("progress reports %d distinct of %d rows", distinct, count)
		}
	}})
	<-done
	if err != nil {
		t.Fatal(err)
	}
	if d.Distinct != uint64(spec.Rows()) || d.Count < d.Distinct || d.Duplicates != d.Count-d.Distinct {
		t.Fatalf("drain %+v: want %d distinct and duplicates = count − distinct", d, spec.Rows())
	}
	if d.FirstRow <= 0 || d.FirstRow > d.Elapsed || d.Polls < 2 || polls.Load() != int64(d.Polls) {
		t.Fatalf("drain %+v after %d progress calls: want a first row within the drain and one call per poll", d, polls.Load())
	}
	if at := time.Duration(lastAt.Load()); at != d.Elapsed {
		t.Errorf("the last poll was reported at %v; the drain ended at %v, and a series must place its end where the window closed", at, d.Elapsed)
	}
	count, distinct, _ := s.Counts(ctx, table, "id")
	if count != uint64(spec.Rows())+20 || distinct != uint64(spec.Rows()) {
		t.Fatalf("final counts %d rows, %d distinct; want %d rows, %d distinct", count, distinct, spec.Rows()+20, spec.Rows())
	}
}

func TestWaitDrainedTimeoutReportsBothCounts(t *testing.T) {
	s := openTestStore(t)
	table := newTable(t, s)
	insertMessages(t, s, table, 0, 250) // 500 rows
	insertMessages(t, s, table, 0, 25)  // 50 duplicates
	d, err := s.WaitDrained(testCtx(t), table, 1000, DrainOptions{Poll: 50 * time.Millisecond, Timeout: 300 * time.Millisecond})
	if !errors.Is(err, ErrDrainTimeout) {
		t.Fatalf("incomplete drain: got %v, want ErrDrainTimeout", err)
	}
	if d.Count != 550 || d.Distinct != 500 || d.Duplicates != 50 || d.Want != 1000 {
		t.Fatalf("incomplete drain %+v: want 550 rows, 500 distinct, 50 duplicates of 1000", d)
	}
	if !strings.Contains(err.Error(), "holds 500 of 1000 distinct ids (550 rows, 50 duplicates)") {
		t.Fatalf("error %q does not give both counts", err)
	}
}

func TestWaitDrainedInterruptedReportsBothCounts(t *testing.T) {
	s := openTestStore(t)
	table := newTable(t, s)
	insertMessages(t, s, table, 0, 100)
	ctx, cancel := context.WithCancel(testCtx(t))
	d, err := s.WaitDrained(ctx, table, 1000, DrainOptions{Timeout: time.Minute, Progress: func(uint64, uint64, time.Duration) { cancel() }})
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrDrainTimeout) {
		t.Fatalf("interrupted drain: got %v, want context.Canceled", err)
	}
	if d.Count != 200 || d.Distinct != 200 || !strings.Contains(err.Error(), "interrupted") {
		t.Fatalf("interrupted drain %+v, %v: want 200 rows and 200 distinct measured at the end", d, err)
	}
}

func TestWaitDrainedRefusesMoreRowsThanTheTopicHolds(t *testing.T) {
	s := openTestStore(t)
	table := newTable(t, s)
	insertMessages(t, s, table, 0, 100)
	_, err := s.WaitDrained(testCtx(t), table, 150, DrainOptions{Timeout: 10 * time.Second})
	if !errors.Is(err, ErrTooManyRows) || !strings.Contains(err.Error(), "holds 200 distinct ids, more than the 150") {
		t.Fatalf("drain over a table with extra rows: got %v", err)
	}
}

func TestWaitDrainedFailsWhenTheServerIsLost(t *testing.T) {
	// A listener that accepts and drops every connection stands for a
	// server that went away mid-run.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	conn, err := clickhouse.Open(&clickhouse.Options{Addr: []string{ln.Addr().String()}, DialTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	lost := &Store{conn: conn, addr: ln.Addr().String(), database: "default", maxConns: 1}
	d, err := lost.WaitDrained(testCtx(t), "events", 10, DrainOptions{Timeout: 20 * time.Second})
	if err == nil || errors.Is(err, ErrDrainTimeout) || !strings.Contains(err.Error(), "no count of the 10 rows answered yet") {
		t.Fatalf("drain over a lost server: got %v", err)
	}
	if d.Polls != maxPollFailures {
		t.Fatalf("gave up after %d polls, want %d", d.Polls, maxPollFailures)
	}
}

// TestWaitDrainedEndsAStalledDrain: rows that stop landing, and a server
// that stops answering (a listener that accepts and never replies, as a
// frozen server does), each end the drain at the stall limit, not at its
// timeout, with what was known when it stalled.
func TestWaitDrainedEndsAStalledDrain(t *testing.T) {
	s := openTestStore(t)
	table := newTable(t, s)
	insertMessages(t, s, table, 0, 100)
	begin := time.Now()
	d, err := s.WaitDrained(testCtx(t), table, 1000, DrainOptions{Timeout: time.Minute, Stall: time.Second})
	if !errors.Is(err, ErrStalled) || !strings.Contains(err.Error(), "no new row landed in "+table) ||
		!strings.Contains(err.Error(), "(stall limit 1s); when it stalled, 200 rows of 1000 counted (distinct ids not measured yet)") {
		t.Fatalf("a drain that stopped growing: got %v", err)
	}
	if took := time.Since(begin); took > 10*time.Second || d.Count != 200 || !d.Counted {
		t.Fatalf("stalled drain after %v: %+v; want it ended near the stall limit with 200 rows counted", took, d)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	held := make(chan net.Conn, 16)
	defer func() {
		ln.Close()
		for len(held) > 0 {
			(<-held).Close()
		}
	}()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held <- c // never answered
		}
	}()
	conn, err := clickhouse.Open(&clickhouse.Options{Addr: []string{ln.Addr().String()}, DialTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	frozen := &Store{conn: conn, addr: ln.Addr().String(), database: "default", maxConns: 1}
	d, err = frozen.WaitDrained(testCtx(t), "events", 10, DrainOptions{Timeout: time.Minute, Stall: 2 * time.Second})
	if !errors.Is(err, ErrStalled) || !strings.Contains(err.Error(), "ClickHouse at "+ln.Addr().String()+" answered no query for") {
		t.Fatalf("a drain over a frozen server: got %v", err)
	}
	if d.Counted || d.DistinctCounted {
		t.Errorf("a server that never answered gave counts: %+v", d)
	}
}

// TestWaitDrainedEndsAFreezeBeforeTheFirstRow: before any row lands, an
// arm whose work stops growing (a frozen container's CPU time) stalls at the
// limit counted from when it stopped; one still working (a slow start) is
// given the whole timeout.
func TestWaitDrainedEndsAFreezeBeforeTheFirstRow(t *testing.T) {
	s := openTestStore(t)
	table := newTable(t, s)
	begin := time.Now()
	working := func(until time.Duration) func() (uint64, error) {
		return func() (uint64, error) {
			return uint64(min(time.Since(begin), until)), nil
		}
	}
	d, err := s.WaitDrained(testCtx(t), table, 1000, DrainOptions{Timeout: time.Minute, Stall: time.Second, Activity: working(time.Second)})
	took := time.Since(begin)
	if !errors.Is(err, ErrStalled) || !strings.Contains(err.Error(), "the arm did no work for") ||
		!strings.Contains(err.Error(), "before its first row landed in "+table) || !strings.Contains(err.Error(), "stall limit 1s") {
		t.Fatalf("an arm frozen before its first row: got %v", err)
	}
	if took < 2*time.Second || took > 5*time.Second || d.Count != 0 || !d.Counted {
		t.Fatalf("frozen arm's drain ended after %v with %+v; want near 2 s (1 s of work, then the 1 s limit) with 0 rows counted", took, d)
	}

	begin = time.Now()
	_, err = s.WaitDrained(testCtx(t), table, 1000, DrainOptions{Timeout: 3 * time.Second, Stall: time.Second, Activity: working(time.Hour)})
	if !errors.Is(err, ErrDrainTimeout) {
		t.Fatalf("an arm still working before its first row: got %v; want the drain timeout, not a stall", err)
	}
}

func TestWaitDrainedInsistsOnFiveHertz(t *testing.T) {
	s := openTestStore(t)
	_, err := s.WaitDrained(testCtx(t), "events", 10, DrainOptions{Poll: time.Second, Timeout: time.Minute})
	if err == nil || !strings.Contains(err.Error(), "poll period 1s is outside (0, 200ms]") {
		t.Fatalf("slow polling: got %v", err)
	}
}

func TestTableNamesAreIdentifiers(t *testing.T) {
	s := openTestStore(t)
	for _, bad := range []string{"events; DROP TABLE x", "a.b.c", "", "1abc"} {
		if err := s.Truncate(testCtx(t), bad); err == nil || !strings.Contains(err.Error(), "is not an identifier") {
			t.Errorf("table %q: got %v", bad, err)
		}
	}
	if _, err := Open(testCtx(t), testAddr(), "bad-name", "default", ""); err == nil || !strings.Contains(err.Error(), "not a plain identifier") {
		t.Errorf("database bad-name: got %v", err)
	}
}

func TestWriteNativeMatchesTheServersNativeOutput(t *testing.T) {
	s := openTestStore(t)
	table := newTable(t, s)
	testenv.Require(t, "clickhouse-client", func() error { _, err := exec.LookPath("clickhouse-client"); return err })
	var r Rows
	if err := r.AppendMessages(spec, 0, spec.Messages); err != nil {
		t.Fatal(err)
	}
	if err := s.Insert(testCtx(t), table, &r); err != nil {
		t.Fatal(err)
	}
	var mine bytes.Buffer
	if err := WriteNative(&mine, &r); err != nil {
		t.Fatal(err)
	}
	theirs, err := clickhouseClient(s, nil, "SELECT "+jsonrows.Columns+" FROM "+table+" ORDER BY id FORMAT Native")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(mine.Bytes(), theirs) {
		t.Fatalf("WriteNative wrote %d bytes that differ from the server's %d-byte Native output of the same rows", mine.Len(), len(theirs))
	}
}

// clickhouseClient runs clickhouse-client against the store's server and
// database with stdin as its input.
func clickhouseClient(s *Store, stdin []byte, query string) ([]byte, error) {
	host, port, err := net.SplitHostPort(s.addr)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("clickhouse-client", "--host", host, "--port", port, "--database", s.database, "--query", query)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("clickhouse-client --query %q: %w: %s", query, err, stderr.String())
	}
	return out, nil
}

func TestIngestCeilingClimbsUntilItStops(t *testing.T) {
	s := openTestStore(t, WithMaxConns(4))
	table := newTable(t, s)
	small := jsonrows.Spec{Dataset: "v1", Messages: 5000, EventsPerMessage: 2, MessageBytes: 300}
	pool, err := JSONRowsBatches(small, 2000, 8000)
	if err != nil {
		t.Fatal(err)
	}
	var reported int
	sweep, err := s.IngestCeiling(testCtx(t), table, IngestOptions{
		Pool: pool, RowsPerLevel: 8000,
		Progress: func(IngestLevel) { reported++ },
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(sweep.Levels) == 0 || reported != len(sweep.Levels) {
		t.Fatalf("sweep %+v with %d reports: want at least one level, each reported", sweep, reported)
	}
	var best IngestLevel
	for i, l := range sweep.Levels {
		if l.Concurrency != 1<<i || l.Rows < 8000 || l.RowsPerSec <= 0 {
			t.Fatalf("level %d is %+v: want concurrency %d, at least 8000 rows", i, l, 1<<i)
		}
		// Every level but the last climbed at least 5% over the best
		// before it; the last either did not or hit the bound of 4.
		climbed := l.RowsPerSec >= best.RowsPerSec*1.05
		last := i == len(sweep.Levels)-1
		if !last && !climbed {
			t.Fatalf("sweep went on after level %+v gained less than 5%% over %+v", l, best)
		}
		if last && climbed && l.Concurrency != 4 {
			t.Fatalf("sweep stopped after level %+v, which climbed over %+v", l, best)
		}
		if l.RowsPerSec > best.RowsPerSec {
			best = l
		}
	}
	if sweep.Best != best {
		t.Fatalf("sweep best is %+v, want %+v", sweep.Best, best)
	}
	if count, _ := s.Count(testCtx(t), table); count != 0 {
		t.Fatalf("sweep left %d rows in the table", count)
	}
	if _, err := s.IngestCeiling(testCtx(t), table, IngestOptions{Pool: pool, MaxConcurrency: 8}); err == nil ||
		!strings.Contains(err.Error(), "the store opens at most 4 (open it WithMaxConns(8))") {
		t.Fatalf("sweep beyond the connection limit: got %v", err)
	}
}

func TestDefinitionReadsATableBackOrItsAbsence(t *testing.T) {
	s := openTestStore(t)
	table := newTable(t, s)
	def, err := s.Definition(testCtx(t), table)
	if err != nil || !strings.Contains(def, "CREATE TABLE") || !strings.Contains(def, table) {
		t.Fatalf("definition of %s: %q, %v", table, def, err)
	}
	if err := s.DropTable(testCtx(t), table); err != nil {
		t.Fatal(err)
	}
	if def, err := s.Definition(testCtx(t), table); err != nil || def != "" {
		t.Fatalf("definition of the dropped %s: %q, %v; want none", table, def, err)
	}
}
