package chstore

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"spatec.dev/spatec/compiler"
	"spatec.dev/spatec/internal/chdb"
	"spatec.dev/spatec/internal/testenv"
	"spatec.dev/spatec/schema"
	"spatec.dev/spatec/workloads"
	"spatec.dev/spatec/workloads/checksum"
	jsonrows "spatec.dev/spatec/workloads/json-rows"
	sensorbatch "spatec.dev/spatec/workloads/sensor-batch"
)

// What the executor sends to an authoritative environment's ClickHouse
// (26.x), which cannot run here, run on ClickHouse 26.x's engine in
// process (chDB): the statements a Store sends, built by the same code
// (TableSQL, WorkloadChecksum), against the table the workload declares.

// hostedWorkload is the sensor-batch workload as env hosts it, and env's
// database.
func hostedWorkload(t *testing.T, env string) (schema.Workload, string) {
	t.Helper()
	return hosted(t, env, "sensor-batch")
}

// hosted is workload as env hosts it, and env's database.
func hosted(t *testing.T, env, workload string) (schema.Workload, string) {
	t.Helper()
	tree, err := compiler.Load(compiler.Options{Dir: "../.."})
	if err != nil {
		t.Fatal(err)
	}
	wl, err := tree.HostedWorkload(env, workload)
	if err != nil {
		t.Fatal(err)
	}
	e, err := tree.Environment(env)
	if err != nil {
		t.Fatal(err)
	}
	return wl, e.Endpoints.Database
}

// session26 runs statements on chDB for one test, failing it on an error.
type session26 struct {
	t *testing.T
	s *chdb.Session
}

func (s session26) run(stmts ...string) []chdb.Result {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := s.s.Run(ctx, stmts...)
	if err != nil {
		s.t.Fatal(err)
	}
	return res
}

// uints runs a query that answers one row of unsigned integers.
func (s session26) uints(query string) []uint64 {
	s.t.Helper()
	r := s.run(query)[0]
	if len(r.Rows) != 1 {
		s.t.Fatalf("%s answered %d rows; want 1", query, len(r.Rows))
	}
	out := make([]uint64, len(r.Columns))
	for i := range out {
		v, err := r.Uint64(0, i)
		if err != nil {
			s.t.Fatalf("%s: %v", query, err)
		}
		out[i] = v
	}
	return out
}

// checksum reads a checksum as the gates do: each of its queries, each
// answer added.
func (s session26) checksum(q TableSQL, sums []SumSpec, o ChecksumOptions) Checksum {
	s.t.Helper()
	c := NewChecksum(sums)
	for _, query := range q.Checksum(sums, o) {
		if err := c.Add(sums, s.uints(query)); err != nil {
			s.t.Fatal(err)
		}
	}
	return c
}

// insertRows inserts the rows a correct arm lands from batches [first,
// first+n) with the executor's insert (TableSQL.Insert), its rows sent as
// JSONEachRow: DateTime64 columns take a Unix time in decimal seconds.
func (s session26) insertRows(q TableSQL, k *sensorbatch.Corpus, first, n uint64, mangle func(*sensorbatch.Row)) {
	s.t.Helper()
	var b strings.Builder
	b.WriteString(q.Insert(strings.Join(sensorbatch.Columns, ", ")) + " FORMAT JSONEachRow\n")
	var rows []sensorbatch.Row
	for batch := first; batch < first+n; batch++ {
		for _, r := range k.AppendRows(rows[:0], batch) {
			if mangle != nil {
				mangle(&r)
			}
			line, err := json.Marshal(map[string]any{
				"batch_id": r.BatchID, "event_seq": r.EventSeq, "sensor": r.Sensor, "region": r.Region,
				"name_upper": r.NameUpper, "unit": r.Unit, "value": r.Value, "value_scaled": r.ValueScaled,
				"quality": r.Quality, "tags": r.Tags,
				"batch_ts": fmt.Sprintf("%d.%03d", r.BatchTSMs/1000, r.BatchTSMs%1000),
				"send_ts":  fmt.Sprintf("%d.%06d", r.SendTSUs/1_000_000, r.SendTSUs%1_000_000),
			})
			if err != nil {
				s.t.Fatal(err)
			}
			b.Write(line)
			b.WriteByte('\n')
		}
	}
	s.run(b.String())
}

