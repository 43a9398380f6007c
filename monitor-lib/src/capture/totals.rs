//! The run's totals: what the threads' simulators counted per cache level, and the standalone
//! report's counts per region and per data structure, summed as each thread hands its counts
//! on (when it ends, at its last region's end, before it blocks in a join, or at exit).
//!
//! Each thread simulates its own hierarchy, or its core of one machine (`cores.rs`); the level
//! totals are sums of what each thread's accesses did.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use epcache_sim::cache::LevelStats;
use epcache_sim::simulator::Simulator;

use super::line_table::{LineTable, LineTotals};
use super::monitoring::{COUNTS, Counts, RegionCounts, merge_structures};

/// Cache-level totals of the threads merged so far.
static TOTALS: Mutex<CaptureTotals> = Mutex::new(CaptureTotals::empty());
/// Standalone counts of threads that ended (or were flushed).
static STANDALONE_TOTALS: Mutex<StandaloneTotals> = Mutex::new(StandaloneTotals::empty());
/// L1 accesses the repeat-hit table answered (inline or in the hooks) without simulating, in
/// the totals so far.
static REPEAT_HITS: AtomicU64 = AtomicU64::new(0);
/// Accesses simulated from batches (records of the inline miss path, or staged by the
/// runtime), on the program's threads or the worker.
static BATCHED: AtomicU64 = AtomicU64::new(0);

/// How the accesses in the totals were handled, for the report: `(repeat hits, batched)`;
/// every other access was simulated one at a time as it happened.
pub(super) fn handled() -> (u64, u64) {
    (
        REPEAT_HITS.load(Ordering::Relaxed),
        BATCHED.load(Ordering::Relaxed),
    )
}

/// `records` accesses were simulated from a batch.
pub(super) fn count_batched(records: usize) {
    BATCHED.fetch_add(records as u64, Ordering::Relaxed);
}

/// The run's totals per cache level, summed over the threads whose state has been merged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaptureTotals {
    /// Level name and totals, in hierarchy order (the instruction cache first when present).
    pub levels: Vec<(String, LevelStats)>,
    /// How many threads' simulators were merged.
    pub threads: u32,
}

impl CaptureTotals {
    const fn empty() -> Self {
        Self {
            levels: Vec::new(),
            threads: 0,
        }
    }

    /// Adds a thread's simulator's totals, and the L1 read and write hits counted without it;
    /// `new_thread` when this thread's totals were never merged before.
    fn merge(&mut self, simulator: &Simulator, repeat_hits: [u64; 2], new_thread: bool) {
        let l1 = simulator.hierarchy().level_stats(0);
        for (name, stats) in simulator.hierarchy().stats() {
            let slot = match self.levels.iter().position(|(n, _)| n == name) {
                Some(i) => &mut self.levels[i].1,
                None => {
                    self.levels.push((name.to_owned(), LevelStats::default()));
                    &mut self.levels.last_mut().expect("just pushed").1
                }
            };
            // The repeat hits belong to the first data level, wherever it is listed.
            let repeat = if std::ptr::eq(stats, l1) {
                repeat_hits
            } else {
                [0; 2]
            };
            *slot += stats;
            slot.reads += repeat[0];
            slot.writes += repeat[1];
        }
        self.threads += u32::from(new_thread);
    }
}

/// Standalone counts summed over threads: per region, and over the whole run per structure;
/// and per thread, each region's instances and counts (not per structure).
#[derive(Debug, Clone)]
pub(crate) struct StandaloneTotals {
    pub(crate) regions: Vec<(u32, RegionCounts)>,
    pub(crate) structures: Vec<Counts>,
    /// Misses per code address, regions open and data structure.
    pub(crate) lines: LineTotals,
    /// Per thread, in the order threads first handed counts on.
    pub(crate) threads: Vec<ThreadRegions>,
    /// Everything the threads counted, in or out of regions: the whole run's coherence events
    /// of the threads that handed their counts on (a machine's own totals would also hold
    /// those of threads that never did, which the level totals leave out).
    pub(crate) whole: Counts,
}

