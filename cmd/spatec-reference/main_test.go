package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"spatec.dev/spatec/exec/broker"
	"spatec.dev/spatec/exec/chstore"
	"spatec.dev/spatec/internal/testenv"
	"spatec.dev/spatec/workloads"
	"spatec.dev/spatec/workloads/json-rows"
)

// TestMain lets the test binary stand in for the command: with
// SPATEC_REFERENCE_RUN_MAIN=1 it runs main, so a test can start the real
// program as a child process and signal it.
func TestMain(m *testing.M) {
	if os.Getenv("SPATEC_REFERENCE_RUN_MAIN") == "1" {
		// Not a setting of the arm, which would refuse it.
		os.Unsetenv("SPATEC_REFERENCE_RUN_MAIN")
		main()
		return
	}
	os.Exit(m.Run())
}

func TestVersionPrintsTheNameAndVersion(t *testing.T) {
	var out, errOut bytes.Buffer
	code := realMain([]string{"-version"}, nil, &out, &errOut)
	if code != 0 || out.String() != "spatec-reference "+version+"\n" {
		t.Fatalf("-version: exit %d, printed %q (stderr %q)", code, out.String(), errOut.String())
	}
}

func TestConfigComesFromEnvironmentAndFlags(t *testing.T) {
	env := map[string]string{
		"SPATEC_BROKERS":        "a:9092, b:9092",
		"SPATEC_TOPIC":          "events",
		"SPATEC_CLICKHOUSE":     "ch:9000",
		"SPATEC_TABLE":          "spatec.events",
		"SPATEC_CONSUMERS":      "8",
		"SPATEC_BATCH_ROWS":     "5000",
		"SPATEC_GROUP":          "g1",
		"SPATEC_DATABASE":       "spatec",
		"SPATEC_FLUSH_INTERVAL": "250ms",
	}
	cfg, _, err := parseConfig([]string{"-consumers", "4"}, env, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	want := config{
		Brokers: []string{"a:9092", "b:9092"}, Topic: "events", Group: "g1", ClickHouse: "ch:9000",
		Database: "spatec", User: "default", Table: "spatec.events", Consumers: 4, BatchRows: 5000,
		FlushInterval: 250 * time.Millisecond, StopGrace: 3 * time.Second, Workload: "json-rows",
	}
	if fmt.Sprint(cfg) != fmt.Sprint(want) {
		t.Fatalf("config is %+v, want %+v (the flag overriding SPATEC_CONSUMERS)", cfg, want)
	}
}

func TestBadConfigurationListsEveryProblem(t *testing.T) {
	env := []string{"SPATEC_CONSUMERS=many", "SPATEC_BATCH_ROWS=0"}
	var out, errOut bytes.Buffer
	code := realMain(nil, env, &out, &errOut)
	if code != 2 {
		t.Fatalf("bad configuration exited %d, want 2", code)
	}
	for _, want := range []string{`SPATEC_CONSUMERS="many" is not an integer`, "no broker", "no topic", "no table", "batch-rows is 0"} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("stderr %q does not say %q", errOut.String(), want)
		}
	}
}

func clickhouseAddr() string { return testenv.ClickHouseAddr() }

