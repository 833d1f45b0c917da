package dev.spatec.flink;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericRecord;
import org.apache.flink.formats.avro.RegistryAvroDeserializationSchema;
import org.apache.flink.util.Collector;
import org.junit.jupiter.api.Test;

/**
 * The job's decode, flatten and transform against the workload's closed
 * form: the corpus spatec prefills (its first 24 batches, written by
 * `spatec corpus --messages` into workloads/sensor-batch/testdata/arms),
 * decoded by Flink's Avro format through this job's coder, gives exactly the
 * rows and the checksum sums spatec expects.
 */
class ClosedFormTest {
    private static final Path ARMS = Path.of("../../../workloads/sensor-batch/testdata/arms");

    @Test
    void theCorpusLandsAsTheClosedFormSays() throws Exception {
        JsonNode expected = new ObjectMapper().readTree(ARMS.resolve("expected.json").toFile());
        Schema schema = SensorJob.workloadSchema();
        int schemaId = expected.get("schema_id").asInt();
        RegistryAvroDeserializationSchema<GenericRecord> decode = new RegistryAvroDeserializationSchema<>(
                GenericRecord.class, schema, () -> new RegistryCoder(id -> {
                    if (id != schemaId) {
                        throw new IOException("no schema " + id);
                    }
                    return schema;
                }));
        JsonNode t = expected.get("transform");
        Flatten flatten = new Flatten(new Transform(t.get("drop_unit").asText(), t.get("quality_floor").asDouble()));

        List<byte[]> messages = messages(Files.readAllBytes(ARMS.resolve("messages.bin")));
        assertEquals(expected.get("messages").asInt(), messages.size(), "messages");
        List<SensorRow> rows = new ArrayList<>();
        Collector<SensorRow> out = new Collector<>() {
            @Override
            public void collect(SensorRow r) {
                rows.add(r);
            }

            @Override
            public void close() {}
        };
        for (byte[] m : messages) {
            flatten.flatMap(decode.deserialize(m), out);
        }

        assertEquals(expected.get("expected_rows").asLong(), rows.size(), "rows after the transform");
        Map<String, BigInteger> want = new TreeMap<>();
        for (Iterator<Map.Entry<String, JsonNode>> it = expected.get("checksum").fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            want.put(e.getKey(), new BigInteger(e.getValue().asText()));
        }
        assertEquals(want, sums(rows));
    }

    /** The messages: each a big-endian u32 length, then the message as on the topic. */
    private static List<byte[]> messages(byte[] file) {
        ByteBuffer b = ByteBuffer.wrap(file);
        List<byte[]> out = new ArrayList<>();
        while (b.hasRemaining()) {
            byte[] m = new byte[b.getInt()];
            b.get(m);
            out.add(m);
        }
        return out;
    }

    /** The checksum's sums over rows, as workload.cue defines them in SQL. */
    private static Map<String, BigInteger> sums(List<SensorRow> rows) {
        Map<String, BigInteger> s = new TreeMap<>();
        for (SensorRow r : rows) {
            add(s, "value_sum", BigInteger.valueOf(r.value));
            add(s, "value_scaled_sum", BigInteger.valueOf(r.valueScaled));
            add(s, "sensor_sum", fingerprint(r.sensor));
            add(s, "region_sum", fingerprint(r.region));
            add(s, "name_sum", fingerprint(r.nameUpper));
            add(s, "unit_sum", fingerprint(r.unit));
            add(s, "tag_count_sum", BigInteger.valueOf(r.tags.size()));
            add(s, "tag_sum", fingerprint(String.join("", r.tags)));
            add(s, "batch_ts_sum", BigInteger.valueOf(r.batchTsMs));
            add(s, "send_ts_sum", BigInteger.valueOf(r.sendTsUs));
            add(s, "null_quality_rows", BigInteger.valueOf(r.quality == null ? 1 : 0));
        }
        return s;
    }

    private static void add(Map<String, BigInteger> s, String name, BigInteger v) {
        s.merge(name, v, BigInteger::add);
    }

    /**
     * reinterpretAsUInt64(s) + reinterpretAsUInt64(reverse(s)): the first eight
     * bytes and the last eight reversed, each little-endian and zero-padded.
     */
    private static BigInteger fingerprint(String str) {
        byte[] b = str.getBytes(StandardCharsets.UTF_8);
        byte[] head = new byte[8];
        byte[] tail = new byte[8];
        for (int i = 0; i < 8 && i < b.length; i++) {
            head[i] = b[i];
            tail[i] = b[b.length - 1 - i];
        }
        return unsigned(head).add(unsigned(tail));
    }

    private static BigInteger unsigned(byte[] le) {
        long v = ByteBuffer.wrap(le).order(ByteOrder.LITTLE_ENDIAN).getLong();
        return new BigInteger(Long.toUnsignedString(v));
    }
}
