//! The ThreadSanitizer entry points that gcc, g++ and gfortran emit under `-fsanitize=thread`,
//! implemented by epcache instead of libtsan: memory accesses feed the capture state, function
//! entry and exit are region boundaries, and atomics perform the real atomic operation.
//!
//! The fixed-size access hooks answer a repeat hit here (the thread's block, `filter.rs`) and
//! tail-jump to `access.rs`'s slow paths otherwise, through a naked trampoline that passes the
//! hook's return address (the access's code address, for per-line attribution) as one more
//! argument: the hit path neither reads nor passes it.
//!
//! Every symbol the compiler may emit exists here (reads and writes of 1 to 16 bytes, their
//! unaligned, volatile and `_pc` variants, ranges, vptr updates, function entry and exit, init,
//! fences, and every atomic of 8 to 128 bits), so linking an instrumented object never fails.
//!
//! Atomics: the 8- to 64-bit ones use `std::sync::atomic` on the pointed-to memory with the
//! requested memory order (stronger where C's order is invalid for the operation, which is always
//! correct). Rust has no stable 128-bit atomic, so 128-bit operations take one of 64 striped
//! locks, chosen by address, and add a SeqCst fence on each side when seq_cst is asked for: every
//! 128-bit atomic of instrumented code comes through here, so they are atomic with respect to each
//! other. They are not atomic with respect to uninstrumented code doing `lock cmpxchg16b` on the
//! same object at the same time (libatomic's lock-free path); such mixing is not supported.

// The entry points are reached by symbol name from instrumented code, not by Rust path.
#![allow(unreachable_pub)]

use std::cell::Cell;
use std::ffi::{c_int, c_void};
use std::sync::Mutex;
use std::sync::atomic::{
    AtomicI8, AtomicI16, AtomicI32, AtomicI64, Ordering, compiler_fence, fence,
};

use super::switches::anything_may_capture;
use super::thread_block::with_hooks;
use super::{access, boundaries, start_up};

fn address(addr: *const c_void) -> u64 {
    addr.addr() as u64
}

#[unsafe(no_mangle)]
pub extern "C" fn __tsan_init() {
    start_up::init_process();
}

/// Function entry. gcc passes the caller's return address, which names the call site, not the
/// function; the function is named by our own return address, which lies inside it right after
/// this call. A naked trampoline reads it from the stack and passes it on as a second argument.
#[cfg(target_arch = "x86_64")]
#[unsafe(naked)]
#[unsafe(no_mangle)]
pub extern "C" fn __tsan_func_entry(_caller_pc: *const c_void) {
    // The return address is at [rsp] on entry; the tail jump keeps it for the callee to return
    // through, with rdi (caller_pc) untouched, rsi holding it and rdx the function's stack
    // pointer at the call (just above the return address).
    core::arch::naked_asm!(
        "mov rsi, qword ptr [rsp]",
        "lea rdx, [rsp + 8]",
        "jmp {entry}",
        entry = sym func_entry_at,
    );
}

/// Without the trampoline (other architectures) functions are not regions; markers still are.
#[cfg(not(target_arch = "x86_64"))]
#[unsafe(no_mangle)]
pub extern "C" fn __tsan_func_entry(_caller_pc: *const c_void) {
    super::sync::sync_point();
}

#[cfg(target_arch = "x86_64")]
extern "C" fn func_entry_at(_caller_pc: *const c_void, own_pc: u64, sp: u64) {
    boundaries::function_entry(own_pc, sp);
}

/// Function exit. A naked trampoline passes the function's stack pointer at the call, which
/// tells the frames a `longjmp` left behind (below it) from the function's own, and the return
/// address, which tells whether that is the function's stack pointer at all.
#[cfg(target_arch = "x86_64")]
#[unsafe(naked)]
#[unsafe(no_mangle)]
pub extern "C" fn __tsan_func_exit() {
    core::arch::naked_asm!(
        "lea rdi, [rsp + 8]",
        "mov rsi, qword ptr [rsp]",
        "jmp {exit}",
        exit = sym func_exit_at,
    );
}

#[cfg(target_arch = "x86_64")]
extern "C" fn func_exit_at(sp: u64, return_pc: u64) {
    // gcc often ends a function with its epilogue and then `jmp __tsan_func_exit`: the stack
    // pointer is then the caller's, above the function's own frame, and tells nothing.
    boundaries::function_exit(sp, || called_directly(return_pc));
}

