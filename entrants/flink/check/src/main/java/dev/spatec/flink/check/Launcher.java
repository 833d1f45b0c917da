package dev.spatec.flink.check;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.CoreOptions;
import org.apache.flink.configuration.MemorySize;
import org.apache.flink.configuration.TaskManagerOptions;
import org.apache.flink.runtime.clusterframework.TaskExecutorProcessSpec;
import org.apache.flink.runtime.clusterframework.TaskExecutorProcessUtils;
import org.apache.flink.runtime.jobmanager.JobManagerProcessSpec;
import org.apache.flink.runtime.jobmanager.JobManagerProcessUtils;
import org.apache.flink.runtime.util.bash.FlinkConfigLoader;
import org.apache.flink.runtime.util.config.memory.ProcessMemoryUtils;
import org.apache.flink.runtime.util.config.memory.taskmanager.TaskExecutorFlinkMemory;
import org.apache.flink.util.FlinkException;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What Flink 2.2.1's launch scripts do for one process, with Flink's own code wherever the
 * scripts call into it, and the scripts' shell steps written out where they do not.
 *
 * <p>The scripts are those of the distribution the arm runs (the apache-flink 2.2.1 wheel's
 * pyflink/bin); the line numbers cited are theirs.
 */
final class Launcher {

    /** A Flink process, as the container's jvm.flink names it. */
    enum Process {
        TASKMANAGER("taskmanager"),
        JOBMANAGER("jobmanager");

        final String name;

        Process(String name) {
            this.name = name;
        }

        static Process of(String name) {
            for (Process p : values()) {
                if (p.name.equals(name)) {
                    return p;
                }
            }
            throw new IllegalArgumentException(
                    "process " + name + ": want taskmanager or jobmanager");
        }
    }

    /** What the launcher derives for a process. */
    record Derived(
            Configuration configuration,
            Map<String, Long> memory,
            String flinkJvmParameters,
            String javaOptsAll,
            String javaOptsProcess,
            List<String> jvmArguments) {

        /** parallelism.default as the job's environment reads it. */
        int parallelismDefault() {
            return configuration.get(CoreOptions.DEFAULT_PARALLELISM);
        }

        /** taskmanager.numberOfTaskSlots as the TaskManager reads it. */
        int numberOfTaskSlots() {
            return configuration.get(TaskManagerOptions.NUM_TASK_SLOTS);
        }
    }

    /**
     * flink-console.sh:119 and 128, the shell's part: the options evaluated once more (`eval
     * echo`, which takes off the quotes Flink's YAML rendering puts around a value YAML must
     * quote, one with a ": " or a " #"), then both variables expanded unquoted, so split on
     * blanks and matched as file patterns (a pattern that matches nothing, as the harness's
     * -Xlog:gc*:file=…, stays as written). Run by bash itself, in an empty directory; it
     * prints the words the JVM receives, NUL-terminated.
     */
    private static final String CONSOLE =
            "FLINK_ENV_JAVA_OPTS=$(eval echo ${FLINK_ENV_JAVA_OPTS})\n"
                    + "for a in $JVM_ARGS ${FLINK_ENV_JAVA_OPTS}; do printf '%s\\0' \"$a\"; done\n";

    private Launcher() {}

