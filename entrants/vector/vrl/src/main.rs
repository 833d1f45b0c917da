//! spatec-vrl-check: compiles a VRL program with the VRL Vector 0.57.0
//! runs, and runs it on a sensor-batch corpus against its closed form.
//!
//!     spatec-vrl-check --compile-only PROGRAM
//!     spatec-vrl-check PROGRAM MESSAGES SCHEMA EXPECTED
//!     spatec-vrl-check --bench [--rounds N] [--passes N] [--max-ratio R] \
//!         MESSAGES SCHEMA EXPECTED NAME=PROGRAM NAME=PROGRAM
//!
//! PROGRAM is the VRL source; MESSAGES the corpus (each message a
//! big-endian u32 length, then the message as on the topic); SCHEMA the
//! Avro schema the plan gives Vector's decoder; EXPECTED the closed form's
//! figures. The exit is 0 only when the program compiles, makes none of
//! the reads `copies` refuses and, unless --compile-only, every figure
//! matches; a refusal prints VRL's diagnostic or the reads, a mismatch
//! every differing figure with both numbers.
//!
//! --bench measures two programs that each meet the closed form (the
//! copies rule is not applied: a program it refuses can be measured) on
//! the corpus, interleaved (`bench`), and prints each one's cost a message
//! and the ratio of the first's to the second's; the exit is 1 when that
//! ratio exceeds --max-ratio. bench/vrl.sh runs it.

use std::path::Path;
use std::process::ExitCode;

use spatec_vrl_check::bench::{self, quantile};
use spatec_vrl_check::{avro, compare, copies, corpus, program, run_corpus};

const USAGE: &str = "usage: spatec-vrl-check --compile-only PROGRAM
       spatec-vrl-check PROGRAM MESSAGES SCHEMA EXPECTED
       spatec-vrl-check --bench [--rounds N] [--passes N] [--max-ratio R] MESSAGES SCHEMA EXPECTED NAME=PROGRAM NAME=PROGRAM";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let result = match args.as_slice() {
        ["--bench", rest @ ..] => run_bench(rest),
        ["--compile-only", prog] => compile(prog).and_then(|_| no_copies(prog)),
        [prog, messages, schema, expected] => check(prog, messages, schema, expected),
        _ => Err(USAGE.to_string()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}

fn read(path: &str) -> Result<Vec<u8>, String> {
    std::fs::read(Path::new(path)).map_err(|e| format!("reading {path}: {e}"))
}

fn source(path: &str) -> Result<String, String> {
    String::from_utf8(read(path)?).map_err(|e| format!("{path}: {e}"))
}

fn compile(path: &str) -> Result<program::Compiled, String> {
    let source = source(path)?;
    let compiled = program::compile(&source)
        .map_err(|diagnostic| format!("{path}: VRL refuses the program:\n{diagnostic}"))?;
    if let Some(w) = &compiled.warnings {
        eprintln!("{path}: VRL's warnings:\n{w}");
    }
    println!("{path}: compiles");
    Ok(compiled)
}

/// The reads of the program `copies` refuses, as an error that lists them.
fn no_copies(path: &str) -> Result<(), String> {
    let found = copies::check(&source(path)?).map_err(|e| format!("{path}: {e}"))?;
    if found.is_empty() {
        return Ok(());
    }
    let lines: Vec<String> = found.iter().map(ToString::to_string).collect();
    Err(format!(
        "{path}: the program copies the batch where it reads one field of it:\n{}",
        lines.join("\n")
    ))
}

/// The corpus's messages, the schema they decode with and the closed form
/// they must give.
struct Corpus {
    bytes: Vec<u8>,
    schema: apache_avro::Schema,
    expected: corpus::Expected,
}

impl Corpus {
    fn load(messages: &str, schema: &str, expected: &str) -> Result<Self, String> {
        let schema_text = source(schema)?;
        let schema = apache_avro::Schema::parse_str(&schema_text)
            .map_err(|e| format!("parsing the Avro schema {schema}: {e}"))?;
        let expected = corpus::Expected::parse(&read(expected)?)?;
        let bytes = read(messages)?;
        let count = corpus::messages(&bytes)
            .map_err(|e| format!("{messages}: {e}"))?
            .len();
        if count as u64 != expected.messages {
            return Err(format!(
                "the corpus has {count} messages, the expectation counts {}",
                expected.messages
            ));
        }
        Ok(Self {
            bytes,
            schema,
            expected,
        })
    }

    fn messages(&self) -> Vec<&[u8]> {
        corpus::messages(&self.bytes).expect("checked by load")
    }
}

