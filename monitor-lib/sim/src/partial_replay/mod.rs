//! Re-simulating a partial trace: the level totals [`crate::replay`] reports, plus per access
//! site and per data structure tables (hits and misses per level, temporal and spatial hits,
//! spatial use of the lines brought in, evictors) and the trace's compression figures.
//!
//! The accesses go through the hierarchy in exactly the recorded order, with the conventions of
//! [`crate::replay`] (Cachegrind mode clamps sizes and counts a modify as one read; native mode
//! counts it as a read then a write), so the `levels` totals are those of replaying the same
//! accesses from a lackey log or an `.epct` file.
//!
//! Per site and per structure, at the watched data level (`level`, 0 for the first):
//! - a *temporal* hit touches only bytes its line's current residency has already seen, a
//!   *spatial* hit some byte new to it (METRIC's temporal and spatial reuse);
//! - *spatial use* is the share of the bytes of the lines the owner's misses brought in that
//!   were used before the line left (or by the end of the trace);
//! - the *evictor table* counts, for each owner's lines, whose fills evicted them. A line
//!   belongs to the owner whose access filled it.
//!
//! A trace with marks (a recording that began before the traced region's instances) counts
//! only the accesses of its counted spans, in the levels totals and in the tables alike; the
//! others are simulated all the same, so the counted ones meet the cache state they met when
//! recorded. Each thread of the trace replays on a hierarchy of its own (a copy of the one
//! given, as given), as each thread of the live run simulated its own; the totals and tables
//! add the threads up.
//!
//! An access belongs to the data structure whose named range holds its first byte; without
//! one, to the structure its site names in the site table; else to `(other)`.

mod mrc;
mod owners;
mod shards;

use std::collections::HashMap;

pub use mrc::{MissRatioCurve, MrcError, MrcPoint, miss_ratio_curves};
use owners::{MAX_LINE_SIZE, OwnerTracker};
pub use shards::{
    SAMPLING_ERRORS, SampledCurves, Sampler, expected_error, mean_absolute_error,
    sampled_miss_ratio_curves, smallest_lines, stated_error,
};

use crate::cache::{AccessKind, Hierarchy, LevelStats};
use crate::ranges::{AddressRange, NamedRange, RangeSet};
use crate::replay::{self, LevelTotals, RecordCounts, ReplaySummary, summarize_stats};
use crate::trace::TraceKind;
use crate::trace::partial::{PartialError, PartialTrace, TraceStats};

/// Name of the owner of accesses of no named structure.
pub const OTHER: &str = "(other)";

/// Why a partial trace could not be re-simulated.
#[derive(Debug, thiserror::Error)]
pub enum PartialReplayError {
    #[error(transparent)]
    Trace(#[from] PartialError),
    #[error("the tables watch data level {level}, but the hierarchy has {depth} data levels")]
    NoSuchLevel { level: usize, depth: usize },
    #[error(
        "per-site tables track lines of at most {MAX_LINE_SIZE} bytes; data level {level} has {line_size}-byte lines"
    )]
    LineTooLong { level: usize, line_size: u32 },
}

/// One level's counts of one site or structure.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct OwnerLevel {
    /// Cache accesses that reached the level.
    pub accesses: u64,
    pub hits: u64,
    pub misses: u64,
    /// `misses / accesses`; `None` when none reached the level.
    pub miss_ratio: Option<f64>,
}

/// Whose fills evicted one owner's lines.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct EvictedBy {
    pub evictor: String,
    pub lines: u64,
    /// Share of all evictions of the owner's lines, from 0 to 1.
    pub share: f64,
}

/// One of the structures a site's accesses fell in.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SiteStructure {
    pub name: String,
    /// The site's counted accesses in it.
    pub accesses: u64,
}

/// Per site, its counted accesses per structure: a short list each, as a site touches one
/// structure or a few.
#[derive(Debug, Default)]
struct SiteStructures(Vec<Vec<(u32, u64)>>);

