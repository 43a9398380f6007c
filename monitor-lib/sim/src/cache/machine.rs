//! A machine of cores: each core's private levels, the levels groups of cores (or all) share,
//! and the MESI protocol that keeps the private copies coherent (`coherence.rs`), with the
//! coherence events every access adds to its outcome.
//!
//! The levels are the spec's data levels, each [`Sharing`](super::Sharing) saying how many
//! consecutive cores share one copy: core `c` uses copy `c / group` of a level. An access walks
//! its core's copies exactly as [`Hierarchy`](super::Hierarchy) walks its levels in native mode
//! (same write policies, inclusion, write-backs and per-line requests below a miss), so a
//! machine of one core counts what a hierarchy of the same spec counts, whatever the spec's
//! sharing says (a property test holds it to that on random specs and streams). The machine
//! models data accesses only: an instruction cache in the spec is ignored (the runtime captures
//! no fetches; replay keeps using the hierarchy), and it has none of the hierarchy's fast paths
//! or line events. Its own fast paths are below: a first-level hit that needs nothing from the
//! directory, and an access in one line, whose request is that line at every level (every
//! level has the first level's line size with more than one core), walked with no list of
//! requests.
//!
//! Before its walk, an access deals with the other cores, per line it touches (lines of the
//! first level's size, which every level must share in a machine of more than one core):
//! - a write from a core that does not own the line invalidates every copy of it not shared
//!   with the writer ([`INVALIDATION`] at level 1 when it found one: `PAPI_CA_INV` counts
//!   invalidation requests, one per write, however many copies they reach);
//! - a read of a line another core owns (modified) downgrades that core's copies, their dirty
//!   data written into the first level both share;
//! - a core whose copy a write removed gets, on its next access to the line, a coherence miss
//!   ([`COHERENCE_MISS`]) at each level it lost the copy from and misses at now, split into
//!   false sharing ([`FALSE_SHARING_MISS`]: its bytes disjoint from every byte others wrote
//!   since) and true sharing ([`TRUE_SHARING_MISS`]).
//!
//! The coherence bits sit in the upper half of each level's byte of
//! [`AccessOutcome::event_bits`], above the read/write hit/miss bits, so events match them with
//! the same one AND ([`CoreOutcome::event_bits`]).
//!
//! A read that hits a private first level needs nothing from the directory (another core's
//! write would have removed the copy), so only writes and first-level misses look it up; and a
//! write needs nothing from it either when the line is in its core's *owned* table: a small
//! direct-mapped table per core of lines the core holds modified with no other core pending on
//! them, filled by a write that found that in the directory and emptied of a line whenever the
//! directory takes its ownership away (a read downgrades it, a write takes it). While a
//! line is there, another core's pending entry on it cannot appear: only a write by a core that
//! is not the owner adds one, and that write takes the line away first.

use super::coherence::{Directory, MAX_CORES, byte_mask};
use super::level::{CacheLevel, Probe, Victim};
use super::{
    AccessKind, AccessOutcome, CacheError, HierarchySpec, LevelResult, LevelStats, MAX_LEVELS,
    WritePolicy,
};

/// Outcome bit (in a level's byte of [`CoreOutcome::event_bits`]): a miss on a line another
/// core's write invalidated here.
pub const COHERENCE_MISS: u8 = 0x10;
/// A coherence miss whose bytes are disjoint from the bytes other cores wrote: false sharing.
pub const FALSE_SHARING_MISS: u8 = 0x20;
/// A coherence miss on bytes another core wrote: true sharing.
pub const TRUE_SHARING_MISS: u8 = 0x40;
/// At level 1 only: the access was a write that invalidated another core's copy.
pub const INVALIDATION: u8 = 0x80;

/// What one access of one core did: at every level, and to the other cores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CoreOutcome {
    pub outcome: AccessOutcome,
    /// The coherence bits, already at their levels' bytes.
    pub coherence: u32,
}

