package chstore

import (
	"context"
	"fmt"
	"strings"
	"time"

	sensorbatch "spatec.dev/spatec/workloads/sensor-batch"
)

// SensorRows is a columnar buffer of sensor_events rows, in the table's
// column order (sensorbatch.Columns): the shape a native insert sends.
type SensorRows struct {
	BatchID     []uint64
	EventSeq    []uint16
	Sensor      []string
	Region      []string
	NameUpper   []string
	Unit        []string
	Value       []int64
	ValueScaled []int64
	Quality     []*float64
	Tags        [][]string
	BatchTSMs   []int64
	SendTSUs    []int64
}

// Add appends one row.
func (r *SensorRows) Add(row sensorbatch.Row) {
	r.BatchID = append(r.BatchID, row.BatchID)
	r.EventSeq = append(r.EventSeq, row.EventSeq)
	r.Sensor = append(r.Sensor, row.Sensor)
	r.Region = append(r.Region, row.Region)
	r.NameUpper = append(r.NameUpper, row.NameUpper)
	r.Unit = append(r.Unit, row.Unit)
	r.Value = append(r.Value, row.Value)
	r.ValueScaled = append(r.ValueScaled, row.ValueScaled)
	r.Quality = append(r.Quality, row.Quality)
	r.Tags = append(r.Tags, row.Tags)
	r.BatchTSMs = append(r.BatchTSMs, row.BatchTSMs)
	r.SendTSUs = append(r.SendTSUs, row.SendTSUs)
}

// Len is the rows buffered.
func (r *SensorRows) Len() int { return len(r.BatchID) }

// Reset empties the buffer, keeping its storage.
func (r *SensorRows) Reset() {
	*r = SensorRows{
		BatchID: r.BatchID[:0], EventSeq: r.EventSeq[:0], Sensor: r.Sensor[:0], Region: r.Region[:0],
		NameUpper: r.NameUpper[:0], Unit: r.Unit[:0], Value: r.Value[:0], ValueScaled: r.ValueScaled[:0],
		Quality: r.Quality[:0], Tags: r.Tags[:0], BatchTSMs: r.BatchTSMs[:0], SendTSUs: r.SendTSUs[:0],
	}
}

// InsertSensorRows sends rows to table as one native block. The timestamp
// columns are written as the table declares them: DateTime64 from the
// Unix milliseconds and microseconds, or, where the server has no
// DateTime64 (18.16), the integers themselves.
func (s *Store) InsertSensorRows(ctx context.Context, table string, rows *SensorRows) error {
	q, err := SQLFor(table)
	if err != nil {
		return err
	}
	batch, err := s.conn.PrepareBatch(ctx, q.Insert(strings.Join(sensorbatch.Columns, ", ")))
	if err != nil {
		return fmt.Errorf("preparing an insert into %s on ClickHouse at %s: %w", table, s.addr, err)
	}
	cols := []any{rows.BatchID, rows.EventSeq, rows.Sensor, rows.Region, rows.NameUpper, rows.Unit,
		rows.Value, rows.ValueScaled, rows.Quality, rows.Tags, rows.BatchTSMs, rows.SendTSUs}
	for i, c := range batch.Columns() {
		if !strings.HasPrefix(string(c.Type()), "DateTime64") {
			continue
		}
		// batch_ts and send_ts, by position.
		scale := map[int]time.Duration{10: time.Millisecond, 11: time.Microsecond}[i]
		if scale == 0 {
			continue
		}
		ints := cols[i].([]int64)
		ts := make([]time.Time, len(ints))
		for j, v := range ints {
			ts[j] = time.Unix(0, v*int64(scale)).UTC()
		}
		cols[i] = ts
	}
	for i, col := range cols {
		if err := batch.Column(i).Append(col); err != nil {
			batch.Abort()
			return fmt.Errorf("appending column %s of an insert into %s: %w", sensorbatch.Columns[i], table, err)
		}
	}
	if err := batch.Send(); err != nil {
		return fmt.Errorf("inserting %d rows into %s on ClickHouse at %s: %w", rows.Len(), table, s.addr, err)
	}
	return nil
}
