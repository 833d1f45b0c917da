package dev.spatec.connect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

class RegistriesTest {
    @Test
    void firstSentenceStopsAtTheFirstFullStopNotAtAnAbbreviation() {
        assertEquals("Use <b> for this, e.g. a list.",
                Registries.firstSentence("<p>Use &lt;b&gt; for\n   this, e.g. a list.</p> Then more."));
        assertEquals("No stop at all", Registries.firstSentence("No stop at all"));
        String cut = Registries.firstSentence("word ".repeat(60) + ".");
        assertTrue(cut.length() <= 160 && cut.endsWith("…"), cut);
    }

    @Test
    void aKeyIsDeprecatedOnlyWhenNoLiveConstantNamesIt() {
        Set<String> deprecated = Registries.deprecatedKeys();
        // ProducerConfig deprecates a misspelt constant of a live key.
        assertFalse(deprecated.contains("partitioner.adaptive.partitioning.enable"));
    }

    @Test
    void everyRegistryIsPrintedWithItsKeys() {
        ObjectMapper mapper = new ObjectMapper();
        JsonNode all = Registries.all(mapper);
        for (String name : List.of("worker.json", "connector.json", "consumer.json", "producer.json",
                "admin.json", "json-converter.json")) {
            assertTrue(all.has(name), name);
            assertTrue(all.get(name).get("options").size() > 0, name);
        }
        JsonNode tasks = find(all.get("connector.json"), "tasks.max");
        assertEquals("int", tasks.get("type").asText());
        assertEquals(1.0, tasks.get("min").asDouble());
        assertEquals("1", tasks.get("default").asText());
        JsonNode tolerance = find(all.get("connector.json"), "errors.tolerance");
        assertEquals("enum", tolerance.get("type").asText());
        assertEquals(List.of("none", "all"), List.of(tolerance.get("values").get(0).asText(), tolerance.get("values").get(1).asText()));
        assertTrue(find(all.get("worker.json"), "bootstrap.servers").get("required").asBoolean());
        assertTrue(find(all.get("connector.json"), "tasks.max.enforce").get("deprecated").asBoolean());
    }

    private static JsonNode find(JsonNode registry, String key) {
        for (JsonNode o : registry.get("options")) {
            if (o.get("key").asText().equals(key)) {
                return o;
            }
        }
        throw new AssertionError("no option " + key);
    }
}
