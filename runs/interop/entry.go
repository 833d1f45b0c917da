// Package interop moves run records between spatec and the public reference
// harness (github.com/spate-etl/benchmark), whose records are "schema 2".
//
// The two tools measure the same kind of thing (a streaming arm draining a
// Kafka-compatible topic into ClickHouse, under cgroup caps) and record it in
// look-alike JSON, which is exactly what makes a careless mapping dangerous:
// fields with the same name mean different things. The traps, each handled
// where the mapping is made:
//
//   - harness_version 1 is spatec's measurement protocol in one tool and the
//     reference harness's in the other. Entries carry which tool's protocol
//     the number belongs to, and an exported record says so in its note.
//   - schema 2's rows_per_s and spatec's rows_per_s are two rates over two
//     windows. Schema 2's "records/s" counts ClickHouse rows (one flattened
//     event that survived the workload's filters), not Kafka messages, so it
//     is rows/s with a factor of 1; it is count() (duplicates included) at
//     the poll that reached the expected rows, over a window from the arm's
//     start to that poll. spatec's rows_per_s is the N distinct rows over
//     spatec's own window; spatec records an approximation of the
//     harness's too (a window within about a second of the harness's 1 Hz
//     one, record.HarnessSpan), as harness_rows_per_s, and that is the
//     figure the two tools share:
//     schema 2's rows_per_s is read into it, and exported from it.
//   - dataset_version is derived by each tool from its own sources, so the
//     labels never match as strings. The harness's label for its corpus,
//     d2-60d7e5bb2a82, names the corpus spatec generates as
//     sensor-batch@1c12224f4f7f (byte for byte, which the golden tests of
//     workloads/sensor-batch check), and is mapped to and from it; the size
//     is schema 2's variant.batches and spatec's run.dataset.messages.
//   - peak_anon_bytes is the cgroup's anon alone in schema 2 and anon+shmem
//     in spatec (contract C7), so a JVM keeping its heap in shared memory
//     reads very differently.
//   - schema 2 states durations in µs and byte rates in MB/s (10^6 bytes),
//     spatec in s and bytes/s; it has no unit for a message rate or a bare
//     count at all.
//
// Reading (ReadSchema2, FromRecord) produces Entry values for a history
// table; writing (Export) produces a schema-2 line the reference would accept,
// or says which required facts spatec never recorded.
package interop

import (
	"time"

	"spatec.dev/spatec/runs/record"
)

// Where an Entry came from, and whose measurement protocol its
// HarnessVersion numbers.
const (
	SourceSpatec  = "spatec"
	SourceSchema2 = "schema2"
)

