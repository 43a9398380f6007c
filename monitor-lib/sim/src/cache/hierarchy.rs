//! A chain of cache levels: where each access goes, what it hits, what it evicts, and per-level totals.
//!
//! The model's conventions (ours where the EP-Cache papers say nothing, Cachegrind's where
//! replay must reproduce its counts):
//! - An access of at most one L1 line counts once at each level it reaches and misses there if
//!   any of its lines misses, as Cachegrind counts; `Simulator` splits wider accesses per line.
//! - Below a miss, native mode sends only the missing lines down; Cachegrind mode sends the
//!   whole access again, as Cachegrind does, since that changes LRU state in the last level.
//! - Write-back levels mark lines dirty and write a dirty victim into the next level (filling
//!   it there if absent), counted as `writebacks`. A fill below a write-back level is a read,
//!   so only the first write-back level holds dirty data. Write-through levels pass every write
//!   down and do not allocate on a write miss. Cachegrind mode models no write-back traffic.
//! - Inclusion is per level: an inclusive level's eviction back-invalidates the levels above
//!   (I1 included), and a dirty copy above makes the victim dirty.
//! - Below a write-back L1 every level sees a read-allocate of the same block, so the common
//!   miss (one line, one line size throughout, no line events) has a walk of its own; the
//!   general walk (request lists, write-through, line events, fetches) is tested against it.

use super::level::{
    CacheLevel, FastHit, PackedIn, PackedLru, Probe, RunEnd, Store, Victim, in_one_line,
};
use super::outcome::{
    AccessOutcome, LevelResult, LevelStats, LineEvent, LineEventKind, MAX_LEVELS,
};
use super::spec::{HierarchySpec, LevelSpec};
use super::two_level::{self, Step, Steps, TwoLevel, Watch};
use super::{AccessKind, CacheError, Geometry, Replacement, WritePolicy};

impl LevelStats {
    /// Counts one demand access that reached this level.
    #[inline(always)]
    fn record(&mut self, path: Path, kind: AccessKind, missed: bool) {
        let missed = u64::from(missed);
        match (path, kind) {
            (Path::Instr, _) => {
                self.instr_fetches += 1;
                self.instr_misses += missed;
            }
            (Path::Data, AccessKind::Read) => {
                self.reads += 1;
                self.read_misses += missed;
            }
            (Path::Data, AccessKind::Write) => {
                self.writes += 1;
                self.write_misses += missed;
            }
        }
    }
}

/// In [`AccessOutcome::event_bits`], the results of every level past the first.
const RESULTS_PAST_FIRST: u32 = 0x0F0F_0F00;

/// The data levels, first to last, in a fixed array: the first level then sits at a fixed
/// offset of the hierarchy, and the L1 fast path reaches its sets without first loading where
/// a vector keeps them and checking its length. Slots past `len` hold a one-line placeholder
/// that nothing reaches; the levels are seen as the slice `levels[..len]`.
#[derive(Debug, Clone)]
struct Levels {
    levels: [Level; MAX_LEVELS],
    len: usize,
}

impl Levels {
    fn new(data: Vec<Level>) -> Self {
        let len = data.len();
        assert!((1..=MAX_LEVELS).contains(&len));
        let mut data = data.into_iter();
        let levels = std::array::from_fn(|_| data.next().unwrap_or_else(Level::placeholder));
        Self { levels, len }
    }
}

impl std::ops::Deref for Levels {
    type Target = [Level];
    fn deref(&self) -> &[Level] {
        &self.levels[..self.len]
    }
}

impl std::ops::DerefMut for Levels {
    fn deref_mut(&mut self) -> &mut [Level] {
        &mut self.levels[..self.len]
    }
}

#[derive(Debug, Clone)]
struct Level {
    name: String,
    cache: CacheLevel,
    write: WritePolicy,
    inclusive: bool,
    stats: LevelStats,
}

impl Level {
    fn new(spec: &LevelSpec) -> Result<Self, CacheError> {
        Ok(Self {
            name: spec.name.clone(),
            cache: CacheLevel::new(spec.geometry, spec.replacement)?,
            write: spec.write,
            inclusive: spec.inclusive,
            stats: LevelStats::default(),
        })
    }

    /// An unused slot of [`Levels`].
    fn placeholder() -> Self {
        let geometry = Geometry::new(4, 1, 4).expect("one 4-byte line is a valid geometry");
        Self {
            name: String::new(),
            cache: CacheLevel::new(geometry, Replacement::Lru).expect("LRU takes one way"),
            write: WritePolicy::WriteBack,
            inclusive: false,
            stats: LevelStats::default(),
        }
    }
}

/// Which first level a path starts at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Path {
    Data,
    Instr,
}

/// A simulated memory hierarchy: an optional first-level instruction cache and one or more data
/// (or unified) levels below, the deeper ones shared by both paths.
#[derive(Debug, Clone)]
pub struct Hierarchy {
    spec: HierarchySpec,
    instr: Option<Level>,
    data: Levels,
    /// Cachegrind's convention: when any line of an access misses, the next level sees the
    /// whole access again, not just the lines that missed.
    refetch_whole_access: bool,
    /// Dirty evictions travel to the next level. Cachegrind does not model them.
    model_writebacks: bool,
    record_lines: bool,
    /// The L1 hit fast path applies: no line recording, L1 is not write-through (whose write
    /// hits must still go down), and L1's sets are indexed by a mask.
    fast_hits: bool,
    /// `l1_line + 1` when `fast_hits`, else 0: the inlined path's one-line test
    /// (`offset + size < l1_limit`) then also says whether the fast path is on.
    l1_limit: u64,
    /// `l1_line - 1`.
    l1_offset_mask: u64,
    /// L1's set mask when `fast_hits`.
    l1_mask: u64,
    /// L1's line size and its log2, kept here so the inlined fast path reads them from the
    /// hierarchy it already has in a register, not through the level.
    l1_line: u64,
    l1_bits: u32,
    /// Every level has the same line size, so a one-line access is one block all the way down.
    uniform_lines: bool,
    /// The hierarchy is the common one [`two_level`] simulates in one loop: `fast_hits`, two
    /// data levels, L2's lines at least as long as L1's, both true LRU in packed stores with a
    /// power-of-two number of sets, and an L2 that is write-back and not inclusive (so an L2
    /// eviction never reaches back into L1).
    two_level: Option<TwoLevel>,
    /// [`Self::miss_step`] watched by nothing, for [`Self::access`]; kept with `two_level`.
    unwatched_step: Option<MissStep<()>>,
    line_events: Vec<LineEvent>,
    requests: Vec<(u64, u64)>,
    next_requests: Vec<(u64, u64)>,
}

impl Hierarchy {
    /// Builds an empty hierarchy from its description.
    pub fn new(spec: &HierarchySpec) -> Result<Self, CacheError> {
        let data = spec
            .data
            .iter()
            .map(Level::new)
            .collect::<Result<Vec<_>, _>>()?;
        if data.is_empty() || data.len() > MAX_LEVELS {
            return Err(CacheError::Spec {
                spec: spec.to_string(),
                why: format!("a hierarchy needs 1 to {MAX_LEVELS} data levels"),
            });
        }
        let instr = spec.instr.as_ref().map(Level::new).transpose()?;
        let uniform_lines = instr
            .iter()
            .chain(&data)
            .all(|l| l.cache.line_bits() == data[0].cache.line_bits());
        let l1_mask = data[0].cache.set_mask();
        let fast_hits = data[0].write == WritePolicy::WriteBack && l1_mask.is_some();
        let l1_bits = data[0].cache.line_bits();
        let l1_line = 1 << l1_bits;
        let mut hierarchy = Self {
            spec: spec.clone(),
            instr,
            uniform_lines,
            two_level: None,
            unwatched_step: None,
            data: Levels::new(data),
            refetch_whole_access: false,
            model_writebacks: true,
            record_lines: false,
            fast_hits,
            l1_limit: if fast_hits { l1_line + 1 } else { 0 },
            l1_offset_mask: l1_line - 1,
            l1_mask: l1_mask.unwrap_or(0),
            l1_line,
            l1_bits,
            line_events: Vec::new(),
            requests: Vec::with_capacity(8),
            next_requests: Vec::with_capacity(8),
        };
        hierarchy.reshape();
        Ok(hierarchy)
    }

