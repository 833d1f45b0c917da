//! The workload's pipeline logic: a decoded `SensorBatch` flattened into
//! `sensor_events` rows, filtered and transformed. Every arm writes this
//! step in its own system's terms; this is spate's.

use std::fmt;

use apache_avro::types::Value;
use serde::Serialize;
use spate_clickhouse::{DateTime64Micros, DateTime64Millis};

/// One row of `sensor_events`. The field order is the table's column
/// order, which is what RowBinary and Native put on the wire.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Row {
    /// The batch the reading came in.
    pub batch_id: u64,
    /// The reading's position in its batch.
    pub event_seq: u16,
    /// The batch's sensor.
    pub sensor: String,
    /// The batch's region, '' where it was null.
    pub region: String,
    /// The reading's name, its ASCII letters upper-cased.
    pub name_upper: String,
    /// The reading's unit.
    pub unit: String,
    /// The reading's value.
    pub value: i64,
    /// `value * 1000 / (event_seq + 1)`, in integer division.
    pub value_scaled: i64,
    /// The reading's quality, null kept.
    pub quality: Option<f64>,
    /// The reading's tags.
    pub tags: Vec<String>,
    /// When the batch was taken, in milliseconds (`DateTime64(3)`).
    pub batch_ts: DateTime64Millis,
    /// When the batch was sent, in microseconds (`DateTime64(6)`).
    pub send_ts: DateTime64Micros,
}

/// The transform's parameters, as the workload declares them.
#[derive(Clone, Debug, PartialEq)]
pub struct Transform {
    /// Readings in this unit are dropped.
    pub drop_unit: String,
    /// Readings whose quality is known and below this are dropped.
    pub quality_floor: f64,
}

/// A decoded value that is not the `SensorBatch` the workload's schema
/// describes: the registry served another schema under the message's id.
#[derive(Debug, PartialEq)]
pub struct ShapeError(String);

impl fmt::Display for ShapeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "not a SensorBatch of the workload's schema: {}", self.0)
    }
}

impl std::error::Error for ShapeError {}

impl Transform {
    /// Flattens one batch into the rows the transform keeps, in the order of
    /// its readings, handing each to `emit`. In order: a reading in the drop
    /// unit is dropped; one whose quality is present and below the floor is
    /// dropped; a null region becomes ''; `value_scaled` and the upper-cased
    /// name are derived.
    pub fn flatten(&self, batch: &Value, mut emit: impl FnMut(Row)) -> Result<(), ShapeError> {
        let b = Fields::of(batch, "SensorBatch")?;
        b.named(&BATCH_FIELDS)?;
        let batch_id = b.long(0, "batch_id")?;
        let batch_id = u64::try_from(batch_id)
            .map_err(|_| ShapeError(format!("batch_id {batch_id} is negative")))?;
        let sensor = b.string(1, "sensor")?;
        let region = b.nullable_string(2, "region")?.unwrap_or_default();
        let batch_ts = DateTime64Millis(b.long(3, "batch_ts_ms")?);
        let send_ts = DateTime64Micros(b.long(4, "send_ts_us")?);
        let events = b.array(5, "events")?;
        // An Avro array's items are all of its one item schema, so the
        // first event's field names stand for every event's: checked
        // once a batch, each field then read by its position alone, as
        // the harness's arm reads it.
        if let Some(first) = events.first() {
            Fields::of(first, "Event")?.named(&EVENT_FIELDS)?;
        }
        for event in events {
            let e = Fields::of(event, "Event")?;
            let unit = e.string(2, "unit")?;
            if unit == self.drop_unit {
                continue;
            }
            let quality = e.nullable_double(4, "quality")?;
            if quality.is_some_and(|q| q < self.quality_floor) {
                continue;
            }
            let seq = e.int(0, "seq")?;
            let event_seq = u16::try_from(seq)
                .map_err(|_| ShapeError(format!("event seq {seq} is not a UInt16")))?;
            let value = e.long(3, "value")?;
            // Sized once: a Result collect cannot know its length, and
            // would grow the vector tag by tag.
            let items = e.array(5, "tags")?;
            let mut tags = Vec::with_capacity(items.len());
            for t in items {
                tags.push(string(t, "tags[]")?.to_owned());
            }
            emit(Row {
                batch_id,
                event_seq,
                sensor: sensor.to_owned(),
                region: region.to_owned(),
                name_upper: e.string(1, "name")?.to_ascii_uppercase(),
                unit: unit.to_owned(),
                value,
                value_scaled: value * 1000 / (i64::from(event_seq) + 1),
                quality,
                tags,
                batch_ts,
                send_ts,
            });
        }
        Ok(())
    }
}

