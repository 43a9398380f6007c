//! One set-associative cache level: geometry, tag store and replacement, no knowledge of its neighbours.
//!
//! Tags are whole block numbers (address >> line bits), as Cachegrind stores them: a level
//! needs no tag-width decision, and a set count that is not a power of two (a 15-way L3 with
//! 114,688 sets) works, the set being `block % sets`, or a mask when the count is a power of
//! two. [`CacheLevel`] says how the stores are laid out and why lookups do not scan.

use super::{AccessKind, CacheError, Replacement};

/// Size, associativity and line size of one level, validated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Geometry {
    /// Total capacity in bytes.
    pub size: u64,
    /// Ways per set.
    pub assoc: u32,
    /// Line (block) size in bytes, a power of two.
    pub line_size: u32,
}

impl Geometry {
    /// Checks that the geometry describes a cache that can exist.
    ///
    /// Line size must be a power of two of at least 4 bytes, `size` a multiple of `assoc * line_size`.
    /// The number of sets need not be a power of two (many last-level caches have, say, 15 ways).
    pub fn new(size: u64, assoc: u32, line_size: u32) -> Result<Self, CacheError> {
        let bad = |why: &str| CacheError::Geometry {
            size,
            assoc,
            line_size,
            why: why.to_owned(),
        };
        if !line_size.is_power_of_two() || line_size < 4 {
            return Err(bad(
                "the line size must be a power of two of at least 4 bytes",
            ));
        }
        if assoc == 0 {
            return Err(bad("the associativity must be at least 1"));
        }
        if assoc > 1024 {
            return Err(bad("associativity above 1024 ways is not supported"));
        }
        let set_bytes = u64::from(assoc) * u64::from(line_size);
        if size == 0 || !size.is_multiple_of(set_bytes) {
            return Err(bad(&format!(
                "the size must be a non-zero multiple of associativity x line size ({set_bytes} bytes)"
            )));
        }
        if size / set_bytes > (1 << 32) {
            return Err(bad("more than 2^32 sets is not supported"));
        }
        Ok(Self {
            size,
            assoc,
            line_size,
        })
    }

    /// Number of sets.
    pub fn sets(&self) -> u64 {
        self.size / (u64::from(self.assoc) * u64::from(self.line_size))
    }

    /// Number of lines the level holds.
    pub fn lines(&self) -> u64 {
        self.size / u64::from(self.line_size)
    }

    /// log2 of the line size.
    pub fn line_bits(&self) -> u32 {
        self.line_size.trailing_zeros()
    }
}

/// What a probe of one line did to the level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Probe {
    /// The line was present.
    Hit,
    /// The line was absent and has been installed; `victim` is the line it displaced, if any.
    Filled { victim: Option<Victim> },
    /// The line was absent and was not installed (a write under no-write-allocate).
    Bypassed,
}

/// A line displaced from a level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Victim {
    /// Block number (address >> line bits) of the displaced line.
    pub block: u64,
    /// Whether the line held data not yet written to the next level.
    pub dirty: bool,
}

/// Marks a way that holds no line. Block numbers are at most 2^62 (lines are at least 4 bytes),
/// so no real tag equals it.
const INVALID: u64 = u64::MAX;

/// A set-associative tag store with one replacement policy.
///
/// Tags are plain block numbers, so a hit is an equality with one of the set's tags; ways never
/// move. The store has one of three representations, chosen when the level is built, and the hot
/// path runs code specialised (monomorphised) for it:
/// - true LRU with at most 8 or at most 16 ways (`PackedLru`), the shape of nearly every real
///   L1 and L2: a set's tags, signatures, recency and dirty bits sit together in one aligned
///   block; recency is an age matrix in one `u64` for 8 ways and a list of 4-bit way numbers in
///   one `u64` for 16, both updated without branches;
/// - every other shape (`General`): tree-PLRU, seeded random, and LRU over wider sets (which
///   keeps a last-use time per way).
///
/// Neither scans its tags on a lookup: each way also has an 8-bit signature (a hash of its
/// block), eight to a `u64`, and the zero-byte test on `signatures XOR wanted` names the
/// candidate ways in a few word operations; only candidates are compared in full. Before the
/// signatures, each looks at one way: the packed stores at the set's most recent way, the
/// general store at the line it touched last; a hit there changes no recency. Both make
/// exactly the decisions of Cachegrind's move-to-front list under LRU (tested against one,
/// dirty bits and invalidations included).
#[derive(Debug, Clone)]
pub struct CacheLevel {
    geometry: Geometry,
    replacement: Replacement,
    line_bits: u32,
    index: SetIndex,
    store: Store,
}

/// How a block number picks its set: a mask when the number of sets is a power of two, a
/// modulo otherwise.
#[derive(Debug, Clone, Copy)]
pub(super) struct SetIndex {
    mask: u64,
    sets: u64,
    pow2: bool,
}

impl SetIndex {
    #[inline(always)]
    pub(super) fn of(self, block: u64) -> usize {
        if self.pow2 {
            (block & self.mask) as usize
        } else {
            (block % self.sets) as usize
        }
    }
}

/// The tag store and replacement state, in the representation the policy and associativity
/// call for. Callers match on it once (per access, or once per batch of accesses) and run code
/// specialised for the variant.
#[derive(Debug, Clone)]
#[repr(u8)]
pub(super) enum Store {
    Lru8(PackedLru<8, 1>),
    Lru16(PackedLru<16, 2>),
    Other(General),
}

/// How a run of [`FastHit::hit_run`] ended, at the access after its hits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RunEnd {
    /// The batch is done.
    Done,
    /// The access is not a one-line access, or it missed and the run was not to fill; it is
    /// untouched.
    Declined,
    /// The access missed and the run filled its line (as a write-back, write-allocate L1 does),
    /// displacing `Option<Victim>`; the levels below have not seen it yet.
    Filled(Option<Victim>),
}

/// The hit loop of a batch, monomorphised per store representation.
pub(super) trait FastHit {
    /// Simulates the one-line hits at the front of `batch` (sets found by `block & mask`) and
    /// calls `on_hit(addr, kind)` after each; returns how many there were, how many of them
    /// were writes, and what ended the run. A one-line access that misses is filled (dirty if
    /// a write) when `fill` is set, and left untouched otherwise.
    fn hit_run<F: FnMut(u64, AccessKind)>(
        &mut self,
        mask: u64,
        line_bits: u32,
        fill: bool,
        batch: &[(u64, u32, AccessKind)],
        on_hit: F,
    ) -> (usize, u64, RunEnd);
}

/// The packed stores, taken out of a [`Store`] by their shape: code generic over the ways
/// (the two-level miss step) gets its store with one test of the variant.
pub(super) trait PackedIn {
    fn packed_in(store: &mut Store) -> Option<&mut Self>;
}

impl PackedIn for PackedLru<8, 1> {
    #[inline(always)]
    fn packed_in(store: &mut Store) -> Option<&mut Self> {
        match store {
            Store::Lru8(s) => Some(s),
            _ => None,
        }
    }
}

impl PackedIn for PackedLru<16, 2> {
    #[inline(always)]
    fn packed_in(store: &mut Store) -> Option<&mut Self> {
        match store {
            Store::Lru16(s) => Some(s),
            _ => None,
        }
    }
}

/// Whether an access of `size` bytes at `addr` lies in one line of `1 << line_bits` bytes (a
/// zero size counts as one byte); never overflows, whatever the address.
#[inline(always)]
pub(super) fn in_one_line(addr: u64, size: u32, line_bits: u32) -> bool {
    let line = 1u64 << line_bits;
    (addr & (line - 1)) + u64::from(size) <= line
}

