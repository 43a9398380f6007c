//! One thread's monitoring work at region boundaries: binding a tool's requests to the simulated
//! counter array at a region's entry and publishing their results at its exit, and, in standalone
//! mode, counting every event per region and per data structure.

use std::collections::HashMap;

use epcache_shm::layout::{
    self, Aggregation, Mode, RequestSpec, RequestTarget, ResultRow, ResultText, RowThreads,
    analysis_bits,
};
use epcache_shm::target::ActiveRequest;
use epcache_sim::analysis::AnalysisConfig;
use epcache_sim::cache::{AccessOutcome, MAX_LEVELS};
use epcache_sim::monitor::{EventIndex, FieldLayout, FieldSpan, HistogramIndex};
use epcache_sim::ranges::{AddressRange, NamedRange, RangeSet};
use epcache_sim::simulator::Simulator;

use super::cores;
use super::data;
use super::gate_abi;
use super::line_table::{LineTable, NO_REGION_NODE};
use super::mcc;
use super::region_registry::RegionRef;
use super::request_results;
use super::structure_finder::StructureFinder;
use super::switches;

/// Read hit, read miss, write hit, write miss per data level (the order of
/// `AccessOutcome::bits_at`'s bits), then the coherence events of a machine of cores: per
/// level coherence, false-sharing and true-sharing misses and, in level 1's fourth slot,
/// invalidations (the order of the coherence bits in each level's byte, `COHERENCE_MISS` up).
pub(crate) type Counts = [u64; COUNTS];

/// Counters in [`Counts`]: four access outcomes and four coherence events per level.
pub(crate) const COUNTS: usize = 8 * MAX_LEVELS;

/// Where the coherence counters start in [`Counts`].
pub(crate) const COHERENCE_COUNTS: usize = 4 * MAX_LEVELS;

/// One region's standalone totals over its instances on one thread.
#[derive(Debug, Clone, Default)]
pub(crate) struct RegionCounts {
    pub(crate) instances: u64,
    pub(crate) levels: Counts,
    /// Per data-structure index.
    pub(crate) structures: Vec<Counts>,
}

impl RegionCounts {
    pub(crate) fn merge(&mut self, other: &RegionCounts) {
        self.instances += other.instances;
        add(&mut self.levels, &other.levels);
        merge_structures(&mut self.structures, &other.structures);
    }
}

pub(crate) fn merge_structures(into: &mut Vec<Counts>, from: &[Counts]) {
    if into.len() < from.len() {
        into.resize(from.len(), [0; COUNTS]);
    }
    for (a, b) in into.iter_mut().zip(from) {
        add(a, b);
    }
}

/// Adds to `acc` what a thread counted since `snapshot` (its running `totals` and
/// `structures` now, less the snapshot's; a structure the snapshot lacks had counted nothing).
fn add_since(acc: &mut RegionCounts, totals: &Counts, structures: &[Counts], snapshot: &Snapshot) {
    for (a, (now, then)) in acc
        .levels
        .iter_mut()
        .zip(totals.iter().zip(&snapshot.levels))
    {
        *a += now - then;
    }
    if acc.structures.len() < structures.len() {
        acc.structures.resize(structures.len(), [0; COUNTS]);
    }
    for (i, now) in structures.iter().enumerate() {
        let then = snapshot.structures.get(i);
        for (k, a) in acc.structures[i].iter_mut().enumerate() {
            *a += now[k] - then.map_or(0, |t| t[k]);
        }
    }
}

/// A data structure's counts, grown into existence at its first count: the structure was found
/// by whichever finder attributed the access (`structure_finder.rs`), which may not be this
/// monitoring's own.
#[inline(always)]
fn counts_of(structures: &mut Vec<Counts>, structure: Option<usize>) -> Option<&mut Counts> {
    let s = structure?;
    if s >= structures.len() {
        grow(structures, s);
    }
    structures.get_mut(s)
}

#[cold]
#[inline(never)]
fn grow(structures: &mut Vec<Counts>, s: usize) {
    structures.resize(s + 1, [0; COUNTS]);
}

/// [`counts_of`] of a structure given as its index + 1 (0 for none), the form records and
/// filter slots carry it in: one comparison with the length answers both "none" (0 less one
/// wraps past any length) and "not grown yet", so the batch's loop never makes an `Option`
/// of it only to undo it for the line table's key.
#[inline(always)]
fn counts_of_plus_one(structures: &mut Vec<Counts>, plus_one: u32) -> Option<&mut Counts> {
    let index = (plus_one as usize).wrapping_sub(1);
    if index >= structures.len() {
        return grown_counts(structures, plus_one);
    }
    Some(&mut structures[index])
}

