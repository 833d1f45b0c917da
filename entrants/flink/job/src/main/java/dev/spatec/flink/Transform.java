package dev.spatec.flink;

import java.io.Serializable;

/**
 * The workload's transform's parameters.
 *
 * @param dropUnit readings in this unit are dropped
 * @param qualityFloor readings whose quality is known and below this are dropped
 */
public record Transform(String dropUnit, double qualityFloor) implements Serializable {}
