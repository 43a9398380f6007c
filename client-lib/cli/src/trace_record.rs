//! `epcache trace record`: ask a target waiting at its start (`EPCACHE_WAIT`) to record a
//! partial data trace of a region through the daemon (the MRI's StartTrace), let it run, and
//! wait until the target says what it wrote.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Args;
use epcache_client::{TargetState, TraceInfo, TraceOrder, TraceState};

use crate::connection::{DaemonArgs, block_on, json};
use crate::numbers::grouped;
use crate::output::{print_stdout, shell_word};

/// How often the order's state is read while the target records.
const POLL: Duration = Duration::from_millis(100);

/// How long `trace record` waits for a target started just before it (`./prog & epcache trace
/// record --target $!`) to announce itself to the daemon, which it does once its start-up has
/// read the program's debug info.
const ANNOUNCE_WAIT: Duration = Duration::from_secs(10);

/// `epcache trace record`'s options (its help is the `TraceCommand::Record` variant's).
#[derive(Debug, Args)]
pub(crate) struct RecordArgs {
    /// The target's pid.
    #[arg(long = "target", value_name = "PID")]
    pid: u32,
    /// The region (a function or a marker's label) whose instances the trace counts.
    #[arg(long, value_name = "NAME", required_unless_present = "region_key")]
    region: Option<String>,
    /// The region by key FILE_ID:LINE (see `epcache describe`), when its name is ambiguous
    /// (static functions of one name in several files).
    #[arg(long, value_name = "FILE_ID:LINE", conflicts_with = "region")]
    region_key: Option<String>,
    /// Record this many instances of the region on each thread that runs it [default: every
    /// one until the program ends].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    instances: Option<u64>,
    /// Stop a thread's recording after it wrote this many accesses (cutting the instance under
    /// way; the trace is then incomplete) [default: no limit].
    #[arg(long, value_name = "ACCESSES", value_parser = clap::value_parser!(u64).range(1..))]
    budget: Option<u64>,
    /// Write only the accesses to this data structure (a global or an address range's name;
    /// repeat for up to 8). The trace then re-simulates those alone, not the live counts
    /// [default: every access].
    #[arg(long = "data", value_name = "NAME")]
    data: Vec<String>,
    /// The file the target writes.
    #[arg(long, short, value_name = "FILE")]
    output: PathBuf,
    /// Replace the file if it exists.
    #[arg(long)]
    overwrite: bool,
    /// Leave the target waiting at its start (another tool releases it), and wait for the trace.
    #[arg(long)]
    no_release: bool,
    /// Return once the order is placed (read it later with the daemon's ReadTrace), instead of
    /// waiting until the trace is written.
    #[arg(long)]
    no_wait: bool,
    #[command(flatten)]
    daemon: DaemonArgs,
    /// Print JSON (a failure too, as {"error": ...} on stdout).
    #[arg(long)]
    pub(crate) json: bool,
}

pub(crate) fn run(args: &RecordArgs) -> anyhow::Result<()> {
    let output = std::path::absolute(&args.output)
        .with_context(|| format!("making {} absolute", args.output.display()))?;
    let output = output
        .to_str()
        .with_context(|| format!("{} is not UTF-8", output.display()))?
        .to_owned();
    let order = TraceOrder {
        instances: args.instances,
        access_budget: args.budget,
        data: args.data.iter().map(|d| d.as_str().into()).collect(),
        overwrite: args.overwrite,
        ..TraceOrder::new(
            crate::request::region_ref(args.region.as_ref(), args.region_key.as_ref())?,
            output,
        )
    };
    let (trace, spec) = block_on(async {
        let mut client = args.daemon.connect().await?;
        // A target not known yet, or still registering its regions, may just be starting:
        // waited for while its process lives; the trace order below then says why, if it
        // never came to wait for a tool.
        let deadline = std::time::Instant::now() + ANNOUNCE_WAIT;
        let running = || std::path::Path::new(&format!("/proc/{}", args.pid)).exists();
        let spec = loop {
            let (spec, starting) = match client.describe(args.pid).await {
                Ok(d) => (d.cache_spec, d.target.state == TargetState::Starting),
                Err(_) => (None, true),
            };
            if !starting || std::time::Instant::now() >= deadline || !running() {
                break spec;
            }
            tokio::time::sleep(POLL).await;
        };
        let placed = client.start_trace(args.pid, &order).await?;
        if !args.no_release {
            client
                .resume(args.pid, false)
                .await
                .context("releasing the target from its start wait")?;
        }
        if args.no_wait {
            return Ok((placed, spec));
        }
        loop {
            let now = client.read_trace(args.pid, placed.id).await?;
            if now.state.is_final() {
                return Ok((now, spec));
            }
            tokio::time::sleep(POLL).await;
        }
    })?;
    if args.json {
        print_stdout(&json(&trace)?)?;
    } else {
        print_stdout(&describe(&trace, spec.as_deref()))?;
    }
    match trace.state {
        TraceState::Written if trace.instances == 0 && trace.message.contains("never ran") => {
            bail!(
                "region `{}` never ran in pid {}, so the trace {} counts nothing (is it the name `epcache describe` lists?)",
                trace.region,
                trace.pid,
                trace.output
            )
        }
        TraceState::Written if trace.instances == 0 => bail!(
            "the trace {} of `{}` in pid {} counts no instance: {}",
            trace.output,
            trace.region,
            trace.pid,
            trace.message
        ),
        TraceState::Pending | TraceState::Recording | TraceState::Written => Ok(()),
        state => bail!(
            "the trace of `{}` in pid {} was not written ({state:?}): {}",
            trace.region,
            trace.pid,
            trace.message
        ),
    }
}

/// The order in words.
fn describe(t: &TraceInfo, spec: Option<&str>) -> String {
    match t.state {
        TraceState::Pending | TraceState::Recording => format!(
            "pid {}: trace {} of `{}` into {} is asked for ({:?})\n",
            t.pid, t.id, t.region, t.output, t.state
        ),
        TraceState::Written => {
            let how = if t.complete && t.message.is_empty() {
                "complete".to_owned()
            } else if t.complete {
                format!("complete; {}", t.message)
            } else if t.message.is_empty() {
                "incomplete".to_owned()
            } else {
                format!("incomplete: {}", t.message)
            };
            format!(
                "pid {}: recorded {} instance(s) of `{}` in {}: {} accesses ({how}); replay it with `epcache replay --cache {} {}`\n",
                t.pid,
                t.instances,
                t.region,
                t.output,
                grouped(t.accesses),
                shell_word(spec.unwrap_or("SPEC")),
                shell_word(&t.output)
            )
        }
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(complete: bool, message: &str) -> TraceInfo {
        TraceInfo {
            pid: 42,
            id: 1,
            region: "axpy._omp_fn.0".into(),
            output: "/tmp/t.eppt".into(),
            state: TraceState::Written,
            accesses: 750_000,
            instances: 1,
            complete,
            budget_reached: false,
            message: message.into(),
        }
    }

    #[test]
    fn a_written_trace_says_what_the_target_noted_complete_or_not() {
        let plain = describe(&written(true, ""), Some("D1=32K,8,64"));
        assert!(plain.contains("750,000 accesses (complete)"), "{plain}");
        let note = "3 instance(s) of the region on other threads are not in the trace";
        let noted = describe(&written(true, note), None);
        assert!(noted.contains(&format!("(complete; {note})")), "{noted}");
        let cut = describe(&written(false, "the budget"), None);
        assert!(cut.contains("(incomplete: the budget)"), "{cut}");
    }
}