// sameAsClosedForm reports every sum of got that is not the closed form's.
func sameAsClosedForm(t *testing.T, what string, got Checksum, exp checksum.Expected) {
	t.Helper()
	if got.Rows != exp.Rows {
		t.Errorf("%s: %d rows summed; %d expected", what, got.Rows, exp.Rows)
	}
	for name, want := range exp.Sums {
		if got.Sums[name] == nil || got.Sums[name].Cmp(want) != 0 {
			t.Errorf("%s: %s = %v on the server; the closed form is %s", what, name, got.Sums[name], want)
		}
	}
}

// prepare sends what Open and prepareTable send for a table of the store's
// database db (which its DDL names unqualified) that does not exist yet,
// and returns the table's definition as the server shows it.
func (s session26) prepare(db string, q TableSQL, ddl string) string {
	s.t.Helper()
	s.run(CreateDatabase(db), "USE "+db)
	if got := s.uints(q.Exists()); got[0] != 0 {
		s.t.Fatalf("%s says %v before the table is made", q.Exists(), got)
	}
	s.run(q.Drop(), ddl)
	if got := s.uints(q.Exists()); got[0] != 1 {
		s.t.Fatalf("%s says %v after the DDL", q.Exists(), got)
	}
	def, err := s.run(q.ShowCreate())[0].Text(0, 0)
	if err != nil {
		s.t.Fatal(err)
	}
	s.run(q.Truncate())
	return def
}

