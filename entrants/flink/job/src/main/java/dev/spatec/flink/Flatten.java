package dev.spatec.flink;

import java.util.ArrayList;
import java.util.List;

import org.apache.avro.Schema;
import org.apache.avro.generic.GenericRecord;
import org.apache.flink.api.common.functions.FlatMapFunction;
import org.apache.flink.util.Collector;

/**
 * The workload's pipeline logic in Flink's terms: one decoded SensorBatch
 * in, the rows the transform keeps out. In order: a reading in the drop unit
 * is dropped; one whose quality is present and below the floor is dropped; a
 * null region becomes ""; value_scaled and the upper-cased name are derived.
 */
public final class Flatten implements FlatMapFunction<GenericRecord, SensorRow> {
    private static final long serialVersionUID = 1L;

    private final Transform transform;

    /** A flatten with the transform's parameters. */
    public Flatten(Transform transform) {
        this.transform = transform;
    }

    /**
     * Checks that the schema's fields sit where this class reads them, so that
     * a schema whose fields moved fails the job before it starts, not with
     * wrong rows.
     */
    public static void checkFields(Schema batch) {
        expect(batch, "batch_id", "sensor", "region", "batch_ts_ms", "send_ts_us", "events");
        expect(batch.getField("events").schema().getElementType(), "seq", "name", "unit", "value", "quality", "tags");
    }

    private static void expect(Schema record, String... names) {
        for (int i = 0; i < names.length; i++) {
            String got = record.getFields().size() > i ? record.getFields().get(i).name() : "nothing";
            if (!got.equals(names[i])) {
                throw new IllegalStateException(record.getName() + "'s field " + i + " is " + got + ", not " + names[i]
                        + ": not the workload's schema");
            }
        }
    }

    @Override
    public void flatMap(GenericRecord batch, Collector<SensorRow> out) {
        long batchId = (Long) batch.get(0);
        String sensor = batch.get(1).toString();
        Object region = batch.get(2);
        String regionOut = region == null ? "" : region.toString();
        long batchTs = (Long) batch.get(3);
        long sendTs = (Long) batch.get(4);
        for (Object o : (List<?>) batch.get(5)) {
            GenericRecord event = (GenericRecord) o;
            String unit = event.get(2).toString();
            if (unit.equals(transform.dropUnit())) {
                continue;
            }
            Double quality = (Double) event.get(4);
            if (quality != null && quality < transform.qualityFloor()) {
                continue;
            }
            int seq = (Integer) event.get(0);
            long value = (Long) event.get(3);
            List<?> tagsIn = (List<?>) event.get(5);
            List<String> tags = new ArrayList<>(tagsIn.size());
            for (Object t : tagsIn) {
                tags.add(t.toString());
            }
            SensorRow row = new SensorRow();
            row.batchId = batchId;
            row.eventSeq = seq;
            row.sensor = sensor;
            row.region = regionOut;
            row.nameUpper = asciiUpper(event.get(1).toString());
            row.unit = unit;
            row.value = value;
            row.valueScaled = value * 1000 / (seq + 1);
            row.quality = quality;
            row.tags = tags;
            row.batchTsMs = batchTs;
            row.sendTsUs = sendTs;
            out.collect(row);
        }
    }

    /**
     * Upper-cases the ASCII letters alone: String.toUpperCase is locale- and
     * Unicode-aware (ß becomes SS), which is not the workload's operation.
     */
    static String asciiUpper(String s) {
        char[] c = s.toCharArray();
        for (int i = 0; i < c.length; i++) {
            if (c[i] >= 'a' && c[i] <= 'z') {
                c[i] -= 'a' - 'A';
            }
        }
        return new String(c);
    }
}
