//! Kernels the example programs in `src/bin` run, kept in the library so tests can check what they measure.

#![forbid(unsafe_code)]

pub mod gauss;
pub mod metric_table;