impl CoreOutcome {
    /// [`AccessOutcome::event_bits`] with the coherence bits: what events match against.
    #[inline]
    pub fn event_bits(&self) -> u32 {
        self.outcome.event_bits() | self.coherence
    }

    /// The outcome whose [`Self::event_bits`] are `bits`: they say everything the outcome
    /// does (each level's result in the low half of its byte, moved by the kind, and its
    /// coherence events in the high half), so a thread that counts an access later than it was
    /// simulated keeps only them ([`Machine::access_bits`]).
    pub fn from_event_bits(bits: u32) -> CoreOutcome {
        let kind = if bits & WRITE_RESULTS != 0 {
            AccessKind::Write
        } else {
            AccessKind::Read
        };
        let shift = 2 * kind as u32;
        let levels = std::array::from_fn(|level| match (bits >> (8 * level as u32 + shift)) & 3 {
            1 => LevelResult::Hit,
            2 => LevelResult::Miss,
            _ => LevelResult::NotReached,
        });
        CoreOutcome {
            outcome: AccessOutcome { kind, levels },
            coherence: bits & COHERENCE_BITS,
        }
    }
}

/// In [`CoreOutcome::event_bits`], the results of every level (the low half of each byte).
pub const RESULT_BITS: u32 = 0x0F0F_0F0F;
/// In [`CoreOutcome::event_bits`], the coherence events of every level (the high half).
pub const COHERENCE_BITS: u32 = !RESULT_BITS;
/// In [`CoreOutcome::event_bits`], the results of a write (hit 4, miss 8 in each byte).
const WRITE_RESULTS: u32 = 0x0C0C_0C0C;

/// One core's coherence totals.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct CoherenceStats {
    /// Writes that invalidated another core's copy (`PAPI_CA_INV`).
    pub invalidations: u64,
    /// Per data level: coherence misses, and how many were false and true sharing.
    pub coherence_misses: [u64; MAX_LEVELS],
    pub false_sharing: [u64; MAX_LEVELS],
    pub true_sharing: [u64; MAX_LEVELS],
    /// Reads that downgraded another core's modified copy.
    pub downgrades: u64,
}

#[derive(Debug, Clone)]
struct MachineLevel {
    name: String,
    write: WritePolicy,
    inclusive: bool,
    /// Consecutive cores per copy.
    group: usize,
    /// Per core, the copy it uses (`core / group`, with no division on the walk).
    copy_of: Vec<usize>,
    copies: Vec<CacheLevel>,
}

/// A simulated machine of `cores` cores over one spec (see the module doc).
#[derive(Debug, Clone)]
pub struct Machine {
    spec: HierarchySpec,
    cores: usize,
    levels: Vec<MachineLevel>,
    /// Per core, per data level: what that core's accesses did there.
    stats: Vec<[LevelStats; MAX_LEVELS]>,
    coherence: Vec<CoherenceStats>,
    directory: Directory,
    /// log2 of the coherence line (the first level's line size).
    line_bits: u32,
    /// Whether every core has its own first level (a read hit there needs no directory).
    private_first: bool,
    /// Per core, [`OWNED_SLOTS`] lines it owns with no core pending on them, by block number's
    /// low bits ([`NOT_OWNED`] for none): a write hit on one skips the directory.
    owned: Vec<u64>,
    /// Whether [`Self::first_level_hit`] may finish an access: a machine of more than one
    /// core whose first level is private (one core has no coherence to skip, and a shared
    /// first level's hit may need the directory), and not a test that checks the directory
    /// step and walk against it.
    fast_hits: bool,
    /// Whether an access in one line takes [`Self::walk_line`] rather than the general loop
    /// and walk (off only in tests that check the one against the other).
    line_walks: bool,
    requests: Vec<(u64, u64)>,
    next_requests: Vec<(u64, u64)>,
    /// Per line of the access being simulated that its core had lost: (levels lost, bytes
    /// others wrote, bytes it touches).
    classify: Vec<(u8, u64, u64)>,
}