/// [`counts_of_plus_one`] past the vector's length: none for 0, else the vector grown to it.
#[cold]
#[inline(never)]
fn grown_counts(structures: &mut Vec<Counts>, plus_one: u32) -> Option<&mut Counts> {
    let index = (plus_one as usize).checked_sub(1)?;
    grow(structures, index);
    structures.get_mut(index)
}

fn add(a: &mut Counts, b: &Counts) {
    for (x, y) in a.iter_mut().zip(b) {
        *x += y;
    }
}

/// What counts a request is bound to in the event set right now.
#[derive(Debug, Clone, Copy)]
enum Bound {
    Nothing,
    Static(EventIndex),
    Histogram(HistogramIndex),
}

/// A tool's request being served on this thread.
#[derive(Debug)]
struct Binding {
    request: ActiveRequest,
    /// Monitored-region depth it was bound at: it ends with that region instance.
    depth: u32,
    bucket_bytes: u64,
    /// The sizes its data had while the instance counted (the data may be allocated, grown,
    /// shrunk or freed inside it).
    sizes: request_results::InstanceSizes,
    bound: Bound,
    /// Counts from before the event set was last rebuilt.
    banked_total: u64,
    banked_buckets: Vec<u64>,
}

impl Binding {
    fn is_analysis(&self) -> bool {
        self.request.spec.analyses != 0
    }
}

/// Snapshot taken at a standalone region's entry.
#[derive(Debug)]
struct Snapshot {
    region: u32,
    levels: Counts,
    structures: Vec<Counts>,
    /// An instance of a region already open on this thread (recursion): it counts as an
    /// instance, and its accesses only once, in the outermost instance, so a recursive
    /// function's counts stay within the program's (each level adding its subtree again made
    /// a mergesort's eight times the run's, and a recursion of depth n quadratic in n). It
    /// keeps no counts of its own, so it costs no copy.
    nested: bool,
    /// The regions open from here on, as a node of the line table's region paths.
    line_node: u32,
}

/// A thread's monitoring state.
#[derive(Debug)]
pub(crate) struct Monitoring {
    depth: u32,
    bindings: Vec<Binding>,
    /// Standalone mode: every access is attributed to a data structure.
    pub(crate) counting: bool,
    /// Which data structure an access belongs to (refreshed by the thread at its sync point
    /// after the data structures changed, `ThreadCapture::data_changed`).
    pub(crate) finder: StructureFinder,
    /// Cumulative counts of this thread, all accesses and per data structure.
    pub(crate) totals: Counts,
    pub(crate) structures: Vec<Counts>,
    stack: Vec<Snapshot>,
    /// Instances of each region (by id) open in `stack`.
    open: Vec<u32>,
    pub(crate) regions: HashMap<u32, RegionCounts>,
    /// Misses per code address, regions open and data structure (`line_table.rs`).
    pub(crate) lines: LineTable,
    /// The thread's OS id, read at its first per-thread result ([`os_thread_id`]).
    thread_id: Option<u32>,
    /// The thread's OpenMP number, as its per-thread results found it.
    openmp_number: Option<u32>,
    /// The runtime's number for the thread (`ThreadIdentity::index`), for its per-thread rows.
    pub(crate) thread_index: Option<u32>,
    /// The thread is a core of a machine (`cores.rs`), whose accesses the analyses, which
    /// follow one hierarchy's line events, never see: requests for them count without them.
    pub(crate) on_machine: bool,
}

impl Monitoring {
    /// A thread's monitoring; `counting` in standalone mode.
    pub(crate) fn new(counting: bool) -> Self {
        Monitoring {
            depth: 0,
            bindings: Vec::new(),
            counting,
            finder: StructureFinder::now(),
            totals: [0; COUNTS],
            structures: Vec::new(),
            stack: Vec::new(),
            open: Vec::new(),
            regions: HashMap::new(),
            lines: LineTable::default(),
            thread_id: None,
            openmp_number: None,
            thread_index: None,
            on_machine: false,
        }
    }