/// The `SensorBatch` record's fields, in the schema's order.
const BATCH_FIELDS: [&str; 6] = [
    "batch_id",
    "sensor",
    "region",
    "batch_ts_ms",
    "send_ts_us",
    "events",
];

/// The `Event` record's fields, in the schema's order.
const EVENT_FIELDS: [&str; 6] = ["seq", "name", "unit", "value", "quality", "tags"];

/// A record's fields, read by their position in the schema. `named`
/// checks the names once, so that a schema whose fields moved is an error,
/// not wrong rows; a read names its field only for an error. The reads are
/// small and marked inline, their errors made out of line (`wrong`,
/// `missing`): the binary calls the flatten from another crate, where each
/// read would otherwise be a call, several a reading.
struct Fields<'a>(&'a [(String, Value)]);

impl<'a> Fields<'a> {
    #[inline]
    fn of(v: &'a Value, record: &str) -> Result<Self, ShapeError> {
        match v {
            Value::Record(fields) => Ok(Self(fields)),
            other => Err(wrong(&format!("a {record}"), other)),
        }
    }

    /// Checks that the record's fields are `names`, in order.
    fn named(&self, names: &[&str]) -> Result<(), ShapeError> {
        for (i, name) in names.iter().enumerate() {
            match self.0.get(i) {
                Some((n, _)) if n == name => {}
                Some((n, _)) => return Err(ShapeError(format!("field {i} is {n}, not {name}"))),
                None => return Err(missing(i, name)),
            }
        }
        Ok(())
    }

    #[inline]
    fn get(&self, i: usize, name: &str) -> Result<&'a Value, ShapeError> {
        match self.0.get(i) {
            Some((_, v)) => Ok(v),
            None => Err(missing(i, name)),
        }
    }

    #[inline]
    fn long(&self, i: usize, name: &str) -> Result<i64, ShapeError> {
        match self.get(i, name)? {
            Value::Long(n) => Ok(*n),
            other => Err(wrong(name, other)),
        }
    }

    #[inline]
    fn int(&self, i: usize, name: &str) -> Result<i32, ShapeError> {
        match self.get(i, name)? {
            Value::Int(n) => Ok(*n),
            other => Err(wrong(name, other)),
        }
    }

    #[inline]
    fn string(&self, i: usize, name: &str) -> Result<&'a str, ShapeError> {
        string(self.get(i, name)?, name)
    }

    #[inline]
    fn array(&self, i: usize, name: &str) -> Result<&'a [Value], ShapeError> {
        match self.get(i, name)? {
            Value::Array(items) => Ok(items),
            other => Err(wrong(name, other)),
        }
    }

    #[inline]
    fn nullable_string(&self, i: usize, name: &str) -> Result<Option<&'a str>, ShapeError> {
        match nullable(self.get(i, name)?) {
            None => Ok(None),
            Some(v) => string(v, name).map(Some),
        }
    }

    #[inline]
    fn nullable_double(&self, i: usize, name: &str) -> Result<Option<f64>, ShapeError> {
        match nullable(self.get(i, name)?) {
            None => Ok(None),
            Some(Value::Double(d)) => Ok(Some(*d)),
            Some(other) => Err(wrong(name, other)),
        }
    }
}

/// The value of a `["null", T]` union, None for its null branch.
#[inline]
fn nullable(mut v: &Value) -> Option<&Value> {
    while let Value::Union(_, inner) = v {
        v = inner;
    }
    match v {
        Value::Null => None,
        other => Some(other),
    }
}

#[inline]
fn string<'a>(v: &'a Value, name: &str) -> Result<&'a str, ShapeError> {
    match v {
        Value::String(s) => Ok(s),
        other => Err(wrong(name, other)),
    }
}

/// A field of another type than the schema's.
#[cold]
#[inline(never)]
fn wrong(name: &str, v: &Value) -> ShapeError {
    ShapeError(format!("{name} is {}", kind(v)))
}

