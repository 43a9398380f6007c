//! `epcache run --trace REGION [--instances N] --output FILE`: what the program is told
//! (`EPCACHE_TRACE`) and what is said of the recording once it ended.

use std::path::Path;

use epcache_sim::trace::partial::{Mark, PartialTrace, ThreadTrace};

use crate::numbers::grouped;

/// `EPCACHE_TRACE`'s value: the region, and the number of instances when one is given.
pub(crate) fn trace_env(region: &str, instances: Option<u64>) -> String {
    match instances {
        Some(n) => format!("{region}:{n}"),
        None => region.to_owned(),
    }
}

/// Checks the recording the program left at `output` and says on stderr what it holds and
/// how to replay it under `cache`, the one it ran with; `Err` (after saying why) when there is
/// none or the region never ran.
pub(crate) fn check_recording(region: &str, output: &Path, cache: &str) -> Result<(), ()> {
    let name = output.display();
    let trace = match std::fs::File::open(output)
        .map_err(|e| e.to_string())
        .and_then(|f| PartialTrace::read(f).map_err(|e| e.to_string()))
    {
        Ok(trace) => trace,
        Err(why) => {
            eprintln!(
                "epcache: the program left no finished trace at {name} ({why}): was it built with `epcache cc`, and did it end by returning or calling exit?"
            );
            return Err(());
        }
    };
    if let Some(at) = trace.never_finished() {
        eprintln!(
            "epcache: warning: the trace {name} was never finished (it stops at byte {at}: the program was killed before its end); what its threads had recorded up to their last safe point is readable"
        );
    }
    let per_thread: Vec<usize> = trace
        .threads()
        .iter()
        .map(|t| t.marks().iter().filter(|(_, m)| *m == Mark::Begin).count())
        .filter(|&n| n > 0)
        .collect();
    let instances: usize = per_thread.iter().sum();
    if instances == 0 {
        eprintln!(
            "epcache: region `{region}` never ran, so the trace {name} counts nothing (is it the name `epcache run --all-regions` shows?)"
        );
        return Err(());
    }
    let stats = trace.stats();
    let threads = match per_thread.len() {
        1 => String::new(),
        n => format!(" on {n} threads"),
    };
    let counted: u64 = trace
        .threads()
        .iter()
        .map(ThreadTrace::counted_accesses)
        .sum();
    let in_instances = if counted == stats.accesses {
        String::new()
    } else {
        format!(
            " ({} in the instances; the others only warm the caches for them)",
            grouped(counted)
        )
    };
    eprintln!(
        "epcache: recorded {instances} instance(s) of `{region}`{threads} in {name}: {} accesses{in_instances} in {} bytes ({:.1} per byte), {:.1}% in descriptors; replay it with `epcache replay --cache '{}' {name}`",
        grouped(stats.accesses),
        grouped(stats.bytes),
        stats.accesses_per_byte(),
        100.0 * stats.described_share(),
        cache,
    );
    Ok(())
}
