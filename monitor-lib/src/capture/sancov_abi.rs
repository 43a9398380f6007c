//! The SanitizerCoverage callbacks that rustc (`-Cpasses=sancov-module` with
//! `-sanitizer-coverage-trace-loads`/`-trace-stores`) and clang (`-fsanitize-coverage=
//! trace-loads,trace-stores`) emit: each load and store of instrumented code calls one of them
//! with its address.
//!
//! The coverage-guard and counter callbacks are defined as no-ops so code built with other
//! coverage options still links; epcache measures data accesses, not coverage.

// The entry points are reached by symbol name from instrumented code, not by Rust path.
#![allow(unreachable_pub)]

use std::ffi::c_void;

use super::access;

fn address(addr: *const c_void) -> u64 {
    addr.addr() as u64
}

macro_rules! sancov_hooks {
    ($($load:ident, $store:ident, $size:expr;)*) => {$(
        #[unsafe(no_mangle)]
        pub extern "C" fn $load(addr: *const c_void) {
            access::read(address(addr), $size);
        }
        #[unsafe(no_mangle)]
        pub extern "C" fn $store(addr: *const c_void) {
            access::write(address(addr), $size);
        }
    )*};
}

sancov_hooks! {
    __sanitizer_cov_load1, __sanitizer_cov_store1, 1;
    __sanitizer_cov_load2, __sanitizer_cov_store2, 2;
    __sanitizer_cov_load4, __sanitizer_cov_store4, 4;
    __sanitizer_cov_load8, __sanitizer_cov_store8, 8;
    __sanitizer_cov_load16, __sanitizer_cov_store16, 16;
}

#[unsafe(no_mangle)]
pub extern "C" fn __sanitizer_cov_trace_pc_guard(_guard: *mut u32) {}

#[unsafe(no_mangle)]
pub extern "C" fn __sanitizer_cov_trace_pc_guard_init(_start: *mut u32, _stop: *mut u32) {}

#[unsafe(no_mangle)]
pub extern "C" fn __sanitizer_cov_8bit_counters_init(_start: *mut u8, _stop: *mut u8) {}

#[unsafe(no_mangle)]
pub extern "C" fn __sanitizer_cov_bool_flag_init(_start: *mut bool, _stop: *mut bool) {}

#[unsafe(no_mangle)]
pub extern "C" fn __sanitizer_cov_pcs_init(_start: *const usize, _stop: *const usize) {}
