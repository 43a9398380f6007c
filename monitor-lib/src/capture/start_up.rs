//! The process start-up, once per process, from whichever comes first: the program's
//! initialisers (`__tsan_init`), a thread's first sync point, the C ABI, or a Rust marker.
//!
//! Start-up reads what the environment asks (`settings.rs`), creates the segment tools attach
//! to (unless `EPCACHE_MCC=off`), points the dual-compiled gate at it, registers the program's
//! functions and globals as regions and data structures so tools can name them before they run,
//! switches standalone counting on when a report is wanted, hooks the process's ends
//! (`process_end_abi.rs`), and waits for a tool when `EPCACHE_WAIT` asks. It runs inside the
//! runtime: the program's own code the C library calls meanwhile is not counted.
//!
//! Libraries opened later with `dlopen` are read the same way ([`library_opened`]).

use std::path::PathBuf;

use epcache_shm::layout::PublishedModel;
use epcache_shm::target::Mcc;
use epcache_sim::cache::CACHE_WARNED_ENV;
use epcache_sim::monitor::CounterArrayConfig;

use super::runtime_guard::{RuntimeGuard, in_runtime};
use super::settings::{self, REPORT_ENV, process_spec, report_spec_error_once};
use super::switches::{self, standalone};
use super::{
    cores, gate_abi, globals, heap, mcc, process_end, process_end_abi, program, region_registry,
    signal_abi, this_thread, tracing,
};

/// Reads `EPCACHE_REPORT` once per process; when set, switches capture on for every thread and
/// has the report written at exit. Called from the first sync point of any thread, and from
/// `__tsan_init`, so it runs before `main` in TSan-instrumented programs.
///
/// It also creates the MCC's segment (unless `EPCACHE_MCC=off`), registers the program's
/// functions and globals as regions and data structures, and waits for a tool when
/// `EPCACHE_WAIT` asks.
pub(crate) fn init_process() {
    if settings::started() {
        return;
    }
    {
        let _busy = RuntimeGuard::enter();
        settings::start_once(start_up);
    }
    // A trace without a report is closed by the same safe points as a report: an interrupted
    // or crashing recording otherwise leaves a file without its end.
    if standalone() || switches::trace_asked() {
        // Once per process: `init_process` returns early above once it ran.
        static HELD: std::sync::Once = std::sync::Once::new();
        HELD.call_once(|| {
            signal_abi::hold_termination_for_report();
            process_end_abi::report_on_crash();
        });
    }
    switches::start_up_done();
}

/// The start-up itself; says where the report goes, if one is wanted.
fn start_up() -> Option<PathBuf> {
    this_thread::mark_started_process();
    // First: a launcher killed during the start wait must not leave the program waiting.
    process_end_abi::end_with_launcher();
    let report =
        std::env::var_os(REPORT_ENV).map(|path| settings::report_path(PathBuf::from(path)));
    let spec_text = match process_spec() {
        Ok((text, _)) => text.clone(),
        Err(why) => why.clone(),
    };
    match process_spec() {
        // Said now, not at the first capture: a tool may come later and only learn it then.
        Err(why) => report_spec_error_once(why),
        Ok((text, spec)) => {
            // A launcher (`epcache run`) said them before the start.
            let said = std::env::var_os(CACHE_WARNED_ENV).is_some();
            for warning in spec.warnings().into_iter().filter(|_| !said) {
                eprintln!("epcache: warning: the cache `{text}`: {warning}");
            }
        }
    }
    let segment = mcc::create(&PublishedModel {
        spec: spec_text,
        counters: CounterArrayConfig::default().counters as u32,
        // The machine is made now, its spec or core count refused now if it must be.
        cores: cores::count().map_or(0, |n| n as u32),
    });
    // Dual-compiled functions run their instrumented copies while a tool arms anything.
    if let Some(hint) = segment.and_then(Mcc::capture_hint) {
        gate_abi::follow(hint);
    }
    if report.is_some() {
        switches::start_standalone();
        // Not `enable_all`: its sync would re-enter this start-up.
        switches::set_switch(true);
    }
    // A trace asked by the environment records with or without a report.
    let traced = tracing::asked_by_environment();
    if traced {
        switches::ask_trace();
        switches::set_switch(true);
    }
    if segment.is_some() || report.is_some() || traced {
        let objects = program::objects();
        region_registry::register_functions(&objects);
        globals::register_globals(&objects);
        heap::check_wrapper_list();
        region_registry::start_tracking();
    }
    process_end_abi::register_at_exit(process_end::at_exit);
    // `quick_exit` runs no exit handlers, only its own, and ends by the C library's
    // internal `_exit`, which the `_exit` wrap does not see.
    process_end_abi::register_at_quick_exit(process_end::at_exit);
    process_end_abi::register_at_fork_child(process_end::after_fork_in_child);
    process_end::started_here();
    match segment {
        Some(m) => {
            m.ready();
            // Before any thread captures, so a recording starts at its first access.
            tracing::take_tool_order(m);
        }
        None => {
            if let Ok(wait) = std::env::var("EPCACHE_WAIT")
                && epcache_shm::target::start_wait_from_env(Some(&wait)).is_some()
            {
                eprintln!(
                    "epcache: EPCACHE_WAIT={wait} is set, but this program has no segment a tool could attach to; it does not wait"
                );
            }
        }
    }
    report
}

/// The program opened a library with `dlopen` (`wrap_abi.rs`): one built with capture is read
/// for names, its functions registered as regions and its globals as data structures, as for
/// the libraries loaded at start. Nothing is read before start-up's tracking, which reads every
/// library mapped then, nor in a forked child.
pub(crate) fn library_opened() {
    if !region_registry::tracking_started() || in_runtime() {
        return;
    }
    let _busy = RuntimeGuard::enter();
    let new = program::read_new_libraries();
    if !new.is_empty() {
        region_registry::register_functions(&new);
        globals::register_globals(&new);
    }
}
