package dev.spatec.flink.check;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.apache.flink.configuration.ConfigOption;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.util.List;

/** What the registry makes of options whose declarations in flink-core are known. */
class OptionsTest {

    private static Options.Scan core;

    @BeforeAll
    static void scanCore() throws Exception {
        Path jar =
                Path.of(
                        ConfigOption.class
                                .getProtectionDomain()
                                .getCodeSource()
                                .getLocation()
                                .toURI());
        core = Options.scan(List.of(jar), OptionsTest.class.getClassLoader());
        assertEquals(List.of(), core.unreadable);
    }

    private static Options.Opt option(String key) {
        Options.Opt o = core.options.get(key);
        assertNotNull(o, key + " is not in the registry");
        return o;
    }

    @Test
    void aDurationWithoutDefault() {
        Options.Opt o = option("execution.checkpointing.interval");
        assertEquals("duration", o.type);
        assertNull(o.def);
    }

    @Test
    void anEnumAsFlinkSpellsIt() {
        Options.Opt o = option("execution.checkpointing.mode");
        assertEquals("enum", o.type);
        assertEquals(List.of("EXACTLY_ONCE", "AT_LEAST_ONCE"), o.values);
        assertEquals("EXACTLY_ONCE", o.def);
    }

    @Test
    void sizesAndDefaultsInFlinksOwnText() {
        assertEquals("size", option("taskmanager.memory.process.size").type);
        Options.Opt timeout = option("execution.checkpointing.timeout");
        assertEquals("10 min", timeout.def);
        assertEquals("int", option("parallelism.default").type);
        assertEquals("1", option("parallelism.default").def);
    }

    @Test
    void aDeprecatedKeyNamesTheOneToUse() {
        Options.Opt main = option("state.backend.type");
        assertTrue(main.fallback.contains("state.backend"));
        Options.Opt old = option("state.backend");
        assertTrue(old.deprecated);
        assertEquals("state.backend.type", old.use);
        assertEquals(main.type, old.type);
    }

    @Test
    void aSuffixOptionUnderItsPrefix() {
        assertEquals("string", option("metrics.reporter.<name>.factory.class").type);
        assertNull(core.options.get("factory.class"));
    }

    @Test
    void theFirstSentenceOnOneLine() {
        assertEquals("One line.", Options.firstSentence("  One\n line.  Two."));
        String text = "word ".repeat(60);
        assertTrue(Options.firstSentence(text).length() <= 160);
    }

    @Test
    void readsFieldsFromTheClassFile() throws Exception {
        byte[] b;
        try (var in =
                ConfigOption.class
                        .getClassLoader()
                        .getResourceAsStream("org/apache/flink/configuration/CoreOptions.class")) {
            b = in.readAllBytes();
        }
        assertTrue(Options.optionFields(b).contains("DEFAULT_PARALLELISM"));
    }
}
