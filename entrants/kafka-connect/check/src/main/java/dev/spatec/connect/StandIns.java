package dev.spatec.connect;

import static org.apache.kafka.common.config.ConfigDef.NO_DEFAULT_VALUE;

import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigDef.Importance;
import org.apache.kafka.common.config.ConfigDef.Range;
import org.apache.kafka.common.config.ConfigDef.Type;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.config.SaslConfigs;

/**
 * Stand-ins for the configuration definitions of the plugins the arm's
 * image carries in its plugin.path and Maven Central does not serve:
 * ClickHouse's sink connector (a GitHub release) and Confluent's Avro
 * converter (Confluent's own Maven repository). Their own ConfigDefs
 * cannot be loaded here, so each is transcribed below, key by key (name,
 * type, default, validator), from the source of the exact release the
 * harness pins; a new release of either is a new transcription.
 */
final class StandIns {
    private StandIns() {
    }

    /** What a stand-in stands for. */
    enum Kind {
        SINK_CONNECTOR,
        CONVERTER
    }

    /**
     * A plugin known by its class name alone: its kind, the definition
     * that stands in for its own, and where that definition was read.
     */
    record Plugin(Kind kind, ConfigDef definition, String source) {
    }

    /** The plugins this checker stands in for, by class name. */
    static final Map<String, Plugin> PLUGINS = Map.of(
            "com.clickhouse.kafka.connect.ClickHouseSinkConnector",
            new Plugin(Kind.SINK_CONNECTOR, clickHouseSinkV140(),
                    "ClickHouseSinkConfig.java of ClickHouse/clickhouse-kafka-connect at tag v1.4.0"),
            "io.confluent.connect.avro.AvroConverter",
            new Plugin(Kind.CONVERTER, confluentAvroConverterV830(),
                    "the definitions AvroConverter.configure parses, in confluentinc/schema-registry at tag v8.3.0"));

    /**
     * ClickHouse's sink connector, clickhouse-kafka-connect v1.4.0:
     * {@code ClickHouseSinkConfig.CONFIG}, transcribed from
     * src/main/java/com/clickhouse/kafka/connect/sink/ClickHouseSinkConfig.java
     * at tag v1.4.0 (commit eee0ec30b95bd1c091f1440d2f2d67276f32c297).
     * {@code ClickHouseSinkConnector.config()} returns it, and its
     * {@code validate} adds nothing to Connect's default (every key of the
     * definition, parsed and validated). The recommenders of insertFormat,
     * proxyType and dbTopicSplitChar only recommend: they reject no value,
     * so they are left out.
     */
    static ConfigDef clickHouseSinkV140() {
        ConfigDef d = new ConfigDef();
        // Connection
        key(d, "hostname", Type.STRING, NO_DEFAULT_VALUE, new ConfigDef.NonEmptyString());
        key(d, "port", Type.INT, 8443, Range.between(1, 65535));
        key(d, "database", Type.STRING, "default", null);
        key(d, "username", Type.STRING, "", null);
        key(d, "password", Type.PASSWORD, "", null);
        key(d, "ssl", Type.BOOLEAN, true, null);
        key(d, "jdbcConnectionProperties", Type.STRING, "", null);
        key(d, "timeoutSeconds", Type.INT, 30, Range.between(0, 600));
        key(d, "retryCount", Type.INT, 3, Range.between(3, 10));
        key(d, "tableRefreshInterval", Type.LONG, 0L, Range.between(0, 600));
        key(d, "exactlyOnce", Type.BOOLEAN, false, null);
        key(d, "suppressTableExistenceException", Type.BOOLEAN, false, null);
        key(d, "clickhouseSettings", Type.LIST, "", null);
        key(d, "topic2TableMap", Type.LIST, "", null);
        key(d, "errors.tolerance", Type.STRING, "none", null);
        key(d, "customInsertFormat", Type.BOOLEAN, false, null);
        key(d, "insertFormat", Type.STRING, "none", null);
        key(d, "proxyType", Type.STRING, "", null);
        key(d, "proxyHost", Type.STRING, "", null);
        key(d, "proxyPort", Type.INT, -1, null);
        key(d, "zkPath", Type.STRING, "/kafka-connect", (name, value) -> {
            // ZKPathValidator, with its message.
            String s = (String) value;
            if (s == null || s.isBlank() || !s.startsWith("/")) {
                throw new ConfigException("zkPath cannot be empty and must begin with a forward slash");
            }
        });
        key(d, "zkDatabase", Type.STRING, "connect_state", null);
        key(d, "enableDbTopicSplit", Type.BOOLEAN, false, null);
        key(d, "dbTopicSplitChar", Type.STRING, "", null);
        key(d, "keeperOnCluster", Type.STRING, "", null);
        key(d, "bypassRowBinary", Type.BOOLEAN, false, null);
        key(d, "dateTimeFormats", Type.LIST, "", null);
        key(d, "client_version", Type.STRING, "", null);
        key(d, "tolerateStateMismatch", Type.BOOLEAN, false, null);
        key(d, "bypassSchemaValidation", Type.BOOLEAN, false, null);
        key(d, "bypassFieldCleanup", Type.BOOLEAN, false, null);
        key(d, "debeziumCDCEnabled", Type.BOOLEAN, false, null);
        key(d, "ignorePartitionsWhenBatching", Type.BOOLEAN, false, null);
        key(d, "bufferCount", Type.INT, 0, Range.atLeast(0));
        key(d, "bufferFlushTime", Type.LONG, 0L, Range.atLeast(0));
        key(d, "clickhouseClientInsertTimeoutMs", Type.LONG, 240_000L, Range.atLeast(100));
        key(d, "reportInsertedOffsets", Type.BOOLEAN, false, null);
        key(d, "ssl_socket_sni", Type.STRING, "", null);
        // DDL
        key(d, "auto.evolve", Type.BOOLEAN, false, null);
        key(d, "auto.evolve.ddl.refresh.retries", Type.INT, 3, Range.atLeast(0));
        key(d, "auto.evolve.struct.to.json", Type.BOOLEAN, false, null);
        key(d, "clusterName", Type.STRING, "", null);
        return d;
    }

