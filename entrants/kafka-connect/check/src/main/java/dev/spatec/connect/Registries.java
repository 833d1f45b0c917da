package dev.spatec.connect;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.PrintStream;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.kafka.clients.CommonClientConfigs;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.SaslConfigs;
import org.apache.kafka.common.config.SslConfigs;
import org.apache.kafka.common.utils.AppInfoParser;
import org.apache.kafka.common.utils.Utils;
import org.apache.kafka.connect.json.JsonConverterConfig;
import org.apache.kafka.connect.runtime.ConnectorConfig;
import org.apache.kafka.connect.runtime.SinkConnectorConfig;
import org.apache.kafka.connect.runtime.WorkerConfig;
import org.apache.kafka.connect.runtime.standalone.StandaloneConfig;
import org.apache.kafka.connect.sink.SinkConnector;
import org.apache.kafka.connect.storage.ConverterConfig;

/**
 * Prints the option registries of Kafka Connect (worker, sink connector,
 * Kafka clients, JSON converter) from the ConfigDefs of the runtime on this
 * classpath: every {@link ConfigDef.ConfigKey}, its type, the values and
 * bounds its validator admits, its default as Connect renders it, the first
 * sentence of its documentation.
 *
 * <p>Usage: {@code java -cp spatec-connect-check.jar
 * dev.spatec.connect.Registries}. It prints one JSON object: each
 * registry's file name (worker.json, ...) to the registry and the Maven
 * artifacts (org.apache.kafka, at the runtime's version) whose classes it
 * was read from; spatec's options package names their digests and writes
 * the files. ClickHouse's sink connector is read too when its class is on
 * the classpath (its release's lib/ jars added to {@code -cp}); it is not on
 * Maven Central, so the module alone has no such class.
 */
public final class Registries {
    /** ClickHouse's sink connector, as the arm's connector.class names it. */
    static final String CLICKHOUSE_SINK = "com.clickhouse.kafka.connect.ClickHouseSinkConnector";

    /** Docs longer than this are cut at a word and marked with an ellipsis. */
    private static final int DOC_MAX = 160;

    /**
     * The classes whose public String constants name keys: a constant
     * marked {@code @Deprecated} marks its key deprecated.
     */
    private static final List<Class<?>> CONSTANTS = List.of(
            CommonClientConfigs.class, SslConfigs.class, SaslConfigs.class,
            ConsumerConfig.class, ProducerConfig.class, AdminClientConfig.class,
            WorkerConfig.class, StandaloneConfig.class, ConnectorConfig.class, SinkConnectorConfig.class,
            ConverterConfig.class, JsonConverterConfig.class);

    private Registries() {
    }

    public static void main(String[] args) throws IOException {
        System.exit(run(args, System.out, System.err));
    }

    static int run(String[] args, PrintStream out, PrintStream err) throws IOException {
        if (args.length != 0) {
            err.println("usage: java -cp spatec-connect-check.jar dev.spatec.connect.Registries");
            return 2;
        }
        ObjectMapper mapper = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
        out.println(mapper.writeValueAsString(all(mapper)));
        return 0;
    }

    /** One registry to print: its definition and where it was read. */
    private record Def(ConfigDef definition, String how, List<String> artifacts) {
    }

    /** Every registry, by file name. */
    static ObjectNode all(ObjectMapper mapper) {
        Set<String> deprecated = deprecatedKeys();
        String version = AppInfoParser.getVersion();
        Map<String, Def> defs = new LinkedHashMap<>();
        defs.put("worker.json", new Def(Checker.standaloneDefinition(),
                "every ConfigKey of StandaloneConfig's ConfigDef (its private static CONFIG, read by reflection; "
                        + "WorkerConfig's keys included), as connect-standalone parses its worker properties. "
                        + "Keys under consumer., producer. and admin. are the keys of consumer.json, producer.json "
                        + "and admin.json; keys under key.converter., value.converter. and header.converter. are "
                        + "the named converter's (json-converter.json for JsonConverter)",
                List.of("connect-runtime", "kafka-clients")));
        defs.put("connector.json", connector());
        defs.put("consumer.json", new Def(ConsumerConfig.configDef(),
                "every ConfigKey of ConsumerConfig.configDef(): the keys of a worker's consumer. prefix and of a "
                        + "sink connector's consumer.override. prefix",
                List.of("kafka-clients")));
        defs.put("producer.json", new Def(ProducerConfig.configDef(),
                "every ConfigKey of ProducerConfig.configDef(): the keys of a worker's producer. prefix and of a "
                        + "connector's producer.override. prefix",
                List.of("kafka-clients")));
        defs.put("admin.json", new Def(AdminClientConfig.configDef(),
                "every ConfigKey of AdminClientConfig.configDef(): the keys of a worker's admin. prefix and of a "
                        + "connector's admin.override. prefix",
                List.of("kafka-clients")));
        defs.put("json-converter.json", new Def(JsonConverterConfig.configDef(),
                "every ConfigKey of JsonConverterConfig.configDef(), which holds ConverterConfig's "
                        + "(converter.type, which Connect sets itself): the keys after a key.converter. or "
                        + "value.converter. prefix when that converter is org.apache.kafka.connect.json.JsonConverter",
                List.of("connect-json", "connect-api")));

        ObjectNode root = mapper.createObjectNode();
        for (Map.Entry<String, Def> e : defs.entrySet()) {
            Def d = e.getValue();
            ObjectNode r = root.putObject(e.getKey());
            r.put("system", "Kafka Connect");
            r.put("version", version);
            ArrayNode artifacts = r.putArray("artifacts");
            d.artifacts().forEach(artifacts::add);
            ArrayNode options = r.putArray("options");
            Set<String> anyCase = new TreeSet<>();
            for (ConfigDef.ConfigKey k : new TreeMap<>(d.definition().configKeys()).values()) {
                options.add(option(mapper, k, deprecated, anyCase));
            }
            String how = d.how();
            if (!anyCase.isEmpty()) {
                how += ". The values of " + String.join(", ", anyCase) + " are accepted in any case "
                        + "(CaseInsensitiveValidString), and listed as Kafka keeps them, upper-case";
            }
            r.put("how", how);
        }
        return root;
    }

