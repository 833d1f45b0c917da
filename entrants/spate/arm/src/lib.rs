//! spate's arm of the benchmark: the workload's pipeline logic, kept in a
//! library so that `cargo test` holds it to the workload's closed form.

pub mod rows;
pub mod settings;
