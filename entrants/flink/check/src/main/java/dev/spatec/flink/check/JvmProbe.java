package dev.spatec.flink.check;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Asks a JVM what it makes of a set of arguments: it starts with them and prints its final
 * flags and its compressed-oops mode, and nothing else runs.
 */
final class JvmProbe {

    /** What the JVM decided. */
    record Flags(
            long maxHeapSize,
            long heapRegionSize,
            long maxDirectMemorySize,
            long maxMetaspaceSize,
            int objectAlignmentInBytes,
            boolean useCompressedOops,
            String compressedOopsMode,
            String gc,
            int activeProcessors,
            String version,
            List<String> command) {}

    /**
     * Appended after Flink's arguments. Flink puts -Xms equal to -Xmx, and the JVM commits its
     * initial heap at once: a heap larger than this machine's memory (a 30 GiB heap on a 24 GiB
     * host without swap) is refused at start (mmap ENOMEM), though the bench host would commit
     * it. A later -Xms lowers the initial size alone; the maximum, the heap base and the
     * compressed-oops mode, which are decided from the maximum when the heap is reserved, stay
     * as Flink's arguments make them.
     */
    static final String SMALL_INITIAL_HEAP = "-Xms8m";

    /** A line of -XX:+PrintFlagsFinal: type, name, value, then its kinds and origin. */
    private static final Pattern FLAG =
            Pattern.compile("^\\s*\\S+\\s+(\\w+)\\s+:?=\\s*(.*?)\\s+\\{[^}]*\\}\\s+\\{[^}]*\\}\\s*$");

    /** gc+init's summary of the mode: "Enabled (Zero based)", "Disabled". */
    private static final Pattern OOPS = Pattern.compile("Compressed Oops: (Enabled \\((.+)\\)|Disabled)");

    /** gc+init's processors: "CPUs: 2 total, 1 available". */
    private static final Pattern CPUS = Pattern.compile("CPUs: \\d+ total, (\\d+) available");

    /** -version's first line: openjdk version "17.0.15" 2025-04-15. */
    private static final Pattern VERSION = Pattern.compile("^\\S+ version \"([^\"]+)\"");

    /**
     * A log file: an -Xlog output's file=<path> up to the next colon, or -XX:LogFile=<path>, where
     * the JVM copies its console output (#JVM.flagsLog).
     */
    private static final Pattern LOG_FILE = Pattern.compile("(file=|-XX:LogFile=)(/[^:]*)");

    /** The collectors' flags, and the names the plans give them (#JVM.gc). */
    private static final Map<String, String> COLLECTORS =
            Map.of(
                    "UseG1GC", "G1",
                    "UseZGC", "ZGC",
                    "UseSerialGC", "Serial",
                    "UseParallelGC", "Parallel",
                    "UseShenandoahGC", "Shenandoah",
                    "UseEpsilonGC", "Epsilon");

    private JvmProbe() {}

    /**
     * Starts java with args and reads its decisions.
     *
     * @param java the java launcher
     * @param args the arguments the process's launcher hands the JVM
     * @param cpus the container's CPU cap, or 0 for this machine's processors: the JVM counts a
     *     container's processors as its quota rounded up, and chooses its collector from the
     *     count (fewer than two: Serial; so does a container under 1792 MiB, which this probe
     *     does not model, on a host of more)
     * @param scratch a directory the JVM may write its log files under
     */
    static Flags probe(String java, List<String> args, double cpus, Path scratch)
            throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>();
        cmd.add(java);
        // The container's processors first: they are what the JVM finds, which any option of
        // Flink's would override.
        if (cpus > 0) {
            cmd.add("-XX:ActiveProcessorCount=" + (int) Math.ceil(cpus));
        }
        for (String a : args) {
            cmd.add(a.startsWith("-Xlog") || a.startsWith("-XX:LogFile=") ? intoScratch(a, scratch) : a);
        }
        cmd.add(SMALL_INITIAL_HEAP);
        cmd.add("-XX:+PrintFlagsFinal");
        cmd.add("-Xlog:gc+init:stdout");
        cmd.add("-version");

        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
        // Options from this process's environment would reach the JVM beside Flink's; the
        // container sets none of these.
        pb.environment().remove("JAVA_TOOL_OPTIONS");
        pb.environment().remove("JDK_JAVA_OPTIONS");
        pb.environment().remove("_JAVA_OPTIONS");
        pb.directory(scratch.toFile());
        Process p = pb.start();
        p.getOutputStream().close();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(60, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new IOException("java did not exit within 60 s: " + String.join(" ", cmd));
        }
        if (p.exitValue() != 0) {
            throw new IOException(
                    "the JVM refused Flink's arguments (exit "
                            + p.exitValue()
                            + "): "
                            + String.join(" ", cmd)
                            + "\n"
                            + out);
        }