    /// Looks up what depends on the two-level shape again, after anything that changes it.
    fn reshape(&mut self) {
        self.two_level = self.two_level_shape();
        self.unwatched_step = self.miss_step();
    }

    /// The constants of [`two_level`]'s loop when it applies to this hierarchy as it is now.
    fn two_level_shape(&self) -> Option<TwoLevel> {
        let [l1, l2] = &self.data[..] else {
            return None;
        };
        let packed = |l: &Level| matches!(l.cache.store(), Store::Lru8(_) | Store::Lru16(_));
        let l2_shift = l2.cache.line_bits().checked_sub(l1.cache.line_bits());
        let fits = self.fast_hits
            && l2_shift.is_some()
            && packed(l1)
            && packed(l2)
            && l2.write == WritePolicy::WriteBack
            && !l2.inclusive;
        Some(TwoLevel {
            l1_mask: l1.cache.set_mask()?,
            l2_mask: l2.cache.set_mask()?,
            line_bits: l1.cache.line_bits(),
            l2_shift: l2_shift?,
            writebacks: self.model_writebacks,
        })
        .filter(|_| fits)
    }

    /// Follows Cachegrind's conventions exactly: no write-back traffic, and a miss in any line of
    /// a straddling access sends the whole access to the next level.
    pub fn cachegrind_compatible(mut self) -> Self {
        self.refetch_whole_access = true;
        self.model_writebacks = false;
        self.reshape();
        self
    }

    /// Records a [`LineEvent`] for every line touched, for the analyses that need them.
    pub fn set_record_lines(&mut self, on: bool) {
        self.record_lines = on;
        self.fast_hits = !on
            && self.data[0].write == WritePolicy::WriteBack
            && self.data[0].cache.set_mask().is_some();
        self.l1_limit = if self.fast_hits { self.l1_line + 1 } else { 0 };
        self.reshape();
        self.line_events.clear();
    }

    /// The line events of the most recent access (empty unless recording is on).
    pub fn line_events(&self) -> &[LineEvent] {
        &self.line_events
    }

    /// The description this hierarchy was built from.
    pub fn spec(&self) -> &HierarchySpec {
        &self.spec
    }

    /// Number of data levels.
    pub fn depth(&self) -> usize {
        self.data.len()
    }

    /// Line size of data level `level`.
    pub fn line_size(&self, level: usize) -> u32 {
        self.data[level].cache.geometry().line_size
    }

    /// Smallest line size anywhere in the hierarchy.
    pub fn min_line_size(&self) -> u32 {
        self.instr
            .iter()
            .chain(self.data.iter())
            .map(|l| l.cache.geometry().line_size)
            .min()
            .unwrap_or(64)
    }

    /// Name and totals of every level, the instruction cache first when there is one.
    pub fn stats(&self) -> impl Iterator<Item = (&str, &LevelStats)> {
        self.instr
            .iter()
            .chain(self.data.iter())
            .map(|l| (l.name.as_str(), &l.stats))
    }

    /// Totals of data level `level`.
    pub fn level_stats(&self, level: usize) -> &LevelStats {
        &self.data[level].stats
    }

    /// Zeroes every level's totals; cache contents stay.
    pub fn reset_stats(&mut self) {
        for l in self.instr.iter_mut().chain(self.data.iter_mut()) {
            l.stats = LevelStats::default();
        }
    }

    /// Whether the hierarchy follows Cachegrind's conventions ([`Self::cachegrind_compatible`]).
    pub(super) fn follows_cachegrind(&self) -> bool {
        self.refetch_whole_access
    }

    /// Takes back from level `depth` of the instruction (`instr`) or data path one demand
    /// access of `kind` counted there, and with `miss` its miss too: for an access simulated in
    /// pieces, each of which counted it (`set_shards.rs`).
    pub(super) fn uncount(&mut self, instr: bool, depth: usize, kind: AccessKind, miss: bool) {
        let path = if instr { Path::Instr } else { Path::Data };
        let stats = &mut self.level_mut(path, depth).stats;
        let miss = u64::from(miss);
        let (accesses, misses) = match (path, kind) {
            (Path::Instr, _) => (&mut stats.instr_fetches, &mut stats.instr_misses),
            (Path::Data, AccessKind::Read) => (&mut stats.reads, &mut stats.read_misses),
            (Path::Data, AccessKind::Write) => (&mut stats.writes, &mut stats.write_misses),
        };
        *accesses -= 1;
        *misses -= miss;
    }

    /// Looks `block` up in level `depth` of the instruction (`instr`) or data path, filling it
    /// on a miss (dirty when `dirty`); whether it missed. Under Cachegrind's conventions only
    /// (no write-backs, no inclusion, write-allocate everywhere), where the victim goes nowhere:
    /// one line's part of an access whose lines lie in several set shards (`set_shards.rs`).
    pub(super) fn probe_line_cachegrind(
        &mut self,
        instr: bool,
        depth: usize,
        block: u64,
        dirty: bool,
    ) -> bool {
        debug_assert!(self.refetch_whole_access && !self.model_writebacks);
        let path = if instr { Path::Instr } else { Path::Data };
        let level = self.level_mut(path, depth);
        !matches!(level.cache.probe(block, true, dirty), Probe::Hit)
    }

    /// Counts one demand access of `kind` at level `depth` of the instruction (`instr`) or
    /// data path, a miss when `missed`.
    pub(super) fn count_access(
        &mut self,
        instr: bool,
        depth: usize,
        kind: AccessKind,
        missed: bool,
    ) {
        let path = if instr { Path::Instr } else { Path::Data };
        self.count(path, depth, kind, missed);
    }

    /// The line size (log2) of level `depth` of the instruction (`instr`) or data path.
    pub(super) fn line_bits_of(&self, instr: bool, depth: usize) -> u32 {
        match (instr, depth, &self.instr) {
            (true, 0, Some(i1)) => i1.cache.line_bits(),
            _ => self.data[depth].cache.line_bits(),
        }
    }

    /// Adds `other`'s totals, level by level, to this hierarchy's (`other` has the same levels):
    /// the totals of the copies a sharded replay simulated, summed.
    pub fn add_stats(&mut self, other: &Hierarchy) {
        let mine = self.instr.iter_mut().chain(self.data.iter_mut());
        let theirs = other.instr.iter().chain(other.data.iter());
        for (to, from) in mine.zip(theirs) {
            to.stats += &from.stats;
        }
    }

    /// Copies from `other`, a hierarchy of the same spec, the contents and replacement state
    /// of every set that `wanted(line_bits, set)` accepts, level by level (`line_bits` is the
    /// level's); totals stay as they are. How the copies of a sharded replay hand their sets
    /// to one another (`set_shards.rs`).
    ///
    /// # Panics
    ///
    /// If `other` has another spec.
    pub fn copy_sets_from(&mut self, other: &Hierarchy, wanted: impl Fn(u32, usize) -> bool) {
        assert_eq!(
            self.spec, other.spec,
            "sets are copied only between one spec's hierarchies"
        );
        let mine = self.instr.iter_mut().chain(self.data.iter_mut());
        let theirs = other.instr.iter().chain(other.data.iter());
        for (to, from) in mine.zip(theirs) {
            let line_bits = to.cache.line_bits();
            to.cache
                .copy_sets_from(&from.cache, |set| wanted(line_bits, set));
        }
    }

    /// Empties every level and zeroes its totals.
    pub fn clear(&mut self) {
        for l in self.instr.iter_mut().chain(self.data.iter_mut()) {
            l.cache.clear();
            l.stats = LevelStats::default();
        }
    }

