//! The simulated associative counter array (static counts and dynamic histograms) and its ePAPI-like interface; by-field histograms' buckets (`field_layout.rs`).

mod counter_array;
mod epapi;
mod event;
pub(crate) mod field_layout;

pub use counter_array::{
    CounterArray, CounterArrayConfig, Histogram, HistogramId, MAX_BUCKETS, MonitorError,
    SpillStats, StaticId,
};
pub use epapi::{EpapiError, EventIndex, EventSet, HistogramIndex};
pub use event::{Event, EventError, UnknownEvent};
pub use field_layout::{FieldLayout, FieldLayoutError, FieldSpan, MAX_ELEMENT_BYTES, MAX_FIELDS};
