//! What an access did, at each level of its path, and the totals levels keep: the outcome types
//! every simulation (one hierarchy, the two-level loop, a machine of cores) returns and counts.

use super::AccessKind;

/// Most data levels a hierarchy may have; outcomes are fixed-size arrays so the hot path never allocates.
pub const MAX_LEVELS: usize = 4;

/// What one access did at one level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[repr(u8)]
pub enum LevelResult {
    /// The access was satisfied above this level.
    #[default]
    NotReached = 0,
    Hit = 1,
    /// At least one line of the access missed.
    Miss = 2,
}

/// The result of one access at every level on its path.
///
/// Index 0 is the first level of the path (I1 for instruction fetches when the hierarchy has
/// one, the first data level otherwise); deeper indices are the shared levels below it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AccessOutcome {
    pub kind: AccessKind,
    pub levels: [LevelResult; MAX_LEVELS],
}

impl AccessOutcome {
    /// A hit in the first level of the path.
    #[inline(always)]
    pub fn l1_hit(kind: AccessKind) -> Self {
        let mut levels = [LevelResult::NotReached; MAX_LEVELS];
        levels[0] = LevelResult::Hit;
        Self { kind, levels }
    }

    /// One bit per (kind, result) at `level`: 1 read hit, 2 read miss, 4 write hit, 8 write miss, 0 not reached.
    ///
    /// Events are masks over the same bits, so matching an event is one AND.
    #[inline]
    pub fn bits_at(&self, level: usize) -> u8 {
        let r = self.levels[level] as u8;
        // Hit = 1 -> bit 0 or 2, Miss = 2 -> bit 1 or 3; NotReached stays 0.
        let shift = if self.kind == AccessKind::Write { 2 } else { 0 };
        (r & 3) << shift
    }

    /// [`Self::event_bits`] of an access that missed L1 and found `l2` at L2 (and went no
    /// deeper), without building the outcome: the two-level miss step's outcome.
    #[inline(always)]
    pub(crate) fn l1_miss_event_bits(kind: AccessKind, l2: LevelResult) -> u32 {
        (LevelResult::Miss as u32 | (l2 as u32) << 8) << (2 * kind as u32)
    }

    /// [`bits_at`](Self::bits_at) of every level at once, one byte per level (level 0 lowest),
    /// so a monitor can test any set of events against an access with one AND.
    #[inline(always)]
    pub fn event_bits(&self) -> u32 {
        const _: () = assert!(
            MAX_LEVELS == 4,
            "event_bits packs one byte per level into a u32"
        );
        let l = &self.levels;
        let results = u32::from_le_bytes([l[0] as u8, l[1] as u8, l[2] as u8, l[3] as u8]);
        // Hit = 1 and Miss = 2 in every byte: a write moves them to 4 and 8.
        results << if self.kind == AccessKind::Write { 2 } else { 0 }
    }
}

/// What happened to one line at one level, recorded only when an analysis asks for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineEvent {
    /// Index of the data level.
    pub level: u8,
    /// Address of the first byte of the line.
    pub line_addr: u64,
    pub kind: LineEventKind,
}

/// The kinds of [`LineEvent`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineEventKind {
    /// A demand access found the line.
    Hit,
    /// A demand access missed and installed the line, displacing `evicted` (a line address).
    Fill { evicted: Option<u64> },
    /// A demand access missed and did not install the line (no-write-allocate).
    Bypass,
    /// The line left the level because an inclusive level below evicted it.
    Invalidated,
    /// A write-back from above installed the line, displacing `evicted`.
    WritebackFill { evicted: Option<u64> },
}

/// Per-level totals since the last reset.
///
/// Demand accesses are counted once per access and level, as Cachegrind does: a straddling access
/// is one access that misses if any of its lines misses.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct LevelStats {
    // Reads and writes side by side (and their misses): the fast path's counter is then
    // `reads` indexed by the kind, one instruction, not a select between two addresses.
    pub reads: u64,
    pub writes: u64,
    pub read_misses: u64,
    pub write_misses: u64,
    /// Instruction fetches that reached this level.
    pub instr_fetches: u64,
    pub instr_misses: u64,
    /// Dirty lines this level wrote to the next one.
    pub writebacks: u64,
    /// Lines this level lost because an inclusive level below evicted them.
    pub back_invalidations: u64,
}

impl std::ops::AddAssign<&LevelStats> for LevelStats {
    /// Adds every counter of `other`: the totals of several cores, threads or spans.
    fn add_assign(&mut self, other: &LevelStats) {
        self.reads += other.reads;
        self.writes += other.writes;
        self.read_misses += other.read_misses;
        self.write_misses += other.write_misses;
        self.instr_fetches += other.instr_fetches;
        self.instr_misses += other.instr_misses;
        self.writebacks += other.writebacks;
        self.back_invalidations += other.back_invalidations;
    }
}

impl LevelStats {
    /// The demand counter of `kind` (reads or writes), chosen without a branch.
    #[inline(always)]
    pub(super) fn demand(&mut self, kind: AccessKind) -> &mut u64 {
        // Programs interleave reads and writes irregularly: an index, not a branch.
        let [reads, writes] = [&mut self.reads, &mut self.writes];
        [reads, writes][kind as usize]
    }

    /// The demand-miss counter of `kind`.
    #[inline(always)]
    pub(super) fn demand_misses(&mut self, kind: AccessKind) -> &mut u64 {
        let [reads, writes] = [&mut self.read_misses, &mut self.write_misses];
        [reads, writes][kind as usize]
    }
}
