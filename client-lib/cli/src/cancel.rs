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
    let (cancelled, others) = block_on(async {
        let mut client = args.daemon.connect().await?;
        let cancelled = client.cancel(args.pid, &args.ids).await?;
        // Without ids only this tool's requests go: say whose are left, and how to name them.
        let others = if args.ids.is_empty() && cancelled.is_empty() {
            client.describe(args.pid).await?.requests
        } else {
            Vec::new()
        };
        Ok((cancelled, others))
    })?;
    if args.json {
        return print_stdout(&json(&cancelled)?);
    }
    let ids: Vec<String> = cancelled.iter().map(u64::to_string).collect();
    print_stdout(&if ids.is_empty() && !others.is_empty() {
        let listed: Vec<String> = others
            .iter()
            .map(|r| format!("{} (tool `{}`)", r.id, r.owner))
            .collect();
        format!(
            "nothing of this tool's to cancel; the target has requests of other tools: {}; give their ids to cancel them\n",
            listed.join(", ")
        )
    } else if ids.is_empty() {
        "nothing to cancel\n".to_owned()
    } else {
        format!("cancelled {}\n", ids.join(", "))
    })
}