    /// Hands this thread's region and per-structure counts gathered since the last hand-over to
    /// `hand_over`, then starts them again from zero, in place (no allocation: a thread pool's
    /// worker hands over at the end of each task). A region still open here is checkpointed:
    /// what it counted so far goes with the hand-over (its instance is counted when it ends)
    /// and its entry snapshot starts again from zero, so its exit adds only the rest.
    pub(crate) fn hand_over_counts(
        &mut self,
        hand_over: impl FnOnce(&HashMap<u32, RegionCounts>, &[Counts], &LineTable, &Counts),
    ) {
        for snapshot in self.stack.iter_mut().filter(|s| !s.nested) {
            let acc = self.regions.entry(snapshot.region).or_default();
            add_since(acc, &self.totals, &self.structures, snapshot);
            snapshot.levels = [0; COUNTS];
            snapshot.structures.clear();
        }
        hand_over(&self.regions, &self.structures, &self.lines, &self.totals);
        self.lines.clear_counts();
        self.totals = [0; COUNTS];
        self.regions.clear();
        // Counting indexes the vector without growing it: it keeps its length.
        self.structures.fill([0; COUNTS]);
    }

    /// Ends every region still open on this thread as if it exited now, so its counts are not
    /// lost when the thread's capture goes away inside it: `exit` (C's, Fortran's `STOP`) runs
    /// the thread-local destructors before the report's exit handler could close them, and a
    /// thread may end inside a region.
    pub(crate) fn close_open_regions(&mut self) {
        while let Some(snapshot) = self.stack.pop() {
            self.close(snapshot);
        }
    }

    /// A region instance opened at `snapshot` ends: one instance more, and unless it is nested
    /// in another instance of its region, what was counted since.
    fn close(&mut self, snapshot: Snapshot) {
        if let Some(open) = self.open.get_mut(snapshot.region as usize) {
            *open = open.saturating_sub(1);
        }
        let acc = self.regions.entry(snapshot.region).or_default();
        acc.instances += 1;
        if !snapshot.nested {
            add_since(acc, &self.totals, &self.structures, &snapshot);
        }
    }

    /// Standalone counting of one per-line access. An L1 hit (nearly every access) adds two
    /// counters: the thread's and its structure's, both picked by the outcome's bits without a
    /// loop; an access that reached a deeper level goes through every level out of line.
    #[inline(always)]
    pub(crate) fn count(&mut self, addr: u64, outcome: &AccessOutcome, levels: usize, pc: u64) {
        let structure = self.finder.structure_of(addr);
        self.count_in(structure, outcome, levels, pc);
    }

    /// [`Self::count`] for an access already attributed to `structure`.
    #[inline(always)]
    pub(crate) fn count_in(
        &mut self,
        structure: Option<usize>,
        outcome: &AccessOutcome,
        levels: usize,
        pc: u64,
    ) {
        let bits = outcome.event_bits();
        // Only the first level reached: its one bit (read/write × hit/miss) is the index.
        if bits > 0 && bits < 0x100 {
            let index = bits.trailing_zeros() as usize & 3;
            self.totals[index] += 1;
            if let Some(counts) = counts_of(&mut self.structures, structure) {
                counts[index] += 1;
            }
            // A miss of a hierarchy of one level.
            if index & 1 == 1 {
                self.count_line(pc, structure, bits);
            }
            return;
        }
        self.count_levels(structure, outcome, levels, pc);
    }

    /// [`Self::count_in`] of an access whose outcome is given as its
    /// [`AccessOutcome::event_bits`]: each level reached has one bit set in its byte, so the
    /// bit's position names the counter, with no outcome read back from memory. A miss is also
    /// counted for its code address `pc` (`line_table.rs`).
    #[inline(always)]
    pub(crate) fn count_bits(&mut self, structure: Option<usize>, bits: u32, pc: u64) {
        let mut counts = counts_of(&mut self.structures, structure);
        // The first level is always reached: its counter without a loop.
        let first = (bits.trailing_zeros() & 3) as usize;
        self.totals[first] += 1;
        if let Some(counts) = counts.as_deref_mut() {
            counts[first] += 1;
        }
        let rest = bits & !0xFF;
        if rest == 0 {
            // A miss of a hierarchy of one level.
            if first & 1 == 1 {
                self.count_line(pc, structure, bits);
            }
            return;
        }
        // The second level, reached by every L1 miss: peeled off the loop, which only a third
        // level enters (the step loop's misses are most of the calls).
        debug_assert!(
            rest & 0xFF00 != 0,
            "a deeper level reached past L2: {bits:#x}"
        );
        let second = ((rest >> 8).trailing_zeros() & 3) as usize + 4;
        self.totals[second] += 1;
        if let Some(counts) = counts.as_deref_mut() {
            counts[second] += 1;
        }
        let mut rest = rest & !0xFF00;
        while rest != 0 {
            let bit = rest.trailing_zeros();
            // Level `bit / 8`, result `bit % 8` (0 to 3): counter `4 * level + result`.
            let index = (bit - 4 * (bit / 8)) as usize % (4 * MAX_LEVELS);
            self.totals[index] += 1;
            if let Some(counts) = counts.as_deref_mut() {
                counts[index] += 1;
            }
            rest &= rest - 1;
        }
        self.count_line(pc, structure, bits);
    }

