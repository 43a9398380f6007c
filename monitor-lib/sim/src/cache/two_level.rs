//! The common hierarchy in one loop: a true-LRU L1 and L2 in packed stores, whose hits, misses, fills and write-backs a batch simulates without leaving the loop.
//!
//! L2's lines may be longer than L1's (the EP-Cache and METRIC papers' 32-byte L1 over a
//! 64-byte L2): an L1 block maps to its L2 block by a shift, and the walk stays one block per
//! level.
//!
//! Nearly every hierarchy simulated is an L1 and an L2 of 8 or 16 ways under LRU. For those the
//! hierarchy's general walk (a loop over levels, a dispatch on each level's store, request
//! lists) costs several times what the work itself does. Here the two stores' representations
//! are fixed at compile time (four monomorphised loops), their constants and set pointers sit in
//! registers, and an L1 miss goes to L2 in the same iteration. The step loop has two more for a
//! 2-way L1 (the EP-Cache and METRIC papers' 32-byte one), whose lookup compares the set's two
//! tags and skips the signatures, which cost more than two compares (on a kernel that misses L1
//! at every record, the search is most of the L1 step). The decisions are exactly those
//! of [`super::Hierarchy`]'s walk (tested against it on random streams): the L1 fill, the
//! write-back of a dirty L1 victim into L2 (marking it dirty there, or filling it), then the
//! demand probe of L2 and its fill.

use super::AccessKind;
use super::level::{PackedLru, PackedSet, PackedShape, in_one_line};
use super::outcome::{AccessOutcome, LevelResult, LevelStats, MAX_LEVELS};

/// What the loop needs to know about the hierarchy besides the stores.
#[derive(Debug, Clone, Copy)]
pub(super) struct TwoLevel {
    /// `sets - 1` of each level (both have a power-of-two number of sets).
    pub l1_mask: u64,
    pub l2_mask: u64,
    /// log2 of L1's line size.
    pub line_bits: u32,
    /// log2 of how many L1 lines one L2 line holds (L2's lines are as long or longer): an L1
    /// block shifted right by this is its L2 block. A one-line access of L1 then lies in one
    /// line of L2 too, so the general walk's request lists reduce to that one block.
    pub l2_shift: u32,
    /// Dirty victims are written to the level below (not in Cachegrind mode).
    pub writebacks: bool,
}

impl TwoLevel {
    /// The constants as a loop over L1's `sets` keeps them, and the log2 of the line size: a
    /// constant when `LINE_BITS` is not 0. The mask becomes `len - 1` of a slice checked to be
    /// a power of two long, so the compiler knows every masked index is in bounds and keeps no
    /// length for the bounds check. (The same for L2's sets cost about 2 instructions more per
    /// record of the matmul bench: its miss path spilled more.)
    #[inline(always)]
    fn for_loop<T, const LINE_BITS: u32>(self, sets: &[T]) -> (TwoLevel, u32) {
        assert!(sets.len() == (self.l1_mask + 1) as usize && sets.len().is_power_of_two());
        let k = TwoLevel {
            l1_mask: sets.len() as u64 - 1,
            ..self
        };
        let bits = if LINE_BITS != 0 {
            LINE_BITS
        } else {
            self.line_bits
        };
        (k, bits)
    }
}

/// Who watches a run of [`run`] (and the per-access miss step): told of every L1 hit and of
/// every L1 miss with what L2 did, the outcome [`outcome`] builds.
pub(crate) trait Watch {
    /// Whether [`Self::hit`] wants to be called at all (checked once per run).
    fn wants_hits(&self) -> bool;
    fn hit(&mut self, addr: u64, kind: AccessKind);
    fn miss(&mut self, addr: u64, kind: AccessKind, l2: LevelResult);
}

/// Watches nothing.
impl Watch for () {
    #[inline(always)]
    fn wants_hits(&self) -> bool {
        false
    }
    #[inline(always)]
    fn hit(&mut self, _: u64, _: AccessKind) {}
    #[inline(always)]
    fn miss(&mut self, _: u64, _: AccessKind, _: LevelResult) {}
}

/// Simulates the accesses at the front of `batch` that lie in one line, telling `watch`
/// of each (hits only when `HITS`); returns how many it simulated. It stops at the first access that straddles two lines (or
/// is wider than one), which it leaves untouched for the general walk.
///
/// L1 misses, L2 traffic and write-backs are counted into the stats as they happen; L1's
/// demand totals (`reads`, `writes`) for every access simulated are added at the end.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(super) fn run<
    const W1: usize,
    const S1: usize,
    const W2: usize,
    const S2: usize,
    const HITS: bool,
    O: Watch,
