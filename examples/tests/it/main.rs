//! epcache-examples' integration tests, one binary: the seed studies reproduced against
//! Cachegrind and the papers (`gauss.rs`, `gauss_explicit.rs`, `metric_mm.rs`, `metric_adi.rs`,
//! `cache_reuse.rs`, `phases.rs`, `online.rs`, and their heap variants `gauss_heap.rs`,
//! `metric_adi_heap.rs`, `heap_tools.rs`), METRIC's per-reference tables from partial traces
//! (`metric_partial.rs`), threads as cores (`threads.rs`), captured Rust (`rust_capture.rs`), and the
//! repository's own rules (`repo_tidy.rs`). `support.rs` builds and runs the example programs.

mod cache_reuse;
mod gauss;
mod gauss_explicit;
mod gauss_heap;
mod heap_tools;
mod metric_adi;
mod metric_adi_heap;
mod metric_mm;
mod metric_partial;
mod online;
mod phases;
mod repo_tidy;
mod rust_capture;
mod support;
mod threads;
