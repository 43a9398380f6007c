//! `epcache trace`: converting lackey logs to the compact `.epct` format.

use std::fs::File;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;
use clap::{Args, Subcommand, ValueEnum};
use epcache_sim::trace::{EpctWriter, LackeyReader};

use crate::numbers::{grouped, millions_per_second};
use crate::output::print_stdout;
use crate::progress::Progress;
use crate::trace_input::TraceInput;

#[derive(Debug, Subcommand)]
pub(crate) enum TraceCommand {
    /// Convert a trace to epcache's compact binary format (.epct) for fast re-runs.
    Convert(ConvertArgs),
}

/// Formats `trace convert` reads.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum SourceFormat {
    /// Valgrind `--tool=lackey --trace-mem=yes` output.
    Lackey,
}

#[derive(Debug, Args)]
pub(crate) struct ConvertArgs {
    /// Format of INPUT.
    #[arg(long, value_enum)]
    from: SourceFormat,
    /// The trace to convert, or `-` for standard input.
    input: PathBuf,
    /// The .epct file to write (replaced if it exists).
    output: PathBuf,
}

/// Runs an `epcache trace` subcommand.
pub(crate) fn run(command: &TraceCommand) -> anyhow::Result<()> {
    match command {
        TraceCommand::Convert(args) => convert(args),
    }
}

fn convert(args: &ConvertArgs) -> anyhow::Result<()> {
    let SourceFormat::Lackey = args.from;
    let started = Instant::now();
    let input = TraceInput::open(&args.input)?;
    let output = File::create(&args.output)
        .with_context(|| format!("cannot create `{}`", args.output.display()))?;
    let writing = || format!("writing `{}`", args.output.display());
    let mut writer = EpctWriter::new(output).with_context(writing)?;
    let mut reader = LackeyReader::new(input);
    let mut progress = Progress::on_terminal();
    while let Some(record) = reader
        .next_record()
        .with_context(|| format!("in lackey trace `{}`", args.input.display()))?
    {
        writer.write(&record).with_context(writing)?;
        if writer.records() % (1 << 20) == 0 {
            progress.update(writer.records());
        }
    }
    progress.finish();
    let records = writer.records();
    let bytes_out = writer.bytes();
    writer.finish().with_context(writing)?;
    let bytes_in = reader.bytes_read();
    let seconds = started.elapsed().as_secs_f64();
    print_stdout(&format!(
        "converted {} records ({} other lines skipped): {} bytes of lackey text -> {} bytes of epct, {:.1}x smaller, in {seconds:.2} s ({:.1} M records/s)\n",
        grouped(records),
        grouped(reader.skipped_lines()),
        grouped(bytes_in),
        grouped(bytes_out),
        bytes_in as f64 / bytes_out.max(1) as f64,
        millions_per_second(records, seconds),
    ))
}
