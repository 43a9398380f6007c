//! The process's ends, each of which writes the standalone report once and finishes the
//! segment: `exit` and `quick_exit` (their handlers, `process_end_abi.rs`), `_exit` and `_Exit`
//! (their wraps, `wrap_abi.rs`), a held termination signal (at a thread's next sync point), and
//! a crash (its handler). And a fork child, which ends nothing of its parent's: it leaves the
//! segment and the report to the parent.
//!
//! The report is written by the first end that comes; one that comes second hands its own counts
//! on and waits for it rather than end the process under its feet (a rename not yet made would
//! lose the report), and dies of a held signal if that is what the report was written for.
//! Whichever thread writes it first closes its own regions and hands its counts on, then asks
//! every thread still holding counts to hand them on at its next sync point
//! (`hand_over.rs`), then writes. An end that may find the runtime's locks or the allocator's
//! held (a signal handler that interrupted them, a crash) either declines the report or writes
//! it under a watchdog: nothing may leave a program unable to end.
//!
//! Fork without exec: only the process that created the segment is monitored. The child stops
//! counting (a lock a parent thread held at the fork is never released in the child, so the
//! child takes none, see `switches::forked_child`), leaves the segment to its parent and writes
//! no report, which would overwrite the parent's.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use super::cores;
use super::hook_block::ThreadState;
use super::runtime_guard::{self, RuntimeGuard, in_runtime};
use super::this_thread::{close_all_open, flush_current_thread};
use super::totals::totals;
use super::{hand_over, mcc, report, settings, signal_abi, switches, this_thread, tracing, worker};

/// The process that ran the start-up (0 before it): a child made by `fork` or `vfork` is
/// another, whatever state it inherited.
static STARTED_PID: AtomicU32 = AtomicU32::new(0);

/// Start-up ran in this process (`start_up.rs`).
pub(super) fn started_here() {
    STARTED_PID.store(std::process::id(), Ordering::Relaxed);
}

/// The exit handler: writes the report when one is wanted, and finishes the segment.
pub(super) extern "C" fn at_exit() {
    // Once: a crash handler (`process_end_abi.rs`) or a held signal's safe point may run this
    // while the exit handler does. The one that comes second waits for the report rather than
    // end the process under the first one's feet (a rename not yet made loses the report).
    static REPORTING: AtomicBool = AtomicBool::new(false);
    static REPORTED: AtomicBool = AtomicBool::new(false);
    let _busy = RuntimeGuard::enter();
    let destination = settings::report_destination().filter(|_| !switches::forked_child());
    if destination.is_some() && REPORTING.swap(true, Ordering::AcqRel) {
        // The report under way may be waiting for this thread's counts (`hand_over.rs`).
        close_all_open();
        flush_current_thread();
        // Bounded: a crash's watchdog ends a report that cannot finish.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
        while !REPORTED.load(Ordering::Acquire) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    } else if let Some(path) = destination {
        worker::start_no_more();
        // This thread's counts first, then every other thread still holding some.
        close_all_open();
        flush_current_thread();
        let grace = if signal_abi::pending().is_some() {
            hand_over::SIGNAL_GRACE
        } else {
            hand_over::GRACE
        };
        hand_over::collect(switches::wake_all_sync_points, grace);
        if let Err(e) = report::write_report(path) {
            eprintln!("{e}");
        }
        let captured = totals().levels.iter().any(|(_, l)| l.reads + l.writes > 0);
        // A refused cache spec was said at start, and is why nothing was captured.
        if !captured && settings::process_spec().is_ok() {
            // An all-zero report is easy to take for a result: a later plain build of the same
            // program (`cargo build --release` after `cargo rustc` with the flags) links the
            // runtime without calling it.
            eprintln!(
                "epcache: no load or store of this run was captured: is {} built with capture \
                 (`epcache cc`, or for Rust `cargo rustc` with the SanitizerCoverage flags)?",
                std::env::current_exe()
                    .map_or_else(|_| "the program".into(), |p| p.display().to_string())
            );
        }
        REPORTED.store(true, Ordering::Release);
    } else if !switches::forked_child() {
        // No report to say it under (a run of a tool's requests).
        cores::say_interleaving();
    }
    // A tool's trace is written, and said to be, before the segment says the program ended.
    if !switches::forked_child() {
        this_thread::finish_trace_here();
        tracing::close_at_exit();
        tracing::unclaimed_at_exit();
    }
    if let Some(m) = mcc::get() {
        m.finish();
    }
    // A program that reached its end while the report of a held signal was written (its
    // threads run on meanwhile, `end_for_signal`), or that wrote it itself on its way out,
    // still dies of that signal, once the report, the trace and the segment are done.
    if let Some(signal) = signal_abi::pending() {
        signal_abi::die_of(signal);
    }
}