impl<const W: usize, const S: usize> FastHit for PackedLru<W, S> {
    #[inline(always)]
    fn hit_run<F: FnMut(u64, AccessKind)>(
        &mut self,
        mask: u64,
        line_bits: u32,
        fill: bool,
        batch: &[(u64, u32, AccessKind)],
        mut on_hit: F,
    ) -> (usize, u64, RunEnd) {
        // Locals, not fields: the loop's stores to sets cannot then force reloads.
        let shape = self.shape;
        let sets = self.sets.as_mut_slice();
        let (mut hits, mut writes) = (0, 0);
        let mut end = RunEnd::Done;
        for &(addr, size, kind) in batch {
            let block = addr >> line_bits;
            let write = kind == AccessKind::Write;
            let state = match sets.get_mut((block & mask) as usize) {
                Some(state) if in_one_line(addr, size, line_bits) => state,
                _ => {
                    end = RunEnd::Declined;
                    break;
                }
            };
            if !shape.hit(state, block, write) {
                if fill {
                    let (victim, _) = shape.fill(state, block, write);
                    end = RunEnd::Filled(victim);
                } else {
                    end = RunEnd::Declined;
                }
                break;
            }
            writes += u64::from(write);
            on_hit(addr, kind);
            hits += 1;
        }
        (hits, writes, end)
    }
}

impl FastHit for General {
    #[inline(always)]
    fn hit_run<F: FnMut(u64, AccessKind)>(
        &mut self,
        mask: u64,
        line_bits: u32,
        fill: bool,
        batch: &[(u64, u32, AccessKind)],
        mut on_hit: F,
    ) -> (usize, u64, RunEnd) {
        let (mut hits, mut writes) = (0, 0);
        for &(addr, size, kind) in batch {
            let block = addr >> line_bits;
            let set = (block & mask) as usize;
            let write = kind == AccessKind::Write;
            if !in_one_line(addr, size, line_bits) {
                return (hits, writes, RunEnd::Declined);
            }
            if !self.probe_hit(set, block, write) {
                if !fill {
                    return (hits, writes, RunEnd::Declined);
                }
                return (hits, writes, RunEnd::Filled(self.fill(set, block, write)));
            }
            writes += u64::from(write);
            on_hit(addr, kind);
            hits += 1;
        }
        (hits, writes, RunEnd::Done)
    }
}

/// The most memory one simulated hierarchy's levels may take (their sets' state, as
/// [`CacheLevel::state_bytes`] counts it). Each thread simulates a hierarchy of its own, so a
/// spec past it is refused before any program starts rather than left to exhaust the machine.
pub const MAX_HIERARCHY_STATE_BYTES: u64 = 4 << 30;

/// Why a hierarchy whose sets take `bytes` is refused; `which` says where most of them go.
pub(super) fn too_large(bytes: u64, which: &str) -> String {
    let gib = |b: u64| b as f64 / f64::from(1u32 << 30);
    format!(
        "simulating it takes {:.2} GiB of memory per thread ({which}), more than the {:.0} GiB \
         a hierarchy may take; give a smaller size, or up to 16 ways (a set of up to 8 ways \
         takes 128 bytes and one of up to 16 192, whatever its lines; past 16 ways every line \
         takes 17 bytes)",
        gib(bytes),
        gib(MAX_HIERARCHY_STATE_BYTES)
    )
}

impl CacheLevel {
    /// The bytes an empty level of this shape allocates for its sets: a packed set of 128 bytes
    /// (at most 8 ways, LRU) or 192 (at most 16), else tags, dirty marks, signatures and the
    /// replacement's state per line.
    pub fn state_bytes(geometry: Geometry, replacement: Replacement) -> u64 {
        let sets = geometry.sets();
        let lines = geometry.lines();
        let assoc = u64::from(geometry.assoc);
        match replacement {
            Replacement::Lru if assoc <= 8 => {
                sets.saturating_mul(std::mem::size_of::<PackedSet<8, 1>>() as u64)
            }
            Replacement::Lru if assoc <= 16 => {
                sets.saturating_mul(std::mem::size_of::<PackedSet<16, 2>>() as u64)
            }
            _ => {
                // A tag and a dirty mark, and LRU's time of last use.
                let last_use = if replacement == Replacement::Lru {
                    8
                } else {
                    0
                };
                let per_line = 8 + 1 + last_use;
                let per_set = 8 * assoc.div_ceil(8) + 8;
                lines
                    .saturating_mul(per_line)
                    .saturating_add(sets.saturating_mul(per_set))
            }
        }
    }

    /// An empty level.
    pub fn new(geometry: Geometry, replacement: Replacement) -> Result<Self, CacheError> {
        let sets = geometry.sets();
        let bytes = Self::state_bytes(geometry, replacement);
        if bytes > MAX_HIERARCHY_STATE_BYTES {
            return Err(CacheError::Geometry {
                size: geometry.size,
                assoc: geometry.assoc,
                line_size: geometry.line_size,
                why: too_large(bytes, &format!("{} sets", sets)),
            });
        }
        if let Replacement::TreePlru = replacement
            && (!geometry.assoc.is_power_of_two() || geometry.assoc > 64)
        {
            return Err(CacheError::Geometry {
                size: geometry.size,
                assoc: geometry.assoc,
                line_size: geometry.line_size,
                why: "tree-PLRU needs a power-of-two associativity of at most 64".to_owned(),
            });
        }
        let assoc = geometry.assoc as usize;
        let store = match replacement {
            Replacement::Lru if assoc <= 8 => Store::Lru8(PackedLru::new(sets as usize, assoc)),
            Replacement::Lru if assoc <= 16 => Store::Lru16(PackedLru::new(sets as usize, assoc)),
            _ => Store::Other(General::new(geometry, replacement)),
        };
        Ok(Self {
            geometry,
            replacement,
            line_bits: geometry.line_bits(),
            index: SetIndex {
                mask: sets.wrapping_sub(1),
                sets,
                pow2: sets.is_power_of_two(),
            },
            store,
        })
    }

    /// The level's geometry.
    pub fn geometry(&self) -> Geometry {
        self.geometry
    }

    /// The level's replacement policy.
    pub fn replacement(&self) -> Replacement {
        self.replacement
    }

    /// log2 of the line size.
    #[inline]
    pub fn line_bits(&self) -> u32 {
        self.line_bits
    }

    /// `sets - 1` when the number of sets is a power of two, so a set is `block & mask`.
    #[inline(always)]
    pub(super) fn set_mask(&self) -> Option<u64> {
        self.index.pow2.then_some(self.index.mask)
    }

    /// The store, to see which representation it has.
    #[inline(always)]
    pub(super) fn store(&self) -> &Store {
        &self.store
    }

    /// The store, for callers that dispatch on its representation once for many accesses.
    #[inline(always)]
    pub(super) fn store_mut(&mut self) -> &mut Store {
        &mut self.store
    }

    /// Whether `block` is present, without touching replacement state.
    pub fn contains(&self, block: u64) -> bool {
        let set = self.index.of(block);
        match &self.store {
            Store::Lru8(s) => s.find(set, block).is_some(),
            Store::Lru16(s) => s.find(set, block).is_some(),
            Store::Other(s) => s.find(set, block).is_some(),
        }
    }

    /// Looks `block` up and updates replacement state if present; a miss changes nothing.
    ///
    /// The hierarchy's fast path: it lets a hit finish without the fill machinery.
    #[inline(always)]
    pub fn probe_hit(&mut self, block: u64, dirty: bool) -> bool {
        let set = self.index.of(block);
        match &mut self.store {
            Store::Lru8(s) => s.probe_hit(set, block, dirty),
            Store::Lru16(s) => s.probe_hit(set, block, dirty),
            Store::Other(s) => s.probe_hit(set, block, dirty),
        }
    }

    /// [`Self::probe_hit`] for a caller that holds the set mask (sets a power of two): no
    /// test of how sets are indexed.
    #[inline(always)]
    pub(super) fn probe_hit_masked(&mut self, block: u64, mask: u64, dirty: bool) -> bool {
        let set = (block & mask) as usize;
        // The 8-way store first, one test of the tag; the others after.
        if let Store::Lru8(s) = &mut self.store {
            return s.probe_hit(set, block, dirty);
        }
        self.probe_hit_not_lru8(set, block, dirty)
    }

