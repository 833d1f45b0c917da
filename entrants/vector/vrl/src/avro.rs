//! A message of the topic into the event Vector's kafka source hands the
//! remap transform, following Vector 0.57.0's Avro decoder:
//! `lib/codecs/src/decoding/format/avro.rs` at tag v0.57.0
//! (`AvroDeserializer::parse` and the `try_from` it calls), with the Avro
//! library at the version Vector locks.

use apache_avro::types::Value as AvroValue;
use vrl::value::{KeyString, ObjectMap, Value};

const CONFLUENT_MAGIC_BYTE: u8 = 0;
const CONFLUENT_SCHEMA_PREFIX_LEN: usize = 5;

/// The datum of a message in the Confluent framing, as Vector's
/// `strip_schema_id_prefix: true` takes it: the magic byte is checked, the
/// schema id skipped unread.
pub fn strip_schema_id_prefix(message: &[u8]) -> Result<&[u8], String> {
    if message.len() >= CONFLUENT_SCHEMA_PREFIX_LEN && message[0] == CONFLUENT_MAGIC_BYTE {
        Ok(&message[CONFLUENT_SCHEMA_PREFIX_LEN..])
    } else {
        // Vector's own words for it.
        Err("Expected avro datum to be prefixed with schema id".into())
    }
}

/// The event a message becomes: the record's fields, each at the top level
/// under its own name.
///
/// Vector's legacy log namespace (the plans set no other) also gives the
/// event a `timestamp` of the decode's wall clock, and the kafka source its
/// own fields (topic, partition, offset, headers…). They are left out: they
/// depend on the clock and the broker, not the message, and the plans'
/// programs read none of them and replace the whole event.
pub fn decode(schema: &apache_avro::Schema, message: &[u8]) -> Result<Value, String> {
    let mut datum = strip_schema_id_prefix(message)?;
    let value = apache_avro::from_avro_datum(schema, &mut datum, None)
        .map_err(|e| format!("decoding the Avro datum: {e}"))?;
    let AvroValue::Record(fields) = value else {
        return Err("Expected an avro Record".into());
    };
    let mut event = ObjectMap::new();
    for (k, v) in fields {
        event.insert(KeyString::from(k), to_vrl(v)?);
    }
    Ok(Value::Object(event))
}

/// An Avro value as a VRL value, case by case as Vector's `try_from`: the
/// same conversions, and the same refusals.
pub fn to_vrl(value: AvroValue) -> Result<Value, String> {
    let unsupported = |what: &str| Err(format!("AvroValue::{what} is not supported"));
    match value {
        AvroValue::Array(items) => items
            .into_iter()
            .map(to_vrl)
            .collect::<Result<Vec<_>, _>>()
            .map(Value::Array),
        AvroValue::Boolean(b) => Ok(Value::from(b)),
        // Vector converts the Vec<u8> with Value::from, which VRL implements
        // for any Vec<T: Into<Value>>: Avro bytes become an array of
        // integers, not VRL bytes. Kept, since it is what Vector does.
        AvroValue::Bytes(bytes) => Ok(Value::from(bytes)),
        AvroValue::Date(_) => unsupported("Date"),
        AvroValue::Decimal(_) => unsupported("Decimal"),
        AvroValue::Double(d) => Ok(Value::from_f64_or_zero(d)),
        AvroValue::Duration(_) => unsupported("Duration"),
        AvroValue::Enum(_, symbol) => Ok(Value::from(symbol)),
        AvroValue::Fixed(_, _) => unsupported("Fixed"),
        AvroValue::Float(f) => Ok(Value::from_f64_or_zero(f64::from(f))),
        AvroValue::Int(i) => Ok(Value::from(i)),
        AvroValue::Long(l) => Ok(Value::from(l)),
        AvroValue::Map(items) => items
            .into_iter()
            .map(|(k, v)| to_vrl(v).map(|v| (KeyString::from(k), v)))
            .collect::<Result<ObjectMap, _>>()
            .map(Value::Object),
        AvroValue::Null => Ok(Value::Null),
        AvroValue::Record(fields) => fields
            .into_iter()
            .map(|(k, v)| to_vrl(v).map(|v| (KeyString::from(k), v)))
            .collect::<Result<ObjectMap, _>>()
            .map(Value::Object),
        AvroValue::String(s) => Ok(Value::from(s)),
        // The logical time types arrive as plain integers, not timestamps.
        AvroValue::TimeMicros(t) => Ok(Value::from(t)),
        AvroValue::TimeMillis(_) => unsupported("TimeMillis"),
        AvroValue::TimestampMicros(t) => Ok(Value::from(t)),
        AvroValue::TimestampMillis(t) => Ok(Value::from(t)),
        AvroValue::Union(_, v) => to_vrl(*v),
        AvroValue::Uuid(u) => Ok(Value::from(u.as_hyphenated().to_string())),
        AvroValue::LocalTimestampMillis(t) => Ok(Value::from(t)),
        AvroValue::LocalTimestampMicros(t) => Ok(Value::from(t)),
        AvroValue::BigDecimal(_) => unsupported("BigDecimal"),
        AvroValue::TimestampNanos(_) => unsupported("TimestampNanos"),
        AvroValue::LocalTimestampNanos(_) => unsupported("LocalTimestampNanos"),
    }
}
