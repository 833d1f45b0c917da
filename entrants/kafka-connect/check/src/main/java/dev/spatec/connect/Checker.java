package dev.spatec.connect;

import java.io.IOException;
import java.lang.reflect.Field;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.Function;
import org.apache.kafka.clients.CommonClientConfigs;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.config.AbstractConfig;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigDef.Importance;
import org.apache.kafka.common.config.ConfigDef.Type;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.config.ConfigValue;
import org.apache.kafka.common.utils.Utils;
import org.apache.kafka.connect.connector.policy.AllowlistConnectorClientConfigOverridePolicy;
import org.apache.kafka.connect.connector.policy.ConnectorClientConfigOverridePolicy;
import org.apache.kafka.connect.connector.policy.ConnectorClientConfigRequest;
import org.apache.kafka.connect.health.ConnectorType;
import org.apache.kafka.connect.runtime.ConnectorConfig;
import org.apache.kafka.connect.runtime.SinkConnectorConfig;
import org.apache.kafka.connect.runtime.WorkerConfig;
import org.apache.kafka.connect.runtime.standalone.StandaloneConfig;
import org.apache.kafka.connect.sink.SinkConnector;
import org.apache.kafka.connect.storage.Converter;
import org.apache.kafka.connect.storage.ConverterConfig;
import org.apache.kafka.connect.storage.HeaderConverter;
import org.apache.kafka.connect.transforms.Transformation;
import org.apache.kafka.connect.transforms.predicates.Predicate;
import org.apache.kafka.connect.util.ConcreteSubClassValidator;

/**
 * Checks a standalone worker's properties and a sink connector's as
 * Connect reads them: each value parsed and validated by the definition
 * Connect hands it to, with Connect's own messages. Where Connect only
 * logs a key that no definition knows, this checker refuses it: a
 * misspelt key is a setting that silently does not apply.
 *
 * <p>The worker's keys go to {@link StandaloneConfig}'s definition; its
 * {@code consumer.}, {@code producer.} and {@code admin.} keys, prefix
 * stripped, to the Kafka clients' definitions, on top of the settings
 * Connect's Worker gives every client; its {@code key.converter.},
 * {@code value.converter.} and {@code header.converter.} keys to the
 * converter's. The connector's keys go to {@link SinkConnectorConfig}'s
 * definition (with its transformations' and predicates'), to the
 * connector's own, to its converters', and its client overrides to the
 * clients' definitions and the worker's override policy. Plugins the
 * image holds in plugin.path and this classpath lacks are known through
 * {@link StandIns}.
 */
public final class Checker {
    /** A problem with one key of one file, in the words of its definition. */
    public record Problem(String file, String key, String message) {
        @Override
        public String toString() {
            return file + ": " + key + ": " + message;
        }
    }

    private static final List<String> CONVERTERS = List.of(
            WorkerConfig.KEY_CONVERTER_CLASS_CONFIG,
            WorkerConfig.VALUE_CONVERTER_CLASS_CONFIG,
            WorkerConfig.HEADER_CONVERTER_CLASS_CONFIG);

    /** A Kafka client that the settings of one prefix are handed to. */
    private record Client(String kind, String name, ConfigDef definition, ConnectorClientConfigRequest.ClientType type,
                          Function<Map<String, Object>, AbstractConfig> construct) {
    }

    private static final List<Client> CLIENTS = List.of(
            new Client("consumer", "ConsumerConfig", ConsumerConfig.configDef(),
                    ConnectorClientConfigRequest.ClientType.CONSUMER, ConsumerConfig::new),
            new Client("producer", "ProducerConfig", ProducerConfig.configDef(),
                    ConnectorClientConfigRequest.ClientType.PRODUCER, ProducerConfig::new),
            new Client("admin", "AdminClientConfig", AdminClientConfig.configDef(),
                    ConnectorClientConfigRequest.ClientType.ADMIN, AdminClientConfig::new));

    private final String workerFile;
    private final Map<String, String> worker;
    private final String connectorFile;
    private final Map<String, String> connector;
    private final Set<Problem> problems = new LinkedHashSet<>();

    private Checker(String workerFile, Map<String, String> worker, String connectorFile, Map<String, String> connector) {
        this.workerFile = workerFile;
        this.worker = worker;
        this.connectorFile = connectorFile;
        this.connector = connector;
    }

