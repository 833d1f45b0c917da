package dev.spatec.flink;

import java.io.ByteArrayInputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;

import com.clickhouse.client.api.Client;
import com.clickhouse.client.api.ServerException;
import com.clickhouse.client.api.insert.InsertResponse;
import com.clickhouse.client.api.insert.InsertSettings;
import com.clickhouse.data.ClickHouseFormat;
import org.apache.flink.api.connector.sink2.StatefulSinkWriter;
import org.apache.flink.api.connector.sink2.WriterInitContext;
import org.apache.flink.connector.base.sink.AsyncSinkBase;
import org.apache.flink.connector.base.sink.writer.AsyncSinkWriter;
import org.apache.flink.connector.base.sink.writer.AsyncSinkWriterStateSerializer;
import org.apache.flink.connector.base.sink.writer.BufferedRequestState;
import org.apache.flink.connector.base.sink.writer.DequeRequestBuffer;
import org.apache.flink.connector.base.sink.writer.ResultHandler;
import org.apache.flink.connector.base.sink.writer.SimpleBatchCreator;
import org.apache.flink.connector.base.sink.writer.config.AsyncSinkWriterConfiguration;
import org.apache.flink.core.io.SimpleVersionedSerializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Inserts rows into ClickHouse as RowBinary batches over HTTP, through
 * ClickHouse's Java client, on Flink's asynchronous sink: the sink shape
 * ClickHouse's own Flink connector has (batches by rows, bytes and time, a
 * bounded number in flight, buffered rows in the checkpoint), which Maven
 * Central does not serve. A checkpoint waits for every buffered row to be
 * inserted, so what is acknowledged has landed: at least once.
 */
public final class ClickHouseSink extends AsyncSinkBase<SensorRow, byte[]> {
    private static final long serialVersionUID = 1L;
    private static final Logger LOG = LoggerFactory.getLogger(ClickHouseSink.class);

    /** The largest row accepted; a sensor_events row is a few hundred bytes. */
    private static final long MAX_ROW_BYTES = 1 << 20;

    private final Settings settings;

    /** A sink with the settings' table, credentials and batch shape. */
    public ClickHouseSink(Settings settings) {
        super(new RowBinary(),
                settings.sink.batchRows(),
                settings.sink.inFlight(),
                settings.sink.bufferedRows(),
                settings.sink.batchBytes(),
                settings.sink.lingerMs(),
                MAX_ROW_BYTES);
        this.settings = settings;
    }

    @Override
    public StatefulSinkWriter<SensorRow, BufferedRequestState<byte[]>> createWriter(WriterInitContext context) {
        return new Writer(context, List.of());
    }

    @Override
    public StatefulSinkWriter<SensorRow, BufferedRequestState<byte[]>> restoreWriter(
            WriterInitContext context, Collection<BufferedRequestState<byte[]>> state) {
        return new Writer(context, state);
    }

    @Override
    public SimpleVersionedSerializer<BufferedRequestState<byte[]>> getWriterStateSerializer() {
        return new StateSerializer();
    }

    /** One subtask's writer, with a client of its own. */
    private final class Writer extends AsyncSinkWriter<SensorRow, byte[]> {
        private final Client client;
        private final List<String> columns = Arrays.asList(RowBinary.COLUMNS);

        Writer(WriterInitContext context, Collection<BufferedRequestState<byte[]>> state) {
            super(getElementConverter(), context, AsyncSinkWriterConfiguration.builder()
                    .setMaxBatchSize(getMaxBatchSize())
                    .setMaxBatchSizeInBytes(getMaxBatchSizeInBytes())
                    .setMaxInFlightRequests(getMaxInFlightRequests())
                    .setMaxBufferedRequests(getMaxBufferedRequests())
                    .setMaxTimeInBufferMS(getMaxTimeInBufferMS())
                    .setMaxRecordSizeInBytes(getMaxRecordSizeInBytes())
                    .build(), state, new SimpleBatchCreator<>(getMaxBatchSizeInBytes()), new DequeRequestBuffer<>());
            if (!settings.columns.equals(columns)) {
                throw new IllegalStateException("the plan's columns " + settings.columns
                        + " are not the ones this sink writes, in its order: " + columns);
            }
            client = client(settings);
        }

        @Override
        protected void submitRequestEntries(List<byte[]> rows, ResultHandler<byte[]> result) {
            int size = 0;
            for (byte[] r : rows) {
                size += r.length;
            }
            byte[] body = new byte[size];
            int at = 0;
            for (byte[] r : rows) {
                System.arraycopy(r, 0, body, at, r.length);
                at += r.length;
            }
            String target = target(settings);
            insert(client, settings, body).whenComplete((response, err) -> {
                if (err == null) {
                    response.close();
                    result.complete();
                    return;
                }
                Throwable cause = err instanceof CompletionException && err.getCause() != null ? err.getCause() : err;
                if (cause instanceof ServerException) {
                    // ClickHouse refused the rows: sending them again
                    // gets the same answer.
                    result.completeExceptionally(new IOException("ClickHouse refused an insert of " + rows.size()
                            + " rows into " + target + ": " + cause.getMessage(), cause));
                    return;
                }
                LOG.warn("inserting {} rows into {} failed, trying again in a second: {}", rows.size(), target,
                        cause.toString());
                CompletableFuture.delayedExecutor(1, TimeUnit.SECONDS).execute(() -> result.retryForEntries(rows));
            });
        }

        @Override
        protected long getSizeInBytes(byte[] row) {
            return row.length;
        }

        @Override
        public void close() {
            super.close();
            client.close();
        }
    }

    /** The client a writer inserts with, signed in as the settings say. */
    static Client client(Settings settings) {
        return new Client.Builder()
                .addEndpoint(settings.clickhouse)
                .setUsername(settings.user)
                .setPassword(settings.password)
                .setDefaultDatabase(settings.database)
                .build();
    }

    /**
     * The table by its full name: on ClickHouse 18.16 the client's default
     * database does not reach the insert, which then looks in "default".
     */
    static String target(Settings settings) {
        return settings.database + "." + settings.table;
    }

    /**
     * Sends one insert of body, RowBinary rows in the sink's column order,
     * with the settings' insert settings: a synchronous insert where the
     * plan asks for one, acknowledged once the rows are written, not once
     * the server has buffered them.
     */
    static CompletableFuture<InsertResponse> insert(Client client, Settings settings, byte[] body) {
        InsertSettings with = new InsertSettings();
        settings.insertSettings.forEach(with::serverSetting);
        return client.insert(target(settings), Arrays.asList(RowBinary.COLUMNS), new ByteArrayInputStream(body),
                ClickHouseFormat.RowBinary, with);
    }

    /** The buffered rows of a checkpoint, each as its RowBinary bytes. */
    private static final class StateSerializer extends AsyncSinkWriterStateSerializer<byte[]> {
        @Override
        protected void serializeRequestToStream(byte[] row, DataOutputStream out) throws IOException {
            out.writeInt(row.length);
            out.write(row);
        }

        @Override
        protected byte[] deserializeRequestFromStream(long size, DataInputStream in) throws IOException {
            byte[] row = new byte[in.readInt()];
            in.readFully(row);
            return row;
        }

        @Override
        public int getVersion() {
            return 1;
        }
    }
}
