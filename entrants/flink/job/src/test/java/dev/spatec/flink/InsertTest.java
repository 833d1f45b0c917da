package dev.spatec.flink;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

import com.clickhouse.client.api.Client;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * What an insert of the sink puts on the wire, as ClickHouse's HTTP
 * interface would receive it: the sink's own insert path, through
 * ClickHouse's Java client, against a loopback server that records each
 * request and answers as ClickHouse answers an insert.
 */
class InsertTest {
    /** One request as the server saw it: its URL parameters and body. */
    private record Request(String method, Map<String, String> params, byte[] body) {}

    private HttpServer server;
    private final List<Request> requests = new CopyOnWriteArrayList<>();

    @BeforeEach
    void start() throws IOException {
        server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        server.createContext("/", this::answer);
        server.start();
    }

    @AfterEach
    void stop() {
        server.stop(0);
    }

    private void answer(HttpExchange ex) throws IOException {
        byte[] body;
        try (InputStream in = ex.getRequestBody()) {
            body = in.readAllBytes();
        }
        requests.add(new Request(ex.getRequestMethod(), params(ex.getRequestURI().getRawQuery()), body));
        ex.getResponseHeaders().add("X-ClickHouse-Summary",
                "{\"read_rows\":\"0\",\"read_bytes\":\"0\",\"written_rows\":\"2\",\"written_bytes\":\"" + body.length + "\"}");
        ex.sendResponseHeaders(200, -1);
        ex.close();
    }

    private static Map<String, String> params(String raw) {
        Map<String, String> out = new LinkedHashMap<>();
        if (raw == null) {
            return out;
        }
        for (String kv : raw.split("&")) {
            int eq = kv.indexOf('=');
            String k = URLDecoder.decode(eq < 0 ? kv : kv.substring(0, eq), StandardCharsets.UTF_8);
            String v = eq < 0 ? "" : URLDecoder.decode(kv.substring(eq + 1), StandardCharsets.UTF_8);
            out.put(k, v);
        }
        return out;
    }

    /** The plan's variables, pointing the sink at the loopback server. */
    private Map<String, String> env(String asyncInsert) {
        Map<String, String> env = new HashMap<>(Map.ofEntries(
                Map.entry("SPATEC_BROKERS", "broker:9092"),
                Map.entry("SPATEC_TOPIC", "spatec-sensor-batches"),
                Map.entry("SPATEC_GROUP", "spatec-flink"),
                Map.entry("SPATEC_REGISTRY", "http://registry:8081"),
                Map.entry("SPATEC_CLICKHOUSE_URL", "http://127.0.0.1:" + server.getAddress().getPort()),
                Map.entry("SPATEC_CLICKHOUSE_USER", "default"),
                Map.entry("SPATEC_CLICKHOUSE_PASSWORD", "secret"),
                Map.entry("SPATEC_DATABASE", "spatec"),
                Map.entry("SPATEC_TABLE", "sensor_events"),
                Map.entry("SPATEC_COLUMNS", String.join(",", RowBinary.COLUMNS)),
                Map.entry("SPATEC_DROP_UNIT", "F"),
                Map.entry("SPATEC_QUALITY_FLOOR", "0.2"),
                Map.entry("SPATEC_PARALLELISM", "8"),
                Map.entry("SPATEC_SINK_BATCH_ROWS", "50000"),
                Map.entry("SPATEC_SINK_BUFFERED_ROWS", "100000"),
                Map.entry("SPATEC_SINK_BATCH_BYTES", "16777216"),
                Map.entry("SPATEC_SINK_LINGER_MS", "1000"),
                Map.entry("SPATEC_SINK_IN_FLIGHT", "2")));
        if (asyncInsert != null) {
            env.put("SPATEC_SINK_ASYNC_INSERT", asyncInsert);
        }
        return env;
    }

    /** Sends one insert of body through the sink's path; the one request the server saw. */
    private Request insertOnce(Settings settings, byte[] body) throws Exception {
        try (Client client = ClickHouseSink.client(settings)) {
            ClickHouseSink.insert(client, settings, body).get(30, TimeUnit.SECONDS).close();
        }
        List<Request> inserts = requests.stream().filter(r -> r.params().getOrDefault("query", "").startsWith("INSERT")).toList();
        assertEquals(1, inserts.size(), "inserts the server saw: " + requests);
        return inserts.get(0);
    }

    @Test
    void aSynchronousInsertCarriesAsyncInsertZero() throws Exception {
        byte[] body = {1, 2, 3, 4};
        Request r = insertOnce(Settings.from(env("0")), body);
        assertEquals("POST", r.method());
        assertEquals("0", r.params().get("async_insert"), "async_insert in " + r.params());
        String query = r.params().get("query");
        assertTrue(query.startsWith("INSERT INTO spatec.sensor_events"), query);
        assertTrue(query.endsWith("FORMAT RowBinary"), query);
        assertArrayEquals(body, r.body());
    }

    @Test
    void omitSendsNoAsyncInsert() throws Exception {
        Request r = insertOnce(Settings.from(env("omit")), new byte[] {1});
        assertFalse(r.params().containsKey("async_insert"), "async_insert in " + r.params());
        assertTrue(r.params().get("query").startsWith("INSERT INTO spatec.sensor_events"), r.params().toString());
    }

    @Test
    void theSettingIsThePlans() {
        assertEquals(Map.of("async_insert", "0"), Settings.from(env("0")).insertSettings);
        assertEquals(Map.of("async_insert", "1"), Settings.from(env("1")).insertSettings);
        assertEquals(Map.of(), Settings.from(env("omit")).insertSettings);
        IllegalArgumentException missing = assertThrows(IllegalArgumentException.class, () -> Settings.from(env(null)));
        assertTrue(missing.getMessage().contains("SPATEC_SINK_ASYNC_INSERT"), missing.getMessage());
        for (String bad : List.of("false", "2", "OMIT", "")) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Settings.from(env(bad)), bad);
            assertTrue(e.getMessage().contains("SPATEC_SINK_ASYNC_INSERT"), e.getMessage());
        }
    }
}