impl Machine {
    /// Whether `spec` can be a machine of `cores` cores, as [`Self::new`] decides it, without
    /// making one (a tool checks before the program starts).
    pub fn check(spec: &HierarchySpec, cores: usize) -> Result<(), CacheError> {
        let err = |why: String| CacheError::Spec {
            spec: spec.to_string(),
            why,
        };
        if !(1..=MAX_CORES).contains(&cores) {
            return Err(err(format!(
                "a machine has 1 to {MAX_CORES} cores, not {cores}"
            )));
        }
        if spec.data.is_empty() || spec.data.len() > MAX_LEVELS {
            return Err(err(format!(
                "a machine needs 1 to {MAX_LEVELS} data levels"
            )));
        }
        let line = spec.data[0].geometry.line_size;
        if cores > 1 && spec.data.iter().any(|l| l.geometry.line_size != line) {
            return Err(err(format!(
                "coherence among {cores} cores needs one line size at every data level; give every level {line}-byte lines"
            )));
        }
        if let Some(l) = spec
            .data
            .iter()
            .find(|l| !cores.is_multiple_of(l.sharing.group_size(cores)))
        {
            let group = l.sharing.group_size(cores);
            return Err(err(format!(
                "{} is shared by groups of {group} cores, which do not divide {cores} cores evenly; give a group size dividing the number of cores, or a number of cores that is a multiple of {group}",
                l.name
            )));
        }
        Ok(())
    }

    /// An empty machine of `cores` cores (1 to [`MAX_CORES`]) over the data levels of `spec`.
    pub fn new(spec: &HierarchySpec, cores: usize) -> Result<Self, CacheError> {
        Self::check(spec, cores)?;
        let line = spec.data[0].geometry.line_size;
        let levels = spec
            .data
            .iter()
            .map(|l| {
                let group = l.sharing.group_size(cores);
                let copies = (0..cores.div_ceil(group))
                    .map(|_| CacheLevel::new(l.geometry, l.replacement))
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(MachineLevel {
                    name: l.name.clone(),
                    write: l.write,
                    inclusive: l.inclusive,
                    group,
                    copy_of: (0..cores).map(|core| core / group).collect(),
                    copies,
                })
            })
            .collect::<Result<Vec<_>, CacheError>>()?;
        let private_first = levels[0].group == 1;
        Ok(Self {
            spec: spec.clone(),
            cores,
            levels,
            stats: vec![[LevelStats::default(); MAX_LEVELS]; cores],
            coherence: vec![CoherenceStats::default(); cores],
            directory: Directory::default(),
            line_bits: line.trailing_zeros(),
            private_first,
            owned: vec![NOT_OWNED; cores * OWNED_SLOTS],
            fast_hits: cores > 1 && private_first,
            line_walks: true,
            requests: Vec::with_capacity(8),
            next_requests: Vec::with_capacity(8),
            classify: Vec::with_capacity(2),
        })
    }

    /// The spec the machine was built from.
    pub fn spec(&self) -> &HierarchySpec {
        &self.spec
    }

    /// The coherence line's size in bytes (the first level's line): an access no wider is
    /// one piece of [`crate::simulator::line_pieces`].
    pub fn line_size(&self) -> u64 {
        1 << self.line_bits
    }

    /// Number of cores.
    pub fn cores(&self) -> usize {
        self.cores
    }

    /// Number of data levels.
    pub fn depth(&self) -> usize {
        self.levels.len()
    }

    /// Name of data level `level`.
    pub fn level_name(&self, level: usize) -> &str {
        &self.levels[level].name
    }

    /// How many cores share one copy of data level `level`.
    pub fn group_size(&self, level: usize) -> usize {
        self.levels[level].group
    }

    /// What core `core`'s accesses did at data level `level`.
    pub fn core_stats(&self, core: usize, level: usize) -> &LevelStats {
        &self.stats[core][level]
    }

