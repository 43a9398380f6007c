//! Set sharding: one hierarchy simulated as several copies, each owning a disjoint slice of every
//! level's sets, so several threads can simulate one access stream exactly with no
//! communication.
//!
//! Why it is exact: an access to a line touches, at every level, only the set its address
//! indexes, and what a set holds depends only on the accesses that indexed it, in their order
//! (true LRU and tree-PLRU keep their state per set). A write-back goes to the next level's set
//! of the victim, which lies in the same slice as the line that displaced it; an inclusive
//! level's back-invalidation reaches the lines of its own victim above it, in the same slice
//! again. So when the slice a line belongs to is a function of address bits that every level
//! uses in its set index, and that lie above every level's line offset, each slice's sets see
//! exactly the accesses they would see in one hierarchy, in the same order, whatever the other
//! slices do. [`SetShards`] takes those bits: the highest `log2(shards)` bits of the address
//! range that every level's set index covers, so slices alternate in blocks of a few KiB
//! (2 KiB for a 32 KiB 8-way L1 of 64-byte lines) and a sequential sweep visits them in turn.
//!
//! What is refused ([`ShardError`]): a level whose number of sets is not a power of two (its
//! index is a modulo, which no address bit decides), seeded random replacement (one sequence
//! of draws is shared by all sets, so a set's victims depend on the other sets' misses), and
//! too few common set-index bits for the number of slices asked.
//!
//! An access whose bytes lie in more than one slice (it straddles the border of two) is
//! simulated across the copies that own its lines by [`simulate_across`], which must hold them
//! all: the replay stops its threads for it. Each line's work is done in its owner's copy, and
//! the access is counted once per level, as one hierarchy counts it.

use super::{AccessKind, Hierarchy, HierarchySpec, Replacement};

/// Why a hierarchy cannot be simulated in set shards.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ShardError {
    #[error(
        "{level} has {sets} sets, not a power of two: its set index is a modulo, which no address bit decides, so its sets cannot be shared out"
    )]
    SetsNotPowerOfTwo { level: String, sets: u64 },
    #[error(
        "{level} uses seeded random replacement, whose one sequence of draws all its sets share: simulated in shards, the victims would change"
    )]
    RandomReplacement { level: String },
    #[error(
        "the levels' set indexes have {common} address bits in common, too few for {shards} shards (at most {most})"
    )]
    TooFewCommonBits { common: u32, shards: u32, most: u32 },
    #[error("the number of shards must be a power of two from 1 to {MAX_SHARDS}, not {0}")]
    BadCount(u32),
}

/// The most shards a hierarchy is split into.
pub const MAX_SHARDS: u32 = 64;

/// How a hierarchy's sets are shared out among copies: the copy (shard) that owns an address
/// is `log2(count)` of its bits, from `shift` up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SetShards {
    count: u32,
    shift: u32,
}

impl SetShards {
    /// The sharding of `spec`'s hierarchy into `count` copies (a power of two).
    pub fn new(spec: &HierarchySpec, count: u32) -> Result<SetShards, ShardError> {
        if !count.is_power_of_two() || count > MAX_SHARDS {
            return Err(ShardError::BadCount(count));
        }
        if count == 1 {
            // Every set is the one copy's, whatever the hierarchy.
            return Ok(SetShards {
                count,
                shift: u64::BITS - 1,
            });
        }
        let (lowest, highest) = Self::common_index_bits(spec)?;
        let common = highest.saturating_sub(lowest);
        let bits = count.trailing_zeros();
        if bits > common {
            return Err(ShardError::TooFewCommonBits {
                common,
                shards: count,
                most: 1 << common,
            });
        }
        Ok(SetShards {
            count,
            shift: highest - bits,
        })
    }

    /// The most shards `spec`'s hierarchy can be split into, or why it cannot be split at all.
    pub fn most_for(spec: &HierarchySpec) -> Result<u32, ShardError> {
        let (lowest, highest) = Self::common_index_bits(spec)?;
        Ok(1 << highest
            .saturating_sub(lowest)
            .min(MAX_SHARDS.trailing_zeros()))
    }

    /// The address bits `lowest..highest` that every level's set index covers.
    fn common_index_bits(spec: &HierarchySpec) -> Result<(u32, u32), ShardError> {
        let mut lowest = 0;
        let mut highest = u32::MAX;
        for level in spec.levels() {
            let sets = level.geometry.sets();
            if !sets.is_power_of_two() {
                return Err(ShardError::SetsNotPowerOfTwo {
                    level: level.name.clone(),
                    sets,
                });
            }
            if let Replacement::Random { .. } = level.replacement {
                return Err(ShardError::RandomReplacement {
                    level: level.name.clone(),
                });
            }
            let line_bits = level.geometry.line_bits();
            lowest = lowest.max(line_bits);
            highest = highest.min(line_bits + sets.trailing_zeros());
        }
        Ok((lowest, highest.max(lowest)))
    }