    /// Whether `block` is the line its set used last (sets a power of two, `block & mask`),
    /// marked dirty when `dirty`; nothing changes otherwise, even when `block` is elsewhere in
    /// the set. Only one way is compared (with the general store, the line the level touched
    /// last).
    #[inline(always)]
    pub(super) fn recent_hit_masked(&mut self, block: u64, mask: u64, dirty: bool) -> bool {
        let set = (block & mask) as usize;
        match &mut self.store {
            Store::Lru8(s) => s.recent_hit(set, block, dirty),
            Store::Lru16(s) => s.recent_hit(set, block, dirty),
            Store::Other(s) => s.recent_hit(block, dirty),
        }
    }

    #[inline(always)]
    fn probe_hit_not_lru8(&mut self, set: usize, block: u64, dirty: bool) -> bool {
        match &mut self.store {
            Store::Lru16(s) => s.probe_hit(set, block, dirty),
            Store::Other(s) => s.probe_hit(set, block, dirty),
            Store::Lru8(s) => s.probe_hit(set, block, dirty),
        }
    }

    /// Looks `block` up and, on a miss, installs it when `allocate` is set.
    ///
    /// `dirty` marks the line modified (a write under write-back) whether it hit or was filled.
    #[inline]
    pub fn probe(&mut self, block: u64, allocate: bool, dirty: bool) -> Probe {
        if self.probe_hit(block, dirty) {
            return Probe::Hit;
        }
        if !allocate {
            return Probe::Bypassed;
        }
        Probe::Filled {
            victim: self.fill(block, dirty),
        }
    }

    /// Installs `block`, which the caller has just found absent, and returns the line it displaced.
    ///
    /// Lets a caller that already looked the block up (the hierarchy's fast path) skip a second scan.
    #[inline(always)]
    pub fn fill(&mut self, block: u64, dirty: bool) -> Option<Victim> {
        debug_assert!(!self.contains(block), "fill of a block already present");
        let set = self.index.of(block);
        match &mut self.store {
            Store::Lru8(s) => s.fill(set, block, dirty),
            Store::Lru16(s) => s.fill(set, block, dirty),
            Store::Other(s) => s.fill(set, block, dirty),
        }
    }

    /// Marks `block` dirty if present, without changing replacement state; returns whether it was.
    pub fn mark_dirty(&mut self, block: u64) -> bool {
        let set = self.index.of(block);
        match &mut self.store {
            Store::Lru8(s) => s.mark_dirty(set, block),
            Store::Lru16(s) => s.mark_dirty(set, block),
            Store::Other(s) => s.mark_dirty(set, block),
        }
    }

    /// Marks `block` clean if present, without changing replacement state (another core read
    /// the line it held modified, and its data went down); returns whether it was dirty, or
    /// `None` when it is absent.
    pub fn clean(&mut self, block: u64) -> Option<bool> {
        let set = self.index.of(block);
        match &mut self.store {
            Store::Lru8(s) => s.clean(set, block),
            Store::Lru16(s) => s.clean(set, block),
            Store::Other(s) => s.clean(set, block),
        }
    }

    /// Removes `block` if present (a back-invalidation); returns whether it was dirty.
    pub fn invalidate(&mut self, block: u64) -> Option<bool> {
        let set = self.index.of(block);
        match &mut self.store {
            Store::Lru8(s) => s.invalidate(set, block),
            Store::Lru16(s) => s.invalidate(set, block),
            Store::Other(s) => s.invalidate(set, block),
        }
    }

    /// Empties the level.
    pub fn clear(&mut self) {
        match &mut self.store {
            Store::Lru8(s) => s.clear(),
            Store::Lru16(s) => s.clear(),
            Store::Other(s) => s.clear(),
        }
    }

    /// Copies from `from` (a level of the same geometry and replacement) the lines and
    /// replacement state of every set whose index `wanted` accepts; the other sets stay as they
    /// are. What set sharding (`set_shards.rs`) hands between the copies of one hierarchy.
    ///
    /// # Panics
    ///
    /// If `from` is a level of another shape.
    pub fn copy_sets_from(&mut self, from: &CacheLevel, wanted: impl Fn(usize) -> bool) {
        assert!(
            self.geometry == from.geometry && self.replacement == from.replacement,
            "sets are copied only between levels of one shape"
        );
        match (&mut self.store, &from.store) {
            (Store::Lru8(to), Store::Lru8(from)) => to.copy_sets_from(from, wanted),
            (Store::Lru16(to), Store::Lru16(from)) => to.copy_sets_from(from, wanted),
            (Store::Other(to), Store::Other(from)) => to.copy_sets_from(from, wanted),
            _ => unreachable!("one geometry and replacement make one store"),
        }
    }

    /// Block numbers of the lines present, in no particular order.
    pub fn resident_blocks(&self) -> impl Iterator<Item = u64> + '_ {
        let blocks: Box<dyn Iterator<Item = u64> + '_> = match &self.store {
            Store::Lru8(s) => Box::new(s.resident_blocks()),
            Store::Lru16(s) => Box::new(s.resident_blocks()),
            Store::Other(s) => Box::new(s.resident_blocks()),
        };
        blocks
    }
}

/// The "has a zero byte" test: the high bit of every zero byte of `x` is set, and possibly that
/// of bytes above a zero byte (a borrow), never below the lowest one, so the lowest flagged byte
/// is always a real zero.
#[inline(always)]
fn zero_bytes(x: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    x.wrapping_sub(ONES) & !x & HIGHS
}

/// [`zero_bytes`] of `x` restricted to the bytes whose high bit `highs` has (a subset of the
/// high bits): the restriction is the test's own mask, one AND fewer.
#[inline(always)]
fn zero_bytes_in(x: u64, highs: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    x.wrapping_sub(ONES) & !x & highs
}

/// `block`'s signature in every byte of a word.
#[inline(always)]
fn broadcast_signature(block: u64) -> u64 {
    u64::from(signature(block)) * 0x0101_0101_0101_0101
}

/// A signature in every byte of a word.
#[inline(always)]
fn broadcast(signature: u8) -> u64 {
    u64::from(signature) * 0x0101_0101_0101_0101
}

/// One set of a [`PackedLru`]: its tags, then the state beside them (172 bytes with 16 ways, 92
/// with 8, padded to whole host cache lines: 192 and 128).
#[derive(Debug, Clone, Copy)]
#[repr(C, align(64))]
pub(super) struct PackedSet<const W: usize, const S: usize> {
    tags: [u64; W],
    /// Way `w`'s signature. Bytes, so a fill writes one; read eight at a time as a
    /// little-endian word (byte `w % 8` of word `w / 8`).
    signatures: [u8; W],
    /// The recency of the ways: with 8 ways an age matrix (see [`PackedLru`]), with 16 the
    /// way numbers in recency order, most recent in the low nibble (nibbles past the last way
    /// hold 0xF, which matches no way of a set narrower than 16).
    order: u64,
    /// Way `w` holds data not yet written to the next level. Bytes, not bits: a hit marks
    /// its way with one OR into memory, without a shift by a variable amount.
    dirty: [bool; W],
    /// With 8 ways, the way used last (the age matrix does not name it cheaply; with 16 it is
    /// the order's low nibble). A hit on it changes no recency, so a lookup tries it first.
    mru: u32,
}

/// True LRU over sets of at most `W` ways (8 or 16, with `S = W / 8` signature words), the
/// common case made fast.
///
/// A hit is found with one signature word per 8 ways: the first way whose signature matches is
/// compared in full with a fixed sequence of word operations and no loop, and only a false
/// signature match (about one lookup in 256 per valid way) falls back to a scan.
///
/// Recency, for 8 ways, is an age matrix in one word: byte `w` has bit `v` set when way `w` was
/// used after way `v`. A use of `w` sets row `w` and clears column `w` (two shifts, an OR and
/// an AND-NOT, fewer operations than moving a nibble to the front of a list), and the least
/// recently used way is the one whose row is zero, found by the same zero-byte test as the
/// signatures. Never-used ways have zero rows too and are taken first, lowest first. For 16
/// ways the matrix would need four words, so the order is kept as a list of 4-bit way numbers.
#[derive(Debug, Clone)]
pub(super) struct PackedLru<const W: usize, const S: usize> {
    shape: PackedShape<W, S>,
    sets: Vec<PackedSet<W, S>>,
}