impl SiteStructures {
    fn new(sites: usize) -> Self {
        Self(vec![Vec::new(); sites])
    }

    fn count(&mut self, site: u32, structure: u32) {
        let list = &mut self.0[site as usize];
        match list.iter_mut().find(|(s, _)| *s == structure) {
            Some((_, n)) => *n += 1,
            None => list.push((structure, 1)),
        }
    }

    /// Site `site`'s structures by name, most accesses first.
    fn of(&self, site: usize, names: &[String]) -> Vec<SiteStructure> {
        let mut list = self.0[site].clone();
        list.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        list.into_iter()
            .map(|(s, accesses)| SiteStructure {
                name: names[s as usize].clone(),
                accesses,
            })
            .collect()
    }
}

/// The table row of one access site or data structure.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct OwnerRow {
    /// The site's code address (`0x401a2c`) or the structure's name.
    pub name: String,
    /// For a site: `file:line` when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub function: Option<String>,
    /// For a site: the structure most of its counted accesses fell in (by the structures'
    /// address ranges, else the one the site table names).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structure: Option<String>,
    /// For a site whose counted accesses fell in several structures (a loop over two arrays
    /// swapped between calls): each, most accesses first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub structures: Vec<SiteStructure>,
    /// Trace records, and how many were loads, stores and modifies.
    pub accesses: u64,
    pub loads: u64,
    pub stores: u64,
    pub modifies: u64,
    /// Per data level, in hierarchy order, keyed by level name in JSON.
    #[serde(serialize_with = "levels_by_name")]
    pub levels: Vec<(String, OwnerLevel)>,
    pub temporal_hits: u64,
    pub spatial_hits: u64,
    /// Lines filled at the watched level, and the share of their bytes used.
    pub fills: u64,
    pub spatial_use: Option<f64>,
    /// Evictions of this owner's lines at the watched level, by evictor, most first.
    pub evicted_by: Vec<EvictedBy>,
}

fn levels_by_name<S: serde::Serializer>(
    levels: &[(String, OwnerLevel)],
    s: S,
) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut map = s.serialize_map(Some(levels.len()))?;
    for (name, level) in levels {
        map.serialize_entry(name, level)?;
    }
    map.end()
}

/// What re-simulating a partial trace found.
#[derive(Debug, Clone, serde::Serialize)]
pub struct PartialReplayReport {
    #[serde(flatten)]
    pub summary: ReplaySummary,
    /// Compression figures of the trace.
    pub compression: Compression,
    /// Threads the trace holds, each replayed on caches of its own.
    pub threads: usize,
    /// Each thread's counted records and level totals (the summary adds them up).
    pub per_thread: Vec<ThreadRow>,
    /// Threads whose last body never ended: what they recorded after their last finished
    /// body (an instance that was going on when the program exited) is not in the counts.
    pub unfinished_threads: Vec<u64>,
    /// Where the file stops when it has no `END` record (its writer was killed): the counts
    /// are those of the bodies its threads ended before, and sites may be unnamed.
    pub never_finished_at_byte: Option<u64>,
    /// What the recorder said every replay should say (a thread's instance cut at exit, threads
    /// that ran as cores of one machine).
    pub recording_notes: Vec<String>,
    /// The data level the per-owner temporal/spatial and evictor columns are about.
    pub watched_level: String,
    pub sites: Vec<OwnerRow>,
    pub structures: Vec<OwnerRow>,
}

/// One thread's part of a replay.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ThreadRow {
    /// The thread's number in the trace.
    pub thread: u64,
    /// Its records in counted spans.
    pub records: RecordCounts,
    /// Its level totals over its counted spans, keyed by level name in JSON.
    #[serde(serialize_with = "replay::levels_by_name")]
    pub levels: Vec<LevelTotals>,
}

