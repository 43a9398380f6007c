//! The sync point, where a thread picks up what other threads changed, and the explicit switch
//! that uses it ([`enable_all`], [`disable_all`]).
//!
//! A switch is process-wide words (`switches.rs`) plus a bump of the switch epoch; a thread
//! notices the bump at its next sync point, which every access takes while anything may capture
//! and a region boundary takes off its fast path: one thread-local load and one relaxed global
//! load when nothing changed. So no thread is ever interrupted: it catches up between two of
//! its own accesses, where the runtime's state is consistent and no lock of the program is held
//! by it. The same point serves a held termination signal (the thread ends the process there,
//! `process_end::end_for_signal`) and a thread's first access (the process start-up runs there
//! if nothing ran it before).

use super::hook_block::{HookBlock, ThreadState};
use super::runtime_guard::state;
use super::switches::set_switch;
use super::thread_block::with_hooks;
use super::{process_end, signal_abi, start_up, this_thread};

/// A cheap point where a thread picks up a process-wide switch made by another thread: one
/// thread-local load and one relaxed global load when nothing changed. Every access runs it
/// while some thread may capture; region boundaries do not need it on their fast path.
#[inline(always)]
pub(super) fn sync_point() {
    if with_hooks(HookBlock::stale) {
        sync();
    }
}

/// Makes this thread follow the process-wide switch; leaves a thread inside the runtime alone.
/// `extern "C"` so that callers on the hot path need no unwind landing pad (see
/// `access::may_capture`).
#[inline(never)]
pub(super) extern "C" fn sync() {
    let state = state();
    if state.in_runtime() {
        return;
    }
    if let Some(signal) = signal_abi::pending() {
        // The thread counts nothing more (its state stays busy): nothing else to sync.
        process_end::end_for_signal(signal);
        return;
    }
    if state == ThreadState::NeedsSync {
        start_up::init_process();
    }
    this_thread::catch_up();
}

/// Switches capture on in every thread: the calling thread at once, the others at their next
/// access (the sync point: while anything may capture, every access checks the switch epoch).
pub fn enable_all() {
    switch_all(true);
}

/// Switches capture off in every thread, with the same timing as [`enable_all`].
pub fn disable_all() {
    switch_all(false);
}

fn switch_all(on: bool) {
    set_switch(on);
    sync();
}