    /// Data level `level`'s totals over every core.
    pub fn level_stats(&self, level: usize) -> LevelStats {
        let mut sum = LevelStats::default();
        for core in &self.stats {
            sum += &core[level];
        }
        sum
    }

    /// Core `core`'s coherence totals.
    pub fn coherence_stats(&self, core: usize) -> &CoherenceStats {
        &self.coherence[core]
    }

    /// Zeroes every total; cache contents and the directory stay.
    pub fn reset_stats(&mut self) {
        self.stats.fill([LevelStats::default(); MAX_LEVELS]);
        self.coherence.fill(CoherenceStats::default());
    }

    /// Whether core `core`'s copy of data level `level` holds the line of `addr`.
    pub fn holds(&self, core: usize, level: usize, addr: u64) -> bool {
        let l = &self.levels[level];
        l.copies[core / l.group].contains(addr >> l.copies[0].line_bits())
    }

    /// Simulates a data load or store of `size` bytes at `addr` by core `core` (taken modulo the
    /// number of cores), coherence first (see the module doc).
    ///
    /// Inline only as far as a first-level hit, the common access: the rest is a call of its
    /// own, so that the hit keeps a small frame where it is inlined.
    #[inline]
    pub fn access(&mut self, core: usize, addr: u64, size: u32, kind: AccessKind) -> CoreOutcome {
        let core = self.core_index(core);
        if self.hits_first_level(core, addr, size, kind) {
            return CoreOutcome {
                outcome: AccessOutcome::l1_hit(kind),
                coherence: 0,
            };
        }
        self.access_past_first_level(core, addr, size, kind)
    }

    /// [`Self::access`] returning only the outcome's [`CoreOutcome::event_bits`], the word a
    /// thread that counts later keeps: a first-level hit builds no outcome at all.
    #[inline(always)]
    pub fn access_bits(&mut self, core: usize, addr: u64, size: u32, kind: AccessKind) -> u32 {
        let core = self.core_index(core);
        if self.hits_first_level(core, addr, size, kind) {
            // `event_bits` of a first-level hit: Hit (1) in level 0's byte, moved by the kind.
            return 1 << (2 * kind as u32);
        }
        self.bits_past_first_level(core, addr, size, kind)
    }

    /// [`Self::access_past_first_level`]'s event bits.
    #[inline(never)]
    fn bits_past_first_level(
        &mut self,
        core: usize,
        addr: u64,
        size: u32,
        kind: AccessKind,
    ) -> u32 {
        self.access_past_first_level(core, addr, size, kind)
            .event_bits()
    }

    /// `core` as an index of the machine's cores: a division only for a core past the count
    /// (callers give their own core).
    #[inline(always)]
    fn core_index(&self, core: usize) -> usize {
        if core < self.cores {
            core
        } else {
            core % self.cores
        }
    }

    /// Whether the access lies in one line and is a first-level hit needing nothing from the
    /// directory, which it then is, simulated and counted ([`Self::first_level_hit`]).
    #[inline(always)]
    fn hits_first_level(&mut self, core: usize, addr: u64, size: u32, kind: AccessKind) -> bool {
        let len = u64::from(size.max(1));
        // In one line: its first and last bytes differ in no bit above the line's.
        self.fast_hits
            && (addr ^ (addr + len - 1)) >> self.line_bits == 0
            && self.first_level_hit(core, addr, len, kind)
    }