// Entry is one run as a history table knows it, from either tool's records.
// It carries what both tools record with the same meaning, and says where
// the meanings part (HarnessProtocol, PeakAnonIncludesShmem, Caveats) rather
// than pretending they do not.
type Entry struct {
	// Source is SourceSpatec or SourceSchema2: which tool wrote the record.
	Source string
	// File and Line say where the record was read (Line is 1-based), so a
	// row in a table can be traced back to the line that produced it.
	File string
	Line int

	RunID     string
	Rep, Reps int
	Entrant   string
	// Variant is the variant's name: spatec's sut.variant (empty for the
	// entrant's default), schema 2's sut.variant_id. The knob values
	// themselves are not carried.
	Variant string
	Env     string
	// EnvDigest identifies the environment a run was measured in. For
	// spatec it is run.env_digest, the digest of the resolved environment
	// (host, infrastructure caps, partitions, workload). For schema 2 it is
	// run.env_digest too, the content hash of the resolved environments/
	// <env_id>.toml, which declares the same things; that is the closest
	// counterpart, and each tool also hashes the infrastructure envelope on
	// its own, carried as InfraDigest. The two tools hash different inputs
	// with different code, so digests are only ever equal within one tool.
	EnvDigest string
	// InfraDigest is spatec's run.infra_digest or schema 2's
	// run.infra.digest: the infrastructure caps the arm ran beside.
	InfraDigest string
	// DatasetVersion names the corpus drained, in spatec's name for it:
	// spatec's run.dataset.version, or schema 2's run.dataset_version read
	// as spatec's label of the same corpus where there is one (the harness's
	// d2-60d7e5bb2a82 is spatec's sensor-batch@1c12224f4f7f, the corpus both
	// tools generate byte for byte), else as written. Entries of the two
	// tools with the same DatasetVersion and Messages drained the same rows.
	DatasetVersion string
	// RecordedDatasetVersion is the dataset version as the record wrote
	// it, for a schema-2 record whose label was read as spatec's.
	RecordedDatasetVersion string
	// Workload names the workload (spatec's run.dataset.workload; for
	// schema 2, sensor-batch when its corpus is spatec's), and Messages
	// how many of its messages were drained (spatec's run.dataset.messages,
	// schema 2's variant.batches); "" and 0 when unknown.
	Workload string
	Messages int64

	// StartedAt is when the run started: spatec's run.started_at. Schema 2
	// does not record a start, so it is zero there.
	StartedAt time.Time
	// EndedAt is when the run ended: spatec's run.ended_at, or schema 2's
	// run.ts_ms, which the reference stamps when it builds the record,
	// after the measurement window closed.
	EndedAt time.Time

	// HarnessVersion is the measurement protocol's version, and
	// HarnessProtocol (SourceSpatec or SourceSchema2) whose protocol it
	// numbers. Both tools start at 1 and mean different windows, drain
	// rules and gates by it, so two entries are comparable only when both
	// fields match.
	HarnessVersion  int
	HarnessProtocol string

	// ArmVersion is the version of the system under test: spatec's
	// sut.version (read inside the image); schema 2's sut.version, or its
	// sut.commit when the system has no release and the reference records
	// the commit instead.
	ArmVersion string
	// Status is the record's status in its own tool's vocabulary: spatec's
	// ok, infra_bound, refused, failed; schema 2's ok, infra_bound,
	// unsupported, failed. They are kept apart because they are not the
	// same set: schema 2 has no refused (the reference records its own
	// refusals as failed) and spatec has no unsupported.
	Status string

	// Headline figures, nil when not observed. They are filled only for a
	// status that carries a measurement (ok, infra_bound in both tools): a
	// failed run's partial numbers are not a measurement of the arm.
	//
	// RowsPerS is spatec's rate: the N distinct rows over spatec's window
	// (spatec's rows_per_s). Schema 2 has no such figure, so it is nil
	// there.
	RowsPerS *float64
	// HarnessRowsPerS is the reference harness's rate: count() at the poll
	// that reached the expected rows, duplicates included, over the window
	// from the arm's start to that poll. From schema 2 it is the harness's
	// own, metrics.rows_per_s, whose unit "records/s" means rows (factor
	// 1), over its 1 Hz sampler's window; from spatec it is
	// harness_rows_per_s, over spatec's approximation of that window
	// (record.HarnessSpan: within about a second of it).
	HarnessRowsPerS *float64
	// CoresUsed is the arm's mean cores over the window, data plane and
	// control plane together, in both tools.
	CoresUsed *float64
	// PeakAnonBytes is the arm's peak memory at one instant, in bytes,
	// page cache excluded. PeakAnonIncludesShmem says whether shared memory
	// is in it: true for spatec (C7), false for schema 2, which reads the
	// cgroup's anon alone.
	PeakAnonBytes         *float64
	PeakAnonIncludesShmem bool

	// Note is the record's free text, as written.
	Note string

	// Caveats are the places where this entry's figures mean something
	// other than a spatec entry's would, in words for a report.
	Caveats []string

	// Facts are what the record states of the environment it was
	// measured in (for schema 2, with what the harness's profile of its
	// env_digest adds, where one is given: WithProfile), for deciding
	// whether it was spatec's environment too (Compare). Nil for spatec
	// records, whose facts SpatecFacts reads with their environment.
	Facts Facts

	// Unmapped names the schema-2 fields of the record that held
	// information no Entry field carries (dotted paths such as
	// "run.trigger" or "metrics.cpu_us_per_row"), sorted, so a report can
	// say what was not carried over. Nil for spatec records.
	Unmapped []string
}

// Time returns the best-known time of the run, StartedAt or else EndedAt, for
// ordering a history table that mixes the two tools.
func (e Entry) Time() time.Time {
	if !e.StartedAt.IsZero() {
		return e.StartedAt
	}
	return e.EndedAt
}

// FromRecord returns the Entry of a spatec record read at file:line.
func FromRecord(file string, line int, r record.Record) Entry {
	e := Entry{
		Source:                SourceSpatec,
		File:                  file,
		Line:                  line,
		RunID:                 r.RunID,
		Rep:                   r.Rep,
		Reps:                  r.Reps,
		Entrant:               r.SUT.Entrant,
		Variant:               r.SUT.Variant,
		Env:                   r.Run.Env,
		EnvDigest:             r.Run.EnvDigest,
		InfraDigest:           r.Run.InfraDigest,
		DatasetVersion:        r.Run.Dataset.Version,
		Workload:              r.Run.Dataset.Workload,
		Messages:              r.Run.Dataset.Messages,
		StartedAt:             r.Run.StartedAt,
		EndedAt:               r.Run.EndedAt,
		HarnessVersion:        r.Run.HarnessVersion,
		HarnessProtocol:       SourceSpatec,
		ArmVersion:            r.SUT.Version,
		Status:                string(r.Status),
		PeakAnonIncludesShmem: true,
		Note:                  r.Note,
	}
	if r.Status.CarriesMeasurement() {
		e.RowsPerS = spatecFigure(r.Metrics, record.RowsPerS, "rows/s")
		e.HarnessRowsPerS = spatecFigure(r.Metrics, record.HarnessRowsPerS, "rows/s")
		e.CoresUsed = spatecFigure(r.Metrics, record.CoresUsed, "cores")
		e.PeakAnonBytes = spatecFigure(r.Metrics, record.PeakAnonBytes, "bytes")
	}
	return e
}

// spatecFigure is metric name when it is in unit; a value in any other unit
// is not the figure the field promises, so it is left out.
func spatecFigure(m map[string]record.Metric, name, unit string) *float64 {
	v, ok := m[name]
	if !ok || v.Unit != unit {
		return nil
	}
	return &v.Value
}
