//! The arm's decode, flatten and transform against the workload's closed
//! form: a small corpus as spatec prefills it, through this arm's code,
//! gives exactly the rows and the checksum sums spatec expects.
//!
//! The corpus and its expectation are spatec's, written by
//! `spatec corpus --workload sensor-batch --batches 24 --messages …` into
//! workloads/sensor-batch/testdata/arms (cmd/spatec's tests check that they
//! are still what the generator writes).

use std::collections::BTreeMap;
use std::path::PathBuf;

use apache_avro::Schema;
use spate_arm::rows::{Row, Transform};

fn testdata(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../workloads/sensor-batch")
        .join(name)
}

fn read(name: &str) -> Vec<u8> {
    let path = testdata(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

/// The messages of the corpus: each a big-endian u32 length, then the
/// message as it is on the topic (Confluent framing, then the datum).
fn messages(mut b: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    while !b.is_empty() {
        let (len, rest) = b.split_at(4);
        let len = u32::from_be_bytes(len.try_into().unwrap()) as usize;
        out.push(&rest[..len]);
        b = &rest[len..];
    }
    out
}

/// The checksum sums over rows, as workload.cue defines them in SQL.
fn sums(rows: &[Row]) -> BTreeMap<&'static str, i128> {
    // reinterpretAsUInt64(s) + reinterpretAsUInt64(reverse(s)): the first
    // eight bytes and the last eight reversed, each little-endian, padded
    // with zeros.
    fn fingerprint(s: &str) -> i128 {
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
    let mut s = BTreeMap::new();
    let mut add = |k: &'static str, v: i128| *s.entry(k).or_insert(0) += v;
    for r in rows {
        add("value_sum", r.value.into());
        add("value_scaled_sum", r.value_scaled.into());
        add("sensor_sum", fingerprint(&r.sensor));
        add("region_sum", fingerprint(&r.region));
        add("name_sum", fingerprint(&r.name_upper));
        add("unit_sum", fingerprint(&r.unit));
        add("tag_count_sum", r.tags.len() as i128);
        add("tag_sum", fingerprint(&r.tags.concat()));
        add("batch_ts_sum", r.batch_ts.0.into());
        add("send_ts_sum", r.send_ts.0.into());
        add("null_quality_rows", r.quality.is_none().into());
    }
    s
}

#[test]
fn the_corpus_lands_as_the_closed_form_says() {
    let expected: serde_json::Value =
        serde_json::from_slice(&read("testdata/arms/expected.json")).unwrap();
    let schema =
        Schema::parse_str(std::str::from_utf8(&read("sensor_batch.avsc")).unwrap()).unwrap();
    let transform = Transform {
        drop_unit: expected["transform"]["drop_unit"].as_str().unwrap().into(),
        quality_floor: expected["transform"]["quality_floor"].as_f64().unwrap(),
    };
    let schema_id = expected["schema_id"].as_u64().unwrap() as u32;

    let corpus = read("testdata/arms/messages.bin");
    let messages = messages(&corpus);
    assert_eq!(
        messages.len() as u64,
        expected["messages"].as_u64().unwrap()
    );
    let mut rows = Vec::new();
    for m in messages {
        // The Confluent framing, as spate-avro reads it: magic 0, then the
        // registry's id, big-endian.
        assert_eq!(m[0], 0, "magic byte");
        assert_eq!(u32::from_be_bytes(m[1..5].try_into().unwrap()), schema_id);
        let value = apache_avro::from_avro_datum(&schema, &mut &m[5..], None).unwrap();
        transform.flatten(&value, |r| rows.push(r)).unwrap();
    }

    assert_eq!(
        rows.len() as u64,
        expected["expected_rows"].as_u64().unwrap(),
        "rows after the transform"
    );
    let got = sums(&rows);
    let want = expected["checksum"].as_object().unwrap();
    assert_eq!(
        got.len(),
        want.len(),
        "the checksum's sums: {:?}",
        want.keys()
    );
    for (name, w) in want {
        let w: i128 = w.as_str().unwrap().parse().unwrap();
        assert_eq!(got.get(name.as_str()), Some(&w), "{name}");
    }
}
