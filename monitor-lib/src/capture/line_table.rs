//! Per-line attribution in standalone counting: every miss, at every level, counted for the code
//! address of the access that made it, the regions open at the time and its data structure.
//!
//! What is counted per code address: each level's read misses and write misses (an L1 miss is
//! an access reaching L2; an L2 miss one reaching L3, and so on). Hits are not: most L1 hits
//! are repeat hits the filter answers with an increment (`filter.rs`, and `epcache cc`'s inline
//! test) without the access's address of code, and giving them one would cost the hit path. So
//! a line's accesses and hits are not known; its misses are, exactly, as far as the access
//! carries its code address. Every path carries it: the hook call's return address, and the
//! inline miss path's and the pipeline's batch records hold the same address (inline ABI v9's
//! code-address word). pc 0 stands for "unknown": only the explicit `epcache_read`/`write`
//! calls of the runtime's Rust API give it (code built without `-g` has addresses, but no
//! lines to name them by).
//!
//! A thread keeps a [`LineTable`]: a hash map keyed by (code address, regions open, data
//! structure) to the misses. It is bounded ([`MAX_LINE_KEYS`]): the misses of keys past it are
//! summed in [`LineTable::unattributed`], which the report gives as such. The regions open are
//! a node of the thread's [`RegionPaths`] (a tree of the region stacks it ran), set when a
//! region begins, so a miss costs no walk of the stack; at the hand-over to the process totals
//! each node becomes the set of regions it stands for.
//!
//! Only misses reach this module: the simulator's hit path and the filter's are untouched.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use epcache_sim::cache::MAX_LEVELS;

/// Per level, L1 first: read misses, then write misses; then, on a machine of cores
/// (`EPCACHE_CORES`), each level's coherence events as the thread's counts hold them
/// (`monitoring::COHERENCE_COUNTS` on: `4 * level + event`, the event a coherence miss, a
/// false-sharing miss, a true-sharing miss, an invalidation).
pub(crate) type LineMisses = [u64; LINE_COUNTS];

/// Counters per line: two misses and four coherence events per level.
pub(crate) const LINE_COUNTS: usize = 6 * MAX_LEVELS;

/// Where a line's coherence counters start.
pub(crate) const LINE_COHERENCE: usize = 2 * MAX_LEVELS;

/// Keys a thread's table (and the process's) holds at most; misses of further keys are
/// counted as unattributed. 64 Ki keys of 48 bytes: 3 MiB at most per thread.
pub(crate) const MAX_LINE_KEYS: usize = 1 << 16;

/// The root of every thread's [`RegionPaths`]: no region open.
pub(crate) const NO_REGION_NODE: u32 = 0;

/// A cheap hasher for the keys (code addresses and small ids), FxHash's mix: the table is on
/// the miss path.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u32(&mut self, n: u32) {
        self.write_u64(u64::from(n));
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
}

pub(crate) type KeyMap<K, V> = HashMap<K, V, BuildHasherDefault<KeyHasher>>;

/// One thread's key of a miss.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct LineKey {
    /// Code address of the access (runtime address; 0 when unknown).
    pub(crate) pc: u64,
    /// Node of the thread's [`RegionPaths`]: the regions open.
    pub(crate) node: u32,
    /// Data structure, index + 1; 0 for none.
    pub(crate) structure: u32,
}

/// The region stacks a thread ran, as a tree: node [`NO_REGION_NODE`] is no region open, and
/// each other node is one more region open inside its parent's.
#[derive(Debug, Default)]
pub(crate) struct RegionPaths {
    /// `(parent, region id)` of node `i + 1`.
    nodes: Vec<(u32, u32)>,
    children: KeyMap<(u32, u32), u32>,
}

impl RegionPaths {
    /// The node for `region` opening inside `parent`.
    pub(crate) fn child(&mut self, parent: u32, region: u32) -> u32 {
        if let Some(&node) = self.children.get(&(parent, region)) {
            return node;
        }
        self.nodes.push((parent, region));
        let node = self.nodes.len() as u32;
        self.children.insert((parent, region), node);
        node
    }

