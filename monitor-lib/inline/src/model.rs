//! What a site does, in plain Rust: given what its registers hold (the tag word and the offset
//! mask), an access and the memory it reads, the path it takes and everything it writes.
//!
//! The model is written over [`SiteMemory`], the words of [`crate::layout`], so it runs over the
//! runtime's own table as well as over a [`ModelBlock`]: the runtime's tests use it as the
//! inline test's meaning (`capture/filter.rs`), and this crate's differential test runs every
//! assembled variant of [`crate::emit`] against it on random address streams. It follows the
//! instructions step by step, including what they do with values the runtime never makes (a
//! 32-bit offset, a shifted meta byte that drops high bits), so the two can be compared word for
//! word.
//!
//! A site counts `in_miss` up and down again on every way out of its miss path, so the model
//! leaves it as it was; only a signal handler that interrupts a miss path sees it above 0.

use std::collections::BTreeMap;

use crate::emit::{Access, HOOK_SIZES};
use crate::layout::{
    self, DIRTY_MARK, ENTRY_BYTES, META_SHIFT, RECORD_ADDRESS, RECORD_BYTES, RECORD_CODE_ADDRESS,
    RECORD_OLD_READ_HITS, RECORD_OLD_TAG, RECORD_OLD_WRITE_HITS, RECORD_ORDER_SHIFT,
    RECORD_STRUCTURE, RECORD_WORDS, SLOTS, TABLE_ENTRIES, WHOLE_SLOTS,
};
use crate::order::{self, OrderTables, TABLE_BYTES};
use crate::tag_word;

/// What a site works with from its registers: the tag word and the table's offset mask.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Registers {
    pub word: u64,
    pub mask: u32,
}

impl Registers {
    /// What a site that loads and decodes the word holds.
    pub const fn loaded(word: u64) -> Registers {
        Registers {
            word,
            mask: tag_word::offset_mask_of(word),
        }
    }
}

/// A table entry's words ([`crate::layout::ENTRY_READ_TAG`] and the following), by slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Entry {
    pub read_tag: [u64; SLOTS],
    /// The stored order byte (`crate::order`).
    pub order: u8,
    pub read_hits: [u64; SLOTS],
    pub write_hits: [u64; SLOTS],
    pub write_tag: [u64; SLOTS],
    pub dirty_pending: [u64; SLOTS],
}

/// One slot of the whole-line cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WholeLines {
    pub lo: u64,
    pub hi: u64,
    pub structure: u32,
}

/// A batch record's words, as the miss path writes them.
pub type RecordWords = [u64; RECORD_WORDS];

/// The words a site reads and writes ([`crate::layout::ThreadWord`] and the tag word).
pub trait SiteMemory {
    /// The process-wide tag word, as a load reads it now.
    fn tag_word(&self) -> u64;
    /// The thread's synced word.
    fn synced_word(&self) -> u64;
    /// The entry at byte `offset` in the table (a multiple of [`ENTRY_BYTES`]).
    fn entry(&self, offset: u32) -> Entry;
    fn set_entry(&mut self, offset: u32, entry: Entry);
    /// The byte at `offset` of the order tables (`crate::order::OrderTables::bytes`).
    fn order_table(&self, offset: usize) -> u8;
    /// The whole-line cache's slot `slot`.
    fn whole_lines(&self, slot: usize) -> WholeLines;
    fn batch_pos(&self) -> u64;
    fn batch_end(&self) -> u64;
    fn set_batch_pos(&mut self, pos: u64);
    /// Writes `record` at the address `at`, which the batch position held.
    fn write_record(&mut self, at: u64, record: RecordWords);
}

/// The path a site takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Path {
    /// A repeat hit: the slot's read or write count went up, and the slot is the entry's most
    /// recent.
    Hit,
    /// A write to a line that owns its slot clean: the slot is marked written and dirty
    /// pending, and the write counted as a hit.
    CleanWrite,
    /// A miss the site handled: the entry is the access's, and the old owner went into a
    /// record appended to the batch.
    Batched,
    /// The original call, for the reason given; the site then reloads its registers.
    Slow(Slow),
}

/// Why a site calls its hook.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Slow {
    /// The thread's synced word is not the tag word: it does not capture, or has a switch to
    /// pick up.
    MustSync,
    /// The access's first and last bytes have different tags: it straddles two lines (or the
    /// word the registers carried is not the word in memory).
    Straddles,
    /// The whole-line cache does not know the line to be whole.
    NotWhole,
    /// The batch has no room.
    BatchFull,
}