>(
    l1: &mut PackedLru<W1, S1>,
    l2: &mut PackedLru<W2, S2>,
    k: TwoLevel,
    l1_stats: &mut LevelStats,
    l2_stats: &mut LevelStats,
    batch: &[(u64, u32, AccessKind)],
    watch: &mut O,
) -> usize {
    // 64-byte lines, every host's, get a loop of their own: with the line size a constant,
    // the shift and the one-line test take immediates and leave the count register and two
    // stack slots free.
    if k.line_bits == 6 {
        run_lines::<W1, S1, W2, S2, HITS, 6, O>(l1, l2, k, l1_stats, l2_stats, batch, watch)
    } else {
        run_lines::<W1, S1, W2, S2, HITS, 0, O>(l1, l2, k, l1_stats, l2_stats, batch, watch)
    }
}

/// [`run`] with lines of `1 << LINE_BITS` bytes, or of `k.line_bits` when `LINE_BITS` is 0.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn run_lines<
    const W1: usize,
    const S1: usize,
    const W2: usize,
    const S2: usize,
    const HITS: bool,
    const LINE_BITS: u32,
    O: Watch,
>(
    l1: &mut PackedLru<W1, S1>,
    l2: &mut PackedLru<W2, S2>,
    k: TwoLevel,
    l1_stats: &mut LevelStats,
    l2_stats: &mut LevelStats,
    batch: &[(u64, u32, AccessKind)],
    watch: &mut O,
) -> usize {
    let (shape1, sets1) = l1.parts();
    let (shape2, sets2) = l2.parts();
    let (k, bits) = k.for_loop::<_, LINE_BITS>(sets1);
    let mut writes = 0u64;
    let mut done = batch.len();
    for (index, &(addr, size, kind)) in batch.iter().enumerate() {
        let block = addr >> bits;
        let write = kind == AccessKind::Write;
        let state = match sets1.get_mut((block & k.l1_mask) as usize) {
            Some(state) if in_one_line(addr, size, bits) => state,
            _ => {
                done = index;
                break;
            }
        };
        writes += u64::from(write);
        if shape1.hit(state, block, write) {
            if HITS {
                watch.hit(addr, kind);
            }
            continue;
        }
        let l2_result = miss::<W1, S1, 0, W2, S2>(
            (shape1, state),
            || (&shape2, &mut *sets2),
            k,
            block,
            kind,
            l1_stats,
            l2_stats,
        );
        watch.miss(addr, kind, l2_result);
    }
    l1_stats.writes += writes;
    l1_stats.reads += done as u64 - writes;
    done
}

/// One access of a run of `run_steps` (the hierarchy's step loop).
#[derive(Debug, Clone, Copy)]
pub struct Step {
    pub addr: u64,
    pub size: u32,
    pub kind: AccessKind,
}

/// What a source of [`Steps`] may do to L1 before it gives an access: settle what another
/// layer counted on its sets' most recent lines without simulating it (the runtime's repeat-hit
/// filter), the order of their hits and a write's dirty bit. Neither counts anything. The
/// source calls these only when there is something to settle, so an access with nothing
/// pending carries no list of lines to be built and scanned.
pub trait SettleL1 {
    /// Makes L1's line `block` (an address shifted right by L1's line bits), which must be in
    /// L1, its set's most recent.
    fn make_recent(&mut self, block: u64);
    /// Marks L1's line `block`, which must be in L1, modified; it keeps its place in its set.
    fn mark_dirty(&mut self, block: u64);
}

/// L1's packed sets of `WAYS` ways (0: any number) as the step loop hands them to its source
/// ([`SettleL1`]).
struct PackedL1<'a, const W: usize, const S: usize, const WAYS: usize> {
    shape: PackedShape<W, S>,
    sets: &'a mut [PackedSet<W, S>],
    mask: u64,
}

impl<const W: usize, const S: usize, const WAYS: usize> SettleL1 for PackedL1<'_, W, S, WAYS> {
    #[inline(always)]
    fn make_recent(&mut self, block: u64) {
        // A hit that marks nothing dirty: the line becomes its set's most recent.
        let set = &mut self.sets[(block & self.mask) as usize];
        let present = self.shape.hit_in::<WAYS>(set, block, false);
        debug_assert!(present, "line {block:#x} to make recent is not in L1");
    }

    #[inline(always)]
    fn mark_dirty(&mut self, block: u64) {
        // As `Hierarchy::mark_l1_dirty`: the line keeps its place.
        let set = &mut self.sets[(block & self.mask) as usize];
        let way = self.shape.find_in_ways::<WAYS>(set, block);
        debug_assert!(way.is_some(), "line {block:#x} to mark dirty is not in L1");
        if let Some(way) = way {
            self.shape.set_dirty(set, way);
        }
    }
}

