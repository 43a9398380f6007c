//! `epcache watch`: print a target's halts, result updates and end as they happen.

use anyhow::Context;
use clap::Args;
use epcache_client::Event;
use tokio_stream::StreamExt;

use crate::connection::{DaemonArgs, block_on};
use crate::output::print_stdout;

/// Print events as they happen: halts, result updates, ends; for one target until it ends, or
/// for every target (including those that start later) until interrupted.
#[derive(Debug, Args)]
pub(crate) struct WatchArgs {
    /// The target's pid; without it, every target.
    pid: Option<u32>,
    #[command(flatten)]
    daemon: DaemonArgs,
    /// Print one JSON object per line (a failure too, as {"error": ...} on stdout).
    #[arg(long)]
    pub(crate) json: bool,
}

fn line(event: &Event) -> String {
    match event {
        Event::Target { target } => format!(
            "pid {} ({}): {}{}",
            target.pid,
            target.program,
            target.state,
            target
                .halted_at
                .as_ref()
                .map_or(String::new(), |p| format!(" at the {p}"))
        ),
        Event::Halted { pid, halt } => match &halt.position {
            Some(p) => format!("pid {pid}: halted at the {p}"),
            None => format!("pid {pid}: waiting at start"),
        },
        Event::ResultUpdated { pid, result } => format!(
            "pid {pid}: request {} ({} over {} during {}): {} after {} instance(s)",
            result.request.id,
            result.request.event,
            result.request.data_name(),
            result.request.region.name,
            result.total,
            result.instances
        ),
        Event::Exited { pid, exit } => format!(
            "pid {pid}: {}: {}",
            if exit.died { "died" } else { "exited" },
            exit.reason
        ),
    }
}

pub(crate) fn run(args: &WatchArgs) -> anyhow::Result<()> {
    block_on(async {
        let mut events = args.daemon.connect().await?.watch(args.pid).await?;
        while let Some(event) = events.next().await {
            let event = event?;
            let text = if args.json {
                serde_json::to_string(&event).context("encoding an event")?
            } else {
                line(&event)
            };
            print_stdout(&(text + "\n"))?;
        }
        Ok(())
    })
}
