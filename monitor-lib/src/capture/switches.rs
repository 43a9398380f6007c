//! The process-wide switches every thread follows: whether anything may capture, the explicit
//! switch, standalone counting, whether this process is a forked child, and the switch epoch
//! that tells a thread one of them moved.
//!
//! An access hook's first load is [`MAY_CAPTURE`], a count of the reasons any thread may
//! capture: while it is 0 the hook returns after that one load, without touching thread-local
//! state. A thread learns of a switch at its next sync point (`sync.rs`), which every access
//! takes while anything may capture: the epoch is bumped at every switch, and a thread whose
//! last seen epoch differs syncs. Every bump also gives the tag word a new key
//! (`tag_key.rs`), which is how the inline repeat-hit test, which reads no epoch, notices.
//!
//! Atomics only, with no wait: a signal handler may send every thread to its sync point
//! ([`wake_all_sync_points`]).

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use super::{gate_abi, tag_key};

/// The explicit switch (`enable_all`, or the standalone report at start).
static CAPTURE_ON: AtomicBool = AtomicBool::new(false);
/// Reasons any thread may capture now: 1 until the process start-up ran (a thread's first
/// access may be what runs it), 1 while the process-wide switch is on, and 1 per monitored
/// region instance open on any thread. At 0 no thread captures, and an access hook returns
/// after this one load, without touching thread-local state.
static MAY_CAPTURE: AtomicU32 = AtomicU32::new(1);
/// Whether start-up's reason in [`MAY_CAPTURE`] was taken back.
static START_UP_COUNTED: AtomicBool = AtomicBool::new(false);
/// The switch epoch: bumped by 2 at every switch so threads notice it at their next sync point.
/// It starts at 1, above the threads' initial seen epoch, so a thread's first sync point always
/// syncs, and stays odd, so no thread's `capturing_epoch` of 0 (`hook_block.rs`) ever equals
/// it.
static EPOCH: AtomicU32 = AtomicU32::new(1);
/// Standalone mode (`EPCACHE_REPORT`): every region is monitored, every access attributed.
static STANDALONE: AtomicBool = AtomicBool::new(false);
/// Set in a child of `fork` (that has not exec'd): the report and the segment are the parent's.
static FORKED: AtomicBool = AtomicBool::new(false);

/// Whether any thread may capture now (see [`MAY_CAPTURE`]): the hooks' first test.
#[inline(always)]
pub(super) fn anything_may_capture() -> bool {
    MAY_CAPTURE.load(Ordering::Relaxed) != 0
}

/// The switch epoch, loaded with `order`.
#[inline(always)]
pub(super) fn epoch(order: Ordering) -> u32 {
    EPOCH.load(order)
}

/// Sends every thread to its sync point before its next access: the epoch first, then the
/// tag word's key, so a thread that read the new key reads the new epoch too. Atomics only,
/// so a signal handler may call it.
fn bump_epoch() {
    EPOCH.fetch_add(2, Ordering::SeqCst);
    tag_key::rekey();
}

/// Sends every thread's next access to its sync point; async-signal-safe (atomics only, no
/// wait: `tag_key::rekey`), for the termination signal handler and the exit handler's wait.
pub(super) fn wake_all_sync_points() {
    bump_epoch();
}

/// Data structures changed (in any thread): every thread passes its sync point before its next
/// access, where what it captured before is simulated under the old ones and its finders and
/// repeat-hit filter take the new (`ThreadCapture::data_changed`).
pub(super) fn data_changed() {
    bump_epoch();
}

/// Turns the explicit switch on or off (the gate of dual-compiled code follows it), and sends
/// every thread to its sync point to pick it up.
pub(super) fn set_switch(on: bool) {
    if CAPTURE_ON.swap(on, Ordering::Relaxed) != on {
        if on {
            MAY_CAPTURE.fetch_add(1, Ordering::Relaxed);
            gate_abi::hold_open();
        } else {
            MAY_CAPTURE.fetch_sub(1, Ordering::Relaxed);
            gate_abi::release();
        }
    }
    // Pairs with the loads at the sync point: a thread that sees the new epoch sees the switch.
    bump_epoch();
}

/// Whether the explicit switch is on.
#[inline]
pub(super) fn capture_on() -> bool {
    CAPTURE_ON.load(Ordering::Relaxed)
}

/// Start-up ran: its reason in [`MAY_CAPTURE`] goes (once per process).
pub(super) fn start_up_done() {
    if !START_UP_COUNTED.swap(true, Ordering::Relaxed) {
        MAY_CAPTURE.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A monitored region instance opened on some thread: a reason to capture.
pub(super) fn monitored_region_opened() {
    MAY_CAPTURE.fetch_add(1, Ordering::Relaxed);
}

/// A monitored region instance closed: its reason goes.
pub(super) fn monitored_region_closed() {
    MAY_CAPTURE.fetch_sub(1, Ordering::Relaxed);
}

/// Whether the standalone report is being made (every region monitored).
#[inline]
pub(crate) fn standalone() -> bool {
    STANDALONE.load(Ordering::Relaxed)
}

/// The standalone report is wanted (at start-up).
pub(super) fn start_standalone() {
    STANDALONE.store(true, Ordering::Release);
}

/// Stops standalone counting (in a forked child); whether it was on.
pub(super) fn stop_standalone() -> bool {
    STANDALONE.swap(false, Ordering::Relaxed)
}

/// Whether this process is a child of `fork` that has not exec'd. Such a child is not monitored
/// and must not take the runtime's locks at all: a thread of the parent that held one at the
/// fork does not exist in the child, so the lock would never be released (the child of a
/// threaded program would hang at its first heap allocation or data-structure registration).
#[inline]
pub(crate) fn forked_child() -> bool {
    FORKED.load(Ordering::Relaxed)
}

/// This process is a child of `fork` from now on (`process_end::after_fork_in_child`).
pub(super) fn mark_forked() {
    FORKED.store(true, Ordering::Relaxed);
}