    /// How many copies.
    pub fn count(&self) -> usize {
        self.count as usize
    }

    /// The lowest address bit that picks the shard: shards alternate every `1 << shift` bytes.
    pub fn shift(&self) -> u32 {
        self.shift
    }

    /// The shard that owns `addr`'s sets.
    #[inline(always)]
    pub fn of(&self, addr: u64) -> usize {
        (addr >> self.shift) as usize & (self.count as usize - 1)
    }

    /// The shard that owns every set an access of `size` bytes at `addr` touches, or `None`
    /// when its bytes lie in more than one shard.
    #[inline(always)]
    pub fn of_access(&self, addr: u64, size: u32) -> Option<usize> {
        let last = addr.wrapping_add(u64::from(size.max(1)) - 1);
        (self.count == 1 || addr >> self.shift == last >> self.shift).then(|| self.of(addr))
    }

    /// Whether set `set` of a level of `1 << line_bits`-byte lines belongs to `shard`.
    pub fn owns_set(&self, shard: usize, line_bits: u32, set: usize) -> bool {
        (set >> (self.shift - line_bits)) & (self.count as usize - 1) == shard
    }

    /// Makes `into` hold every shard's sets as its owner in `copies` has them (`copies[s]` is
    /// shard `s`'s copy, `None` for `into`'s own shard), and the sum of every copy's totals:
    /// the one hierarchy the shards simulated, put back together.
    pub fn gather(&self, into: &mut Hierarchy, copies: &[Option<&Hierarchy>]) {
        for (shard, copy) in copies.iter().enumerate() {
            if let Some(copy) = copy {
                into.copy_sets_from(copy, |line_bits, set| self.owns_set(shard, line_bits, set));
                into.add_stats(copy);
            }
        }
    }
}

/// What a trace asks of the caches: a data access of `kind`, or an instruction fetch (`kind` is
/// `None`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Op {
    pub addr: u64,
    pub size: u32,
    pub kind: Option<AccessKind>,
}

impl Op {
    /// Simulates the operation in `hierarchy`.
    #[inline]
    pub fn simulate(self, hierarchy: &mut Hierarchy) {
        match self.kind {
            None => {
                hierarchy.fetch(self.addr, self.size);
            }
            Some(kind) => {
                hierarchy.access(self.addr, self.size, kind);
            }
        }
    }

    /// Whether it is an instruction fetch, and the kind its levels count it as.
    fn path(self) -> (bool, AccessKind) {
        (self.kind.is_none(), self.kind.unwrap_or(AccessKind::Read))
    }
}

/// One operation whose bytes lie in more than one shard, simulated across the copies that own
/// its lines (`copies[s]` is shard `s`'s) and counted once per level, in the copy of its first
/// byte.
///
/// Under Cachegrind's conventions a miss in any line sends the whole access on to the next
/// level, so the lines are walked level by level together. Otherwise each line goes down on its
/// own, so the access is simulated as one piece per shard, in address order (each piece a
/// whole access in its owner's copy, which walks its lines as one hierarchy would, the pieces'
/// sets disjoint), and what every piece but the first to reach a level counted there again is
/// taken back.
pub fn simulate_across(shards: &SetShards, copies: &mut [&mut Hierarchy], op: Op) {
    let op = Op {
        size: op.size.max(1),
        ..op
    };
    if copies[0].follows_cachegrind() {
        walk_lines_together(shards, copies, op);
        return;
    }
    let (fetch, kind) = op.path();
    let (addr, end) = (op.addr, op.addr + u64::from(op.size));
    if end - addr > 1 << shards.shift {
        // Wider than a slice: it may come back to a slice it left, whose copy would then
        // walk its two pieces one after the other rather than level by level together.
        gather_then_share_out(shards, copies, op);
        return;
    }
    let mut reached = [false; super::MAX_LEVELS];
    let mut missed = [false; super::MAX_LEVELS];
    let mut start = addr;
    while start < end {
        let border = ((start >> shards.shift) + 1) << shards.shift;
        let piece_end = border.min(end);
        let shard = shards.of(start);
        let copy = &mut *copies[shard];
        let size = (piece_end - start) as u32;
        let outcome = if fetch {
            copy.fetch(start, size)
        } else {
            copy.access(start, size, kind)
        };
        for (depth, result) in outcome.levels.iter().enumerate() {
            if *result == super::LevelResult::NotReached {
                break;
            }
            let miss = *result == super::LevelResult::Miss;
            // Counted already by an earlier piece: the access once, a miss once.
            if reached[depth] {
                copy.uncount(fetch, depth, kind, miss && missed[depth]);
            }
            reached[depth] = true;
            missed[depth] |= miss;
        }
        start = piece_end;
    }
}