    /// [`Self::count_bits`] of an L1 hit of a hierarchy of two levels or more (the batch's
    /// step loop tells its outcomes apart), of the structure `structure` (index + 1, 0 for
    /// none): the read or write hit's counter, picked by `write`.
    #[inline(always)]
    pub(crate) fn count_l1_hit(&mut self, structure: u32, write: bool) {
        let index = 2 * usize::from(write);
        self.totals[index] += 1;
        if let Some(counts) = counts_of_plus_one(&mut self.structures, structure) {
            counts[index] += 1;
        }
    }

    /// [`Self::count_bits`] of an L1 miss of a hierarchy of two levels, which L2 held or not
    /// (`l2_missed`), of the structure `structure` (index + 1, 0 for none), counted for code
    /// address `pc` under the regions open at line-table node `node` ([`Self::line_node`]).
    /// Both levels' counters are picked by arithmetic on `write` and `l2_missed`, with no bit
    /// to search and no branch on the outcome: which of the four outcomes a miss has follows
    /// the data, and a branch on it mispredicts.
    #[inline(always)]
    pub(crate) fn count_two_level_miss(
        &mut self,
        structure: u32,
        write: bool,
        l2_missed: bool,
        pc: u64,
        node: u32,
    ) {
        let (w, m) = (usize::from(write), usize::from(l2_missed));
        // Read hit, read miss, write hit, write miss per level: L1's miss, then L2's hit or miss.
        let (first, second) = (2 * w + 1, 4 + 2 * w + m);
        self.totals[first] += 1;
        self.totals[second] += 1;
        if let Some(counts) = counts_of_plus_one(&mut self.structures, structure) {
            counts[first] += 1;
            counts[second] += 1;
        }
        self.lines
            .count_two_level_miss(pc, node, structure, write, l2_missed);
    }

    /// The line table's node of the regions open now, which only a region's entry or exit
    /// changes: a batch of records, simulated between two boundaries, reads it once.
    #[inline]
    pub(crate) fn line_node(&self) -> u32 {
        self.stack.last().map_or(NO_REGION_NODE, |s| s.line_node)
    }

    /// L1 hits counted elsewhere (the repeat-hit filter's), of the structure `structure`
    /// (index + 1, 0 for none).
    pub(crate) fn add_l1_hits(&mut self, structure: u32, reads: u64, writes: u64) {
        self.add_l1_hits_to_totals(reads, writes);
        self.add_l1_hits_to_structure(structure, reads, writes);
    }

    /// [`Self::add_l1_hits`]'s part in the totals, for a caller that sums many first.
    pub(crate) fn add_l1_hits_to_totals(&mut self, reads: u64, writes: u64) {
        self.totals[0] += reads;
        self.totals[2] += writes;
    }

    /// [`Self::add_l1_hits`]'s part in the data structure's counts.
    #[inline(always)]
    pub(crate) fn add_l1_hits_to_structure(&mut self, structure: u32, reads: u64, writes: u64) {
        if let Some(counts) = counts_of_plus_one(&mut self.structures, structure) {
            counts[0] += reads;
            counts[2] += writes;
        }
    }