/// The site's test and count, up to its miss path: `Some` path when the entry answers the
/// access, `None` when the miss path runs.
pub fn hit_test(
    mem: &mut impl SiteMemory,
    regs: Registers,
    access: Access,
    addr: u64,
) -> Option<Path> {
    debug_assert!(
        HOOK_SIZES.contains(&access.size)
            && regs.mask.is_multiple_of(1 << tag_word::MASK_UNIT_BITS)
    );
    let tag = tag_of(regs, access, addr);
    let offset = tag_word::entry_offset(addr, regs.mask);
    let mut entry = mem.entry(offset);
    // The slots are compared in order; the first that matches answers.
    let slot_of = |tags: &[u64; SLOTS]| tags.iter().position(|&t| t == tag);
    let (path, slot) = if access.write {
        if let Some(slot) = slot_of(&entry.write_tag) {
            (Path::Hit, slot)
        } else if let Some(slot) = slot_of(&entry.read_tag) {
            entry.write_tag[slot] = tag;
            entry.dirty_pending[slot] = DIRTY_MARK;
            (Path::CleanWrite, slot)
        } else {
            return None;
        }
    } else {
        (Path::Hit, slot_of(&entry.read_tag)?)
    };
    let count = if access.write {
        &mut entry.write_hits[slot]
    } else {
        &mut entry.read_hits[slot]
    };
    *count = count.wrapping_add(1);
    entry.order = mem.order_table(order::AFTER_HIT + slot * TABLE_BYTES + usize::from(entry.order));
    mem.set_entry(offset, entry);
    Some(path)
}

/// The miss path of a site whose test did not answer the access: `Ok` when it took the entry
/// over and appended a record, else why it goes to the call (having written nothing). `code` is
/// the site's code address, where its call returns to.
pub fn miss_path(
    mem: &mut impl SiteMemory,
    regs: Registers,
    access: Access,
    addr: u64,
    code: u64,
) -> Result<(), Slow> {
    let tag = tag_of(regs, access, addr);
    let word = mem.tag_word();
    if word != mem.synced_word() {
        return Err(Slow::MustSync);
    }
    if access.size > 1 && tag_word::tag(addr, word) != tag {
        return Err(Slow::Straddles);
    }
    let whole = mem.whole_lines(layout::whole_slot(addr));
    if addr < whole.lo || addr >= whole.hi {
        return Err(Slow::NotWhole);
    }
    let at = mem.batch_pos();
    if at >= mem.batch_end() {
        return Err(Slow::BatchFull);
    }
    let offset = tag_word::entry_offset(addr, regs.mask);
    let mut entry = mem.entry(offset);
    let before = usize::from(entry.order);
    // The slot the access takes: its entry's least recent usable one.
    let slot = usize::from(mem.order_table(order::VICTIM + before)) % SLOTS;
    let meta = entry.dirty_pending[slot] | u64::from(layout::meta(access.size, access.write));
    let mut record = [0; RECORD_WORDS];
    record[RECORD_ADDRESS] = meta << META_SHIFT | addr;
    record[RECORD_OLD_TAG] = entry.read_tag[slot];
    record[RECORD_OLD_READ_HITS] = entry.read_hits[slot];
    record[RECORD_OLD_WRITE_HITS] = entry.write_hits[slot];
    record[RECORD_STRUCTURE] = u64::from(whole.structure) | (before as u64) << RECORD_ORDER_SHIFT;
    record[RECORD_CODE_ADDRESS] = code;
    mem.write_record(at, record);
    entry.order = mem.order_table(order::AFTER_MISS + before);
    entry.read_tag[slot] = tag;
    entry.write_tag[slot] = if access.write { tag } else { 0 };
    entry.read_hits[slot] = 0;
    entry.write_hits[slot] = 0;
    entry.dirty_pending[slot] = 0;
    mem.set_entry(offset, entry);
    mem.set_batch_pos(at.wrapping_add(RECORD_BYTES as u64));
    Ok(())
}

/// Everything a site at code address `code` does before its call, if it calls: the path it
/// takes.
pub fn site(
    mem: &mut impl SiteMemory,
    regs: Registers,
    access: Access,
    addr: u64,
    code: u64,
) -> Path {
    if let Some(path) = hit_test(mem, regs, access, addr) {
        return path;
    }
    match miss_path(mem, regs, access, addr, code) {
        Ok(()) => Path::Batched,
        Err(slow) => Path::Slow(slow),
    }
}

/// What the registers hold after a site took `path` with `regs`: what they held, except after
/// the call, which reloads them from `mem` as the call left it.
pub fn registers_after(path: Path, regs: Registers, mem: &impl SiteMemory) -> Registers {
    match path {
        Path::Slow(_) => Registers::loaded(mem.tag_word()),
        _ => regs,
    }
}

/// The tag the site compares: its last byte's address with the word ORed in.
fn tag_of(regs: Registers, access: Access, addr: u64) -> u64 {
    tag_word::tag(addr.wrapping_add(u64::from(access.size) - 1), regs.word)
}

