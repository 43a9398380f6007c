//! `epcache results`: the latest results of requests, as a table.

use clap::Args;

use crate::connection::{DaemonArgs, block_on, json, table};
use crate::output::print_stdout;

/// Show the latest results of requests (all of the target's, or those named), with totals; use
/// `epcache histogram` to see a histogram's buckets.
#[derive(Debug, Args)]
pub(crate) struct ResultsArgs {
    /// The target's pid.
    pid: u32,
    /// Request ids; without them, every request on the target.
    ids: Vec<u64>,
    #[command(flatten)]
    daemon: DaemonArgs,
    /// Print JSON (every bucket with its address range, analysis reports included).
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(args: &ResultsArgs) -> anyhow::Result<()> {
    let results = block_on(async {
        Ok(args
            .daemon
            .connect()
            .await?
            .results(args.pid, &args.ids)
            .await?)
    })?;
    if args.json {
        return print_stdout(&json(&results)?);
    }
    if results.is_empty() {
        return print_stdout("no requests on this target; place one with `epcache request`\n");
    }
    let rows: Vec<Vec<String>> = results
        .iter()
        .map(|r| {
            let q = &r.request;
            let value = if !r.available && q.unbound_reason().is_some() {
                "(unbound: nothing allocated yet)".to_owned()
            } else if !r.available {
                "(none yet)".to_owned()
            } else if r.analysis_json.is_some() {
                "analysis report (--json)".to_owned()
            } else {
                r.total.to_string()
            };
            vec![
                q.id.to_string(),
                q.region.name.clone(),
                q.data_name(),
                q.event.clone(),
                if q.buckets == 0 {
                    "static".into()
                } else {
                    format!("{} buckets", q.buckets)
                },
                r.instances.to_string(),
                value,
            ]
        })
        .collect();
    print_stdout(&table(
        &[
            ">ID",
            "REGION",
            "DATA",
            "EVENT",
            "MODE",
            ">INSTANCES",
            ">TOTAL",
        ],
        &rows,
    ))
}
