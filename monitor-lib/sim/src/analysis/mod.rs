//! Per-data-structure analyses from the seed papers: reuse and spatial use, evictors, miss classes, reuse distance.
//!
//! [`Analyses`] watches one data level of a [`Hierarchy`] through the [`LineEvent`]s of each
//! access. Every analysis is off unless its [`AnalysisConfig`] flag is set, and the simulator
//! calls [`Analyses`] only when one is on, so the plain path pays nothing for them.
//!
//! Attribution: an access belongs to the range and bucket of its first byte (a straddling access
//! is one access, as the hierarchy counts it); a line belongs to the range holding its first byte,
//! or its last when a range starts inside the line. Accesses and lines of no named range count
//! towards overall totals and the evictor matrix's "(other)" row and column only.
//!
//! Reuse distance and the shadow caches of the miss classes see the level's demand references:
//! the lines of its hit, fill and bypass events, i.e. what the level is asked, not the raw
//! program stream (at the first level the two are the same). An access's distance is the
//! largest of its lines', so a miss of the fully-associative shadow is counted per access,
//! as the hierarchy counts misses. The shadows allocate on every reference: for a write-back,
//! write-allocate level (and Cachegrind's model) they are exact; under no-write-allocate a line
//! a bypassed write touched first counts as seen.

mod attribution;
mod evictors;
mod field_use;
mod line_hash;
mod lru_stack;
mod miss_class;
mod reuse;
mod reuse_distance;
#[cfg(test)]
mod tests;

use attribution::BucketIndex;
use evictors::EvictorCounts;
pub(crate) use lru_stack::LruStack;
use miss_class::MissClassifier;
use reuse::ReuseTracker;
use reuse_distance::ReuseDistances;

pub use evictors::{EvictorMatrix, OTHER_RANGE};
pub use field_use::FieldUse;
pub use miss_class::{MissClassBuckets, MissClassCounts, MissClassReport};
pub use reuse::{ReuseBuckets, ReuseReport};
pub use reuse_distance::DistanceHistogram;

use crate::cache::{AccessKind, AccessOutcome, Hierarchy, LevelResult, LineEvent, LineEventKind};
use crate::monitor::{FieldLayout, FieldLayoutError};
use crate::ranges::RangeSet;

/// Which analyses to run, and on which data level.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct AnalysisConfig {
    /// Temporal reuse and spatial use of lines until their eviction.
    pub reuse: bool,
    /// Which range's fills evicted which range's lines.
    pub evictors: bool,
    /// Compulsory, capacity and conflict misses.
    pub miss_classes: bool,
    /// Reuse-distance histograms and what they predict for other cache sizes.
    pub reuse_distance: bool,
    /// Index of the data level the analyses watch; 0 is the first data level.
    pub level: usize,
}

impl AnalysisConfig {
    /// Whether any analysis is on.
    pub fn any(&self) -> bool {
        self.reuse || self.evictors || self.miss_classes || self.reuse_distance
    }
}

/// An analysis request the hierarchy cannot answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AnalysisError {
    #[error("analyses asked for data level {level}, but the hierarchy has {depth} data levels")]
    NoSuchLevel { level: usize, depth: usize },
    #[error(
        "spatial use tracks lines of at most {max} bytes; data level {level} has {line_size}-byte lines",
        max = reuse::MAX_LINE_SIZE
    )]
    LineTooLong { level: usize, line_size: u32 },
    #[error("no range {range} to divide by field: the analyses watch {ranges} ranges")]
    NoSuchRange { range: usize, ranges: usize },
    #[error("range `{name}` cannot be divided by field: {source}")]
    Fields {
        name: String,
        source: FieldLayoutError,
    },
}

/// The analyses switched on for one run, fed one data access at a time.
#[derive(Debug, Clone)]
pub struct Analyses {
    config: AnalysisConfig,
    level_name: String,
    line_bits: u32,
    line_size: u32,
    lines: u64,
    index: BucketIndex,
    /// Numbers accesses so the reuse tracker counts an access once per line.
    access_number: u64,
    reuse: Option<ReuseTracker>,
    evictors: Option<EvictorCounts>,
    /// The infinite and fully-associative shadows, shared by miss classes and reuse distance.
    stack: Option<LruStack>,
    miss_classes: Option<MissClassifier>,
    distances: Option<ReuseDistances>,
}

