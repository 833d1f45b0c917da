package chstore

import (
	"context"
	"math/big"
	"os"
	"strings"
	"testing"

	sensorbatch "spatec.dev/spatec/workloads/sensor-batch"
)

// sensorSums are the sensor-batch checksum's sums as local-containers
// declares them for 18.16 (the workload's CUE with its timestamps read as
// the integers 18.16 stores).
var sensorSums = []SumSpec{
	{Name: sensorbatch.SumValue, SQL: "value"},
	{Name: sensorbatch.SumValueScaled, SQL: "value_scaled"},
	{Name: sensorbatch.SumSensor, SQL: "sensor", Fingerprint: true},
	{Name: sensorbatch.SumRegion, SQL: "region", Fingerprint: true},
	{Name: sensorbatch.SumName, SQL: "name_upper", Fingerprint: true},
	{Name: sensorbatch.SumUnit, SQL: "unit", Fingerprint: true},
	{Name: sensorbatch.SumTagCount, SQL: "length(tags)"},
	{Name: sensorbatch.SumTag, SQL: "arrayStringConcat(tags)", Fingerprint: true},
	{Name: sensorbatch.SumBatchTS, SQL: "batch_ts"},
	{Name: sensorbatch.SumSendTS, SQL: "send_ts"},
	{Name: sensorbatch.SumNullQuality, SQL: "isNull(quality)"},
}

