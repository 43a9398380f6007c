//! `epcache cancel`: withdraw requests.

use clap::Args;

use crate::connection::{DaemonArgs, block_on, json};
use crate::output::print_stdout;

/// Withdraw requests by id; without ids, every request this tool (--tool) placed on the target.
#[derive(Debug, Args)]
pub(crate) struct CancelArgs {
    /// The target's pid.
    pid: u32,
    /// Request ids (see `epcache describe` or `epcache results`).
    ids: Vec<u64>,
    #[command(flatten)]
    daemon: DaemonArgs,
    /// Print JSON (a failure too, as {"error": ...} on stdout).
    #[arg(long)]
    pub(crate) json: bool,
}

pub(crate) fn run(args: &CancelArgs) -> anyhow::Result<()> {
    let cancelled = block_on(async {
        Ok(args
            .daemon
            .connect()
            .await?
            .cancel(args.pid, &args.ids)
            .await?)
    })?;
    if args.json {
        return print_stdout(&json(&cancelled)?);
    }
    let ids: Vec<String> = cancelled.iter().map(u64::to_string).collect();
    print_stdout(&if ids.is_empty() {
        "nothing to cancel\n".to_owned()
    } else {
        format!("cancelled {}\n", ids.join(", "))
    })
}