    /// Counts in the levels' totals an access simulated elsewhere (by a core of a
    /// [`Machine`](super::Machine)) whose outcome has these [`AccessOutcome::event_bits`], as if
    /// this hierarchy had: a thread's totals stay its own while its caches are a machine's.
    /// Write-backs are the machine's. Other bits (a machine's coherence events) are ignored: a
    /// level's byte holds 1 or 2 for a read's hit or miss, 4 or 8 for a write's, and 0 past the
    /// last level reached.
    #[inline(always)]
    pub(crate) fn count_event_bits(&mut self, bits: u32) {
        let kind = if bits & 0xC != 0 {
            AccessKind::Write
        } else {
            AccessKind::Read
        };
        // The first level, always reached, at its fixed place: a hit (nearly every access)
        // touches nothing else.
        self.data.levels[0]
            .stats
            .record(Path::Data, kind, bits & 0xA != 0);
        if (bits & RESULTS_PAST_FIRST) != 0 {
            self.count_event_bits_past_first(kind, bits);
        }
    }

    /// [`Self::count_event_bits`] of the levels past the first, out of line.
    #[inline(never)]
    fn count_event_bits_past_first(&mut self, kind: AccessKind, bits: u32) {
        for (at, level) in self.data.iter_mut().enumerate().take(MAX_LEVELS).skip(1) {
            let result = (bits >> (8 * at)) & 0xF;
            if result == 0 {
                break;
            }
            level.stats.record(Path::Data, kind, result & 0xA != 0);
        }
    }

    /// Data level `level`'s tag store, for inspection.
    pub fn cache(&self, level: usize) -> &CacheLevel {
        &self.data[level].cache
    }

    /// Simulates a data load or store of `size` bytes at `addr` (any size; a zero size counts as one byte).
    #[inline(always)]
    pub fn access(&mut self, addr: u64, size: u32, kind: AccessKind) -> AccessOutcome {
        if self.l1_takes(addr, size) {
            let block = self.l1_block(addr);
            if self.l1_hit_block(block, kind) {
                return AccessOutcome::l1_hit(kind);
            }
            // The two-level miss through its pointer: no dispatch on the stores.
            if let Some(step) = self.unwatched_step
                && let Some(l2) = step(self, &mut (), addr, block, kind)
            {
                return two_level::outcome(kind, l2);
            }
        }
        self.access_missed(addr, size, kind)
    }

    /// The fast path for the common case, kept small enough to inline into the capture loop: a
    /// data access that lies in one L1 line and hits there (with L1 write-back, no line
    /// recording and a power-of-two number of L1 sets) is simulated and counted, and `true`
    /// returned. Anything else (a miss, a
    /// straddle, a write-through write, line recording) changes nothing and returns `false`;
    /// [`Self::access_missed`] then finishes it.
    #[inline(always)]
    pub(crate) fn try_l1_hit(&mut self, addr: u64, size: u32, kind: AccessKind) -> bool {
        self.l1_takes(addr, size) && self.l1_hit(addr, kind)
    }

    /// Whether the L1 fast path takes an access of `size` bytes at `addr`: it lies in one L1
    /// line and the fast path is on. One test for both, `in_one_line` against a limit that is
    /// 0 when the fast path is off.
    #[inline(always)]
    pub(crate) fn l1_takes(&self, addr: u64, size: u32) -> bool {
        (addr & self.l1_offset_mask) + u64::from(size) < self.l1_limit
    }

    /// The L1 fast path for an access [`Self::l1_takes`]: a hit is simulated and counted, and
    /// `true` returned; a miss changes nothing and returns `false`, for
    /// [`Self::l1_missed`].
    #[inline(always)]
    pub(crate) fn l1_hit(&mut self, addr: u64, kind: AccessKind) -> bool {
        self.l1_hit_block(self.l1_block(addr), kind)
    }

    /// The L1 block of `addr` (its line number).
    #[inline(always)]
    pub(crate) fn l1_block(&self, addr: u64) -> u64 {
        addr >> self.l1_bits
    }

    /// [`Self::l1_hit`] of an address whose [`Self::l1_block`] the caller has.
    #[inline(always)]
    pub(crate) fn l1_hit_block(&mut self, block: u64, kind: AccessKind) -> bool {
        let l1 = &mut self.data.levels[0];
        if l1
            .cache
            .probe_hit_masked(block, self.l1_mask, kind == AccessKind::Write)
        {
            // The counter is picked without a branch: programs interleave reads and writes
            // irregularly.
            *l1.stats.demand(kind) += 1;
            return true;
        }
        false
    }

    /// Marks L1's line of `block` modified without counting an access (see
    /// [`CaptureFastPath::mark_l1_dirty`]); whether the line was there.
    ///
    /// [`CaptureFastPath::mark_l1_dirty`]: crate::simulator::capture_path::CaptureFastPath::mark_l1_dirty
    #[inline(always)]
    pub(crate) fn mark_l1_dirty(&mut self, block: u64) -> bool {
        // The line is its set's most recent (the filter's invariant): one way compared first.
        (self.fast_hits
            && self.data.levels[0]
                .cache
                .recent_hit_masked(block, self.l1_mask, true))
            || self.mark_l1_dirty_searched(block)
    }

    #[cold]
    #[inline(never)]
    fn mark_l1_dirty_searched(&mut self, block: u64) -> bool {
        self.data.levels[0].cache.mark_dirty(block)
    }

    /// Makes L1's line `block` its set's most recent, counting nothing; whether it was in L1.
    pub(crate) fn make_l1_recent(&mut self, block: u64) -> bool {
        self.data.levels[0].cache.probe_hit(block, false)
    }

    /// [`Self::l1_hit`] that looks only at the line `addr`'s set used last: a hit there is
    /// simulated and counted, and `true` returned; anything else (a miss, or a hit on another
    /// way) changes nothing and returns `false`. For callers that know which line their set
    /// used last, so the look-up stays a few instructions.
    #[inline(always)]
    pub(crate) fn l1_recent_hit(&mut self, addr: u64, kind: AccessKind) -> bool {
        let block = self.l1_block(addr);
        let l1 = &mut self.data.levels[0];
        if l1
            .cache
            .recent_hit_masked(block, self.l1_mask, kind == AccessKind::Write)
        {
            *l1.stats.demand(kind) += 1;
            return true;
        }
        false
    }

    /// For an access that [`Self::l1_takes`] and that [`Self::l1_hit`] found absent (which
    /// changed nothing): simulates it with the two-level miss step and returns what L2 did
    /// (L1 missed; [`two_level::outcome`] is the whole outcome), or returns `None`, having
    /// changed nothing, when the hierarchy is not the two-level one.
    #[inline(always)]
    pub(crate) fn two_level_missed(&mut self, addr: u64, kind: AccessKind) -> Option<LevelResult> {
        let k = self.two_level?;
        Some(self.two_level_miss(k, addr >> k.line_bits, kind))
    }

    /// The two-level miss step (see [`MissStep`]) for this hierarchy's pair of stores, told to
    /// `O`, when the hierarchy is the two-level one now; look it up again after anything that
    /// changes that ([`Self::set_record_lines`]).
    pub(crate) fn miss_step<O: Watch>(&self) -> Option<MissStep<O>> {
        self.two_level?;
        let [l1, l2] = &self.data[..] else {
            return None;
        };
        Some(match (l1.cache.store(), l2.cache.store()) {
            (Store::Lru8(_), Store::Lru8(_)) => miss_step::<8, 1, 8, 1, O>,
            (Store::Lru8(_), Store::Lru16(_)) => miss_step::<8, 1, 16, 2, O>,
            (Store::Lru16(_), Store::Lru8(_)) => miss_step::<16, 2, 8, 1, O>,
            (Store::Lru16(_), Store::Lru16(_)) => miss_step::<16, 2, 16, 2, O>,
            _ => return None,
        })
    }

    /// Simulates every access of `batch` in order, exactly as calling [`Self::access`] on each
    /// would, but faster: runs of L1 hits go through one loop monomorphised for L1's store, with
    /// its pointers and masks in registers and the hit counts added once per run.
    pub fn access_batch(&mut self, batch: &[(u64, u32, AccessKind)]) {
        if self.two_level.is_some() {
            let mut rest = batch;
            loop {
                let done = self.two_level_run(rest, &mut ());
                // The loop stopped at an access wider than one line, or at the end.
                let Some(&(addr, size, kind)) = rest.get(done) else {
                    break;
                };
                self.access(addr, size, kind);
                rest = &rest[done + 1..];
            }
            return;
        }
        if !self.batch_hits() {
            for &(addr, size, kind) in batch {
                self.access(addr, size, kind);
            }
            return;
        }
        let mut rest = batch;
        loop {
            let (hits, end) = self.l1_run(rest, |_, _| {});
            let Some(&(addr, size, kind)) = rest.get(hits) else {
                break;
            };
            self.finish_run(addr, size, kind, end);
            rest = &rest[hits + 1..];
        }
    }