// The executor's statements on the sink, in the order a run sends them,
// on ClickHouse 26.x with bench-96c's table: it prepares the table
// (prepareTable), polls the drain (Count, then Counts), judges loss,
// checksum and duplicates over fixture rows with copies among them, and
// empties and drops the table; and the ingest ceiling's scratch database.
func TestSinkStatementsOnClickHouse26(t *testing.T) {
	wl, db := hostedWorkload(t, "bench-96c")
	s := session26{t, testenv.ChDB(t, chdb.Options{})}
	q, err := SQLFor(db + "." + wl.Table.Name)
	if err != nil {
		t.Fatal(err)
	}
	k, err := workloads.SensorBatch(wl)
	if err != nil {
		t.Fatal(err)
	}
	const batches = 300
	exp, err := k.Expect(context.Background(), batches, nil)
	if err != nil {
		t.Fatal(err)
	}

	def := s.prepare(db, q, wl.Table.DDL)
	for _, want := range []string{"CREATE TABLE " + db + ".sensor_events", "`tags` Array(LowCardinality(String))", "`batch_ts` DateTime64(3)",
		"`send_ts` DateTime64(6)", "`ingest_ts` DateTime64(6) MATERIALIZED now64(6)", "non_replicated_deduplication_window = 1000"} {
		if !strings.Contains(def, want) {
			t.Errorf("%s lacks %q:\n%s", q.ShowCreate(), want, def)
		}
	}

	// The drain: rows land; the polls count them, then their identities.
	s.insertRows(q, k, 0, batches, nil)
	if got := s.uints(q.Count()); got[0] != exp.Rows {
		t.Errorf("%s = %d; %d rows landed", q.Count(), got[0], exp.Rows)
	}
	if got := s.uints(q.Counts(wl.Table.Identity)); got[0] != exp.Rows || got[1] != exp.Rows {
		t.Errorf("%s = %v; want %d rows, all distinct", q.Counts(wl.Table.Identity), got, exp.Rows)
	}
	// The same insert sent again, as an arm retrying it would: the table's
	// deduplication window (read as a scenario's record reads it) absorbs
	// it, and the server's DuplicatedInsertedBlocks event moves.
	engine := s.run(q.Engine())[0]
	name, _ := engine.Text(0, 0)
	full, _ := engine.Text(0, 1)
	d, err := ReadDeduplication(name, full, func(setting string) (string, bool, error) {
		r := s.run(MergeTreeDefault(setting))[0]
		if len(r.Rows) == 0 {
			return "", false, nil
		}
		v, err := r.Text(0, 0)
		return v, err == nil, err
	})
	if err != nil || d != (Deduplication{"MergeTree", "non_replicated_deduplication_window", 1000}) {
		t.Errorf("deduplication %+v, %v; want MergeTree's window of 1000", d, err)
	}
	absorbed := s.uints(DuplicatedInsertedBlocks)[0]
	s.insertRows(q, k, 0, batches, nil)
	if got := s.uints(q.Count()); got[0] != exp.Rows {
		t.Errorf("%s = %d after the same insert again; want %d, the repeat absorbed", q.Count(), got[0], exp.Rows)
	}
	// ClickHouse 26.9 counts 2 for each partition's block dropped.
	parts := s.uints("SELECT uniqExact(partition) FROM system.parts WHERE database = '" + db + "' AND table = '" + wl.Table.Name + "' AND active")[0]
	if got := s.uints(DuplicatedInsertedBlocks)[0] - absorbed; got != 2*parts || got == 0 {
		t.Errorf("%s moved by %d over one repeated insert into %d partitions; want 2 for each", DuplicatedInsertedBlocks, got, parts)
	}

	// The checksum gate without duplicates: one query over every row.
	sums, o := WorkloadChecksum(wl, batches, false, 0)
	if n := len(q.Checksum(sums, o)); n != 1 {
		t.Errorf("%d checksum queries without duplicates; want 1", n)
	}
	sameAsClosedForm(t, "every row", s.checksum(q, sums, o), exp)
	// The workload casts its Array(LowCardinality(String)) tags to
	// Array(String) before it joins them, as the public harness does; on
	// 26.x the join without the cast reads the same.
	uncast := slices.Clone(sums)
	for i := range uncast {
		if uncast[i].Name == sensorbatch.SumTag {
			uncast[i].SQL = "arrayStringConcat(tags)"
		}
	}
	if got := s.checksum(q, uncast, o).Sums[sensorbatch.SumTag]; got.Cmp(exp.Sums[sensorbatch.SumTag]) != 0 {
		t.Errorf("tag_sum without the CAST = %s; the closed form is %s", got, exp.Sums[sensorbatch.SumTag])
	}

	// Copies of batches 10..19: the loss gate counts distinct identities,
	// the duplicates are the rest, and the checksum over the distinct
	// rows, read 70 batches a query, is still the closed form.
	s.insertRows(q, k, 10, 10, nil)
	got := s.uints(q.Counts(wl.Table.Identity))
	if got[1] != exp.Rows || got[0] <= exp.Rows {
		t.Errorf("%s = %v with copies; want more than %d rows, %d distinct", q.Counts(wl.Table.Identity), got, exp.Rows, exp.Rows)
	}
	dups := got[0] - got[1]
	sums, o = WorkloadChecksum(wl, batches, true, 70*int64(wl.RowsPerMessage))
	if n := len(q.Checksum(sums, o)); n != 5 {
		t.Errorf("%d checksum queries over the distinct rows of %d batches at 70 a query; want 5", n, batches)
	}
	c := s.checksum(q, sums, o)
	sameAsClosedForm(t, fmt.Sprintf("distinct rows over %d duplicates", dups), c, exp)
	every, _ := WorkloadChecksum(wl, batches, false, 0)
	if all := s.checksum(q, every, ChecksumOptions{Identity: o.Identity, Message: o.Message, Messages: batches, PerQuery: batches}); all.Sums[sensorbatch.SumValue].Cmp(exp.Sums[sensorbatch.SumValue]) == 0 {
		t.Error("with duplicates, the sum over every row still equals the distinct rows' sum")
	}

	// A copy of batch 20 without its tags: the duplicates gate sees copies
	// that disagree (more distinct rows than identities).
	s.insertRows(q, k, 20, 1, func(r *sensorbatch.Row) { r.Tags = nil })
	c = s.checksum(q, sums, o)
	if c.Rows <= exp.Rows {
		t.Errorf("copies that disagree count once: %d rows summed, %d identities", c.Rows, exp.Rows)
	}
	if c.Sums[sensorbatch.SumTag].Cmp(exp.Sums[sensorbatch.SumTag]) != 0 {
		// The wrong copies add the fingerprint of '', 0.
		t.Errorf("tag_sum moved: %s", c.Sums[sensorbatch.SumTag])
	}
	if c.Sums[sensorbatch.SumValue].Cmp(exp.Sums[sensorbatch.SumValue]) == 0 {
		t.Error("the disagreeing copies did not move value_sum")
	}

	// Between repetitions the table is emptied; at the end it is dropped.
	s.run(q.Truncate())
	if got := s.uints(q.Count()); got[0] != 0 {
		t.Errorf("%d rows after %s", got[0], q.Truncate())
	}
	s.run(q.Drop())
	if got := s.uints(q.Exists()); got[0] != 0 {
		t.Errorf("the table exists after %s", q.Drop())
	}

	// The ingest ceiling: a scratch database of its own, the table made
	// there from the same DDL, filled, emptied, dropped with the database.
	scratch := db + "_ceiling"
	sq, err := SQLFor(scratch + "." + wl.Table.Name)
	if err != nil {
		t.Fatal(err)
	}
	s.run(CreateDatabase(scratch), "USE "+scratch, sq.Drop(), wl.Table.DDL, sq.Truncate())
	s.insertRows(sq, k, 0, 10, nil)
	if got := s.uints(sq.Count()); got[0] == 0 {
		t.Error("the ceiling's inserts landed nothing")
	}
	s.run(sq.Truncate(), DropDatabase(scratch))
	if got := s.uints(sq.Exists()); got[0] != 0 {
		t.Errorf("the scratch table exists after %s", DropDatabase(scratch))
	}
}