/// How well the trace compressed.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Compression {
    #[serde(flatten)]
    pub stats: TraceStats,
    pub accesses_per_byte: f64,
    /// Share of the accesses covered by descriptors, from 0 to 1.
    pub described_share: f64,
}

/// Replays `trace` through `hierarchy` (see the module documentation) and builds the tables at
/// data level `level`.
pub fn replay_partial(
    trace: &PartialTrace,
    hierarchy: &mut Hierarchy,
    compat: bool,
    level: usize,
) -> Result<PartialReplayReport, PartialReplayError> {
    if level >= hierarchy.depth() {
        return Err(PartialReplayError::NoSuchLevel {
            level,
            depth: hierarchy.depth(),
        });
    }
    let line_size = hierarchy.line_size(level);
    if line_size > MAX_LINE_SIZE {
        return Err(PartialReplayError::LineTooLong { level, line_size });
    }
    let owners = Owners::of(trace);
    let mut sites = OwnerTracker::new(owners.sites.len(), level, line_size);
    let mut structures = OwnerTracker::new(owners.structures.len(), level, line_size);
    let clamp_to = if compat {
        hierarchy.min_line_size()
    } else {
        u32::MAX
    };
    hierarchy.set_record_lines(true);
    let mut counts = RecordCounts {
        instr_simulated: hierarchy.spec().instr.is_some(),
        ..RecordCounts::default()
    };
    // The levels' totals over the counted spans; the hierarchy's own count the current one.
    let mut counted: Vec<(String, LevelStats)> = hierarchy
        .stats()
        .map(|(name, _)| (name.to_owned(), LevelStats::default()))
        .collect();
    // A thread's, added to `counted` when it ends.
    let mut thread_counted = counted.clone();
    let add_span = |counted: &mut Vec<(String, LevelStats)>, hierarchy: &Hierarchy| {
        for ((_, sum), (_, s)) in counted.iter_mut().zip(hierarchy.stats()) {
            *sum += s;
        }
    };
    let mut per_thread = Vec::with_capacity(trace.threads().len());
    let mut end_thread = |id: u64,
                          thread_counted: &mut Vec<(String, LevelStats)>,
                          counted: &mut Vec<(String, LevelStats)>,
                          records: RecordCounts| {
        for ((_, sum), (_, s)) in counted.iter_mut().zip(thread_counted.iter()) {
            *sum += s;
        }
        per_thread.push(ThreadRow {
            thread: id,
            records,
            levels: thread_counted
                .iter()
                .map(|(name, s)| LevelTotals::new(name, s))
                .collect(),
        });
        for (_, s) in thread_counted.iter_mut() {
            *s = LevelStats::default();
        }
    };
    let mut thread_start = counts;
    // Each thread replays on caches of its own, from the state the caller's hierarchy is in.
    let fresh = hierarchy.clone();
    // Nothing counts until the first access says whether it does.
    let mut in_span = false;
    sites.counting = false;
    structures.counting = false;
    let mut ignored = RecordCounts::default();
    let mut site_structures = SiteStructures::new(owners.sites.len());
    for (index, thread) in trace.threads().iter().enumerate() {
        if index > 0 {
            if in_span {
                add_span(&mut thread_counted, hierarchy);
            }
            let previous = trace.threads()[index - 1].id();
            end_thread(
                previous,
                &mut thread_counted,
                &mut counted,
                counts.since(&thread_start),
            );
            thread_start = counts;
            in_span = false;
            (sites.counting, structures.counting) = (false, false);
            // The residencies end with the thread's caches.
            sites.finish();
            structures.finish();
            *hierarchy = fresh.clone();
        }
        let mut spans = thread.counted_spans();
        for (seq, access) in thread.accesses().enumerate() {
            let access = access?;
            let counting = spans.counts(seq as u64);
            if counting != in_span {
                if counting {
                    hierarchy.reset_stats();
                } else {
                    add_span(&mut thread_counted, hierarchy);
                }
                in_span = counting;
                sites.counting = counting;
                structures.counting = counting;
            }
            let counts = if counting { &mut counts } else { &mut ignored };
            let site = owners.site_index[&access.site];
            let structure = owners.structure_of(access.addr, site);
            if counting {
                site_structures.count(site, structure);
            }
            sites.on_record(site, access.kind);
            structures.on_record(structure, access.kind);
            let size = access.size.min(clamp_to);
            counts.clamped += u64::from(size != access.size);
            let kinds: &[AccessKind] = match access.kind {
                TraceKind::Instr => {
                    counts.instr += 1;
                    if hierarchy.spec().instr.is_some() {
                        hierarchy.fetch(access.addr, access.size);
                    }
                    &[]
                }
                TraceKind::Load => {
                    counts.loads += 1;
                    &[AccessKind::Read]
                }
                TraceKind::Store => {
                    counts.stores += 1;
                    &[AccessKind::Write]
                }
                TraceKind::Modify => {
                    counts.modifies += 1;
                    if compat {
                        &[AccessKind::Read]
                    } else {
                        &[AccessKind::Read, AccessKind::Write]
                    }
                }
            };
            for &kind in kinds {
                let outcome = hierarchy.access(access.addr, size, kind);
                let events = hierarchy.line_events();
                sites.on_access(site, (access.addr, size), &outcome, events);
                structures.on_access(structure, (access.addr, size), &outcome, events);
            }
        }
    }
    if in_span {
        add_span(&mut thread_counted, hierarchy);
    }
    if let Some(last) = trace.threads().last() {
        end_thread(
            last.id(),
            &mut thread_counted,
            &mut counted,
            counts.since(&thread_start),
        );
    }
    hierarchy.set_record_lines(false);
    sites.finish();
    structures.finish();
    let level_names: Vec<String> = hierarchy
        .spec()
        .data
        .iter()
        .map(|l| l.name.clone())
        .collect();
    let summary = summarize_stats(
        hierarchy,
        counted.iter().map(|(name, s)| (name.as_str(), s)),
        compat,
        counts,
    );
    let stats = trace.stats();
    let site_names: Vec<String> = owners.sites.iter().map(|s| format!("{s:#x}")).collect();
    let mut site_rows = rows(&sites, &site_names, &level_names);
    for (index, (row, &addr)) in site_rows.iter_mut().zip(&owners.sites).enumerate() {
        if let Some(info) = trace.sites().get(&addr) {
            row.source = (!info.file.is_empty()).then(|| format!("{}:{}", info.file, info.line));
            row.function = (!info.function.is_empty()).then(|| info.function.clone());
            row.structure = (!info.structure.is_empty()).then(|| info.structure.clone());
        }
        let mut touched = site_structures.of(index, &owners.structures);
        // Accesses of no named structure stay in the structure table's `(other)` row.
        touched.retain(|s| s.name != OTHER);
        if let Some(first) = touched.first() {
            row.structure = Some(first.name.clone());
        }
        if touched.len() > 1 {
            row.structures = touched;
        }
    }
    Ok(PartialReplayReport {
        summary,
        compression: Compression {
            stats,
            accesses_per_byte: stats.accesses_per_byte(),
            described_share: stats.described_share(),
        },
        threads: trace.threads().len(),
        per_thread,
        unfinished_threads: trace.unfinished_threads().to_vec(),
        never_finished_at_byte: trace.never_finished(),
        recording_notes: trace.notes().to_vec(),
        watched_level: level_names[level].clone(),
        sites: site_rows,
        structures: rows(&structures, &owners.structures, &level_names)
            .into_iter()
            .filter(|r| r.accesses > 0)
            .collect(),
    })
}

