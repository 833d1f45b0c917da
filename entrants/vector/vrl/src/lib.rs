//! A Vector plan's VRL program, compiled by the VRL compiler Vector 0.57.0
//! runs and run on the sensor-batch corpus as Vector's kafka source and
//! remap transform would: the rows it gives, summed as the workload's
//! checksum sums them, must be the closed form's.
//!
//! Nothing here is Vector's code: the decode follows Vector's Avro decoder
//! (`avro`), the run follows its remap transform (`program`), and the sums
//! follow the workload's SQL (`rows`), each citing what it follows.

pub mod avro;
pub mod bench;
pub mod copies;
pub mod corpus;
pub mod program;
pub mod rows;

use vrl::compiler::Program;

/// What a run of a program over the corpus came to.
pub struct Outcome {
    /// The rows the program gave, in the order Vector would emit them.
    pub rows: Vec<rows::Row>,
    /// A message whose run failed, by its index: with `drop_on_error` Vector
    /// drops the message's event and so all its rows.
    pub dropped: Vec<(usize, String)>,
}

/// Decodes every message of the corpus and runs the program on it. A
/// message that does not decode is an error (the corpus is the closed
/// form's own, so it always decodes); one whose run fails is dropped, as the
/// plan's remap with `drop_on_error` drops it.
pub fn run_corpus(
    program: &Program,
    schema: &apache_avro::Schema,
    messages: &[&[u8]],
) -> Result<Outcome, String> {
    let mut runner = program::Runner::default();
    let mut outcome = Outcome {
        rows: Vec::new(),
        dropped: Vec::new(),
    };
    for (i, m) in messages.iter().enumerate() {
        let event = avro::decode(schema, m).map_err(|e| format!("decoding message {i}: {e}"))?;
        match runner.run(program, event) {
            Ok(events) => {
                for (j, e) in events.into_iter().enumerate() {
                    let row = rows::Row::from_event(e)
                        .map_err(|err| format!("message {i}, row {j}: {err}"))?;
                    outcome.rows.push(row);
                }
            }
            Err(e) => outcome.dropped.push((i, e)),
        }
    }
    Ok(outcome)
}

/// One figure of the expectation against what the rows gave.
#[derive(Debug, PartialEq, Eq)]
pub struct Difference {
    pub figure: String,
    pub expected: Option<i128>,
    pub got: Option<i128>,
}

/// Every figure of the expectation (the row count, then each checksum sum)
/// that the rows do not meet, and every sum the rows have that the
/// expectation lacks.
pub fn compare(expected: &corpus::Expected, rows: &[rows::Row]) -> Vec<Difference> {
    let mut got = rows::sums(rows);
    let mut out = Vec::new();
    let count = i128::try_from(rows.len()).expect("a row count fits in i128");
    if count != i128::from(expected.rows) {
        out.push(Difference {
            figure: "expected_rows".into(),
            expected: Some(expected.rows.into()),
            got: Some(count),
        });
    }
    for (name, want) in &expected.checksum {
        let have = got.remove(name.as_str());
        if have != Some(*want) {
            out.push(Difference {
                figure: name.clone(),
                expected: Some(*want),
                got: have,
            });
        }
    }
    for (name, have) in got {
        out.push(Difference {
            figure: name.into(),
            expected: None,
            got: Some(have),
        });
    }
    out
}