    /// The regions open at `node`, innermost first.
    pub(crate) fn regions_of(&self, mut node: u32) -> Vec<u32> {
        let mut out = Vec::new();
        while let Some(&(parent, region)) =
            node.checked_sub(1).and_then(|i| self.nodes.get(i as usize))
        {
            if !out.contains(&region) {
                out.push(region);
            }
            node = parent;
        }
        out
    }
}

/// log2 of the slots of [`LineTable`]'s memo: a loop's few missing sites, by code address.
/// Each slot holds two keys, the one found last first. A third key in one slot sends its
/// site's every miss to the hash map (about 18 instructions more per record of a batch): with
/// 32 slots that befell one layout in twenty of a loop of eight sites (a 3-D stencil), and a
/// rebuild of the runtime moves the sites; with 128, one in three hundred. The slots are 6 KiB;
/// only those of the sites that miss are touched.
const MEMO_BITS: u32 = 7;
const MEMO_SLOTS: usize = 1 << MEMO_BITS;

/// The memo slot of a key: the code address and the structure mixed by one multiplication
/// (Fibonacci hashing), its top bits the slot. Sites of one loop lie a few bytes apart, so
/// the low bits of the address alone would put two of them in one slot often, and their
/// misses would alternate there and each go to the hash map; two keys a slot keeps such a
/// pair, when the mix makes one, in the memo.
#[inline(always)]
fn memo_slot(pc: u64, structure: u32) -> usize {
    ((pc ^ u64::from(structure) << 40).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - MEMO_BITS))
        as usize
}

/// A key of [`LineTable`]'s memo as two words, compared with two comparisons: the code
/// address, and the regions' node above the structure. A slot holding no key has code address
/// [`NO_CODE`], which no access has, and index `u32::MAX`.
#[derive(Debug, Clone, Copy)]
struct MemoKey {
    pc: u64,
    node_structure: u64,
    index: u32,
}

/// The code address of a memo slot that holds no key: the last byte of the address space,
/// where no code lies.
const NO_CODE: u64 = u64::MAX;

/// [`MemoKey::node_structure`] of a key.
#[inline(always)]
fn node_structure(node: u32, structure: u32) -> u64 {
    u64::from(node) << 32 | u64::from(structure)
}

/// A memo slot holding no key.
const NO_MEMO: MemoKey = MemoKey {
    pc: NO_CODE,
    node_structure: 0,
    index: u32::MAX,
};

/// One thread's misses per code address, regions open and data structure.
#[derive(Debug)]
pub(crate) struct LineTable {
    /// The misses of each key, in the order the keys first missed.
    misses: Vec<LineMisses>,
    /// Each key's index in `misses`.
    index: KeyMap<LineKey, u32>,
    /// The keys that missed last, by code address, with their index: most misses of a loop
    /// find their key here, without hashing it.
    memo: [[MemoKey; 2]; MEMO_SLOTS],
    /// Misses of keys the table had no room for.
    pub(crate) unattributed: LineMisses,
    pub(crate) paths: RegionPaths,
}

impl Default for LineTable {
    fn default() -> Self {
        LineTable {
            misses: Vec::new(),
            index: KeyMap::default(),
            memo: [[NO_MEMO; 2]; MEMO_SLOTS],
            unattributed: [0; LINE_COUNTS],
            paths: RegionPaths::default(),
        }
    }
}

impl LineTable {
    /// Counts the misses in `bits` ([`epcache_sim::cache::AccessOutcome::event_bits`]: per level
    /// a byte, read hit, read miss, write hit, write miss) and the coherence events in
    /// `coherence` (a machine's `CoreOutcome::coherence`: per level a byte, its bits 4 to 7 the
    /// events) for `key` (its fields apart, so they come in registers). Inlined, as
    /// `Monitoring::count_line` is into its callers: a miss pays no call.
    #[inline(always)]
    pub(crate) fn count(&mut self, pc: u64, node: u32, structure: u32, bits: u32, coherence: u32) {
        let misses = self.misses_of(pc, node, structure);
        add_misses(misses, bits);
        if coherence != 0 {
            add_coherence(misses, coherence);
        }
    }

