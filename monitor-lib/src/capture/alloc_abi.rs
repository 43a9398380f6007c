//! Heap blocks named by their allocation site (the DTrack approach), so an unmodified C or
//! Fortran program still has names like `main.c:42` for its heap arrays.
//!
//! `epcache cc` links with `--wrap=malloc,calloc,realloc,free`: the program's calls land in the
//! `__wrap_*` functions here, which allocate through glibc's `__libc_*` entry points (always
//! defined, so a program linked without the wraps still links) and tell the runtime about blocks
//! of at least [`MIN_TRACKED_BYTES`]. The call site is the return address, handed over by a
//! naked trampoline on x86_64 (elsewhere blocks are not named).

// The entry points are reached by symbol name from the linker's wrapping, not by Rust path.
#![allow(unreachable_pub)]

use std::ffi::c_void;

use super::heap;

/// Smaller blocks are not tracked: they are rarely the arrays a user asks about, and every one
/// would be a table entry.
pub const MIN_TRACKED_BYTES: usize = 4096;

unsafe extern "C" {
    fn __libc_malloc(size: usize) -> *mut c_void;
    fn __libc_calloc(count: usize, size: usize) -> *mut c_void;
    fn __libc_realloc(ptr: *mut c_void, size: usize) -> *mut c_void;
    fn __libc_free(ptr: *mut c_void);
    fn malloc_usable_size(ptr: *mut c_void) -> usize;
}

// The trampolines hand the return address (at [rsp] on entry) to the implementation as the
// argument after the caller's: rsi after one argument, rdx after two. Tail jumps keep the stack
// as the caller left it, so the implementation returns straight to the program.

#[cfg(target_arch = "x86_64")]
#[unsafe(naked)]
#[unsafe(no_mangle)]
pub extern "C" fn __wrap_malloc(_size: usize) -> *mut c_void {
    core::arch::naked_asm!("mov rsi, qword ptr [rsp]", "jmp {0}", sym malloc_at);
}

#[cfg(target_arch = "x86_64")]
#[unsafe(naked)]
#[unsafe(no_mangle)]
pub extern "C" fn __wrap_calloc(_count: usize, _size: usize) -> *mut c_void {
    core::arch::naked_asm!("mov rdx, qword ptr [rsp]", "jmp {0}", sym calloc_at);
}

#[cfg(target_arch = "x86_64")]
#[unsafe(naked)]
#[unsafe(no_mangle)]
pub extern "C" fn __wrap_realloc(_ptr: *mut c_void, _size: usize) -> *mut c_void {
    core::arch::naked_asm!("mov rdx, qword ptr [rsp]", "jmp {0}", sym realloc_at);
}

#[cfg(not(target_arch = "x86_64"))]
#[unsafe(no_mangle)]
pub extern "C" fn __wrap_malloc(size: usize) -> *mut c_void {
    malloc_at(size, 0)
}

#[cfg(not(target_arch = "x86_64"))]
#[unsafe(no_mangle)]
pub extern "C" fn __wrap_calloc(count: usize, size: usize) -> *mut c_void {
    calloc_at(count, size, 0)
}

#[cfg(not(target_arch = "x86_64"))]
#[unsafe(no_mangle)]
pub extern "C" fn __wrap_realloc(ptr: *mut c_void, size: usize) -> *mut c_void {
    realloc_at(ptr, size, 0)
}

extern "C" fn malloc_at(size: usize, return_pc: u64) -> *mut c_void {
    // SAFETY: glibc's allocator entry point, called with the caller's own argument.
    let block = unsafe { __libc_malloc(size) };
    if size >= MIN_TRACKED_BYTES && !block.is_null() {
        heap::allocated(block.addr() as u64, size as u64, return_pc);
    }
    block
}

extern "C" fn calloc_at(count: usize, size: usize, return_pc: u64) -> *mut c_void {
    // SAFETY: as for `malloc_at`; calloc checks the product for overflow itself.
    let block = unsafe { __libc_calloc(count, size) };
    let bytes = count.saturating_mul(size);
    if bytes >= MIN_TRACKED_BYTES && !block.is_null() {
        heap::allocated(block.addr() as u64, bytes as u64, return_pc);
    }
    block
}

extern "C" fn realloc_at(ptr: *mut c_void, size: usize, return_pc: u64) -> *mut c_void {
    forget(ptr);
    // SAFETY: `ptr` is null or a live block of this allocator, as the caller's contract with
    // realloc requires; it is passed on unchanged.
    let block = unsafe { __libc_realloc(ptr, size) };
    if size >= MIN_TRACKED_BYTES && !block.is_null() {
        heap::allocated(block.addr() as u64, size as u64, return_pc);
    }
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
    unsafe { __libc_free(ptr) }
}
