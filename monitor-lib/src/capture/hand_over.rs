//! Which threads hold standalone counts the process totals lack, and the wait at exit that asks
//! them to hand those on before the report is written.
//!
//! A thread's counts reach the totals when it ends, when its last open region ends (not the
//! main thread's) and before it blocks in `pthread_join`. A thread still inside a region when
//! the program returns from `main` or calls `exit` did none of these: its counts stayed in its
//! own capture and the report would silently lack them (a worker sweeping an array in a loop
//! the program never joins). So at exit the runtime bumps the switch epoch, and every thread
//! that makes a captured access passes its sync point, where it hands its counts on
//! (`this_thread::catch_up`); the exit handler waits for the threads it counted as holding, up
//! to [`GRACE`] ([`SIGNAL_GRACE`] when a termination signal ends the program: its threads then
//! run on uncounted to where they hand on, and one may first have to reach a thread waiting
//! for it, as an OpenMP team's barrier makes the others wait). A thread blocked meanwhile (in a system call, or running code built without
//! capture) cannot answer: the report says how many did not (`threads_unreported`) and stderr
//! says what to do.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// How long the exit handler waits for holding threads. A running thread passes its sync
/// point at its next captured access, within microseconds; the rest covers a loaded machine
/// scheduling it late. Only a program that ends with a thread blocked inside a region pays it.
pub(super) const GRACE: Duration = Duration::from_millis(250);

/// [`GRACE`] for a program a termination signal ends (`process_end::end_for_signal`): a thread
/// that took the signal runs on, uncounted, to the point another thread waits for (the rest
/// of its share of a parallel loop), before that one can hand its counts on. A second signal
/// ends the wait at once, as it ends the program.
pub(super) const SIGNAL_GRACE: Duration = Duration::from_secs(3);

/// Threads whose capture holds counts not yet handed on.
static HOLDING: AtomicU32 = AtomicU32::new(0);
/// Set once the exit handler collects: from then on a thread at its sync point hands its
/// counts on, and no thread starts holding again (what it counts now comes after the report).
static REPORT_DUE: AtomicBool = AtomicBool::new(false);
/// Threads still holding when the exit handler stopped waiting.
static UNREPORTED: AtomicU32 = AtomicU32::new(0);

/// A thread's capture starts holding counts; `false` (nothing to track) once the report is
/// due. Each `true` must be matched by one [`let_go`].
pub(super) fn start_holding() -> bool {
    if REPORT_DUE.load(Ordering::Relaxed) {
        return false;
    }
    HOLDING.fetch_add(1, Ordering::Relaxed);
    true
}

/// A thread's capture handed its counts on (or went away): after the merge into the totals,
/// which this release orders before the exit handler's read.
pub(super) fn let_go() {
    HOLDING.fetch_sub(1, Ordering::Release);
}

/// Whether the exit handler asked holding threads to hand their counts on.
pub(super) fn report_due() -> bool {
    REPORT_DUE.load(Ordering::Relaxed)
}

/// Threads the report lacks counts of (0 unless the exit handler gave up on some).
pub(super) fn unreported() -> u32 {
    UNREPORTED.load(Ordering::Relaxed)
}

/// Asks every holding thread to hand its counts on at its next sync point (`wake_all` sends
/// them there) and waits for them, up to `grace`. The calling thread must have handed its
/// own on already. Those still holding then are remembered for the report and named on stderr.
pub(super) fn collect(wake_all: impl FnOnce(), grace: Duration) {
    REPORT_DUE.store(true, Ordering::Relaxed);
    if HOLDING.load(Ordering::Acquire) == 0 {
        return;
    }
    // After the store above: a thread that sees the new epoch sees the report due.
    wake_all();
    let deadline = Instant::now() + grace;
    while HOLDING.load(Ordering::Acquire) > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    let missing = HOLDING.load(Ordering::Acquire);
    if missing == 0 {
        return;
    }
    UNREPORTED.store(missing, Ordering::Relaxed);
    let threads = if missing == 1 {
        "1 thread was".to_owned()
    } else {
        format!("{missing} threads were")
    };
    eprintln!(
        "epcache: {threads} still inside a region when the program ended and made no captured \
         access within {} ms (blocked in a call, or running code built without capture): the \
         report lacks what {} counted in the regions {} was in; join threads before the \
         program ends to have all their counts",
        grace.as_millis(),
        if missing == 1 { "it" } else { "they" },
        if missing == 1 { "it" } else { "each" },
    );
}