/// The numbering of sites and structures of one trace.
#[derive(Debug)]
pub(crate) struct Owners {
    /// Code addresses, sorted.
    pub(crate) sites: Vec<u64>,
    pub(crate) site_index: HashMap<u64, u32>,
    /// Range names first (in the trace's order), then site-table structure names, then
    /// [`OTHER`].
    pub(crate) structures: Vec<String>,
    ranges: RangeSet,
    /// Per site: the structure its site-table entry names, else [`OTHER`].
    site_structure: Vec<u32>,
}

impl Owners {
    pub(crate) fn of(trace: &PartialTrace) -> Self {
        let sites = trace.site_addresses();
        let site_index = sites
            .iter()
            .enumerate()
            .map(|(i, &s)| (s, i as u32))
            .collect();
        let mut structures: Vec<String> = Vec::new();
        let mut ranges = RangeSet::new();
        for r in trace.ranges() {
            let named = NamedRange {
                name: r.name.clone(),
                range: AddressRange {
                    start: r.start,
                    end: r.end,
                },
                bucket_bytes: r.end - r.start,
            };
            // A range overlapping an earlier one is left out; its accesses go by site.
            if ranges.insert(named).is_ok() {
                structures.push(r.name.clone());
            }
        }
        let index_of = |name: &str, structures: &mut Vec<String>| match structures
            .iter()
            .position(|s| s == name)
        {
            Some(i) => i as u32,
            None => {
                structures.push(name.to_owned());
                (structures.len() - 1) as u32
            }
        };
        let site_structure: Vec<u32> = sites
            .iter()
            .map(|s| {
                let name = trace
                    .sites()
                    .get(s)
                    .map(|i| i.structure.as_str())
                    .filter(|n| !n.is_empty())
                    .unwrap_or(OTHER);
                index_of(name, &mut structures)
            })
            .collect();
        index_of(OTHER, &mut structures);
        Self {
            sites,
            site_index,
            structures,
            ranges,
            site_structure,
        }
    }

