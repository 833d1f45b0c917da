package chstore

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"

	"spatec.dev/spatec/workloads/json-rows"
)

// WriteNative writes rows as one block of ClickHouse's Native format, the
// input of `clickhouse-client --query "INSERT INTO t (columns) FORMAT
// Native"`. It exists so that the ingest ceiling can be compared with the
// server's own client inserting exactly the same rows in the same blocks.
//
// A Native file is a sequence of blocks, each: the column count and row
// count as unsigned LEB128, then per column its name, its type, and its
// values (fixed-width little-endian numbers; strings as length and bytes).
func WriteNative(w io.Writer, rows *Rows) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	var tmp [binary.MaxVarintLen64]byte
	uvarint := func(x uint64) { bw.Write(tmp[:binary.PutUvarint(tmp[:], x)]) }
	str := func(s string) { uvarint(uint64(len(s))); bw.WriteString(s) }
	header := func(name, typ string) { str(name); str(typ) }

	n := rows.Len()
	if len(rows.TS) != n || len(rows.UserID) != n || len(rows.Kind) != n || len(rows.Value) != n || len(rows.Payload) != n {
		return fmt.Errorf("writing a Native block: columns have different lengths (%d ids, %d ts, %d user ids, %d kinds, %d values, %d payloads)",
			n, len(rows.TS), len(rows.UserID), len(rows.Kind), len(rows.Value), len(rows.Payload))
	}
	uvarint(6)
	uvarint(uint64(n))
	header("id", "UInt64")
	for _, v := range rows.ID {
		bw.Write(binary.LittleEndian.AppendUint64(tmp[:0], v))
	}
	header("ts", "DateTime")
	for _, v := range rows.TS {
		bw.Write(binary.LittleEndian.AppendUint32(tmp[:0], uint32(v)))
	}
	header("user_id", "UInt32")
	for _, v := range rows.UserID {
		bw.Write(binary.LittleEndian.AppendUint32(tmp[:0], v))
	}
	header("kind", "String")
	for _, v := range rows.Kind {
		str(v)
	}
	header("value", "Int64")
	for _, v := range rows.Value {
		bw.Write(binary.LittleEndian.AppendUint64(tmp[:0], uint64(v)))
	}
	header("payload", "String")
	for _, v := range rows.Payload {
		str(v)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("writing a Native block of %d rows: %w", n, err)
	}
	return nil
}

// WriteNativeDataset writes every row of spec as Native blocks of about
// batchRows rows, the blocks the ingest ceiling inserts: piped into
// `clickhouse-client --query "INSERT INTO t (id, ts, user_id, kind, value,
// payload) FORMAT Native"` it inserts exactly the rows spatec would.
func WriteNativeDataset(w io.Writer, spec jsonrows.Spec, batchRows int) error {
	if err := spec.Validate(); err != nil {
		return err
	}
	perBatch := max(int64(batchRows)/int64(spec.EventsPerMessage), 1)
	var r Rows
	for first := int64(0); first < spec.Messages; first += perBatch {
		r.Reset()
		if err := r.AppendMessages(spec, first, min(perBatch, spec.Messages-first)); err != nil {
			return err
		}
		if err := WriteNative(w, &r); err != nil {
			return err
		}
	}
	return nil
}
