//! How the runtime learns that the process ends, from the C library and the kernel: the exit
//! handlers (`atexit`, `at_quick_exit`), the handler a fork child runs (the child is no longer
//! the monitored process), the parent-death signal that ends a program whose `epcache run` was
//! killed ([`end_with_launcher`]), and the crash signals' handler, which writes the standalone report
//! before the program dies (`process_end.rs` does the work of each). The report survives a
//! crash as Cachegrind's output does: a kernel that indexes past its array after an hour of
//! simulation, or fails an `assert`, keeps that hour's counts.
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
//! handler is never displaced. The one exception is gfortran's backtrace handler, which the
//! Fortran main program installs over this one at its start (`_gfortran_set_options`, wrapped
//! in `wrap_abi.rs`): where that call replaced this handler, it goes back in front and hands
//! the crash on to gfortran's once the report is written, so a Fortran crash leaves the report
//! and still prints gfortran's backtrace. A stack overflow leaves no stack for a handler, so the
//! thread that installs them (the one that started the process, the main thread as a rule)
//! gets an alternate signal stack of [`ALTERNATE_STACK_BYTES`] to run it on, unless the program
//! gave it one; a stack overflow in another thread still ends without the report.

use std::ffi::c_int;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicI64, Ordering};

use super::process_end;
use super::signal_abi::{action_is_default, arm_watchdog, die_of, say};

/// Ends the program, by SIGTERM, when the launcher that started it dies: a killed
/// `epcache run` (a batch system's `kill -9`, a closed terminal) must not leave its program
/// running on the node, unmonitored and unseen. The kernel sends the signal
/// (`PR_SET_PDEATHSIG`); SIGTERM rather than SIGKILL, so a standalone report and a trace are
/// still finished (`signal_abi.rs`). Only a direct child of the launcher is tied to it: a
/// program a script started under `epcache run`, or a program's own children, which inherit
/// the variable, are left alone.
pub(super) fn end_with_launcher() {
    let Some(launcher) = std::env::var(epcache_shm::target::LAUNCHER_ENV)
        .ok()
        .and_then(|v| v.parse::<libc::pid_t>().ok())
    else {
        return;
    };
    // SAFETY: getppid has no preconditions.
    if unsafe { libc::getppid() } != launcher {
        return;
    }
    // SAFETY: PR_SET_PDEATHSIG takes a signal number and unused zeros; it changes only this
    // process's parent-death signal.
    let set = unsafe {
        libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGTERM as libc::c_ulong,
            0,
            0,
            0,
        )
    };
    if set != 0 {
        eprintln!(
            "epcache: cannot tie this program to epcache run (pid {launcher}): {}; it runs on if epcache run is killed",
            std::io::Error::last_os_error()
        );
        return;
    }
    // The launcher died between the check and the request: the kernel will not send it now.
    // SAFETY: getppid has no preconditions.
    if unsafe { libc::getppid() } != launcher {
        // SAFETY: raise only sends SIGTERM to this thread, which takes its usual action.
        unsafe { libc::raise(libc::SIGTERM) };
    }
}

/// Registers `hook` to run at process exit, after `main` returns or `exit` is called.
pub(super) fn register_at_exit(hook: extern "C" fn()) {
    unsafe extern "C" {
        fn atexit(hook: extern "C" fn()) -> c_int;
    }
    // SAFETY: atexit only stores the pointer of a 'static function with the C ABI it expects;
    // it is thread-safe in glibc. A failure (out of slots) only loses the report, so it is ignored.
    let _ = unsafe { atexit(hook) };
}

/// Registers `hook` to run at `quick_exit`, after the handlers the program registers later
/// with `at_quick_exit` (they run last registered first), as [`register_at_exit`] for `exit`.
pub(super) fn register_at_quick_exit(hook: extern "C" fn()) {
    unsafe extern "C" {
        fn at_quick_exit(hook: extern "C" fn()) -> c_int;
    }
    // SAFETY: as `register_at_exit`: at_quick_exit only stores the pointer of a 'static
    // function with the C ABI it expects, and a failure only loses the report.
    let _ = unsafe { at_quick_exit(hook) };
}

/// Registers `hook` to run in the child after every `fork`.
pub(super) fn register_at_fork_child(hook: unsafe extern "C" fn()) {
    // SAFETY: pthread_atfork only stores the pointers; `hook` is a 'static function with the C
    // ABI, and null prepare/parent handlers are allowed. A failure (ENOMEM) leaves a forked
    // child writing into its parent's segment, as before, so it is only said.
    if unsafe { libc::pthread_atfork(None, None, Some(hook)) } != 0 {
        eprintln!(
            "epcache: cannot register the fork handler; a forked child may disturb its parent's monitoring"
        );
    }
}

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