// TestDrainsThePrefilledTopic runs the arm in-process against the embedded
// broker and the real ClickHouse: every row lands, offsets are committed,
// and a restarted arm resumes after them instead of starting over.
func TestDrainsThePrefilledTopic(t *testing.T) {
	testenv.RequireClickHouse(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const partitions = 4
	spec := jsonrows.Spec{Dataset: "v1", Messages: 20_000, EventsPerMessage: 2, MessageBytes: 300}
	emb, store, cfg := setup(t, ctx, spec, partitions)
	n := uint64(spec.Rows())
	stop := startArm(t, ctx, cfg)
	d, err := store.WaitDrained(ctx, "events", n, chstore.DrainOptions{Timeout: 45 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if d.Distinct != n {
		t.Fatalf("drain ended with %d distinct ids, want %d", d.Distinct, n)
	}
	waitCommitted(t, ctx, emb.Addrs(), cfg.Group)
	stop()
	count, distinct, err := store.Counts(ctx, "events", "id")
	if err != nil || distinct != n || count < n {
		t.Fatalf("after the drain: %d rows, %d distinct (err %v), want %d distinct", count, distinct, err, n)
	}

	// Append 100 more messages of a longer dataset, laid out as a
	// prefill would, and restart: only they may land again.
	more := spec
	more.Messages += 100
	produceRange(t, ctx, emb.Addrs(), more, spec.Messages, more.Messages, partitions)
	stop = startArm(t, ctx, cfg)
	defer stop()
	if _, err := store.WaitDrained(ctx, "events", uint64(more.Rows()), chstore.DrainOptions{Timeout: 30 * time.Second}); err != nil {
		t.Fatal(err)
	}
	count2, distinct2, err := store.Counts(ctx, "events", "id")
	if err != nil || distinct2 != uint64(more.Rows()) || count2-count != uint64(more.Rows())-n {
		t.Fatalf("after the restart: %d rows (was %d), %d distinct (err %v); want exactly %d new rows",
			count2, count, distinct2, err, uint64(more.Rows())-n)
	}
}

// setup starts an embedded broker with the topic "events" prefilled with
// spec, and a ClickHouse database of the test's own with the corpus table
// "events"; it returns an arm configuration pointing at both.
func setup(t testing.TB, ctx context.Context, spec jsonrows.Spec, partitions int) (*broker.Embedded, *chstore.Store, config) {
	t.Helper()
	testenv.RequireClickHouse(t)
	emb, err := broker.StartEmbedded(ctx, partitions)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(emb.Close)
	bc, err := broker.NewClient(emb.Addrs())
	if err != nil {
		t.Fatal(err)
	}
	defer bc.Close()
	if err := bc.EnsureTopic(ctx, "events", partitions); err != nil {
		t.Fatal(err)
	}
	ds, err := workloads.JSONRows(spec)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bc.Prefill(ctx, "events", ds, nil); err != nil {
		t.Fatal(err)
	}

	db := fmt.Sprintf("spatec_test_reference_%d_%d", os.Getpid(), time.Now().UnixNano()%1e6)
	store, err := chstore.Open(ctx, clickhouseAddr(), db, "default", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := store.Exec(context.Background(), "DROP DATABASE IF EXISTS "+db); err != nil {
			t.Errorf("dropping the test database: %v", err)
		}
		store.Close()
	})
	if err := store.Exec(ctx, chstore.DefaultDDL("events")); err != nil {
		t.Fatal(err)
	}
	return emb, store, config{
		Brokers: emb.Addrs(), Topic: "events", Group: "reference-test", ClickHouse: clickhouseAddr(),
		Database: db, User: "default", Table: "events", Consumers: partitions, BatchRows: 4000,
		FlushInterval: 200 * time.Millisecond, StopGrace: 5 * time.Second, Workload: "json-rows",
	}
}

// TestACleanStopWritesNothingTwice stops the arm three times mid-drain,
// as SIGTERM does, and starts it again each time: every stop lands while
// inserts are under way, and each must finish its inserts and commit
// their offsets, so that the table ends with every row once.
func TestACleanStopWritesNothingTwice(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const partitions = 4
	spec := jsonrows.Spec{Dataset: "v1", Messages: 150_000, EventsPerMessage: 2, MessageBytes: 300}
	_, store, cfg := setup(t, ctx, spec, partitions)
	cfg.BatchRows = 2_000 // many inserts: a stop is likely to come during one
	n := uint64(spec.Rows())
	for i := range 3 {
		// Each start drains a fifth of the rows before its stop.
		stop := startArm(t, ctx, cfg)
		for landed := uint64(0); landed < uint64(i+1)*n/5; time.Sleep(10 * time.Millisecond) {
			var err error
			if landed, _, err = store.Counts(ctx, "events", "id"); err != nil {
				t.Fatalf("before stop %d: %v", i+1, err)
			}
		}
		stop()
		count, distinct, err := store.Counts(ctx, "events", "id")
		if err != nil || count != distinct {
			t.Fatalf("after stop %d: %d rows, %d distinct (err %v); want none twice", i+1, count, distinct, err)
		}
		t.Logf("stop %d at %d of %d rows", i+1, count, n)
	}
	stop := startArm(t, ctx, cfg)
	defer stop()
	d, err := store.WaitDrained(ctx, "events", n, chstore.DrainOptions{Timeout: 45 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if d.Count != n || d.Duplicates != 0 {
		t.Fatalf("the drain ended with %d rows, %d distinct; want each of the %d once", d.Count, d.Distinct, n)
	}
}

// TestTheProgramExitsZeroOnSIGTERM runs the real program as a child
// process, configured through the environment as a container would be,
// lets it drain, and stops it the way the harness does.
func TestTheProgramExitsZeroOnSIGTERM(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	spec := jsonrows.Spec{Dataset: "v1", Messages: 2000, EventsPerMessage: 1, MessageBytes: 200}
	_, store, cfg := setup(t, ctx, spec, 2)
	cmd := exec.CommandContext(ctx, os.Args[0])
	cmd.Env = append(withoutArmSettings(os.Environ()),
		"SPATEC_REFERENCE_RUN_MAIN=1",
		"SPATEC_BROKERS="+strings.Join(cfg.Brokers, ","),
		"SPATEC_TOPIC="+cfg.Topic,
		"SPATEC_CLICKHOUSE="+cfg.ClickHouse,
		"SPATEC_DATABASE="+cfg.Database,
		"SPATEC_TABLE="+cfg.Table,
		"SPATEC_CONSUMERS=2",
	)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := store.WaitDrained(ctx, "events", uint64(spec.Rows()), chstore.DrainOptions{Timeout: 45 * time.Second}); err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("%v; the program said:\n%s", err, stderr.String())
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); err != nil || code != 0 {
		t.Fatalf("after SIGTERM the program exited %d (%v), want 0; it said:\n%s", code, err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "spatec-reference: ") || !strings.Contains(stderr.String(), "stopped") {
		t.Fatalf("the program's log does not say it stopped:\n%s", stderr.String())
	}
}

// startArm runs the arm in the background; the returned function stops it
// and checks that it returned nil, as it does on SIGTERM.
func startArm(t *testing.T, ctx context.Context, cfg config) (stop func()) {
	t.Helper()
	armCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- run(armCtx, cfg, log.New(testWriter{t}, "arm: ", log.Lmicroseconds)) }()
	var stopped bool
	return func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("the arm returned %v after being stopped, want nil", err)
		}
	}
}

// waitCommitted waits until the group's committed offsets reach every
// partition's high watermark.
func waitCommitted(t *testing.T, ctx context.Context, seeds []string, group string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ends, err := adm.ListEndOffsets(ctx, "events")
	if err != nil {
		t.Fatal(err)
	}
	for {
		committed, err := adm.FetchOffsets(ctx, group)
		if err == nil {
			behind := 0
			ends.Each(func(e kadm.ListedOffset) {
				if c, ok := committed.Lookup(e.Topic, e.Partition); !ok || c.At != e.Offset {
					behind++
				}
			})
			if behind == 0 {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the group's committed offsets never reached the high watermarks %v (last error %v)", ends, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// produceRange appends messages [from, to) of spec, each on the partition
// Prefill would give it.
func produceRange(t *testing.T, ctx context.Context, seeds []string, spec jsonrows.Spec, from, to int64, partitions int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := from; i < to; i++ {
		msg, err := spec.Message(i)
		if err != nil {
			t.Fatal(err)
		}
		r := &kgo.Record{Topic: "events", Partition: broker.PartitionOf(i, partitions), Key: []byte(strconv.FormatInt(i, 10)), Value: msg}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// BenchmarkDrain measures the arm end to end on this machine: the time
// from its start until ClickHouse holds every distinct row of a prefilled
// topic.
//
//	go test -run '^$' -bench Drain -benchtime 3x ./cmd/spatec-reference
func BenchmarkDrain(b *testing.B) {
	ctx := context.Background()
	const partitions = 2
	spec := jsonrows.Spec{Dataset: "v1", Messages: 200_000, EventsPerMessage: 1, MessageBytes: 256}
	_, store, cfg := setup(b, ctx, spec, partitions)
	cfg.BatchRows = 100_000
	var spent time.Duration
	for n := 0; b.Loop(); n++ {
		b.StopTimer()
		if err := store.Truncate(ctx, "events"); err != nil {
			b.Fatal(err)
		}
		cfg.Group = "bench-" + strconv.Itoa(n) // start from the beginning
		armCtx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		b.StartTimer()
		start := time.Now()
		go func() { done <- run(armCtx, cfg, log.New(io.Discard, "", 0)) }()
		d, err := store.WaitDrained(ctx, "events", uint64(spec.Rows()), chstore.DrainOptions{Timeout: 5 * time.Minute})
		spent += time.Since(start)
		b.StopTimer()
		cancel()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		if err != nil {
			b.Fatal(err)
		}
		b.Logf("drained %d rows in %v (first row after %v, %d duplicates)", d.Distinct, d.Elapsed, d.FirstRow, d.Duplicates)
		b.StartTimer()
	}
	b.ReportMetric(float64(spec.Rows())*float64(b.N)/spent.Seconds(), "rows/s")
}

func TestTheHeapIsHeldInsideTheContainersMemory(t *testing.T) {
	files := map[string]string{"/sys/fs/cgroup/memory.max": "1073741824\n"}
	read := func(f string) ([]byte, error) {
		if s, ok := files[f]; ok {
			return []byte(s), nil
		}
		return nil, os.ErrNotExist
	}
	none := func(string) string { return "" }
	var set int64
	limitHeap := func(getenv func(string) string, read func(string) ([]byte, error)) int64 {
		set = 0
		got := limitHeap(getenv, read, func(n int64) int64 { set = n; return 0 })
		if got != set {
			t.Errorf("limitHeap says %d but set %d", got, set)
		}
		return got
	}
	if got := limitHeap(none, read); got != 805306368 {
		t.Errorf("a 1 GiB cap: limit %d, want three quarters of it", got)
	}
	if got := limitHeap(func(k string) string { return map[string]string{"GOMEMLIMIT": "100MiB"}[k] }, read); got != 0 {
		t.Errorf("GOMEMLIMIT set: limit %d, want none of the arm's own", got)
	}
	files["/sys/fs/cgroup/memory.max"] = "max\n"
	if got := limitHeap(none, read); got != 0 {
		t.Errorf("no cap: limit %d, want none", got)
	}
	delete(files, "/sys/fs/cgroup/memory.max")
	files["/sys/fs/cgroup/memory/memory.limit_in_bytes"] = "536870912"
	if got := limitHeap(none, read); got != 402653184 {
		t.Errorf("a v1 cap of 512 MiB: limit %d", got)
	}
}
