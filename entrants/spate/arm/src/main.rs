//! spate's arm: drains the workload's topic into ClickHouse with spate's
//! own connectors, configured by one pipeline file.
//!
//! Usage: `spate-arm PIPELINE.yaml`, `spate-arm --version`, or
//! `spate-arm --settings-json` (the environment variables it reads, as an
//! option registry: `settings::SETTINGS`).
//!
//! The pipeline file is spate's own configuration format (framework
//! sections, and the Kafka source, Avro deserializer and ClickHouse sink
//! bodies); the plan writes it whole, from the entrant's knobs, so what runs
//! is what `spatec plan` shows. spate expands `${VAR}` in it, which is how
//! the ClickHouse credentials come from the environment. The arm adds only
//! the workload's flatten and transform (`rows`), and never stops by
//! itself: spatec watches the table and stops the container.

use std::error::Error;
use std::path::Path;
use std::process::ExitCode;

use apache_avro::types::Value as AvroValue;
use bytes::BytesMut;
use serde::Serialize;
use spate_arm::rows::{Row, Transform};
use spate_arm::settings;
use spate_avro::AvroDeserializerBuilder;
use spate_clickhouse::{ClickHouseEncoder, ClickHouseSinkConfig, Format, NativeEncoder};
use spate_core::deser::{Owned, RecFamily};
use spate_core::error::SinkError;
use spate_core::ops::chain;
use spate_core::pipeline::Pipeline;
use spate_core::record::Record;
use spate_core::sink::{KeyHashRouter, RowEncoder};
use spate_core::telemetry::{self, LogFormat};
use spate_kafka::KafkaSource;

/// What `--version` prints: the spate the lock file linked, then the
/// compiler. spatec's version probe reads the first line.
fn version() -> String {
    format!(
        "spate-arm {} on spate {}\ntoolchain: {}",
        env!("CARGO_PKG_VERSION"),
        env!("SPATE_ARM_SPATE_VERSION"),
        env!("SPATE_ARM_TOOLCHAIN"),
    )
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [flag] if flag == "--version" => {
            println!("{}", version());
            ExitCode::SUCCESS
        }
        [flag] if flag == "--settings-json" => {
            match serde_json::to_string_pretty(&settings::registry()) {
                Ok(json) => {
                    println!("{json}");
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("spate-arm: writing the settings as JSON: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        [path] if !path.starts_with('-') => {
            // The environment before anything starts: a setting misspelt
            // is refused here, as a bad command line is.
            let vars = std::env::vars_os().map(|(k, v)| {
                (
                    k.to_string_lossy().into_owned(),
                    v.to_string_lossy().into_owned(),
                )
            });
            let transform = match settings::transform(vars) {
                Ok(t) => t,
                Err(e) => {
                    eprintln!(
                        "spate-arm: bad configuration:\n  {}",
                        e.replace('\n', "\n  ")
                    );
                    return ExitCode::from(2);
                }
            };
            // Readable lines on the container's log, which spatec quotes
            // when a run fails; spate's default is JSON.
            telemetry::init(LogFormat::Pretty, "info");
            match run(Path::new(path), transform) {
                Ok(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
                Err(e) => {
                    eprintln!("spate-arm: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        _ => {
            eprintln!(
                "usage: spate-arm PIPELINE.yaml | spate-arm --version | spate-arm --settings-json"
            );
            ExitCode::from(2)
        }
    }
}

/// Builds the pipeline the file describes and runs it, with the workload's
/// transform, until it is stopped, returning spate's exit code.
fn run(path: &Path, transform: Transform) -> Result<i32, Box<dyn Error>> {
    let pipeline = Pipeline::from_path(path)
        .map_err(|e| format!("loading the pipeline {}: {e}", path.display()))?;
    let config = pipeline.config();
    let source = KafkaSource::from_component_config(&config.source)?;
    let deserializer = config
        .deserializer
        .as_ref()
        .ok_or("the pipeline has no deserializer section; the workload is Avro: give it `deserializer: { avro: … }`")?;
    let avro = AvroDeserializerBuilder::from_component(deserializer, &pipeline.io_handle())?;
    let sink_section = config.sink_config("default")?;
    let format = sink_section
        .deserialize_into::<ClickHouseSinkConfig>()?
        .format;
    let sink = spate_clickhouse::from_component_config(sink_section)?;
    let encoder = match format {
        // Native writes columns by the server's types, which the sink reads
        // from the table before the first row.
        Format::Native => Encoder::Native(NativeEncoder::new(
            pipeline
                .block_on(sink.native_schema())
                .map_err(|e| format!("reading the table's columns for Native inserts: {e}"))?,
        )),
        Format::RowBinary => Encoder::RowBinary(ClickHouseEncoder::new()),
    };
    let values = avro.build_value()?;
    println!(
        "{}; {format:?} inserts",
        version().lines().next().unwrap_or_default()
    );

    let report = pipeline
        .sink(sink)?
        .chains(move |ctx| {
            let (values, encoder, transform) = (values.clone(), encoder.clone(), transform.clone());
            let chunk = ctx.chunk();
            // The chain's own counters, as the harness's arm keeps them:
            // their cost is spate's as shipped, though no figure is read
            // from them (the exporter is off).
            chain::<Owned<AvroValue>, _>(values)
                .with_metrics(ctx.pipeline, "main")
                .flat_map::<Owned<Row>, _>(move |batch, out| {
                    // Every row of a batch is emitted: the chain resumes per
                    // message, so stopping midway on backpressure would lose
                    // the rest of it. A value that is not a SensorBatch means
                    // the registry holds another schema; nothing right can be
                    // written from it.
                    if let Err(e) = transform.flatten(&batch, |row| {
                        out.emit(row);
                    }) {
                        panic!("{e}");
                    }
                })
                .sink(encoder, KeyHashRouter, chunk, ctx.queues, ctx.budget)
                .build()
        })
        .run(source)?;
    report.log();
    Ok(report.exit_code())
}

/// The encoder of the configured insert format: the chain's sink stage
/// takes one encoder type, so the choice is made per row, not per chain.
enum Encoder<F: RecFamily> {
    Native(NativeEncoder<F>),
    RowBinary(ClickHouseEncoder<F>),
}

// Not derived: a derive would require the family marker F to be Clone.
impl<F: RecFamily> Clone for Encoder<F> {
    fn clone(&self) -> Self {
        match self {
            Self::Native(e) => Self::Native(e.clone()),
            Self::RowBinary(e) => Self::RowBinary(e.clone()),
        }
    }
}

impl<F> RowEncoder<F> for Encoder<F>
where
    F: RecFamily,
    for<'b> F::Rec<'b>: Serialize,
{
    fn encode<'buf>(
        &mut self,
        rec: &Record<F::Rec<'buf>>,
        buf: &mut BytesMut,
    ) -> Result<(), SinkError> {
        match self {
            Self::Native(e) => e.encode(rec, buf),
            Self::RowBinary(e) => e.encode(rec, buf),
        }
    }

    // Native holds a chunk's rows as columns until the chunk is sealed, so
    // both of these must reach it: the sink sizes chunks by the first, and
    // the second is where the block is written.
    fn buffered_bytes(&self) -> usize {
        match self {
            Self::Native(e) => e.buffered_bytes(),
            Self::RowBinary(e) => e.buffered_bytes(),
        }
    }

    fn finish_chunk(&mut self, buf: &mut BytesMut) -> Result<(), SinkError> {
        match self {
            Self::Native(e) => e.finish_chunk(buf),
            Self::RowBinary(e) => e.finish_chunk(buf),
        }
    }
}