/// A record with fewer fields than the schema's.
#[cold]
#[inline(never)]
fn missing(i: usize, name: &str) -> ShapeError {
    ShapeError(format!("no field {i} ({name})"))
}

/// What an Avro value is, in a word, for an error.
fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Boolean(_) => "a boolean",
        Value::Int(_) => "an int",
        Value::Long(_) => "a long",
        Value::Float(_) => "a float",
        Value::Double(_) => "a double",
        Value::String(_) => "a string",
        Value::Bytes(_) => "bytes",
        Value::Array(_) => "an array",
        Value::Map(_) => "a map",
        Value::Record(_) => "a record",
        Value::Union(_, _) => "a union",
        Value::Enum(_, _) => "an enum",
        _ => "another Avro type",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn transform() -> Transform {
        Transform {
            drop_unit: "drop".into(),
            quality_floor: 0.2,
        }
    }

    fn event(seq: i32, name: &str, unit: &str, value: i64, quality: Option<f64>) -> Value {
        Value::Record(vec![
            ("seq".into(), Value::Int(seq)),
            ("name".into(), Value::String(name.into())),
            ("unit".into(), Value::String(unit.into())),
            ("value".into(), Value::Long(value)),
            (
                "quality".into(),
                match quality {
                    Some(q) => Value::Union(1, Box::new(Value::Double(q))),
                    None => Value::Union(0, Box::new(Value::Null)),
                },
            ),
            (
                "tags".into(),
                Value::Array(vec![Value::String("t1".into())]),
            ),
        ])
    }

    fn batch(region: Option<&str>, events: Vec<Value>) -> Value {
        Value::Record(vec![
            ("batch_id".into(), Value::Long(7)),
            ("sensor".into(), Value::String("sensor-0007".into())),
            (
                "region".into(),
                match region {
                    Some(r) => Value::Union(1, Box::new(Value::String(r.into()))),
                    None => Value::Union(0, Box::new(Value::Null)),
                },
            ),
            ("batch_ts_ms".into(), Value::Long(1_000)),
            ("send_ts_us".into(), Value::Long(2_000_000)),
            ("events".into(), Value::Array(events)),
        ])
    }

    fn rows(b: &Value) -> Vec<Row> {
        let mut out = Vec::new();
        transform().flatten(b, |r| out.push(r)).unwrap();
        out
    }

    #[test]
    fn each_step_of_the_transform() {
        let b = batch(
            None,
            vec![
                event(0, "temp-ß", "ms", 7, Some(0.5)),
                event(1, "x", "drop", 1, None),
                event(2, "y", "ms", 1, Some(0.1999)),
                event(3, "z", "ms", -9, Some(0.2)),
                event(4, "w", "ms", 10, None),
            ],
        );
        let got = rows(&b);
        let seqs: Vec<u16> = got.iter().map(|r| r.event_seq).collect();
        assert_eq!(
            seqs,
            [0, 3, 4],
            "the drop unit and a quality below the floor are dropped"
        );
        assert_eq!(
            got[0].name_upper, "TEMP-ß",
            "only ASCII letters are upper-cased"
        );
        assert_eq!(got[0].region, "", "a null region is written as ''");
        assert_eq!(got[0].value_scaled, 7000);
        assert_eq!(
            got[1].value_scaled,
            -9 * 1000 / 4,
            "integer division truncates toward zero"
        );
        assert_eq!(got[2].quality, None, "a null quality is kept");
        assert_eq!(got[2].batch_ts, DateTime64Millis(1_000));
        assert_eq!(got[2].send_ts, DateTime64Micros(2_000_000));
    }

    #[test]
    fn a_moved_field_is_an_error() {
        let Value::Record(mut fields) = batch(Some("eu"), vec![]) else {
            unreachable!()
        };
        fields.swap(1, 2);
        let err = transform()
            .flatten(&Value::Record(fields), |_| {})
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "not a SensorBatch of the workload's schema: field 1 is region, not sensor"
        );
    }

    #[test]
    fn a_moved_event_field_is_an_error() {
        let Value::Record(mut fields) = event(0, "cpu", "ms", 5, None) else {
            unreachable!()
        };
        fields.swap(1, 2);
        let err = transform()
            .flatten(&batch(None, vec![Value::Record(fields)]), |_| {})
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "not a SensorBatch of the workload's schema: field 1 is unit, not name"
        );
    }
}
