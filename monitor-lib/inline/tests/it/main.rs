//! epcache-inline's integration tests: the emitter's output against the sequence as it was
//! measured (`golden.rs`), and every variant assembled and run against the model
//! (`differential.rs`).

mod differential;
mod golden;
