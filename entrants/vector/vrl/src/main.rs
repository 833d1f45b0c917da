//! spatec-vrl-check: compiles a VRL program with the VRL Vector 0.57.0
//! runs, and runs it on a sensor-batch corpus against its closed form.
//!
//!     spatec-vrl-check --compile-only PROGRAM
//!     spatec-vrl-check PROGRAM MESSAGES SCHEMA EXPECTED
//!
//! PROGRAM is the VRL source; MESSAGES the corpus (each message a
//! big-endian u32 length, then the message as on the topic); SCHEMA the
//! Avro schema the plan gives Vector's decoder; EXPECTED the closed form's
//! figures. The exit is 0 only when the program compiles and, unless
//! --compile-only, every figure matches; a refusal prints VRL's diagnostic,
//! a mismatch every differing figure with both numbers.

use std::path::Path;
use std::process::ExitCode;

use spatec_vrl_check::{compare, corpus, program, run_corpus};

const USAGE: &str = "usage: spatec-vrl-check --compile-only PROGRAM\n       spatec-vrl-check PROGRAM MESSAGES SCHEMA EXPECTED";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let result = match args.as_slice() {
        ["--compile-only", prog] => compile(prog).map(|_| ()),
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

fn compile(path: &str) -> Result<program::Compiled, String> {
    let source = String::from_utf8(read(path)?).map_err(|e| format!("{path}: {e}"))?;
    let compiled = program::compile(&source)
        .map_err(|diagnostic| format!("{path}: VRL refuses the program:\n{diagnostic}"))?;
    if let Some(w) = &compiled.warnings {
        eprintln!("{path}: VRL's warnings:\n{w}");
    }
    println!("{path}: compiles");
    Ok(compiled)
}

fn check(prog: &str, messages: &str, schema: &str, expected: &str) -> Result<(), String> {
    let compiled = compile(prog)?;
    let schema_text = String::from_utf8(read(schema)?).map_err(|e| format!("{schema}: {e}"))?;
    let schema = apache_avro::Schema::parse_str(&schema_text)
        .map_err(|e| format!("parsing the Avro schema {schema}: {e}"))?;
    let expected = corpus::Expected::parse(&read(expected)?)?;
    let corpus = read(messages)?;
    let messages = corpus::messages(&corpus).map_err(|e| format!("{messages}: {e}"))?;
    if messages.len() as u64 != expected.messages {
        return Err(format!(
            "the corpus has {} messages, the expectation counts {}",
            messages.len(),
            expected.messages
        ));
    }

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
