//! The program's calls to `pthread_join`, `dlopen`, `_exit` and `_Exit` (and a Fortran main
//! program's to `_gfortran_set_options`), through the linker's `--wrap` (`epcache cc` links
//! programs with `--wrap=pthread_join,--wrap=dlopen,...`): a thread hands its counts on before
//! it blocks in a join, a library opened at run time is read for names like one loaded at
//! start, a program that ends by `_exit` (which runs no exit handlers, where the report is
//! written) still leaves its report, and a Fortran crash leaves it too (gfortran's backtrace
//! handler, installed at the main program's start, took the crash signals before).
//!
//! Why the join: a main thread that starts workers and joins them blocks with its counts in its
//! own thread-local state, where a report written by another thread cannot reach them. The
//! report is written by another thread when a held signal finds a worker first
//! (`signal_abi.rs`), and the main thread's counts up to the join would be lost.
//!
//! The real functions are reached through the linker's `__real_` names, weak references (as for
//! C++'s operators in `alloc_abi.rs`): a program linked without the wraps still links, and then
//! never calls the wrappers. `pthread_join` is a cancellation point, so its wrapper is
//! `C-unwind`: a cancelled join unwinds through it as through the program's own frames.

// The entry points are reached by symbol name from the linker's wrapping, not by Rust path.
#![allow(unreachable_pub)]

use std::ffi::{c_char, c_int, c_void};

use super::{process_end, process_end_abi, signal_abi, start_up, this_thread};

/// `pthread_join`, as reached through its `__real_` name.
type RealJoin = unsafe extern "C-unwind" fn(libc::pthread_t, *mut *mut c_void) -> c_int;

/// The wrapper: the real function's address goes in the register after the two arguments, and
/// [`join_at`] is reached by a tail jump.
#[cfg(target_arch = "x86_64")]
#[unsafe(naked)]
#[unsafe(no_mangle)]
pub extern "C-unwind" fn __wrap_pthread_join() -> c_int {
    core::arch::naked_asm!(
        ".weak __real_pthread_join",
        "mov rdx, qword ptr [rip + __real_pthread_join@GOTPCREL]",
        "jmp {0}",
        sym join_at,
    );
}

/// Hands the thread's counts on, then joins through `real`; the thread counts again after.
#[cfg(target_arch = "x86_64")]
extern "C-unwind" fn join_at(
    thread: libc::pthread_t,
    result: *mut *mut c_void,
    real: RealJoin,
) -> c_int {
    this_thread::hand_over_before_blocking();
    // SAFETY: `real` is the C library's `pthread_join` (the wrap only redirects calls to this
    // wrapper when the program was linked with it, and then `__real_pthread_join` resolves to
    // the library's function); the arguments are the program's own, passed on unchanged.
    let joined = unsafe { real(thread, result) };
    this_thread::hold_after_blocking();
    joined
}

/// `dlopen`, as reached through its `__real_` name.
type RealDlopen = unsafe extern "C" fn(*const c_char, c_int) -> *mut c_void;

/// The wrapper: the real function's address goes in the register after the two arguments, and
/// [`dlopen_at`] is reached by a tail jump.
#[cfg(target_arch = "x86_64")]
#[unsafe(naked)]
#[unsafe(no_mangle)]
pub extern "C" fn __wrap_dlopen() -> *mut c_void {
    core::arch::naked_asm!(
        ".weak __real_dlopen",
        "mov rdx, qword ptr [rip + __real_dlopen@GOTPCREL]",
        "jmp {0}",
        sym dlopen_at,
    );
}

/// Opens through `real`, then has the runtime read a library built with capture that the call
/// loaded.
#[cfg(target_arch = "x86_64")]
extern "C" fn dlopen_at(file: *const c_char, flags: c_int, real: RealDlopen) -> *mut c_void {
    // SAFETY: `real` is the C library's `dlopen` (see `join_at`); the arguments are the
    // program's own, passed on unchanged.
    let handle = unsafe { real(file, flags) };
    if !handle.is_null() && !file.is_null() {
        start_up::library_opened();
    }
    handle
}

/// `_gfortran_set_options`, as reached through its `__real_` name.
type RealSetOptions = unsafe extern "C" fn(c_int, *const c_int);

