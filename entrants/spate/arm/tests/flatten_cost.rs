//! The flatten's cost a message beside the public harness's method, on the
//! same corpus and runtime: `bash bench/flatten.sh` runs this (ignored by
//! `cargo test`, it times, it asserts nothing of time).
//!
//! The harness's arm reads each Avro field by its position with no check
//! of its name (its own test checks the schema's order once). That method
//! is written here, for the comparison alone; the harness's code is not
//! built. Both produce the same rows, which this checks before timing.

use std::hint::black_box;
use std::path::PathBuf;

use apache_avro::Schema;
use apache_avro::types::Value;
use spate_arm::rows::{Row, Transform};
use spate_clickhouse::{DateTime64Micros, DateTime64Millis};

fn read(name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../workloads/sensor-batch")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

/// The corpus's messages, decoded once: the flatten is what is timed.
fn decoded() -> Vec<Value> {
    let schema =
        Schema::parse_str(std::str::from_utf8(&read("sensor_batch.avsc")).unwrap()).unwrap();
    let corpus = read("testdata/arms/messages.bin");
    let mut b = &corpus[..];
    let mut out = Vec::new();
    while !b.is_empty() {
        let (len, rest) = b.split_at(4);
        let len = u32::from_be_bytes(len.try_into().unwrap()) as usize;
        let m = &rest[..len];
        out.push(apache_avro::from_avro_datum(&schema, &mut &m[5..], None).unwrap());
        b = &rest[len..];
    }
    out
}

fn record(v: &Value) -> &[(String, Value)] {
    match v {
        Value::Record(f) => f,
        _ => panic!("not a record"),
    }
}

fn long(v: &Value) -> i64 {
    match v {
        Value::Long(n) => *n,
        Value::Int(n) => i64::from(*n),
        _ => panic!("not a long"),
    }
}

fn text(v: &Value) -> &str {
    match v {
        Value::String(s) => s,
        _ => panic!("not a string"),
    }
}

fn union(v: &Value) -> Option<&Value> {
    match v {
        Value::Union(_, inner) if **inner == Value::Null => None,
        Value::Union(_, inner) => Some(inner),
        Value::Null => None,
        other => Some(other),
    }
}

/// The harness's method: positions alone.
fn positional(t: &Transform, v: &Value, mut emit: impl FnMut(Row)) {
    let b = record(v);
    let batch_id = long(&b[0].1) as u64;
    let sensor = text(&b[1].1);
    let region = union(&b[2].1).map_or("", text);
    let batch_ts = DateTime64Millis(long(&b[3].1));
    let send_ts = DateTime64Micros(long(&b[4].1));
    let Value::Array(events) = &b[5].1 else {
        panic!("no events")
    };
    for e in events {
        let e = record(e);
        let unit = text(&e[2].1);
        if unit == t.drop_unit {
            continue;
        }
        let quality = union(&e[4].1).map(|q| match q {
            Value::Double(d) => *d,
            _ => panic!("not a double"),
        });
        if quality.is_some_and(|q| q < t.quality_floor) {
            continue;
        }
        let seq = long(&e[0].1) as u16;
        let value = long(&e[3].1);
        let Value::Array(tags) = &e[5].1 else {
            panic!("no tags")
        };
        emit(Row {
            batch_id,
            event_seq: seq,
            sensor: sensor.to_owned(),
            region: region.to_owned(),
            name_upper: text(&e[1].1).to_ascii_uppercase(),
            unit: unit.to_owned(),
            value,
            value_scaled: value * 1000 / (i64::from(seq) + 1),
            quality,
            tags: tags.iter().map(|t| text(t).to_owned()).collect(),
            batch_ts,
            send_ts,
        });
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[test]
#[ignore = "a benchmark: bash bench/flatten.sh"]
fn flatten_cost_beside_the_harness_method() {
    let t = Transform {
        drop_unit: "drop".into(),
        quality_floor: 0.2,
    };
    let batches = decoded();
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for v in &batches {
        t.flatten(v, |r| a.push(r)).unwrap();
        positional(&t, v, |r| b.push(r));
    }
    assert_eq!(a, b, "the two methods give different rows");
    let rounds: usize = std::env::var("ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(15);
    let passes = 400;
    let (mut spatec, mut harness) = (Vec::new(), Vec::new());
    let per_message =
        |start: u64| (cpu_ns() - start) as f64 / 1e3 / (passes * batches.len()) as f64;
    let time_spatec = || {
        let start = cpu_ns();
        for _ in 0..passes {
            for v in &batches {
                t.flatten(black_box(v), |r| {
                    black_box(r);
                })
                .unwrap();
            }
        }
        per_message(start)
    };
    let time_harness = || {
        let start = cpu_ns();
        for _ in 0..passes {
            for v in &batches {
                positional(&t, black_box(v), |r| {
                    black_box(r);
                });
            }
        }
        per_message(start)
    };
    // Each round runs both, in alternating order, so that neither always
    // runs on the caches and clocks the other left.
    for round in 0..rounds {
        if round % 2 == 0 {
            spatec.push(time_spatec());
            harness.push(time_harness());
        } else {
            harness.push(time_harness());
            spatec.push(time_spatec());
        }
    }
    let ratios: Vec<f64> = spatec.iter().zip(&harness).map(|(s, h)| s / h).collect();
    let (s_lo, s_hi) = bounds(&spatec);
    let (h_lo, h_hi) = bounds(&harness);
    let (r_lo, r_hi) = bounds(&ratios);
    println!(
        "flatten, µs of the thread's CPU a message over {} messages, {rounds} rounds of {passes} passes:",
        batches.len()
    );
    println!(
        "  spatec's         median {:.2} (range {s_lo:.2}–{s_hi:.2})",
        median(&mut spatec.clone())
    );
    println!(
        "  harness's method median {:.2} (range {h_lo:.2}–{h_hi:.2})",
        median(&mut harness.clone())
    );
    println!(
        "  ratio            median {:.3} (range {r_lo:.3}–{r_hi:.3})",
        median(&mut ratios.clone())
    );
}

/// The running thread's CPU time, in nanoseconds (the first field of its
/// schedstat): what the flatten costs, whatever else the host is doing,
/// where a wall clock on a shared host measures the neighbours too.
fn cpu_ns() -> u64 {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").expect("reading schedstat");
    s.split_whitespace()
        .next()
        .and_then(|f| f.parse().ok())
        .expect("schedstat's first field is nanoseconds")
}

fn bounds(v: &[f64]) -> (f64, f64) {
    (
        v.iter().copied().fold(f64::INFINITY, f64::min),
        v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
    )
}