/// Where a run of `run_steps` takes its accesses one at a time, and whom it tells each
/// one's outcome: a source that keeps its own per-access state (the runtime's staged records)
/// and so cannot be a slice. That state travels by value with the access, so it stays in
/// registers across the simulation rather than in the source.
pub trait Steps {
    /// What [`Self::outcome`] needs to know of an access besides its outcome.
    type Context: Copy;
    /// Whether every access lies in one line, so the loop need not check (a source that
    /// says so and gives one that straddles has it simulated in its first line only).
    const ONE_LINE: bool = false;
    /// The next access, or `None` at the end, having settled in `l1` what the access needs
    /// settled before it. `LINE_BITS` is log2 of the line size when the caller knows it at
    /// compile time (0 when it does not), so a source that shifts by it can take an immediate.
    fn next_step<const LINE_BITS: u32, L: SettleL1>(
        &mut self,
        l1: &mut L,
    ) -> Option<(Step, Self::Context)>;
    /// The outcome of an access [`Self::next_step`] gave, as [`AccessOutcome::event_bits`].
    fn outcome(&mut self, context: Self::Context, bits: u32);
    /// [`Self::outcome`] of an access the two-level loop found in L1. The loop tells its
    /// outcomes apart by kind, so a source can count each with no bits to decode.
    #[inline(always)]
    fn l1_hit(&mut self, context: Self::Context, kind: AccessKind) {
        // `event_bits` of an L1 hit: Hit (1) in level 0's byte, moved by the kind.
        self.outcome(context, 1 << (2 * kind as u32));
    }
    /// [`Self::outcome`] of an access the two-level loop found missing from L1, which L2 then
    /// held (`l2_missed` false) or did not: the whole outcome of a hierarchy of two levels.
    #[inline(always)]
    fn l1_miss(&mut self, context: Self::Context, kind: AccessKind, l2_missed: bool) {
        let l2 = if l2_missed {
            LevelResult::Miss
        } else {
            LevelResult::Hit
        };
        self.outcome(context, AccessOutcome::l1_miss_event_bits(kind, l2));
    }
}

/// Simulates the accesses `steps` gives, in order, until it has no more (`None`) or gives one
/// that does not lie in one line, which is returned with its context, what it settled in L1
/// applied and the access itself not simulated nor told (for the general walk). Counts as [`run`] does; L1 hits are
/// told to `watch` when `HITS`. L1's sets have `WAYS1` ways, or any number when it is 0 (see
/// `PackedShape::hit_in`).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(super) fn run_steps<
    const W1: usize,
    const S1: usize,
    const WAYS1: usize,
    const W2: usize,
    const S2: usize,
    const HITS: bool,
    T: Steps,
    O: Watch,
>(
    l1: &mut PackedLru<W1, S1>,
    l2: &mut PackedLru<W2, S2>,
    k: TwoLevel,
    l1_stats: &mut LevelStats,
    l2_stats: &mut LevelStats,
    steps: &mut T,
    watch: &mut O,
) -> Option<(Step, T::Context)> {
    // As in `run`: a loop of its own for 64-byte lines.
    debug_assert!(WAYS1 == 0 || l1.assoc() == WAYS1);
    if k.line_bits == 6 {
        run_step_lines::<W1, S1, WAYS1, W2, S2, HITS, 6, T, O>(
            l1, l2, k, l1_stats, l2_stats, steps, watch,
        )
    } else {
        run_step_lines::<W1, S1, WAYS1, W2, S2, HITS, 0, T, O>(
            l1, l2, k, l1_stats, l2_stats, steps, watch,
        )
    }
}

/// [`run_steps`] with lines of `1 << LINE_BITS` bytes, or of `k.line_bits` when `LINE_BITS` is 0.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn run_step_lines<
    const W1: usize,
    const S1: usize,
    const WAYS1: usize,
    const W2: usize,
    const S2: usize,
    const HITS: bool,
    const LINE_BITS: u32,
    T: Steps,
    O: Watch,
