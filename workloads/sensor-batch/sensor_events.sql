-- The table every arm of the sensor-batch workload writes, on ClickHouse
-- 22.x and later. Its column order is the order of every insert: RowBinary
-- and Native name no columns, so an arm that reorders them writes wrong
-- values. ingest_ts is the server's own clock, set at insert.
CREATE TABLE IF NOT EXISTS sensor_events
(
    batch_id     UInt64,
    event_seq    UInt16,
    sensor       LowCardinality(String),
    -- A null region is written as '': the column is not nullable.
    region       LowCardinality(String),
    name_upper   LowCardinality(String),
    unit         LowCardinality(String),
    value        Int64,
    value_scaled Int64,
    quality      Nullable(Float64),
    tags         Array(LowCardinality(String)),
    batch_ts     DateTime64(3),
    send_ts      DateTime64(6),
    ingest_ts    DateTime64(6) MATERIALIZED now64(6)
)
ENGINE = MergeTree
ORDER BY (sensor, batch_ts, batch_id, event_seq)
-- Makes insert_deduplication_token take effect on a plain MergeTree, for
-- every arm alike; an arm that sends tokens says so in a deviation.
SETTINGS non_replicated_deduplication_window = 1000