// json-rows on bench-96c (kafka-connect's and vector's json-rows variants):
// its table, with kind a LowCardinality(String), made and read back, the
// prefill's messages inserted as they are (JSON rows), copies among them,
// and the gates' counts and checksum, which must be the closed form.
func TestJSONRowsSinkStatementsOnClickHouse26(t *testing.T) {
	wl, db := hosted(t, "bench-96c", "json-rows")
	s := session26{t, testenv.ChDB(t, chdb.Options{})}
	q, err := SQLFor(db + "." + wl.Table.Name)
	if err != nil {
		t.Fatal(err)
	}
	const messages = 4000
	spec := workloads.JSONRowsSpec(wl, messages)
	exp, err := spec.Expect(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if def := s.prepare(db, q, wl.Table.DDL); !strings.Contains(def, "`kind` LowCardinality(String)") {
		t.Errorf("%s:\n%s", q.ShowCreate(), def)
	}
	insert := func(first, n int64) {
		t.Helper()
		b := []byte(q.Insert(jsonrows.Columns) + " FORMAT JSONEachRow\n")
		for i := first; i < first+n; i++ {
			if b, err = spec.AppendMessage(b, i); err != nil {
				t.Fatal(err)
			}
		}
		s.run(string(b))
	}
	insert(0, messages)
	if got := s.uints(q.Count()); got[0] != exp.Rows {
		t.Errorf("%s = %d; %d rows landed", q.Count(), got[0], exp.Rows)
	}
	sums, o := WorkloadChecksum(wl, messages, false, 0)
	sameAsClosedForm(t, "every row", s.checksum(q, sums, o), exp)

	insert(100, 50)
	if got := s.uints(q.Counts(wl.Table.Identity)); got[1] != exp.Rows || got[0] <= exp.Rows {
		t.Errorf("%s = %v with copies; want more than %d rows, %d distinct", q.Counts(wl.Table.Identity), got, exp.Rows, exp.Rows)
	}
	sums, o = WorkloadChecksum(wl, messages, true, 1000*int64(wl.RowsPerMessage))
	if n := len(q.Checksum(sums, o)); n != 4 {
		t.Errorf("%d checksum queries over the distinct rows of %d messages at 1000 a query; want 4", n, messages)
	}
	sameAsClosedForm(t, "distinct rows over copies", s.checksum(q, sums, o), exp)
	s.run(q.Truncate(), q.Drop())
}
