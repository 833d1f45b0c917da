package dev.spatec.flink;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;

import org.apache.avro.Schema;
import org.apache.avro.generic.GenericRecord;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.connector.kafka.source.KafkaSource;
import org.apache.flink.connector.kafka.source.enumerator.initializer.OffsetsInitializer;
import org.apache.flink.formats.avro.RegistryAvroDeserializationSchema;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

/**
 * Flink's arm of the benchmark: the workload's topic, read with Flink's
 * Kafka source from the earliest offset, each Confluent-framed Avro batch
 * decoded by Flink's Avro format, flattened and transformed, and inserted
 * into ClickHouse. It never stops by itself: spatec watches the table and
 * stops the cluster.
 *
 * <p>Everything Flink itself is tuned by (parallelism, checkpointing, memory,
 * object reuse, chaining) is in the config.yaml the plan writes; the job sets
 * none of it, and checks that the parallelism it runs at is the plan's.
 */
public final class SensorJob {
    private SensorJob() {}

    /** Builds the job from the environment and runs it. */
    public static void main(String[] args) throws Exception {
        Settings settings = Settings.fromEnvironment();
        Schema schema = workloadSchema();
        Flatten.checkFields(schema);

        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        if (env.getParallelism() != settings.parallelism) {
            // A configuration that did not reach the cluster would otherwise
            // run at another parallelism while every record claimed the plan's.
            throw new IllegalStateException("the cluster runs the job at parallelism " + env.getParallelism()
                    + ", not the plan's " + settings.parallelism + ": config.yaml's parallelism.default did not take");
        }

        KafkaSource<GenericRecord> source = KafkaSource.<GenericRecord>builder()
                .setBootstrapServers(settings.brokers)
                .setTopics(settings.topic)
                .setGroupId(settings.group)
                .setStartingOffsets(OffsetsInitializer.earliest())
                // The topic's partitions are fixed for the drain: looking for
                // new ones would only add a metadata request every five
                // minutes, as the harness's job says when it turns it off.
                .setProperty("partition.discovery.interval.ms", "-1")
                .setValueOnlyDeserializer(new RegistryAvroDeserializationSchema<>(
                        GenericRecord.class, schema, new RegistryCoder.Provider(settings.registry)))
                .build();

        // One parallelism for every operator, so that source, flatten and
        // sink writer chain into one task and hand each object on.
        env.fromSource(source, WatermarkStrategy.noWatermarks(), "sensor-batches")
                .uid("sensor-batches")
                .flatMap(new Flatten(settings.transform))
                .name("flatten")
                .uid("flatten")
                .sinkTo(new ClickHouseSink(settings))
                .name("clickhouse")
                .uid("clickhouse");
        env.execute("spatec-sensor-batch");
    }

    /** The workload's schema, which the build puts beside the classes. */
    static Schema workloadSchema() throws IOException {
        try (InputStream in = SensorJob.class.getResourceAsStream("/sensor_batch.avsc")) {
            if (in == null) {
                throw new IOException("sensor_batch.avsc is not in the job's jar: the build copies it from workloads/sensor-batch");
            }
            return new Schema.Parser().parse(new String(in.readAllBytes(), StandardCharsets.UTF_8));
        }
    }
}
