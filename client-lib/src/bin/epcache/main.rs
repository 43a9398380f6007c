//! The `epcache` command line: trace replay and trace conversion for now.

#![forbid(unsafe_code)]

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
    /// Work with trace files.
    #[command(subcommand)]
    Trace(trace::TraceCommand),
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Replay(args) => replay::run(&args),
        Command::Trace(command) => trace::run(&command),
    }
}