    /// Counts the coherence events of one access (a machine's `CoreOutcome::coherence` bits),
    /// beside its outcome, for `structure`, and for code address `pc` (`line_table.rs`).
    #[inline(never)]
    pub(crate) fn count_coherence(&mut self, structure: Option<usize>, coherence: u32, pc: u64) {
        let mut counts = counts_of(&mut self.structures, structure);
        let mut rest = coherence;
        while rest != 0 {
            let bit = rest.trailing_zeros();
            // Level `bit / 8`, event `bit % 8 - 4` (0 to 3): counter `4 * level + event`.
            let index = COHERENCE_COUNTS + (4 * (bit / 8) + (bit % 8).saturating_sub(4)) as usize;
            if let Some(total) = self.totals.get_mut(index) {
                *total += 1;
            }
            if let Some(c) = counts.as_deref_mut().and_then(|c| c.get_mut(index)) {
                *c += 1;
            }
            rest &= rest - 1;
        }
        self.count_line_events(pc, structure, 0, coherence);
    }

    /// Counts the misses in `bits` for code address `pc`, the regions open and `structure`.
    /// Inlined into the batch's step loop: as a call, its frame and the spills around it cost
    /// more than its work (docs/performance.md).
    #[inline(always)]
    fn count_line(&mut self, pc: u64, structure: Option<usize>, bits: u32) {
        self.count_line_events(pc, structure, bits, 0);
    }

    /// [`Self::count_line`] of misses (`bits`) and coherence events (`coherence`).
    #[inline(always)]
    fn count_line_events(&mut self, pc: u64, structure: Option<usize>, bits: u32, coherence: u32) {
        let node = self.line_node();
        let structure = structure.map_or(0, |s| s as u32 + 1);
        self.lines.count(pc, node, structure, bits, coherence);
    }

    #[inline(never)]
    fn count_levels(
        &mut self,
        structure: Option<usize>,
        outcome: &AccessOutcome,
        levels: usize,
        pc: u64,
    ) {
        for level in 0..levels.min(MAX_LEVELS) {
            let bits = outcome.bits_at(level);
            if bits == 0 {
                break;
            }
            let index = level * 4 + bits.trailing_zeros() as usize;
            self.totals[index] += 1;
            if let Some(counts) = counts_of(&mut self.structures, structure) {
                counts[index] += 1;
            }
        }
        let bits = outcome.event_bits();
        if bits & 0x0A0A_0A0A != 0 {
            self.count_line(pc, structure, bits);
        }
    }

    /// A monitored region instance begins.
    pub(crate) fn enter(&mut self, sim: &mut Simulator, region: RegionRef, requested: bool) {
        self.depth += 1;
        if self.counting {
            let id = region.id as usize;
            if self.open.len() <= id {
                self.open.resize(id + 1, 0);
            }
            let nested = self.open[id] > 0;
            self.open[id] += 1;
            let parent = self.stack.last().map_or(NO_REGION_NODE, |s| s.line_node);
            self.stack.push(if nested {
                Snapshot {
                    region: region.id,
                    levels: [0; COUNTS],
                    structures: Vec::new(),
                    nested,
                    // The same regions stay open.
                    line_node: parent,
                }
            } else {
                Snapshot {
                    region: region.id,
                    levels: self.totals,
                    structures: self.structures.clone(),
                    nested,
                    line_node: self.lines.paths.child(parent, region.id),
                }
            });
        }
        if !requested {
            return;
        }
        let (Some(m), Some(entry)) = (mcc::get(), region.entry) else {
            return;
        };
        // Requests naming an allocatable bind to where its descriptor points now.
        super::descriptors::check();
        let requests = m.active_requests(entry);
        if requests.is_empty() {
            return;
        }
        self.bank(sim);
        let line = u64::from(sim.hierarchy().line_size(0));
        let mut analysed = Vec::new();
        for request in requests {
            // A recursive instance keeps the outer binding.
            if self.bindings.iter().any(|b| {
                b.request.slot == request.slot && b.request.generation == request.generation
            }) {
                continue;
            }
            // The one thing the segment cannot check for the runtime: whether its own cache
            // has the event's level. Rejected once, rather than said at every boundary.
            if request.spec.event.level() >= sim.hierarchy().depth() {
                m.reject(request.slot, request.generation);
                continue;
            }
            let bucket_bytes = match request.spec.mode {
                // Its data does not exist yet: the width is the one it gets once it does.
                Mode::Histogram { .. } if request.range.is_empty() => 0,
                Mode::Histogram { .. } => request_results::bucket_width(
                    &request,
                    bucket_bytes(&request.spec, request.range, line),
                    m.buckets_per_slot() as u64,
                ),
                Mode::Static | Mode::Fields(_) => 0,
            };
            if request.spec.analyses != 0 {
                analysed.push(request);
            }
            if self.on_machine && request.spec.event.is_coherence() {
                cores::coherence_requested();
            }
            self.bindings.push(Binding {
                sizes: request_results::InstanceSizes::default().with(request.range.len()),
                request,
                depth: self.depth,
                bucket_bytes,
                bound: Bound::Nothing,
                banked_total: 0,
                banked_buckets: Vec::new(),
            });
        }
        if !analysed.is_empty() {
            if self.on_machine {
                no_analyses_on_a_machine();
            } else {
                start_analyses(sim, &analysed);
            }
        }
        self.start(sim);
    }

