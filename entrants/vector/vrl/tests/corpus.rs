//! The checker on the workload's own corpus (workloads/sensor-batch/testdata/
//! arms, written by `spatec corpus`): the decode as Vector's, the figures
//! compared, and a program given from outside run against the closed form.
//!
//! The plans' programs are checked by cmd/spatec's
//! TestVectorVRLCompilesAndMeetsTheClosedForm, which takes them from the
//! plans; none is copied here.

use std::path::PathBuf;

use apache_avro::Schema;
use apache_avro::types::Value as Avro;
use spatec_vrl_check::{avro, compare, copies, corpus, program, rows, run_corpus};
use vrl::prelude::NotNan;
use vrl::value::Value;

fn read(name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../workloads/sensor-batch")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

fn schema() -> Schema {
    Schema::parse_str(std::str::from_utf8(&read("sensor_batch.avsc")).unwrap()).unwrap()
}

fn expected() -> corpus::Expected {
    corpus::Expected::parse(&read("testdata/arms/expected.json")).unwrap()
}

#[test]
fn avro_values_become_vrl_values_as_vectors_decoder_makes_them() {
    let cases = [
        (Avro::Long(-3), Value::from(-3)),
        (Avro::Int(7), Value::from(7)),
        (Avro::Double(0.25), Value::Float(NotNan::new(0.25).unwrap())),
        (Avro::String("kPa".into()), Value::from("kPa")),
        (Avro::Union(0, Box::new(Avro::Null)), Value::Null),
        (
            Avro::Union(1, Box::new(Avro::String("eu".into()))),
            Value::from("eu"),
        ),
        (
            Avro::Array(vec![Avro::String("a".into()), Avro::String("b".into())]),
            Value::Array(vec![Value::from("a"), Value::from("b")]),
        ),
        (
            Avro::Record(vec![("seq".into(), Avro::Int(1))]),
            Value::from(vrl::value::ObjectMap::from([(
                "seq".into(),
                Value::from(1),
            )])),
        ),
        // Vector's quirk, kept: Avro bytes are an array of integers.
        (
            Avro::Bytes(vec![1, 2]),
            Value::Array(vec![Value::from(1), Value::from(2)]),
        ),
        (Avro::TimestampMillis(5), Value::from(5)),
    ];
    for (a, want) in cases {
        let shown = format!("{a:?}");
        assert_eq!(avro::to_vrl(a).unwrap(), want, "{shown}");
    }
    assert_eq!(
        avro::to_vrl(Avro::Date(1)).unwrap_err(),
        "AvroValue::Date is not supported"
    );
}

#[test]
fn every_message_decodes_to_the_records_fields() {
    let corpus = read("testdata/arms/messages.bin");
    let messages = corpus::messages(&corpus).unwrap();
    assert_eq!(messages.len() as u64, expected().messages);
    let schema = schema();
    let mut readings = 0;
    for m in messages {
        let Value::Object(event) = avro::decode(&schema, m).unwrap() else {
            panic!("a record decodes to an object");
        };
        let fields: Vec<_> = event.keys().map(|k| k.as_str()).collect();
        assert_eq!(
            fields,
            [
                "batch_id",
                "batch_ts_ms",
                "events",
                "region",
                "send_ts_us",
                "sensor"
            ]
        );
        assert!(matches!(event["batch_id"], Value::Integer(_)));
        assert!(matches!(event["region"], Value::Null | Value::Bytes(_)));
        let Value::Array(events) = &event["events"] else {
            panic!("events is an array");
        };
        readings += events.len();
        for e in events {
            let Value::Object(e) = e else {
                panic!("an event is an object");
            };
            assert!(matches!(e["quality"], Value::Null | Value::Float(_)));
            assert!(matches!(e["seq"], Value::Integer(_)));
        }
    }
    // The transform only drops readings.
    assert!(readings as u64 >= expected().rows);
}

#[test]
fn a_message_without_the_framing_is_refused_as_vector_refuses_it() {
    assert_eq!(
        avro::strip_schema_id_prefix(&[1, 0, 0, 0, 1, 2]).unwrap_err(),
        "Expected avro datum to be prefixed with schema id"
    );
    assert_eq!(
        avro::strip_schema_id_prefix(&[0, 0, 0, 0, 1, 2]).unwrap(),
        [2]
    );
}

#[test]
fn a_program_that_keeps_no_row_misses_every_figure() {
    let corpus = read("testdata/arms/messages.bin");
    let messages = corpus::messages(&corpus).unwrap();
    let compiled = program::compile(". = []").unwrap();
    let outcome = run_corpus(&compiled.program, &schema(), &messages).unwrap();
    assert!(outcome.rows.is_empty());
    assert!(outcome.dropped.is_empty());

    let expected = expected();
    let differences = compare(&expected, &outcome.rows);
    assert_eq!(differences.len(), 1 + expected.checksum.len());
    assert_eq!(differences[0].figure, "expected_rows");
    assert_eq!(differences[0].expected, Some(expected.rows.into()));
    assert_eq!(differences[0].got, Some(0));
    for d in &differences[1..] {
        assert_eq!(d.expected, Some(expected.checksum[&d.figure]));
        assert_eq!(d.got, Some(0), "{}", d.figure);
    }
}

#[test]
fn a_program_that_fails_at_run_time_drops_every_message() {
    let corpus = read("testdata/arms/messages.bin");
    let messages = corpus::messages(&corpus).unwrap();
    // The sensor is a string: int! aborts on it.
    let compiled = program::compile(". = [{\"batch_id\": int!(.sensor)}]").unwrap();
    let outcome = run_corpus(&compiled.program, &schema(), &messages).unwrap();
    assert!(outcome.rows.is_empty());
    assert_eq!(outcome.dropped.len(), messages.len());
    assert!(
        outcome.dropped[0].1.contains("expected integer"),
        "{}",
        outcome.dropped[0].1
    );
}

#[test]
fn a_row_must_carry_exactly_the_tables_columns() {
    let event = vrl::value::ObjectMap::from([("message".into(), Value::from("x"))]);
    let err = rows::Row::from_event(event).unwrap_err();
    assert_eq!(err, "the event has no field \"batch_id\"");
}

#[test]
fn a_fingerprint_adds_the_head_and_the_reversed_tail() {
    assert_eq!(rows::fingerprint(""), 0);
    // "ab": head 'a','b' little-endian, tail 'b','a'.
    assert_eq!(rows::fingerprint("ab"), 0x6261 + 0x6162);
    // Longer than eight bytes: only the first eight and the last eight,
    // reversed, count.
    let le = |b: &[u8; 8]| i128::from(u64::from_le_bytes(*b));
    assert_eq!(
        rows::fingerprint("abcdefghij"),
        le(b"abcdefgh") + le(b"jihgfedc")
    );
}

/// The program a plan carries, held to the copies rule and run against
/// the closed form as the binary does it: `SPATEC_VRL_PROGRAM=path cargo test --release -- --ignored`.
#[test]
#[ignore = "needs SPATEC_VRL_PROGRAM, the path of a program to check"]
fn the_given_program_meets_the_closed_form() {
    let path =
        std::env::var("SPATEC_VRL_PROGRAM").expect("SPATEC_VRL_PROGRAM names the program to check");
    let source = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {path}: {e}"));
    let compiled = program::compile(&source)
        .unwrap_or_else(|diagnostic| panic!("VRL refuses {path}:\n{diagnostic}"));
    assert_eq!(copies::check(&source).unwrap(), []);
    let corpus = read("testdata/arms/messages.bin");
    let messages = corpus::messages(&corpus).unwrap();
    let outcome = run_corpus(&compiled.program, &schema(), &messages).unwrap();
    assert_eq!(outcome.dropped, []);
    assert_eq!(compare(&expected(), &outcome.rows), []);
}