    /// [`Self::access`] of an access that is not a first-level hit needing nothing from the
    /// directory, or of a machine of one core.
    #[inline(never)]
    fn access_past_first_level(
        &mut self,
        core: usize,
        addr: u64,
        size: u32,
        kind: AccessKind,
    ) -> CoreOutcome {
        if self.cores == 1 {
            return CoreOutcome {
                outcome: self.walk(core, addr, size, kind),
                coherence: 0,
            };
        }
        let len = u64::from(size.max(1));
        let bits = self.line_bits;
        let (first, last) = (addr >> bits, (addr + len - 1) >> bits);
        let mut invalidated = false;
        let (outcome, mut coherence) = if first == last && self.line_walks {
            // The common case: one line, one directory step, a walk with one request a level.
            let bytes = byte_mask(first, bits, addr, len);
            let lost = self.before_access(core, first, bytes, kind, &mut invalidated);
            let outcome = self.walk_line(core, first, kind);
            let coherence = lost.map_or(0, |(levels, written)| {
                self.sharing_misses(&outcome, levels, written, bytes)
            });
            (outcome, coherence)
        } else {
            let mut classify = std::mem::take(&mut self.classify);
            classify.clear();
            for block in first..=last {
                let bytes = byte_mask(block, bits, addr, len);
                let lost = self.before_access(core, block, bytes, kind, &mut invalidated);
                if let Some((levels, written)) = lost {
                    classify.push((levels, written, bytes));
                }
            }
            let outcome = self.walk(core, addr, size, kind);
            let coherence = classify.iter().fold(0, |bits, &(levels, written, bytes)| {
                bits | self.sharing_misses(&outcome, levels, written, bytes)
            });
            self.classify = classify;
            (outcome, coherence)
        };
        if invalidated {
            coherence |= u32::from(INVALIDATION);
        }
        if coherence != 0 {
            self.count_coherence(core, coherence);
        }
        CoreOutcome { outcome, coherence }
    }

    /// The coherence miss bits of a line its core had lost from `levels` (a bit per level),
    /// others having written `written` of its bytes since, which the access touches at
    /// `bytes`: at each of those levels it now misses at, a coherence miss, false sharing when
    /// the bytes are disjoint, true sharing otherwise.
    fn sharing_misses(&self, outcome: &AccessOutcome, levels: u8, written: u64, bytes: u64) -> u32 {
        let sharing = if written & bytes != 0 {
            TRUE_SHARING_MISS
        } else {
            FALSE_SHARING_MISS
        };
        let mut coherence = 0u32;
        for (level, result) in outcome.levels.iter().enumerate().take(self.levels.len()) {
            if levels & (1 << level) != 0 && *result == LevelResult::Miss {
                coherence |= u32::from(COHERENCE_MISS | sharing) << (8 * level);
            }
        }
        coherence
    }

    /// The common access, `len` bytes at `addr` in one line: a hit in `core`'s own first level that needs no
    /// coherence action (a read of any copy it holds; a write by the line's owner, which has
    /// no copy of its own pending), simulated and counted as [`Self::access`]'s directory step
    /// and walk would, and `true` returned. Anything else changes nothing and returns `false`.
    /// Only where [`Self::fast_hits`] allows it.
    #[inline(always)]
    fn first_level_hit(&mut self, core: usize, addr: u64, len: u64, kind: AccessKind) -> bool {
        let block = addr >> self.line_bits;
        let first = &mut self.levels[0];
        let hit = match kind {
            AccessKind::Read => first.copies[core].probe_hit(block, false),
            AccessKind::Write => {
                let slot = owned_slot(core, block);
                if self.owned[slot] == block {
                    // Owned, nobody pending (see the module doc): only the copy must be there.
                    first.copies[core].probe_hit(block, true)
                } else {
                    // A miss needs the directory step anyway: look it up only for a hit.
                    if !first.copies[core].contains(block) {
                        return false;
                    }
                    let me = core as u8;
                    let Some(line) = self.directory.get_mut(block) else {
                        return false;
                    };
                    if first.write != WritePolicy::WriteBack
                        || line.owner != Some(me)
                        || line.pending.iter().any(|p| p.core == me)
                        || !first.copies[core].probe_hit(block, true)
                    {
                        return false;
                    }
                    if line.pending.is_empty() {
                        self.owned[slot] = block;
                    } else {
                        line.written_by(me, byte_mask(block, self.line_bits, addr, len));
                    }
                    true
                }
            }
        };
        if hit {
            *self.stats[core][0].demand(kind) += 1;
        }
        hit
    }

