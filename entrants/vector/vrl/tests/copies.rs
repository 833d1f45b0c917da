//! The copies rule (`copies`), which the checker applies to every plan's
//! program (cmd/spatec's TestVectorVRLCompilesAndMeetsTheClosedForm runs
//! it on each): it refuses the program the Vector plans carried before it,
//! which copied the batch twice a row, and accepts the shape that reads
//! each field once.

use spatec_vrl_check::copies::{Why, check};

/// The sensor-batch program the Vector plans carried until the rule was
/// written (entrants/vector/vector.cue's `_flatten`, as resolved for the
/// workload's drop unit and quality floor): `batch = .` copies the event,
/// each `batch.f` copies it again, and the map's closure did so twice for
/// each row it kept.
const BEFORE: &str = r#"batch = .
region = ""
if !is_null(batch.region) { region = string!(batch.region) }
batch_ts = from_unix_timestamp!(int!(batch.batch_ts_ms), unit: "milliseconds")
send_ts = from_unix_timestamp!(int!(batch.send_ts_us), unit: "microseconds")
kept = filter(array!(batch.events)) -> |_i, e| {
    string!(e.unit) != "drop" &&
        (is_null(e.quality) || float!(e.quality) >= 0.2)
}
. = map_values(kept) -> |e| {
    seq = int!(e.seq)
    value = int!(e.value)
    # VRL refuses an unhandled fallible expression, and a division by
    # anything but a non-zero literal is one. seq is at least 0, so
    # the fallback is never taken.
    scaled = to_int(value * 1000 / (seq + 1) ?? 0.0)
    {
        "batch_id": int!(batch.batch_id), "event_seq": seq, "sensor": string!(batch.sensor),
        "region": region, "name_upper": upcase(string!(e.name)), "unit": string!(e.unit),
        "value": value, "value_scaled": scaled,
        "quality": e.quality, "tags": e.tags, "batch_ts": batch_ts, "send_ts": send_ts
    }
}"#;

/// Each finding as (line, column, read, why).
fn found(source: &str) -> Vec<(usize, usize, String, Why)> {
    check(source)
        .unwrap_or_else(|e| panic!("{e}\n{source}"))
        .into_iter()
        .map(|f| (f.line, f.column, f.read, f.why))
        .collect()
}

#[test]
fn the_program_that_copied_the_batch_twice_a_row_is_refused() {
    assert_eq!(
        found(BEFORE),
        [
            (1, 9, ".".to_string(), Why::WholeEvent),
            (
                18,
                26,
                "batch.batch_id".to_string(),
                Why::OuterPathInClosure
            ),
            (18, 79, "batch.sensor".to_string(), Why::OuterPathInClosure),
        ]
    );
    // What the checker prints for it.
    let shown = check(BEFORE).unwrap()[1].to_string();
    assert!(
        shown.starts_with("line 18, column 26: `batch.batch_id` inside a closure copies"),
        "{shown}"
    );
}

#[test]
fn fields_read_once_into_locals_before_the_closures_pass() {
    let program = r#"
id = int!(.batch_id)
label = .region
label = if is_null(label) { "" } else { string!(label) }
kept = filter(array!(.events)) -> |_i, e| {
    q = e.quality
    e.unit != "x" && (is_null(q) || float!(q) >= 0.5)
}
. = map_values(kept) -> |e| {
    n = int!(e.seq)
    { "id": id, "label": label, "seq": n, "tags": e.tags }
}
"#;
    assert_eq!(found(program), []);
}

#[test]
fn a_row_per_field_of_the_event_passes() {
    // The json-rows plans' shape: paths of the event, each read once.
    assert_eq!(found(r#". = {"a": .a, "b": .b}"#), []);
}

#[test]
fn the_whole_event_is_refused_wherever_it_is_read() {
    for (program, read) in [
        ("b = .", "."),
        ("b = object!(.)\n.x = b.y", "."),
        ("x = [.]", "."),
        ("if is_object(.) { .y = 1 }", "."),
    ] {
        let f = found(program);
        assert_eq!(f.len(), 1, "{program}: {f:?}");
        assert_eq!(
            (f[0].2.as_str(), f[0].3),
            (read, Why::WholeEvent),
            "{program}"
        );
    }
    // Writing the whole event is no read of it.
    assert_eq!(found(". = [1]"), []);
}

#[test]
fn a_closure_reads_paths_of_its_own_variables_only() {
    // The readings array held in a variable and indexed in the closure:
    // each element copies the whole array.
    let outer = r#"
events = array!(.events)
. = map_values(events) -> |e| { {"first": events[0].seq, "seq": e.seq} }
"#;
    assert_eq!(
        found(outer),
        [(3, 43, "events[0].seq".to_string(), Why::OuterPathInClosure)]
    );

    // A path of the closure's parameter, or of a local it assigned first,
    // is its own; reading an outer variable whole is not a path.
    let own = r#"
n = 1
. = map_values(array!(.events)) -> |e| { t = e.tags; {"t": t[0], "n": n} }
"#;
    assert_eq!(found(own), []);

    // Read before the closure assigns it, the name is still the outer one.
    let before_assigned = r#"
b = {"k": 1}
. = map_values(array!(.events)) -> |_e| { b = b.k; {"b": b} }
"#;
    assert_eq!(
        found(before_assigned),
        [(3, 47, "b.k".to_string(), Why::OuterPathInClosure)]
    );

    // A nested closure reading its outer closure's parameter by path
    // copies it once for each inner element.
    let nested = r#"
. = map_values(array!(.events)) -> |e| {
    map_values(array!(e.tags)) -> |t| { {"t": t, "seq": e.seq} }
}
"#;
    assert_eq!(
        found(nested),
        [(3, 57, "e.seq".to_string(), Why::OuterPathInClosure)]
    );
}

#[test]
fn a_program_vrl_cannot_parse_is_an_error() {
    let err = check("x = ").unwrap_err();
    assert!(err.starts_with("VRL cannot parse it"), "{err}");
}