/// Whether the instruction that returns to `return_pc` is a direct `call __tsan_func_exit` (the
/// only call to it an executable's own code makes), rather than a tail jump to it from a
/// function whose epilogue already ran (`return_pc` is then its caller's) or a call through a
/// shared library's PLT, which this does not recognise and treats alike.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn called_directly(return_pc: u64) -> bool {
    const CALL_REL32: u8 = 0xE8;
    let at = return_pc.wrapping_sub(5) as *const u8;
    // SAFETY: `return_pc` is the return address the hook was entered with, in the code of the
    // executable or of a library that called (or tail-jumped to) it; the five bytes before a
    // return address are the call instruction or the end of the code before it, in the same
    // mapped text segment, which starts with headers or `.init` well before any call.
    let (opcode, offset) = unsafe { (at.read(), at.add(1).cast::<i32>().read_unaligned()) };
    let exit: extern "C" fn() = __tsan_func_exit;
    opcode == CALL_REL32 && return_pc.wrapping_add_signed(i64::from(offset)) == exit as usize as u64
}

/// Function exit; functions are not regions here (see `__tsan_func_entry`).
#[cfg(not(target_arch = "x86_64"))]
#[unsafe(no_mangle)]
pub extern "C" fn __tsan_func_exit() {
    boundaries::function_exit(super::region_stack::UNKNOWN_STACK, || false);
}

// The fixed-size hooks' fast path: a repeat hit counted in the thread's block, everything
// else a tail jump to a slow path of `access.rs`.

/// A captured load of `SIZE` bytes at `addr` (the fixed-size hooks; the hook must reach
/// here by a tail jump, see the module documentation).
#[inline(always)]
fn read_sized<const SIZE: u32>(addr: u64) {
    if anything_may_capture() {
        active::<SIZE, false>(addr);
    }
}

/// A captured store of `SIZE` bytes at `addr` (the fixed-size hooks).
#[inline(always)]
fn write_sized<const SIZE: u32>(addr: u64) {
    if anything_may_capture() {
        active::<SIZE, true>(addr);
    }
}

/// [`read_sized`] of an access at code address `pc` (the `_pc` hooks).
#[inline(always)]
fn read_sized_at<const SIZE: u32>(addr: u64, pc: u64) {
    if anything_may_capture() {
        active_at::<SIZE, false>(addr, pc);
    }
}

/// [`write_sized`] of an access at code address `pc` (the `_pc` hooks).
#[inline(always)]
fn write_sized_at<const SIZE: u32>(addr: u64, pc: u64) {
    if anything_may_capture() {
        active_at::<SIZE, true>(addr, pc);
    }
}

/// Whether this thread is synced and captures, and if so whether the access is a repeat hit
/// it counted (see [`active`]).
#[inline(always)]
fn hook_hit<const SIZE: u32, const WRITE: bool>(addr: u64) -> (bool, bool) {
    with_hooks(|h| {
        let synced_on = h.synced_on();
        (
            synced_on,
            synced_on && h.filter().repeat_hit(addr, SIZE, WRITE),
        )
    })
}

/// A fixed-size access while anything may capture: a repeat hit (see `filter.rs`) of a thread
/// that captures and has no switch to pick up is counted here, in one thread-local block and
/// one increment; everything else goes on to [`may_capture`] or [`simulate_on`] by a tail call. The block is
/// reached from the thread pointer (`thread_block.rs`), so no register is saved around it.
#[inline(never)]
extern "C" fn active<const SIZE: u32, const WRITE: bool>(addr: u64) {
    let (synced_on, hit) = hook_hit::<SIZE, WRITE>(addr);
    if hit {
        return;
    }
    // Tail jumps, so the slow paths' trampolines find the hook's return address.
    if synced_on {
        // Nothing to sync and the thread captures: straight to the simulator.
        simulate_on(addr, SIZE, WRITE);
    } else {
        may_capture(addr, SIZE, WRITE);
    }
}

/// [`active`] of an access whose code address `pc` the hook was given.
#[inline(never)]
extern "C" fn active_at<const SIZE: u32, const WRITE: bool>(addr: u64, pc: u64) {
    let (synced_on, hit) = hook_hit::<SIZE, WRITE>(addr);
    if hit {
        return;
    }
    if synced_on {
        access::simulate_on_at(addr, SIZE, WRITE, pc);
    } else {
        access::may_capture_at(addr, SIZE, WRITE, pc);
    }
}

// The slow paths of the access hooks, entered by tail jumps from them (`access.rs`): the
// hook's return address is the access's code address.

/// `access::simulate_on_at` of the access whose hook's return address is at the top of the stack
/// (reached from a hook by tail jumps only).
#[cfg(target_arch = "x86_64")]
#[unsafe(naked)]
extern "C" fn simulate_on(_addr: u64, _size: u32, _write: bool) {
    // rdi, esi and dl are passed on untouched; rcx gets the return address.
    core::arch::naked_asm!(
        "mov rcx, qword ptr [rsp]",
        "jmp {at}",
        at = sym access::simulate_on_at,
    );
}

/// Without the trampoline (other architectures) the code address is unknown.
#[cfg(not(target_arch = "x86_64"))]
extern "C" fn simulate_on(addr: u64, size: u32, write: bool) {
    access::simulate_on_at(addr, size, write, 0);
}