/// [`simulate_across`] of an access wider than a slice: every copy's sets are gathered into the
/// first copy, which simulates the access as one hierarchy, and then handed back to their
/// owners. Costs a copy of the whole hierarchy twice; no trace of loads and stores seen so far
/// has an access that wide (slices are at least a few KiB for real caches).
#[cold]
fn gather_then_share_out(shards: &SetShards, copies: &mut [&mut Hierarchy], op: Op) {
    let Some((first, rest)) = copies.split_first_mut() else {
        return;
    };
    for (index, copy) in rest.iter().enumerate() {
        first.copy_sets_from(copy, |bits, set| shards.owns_set(index + 1, bits, set));
    }
    op.simulate(first);
    for (index, copy) in rest.iter_mut().enumerate() {
        copy.copy_sets_from(first, |bits, set| shards.owns_set(index + 1, bits, set));
    }
}

/// [`simulate_across`] under Cachegrind's conventions: I1 or D1, then LL, each line probed in
/// its owner's copy, the whole access going on to LL when any line missed.
fn walk_lines_together(shards: &SetShards, copies: &mut [&mut Hierarchy], op: Op) {
    let (fetch, kind) = op.path();
    let (addr, last) = (op.addr, op.addr + u64::from(op.size) - 1);
    let depths = copies[0].depth();
    for depth in 0..depths {
        let bits = copies[0].line_bits_of(fetch, depth);
        // A write-back first level absorbs the write; below it the lines are read-allocated.
        let dirty = depth == 0 && kind == AccessKind::Write;
        let mut missed = false;
        for block in addr >> bits..=last >> bits {
            let copy = &mut *copies[shards.of(block << bits)];
            missed |= copy.probe_line_cachegrind(fetch, depth, block, dirty);
        }
        copies[shards.of(addr)].count_access(fetch, depth, kind, missed);
        if !missed {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(s: &str) -> HierarchySpec {
        s.parse().unwrap()
    }

    #[test]
    fn the_shard_bits_are_the_top_of_the_bits_every_set_index_uses() {
        // D1: 64 sets of 64-byte lines, bits 6..12; LL: 8192 sets, bits 6..19.
        let s = SetShards::new(&spec("D1=32K,8,64;LL=8M,16,64"), 2).unwrap();
        assert_eq!((s.count(), s.shift()), (2, 11));
        assert_eq!((s.of(0x7ff), s.of(0x800), s.of(0x1000)), (0, 1, 0));
        // The papers' L1 of 32-byte lines: bits 5..14 and 6..17 share 6..14.
        let s = SetShards::new(&spec("D1=32K,2,32;LL=1M,8,64"), 4).unwrap();
        assert_eq!(s.shift(), 12);
        assert_eq!(SetShards::most_for(&spec("D1=32K,2,32;LL=1M,8,64")), Ok(64));
        // A straddle of the border belongs to no one shard.
        assert_eq!(s.of_access(0xffc, 8), None);
        assert_eq!(s.of_access(0xff8, 8), Some(0));
    }

    #[test]
    fn every_set_of_every_level_has_exactly_the_owner_of_its_addresses() {
        let h = spec("I1=32K,8,64;D1=32K,2,32;L2=256K,8,64;LL=8M,16,128");
        let s = SetShards::new(&h, 4).unwrap();
        for level in h.levels() {
            let bits = level.geometry.line_bits();
            for set in 0..level.geometry.sets() as usize {
                let owner = s.of((set as u64) << bits);
                let owners = (0..4)
                    .filter(|&k| s.owns_set(k, bits, set))
                    .collect::<Vec<_>>();
                assert_eq!(owners, [owner], "{} set {set}", level.name);
            }
        }
    }

    #[test]
    fn hierarchies_that_cannot_be_sharded_say_why() {
        let cases = [
            ("D1=24K,8,64;LL=8M,16,64", "48 sets, not a power of two"),
            ("D1=32K,8,64,random:3;LL=8M,16,64", "random replacement"),
            ("D1=4K,64,64;LL=8M,16,64", "0 address bits in common"),
        ];
        for (s, why) in cases {
            let err = SetShards::new(&spec(s), 2).unwrap_err().to_string();
            assert!(err.contains(why), "{s}: {err}");
        }
        assert_eq!(
            SetShards::new(&spec("D1=32K,8,64"), 3),
            Err(ShardError::BadCount(3))
        );
        // One shard is every hierarchy's, even one of a single set or with random replacement.
        for s in ["D1=4K,64,64;LL=8M,16,64", "D1=24K,8,64,random:3"] {
            let one = SetShards::new(&spec(s), 1).unwrap();
            assert_eq!(
                (one.of_access(0x7ff, 2), one.of_access(u64::MAX - 8, 8)),
                (Some(0), Some(0))
            );
        }
    }
}
