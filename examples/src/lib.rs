//! Kernels and tool programs the examples in `src/bin` run, kept in the library so tests can
//! check what they measure.

#![forbid(unsafe_code)]

pub mod gauss;
pub mod metric_table;
pub mod metric_tool;
pub mod online;
pub mod timeline;

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
