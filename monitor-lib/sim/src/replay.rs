//! Replaying a trace through a hierarchy, with Cachegrind-compatible totals.
//!
//! Two modes:
//!
//! - **Cachegrind-compatible** (`compat = true`): the conventions of `valgrind --tool=cachegrind`,
//!   so a lackey trace of a run gives exactly Cachegrind's counts for the same run. Data sizes are
//!   clamped to the smallest line size (Cachegrind does this so no access touches more than two
//!   lines), and a modify is one read. Build the hierarchy with [`cachegrind_hierarchy`].
//! - **Native**: sizes are kept whole, and a modify is a read followed by a write of the same bytes,
//!   which is what the instruction does to the caches (it makes the line dirty).
//!
//! Either way, instruction fetches go through I1 and on to the shared levels. A hierarchy without
//! an I1 models data caches only, so instruction records are counted but not simulated there:
//! sending them through a data cache would mix two streams that real hardware keeps apart.

use crate::cache::{
    AccessKind, CacheError, Hierarchy, HierarchySpec, LevelStats, Op, Replacement, WritePolicy,
};
use crate::trace::{TraceKind, TraceRecord};

/// How often (in records) [`replay_with_progress`] reports.
pub const PROGRESS_EVERY: u64 = 1 << 20;

/// Cachegrind rejects shorter lines: a single x86 instruction could straddle three of them.
const CACHEGRIND_MIN_LINE: u32 = 16;

/// Why a hierarchy cannot be used in Cachegrind-compatible mode.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("cache `{spec}` cannot be simulated the way Cachegrind does: {why}")]
    NotCachegrindCompatible { spec: String, why: String },
    #[error(transparent)]
    Cache(#[from] CacheError),
}

/// How many records of each kind a replay saw.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct RecordCounts {
    pub instr: u64,
    pub loads: u64,
    pub stores: u64,
    pub modifies: u64,
    /// Data records whose size was clamped to the smallest line size (Cachegrind mode only).
    pub clamped: u64,
    /// Whether instruction records went through the caches (only when there is an I1).
    pub instr_simulated: bool,
}

impl RecordCounts {
    /// The records counted since `earlier`, a copy of these counts taken before.
    pub fn since(&self, earlier: &RecordCounts) -> RecordCounts {
        RecordCounts {
            instr: self.instr - earlier.instr,
            loads: self.loads - earlier.loads,
            stores: self.stores - earlier.stores,
            modifies: self.modifies - earlier.modifies,
            clamped: self.clamped - earlier.clamped,
            instr_simulated: self.instr_simulated,
        }
    }

    /// All records.
    pub fn total(&self) -> u64 {
        self.instr + self.loads + self.stores + self.modifies
    }
}

/// One level's totals after a replay; `reads` are instruction fetches plus data reads.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct LevelTotals {
    #[serde(skip)]
    pub name: String,
    pub reads: u64,
    pub read_misses: u64,
    pub writes: u64,
    pub write_misses: u64,
    /// Instruction fetches that reached this level (I1, and shared levels below it).
    pub instr_reads: u64,
    pub instr_read_misses: u64,
    pub data_reads: u64,
    pub data_read_misses: u64,
    /// Dirty lines written to the next level (always zero in Cachegrind mode).
    pub writebacks: u64,
    pub back_invalidations: u64,
}

impl LevelTotals {
    pub(crate) fn new(name: &str, s: &LevelStats) -> Self {
        Self {
            name: name.to_owned(),
            reads: s.instr_fetches + s.reads,
            read_misses: s.instr_misses + s.read_misses,
            writes: s.writes,
            write_misses: s.write_misses,
            instr_reads: s.instr_fetches,
            instr_read_misses: s.instr_misses,
            data_reads: s.reads,
            data_read_misses: s.read_misses,
            writebacks: s.writebacks,
            back_invalidations: s.back_invalidations,
        }
    }
}

/// Cachegrind's nine cache events, named as in its `events:` line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[allow(non_snake_case)]
pub struct CachegrindEvents {
    pub Ir: u64,
    pub I1mr: u64,
    pub ILmr: u64,
    pub Dr: u64,
    pub D1mr: u64,
    pub DLmr: u64,
    pub Dw: u64,
    pub D1mw: u64,
    pub DLmw: u64,
}

/// What a replay found: the cache it used, the records it saw and every level's totals.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ReplaySummary {
    /// The hierarchy, in spec syntax.
    pub cache: String,
    pub cachegrind_compat: bool,
    pub records: RecordCounts,
    /// Every level, I1 first, serialised as an object keyed by level name in hierarchy order.
    #[serde(serialize_with = "levels_by_name")]
    pub levels: Vec<LevelTotals>,
    /// The totals in Cachegrind's terms (Cachegrind mode only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cachegrind: Option<CachegrindEvents>,
}