    /**
     * SinkConnectorConfig's definition, merged with ClickHouse's sink
     * connector's own when its class is on the classpath.
     */
    private static Def connector() {
        ConfigDef def = new ConfigDef(SinkConnectorConfig.configDef());
        String how = "every ConfigKey of SinkConnectorConfig.configDef() (ConnectorConfig's keys included), the "
                + "keys every sink connector's properties take. Not listed, as Connect derives them from values: "
                + "transforms.<alias>.* and predicates.<alias>.* (the plugin's own keys, with type and version), "
                + "key.converter.*, value.converter.*, header.converter.* (the converter's keys), and "
                + "consumer.override.*, producer.override.*, admin.override.* (consumer.json, producer.json, "
                + "admin.json)";
        Class<?> cls;
        try {
            cls = Class.forName(CLICKHOUSE_SINK, true, Utils.getContextOrKafkaClassLoader());
        } catch (ClassNotFoundException | LinkageError e) {
            cls = null;
        }
        if (cls == null) {
            return new Def(def, how + ". ClickHouse's sink connector's own keys are NOT included: its class "
                    + CLICKHOUSE_SINK + " was not on the classpath (Maven Central serves no artifact of it)",
                    List.of("connect-runtime"));
        }
        SinkConnector sink = Utils.newInstance(cls, SinkConnector.class);
        ConfigDef own = sink.config();
        Set<String> shared = new TreeSet<>();
        for (ConfigDef.ConfigKey k : own.configKeys().values()) {
            if (def.configKeys().containsKey(k.name)) {
                // Connect validates a key both define with its own
                // definition first; the connector then reads it with its.
                shared.add(k.name);
            } else {
                def.define(k);
            }
        }
        String version = sink.version();
        return new Def(def, how + "; merged with every ConfigKey of " + CLICKHOUSE_SINK + ".config() (version "
                + version + ")" + (shared.isEmpty() ? "" : ", whose keys " + String.join(", ", shared)
                + " Connect's definition holds too and are listed as Connect's"),
                List.of("connect-runtime"));
    }

    /** One key as a registry option. */
    private static ObjectNode option(ObjectMapper mapper, ConfigDef.ConfigKey k, Set<String> deprecated,
                                     Set<String> anyCase) {
        ObjectNode o = mapper.createObjectNode();
        o.put("key", k.name);
        List<String> values = new ArrayList<>();
        Number[] range = new Number[2];
        if (constraints(k.validator, values, range)) {
            anyCase.add(k.name);
        }
        String type = type(k.type);
        if (k.type == ConfigDef.Type.STRING && !values.isEmpty()) {
            type = "enum";
        }
        o.put("type", type);
        if (!values.isEmpty() && (type.equals("enum") || type.equals("list"))) {
            ArrayNode v = o.putArray("values");
            values.forEach(v::add);
        }
        if (range[0] != null) {
            o.put("min", range[0].doubleValue());
        }
        if (range[1] != null) {
            o.put("max", range[1].doubleValue());
        }
        if (k.defaultValue == ConfigDef.NO_DEFAULT_VALUE) {
            o.put("required", true);
        } else {
            String d = ConfigDef.convertToString(k.defaultValue, k.type);
            if (d != null) {
                o.put("default", d);
            }
        }
        if (deprecated.contains(k.name) || firstSentence(k.documentation).toLowerCase(Locale.ROOT).contains("deprecated")) {
            o.put("deprecated", true);
        }
        String doc = firstSentence(k.documentation);
        if (!doc.isEmpty()) {
            o.put("doc", doc);
        }
        return o;
    }

