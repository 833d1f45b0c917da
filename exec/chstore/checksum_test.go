package chstore

import (
	"context"
	"math/big"
	"strings"
	"testing"

	"spatec.dev/spatec/schema"
	"spatec.dev/spatec/workloads"
	sensorbatch "spatec.dev/spatec/workloads/sensor-batch"
)

// sensorTable creates sensor_events as local-containers declares it for
// ClickHouse 18.16, and returns the workload as that environment hosts it:
// its checksum reads the timestamps as the integers 18.16 stores.
func sensorTable(t *testing.T, s *Store) (schema.Workload, string) {
	t.Helper()
	wl, _ := hostedWorkload(t, "local-containers")
	if err := s.Exec(testCtx(t), wl.Table.DDL); err != nil {
		t.Fatal(err)
	}
	return wl, wl.Table.Name
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

// The sums the server computes over the rows a correct transform lands
// are the generator's closed form, on 18.16 (no 128-bit integers), with
// the checksum local-containers' workload declares, read as the gates read
// it: in one query over every row, or a range of batches at a time over
// the distinct rows when there are duplicates; and a transform that drops
// the tags misses them.
func TestChecksumOnTheServerIsTheClosedForm(t *testing.T) {
	s := openTestStore(t)
	wl, table := sensorTable(t, s)
	k, err := workloads.SensorBatch(wl)
	if err != nil {
		t.Fatal(err)
	}
	const batches = 300
	insertSensorBatches(t, s, k, table, 0, batches, nil)
	exp, err := k.Expect(context.Background(), batches, nil)
	if err != nil {
		t.Fatal(err)
	}
	sums, every := WorkloadChecksum(wl, batches, false, 0)
	_, distinct := WorkloadChecksum(wl, batches, true, 70*int64(wl.RowsPerMessage))
	got, err := s.Checksum(testCtx(t), table, sums, every)
	if err != nil {
		t.Fatal(err)
	}
	sameAsClosedForm(t, "every row", got, exp)
	if got.Queries != 1 {
		t.Errorf("%d queries over every row; want 1", got.Queries)
	}

	// Batches 10..19 again: distinct rows are still the closed form.
	insertSensorBatches(t, s, k, table, 10, 10, nil)
	got, err = s.Checksum(testCtx(t), table, sums, distinct)
	if err != nil {
		t.Fatal(err)
	}
	sameAsClosedForm(t, "distinct rows over duplicates", got, exp)
	if got.Queries != 5 {
		t.Errorf("%d queries for %d batches at 70 a query; want 5", got.Queries, batches)
	}
	got, err = s.Checksum(testCtx(t), table, sums, every)
	if err != nil {
		t.Fatal(err)
	}
	if got.Sums[sensorbatch.SumValue].Cmp(exp.Sums[sensorbatch.SumValue]) == 0 {
		t.Error("with duplicates, the sum over every row still equals the distinct rows' sum")
	}

	// A copy of batch 20 without its tags: the distinct rows now disagree.
	insertSensorBatches(t, s, k, table, 20, 1, func(r *sensorbatch.Row) { r.Tags = nil })
	got, err = s.Checksum(testCtx(t), table, sums, distinct)
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
