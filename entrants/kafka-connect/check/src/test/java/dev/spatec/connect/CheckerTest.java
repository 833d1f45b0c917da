package dev.spatec.connect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class CheckerTest {
    /** A worker as the arm writes it for the Avro path. */
    private static Map<String, String> worker() {
        Map<String, String> w = new HashMap<>();
        w.put("bootstrap.servers", "broker:9092");
        w.put("key.converter", "org.apache.kafka.connect.converters.ByteArrayConverter");
        w.put("value.converter", "io.confluent.connect.avro.AvroConverter");
        w.put("value.converter.schema.registry.url", "http://registry:8081");
        w.put("offset.storage.file.filename", "/tmp/connect.offsets");
        w.put("offset.flush.interval.ms", "5000");
        w.put("consumer.auto.offset.reset", "earliest");
        w.put("consumer.max.poll.records", "2000");
        w.put("consumer.max.partition.fetch.bytes", "8388608");
        w.put("plugin.path", "/opt/kafka/plugins");
        w.put("listeners", "http://0.0.0.0:8083");
        return w;
    }

    /** ClickHouse's sink connector as the arm writes it for the JSON path. */
    private static Map<String, String> connector() {
        Map<String, String> c = new HashMap<>();
        c.put("name", "spatec-clickhouse-sink");
        c.put("connector.class", "com.clickhouse.kafka.connect.ClickHouseSinkConnector");
        c.put("tasks.max", "8");
        c.put("topics", "events");
        c.put("topic2TableMap", "events=events");
        c.put("hostname", "clickhouse");
        c.put("port", "8123");
        c.put("ssl", "false");
        c.put("username", "default");
        c.put("password", "secret");
        c.put("database", "bench");
        c.put("exactlyOnce", "false");
        c.put("bufferCount", "2000");
        c.put("bufferFlushTime", "1000");
        c.put("ignorePartitionsWhenBatching", "false");
        c.put("key.converter", "org.apache.kafka.connect.converters.ByteArrayConverter");
        c.put("value.converter", "org.apache.kafka.connect.json.JsonConverter");
        c.put("value.converter.schemas.enable", "false");
        return c;
    }

    private static List<String> check(Map<String, String> worker, Map<String, String> connector) {
        return Checker.check("worker.properties", worker, "sink.properties", connector).stream()
                .map(Checker.Problem::toString)
                .collect(Collectors.toList());
    }

    @Test
    void theArmsSettingsPass() {
        assertEquals(List.of(), check(worker(), connector()));
    }

    @Test
    void transformationsAndOverridesAreKnownByTheirPluginsDefinitions() {
        Map<String, String> c = connector();
        c.put("transforms", "stamp");
        c.put("transforms.stamp.type", "org.apache.kafka.connect.transforms.InsertField$Value");
        c.put("transforms.stamp.timestamp.field", "ts");
        c.put("consumer.override.max.poll.records", "500");
        c.put("errors.tolerance", "all");
        assertEquals(List.of(), check(worker(), c));
    }

    @Test
    void aMisspeltWorkerKeyFails() {
        Map<String, String> w = worker();
        w.remove("consumer.max.poll.records");
        w.put("consumer.max.pol.records", "2000");
        List<String> got = check(w, connector());
        assertEquals(1, got.size(), got.toString());
        assertTrue(got.get(0).startsWith("worker.properties: consumer.max.pol.records: no definition"), got.toString());
    }

    @Test
    void aMisspeltConnectorKeyFails() {
        Map<String, String> c = connector();
        c.remove("bufferCount");
        c.put("bufferCont", "2000");
        List<String> got = check(worker(), c);
        assertEquals(1, got.size(), got.toString());
        assertTrue(got.get(0).startsWith("sink.properties: bufferCont: no definition"), got.toString());
    }

    @Test
    void aMisspeltConverterKeyFails() {
        Map<String, String> w = worker();
        w.remove("value.converter.schema.registry.url");
        w.put("value.converter.schema.registry.urls", "http://registry:8081");
        List<String> got = check(w, connector());
        assertEquals(List.of(
                "worker.properties: value.converter.schema.registry.url: "
                        + "Missing required configuration \"schema.registry.url\" which has no default value.",
                "worker.properties: value.converter.schema.registry.urls: no definition the runtime hands this key "
                        + "to knows it (Connect would only log that it was supplied but is not used)"), got);
    }

    @Test
    void aWrongTypeFailsWithConnectsMessage() {
        Map<String, String> c = connector();
        c.put("tasks.max", "eight");
        List<String> got = check(worker(), c);
        assertTrue(got.contains("sink.properties: tasks.max: Invalid value eight for configuration tasks.max: "
                + "Not a number of type INT"), got.toString());
    }

    @Test
    void aFailedValidatorFailsWithItsMessage() {
        Map<String, String> w = worker();
        w.put("consumer.max.poll.records", "0");
        Map<String, String> c = connector();
        c.put("port", "99999");
        c.put("errors.tolerance", "some");
        List<String> got = check(w, c);
        assertTrue(got.contains("worker.properties: consumer.max.poll.records: Invalid value 0 for configuration "
                + "max.poll.records: Value must be at least 1"), got.toString());
        assertTrue(got.contains("sink.properties: port: Invalid value 99999 for configuration port: "
                + "Value must be no more than 65535"), got.toString());
        assertTrue(got.contains("sink.properties: errors.tolerance: Invalid value some for configuration "
                + "errors.tolerance: String must be one of: none, all"), got.toString());
    }

    @Test
    void clientOverridesAreHeldToTheWorkersPolicy() {
        Map<String, String> c = connector();
        c.put("consumer.override.max.poll.records", "500");

        Map<String, String> w = worker();
        w.put("connector.client.config.override.policy", "None");
        assertEquals(List.of("sink.properties: consumer.override.max.poll.records: The 'None' policy does not allow "
                + "'max.poll.records' to be overridden in the connector configuration."), check(w, c));

        w.put("connector.client.config.override.policy", "Allowlist");
        w.put("connector.client.config.override.allowlist", "max.poll.records");
        assertEquals(List.of(), check(w, c));
    }

    @Test
    void theMainReadsTheFilesAndExitsNonZeroOnAProblem(@TempDir Path dir) throws IOException {
        Path w = dir.resolve("worker.properties");
        Path c = dir.resolve("sink.properties");
        Files.writeString(w, properties(worker()));
        Map<String, String> bad = connector();
        bad.remove("tasks.max");
        bad.put("task.max", "8");
        Files.writeString(c, properties(bad));

        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int code = Check.run(new String[] {w.toString(), c.toString()},
                new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));
        assertEquals(1, code, err.toString(StandardCharsets.UTF_8));
        assertEquals(c + ": task.max: no definition the runtime hands this key to knows it "
                + "(Connect would only log that it was supplied but is not used)\n", out.toString(StandardCharsets.UTF_8));

        Files.writeString(c, properties(connector()));
        out.reset();
        code = Check.run(new String[] {w.toString(), c.toString()},
                new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));
        assertEquals(0, code, out.toString(StandardCharsets.UTF_8));
    }

    private static String properties(Map<String, String> props) {
        StringBuilder b = new StringBuilder();
        props.forEach((k, v) -> b.append(k).append('=').append(v).append('\n'));
        return b.toString();
    }
}
