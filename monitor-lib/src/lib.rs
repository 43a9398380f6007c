//! epcache's monitor library: the simulated cache hierarchy, the associative counter array and
//! the seed papers' analyses, fed by the access stream of a program.
//!
//! Start with [`capture`].

#![deny(unsafe_code)]

pub mod capture;

// The runtime's own names for the simulator's modules, so its code says `crate::cache::...`;
// crate-private: the runtime re-exports none of them.
pub(crate) use epcache_shm as shm;
pub(crate) use epcache_sim::{analysis, monitor, ranges};
pub(crate) use epcache_symbols as symbols;

pub(crate) mod cache {
    //! The simulator's cache module, with the staged-records interface of its capture path.
    pub(crate) use epcache_sim::cache::*;
    pub(crate) use epcache_sim::simulator::capture_path::{Step, Steps};
}

pub(crate) mod simulator {
    //! The simulator, with the fast paths only the runtime drives.
    pub(crate) use epcache_sim::simulator::capture_path::CaptureFastPath;
    pub(crate) use epcache_sim::simulator::{Simulator, SimulatorError};
}

#[cfg(test)]
use epcache_test_support::rng as test_rng;
