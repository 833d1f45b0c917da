// Package ceiling measures what the benchmark's infrastructure can absorb
// (C12): the broker's consume ceiling over the prefilled topic, and
// ClickHouse's native ingest ceiling. An arm above 70% of either is
// recorded as infra_bound.
//
// It measures from wherever it runs. spatec runs it in its own process for
// an environment whose services are on the host, and inside a container on
// the run's network (cmd/spatec-ceiling) for one whose services run in
// containers, so that the ceilings are measured the way the arms reach the
// services and never through a published port, whose proxy would set a
// ceiling of its own.
package ceiling

import (
	"context"
	"fmt"

	"spatec.dev/spatec/exec/broker"
	"spatec.dev/spatec/exec/chstore"
	"spatec.dev/spatec/schema"
	"spatec.dev/spatec/workloads"
)

// Figures are the measured ceilings.
type Figures struct {
	// Broker is the consume ceiling: a raw fetch, no consumer group.
	Broker struct {
		MessagesPerSec float64 `json:"messages_per_s"`
		BytesPerSec    float64 `json:"bytes_per_s"`
	} `json:"broker"`
	// ClickHouse is the ingest ceiling the gate holds every arm to, in
	// Format (Native, the format spatec's own pass inserts), and in
	// Formats the ceilings of other insert formats where they were
	// measured (spatec's own pass measures Native alone; ceilings imported
	// from the reference harness carry each format it measured).
	ClickHouse struct {
		Format      string                `json:"format"`
		RowsPerSec  float64               `json:"rows_per_s"`
		Concurrency int                   `json:"concurrency"`
		Levels      []chstore.IngestLevel `json:"levels"`
		Formats     []FormatCeiling       `json:"formats,omitempty"`
	} `json:"clickhouse"`
}

// FormatCeiling is ClickHouse's ingest ceiling in one insert format, named
// as ClickHouse names it (Native, RowBinary, ArrowStream…).
type FormatCeiling struct {
	Format      string                `json:"format"`
	RowsPerSec  float64               `json:"rows_per_s"`
	Concurrency int                   `json:"concurrency"`
	Levels      []chstore.IngestLevel `json:"levels,omitempty"`
}

// Native is ClickHouse's columnar format, which spatec's own ingest pass
// inserts and whose ceiling the gate holds every arm to.
const Native = "Native"

// HarnessFormat maps the reference harness's name of an insert format
// (spate-etl/benchmark harness/src/ceiling.rs, Format::wire_format: what
// its descriptors declare as reports.wire_format) to ClickHouse's, the
// name spatec's ceilings give it, and says whether it knows the name.
func HarnessFormat(name string) (string, bool) {
	switch name {
	case "native":
		return Native, true
	case "rowbinary":
		return "RowBinary", true
	case "rowbinary_nt":
		return "RowBinaryWithNamesAndTypes", true
	case "json_each_row":
		return "JSONEachRow", true
	case "arrow_stream":
		return "ArrowStream", true
	}
	return "", false
}

// Target says where the services are, as seen from where the measurement
// runs, and what the topic holds.
type Target struct {
	// Brokers are the broker's bootstrap addresses.
	Brokers []string
	// ClickHouse is the native-protocol address, and User and Password
	// what to sign in with.
	ClickHouse     string
	User, Password string
	// Database is the environment's database; the ingest ceiling writes
	// to a scratch database beside it, <database>_ceiling.
	Database string
	// Workload is the workload whose topic the broker ceiling reads and
	// whose rows (the rows a correct arm lands) the ingest ceiling
	// inserts, into a table made by its DDL; Messages is the dataset's
	// size.
	Workload schema.Workload
	Messages int64
}

// ingestRows is the most rows a level of the ingest ceiling inserts.
const ingestRows = 1_000_000

// Measure reads the whole topic once at the broker's pace, then inserts
// the dataset's rows into a scratch table at rising concurrency until a
// level gains less than 5%. say, when not nil, is told each step.
func Measure(ctx context.Context, t Target, say func(format string, args ...any)) (Figures, error) {
	if say == nil {
		say = func(string, ...any) {}
	}
	var f Figures
	bc, err := broker.NewClient(t.Brokers)
	if err != nil {
		return f, err
	}
	defer bc.Close()
	say("broker consume ceiling: reading topic %s from %v", t.Workload.Topic, t.Brokers)
	b, err := bc.ConsumeCeiling(ctx, t.Workload.Topic, 0)
	if err != nil {
		return f, fmt.Errorf("measuring the consume ceiling: %w", err)
	}
	f.Broker.MessagesPerSec, f.Broker.BytesPerSec = b.MessagesPerSec, b.BytesPerSec
	say("broker consume ceiling: %d messages in %s: %.0f msg/s, %.0f bytes/s", b.Messages, b.Elapsed.Round(1e6), b.MessagesPerSec, b.BytesPerSec)

	pool, err := pool(t.Workload, t.Messages)
	if err != nil {
		return f, fmt.Errorf("measuring the ingest ceiling: %w", err)
	}
	scratch := t.Database + "_ceiling"
	st, err := chstore.Open(ctx, t.ClickHouse, scratch, t.User, t.Password)
	if err != nil {
		return f, err
	}
	defer st.Close()
	defer func() { _ = st.Exec(context.WithoutCancel(ctx), chstore.DropDatabase(scratch)) }()
	table := scratch + "." + t.Workload.Table.Name
	if err := st.DropTable(ctx, table); err != nil {
		return f, fmt.Errorf("measuring the ingest ceiling: %w", err)
	}
	if err := st.Exec(ctx, t.Workload.Table.DDL); err != nil {
		return f, fmt.Errorf("measuring the ingest ceiling: %w", err)
	}
	say("clickhouse ingest ceiling: native inserts of %s's rows into %s at %s", t.Workload.Name, table, t.ClickHouse)
	sweep, err := st.IngestCeiling(ctx, table, chstore.IngestOptions{
		Pool: pool,
		Progress: func(l chstore.IngestLevel) {
			say("clickhouse ingest ceiling: %d writers, %.0f rows/s", l.Concurrency, l.RowsPerSec)
		},
	})
	if err != nil {
		return f, fmt.Errorf("measuring the ingest ceiling: %w", err)
	}
	f.ClickHouse.Format, f.ClickHouse.RowsPerSec = Native, sweep.Best.RowsPerSec
	f.ClickHouse.Concurrency, f.ClickHouse.Levels = sweep.Best.Concurrency, sweep.Levels
	return f, nil
}

// pool makes the batches the ingest ceiling inserts: the rows a correct arm
// lands from the dataset's first messages, up to ingestRows of them.
func pool(w schema.Workload, messages int64) ([]chstore.Batch, error) {
	switch w.Generator.Kind {
	case "sensor-batch":
		k, err := workloads.SensorBatch(w)
		if err != nil {
			return nil, err
		}
		return chstore.SensorBatches(k, uint64(messages), 0, ingestRows), nil
	case "json-rows":
		spec := workloads.JSONRowsSpec(w, messages)
		return chstore.JSONRowsBatches(spec, 0, min(spec.Rows(), ingestRows))
	}
	return nil, fmt.Errorf("workload %s: no generator of kind %q", w.Name, w.Generator.Kind)
}