/// Byte `w` of an 8-way age matrix: way `w`'s row.
const AGE_ROW: [u64; 8] = {
    let mut rows = [0; 8];
    let mut w = 0;
    while w < 8 {
        rows[w] = 0xFF << (8 * w);
        w += 1;
    }
    rows
};

/// Everything but bit `w` of every byte of an 8-way age matrix: all but way `w`'s column.
const AGE_NOT_COLUMN: [u64; 8] = {
    let mut columns = [0; 8];
    let mut w = 0;
    while w < 8 {
        columns[w] = !(0x0101_0101_0101_0101 << w);
        w += 1;
    }
    columns
};

/// The per-level constants of a [`PackedLru`], copied into registers by the hot loops (a
/// load through `&self` would be repeated after every store to a set).
#[derive(Debug, Clone, Copy)]
pub(super) struct PackedShape<const W: usize, const S: usize> {
    assoc: usize,
    /// The high bit of each signature byte that belongs to an existing way, so ways past
    /// `assoc` never become candidates.
    valid: [u64; S],
    /// Bits of the ways that exist, in every byte: a use of way `w` sets byte `w` of it (its
    /// row of the age matrix).
    rows: u64,
    /// With 16 ways, where the least recent way's nibble sits (`4 * (assoc - 1)`), the
    /// nibbles before it and the spare ones after it: a fill's rotation of the order with no
    /// shift amount computed per fill.
    last: u32,
    before_last: u64,
    spare: u64,
    /// The multiplier of a block's signature ([`Self::signature`]).
    signature_mul: u64,
}

impl<const W: usize, const S: usize> PackedShape<W, S> {
    /// `block`'s signature in this store: the top byte of the block times a multiplier that is
    /// [`signature`]'s shifted right by the set bits (for a power-of-two number of sets), so
    /// the product is the *tag*'s (the block above its set bits, which are the same for every
    /// line of a set) times nearly the golden ratio, plus a constant of the set. Tags then
    /// spread as Fibonacci hashing spreads them: a set's lines of arrays streamed side by side
    /// (consecutive tags, or tags a power of two apart) rarely share a signature. With the
    /// plain multiplier the tags were multiplied by its low bits, and on a triad's and a sparse
    /// gather's 16-way L2 one lookup in five or so met a false candidate and scanned the set.
    #[inline(always)]
    fn signature(self, block: u64) -> u8 {
        (block.wrapping_mul(self.signature_mul) >> 56) as u8
    }

    /// Records a use of `way`.
    #[inline(always)]
    fn touch(self, state: &mut PackedSet<W, S>, way: usize) {
        if W == 8 {
            // Masks from tables rather than shifts by `8 * way` and `way`: each variable shift
            // needs the count register, and the loop around this needs it for the line size.
            let way = way & 7;
            state.order = (state.order | (AGE_ROW[way] & self.rows)) & AGE_NOT_COLUMN[way];
            state.mru = way as u32;
        } else {
            // Re-touching the most recent way leaves the order as it is; no branch needed.
            state.order = move_to_front(state.order, way as u64);
        }
    }

    /// Marks `way` of `state` dirty, without changing recency.
    #[inline(always)]
    pub(super) fn set_dirty(self, state: &mut PackedSet<W, S>, way: usize) {
        state.dirty[way] = true;
    }

    /// The way used last in `state` (any way of an empty set, whose tag is then `INVALID`).
    #[inline(always)]
    fn mru(self, state: &PackedSet<W, S>) -> usize {
        if W == 8 {
            state.mru as usize & (W - 1)
        } else {
            (state.order & 0xF) as usize
        }
    }

    /// The least recently used way, an empty one first.
    #[inline(always)]
    fn victim(self, order: u64) -> usize {
        if W == 8 {
            // Only a never-used way, or the least recent one, has a zero row; the lowest
            // flagged byte is a real zero.
            (zero_bytes_in(order, self.valid[0]).trailing_zeros() / 8) as usize & 7
        } else {
            // Empty ways are never touched, so they sit at the end of the order.
            ((order >> self.last) & 0xF) as usize & (W - 1)
        }
    }

    /// Records a fill of the victim `way`, which becomes the most recent.
    #[inline(always)]
    fn filled(self, state: &mut PackedSet<W, S>, way: usize) {
        if W == 8 {
            self.touch(state, way)
        } else {
            // The last way becomes the first: a rotation of the valid nibbles.
            let order = state.order;
            state.order = (order & self.spare) | ((order & self.before_last) << 4) | way as u64;
        }
    }

    /// Makes `way`, just emptied, the next victim.
    #[inline]
    fn make_oldest(self, order: u64, way: usize) -> u64 {
        if W == 8 {
            // Clear its row, and mark every other existing way as used after it.
            const COLUMN: u64 = 0x0101_0101_0101_0101;
            let existing_rows = (self.valid[0] >> 7) * 0xFF;
            let row = 0xFFu64 << (8 * way);
            (order & !row) | (COLUMN << way & existing_rows & !row)
        } else {
            move_to_back(order, way as u64, self.assoc)
        }
    }

    /// The way of `state` holding `block`.
    #[inline(always)]
    pub(super) fn find_in(self, state: &PackedSet<W, S>, block: u64) -> Option<usize> {
        let wanted = broadcast(self.signature(block));
        let low = zero_bytes_in(state.signature_word(0) ^ wanted, self.valid[0]);
        // The first candidate, or the last way when there is none (the sentinel bit), so the
        // full comparison below needs no branch on whether there was a candidate.
        let (candidates, first) = if S == 1 {
            (low, (low | 1 << 63).trailing_zeros() / 8)
        } else {
            let high = zero_bytes_in(state.signature_word(S - 1) ^ wanted, self.valid[S - 1]);
            let both = u128::from(high) << 64 | u128::from(low);
            (low | high, (both | 1 << 127).trailing_zeros() / 8)
        };
        let way = first as usize & (W - 1);
        if state.tags[way] == block {
            return Some(way);
        }
        if candidates == 0 {
            return None;
        }
        find_past_collision(state, self.assoc, block)
    }

    /// Installs `block`, absent from `state`, in the least recently used way; returns the line
    /// displaced and the way.
    #[inline(always)]
    pub(super) fn fill(
        self,
        state: &mut PackedSet<W, S>,
        block: u64,
        dirty: bool,
    ) -> (Option<Victim>, usize) {
        self.fill_in::<0>(state, block, dirty)
    }

    /// [`Self::fill`] in a set of `WAYS` ways, or of any number when `WAYS` is 0 (see
    /// [`Self::hit_in`]).
    #[inline(always)]
    pub(super) fn fill_in<const WAYS: usize>(
        self,
        state: &mut PackedSet<W, S>,
        block: u64,
        dirty: bool,
    ) -> (Option<Victim>, usize) {
        let way = if W == 8 && WAYS == 2 {
            // Of two rows one is zero at least (the least recent way's, or an empty way's),
            // and way 0 goes first when both are, as the zero-byte search takes it.
            let way = usize::from(state.order & 0xFF != 0);
            debug_assert_eq!(way, self.victim(state.order));
            self.touch_in::<WAYS>(state, way);
            way
        } else {
            let way = self.victim(state.order);
            self.filled(state, way);
            way
        };
        state.signatures[way] = self.signature(block);
        let was_dirty = std::mem::replace(&mut state.dirty[way], dirty);
        let old = std::mem::replace(&mut state.tags[way], block);
        let victim = (old != INVALID).then_some(Victim {
            block: old,
            dirty: was_dirty,
        });
        (victim, way)
    }

    /// Whether `block` is the line `state` used last, which it then marks dirty when `dirty`
    /// (its recency stays); nothing changes otherwise.
    #[inline(always)]
    fn recent_hit(self, state: &mut PackedSet<W, S>, block: u64, dirty: bool) -> bool {
        let mru = self.mru(state);
        if state.tags[mru] == block {
            state.dirty[mru] |= dirty;
            return true;
        }
        false
    }