/// `access::may_capture_at` of the access whose hook's return address is at the top of the stack.
#[cfg(target_arch = "x86_64")]
#[unsafe(naked)]
extern "C" fn may_capture(_addr: u64, _size: u32, _write: bool) {
    core::arch::naked_asm!(
        "mov rcx, qword ptr [rsp]",
        "jmp {at}",
        at = sym access::may_capture_at,
    );
}

/// Without the trampoline (other architectures) the code address is unknown.
#[cfg(not(target_arch = "x86_64"))]
extern "C" fn may_capture(addr: u64, size: u32, write: bool) {
    access::may_capture_at(addr, size, write, 0);
}

macro_rules! access_hooks {
    ($($read:ident, $write:ident, $size:expr;)*) => {$(
        #[unsafe(no_mangle)]
        pub extern "C" fn $read(addr: *const c_void) {
            read_sized::<$size>(address(addr));
        }
        #[unsafe(no_mangle)]
        pub extern "C" fn $write(addr: *const c_void) {
            write_sized::<$size>(address(addr));
        }
    )*};
}

access_hooks! {
    __tsan_read1, __tsan_write1, 1;
    __tsan_read2, __tsan_write2, 2;
    __tsan_read4, __tsan_write4, 4;
    __tsan_read8, __tsan_write8, 8;
    __tsan_read16, __tsan_write16, 16;
    __tsan_unaligned_read2, __tsan_unaligned_write2, 2;
    __tsan_unaligned_read4, __tsan_unaligned_write4, 4;
    __tsan_unaligned_read8, __tsan_unaligned_write8, 8;
    __tsan_unaligned_read16, __tsan_unaligned_write16, 16;
    __tsan_volatile_read1, __tsan_volatile_write1, 1;
    __tsan_volatile_read2, __tsan_volatile_write2, 2;
    __tsan_volatile_read4, __tsan_volatile_write4, 4;
    __tsan_volatile_read8, __tsan_volatile_write8, 8;
    __tsan_volatile_read16, __tsan_volatile_write16, 16;
    __tsan_unaligned_volatile_read2, __tsan_unaligned_volatile_write2, 2;
    __tsan_unaligned_volatile_read4, __tsan_unaligned_volatile_write4, 4;
    __tsan_unaligned_volatile_read8, __tsan_unaligned_volatile_write8, 8;
    __tsan_unaligned_volatile_read16, __tsan_unaligned_volatile_write16, 16;
}

macro_rules! compound_hooks {
    ($($name:ident, $size:expr;)*) => {$(
        /// A read-modify-write of one location, as clang reports it with
        /// `-mllvm -tsan-compound-read-before-write`: a read, then a write.
        #[unsafe(no_mangle)]
        pub extern "C" fn $name(addr: *const c_void) {
            let addr = address(addr);
            read_sized::<$size>(addr);
            write_sized::<$size>(addr);
        }
    )*};
}

compound_hooks! {
    __tsan_read_write1, 1;
    __tsan_read_write2, 2;
    __tsan_read_write4, 4;
    __tsan_read_write8, 8;
    __tsan_read_write16, 16;
    __tsan_unaligned_read_write2, 2;
    __tsan_unaligned_read_write4, 4;
    __tsan_unaligned_read_write8, 8;
    __tsan_unaligned_read_write16, 16;
}

macro_rules! access_hooks_with_pc {
    ($($read:ident, $write:ident, $size:expr;)*) => {$(
        #[unsafe(no_mangle)]
        pub extern "C" fn $read(addr: *const c_void, pc: *const c_void) {
            read_sized_at::<$size>(address(addr), address(pc));
        }
        #[unsafe(no_mangle)]
        pub extern "C" fn $write(addr: *const c_void, pc: *const c_void) {
            write_sized_at::<$size>(address(addr), address(pc));
        }
    )*};
}

access_hooks_with_pc! {
    __tsan_read1_pc, __tsan_write1_pc, 1;
    __tsan_read2_pc, __tsan_write2_pc, 2;
    __tsan_read4_pc, __tsan_write4_pc, 4;
    __tsan_read8_pc, __tsan_write8_pc, 8;
    __tsan_read16_pc, __tsan_write16_pc, 16;
}

/// Range sizes are `size_t`; the simulator takes `u32`, so huge ranges are fed in pieces. `pc`
/// is the code address of the copy or range (the call's return address; 0 when unknown).
fn range(addr: *const c_void, size: usize, write: bool, pc: u64) {
    if !anything_may_capture() {
        return;
    }
    let mut start = address(addr);
    let mut left = size as u64;
    while left > 0 {
        let piece = left.min(1 << 30);
        access::may_capture_at(start, piece as u32, write, pc);
        start = start.wrapping_add(piece);
        left -= piece;
    }
}

/// A range access the compiler reported: `(first byte, bytes, write)`.
type ReportedRange = (u64, usize, bool);