    fn count_coherence(&mut self, core: usize, bits: u32) {
        let stats = &mut self.coherence[core];
        stats.invalidations += u64::from(bits & u32::from(INVALIDATION) != 0);
        for level in 0..self.levels.len() {
            let byte = (bits >> (8 * level)) as u8;
            stats.coherence_misses[level] += u64::from(byte & COHERENCE_MISS != 0);
            stats.false_sharing[level] += u64::from(byte & FALSE_SHARING_MISS != 0);
            stats.true_sharing[level] += u64::from(byte & TRUE_SHARING_MISS != 0);
        }
    }

    /// The coherence actions of `core`'s access to line `block` (touching `bytes` of it) before
    /// the walk; returns the levels the core had lost the line from and the bytes others wrote
    /// since, when it had.
    fn before_access(
        &mut self,
        core: usize,
        block: u64,
        bytes: u64,
        kind: AccessKind,
        invalidated: &mut bool,
    ) -> Option<(u8, u64)> {
        if kind == AccessKind::Read
            && self.private_first
            && self.levels[0].copies[core].contains(block)
        {
            return None;
        }
        let me = core as u8;
        let cores = self.cores;
        let Self {
            directory,
            levels,
            owned,
            ..
        } = self;
        let line = directory.line(block);
        let lost = line.take_pending(me).map(|p| (p.levels, p.written));
        let mut downgrade_from = None;
        match kind {
            AccessKind::Write => {
                line.written_by(me, bytes);
                if line.owner != Some(me) {
                    let others = line.holders & !(1u64 << core);
                    let mut removed = [0u64; MAX_LEVELS];
                    for other in cores_of(others) {
                        for (level, l) in levels.iter_mut().enumerate() {
                            let (theirs, mine) = (l.copy_of[other], l.copy_of[core]);
                            if theirs != mine
                                && removed[level] & (1 << theirs) == 0
                                && l.copies[theirs].invalidate(block).is_some()
                            {
                                removed[level] |= 1 << theirs;
                            }
                        }
                    }
                    let mut holders = 1u64 << core;
                    for other in cores_of(others) {
                        let mut gone = 0u8;
                        let mut shares_a_copy = false;
                        for (level, l) in levels.iter().enumerate() {
                            let (theirs, mine) = (l.copy_of[other], l.copy_of[core]);
                            if theirs != mine {
                                gone |= u8::from(removed[level] & (1 << theirs) != 0) << level;
                            } else if l.group < cores {
                                shares_a_copy = true;
                            }
                        }
                        if gone != 0 {
                            line.lost(other as u8, gone, bytes);
                        }
                        if shares_a_copy {
                            holders |= 1 << other;
                        }
                    }
                    *invalidated |= removed.iter().any(|&r| r != 0);
                    line.holders = holders;
                    if let Some(owner) = line.owner {
                        disown(owned, usize::from(owner), block);
                    }
                    line.owner = Some(me);
                }
                if line.pending.is_empty() && levels[0].write == WritePolicy::WriteBack {
                    owned[owned_slot(core, block)] = block;
                }
            }
            AccessKind::Read => {
                if let Some(owner) = line.owner.filter(|&o| o != me) {
                    downgrade_from = Some(usize::from(owner));
                    disown(owned, usize::from(owner), block);
                    line.owner = None;
                }
                line.holders |= 1 << core;
            }
        }
        if let Some(owner) = downgrade_from {
            self.downgrade(core, owner, block);
        }
        lost
    }

