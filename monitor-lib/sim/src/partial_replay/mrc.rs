//! Miss-ratio curves per data structure from one partial trace: the first data level's misses
//! for every cache size of one associativity and line size.
//!
//! - **Fully associative** (`ways = None`): one pass computes every access's exact LRU stack
//!   distance (the largest of its lines', infinite for a line never seen), so a cache of `c`
//!   lines misses an access exactly when its distance is at least `c`: every size at once.
//! - **`ways`-way set-associative**: a cache of `s` sets (a power of two) is simulated by the
//!   same [`Hierarchy`] replay uses, one pass per set count, so each point is exactly what
//!   re-simulating the trace with that first level gives (LRU stack distances do not carry
//!   across set counts, since the set of a line changes with them).
//!
//! For traces too long for exact distances, `shards.rs` samples the fully associative curves.
//!
//! Only the accesses of a trace's counted spans are counted (see `MARK` in the format); the
//! others are simulated all the same. Both follow native replay's conventions: sizes are whole, and a modify is a read then a
//! write, both counted. The curves are of the program's own stream: a second level's curve
//! would depend on the first level in front of it.

use crate::analysis::{DistanceHistogram, LruStack};
use crate::cache::{AccessKind, CacheError, Hierarchy, HierarchySpec, LevelResult};
use crate::trace::TraceKind;
use crate::trace::partial::{PartialAccess, PartialError, PartialTrace};

use super::Owners;

/// Largest number of points one curve gets (sizes double from one line, or one set, up).
pub(super) const MAX_POINTS: usize = 40;

/// Why the curves could not be drawn.
#[derive(Debug, thiserror::Error)]
pub enum MrcError {
    #[error(transparent)]
    Trace(#[from] PartialError),
    #[error("miss-ratio curve cache: {0}")]
    Cache(#[from] CacheError),
    #[error("the line size {0} is not a power of two of at least 4 bytes")]
    BadLine(u32),
    #[error("the sampling rate {0} is not a number above 0 and at most 1 (e.g. 0.01)")]
    BadRate(f64),
}

/// One point of a curve.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct MrcPoint {
    /// Cache size in bytes.
    pub size: u64,
    pub misses: u64,
    pub miss_ratio: f64,
}

/// One data structure's curve (or all accesses', named `(all)`).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct MissRatioCurve {
    pub structure: String,
    pub accesses: u64,
    pub points: Vec<MrcPoint>,
}

/// The curves of every structure that has accesses, then `(all)`, at sizes doubling from the
/// smallest cache of the geometry up to `max_size` bytes (by default the smallest power of two
/// holding every line the trace touches).
pub fn miss_ratio_curves(
    trace: &PartialTrace,
    ways: Option<u32>,
    line_size: u32,
    max_size: Option<u64>,
) -> Result<Vec<MissRatioCurve>, MrcError> {
    if !line_size.is_power_of_two() || line_size < 4 {
        return Err(MrcError::BadLine(line_size));
    }
    let owners = Owners::of(trace);
    let n = owners.structures.len() + 1;
    let all = n - 1;
    let bits = line_size.trailing_zeros();
    // Pass 1: accesses per structure, and (fully associative) the distances.
    let mut accesses = vec![0u64; n];
    let mut stack = LruStack::new(1 << 12);
    let (mut thread, mut distinct) = (0, 0);
    // Per structure, in buckets exact at every power-of-two number of lines, so memory stays
    // a few hundred words per structure however long the trace.
    let mut distances: Vec<DistanceHistogram> = vec![DistanceHistogram::default(); n];
    for attributed in attributed(trace, &owners) {
        let Attributed {
            thread: t,
            access: a,
            counting,
            structure,
        } = attributed?;
        if t != thread {
            distinct = distinct.max(stack.distinct_lines() as u64);
            (thread, stack) = (t, LruStack::new(1 << 12));
        }
        let times = cache_accesses(a.kind).len() as u64;
        if counting {
            accesses[structure] += times;
            accesses[all] += times;
        }
        if ways.is_none() {
            for _ in 0..times {
                let end = a.addr.saturating_add(u64::from(a.size.max(1)));
                let mut distance = Some(0u64);
                for block in (a.addr >> bits)..=((end - 1) >> bits) {
                    let d = stack.reference(block);
                    distance = distance.zip(d).map(|(x, y)| x.max(y));
                }
                if !counting {
                    continue;
                }
                distances[structure].record(distance);
                distances[all].record(distance);
            }
        }
    }
    let distinct = if ways.is_none() {
        distinct.max(stack.distinct_lines() as u64)
    } else {
        footprint(trace, bits)?
    };
    let max_size = max_size
        .unwrap_or_else(|| (distinct.max(1) << bits).next_power_of_two())
        .max(u64::from(line_size) * u64::from(ways.unwrap_or(1)));
    let mut curves = empty_curves(&owners, &accesses);
    match ways {
        None => {
            for (s, curve) in curves.iter_mut().enumerate() {
                let mut lines = 1u64;
                while lines << bits <= max_size && curve.points.len() < MAX_POINTS {
                    // Exact: a power of two of lines is a bucket boundary.
                    debug_assert!(DistanceHistogram::is_exact_for(lines));
                    let misses = distances[s].predicted_misses(lines);
                    curve
                        .points
                        .push(point(lines << bits, misses, curve.accesses));
                    lines *= 2;
                }
            }
        }
        Some(ways) => {
            let mut sets = 1u64;
            while sets * u64::from(ways) * u64::from(line_size) <= max_size
                && curves[all].points.len() < MAX_POINTS
            {
                let size = sets * u64::from(ways) * u64::from(line_size);
                let spec = HierarchySpec::parse(&format!("D1={size},{ways},{line_size}"))?;
                let fresh = Hierarchy::new(&spec)?;
                let (mut hierarchy, mut thread) = (fresh.clone(), 0);
                let mut misses = vec![0u64; n];
                for attributed in attributed(trace, &owners) {
                    let Attributed {
                        thread: t,
                        access: a,
                        counting,
                        structure,
                    } = attributed?;
                    if t != thread {
                        (thread, hierarchy) = (t, fresh.clone());
                    }
                    for &kind in cache_accesses(a.kind) {
                        let missed =
                            hierarchy.access(a.addr, a.size, kind).levels[0] == LevelResult::Miss;
                        if missed && counting {
                            misses[structure] += 1;
                            misses[all] += 1;
                        }
                    }
                }
                for (curve, &m) in curves.iter_mut().zip(&misses) {
                    curve.points.push(point(size, m, curve.accesses));
                }
                sets *= 2;
            }
        }
    }
    curves.retain(|c| c.accesses > 0);
    Ok(curves)
}

