//! What the epcache crates' tests share, in one place instead of a copy per crate: every crate
//! takes these from here as a dev-dependency, and none includes another crate's test files by
//! path.
//!
//! Layout:
//! - [`rng`]: the deterministic pseudo-random streams of the unit and property tests;
//! - [`tools`]: whether gcc, Valgrind, OpenSSL ... are here: a missing one skips loudly, or
//!   fails under CI (`CI=true`);
//! - [`cachegrind`]: real Cachegrind and lackey runs and their counts, and the cache shapes
//!   written for both Cachegrind and epcache;
//! - [`artifacts`]: the runtime's staticlib and rlib cargo built for this test run;
//! - [`captured`]: `epcache cc` builds, and captured runs with the standalone report;
//! - [`roles`]: a test binary run again as a child process playing one test's part;
//! - `synthetic` (feature `synthetic`): a monitored program built on the MCC directly, with
//!   counts worked out by hand;
//! - `processes` (feature `daemon`): the test binary re-run as that program, and a daemon on
//!   an isolated runtime directory;
//! - `client` (feature `client`): the same for tests that drive it through `epcache-client`.
//!
//! Architecture Invariant: nothing here is used outside tests and benches (`publish = false`);
//! the features keep a crate's tests from building the daemon or the client unless they use
//! them.

#![forbid(unsafe_code)]

pub mod artifacts;
pub mod cachegrind;
pub mod captured;
#[cfg(feature = "client")]
pub mod client;
#[cfg(feature = "daemon")]
pub mod processes;
pub mod rng;
pub mod roles;
#[cfg(feature = "synthetic")]
pub mod synthetic;
pub mod tools;
