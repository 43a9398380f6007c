//! A Rust kernel built with SanitizerCoverage load/store tracing and linked with epcache-monitor:
//! the compiler calls `__sanitizer_cov_load4`/`__sanitizer_cov_store4` for the array's accesses.
//!
//! Built by `examples/tests/it/rust_capture.rs` (rustc directly), or in a crate with
//! `cargo rustc --bin <name> -- <the sancov flags>` (see README.md): only the final crate may be
//! instrumented, never epcache-monitor itself, whose hooks would otherwise call themselves.

use std::hint::black_box;

use epcache_monitor::capture;

const N: usize = 4096;

#[inline(never)]
fn fill(values: &mut [u32]) {
    for (i, v) in values.iter_mut().enumerate() {
        *v = i as u32;
    }
}

#[inline(never)]
fn total(values: &[u32]) -> u64 {
    values.iter().map(|&v| u64::from(v)).sum()
}

fn main() {
    let mut values = vec![0u32; N];
    // Named in reports and requests; a heap block of this size would otherwise be named by its
    // allocation site.
    capture::register_slice("values", &values);
    // Capture only the kernel: the allocation above and the printing below stay out.
    capture::enable_all();
    fill(black_box(&mut values));
    let sum = total(black_box(&values));
    capture::disable_all();
    println!("{sum}");
    // With EPCACHE_REPORT set the report is also written at exit; this prints it for the test.
    println!("{}", capture::report_from_totals().to_json());
}