/// One access of a trace as the curves take it: the access, whether it lies in a counted span,
/// and the index of its data structure's curve (the last index, "(all)", stands for none).
pub(super) struct Attributed {
    /// The thread's index in the trace: each thread has caches of its own, so a consumer starts
    /// afresh when it changes.
    pub(super) thread: usize,
    pub(super) access: PartialAccess,
    pub(super) counting: bool,
    pub(super) structure: usize,
}

/// The accesses of `trace` in order, thread after thread, each with its span and structure
/// ([`Attributed`]).
pub(super) fn attributed<'a>(
    trace: &'a PartialTrace,
    owners: &'a Owners,
) -> impl Iterator<Item = Result<Attributed, PartialError>> + 'a {
    trace
        .threads()
        .iter()
        .enumerate()
        .flat_map(move |(thread, t)| {
            let mut spans = t.counted_spans();
            t.accesses().enumerate().map(move |(seq, access)| {
                let access = access?;
                Ok(Attributed {
                    thread,
                    counting: spans.counts(seq as u64),
                    structure: owners.structure_of(access.addr, owners.site_index[&access.site])
                        as usize,
                    access,
                })
            })
        })
}

/// One empty curve per data structure of `owners`, then "(all)", with their counted accesses.
pub(super) fn empty_curves(owners: &Owners, accesses: &[u64]) -> Vec<MissRatioCurve> {
    owners
        .structures
        .iter()
        .cloned()
        .chain([String::from("(all)")])
        .zip(accesses)
        .map(|(structure, &accesses)| MissRatioCurve {
            structure,
            accesses,
            points: Vec::new(),
        })
        .collect()
}

/// The cache accesses a record makes in native mode.
pub(super) fn cache_accesses(kind: TraceKind) -> &'static [AccessKind] {
    match kind {
        TraceKind::Load | TraceKind::Instr => &[AccessKind::Read],
        TraceKind::Store => &[AccessKind::Write],
        TraceKind::Modify => &[AccessKind::Read, AccessKind::Write],
    }
}

pub(super) fn point(size: u64, misses: u64, accesses: u64) -> MrcPoint {
    MrcPoint {
        size,
        misses,
        miss_ratio: misses as f64 / accesses.max(1) as f64,
    }
}

/// Distinct lines the thread touching the most touches (each thread has caches of its own).
fn footprint(trace: &PartialTrace, bits: u32) -> Result<u64, PartialError> {
    let mut most = 0;
    for thread in trace.threads() {
        let mut lines = std::collections::HashSet::new();
        for access in thread.accesses() {
            let a = access?;
            let end = a.addr.saturating_add(u64::from(a.size.max(1)));
            lines.extend((a.addr >> bits)..=((end - 1) >> bits));
        }
        most = most.max(lines.len() as u64);
    }
    Ok(most)
}
