//! `epcache results`: the latest results of requests, as a table.

use std::fmt::Write as _;

use clap::Args;
use epcache_client::RequestResult;

use crate::connection::{DaemonArgs, block_on, json, table};
use crate::output::print_stdout;

/// Show the latest results of requests (all of the target's, or those named), with totals: one
/// row per request, or per thread for a per-thread request (THREAD gives the target's number for
/// the thread, as halts and the standalone report's rows number threads, then its OS thread id;
/// a last row `N others` sums the threads the target had no room to keep apart). Analysis
/// requests say what their report holds; `--json` prints it. Use `epcache histogram` to see a
/// histogram's buckets.
#[derive(Debug, Args)]
pub(crate) struct ResultsArgs {
    /// The target's pid.
    pid: u32,
    /// Request ids; without them, every request on the target.
    ids: Vec<u64>,
    #[command(flatten)]
    daemon: DaemonArgs,
    /// Print JSON (every bucket with its address range, analysis reports included; a failure
    /// too, as {"error": ...} on stdout).
    #[arg(long)]
    pub(crate) json: bool,
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
    print_stdout(&results_text(&results, false))
}

/// The table: one row per request, or for a per-thread request one per thread (THREAD says
/// which), then a line per analysis request saying what its report holds. Once the target
/// `ended`, a request without a result never ran, rather than has none yet.
pub(crate) fn results_text(results: &[RequestResult], ended: bool) -> String {
    let mut rows: Vec<Vec<String>> = Vec::new();
    for r in results {
        let q = &r.request;
        let row = |thread: String, instances: u64, value: String| {
            vec![
                q.id.to_string(),
                q.region.name.clone(),
                q.data_name(),
                q.event.clone(),
                if q.buckets == 0 {
                    "static".into()
                } else if !q.fields.is_empty() {
                    format!("by field ({})", q.fields.len())
                } else {
                    format!("{} buckets", q.buckets)
                },
                thread,
                instances.to_string(),
                value,
            ]
        };
        if !r.available {
            // No instance of its region ended since it was placed: whether its data existed
            // does not matter yet.
            let none = match ended {
                _ if q.adopted => "(none: its tool is gone, it no longer counts)",
                true => "(never ran)",
                false => "(none yet)",
            };
            rows.push(row(String::new(), 0, none.into()));
        } else if q.unbound_reason().is_some() {
            // Its instances ran, but its data never existed while they did.
            let none = if ended {
                "(unbound: nothing was allocated there)"
            } else {
                "(unbound: nothing allocated yet)"
            };
            rows.push(row(String::new(), r.instances, none.into()));
        } else if r.threads.is_empty() {
            rows.push(row("all".into(), r.instances, r.total.to_string()));
        } else {
            for t in &r.threads {
                let who = thread_cell(t);
                rows.push(row(who, t.instances, t.total.to_string()));
            }
        }
    }
    let mut out = table(
        &[
            ">ID",
            "REGION",
            "DATA",
            "EVENT",
            "MODE",
            "THREAD",
            ">INSTANCES",
            ">TOTAL",
        ],
        &rows,
    );
    let stopped: Vec<String> = results
        .iter()
        .filter(|r| r.request.adopted && r.available)
        .map(|r| r.request.id.to_string())
        .collect();
    if !stopped.is_empty() {
        let _ = writeln!(
            out,
            "request(s) {}: their tool is gone and the daemon took their slots back, so these are their last counts; place them again to go on counting",
            stopped.join(", ")
        );
    }
    for r in results.iter().filter(|r| !r.request.analyses.is_empty()) {
        let id = r.request.id;
        let _ = match (&r.analysis, &r.analysis_missing) {
            (Some(a), _) => writeln!(
                out,
                "request {id}: analysis report at {}{}, over {} range(s) (the counts are of every instance); `--json` shows it",
                a.level_name,
                last_instance_of(r),
                a.ranges.len()
            ),
            (None, Some(why)) => writeln!(out, "request {id}: no analysis report: {why}"),
            (None, None) => Ok(()),
        };
        if let Some(a) = &r.analysis {
            out.push_str(&field_use_text(r, a));
        }
    }
    out
}

/// What an analysis report covers when the request counted several instances (empty for
/// one): the runtime analyses each instance afresh and keeps the last one's report, while the
/// counts add up.
/// A per-thread row's THREAD cell: the target's number for the thread, as the report's rows and
/// halts number threads, then its OS id and OpenMP number (`1 (tid 4242, omp 1)`).
fn thread_cell(t: &epcache_client::ThreadResult) -> String {
    let Some(tid) = t.thread_id else {
        return format!("{} others", t.threads);
    };
    let omp = t
        .openmp_thread
        .map(|n| format!(", omp {n}"))
        .unwrap_or_default();
    match t.thread_index {
        Some(index) => format!("{index} (tid {tid}{omp})"),
        None => format!("tid {tid}{omp}"),
    }
}

fn last_instance_of(r: &RequestResult) -> String {
    if r.instances > 1 {
        format!(", of the last of {} instances", r.instances)
    } else {
        String::new()
    }
}

/// Spatial use per field of a by-field request's array, as a table under a line naming it;
/// empty when the report has none (no by-field request, or no reuse analysis).
fn field_use_text(r: &RequestResult, a: &epcache_client::AnalysisReport) -> String {
    let names: Vec<&str> = r
        .request
        .fields
        .iter()
        .map(|f| f.name.as_str())
        .chain(["(padding)"])
        .collect();
    let mut out = String::new();
    for range in &a.ranges {
        let Some(reuse) = range
            .reuse
            .as_ref()
            .filter(|u| u.fields.len() == names.len())
        else {
            continue;
        };
        let rows: Vec<Vec<String>> = names
            .iter()
            .zip(&reuse.fields)
            .map(|(name, u)| {
                vec![
                    (*name).to_owned(),
                    u.fetched_bytes.to_string(),
                    u.used_bytes.to_string(),
                    u.spatial_use
                        .map_or("-".into(), |s| format!("{:.1}%", s * 100.0)),
                ]
            })
            .collect();
        let _ = writeln!(
            out,
            "request {}: spatial use per field of {} at {}{} (bytes the lines brought in, and those used before they left):",
            r.request.id,
            r.request.data_name(),
            a.level_name,
            last_instance_of(r)
        );
        out.push_str(&table(
            &["FIELD", ">FETCHED BYTES", ">USED BYTES", ">SPATIAL USE"],
            &rows,
        ));
    }
    out
}
