package chstore

import (
	"bytes"
	"context"
	"testing"
	"time"

	"spatec.dev/spatec/workloads/json-rows"
)

// The ingest-ceiling client against ClickHouse's own client, same rows in
// the same blocks, alternating in every iteration:
//
//	go test -run '^$' -bench IngestVsClickhouseClient -benchtime 3x ./exec/chstore
//
// go-rows/s is spatec's native insert (one connection, no compression);
// client-rows/s is `clickhouse-client --query "INSERT … FORMAT Native"`
// reading the same blocks from stdin (its default LZ4 wire compression);
// go/client is their ratio.

var benchSpec = jsonrows.Spec{Dataset: "v1", Messages: 500_000, EventsPerMessage: 1, MessageBytes: 256}

const benchBatchRows = 100_000

func BenchmarkIngestVsClickhouseClient(b *testing.B) {
	s := openTestStore(b)
	ctx := context.Background()
	if err := s.Exec(ctx, DefaultDDL("events")); err != nil {
		b.Fatal(err)
	}
	pool, err := JSONRowsBatches(benchSpec, benchBatchRows, benchSpec.Rows())
	if err != nil {
		b.Fatal(err)
	}
	var native bytes.Buffer
	if err := WriteNativeDataset(&native, benchSpec, benchBatchRows); err != nil {
		b.Fatal(err)
	}
	query := "INSERT INTO events (" + jsonrows.Columns + ") FORMAT Native"
	if _, err := clickhouseClient(s, []byte{}, "SELECT 1"); err != nil {
		b.Skipf("clickhouse-client is not usable: %v", err)
	}
	var goTime, clientTime time.Duration
	for b.Loop() {
		b.StopTimer()
		if err := s.Truncate(ctx, "events"); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		for _, r := range pool {
			if err := r.InsertInto(ctx, s, "events"); err != nil {
				b.Fatal(err)
			}
		}
		goTime += time.Since(start)
		b.StopTimer()
		if err := s.Truncate(ctx, "events"); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start = time.Now()
		if _, err := clickhouseClient(s, native.Bytes(), query); err != nil {
			b.Fatal(err)
		}
		clientTime += time.Since(start)
		b.StopTimer()
		if n, err := s.Count(ctx, "events"); err != nil || n != uint64(benchSpec.Rows()) {
			b.Fatalf("clickhouse-client inserted %d rows (err %v), want %d", n, err, benchSpec.Rows())
		}
		b.StartTimer()
	}
	rows := float64(benchSpec.Rows()) * float64(b.N)
	b.ReportMetric(rows/goTime.Seconds(), "go-rows/s")
	b.ReportMetric(rows/clientTime.Seconds(), "client-rows/s")
	b.ReportMetric(clientTime.Seconds()/goTime.Seconds(), "go/client")
}

// BenchmarkIngestCeiling runs the whole concurrency sweep once per
// iteration and reports the best level.
func BenchmarkIngestCeiling(b *testing.B) {
	s := openTestStore(b)
	ctx := context.Background()
	if err := s.Exec(ctx, DefaultDDL("events")); err != nil {
		b.Fatal(err)
	}
	pool, err := JSONRowsBatches(benchSpec, benchBatchRows, min(benchSpec.Rows(), 1_000_000))
	if err != nil {
		b.Fatal(err)
	}
	var best IngestLevel
	for b.Loop() {
		sweep, err := s.IngestCeiling(ctx, "events", IngestOptions{Pool: pool})
		if err != nil {
			b.Fatal(err)
		}
		for _, l := range sweep.Levels {
			b.Logf("concurrency %d: %.0f rows/s", l.Concurrency, l.RowsPerSec)
		}
		best = sweep.Best
	}
	b.ReportMetric(best.RowsPerSec, "rows/s")
	b.ReportMetric(float64(best.Concurrency), "concurrency")
}