    /// Whether [`Self::two_level_run`] applies.
    #[inline]
    pub(crate) fn two_level(&self) -> bool {
        self.two_level.is_some()
    }

    /// Simulates the one-line accesses at the front of `batch` in [`two_level`]'s loop,
    /// telling `watch` of each L1 miss (and each hit, if it wants them), and returns how many
    /// there were; the access after them is wider than a line (for [`Self::access`]). The
    /// caller checks [`Self::two_level`] first; without it the loop simulates nothing.
    #[inline(always)]
    pub(crate) fn two_level_run<O: Watch>(
        &mut self,
        batch: &[(u64, u32, AccessKind)],
        watch: &mut O,
    ) -> usize {
        if watch.wants_hits() {
            self.two_level_loop::<true, O>(batch, watch)
        } else {
            self.two_level_loop::<false, O>(batch, watch)
        }
    }

    #[inline(always)]
    fn two_level_loop<const HITS: bool, O: Watch>(
        &mut self,
        batch: &[(u64, u32, AccessKind)],
        watch: &mut O,
    ) -> usize {
        let (Some(k), [l1, l2, ..]) = (self.two_level, &mut self.data.levels) else {
            return 0;
        };
        let (s1, s2) = (&mut l1.stats, &mut l2.stats);
        // One match per run, so the loop is compiled once per pair of store representations.
        match (l1.cache.store_mut(), l2.cache.store_mut()) {
            (Store::Lru8(a), Store::Lru8(b)) => {
                two_level::run::<_, _, _, _, HITS, O>(a, b, k, s1, s2, batch, watch)
            }
            (Store::Lru8(a), Store::Lru16(b)) => {
                two_level::run::<_, _, _, _, HITS, O>(a, b, k, s1, s2, batch, watch)
            }
            (Store::Lru16(a), Store::Lru8(b)) => {
                two_level::run::<_, _, _, _, HITS, O>(a, b, k, s1, s2, batch, watch)
            }
            (Store::Lru16(a), Store::Lru16(b)) => {
                two_level::run::<_, _, _, _, HITS, O>(a, b, k, s1, s2, batch, watch)
            }
            _ => 0,
        }
    }

    /// Simulates the accesses `steps` gives in [`two_level`]'s step loop (see
    /// [`two_level::run_steps`]), telling `watch` as [`Self::two_level_run`] does. `None`,
    /// having taken no step, when the hierarchy is not the two-level one; else the step the
    /// loop stopped at, which does not lie in one line (for [`Self::access`]), or `Some(None)`
    /// once `steps` has no more.
    pub(crate) fn two_level_steps<T: Steps, O: Watch>(
        &mut self,
        steps: &mut T,
        watch: &mut O,
    ) -> Option<Option<(Step, T::Context)>> {
        if watch.wants_hits() {
            self.two_level_step_loop::<true, T, O>(steps, watch)
        } else {
            self.two_level_step_loop::<false, T, O>(steps, watch)
        }
    }

    #[inline(always)]
    fn two_level_step_loop<const HITS: bool, T: Steps, O: Watch>(
        &mut self,
        steps: &mut T,
        watch: &mut O,
    ) -> Option<Option<(Step, T::Context)>> {
        let (Some(k), [l1, l2, ..]) = (self.two_level, &mut self.data.levels) else {
            return None;
        };
        let (s1, s2) = (&mut l1.stats, &mut l2.stats);
        // One match per run, so the loop is compiled once per pair of store representations.
        // A 2-way L1 (the papers' 32-byte one) gets loops of its own (`PackedShape::hit_in`).
        Some(match (l1.cache.store_mut(), l2.cache.store_mut()) {
            (Store::Lru8(a), Store::Lru8(b)) if a.assoc() == 2 => {
                two_level::run_steps::<_, _, 2, _, _, HITS, T, O>(a, b, k, s1, s2, steps, watch)
            }
            (Store::Lru8(a), Store::Lru16(b)) if a.assoc() == 2 => {
                two_level::run_steps::<_, _, 2, _, _, HITS, T, O>(a, b, k, s1, s2, steps, watch)
            }
            (Store::Lru8(a), Store::Lru8(b)) => {
                two_level::run_steps::<_, _, 0, _, _, HITS, T, O>(a, b, k, s1, s2, steps, watch)
            }
            (Store::Lru8(a), Store::Lru16(b)) => {
                two_level::run_steps::<_, _, 0, _, _, HITS, T, O>(a, b, k, s1, s2, steps, watch)
            }
            (Store::Lru16(a), Store::Lru8(b)) => {
                two_level::run_steps::<_, _, 0, _, _, HITS, T, O>(a, b, k, s1, s2, steps, watch)
            }
            (Store::Lru16(a), Store::Lru16(b)) => {
                two_level::run_steps::<_, _, 0, _, _, HITS, T, O>(a, b, k, s1, s2, steps, watch)
            }
            _ => return None,
        })
    }

    /// [`two_level::miss`] for one access that [`Self::try_l1_hit`] found absent from L1.
    #[inline(always)]
    fn two_level_miss(&mut self, k: TwoLevel, block: u64, kind: AccessKind) -> LevelResult {
        // Two levels when `two_level` is set: no need to check `len`.
        let [l1, l2, ..] = &mut self.data.levels;
        *l1.stats.demand(kind) += 1;
        let (s1, s2) = (&mut l1.stats, &mut l2.stats);
        let set1 = (block & k.l1_mask) as usize;
        match (l1.cache.store_mut(), l2.cache.store_mut()) {
            (Store::Lru8(a), Store::Lru8(b)) => {
                two_level_miss_in(a, b, set1, k, block, kind, s1, s2)
            }
            (Store::Lru8(a), Store::Lru16(b)) => {
                two_level_miss_in(a, b, set1, k, block, kind, s1, s2)
            }
            (Store::Lru16(a), Store::Lru8(b)) => {
                two_level_miss_in(a, b, set1, k, block, kind, s1, s2)
            }
            (Store::Lru16(a), Store::Lru16(b)) => {
                two_level_miss_in(a, b, set1, k, block, kind, s1, s2)
            }
            _ => unreachable!("two_level is set only for packed stores"),
        }
    }

    /// Whether [`Self::l1_run`] applies: the L1 fast path is on.
    #[inline]
    pub(crate) fn batch_hits(&self) -> bool {
        self.fast_hits
    }

    /// Simulates the one-line L1 hits at the front of `batch`, calling `on_hit(addr, kind)`
    /// after each, and returns how many there were and how the run ended; the access after
    /// them is for [`Self::finish_run`]. A common miss (see [`Self::l1_miss`]) is filled in L1
    /// by the run itself, which has the set at hand. The caller checks [`Self::batch_hits`]
    /// first; without it, every run is empty and declined.
    #[inline(always)]
    pub(crate) fn l1_run<F: FnMut(u64, AccessKind)>(
        &mut self,
        batch: &[(u64, u32, AccessKind)],
        on_hit: F,
    ) -> (usize, RunEnd) {
        let (fill, mask) = (self.uniform_lines, self.l1_mask);
        if !self.fast_hits {
            return (0, RunEnd::Declined);
        }
        let Level { cache, stats, .. } = &mut self.data.levels[0];
        let bits = cache.line_bits();
        // One match per run, so the loop is compiled once per store representation.
        let (hits, writes, end) = match cache.store_mut() {
            Store::Lru8(store) => store.hit_run(mask, bits, fill, batch, on_hit),
            Store::Lru16(store) => store.hit_run(mask, bits, fill, batch, on_hit),
            Store::Other(store) => store.hit_run(mask, bits, fill, batch, on_hit),
        };
        stats.reads += hits as u64 - writes;
        stats.writes += writes;
        (hits, end)
    }