/// The alternate signal stack the crash handler runs on, where a stack overflow leaves none:
/// writing the report (serialising it, the hand-over wait) takes far less; pages never touched
/// cost nothing.
const ALTERNATE_STACK_BYTES: usize = 1 << 20;

/// The first crash signal, 0 before one.
static CRASHED: AtomicI32 = AtomicI32::new(0);
/// The thread writing the report after a crash (its kernel thread id), 0 before one.
static REPORTER: AtomicI32 = AtomicI32::new(0);
/// When the watchdog may end the program, in `CLOCK_MONOTONIC` seconds: an earlier SIGALRM is
/// the program's own (a timer of its own, or one sent by another process).
static DEADLINE: AtomicI64 = AtomicI64::new(i64::MAX);

/// Whether [`report_on_crash`] installed the handlers.
static INSTALLED: AtomicBool = AtomicBool::new(false);

/// The actions the handler took the place of after the program installed them (gfortran's),
/// by the signal's index in [`CRASHES`]: the crash is handed on to them after the report. Set
/// once, before the handler is put back in front; read in the handler (an atomic load).
static PASSED_ON_TO: OnceLock<[Option<libc::sigaction>; CRASHES.len()]> = OnceLock::new();

/// Installs the report-writing handler for every crash signal whose action is the default, and
/// gives the calling thread an alternate signal stack to run it on.
pub(super) fn report_on_crash() {
    alternate_stack_for_this_thread();
    for signal in CRASHES.into_iter().filter(|&s| action_is_default(s)) {
        // SAFETY: the handler is a 'static `extern "C"` function fit to run as one. A failure
        // keeps the default action, which only loses the report.
        unsafe { install(signal, on_crash) };
    }
    INSTALLED.store(true, Ordering::Relaxed);
}

/// The crash signals' actions now, to tell afterwards which ones a call changed.
pub(super) type CrashActions = [Option<libc::sigaction>; CRASHES.len()];

/// The current action of every crash signal (`None` where it cannot be read).
pub(super) fn crash_actions() -> CrashActions {
    CRASHES.map(|signal| {
        // SAFETY: sigaction with a null new action only reads the current one into a zeroed
        // `sigaction`, a valid bit pattern for this plain C struct.
        let mut current: libc::sigaction = unsafe { std::mem::zeroed() };
        (unsafe { libc::sigaction(signal, std::ptr::null(), &mut current) } == 0).then_some(current)
    })
}

/// Puts the handler back in front of the handlers gfortran's start-up installed over it
/// (`_gfortran_set_options`, whose call `before` was read just before): only where the call
/// replaced this handler, so a handler the program installed itself stays alone (with
/// `-fno-backtrace` gfortran installs none). The handler then hands each crash on to gfortran's
/// after the report. Nothing if the handlers were never installed (no report wanted) or this
/// already ran.
pub(super) fn report_before_program_handlers(before: &CrashActions) {
    if !INSTALLED.load(Ordering::Relaxed) || PASSED_ON_TO.get().is_some() {
        return;
    }
    let ours = on_crash as *const () as libc::sighandler_t;
    let now = crash_actions();
    let mut taken = [None; CRASHES.len()];
    for (i, (was, is)) in before.iter().zip(now).enumerate() {
        if let (Some(was), Some(is)) = (was, is)
            && was.sa_sigaction == ours
            && is.sa_sigaction != ours
            && is.sa_sigaction != libc::SIG_DFL
            && is.sa_sigaction != libc::SIG_IGN
        {
            taken[i] = Some(is);
        }
    }
    if PASSED_ON_TO.set(taken).is_err() {
        return;
    }
    for (signal, _) in CRASHES.into_iter().zip(taken).filter(|(_, t)| t.is_some()) {
        // SAFETY: as in `report_on_crash`; a failure leaves gfortran's handler in place.
        unsafe { install(signal, on_crash) };
    }
}

