package dev.spatec.flink.check;

import org.apache.flink.annotation.docs.Documentation;
import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ConfigurationUtils;
import org.apache.flink.configuration.FallbackKey;
import org.apache.flink.configuration.MemorySize;
import org.apache.flink.configuration.description.Description;
import org.apache.flink.configuration.description.Formatter;
import org.apache.flink.configuration.description.TextElement;

import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.text.BreakIterator;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;

/**
 * Prints, as the JSON of a spatec option registry (options/registry.go), every option Flink
 * declares in the jars it is given: each public static ConfigOption field of their classes, read
 * by reflection as Flink's own documentation generator reads them, with the deprecated and
 * fallback keys each one still reads.
 *
 * <pre>
 * java -cp FLINK_JARS:spatec-flink-check.jar dev.spatec.flink.check.Options JAR...
 * </pre>
 *
 * <p>The jars named are the ones scanned; the classes are loaded from the classpath, so the
 * Flink jars come first on it. What cannot be loaded is listed on stderr and fails the run (exit
 * 1): a registry with a hole in it would refuse keys Flink reads.
 */
public final class Options {

    private Options() {}

    /** The field descriptor every class holding a ConfigOption field carries. */
    private static final byte[] DESCRIPTOR =
            "Lorg/apache/flink/configuration/ConfigOption;".getBytes(StandardCharsets.UTF_8);

    /** The longest doc a registry keeps. */
    private static final int DOC_MAX = 160;

    /** One option as the registry writes it. */
    static final class Opt {
        String key;
        String type;
        List<String> values = List.of();
        String def;
        boolean deprecated;
        String use = "";
        TreeSet<String> fallback = new TreeSet<>();
        String doc = "";
        /** Where it is declared ("org.apache.flink.configuration.X.FIELD"), for conflicts. */
        String where;

        /** What two declarations of one key must agree on. */
        String shape() {
            return type + " " + values + " " + def;
        }
    }

    /** What a scan found: the options by key, and what it could not read. */
    static final class Scan {
        final TreeMap<String, Opt> options = new TreeMap<>();
        final List<String> unreadable = new ArrayList<>();
        final List<String> conflicts = new ArrayList<>();
        final List<String> nonPublic = new ArrayList<>();
        int classes;
        int fields;
    }

    public static void main(String[] args) throws Exception {
        if (args.length == 0) {
            System.err.println(
                    "usage: java -cp FLINK_JARS:spatec-flink-check.jar"
                            + " dev.spatec.flink.check.Options JAR...");
            System.exit(2);
        }
        List<Path> jars = new ArrayList<>();
        for (String a : args) {
            jars.add(Path.of(a));
        }
        Scan s = scan(jars, Thread.currentThread().getContextClassLoader());
        System.err.printf(
                "%d classes with ConfigOption fields, %d public static ConfigOption fields"
                        + " (%d non-public ones left out), %d keys%n",
                s.classes, s.fields, s.nonPublic.size(), s.options.size());
        for (String n : s.nonPublic) {
            System.err.println("not public: " + n);
        }
        for (String c : s.conflicts) {
            System.err.println("two readings: " + c);
        }
        if (!s.unreadable.isEmpty()) {
            for (String u : s.unreadable) {
                System.err.println("unreadable: " + u);
            }
            System.exit(1);
        }
        StringBuilder source = new StringBuilder("every public static ConfigOption field of the");
        source.append(" classes of ");
        for (int i = 0; i < jars.size(); i++) {
            Path j = jars.get(i);
            source.append(i == 0 ? "" : i == jars.size() - 1 ? " and " : ", ");
            source.append(j.getFileName()).append(" (sha256 ").append(sha256(j)).append(")");
        }
        source.append(", by reflection, with their deprecated and fallback keys");
        PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
        out.print(json(version(), source.toString(), s.options));
        out.flush();
    }

    /** Flink's version as the distribution names itself. */
    private static String version() {
        try {
            Class<?> info =
                    Class.forName("org.apache.flink.runtime.util.EnvironmentInformation");
            return (String) info.getMethod("getVersion").invoke(null);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("Flink's version: " + e, e);
        }
    }

