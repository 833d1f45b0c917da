//! A row as the clickhouse sink would insert it, and the checksum's sums
//! over rows, as workload.cue defines them in SQL (the same sums as the
//! spate arm's tests/closed_form.rs).

use std::collections::BTreeMap;

use vrl::value::{ObjectMap, Value};

#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub batch_id: i64,
    pub event_seq: i64,
    pub sensor: String,
    pub region: String,
    pub name_upper: String,
    pub unit: String,
    pub value: i64,
    pub value_scaled: i64,
    pub quality: Option<f64>,
    pub tags: Vec<String>,
    /// Unix milliseconds: the column is DateTime64(3).
    pub batch_ts_ms: i64,
    /// Unix microseconds: the column is DateTime64(6).
    pub send_ts_us: i64,
}

impl Row {
    /// The row an event is, its columns each of the VRL type the column
    /// needs: an integer column an integer (a float would be truncated or
    /// refused on the way in), a string column bytes, a timestamp column a
    /// timestamp (an integer would land at the wrong scale).
    pub fn from_event(mut event: ObjectMap) -> Result<Self, String> {
        let mut take = |c: &str| {
            event
                .remove(c)
                .ok_or_else(|| format!("the event has no field {c:?}"))
        };
        let int = |c: &str, v: Value| match v {
            Value::Integer(i) => Ok(i),
            other => Err(wrong(c, "an integer", &other)),
        };
        let string = |c: &str, v: Value| match v {
            Value::Bytes(b) => {
                String::from_utf8(b.to_vec()).map_err(|e| format!("{c} is not UTF-8: {e}"))
            }
            other => Err(wrong(c, "a string", &other)),
        };
        let timestamp = |c: &str, v: Value| match v {
            Value::Timestamp(t) => Ok(t),
            other => Err(wrong(c, "a timestamp", &other)),
        };
        let row = Row {
            batch_id: int("batch_id", take("batch_id")?)?,
            event_seq: int("event_seq", take("event_seq")?)?,
            sensor: string("sensor", take("sensor")?)?,
            region: string("region", take("region")?)?,
            name_upper: string("name_upper", take("name_upper")?)?,
            unit: string("unit", take("unit")?)?,
            value: int("value", take("value")?)?,
            value_scaled: int("value_scaled", take("value_scaled")?)?,
            quality: match take("quality")? {
                Value::Null => None,
                Value::Float(f) => Some(f.into_inner()),
                other => return Err(wrong("quality", "a float or null", &other)),
            },
            tags: match take("tags")? {
                Value::Array(tags) => tags
                    .into_iter()
                    .map(|t| string("tags[]", t))
                    .collect::<Result<_, _>>()?,
                other => return Err(wrong("tags", "an array", &other)),
            },
            batch_ts_ms: timestamp("batch_ts", take("batch_ts")?)?.timestamp_millis(),
            send_ts_us: timestamp("send_ts", take("send_ts")?)?.timestamp_micros(),
        };
        // The sink's `skip_unknown_fields: false` makes ClickHouse refuse
        // an insert with any other field.
        if !event.is_empty() {
            let extra: Vec<_> = event.keys().map(|k| k.as_str()).collect();
            return Err(format!(
                "the event has fields that are no column of the table: {extra:?}"
            ));
        }
        Ok(row)
    }
}

fn wrong(column: &str, want: &str, got: &Value) -> String {
    format!("{column} should be {want}, is {} ({got})", got.kind_str())
}

/// reinterpretAsUInt64(s) + reinterpretAsUInt64(reverse(s)): the first
/// eight bytes and the last eight reversed, each little-endian, padded with
/// zeros.
pub fn fingerprint(s: &str) -> i128 {
    let b = s.as_bytes();
    let mut head = [0u8; 8];
    let mut tail = [0u8; 8];
    for (i, c) in b.iter().take(8).enumerate() {
        head[i] = *c;
    }
    for (i, c) in b.iter().rev().take(8).enumerate() {
        tail[i] = *c;
    }
    i128::from(u64::from_le_bytes(head)) + i128::from(u64::from_le_bytes(tail))
}

/// The checksum's sums, by the names the expectation gives them.
pub const SUMS: [&str; 11] = [
    "value_sum",
    "value_scaled_sum",
    "sensor_sum",
    "region_sum",
    "name_sum",
    "unit_sum",
    "tag_count_sum",
    "tag_sum",
    "batch_ts_sum",
    "send_ts_sum",
    "null_quality_rows",
];

/// The checksum's sums over rows, each of SUMS (0 over no rows).
pub fn sums(rows: &[Row]) -> BTreeMap<&'static str, i128> {
    let mut s: BTreeMap<_, _> = SUMS.iter().map(|k| (*k, 0)).collect();
    let mut add = |k: &'static str, v: i128| {
        *s.get_mut(k).unwrap_or_else(|| panic!("{k} is not in SUMS")) += v
    };
    for r in rows {
        add("value_sum", r.value.into());
        add("value_scaled_sum", r.value_scaled.into());
        add("sensor_sum", fingerprint(&r.sensor));
        add("region_sum", fingerprint(&r.region));
        add("name_sum", fingerprint(&r.name_upper));
        add("unit_sum", fingerprint(&r.unit));
        add("tag_count_sum", r.tags.len() as i128);
        add("tag_sum", fingerprint(&r.tags.concat()));
        add("batch_ts_sum", r.batch_ts_ms.into());
        add("send_ts_sum", r.send_ts_us.into());
        add("null_quality_rows", r.quality.is_none().into());
    }
    s
}
