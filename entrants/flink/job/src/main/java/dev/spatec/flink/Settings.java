package dev.spatec.flink;

import java.io.Serializable;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * What the job reads from its environment: where the broker, the registry
 * and ClickHouse are, the table, the transform's parameters, the sink's
 * batch shape and the settings its inserts carry. The plan sets every one; none has a default, since a default
 * here would be a second copy of the plan, free to drift from it.
 */
public final class Settings implements Serializable {
    private static final long serialVersionUID = 1L;

    /** SPATEC_SINK_ASYNC_INSERT's value that sends no async_insert at all. */
    static final String OMIT = "omit";

    /** The Kafka bootstrap address list. */
    public final String brokers;
    /** The workload's topic. */
    public final String topic;
    /** The consumer group whose offsets the job commits at checkpoints. */
    public final String group;
    /** The Confluent-compatible registry's base URL. */
    public final String registry;
    /** ClickHouse's HTTP interface, e.g. http://clickhouse:8123. */
    public final String clickhouse;
    /** The user the sink signs in as. */
    public final String user;
    /** That user's password. */
    public final String password;
    /** The database the table is in. */
    public final String database;
    /** The table the rows land in. */
    public final String table;
    /** The table's columns, in the order a row is written. */
    public final List<String> columns;
    /** The transform's parameters. */
    public final Transform transform;
    /** The parallelism the plan configured, which the job checks it runs at. */
    public final int parallelism;
    /** The sink's batch shape. */
    public final SinkShape sink;
    /**
     * The ClickHouse settings every insert carries, by name: async_insert
     * where the plan's ClickHouse has it, none where it does not.
     */
    public final Map<String, String> insertSettings;

    private Settings(Map<String, String> env) {
        brokers = need(env, "SPATEC_BROKERS");
        topic = need(env, "SPATEC_TOPIC");
        group = need(env, "SPATEC_GROUP");
        registry = need(env, "SPATEC_REGISTRY");
        clickhouse = need(env, "SPATEC_CLICKHOUSE_URL");
        user = need(env, "SPATEC_CLICKHOUSE_USER");
        password = env.getOrDefault("SPATEC_CLICKHOUSE_PASSWORD", "");
        database = need(env, "SPATEC_DATABASE");
        table = need(env, "SPATEC_TABLE");
        columns = List.copyOf(Arrays.asList(need(env, "SPATEC_COLUMNS").split(",")));
        transform = new Transform(need(env, "SPATEC_DROP_UNIT"), number(env, "SPATEC_QUALITY_FLOOR"));
        parallelism = count(env, "SPATEC_PARALLELISM");
        sink = new SinkShape(
                count(env, "SPATEC_SINK_BATCH_ROWS"),
                count(env, "SPATEC_SINK_BUFFERED_ROWS"),
                count(env, "SPATEC_SINK_BATCH_BYTES"),
                count(env, "SPATEC_SINK_LINGER_MS"),
                count(env, "SPATEC_SINK_IN_FLIGHT"));
        insertSettings = asyncInsert(env, "SPATEC_SINK_ASYNC_INSERT");
    }

    /** Reads the settings from the process environment. */
    public static Settings fromEnvironment() {
        return from(System.getenv());
    }

    /** Reads the settings from env; a missing or malformed one is an error naming it. */
    static Settings from(Map<String, String> env) {
        return new Settings(env);
    }

    private static String need(Map<String, String> env, String name) {
        String v = env.get(name);
        if (v == null || v.isEmpty()) {
            throw new IllegalArgumentException(name + " is not set; the plan sets it");
        }
        return v;
    }

    private static double number(Map<String, String> env, String name) {
        String v = need(env, name);
        try {
            return Double.parseDouble(v);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(name + "=\"" + v + "\" is not a number, such as 0.2", e);
        }
    }

    private static int count(Map<String, String> env, String name) {
        String v = need(env, name);
        try {
            int n = Integer.parseInt(v);
            if (n > 0) {
                return n;
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        throw new IllegalArgumentException(name + "=\"" + v + "\" is not a positive whole number");
    }

    /**
     * async_insert as the plan gives it: "0" or "1", ClickHouse's own
     * values, sent with every insert; or "omit" for a server that has no
     * such setting (before 21.11), which refuses an insert that names one.
     */
    private static Map<String, String> asyncInsert(Map<String, String> env, String name) {
        String v = need(env, name);
        if (v.equals(OMIT)) {
            return Map.of();
        }
        if (Set.of("0", "1").contains(v)) {
            return Map.of("async_insert", v);
        }
        throw new IllegalArgumentException(name + "=\"" + v + "\" is not 0, 1 or " + OMIT);
    }

    /**
     * The sink's batch shape, as Flink's asynchronous sink takes it.
     *
     * @param batchRows the most rows one insert carries
     * @param bufferedRows the most rows the writer holds before it blocks the stream
     * @param batchBytes the most bytes one insert carries
     * @param lingerMs how long a partial batch waits for more rows
     * @param inFlight how many inserts one writer has outstanding at once
     */
    public record SinkShape(int batchRows, int bufferedRows, int batchBytes, int lingerMs, int inFlight)
            implements Serializable {}
}