    /// A monitored region instance ends: results of the requests bound to it are published.
    pub(crate) fn exit(&mut self, sim: &mut Simulator, region: RegionRef) {
        if self.bindings.iter().any(|b| b.depth == self.depth) {
            self.bank(sim);
            let depth = self.depth;
            let (ending, staying): (Vec<_>, Vec<_>) = std::mem::take(&mut self.bindings)
                .into_iter()
                .partition(|b| b.depth == depth);
            self.bindings = staying;
            // Analysis requests ending together share the analyses' one report; the analyses
            // stop once no bound request asks for them.
            let report = ending
                .iter()
                .any(Binding::is_analysis)
                .then(|| analysis_text(sim, self.on_machine));
            for binding in ending {
                self.publish(binding, report.as_ref());
            }
            if report.is_some() && !self.bindings.iter().any(Binding::is_analysis) {
                let _ = sim.set_analyses(AnalysisConfig::default(), RangeSet::new());
            }
            self.start(sim);
        }
        if self.counting
            && let Some(snapshot) = self.stack.pop()
        {
            debug_assert_eq!(snapshot.region, region.id);
            self.close(snapshot);
        }
        self.depth = self.depth.saturating_sub(1);
    }

    /// The data structures changed (an allocation, a deallocation): a request bound at its
    /// region's entry to an allocatable or an allocation site follows its data to where it is
    /// now, so an instance that allocates its array again counts the new array, not the bytes
    /// the old one left, which another array may hold by now, and an instance entered before
    /// its array was allocated (a main program, a set-up routine) counts it from its
    /// allocation on. The counts so far are banked; while the data is gone (not allocated yet,
    /// or deallocated) the request counts nothing. A histogram keeps its buckets' offsets,
    /// widened as a larger array needs (`request_results`). Whether any request moved (its
    /// counters were set anew).
    pub(crate) fn follow_moved_data(&mut self, sim: &mut Simulator) -> bool {
        let movable = |b: &Binding| !matches!(b.request.spec.target, RequestTarget::Range(_));
        if !self.bindings.iter().any(movable) {
            return false;
        }
        let Some(m) = mcc::get() else { return false };
        let moved: Vec<(usize, AddressRange)> = self
            .bindings
            .iter()
            .enumerate()
            .filter(|(_, b)| movable(b))
            .filter_map(|(i, b)| {
                let now = m.where_now(&b.request).unwrap_or(AddressRange::new(0, 0));
                (now != b.request.range).then_some((i, now))
            })
            .collect();
        if moved.is_empty() {
            return false;
        }
        self.bank(sim);
        let line = u64::from(sim.hierarchy().line_size(0));
        let room = m.buckets_per_slot() as u64;
        for (i, range) in moved {
            let b = &mut self.bindings[i];
            b.request.range = range;
            b.sizes = b.sizes.with(range.len());
            if matches!(b.request.spec.mode, Mode::Histogram { .. }) && !range.is_empty() {
                let own = bucket_bytes(&b.request.spec, range, line);
                let width = request_results::bucket_width(&b.request, own, room);
                if b.bucket_bytes == 0 {
                    // The data's first bytes in this instance: nothing counted to regroup.
                    b.bucket_bytes = width;
                } else if width > b.bucket_bytes {
                    request_results::regroup(&mut b.banked_buckets, b.bucket_bytes, width);
                    b.bucket_bytes = width;
                }
            }
        }
        self.start(sim);
        true
    }

