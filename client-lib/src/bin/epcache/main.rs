//! The `epcache` command line: trace replay, trace conversion and building programs with capture.

#![forbid(unsafe_code)]

mod cc;
mod numbers;
mod output;
mod progress;
mod replay;
mod report;
mod trace;
mod trace_input;

use clap::{Parser, Subcommand};

/// epcache: a data-structure-centric cache monitor built on a simulated cache hierarchy.
#[derive(Debug, Parser)]
#[command(name = "epcache", version, about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    Replay(replay::ReplayArgs),
    Cc(cc::CcArgs),
    /// Work with trace files.
    #[command(subcommand)]
    Trace(trace::TraceCommand),
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Replay(args) => replay::run(&args),
        Command::Trace(command) => trace::run(&command),
        // The compiler's own exit code, so make and cmake see its failures as usual.
        Command::Cc(args) => std::process::exit(cc::run_cc(&args)?),
    }
}