impl ReplaySummary {
    /// The totals of the level called `name`.
    pub fn level(&self, name: &str) -> Option<&LevelTotals> {
        self.levels.iter().find(|l| l.name == name)
    }
}

pub(crate) fn levels_by_name<S: serde::Serializer>(
    levels: &[LevelTotals],
    s: S,
) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut map = s.serialize_map(Some(levels.len()))?;
    for level in levels {
        map.serialize_entry(&level.name, level)?;
    }
    map.end()
}

/// Checks that `spec` is something Cachegrind itself would simulate: I1, D1 and LL, LRU,
/// write-back, not inclusive, power-of-two set counts and lines of at least 16 bytes.
pub fn check_cachegrind_compatible(spec: &HierarchySpec) -> Result<(), ReplayError> {
    let fail = |why: String| ReplayError::NotCachegrindCompatible {
        spec: spec.to_string(),
        why,
    };
    if spec.instr.is_none() || spec.data.len() != 2 {
        return Err(fail(
            "Cachegrind simulates exactly three caches, I1, D1 and LL (e.g. I1=32K,8,64;D1=32K,8,64;LL=8M,16,64)".into(),
        ));
    }
    for level in spec.levels() {
        let g = level.geometry;
        let name = &level.name;
        if level.replacement != Replacement::Lru {
            return Err(fail(format!(
                "{name} must use LRU replacement, as Cachegrind does"
            )));
        }
        if level.write != WritePolicy::WriteBack {
            return Err(fail(format!(
                "{name} must be write-allocate (Cachegrind's only write policy)"
            )));
        }
        if level.inclusive {
            return Err(fail(format!(
                "{name} must not be inclusive (Cachegrind does not back-invalidate)"
            )));
        }
        if !g.sets().is_power_of_two() {
            return Err(fail(format!(
                "{name} has {} sets ({} bytes / ({} ways x {}-byte lines)); Cachegrind needs a power of two",
                g.sets(),
                g.size,
                g.assoc,
                g.line_size
            )));
        }
        if g.line_size < CACHEGRIND_MIN_LINE {
            return Err(fail(format!(
                "{name} has {}-byte lines; Cachegrind needs at least {CACHEGRIND_MIN_LINE}",
                g.line_size
            )));
        }
    }
    Ok(())
}

/// Checks `spec` with [`check_cachegrind_compatible`] and builds a hierarchy that follows
/// Cachegrind's conventions.
pub fn cachegrind_hierarchy(spec: &HierarchySpec) -> Result<Hierarchy, ReplayError> {
    check_cachegrind_compatible(spec)?;
    Ok(Hierarchy::new(spec)?.cachegrind_compatible())
}

/// Replays `records` through `hierarchy` (see the module documentation for the two modes) and
/// returns the totals since the hierarchy's last reset. Stops at the first trace error.
pub fn replay<E>(
    records: impl IntoIterator<Item = Result<TraceRecord, E>>,
    hierarchy: &mut Hierarchy,
    compat: bool,
) -> Result<ReplaySummary, E> {
    replay_with_progress(records, hierarchy, compat, |_| {})
}

/// [`replay`], calling `on_progress` with the number of records done every [`PROGRESS_EVERY`] records.
pub fn replay_with_progress<E>(
    records: impl IntoIterator<Item = Result<TraceRecord, E>>,
    hierarchy: &mut Hierarchy,
    compat: bool,
    mut on_progress: impl FnMut(u64),
) -> Result<ReplaySummary, E> {
    let (clamp_to, mut counts) = setting_for(hierarchy, compat);
    let mut done = 0u64;
    for record in records {
        let TraceRecord { kind, addr, size } = record?;
        if kind == TraceKind::Instr {
            counts.instr += 1;
            if counts.instr_simulated {
                hierarchy.fetch(addr, size);
            }
        } else {
            let data_size = size.min(clamp_to);
            counts.clamped += u64::from(data_size != size);
            match kind {
                TraceKind::Load => {
                    counts.loads += 1;
                    hierarchy.access(addr, data_size, AccessKind::Read);
                }
                TraceKind::Store => {
                    counts.stores += 1;
                    hierarchy.access(addr, data_size, AccessKind::Write);
                }
                _ => {
                    counts.modifies += 1;
                    hierarchy.access(addr, data_size, AccessKind::Read);
                    if !compat {
                        hierarchy.access(addr, data_size, AccessKind::Write);
                    }
                }
            }
        }
        done += 1;
        if done.is_multiple_of(PROGRESS_EVERY) {
            on_progress(done);
        }
    }
    Ok(summarize(hierarchy, compat, counts))
}

