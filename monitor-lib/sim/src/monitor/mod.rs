//! The simulated associative counter array (static counts and dynamic histograms) and its ePAPI-like interface.

mod counter_array;
mod epapi;
mod event;

pub use counter_array::{
    CounterArray, CounterArrayConfig, Histogram, HistogramId, MAX_BUCKETS, MonitorError,
    SpillStats, StaticId,
};
pub use epapi::{EpapiError, EventIndex, EventSet, HistogramIndex};
pub use event::{Event, EventError, UnknownEvent};
