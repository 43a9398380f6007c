//! Capture of a running program's own loads and stores: per-thread simulators fed by compiler
//! hooks (the TSan entry points gcc emits, SanitizerCoverage's load/store callbacks) or by the
//! explicit API below, region boundaries checked against the segment tools write into, and the
//! standalone report written at the process's end.
//!
//! # Layers
//!
//! The modules form layers. A module uses only modules of its own layer or below, never one
//! above, and within a layer only those listed after it (`examples/tests/it/repo_tidy.rs` checks
//! both against this list). From the top:
//!
//! 1. **Entry points**, where the program calls in: `tsan_abi` (the `__tsan_*` hooks),
//!    `sancov_abi` (SanitizerCoverage's callbacks), `c_abi` (markers and registration from C
//!    and Fortran), `alloc_abi` (the allocator wraps), `wrap_abi` (`pthread_join`, `dlopen`,
//!    `_exit`, gfortran's options); and this module's public API for Rust programs.
//! 2. **Hook paths**, what every hook runs through: `access` (loads and stores), `boundaries`
//!    (region entry and exit), `sync` (the sync point, and the explicit switch).
//! 3. **The process**: `start_up` (with `globals`, the program's globals as data structures),
//!    `process_end_abi` (the exit, fork-child and crash handlers), `process_end` (the report at
//!    every end, and the fork child), `report` (the report gathered and written), `report_lines`
//!    (its per-line rows, named by source line).
//! 4. **The thread**: `this_thread` (the calling thread's capture and what happens to it),
//!    `thread_capture` (one thread's capture, and its hand-off to the worker), `counting` (how
//!    its accesses are simulated and counted), `worker` (the simulation thread), `hand_over`
//!    (which threads hold counts the totals lack), `streaming` (the stores that fill what goes
//!    to the worker).
//! 5. **What is counted**: `totals` (the run's sums), `monitoring` (requests bound at a
//!    region's entry, results published at its exit, standalone counts), `request_results`
//!    (a request's instances on every thread summed into one result), `structure_finder`
//!    (which data structure holds an address), `heap` (heap blocks named by allocation context),
//!    `allocation_statements` (which of a statement's several arrays a block is),
//!    `line_table` (misses per code address), `tracing` (the partial data trace of a region
//!    being recorded).
//! 6. **The thread block**: `runtime_guard` (the state byte as the runtime changes it),
//!    `thread_block` (the block at a fixed offset from the thread pointer), and what it holds:
//!    `hook_block` (the state byte, the synced switches and the filter), `region_stack` (open
//!    regions), `filter` (the repeat-hit filter).
//! 7. **Registries**, process-wide, each behind its own lock: `region_registry`, `descriptors`
//!    (Fortran arrays followed through their descriptors), `data` (the named data structures),
//!    `span_lookup` (their sorted spans, which threads search), `program` (the program's own debug information), `mcc` (the segment, and what tools
//!    armed in it), `cores` (the simulated machine whose cores the threads are, when
//!    `EPCACHE_CORES` asks for one), `access_log` (a thread's accesses waiting for the machine).
//! 8. **Process-wide words**: `signal_abi` (termination signals held for the report),
//!    `switches` (what every thread follows, and the epoch that says it moved), `settings` (what
//!    the environment asks), `tag_key` (the tag word's key), `gate_abi` (the words generated
//!    code reads by symbol), `state_memory` (what the threads' simulated caches take
//!    together).
//!
//! Why this order: the hooks must reach the thread's block and the process-wide words with no
//! lock and no call, so those sit lowest and know nothing above them; the thread block sits
//! above what it holds (the filter, the region stack with its registry's region references);
//! a thread's capture is made and fed only from the paths above it; the process's start and end
//! orchestrate threads, never the other way round. Where a lower layer must run something of a
//! higher one, it is handed a function: the exit and fork handlers (`start_up` to
//! `process_end_abi`), the thread-end callback (`this_thread` to `thread_block`), the stack
//! walker (`alloc_abi` to `heap`).
//!
//! # Unsafe code
//!
//! Only the `*_abi.rs` modules, `thread_block.rs` and `streaming.rs` hold unsafe code (the
//! `extern "C"` entry points, the atomics they must really perform, the exported words of
//! generated code, the termination and crash signal handlers and the process's exit and fork
//! handlers, the `pthread_join` and `dlopen` wraps, the thread's local-exec thread-local block,
//! the non-temporal stores); everything they call is safe Rust.

mod access;
mod access_log;
mod allocation_statements;
mod boundaries;
mod cores;
mod counting;
mod data;
mod descriptors;
mod filter;
mod globals;
mod hand_over;
mod heap;
mod hook_block;
mod line_table;
mod mcc;
mod monitoring;
mod process_end;
mod program;
mod region_registry;
mod region_stack;
mod report;
mod report_lines;
mod request_results;
mod runtime_guard;
mod settings;
mod span_lookup;
mod start_up;
mod state_memory;
mod structure_finder;
mod switches;
mod sync;
mod tag_key;
mod this_thread;
mod thread_capture;
mod totals;
mod tracing;
mod worker;

#[allow(unsafe_code)]
mod alloc_abi;
#[allow(unsafe_code)]
mod c_abi;
#[allow(unsafe_code)]
mod gate_abi;
#[allow(unsafe_code)]
mod process_end_abi;
#[allow(unsafe_code)]
mod sancov_abi;
#[allow(unsafe_code)]
mod signal_abi;
#[allow(unsafe_code)]
mod streaming;
#[allow(unsafe_code)]
mod thread_block;
#[allow(unsafe_code)]
mod tsan_abi;
#[allow(unsafe_code)]
mod wrap_abi;

pub use access::{read, write};
pub use boundaries::{MarkerSite, RegionGuard};
pub use cores::Interleaving;
pub use mcc::MCC_ENV;
pub use report::{
    AccessHandling, CaptureReport, LevelTotals, ReportDataStructure, ReportDimension, ReportRegion,
    ReportShape, report_from_totals, write_report,
};
pub use report_lines::ReportLine;
pub use settings::{CACHE_ENV, CORES_ENV, CaptureError, REPORT_ENV};
pub use sync::{disable_all, enable_all};
pub use this_thread::flush_current_thread;
pub use totals::{CaptureTotals, totals};
pub use tracing::{TRACE_ENV, TRACE_OUTPUT_ENV};

use epcache_shm::layout::DataStructureKind;
use epcache_sim::ranges::AddressRange;

use runtime_guard::RuntimeGuard;

/// Registers the heap array `name` of `bytes` bytes at `start` as a data structure: requests
/// and the standalone report can then name it. Unregister it before freeing the memory.
pub fn register_array(name: &str, start: u64, bytes: u64) {
    start_up::init_process();
    let _busy = RuntimeGuard::enter();
    data::register(
        name,
        AddressRange::new(start, bytes),
        DataStructureKind::HeapRegistered,
    );
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
    let _busy = RuntimeGuard::enter();
    data::unregister(start);
}
