//! Unsafe code: the runtime's entry points, signal handlers, wraps and thread block, in the
//! `capture/*_abi.rs` modules and `capture/thread_block.rs`, and its own heap
//! (`runtime_heap.rs`), only.
//!
//! epcache's in-target runtime, linked into the monitored program: `epcache cc` links its
//! staticlib (`libepcache_monitor.a`) into C, C++ and Fortran programs, and a Rust program links
//! this rlib. It captures the program's loads and stores through the compiler's hooks, feeds
//! them to per-thread simulators ([`epcache_sim`]), serves tools' requests through its segment
//! (the MCC side of [`epcache_shm`]), names regions and data structures from the program's
//! DWARF ([`epcache_symbols`]), and writes the standalone report at exit.
//!
//! Layout:
//! - [`capture`]: the capture itself, and for Rust programs its explicit API (`read`, `write`,
//!   `register_slice`, `RegionGuard`, `disable_all`, ...); its `*_abi.rs` modules are the
//!   symbols compiled code calls (`__tsan_*`, `__sanitizer_cov_*`, `epcache_*`);
//! - [`region!`]: a marker region around a Rust block;
//! - `include/`: `epcache.h` and the `epcache` Fortran module, the same C ABI for C, C++ and
//!   Fortran (crate `epcache-include`, which `epcache cc` installs from).
//!
//! Architecture Invariant: the runtime is linked into executables only, never into a shared
//! object (its hooks' state and region stack are local-exec thread-local storage), and no other
//! epcache crate depends on it: the daemon and the tools use the simulator, the protocol and the
//! DWARF reader directly. It re-exports none of them.

#![deny(unsafe_code)]

pub mod capture;
#[allow(unsafe_code)]
mod runtime_heap;

/// Everything Rust code in the runtime's process allocates, the runtime's and a Rust program's,
/// comes from a heap of its own, so a C, C++ or Fortran program's `malloc` places its arrays
/// as it does without the runtime (`runtime_heap.rs`).
#[global_allocator]
static RUNTIME_HEAP: runtime_heap::RuntimeHeap = runtime_heap::RuntimeHeap;

#[cfg(test)]
use epcache_test_support::rng as test_rng;