    /// [`Self::count`] of an L1 miss of a hierarchy of two levels, which L2 held or not
    /// (`l2_missed`): L1's read or write miss, and L2's added as 0 or 1, with no loop over the
    /// bits and no branch on the outcome.
    #[inline(always)]
    pub(crate) fn count_two_level_miss(
        &mut self,
        pc: u64,
        node: u32,
        structure: u32,
        write: bool,
        l2_missed: bool,
    ) {
        let misses = self.misses_of(pc, node, structure);
        let w = usize::from(write);
        // A count cannot reach 2^64: no overflow check.
        misses[w] = misses[w].wrapping_add(1);
        misses[2 + w] = misses[2 + w].wrapping_add(u64::from(l2_missed));
    }

    /// The misses of the key `(pc, node, structure)`: from the memo, else the map (made if the
    /// table has room), else the unattributed ones.
    #[inline(always)]
    fn misses_of(&mut self, pc: u64, node: u32, structure: u32) -> &mut LineMisses {
        let wanted = node_structure(node, structure);
        let slot = memo_slot(pc, structure);
        let memo = &self.memo[slot];
        let index = if memo[0].pc == pc && memo[0].node_structure == wanted {
            memo[0].index
        } else if memo[1].pc == pc && memo[1].node_structure == wanted {
            memo[1].index
        } else {
            let key = LineKey {
                pc,
                node,
                structure,
            };
            self.look_up(key, slot)
        };
        match self.misses.get_mut(index as usize) {
            Some(misses) => misses,
            None => &mut self.unattributed,
        }
    }

    /// The index of `key`'s misses, made if the table has room (else `u32::MAX`), and
    /// remembered in memo slot `slot`.
    #[cold]
    fn look_up(&mut self, key: LineKey, slot: usize) -> u32 {
        let index = match self.index.get(&key) {
            Some(&index) => index,
            None if self.misses.len() < MAX_LINE_KEYS => {
                self.misses.push([0; LINE_COUNTS]);
                let index = self.misses.len() as u32 - 1;
                self.index.insert(key, index);
                index
            }
            None => return u32::MAX,
        };
        let memo = &mut self.memo[slot];
        memo[1] = memo[0];
        memo[0] = MemoKey {
            pc: key.pc,
            node_structure: node_structure(key.node, key.structure),
            index,
        };
        index
    }

    /// Every key with its misses.
    pub(crate) fn entries(&self) -> impl Iterator<Item = (&LineKey, &LineMisses)> {
        self.index
            .iter()
            .map(|(key, &index)| (key, &self.misses[index as usize]))
    }

    /// Forgets the counts (after a hand-over), keeping the region paths: nodes stay valid.
    pub(crate) fn clear_counts(&mut self) {
        self.misses.clear();
        self.index.clear();
        self.memo = [[NO_MEMO; 2]; MEMO_SLOTS];
        self.unattributed = [0; LINE_COUNTS];
    }
}

/// Adds each level's read or write miss in `bits` to `misses`: a level's byte has bit 1 for a
/// read miss and bit 3 for a write miss, so each miss bit names its counter.
#[inline(always)]
fn add_misses(misses: &mut LineMisses, bits: u32) {
    let mut rest = bits & 0x0A0A_0A0A;
    while rest != 0 {
        let bit = rest.trailing_zeros() as usize;
        // Level `bit / 8`; bit 1 of the byte is the read miss, bit 3 the write miss.
        // A count cannot reach 2^64: no overflow check.
        let count = &mut misses[(2 * (bit / 8) + (bit % 8) / 2) % LINE_COHERENCE];
        *count = count.wrapping_add(1);
        rest &= rest - 1;
    }
}

