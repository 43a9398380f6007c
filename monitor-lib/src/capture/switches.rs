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
//! ([`wake_all_sync_points`]). The one exception is the halt ([`begin_halt`]): while a thread
//! is halted at a halting point, every other thread stops at its next region boundary
//! (`boundaries.rs`) and no thread publishes a result ([`PublicationGate`]).

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Duration;

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
/// A partial trace is asked of this run (see [`trace_asked`]).
static TRACE_ASKED: AtomicBool = AtomicBool::new(false);
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

/// Whether a partial trace is asked of this run (`EPCACHE_TRACE`, or a tool's order taken at
/// start-up): every region boundary is then monitored, as in standalone mode, so the recorder
/// sees the traced region's instances begin and end with or without a report.
pub(crate) fn trace_asked() -> bool {
    TRACE_ASKED.load(Ordering::Relaxed)
}

/// A partial trace is asked of this run (at start-up, before region tracking starts or any
/// boundary looked at what is armed).
pub(super) fn ask_trace() {
    TRACE_ASKED.store(true, Ordering::Release);
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
    // A halt or a publication of the parent's other threads is not the child's: it would
    // stop the child's threads for ever.
    HALTED.store(0, Ordering::SeqCst);
    PUBLISHING.store(0, Ordering::SeqCst);
}

/// 1 while a thread of this process is halted at a halting point (from just before the halt is
/// announced to tools until the thread is released), else 0. Every other thread stops at its
/// next region boundary meanwhile ([`wait_while_halted`]), and no result is published
/// ([`PublicationGate`]), so what a tool reads at a halt stays as it was announced.
static HALTED: AtomicU32 = AtomicU32::new(0);
/// Publications of results under way on any thread (see [`PublicationGate`]).
static PUBLISHING: AtomicU32 = AtomicU32::new(0);
/// How long a stopped thread sleeps between two looks at [`HALTED`] (it is woken at once when
/// the halt ends; this only bounds a missed wake-up).
const HALT_LOOK: Duration = Duration::from_secs(1);

/// Whether a thread of this process is halted now.
#[inline]
pub(super) fn halted() -> bool {
    HALTED.load(Ordering::SeqCst) != 0
}

/// Stops this thread while another is halted: the other threads' stop at their next region
/// boundary. Bounded by the halt, which ends when a tool releases it or no tool is attached
/// any more (`Mcc::boundary_then`), so nothing waits here for ever.
pub(super) fn wait_while_halted() {
    while HALTED.load(Ordering::SeqCst) != 0 {
        epcache_shm::wait(&HALTED, 1, HALT_LOOK);
    }
}

/// This thread matched a halting point and halts: waits until no other thread is halted
/// (one halt at a time: two halts at once would share the segment's one position and release
/// word), marks the process halted, then waits for the publications under way to end, so a
/// tool that sees the halt reads only complete results. A publication takes no lock a halted
/// thread may hold, so the wait is short. Ended by [`end_halt`].
pub(super) fn begin_halt() {
    loop {
        wait_while_halted();
        if HALTED
            .compare_exchange(0, 1, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            break;
        }
    }
    while PUBLISHING.load(Ordering::SeqCst) != 0 {
        std::thread::yield_now();
    }
}

/// The halt [`begin_halt`] began ended: every stopped thread goes on.
pub(super) fn end_halt() {
    HALTED.store(0, Ordering::SeqCst);
    epcache_shm::wake(&HALTED, u32::MAX);
}

/// A publication of results under way: while one is, no halt is announced, and while a thread
/// is halted none begins (the publishing thread waits for the halt to end first). Dekker's
/// handshake: the publisher counts itself in, then looks for a halt; the halting thread marks
/// the halt, then looks for publishers (all sequentially consistent), so one of them always
/// sees the other.
pub(super) struct PublicationGate(());

impl PublicationGate {
    /// Waits while a thread is halted, then counts this publication in.
    pub(super) fn enter() -> PublicationGate {
        loop {
            wait_while_halted();
            PUBLISHING.fetch_add(1, Ordering::SeqCst);
            if !halted() {
                return PublicationGate(());
            }
            PUBLISHING.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

impl Drop for PublicationGate {
    fn drop(&mut self) {
        PUBLISHING.fetch_sub(1, Ordering::SeqCst);
    }
}