    /** Reads both files as connect-standalone does and checks them. */
    public static List<Problem> check(Path workerFile, Path connectorFile) throws IOException {
        return check(workerFile.toString(), Utils.propsToStringMap(Utils.loadProps(workerFile.toString())),
                connectorFile.toString(), Utils.propsToStringMap(Utils.loadProps(connectorFile.toString())));
    }

    /** Checks a worker's and a connector's settings, each named by its file. */
    public static List<Problem> check(String workerFile, Map<String, String> worker,
                                      String connectorFile, Map<String, String> connector) {
        Checker c = new Checker(workerFile, worker, connectorFile, connector);
        c.checkWorker();
        c.checkConnector();
        return List.copyOf(c.problems);
    }

    /** The keys of one file some definition knows, and the prefixes none could be read for. */
    private static final class Known {
        final Set<String> keys = new HashSet<>();
        final Set<String> unread = new HashSet<>();

        void add(String prefix, ConfigDef def) {
            for (String name : def.names()) {
                keys.add(prefix + name);
            }
        }
    }

    private void checkWorker() {
        Known known = new Known();
        ConfigDef def = standaloneDefinition();
        known.add("", def);
        Map<String, String> given = naming(worker);
        int before = problems.size();
        report(workerFile, "", def.validateAll(given).values());
        if (problems.size() == before) {
            // What connect-standalone itself constructs: a check across
            // keys that validateAll does not make would fail here.
            try {
                new StandaloneConfig(given);
            } catch (ConfigException e) {
                add(workerFile, "(StandaloneConfig)", e.getMessage());
            }
        }
        for (String key : CONVERTERS) {
            String cls = worker.get(key);
            if (cls == null && key.equals(WorkerConfig.HEADER_CONVERTER_CLASS_CONFIG)) {
                cls = WorkerConfig.HEADER_CONVERTER_CLASS_DEFAULT;
            }
            converter(workerFile, worker, key, cls, known);
        }
        // The policy reads its own keys from the worker's settings.
        ConnectorClientConfigOverridePolicy policy = overridePolicy();
        if (policy != null) {
            known.add("", policy.config());
            if (policy instanceof AllowlistConnectorClientConfigOverridePolicy) {
                // Its configure reads this worker key; its config() does
                // not declare it.
                known.keys.add(AllowlistConnectorClientConfigOverridePolicy.ALLOWLIST_CONFIG);
            }
            Utils.closeQuietly(policy, "override policy");
        }
        for (Client client : CLIENTS) {
            String prefix = client.kind() + ".";
            known.add(prefix, client.definition());
            client(workerFile, prefix, client, workerClientBase(client.kind()), Utils.entriesWithPrefix(worker, prefix));
        }
        unknown(workerFile, worker, known);
    }

    private void checkConnector() {
        Known known = new Known();
        ConfigDef def = SinkConnectorConfig.configDef();
        enrich(def, connector);
        known.add("", def);
        Map<String, String> given = naming(connector);
        Map<String, ConfigValue> values = def.validateAll(given);
        SinkConnectorConfig.validate(given, values);
        report(connectorFile, "", values.values());

        // The connector's own definition.
        String cls = connector.get(ConnectorConfig.CONNECTOR_CLASS_CONFIG);
        ConfigDef own = cls == null ? null : sinkConnectorDefinition(cls);
        if (own == null) {
            if (cls != null) {
                add(connectorFile, ConnectorConfig.CONNECTOR_CLASS_CONFIG,
                        "Failed to find any class that implements Connector and which name matches " + cls
                                + " (neither on this classpath nor among the stand-ins for plugin.path)");
            }
            known.unread.add("");
        } else {
            known.add("", own);
            report(connectorFile, "", own.validate(connector));
        }

        // Converters set on the connector: the worker's are not used then.
        for (String key : CONVERTERS) {
            ConfigValue v = values.get(key);
            if (connector.containsKey(key) && v != null && v.errorMessages().isEmpty()) {
                converter(connectorFile, connector, key, connector.get(key), known);
            }
        }

        // Client overrides, within the worker's policy.
        ConnectorClientConfigOverridePolicy policy = overridePolicy();
        for (Client client : CLIENTS) {
            String prefix = client.kind() + ".override.";
            known.add(prefix, client.definition());
            Map<String, String> overrides = Utils.entriesWithPrefix(connector, prefix);
            if (overrides.isEmpty()) {
                continue;
            }
            Map<String, String> base = workerClientBase(client.kind());
            base.putAll(Utils.entriesWithPrefix(worker, client.kind() + "."));
            client(connectorFile, prefix, client, base, overrides);
            if (policy != null) {
                Map<String, Object> request = new HashMap<>(overrides);
                report(connectorFile, prefix, policy.validate(new ConnectorClientConfigRequest(
                        connector.get(ConnectorConfig.NAME_CONFIG), ConnectorType.SINK, SinkConnector.class,
                        request, client.type())));
            }
        }
        if (policy != null) {
            Utils.closeQuietly(policy, "override policy");
        }
        unknown(connectorFile, connector, known);
    }