    /// `owner`'s copies of `block` not shared with `core` become clean (Shared); dirty data
    /// goes into the first level the two share, counted as a write-back of the level that held it.
    fn downgrade(&mut self, core: usize, owner: usize, block: u64) {
        let mut dirty_at = None;
        let mut common = None;
        for (level, l) in self.levels.iter_mut().enumerate() {
            let theirs = l.copy_of[owner];
            if theirs == l.copy_of[core] {
                common = Some(level);
                break;
            }
            if l.copies[theirs].clean(block) == Some(true) && dirty_at.is_none() {
                dirty_at = Some(level);
            }
        }
        self.coherence[core].downgrades += 1;
        if let Some(level) = dirty_at {
            self.stats[core][level].writebacks += 1;
            if let Some(common) = common {
                let bits = self.line_bits;
                self.write_back(core, common, block << bits, 1 << bits);
            }
        }
    }

    /// [`Hierarchy`](super::Hierarchy)'s general walk (native mode, data path) through `core`'s copies.
    fn walk(&mut self, core: usize, addr: u64, size: u32, kind: AccessKind) -> AccessOutcome {
        let mut out = AccessOutcome {
            kind,
            levels: [LevelResult::NotReached; MAX_LEVELS],
        };
        let mut requests = std::mem::take(&mut self.requests);
        let mut next = std::mem::take(&mut self.next_requests);
        requests.clear();
        requests.push((addr, u64::from(size.max(1))));
        // Whether the bytes being written are carried at this level (true until a write-back
        // level absorbs them; below it, the requests are fills).
        let mut carries_write = kind == AccessKind::Write;
        for depth in 0..self.levels.len() {
            let level = &self.levels[depth];
            let bits = level.copies[level.copy_of[core]].line_bits();
            next.clear();
            let mut missed = false;
            for &(a, len) in &requests {
                for block in a >> bits..=(a + len - 1) >> bits {
                    let (block_missed, pass_down) =
                        self.step_block(core, depth, block, carries_write);
                    missed |= block_missed;
                    if pass_down {
                        next.push((block << bits, 1 << bits));
                    }
                }
            }
            self.settle_level(&mut out, core, depth, missed);
            if next.is_empty() {
                break;
            }
            carries_write &= self.levels[depth].write == WritePolicy::WriteThrough;
            std::mem::swap(&mut requests, &mut next);
        }
        self.requests = requests;
        self.next_requests = next;
        out
    }

    /// [`Self::walk`] of an access in one line, `block`, of a machine of more than one core,
    /// whose levels all have that line's size ([`Self::check`]): the request at every level
    /// is that one block, so the walk keeps no list of requests.
    fn walk_line(&mut self, core: usize, block: u64, kind: AccessKind) -> AccessOutcome {
        let mut out = AccessOutcome {
            kind,
            levels: [LevelResult::NotReached; MAX_LEVELS],
        };
        let mut carries_write = kind == AccessKind::Write;
        for depth in 0..self.levels.len() {
            let (missed, pass_down) = self.step_block(core, depth, block, carries_write);
            self.settle_level(&mut out, core, depth, missed);
            if !pass_down {
                break;
            }
            carries_write &= self.levels[depth].write == WritePolicy::WriteThrough;
        }
        out
    }

    /// One block's step at `depth`, in `core`'s copy, of a request that carries the bytes a
    /// write stores (`carries_write`) or not: probed under the level's write policy (the
    /// written line made dirty at a write-back level, not allocated at a write-through one),
    /// the line it displaced handed to [`Self::evicted`]. Returns whether it missed and
    /// whether the request goes on to the level below. Both walks take this one step.
    #[inline(always)]
    fn step_block(
        &mut self,
        core: usize,
        depth: usize,
        block: u64,
        carries_write: bool,
    ) -> (bool, bool) {
        let level = &mut self.levels[depth];
        let write_through = level.write == WritePolicy::WriteThrough;
        let dirty = carries_write && !write_through;
        let allocate = !(carries_write && write_through);
        let copy = level.copy_of[core];
        match level.copies[copy].probe(block, allocate, dirty) {
            Probe::Hit => (false, carries_write && write_through),
            Probe::Filled { victim } => {
                if let Some(v) = victim {
                    self.evicted(core, depth, v);
                }
                (true, true)
            }
            Probe::Bypassed => (true, true),
        }
    }

