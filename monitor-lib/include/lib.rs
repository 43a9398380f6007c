//! The runtime's C ABI for C, C++ and Fortran programs, as `epcache cc` installs it: the C
//! header `epcache.h` (cbindgen's rendering of `monitor-lib/src/capture/c_abi.rs`, which the
//! runtime's `tests/it/c_header.rs` keeps current) and the `epcache` Fortran module binding the
//! same functions.
//!
//! The files live beside this crate's one source file, where a C build can also point `-I`.
//! They are a crate of their own so the compiler driver (`epcache-cc`) can carry their text
//! without depending on the runtime, whose rlib would otherwise be linked into the `epcache`
//! binary, and without reading another crate's folder by a relative path.
//!
//! Layout:
//! - [`C_HEADER`] and [`FORTRAN_MODULE`]: the two files' text, embedded at build time;
//! - [`dir`]: this directory, for tests that compile against the files in place.

#![forbid(unsafe_code)]

use std::path::Path;

/// `epcache.h`: region markers and array registration for C and C++.
pub const C_HEADER: &str = include_str!("epcache.h");

/// `epcache.f90`: the `epcache` module, the same functions for Fortran.
pub const FORTRAN_MODULE: &str = include_str!("epcache.f90");

/// The directory holding `epcache.h` and `epcache.f90`.
pub fn dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}
