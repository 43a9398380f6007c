//! epcache's simulator: what one program's access stream does to a simulated cache hierarchy,
//! what a simulated hardware monitor counts of it, and what the seed papers' analyses make of
//! it. The in-target runtime (`epcache-monitor`), the daemon's model of a target, `epcache
//! replay` and the tools all use it; it knows nothing of processes, shared memory or DWARF.
//!
//! Start with [`cache::Hierarchy`] (what one access does to the caches), then [`monitor`] (the
//! counter array and its ePAPI-like event set) and [`analysis`]; [`simulator::Simulator`] ties
//! them together for one simulated core.
//!
//! Layout:
//! - [`cache`]: levels, replacement and write policies, presets, the `EPCACHE_CACHE` spec syntax
//!   and the hierarchy an access walks;
//! - [`monitor`]: the associative counter array (static counts and dynamic histograms), its
//!   events and the ePAPI-like event set that binds them to address ranges;
//! - [`analysis`]: reuse and spatial use, evictors, miss classes and reuse distance per data
//!   structure;
//! - [`ranges`]: named address ranges and the lookup from an address to its range and bucket;
//! - [`simulator`]: one core's hierarchy, monitor and analyses fed together, and in
//!   [`simulator::capture_path`] the paths only the in-target runtime drives;
//! - [`trace`]: Valgrind lackey logs and the compact `.epct` format;
//! - [`replay`]: a trace through a hierarchy, with Cachegrind-compatible totals.
//!
//! Architecture Invariant: no unsafe code, no `libc`, no threads, and no I/O of its own but
//! reading the host's cache description under `/sys` (the trace readers and writers take any
//! `Read` or `Write`). Everything here is deterministic for a given access stream (random
//! replacement takes a seed), which is what lets the runtime, the daemon and replay agree on
//! every count.

#![forbid(unsafe_code)]

pub mod analysis;
pub mod cache;
pub mod monitor;
pub mod ranges;
pub mod replay;
pub mod simulator;
pub mod trace;

#[cfg(test)]
use epcache_test_support::rng as test_rng;
