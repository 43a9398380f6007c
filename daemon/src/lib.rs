//! The daemon's library: how the monitor's state is presented to tools as MRI messages.
//!
//! The gRPC service and the `epcached` binary are built on this in a later step; until then the
//! crate holds only the conversions, which are real and tested.

#![forbid(unsafe_code)]

pub mod model;
