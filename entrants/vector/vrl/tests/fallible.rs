//! The rule the plans' programs must keep: VRL refuses a program with an
//! unhandled fallible expression, and a division by anything but a
//! non-zero literal is fallible (it may divide by zero), whatever the
//! divisor's range at run time.

use spatec_vrl_check::program::{Runner, compile};
use vrl::value::{ObjectMap, Value};

const HANDLED: &str = r#"
seq = int!(.seq)
value = int!(.value)
.scaled = to_int(value * 1000 / (seq + 1) ?? 0.0)
"#;

#[test]
fn a_division_by_a_variable_needs_its_error_handled() {
    let unhandled = HANDLED.replace(" ?? 0.0", "");
    let refusal = match compile(&unhandled) {
        Ok(_) => panic!("VRL compiled an unhandled fallible division:\n{unhandled}"),
        Err(diagnostic) => diagnostic,
    };
    // VRL's own diagnostic: the division is the argument of to_int, and a
    // function refuses a fallible argument (its error code E630).
    assert!(
        refusal.contains("error[E630]: fallible argument"),
        "{refusal}"
    );
    assert!(refusal.contains("value * 1000 / (seq + 1)"), "{refusal}");
}

#[test]
fn with_the_fallback_it_compiles_and_truncates_toward_zero() {
    let compiled = match compile(HANDLED) {
        Ok(c) => c,
        Err(diagnostic) => panic!("VRL refuses the handled division:\n{diagnostic}"),
    };
    let event = Value::from(ObjectMap::from([
        ("seq".into(), Value::from(2)),
        ("value".into(), Value::from(7)),
    ]));
    let events = Runner::default()
        .run(&compiled.program, event)
        .expect("the program runs");
    assert_eq!(events.len(), 1);
    // 7000 / 3 = 2333.33…
    assert_eq!(events[0].get("scaled"), Some(&Value::from(2333)));
}

#[test]
fn a_division_by_a_literal_is_infallible() {
    // The contrast that makes the rule visible: the same division by a
    // literal needs no fallback.
    let literal = ".scaled = to_int(int!(.value) * 1000 / 3)";
    if let Err(diagnostic) = compile(literal) {
        panic!("VRL refuses a division by a literal:\n{diagnostic}");
    }
}