    /// Simulates the access that ended a run of [`Self::l1_run`], which ended as `end`.
    #[inline(never)]
    pub(crate) fn finish_run(
        &mut self,
        addr: u64,
        size: u32,
        kind: AccessKind,
        end: RunEnd,
    ) -> AccessOutcome {
        match end {
            RunEnd::Filled(victim) => {
                let block = addr >> self.data[0].cache.line_bits();
                self.after_l1_fill(block, kind, victim)
            }
            RunEnd::Declined | RunEnd::Done => self.access_missed(addr, size, kind),
        }
    }

    /// Simulates an access that [`Self::try_l1_hit`] declined, which has changed nothing.
    #[inline(never)]
    pub(crate) fn access_missed(
        &mut self,
        addr: u64,
        size: u32,
        kind: AccessKind,
    ) -> AccessOutcome {
        let bits = self.data[0].cache.line_bits();
        let block = addr >> bits;
        let one_line = in_one_line(addr, size, bits);
        if one_line && let Some(k) = self.two_level {
            return two_level::outcome(kind, self.two_level_miss(k, block, kind));
        }
        if one_line && self.uniform_lines {
            if self.fast_hits {
                // The fast path looked L1 up already and missed.
                return self.l1_miss(block, kind);
            }
            return self.walk_line(Path::Data, block, kind, false);
        }
        self.walk(Path::Data, addr, size, kind)
    }

    /// Simulates an instruction fetch: through I1 when there is one, then the shared levels.
    #[inline]
    pub fn fetch(&mut self, addr: u64, size: u32) -> AccessOutcome {
        let Some(i1) = &mut self.instr else {
            return self.walk(Path::Data, addr, size, AccessKind::Read);
        };
        // Same fast path as data accesses: most fetches lie in one I1 line and hit.
        let bits = i1.cache.line_bits();
        let block = addr >> bits;
        let one_line = in_one_line(addr, size, bits);
        if one_line && i1.cache.probe_hit(block, false) {
            i1.stats.instr_fetches += 1;
            return AccessOutcome::l1_hit(AccessKind::Read);
        }
        self.fetch_slow(addr, size, block, one_line)
    }

    #[inline(never)]
    fn fetch_slow(&mut self, addr: u64, size: u32, block: u64, one_line: bool) -> AccessOutcome {
        if one_line && self.uniform_lines {
            return self.walk_line(Path::Instr, block, AccessKind::Read, true);
        }
        self.walk(Path::Instr, addr, size, AccessKind::Read)
    }

    /// The common miss: a data access in one line that the fast path found absent from a
    /// write-back L1, with no line recording, when all levels share the line size. Below a
    /// write-back L1 every level sees a read-allocate of the same block, so the walk is a fill
    /// of L1 and a probe of each level below until one hits.
    fn l1_miss(&mut self, block: u64, kind: AccessKind) -> AccessOutcome {
        let victim = self.data[0].cache.fill(block, kind == AccessKind::Write);
        self.after_l1_fill(block, kind, victim)
    }

    /// The rest of [`Self::l1_miss`] once L1 has installed `block` and displaced `victim`:
    /// L1's totals, the victim's write-back (or back-invalidation), the levels below.
    #[inline(always)]
    fn after_l1_fill(
        &mut self,
        block: u64,
        kind: AccessKind,
        victim: Option<Victim>,
    ) -> AccessOutcome {
        let mut out = AccessOutcome {
            kind,
            levels: [LevelResult::NotReached; MAX_LEVELS],
        };
        out.levels[0] = LevelResult::Miss;
        let model_writebacks = self.model_writebacks;
        let l1 = &mut self.data[0];
        *l1.stats.demand(kind) += 1;
        *l1.stats.demand_misses(kind) += 1;
        if let Some(v) = victim
            && ((v.dirty && model_writebacks) || l1.inclusive)
        {
            self.evicted(Path::Data, 0, v);
        }
        for depth in 1..self.data.len().min(MAX_LEVELS) {
            let level = &mut self.data[depth];
            *level.stats.demand(kind) += 1;
            if level.cache.probe_hit(block, false) {
                out.levels[depth] = LevelResult::Hit;
                break;
            }
            out.levels[depth] = LevelResult::Miss;
            *level.stats.demand_misses(kind) += 1;
            if let Some(v) = level.cache.fill(block, false)
                && ((v.dirty && model_writebacks) || level.inclusive)
            {
                self.evicted(Path::Data, depth, v);
            }
        }
        out
    }

    /// The walk of an access that lies in one line, when all levels share the line size: the
    /// same block at every level, so no request lists are needed. `first_missed` says the caller
    /// has already found the block absent from the path's first level.
    fn walk_line(
        &mut self,
        path: Path,
        block: u64,
        kind: AccessKind,
        first_missed: bool,
    ) -> AccessOutcome {
        let mut out = AccessOutcome {
            kind,
            levels: [LevelResult::NotReached; MAX_LEVELS],
        };
        // Cleared on every walk so the events always belong to the latest access, but recorded
        // only for data accesses: the analyses are about data structures.
        if self.record_lines {
            self.line_events.clear();
        }
        let record = self.record_lines && path == Path::Data;
        let model_writebacks = self.model_writebacks;
        let mut carries_write = kind == AccessKind::Write;
        for depth in 0..self.data.len() {
            let level = match (path, &mut self.instr) {
                (Path::Instr, Some(i1)) if depth == 0 => i1,
                _ => &mut self.data[depth],
            };
            let write_through = level.write == WritePolicy::WriteThrough;
            let dirty = carries_write && !write_through;
            let allocate = !(carries_write && write_through);
            let probe = match (depth, first_missed, allocate) {
                (0, true, true) => Probe::Filled {
                    victim: level.cache.fill(block, dirty),
                },
                (0, true, false) => Probe::Bypassed,
                _ => level.cache.probe(block, allocate, dirty),
            };
            let missed = !matches!(probe, Probe::Hit);
            out.levels[depth] = if missed {
                LevelResult::Miss
            } else {
                LevelResult::Hit
            };
            level.stats.record(path, kind, missed);
            // Only a dirty victim (when write-backs are modelled) or an inclusive level gives
            // an eviction anything to do.
            let needs_eviction = |v: &Victim| (v.dirty && model_writebacks) || level.inclusive;
            let bits = level.cache.line_bits();
            match probe {
                Probe::Hit => {
                    if record {
                        self.push_line(depth, block << bits, LineEventKind::Hit);
                    }
                    if !(carries_write && write_through) {
                        break;
                    }
                }
                Probe::Filled { victim } => {
                    let handle = victim.filter(needs_eviction);
                    if record {
                        let evicted = victim.map(|v| v.block << bits);
                        self.push_line(depth, block << bits, LineEventKind::Fill { evicted });
                    }
                    if let Some(v) = handle {
                        self.evicted(path, depth, v);
                    }
                }
                Probe::Bypassed => {
                    if record {
                        self.push_line(depth, block << bits, LineEventKind::Bypass);
                    }
                }
            }
            carries_write &= write_through;
        }
        out
    }