/// Ends the crash of `signal` after the report: through the program's own handler when this
/// one took its place (it is put back and the signal raised again, to arrive when this handler
/// returns; a fault's instruction would fault again anyway), else by the default action.
fn pass_on_or_die(signal: c_int) {
    let index = CRASHES.iter().position(|&s| s == signal);
    let theirs = index.and_then(|i| PASSED_ON_TO.get().and_then(|p| p[i]));
    let Some(action) = theirs else { die_of(signal) };
    // SAFETY: alarm, signal, sigaction and raise are async-signal-safe; `action` is
    // gfortran's handler as sigaction returned it. The watchdog is no longer needed (the report
    // is written) and must not end the program while that handler prints its backtrace. The
    // signal is blocked while this handler runs, so the raise is delivered to that handler once
    // this one returns.
    unsafe {
        libc::alarm(0);
        libc::signal(libc::SIGALRM, libc::SIG_DFL);
        libc::sigaction(signal, &action, std::ptr::null_mut());
        libc::raise(signal);
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
        // On the thread's alternate stack if it has one (after a stack overflow, the only
        // place left to run on); on the thread's own stack otherwise.
        action.sa_flags = libc::SA_ONSTACK;
        libc::sigaction(signal, &action, std::ptr::null_mut());
    }
}

/// Gives the calling thread an alternate signal stack unless it has one (the program's own is
/// kept). Mapped for the process's life: the thread is the one that started the process. A
/// failure leaves a stack overflow without the report, as before.
fn alternate_stack_for_this_thread() {
    // SAFETY: sigaltstack is given a zeroed struct to fill for the query, and for the change
    // a fresh private anonymous mapping of the size it names, never unmapped; mmap's result
    // is checked before use.
    unsafe {
        let mut current: libc::stack_t = std::mem::zeroed();
        if libc::sigaltstack(std::ptr::null(), &mut current) != 0
            || current.ss_flags & libc::SS_DISABLE == 0
        {
            return;
        }
        let stack = libc::mmap(
            std::ptr::null_mut(),
            ALTERNATE_STACK_BYTES,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        );
        if stack == libc::MAP_FAILED {
            return;
        }
        let alternate = libc::stack_t {
            ss_sp: stack,
            ss_flags: 0,
            ss_size: ALTERNATE_STACK_BYTES,
        };
        libc::sigaltstack(&alternate, std::ptr::null_mut());
    }
}

/// The handler: writes the report under the watchdog, then dies of `signal`.
extern "C" fn on_crash(signal: c_int) {
    // SAFETY: gettid is async-signal-safe and has no precondition.
    let thread = unsafe { libc::gettid() };
    if CRASHED
        .compare_exchange(0, signal, Ordering::Relaxed, Ordering::Relaxed)
        .is_err()
    {
        // The report itself crashed: `abort` unblocks SIGABRT, so this handler runs again on
        // the reporting thread (a fault there ends the process by default, the signals being
        // blocked here).
        if REPORTER.load(Ordering::Relaxed) == thread {
            say(b"epcache: the report crashed; the program dies without it\n");
            die_of(CRASHED.load(Ordering::Relaxed));
        }
        // Another thread crashed first and is writing the report: let it finish or its
        // watchdog end the process.
        loop {
            // SAFETY: pause is async-signal-safe and only waits.
            unsafe { libc::pause() };
        }
    }
    REPORTER.store(thread, Ordering::Relaxed);
    say(b"epcache: ");
    say(name(signal));
    if !process_end::may_report_on_crash() {
        say(b" inside epcache's runtime or a forked child: no report\n");
        return pass_on_or_die(signal);
    }
    say(b": writing the report before the program dies (at most 10 s)\n");
    DEADLINE.store(
        monotonic_seconds() + i64::from(WATCHDOG_SECONDS),
        Ordering::Relaxed,
    );
    arm_watchdog(on_watchdog, WATCHDOG_SECONDS);
    process_end::report_at_crash();
    pass_on_or_die(signal);
}

/// The report took too long (likely waiting for a lock the crash left held). An alarm before
/// the deadline is not the watchdog's: it is ignored, and the watchdog's own still comes.
extern "C" fn on_watchdog(_: c_int) {
    if monotonic_seconds() < DEADLINE.load(Ordering::Relaxed) {
        return;
    }
    say(b"epcache: the report was not written in time; the program dies without it\n");
    die_of(CRASHED.load(Ordering::Relaxed))
}

/// `CLOCK_MONOTONIC` in whole seconds (async-signal-safe).
fn monotonic_seconds() -> i64 {
    // SAFETY: clock_gettime is async-signal-safe and writes only the zeroed timespec given.
    let mut now: libc::timespec = unsafe { std::mem::zeroed() };
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
    now.tv_sec
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
