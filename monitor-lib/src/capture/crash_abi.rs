//! Crashes while the standalone report is being made: on SIGSEGV, SIGBUS, SIGFPE, SIGILL or
//! SIGABRT the report is written before the program dies of the signal, as Cachegrind still
//! writes its output when its program crashes. A kernel that indexes past its array after an
//! hour of simulation, or fails an `assert`, keeps that hour's counts.
//!
//! Unlike a termination signal (`signal_abi.rs`), a crash cannot wait for a safe point: the
//! faulting instruction would only fault again. The handler writes the report itself, which is
//! not async-signal-safe (the report allocates), so it is bounded instead:
//! - a crash inside the runtime (the thread's state says so) or in a forked child, or a second
//!   crash during the report, ends the program at once, without it;
//! - an alarm ends the program by the same signal if the report is not written within
//!   [`WATCHDOG_SECONDS`]: a crash inside the allocator (glibc's abort on a corrupted heap) may
//!   hold the lock the report waits for.
//!
//! Either way the program dies of the signal it got, with its default action (a core dump where
//! the system makes one). Handlers are installed only over the default action: a program's own
//! handler (gfortran's backtrace handler, installed at the start of the main program, replaces
//! this one) is never displaced. A stack overflow cannot run a handler at all (no alternate
//! signal stack) and still ends without the report.

use std::ffi::c_int;
use std::sync::atomic::{AtomicI32, Ordering};

use super::signal_abi::{action_is_default, die_of, say};
use super::state;

/// The crash signals: the ones the kernel or `abort` sends to a program that went wrong.
const CRASHES: [c_int; 5] = [
    libc::SIGSEGV,
    libc::SIGBUS,
    libc::SIGFPE,
    libc::SIGILL,
    libc::SIGABRT,
];

/// How long the report may take before the program dies without it.
const WATCHDOG_SECONDS: u32 = 10;

/// The first crash signal, 0 before one.
static CRASHED: AtomicI32 = AtomicI32::new(0);

/// Installs the report-writing handler for every crash signal whose action is the default.
pub(super) fn report_on_crash() {
    for signal in CRASHES.into_iter().filter(|&s| action_is_default(s)) {
        // SAFETY: the handler is a 'static `extern "C"` function fit to run as one. A failure
        // keeps the default action, which only loses the report.
        unsafe { install(signal, on_crash) };
    }
}

/// Sets `handler` for `signal`, with every crash signal blocked while it runs (a second crash
/// of the same kind then ends the process by default, another kind waits for the first).
///
/// # Safety
/// `handler` must be fit to run as a signal handler.
unsafe fn install(signal: c_int, handler: extern "C" fn(c_int)) {
    // SAFETY: the zeroed struct is valid; sigemptyset and sigaddset write only into it;
    // sigaction is given initialised pointers.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        libc::sigemptyset(&mut action.sa_mask);
        for other in CRASHES {
            libc::sigaddset(&mut action.sa_mask, other);
        }
        action.sa_sigaction = handler as libc::sighandler_t;
        libc::sigaction(signal, &action, std::ptr::null_mut());
    }
}

/// The handler: writes the report under the watchdog, then dies of `signal`.
extern "C" fn on_crash(signal: c_int) {
    if CRASHED
        .compare_exchange(0, signal, Ordering::Relaxed, Ordering::Relaxed)
        .is_err()
    {
        // Another thread crashed first and is writing the report: let it finish or its
        // watchdog end the process. A crash of this thread during its own report (the signals
        // are blocked here) ends the process by default.
        loop {
            // SAFETY: pause is async-signal-safe and only waits.
            unsafe { libc::pause() };
        }
    }
    say(b"epcache: ");
    say(name(signal));
    if !state::may_report_on_crash() {
        say(b" inside epcache's runtime or a forked child: no report\n");
        die_of(signal);
    }
    say(b": writing the report before the program dies (at most 10 s)\n");
    // SAFETY: `on_watchdog` only does async-signal-safe work; alarm is async-signal-safe.
    unsafe {
        install(libc::SIGALRM, on_watchdog);
        libc::alarm(WATCHDOG_SECONDS);
    }
    state::report_at_crash();
    die_of(signal)
}

/// The report took too long (likely waiting for a lock the crash left held).
extern "C" fn on_watchdog(_: c_int) {
    say(b"epcache: the report was not written in time; the program dies without it\n");
    die_of(CRASHED.load(Ordering::Relaxed))
}

fn name(signal: c_int) -> &'static [u8] {
    match signal {
        libc::SIGSEGV => b"SIGSEGV",
        libc::SIGBUS => b"SIGBUS",
        libc::SIGFPE => b"SIGFPE",
        libc::SIGILL => b"SIGILL",
        _ => b"SIGABRT",
    }
}
