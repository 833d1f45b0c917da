//! A remap transform's program: compiled as Vector 0.57.0 compiles it
//! (`RemapConfig::compile_vrl_program` in `src/transforms/remap.rs` and
//! `compile_vrl` in `lib/vector-core/src/vrl.rs`, at tag v0.57.0) and run
//! on one event as its `Remap::transform` runs it, the result split into
//! events as `VrlTarget::into_events`
//! (`lib/vector-core/src/event/vrl_target.rs`) splits it.

use vrl::compiler::{
    CompileConfig, Program, TargetValue, TimeZone, TypeState, compile_with_state, runtime::Runtime,
    state::ExternalEnv,
};
use vrl::diagnostic::Formatter;
use vrl::path::{OwnedTargetPath, OwnedValuePath};
use vrl::value::{KeyString, ObjectMap, Secrets, Value};

/// A compiled program and the compiler's warnings, formatted as VRL
/// formats them.
pub struct Compiled {
    pub program: Program,
    pub warnings: Option<String>,
}

/// Compiles a program against the whole VRL stdlib. A refusal is VRL's own
/// diagnostic, the text `vector validate` would print.
///
/// The event's type is an object of fields of any type, which is what
/// Vector derives for a kafka source decoding Avro (the decoder's schema
/// definition: unknown fields of any kind) as far as a program reading the
/// record's fields can tell: the source's own fields, which Vector types
/// more closely, are not the record's.
pub fn compile(source: &str) -> Result<Compiled, String> {
    let state = TypeState {
        local: Default::default(),
        external: ExternalEnv::default(),
    };
    let mut config = CompileConfig::default();
    // As Vector's compile_vrl: the `vector` metadata is read-only.
    config.set_read_only_path(
        OwnedTargetPath::metadata(OwnedValuePath::from(vec!["vector".into()])),
        true,
    );
    let result = compile_with_state(source, &vrl::stdlib::all(), &state, config)
        .map_err(|diagnostics| Formatter::new(source, diagnostics).to_string())?;
    let warnings =
        (!result.warnings.is_empty()).then(|| Formatter::new(source, result.warnings).to_string());
    Ok(Compiled {
        program: result.program,
        warnings,
    })
}

/// Runs a compiled program on one event after another, reusing its runtime
/// as the transform does.
#[derive(Default)]
pub struct Runner {
    runtime: Runtime,
}

impl Runner {
    /// The events the program makes of one event, or its runtime error.
    ///
    /// Vector's default timezone is the host's; it only matters to a
    /// program that parses or formats local times.
    pub fn run(&mut self, program: &Program, event: Value) -> Result<Vec<ObjectMap>, String> {
        let mut target = TargetValue {
            value: event,
            metadata: Value::Object(ObjectMap::new()),
            secrets: Secrets::default(),
        };
        let result = self
            .runtime
            .resolve(&mut target, program, &TimeZone::default());
        self.runtime.clear();
        result.map_err(|e| e.to_string())?;
        Ok(into_events(target.value))
    }
}

/// The events a program's result becomes, in the legacy log namespace the
/// plans use: an object is one event, an array one event per element, and
/// anything else (an element too) is put under the `message` key, the log
/// schema's default.
pub fn into_events(value: Value) -> Vec<ObjectMap> {
    fn event(v: Value) -> ObjectMap {
        match v {
            Value::Object(o) => o,
            other => ObjectMap::from([(KeyString::from("message"), other)]),
        }
    }
    match value {
        Value::Array(items) => items.into_iter().map(event).collect(),
        other => vec![event(other)],
    }
}
