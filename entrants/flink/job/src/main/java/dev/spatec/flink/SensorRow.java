package dev.spatec.flink;

import java.util.List;

/**
 * One row of sensor_events. A Flink POJO (public fields, a no-argument
 * constructor), so that it passes between chained operators by reference.
 * The fields are in the table's column order.
 */
public final class SensorRow {
    /** The batch the reading came in. */
    public long batchId;
    /** The reading's position in its batch (UInt16). */
    public int eventSeq;
    /** The batch's sensor. */
    public String sensor;
    /** The batch's region, "" where it was null. */
    public String region;
    /** The reading's name, its ASCII letters upper-cased. */
    public String nameUpper;
    /** The reading's unit. */
    public String unit;
    /** The reading's value. */
    public long value;
    /** value * 1000 / (eventSeq + 1), in integer division. */
    public long valueScaled;
    /** The reading's quality; null where it was null. */
    public Double quality;
    /** The reading's tags. */
    public List<String> tags;
    /** When the batch was taken, in Unix milliseconds (DateTime64(3)). */
    public long batchTsMs;
    /** When the batch was sent, in Unix microseconds (DateTime64(6)). */
    public long sendTsUs;

    /** A row with every field unset, as Flink's POJO serializer makes one. */
    public SensorRow() {}
}