    fn walk(&mut self, path: Path, addr: u64, size: u32, kind: AccessKind) -> AccessOutcome {
        let mut out = AccessOutcome {
            kind,
            levels: [LevelResult::NotReached; MAX_LEVELS],
        };
        // Cleared on every walk so the events always belong to the latest access, but recorded
        // only for data accesses: the analyses are about data structures.
        if self.record_lines {
            self.line_events.clear();
        }
        let record = self.record_lines && path == Path::Data;
        let mut requests = std::mem::take(&mut self.requests);
        let mut next = std::mem::take(&mut self.next_requests);
        requests.clear();
        requests.push((addr, u64::from(size.max(1))));
        // Whether the bytes being written are carried at this level (true until a write-back
        // level absorbs them; below it, the requests are fills).
        let mut carries_write = kind == AccessKind::Write;
        for depth in 0..self.data.len() {
            let write_through = self.level_mut(path, depth).write == WritePolicy::WriteThrough;
            let dirty = carries_write && !write_through;
            let allocate = !(carries_write && write_through);
            next.clear();
            let mut missed = false;
            for &(a, len) in &requests {
                let bits = self.level_mut(path, depth).cache.line_bits();
                let first = a >> bits;
                let last = (a + len - 1) >> bits;
                for block in first..=last {
                    let probe = self
                        .level_mut(path, depth)
                        .cache
                        .probe(block, allocate, dirty);
                    let line_addr = block << bits;
                    let pass_down = match probe {
                        Probe::Hit => {
                            if record {
                                self.push_line(depth, line_addr, LineEventKind::Hit);
                            }
                            carries_write && write_through
                        }
                        Probe::Filled { victim } => {
                            missed = true;
                            let evicted = victim.map(|v| v.block << bits);
                            if record {
                                self.push_line(depth, line_addr, LineEventKind::Fill { evicted });
                            }
                            if let Some(v) = victim {
                                self.evicted(path, depth, v);
                            }
                            true
                        }
                        Probe::Bypassed => {
                            missed = true;
                            if record {
                                self.push_line(depth, line_addr, LineEventKind::Bypass);
                            }
                            true
                        }
                    };
                    if pass_down && !self.refetch_whole_access {
                        next.push((line_addr, 1 << bits));
                    }
                }
            }
            if self.refetch_whole_access && missed {
                next.extend_from_slice(&requests);
            }
            out.levels[depth] = if missed {
                LevelResult::Miss
            } else {
                LevelResult::Hit
            };
            self.count(path, depth, kind, missed);
            if next.is_empty() {
                break;
            }
            carries_write &= write_through;
            std::mem::swap(&mut requests, &mut next);
        }
        self.requests = requests;
        self.next_requests = next;
        out
    }

    #[inline]
    fn level_mut(&mut self, path: Path, depth: usize) -> &mut Level {
        match (path, depth, &mut self.instr) {
            (Path::Instr, 0, Some(i1)) => i1,
            _ => &mut self.data[depth],
        }
    }

    #[inline]
    fn count(&mut self, path: Path, depth: usize, kind: AccessKind, missed: bool) {
        self.level_mut(path, depth).stats.record(path, kind, missed);
    }

    fn push_line(&mut self, depth: usize, line_addr: u64, kind: LineEventKind) {
        self.line_events.push(LineEvent {
            level: depth as u8,
            line_addr,
            kind,
        });
    }

    /// Handles a line displaced from `depth` on `path`: back-invalidation above an inclusive
    /// level, then the write-back of dirty data.
    #[cold]
    fn evicted(&mut self, path: Path, depth: usize, victim: Victim) {
        let level = self.level_mut(path, depth);
        let bits = level.cache.line_bits();
        let inclusive = level.inclusive;
        let start = victim.block << bits;
        let mut dirty = victim.dirty;
        if inclusive && depth > 0 {
            dirty |= self.back_invalidate(depth, start, 1 << bits);
        }
        if dirty && self.model_writebacks {
            self.level_mut(path, depth).stats.writebacks += 1;
            // Levels below the first are shared, so the data path indexes them for both paths.
            self.write_back(depth + 1, start, 1 << bits);
        }
    }

    /// Removes `[start, start+len)` from every level above data level `depth`; returns whether
    /// any removed copy was dirty.
    fn back_invalidate(&mut self, depth: usize, start: u64, len: u64) -> bool {
        let mut dirty = false;
        let record = self.record_lines;
        let mut events = Vec::new();
        for (upper, level) in self.data[..depth]
            .iter_mut()
            .enumerate()
            .map(|(i, l)| (Some(i), l))
            .chain(self.instr.iter_mut().map(|l| (None, l)))
        {
            let bits = level.cache.line_bits();
            for block in start >> bits..=(start + len - 1) >> bits {
                if let Some(was_dirty) = level.cache.invalidate(block) {
                    dirty |= was_dirty;
                    level.stats.back_invalidations += 1;
                    if let (true, Some(i)) = (record, upper) {
                        events.push(LineEvent {
                            level: i as u8,
                            line_addr: block << bits,
                            kind: LineEventKind::Invalidated,
                        });
                    }
                }
            }
        }
        self.line_events.extend(events);
        dirty
    }

    /// Writes dirty data `[start, start+len)` into data level `depth` (a no-op below the last level).
    fn write_back(&mut self, depth: usize, start: u64, len: u64) {
        let Some(level) = self.data.get_mut(depth) else {
            return;
        };
        let bits = level.cache.line_bits();
        if level.write == WritePolicy::WriteThrough {
            self.write_back(depth + 1, start, len);
            return;
        }
        for block in start >> bits..=(start + len - 1) >> bits {
            let level = &mut self.data[depth];
            if level.cache.mark_dirty(block) {
                continue;
            }
            if let Probe::Filled { victim } = level.cache.probe(block, true, true) {
                if self.record_lines {
                    self.push_line(
                        depth,
                        block << bits,
                        LineEventKind::WritebackFill {
                            evicted: victim.map(|v| v.block << bits),
                        },
                    );
                }
                if let Some(v) = victim {
                    self.evicted(Path::Data, depth, v);
                }
            }
        }
    }
}

/// The per-access two-level miss step: for a one-line access at `addr`, of L1 block `block`
/// ([`Hierarchy::l1_block`]), that [`Hierarchy::l1_takes`] and [`Hierarchy::l1_hit`] found
/// absent (which changed nothing), simulates it as
/// [`Hierarchy::two_level_missed`] does, tells the watcher of the miss, and returns what L2
/// did; returns `None`, having changed nothing, when the hierarchy is not the two-level one of
/// these stores (any more). Monomorphised per pair of stores and watcher, so a caller that
/// looked it up once ([`Hierarchy::miss_step`]) and calls it through the pointer pays no
/// dispatch on the stores per miss.
pub(crate) type MissStep<O> =
    fn(&mut Hierarchy, &mut O, u64, u64, AccessKind) -> Option<LevelResult>;

fn miss_step<const W1: usize, const S1: usize, const W2: usize, const S2: usize, O: Watch>(
    h: &mut Hierarchy,
    watch: &mut O,
    addr: u64,
    block: u64,
    kind: AccessKind,
) -> Option<LevelResult>
where
    PackedLru<W1, S1>: PackedIn,
    PackedLru<W2, S2>: PackedIn,
{
    let (Some(k), [l1, l2, ..]) = (h.two_level, &mut h.data.levels) else {
        return None;
    };
    let (Some(a), Some(b)) = (
        PackedLru::<W1, S1>::packed_in(l1.cache.store_mut()),
        PackedLru::<W2, S2>::packed_in(l2.cache.store_mut()),
    ) else {
        return None;
    };
    // The block is the caller's, by L1's line size (`two_level::miss` shifts it for L2).
    *l1.stats.demand(kind) += 1;
    let set1 = (block & k.l1_mask) as usize;
    let l2_result = two_level_miss_in(a, b, set1, k, block, kind, &mut l1.stats, &mut l2.stats);
    watch.miss(addr, kind, l2_result);
    Some(l2_result)
}

