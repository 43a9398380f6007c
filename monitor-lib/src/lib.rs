//! epcache's monitor library: the simulated cache hierarchy, the associative counter array, the
//! seed papers' analyses and trace replay, all fed by the access stream of a program.
//!
//! Start with [`cache::Hierarchy`] (what one access does to the caches), then
//! [`monitor::CounterArray`] (the simulated hardware monitor) and [`Simulator`], which ties them
//! together with the analyses.

#![forbid(unsafe_code)]

pub mod cache;
pub mod monitor;
pub mod ranges;