impl Analyses {
    /// Sets up the analyses of `config` over `ranges` for data level `config.level` of `hierarchy`.
    pub fn new(
        config: AnalysisConfig,
        ranges: RangeSet,
        hierarchy: &Hierarchy,
    ) -> Result<Self, AnalysisError> {
        let level = config.level;
        if level >= hierarchy.depth() {
            return Err(AnalysisError::NoSuchLevel {
                level,
                depth: hierarchy.depth(),
            });
        }
        let geometry = hierarchy.cache(level).geometry();
        if config.reuse && geometry.line_size > reuse::MAX_LINE_SIZE {
            return Err(AnalysisError::LineTooLong {
                level,
                line_size: geometry.line_size,
            });
        }
        let index = BucketIndex::new(ranges);
        let lines = geometry.lines();
        let uses_stack = config.miss_classes || config.reuse_distance;
        Ok(Self {
            config,
            level_name: hierarchy.spec().data[level].name.clone(),
            line_bits: geometry.line_bits(),
            line_size: geometry.line_size,
            lines,
            access_number: 0,
            reuse: config
                .reuse
                .then(|| ReuseTracker::new(geometry.line_size, lines, index.bucket_count())),
            evictors: config
                .evictors
                .then(|| EvictorCounts::new(index.range_count(), geometry.line_size)),
            stack: uses_stack.then(|| LruStack::new(lines as usize)),
            miss_classes: config
                .miss_classes
                .then(|| MissClassifier::new(lines, index.bucket_count())),
            distances: config
                .reuse_distance
                .then(|| ReuseDistances::new(index.range_count())),
            index,
        })
    }

    /// Counts spatial use per member of `layout` for range `range` (an index into the ranges
    /// given to [`Analyses::new`]), an array of structures starting at an element. Only the
    /// reuse analysis measures spatial use; without it this does nothing.
    pub fn divide_by_field(
        &mut self,
        range: usize,
        layout: &FieldLayout,
    ) -> Result<(), AnalysisError> {
        if range >= self.index.range_count() {
            return Err(AnalysisError::NoSuchRange {
                range,
                ranges: self.index.range_count(),
            });
        }
        let Some(reuse) = &mut self.reuse else {
            return Ok(());
        };
        let named = self.index.range(range);
        let fields = field_use::FieldBytes::new(named.range.start, named.range.end, layout)
            .map_err(|source| AnalysisError::Fields {
                name: named.name.clone(),
                source,
            })?;
        reuse.divide_by_field(range, fields);
        Ok(())
    }

    /// The configuration these analyses were built with.
    pub fn config(&self) -> &AnalysisConfig {
        &self.config
    }

    /// Whether [`Analyses::on_access`] needs the hierarchy's line events (true when any analysis is on).
    pub fn needs_line_events(&self) -> bool {
        self.config.any()
    }

    /// Follows one data access: `outcome` is what [`Hierarchy::access`] returned for it and
    /// `lines` the hierarchy's [`Hierarchy::line_events`] right after.
    ///
    /// `kind` is accepted for the simulator's convenience; no analysis splits by it yet.
    #[inline]
    pub fn on_access(
        &mut self,
        addr: u64,
        size: u32,
        _kind: AccessKind,
        outcome: &AccessOutcome,
        lines: &[LineEvent],
    ) {
        self.access_number += 1;
        let level = self.config.level as u8;
        if let Some(reuse) = &mut self.reuse {
            reuse.on_access(&self.index, level, (addr, size), self.access_number, lines);
        }
        if let Some(evictors) = &mut self.evictors {
            evictors.on_events(&self.index, level, lines);
        }
        if let Some(stack) = &mut self.stack {
            let Some(distance) = access_distance(stack, level, self.line_bits, lines) else {
                return;
            };
            let slot = self.index.locate(addr);
            if let Some(classes) = &mut self.miss_classes
                && outcome.levels[self.config.level] == LevelResult::Miss
            {
                classes.record_miss(slot, distance);
            }
            if let Some(distances) = &mut self.distances {
                distances.record(slot.map(|s| s.range), distance);
            }
        }
    }

    /// Ends the run: lines still resident close their residencies, as Callgrind's cache-reuse
    /// extension does at program end.
    pub fn finish(&mut self) {
        if let Some(reuse) = &mut self.reuse {
            reuse.finish();
        }
    }