/// The data sizes are clamped to (the smallest line in Cachegrind's mode, else none), and the
/// record counts to start from, for a replay through `hierarchy`.
pub(crate) fn setting_for(hierarchy: &Hierarchy, compat: bool) -> (u32, RecordCounts) {
    let clamp_to = if compat {
        hierarchy.min_line_size()
    } else {
        u32::MAX
    };
    let counts = RecordCounts {
        instr_simulated: hierarchy.spec().instr.is_some(),
        ..RecordCounts::default()
    };
    (clamp_to, counts)
}

/// Appends to `ops` what `record` asks of the caches after the mode's conventions (a modify is
/// one read in Cachegrind's, a read and a write otherwise; nothing for an instruction fetch a
/// hierarchy without an I1 does not simulate), counting it in `counts`.
#[inline]
pub(crate) fn push_ops(
    ops: &mut Vec<Op>,
    record: TraceRecord,
    compat: bool,
    clamp_to: u32,
    counts: &mut RecordCounts,
) {
    let TraceRecord { kind, addr, size } = record;
    if kind == TraceKind::Instr {
        counts.instr += 1;
        if counts.instr_simulated {
            ops.push(Op {
                addr,
                size,
                kind: None,
            });
        }
        return;
    }
    let clamped = size.min(clamp_to);
    counts.clamped += u64::from(clamped != size);
    let data = |kind| Op {
        addr,
        size: clamped,
        kind: Some(kind),
    };
    match kind {
        TraceKind::Load => {
            counts.loads += 1;
            ops.push(data(AccessKind::Read));
        }
        TraceKind::Store => {
            counts.stores += 1;
            ops.push(data(AccessKind::Write));
        }
        _ => {
            counts.modifies += 1;
            ops.push(data(AccessKind::Read));
            if !compat {
                ops.push(data(AccessKind::Write));
            }
        }
    }
}

fn summarize(hierarchy: &Hierarchy, compat: bool, records: RecordCounts) -> ReplaySummary {
    summarize_stats(hierarchy, hierarchy.stats(), compat, records)
}

