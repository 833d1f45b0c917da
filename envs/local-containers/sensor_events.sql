-- sensor_events as ClickHouse 18.16 takes it: the columns of the
-- workload's table, in its order, with the types 18.16 has. It has no
-- DateTime64, so batch_ts and send_ts hold the Unix milliseconds and
-- microseconds as integers (the checksum reads them as they are); it
-- treats LowCardinality as experimental, so the strings are plain String;
-- and its MergeTree has no non_replicated_deduplication_window.
CREATE TABLE IF NOT EXISTS sensor_events
(
    batch_id     UInt64,
    event_seq    UInt16,
    sensor       String,
    region       String,
    name_upper   String,
    unit         String,
    value        Int64,
    value_scaled Int64,
    quality      Nullable(Float64),
    tags         Array(String),
    batch_ts     Int64,
    send_ts      Int64,
    ingest_ts    DateTime MATERIALIZED now()
)
ENGINE = MergeTree
ORDER BY (sensor, batch_ts, batch_id, event_seq)
