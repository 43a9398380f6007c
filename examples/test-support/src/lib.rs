//! What the epcache crates' tests share, in one place instead of a copy per crate.
//!
//! Layout:
//! - [`rng`]: the deterministic pseudo-random streams of the unit and property tests.

#![forbid(unsafe_code)]

pub mod rng;
