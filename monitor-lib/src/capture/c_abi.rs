//! The C ABI of the runtime for C, C++ and Fortran programs (`monitor-lib/include/epcache.h`
//! and the Fortran module `epcache` declare it): region markers and data-structure registration.
//!
//! Marker regions are keyed by their call site: `epcache_region_begin` is a naked trampoline on
//! x86_64 that hands its own return address (in the caller, just after the call) to the runtime,
//! which resolves it to a file and line through the line table once per call site.

// The entry points are reached by symbol name from C and Fortran, not by Rust path.
#![allow(unreachable_pub)]

use std::ffi::{CStr, c_char, c_void};

use super::{boundaries, region_registry, start_up};

/// Reads a C string argument; `None` for a null pointer.
///
/// # Safety
/// `name` is null or points to a NUL-terminated string that stays valid for the call.
unsafe fn label<'a>(name: *const c_char) -> Option<std::borrow::Cow<'a, str>> {
    if name.is_null() {
        return None;
    }
    // SAFETY: the caller guarantees a NUL-terminated string (the header documents it).
    Some(unsafe { CStr::from_ptr(name) }.to_string_lossy())
}

/// Begins a marker region named `name`, keyed by the source line of this call (the first call
/// from a site names the region). `name` is a NUL-terminated string read during the call only;
/// null names the region "region". Regions nest; `epcache_region_end` closes the innermost, and
/// a function that returns closes the marker regions it left open.
#[cfg(target_arch = "x86_64")]
#[unsafe(naked)]
#[unsafe(no_mangle)]
pub extern "C" fn epcache_region_begin(name: *const c_char) {
    // [rsp] is the return address into the caller: its call site keys the region. rdx is the
    // caller's stack pointer at the call, just above it.
    core::arch::naked_asm!(
        "mov rsi, qword ptr [rsp]",
        "lea rdx, [rsp + 8]",
        "jmp {begin}",
        begin = sym region_begin_at,
    );
}

/// Begins a marker region named `name`; without the trampoline the label alone keys it.
#[cfg(not(target_arch = "x86_64"))]
#[unsafe(no_mangle)]
pub extern "C" fn epcache_region_begin(name: *const c_char) {
    // No call site to key a cache by: always the general path.
    region_begin_slow(name, 0, super::region_stack::UNKNOWN_STACK);
}

extern "C" fn region_begin_at(name: *const c_char, return_pc: u64, sp: u64) {
    // Nothing armed and the site known: a push, with the call below out of line so this
    // path saves no registers.
    // Past the quiet test only: a process that never tracks (`EPCACHE_MCC=off`, no report)
    // skips the call, and the tracking one pays nothing for the check.
    if !boundaries::marker_begin_quiet(return_pc, sp) && !region_registry::never_tracking() {
        region_begin_slow(name, return_pc, sp);
    }
}

#[inline(never)]
extern "C" fn region_begin_slow(name: *const c_char, return_pc: u64, sp: u64) {
    start_up::init_process();
    boundaries::marker_begin_at(return_pc, sp, || {
        // SAFETY: `name` comes straight from the C caller, which passes a string literal or a
        // NUL-terminated buffer (the header's contract), or null; it is read during this call.
        let name = unsafe { label(name) };
        name.as_deref().unwrap_or("region").to_owned()
    });
}

/// Ends the innermost marker region begun in the same function; an unmatched end is ignored
/// (said once per thread on stderr, with the end's source line).
#[cfg(target_arch = "x86_64")]
#[unsafe(naked)]
#[unsafe(no_mangle)]
pub extern "C" fn epcache_region_end() {
    // [rsp] is the return address into the caller: an unmatched end is named by its call site.
    // rsi is the caller's stack pointer at the call, just above it.
    core::arch::naked_asm!(
        "mov rdi, qword ptr [rsp]",
        "lea rsi, [rsp + 8]",
        "jmp {end}",
        end = sym region_end_at,
    );
}

/// Ends the innermost marker region begun in the same function; without the trampoline an
/// unmatched end is said without its source line.
#[cfg(not(target_arch = "x86_64"))]
#[unsafe(no_mangle)]
pub extern "C" fn epcache_region_end() {
    boundaries::marker_end(0, super::region_stack::UNKNOWN_STACK);
}

extern "C" fn region_end_at(return_pc: u64, sp: u64) {
    boundaries::marker_end(return_pc, sp);
}

/// Registers the `bytes` bytes at `addr` as the data structure `name` (a NUL-terminated string,
/// copied), so requests and reports can name it. A later registration at the same address adds
/// another entry; call `epcache_unregister` before the memory is freed.
#[unsafe(no_mangle)]
pub extern "C" fn epcache_register(name: *const c_char, addr: *const c_void, bytes: u64) {
    start_up::init_process();
    // SAFETY: as for `region_begin_at`: a NUL-terminated string or null from the caller.
    let name = unsafe { label(name) };
    super::register_array(
        name.as_deref().unwrap_or("unnamed"),
        addr.addr() as u64,
        bytes,
    );
}

/// Forgets the data structure registered at `addr` (call it before freeing the memory).
#[unsafe(no_mangle)]
pub extern "C" fn epcache_unregister(addr: *const c_void) {
    super::unregister_array(addr.addr() as u64);
}
