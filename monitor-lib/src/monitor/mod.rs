//! The simulated associative counter array (static counts and dynamic histograms) and its ePAPI-like interface.

mod event;

pub use event::{Event, UnknownEvent};