    /** Scans the classes of jars, loading them with loader. */
    static Scan scan(List<Path> jars, ClassLoader loader) throws IOException {
        // Class name to the names of its static ConfigOption fields, read from the class file
        // itself, so that a class Flink cannot load here is known to hold options or not.
        TreeMap<String, List<String>> names = new TreeMap<>();
        for (Path jar : jars) {
            try (JarFile jf = new JarFile(jar.toFile())) {
                for (JarEntry e : (Iterable<JarEntry>) jf.stream()::iterator) {
                    String n = e.getName();
                    if (!n.endsWith(".class")
                            || n.startsWith("META-INF/")
                            || n.endsWith("module-info.class")) {
                        continue;
                    }
                    byte[] b;
                    try (InputStream in = jf.getInputStream(e)) {
                        b = in.readAllBytes();
                    }
                    if (contains(b, DESCRIPTOR)) {
                        List<String> fields = optionFields(b);
                        if (!fields.isEmpty()) {
                            names.put(n.substring(0, n.length() - 6).replace('/', '.'), fields);
                        }
                    }
                }
            }
        }
        Scan s = new Scan();
        // Declarations in class-name order: the first of two that disagree is kept.
        List<Opt> declared = new ArrayList<>();
        for (Map.Entry<String, List<String>> c : names.entrySet()) {
            String name = c.getKey();
            Field[] fields;
            try {
                fields = Class.forName(name, false, loader).getDeclaredFields();
            } catch (Throwable t) {
                s.unreadable.add(name + " (" + String.join(", ", c.getValue()) + "): " + t);
                continue;
            }
            boolean any = false;
            for (Field f : fields) {
                int m = f.getModifiers();
                if (!Modifier.isStatic(m) || !ConfigOption.class.isAssignableFrom(f.getType())) {
                    continue;
                }
                if (!Modifier.isPublic(m) || !Modifier.isPublic(f.getDeclaringClass().getModifiers())) {
                    s.nonPublic.add(name + "." + f.getName());
                    continue;
                }
                ConfigOption<?> o;
                try {
                    o = (ConfigOption<?>) f.get(null);
                } catch (Throwable t) {
                    s.unreadable.add(name + "." + f.getName() + ": " + t);
                    continue;
                }
                if (o == null) {
                    continue;
                }
                any = true;
                s.fields++;
                try {
                    declared.add(option(o, f));
                } catch (ReflectiveOperationException | RuntimeException e) {
                    s.unreadable.add(name + "." + f.getName() + ": " + e);
                }
            }
            if (any) {
                s.classes++;
            }
        }
        // A key declared twice: the declaration not deprecated wins, then the first.
        for (Opt o : declared) {
            Opt had = s.options.get(o.key);
            if (had == null || (had.deprecated && !o.deprecated)) {
                if (had != null) {
                    o.fallback.addAll(had.fallback);
                }
                s.options.put(o.key, o);
            } else {
                had.fallback.addAll(o.fallback);
                if (!had.shape().equals(o.shape()) && !o.deprecated) {
                    s.conflicts.add(
                            o.key + ": " + had.where + " (" + had.shape() + ") kept over "
                                    + o.where + " (" + o.shape() + ")");
                }
            }
        }
        // Each deprecated or fallback key, as an option of its own that names the key to use,
        // unless it is declared itself.
        TreeMap<String, Opt> aliases = new TreeMap<>();
        for (Opt o : s.options.values()) {
            for (String k : o.fallback) {
                if (s.options.containsKey(k)) {
                    continue;
                }
                Opt had = aliases.get(k);
                if (had != null) {
                    s.conflicts.add(k + ": a fallback of " + had.use + " and of " + o.key + "; use names "
                            + had.use);
                    continue;
                }
                Opt a = new Opt();
                a.key = k;
                a.type = o.type;
                a.values = o.values;
                a.deprecated = true;
                a.use = o.key;
                a.doc = o.doc;
                a.where = o.where;
                aliases.put(k, a);
            }
        }
        s.options.putAll(aliases);
        return s;
    }

    /** The registry's option for the ConfigOption o of field f. */
    static Opt option(ConfigOption<?> o, Field f) throws ReflectiveOperationException {
        Opt r = new Opt();
        r.where = f.getDeclaringClass().getName() + "." + f.getName();
        // A suffix option's key follows a prefix (metrics.reporter.<name>), as Flink's
        // documentation writes it.
        String prefix = "";
        Documentation.SuffixOption suffix = f.getAnnotation(Documentation.SuffixOption.class);
        if (suffix != null) {
            prefix = suffix.value() + ".";
        }
        r.key = prefix + o.key();
        for (FallbackKey k : o.fallbackKeys()) {
            r.fallback.add(prefix + k.getKey());
        }
        Class<?> clazz = (Class<?>) invoke(o, "getClazz");
        boolean list = (Boolean) invoke(o, "isList");
        r.type = list ? "list" : type(clazz);
        if (!list && clazz.isEnum()) {
            List<String> values = new ArrayList<>();
            for (Object c : clazz.getEnumConstants()) {
                // Flink matches an enum's value against each constant's toString.
                values.add(c.toString());
            }
            r.values = values;
        }
        if (o.hasDefaultValue() && o.defaultValue() != null) {
            r.def = text(o.defaultValue());
        }
        r.deprecated = deprecated(f);
        r.doc = firstSentence(plain(o.description()));
        return r;
    }