    /// [`Self::hit`] in a set of `WAYS` ways, or of any number when `WAYS` is 0: with two (the
    /// EP-Cache and METRIC papers' L1), the way after the most recent is the only other, so a
    /// lookup compares both tags and no signatures. The representation is the same, so every
    /// other operation on the set sees what [`Self::hit`] would have left.
    #[inline(always)]
    pub(super) fn hit_in<const WAYS: usize>(
        self,
        state: &mut PackedSet<W, S>,
        block: u64,
        dirty: bool,
    ) -> bool {
        if W == 8 && WAYS == 2 {
            debug_assert!(self.assoc == 2 && state.mru < 2);
            let mru = state.mru as usize & 1;
            if state.tags[mru] == block {
                state.dirty[mru] |= dirty;
                return true;
            }
            let other = mru ^ 1;
            if state.tags[other] != block {
                return false;
            }
            self.touch_in::<WAYS>(state, other);
            state.dirty[other] |= dirty;
            return true;
        }
        self.hit(state, block, dirty)
    }

    /// [`Self::touch`] in a set of `WAYS` ways, or of any number when `WAYS` is 0. With two
    /// ways the age matrix after a use of `way` is one of two words whatever it was: way 0's
    /// row holding way 1's bit (`0x0002`) or way 1's row holding way 0's (`0x0100`), as a use
    /// sets its row to the ways that exist less itself and clears its column from the other.
    #[inline(always)]
    fn touch_in<const WAYS: usize>(self, state: &mut PackedSet<W, S>, way: usize) {
        if W == 8 && WAYS == 2 {
            let way = way & 1;
            let order = 2 + 0xFE * way as u64;
            debug_assert_eq!(order, {
                let mut touched = *state;
                self.touch(&mut touched, way);
                touched.order
            });
            state.order = order;
            state.mru = way as u32;
            return;
        }
        self.touch(state, way)
    }

    /// [`Self::find_in`] in a set of `WAYS` ways, or of any number when `WAYS` is 0 (see
    /// [`Self::hit_in`]).
    #[inline(always)]
    pub(super) fn find_in_ways<const WAYS: usize>(
        self,
        state: &PackedSet<W, S>,
        block: u64,
    ) -> Option<usize> {
        if W == 8 && WAYS == 2 {
            debug_assert!(self.assoc == 2);
            let second = usize::from(state.tags[1] == block);
            return (state.tags[0] == block || second == 1).then_some(second);
        }
        self.find_in(state, block)
    }

    /// Looks `block` up in `state` and, if present, records the use (and marks it dirty when
    /// `dirty`); a miss changes nothing.
    #[inline(always)]
    pub(super) fn hit(self, state: &mut PackedSet<W, S>, block: u64, dirty: bool) -> bool {
        // The line used last in its set (a walk along a line, a read then a write of one
        // element) changes no recency: only its dirty bit.
        let mru = self.mru(state);
        if state.tags[mru] == block {
            state.dirty[mru] |= dirty;
            return true;
        }
        let Some(way) = self.find_in(state, block) else {
            return false;
        };
        self.touch(state, way);
        // Masked: a way found past a signature collision is not known to the compiler to be
        // in range.
        state.dirty[way & (W - 1)] |= dirty;
        true
    }
}

impl<const W: usize, const S: usize> PackedSet<W, S> {
    /// Signatures `8 * word .. 8 * word + 8` as one word (`word < S`).
    #[inline(always)]
    fn signature_word(&self, word: usize) -> u64 {
        let bytes = &self.signatures[8 * word..8 * word + 8];
        u64::from_le_bytes(bytes.try_into().expect("eight signatures to a word"))
    }
}

/// A signature matched but the tag did not: compare every way.
#[cold]
#[inline(never)]
fn find_past_collision<const W: usize, const S: usize>(
    state: &PackedSet<W, S>,
    assoc: usize,
    block: u64,
) -> Option<usize> {
    state.tags[..assoc].iter().position(|&t| t == block)
}

impl<const W: usize, const S: usize> PackedLru<W, S> {
    fn new(sets: usize, assoc: usize) -> Self {
        const {
            assert!(
                (W == 8 && S == 1) || (W == 16 && S == 2),
                "packed LRU stores have 8 or 16 ways, 8 signatures to a word"
            )
        };
        assert!((1..=W).contains(&assoc), "{assoc} ways in a {W}-way store");
        let valid = std::array::from_fn(|word| {
            (0..8)
                .filter(|byte| word * 8 + byte < assoc)
                .fold(0u64, |mask, byte| mask | 0x80 << (8 * byte))
        });
        let last = 4 * (assoc as u32 - 1);
        // Sets found by a modulo share no low bits: the plain multiplier.
        let set_bits = if sets.is_power_of_two() {
            sets.trailing_zeros()
        } else {
            0
        };
        Self {
            shape: PackedShape {
                assoc,
                valid,
                // Used with 8 ways only; wraps harmlessly for 16.
                rows: ((1u64 << assoc) - 1).wrapping_mul(0x0101_0101_0101_0101),
                last,
                before_last: (1u64 << last) - 1,
                spare: !((1u64 << last << 4).wrapping_sub(1)),
                signature_mul: SIGNATURE_MUL >> set_bits | 1,
            },
            sets: vec![Self::empty_set(assoc); sets],
        }
    }

    /// The replacement constants and the sets, for loops that keep both in registers (a load
    /// through `&self` would be repeated after every store to a set).
    #[inline(always)]
    pub(super) fn parts(&mut self) -> (PackedShape<W, S>, &mut [PackedSet<W, S>]) {
        (self.shape, self.sets.as_mut_slice())
    }

    /// The number of ways of each set.
    #[inline(always)]
    pub(super) fn assoc(&self) -> usize {
        self.shape.assoc
    }

    /// [`Self::parts`] with the constants by reference, for a caller that uses a few of them
    /// once and should load only those.
    #[inline(always)]
    pub(super) fn parts_ref(&mut self) -> (&PackedShape<W, S>, &mut [PackedSet<W, S>]) {
        (&self.shape, self.sets.as_mut_slice())
    }

    /// [`CacheLevel::copy_sets_from`] for this store.
    fn copy_sets_from(&mut self, from: &Self, wanted: impl Fn(usize) -> bool) {
        for (index, (to, from)) in self.sets.iter_mut().zip(&from.sets).enumerate() {
            if wanted(index) {
                *to = *from;
            }
        }
    }

    fn empty_set(assoc: usize) -> PackedSet<W, S> {
        PackedSet {
            tags: [INVALID; W],
            signatures: [0; W],
            order: if W == 8 { 0 } else { identity_order(assoc) },
            dirty: [false; W],
            mru: 0,
        }
    }

    #[inline(always)]
    fn find(&self, set: usize, block: u64) -> Option<usize> {
        self.shape.find_in(&self.sets[set], block)
    }

    #[inline(always)]
    fn probe_hit(&mut self, set: usize, block: u64, dirty: bool) -> bool {
        self.shape.hit(&mut self.sets[set], block, dirty)
    }

    #[inline(always)]
    fn recent_hit(&mut self, set: usize, block: u64, dirty: bool) -> bool {
        self.shape.recent_hit(&mut self.sets[set], block, dirty)
    }

    #[inline(always)]
    fn fill(&mut self, set: usize, block: u64, dirty: bool) -> Option<Victim> {
        self.shape.fill(&mut self.sets[set], block, dirty).0
    }

    fn mark_dirty(&mut self, set: usize, block: u64) -> bool {
        let Some(way) = self.find(set, block) else {
            return false;
        };
        self.sets[set].dirty[way] = true;
        true
    }

    fn clean(&mut self, set: usize, block: u64) -> Option<bool> {
        let way = self.find(set, block)?;
        Some(std::mem::replace(&mut self.sets[set].dirty[way], false))
    }

    fn invalidate(&mut self, set: usize, block: u64) -> Option<bool> {
        // An emptied most recent way keeps that name: its tag, INVALID, matches no block.
        let way = self.find(set, block)?;
        let order = self.shape.make_oldest(self.sets[set].order, way);
        let state = &mut self.sets[set];
        state.tags[way] = INVALID;
        let dirty = std::mem::replace(&mut state.dirty[way], false);
        state.order = order;
        Some(dirty)
    }