    /**
     * Hands a converter's prefixed settings, prefix stripped, to its
     * definition, with the converter.type Connect adds.
     */
    private void converter(String file, Map<String, String> props, String key, String cls, Known known) {
        String prefix = key + ".";
        if (cls == null) {
            known.unread.add(prefix);
            return;
        }
        ConfigDef def = converterDefinition(key, cls);
        if (def == null) {
            // Connect's own message for the class is reported on the key.
            known.unread.add(prefix);
            return;
        }
        known.add(prefix, def);
        Map<String, String> config = Utils.entriesWithPrefix(props, prefix);
        config.putIfAbsent(ConverterConfig.TYPE_CONFIG, key.substring(0, key.indexOf('.')));
        report(file, prefix, def.validate(config));
    }

    /**
     * Hands a client's prefixed settings, prefix stripped, to the client's
     * definition on top of base, then constructs the client's config as
     * the client does; problems are reported on the given keys.
     */
    private void client(String file, String prefix, Client client, Map<String, String> base, Map<String, String> given) {
        if (given.isEmpty()) {
            return;
        }
        Map<String, String> merged = new HashMap<>(base);
        merged.putAll(given);
        Map<String, ConfigValue> values = client.definition().validateAll(merged);
        int before = problems.size();
        for (String key : new TreeMap<>(given).keySet()) {
            ConfigValue v = values.get(key);
            if (v != null) {
                for (String m : v.errorMessages()) {
                    add(file, prefix + key, m);
                }
            }
        }
        if (problems.size() == before) {
            try {
                client.construct().apply(new HashMap<>(merged));
            } catch (ConfigException e) {
                add(file, prefix + "*", client.name() + ": " + e.getMessage());
            }
        }
    }