/// Adds each coherence event in `coherence` to `counts`.
#[cold]
fn add_coherence(counts: &mut LineMisses, coherence: u32) {
    let mut rest = coherence;
    while rest != 0 {
        let bit = rest.trailing_zeros() as usize;
        let index = LINE_COHERENCE + 4 * (bit / 8) + (bit % 8).saturating_sub(4);
        if let Some(c) = counts.get_mut(index) {
            *c += 1;
        }
        rest &= rest - 1;
    }
}

/// A process-wide key: the code address, the regions open (sorted ids) and the data structure
/// (index + 1, 0 for none).
pub(crate) type ProcessLineKey = (u64, Vec<u32>, u32);

/// Every thread's line tables, merged at their hand-overs.
#[derive(Debug, Clone, Default)]
pub(crate) struct LineTotals {
    pub(crate) entries: KeyMap<ProcessLineKey, LineMisses>,
    /// Misses no table had room for.
    pub(crate) unattributed: LineMisses,
}

impl LineTotals {
    pub(crate) const fn empty() -> Self {
        LineTotals {
            entries: HashMap::with_hasher(BuildHasherDefault::new()),
            unattributed: [0; LINE_COUNTS],
        }
    }

    /// Adds a thread's table.
    pub(crate) fn merge(&mut self, table: &LineTable) {
        add(&mut self.unattributed, &table.unattributed);
        for (key, misses) in table.entries() {
            let mut regions = table.paths.regions_of(key.node);
            regions.sort_unstable();
            let process_key = (key.pc, regions, key.structure);
            let room = self.entries.len() < MAX_LINE_KEYS;
            match self.entries.get_mut(&process_key) {
                Some(sum) => add(sum, misses),
                None if room => {
                    self.entries.insert(process_key, *misses);
                }
                None => add(&mut self.unattributed, misses),
            }
        }
    }
}

