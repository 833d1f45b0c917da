package dev.spatec.flink.check;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.apache.flink.configuration.MemorySize;
import org.apache.flink.configuration.TaskManagerOptions;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * What Flink reads from a config.yaml, and what the JVM then runs with, for the shapes a
 * config.yaml can take that a check of its flat keys alone would misread.
 */
class LauncherTest {

    private static final long MiB = 1L << 20;

    /** The JDK running the tests: the one the checker is built for. */
    private static final String JAVA =
            Path.of(System.getProperty("java.home"), "bin", "java").toString();

    /**
     * A TaskManager sized as the arm sizes one, every component fixed: a heap of exactly
     * 1024 MiB, which every collector's heap alignment divides (a size Flink derives from a
     * fraction is rounded up by the JVM).
     */
    private static final String FIXED_TM =
            String.join(
                    "\n",
                    "taskmanager.memory.framework.heap.size: 128m",
                    "taskmanager.memory.task.heap.size: 896m",
                    "taskmanager.memory.managed.size: 0m",
                    "taskmanager.memory.framework.off-heap.size: 128m",
                    "taskmanager.memory.task.off-heap.size: 128m",
                    "taskmanager.memory.jvm-metaspace.size: 256m",
                    "taskmanager.memory.network.min: 256m",
                    "taskmanager.memory.network.max: 256m",
                    "taskmanager.memory.jvm-overhead.min: 256m",
                    "taskmanager.memory.jvm-overhead.max: 256m",
                    "");

    @TempDir Path tmp;

    private Path conf(String name, String yaml) throws IOException {
        Path dir = Files.createDirectories(tmp.resolve(name));
        Files.writeString(dir.resolve("config.yaml"), yaml);
        return dir;
    }

    private Launcher.Derived tm(Path dir) throws Exception {
        return Launcher.derive(
                dir, Launcher.Process.TASKMANAGER, Files.createTempDirectory(tmp, "sh"));
    }

    @Test
    void aNestedMemoryKeyIsTheFlatKey() throws Exception {
        Launcher.Derived flat = tm(conf("flat", "taskmanager.memory.process.size: 4096m\n"));
        Launcher.Derived nested =
                tm(conf("nested", "taskmanager:\n  memory:\n    process:\n      size: 4096m\n"));
        assertEquals(
                MemorySize.ofMebiBytes(4096),
                nested.configuration().get(TaskManagerOptions.TOTAL_PROCESS_MEMORY));
        assertEquals(4096 * MiB, nested.memory().get("totalProcess"));
        assertEquals(flat.memory(), nested.memory());

        // Beside a flat key of another size, the nested one is no comment: it is the same
        // key, and Flink takes the later of the two.
        Launcher.Derived small = tm(conf("small", "taskmanager.memory.process.size: 2048m\n"));
        Launcher.Derived both =
                tm(
                        conf(
                                "both",
                                "taskmanager.memory.process.size: 2048m\n"
                                        + "taskmanager:\n  memory:\n    process:\n      size: 4096m\n"));
        assertEquals(2048 * MiB, small.memory().get("totalProcess"));
        assertEquals(4096 * MiB, both.memory().get("totalProcess"));
        assertNotEquals(small.memory().get("jvmHeap"), both.memory().get("jvmHeap"));
    }

    @Test
    void aLaterXmxInTheOptionsOfEveryProcessWins() throws Exception {
        Launcher.Derived plain = tm(conf("plain", FIXED_TM));
        assertEquals(1024 * MiB, plain.memory().get("jvmHeap"));
        assertEquals(2048 * MiB, plain.memory().get("totalProcess"));
        JvmProbe.Flags asFlink =
                JvmProbe.probe(JAVA, plain.jvmArguments(), 0, Files.createTempDirectory(tmp, "p"));
        assertEquals(1024 * MiB, asFlink.maxHeapSize());

        Launcher.Derived later = tm(conf("later", FIXED_TM + "env.java.opts.all: -Xmx3g\n"));
        // Flink computes the same heap and puts it first; the option comes after it.
        assertEquals(plain.memory(), later.memory());
        List<String> args = later.jvmArguments();
        assertTrue(
                args.indexOf("-Xmx" + plain.memory().get("jvmHeap")) < args.indexOf("-Xmx3g"),
                "Flink's -Xmx before the configured one: " + args);
        JvmProbe.Flags jvm =
                JvmProbe.probe(JAVA, args, 0, Files.createTempDirectory(tmp, "p"));
        assertEquals(3072 * MiB, jvm.maxHeapSize());
        assertNotEquals(later.memory().get("jvmHeap"), jvm.maxHeapSize());
    }

