//! epcache-cli's integration tests, one binary, each module a part of the command line or the
//! runtime it drives:
//! - `epcache cc` and captured programs: `capture_cc`, `capture_clang`, `capture_dual`,
//!   `capture_line_sizes`, `capture_busy_machine`,
//!   `capture_pipeline`, `data_shapes`, `heap_naming`, `heap_requests`, `alloc_contexts`,
//!   `fortran_allocatables`, `fortran_common_report`, `fortran_markers`, `by_field`;
//! - the runtime in real programs: `runtime_regions`, `runtime_requests`, `runtime_waits`,
//!   `runtime_signals`, `runtime_fork`, `request_results`, `threads_coherence`,
//!   `step_threads`;
//! - the command line with a daemon: `daemon_cli`, `daemon_default_socket`, `daemon_run`,
//!   `daemon_step_cli`;
//! - per-line attribution and its export, against Cachegrind: `line_attribution`;
//! - partial data traces from lackey logs, converted and replayed: `partial_traces`; recorded
//!   by the runtime and replayed to the live counts: `partial_recording`;
//! - the rest of the command line: `cli`, `demo`, `replay_matches_cachegrind`.
//!
//! `capture_support` builds and runs the kernels of `tests/kernels/`; the daemon tests' targets
//! are this binary run again in the child role.

mod alloc_contexts;
mod by_field;
mod capture_busy_machine;
mod capture_cc;
mod capture_clang;
mod capture_dual;
mod capture_line_sizes;
mod capture_pipeline;
mod capture_support;
mod cli;
mod daemon_cli;
mod daemon_default_socket;
mod daemon_run;
mod daemon_step_cli;
mod data_shapes;
mod demo;
mod fortran_allocatables;
mod fortran_common_report;
mod fortran_markers;
mod heap_layout;
mod heap_naming;
mod heap_requests;
mod line_attribution;
mod partial_recording;
mod partial_trace_requests;
mod partial_traces;
mod replay_matches_cachegrind;
mod request_results;
mod runtime_fork;
mod runtime_regions;
mod runtime_requests;
mod runtime_signals;
mod runtime_waits;
mod step_threads;
mod threads_coherence;

use epcache_test_support::roles;

/// Plays the synthetic target when this binary was started as one (see
/// `epcache_test_support::roles`); a no-op in an ordinary run.
#[test]
fn child_role() {
    epcache_test_support::client::child_role();
}

#[test]
fn the_child_role_filter_names_one_test() {
    roles::assert_names_one_test(roles::CHILD_ROLE_TEST);
}