    pub(crate) fn structure_of(&self, addr: u64, site: u32) -> u32 {
        match self.ranges.find(addr) {
            Some(range) => range as u32,
            None => self.site_structure[site as usize],
        }
    }
}

fn rows(tracker: &OwnerTracker, names: &[String], level_names: &[String]) -> Vec<OwnerRow> {
    let mut evicted: Vec<Vec<(u32, u64)>> = vec![Vec::new(); names.len()];
    for (&(evictor, victim), &lines) in &tracker.evictions {
        evicted[victim as usize].push((evictor, lines));
    }
    tracker
        .counts
        .iter()
        .zip(names)
        .zip(evicted)
        .map(|((c, name), mut by)| {
            let total: u64 = by.iter().map(|&(_, n)| n).sum();
            by.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
            OwnerRow {
                name: name.clone(),
                source: None,
                function: None,
                structure: None,
                structures: Vec::new(),
                accesses: c.records,
                loads: c.by_kind[0],
                stores: c.by_kind[1],
                modifies: c.by_kind[2],
                levels: level_names
                    .iter()
                    .enumerate()
                    .map(|(l, level)| {
                        let (accesses, misses) = (c.reached[l], c.misses[l]);
                        (
                            level.clone(),
                            OwnerLevel {
                                accesses,
                                hits: accesses - misses,
                                misses,
                                miss_ratio: (accesses > 0).then(|| misses as f64 / accesses as f64),
                            },
                        )
                    })
                    .collect(),
                temporal_hits: c.temporal_hits,
                spatial_hits: c.spatial_hits,
                fills: c.fills,
                spatial_use: (c.fills > 0)
                    .then(|| c.bytes_used as f64 / (c.fills as f64 * f64::from(tracker.line_size))),
                evicted_by: by
                    .into_iter()
                    .map(|(evictor, lines)| EvictedBy {
                        evictor: names[evictor as usize].clone(),
                        lines,
                        share: lines as f64 / total as f64,
                    })
                    .collect(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests;
