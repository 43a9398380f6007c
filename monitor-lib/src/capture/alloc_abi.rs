//! Heap blocks named by their allocation site (the DTrack approach), so an unmodified C, C++ or
//! Fortran program still has names like `main.c:42` for its heap arrays.
//!
//! `epcache cc` links with `--wrap` for `malloc`, `calloc`, `realloc`, `free`, `memalign`,
//! `aligned_alloc`, `posix_memalign`, `valloc` and `pvalloc`: the program's own calls land in the
//! `__wrap_*` functions here, which allocate through glibc's `__libc_*` entry points (always
//! defined, so a program linked without the wraps still links; calls from shared libraries are
//! not wrapped) and tell the runtime about blocks of at least [`MIN_TRACKED_BYTES`]. The call
//! site is the return address, handed over by a naked trampoline on x86_64 (elsewhere blocks are
//! not named). On x86_64 C++'s operator new and delete are wrapped too (see below them), and
//! [`return_addresses`] walks the stack of each tracked block for its allocation context
//! (`heap.rs`).

// The entry points are reached by symbol name from the linker's wrapping, not by Rust path.
#![allow(unreachable_pub)]

use std::ffi::{c_int, c_void};

use super::data::MIN_TRACKED_BYTES;
use super::heap;
use super::runtime_guard::RuntimeGuard;

unsafe extern "C" {
    fn __libc_malloc(size: usize) -> *mut c_void;
    fn __libc_calloc(count: usize, size: usize) -> *mut c_void;
    fn __libc_realloc(ptr: *mut c_void, size: usize) -> *mut c_void;
    fn __libc_free(ptr: *mut c_void);
    fn __libc_memalign(align: usize, size: usize) -> *mut c_void;
    fn __libc_valloc(size: usize) -> *mut c_void;
    fn __libc_pvalloc(size: usize) -> *mut c_void;
    fn malloc_usable_size(ptr: *mut c_void) -> usize;
}

/// Defines the `__wrap_*` entry point `$name` taking `$args`, which hands the call's return
/// address to `$at` as the argument after them. On x86_64 a naked trampoline copies it from
/// [rsp] into `$reg` (the register after the caller's arguments) and tail-jumps, keeping the stack
/// as the caller left it, so `$at` returns straight to the program; elsewhere `$at` gets 0 and
/// blocks are not named.
macro_rules! call_site_entry {
    ($name:ident($($arg:ident: $ty:ty),*) -> $ret:ty, $reg:literal, $at:ident) => {
        #[cfg(target_arch = "x86_64")]
        #[unsafe(naked)]
        #[unsafe(no_mangle)]
        pub extern "C" fn $name($($arg: $ty),*) -> $ret {
            core::arch::naked_asm!(
                concat!("mov ", $reg, ", qword ptr [rsp]"),
                "jmp {0}",
                sym $at,
            );
        }

        #[cfg(not(target_arch = "x86_64"))]
        #[unsafe(no_mangle)]
        pub extern "C" fn $name($($arg: $ty),*) -> $ret {
            $at($($arg,)* 0)
        }
    };
}

call_site_entry!(__wrap_malloc(size: usize) -> *mut c_void, "rsi", malloc_at);
call_site_entry!(__wrap_calloc(count: usize, size: usize) -> *mut c_void, "rdx", calloc_at);
call_site_entry!(__wrap_realloc(ptr: *mut c_void, size: usize) -> *mut c_void, "rdx", realloc_at);
call_site_entry!(__wrap_memalign(align: usize, size: usize) -> *mut c_void, "rdx", memalign_at);
call_site_entry!(__wrap_aligned_alloc(align: usize, size: usize) -> *mut c_void, "rdx", memalign_at);
call_site_entry!(
    __wrap_posix_memalign(out: *mut *mut c_void, align: usize, size: usize) -> c_int,
    "rcx",
    posix_memalign_at
);
call_site_entry!(__wrap_valloc(size: usize) -> *mut c_void, "rsi", valloc_at);
call_site_entry!(__wrap_pvalloc(size: usize) -> *mut c_void, "rsi", pvalloc_at);

/// Runs a call into the C library's allocator as if inside the runtime. A signal handler that
/// interrupts the allocator, which then holds its lock, finds the thread so: neither the
/// handler's own instrumented code (a function entry is a sync point, which frees what the
/// data structures' refresh replaced) nor its `_exit` (the report) reaches into the runtime,
/// whose allocations would wait for that lock forever. A crash in the allocator (glibc's abort
/// on a corrupted heap) is still the program's and writes the report
/// (`ThreadState::Allocating`).
#[inline(always)]
fn in_allocator<R>(call: impl FnOnce() -> R) -> R {
    let _allocating = RuntimeGuard::enter_allocator();
    call()
}

