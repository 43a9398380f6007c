//! `epcache continue`: let a halted target run on.

use clap::Args;

use crate::connection::{DaemonArgs, block_on, json};
use crate::output::print_stdout;

/// Let a halted (or start-waiting) target run on, to its halting point if one is armed.
#[derive(Debug, Args)]
pub(crate) struct ContinueArgs {
    /// The target's pid.
    pid: u32,
    /// Clear the halting point first, so the target runs to its end.
    #[arg(long)]
    to_end: bool,
    #[command(flatten)]
    daemon: DaemonArgs,
    /// Print JSON (a failure too, as {"error": ...} on stdout).
    #[arg(long)]
    pub(crate) json: bool,
}

pub(crate) fn run(args: &ContinueArgs) -> anyhow::Result<()> {
    block_on(async {
        Ok(args
            .daemon
            .connect()
            .await?
            .resume(args.pid, args.to_end)
            .await?)
    })?;
    if args.json {
        return print_stdout(&json(&serde_json::json!({
            "pid": args.pid,
            "runs_on": true,
            "halting_point_cleared": args.to_end,
        }))?);
    }
    print_stdout(&format!("pid {} runs on\n", args.pid))
}
