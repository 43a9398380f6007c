//! `epcache targets`: the monitored programs a daemon knows.

use clap::Args;

use crate::connection::{DaemonArgs, block_on, json, table};
use crate::output::print_stdout;

/// List the monitored programs the daemon knows (running, and recently ended).
#[derive(Debug, Args)]
pub(crate) struct TargetsArgs {
    #[command(flatten)]
    daemon: DaemonArgs,
    /// Print JSON (a failure too, as {"error": ...} on stdout).
    #[arg(long)]
    pub(crate) json: bool,
}

pub(crate) fn run(args: &TargetsArgs) -> anyhow::Result<()> {
    let targets = block_on(async { Ok(args.daemon.connect().await?.targets().await?) })?;
    if args.json {
        return print_stdout(&json(&targets)?);
    }
    if targets.is_empty() {
        return print_stdout(&format!(
            "no targets at {}; start a program built with `epcache cc` (or `epcache run`)\n",
            args.daemon.address()
        ));
    }
    let rows: Vec<Vec<String>> = targets
        .iter()
        .map(|t| {
            vec![
                t.pid.to_string(),
                t.program.clone(),
                t.state.to_string(),
                t.halted_at
                    .as_ref()
                    .map_or(String::new(), ToString::to_string),
                t.regions.to_string(),
                t.data_structures.to_string(),
                t.requests.to_string(),
                t.cores.map_or(String::new(), |n| n.to_string()),
            ]
        })
        .collect();
    print_stdout(&table(
        &[
            ">PID",
            "PROGRAM",
            "STATE",
            "WHERE",
            ">REGIONS",
            ">DATA",
            ">REQUESTS",
            ">CORES",
        ],
        &rows,
    ))
}
