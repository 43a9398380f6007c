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
//! - [`trace`]: Valgrind lackey logs, the compact `.epct` format and partial data traces;
//! - [`replay`]: a trace through a hierarchy, with Cachegrind-compatible totals;
//! - [`partial_replay`]: a partial trace through a hierarchy, with per access site and per
//!   data structure tables, evictors and miss-ratio curves.
//!
//! # Threads as cores: the exactness contract
//!
//! A [`cache::Machine`] simulates several cores: private levels per core, levels shared by
//! groups of cores or by all, and MESI among the private copies, with coherence events
//! (`PAPI_CA_INV`, `EPC_L<n>_{COHM,FSM,TSM}`). Its contract is **one global order of the
//! observed accesses**: the machine is one deterministic state machine, each access applied
//! whole (coherence first, then the walk) in the order the caller gives, so its counts are
//! exact for that interleaving, and a test that fixes the interleaving (threads taking turns
//! under barriers) gets hand-computable counts. The runtime gives it the order in which the
//! program's threads reach it, under one lock; with a machine of cores every access reaches it,
//! since the thread's repeat-hit filter is off (see below), so that order is an interleaving
//! the program really had, up to the lock's own perturbation.
//!
//! Bound-weave (zsim: private levels per thread in parallel, shared levels and coherence
//! applied at interval boundaries) was not chosen: the runtime's repeat-hit filter counts a
//! hit in the thread's own block with no call, so a line another core invalidated would stay
//! a hit there until the thread's next sync point, and a thread spinning on filter hits (a
//! counter incremented in a loop) takes no sync point at all. The error that implies is not
//! bounded by an interval: the false-sharing loop of the tests would show one coherence miss
//! per sync point rather than one per access. Exactness there costs the filter and the worker
//! pipeline while a machine of several cores runs; a single thread, and every program run
//! without one, keeps today's path.
//!
//! A machine of one core counts exactly what [`cache::Hierarchy`] counts for the same spec,
//! whatever its sharing says (property-tested), and replay always uses the hierarchy, so
//! single-threaded counts and Cachegrind replay are unchanged.
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
pub mod partial_replay;
pub mod ranges;
pub mod replay;
pub mod sharded_replay;
pub mod simulator;
pub mod trace;

#[cfg(test)]
use epcache_test_support::rng as test_rng;
