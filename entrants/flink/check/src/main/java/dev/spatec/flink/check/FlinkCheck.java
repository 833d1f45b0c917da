package dev.spatec.flink.check;

import org.apache.flink.configuration.IllegalConfigurationException;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/**
 * Prints, as JSON, what a Flink process runs with for a config.yaml: the memory Flink derives,
 * the JVM arguments its launcher builds, what the JVM makes of them, and the parallelism Flink
 * reads.
 *
 * <pre>
 * java -jar spatec-flink-check.jar CONFIG_DIR taskmanager|jobmanager [--cpus N] [--java PATH]
 * </pre>
 *
 * <p>Exit status 0 with the report; 3 with a report holding only "refused" when Flink's own
 * checks refuse the memory options (its launcher stops there too); 2 for a wrong command line;
 * 1 for anything else.
 */
public final class FlinkCheck {

    private FlinkCheck() {}

    public static void main(String[] args) throws Exception {
        if (args.length < 2 || args.length % 2 != 0) {
            usage();
            return;
        }
        Path dir = Path.of(args[0]);
        Launcher.Process process;
        try {
            process = Launcher.Process.of(args[1]);
        } catch (IllegalArgumentException e) {
            System.err.println(e.getMessage());
            usage();
            return;
        }
        double cpus = 0;
        String java = "java";
        for (int i = 2; i < args.length; i += 2) {
            switch (args[i]) {
                case "--cpus" -> cpus = Double.parseDouble(args[i + 1]);
                case "--java" -> java = args[i + 1];
                default -> {
                    usage();
                    return;
                }
            }
        }

        // One empty directory for the shell of the launcher to run in, then for the JVM's log
        // files.
        Path scratch = Files.createTempDirectory("spatec-flink-check");
        int status;
        try {
            status = report(dir, process, cpus, java, scratch);
        } finally {
            try (Stream<Path> s = Files.walk(scratch)) {
                for (Path p : s.sorted(Comparator.reverseOrder()).toList()) {
                    Files.delete(p);
                }
            }
        }
        System.exit(status);
    }

    /** Prints the report and returns the exit status. */
    private static int report(
            Path dir, Launcher.Process process, double cpus, String java, Path scratch)
            throws Exception {
        Json out = new Json();
        out.put("process", process.name);
        Launcher.Derived d;
        try {
            d = Launcher.derive(dir, process, scratch);
        } catch (IllegalConfigurationException e) {
            out.put("refused", messages(e));
            System.out.println(out);
            return 3;
        } catch (IllegalArgumentException e) {
            System.err.println(e.getMessage());
            return 1;
        }
        out.put("memory", d.memory());
        out.put("flinkJvmParameters", d.flinkJvmParameters());
        out.put("javaOptsAll", d.javaOptsAll());
        out.put("javaOptsProcess", d.javaOptsProcess());
        out.put("jvmArguments", d.jvmArguments());
        out.put("parallelismDefault", d.parallelismDefault());
        out.put("numberOfTaskSlots", d.numberOfTaskSlots());

        JvmProbe.Flags f = JvmProbe.probe(java, d.jvmArguments(), cpus, scratch);
        Json jvm = new Json();
        jvm.put("maxHeapSize", f.maxHeapSize());
        jvm.put("heapRegionSize", f.heapRegionSize());
        jvm.put("maxDirectMemorySize", f.maxDirectMemorySize());
        jvm.put("maxMetaspaceSize", f.maxMetaspaceSize());
        jvm.put("objectAlignmentInBytes", f.objectAlignmentInBytes());
        jvm.put("useCompressedOops", f.useCompressedOops());
        jvm.put("compressedOopsMode", f.compressedOopsMode());
        jvm.put("gc", f.gc());
        jvm.put("activeProcessors", f.activeProcessors());
        jvm.put("version", f.version());
        jvm.put("command", f.command());
        out.put("jvm", jvm);
        System.out.println(out);
        return 0;
    }

    /** Every message of an exception's chain, outermost first. */
    static String messages(Throwable t) {
        StringBuilder sb = new StringBuilder();
        for (Throwable c = t; c != null; c = c.getCause()) {
            if (sb.length() > 0) {
                sb.append(": ");
            }
            sb.append(c.getMessage());
        }
        return sb.toString();
    }

    private static void usage() {
        System.err.println(
                "usage: spatec-flink-check CONFIG_DIR taskmanager|jobmanager [--cpus N] [--java PATH]");
        System.exit(2);
    }

    /** A JSON object of strings, numbers, booleans, lists of strings and objects, in order. */
    static final class Json {
        private final StringBuilder sb = new StringBuilder("{");

        void put(String key, Object value) throws IOException {
            if (sb.length() > 1) {
                sb.append(',');
            }
            string(sb, key);
            sb.append(':');
            value(sb, value);
        }

        @Override
        public String toString() {
            return sb + "}";
        }

        private static void value(StringBuilder sb, Object v) throws IOException {
            if (v == null) {
                sb.append("null");
            } else if (v instanceof String s) {
                string(sb, s);
            } else if (v instanceof Number || v instanceof Boolean) {
                sb.append(v);
            } else if (v instanceof Json j) {
                sb.append(j);
            } else if (v instanceof List<?> l) {
                sb.append('[');
                for (int i = 0; i < l.size(); i++) {
                    if (i > 0) {
                        sb.append(',');
                    }
                    value(sb, l.get(i));
                }
                sb.append(']');
            } else if (v instanceof Map<?, ?> m) {
                Json j = new Json();
                for (Map.Entry<?, ?> e : m.entrySet()) {
                    j.put(e.getKey().toString(), e.getValue());
                }
                sb.append(j);
            } else {
                throw new IOException("no JSON for " + v.getClass());
            }
        }

        private static void string(StringBuilder sb, String s) {
            sb.append('"');
            for (char c : s.toCharArray()) {
                switch (c) {
                    case '"' -> sb.append("\\\"");
                    case '\\' -> sb.append("\\\\");
                    case '\n' -> sb.append("\\n");
                    case '\t' -> sb.append("\\t");
                    case '\r' -> sb.append("\\r");
                    default -> {
                        if (c < 0x20) {
                            sb.append(String.format("\\u%04x", (int) c));
                        } else {
                            sb.append(c);
                        }
                    }
                }
            }
            sb.append('"');
        }
    }
}