    /**
     * Derives process's memory and JVM arguments from the config.yaml in confDir.
     *
     * @param scratch an empty directory for the shell to run in
     * @throws org.apache.flink.configuration.IllegalConfigurationException when Flink refuses the
     *     memory options, as its launcher would
     */
    static Derived derive(Path confDir, Process process, Path scratch)
            throws FlinkException, IOException, InterruptedException {
        // bash-java-utils.sh:114 runs BashJavaUtils with `--configDir <dir>` and the process's
        // own arguments: none for `taskmanager.sh start-foreground`, `--job-classname …` for
        // standalone-job.sh, which FlinkConfigLoader drops. FlinkConfigLoader reads the file
        // with GlobalConfiguration.loadConfiguration, which flattens nested YAML keys.
        String[] bashJavaUtilsArgs = {"--configDir", confDir.toString()};
        Configuration conf = FlinkConfigLoader.loadConfiguration(bashJavaUtilsArgs);

        // BashJavaUtils' GET_TM_RESOURCE_PARAMS and GET_JM_RESOURCE_PARAMS, as 2.2.1 writes
        // them: the spec straight from the configuration (2.x has no legacy heap option to map
        // first), and its JVM parameters, which bash-java-utils.sh:208-209 appends to
        // JVM_ARGS.
        Map<String, Long> memory = new LinkedHashMap<>();
        String jvmParameters;
        if (process == Process.TASKMANAGER) {
            TaskExecutorProcessSpec spec = TaskExecutorProcessUtils.processSpecFromConfig(conf);
            TaskExecutorFlinkMemory m = spec.getFlinkMemory();
            memory.put("jvmHeap", bytes(spec.getJvmHeapMemorySize()));
            memory.put("frameworkHeap", bytes(m.getFrameworkHeap()));
            memory.put("taskHeap", bytes(m.getTaskHeap()));
            memory.put("frameworkOffHeap", bytes(m.getFrameworkOffHeap()));
            memory.put("taskOffHeap", bytes(m.getTaskOffHeap()));
            memory.put("managed", bytes(m.getManaged()));
            memory.put("network", bytes(m.getNetwork()));
            memory.put("jvmDirect", bytes(spec.getJvmDirectMemorySize()));
            memory.put("metaspace", bytes(spec.getJvmMetaspaceSize()));
            memory.put("overhead", bytes(spec.getJvmOverheadSize()));
            memory.put("totalFlink", bytes(spec.getTotalFlinkMemorySize()));
            memory.put("totalProcess", bytes(spec.getTotalProcessMemorySize()));
            jvmParameters = ProcessMemoryUtils.generateJvmParametersStr(spec);
        } else {
            JobManagerProcessSpec spec = JobManagerProcessUtils.processSpecFromConfig(conf);
            memory.put("jvmHeap", bytes(spec.getJvmHeapMemorySize()));
            memory.put("offHeap", bytes(spec.getJvmDirectMemorySize()));
            memory.put("metaspace", bytes(spec.getJvmMetaspaceSize()));
            memory.put("overhead", bytes(spec.getJvmOverheadSize()));
            memory.put("totalFlink", bytes(spec.getTotalFlinkMemorySize()));
            memory.put("totalProcess", bytes(spec.getTotalProcessMemorySize()));
            jvmParameters = JobManagerProcessUtils.generateJvmParametersStr(spec, conf);
        }

        // config.sh:217 reads the JVM options not from the file but from Flink's flattened
        // rendering of the loaded configuration (UPDATE_AND_GET_FLINK_CONFIGURATION -flatten),
        // so a nested key reaches them too.
        List<String> flattened =
                FlinkConfigLoader.loadAndModifyConfiguration(
                        new String[] {"--configDir", confDir.toString(), "-flatten"});

        // config.sh:277-288: the options of every process. (Line 290-293 adds
        // -Djava.security.manager=allow on a JDK newer than 17 only; the image's is 17.)
        String all = readFromConfig(flattened, "env.java.opts.all", "");
        if (all.isEmpty()) {
            all = readFromConfig(flattened, "env.java.opts", "");
        }
        all = readFromConfig(flattened, "env.java.default-opts.all", "") + " " + all;
        all = "-XX:+IgnoreUnrecognizedVMOptions " + stripDoubleQuotes(all);

        // config.sh:296-310: the process's own options.
        String own =
                stripDoubleQuotes(
                        readFromConfig(flattened, "env.java.default-opts." + process.name, "")
                                + " "
                                + readFromConfig(flattened, "env.java.opts." + process.name, ""));

        // taskmanager.sh:47, standalone-job.sh:41 (jobmanager.sh:53 alike): the process's
        // options after those of every process. (taskmanager.sh:42-44 would add -XX:+UseG1GC
        // when both were empty; they never are, since config.sh:287 always puts
        // IgnoreUnrecognizedVMOptions first.)
        String flinkEnvJavaOpts = all + " " + own;

        // flink-console.sh:128: `exec java $JVM_ARGS ${FLINK_ENV_JAVA_OPTS} <log settings>
        // -classpath … <main class> <args>`, JVM_ARGS being empty (config.sh:359-361) but for
        // the computed parameters (bash-java-utils.sh:209). Later options win in the JVM, so
        // the order is the point. The log settings are -Dlog* system properties, which size
        // nothing, and are left out.
        List<String> args = shell(" " + jvmParameters, flinkEnvJavaOpts, scratch);
        return new Derived(conf, memory, jvmParameters, all, own, args);
    }

    /**
     * config.sh:104-112 (readFromConfig): the value of the last line that starts with key and a
     * colon, everything after the first colon, trimmed of spaces; def when there is none.
     */
    static String readFromConfig(List<String> lines, String key, String def) {
        String value = "";
        for (String line : lines) {
            String l = line.replaceFirst("^ *", "");
            if (!l.startsWith(key)) {
                continue;
            }
            String rest = l.substring(key.length()).replaceFirst("^ *", "");
            if (rest.startsWith(":")) {
                value = rest.substring(1).replaceAll("^ +| +$", "");
            }
        }
        return value.isEmpty() ? def : value;
    }

    /** The `sed -e 's/^"//' -e 's/"$//'` of config.sh:287, 301 and 309. */
    static String stripDoubleQuotes(String s) {
        if (s.startsWith("\"")) {
            s = s.substring(1);
        }
        if (s.endsWith("\"")) {
            s = s.substring(0, s.length() - 1);
        }
        return s;
    }

    /**
     * The words bash makes of JVM_ARGS and FLINK_ENV_JAVA_OPTS in flink-console.sh. A `$` or a
     * backquote would expand what the container's environment holds, which this model does
     * not have: such options are refused rather than guessed at.
     */
    static List<String> shell(String jvmArgs, String flinkEnvJavaOpts, Path scratch)
            throws IOException, InterruptedException {
        if (flinkEnvJavaOpts.contains("$") || flinkEnvJavaOpts.contains("`")) {
            throw new IllegalArgumentException(
                    "the JVM options expand the container's environment, which this model does"
                            + " not have: "
                            + flinkEnvJavaOpts);
        }
        ProcessBuilder pb = new ProcessBuilder("bash", "-c", CONSOLE).directory(scratch.toFile());
        Map<String, String> env = pb.environment();
        String path = env.get("PATH");
        env.clear();
        env.put("PATH", path == null ? "/usr/bin:/bin" : path);
        env.put("JVM_ARGS", jvmArgs);
        env.put("FLINK_ENV_JAVA_OPTS", flinkEnvJavaOpts);
        pb.redirectError(ProcessBuilder.Redirect.INHERIT);
        java.lang.Process p = pb.start();
        p.getOutputStream().close();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (p.waitFor() != 0) {
            throw new IOException("bash failed on the JVM options: " + flinkEnvJavaOpts);
        }
        List<String> words = new ArrayList<>();
        int start = 0;
        for (int i = out.indexOf('\0'); i >= 0; i = out.indexOf('\0', start)) {
            words.add(out.substring(start, i));
            start = i + 1;
        }
        return List.copyOf(words);
    }

    private static long bytes(MemorySize size) {
        return size.getBytes();
    }
}