    private static String type(ConfigDef.Type t) {
        return switch (t) {
            case BOOLEAN -> "bool";
            case INT, LONG, SHORT -> "int";
            case DOUBLE -> "float";
            case STRING -> "string";
            case LIST -> "list";
            case CLASS -> "class";
            case PASSWORD -> "password";
        };
    }

    /**
     * Collects the fixed values (ValidString, CaseInsensitiveValidString,
     * ValidList) and the bounds (Range) a validator admits, through
     * CompositeValidator; any other validator constrains nothing that can
     * be listed. Returns whether the values are accepted in any case.
     */
    private static boolean constraints(ConfigDef.Validator v, List<String> values, Number[] range) {
        boolean anyCase = false;
        if (v instanceof ConfigDef.ValidString || v instanceof ConfigDef.CaseInsensitiveValidString) {
            for (Object s : (Collection<?>) read(v, "validStrings")) {
                values.add(String.valueOf(s));
            }
            if (v instanceof ConfigDef.CaseInsensitiveValidString) {
                // A set: its order is the JVM's, not the definition's.
                values.sort(null);
                anyCase = true;
            }
        } else if (v instanceof ConfigDef.ValidList) {
            Object inner = read(v, "validString");
            if (inner != null) {
                anyCase = constraints((ConfigDef.Validator) inner, values, range);
            }
        } else if (v instanceof ConfigDef.Range) {
            range[0] = (Number) read(v, "min");
            range[1] = (Number) read(v, "max");
        } else if (v instanceof ConfigDef.CompositeValidator) {
            for (Object inner : (List<?>) read(v, "validators")) {
                anyCase |= constraints((ConfigDef.Validator) inner, values, range);
            }
        }
        return anyCase && !values.isEmpty();
    }

    /** A field of one of ConfigDef's validators, which keep them private. */
    private static Object read(Object o, String field) {
        try {
            Field f = o.getClass().getDeclaredField(field);
            f.setAccessible(true);
            return f.get(o);
        } catch (ReflectiveOperationException | RuntimeException e) {
            throw new IllegalStateException("reading " + o.getClass().getName() + "." + field
                    + " (Kafka's ConfigDef changed?)", e);
        }
    }

    /**
     * The keys that only {@code @Deprecated} public String constants of
     * {@link #CONSTANTS} name (constants ending in _CONFIG): a key that a
     * live constant names too was not deprecated, only a spelling of its
     * constant (ProducerConfig's PARTITIONER_ADPATIVE_...).
     */
    static Set<String> deprecatedKeys() {
        Set<String> deprecated = new HashSet<>();
        Set<String> live = new HashSet<>();
        for (Class<?> c : CONSTANTS) {
            for (Field f : c.getFields()) {
                int m = f.getModifiers();
                if (!Modifier.isStatic(m) || f.getType() != String.class || !f.getName().endsWith("_CONFIG")) {
                    continue;
                }
                String key;
                try {
                    key = (String) f.get(null);
                } catch (IllegalAccessException e) {
                    throw new IllegalStateException("reading " + c.getName() + "." + f.getName(), e);
                }
                (f.isAnnotationPresent(Deprecated.class) ? deprecated : live).add(key);
            }
        }
        deprecated.removeAll(live);
        return deprecated;
    }

    private static final Pattern TAG = Pattern.compile("<[^>]*>");
    private static final Pattern SPACE = Pattern.compile("\\s+");
    private static final Pattern END = Pattern.compile("([.!?])(\\s|$)");
    private static final Set<String> ABBREVIATIONS = Set.of("e.g", "i.e", "etc", "vs", "approx");

    /**
     * The first sentence of a key's documentation, HTML tags dropped, on
     * one line, cut at a word past {@link #DOC_MAX} characters.
     */
    static String firstSentence(String doc) {
        if (doc == null) {
            return "";
        }
        String text = SPACE.matcher(TAG.matcher(doc).replaceAll("")).replaceAll(" ").trim()
                .replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", "\"").replace("&amp;", "&");
        Matcher m = END.matcher(text);
        while (m.find()) {
            String before = text.substring(0, m.start());
            int word = before.lastIndexOf(' ');
            String last = before.substring(word + 1).toLowerCase(Locale.ROOT);
            if (!ABBREVIATIONS.contains(last)) {
                text = text.substring(0, m.end(1));
                break;
            }
        }
        if (text.length() > DOC_MAX) {
            int cut = text.lastIndexOf(' ', DOC_MAX - 1);
            text = text.substring(0, cut > 0 ? cut : DOC_MAX - 1) + "…";
        }
        return text;
    }
}