    /**
     * Confluent's Avro converter, kafka-connect-avro-converter 8.3.0 (the
     * harness's pin). {@code AvroConverter} does not override
     * {@code Converter.config()}, so Connect's preflight validation sees an
     * empty definition; but its {@code configure} parses the settings with
     * four definitions, and a wrong type fails the task there. Their union
     * is transcribed here from confluentinc/schema-registry at tag v8.3.0
     * (commit e6dd283a914e4a606fb35f9c7f878a7fe2c6e279):
     * {@code AbstractKafkaSchemaSerDeConfig.baseConfigDef()}
     * (schema-serializer), the keys {@code KafkaAvroSerializerConfig} and
     * {@code KafkaAvroDeserializerConfig} add (avro-serializer), and
     * {@code AvroDataConfig.baseConfigDef()} with
     * {@code AbstractDataConfig}'s (avro-data, schema-converter). Keys of
     * type CLASS there name Confluent's classes, absent here, so they are
     * checked as names (STRING).
     */
    static ConfigDef confluentAvroConverterV830() {
        ConfigDef d = new ConfigDef();
        // AbstractKafkaSchemaSerDeConfig.baseConfigDef()
        key(d, "schema.registry.url", Type.LIST, NO_DEFAULT_VALUE, null);
        key(d, "schema.registry.url.randomize", Type.BOOLEAN, false, null);
        key(d, "max.schemas.per.subject", Type.INT, 1000, null);
        key(d, "normalize.schemas", Type.BOOLEAN, false, null);
        key(d, "auto.register.schemas", Type.BOOLEAN, true, null);
        key(d, "propagate.schema.tags", Type.BOOLEAN, false, null);
        key(d, "use.schema.id", Type.INT, -1, null);
        key(d, "use.schema.guid", Type.STRING, null, null);
        key(d, "id.compatibility.strict", Type.BOOLEAN, true, null);
        key(d, "use.latest.version", Type.BOOLEAN, false, null);
        key(d, "latest.compatibility.strict", Type.BOOLEAN, true, null);
        key(d, "latest.cache.size", Type.INT, 1000, null);
        key(d, "latest.cache.ttl.sec", Type.INT, -1, null);
        key(d, "use.latest.with.metadata", Type.STRING, null, null);
        key(d, "schema.format", Type.STRING, null, null);
        key(d, "execution.environment", Type.STRING, null,
                enumerator("ALL", "CLIENT", "GATEWAY", "SERVER", "NONE"));
        key(d, "rule.executors", Type.LIST, "", null);
        key(d, "rule.actions", Type.LIST, "", null);
        key(d, "rule.service.loader.enable", Type.BOOLEAN, true, null);
        key(d, "rule.metrics.enable", Type.BOOLEAN, true, null);
        key(d, "validation.rules.executor.class", Type.STRING,
                "io.confluent.kafka.schemaregistry.rules.cel.CelValidator", null);
        key(d, "validation.rules.fail.fast", Type.BOOLEAN, false, null);
        key(d, "basic.auth.credentials.source", Type.STRING, "URL", null);
        key(d, "bearer.auth.credentials.source", Type.STRING, "STATIC_TOKEN", null);
        key(d, "schema.registry.basic.auth.user.info", Type.PASSWORD, "", null);
        key(d, "basic.auth.user.info", Type.PASSWORD, "", null);
        key(d, "bearer.auth.token", Type.PASSWORD, "", null);
        key(d, "bearer.auth.issuer.endpoint.url", Type.STRING, null, null);
        key(d, "bearer.auth.client.id", Type.STRING, null, null);
        key(d, "bearer.auth.client.secret", Type.PASSWORD, null, null);
        key(d, "bearer.auth.scope", Type.STRING, null, null);
        key(d, "bearer.auth.scope.claim.name", Type.STRING,
                SaslConfigs.DEFAULT_SASL_OAUTHBEARER_SCOPE_CLAIM_NAME, null);
        key(d, "bearer.auth.sub.claim.name", Type.STRING,
                SaslConfigs.DEFAULT_SASL_OAUTHBEARER_SUB_CLAIM_NAME, null);
        key(d, "bearer.auth.identity.pool.id", Type.STRING, null, null);
        key(d, "bearer.auth.logical.cluster", Type.STRING, null, null);
        key(d, "bearer.auth.cache.expiry.buffer.seconds", Type.SHORT, (short) 300, Range.between(0, 3600));
        key(d, "bearer.auth.custom.provider.class", Type.STRING, null, null);
        for (String cls : List.of("context.name.strategy",
                "key.subject.name.strategy", "key.schema.id.serializer", "key.schema.id.deserializer",
                "value.subject.name.strategy", "value.schema.id.serializer", "value.schema.id.deserializer")) {
            key(d, cls, Type.STRING, null, null);
        }
        key(d, "schema.reflection", Type.BOOLEAN, false, null);
        key(d, "proxy.host", Type.STRING, "", null);
        key(d, "proxy.port", Type.INT, -1, null);
        key(d, "http.connect.timeout.ms", Type.INT, 60_000, null);
        key(d, "http.read.timeout.ms", Type.INT, 60_000, null);
        key(d, "max.retries", Type.INT, 3, null);
        key(d, "retries.wait.ms", Type.INT, 1000, null);
        key(d, "retries.max.wait.ms", Type.INT, 20_000, null);
        // SchemaRegistryClientConfig.withClientSslSupport: Kafka's client
        // SSL keys under schema.registry.
        for (ConfigDef.ConfigKey ssl : new ConfigDef().withClientSslSupport().configKeys().values()) {
            key(d, "schema.registry." + ssl.name, ssl.type, ssl.defaultValue, null);
        }
        // KafkaAvroSerializerConfig
        key(d, "avro.reflection.allow.null", Type.BOOLEAN, false, null);
        key(d, "avro.use.logical.type.converters", Type.BOOLEAN, false, null);
        key(d, "avro.remove.java.properties", Type.BOOLEAN, false, null);
        key(d, "validation.rules.execution", Type.STRING, "DISABLED",
                enumerator("DISABLED", "BEFORE_DOMAIN_RULES", "AFTER_DOMAIN_RULES"));
        // KafkaAvroDeserializerConfig
        key(d, "specific.avro.reader", Type.BOOLEAN, false, null);
        key(d, "specific.avro.key.type", Type.STRING, null, null);
        key(d, "specific.avro.value.type", Type.STRING, null, null);
        key(d, "avro.fail.on.trailing.data", Type.BOOLEAN, false, null);
        // AbstractDataConfig, AvroDataConfig
        key(d, "generalized.sum.type.support", Type.BOOLEAN, false, null);
        key(d, "ignore.default.for.nullables", Type.BOOLEAN, false, null);
        key(d, "schemas.cache.config", Type.INT, 1000, null);
        key(d, "enhanced.avro.schema.support", Type.BOOLEAN, false, null);
        key(d, "scrub.invalid.names", Type.BOOLEAN, false, null);
        key(d, "connect.meta.data", Type.BOOLEAN, true, null);
        key(d, "discard.type.doc.default", Type.BOOLEAN, false, null);
        key(d, "allow.optional.map.keys", Type.BOOLEAN, false, null);
        key(d, "flatten.singleton.unions", Type.BOOLEAN, true, null);
        return d;
    }

    private static void key(ConfigDef d, String name, Type type, Object defaultValue, ConfigDef.Validator validator) {
        d.define(name, type, defaultValue, validator, Importance.LOW, "");
    }

    /**
     * Confluent's EnumRecommender as a validator: an enumerator's name, in
     * upper or lower case, with its message.
     */
    private static ConfigDef.Validator enumerator(String... names) {
        Set<String> valid = Stream.of(names)
                .flatMap(n -> Stream.of(n.toUpperCase(Locale.ROOT), n.toLowerCase(Locale.ROOT)))
                .collect(Collectors.toSet());
        return (name, value) -> {
            if (value != null && !valid.contains(value.toString())) {
                throw new ConfigException(name, value, "Invalid enumerator");
            }
        };
    }
}
