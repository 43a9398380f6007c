//! The simulated cache hierarchy: levels, replacement and write policies, presets and the spec
//! syntax; and a machine of cores sharing some levels, kept coherent (`machine.rs`).

mod coherence;
mod core_map;
mod hierarchy;
mod level;
mod machine;
mod outcome;
mod set_shards;
mod spec;
pub(crate) mod two_level;

pub use coherence::MAX_CORES;
pub use core_map::{CORES_ENV, CoreMap, CoreMapError};
pub use hierarchy::Hierarchy;
pub(crate) use hierarchy::MissStep;
pub(crate) use level::RunEnd;
pub use level::{CacheLevel, Geometry, MAX_HIERARCHY_STATE_BYTES, Probe, Victim};
pub use machine::{
    COHERENCE_BITS, COHERENCE_MISS, CoherenceStats, CoreOutcome, FALSE_SHARING_MISS, INVALIDATION,
    Machine, RESULT_BITS, TRUE_SHARING_MISS,
};
pub use outcome::{AccessOutcome, LevelResult, LevelStats, LineEvent, LineEventKind, MAX_LEVELS};
pub use set_shards::{MAX_SHARDS, Op, SetShards, ShardError, simulate_across};
pub use spec::{
    CACHE_WARNED_ENV, HierarchySpec, LevelSpec, PRESETS, Sharing, host_spec_from_sysfs, parse_size,
};
pub(crate) use two_level::{Watch, outcome as two_level_outcome};

/// Whether an access reads or writes memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum AccessKind {
    Read,
    Write,
}

/// Which line a set gives up when it must make room.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Replacement {
    /// True least-recently-used, as Cachegrind simulates.
    Lru,
    /// Binary-tree pseudo-LRU, as most real L1 and L2 caches implement (power-of-two ways only).
    TreePlru,
    /// Uniformly random victim from a seeded xorshift generator, so runs are reproducible.
    Random { seed: u64 },
}

/// What a level does with writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WritePolicy {
    /// Write-allocate, write-back: a write miss fills the line, which becomes dirty and is
    /// written to the next level only when evicted.
    WriteBack,
    /// No-write-allocate, write-through: every write goes on to the next level; a write miss
    /// does not fill the line.
    WriteThrough,
}

/// Everything that can be wrong with a cache description.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CacheError {
    #[error("cache of {size} bytes, {assoc}-way, {line_size}-byte lines is not possible: {why}")]
    Geometry {
        size: u64,
        assoc: u32,
        line_size: u32,
        why: String,
    },
    #[error("cache spec `{spec}`: {why}")]
    Spec { spec: String, why: String },
    #[error("reading the host's caches from {path}: {why}")]
    Host { path: String, why: String },
}
