//! The `epcache` command line: the demo, trace replay and conversion, building programs with
//! capture, and driving monitored programs through a daemon (run, targets, describe, request,
//! cancel, step, continue, watch, results, histogram).
//!
//! A thin binary over the library crates: each subcommand is one module that parses its
//! arguments (clap) and calls `epcache-client`, `epcache-cc` or `epcache-sim`, then prints.
//!
//! Layout:
//! - without a daemon: `demo.rs` (with `demo_plot.rs`), `replay.rs` (with `report.rs`),
//!   `trace.rs`, `trace_input.rs`, and `cc.rs` (the arguments of `epcache cc`; the driver is
//!   `epcache-cc`);
//! - `run.rs`: one program under monitoring, with an embedded daemon unless `--daemon` names
//!   one, checked first by `preflight.rs`; its standalone report shown by `report_table.rs`;
//! - one module per daemon subcommand: `targets.rs`, `describe.rs`, `request.rs`, `cancel.rs`,
//!   `step.rs`, `resume.rs` (`continue`), `watch.rs`, `results.rs`, `histogram.rs` (with
//!   `array_labels.rs`); what they share (address, token, tool name, `--json`) is
//!   `connection.rs`;
//! - `annotate.rs`: a standalone report's per-line misses as a table with source text, or in
//!   Callgrind's format or CSV (`line_report.rs`, which `run.rs` uses too);
//! - printing helpers: `numbers.rs`, `output.rs`, `progress.rs`.
//!
//! Architecture Invariant: no subcommand holds logic a library crate could hold; errors are
//! `anyhow` here and typed in the libraries, and a `--json` caller gets failures as JSON too.

#![forbid(unsafe_code)]

mod allocated_arrays;
mod annotate;
mod array_labels;
mod by_field;
mod cancel;
mod cc;
mod connection;
mod demangle;
mod demo;
mod demo_plot;
mod describe;
mod heap_shapes;
mod histogram;
mod inlined_regions;
mod line_report;
mod numbers;
mod output;
mod preflight;
mod progress;
mod replay;
mod replay_partial;
mod report;
mod report_table;
mod request;
mod results;
mod resume;
mod run;
mod run_dir;
mod run_trace;
mod step;
mod targets;
mod trace;
mod trace_input;
mod trace_record;
mod trace_sites;
mod watch;

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
    Demo(demo::DemoArgs),
    Replay(replay::ReplayArgs),
    Cc(cc::CcArgs),
    /// Work with trace files.
    #[command(subcommand)]
    Trace(trace::TraceCommand),
    Run(run::RunArgs),
    Targets(targets::TargetsArgs),
    Describe(describe::DescribeArgs),
    Request(request::RequestArgs),
    Cancel(cancel::CancelArgs),
    Step(step::StepArgs),
    Continue(resume::ContinueArgs),
    Watch(watch::WatchArgs),
    Results(results::ResultsArgs),
    Histogram(histogram::HistogramArgs),
    Annotate(annotate::AnnotateArgs),
}

impl Command {
    /// Whether the command was asked for JSON, so that a failure comes as JSON too.
    fn json(&self) -> bool {
        match self {
            Command::Replay(a) => a.json,
            Command::Run(a) => a.json,
            Command::Targets(a) => a.json,
            Command::Describe(a) => a.json,
            Command::Request(a) => a.json,
            Command::Cancel(a) => a.json,
            Command::Step(a) => a.json,
            Command::Continue(a) => a.json,
            Command::Watch(a) => a.json,
            Command::Results(a) => a.json,
            Command::Histogram(a) => a.json,
            Command::Trace(c) => c.json(),
            Command::Demo(_) | Command::Cc(_) | Command::Annotate(_) => false,
        }
    }
}

/// A failure as the JSON a `--json` caller parses: the message, its causes, and the daemon's
/// gRPC code when the daemon refused.
fn error_json(error: &anyhow::Error) -> serde_json::Value {
    let code = error
        .chain()
        .find_map(|e| e.downcast_ref::<epcache_client::ClientError>())
        .and_then(epcache_client::ClientError::code)
        .map(|c| format!("{c:?}"));
    serde_json::json!({
        "error": error.to_string(),
        "causes": error.chain().skip(1).map(ToString::to_string).collect::<Vec<_>>(),
        "code": code,
    })
}

fn main() {
    let command = match Cli::try_parse() {
        Ok(cli) => cli.command,
        Err(e) => {
            // Help and version go to stdout with status 0. A wrong command line is status 1,
            // the "anything else" of every command's help: clap's own 2 would read as `epcache
            // run`'s "could not monitor the program".
            let _ = e.print();
            std::process::exit(if e.use_stderr() { 1 } else { 0 });
        }
    };
    let json = command.json();
    if let Err(error) = run(command) {
        if json {
            println!("{}", error_json(&error));
        }
        // The message and its causes, one per line, and nothing else: anyhow's default report
        // from `main` also prints a backtrace whenever RUST_BACKTRACE is set for other reasons.
        eprintln!("epcache: {error}");
        // A transport error's causes repeat what was said (tonic wraps hyper's words in its own).
        let mut said = vec![error.to_string()];
        for cause in error.chain().skip(1).map(|c| c.to_string()) {
            if !said.iter().any(|s| s.contains(cause.as_str())) {
                eprintln!("  caused by: {cause}");
                said.push(cause);
            }
        }
        std::process::exit(1);
    }
}

fn run(command: Command) -> anyhow::Result<()> {
    match command {
        Command::Replay(args) => replay::run(&args),
        Command::Trace(command) => trace::run(&command),
        // The compiler's own exit code, so make and cmake see its failures as usual.
        Command::Cc(args) => std::process::exit(cc::run(&args)?),
        // The program's own exit code (or 2 when requests were refused).
        Command::Run(args) => std::process::exit(run::run(&args)?),
        Command::Targets(args) => targets::run(&args),
        Command::Describe(args) => describe::run(&args),
        Command::Request(args) => request::run(&args),
        Command::Cancel(args) => cancel::run(&args),
        // 0 halted, 3 finished, 4 died (see `epcache step --help`).
        Command::Step(args) => std::process::exit(step::run(&args)?),
        Command::Continue(args) => resume::run(&args),
        Command::Watch(args) => watch::run(&args),
        Command::Results(args) => results::run(&args),
        Command::Histogram(args) => histogram::run(&args),
        Command::Demo(args) => demo::run(&args),
        Command::Annotate(args) => annotate::annotate(&args),
    }
}