/// Who a thread is, for its rows in the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ThreadIdentity {
    /// The runtime's own number: the order in which threads started capturing, from 0.
    pub(crate) index: u32,
    /// Its OpenMP thread number, when the program has OpenMP and the thread ran in a parallel
    /// region (see `gate_abi::openmp_thread_number`).
    pub(crate) openmp: Option<u32>,
    /// Its core of the machine `EPCACHE_CORES` asks for.
    pub(crate) core: Option<u32>,
}

/// One thread's regions: id, instances and counts.
#[derive(Debug, Clone)]
pub(crate) struct ThreadRegions {
    pub(crate) who: ThreadIdentity,
    pub(crate) regions: Vec<(u32, u64, Counts)>,
}

impl StandaloneTotals {
    const fn empty() -> Self {
        Self {
            regions: Vec::new(),
            structures: Vec::new(),
            lines: LineTotals::empty(),
            threads: Vec::new(),
            whole: [0; COUNTS],
        }
    }

    fn merge(
        &mut self,
        regions: &HashMap<u32, RegionCounts>,
        structures: &[Counts],
        lines: &LineTable,
        whole: &Counts,
        who: ThreadIdentity,
    ) {
        self.lines.merge(lines);
        for (a, b) in self.whole.iter_mut().zip(whole) {
            *a += b;
        }
        for (&id, counts) in regions {
            match self.regions.iter_mut().find(|(r, _)| *r == id) {
                Some((_, acc)) => acc.merge(counts),
                None => self.regions.push((id, counts.clone())),
            }
        }
        merge_structures(&mut self.structures, structures);
        let at = match self.threads.iter().position(|t| t.who.index == who.index) {
            Some(at) => at,
            None => {
                self.threads.push(ThreadRegions {
                    who,
                    regions: Vec::new(),
                });
                self.threads.len() - 1
            }
        };
        let thread = &mut self.threads[at];
        // A later hand-over may know the OpenMP number an earlier one did not.
        thread.who.openmp = who.openmp.or(thread.who.openmp);
        for (&id, counts) in regions {
            match thread.regions.iter_mut().find(|(r, _, _)| *r == id) {
                Some((_, instances, levels)) => {
                    *instances += counts.instances;
                    for (a, b) in levels.iter_mut().zip(&counts.levels) {
                        *a += b;
                    }
                }
                None => thread.regions.push((id, counts.instances, counts.levels)),
            }
        }
    }
}

/// Adds a thread's simulator's totals and the L1 hits its repeat-hit filter counted
/// (`repeat_hits`); `new_thread` when the totals do not count this thread yet.
pub(super) fn merge_into_totals(simulator: &Simulator, repeat_hits: [u64; 2], new_thread: bool) {
    // A poisoned lock only means another thread panicked mid-merge; its numbers are still sums.
    let mut totals = TOTALS.lock().unwrap_or_else(|e| e.into_inner());
    totals.merge(simulator, repeat_hits, new_thread);
    REPEAT_HITS.fetch_add(repeat_hits[0] + repeat_hits[1], Ordering::Relaxed);
}

/// Adds a thread's standalone counts per region and per data structure, its misses per code
/// address, everything it counted (`whole`), and its own rows.
pub(super) fn merge_standalone(
    regions: &HashMap<u32, RegionCounts>,
    structures: &[Counts],
    lines: &LineTable,
    whole: &Counts,
    who: ThreadIdentity,
) {
    STANDALONE_TOTALS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .merge(regions, structures, lines, whole, who);
}

/// The totals of every thread merged so far (exited threads and flushed ones).
pub fn totals() -> CaptureTotals {
    TOTALS.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

/// The standalone counts of every thread merged so far.
pub(super) fn standalone_totals() -> StandaloneTotals {
    STANDALONE_TOTALS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone()
}