fn add(a: &mut LineMisses, b: &LineMisses) {
    for (x, y) in a.iter_mut().zip(b) {
        *x += y;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The return addresses of a triad kernel's four hook calls (`gcc -O2`, loaded at a PIE
    /// base): the old slot of the low address bits put them in two slots, two sites each.
    #[test]
    fn one_loops_sites_take_slots_of_their_own() {
        let base = 0x5555_5555_4000;
        let sites = [0x3bc86, 0x3c1d3, 0x3c328, 0x3c639].map(|pc| base + pc);
        let mut slots: Vec<usize> = sites.iter().map(|&pc| memo_slot(pc, 1)).collect();
        slots.sort_unstable();
        slots.dedup();
        assert_eq!(slots.len(), sites.len(), "{slots:?}");
        assert!(slots.iter().all(|&s| s < MEMO_SLOTS));
    }

    /// Two keys whose misses alternate in one memo slot both stay there, the one found last
    /// first, so neither goes to the hash map again; a third pushes the older out.
    #[test]
    fn two_keys_of_one_slot_both_stay_in_the_memo() {
        let pcs: Vec<u64> = (0x1000..)
            .filter(|&pc| memo_slot(pc, 1) == memo_slot(0x1000, 1))
            .take(3)
            .collect();
        let slot = memo_slot(pcs[0], 1);
        let mut table = LineTable::default();
        let read_miss = 1 << 1;
        for _ in 0..3 {
            table.count(pcs[0], 0, 1, read_miss, 0);
            table.count(pcs[1], 0, 1, read_miss, 0);
        }
        let held: Vec<u64> = table.memo[slot].iter().map(|k| k.pc).collect();
        assert_eq!(held, [pcs[1], pcs[0]]);
        table.count(pcs[2], 0, 1, read_miss, 0);
        let held: Vec<u64> = table.memo[slot].iter().map(|k| k.pc).collect();
        assert_eq!(held, [pcs[2], pcs[1]]);
        let counted: Vec<u64> = pcs
            .iter()
            .map(|&pc| {
                table
                    .entries()
                    .find(|(k, _)| k.pc == pc)
                    .map_or(0, |(_, m)| m[0])
            })
            .collect();
        assert_eq!(counted, [3, 3, 1]);
    }

    /// The two-level count adds what counting the outcome's bits adds, for each of the four
    /// outcomes of an L1 miss; a table cleared forgets its memo's keys too.
    #[test]
    fn a_two_level_miss_counts_as_its_bits() {
        let (mut bits_table, mut table) = (LineTable::default(), LineTable::default());
        for (i, (write, l2_missed)) in [(false, false), (false, true), (true, false), (true, true)]
            .into_iter()
            .enumerate()
        {
            let l2 = if l2_missed { 2 } else { 1 };
            let bits = (2 | l2 << 8) << (2 * u32::from(write));
            for pc in [0x40_1000, 0x40_1000 + 4 * i as u64] {
                bits_table.count(pc, 3, 2, bits, 0);
                table.count_two_level_miss(pc, 3, 2, write, l2_missed);
            }
        }
        let rows = |t: &LineTable| {
            let mut rows: Vec<_> = t.entries().map(|(k, m)| (*k, *m)).collect();
            rows.sort_by_key(|(k, _)| k.pc);
            rows
        };
        assert_eq!(rows(&table), rows(&bits_table));
        assert_eq!(rows(&table)[0].1[..4], [3, 2, 1, 1]);
        table.clear_counts();
        table.count_two_level_miss(0x40_1000, 3, 2, false, false);
        assert_eq!(rows(&table).len(), 1);
        assert_eq!(rows(&table)[0].1[..4], [1, 0, 0, 0]);
    }

    #[test]
    fn misses_are_counted_per_level_and_kind_and_the_table_is_bounded() {
        let mut table = LineTable::default();
        let main = table.paths.child(NO_REGION_NODE, 3);
        let inner = table.paths.child(main, 7);
        assert_eq!(table.paths.child(NO_REGION_NODE, 3), main);
        assert_eq!(table.paths.regions_of(inner), vec![7, 3]);
        let key = LineKey {
            pc: 0x401000,
            node: inner,
            structure: 2,
        };
        // An L1 read miss that hit L2; an L1 write miss that missed L2 and hit L3.
        table.count(key.pc, key.node, key.structure, 0b10 | 0b1 << 8, 0);
        table.count(
            key.pc,
            key.node,
            key.structure,
            0b1000 | 0b1000 << 8 | 0b100 << 16,
            0,
        );
        // A hit counts nothing.
        table.count(key.pc, key.node, key.structure, 0b1, 0);
        // A coherence miss at L1 and an invalidation at L2.
        table.count(
            key.pc,
            key.node,
            key.structure,
            0,
            0b1_0000 | 0b1000_0000 << 8,
        );
        let mut expected = [0; LINE_COUNTS];
        expected[..4].copy_from_slice(&[1, 1, 0, 1]);
        expected[LINE_COHERENCE] = 1;
        expected[LINE_COHERENCE + 4 + 3] = 1;
        let misses_of = |table: &LineTable, key: &LineKey| {
            table.entries().find(|(k, _)| *k == key).map(|(_, m)| *m)
        };
        assert_eq!(misses_of(&table, &key), Some(expected));
        for pc in 0..MAX_LINE_KEYS as u64 {
            table.count(0x500000 + pc, 0, 0, 0b10, 0);
        }
        assert_eq!(table.entries().count(), MAX_LINE_KEYS);
        assert_eq!(table.unattributed[0], 1, "the key past the bound");
        let mut totals = LineTotals::default();
        totals.merge(&table);
        assert_eq!(totals.entries[&(0x401000, vec![3, 7], 2)], expected);
        assert_eq!(totals.unattributed[0], 1);
    }
}