/// The wrapper of `_gfortran_set_options`, which a Fortran main program calls at its start
/// and which installs gfortran's backtrace handler over the crash handler: the real function's
/// address goes in the register after the two arguments, and [`set_options_at`] is reached by
/// a tail jump.
#[cfg(target_arch = "x86_64")]
#[unsafe(naked)]
#[unsafe(no_mangle)]
pub extern "C" fn __wrap__gfortran_set_options() {
    core::arch::naked_asm!(
        ".weak __real__gfortran_set_options",
        "mov rdx, qword ptr [rip + __real__gfortran_set_options@GOTPCREL]",
        "jmp {0}",
        sym set_options_at,
    );
}

/// Sets gfortran's options through `real`, then puts the crash handler back in front of the
/// handlers that installed (`process_end_abi.rs`), so a Fortran crash leaves the report and still
/// prints gfortran's backtrace.
#[cfg(target_arch = "x86_64")]
extern "C" fn set_options_at(count: c_int, options: *const c_int, real: Option<RealSetOptions>) {
    // A program linked with the wrap always has the real function (the Fortran run-time
    // library defines it), but a weak reference may be null: then there is nothing to set.
    let Some(real) = real else { return };
    let before = process_end_abi::crash_actions();
    // SAFETY: `real` is libgfortran's `_gfortran_set_options` (see `join_at`); the arguments
    // are the program's own, passed on unchanged.
    unsafe { real(count, options) };
    process_end_abi::report_before_program_handlers(&before);
}

/// `_exit` and `_Exit`, as reached through their `__real_` names.
type RealExit = unsafe extern "C" fn(c_int) -> !;

/// The wrapper of `_exit`: the real function's address goes in the register after the
/// argument, and [`exit_at`] is reached by a tail jump.
#[cfg(target_arch = "x86_64")]
#[unsafe(naked)]
#[unsafe(no_mangle)]
pub extern "C" fn __wrap__exit() -> ! {
    core::arch::naked_asm!(
        ".weak __real__exit",
        "mov rsi, qword ptr [rip + __real__exit@GOTPCREL]",
        "jmp {0}",
        sym exit_at,
    );
}

/// The wrapper of `_Exit`, as [`__wrap__exit`].
#[cfg(target_arch = "x86_64")]
#[unsafe(naked)]
#[unsafe(no_mangle)]
pub extern "C" fn __wrap__Exit() -> ! {
    core::arch::naked_asm!(
        ".weak __real__Exit",
        "mov rsi, qword ptr [rip + __real__Exit@GOTPCREL]",
        "jmp {0}",
        sym exit_at,
    );
}

/// How long the report at `_exit` may take before the process ends without it: `_exit` is
/// what a signal handler calls to end a program, and one that interrupted the C library's
/// allocator holds the lock the report needs.
const EXIT_WATCHDOG_SECONDS: u32 = 10;

/// The status of the `_exit` in progress, for the watchdog.
static EXITING: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Writes the report as the exit handler would (not in a child of `fork` or `vfork`, nor from
/// inside the runtime), under a watchdog, then ends the process through `real`.
#[cfg(target_arch = "x86_64")]
extern "C" fn exit_at(status: c_int, real: RealExit) -> ! {
    use std::sync::atomic::Ordering;
    if process_end::may_report_at_immediate_exit() {
        EXITING.store(u64::from(status as u32), Ordering::Relaxed);
        signal_abi::arm_watchdog(on_exit_watchdog, EXIT_WATCHDOG_SECONDS);
        process_end::before_immediate_exit();
    }
    // SAFETY: `real` is the C library's `_exit` or `_Exit` (see `join_at`); the status is the
    // program's own.
    unsafe { real(status) }
}

/// The report at `_exit` took too long: the process ends with the program's status, without
/// it.
extern "C" fn on_exit_watchdog(_: c_int) {
    use std::sync::atomic::Ordering;
    signal_abi::say(b"epcache: the report was not written in time; the program ends without it\n");
    let status = EXITING.load(Ordering::Relaxed) as c_int;
    // SAFETY: the exit_group system call is async-signal-safe and ends the process.
    unsafe { libc::syscall(libc::SYS_exit_group, status) };
}
