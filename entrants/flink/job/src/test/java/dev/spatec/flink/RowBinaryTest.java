package dev.spatec.flink;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.HexFormat;
import java.util.List;

import org.junit.jupiter.api.Test;

/** A row's RowBinary bytes, as ClickHouse reads them. */
class RowBinaryTest {
    @Test
    void aRowInTheTablesColumnOrder() {
        SensorRow r = new SensorRow();
        r.batchId = 1;
        r.eventSeq = 258;
        r.sensor = "s";
        r.region = "";
        r.nameUpper = "N";
        r.unit = "ms";
        r.value = -1;
        r.valueScaled = 2;
        r.quality = null;
        r.tags = List.of("a", "bc");
        r.batchTsMs = 3;
        r.sendTsUs = 4;
        String want = "0100000000000000" // batch_id UInt64
                + "0201" // event_seq UInt16
                + "0173" + "00" + "014e" + "026d73" // sensor, region, name_upper, unit
                + "ffffffffffffffff" + "0200000000000000" // value, value_scaled
                + "01" // quality: null
                + "02" + "0161" + "026263" // tags: two strings
                + "0300000000000000" + "0400000000000000"; // batch_ts, send_ts
        assertArrayEquals(HexFormat.of().parseHex(want), RowBinary.encode(r));

        r.quality = 0.5;
        String quality = "00" + "000000000000e03f"; // not null, then the double
        assertArrayEquals(HexFormat.of().parseHex(want.replaceFirst("ffffffffffffffff0200000000000000" + "01",
                "ffffffffffffffff0200000000000000" + quality)), RowBinary.encode(r));
    }

    @Test
    void asciiLettersAloneAreUpperCased() {
        assertEquals("TEMP-ß_9", Flatten.asciiUpper("temp-ß_9"));
    }
}