fn check(prog: &str, messages: &str, schema: &str, expected: &str) -> Result<(), String> {
    let compiled = compile(prog)?;
    no_copies(prog)?;
    let Corpus {
        bytes,
        schema,
        expected,
    } = Corpus::load(messages, schema, expected)?;
    let messages = corpus::messages(&bytes).expect("checked by load");

    let outcome = run_corpus(&compiled.program, &schema, &messages)?;
    for (i, e) in &outcome.dropped {
        eprintln!("message {i}: the program fails, and drop_on_error drops its rows: {e}");
    }
    let differences = compare(&expected, &outcome.rows);
    let show = |n: Option<i128>| n.map_or("none".to_string(), |n| n.to_string());
    for d in &differences {
        eprintln!(
            "{}: expected {}, got {}",
            d.figure,
            show(d.expected),
            show(d.got)
        );
    }
    if differences.is_empty() && outcome.dropped.is_empty() {
        println!(
            "{} messages, {} rows: every figure of the closed form matches",
            messages.len(),
            outcome.rows.len()
        );
        Ok(())
    } else {
        Err(format!(
            "the rows miss the closed form: {} figures differ, {} messages dropped",
            differences.len(),
            outcome.dropped.len()
        ))
    }
}

/// `--bench`: see the usage at the top.
fn run_bench(args: &[&str]) -> Result<(), String> {
    let mut rounds = 15usize;
    let mut passes = 100usize;
    let mut max_ratio: Option<f64> = None;
    let mut rest = args;
    loop {
        let number = |flag: &str, v: &str| {
            v.parse::<f64>()
                .ok()
                .filter(|n| *n > 0.0)
                .ok_or_else(|| format!("{flag} {v}: not a positive number"))
        };
        match rest {
            ["--rounds", v, tail @ ..] => {
                rounds = number("--rounds", v)? as usize;
                rest = tail;
            }
            ["--passes", v, tail @ ..] => {
                passes = number("--passes", v)? as usize;
                rest = tail;
            }
            ["--max-ratio", v, tail @ ..] => {
                max_ratio = Some(number("--max-ratio", v)?);
                rest = tail;
            }
            _ => break,
        }
    }
    let [messages, schema, expected, first, second] = rest else {
        return Err(USAGE.to_string());
    };
    let corpus = Corpus::load(messages, schema, expected)?;
    let messages = corpus.messages();
    let events = messages
        .iter()
        .enumerate()
        .map(|(i, m)| {
            avro::decode(&corpus.schema, m).map_err(|e| format!("decoding message {i}: {e}"))
        })
        .collect::<Result<Vec<_>, _>>()?;

    let mut named = Vec::new();
    for arg in [first, second] {
        let (name, path) = arg
            .split_once('=')
            .ok_or_else(|| format!("{arg}: give a program as NAME=PATH"))?;
        let compiled = compile(path)?;
        // A program is measured only if it gives the closed form's rows:
        // one that drops or misses rows would be measured doing less.
        let outcome = run_corpus(&compiled.program, &corpus.schema, &messages)?;
        let differences = compare(&corpus.expected, &outcome.rows);
        if !outcome.dropped.is_empty() || !differences.is_empty() {
            return Err(format!(
                "{name} ({path}) misses the closed form: {} figures differ, {} messages dropped",
                differences.len(),
                outcome.dropped.len()
            ));
        }
        named.push((name, path, compiled.program, outcome.rows.len()));
    }

    let programs: Vec<_> = named.iter().map(|(_, _, p, _)| p).collect();
    let costs = bench::measure(&programs, &events, rounds, passes)?;
    println!(
        "corpus: {} messages, {} rows; {rounds} rounds, each {passes} passes of the corpus ({} messages) a program, the programs taking turns pass by pass; cost is the running thread's CPU time",
        events.len(),
        named[0].3,
        events.len() * passes
    );
    let micros = |ns: f64| ns / 1000.0;
    for ((name, path, _, _), c) in named.iter().zip(&costs) {
        let r = &c.rounds;
        println!(
            "{name} ({path}): median {:.2} µs of CPU a message; min–max {:.2}–{:.2}, p10–p90 {:.2}–{:.2} over {} rounds",
            micros(quantile(r, 0.5)),
            micros(quantile(r, 0.0)),
            micros(quantile(r, 1.0)),
            micros(quantile(r, 0.1)),
            micros(quantile(r, 0.9)),
            r.len()
        );
    }
    let ratio = quantile(&costs[0].rounds, 0.5) / quantile(&costs[1].rounds, 0.5);
    // The same ratio round by round, each of two runs of one round.
    let per_round: Vec<f64> = costs[0]
        .rounds
        .iter()
        .zip(&costs[1].rounds)
        .map(|(a, b)| a / b)
        .collect();
    println!(
        "ratio {}/{}: {ratio:.3} (of the medians); round by round min–max {:.3}–{:.3}",
        named[0].0,
        named[1].0,
        quantile(&per_round, 0.0),
        quantile(&per_round, 1.0)
    );
    match max_ratio {
        Some(max) if ratio > max => Err(format!(
            "the ratio {ratio:.3} exceeds {max}: {} costs more than {max} times what {} costs",
            named[0].0, named[1].0
        )),
        Some(max) => {
            println!("within the limit of {max}");
            Ok(())
        }
        None => Ok(()),
    }
}