    /// Stops the event set and moves every binding's counts into its bank.
    fn bank(&mut self, sim: &mut Simulator) {
        let mut monitor = sim.monitor_mut();
        let values = if monitor.is_running() {
            monitor.stop().unwrap_or_default()
        } else {
            Vec::new()
        };
        for b in &mut self.bindings {
            match b.bound {
                Bound::Nothing => {}
                Bound::Static(i) => b.banked_total += values.get(i.0).copied().unwrap_or(0),
                Bound::Histogram(h) => {
                    if let Ok(hist) = monitor.read_histogram(h) {
                        if b.banked_buckets.len() < hist.buckets.len() {
                            b.banked_buckets.resize(hist.buckets.len(), 0);
                        }
                        for (a, v) in b.banked_buckets.iter_mut().zip(&hist.buckets) {
                            *a += v;
                        }
                    }
                }
            }
            b.bound = Bound::Nothing;
        }
        let _ = monitor.cleanup();
    }

    /// Binds every counting request to the event set again and starts it.
    fn start(&mut self, sim: &mut Simulator) {
        let line = u64::from(sim.hierarchy().line_size(0));
        let mut monitor = sim.monitor_mut();
        let mut any = false;
        for b in &mut self.bindings {
            // Its data is gone for now (`follow_moved_data`): nothing to count.
            if b.request.range.is_empty() {
                continue;
            }
            let event = b.request.spec.event.to_string();
            let bound = match b.request.spec.mode {
                Mode::Static => monitor
                    .add_event(&event, b.request.range)
                    .map(Bound::Static),
                Mode::Histogram { .. } => monitor
                    .add_histogram(&event, b.request.range, (b.bucket_bytes / line).max(1))
                    .map(Bound::Histogram),
                Mode::Fields(spans) => monitor
                    .add_field_histogram(&event, b.request.range, field_layout(&spans))
                    .map(Bound::Histogram),
            };
            match bound {
                Ok(bound) => {
                    b.bound = bound;
                    any = true;
                }
                Err(e) => eprintln!(
                    "epcache: request in slot {} cannot be served: {e}",
                    b.request.slot
                ),
            }
        }
        if any {
            monitor.reset();
            let _ = monitor.start();
        }
    }

    /// Adds the instance's counts of `binding` to its result; an analysis request's come with
    /// `report`, the analyses' report of this instance.
    fn publish(&mut self, binding: Binding, report: Option<&ResultText>) {
        let Some(m) = mcc::get() else { return };
        let request = binding.request;
        let text = match report {
            Some(text) if binding.is_analysis() => text.clone(),
            _ => ResultText::None,
        };
        let (total, buckets) = match request.spec.mode {
            Mode::Static => (binding.banked_total, Vec::new()),
            Mode::Histogram { .. } | Mode::Fields(_) => {
                (binding.banked_buckets.iter().sum(), binding.banked_buckets)
            }
        };
        let threads = match request.spec.aggregation {
            Aggregation::PerThread => {
                // The OpenMP number the thread has at an exit inside a parallel region (every
                // thread is 0 outside one), kept from the first exit that knew one other than 0.
                if self.openmp_number.is_none_or(|n| n == 0) {
                    self.openmp_number = gate_abi::openmp_thread_number();
                }
                RowThreads::Thread {
                    tid: *self.thread_id.get_or_insert_with(os_thread_id),
                    openmp: self.openmp_number,
                    index: self.thread_index,
                }
            }
            Aggregation::PerInstance | Aggregation::Summed => RowThreads::All,
        };
        let instance = ResultRow {
            threads,
            instances: 1,
            total,
            buckets,
        };
        // No publication while a thread is halted, and no halt announced during one: a tool
        // reads at a halt only complete results, which stay as they were until it releases.
        let _gate = switches::PublicationGate::enter();
        let (width, sizes) = (binding.bucket_bytes, binding.sizes);
        request_results::add(&request, instance, width, sizes, text, |result| {
            let _ = m.write_result(request.slot, result);
        });
    }
}

/// This thread's OS id (what `gettid` answers and `/proc/PID/task` lists), from
/// `/proc/thread-self`; 0 where /proc does not say.
fn os_thread_id() -> u32 {
    std::fs::read_link("/proc/thread-self")
        .ok()
        .and_then(|p| p.file_name()?.to_str()?.parse().ok())
        .unwrap_or(0)
}

/// Bytes per bucket: the width asked for, or the range split into the number asked for, rounded
/// up to whole lines (the counter array counts lines).
fn bucket_bytes(spec: &RequestSpec, range: AddressRange, line: u64) -> u64 {
    let Mode::Histogram {
        buckets,
        bucket_bytes,
    } = spec.mode
    else {
        return 0;
    };
    let raw = if bucket_bytes > 0 {
        bucket_bytes
    } else {
        range.len().div_ceil(u64::from(buckets.max(1)))
    };
    // Saturating: a request from the segment may cover the whole address space.
    raw.div_ceil(line).max(1).saturating_mul(line)
}