/// Tells the runtime about a new block big enough to track.
fn track(block: *mut c_void, bytes: usize, return_pc: u64) {
    if bytes >= MIN_TRACKED_BYTES && !block.is_null() {
        heap::allocated(
            block.addr() as u64,
            bytes as u64,
            return_pc,
            return_addresses,
        );
    }
}

extern "C" fn malloc_at(size: usize, return_pc: u64) -> *mut c_void {
    // SAFETY: glibc's allocator entry point, called with the caller's own argument.
    let block = in_allocator(|| unsafe { __libc_malloc(size) });
    track(block, size, return_pc);
    block
}

extern "C" fn calloc_at(count: usize, size: usize, return_pc: u64) -> *mut c_void {
    // SAFETY: as for `malloc_at`; calloc checks the product for overflow itself.
    let block = in_allocator(|| unsafe { __libc_calloc(count, size) });
    track(block, count.saturating_mul(size), return_pc);
    block
}

extern "C" fn realloc_at(ptr: *mut c_void, size: usize, return_pc: u64) -> *mut c_void {
    forget(ptr);
    // SAFETY: `ptr` is null or a live block of this allocator, as the caller's contract with
    // realloc requires; it is passed on unchanged.
    let block = in_allocator(|| unsafe { __libc_realloc(ptr, size) });
    track(block, size, return_pc);
    block
}

/// `memalign` and `aligned_alloc`: glibc before 2.38 makes the second an alias of the first,
/// and from 2.38 only adds a refusal of alignments that are not powers of two; forwarding both to
/// `__libc_memalign` never turns a call that works on this system into a failure.
extern "C" fn memalign_at(align: usize, size: usize, return_pc: u64) -> *mut c_void {
    // SAFETY: glibc's allocator entry point, called with the caller's own arguments; it rounds
    // an unusual alignment up itself.
    let block = in_allocator(|| unsafe { __libc_memalign(align, size) });
    track(block, size, return_pc);
    block
}

/// `posix_memalign`, checked as glibc checks it (it has no `__libc_` entry point of its own).
extern "C" fn posix_memalign_at(
    out: *mut *mut c_void,
    align: usize,
    size: usize,
    return_pc: u64,
) -> c_int {
    let word = size_of::<*mut c_void>();
    if align == 0 || !align.is_multiple_of(word) || !(align / word).is_power_of_two() {
        return libc::EINVAL;
    }
    // SAFETY: as for `memalign_at`, with an alignment posix_memalign accepts.
    let block = in_allocator(|| unsafe { __libc_memalign(align, size) });
    if block.is_null() {
        return libc::ENOMEM;
    }
    // SAFETY: the caller hands posix_memalign a writable pointer for the result, as its contract
    // requires; like glibc, it is written only on success.
    unsafe { out.write(block) };
    track(block, size, return_pc);
    0
}

extern "C" fn valloc_at(size: usize, return_pc: u64) -> *mut c_void {
    // SAFETY: glibc's allocator entry point, called with the caller's own argument.
    let block = in_allocator(|| unsafe { __libc_valloc(size) });
    track(block, size, return_pc);
    block
}

extern "C" fn pvalloc_at(size: usize, return_pc: u64) -> *mut c_void {
    // SAFETY: as for `valloc_at`.
    let block = in_allocator(|| unsafe { __libc_pvalloc(size) });
    track(block, size, return_pc);
    block
}