/// [`two_level::miss`] on L1 set `set1`, for one pair of store representations.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn two_level_miss_in<const W1: usize, const S1: usize, const W2: usize, const S2: usize>(
    l1: &mut super::level::PackedLru<W1, S1>,
    l2: &mut super::level::PackedLru<W2, S2>,
    set1: usize,
    k: TwoLevel,
    block: u64,
    kind: AccessKind,
    s1: &mut LevelStats,
    s2: &mut LevelStats,
) -> LevelResult {
    let (shape1, sets1) = l1.parts();
    two_level::miss::<W1, S1, 0, W2, S2>(
        (shape1, &mut sets1[set1]),
        || l2.parts_ref(),
        k,
        block,
        kind,
        s1,
        s2,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use AccessKind::{Read, Write};
    use LevelResult::{Hit, Miss, NotReached};

    fn level(name: &str, size: u64, assoc: u32, line: u32) -> LevelSpec {
        LevelSpec {
            name: name.to_owned(),
            geometry: Geometry::new(size, assoc, line).unwrap(),
            replacement: Replacement::Lru,
            write: WritePolicy::WriteBack,
            inclusive: false,
            sharing: Default::default(),
        }
    }

    fn two_levels(l1: LevelSpec, l2: LevelSpec) -> Hierarchy {
        Hierarchy::new(&HierarchySpec {
            instr: None,
            data: vec![l1, l2],
        })
        .unwrap()
    }

    #[test]
    fn l1_miss_event_bits_are_those_of_the_outcome() {
        for kind in [Read, Write] {
            for l2 in [Hit, Miss] {
                assert_eq!(
                    AccessOutcome::l1_miss_event_bits(kind, l2),
                    two_level::outcome(kind, l2).event_bits(),
                    "{kind:?} {l2:?}"
                );
            }
        }
    }

    #[test]
    fn miss_fills_both_levels_then_hits_in_l1() {
        let mut h = two_levels(level("L1", 128, 2, 32), level("L2", 1024, 4, 32));
        assert_eq!(h.access(0x100, 4, Read).levels[..2], [Miss, Miss]);
        assert_eq!(h.access(0x104, 4, Read).levels[..2], [Hit, NotReached]);
        let s = h.level_stats(0);
        assert_eq!((s.reads, s.read_misses), (2, 1));
        assert_eq!(h.level_stats(1).reads, 1);
    }

    #[test]
    fn straddling_access_is_one_access_that_misses_if_either_line_does() {
        let mut h = two_levels(level("L1", 128, 2, 32), level("L2", 1024, 4, 32));
        h.access(0x20, 4, Read); // line 1 in
        let out = h.access(0x1e, 4, Read); // lines 0 and 1: 0 misses
        assert_eq!(out.levels[0], Miss);
        assert_eq!(h.level_stats(0).reads, 2);
        assert_eq!(h.level_stats(0).read_misses, 2);
        // Native mode sends only line 0 down, and it misses there.
        assert_eq!(h.level_stats(1).reads, 2);
        assert_eq!(out.levels[1], Miss);
    }

    #[test]
    fn cachegrind_mode_refetches_the_whole_straddling_access_below() {
        // L2 holds line 1 but not line 0... and with native mode L2 would only see line 0.
        let mut h =
            two_levels(level("L1", 64, 1, 32), level("L2", 1024, 4, 32)).cachegrind_compatible();
        h.access(0x20, 4, Read); // line 1 in L1 (set 1) and L2
        h.access(0x60, 4, Read); // line 3 evicts line 1 from L1 (set 1), L2 keeps it
        h.set_record_lines(true);
        h.access(0x1e, 4, Read); // line 0 misses L1, line 1 misses L1
        // Cachegrind sends the whole access to L2: line 0 misses, line 1 hits, and both are touched.
        let l2: Vec<_> = h.line_events().iter().filter(|e| e.level == 1).collect();
        assert_eq!(l2.len(), 2);
        assert_eq!(l2[1].kind, LineEventKind::Hit);
    }

    #[test]
    fn dirty_eviction_is_written_back_into_the_next_level() {
        // L1: one set of one way, so every new line evicts the previous one.
        let mut h = two_levels(level("L1", 32, 1, 32), level("L2", 64, 2, 32));
        h.access(0x00, 4, Write);
        h.access(0x20, 4, Read); // evicts dirty line 0 -> written back to L2
        assert_eq!(h.level_stats(0).writebacks, 1);
        h.access(0x40, 4, Read); // evicts clean line 1: no write-back
        assert_eq!(h.level_stats(0).writebacks, 1);
        // L2 (2 ways, one set) holds 1 and 2 now; line 0 was LRU there.
        assert!(!h.cache(1).contains(0));
    }

    #[test]
    fn cachegrind_mode_has_no_write_back_traffic() {
        let mut h =
            two_levels(level("L1", 32, 1, 32), level("L2", 64, 2, 32)).cachegrind_compatible();
        h.access(0x00, 4, Write);
        h.access(0x20, 4, Read);
        assert_eq!(h.level_stats(0).writebacks, 0);
    }

    #[test]
    fn write_through_no_allocate_passes_every_write_down_and_never_fills() {
        let mut l1 = level("L1", 128, 2, 32);
        l1.write = WritePolicy::WriteThrough;
        let mut h = two_levels(l1, level("L2", 1024, 4, 32));
        let out = h.access(0x40, 8, Write);
        assert_eq!(out.levels[..2], [Miss, Miss]);
        assert!(!h.cache(0).contains(2), "no-write-allocate filled L1");
        assert!(h.cache(1).contains(2), "L2 is write-allocate");
        h.access(0x40, 8, Read); // fills L1
        let out = h.access(0x40, 8, Write); // write hit in L1 still goes to L2
        assert_eq!(out.levels[..2], [Hit, Hit]);
        assert_eq!(h.level_stats(1).writes, 2);
    }

    #[test]
    fn inclusive_level_back_invalidates_above() {
        let mut l2 = level("L2", 64, 2, 32); // one set, two ways
        l2.inclusive = true;
        let mut h = two_levels(level("L1", 256, 8, 32), l2);
        h.access(0x00, 4, Read);
        h.access(0x20, 4, Read);
        assert!(h.cache(0).contains(0));
        h.access(0x40, 4, Read); // L2 evicts line 0, so L1 must lose it too
        assert!(!h.cache(0).contains(0));
        assert_eq!(h.level_stats(0).back_invalidations, 1);
        assert_eq!(h.access(0x00, 4, Read).levels[0], Miss);
    }

    #[test]
    fn non_inclusive_level_leaves_upper_copies() {
        let mut h = two_levels(level("L1", 256, 8, 32), level("L2", 64, 2, 32));
        h.access(0x00, 4, Read);
        h.access(0x20, 4, Read);
        h.access(0x40, 4, Read);
        assert!(h.cache(0).contains(0) && !h.cache(1).contains(0));
    }

    #[test]
    fn instruction_fetches_use_i1_then_the_shared_levels() {
        let spec: HierarchySpec = "I1=128,2,32;D1=128,2,32;LL=1024,4,32".parse().unwrap();
        let mut h = Hierarchy::new(&spec).unwrap();
        assert_eq!(h.fetch(0x1000, 4).levels[..2], [Miss, Miss]);
        // The data side has not seen the line, but LL has.
        assert_eq!(h.access(0x1000, 4, Read).levels[..2], [Miss, Hit]);
        let stats: Vec<_> = h.stats().map(|(n, s)| (n.to_owned(), *s)).collect();
        assert_eq!(stats[0].0, "I1");
        assert_eq!((stats[0].1.instr_fetches, stats[0].1.instr_misses), (1, 1));
        assert_eq!((stats[2].1.instr_misses, stats[2].1.read_misses), (1, 0));
    }

    #[test]
    fn line_events_name_the_evicted_line() {
        let mut h = two_levels(level("L1", 32, 1, 32), level("L2", 1024, 4, 32));
        h.set_record_lines(true);
        h.access(0x00, 4, Read);
        h.access(0x20, 4, Read);
        assert_eq!(
            h.line_events()[0],
            LineEvent {
                level: 0,
                line_addr: 0x20,
                kind: LineEventKind::Fill { evicted: Some(0) }
            }
        );
    }

    #[test]
    fn fast_paths_decide_exactly_as_the_general_walk() {
        // Recording line events turns the L1 fast paths off, so the same stream through a
        // recording hierarchy takes the general walk for every access; outcomes, totals and
        // contents must not differ. Shapes cover both packed LRU stores and the general store,
        // inclusion, write-back traffic, three levels and straddling accesses.
        let specs = [
            "D1=1K,8,64;L2=4K,16,64",
            "D1=1K,2,64;L2=2K,4,64,inclusive;LL=8K,16,64",
            "D1=2K,16,64;L2=4K,8,64,plru",
            "D1=512,4,64,random;L2=4K,32,64",
            "D1=1K,8,32;L2=4K,8,64",
        ];
        for spec in specs {
            let spec: HierarchySpec = spec.parse().unwrap();
            let mut fast = Hierarchy::new(&spec).unwrap();
            let mut general = Hierarchy::new(&spec).unwrap();
            general.set_record_lines(true);
            let mut x = 7u64;
            for i in 0..50_000 {
                crate::test_rng::xorshift(&mut x);
                let addr = x % 16_384;
                let size = [1, 4, 8, 8, 16][(x >> 20) as usize % 5];
                let kind = if (x >> 30).is_multiple_of(3) {
                    Write
                } else {
                    Read
                };
                assert_eq!(
                    fast.access(addr, size, kind),
                    general.access(addr, size, kind),
                    "{spec}: access {i}"
                );
            }
            let totals = |h: &Hierarchy| h.stats().map(|(_, s)| *s).collect::<Vec<_>>();
            assert_eq!(totals(&fast), totals(&general), "{spec}");
            for level in 0..fast.depth() {
                let mut a: Vec<u64> = fast.cache(level).resident_blocks().collect();
                let mut b: Vec<u64> = general.cache(level).resident_blocks().collect();
                a.sort_unstable();
                b.sort_unstable();
                assert_eq!(a, b, "{spec}: level {level}");
            }
        }
    }

    /// A random data stream over `span` bytes: mixed sizes (some straddling, some wider than a
    /// line) and about one write in three.
    fn random_stream(seed: u64, len: usize, span: u64) -> Vec<(u64, u32, AccessKind)> {
        let mut x = seed;
        (0..len)
            .map(|_| {
                crate::test_rng::xorshift(&mut x);
                let size = [1, 4, 8, 8, 8, 16, 0, 100][(x >> 20) as usize % 8];
                let kind = if (x >> 30).is_multiple_of(3) {
                    Write
                } else {
                    Read
                };
                (x % span, size, kind)
            })
            .collect()
    }

    #[test]
    fn a_batch_is_exactly_the_accesses_one_by_one() {
        // Both packed stores, the general store, sets indexed by modulo (no batch loop), a
        // write-through L1 (no fast path at all), Cachegrind mode.
        let specs = [
            "D1=1K,8,64;L2=4K,16,64",
            "D1=2K,16,64;L2=8K,8,64,inclusive",
            "D1=1K,4,64,plru;L2=4K,16,64",
            "D1=768,4,64;L2=4K,16,64",
            "D1=1K,2,64,write-through;L2=4K,8,64",
        ];
        for (i, spec) in specs.iter().enumerate() {
            let spec: HierarchySpec = spec.parse().unwrap();
            for cachegrind in [false, true] {
                let build = || {
                    let h = Hierarchy::new(&spec).unwrap();
                    if cachegrind {
                        h.cachegrind_compatible()
                    } else {
                        h
                    }
                };
                let (mut one_by_one, mut batched) = (build(), build());
                let stream = random_stream(i as u64 + 1, 40_000, 6_000);
                for &(addr, size, kind) in &stream {
                    one_by_one.access(addr, size, kind);
                }
                for chunk in stream.chunks(1000) {
                    batched.access_batch(chunk);
                }
                let totals = |h: &Hierarchy| h.stats().map(|(_, s)| *s).collect::<Vec<_>>();
                assert_eq!(totals(&batched), totals(&one_by_one), "{spec}");
                for level in 0..batched.depth() {
                    let mut a: Vec<u64> = batched.cache(level).resident_blocks().collect();
                    let mut b: Vec<u64> = one_by_one.cache(level).resident_blocks().collect();
                    a.sort_unstable();
                    b.sort_unstable();
                    assert_eq!(a, b, "{spec}: level {level}");
                }
            }
        }
    }

    #[test]
    fn the_two_level_loop_decides_exactly_as_the_general_walk() {
        // Every pair of packed stores (full and partly used rows), L2 larger and smaller than
        // L1 (so dirty L1 victims are often absent from L2 and fill it), 64-byte lines (a loop
        // of their own) and others, Cachegrind mode, and the shapes the loop must leave to the
        // general walk: an inclusive or write-through L2, a write-through L1, a tree-PLRU
        // level, three levels.
        let specs = [
            ("D1=1K,8,64;L2=4K,16,64", true),
            ("D1=512,8,32;L2=2K,16,32", true),
            ("D1=2K,16,128;L2=4K,8,128", true),
            ("D1=1K,8,64;L2=2K,8,64", true),
            ("D1=2K,16,64;L2=8K,8,64", true),
            ("D1=2K,16,64;L2=4K,16,64", true),
            ("D1=768,6,64;L2=1536,12,64", true),
            ("D1=2K,8,64;L2=1K,16,64", true),
            // Longer lines in L2 (the papers' 32-byte L1 over 64-byte lines, and 4 L1 lines
            // to an L2 line), and shorter ones, which the loop leaves to the general walk.
            ("D1=1K,2,32;L2=4K,8,64", true),
            ("D1=512,8,32;L2=2K,16,128", true),
            ("D1=1K,8,64;L2=4K,16,32", false),
            ("D1=1K,8,64;L2=4K,16,64,inclusive", false),
            ("D1=1K,8,64;L2=4K,16,64,write-through", false),
            ("D1=1K,8,64,write-through;L2=4K,16,64", false),
            ("D1=1K,8,64;L2=4K,16,64,plru", false),
            ("D1=1K,8,64;L2=2K,8,64;LL=8K,16,64", false),
        ];
        for (i, &(spec, loops)) in specs.iter().enumerate() {
            let spec: HierarchySpec = spec.parse().unwrap();
            for cachegrind in [false, true] {
                let build = || {
                    let h = Hierarchy::new(&spec).unwrap();
                    if cachegrind {
                        h.cachegrind_compatible()
                    } else {
                        h
                    }
                };
                let (mut general, mut one_by_one, mut batched) = (build(), build(), build());
                general.set_record_lines(true);
                assert!(!general.two_level(), "recording takes the general walk");
                assert_eq!(batched.two_level(), loops, "{spec}");
                // Mostly short walks along lines (hits), with random jumps (misses).
                let mut x = 17 + i as u64;
                let mut addr = 0u64;
                let stream: Vec<(u64, u32, AccessKind)> = (0..60_000)
                    .map(|_| {
                        crate::test_rng::xorshift(&mut x);
                        addr = if x.is_multiple_of(4) {
                            (x >> 8) % 12_000
                        } else {
                            addr + 8
                        };
                        let size = [8, 8, 8, 4, 1, 0, 16, 100][(x >> 20) as usize % 8];
                        let kind = if (x >> 30).is_multiple_of(3) {
                            Write
                        } else {
                            Read
                        };
                        (addr, size, kind)
                    })
                    .collect();
                for (n, &(addr, size, kind)) in stream.iter().enumerate() {
                    assert_eq!(
                        one_by_one.access(addr, size, kind),
                        general.access(addr, size, kind),
                        "{spec}, cachegrind {cachegrind}: access {n}"
                    );
                }
                for chunk in stream.chunks(999) {
                    batched.access_batch(chunk);
                }
                let totals = |h: &Hierarchy| h.stats().map(|(_, s)| *s).collect::<Vec<_>>();
                assert_eq!(totals(&one_by_one), totals(&general), "{spec}");
                assert_eq!(totals(&batched), totals(&general), "{spec}");
                // The write-back paths (into L2, and out of it) were taken.
                if loops && !cachegrind {
                    assert!(totals(&general)[0].writebacks > 0, "{spec}");
                    assert!(totals(&general)[1].writebacks > 0, "{spec}");
                }
                for level in 0..general.depth() {
                    let resident = |h: &Hierarchy| {
                        let mut blocks: Vec<u64> = h.cache(level).resident_blocks().collect();
                        blocks.sort_unstable();
                        blocks
                    };
                    assert_eq!(resident(&one_by_one), resident(&general), "{spec}");
                    assert_eq!(resident(&batched), resident(&general), "{spec}");
                }
            }
        }
    }

    #[test]
    fn outcome_bits_encode_kind_and_result() {
        let mut h = two_levels(level("L1", 128, 2, 32), level("L2", 1024, 4, 32));
        assert_eq!(h.access(0, 4, Read).bits_at(0), 2);
        assert_eq!(h.access(0, 4, Read).bits_at(0), 1);
        assert_eq!(h.access(0, 4, Write).bits_at(0), 4);
        assert_eq!(h.access(0x400, 4, Write).bits_at(0), 8);
        assert_eq!(h.access(0, 4, Read).bits_at(1), 0);
    }
}