    /** Calls ConfigOption's package-private accessor name. */
    private static Object invoke(ConfigOption<?> o, String name)
            throws ReflectiveOperationException {
        Method m = ConfigOption.class.getDeclaredMethod(name);
        m.setAccessible(true);
        return m.invoke(o);
    }

    /** The registry's type of an option's value class. */
    static String type(Class<?> c) {
        if (c == Duration.class) {
            return "duration";
        } else if (c == MemorySize.class) {
            return "size";
        } else if (c.isEnum()) {
            return "enum";
        } else if (Map.class.isAssignableFrom(c)) {
            return "map";
        } else if (c == Boolean.class) {
            return "bool";
        } else if (c == Integer.class || c == Long.class) {
            return "int";
        } else if (c == Double.class || c == Float.class) {
            return "float";
        } else if (c == String.class) {
            return "string";
        }
        throw new IllegalArgumentException("an option of class " + c.getName());
    }

    /** A default as Flink writes it back into a configuration. */
    static String text(Object v) {
        return ConfigurationUtils.convertValue(v, String.class);
    }

    /** Whether the field, its class or a class around it is deprecated. */
    private static boolean deprecated(Field f) {
        if (f.isAnnotationPresent(Deprecated.class)) {
            return true;
        }
        for (Class<?> c = f.getDeclaringClass(); c != null; c = c.getEnclosingClass()) {
            if (c.isAnnotationPresent(Deprecated.class)) {
                return true;
            }
        }
        return false;
    }

    /** A description as plain text: links by their text, lists joined. */
    static String plain(Description d) {
        return new Plain().format(d);
    }

    /** Flink's description formatter, writing no markup. */
    private static final class Plain extends Formatter {
        @Override
        protected void formatLink(StringBuilder b, String link, String description) {
            b.append(description.isEmpty() ? link : description);
        }

        @Override
        protected void formatLineBreak(StringBuilder b) {
            b.append('\n');
        }

        @Override
        protected void formatText(
                StringBuilder b,
                String format,
                String[] elements,
                EnumSet<TextElement.TextStyle> styles) {
            b.append(String.format(format, (Object[]) elements));
        }

        @Override
        protected void formatList(StringBuilder b, String[] entries) {
            b.append(String.join("; ", entries));
        }

        @Override
        protected Formatter newInstance() {
            return new Plain();
        }
    }

    /** The first sentence of text, on one line, at most DOC_MAX characters. */
    static String firstSentence(String text) {
        String t = text.strip().replaceAll("\\s+", " ");
        BreakIterator it = BreakIterator.getSentenceInstance(Locale.ROOT);
        it.setText(t);
        int end = it.next();
        String s = (end == BreakIterator.DONE ? t : t.substring(0, end)).strip();
        if (s.length() > DOC_MAX) {
            int cut = s.lastIndexOf(' ', DOC_MAX - 1);
            s = s.substring(0, cut > 0 ? cut : DOC_MAX - 1) + "…";
        }
        return s;
    }

    /**
     * The names of the static fields of type ConfigOption a class file declares, from its
     * constant pool and field table (JVMS 4.1, 4.4, 4.5).
     */
    static List<String> optionFields(byte[] b) {
        java.nio.ByteBuffer in = java.nio.ByteBuffer.wrap(b);
        in.position(8); // magic, minor and major versions
        int count = Short.toUnsignedInt(in.getShort());
        String[] utf8 = new String[count];
        for (int i = 1; i < count; i++) {
            int tag = Byte.toUnsignedInt(in.get());
            switch (tag) {
                case 1 -> {
                    int len = Short.toUnsignedInt(in.getShort());
                    utf8[i] = modifiedUtf8(b, in.position(), len);
                    in.position(in.position() + len);
                }
                case 7, 8, 16, 19, 20 -> in.position(in.position() + 2);
                case 15 -> in.position(in.position() + 3);
                case 3, 4, 9, 10, 11, 12, 17, 18 -> in.position(in.position() + 4);
                case 5, 6 -> {
                    in.position(in.position() + 8);
                    i++; // a long or a double takes two entries
                }
                default -> throw new IllegalArgumentException("constant pool tag " + tag);
            }
        }
        in.position(in.position() + 6); // access flags, this class, super class
        int interfaces = Short.toUnsignedInt(in.getShort());
        in.position(in.position() + 2 * interfaces);
        String descriptor = new String(DESCRIPTOR, StandardCharsets.UTF_8);
        List<String> fields = new ArrayList<>();
        for (int n = Short.toUnsignedInt(in.getShort()); n > 0; n--) {
            int access = Short.toUnsignedInt(in.getShort());
            String name = utf8[Short.toUnsignedInt(in.getShort())];
            String desc = utf8[Short.toUnsignedInt(in.getShort())];
            for (int a = Short.toUnsignedInt(in.getShort()); a > 0; a--) {
                in.getShort(); // the attribute's name
                int len = in.getInt();
                in.position(in.position() + len);
            }
            if ((access & Modifier.STATIC) != 0 && descriptor.equals(desc)) {
                fields.add(name);
            }
        }
        return fields;
    }

