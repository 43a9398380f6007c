//! Capture of a running program's own loads and stores: per-thread simulators fed by compiler
//! hooks (the TSan entry points gcc emits, SanitizerCoverage's load/store callbacks) or by the
//! explicit API below, and the standalone report written at exit.
//!
//! Only the `*_abi.rs` modules and `thread_block.rs` hold unsafe code (the `extern "C"` entry
//! points, the atomics they must really perform, the exported gate of dual-compiled code, the
//! termination and crash signal handlers, the `pthread_join` and `dlopen` wraps, the region stack's local-exec
//! thread-local block); everything they call is safe Rust in `state.rs` and `regions.rs`.

mod data;
mod descriptors;
mod filter;
mod hand_over;
mod heap;
mod mcc;
mod monitoring;
mod program;
mod regions;
mod report;
mod state;
mod structure_finder;
mod tag_key;
mod worker;

#[allow(unsafe_code)]
mod alloc_abi;
#[allow(unsafe_code)]
mod c_abi;
#[allow(unsafe_code)]
mod crash_abi;
#[allow(unsafe_code)]
mod gate_abi;
#[allow(unsafe_code)]
mod sancov_abi;
#[allow(unsafe_code)]
mod signal_abi;
#[allow(unsafe_code)]
mod thread_block;
#[allow(unsafe_code)]
mod tsan_abi;
#[allow(unsafe_code)]
mod wrap_abi;

pub use mcc::MCC_ENV;
pub use regions::{MarkerSite, RegionGuard};
pub use report::{
    CaptureReport, LevelTotals, ReportDataStructure, ReportDimension, ReportRegion, ReportShape,
};
pub use state::{
    CACHE_ENV, CaptureError, CaptureTotals, REPORT_ENV, disable_all, enable_all,
    flush_current_thread, read, report_from_totals, totals, write, write_report,
};

/// Registers the heap array `name` of `bytes` bytes at `start` as a data structure: requests
/// and the standalone report can then name it. Unregister it before freeing the memory.
pub fn register_array(name: &str, start: u64, bytes: u64) {
    state::init_process();
    c_abi::register(name, start, bytes);
}

/// Registers a slice as the data structure `name` (see [`register_array`]).
pub fn register_slice<T>(name: &str, slice: &[T]) {
    register_array(
        name,
        slice.as_ptr().addr() as u64,
        std::mem::size_of_val(slice) as u64,
    );
}

/// Forgets the data structure registered at `start`.
pub fn unregister_array(start: u64) {
    let previous = state::enter_runtime();
    data::unregister(start);
    state::leave_runtime(previous);
}