/// Unregisters `ptr` if it is a tracked block: only blocks whose usable size reaches the
/// threshold can be, which keeps small frees to one cheap call.
fn forget(ptr: *mut c_void) {
    if ptr.is_null() {
        return;
    }
    // SAFETY: `ptr` is a live block of this allocator (the caller is about to free or
    // reallocate it, which requires that).
    if unsafe { malloc_usable_size(ptr) } >= MIN_TRACKED_BYTES {
        heap::freed(ptr.addr() as u64);
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn __wrap_free(ptr: *mut c_void) {
    forget(ptr);
    // SAFETY: the program frees a block it got from this allocator, as free requires.
    in_allocator(|| unsafe { __libc_free(ptr) });
}

// C++ `operator new` and `operator delete`, x86_64 only (`epcache cc` wraps them only there).
//
// libstdc++'s operator new calls malloc from inside the shared library, where no wrap reaches
// and no line information names anything, so the program's own calls to the operator new family
// are wrapped instead: the return address is then the program's call site (the `new` expression,
// or the allocator code inlined into the program). The wrappers only observe. Each forwards to
// the operator it replaces, reached through the linker's `__real_` name, so alignment, the new
// handler, `std::bad_alloc` and the nothrow variants' null are exactly libstdc++'s. An exception
// from the real operator unwinds through the Rust frame (the `C-unwind` ABI; the runtime is
// built with `panic=unwind`, the default), and the runtime's own bookkeeping runs in an
// `extern "C"` function, so a bug in it aborts instead of unwinding into the program.
//
// The `__real_` names are weak references: a C or Fortran program, linked without these wraps,
// has no operator new for them to resolve to, and must still link. Their wrappers are then never
// called (only the wrap redirects calls to them).

/// An operator new taking one to three arguments, as reached through its `__real_` name.
type RealNew1 = unsafe extern "C-unwind" fn(usize) -> *mut c_void;
type RealNew2 = unsafe extern "C-unwind" fn(usize, usize) -> *mut c_void;
type RealNew3 = unsafe extern "C-unwind" fn(usize, usize, usize) -> *mut c_void;

/// Defines the wrapper `__wrap_$symbol` of operator new `$symbol` with `$n` arguments: the return
/// address goes in `$pc`, the real operator's address in `$real`, the registers after the
/// arguments, and `$at` is reached by a tail jump.
#[cfg(target_arch = "x86_64")]
macro_rules! new_entry {
    ($wrap:ident, $symbol:literal, $pc:literal, $real:literal, $at:ident) => {
        #[unsafe(naked)]
        #[unsafe(no_mangle)]
        pub extern "C-unwind" fn $wrap() -> *mut c_void {
            core::arch::naked_asm!(
                concat!(".weak __real_", $symbol),
                concat!("mov ", $pc, ", qword ptr [rsp]"),
                concat!("mov ", $real, ", qword ptr [rip + __real_", $symbol, "@GOTPCREL]"),
                "jmp {0}",
                sym $at,
            );
        }
    };
}

#[cfg(target_arch = "x86_64")]
new_entry!(__wrap__Znwm, "_Znwm", "rsi", "rdx", new1_at);
#[cfg(target_arch = "x86_64")]
new_entry!(__wrap__Znam, "_Znam", "rsi", "rdx", new1_at);
#[cfg(target_arch = "x86_64")]
new_entry!(
    __wrap__ZnwmRKSt9nothrow_t,
    "_ZnwmRKSt9nothrow_t",
    "rdx",
    "rcx",
    new2_at
);
#[cfg(target_arch = "x86_64")]
new_entry!(
    __wrap__ZnamRKSt9nothrow_t,
    "_ZnamRKSt9nothrow_t",
    "rdx",
    "rcx",
    new2_at
);
#[cfg(target_arch = "x86_64")]
new_entry!(
    __wrap__ZnwmSt11align_val_t,
    "_ZnwmSt11align_val_t",
    "rdx",
    "rcx",
    new2_at
);
#[cfg(target_arch = "x86_64")]
new_entry!(
    __wrap__ZnamSt11align_val_t,
    "_ZnamSt11align_val_t",
    "rdx",
    "rcx",
    new2_at
);
#[cfg(target_arch = "x86_64")]
new_entry!(
    __wrap__ZnwmSt11align_val_tRKSt9nothrow_t,
    "_ZnwmSt11align_val_tRKSt9nothrow_t",
    "rcx",
    "r8",
    new3_at
);
#[cfg(target_arch = "x86_64")]
new_entry!(
    __wrap__ZnamSt11align_val_tRKSt9nothrow_t,
    "_ZnamSt11align_val_tRKSt9nothrow_t",
    "rcx",
    "r8",
    new3_at
);

extern "C-unwind" fn new1_at(size: usize, return_pc: u64, real: RealNew1) -> *mut c_void {
    // SAFETY: `real` is the operator new the program called, with the program's argument.
    let block = unsafe { real(size) };
    new_block(block, size, return_pc);
    block
}

extern "C-unwind" fn new2_at(size: usize, a: usize, return_pc: u64, real: RealNew2) -> *mut c_void {
    // SAFETY: as for `new1_at`; the second argument (an alignment or a nothrow tag's address)
    // is passed on unchanged in the same register.
    let block = unsafe { real(size, a) };
    new_block(block, size, return_pc);
    block
}

extern "C-unwind" fn new3_at(
    size: usize,
    a: usize,
    b: usize,
    return_pc: u64,
    real: RealNew3,
) -> *mut c_void {
    // SAFETY: as for `new2_at`.
    let block = unsafe { real(size, a, b) };
    new_block(block, size, return_pc);
    block
}

/// The bookkeeping of a new block, in the C ABI so that a panic aborts here.
extern "C" fn new_block(block: *mut c_void, size: usize, return_pc: u64) {
    track(block, size, return_pc);
}

/// Defines the wrapper `__wrap_$symbol` of operator delete `$symbol` (at most three arguments):
/// it saves the arguments, lets the runtime forget the block, and tail-jumps to the real
/// operator with the arguments as they came. Nothing unwinds through it (`forget_deleted` is
/// `extern "C"`, operator delete is `noexcept`), so it needs no unwind information.
#[cfg(target_arch = "x86_64")]
macro_rules! delete_entry {
    ($wrap:ident, $symbol:literal) => {
        #[unsafe(naked)]
        #[unsafe(no_mangle)]
        pub extern "C" fn $wrap() {
            core::arch::naked_asm!(
                concat!(".weak __real_", $symbol),
                // Three pushes after the return address leave rsp 16-byte aligned for the call.
                "push rdi",
                "push rsi",
                "push rdx",
                "call {0}",
                "pop rdx",
                "pop rsi",
                "pop rdi",
                concat!("jmp qword ptr [rip + __real_", $symbol, "@GOTPCREL]"),
                sym forget_deleted,
            );
        }
    };
}

#[cfg(target_arch = "x86_64")]
delete_entry!(__wrap__ZdlPv, "_ZdlPv");
#[cfg(target_arch = "x86_64")]
delete_entry!(__wrap__ZdaPv, "_ZdaPv");
#[cfg(target_arch = "x86_64")]
delete_entry!(__wrap__ZdlPvm, "_ZdlPvm");
#[cfg(target_arch = "x86_64")]
delete_entry!(__wrap__ZdaPvm, "_ZdaPvm");
#[cfg(target_arch = "x86_64")]
delete_entry!(__wrap__ZdlPvRKSt9nothrow_t, "_ZdlPvRKSt9nothrow_t");
#[cfg(target_arch = "x86_64")]
delete_entry!(__wrap__ZdaPvRKSt9nothrow_t, "_ZdaPvRKSt9nothrow_t");
#[cfg(target_arch = "x86_64")]
delete_entry!(__wrap__ZdlPvSt11align_val_t, "_ZdlPvSt11align_val_t");
#[cfg(target_arch = "x86_64")]
delete_entry!(__wrap__ZdaPvSt11align_val_t, "_ZdaPvSt11align_val_t");
#[cfg(target_arch = "x86_64")]
delete_entry!(__wrap__ZdlPvmSt11align_val_t, "_ZdlPvmSt11align_val_t");
#[cfg(target_arch = "x86_64")]
delete_entry!(__wrap__ZdaPvmSt11align_val_t, "_ZdaPvmSt11align_val_t");
#[cfg(target_arch = "x86_64")]
delete_entry!(
    __wrap__ZdlPvSt11align_val_tRKSt9nothrow_t,
    "_ZdlPvSt11align_val_tRKSt9nothrow_t"
);
#[cfg(target_arch = "x86_64")]
delete_entry!(
    __wrap__ZdaPvSt11align_val_tRKSt9nothrow_t,
    "_ZdaPvSt11align_val_tRKSt9nothrow_t"
);

/// Forgets a block operator delete is about to release. Unlike `free`'s check this never asks
/// glibc about the pointer: a program may replace operator new with its own allocator, whose
/// blocks glibc knows nothing of, so the runtime's own record decides.
extern "C" fn forget_deleted(ptr: *mut c_void) {
    if !ptr.is_null() && heap::maybe_tracked(ptr.addr() as u64) {
        heap::freed(ptr.addr() as u64);
    }
}

/// Fills `frames` with the return addresses of the calling thread's stack, innermost first (the
/// first is in this function's caller); returns how many. The unwinder reads the `.eh_frame`
/// unwind tables every C, C++, Fortran and Rust function on x86_64 Linux has.
fn return_addresses(frames: &mut [u64]) -> usize {
    #[repr(C)]
    struct Walk<'a> {
        frames: &'a mut [u64],
        count: usize,
    }
    unsafe extern "C" {
        fn _Unwind_Backtrace(
            trace: extern "C" fn(*mut c_void, *mut c_void) -> c_int,
            arg: *mut c_void,
        ) -> c_int;
        fn _Unwind_GetIP(context: *mut c_void) -> usize;
    }
    /// `_URC_NO_REASON` goes on to the next frame, `_URC_END_OF_STACK` stops.
    const GO_ON: c_int = 0;
    const STOP: c_int = 5;
    extern "C" fn frame(context: *mut c_void, arg: *mut c_void) -> c_int {
        // SAFETY: `arg` is the `Walk` handed to `_Unwind_Backtrace` below, alive for its call,
        // and only this callback touches it meanwhile.
        let walk = unsafe { &mut *arg.cast::<Walk<'_>>() };
        let Some(slot) = walk.frames.get_mut(walk.count) else {
            return STOP;
        };
        // SAFETY: `context` is the unwinder's context for this frame, valid during the callback.
        *slot = unsafe { _Unwind_GetIP(context) } as u64;
        walk.count += 1;
        GO_ON
    }
    let mut walk = Walk { frames, count: 0 };
    // SAFETY: the callback matches the unwinder's trace function type and treats `arg` as the
    // `Walk` it is; the walk only reads the stack.
    unsafe { _Unwind_Backtrace(frame, (&raw mut walk).cast()) };
    walk.count
}