/// [`summarize`] with the level totals `stats` (name and totals of every level of
/// `hierarchy`, in its order) rather than the hierarchy's own.
pub(crate) fn summarize_stats<'a>(
    hierarchy: &Hierarchy,
    stats: impl Iterator<Item = (&'a str, &'a LevelStats)>,
    compat: bool,
    records: RecordCounts,
) -> ReplaySummary {
    let levels: Vec<_> = stats
        .map(|(name, stats)| LevelTotals::new(name, stats))
        .collect();
    let cachegrind = match (compat, &levels[..]) {
        (true, [i1, d1, ll]) if records.instr_simulated => Some(CachegrindEvents {
            Ir: i1.instr_reads,
            I1mr: i1.instr_read_misses,
            ILmr: ll.instr_read_misses,
            Dr: d1.data_reads,
            D1mr: d1.data_read_misses,
            DLmr: ll.data_read_misses,
            Dw: d1.writes,
            D1mw: d1.write_misses,
            DLmw: ll.write_misses,
        }),
        _ => None,
    };
    ReplaySummary {
        cache: hierarchy.spec().to_string(),
        cachegrind_compat: compat,
        records,
        levels,
        cachegrind,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(kind: TraceKind, addr: u64, size: u32) -> Result<TraceRecord, std::convert::Infallible> {
        Ok(TraceRecord { kind, addr, size })
    }

    fn spec(s: &str) -> HierarchySpec {
        s.parse().unwrap()
    }

    #[test]
    fn cachegrind_mode_counts_a_modify_as_one_read_and_clamps_sizes() {
        let mut h = cachegrind_hierarchy(&spec("I1=1K,2,32;D1=1K,2,32;LL=8K,4,64")).unwrap();
        let trace = [
            rec(TraceKind::Instr, 0x1000, 4),
            rec(TraceKind::Modify, 0x2000, 8),
            // 64 bytes would cover two 32-byte lines; clamped to 32 it covers one.
            rec(TraceKind::Load, 0x3000, 64),
            rec(TraceKind::Store, 0x2000, 4),
        ];
        let s = replay(trace, &mut h, true).unwrap();
        assert_eq!(s.records.clamped, 1);
        assert_eq!(
            s.cachegrind.unwrap(),
            CachegrindEvents {
                Ir: 1,
                I1mr: 1,
                ILmr: 1,
                Dr: 2,
                D1mr: 2,
                DLmr: 2,
                Dw: 1,
                D1mw: 0,
                DLmw: 0
            }
        );
        // Clamping left the second line of the 64-byte load alone.
        assert!(!h.cache(0).contains(0x3020 >> 5));
    }

    #[test]
    fn native_mode_counts_a_modify_as_a_read_then_a_write() {
        let mut h = Hierarchy::new(&spec("D1=1K,2,32;L2=8K,4,64")).unwrap();
        let s = replay(
            [
                rec(TraceKind::Modify, 0x2000, 8),
                rec(TraceKind::Load, 0x3000, 64),
            ],
            &mut h,
            false,
        )
        .unwrap();
        let d1 = s.level("D1").unwrap();
        assert_eq!(
            (d1.reads, d1.read_misses, d1.writes, d1.write_misses),
            (2, 2, 1, 0)
        );
        assert_eq!(s.records.clamped, 0);
        assert!(
            h.cache(0).contains(0x3020 >> 5),
            "the whole 64-byte load was simulated"
        );
        assert!(s.cachegrind.is_none());
    }

    #[test]
    fn without_an_i1_instructions_are_counted_but_not_simulated() {
        let mut h = Hierarchy::new(&spec("D1=1K,2,32")).unwrap();
        let s = replay([rec(TraceKind::Instr, 0x1000, 4)], &mut h, false).unwrap();
        assert_eq!(s.records.instr, 1);
        assert!(!s.records.instr_simulated);
        assert_eq!(s.level("D1").unwrap().reads, 0);
    }

    #[test]
    fn ll_read_misses_sum_both_sides() {
        let mut h = cachegrind_hierarchy(&spec("I1=1K,2,32;D1=1K,2,32;LL=8K,4,64")).unwrap();
        let s = replay(
            [
                rec(TraceKind::Instr, 0x1000, 4),
                rec(TraceKind::Load, 0x9000, 4),
            ],
            &mut h,
            true,
        )
        .unwrap();
        let ll = s.level("LL").unwrap();
        assert_eq!(
            (ll.instr_read_misses, ll.data_read_misses, ll.read_misses),
            (1, 1, 2)
        );
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(json["levels"]["LL"]["read_misses"], 2);
        assert_eq!(json["levels"]["I1"]["reads"], 1);
        assert_eq!(json["cachegrind"]["ILmr"], 1);
    }

    #[test]
    fn the_first_trace_error_stops_the_replay() {
        let mut h = Hierarchy::new(&spec("D1=1K,2,32")).unwrap();
        let trace = [
            Ok(TraceRecord {
                kind: TraceKind::Load,
                addr: 0,
                size: 4,
            }),
            Err("bad line 2"),
        ];
        assert_eq!(replay(trace, &mut h, false).unwrap_err(), "bad line 2");
    }

    #[test]
    fn progress_is_reported_every_so_many_records() {
        let mut h = Hierarchy::new(&spec("D1=1K,2,32")).unwrap();
        let trace = (0..PROGRESS_EVERY * 2 + 5).map(|i| rec(TraceKind::Load, i * 4 % 4096, 4));
        let mut calls = Vec::new();
        replay_with_progress(trace, &mut h, false, |n| calls.push(n)).unwrap();
        assert_eq!(calls, [PROGRESS_EVERY, PROGRESS_EVERY * 2]);
    }

    #[test]
    fn cachegrind_mode_rejects_what_cachegrind_cannot_simulate() {
        let bad = [
            ("D1=32K,8,64;LL=1M,8,64", "exactly three caches"),
            ("I1=32K,8,64;D1=24K,8,64;LL=1M,8,64", "48 sets"),
            ("I1=32K,8,64;D1=32K,8,64,plru;LL=1M,8,64", "LRU"),
            ("I1=32K,8,64;D1=32K,8,64,wt;LL=1M,8,64", "write-allocate"),
            ("I1=32K,8,64;D1=32K,8,64;LL=1M,8,64,inclusive", "inclusive"),
            ("I1=1K,8,8;D1=32K,8,64;LL=1M,8,64", "at least 16"),
        ];
        for (s, why) in bad {
            let err = check_cachegrind_compatible(&spec(s)).unwrap_err();
            assert!(err.to_string().contains(why), "{s}: {err}");
        }
        // Twelve ways are fine as long as the set count is a power of two (48K / 12 / 64 = 64).
        check_cachegrind_compatible(&spec("I1=32K,8,64;D1=48K,12,64;LL=1M,8,64")).unwrap();
    }
}