    /** The text of a constant pool string; the names compared here are plain ASCII. */
    private static String modifiedUtf8(byte[] b, int off, int len) {
        return new String(b, off, len, StandardCharsets.UTF_8);
    }

    private static boolean contains(byte[] hay, byte[] needle) {
        outer:
        for (int i = 0; i + needle.length <= hay.length; i++) {
            for (int j = 0; j < needle.length; j++) {
                if (hay[i + j] != needle[j]) {
                    continue outer;
                }
            }
            return true;
        }
        return false;
    }

    private static String sha256(Path p) throws IOException, NoSuchAlgorithmException {
        MessageDigest md = MessageDigest.getInstance("SHA-256");
        try (InputStream in = Files.newInputStream(p)) {
            byte[] buf = new byte[1 << 16];
            for (int n; (n = in.read(buf)) > 0; ) {
                md.update(buf, 0, n);
            }
        }
        return HexFormat.of().formatHex(md.digest());
    }

    /** The registry as JSON, options in key order. */
    static String json(String version, String source, TreeMap<String, Opt> options) {
        StringBuilder b = new StringBuilder();
        b.append("{\n  \"system\": \"Flink\",\n  \"version\": ").append(quote(version));
        b.append(",\n  \"source\": ").append(quote(source)).append(",\n  \"options\": [");
        boolean first = true;
        for (Opt o : options.values()) {
            b.append(first ? "\n" : ",\n");
            first = false;
            b.append("    {\n      \"key\": ").append(quote(o.key));
            b.append(",\n      \"type\": ").append(quote(o.type));
            if (!o.values.isEmpty()) {
                b.append(",\n      \"values\": ").append(array(o.values, "      "));
            }
            if (o.def != null) {
                b.append(",\n      \"default\": ").append(quote(o.def));
            }
            if (o.deprecated) {
                b.append(",\n      \"deprecated\": true");
            }
            if (!o.use.isEmpty()) {
                b.append(",\n      \"use\": ").append(quote(o.use));
            }
            if (!o.fallback.isEmpty()) {
                b.append(",\n      \"fallback\": ")
                        .append(array(new ArrayList<>(o.fallback), "      "));
            }
            if (!o.doc.isEmpty()) {
                b.append(",\n      \"doc\": ").append(quote(o.doc));
            }
            b.append("\n    }");
        }
        b.append(first ? "]\n}\n" : "\n  ]\n}\n");
        return b.toString();
    }

    private static String array(List<String> items, String indent) {
        StringBuilder b = new StringBuilder("[");
        for (int i = 0; i < items.size(); i++) {
            b.append(i == 0 ? "\n" : ",\n").append(indent).append("  ").append(quote(items.get(i)));
        }
        return b.append("\n").append(indent).append("]").toString();
    }

    /** s as a JSON string, escaped as Go's encoding/json escapes it. */
    static String quote(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            switch (c) {
                case '"' -> b.append("\\\"");
                case '\\' -> b.append("\\\\");
                case '\n' -> b.append("\\n");
                case '\r' -> b.append("\\r");
                case '\t' -> b.append("\\t");
                case '<' -> b.append("\\u003c");
                case '>' -> b.append("\\u003e");
                case '&' -> b.append("\\u0026");
                case '\u2028' -> b.append("\\u2028");
                case '\u2029' -> b.append("\\u2029");
                default -> {
                    if (c < 0x20) {
                        b.append(String.format("\\u%04x", (int) c));
                    } else {
                        b.append(c);
                    }
                }
            }
        }
        return b.append('"').toString();
    }
}