    @Test
    void nestedJavaOptionsReachTheJvmToo() throws Exception {
        // config.sh reads the options from Flink's flattened configuration, not the file.
        Launcher.Derived d =
                tm(
                        conf(
                                "opts",
                                "taskmanager.memory.process.size: 2048m\n"
                                        + "env:\n  java:\n    opts:\n      taskmanager: -Xmx3g\n"));
        assertEquals("-Xmx3g", d.jvmArguments().get(d.jvmArguments().size() - 1));
    }

    @Test
    void theProcessOptionsComeAfterThoseOfEveryProcess() throws Exception {
        Launcher.Derived d =
                Launcher.derive(
                        conf(
                                "order",
                                "jobmanager.memory.process.size: 1600m\n"
                                        + "env.java.opts.all: -Xss1m\n"
                                        + "env.java.opts.jobmanager: -Xss2m\n"
                                        + "env.java.opts.taskmanager: -Xss3m\n"),
                        Launcher.Process.JOBMANAGER,
                        Files.createTempDirectory(tmp, "sh"));
        List<String> args = d.jvmArguments();
        assertTrue(args.get(0).startsWith("-Xmx"), args.toString());
        assertEquals(
                List.of("-XX:+IgnoreUnrecognizedVMOptions", "-Xss1m", "-Xss2m"),
                args.subList(args.size() - 3, args.size()));
    }

    @Test
    void parallelismWrittenAsANumberOrAString() throws Exception {
        String mem = "taskmanager.memory.process.size: 2048m\n";
        for (String yaml :
                List.of(
                        "parallelism.default: 7\ntaskmanager.numberOfTaskSlots: 7\n",
                        "parallelism.default: \"7\"\ntaskmanager.numberOfTaskSlots: \"7\"\n",
                        "parallelism:\n  default: 7\ntaskmanager.numberOfTaskSlots: '7'\n")) {
            Launcher.Derived d = tm(conf("p" + yaml.hashCode(), mem + yaml));
            assertEquals(7, d.parallelismDefault(), yaml);
            assertEquals(7, d.numberOfTaskSlots(), yaml);
        }
        Launcher.Derived none = tm(conf("none", mem));
        assertEquals(1, none.parallelismDefault());
        assertEquals(1, none.numberOfTaskSlots());
    }

    @Test
    void theShellTakesOffTheQuotesOfFlinksRendering() throws Exception {
        // A " #" makes Flink's flattened rendering quote the value, as YAML must; the shell's
        // eval takes the quotes off (the '#' starts no comment), and the words split on the
        // blanks.
        Launcher.Derived d =
                tm(
                        conf(
                                "quoted",
                                FIXED_TM + "env.java.opts.taskmanager: \"-Xss2m -Dnote=x #1\"\n"));
        assertEquals(" '-Xss2m -Dnote=x #1'", d.javaOptsProcess());
        List<String> args = d.jvmArguments();
        assertEquals(
                List.of("-Xss2m", "-Dnote=x", "#1"), args.subList(args.size() - 3, args.size()));
    }

    @Test
    void aPatternThatMatchesNoFileStaysAsWritten() throws Exception {
        Launcher.Derived d =
                tm(
                        conf(
                                "star",
                                FIXED_TM + "env.java.opts.taskmanager: -Xlog:gc*:file=/x/gc.log\n"));
        assertEquals(
                "-Xlog:gc*:file=/x/gc.log", d.jvmArguments().get(d.jvmArguments().size() - 1));
    }

    @Test
    void optionsThatReadTheEnvironmentAreRefused() throws Exception {
        Path dir = conf("shell", FIXED_TM + "env.java.opts.all: -Dx=$HOME\n");
        assertThrows(IllegalArgumentException.class, () -> tm(dir));
    }

    @Test
    void readFromConfigTakesTheLastLine() {
        List<String> lines = List.of("a.b: 1", "a.bc: 2", "  a.b :  3 ", "a.b.c: 4");
        assertEquals("3", Launcher.readFromConfig(lines, "a.b", "d"));
        assertEquals("d", Launcher.readFromConfig(lines, "a", "d"));
    }

    @Test
    void theLogFileMovesUnderTheScratchDirectory() throws Exception {
        String moved =
                JvmProbe.intoScratch("-Xlog:gc:file=/spatec-gc/gc.log:uptime:filecount=0", tmp);
        assertEquals(
                "-Xlog:gc:file=" + tmp.resolve("spatec-gc/gc.log") + ":uptime:filecount=0", moved);
        assertTrue(Files.isDirectory(tmp.resolve("spatec-gc")));
    }

    @Test
    void theFlagsFileMovesUnderTheScratchDirectory() throws Exception {
        String moved = JvmProbe.intoScratch("-XX:LogFile=/spatec-gc/vm.log", tmp);
        assertEquals("-XX:LogFile=" + tmp.resolve("spatec-gc/vm.log"), moved);
        assertTrue(Files.isDirectory(tmp.resolve("spatec-gc")));
    }
}
