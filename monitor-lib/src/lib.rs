//! epcache's monitor library: the simulated cache hierarchy, the associative counter array, the
//! seed papers' analyses and trace replay, all fed by the access stream of a program.
//!
//! Start with [`cache::Hierarchy`] (what one access does to the caches), then
//! [`monitor`] (the simulated hardware monitor) and [`analysis`]; [`simulator::Simulator`] ties
//! them together.

#![deny(unsafe_code)]

pub mod analysis;
pub mod cache;
pub mod capture;
pub mod monitor;
pub mod ranges;
pub mod replay;
pub mod shm;
pub mod simulator;
pub mod symbols;
pub mod trace;

#[cfg(test)]
mod test_rng;
