//! The Monitor Control Component's System V segment and both sides of its protocol: the target
//! (`target`, the MCC) creates and publishes it, a tool (`tool`, the paper's RIP, used by the
//! daemon) attaches, validates and drives it.

#[allow(unsafe_code)]
mod futex;
#[allow(unsafe_code)]
mod sysv;

pub mod config_table;
pub mod discovery;
pub mod layout;
pub mod process;
pub mod target;
pub mod tool;

pub use futex::{WaitOutcome, wait, wake};
pub use sysv::{
    Access, HeapImage, SEGMENT_MODE, Segment, SegmentError, SegmentStat, View, ViewError,
    ViewProblem, current_uid,
};
