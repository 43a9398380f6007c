//! Termination signals while the standalone report or a partial trace is being made: SIGINT,
//! SIGTERM and SIGHUP are held until the program's next captured access, where its thread hands
//! its counts on and a thread of the runtime writes the report (finishes the trace) and raises
//! the signal again (`process_end::end_for_signal`), so an interrupted run (Ctrl-C, a
//! batch system's time limit) still leaves its counts and still dies of the signal it got.
//!
//! Why a deferral, not the report in the handler: the signal can land while the thread is inside
//! the allocator or the runtime's own counting, and writing the report needs both. A captured
//! access is a safe point by construction: instrumented code is calling the runtime, so no
//! allocator lock is held on that thread and the runtime's state is between accesses. The
//! handler only does what is async-signal-safe: an atomic store, an atomic add to the switch
//! epoch (which sends every thread's next access to its sync point) and `write(2)`.
//!
//! A second signal ends the program at once, without the report: a program that makes no
//! captured access any more (blocked in a system call, or in uninstrumented code) is otherwise
//! stopped only by SIGKILL. Handlers are installed only over the default action, never over the
//! program's own handler or an inherited ignore (`nohup`).

use std::ffi::c_int;
use std::sync::atomic::{AtomicI32, Ordering};

use super::switches;

/// The signals held for the report: the ones that end a program by default and that a user or
/// a batch system sends to stop it (SIGKILL cannot be caught; SIGQUIT is asked for a core dump).
const HELD: [c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// The first held signal received, 0 before.
static PENDING: AtomicI32 = AtomicI32::new(0);

/// Installs the deferring handler for every held signal whose action is still the default.
pub(super) fn hold_termination_for_report() {
    for signal in HELD {
        if !action_is_default(signal) {
            continue;
        }
        // SAFETY: as above for the zeroed struct; sigemptyset writes only into it.
        let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
        unsafe { libc::sigemptyset(&mut action.sa_mask) };
        action.sa_sigaction = on_held_signal as extern "C" fn(c_int) as libc::sighandler_t;
        // SA_RESTART: a system call the signal interrupts resumes as it would have with the
        // default action never returning, rather than failing with EINTR in the program.
        action.sa_flags = libc::SA_RESTART;
        // SAFETY: `action` is initialised, and its handler is a 'static `extern "C"` function
        // that only performs async-signal-safe operations. A failure keeps the default action.
        if unsafe { libc::sigaction(signal, &action, std::ptr::null_mut()) } != 0 {
            eprintln!(
                "epcache: cannot hold signal {signal} for the report; it ends the program without one"
            );
        }
    }
}

/// Whether `signal` still has its default action: epcache installs a handler only then, never
/// over the program's own handler or an inherited ignore.
pub(super) fn action_is_default(signal: c_int) -> bool {
    // SAFETY: sigaction with a null new action only reads the current one into `current`, a
    // zeroed `sigaction` (a valid bit pattern for this plain C struct).
    let mut current: libc::sigaction = unsafe { std::mem::zeroed() };
    (unsafe { libc::sigaction(signal, std::ptr::null(), &mut current) }) == 0
        && current.sa_sigaction == libc::SIG_DFL
}

/// The handler: remembers the first signal and wakes every thread's sync point; a second one
/// ends the program now.
extern "C" fn on_held_signal(signal: c_int) {
    if PENDING
        .compare_exchange(0, signal, Ordering::Relaxed, Ordering::Relaxed)
        .is_err()
    {
        say(b"epcache: second signal: ending without the report\n");
        die_of(signal);
    }
    // In pieces: formatting allocates, which a handler must not.
    say(b"epcache: ");
    say(match signal {
        libc::SIGINT => b"SIGINT",
        libc::SIGTERM => b"SIGTERM",
        _ => b"SIGHUP",
    });
    say(match (switches::standalone(), switches::trace_asked()) {
        (true, true) => b": the report and the trace are written",
        (false, true) => b": the trace is finished",
        _ => b": the report is written",
    });
    say(
        b" at the program's next captured access, then the program ends (send it again to \
          end at once, without them)\n",
    );
    switches::wake_all_sync_points();
}

/// The held signal to end the program with, once one came.
pub(super) fn pending() -> Option<c_int> {
    match PENDING.load(Ordering::Relaxed) {
        0 => None,
        signal => Some(signal),
    }
}

/// Ends the process by `signal` with its default action, as it would have ended without epcache
/// (no `atexit` handlers, no stdio flush, the shell sees the signal).
pub(super) fn die_of(signal: c_int) -> ! {
    // SAFETY: signal, pthread_sigmask, raise and the exit_group system call are
    // async-signal-safe; the set is initialised by sigemptyset and sigaddset before use.
    unsafe {
        libc::signal(signal, libc::SIG_DFL);
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, signal);
        // Inside the handler the signal is blocked until it returns: unblock it, so that the
        // raise below ends the process now.
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        libc::raise(signal);
        // Not reached with the default action of a held signal; the shell's convention if it is.
        // The system call, not `_exit`, which `epcache cc` wraps to write the report (written
        // already).
        libc::syscall(libc::SYS_exit_group, 128 + signal);
        unreachable!("exit_group returned")
    }
}

/// Has SIGALRM, with `handler` for it, arrive in `seconds`, unblocked on the calling thread
/// (where the program may have blocked it, or be running its own SIGALRM handler): the
/// watchdog of a report written where a lock the program holds may stop it. Async-signal-safe.
pub(super) fn arm_watchdog(handler: extern "C" fn(c_int), seconds: u32) {
    // SAFETY: the zeroed struct and set are valid and initialised by sigemptyset and sigaddset
    // before use; the caller's handler is an `extern "C"` function that only does
    // async-signal-safe work; sigaction, pthread_sigmask and alarm are async-signal-safe and
    // given initialised pointers.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        libc::sigemptyset(&mut action.sa_mask);
        action.sa_sigaction = handler as libc::sighandler_t;
        action.sa_flags = libc::SA_ONSTACK;
        libc::sigaction(libc::SIGALRM, &action, std::ptr::null_mut());
        let mut alarm: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut alarm);
        libc::sigaddset(&mut alarm, libc::SIGALRM);
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &alarm, std::ptr::null_mut());
        libc::alarm(seconds);
    }
}

/// Writes `message` to stderr, async-signal-safely.
pub(super) fn say(message: &[u8]) {
    // SAFETY: write(2) is async-signal-safe; the buffer is valid for its length. A failure
    // (stderr closed) loses only the message.
    let _ = unsafe { libc::write(libc::STDERR_FILENO, message.as_ptr().cast(), message.len()) };
}

/// Runs `f` with every signal blocked on the calling thread, then restores its mask: a thread
/// `f` starts inherits the full mask, so the program's process-directed signals are never
/// delivered to it (the simulation thread, `worker.rs`).
pub(super) fn with_signals_blocked<R>(f: impl FnOnce() -> R) -> R {
    // SAFETY: both sets are plain C structs for which all zeroes is a valid value, written
    // through `sigfillset` before use.
    let (mut all, mut previous): (libc::sigset_t, libc::sigset_t) =
        unsafe { (std::mem::zeroed(), std::mem::zeroed()) };
    // SAFETY: `all` is a valid, exclusively borrowed set; `pthread_sigmask` only reads `all`
    // and writes the old mask into `previous`, both live for the call.
    let blocked = unsafe {
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_BLOCK, &all, &mut previous) == 0
    };
    let result = f();
    if blocked {
        // SAFETY: `previous` holds the mask `pthread_sigmask` returned above.
        unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &previous, std::ptr::null_mut()) };
    }
    result
}