thread_local! {
    /// The last two ranges the compiler reported on this thread, the latest last. gcc reports
    /// a copy of known size as a write range of the destination and a read range of the source
    /// and then may still call the C library's `memcpy` (or `memset`, after a write range) for
    /// it, which `epcache cc` renames to the counting `__tsan_memcpy`: a call that matches them
    /// exactly is that same copy, already counted.
    static REPORTED: Cell<[ReportedRange; 2]> = const { Cell::new([(0, 0, false); 2]) };
}

/// A range access the compiler reported at code address `pc`, counted and remembered.
fn reported_range(addr: *const c_void, size: usize, write: bool, pc: u64) {
    let _ = REPORTED.try_with(|r| r.set([r.get()[1], (address(addr), size, write)]));
    range(addr, size, write, pc);
}

/// Whether the compiler reported exactly `ranges` last (oldest first); they are then
/// forgotten, so a second call with the same arguments counts.
fn just_reported(ranges: &[ReportedRange]) -> bool {
    REPORTED
        .try_with(|r| {
            let last = r.get();
            let matches = ranges.len() <= 2 && last[2 - ranges.len()..] == *ranges;
            if matches {
                r.set([(0, 0, false); 2]);
            }
            matches
        })
        .unwrap_or(false)
}

/// Entry points whose code address is their caller's: on x86-64 a naked trampoline passes
/// the return address at the top of the stack as one more argument (in `$pc`) to the body,
/// as the access hooks' slow paths get theirs, so a copy's or a range's misses are on its
/// source line; elsewhere the body gets 0 (unknown).
macro_rules! with_return_address {
    ($(
        $(#[$doc:meta])*
        fn $name:ident($($arg:ident: $ty:ty),*) $(-> $ret:ty)? => $body:ident, $pc:literal;
    )*) => {$(
        $(#[$doc])*
        #[cfg(target_arch = "x86_64")]
        #[unsafe(naked)]
        #[unsafe(no_mangle)]
        pub extern "C" fn $name($($arg: $ty),*) $(-> $ret)? {
            core::arch::naked_asm!(
                concat!("mov ", $pc, ", qword ptr [rsp]"),
                "jmp {body}",
                body = sym $body,
            );
        }

        $(#[$doc])*
        #[cfg(not(target_arch = "x86_64"))]
        #[unsafe(no_mangle)]
        pub extern "C" fn $name($($arg: $ty),*) $(-> $ret)? {
            $body($($arg,)* 0)
        }
    )*};
}

with_return_address! {
    fn __tsan_read_range(addr: *const c_void, size: usize) => read_range_at, "rdx";
    fn __tsan_write_range(addr: *const c_void, size: usize) => write_range_at, "rdx";
}

extern "C" fn read_range_at(addr: *const c_void, size: usize, pc: u64) {
    reported_range(addr, size, false, pc);
}

extern "C" fn write_range_at(addr: *const c_void, size: usize, pc: u64) {
    reported_range(addr, size, true, pc);
}

#[unsafe(no_mangle)]
pub extern "C" fn __tsan_read_range_pc(addr: *const c_void, size: usize, pc: *const c_void) {
    reported_range(addr, size, false, address(pc));
}

#[unsafe(no_mangle)]
pub extern "C" fn __tsan_write_range_pc(addr: *const c_void, size: usize, pc: *const c_void) {
    reported_range(addr, size, true, address(pc));
}

with_return_address! {
    /// The memory intrinsics as newer clang releases call them: their TSan pass turns `memcpy`,
    /// `memmove` and `memset` (a struct copy, an explicit call) into calls to these, which
    /// compiler-rt's runtime defines (clang 14 called the C library's, which TSan intercepts, and
    /// which epcache does not see). Each does the operation, counted as a read of the source range
    /// and a write of the destination range; without them such a program did not even link.
    /// `epcache cc` also renames every object's calls to the library's functions to these, so a
    /// copy the compiler reported as ranges just before is not counted twice ([`just_reported`]).
    fn __tsan_memcpy(dst: *mut c_void, src: *const c_void, size: usize) -> *mut c_void
        => memcpy_at, "rcx";
    fn __tsan_memmove(dst: *mut c_void, src: *const c_void, size: usize) -> *mut c_void
        => memmove_at, "rcx";
    fn __tsan_memset(dst: *mut c_void, byte: c_int, size: usize) -> *mut c_void
        => memset_at, "rcx";
    /// `_FORTIFY_SOURCE`'s checked `memcpy`, which gcc calls when it knows the destination's
    /// size but not the copy's (Ubuntu's gcc fortifies by default at -O2), renamed to this by
    /// `epcache cc` like the plain one: counted, then the C library's checked function, which
    /// still ends the program on an overflow.
    fn epcache_memcpy_chk(dst: *mut c_void, src: *const c_void, size: usize, dst_len: usize)
        -> *mut c_void => memcpy_chk_at, "r8";
    /// `_FORTIFY_SOURCE`'s checked `memmove` (see [`epcache_memcpy_chk`]).
    fn epcache_memmove_chk(dst: *mut c_void, src: *const c_void, size: usize, dst_len: usize)
        -> *mut c_void => memmove_chk_at, "r8";
    /// `_FORTIFY_SOURCE`'s checked `memset` (see [`epcache_memcpy_chk`]).
    fn epcache_memset_chk(dst: *mut c_void, byte: c_int, size: usize, dst_len: usize)
        -> *mut c_void => memset_chk_at, "r8";
}

extern "C" fn memcpy_at(dst: *mut c_void, src: *const c_void, size: usize, pc: u64) -> *mut c_void {
    count_copy(dst, src, size, pc);
    // SAFETY: the arguments are those of the program's own `memcpy`, whose contract (valid,
    // non-overlapping ranges of `size` bytes) the caller keeps.
    unsafe { libc::memcpy(dst, src, size) }
}

extern "C" fn memmove_at(
    dst: *mut c_void,
    src: *const c_void,
    size: usize,
    pc: u64,
) -> *mut c_void {
    count_copy(dst, src, size, pc);
    // SAFETY: the arguments are those of the program's own `memmove` (valid ranges of `size`
    // bytes, which may overlap).
    unsafe { libc::memmove(dst, src, size) }
}

extern "C" fn memset_at(dst: *mut c_void, byte: c_int, size: usize, pc: u64) -> *mut c_void {
    count_set(dst, size, pc);
    // SAFETY: the arguments are those of the program's own `memset` (a valid range of `size`
    // bytes).
    unsafe { libc::memset(dst, byte, size) }
}

unsafe extern "C" {
    fn __memcpy_chk(
        dst: *mut c_void,
        src: *const c_void,
        size: usize,
        dst_len: usize,
    ) -> *mut c_void;
    fn __memmove_chk(
        dst: *mut c_void,
        src: *const c_void,
        size: usize,
        dst_len: usize,
    ) -> *mut c_void;
    fn __memset_chk(dst: *mut c_void, byte: c_int, size: usize, dst_len: usize) -> *mut c_void;
}

extern "C" fn memcpy_chk_at(
    dst: *mut c_void,
    src: *const c_void,
    size: usize,
    dst_len: usize,
    pc: u64,
) -> *mut c_void {
    count_copy(dst, src, size, pc);
    // SAFETY: the arguments are those of the program's own `__memcpy_chk` call, passed on.
    unsafe { __memcpy_chk(dst, src, size, dst_len) }
}

extern "C" fn memmove_chk_at(
    dst: *mut c_void,
    src: *const c_void,
    size: usize,
    dst_len: usize,
    pc: u64,
) -> *mut c_void {
    count_copy(dst, src, size, pc);
    // SAFETY: the arguments are those of the program's own `__memmove_chk` call, passed on.
    unsafe { __memmove_chk(dst, src, size, dst_len) }
}

extern "C" fn memset_chk_at(
    dst: *mut c_void,
    byte: c_int,
    size: usize,
    dst_len: usize,
    pc: u64,
) -> *mut c_void {
    count_set(dst, size, pc);
    // SAFETY: the arguments are those of the program's own `__memset_chk` call, passed on.
    unsafe { __memset_chk(dst, byte, size, dst_len) }
}

/// A copy of `size` bytes from `src` to `dst` at code address `pc`: a read of the source and a
/// write of the destination, unless the compiler reported exactly those ranges just before.
fn count_copy(dst: *const c_void, src: *const c_void, size: usize, pc: u64) {
    if !just_reported(&[(address(dst), size, true), (address(src), size, false)]) {
        range(src, size, false, pc);
        range(dst, size, true, pc);
    }
}

/// A fill of `size` bytes at `dst` at code address `pc`, unless the compiler reported that
/// range just before.
fn count_set(dst: *const c_void, size: usize, pc: u64) {
    if !just_reported(&[(address(dst), size, true)]) {
        range(dst, size, true, pc);
    }
}

/// A C++ object's vtable pointer being set: a pointer-sized store.
#[unsafe(no_mangle)]
pub extern "C" fn __tsan_vptr_update(vptr: *const c_void, _new_value: *const c_void) {
    access::write(address(vptr), 8);
}

/// A C++ object's vtable pointer being read: a pointer-sized load.
#[unsafe(no_mangle)]
pub extern "C" fn __tsan_vptr_read(vptr: *const c_void) {
    access::read(address(vptr), 8);
}

/// Race-detector annotations (happens-before hints): nothing to simulate.
#[unsafe(no_mangle)]
pub extern "C" fn __tsan_acquire(_addr: *const c_void) {}

/// Race-detector annotations (happens-before hints): nothing to simulate.
#[unsafe(no_mangle)]
pub extern "C" fn __tsan_release(_addr: *const c_void) {}

/// Race-detector control: nothing to simulate.
#[unsafe(no_mangle)]
pub extern "C" fn __tsan_ignore_thread_begin() {}

/// Race-detector control: nothing to simulate.
#[unsafe(no_mangle)]
pub extern "C" fn __tsan_ignore_thread_end() {}

/// The C11 memory order of a TSan atomic call (0 relaxed, 1 consume, 2 acquire, 3 release,
/// 4 acq_rel, 5 seq_cst); gcc may set flag bits above the low 16 (HLE), which do not order.
fn ordering(memory_order: c_int) -> Ordering {
    match memory_order & 0xffff {
        0 => Ordering::Relaxed,
        1 | 2 => Ordering::Acquire,
        3 => Ordering::Release,
        4 => Ordering::AcqRel,
        _ => Ordering::SeqCst,
    }
}

/// An order valid for a load: release parts are meaningless there, so they become acquire.
fn load_ordering(memory_order: c_int) -> Ordering {
    match ordering(memory_order) {
        Ordering::Release | Ordering::AcqRel => Ordering::Acquire,
        other => other,
    }
}

/// An order valid for a store: acquire parts become the stronger seq_cst.
fn store_ordering(memory_order: c_int) -> Ordering {
    match ordering(memory_order) {
        Ordering::Acquire | Ordering::AcqRel => Ordering::SeqCst,
        other => other,
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn __tsan_atomic_thread_fence(memory_order: c_int) {
    match ordering(memory_order) {
        Ordering::Relaxed => {}
        order => fence(order),
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn __tsan_atomic_signal_fence(memory_order: c_int) {
    match ordering(memory_order) {
        Ordering::Relaxed => {}
        order => compiler_fence(order),
    }
}

/// A read-modify-write touches its location as a load then a store, as the simulator counts a
/// modify natively.
fn read_modify_write(addr: u64, size: u32) {
    access::read(addr, size);
    access::write(addr, size);
}

macro_rules! atomic_hooks {
    ($int:ty, $atomic:ty, $size:expr,
     $load:ident, $store:ident, $exchange:ident,
     $add:ident, $sub:ident, $and:ident, $or:ident, $xor:ident, $nand:ident,
     $cas_strong:ident, $cas_weak:ident, $cas_val:ident) => {
        #[unsafe(no_mangle)]
        pub extern "C" fn $load(a: *const $int, mo: c_int) -> $int {
            access::read(address(a.cast()), $size);
            // SAFETY: the compiler passes the address of a live, aligned atomic object of this
            // width, which all other threads also access atomically (C11 atomics).
            let atomic = unsafe { <$atomic>::from_ptr(a.cast_mut()) };
            atomic.load(load_ordering(mo))
        }

        #[unsafe(no_mangle)]
        pub extern "C" fn $store(a: *mut $int, value: $int, mo: c_int) {
            access::write(address(a.cast()), $size);
            // SAFETY: as in the load above.
            let atomic = unsafe { <$atomic>::from_ptr(a) };
            atomic.store(value, store_ordering(mo));
        }

        atomic_hooks!(@rmw $int, $atomic, $size, $exchange, swap);
        atomic_hooks!(@rmw $int, $atomic, $size, $add, fetch_add);
        atomic_hooks!(@rmw $int, $atomic, $size, $sub, fetch_sub);
        atomic_hooks!(@rmw $int, $atomic, $size, $and, fetch_and);
        atomic_hooks!(@rmw $int, $atomic, $size, $or, fetch_or);
        atomic_hooks!(@rmw $int, $atomic, $size, $xor, fetch_xor);
        atomic_hooks!(@rmw $int, $atomic, $size, $nand, fetch_nand);

        /// On failure the current value is written to `*expected`; returns 1 on success.
        #[unsafe(no_mangle)]
        pub extern "C" fn $cas_strong(
            a: *mut $int,
            expected: *mut $int,
            desired: $int,
            mo: c_int,
            failure_mo: c_int,
        ) -> c_int {
            read_modify_write(address(a.cast()), $size);
            // SAFETY: as in the load above; `expected` points to the caller's own (non-atomic)
            // expected value, which only this thread touches during the call.
            let (atomic, expected) = unsafe { (<$atomic>::from_ptr(a), &mut *expected) };
            match atomic.compare_exchange(*expected, desired, ordering(mo), load_ordering(failure_mo)) {
                Ok(_) => 1,
                Err(current) => {
                    *expected = current;
                    0
                }
            }
        }

        /// A weak compare-exchange may fail spuriously; the strong one is a valid implementation.
        #[unsafe(no_mangle)]
        pub extern "C" fn $cas_weak(
            a: *mut $int,
            expected: *mut $int,
            desired: $int,
            mo: c_int,
            failure_mo: c_int,
        ) -> c_int {
            $cas_strong(a, expected, desired, mo, failure_mo)
        }

        /// Returns the value found, which equals `expected` when the exchange happened.
        #[unsafe(no_mangle)]
        pub extern "C" fn $cas_val(
            a: *mut $int,
            expected: $int,
            desired: $int,
            mo: c_int,
            failure_mo: c_int,
        ) -> $int {
            read_modify_write(address(a.cast()), $size);
            // SAFETY: as in the load above.
            let atomic = unsafe { <$atomic>::from_ptr(a) };
            match atomic.compare_exchange(expected, desired, ordering(mo), load_ordering(failure_mo)) {
                Ok(found) | Err(found) => found,
            }
        }
    };
    (@rmw $int:ty, $atomic:ty, $size:expr, $name:ident, $method:ident) => {
        #[unsafe(no_mangle)]
        pub extern "C" fn $name(a: *mut $int, value: $int, mo: c_int) -> $int {
            read_modify_write(address(a.cast()), $size);
            // SAFETY: the compiler passes the address of a live, aligned atomic object of this
            // width, which all other threads also access atomically (C11 atomics).
            let atomic = unsafe { <$atomic>::from_ptr(a) };
            atomic.$method(value, ordering(mo))
        }
    };
}

atomic_hooks!(
    i8,
    AtomicI8,
    1,
    __tsan_atomic8_load,
    __tsan_atomic8_store,
    __tsan_atomic8_exchange,
    __tsan_atomic8_fetch_add,
    __tsan_atomic8_fetch_sub,
    __tsan_atomic8_fetch_and,
    __tsan_atomic8_fetch_or,
    __tsan_atomic8_fetch_xor,
    __tsan_atomic8_fetch_nand,
    __tsan_atomic8_compare_exchange_strong,
    __tsan_atomic8_compare_exchange_weak,
    __tsan_atomic8_compare_exchange_val
);
atomic_hooks!(
    i16,
    AtomicI16,
    2,
    __tsan_atomic16_load,
    __tsan_atomic16_store,
    __tsan_atomic16_exchange,
    __tsan_atomic16_fetch_add,
    __tsan_atomic16_fetch_sub,
    __tsan_atomic16_fetch_and,
    __tsan_atomic16_fetch_or,
    __tsan_atomic16_fetch_xor,
    __tsan_atomic16_fetch_nand,
    __tsan_atomic16_compare_exchange_strong,
    __tsan_atomic16_compare_exchange_weak,
    __tsan_atomic16_compare_exchange_val
);
atomic_hooks!(
    i32,
    AtomicI32,
    4,
    __tsan_atomic32_load,
    __tsan_atomic32_store,
    __tsan_atomic32_exchange,
    __tsan_atomic32_fetch_add,
    __tsan_atomic32_fetch_sub,
    __tsan_atomic32_fetch_and,
    __tsan_atomic32_fetch_or,
    __tsan_atomic32_fetch_xor,
    __tsan_atomic32_fetch_nand,
    __tsan_atomic32_compare_exchange_strong,
    __tsan_atomic32_compare_exchange_weak,
    __tsan_atomic32_compare_exchange_val
);
atomic_hooks!(
    i64,
    AtomicI64,
    8,
    __tsan_atomic64_load,
    __tsan_atomic64_store,
    __tsan_atomic64_exchange,
    __tsan_atomic64_fetch_add,
    __tsan_atomic64_fetch_sub,
    __tsan_atomic64_fetch_and,
    __tsan_atomic64_fetch_or,
    __tsan_atomic64_fetch_xor,
    __tsan_atomic64_fetch_nand,
    __tsan_atomic64_compare_exchange_strong,
    __tsan_atomic64_compare_exchange_weak,
    __tsan_atomic64_compare_exchange_val
);

/// Stripes for 128-bit atomics; two objects share a stripe only by address hash, which costs
/// contention, never correctness.
static WIDE_STRIPES: [Mutex<()>; 64] = [const { Mutex::new(()) }; 64];

/// Runs `op` on the 128-bit object at `a` under its stripe's lock, with a SeqCst fence on each
/// side when seq_cst is asked for (the lock alone gives acquire on entry and release on exit).
fn with_wide<R>(a: *mut i128, mo: c_int, op: impl FnOnce(*mut i128) -> R) -> R {
    let stripe = &WIDE_STRIPES[(a.addr() >> 4) % WIDE_STRIPES.len()];
    let seq_cst = ordering(mo) == Ordering::SeqCst;
    if seq_cst {
        fence(Ordering::SeqCst);
    }
    let result = {
        // A poisoned stripe cannot hold a half-done operation: `op` never panics.
        let _guard = stripe.lock().unwrap_or_else(|e| e.into_inner());
        op(a)
    };
    if seq_cst {
        fence(Ordering::SeqCst);
    }
    result
}

fn wide_load(a: *mut i128) -> i128 {
    // SAFETY: `a` is a live, aligned 128-bit atomic object; every atomic access to it from
    // instrumented code holds the same stripe lock, so this read races with none of them.
    unsafe { a.read_volatile() }
}

fn wide_store(a: *mut i128, value: i128) {
    // SAFETY: as in `wide_load`; the stripe lock makes this the only access at this moment.
    unsafe { a.write_volatile(value) }
}

#[unsafe(no_mangle)]
pub extern "C" fn __tsan_atomic128_load(a: *const i128, mo: c_int) -> i128 {
    access::read(address(a.cast()), 16);
    with_wide(a.cast_mut(), mo, wide_load)
}

#[unsafe(no_mangle)]
pub extern "C" fn __tsan_atomic128_store(a: *mut i128, value: i128, mo: c_int) {
    access::write(address(a.cast()), 16);
    with_wide(a, mo, |a| wide_store(a, value));
}

macro_rules! wide_rmw {
    ($($name:ident, $combine:expr;)*) => {$(
        #[unsafe(no_mangle)]
        pub extern "C" fn $name(a: *mut i128, value: i128, mo: c_int) -> i128 {
            read_modify_write(address(a.cast()), 16);
            let combine: fn(i128, i128) -> i128 = $combine;
            with_wide(a, mo, |a| {
                let old = wide_load(a);
                wide_store(a, combine(old, value));
                old
            })
        }
    )*};
}

wide_rmw! {
    __tsan_atomic128_exchange, |_, v| v;
    __tsan_atomic128_fetch_add, i128::wrapping_add;
    __tsan_atomic128_fetch_sub, i128::wrapping_sub;
    __tsan_atomic128_fetch_and, |old, v| old & v;
    __tsan_atomic128_fetch_or, |old, v| old | v;
    __tsan_atomic128_fetch_xor, |old, v| old ^ v;
    __tsan_atomic128_fetch_nand, |old, v| !(old & v);
}

/// Returns the value found, which equals `expected` when the exchange happened.
#[unsafe(no_mangle)]
pub extern "C" fn __tsan_atomic128_compare_exchange_val(
    a: *mut i128,
    expected: i128,
    desired: i128,
    mo: c_int,
    _failure_mo: c_int,
) -> i128 {
    read_modify_write(address(a.cast()), 16);
    with_wide(a, mo, |a| {
        let found = wide_load(a);
        if found == expected {
            wide_store(a, desired);
        }
        found
    })
}

/// On failure the current value is written to `*expected`; returns 1 on success.
#[unsafe(no_mangle)]
pub extern "C" fn __tsan_atomic128_compare_exchange_strong(
    a: *mut i128,
    expected: *mut i128,
    desired: i128,
    mo: c_int,
    failure_mo: c_int,
) -> c_int {
    // SAFETY: `expected` points to the caller's own expected value, untouched by other threads
    // during the call.
    let expected = unsafe { &mut *expected };
    let found = __tsan_atomic128_compare_exchange_val(a, *expected, desired, mo, failure_mo);
    if found == *expected {
        1
    } else {
        *expected = found;
        0
    }
}

/// A weak compare-exchange may fail spuriously; the strong one is a valid implementation.
#[unsafe(no_mangle)]
pub extern "C" fn __tsan_atomic128_compare_exchange_weak(
    a: *mut i128,
    expected: *mut i128,
    desired: i128,
    mo: c_int,
    failure_mo: c_int,
) -> c_int {
    __tsan_atomic128_compare_exchange_strong(a, expected, desired, mo, failure_mo)
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// Code-like bytes in the test binary's data, within a `rel32` of its code.
    static CODE: Mutex<[u8; 16]> = Mutex::new([0x90; 16]);

    /// Whether `called_directly` takes `bytes`, placed to end at byte 10 of [`CODE`], for the
    /// instruction before a return address there.
    fn seen_as_direct_call(bytes: [u8; 5]) -> bool {
        let mut code = CODE.lock().unwrap();
        code[5..10].copy_from_slice(&bytes);
        called_directly(code.as_ptr() as u64 + 10)
    }

    /// `call rel32` ending at byte 10 of [`CODE`], to `target`.
    fn call_to(target: u64) -> [u8; 5] {
        let end = CODE.lock().unwrap().as_ptr() as u64 + 10;
        let offset = i32::try_from(target.wrapping_sub(end) as i64).expect("within a rel32");
        let mut bytes = [0xE8, 0, 0, 0, 0];
        bytes[1..].copy_from_slice(&offset.to_le_bytes());
        bytes
    }

    #[test]
    fn only_a_direct_call_to_the_exit_hook_is_taken_for_one() {
        let exit: extern "C" fn() = __tsan_func_exit;
        let exit = exit as usize as u64;
        assert!(seen_as_direct_call(call_to(exit)));
        // A call to anything else: the tail-jumped exit's return address follows the caller's
        // call of the function that jumped.
        assert!(!seen_as_direct_call(call_to(exit + 16)));
        // The last five bytes of `call *disp32(%rip)` (`ff 15 disp32`, -fno-plt): not taken.
        let mut indirect = call_to(exit);
        indirect[0] = 0x15;
        assert!(!seen_as_direct_call(indirect));
    }
}