    fn clear(&mut self) {
        self.sets.fill(Self::empty_set(self.shape.assoc));
    }

    fn resident_blocks(&self) -> impl Iterator<Item = u64> + '_ {
        self.sets
            .iter()
            .flat_map(|set| set.tags[..self.shape.assoc].iter().copied())
            .filter(|&t| t != INVALID)
    }
}

/// Every shape [`PackedLru`] does not cover: tree-PLRU, seeded random, LRU over more than 16 ways.
///
/// Ways of a set are stored contiguously; signatures are `sig_words` words per set. The level
/// also remembers the line it touched last: touching it again changes no replacement state
/// under any of these policies (it is already the most recent), so a repeat costs one comparison.
#[derive(Debug, Clone)]
pub(super) struct General {
    replacement: Replacement,
    assoc: usize,
    tags: Vec<u64>,
    /// The block touched last and its index in `tags`; reset when that line is invalidated or
    /// the level cleared.
    last_block: u64,
    last_index: usize,
    signatures: Vec<u64>,
    sig_words: usize,
    dirty: Vec<bool>,
    /// LRU: the time of each way's last use, 0 for an empty way.
    last_use: Vec<u64>,
    clock: u64,
    /// Tree-PLRU state, one word of `assoc - 1` direction bits per set.
    plru_bits: Vec<u64>,
    rng_state: u64,
}

impl General {
    fn new(geometry: Geometry, replacement: Replacement) -> Self {
        let sets = geometry.sets() as usize;
        let assoc = geometry.assoc as usize;
        let lines = sets * assoc;
        let sig_words = assoc.div_ceil(8);
        Self {
            replacement,
            assoc,
            tags: vec![INVALID; lines],
            last_block: INVALID,
            last_index: 0,
            signatures: vec![0; sets * sig_words],
            sig_words,
            dirty: vec![false; lines],
            last_use: match replacement {
                Replacement::Lru => vec![0; lines],
                _ => Vec::new(),
            },
            clock: 0,
            plru_bits: match replacement {
                Replacement::TreePlru => vec![0; sets],
                _ => Vec::new(),
            },
            rng_state: match replacement {
                // xorshift must not start at zero.
                Replacement::Random { seed } => seed ^ 0x9E37_79B9_7F4A_7C15 | 1,
                _ => 0,
            },
        }
    }

    /// The way of `set` holding `block`.
    #[inline(always)]
    fn find(&self, set: usize, block: u64) -> Option<usize> {
        let wanted = broadcast_signature(block);
        let start = set * self.assoc;
        let words = &self.signatures[set * self.sig_words..(set + 1) * self.sig_words];
        for (word_index, &word) in words.iter().enumerate() {
            // Only the lowest flagged byte is sure to match; the full comparison rejects the
            // others.
            let mut candidates = zero_bytes(word ^ wanted);
            while candidates != 0 {
                let way = word_index * 8 + (candidates.trailing_zeros() / 8) as usize;
                if way < self.assoc && self.tags[start + way] == block {
                    return Some(way);
                }
                candidates &= candidates - 1;
            }
        }
        None
    }

    /// Writes `block`'s signature for way `way` of `set`.
    #[inline(always)]
    fn set_signature(&mut self, set: usize, way: usize, block: u64) {
        let word = &mut self.signatures[set * self.sig_words + way / 8];
        let shift = 8 * (way % 8);
        *word = (*word & !(0xFF << shift)) | (u64::from(signature(block)) << shift);
    }

    /// Records a use of `way` in `set` for the replacement policy.
    #[inline(always)]
    fn touch(&mut self, set: usize, way: usize) {
        match self.replacement {
            Replacement::Lru => {
                self.clock += 1;
                self.last_use[set * self.assoc + way] = self.clock;
            }
            Replacement::TreePlru => plru_touch(&mut self.plru_bits[set], self.assoc, way),
            Replacement::Random { .. } => {}
        }
    }

    /// The way a fill of `set` replaces: an empty one if any, else the policy's choice.
    fn victim_way(&mut self, set: usize) -> usize {
        let start = set * self.assoc;
        match self.replacement {
            Replacement::Lru => {
                // Empty ways have time 0, older than any use, so they are taken first. Times are
                // unique (or 0, for empty ways), so the minimum names one way; the scan carries
                // (time, way) in one word and takes a plain minimum, which compiles without
                // branches: where the oldest way sits is unpredictable, and mispredicted
                // branches here cost more than the scan.
                let times = &self.last_use[start..start + self.assoc];
                let way_bits = usize::BITS - (self.assoc - 1).leading_zeros();
                let oldest = times
                    .iter()
                    .enumerate()
                    .map(|(way, &t)| (t << way_bits) | way as u64)
                    .min()
                    .unwrap_or(0);
                (oldest & ((1 << way_bits) - 1)) as usize
            }
            Replacement::TreePlru => self.tags[start..start + self.assoc]
                .iter()
                .position(|&t| t == INVALID)
                .unwrap_or_else(|| plru_victim(self.plru_bits[set], self.assoc)),
            Replacement::Random { .. } => {
                match self.tags[start..start + self.assoc]
                    .iter()
                    .position(|&t| t == INVALID)
                {
                    Some(way) => way,
                    None => (self.next_random() % self.assoc as u64) as usize,
                }
            }
        }
    }

    /// Whether `block` is the line the level touched last (then the most recent of its set),
    /// marked dirty when `dirty`; nothing changes otherwise.
    #[inline(always)]
    fn recent_hit(&mut self, block: u64, dirty: bool) -> bool {
        if block == self.last_block {
            self.dirty[self.last_index] |= dirty;
            return true;
        }
        false
    }

    #[inline(always)]
    fn probe_hit(&mut self, set: usize, block: u64, dirty: bool) -> bool {
        if self.recent_hit(block, dirty) {
            return true;
        }
        let Some(way) = self.find(set, block) else {
            return false;
        };
        let index = set * self.assoc + way;
        self.dirty[index] |= dirty;
        self.last_block = block;
        self.last_index = index;
        self.touch(set, way);
        true
    }

    #[inline]
    fn fill(&mut self, set: usize, block: u64, dirty: bool) -> Option<Victim> {
        let way = self.victim_way(set);
        let index = set * self.assoc + way;
        let old = self.tags[index];
        let victim = (old != INVALID).then_some(Victim {
            block: old,
            dirty: self.dirty[index],
        });
        self.tags[index] = block;
        self.dirty[index] = dirty;
        self.last_block = block;
        self.last_index = index;
        self.set_signature(set, way, block);
        self.touch(set, way);
        victim
    }

    fn mark_dirty(&mut self, set: usize, block: u64) -> bool {
        match self.find(set, block) {
            Some(way) => {
                self.dirty[set * self.assoc + way] = true;
                true
            }
            None => false,
        }
    }

    fn clean(&mut self, set: usize, block: u64) -> Option<bool> {
        let index = set * self.assoc + self.find(set, block)?;
        Some(std::mem::replace(&mut self.dirty[index], false))
    }

    fn invalidate(&mut self, set: usize, block: u64) -> Option<bool> {
        let index = set * self.assoc + self.find(set, block)?;
        let dirty = self.dirty[index];
        if index == self.last_index {
            self.last_block = INVALID;
        }
        self.tags[index] = INVALID;
        self.dirty[index] = false;
        if let Replacement::Lru = self.replacement {
            self.last_use[index] = 0;
        }
        Some(dirty)
    }

    fn clear(&mut self) {
        self.tags.fill(INVALID);
        self.last_block = INVALID;
        self.signatures.fill(0);
        self.dirty.fill(false);
        self.last_use.fill(0);
        self.plru_bits.fill(0);
    }

