package dev.spatec.flink;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;

import org.apache.flink.api.connector.sink2.SinkWriter;
import org.apache.flink.connector.base.sink.writer.ElementConverter;

/**
 * A row as ClickHouse's RowBinary format carries it, in the table's column
 * order: integers little-endian, strings and arrays prefixed by their
 * length as a LEB128 varint, a Nullable by a byte that is 1 for null. The
 * bytes are the same whether the table types a string LowCardinality or
 * not, and a timestamp DateTime64 or Int64, so one encoding serves every
 * ClickHouse version's table.
 */
public final class RowBinary implements ElementConverter<SensorRow, byte[]> {
    private static final long serialVersionUID = 1L;

    /** The columns this encoding writes, in order. */
    public static final String[] COLUMNS = {
        "batch_id", "event_seq", "sensor", "region", "name_upper", "unit",
        "value", "value_scaled", "quality", "tags", "batch_ts", "send_ts",
    };

    @Override
    public byte[] apply(SensorRow row, SinkWriter.Context context) {
        return encode(row);
    }

    /** The row's RowBinary bytes. */
    public static byte[] encode(SensorRow r) {
        Out out = new Out();
        out.int64(r.batchId);
        out.int16(r.eventSeq);
        out.string(r.sensor);
        out.string(r.region);
        out.string(r.nameUpper);
        out.string(r.unit);
        out.int64(r.value);
        out.int64(r.valueScaled);
        if (r.quality == null) {
            out.write(1);
        } else {
            out.write(0);
            out.int64(Double.doubleToRawLongBits(r.quality));
        }
        out.varint(r.tags.size());
        for (String t : r.tags) {
            out.string(t);
        }
        out.int64(r.batchTsMs);
        out.int64(r.sendTsUs);
        return out.toByteArray();
    }

    /** A byte buffer with RowBinary's primitives. */
    private static final class Out extends ByteArrayOutputStream {
        Out() {
            super(128);
        }

        void int16(int v) {
            write(v);
            write(v >>> 8);
        }

        void int64(long v) {
            for (int i = 0; i < 8; i++) {
                write((int) (v >>> (8 * i)));
            }
        }

        void varint(long v) {
            while ((v & ~0x7FL) != 0) {
                write((int) ((v & 0x7F) | 0x80));
                v >>>= 7;
            }
            write((int) v);
        }

        void string(String s) {
            byte[] b = s.getBytes(StandardCharsets.UTF_8);
            varint(b.length);
            write(b, 0, b.length);
        }
    }
}