/// The counter array's buckets for a by-field request's member table.
fn field_layout(spans: &layout::FieldSpans) -> FieldLayout {
    FieldLayout {
        element_bytes: spans.element_bytes(),
        members: spans
            .members()
            .map(|(offset, bytes)| FieldSpan { offset, bytes })
            .collect(),
    }
}

/// Says once, on stderr, that a request's analyses are not run on a machine of cores: with no
/// word, the tool would show an analysis of no accesses.
fn no_analyses_on_a_machine() {
    static SAID: std::sync::Once = std::sync::Once::new();
    SAID.call_once(|| {
        eprintln!("epcache: a request asks for analyses: {ANALYSES_NOT_ON_A_MACHINE}")
    });
}

/// Why a request's analyses have no report when its thread is a core of a machine.
const ANALYSES_NOT_ON_A_MACHINE: &str = "the analyses (reuse, evictors, miss classes, reuse \
    distance) follow one hierarchy's lines and are not run when threads are cores of a machine \
    (EPCACHE_CORES); the request counts without them: run with EPCACHE_CORES=off for them";

/// Switches on the analyses the requests entering together ask for (the union of them: one
/// simulator runs one set), over every live data structure and the requests' own ranges where
/// they name one, as METRIC reports per data structure; a by-field request's array is divided
/// by its members too (spatial use per field).
fn start_analyses(sim: &mut Simulator, requests: &[ActiveRequest]) {
    let bits = requests.iter().fold(0, |bits, r| bits | r.spec.analyses);
    let config = AnalysisConfig {
        reuse: bits & analysis_bits::REUSE != 0,
        evictors: bits & analysis_bits::EVICTORS != 0,
        miss_classes: bits & analysis_bits::MISS_CLASSES != 0,
        reuse_distance: bits & analysis_bits::REUSE_DISTANCE != 0,
        level: 0,
    };
    let mut ranges = RangeSet::new();
    let line = u64::from(sim.hierarchy().line_size(0));
    for request in requests {
        if let layout::RequestTarget::Range(r) = request.spec.target {
            let _ = ranges.insert(NamedRange {
                name: format!("{:#x}+{}", r.start, r.len()),
                range: r,
                bucket_bytes: r.len().div_ceil(line).max(1).saturating_mul(line),
            });
        }
    }
    for d in data::all().into_iter().filter(|d| d.live) {
        // Overlapping structures (an alias of one already named) are left out.
        let _ = ranges.insert(NamedRange {
            name: d.name,
            bucket_bytes: d.range.len().div_ceil(line).max(1) * line,
            range: d.range,
        });
    }
    let by_field: Vec<(usize, FieldLayout)> = requests
        .iter()
        .filter_map(|request| match &request.spec.mode {
            Mode::Fields(spans) => ranges
                .find(request.range.start)
                .filter(|&i| ranges.get(i).range.start == request.range.start)
                .map(|i| (i, field_layout(spans))),
            _ => None,
        })
        .collect();
    let set_up = sim.set_analyses(config, ranges).and_then(|()| {
        by_field
            .iter()
            .try_for_each(|(range, layout)| sim.analyse_by_field(*range, layout))
    });
    if let Err(e) = set_up {
        let slots: Vec<String> = requests.iter().map(|r| r.slot.to_string()).collect();
        eprintln!(
            "epcache: analyses of request slot(s) {} cannot run: {e}",
            slots.join(", ")
        );
    }
}

/// The analysis report as JSON, or why there is none (the result block says when it does not
/// fit, `layout::write_result`).
fn analysis_text(sim: &Simulator, on_machine: bool) -> ResultText {
    if on_machine {
        return ResultText::Missing(ANALYSES_NOT_ON_A_MACHINE.into());
    }
    match sim.analysis_report().map(|r| serde_json::to_string(&r)) {
        Some(Ok(json)) => ResultText::Report(json),
        Some(Err(e)) => {
            ResultText::Missing(format!("the analysis report could not be written: {e}"))
        }
        None => {
            ResultText::Missing("the analyses could not run in this target; see its stderr".into())
        }
    }
}