func sensorCorpus(t testing.TB) *sensorbatch.Corpus {
	t.Helper()
	k, err := sensorbatch.New(sensorbatch.Constants{
		EventsPerBatch: 100, Sensors: 1024, Names: 32, Tags: 16,
		Units:        []string{"count", "bytes", "ms", "drop", "ratio", "celsius", "volts", "rpm"},
		BaseTSMillis: 1_772_000_000_000,
	}, sensorbatch.Transform{DropUnit: "drop", QualityFloor: 0.2})
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// newSensorTable creates local-containers' 18.16 sensor_events.
func newSensorTable(t *testing.T, s *Store) string {
	t.Helper()
	ddl, err := os.ReadFile("../../envs/local-containers/sensor_events.sql")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Exec(testCtx(t), string(ddl)); err != nil {
		t.Fatal(err)
	}
	return "sensor_events"
}

func insertSensorBatches(t *testing.T, s *Store, k *sensorbatch.Corpus, table string, first, n uint64, mangle func(*sensorbatch.Row)) {
	t.Helper()
	var rows SensorRows
	var buf []sensorbatch.Row
	for b := first; b < first+n; b++ {
		buf = k.AppendRows(buf[:0], b)
		for _, r := range buf {
			if mangle != nil {
				mangle(&r)
			}
			rows.Add(r)
		}
	}
	if err := s.InsertSensorRows(testCtx(t), table, &rows); err != nil {
		t.Fatal(err)
	}
}

func checksumOpts(messages int64, distinct bool) ChecksumOptions {
	return ChecksumOptions{Identity: "(batch_id, event_seq)", Message: "batch_id", Messages: messages, PerQuery: 70, Distinct: distinct}
}

// The sums the server computes over the rows a correct transform lands
// are the generator's closed form, read a range of batches at a time, on
// 18.16 (no 128-bit integers); over duplicates only when asked for the
// distinct rows; and a transform that drops the tags misses them.
func TestChecksumOnTheServerIsTheClosedForm(t *testing.T) {
	s := openTestStore(t)
	table := newSensorTable(t, s)
	k := sensorCorpus(t)
	const batches = 300
	insertSensorBatches(t, s, k, table, 0, batches, nil)
	exp, err := k.Expect(context.Background(), batches, nil)
	if err != nil {
		t.Fatal(err)
	}
	same := func(what string, got Checksum) {
		t.Helper()
		if got.Rows != exp.Rows {
			t.Errorf("%s: %d rows summed; %d expected", what, got.Rows, exp.Rows)
		}
		for _, sp := range sensorSums {
			if got.Sums[sp.Name].Cmp(exp.Sums[sp.Name]) != 0 {
				t.Errorf("%s: %s = %s on the server; the closed form is %s", what, sp.Name, got.Sums[sp.Name], exp.Sums[sp.Name])
			}
		}
	}
	got, err := s.Checksum(testCtx(t), table, sensorSums, checksumOpts(batches, false))
	if err != nil {
		t.Fatal(err)
	}
	same("every row", got)
	if got.Queries != 5 {
		t.Errorf("%d queries for %d batches at 70 a query; want 5", got.Queries, batches)
	}

	// Batches 10..19 again: distinct rows are still the closed form.
	insertSensorBatches(t, s, k, table, 10, 10, nil)
	got, err = s.Checksum(testCtx(t), table, sensorSums, checksumOpts(batches, true))
	if err != nil {
		t.Fatal(err)
	}
	same("distinct rows over duplicates", got)
	got, err = s.Checksum(testCtx(t), table, sensorSums, checksumOpts(batches, false))
	if err != nil {
		t.Fatal(err)
	}
	if got.Sums[sensorbatch.SumValue].Cmp(exp.Sums[sensorbatch.SumValue]) == 0 {
		t.Error("with duplicates, the sum over every row still equals the distinct rows' sum")
	}

	// A copy of batch 20 without its tags: the distinct rows now disagree.
	insertSensorBatches(t, s, k, table, 20, 1, func(r *sensorbatch.Row) { r.Tags = nil })
	got, err = s.Checksum(testCtx(t), table, sensorSums, checksumOpts(batches, true))
	if err != nil {
		t.Fatal(err)
	}
	if got.Rows <= exp.Rows {
		t.Errorf("two copies of a row that disagree count once (%d rows summed, %d expected)", got.Rows, exp.Rows)
	}
	if got.Sums[sensorbatch.SumTag].Cmp(exp.Sums[sensorbatch.SumTag]) != 0 {
		// The wrong copies add a fingerprint of '' (0): the tag sum is
		// unchanged, but the tag count's rows are not.
		t.Errorf("tag_sum moved: %s", got.Sums[sensorbatch.SumTag])
	}
	if got.Sums[sensorbatch.SumValue].Cmp(exp.Sums[sensorbatch.SumValue]) == 0 {
		t.Error("the disagreeing copies did not move value_sum")
	}
}

// A negative integer is summed exactly: its halves are read as the
// unsigned two's complement, and each negative takes 2^64 back.
func TestChecksumSumsNegatives(t *testing.T) {
	s := openTestStore(t)
	if err := s.Exec(testCtx(t), "CREATE TABLE n (id UInt64, v Int64) ENGINE = MergeTree ORDER BY id"); err != nil {
		t.Fatal(err)
	}
	vals := []int64{-9_000_000_000_000_000_000, 9_000_000_000_000_000_000, 9_000_000_000_000_000_000, -1, 5}
	var ids []uint64
	for i := range vals {
		ids = append(ids, uint64(i))
	}
	batch, err := s.conn.PrepareBatch(testCtx(t), "INSERT INTO n (id, v)")
	if err != nil {
		t.Fatal(err)
	}
	if err := batch.Column(0).Append(ids); err != nil {
		t.Fatal(err)
	}
	if err := batch.Column(1).Append(vals); err != nil {
		t.Fatal(err)
	}
	if err := batch.Send(); err != nil {
		t.Fatal(err)
	}
	got, err := s.Checksum(testCtx(t), "n", []SumSpec{{Name: "v", SQL: "v"}}, ChecksumOptions{Identity: "id", Messages: 1, PerQuery: 1})
	if err != nil {
		t.Fatal(err)
	}
	want := new(big.Int)
	for _, v := range vals {
		want.Add(want, big.NewInt(v))
	}
	if got.Sums["v"].Cmp(want) != 0 {
		t.Fatalf("sum = %s; want %s", got.Sums["v"], want)
	}
}

func TestChecksumQuery(t *testing.T) {
	q := checksumQuery("db.t", []SumSpec{{Name: "a", SQL: "x"}, {Name: "b", SQL: "y", Fingerprint: true}}, ChecksumOptions{Identity: "id", Message: "id", Distinct: true}, 10, 20)
	for _, want := range []string{"SELECT DISTINCT id AS _identity, x AS _s0, CAST(y AS String) AS _s1 FROM db.t WHERE (id) >= 10 AND (id) < 20",
		"reinterpretAsUInt64(reverse(_s1))", "toUInt64(sum(_s0 < 0))"} {
		if !strings.Contains(q, want) {
			t.Errorf("query %q lacks %q", q, want)
		}
	}
}