/// Whether a program ending by `_exit` or `_Exit` (`wrap_abi.rs`, which run no exit handlers)
/// should have its report written first: not by a child of `fork` or `vfork` (the commonest
/// caller, after a failed `exec`, whose report and segment are its parent's; a `vfork` child
/// shares its parent's memory and runs no fork handlers, so only its process id tells), and
/// not from a signal handler that interrupted the runtime (whose locks and thread state it
/// may hold: the report waited for them forever, or came out empty). A handler interrupting
/// the C library's allocator is caught by the caller's watchdog instead.
pub(super) fn may_report_at_immediate_exit() -> bool {
    STARTED_PID.load(Ordering::Relaxed) == std::process::id() && !in_runtime()
}

/// The report of a program ending by `_exit`, as at `exit` (see
/// [`may_report_at_immediate_exit`]).
pub(super) fn before_immediate_exit() {
    at_exit();
}

/// Whether a crash handler (`process_end_abi.rs`) may write the report: the thread crashed in
/// the program's code, not inside the runtime (whose state it may have left half-changed), and
/// not in a forked child (whose report is its parent's).
pub(super) fn may_report_on_crash() -> bool {
    runtime_guard::state() != ThreadState::Busy && !switches::forked_child()
}

/// The report, from a crash handler: everything `at_exit` does, under the handler's watchdog.
pub(super) fn report_at_crash() {
    at_exit();
}

/// Runs in the child right after `fork`, with only the forking thread alive. The child is not
/// monitored: it leaves the segment to its parent (which goes on being monitored and stepped),
/// stops the standalone report's capture and writes no report at exit, which would overwrite
/// the parent's. A child that execs a program built with epcache starts afresh.
pub(super) extern "C" fn after_fork_in_child() {
    switches::mark_forked();
    mcc::leave_to_parent();
    if switches::stop_standalone() {
        switches::set_switch(false);
        // The only thread picks the switch up at once (no other thread survived the fork), as
        // at its sync point (`sync.rs`) less the start-up, which ran: it registered this.
        let found = runtime_guard::state();
        if !found.in_runtime() {
            if let Some(signal) = signal_abi::pending() {
                end_for_signal(signal);
            }
            this_thread::catch_up();
        }
    }
    mcc::nothing_armed_from_now();
}

/// The safe point a held termination signal waited for (see `signal_abi.rs`), at a thread's
/// sync point. Every thread that reaches one closes its open regions and hands its counts on,
/// as a thread does when it ends, and counts nothing more. The first also starts the end: a
/// thread of the runtime's own writes the report as at exit (every thread still holding counts
/// hands them on at its next sync point, `hand_over.rs`, within its grace), then ends the
/// process by the signal. The program's threads run on meanwhile, uncounted: a thread stopped
/// here could hold up another that still has counts to hand on (at an OpenMP team's barrier,
/// on a lock, in a join), and the report would lack them. A forked child, which writes no
/// report, ends at once; a process that cannot start a thread writes the report on this one.
/// The caller returns to the program without taking the sync point's other steps.
#[cold]
#[inline(never)]
pub(super) fn end_for_signal(signal: std::ffi::c_int) {
    static ENDING: AtomicBool = AtomicBool::new(false);
    if switches::forked_child() {
        signal_abi::die_of(signal);
    }
    close_all_open();
    flush_current_thread();
    // Counted no more: every hook takes the thread for one inside the runtime from now on.
    RuntimeGuard::enter().stay();
    if ENDING.swap(true, Ordering::AcqRel) {
        return;
    }
    let ender = std::thread::Builder::new()
        .name("epcache-end".into())
        .spawn(move || {
            // The runtime's own thread: nothing it runs is the program's.
            RuntimeGuard::enter().stay();
            at_exit();
            signal_abi::die_of(signal)
        });
    if ender.is_err() {
        at_exit();
        signal_abi::die_of(signal);
    }
}