    fn resident_blocks(&self) -> impl Iterator<Item = u64> + '_ {
        self.tags.iter().copied().filter(|&t| t != INVALID)
    }

    /// [`CacheLevel::copy_sets_from`] for this store. LRU times of the two stores come from
    /// two clocks, but only ways of one set are ever compared, and every way of a set comes
    /// from one store; the clock then goes on from the later of the two, so a use after the
    /// copy is later than every use copied. The line touched last may lie in a set replaced,
    /// so it is forgotten.
    fn copy_sets_from(&mut self, from: &Self, wanted: impl Fn(usize) -> bool) {
        let sets = self.tags.len() / self.assoc;
        for set in (0..sets).filter(|&set| wanted(set)) {
            let ways = set * self.assoc..(set + 1) * self.assoc;
            self.tags[ways.clone()].copy_from_slice(&from.tags[ways.clone()]);
            self.dirty[ways.clone()].copy_from_slice(&from.dirty[ways.clone()]);
            if !self.last_use.is_empty() {
                self.last_use[ways.clone()].copy_from_slice(&from.last_use[ways]);
            }
            let words = set * self.sig_words..(set + 1) * self.sig_words;
            self.signatures[words.clone()].copy_from_slice(&from.signatures[words]);
            if !self.plru_bits.is_empty() {
                self.plru_bits[set] = from.plru_bits[set];
            }
        }
        self.clock = self.clock.max(from.clock);
        self.last_block = INVALID;
    }

    fn next_random(&mut self) -> u64 {
        // xorshift64*: reproducible for a given seed, which is all a replacement policy needs.
        let mut x = self.rng_state;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng_state = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

/// An 8-bit hash of a block number, for the general store's signature filter. The multiply
/// mixes the high bits in, so blocks that share a set (and so their low bits) still differ
/// here; the packed stores scale the multiplier to their sets (`PackedShape::signature`).
#[inline(always)]
fn signature(block: u64) -> u8 {
    (block.wrapping_mul(SIGNATURE_MUL) >> 56) as u8
}

/// 2^64 over the golden ratio, odd: [`signature`]'s multiplier.
const SIGNATURE_MUL: u64 = 0x9E37_79B9_7F4A_7C15;

/// Ways `0..assoc` in order, most recent first; nibbles past `assoc` hold 0xF, which matches
/// no way of a set narrower than 16.
fn identity_order(assoc: usize) -> u64 {
    (0..16).fold(0, |order, pos| {
        let way = if pos < assoc { pos as u64 } else { 0xF };
        order | (way << (4 * pos))
    })
}

/// Position (in nibbles) of `way` in a packed recency order.
#[inline(always)]
fn position_of(order: u64, way: u64) -> u32 {
    const ONES: u64 = 0x1111_1111_1111_1111;
    const HIGHS: u64 = 0x8888_8888_8888_8888;
    // The "has a zero nibble" test on order XOR way: the lowest flagged nibble is the first
    // exact match (a borrow can only flag nibbles above a real zero).
    let x = order ^ (way * ONES);
    let zeros = x.wrapping_sub(ONES) & !x & HIGHS;
    zeros.trailing_zeros() / 4
}

/// Moves `way` to the front of a packed recency order.
#[inline(always)]
fn move_to_front(order: u64, way: u64) -> u64 {
    const ONES: u64 = 0x1111_1111_1111_1111;
    const HIGHS: u64 = 0x8888_8888_8888_8888;
    // The "has a zero nibble" test on order XOR way; its lowest flagged bit is the top bit of
    // `way`'s nibble (a borrow can only flag nibbles above a real zero), so the mask up to and
    // including that bit covers the nibbles that shift up by one, with no count or shift by a
    // variable amount.
    let x = order ^ (way * ONES);
    let zeros = x.wrapping_sub(ONES) & !x & HIGHS;
    let moved = zeros ^ zeros.wrapping_sub(1);
    (order & !moved) | ((order << 4) & moved) | way
}

/// Moves `way` to the last valid position (`assoc - 1`) of a packed recency order.
fn move_to_back(order: u64, way: u64, assoc: usize) -> u64 {
    let shift = 4 * position_of(order, way);
    let last = 4 * (assoc as u32 - 1);
    // The nibbles after `way`'s, up to the last valid one, move down by one; the spare
    // nibbles past the last way stay.
    let valid = (1u64 << last << 4).wrapping_sub(1);
    let below = order & ((1u64 << shift) - 1);
    let between = (order & valid & !((1u64 << shift << 4).wrapping_sub(1))) >> 4;
    (order & !valid) | (way << last) | between | below
}

/// Points every tree node on the path to `way` away from it.
///
/// Nodes are numbered heap-style from 1; bit `n` set means "the victim is in the right subtree".
#[inline]
fn plru_touch(bits: &mut u64, assoc: usize, way: usize) {
    let levels = assoc.trailing_zeros();
    let mut node = 1usize;
    for depth in (0..levels).rev() {
        let right = (way >> depth) & 1 == 1;
        if right {
            *bits &= !(1 << node);
        } else {
            *bits |= 1 << node;
        }
        node = node * 2 + usize::from(right);
    }
}

/// Follows the direction bits from the root to the pseudo-least-recently-used way.
#[inline]
fn plru_victim(bits: u64, assoc: usize) -> usize {
    let levels = assoc.trailing_zeros();
    let mut node = 1usize;
    let mut way = 0usize;
    for _ in 0..levels {
        let right = bits >> node & 1 == 1;
        way = way * 2 + usize::from(right);
        node = node * 2 + usize::from(right);
    }
    way
}

#[cfg(test)]
mod tests {
    use super::*;

    fn level(size: u64, assoc: u32, line: u32, r: Replacement) -> CacheLevel {
        CacheLevel::new(Geometry::new(size, assoc, line).unwrap(), r).unwrap()
    }

    fn miss(p: Probe) -> bool {
        !matches!(p, Probe::Hit)
    }

    #[test]
    fn geometry_rejects_impossible_caches() {
        assert!(Geometry::new(32768, 2, 48).is_err());
        assert!(Geometry::new(32768, 0, 32).is_err());
        assert!(Geometry::new(1000, 2, 32).is_err());
        assert_eq!(Geometry::new(32768, 2, 32).unwrap().sets(), 512);
        // 15 ways and 114,688 sets: the host's L3 here.
        assert_eq!(Geometry::new(110_100_480, 15, 64).unwrap().sets(), 114_688);
    }

    #[test]
    fn lru_two_way_set_evicts_least_recent() {
        // One set, two ways: blocks 0, 1, 0, 2 -> 2 evicts 1 (0 was used more recently).
        let mut c = level(64, 2, 32, Replacement::Lru);
        assert!(miss(c.probe(0, true, false)));
        assert!(miss(c.probe(1, true, false)));
        assert_eq!(c.probe(0, true, false), Probe::Hit);
        assert_eq!(
            c.probe(2, true, false),
            Probe::Filled {
                victim: Some(Victim {
                    block: 1,
                    dirty: false
                })
            }
        );
        assert!(c.contains(0) && c.contains(2) && !c.contains(1));
    }

    #[test]
    fn lru_dirty_bit_travels_with_the_line() {
        let mut c = level(64, 2, 32, Replacement::Lru);
        c.probe(0, true, true);
        c.probe(1, true, false);
        c.probe(1, true, false);
        // 0 is now LRU and dirty.
        assert_eq!(
            c.probe(2, true, false),
            Probe::Filled {
                victim: Some(Victim {
                    block: 0,
                    dirty: true
                })
            }
        );
    }

    #[test]
    fn no_allocate_leaves_the_set_alone() {
        let mut c = level(64, 2, 32, Replacement::Lru);
        assert_eq!(c.probe(5, false, true), Probe::Bypassed);
        assert!(!c.contains(5));
    }

    #[test]
    fn sets_are_indexed_by_block_modulo_sets() {
        // 4 sets of 1 way: blocks 0 and 4 conflict, 0 and 1 do not.
        let mut c = level(128, 1, 32, Replacement::Lru);
        c.probe(0, true, false);
        c.probe(1, true, false);
        assert!(c.contains(0));
        c.probe(4, true, false);
        assert!(!c.contains(0) && c.contains(1) && c.contains(4));
        // Three sets (not a power of two): blocks 0 and 3 conflict.
        let mut c = level(96, 1, 32, Replacement::Lru);
        c.probe(0, true, false);
        c.probe(2, true, false);
        c.probe(3, true, false);
        assert!(!c.contains(0) && c.contains(2) && c.contains(3));
    }

    #[test]
    fn tree_plru_four_way_hand_computed() {
        // One set, 4 ways, filled in way order with blocks 0..3. Touching way 3 last leaves the
        // root pointing left and the left node pointing at way 0.
        let mut c = level(4 * 32, 4, 32, Replacement::TreePlru);
        for b in 0..4 {
            assert!(miss(c.probe(b, true, false)));
        }
        // Touching way 0 turns the root right; the right node points at way 2 (way 3 was
        // touched after it), so block 2 goes.
        assert_eq!(c.probe(0, true, false), Probe::Hit);
        assert_eq!(
            c.probe(10, true, false),
            Probe::Filled {
                victim: Some(Victim {
                    block: 2,
                    dirty: false
                })
            }
        );
        // Touching way 2 turns the root left; the left node points at way 1 (way 0 was
        // touched after it), so block 1 goes. True LRU would also pick 1 here, but it would
        // have picked 1, not 2, on the previous fill.
        assert_eq!(
            c.probe(11, true, false),
            Probe::Filled {
                victim: Some(Victim {
                    block: 1,
                    dirty: false
                })
            }
        );
    }

    #[test]
    fn tree_plru_never_evicts_the_most_recent_line() {
        let mut c = level(8 * 32, 8, 32, Replacement::TreePlru);
        let mut last = u64::MAX;
        for i in 0..10_000u64 {
            let b = (i * 7919) % 23;
            if let Probe::Filled { victim: Some(v) } = c.probe(b, true, false) {
                assert_ne!(v.block, last, "PLRU evicted the most recent line");
            }
            last = b;
        }
    }

    #[test]
    fn random_is_reproducible_for_a_seed_and_fills_invalid_ways_first() {
        let run = |seed| {
            let mut c = level(4 * 32, 4, 32, Replacement::Random { seed });
            let mut victims = Vec::new();
            for b in 0..4 {
                assert_eq!(c.probe(b, true, false), Probe::Filled { victim: None });
            }
            for b in 4..40 {
                if let Probe::Filled { victim: Some(v) } = c.probe(b, true, false) {
                    victims.push(v.block);
                }
            }
            victims
        };
        assert_eq!(run(7), run(7));
        assert_ne!(run(7), run(8));
    }

    #[test]
    fn packed_recency_order_moves_ways_like_a_list() {
        let order = identity_order(4);
        assert_eq!(order & 0xFFFF, 0x3210);
        assert_eq!(order >> 16, 0xFFFF_FFFF_FFFF);
        let order = move_to_front(order, 2);
        assert_eq!(order & 0xFFFF, 0x3102);
        let order = move_to_front(order, 3);
        assert_eq!(order & 0xFFFF, 0x1023);
        assert_eq!(move_to_front(order, 3), order);
        assert_eq!(move_to_back(order, 0, 4) & 0xFFFF, 0x0123);
        // Sixteen ways use every nibble, including the top one.
        let full = move_to_front(identity_order(16), 15);
        assert_eq!(full, 0xEDCB_A987_6543_210F);
        assert_eq!(move_to_front(full, 0) & 0xFF, 0xF0);
        assert_eq!(move_to_back(full, 15, 16), identity_order(16));
    }

    /// Drives a level of one set with `assoc` ways against Cachegrind's move-to-front list,
    /// dirty bits and invalidations included, over `blocks`.
    fn check_against_list(assoc: u32, blocks: impl Iterator<Item = u64>) {
        let mut c = level(u64::from(assoc) * 32, assoc, 32, Replacement::Lru);
        // (block, dirty), most recent first.
        let mut list: Vec<(u64, bool)> = Vec::new();
        for (i, b) in blocks.enumerate() {
            let write = i % 3 == 0;
            let probe = c.probe(b, true, write);
            let mut dirty = write;
            if let Some(p) = list.iter().position(|&(r, _)| r == b) {
                assert_eq!(probe, Probe::Hit, "{assoc} ways, access {i}");
                dirty |= list.remove(p).1;
            } else {
                let victim = (list.len() == assoc as usize).then(|| {
                    let (block, dirty) = list.pop().unwrap();
                    Victim { block, dirty }
                });
                assert_eq!(probe, Probe::Filled { victim }, "{assoc} ways, access {i}");
            }
            list.insert(0, (b, dirty));
            if i % 97 == 0 {
                let (gone, was_dirty) = list.remove(list.len() / 2);
                assert_eq!(c.invalidate(gone), Some(was_dirty), "{assoc} ways");
            }
            if i % 89 == 0
                && let Some(entry) = list.last_mut()
            {
                assert!(c.mark_dirty(entry.0));
                entry.1 = true;
            }
        }
        let mut resident: Vec<u64> = c.resident_blocks().collect();
        let mut expected: Vec<u64> = list.iter().map(|&(b, _)| b).collect();
        resident.sort_unstable();
        expected.sort_unstable();
        assert_eq!(resident, expected, "{assoc} ways");
    }

    #[test]
    fn every_lru_representation_matches_a_move_to_front_list() {
        // Up to 8 ways and up to 16 ways use the packed stores (full and partly used rows),
        // 32 ways last-use times; all must make exactly the decisions of Cachegrind's list.
        for assoc in [1u32, 2, 3, 7, 8, 9, 12, 16, 32] {
            let mut x = 12345u64;
            let range = u64::from(assoc + assoc / 2 + 1);
            check_against_list(
                assoc,
                std::iter::repeat_with(|| {
                    crate::test_rng::xorshift(&mut x);
                    x % range
                })
                .take(20_000),
            );
        }
    }

    #[test]
    fn blocks_with_equal_signatures_are_told_apart() {
        // Blocks whose 8-bit signatures collide: the fast comparison of the first candidate
        // fails and the full comparison must still find (or not find) the right way.
        let sig = signature(1);
        let twins: Vec<u64> = (2..)
            .filter(|&b| signature(b) == sig)
            .take(20)
            .chain([1])
            .collect();
        for assoc in [4u32, 8, 16, 32] {
            let mut x = 99u64;
            check_against_list(
                assoc,
                std::iter::repeat_with(|| {
                    crate::test_rng::xorshift(&mut x);
                    twins[(x % (u64::from(assoc) + 3).min(21)) as usize]
                })
                .take(5_000),
            );
        }
    }

    /// The lines of three arrays a power of two apart, five each, streamed through one set
    /// (its tags consecutive from each array's): their signatures in a packed store almost
    /// never collide, for an L1's 64 sets and an L2's 8192 (with the plain multiplier, 17 and
    /// 14 colliding pairs over these 48 cases).
    #[test]
    fn streamed_lines_of_a_set_rarely_share_a_signature() {
        for set_bits in [6u32, 13] {
            let shape = PackedLru::<16, 2>::new(1 << set_bits, 16).shape;
            let mut collisions = 0;
            for apart in 4..20 {
                for set in [0u64, 5, 33] {
                    let signatures: Vec<u8> = (0..3u64)
                        .flat_map(|j| (0..5).map(move |i| (j << apart) + i))
                        .map(|tag| shape.signature(tag << set_bits | set))
                        .collect();
                    for (x, a) in signatures.iter().enumerate() {
                        collisions += signatures[..x].iter().filter(|&b| b == a).count();
                    }
                }
            }
            assert!(
                collisions <= 2,
                "{collisions} pairs with {set_bits} set bits"
            );
        }
    }

    #[test]
    fn invalidate_keeps_lru_order_dense() {
        let mut c = level(3 * 32, 3, 32, Replacement::Lru);
        c.probe(0, true, true);
        c.probe(1, true, false);
        c.probe(2, true, false);
        assert_eq!(c.invalidate(0), Some(true));
        assert_eq!(c.invalidate(0), None);
        // A free way exists now, so the next fill evicts nothing.
        assert_eq!(c.probe(3, true, false), Probe::Filled { victim: None });
        // And the LRU line is 1.
        assert_eq!(
            c.probe(4, true, false),
            Probe::Filled {
                victim: Some(Victim {
                    block: 1,
                    dirty: false
                })
            }
        );
    }
}
