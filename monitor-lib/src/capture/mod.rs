//! Capture of a running program's own loads and stores: per-thread simulators fed by compiler
//! hooks (the TSan entry points gcc emits, SanitizerCoverage's load/store callbacks) or by the
//! explicit API below, and the standalone report written at exit.
//!
//! Only `tsan_abi.rs` and `sancov_abi.rs` hold unsafe code (the `extern "C"` entry points and
//! the atomics they must really perform); everything they call is safe Rust in `state.rs`.

mod report;
mod state;

#[allow(unsafe_code)]
mod sancov_abi;
#[allow(unsafe_code)]
mod tsan_abi;

pub use report::{CaptureReport, LevelTotals, ReportRegion};
pub use state::{
    CACHE_ENV, CaptureError, CaptureTotals, REPORT_ENV, disable_all, enable_all,
    flush_current_thread, read, report_from_totals, totals, write, write_report,
};