    /// The access's result at `depth` (a miss if any of its blocks missed there) in `out`
    /// and in `core`'s counts.
    #[inline(always)]
    fn settle_level(&mut self, out: &mut AccessOutcome, core: usize, depth: usize, missed: bool) {
        out.levels[depth] = if missed {
            LevelResult::Miss
        } else {
            LevelResult::Hit
        };
        let stats = &mut self.stats[core][depth];
        *stats.demand(out.kind) += 1;
        *stats.demand_misses(out.kind) += u64::from(missed);
    }

    /// A line displaced from `core`'s copy of `depth`: back-invalidation above an inclusive
    /// level (in every core the copy serves), then the write-back of dirty data.
    fn evicted(&mut self, core: usize, depth: usize, victim: Victim) {
        let l = &self.levels[depth];
        let bits = l.copies[0].line_bits();
        let start = victim.block << bits;
        let mut dirty = victim.dirty;
        if l.inclusive && depth > 0 {
            dirty |= self.back_invalidate(core, depth, start, 1 << bits);
        }
        if dirty {
            self.stats[core][depth].writebacks += 1;
            self.write_back(core, depth + 1, start, 1 << bits);
        }
    }

    /// Removes `[start, start+len)` from every copy above `core`'s copy of `depth` (those of
    /// all the cores it serves); returns whether any removed copy was dirty.
    fn back_invalidate(&mut self, core: usize, depth: usize, start: u64, len: u64) -> bool {
        let group = self.levels[depth].group;
        let first = core / group * group;
        let last = (first + group).min(self.cores) - 1;
        let mut dirty = false;
        for upper in 0..depth {
            let l = &mut self.levels[upper];
            let bits = l.copies[0].line_bits();
            for copy in first / l.group..=last / l.group {
                for block in start >> bits..=(start + len - 1) >> bits {
                    if let Some(was_dirty) = l.copies[copy].invalidate(block) {
                        dirty |= was_dirty;
                        self.stats[core][upper].back_invalidations += 1;
                    }
                }
            }
        }
        dirty
    }

    /// Writes dirty data `[start, start+len)` into `core`'s copy of `depth` (a no-op below the
    /// last level).
    fn write_back(&mut self, core: usize, depth: usize, start: u64, len: u64) {
        let Some(l) = self.levels.get(depth) else {
            return;
        };
        if l.write == WritePolicy::WriteThrough {
            self.write_back(core, depth + 1, start, len);
            return;
        }
        let copy = l.copy_of[core];
        let bits = l.copies[copy].line_bits();
        for block in start >> bits..=(start + len - 1) >> bits {
            let cache = &mut self.levels[depth].copies[copy];
            if cache.mark_dirty(block) {
                continue;
            }
            if let Probe::Filled {
                victim: Some(victim),
            } = cache.probe(block, true, true)
            {
                self.evicted(core, depth, victim);
            }
        }
    }
}

/// Lines per core in [`Machine`]'s owned table.
const OWNED_SLOTS: usize = 1024;
/// An empty slot of the owned table (no block number is this large).
const NOT_OWNED: u64 = u64::MAX;

/// The owned table's slot of `block` for `core`.
#[inline(always)]
fn owned_slot(core: usize, block: u64) -> usize {
    core * OWNED_SLOTS + (block as usize & (OWNED_SLOTS - 1))
}

/// `core` no longer owns `block`: out of its owned table.
#[inline]
fn disown(owned: &mut [u64], core: usize, block: u64) {
    let slot = owned_slot(core, block);
    if owned[slot] == block {
        owned[slot] = NOT_OWNED;
    }
}

/// The cores of a core set, lowest first: one step per core in it (the set is most often
/// empty or one core, and a write miss asks twice).
fn cores_of(mut set: u64) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        (set != 0).then(|| {
            let core = set.trailing_zeros() as usize;
            set &= set - 1;
            core
        })
    })
}

#[cfg(test)]
mod tests;