>(
    l1: &mut PackedLru<W1, S1>,
    l2: &mut PackedLru<W2, S2>,
    k: TwoLevel,
    l1_stats: &mut LevelStats,
    l2_stats: &mut LevelStats,
    steps: &mut T,
    watch: &mut O,
) -> Option<(Step, T::Context)> {
    let (shape1, sets1) = l1.parts();
    let (shape2, sets2) = l2.parts();
    let (k, bits) = k.for_loop::<_, LINE_BITS>(sets1);
    // Reads are the steps that are not writes: one counter fewer in the loop.
    let (mut simulated, mut writes) = (0u64, 0u64);
    let mut stopped = None;
    loop {
        // (The masked index is in bounds, `for_loop`.)
        let mut settle = PackedL1::<W1, S1, WAYS1> {
            shape: shape1,
            sets: &mut *sets1,
            mask: k.l1_mask,
        };
        let Some((step, context)) = steps.next_step::<LINE_BITS, _>(&mut settle) else {
            break;
        };
        let (addr, kind) = (step.addr, step.kind);
        let block = addr >> bits;
        let state = match sets1.get_mut((block & k.l1_mask) as usize) {
            Some(state) if T::ONE_LINE || in_one_line(addr, step.size, bits) => state,
            _ => {
                stopped = Some((step, context));
                break;
            }
        };
        let write = kind == AccessKind::Write;
        writes += u64::from(write);
        simulated += 1;
        if shape1.hit_in::<WAYS1>(state, block, write) {
            if HITS {
                watch.hit(addr, kind);
            }
            steps.l1_hit(context, kind);
            continue;
        }
        let l2_result = miss::<W1, S1, WAYS1, W2, S2>(
            (shape1, state),
            || (&shape2, &mut *sets2),
            k,
            block,
            kind,
            l1_stats,
            l2_stats,
        );
        watch.miss(addr, kind, l2_result);
        steps.l1_miss(context, kind, l2_result == LevelResult::Miss);
    }
    l1_stats.writes += writes;
    l1_stats.reads += simulated - writes;
    stopped
}

/// The outcome of an access that missed L1 and reached L2 with `l2`.
#[inline(always)]
pub(crate) fn outcome(kind: AccessKind, l2: LevelResult) -> AccessOutcome {
    let mut levels = [LevelResult::NotReached; MAX_LEVELS];
    levels[0] = LevelResult::Miss;
    levels[1] = l2;
    AccessOutcome { kind, levels }
}

/// An L1 miss of `block`, whose L1 set `l1.1` has been searched and found without it: fills
/// it in L1 (dirty for a write), writes a dirty victim back into L2, then probes L2 and fills
/// it there on a miss. Counts the misses, L2's demand access and the write-backs, not L1's
/// demand access. Returns what L2 did.
#[inline(always)]
pub(super) fn miss<
    'a,
    const W1: usize,
    const S1: usize,
    const WAYS1: usize,
    const W2: usize,
    const S2: usize,
>(
    l1: (PackedShape<W1, S1>, &mut PackedSet<W1, S1>),
    l2: impl FnOnce() -> (&'a PackedShape<W2, S2>, &'a mut [PackedSet<W2, S2>]),
    k: TwoLevel,
    block: u64,
    kind: AccessKind,
    l1_stats: &mut LevelStats,
    l2_stats: &mut LevelStats,
) -> LevelResult {
    let write = kind == AccessKind::Write;
    let (victim, _) = l1.0.fill_in::<WAYS1>(l1.1, block, write);
    *l1_stats.demand_misses(kind) += 1;
    // L2's constants are asked for only now, and by reference: a caller that reads them from
    // the store (one access) would otherwise load them all before the fill and hold them
    // across it, in registers the fill needs, though each path below uses a few; a loop hands
    // over the copies it keeps.
    let (shape2, sets2) = l2();
    if let Some(v) = victim.filter(|v| v.dirty && k.writebacks) {
        l1_stats.writebacks += 1;
        write_back(shape2, sets2, k, v.block >> k.l2_shift, l2_stats);
    }
    // Below a write-back L1 the access is a read-allocate of the block, counted as its kind.
    *l2_stats.demand(kind) += 1;
    let block = block >> k.l2_shift;
    let state = &mut sets2[(block & k.l2_mask) as usize];
    if shape2.hit(state, block, false) {
        return LevelResult::Hit;
    }
    *l2_stats.demand_misses(kind) += 1;
    let (victim, _) = shape2.fill(state, block, false);
    if victim.is_some_and(|v| v.dirty && k.writebacks) {
        // L2 is the last level: the write-back leaves the hierarchy.
        l2_stats.writebacks += 1;
    }
    LevelResult::Miss
}

/// A dirty L1 line written into L2 (`block` is L2's): marked dirty if present (recency
/// unchanged), else filled dirty, as [`super::Hierarchy`]'s write-back does.
#[inline(always)]
fn write_back<const W2: usize, const S2: usize>(
    shape2: &PackedShape<W2, S2>,
    sets2: &mut [PackedSet<W2, S2>],
    k: TwoLevel,
    block: u64,
    l2_stats: &mut LevelStats,
) {
    let state = &mut sets2[(block & k.l2_mask) as usize];
    if let Some(way) = shape2.find_in(state, block) {
        shape2.set_dirty(state, way);
        return;
    }
    let (victim, _) = shape2.fill(state, block, true);
    if victim.is_some_and(|v| v.dirty) {
        l2_stats.writebacks += 1;
    }
}
