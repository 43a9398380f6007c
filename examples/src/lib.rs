//! Kernels and tool programs the examples in `src/bin` run, kept in the library so tests can
//! check what they measure, and what the tool programs share: how they end on an error, and
//! which regions they survey unless told.

#![forbid(unsafe_code)]

pub mod gauss;
pub mod metric_table;
pub mod metric_tool;
pub mod online;
pub mod timeline;

use epcache_client::{Region, RegionKind};

/// The whole address space but its last byte (a request's range must end after it starts): what
/// a tool counts in for "everything this region touched".
pub const WHOLE_ADDRESS_SPACE: std::ops::Range<u64> = 0..u64::MAX;

/// Runs a tool's async work to its end on a small runtime (the embedded daemon and the client
/// share it).
pub fn block_on<F: std::future::Future>(work: F) -> std::io::Result<F::Output> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?
        .block_on(work))
}

/// The regions a tool surveys unless told which: every function but `main` (which holds the
/// whole run) and every marker region, each as it appears (a marker once met, a function of a
/// library once loaded).
pub fn surveyed_by_default(region: &Region) -> bool {
    match region.kind {
        RegionKind::Function => region.name != "main",
        RegionKind::Marker => true,
        RegionKind::Unknown => false,
    }
}

/// A tool program's `main`: runs `body` and, when it fails, prints `tool: message` and each
/// cause on its own line, as `epcache` does, and exits 1. Never a backtrace: anyhow's report
/// from a `main` that returns its error prints one whenever `RUST_BACKTRACE` is set, for
/// whatever reason it is set.
pub fn run_tool(tool: &str, body: impl FnOnce() -> anyhow::Result<()>) -> std::process::ExitCode {
    match body() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprint!("{}", error_report(tool, &error));
            std::process::ExitCode::FAILURE
        }
    }
}

/// What [`run_tool`] prints for `error`: `tool: message`, then `  caused by: cause` per cause.
pub fn error_report(tool: &str, error: &anyhow::Error) -> String {
    let mut out = format!("{tool}: {error}\n");
    for cause in error.chain().skip(1) {
        out.push_str(&format!("  caused by: {cause}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_is_reported_with_its_causes_and_no_backtrace() {
        let error = anyhow::anyhow!("the target's request slots are full")
            .context("placing the survey")
            .context("analysing ./stencil");
        assert_eq!(
            error_report("online", &error),
            "online: analysing ./stencil\n  caused by: placing the survey\n  caused by: the target's request slots are full\n"
        );
    }
}