        Map<String, String> flags = new HashMap<>();
        String mode = null;
        int processors = -1;
        String version = null;
        for (String line : out.split("\n")) {
            Matcher f = FLAG.matcher(line);
            if (f.matches()) {
                flags.put(f.group(1), f.group(2));
                continue;
            }
            Matcher v = VERSION.matcher(line);
            if (v.find()) {
                version = v.group(1);
            }
            Matcher c = CPUS.matcher(line);
            if (c.find()) {
                processors = Integer.parseInt(c.group(1));
            }
            Matcher o = OOPS.matcher(line);
            if (o.find()) {
                mode = o.group(2) == null ? "Disabled" : o.group(2);
            }
        }
        boolean oops = bool(flags, "UseCompressedOops");
        if (mode == null) {
            // Collectors without a gc+init summary; Disabled is the one mode the flag alone
            // tells.
            if (oops) {
                throw new IOException("the JVM printed no compressed-oops mode:\n" + out);
            }
            mode = "Disabled";
        }
        String gc = null;
        for (Map.Entry<String, String> c : COLLECTORS.entrySet()) {
            if (flags.containsKey(c.getKey()) && bool(flags, c.getKey())) {
                gc = c.getValue();
            }
        }
        return new Flags(
                number(flags, "MaxHeapSize"),
                // G1 rounds the heap up to a whole number of its regions;
                // the other collectors print 0.
                flags.containsKey("G1HeapRegionSize") ? number(flags, "G1HeapRegionSize") : 0,
                number(flags, "MaxDirectMemorySize"),
                number(flags, "MaxMetaspaceSize"),
                (int) number(flags, "ObjectAlignmentInBytes"),
                oops,
                mode,
                gc,
                processors,
                version,
                List.copyOf(cmd));
    }

    /**
     * The same -Xlog or -XX:LogFile option with its file under scratch: the executor makes the
     * files' directory in the container (#JVM.gcLog, #JVM.flagsLog), and a JVM that cannot open
     * its GC log refuses to start (one that cannot open its LogFile warns, and writes none).
     */
    static String intoScratch(String option, Path scratch) throws IOException {
        Matcher m = LOG_FILE.matcher(option);
        StringBuilder sb = new StringBuilder();
        while (m.find()) {
            Path moved = scratch.resolve(m.group(2).substring(1));
            Files.createDirectories(moved.getParent());
            m.appendReplacement(sb, Matcher.quoteReplacement(m.group(1) + moved));
        }
        m.appendTail(sb);
        return sb.toString();
    }

    private static boolean bool(Map<String, String> flags, String name) throws IOException {
        String v = flags.get(name);
        if (!"true".equals(v) && !"false".equals(v)) {
            throw new IOException("the JVM printed no boolean " + name + ": " + v);
        }
        return v.equals("true");
    }

    private static long number(Map<String, String> flags, String name) throws IOException {
        String v = flags.get(name);
        if (v == null) {
            throw new IOException("the JVM printed no " + name);
        }
        return Long.parseLong(v);
    }
}
