//! `epcache step`: run a target to a region boundary and wait until it halts there.

use std::time::Duration;

use clap::Args;
use epcache_client::{RegionRef, StepOutcome, StepTo};

use crate::connection::{DaemonArgs, block_on, json};
use crate::output::print_stdout;

/// Run a halted (or start-waiting) target to its next region boundary, or to the end or start of
/// a named region, and wait for the halt. A running target is stopped there.
///
/// The halting point belongs to this step: if the step ends without the halt (Ctrl-C, killed,
/// --timeout), the daemon takes the point back and the target runs on. A halt the step reported
/// stays, for `epcache results` and the next `epcache step`, as long as tools keep calling about
/// the target: after `epcached --halt-lease` seconds (default 600) with no call naming it, the
/// daemon lets it go on.
///
/// Exit status: 0 halted at the point; 3 the program finished before reaching it; 4 the
/// program died (killed or crashed); 1 anything else (the daemon refused or is unreachable,
/// the timeout passed, another tool's step replaced this one's point while it waited).
#[derive(Debug, Args)]
pub(crate) struct StepArgs {
    /// The target's pid.
    pid: u32,
    /// Stop at the end of this region (its next exit).
    #[arg(long, value_name = "REGION", conflicts_with = "to_entry")]
    to_exit: Option<String>,
    /// Stop at the start of this region (its next entry).
    #[arg(long, value_name = "REGION")]
    to_entry: Option<String>,
    /// Go this many matching boundaries on (1 or more).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    count: u32,
    /// Give up waiting after this many seconds (the point is taken back and the target runs on;
    /// exit status 1).
    #[arg(long, value_name = "SECONDS", value_parser = positive_seconds)]
    timeout: Option<Duration>,
    #[command(flatten)]
    daemon: DaemonArgs,
    /// Print JSON (a failure too, as {"error": ...} on stdout).
    #[arg(long)]
    pub(crate) json: bool,
}

/// A `--timeout`: a positive, finite number of seconds.
fn positive_seconds(text: &str) -> Result<Duration, String> {
    let seconds: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("`{text}` is not a number of seconds"))?;
    if seconds.is_nan() || seconds <= 0.0 {
        return Err(format!("`{text}`: give a positive number of seconds"));
    }
    Duration::try_from_secs_f64(seconds).map_err(|_| format!("`{text}` seconds is too long"))
}

/// Exit status when the program finished before reaching the point.
const EXIT_FINISHED: i32 = 3;
/// Exit status when the program died.
const EXIT_DIED: i32 = 4;

/// Steps; returns the exit status (see the command's help).
pub(crate) fn run(args: &StepArgs) -> anyhow::Result<i32> {
    let to = match (&args.to_exit, &args.to_entry) {
        (Some(r), _) => StepTo::RegionExit(RegionRef::Name(crate::demangle::region_name(r))),
        (None, Some(r)) => StepTo::RegionEntry(RegionRef::Name(crate::demangle::region_name(r))),
        (None, None) => StepTo::NextBoundary,
    };
    let outcome = block_on(async {
        Ok(args
            .daemon
            .connect()
            .await?
            .step_by(args.pid, to, args.count, args.timeout)
            .await?)
    })?;
    let status = match &outcome {
        StepOutcome::Halted(_) => 0,
        StepOutcome::Exited(e) if e.died => EXIT_DIED,
        StepOutcome::Exited(_) => EXIT_FINISHED,
    };
    if args.json {
        print_stdout(&json(&outcome)?)?;
        return Ok(status);
    }
    print_stdout(&match outcome {
        StepOutcome::Halted(h) => match h.position {
            Some(p) => format!("halted at the {p}\n"),
            None => "waiting at start\n".into(),
        },
        StepOutcome::Exited(e) if e.died => format!("the target died: {}\n", e.reason),
        StepOutcome::Exited(e) => format!("the target exited: {}\n", e.reason),
    })?;
    Ok(status)
}