/// A thread's words as plain values, for tests: the table, the whole-line cache, the batch
/// position and every record written, by address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelBlock {
    pub tag_word: u64,
    pub synced_word: u64,
    pub entries: Vec<Entry>,
    pub whole: [WholeLines; WHOLE_SLOTS],
    pub tables: OrderTables,
    pub batch_pos: u64,
    pub batch_end: u64,
    pub records: BTreeMap<u64, RecordWords>,
}

impl Default for ModelBlock {
    fn default() -> Self {
        ModelBlock {
            tag_word: 0,
            synced_word: 0,
            entries: vec![Entry::default(); TABLE_ENTRIES],
            whole: [WholeLines::default(); WHOLE_SLOTS],
            tables: OrderTables::new(SLOTS),
            batch_pos: 0,
            batch_end: 0,
            records: BTreeMap::new(),
        }
    }
}

impl SiteMemory for ModelBlock {
    fn tag_word(&self) -> u64 {
        self.tag_word
    }
    fn synced_word(&self) -> u64 {
        self.synced_word
    }
    fn entry(&self, offset: u32) -> Entry {
        self.entries[offset as usize / ENTRY_BYTES]
    }
    fn set_entry(&mut self, offset: u32, entry: Entry) {
        self.entries[offset as usize / ENTRY_BYTES] = entry;
    }
    fn order_table(&self, offset: usize) -> u8 {
        self.tables.byte(offset)
    }
    fn whole_lines(&self, slot: usize) -> WholeLines {
        self.whole[slot]
    }
    fn batch_pos(&self) -> u64 {
        self.batch_pos
    }
    fn batch_end(&self) -> u64 {
        self.batch_end
    }
    fn set_batch_pos(&mut self, pos: u64) {
        self.batch_pos = pos;
    }
    fn write_record(&mut self, at: u64, record: RecordWords) {
        self.records.insert(at, record);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tag_word::word_of;

    const READ8: Access = Access {
        size: 8,
        write: false,
    };
    const WRITE4: Access = Access {
        size: 4,
        write: true,
    };

    /// The code address of the sites in these tests.
    const CODE: u64 = 0x5555_0000_1234;

    /// A thread that captures with 64-byte lines and 64 entries of `usable` slots, the page at
    /// `page` known whole (structure 3) and room for two records.
    fn block(page: u64, usable: usize) -> ModelBlock {
        let word = word_of(0x5a, 63, 63 << 6);
        let mut b = ModelBlock {
            tag_word: word,
            synced_word: word,
            batch_pos: 0x1000,
            batch_end: 0x1000 + 2 * RECORD_BYTES as u64,
            tables: OrderTables::new(usable),
            ..ModelBlock::default()
        };
        b.whole[layout::whole_slot(page)] = WholeLines {
            lo: page,
            hi: page + 4096,
            structure: 3,
        };
        b
    }

    #[test]
    fn a_miss_takes_the_entry_over_and_later_accesses_to_its_line_hit() {
        let page = 0x7f00_0000_1000;
        let mut b = block(page, 1);
        let regs = Registers::loaded(b.tag_word);
        assert_eq!(site(&mut b, regs, READ8, page + 8, CODE), Path::Batched);
        assert_eq!(site(&mut b, regs, READ8, page + 56, CODE), Path::Hit);
        // A write to the line owning its entry clean marks it, then hits as written.
        assert_eq!(
            site(&mut b, regs, WRITE4, page + 16, CODE),
            Path::CleanWrite
        );
        assert_eq!(site(&mut b, regs, WRITE4, page + 20, CODE), Path::Hit);
        let e = b.entries[0];
        assert_eq!(
            (e.read_hits[0], e.write_hits[0], e.dirty_pending[0]),
            (1, 2, DIRTY_MARK)
        );
        assert_eq!(e.read_tag[0], (page + 63) | b.tag_word);
        assert_eq!(e.write_tag[0], e.read_tag[0]);
        // The next line's owner takes another entry; a line of the same set takes this one
        // over, and the record carries the old owner's hits and dirty mark.
        assert_eq!(
            site(&mut b, regs, WRITE4, page + 64 * 64 + 8, CODE),
            Path::Slow(Slow::NotWhole)
        );
        b.whole[layout::whole_slot(page + 4096)] = WholeLines {
            lo: page + 4096,
            hi: page + 8192,
            structure: 4,
        };
        assert_eq!(
            site(&mut b, regs, WRITE4, page + 64 * 64 + 8, CODE),
            Path::Batched
        );
        let record = b.records[&(0x1000 + RECORD_BYTES as u64)];
        assert_eq!(
            record[RECORD_ADDRESS],
            (4 | 32 | 64) << 56 | (page + 64 * 64 + 8)
        );
        assert_eq!(record[RECORD_OLD_TAG], e.read_tag[0]);
        assert_eq!(
            (record[RECORD_OLD_READ_HITS], record[RECORD_OLD_WRITE_HITS]),
            (1, 2)
        );
        assert_eq!(record[RECORD_STRUCTURE], 4);
        assert_eq!(record[RECORD_CODE_ADDRESS], CODE);
        assert_eq!(b.entries[0].dirty_pending[0], 0);
        // The batch is full now.
        assert_eq!(
            site(&mut b, regs, READ8, page + 128, CODE),
            Path::Slow(Slow::BatchFull)
        );
    }

    #[test]
    fn a_straddling_access_a_thread_to_sync_and_a_stale_key_go_to_the_call() {
        let page = 0x7f00_0000_1000;
        let mut b = block(page, 4);
        let regs = Registers::loaded(b.tag_word);
        assert_eq!(
            site(&mut b, regs, READ8, page + 60, CODE),
            Path::Slow(Slow::Straddles)
        );
        assert_eq!(site(&mut b, regs, READ8, page, CODE), Path::Batched);
        // A new key: the table's tags stop matching, and the thread must sync first.
        b.tag_word = word_of(0x5b, 63, 63 << 6);
        let regs = Registers::loaded(b.tag_word);
        assert_eq!(
            site(&mut b, regs, READ8, page, CODE),
            Path::Slow(Slow::MustSync)
        );
        assert_eq!(registers_after(Path::Slow(Slow::MustSync), regs, &b), regs);
        // A word carried from before the switch finds its line, as a delayed load would.
        let stale = Registers::loaded(b.synced_word);
        assert_eq!(site(&mut b, stale, READ8, page + 8, CODE), Path::Hit);
        // Nothing is ever written for a slow path.
        let before = b.clone();
        assert_eq!(
            site(&mut b, regs, READ8, page + 60, CODE),
            Path::Slow(Slow::MustSync)
        );
        assert_eq!(b, before);
    }

    #[test]
    fn an_entry_answers_for_its_sets_four_most_recent_lines_and_a_fifth_takes_the_least_recent() {
        let page = 0x7f00_0000_0000;
        let mut b = block(page, 4);
        b.batch_end = 0x1000 + 8 * RECORD_BYTES as u64;
        // Five pages of one structure, whose lines at the same offset share entry 0.
        let line = |i: u64| page + i * 4096;
        for i in 0..5 {
            b.whole[layout::whole_slot(line(i))] = WholeLines {
                lo: page,
                hi: page + 5 * 4096,
                structure: 7,
            };
        }
        let regs = Registers::loaded(b.tag_word);
        for i in 0..4 {
            assert_eq!(site(&mut b, regs, READ8, line(i), CODE), Path::Batched);
        }
        // Each of the four is in a slot of its own; the first took the least recent.
        let e = b.entries[0];
        let tags: Vec<u64> = (0..4).map(|i| (line(i) + 63) | b.tag_word).collect();
        assert_eq!(e.read_tag, [tags[3], tags[2], tags[1], tags[0]]);
        assert_eq!(order::by_recency(e.order), [0, 1, 2, 3]);
        // Hits on lines 1, 0 and 0 again, in turn: counted in their slots, 0 then 1 the most
        // recent.
        for i in [1, 0, 0] {
            assert_eq!(site(&mut b, regs, READ8, line(i) + 8, CODE), Path::Hit);
        }
        let e = b.entries[0];
        assert_eq!(e.read_hits, [0, 0, 1, 2]);
        assert_eq!(order::by_recency(e.order), [3, 2, 0, 1]);
        // The fifth line takes the least recent line's slot (line 2's, slot 1) and records the
        // order before it.
        let at = b.batch_pos;
        assert_eq!(site(&mut b, regs, READ8, line(4), CODE), Path::Batched);
        let record = b.records[&at];
        assert_eq!(record[RECORD_OLD_TAG], tags[2]);
        assert_eq!(
            record[RECORD_STRUCTURE],
            7 | u64::from(e.order) << RECORD_ORDER_SHIFT
        );
        assert_eq!(order::by_recency(b.entries[0].order), [1, 3, 2, 0]);
        // Line 3 is next (slot 0).
        let at = b.batch_pos;
        assert_eq!(
            site(&mut b, regs, WRITE4, line(5), CODE),
            Path::Slow(Slow::NotWhole)
        );
        b.whole[layout::whole_slot(line(5))] = WholeLines {
            lo: page,
            hi: page + 6 * 4096,
            structure: 7,
        };
        assert_eq!(site(&mut b, regs, WRITE4, line(5), CODE), Path::Batched);
        let record = b.records[&at];
        assert_eq!(record[RECORD_OLD_TAG], tags[3]);
        assert_eq!(b.entries[0].write_tag[0], (line(5) + 3) | b.tag_word);
    }
}