    /// Zeroes every result. The shadow caches keep their contents, as the hierarchy does on
    /// [`Hierarchy::reset_stats`]; lines resident now are no longer followed for reuse (their
    /// fill came before the reset), only lines filled from now on.
    pub fn reset(&mut self) {
        if let Some(reuse) = &mut self.reuse {
            reuse.reset();
        }
        if let Some(evictors) = &mut self.evictors {
            evictors.reset();
        }
        if let Some(classes) = &mut self.miss_classes {
            classes.reset();
        }
        if let Some(distances) = &mut self.distances {
            distances.reset();
        }
    }

    /// The results so far. Residencies still open count as if they ended now, so a report
    /// before [`Analyses::finish`] equals the one after it.
    pub fn report(&self) -> AnalysisReport {
        let reuse_counts = self.reuse.as_ref().map(ReuseTracker::counts);
        let ranges = (0..self.index.range_count())
            .map(|r| {
                let named = self.index.range(r);
                let buckets = self.index.flat_buckets(r);
                RangeAnalysis {
                    name: named.name.clone(),
                    start: named.range.start,
                    end: named.range.end,
                    bucket_bytes: named.bucket_bytes,
                    reuse: reuse_counts.as_ref().map(|c| {
                        let mut report =
                            ReuseReport::from_buckets(&c[buckets.clone()], self.line_size);
                        if let Some(fields) = self.reuse.as_ref().and_then(|t| t.field_use(r)) {
                            report.fields = fields;
                        }
                        report
                    }),
                    miss_classes: self
                        .miss_classes
                        .as_ref()
                        .map(|m| MissClassReport::from_buckets(&m.per_bucket[buckets.clone()])),
                    reuse_distance: self.distances.as_ref().map(|d| d.per_range[r].clone()),
                }
            })
            .collect();
        AnalysisReport {
            level: self.config.level,
            level_name: self.level_name.clone(),
            line_size: self.line_size,
            lines: self.lines,
            ranges,
            miss_classes: self.miss_classes.as_ref().map(|m| m.all),
            evictors: self.evictors.as_ref().map(|e| e.report(&self.index)),
            reuse_distance: self.distances.as_ref().map(|d| d.overall.clone()),
            distinct_lines: self.stack.as_ref().map(|s| s.distinct_lines() as u64),
        }
    }
}

/// Feeds the level's demand references of one access to the stack and returns the access's
/// distance (the largest of its lines, `None` when any line is new), or nothing when the access
/// did not reach the level.
///
/// Write-back fills are not demand references and stay out, so the shadows see what a
/// fully-associative level would be asked by the program.
#[inline]
fn access_distance(
    stack: &mut LruStack,
    level: u8,
    line_bits: u32,
    lines: &[LineEvent],
) -> Option<Option<u64>> {
    let mut reached = false;
    let mut distance = Some(0);
    for event in lines.iter().filter(|e| e.level == level) {
        if let LineEventKind::Hit | LineEventKind::Fill { .. } | LineEventKind::Bypass = event.kind
        {
            reached = true;
            let line = stack.reference(event.line_addr >> line_bits);
            distance = distance.zip(line).map(|(a, b)| a.max(b));
        }
    }
    reached.then_some(distance)
}

/// Everything the analyses found, as a request's answer.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct AnalysisReport {
    /// Index of the data level watched.
    pub level: usize,
    /// Its name in the hierarchy spec (`D1`, `L2`, `LL`...).
    pub level_name: String,
    pub line_size: u32,
    /// Lines the level holds: the size of the fully-associative shadow.
    pub lines: u64,
    /// Per named range, in the order the ranges were given.
    pub ranges: Vec<RangeAnalysis>,
    /// Miss classes of all accesses, those outside every named range included; their total is
    /// the level's misses since the analyses started (or were reset).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub miss_classes: Option<MissClassCounts>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evictors: Option<EvictorMatrix>,
    /// Reuse distances of all accesses that reached the level.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reuse_distance: Option<DistanceHistogram>,
    /// Distinct lines the level has seen (the infinite shadow's size), when a shadow runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub distinct_lines: Option<u64>,
}

impl AnalysisReport {
    /// The results of the range called `name`.
    pub fn range(&self, name: &str) -> Option<&RangeAnalysis> {
        self.ranges.iter().find(|r| r.name == name)
    }
}

/// The results for one named range.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RangeAnalysis {
    pub name: String,
    /// First byte of the range.
    pub start: u64,
    /// One past its last byte.
    pub end: u64,
    pub bucket_bytes: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reuse: Option<ReuseReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub miss_classes: Option<MissClassReport>,
    /// Reuse distances of the accesses attributed to this range.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reuse_distance: Option<DistanceHistogram>,
}