    /**
     * The settings Connect's Worker gives every client of its kind before
     * the worker's prefixed ones (Worker.baseConsumerConfigs,
     * baseProducerConfigs, adminConfigs in 4.3.1).
     */
    private Map<String, String> workerClientBase(String kind) {
        Map<String, String> base = new HashMap<>();
        base.put(CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG, worker.getOrDefault(WorkerConfig.BOOTSTRAP_SERVERS_CONFIG, "localhost:9092"));
        base.put(CommonClientConfigs.CLIENT_ID_CONFIG, "connector-" + kind + "-check");
        switch (kind) {
            case "consumer" -> {
                base.put(ConsumerConfig.GROUP_ID_CONFIG, "connect-" + connector.getOrDefault(ConnectorConfig.NAME_CONFIG, "check"));
                base.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
                base.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
                base.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, "org.apache.kafka.common.serialization.ByteArrayDeserializer");
                base.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, "org.apache.kafka.common.serialization.ByteArrayDeserializer");
            }
            case "producer" -> {
                base.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, "org.apache.kafka.common.serialization.ByteArraySerializer");
                base.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, "org.apache.kafka.common.serialization.ByteArraySerializer");
                base.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, Long.toString(Long.MAX_VALUE));
                base.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "false");
                base.put(ProducerConfig.ACKS_CONFIG, "all");
                base.put(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, "1");
                base.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, Integer.toString(Integer.MAX_VALUE));
            }
            default -> {
                // The admin client is given no more than the address and
                // an id before the worker's own keys.
            }
        }
        return base;
    }

    /**
     * The worker's connector.client.config.override.policy, configured
     * with the worker's settings as Connect does; null (and reported) when
     * it cannot be loaded.
     */
    private ConnectorClientConfigOverridePolicy overridePolicy() {
        String name = worker.getOrDefault(WorkerConfig.CONNECTOR_CLIENT_POLICY_CLASS_CONFIG,
                WorkerConfig.CONNECTOR_CLIENT_POLICY_CLASS_DEFAULT).trim();
        // Connect's aliases: the simple name less the interface's name.
        String cls = name.contains(".") ? name
                : "org.apache.kafka.connect.connector.policy." + name + "ConnectorClientConfigOverridePolicy";
        ConnectorClientConfigOverridePolicy policy;
        try {
            policy = Utils.newInstance(Class.forName(cls), ConnectorClientConfigOverridePolicy.class);
        } catch (ClassNotFoundException | RuntimeException e) {
            add(workerFile, WorkerConfig.CONNECTOR_CLIENT_POLICY_CLASS_CONFIG,
                    "Failed to load the connector client config override policy " + name + ": " + e.getMessage());
            return null;
        }
        try {
            policy.configure(worker);
        } catch (ConfigException e) {
            add(workerFile, WorkerConfig.CONNECTOR_CLIENT_POLICY_CLASS_CONFIG, e.getMessage());
        }
        return policy;
    }

    /**
     * The definition of the converter cls names, from this classpath or
     * the stand-ins; null when there is none (Connect's message for the
     * class is then reported on key by its definition).
     */
    private static ConfigDef converterDefinition(String key, String cls) {
        StandIns.Plugin standIn = StandIns.PLUGINS.get(cls.trim());
        if (standIn != null) {
            return standIn.kind() == StandIns.Kind.CONVERTER ? standIn.definition() : null;
        }
        Class<?> c;
        try {
            c = Class.forName(cls.trim(), true, Utils.getContextOrKafkaClassLoader());
        } catch (ClassNotFoundException | LinkageError e) {
            return null;
        }
        Object instance;
        try {
            instance = c.getDeclaredConstructor().newInstance();
        } catch (ReflectiveOperationException | RuntimeException e) {
            return null;
        }
        try {
            if (key.equals(WorkerConfig.HEADER_CONVERTER_CLASS_CONFIG) && instance instanceof HeaderConverter h) {
                return h.config();
            }
            if (instance instanceof Converter conv) {
                return conv.config();
            }
            return null;
        } finally {
            Utils.maybeCloseQuietly(instance, "converter " + cls);
        }
    }

    /** The definition of the sink connector cls names, or null. */
    private static ConfigDef sinkConnectorDefinition(String cls) {
        StandIns.Plugin standIn = StandIns.PLUGINS.get(cls.trim());
        if (standIn != null) {
            return standIn.kind() == StandIns.Kind.SINK_CONNECTOR ? standIn.definition() : null;
        }
        try {
            Class<?> c = Class.forName(cls.trim(), true, Utils.getContextOrKafkaClassLoader());
            return Utils.newInstance(c, SinkConnector.class).config();
        } catch (ClassNotFoundException | LinkageError | RuntimeException e) {
            return null;
        }
    }

    /**
     * The settings as handed to a Connect definition: a CLASS-typed value
     * naming a converter the stand-ins know is given as
     * {@link AbsentConverter}, which Connect's class validators accept as
     * they accept the converter in the image.
     */
    private static Map<String, String> naming(Map<String, String> props) {
        Map<String, String> out = new HashMap<>(props);
        for (String key : CONVERTERS) {
            String cls = props.get(key);
            StandIns.Plugin standIn = cls == null ? null : StandIns.PLUGINS.get(cls.trim());
            if (standIn != null && standIn.kind() == StandIns.Kind.CONVERTER) {
                out.put(key, AbsentConverter.class.getName());
            }
        }
        return out;
    }

    /**
     * Adds to def what ConnectorConfig.enrich adds for each alias of
     * transforms and predicates: its class, its version, the predicate
     * and negate every transformation takes, and the plugin's own
     * definition under its prefix.
     */
    private void enrich(ConfigDef def, Map<String, String> props) {
        enrich(def, props, ConnectorConfig.TRANSFORMS_CONFIG, Transformation.class, true);
        enrich(def, props, ConnectorConfig.PREDICATES_CONFIG, Predicate.class, false);
    }

    private void enrich(ConfigDef def, Map<String, String> props, String aliasesKey, Class<?> base, boolean transformation) {
        Object aliases;
        try {
            aliases = ConfigDef.parseType(aliasesKey, props.get(aliasesKey), Type.LIST);
        } catch (ConfigException e) {
            return; // reported by the definition itself
        }
        if (!(aliases instanceof List<?> list)) {
            return;
        }
        for (Object alias : new LinkedHashSet<>(list)) {
            String prefix = aliasesKey + "." + alias + ".";
            def.define(prefix + "type", Type.CLASS, ConfigDef.NO_DEFAULT_VALUE,
                    ConcreteSubClassValidator.forSuperClass(base), Importance.HIGH,
                    "Class for the '" + alias + "' " + base.getSimpleName() + ".");
            def.define(prefix + WorkerConfig.PLUGIN_VERSION_SUFFIX, Type.STRING, null, Importance.HIGH,
                    "Version of the '" + alias + "' " + base.getSimpleName() + ".");
            ConfigDef child = new ConfigDef();
            if (transformation) {
                child.define("predicate", Type.STRING, null, Importance.MEDIUM, "The alias of a predicate.");
                child.define("negate", Type.BOOLEAN, false, Importance.MEDIUM, "Whether the predicate is negated.");
                if (props.containsKey(prefix + "negate") && !props.containsKey(prefix + "predicate")) {
                    add(connectorFile, prefix + "negate", "Config '" + prefix + "negate' was provided but there is "
                            + "no config '" + prefix + "predicate' defining a predicate to be negated.");
                }
            }
            ConfigDef own = pluginDefinition(props.get(prefix + "type"), base);
            if (own != null) {
                for (ConfigDef.ConfigKey k : own.configKeys().values()) {
                    if (!child.configKeys().containsKey(k.name)) {
                        child.define(k);
                    }
                }
            }
            def.embed(prefix, aliasesKey + ": " + alias, 2, child);
        }
    }

    private static ConfigDef pluginDefinition(String cls, Class<?> base) {
        if (cls == null) {
            return null;
        }
        try {
            Class<?> c = Class.forName(cls.trim(), true, Utils.getContextOrKafkaClassLoader());
            Object instance = Utils.newInstance(c, base);
            try {
                if (instance instanceof Transformation<?> t) {
                    return t.config();
                }
                if (instance instanceof Predicate<?> p) {
                    return p.config();
                }
                return null;
            } finally {
                Utils.maybeCloseQuietly(instance, "plugin " + cls);
            }
        } catch (ClassNotFoundException | LinkageError | RuntimeException e) {
            return null;
        }
    }

    /** Refuses every key of props that no definition it is handed to knows. */
    private void unknown(String file, Map<String, String> props, Known known) {
        for (String key : new TreeMap<>(props).keySet()) {
            if (known.keys.contains(key)) {
                continue;
            }
            if (known.unread.stream().anyMatch(key::startsWith)) {
                continue; // its definition could not be read: reported already
            }
            add(file, key, "no definition the runtime hands this key to knows it "
                    + "(Connect would only log that it was supplied but is not used)");
        }
    }

    private void report(String file, String prefix, Iterable<ConfigValue> values) {
        List<ConfigValue> sorted = new ArrayList<>();
        values.forEach(sorted::add);
        sorted.sort((a, b) -> a.name().compareTo(b.name()));
        for (ConfigValue v : sorted) {
            for (String m : v.errorMessages()) {
                add(file, prefix + v.name(), m);
            }
        }
    }

    private void add(String file, String key, String message) {
        problems.add(new Problem(file, key, message));
    }

    /**
     * The definition connect-standalone parses its worker properties with:
     * {@code StandaloneConfig}'s, which the class keeps private.
     */
    static ConfigDef standaloneDefinition() {
        try {
            Field f = StandaloneConfig.class.getDeclaredField("CONFIG");
            f.setAccessible(true);
            return new ConfigDef((ConfigDef) f.get(null));
        } catch (ReflectiveOperationException | RuntimeException e) {
            throw new IllegalStateException("reading StandaloneConfig's definition (Connect's runtime changed?)", e);
        }
    }
}
