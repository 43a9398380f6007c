//! Unsafe code: the System V calls and the futex system call, in `sysv.rs` and `futex.rs` only.
//!
//! epcache's shared-memory protocol: the Monitor Control Component's System V segment and both
//! sides of it. The target (`target`, the MCC, inside the runtime) creates and publishes the
//! segment; a tool (`tool`, the paper's RIP, used by the daemon) attaches, validates and drives
//! it; records in a per-user runtime directory (`discovery`) tell tools where targets are.
//!
//! Layout:
//! - [`layout`]: the versioned segment layout (header, tables, request slots, results), how
//!   entries are encoded in words, and the validation a reader runs before trusting any of it;
//! - [`config_table`]: the hash table a target probes at every region entry for its requests;
//! - [`target`]: the MCC's side: create, register, look up, pick up requests, write results,
//!   halt at boundaries;
//! - [`tool`]: the tool's side: attach, validate, request, step, release, read results;
//! - [`discovery`]: the runtime directory, its checks and the targets' record files;
//! - [`process`]: whether a process is alive and is the one a record names;
//! - [`region_names`]: how a name a user types finds regions of the region table;
//! - `sysv` and `futex`: System V segments behind a bounds-checked view of atomics, and
//!   cross-process waiting on a word of one (re-exported below).
//!
//! Architecture Invariant: only `sysv.rs` and `futex.rs` hold unsafe code; everything above them
//! sees the segment as atomics at checked, aligned offsets. Every word read from the segment or
//! the runtime directory is validated before use: a bad byte is a typed error, never a panic or
//! an endless wait.

#![deny(unsafe_code)]

#[allow(unsafe_code)]
mod futex;
#[allow(unsafe_code)]
mod sysv;

pub mod config_table;
pub mod discovery;
pub mod layout;
pub mod process;
pub mod region_names;
pub mod target;
pub mod tool;

pub use futex::{WaitOutcome, wait, wake};
pub use sysv::{
    Access, HeapImage, SEGMENT_MODE, Segment, SegmentError, SegmentStat, View, ViewError,
    ViewProblem, current_uid,
};
