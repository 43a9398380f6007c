//! The standalone mode's repeat-hit filter: a per-thread table that answers, before the
//! simulator is reached, most accesses of a kernel that walks its arrays line by line.
//!
//! One entry per L1 set (sets beyond the table share entries by their low bits) holds, in up to
//! four slots, the blocks its set's most recent accesses touched (as many as the shape allows,
//! `usable`), whether a write to each was simulated since, and their order of recency in one
//! byte (`epcache_inline::order`). An access within one line whose block is in a slot (and,
//! for a write, whose slot says written) is a hit on one of the set's most recent lines: under
//! the shapes [`epcache_sim::simulator::capture_path::CaptureFastPath::repeat_hit_shape`]
//! admits, simulating it would change nothing but L1's hit count and the order of those
//! lines. Such an access only increments its slot's read or write count and makes the slot
//! the most recent; the count is added to the thread's counts (and the slot's data
//! structure's) when the slot changes hands and before anyone reads the counts: at region
//! boundaries, when data structures change, when the thread's capture is dropped. Every other
//! access goes through the simulator and then takes its entry's least recent slot over. Before
//! the simulator next uses the set, the simulating side makes the slots' lines the most recent
//! in the entry's order (`Counting::sync_order`, or a record's order byte on the batch's path),
//! so its LRU state is what simulating every hit would have left. Why four: a stencil's rows and
//! a triad's arrays lie a multiple of the set span apart and take turns in one set, which an
//! entry of one line cannot hold (docs/performance.md, the filter model).
//!
//! `epcache cc` writes the same test inline into instrumented code (the sequence, the layout of the
//! words it reads and its model are `epcache-inline`'s; `thread_block.rs` names the words). Inline,
//! a write to a block whose slot is clean is answered too: the slot is marked written and *dirty
//! pending*, and the write counted as a hit, because simulating it would only have set the line's
//! dirty bit (the dirty mark moves no line in its set's order). The bit matters only when the line is evicted, which only a simulated access to the
//! same set can do, so the runtime settles a pending entry (marks the line dirty in the simulator,
//! `Simulator::mark_l1_dirty`) before it simulates an access whose block maps to that entry (a
//! block's set and its entry share low bits, so an access that could evict the line always maps to
//! its entry) and before an entry is emptied.
//!
//! Inline too, an access the entry does not answer takes its least recent slot over at once,
//! when its line is whole (all its bytes in one data structure, by the whole-line cache kept
//! here) and the thread's batch has room: the old owner's tag, hits and dirty mark, and the
//! entry's order before the access, go into a [`Record`] appended to the batch, and the
//! runtime simulates the batch, in order, before it next touches the simulator or the counts
//! (`Counting::drain_batch`), or hands it to the simulation worker to simulate meanwhile
//! (`worker.rs`). Which block owns a slot is thus decided ahead of the simulator, as the
//! filter's answer needs only the order of accesses; the slot's data structure, which the
//! simulating side keeps (`counting.rs`), follows when the record is simulated.
//!
//! A tag carries the process-wide key of `tag_key.rs` (and the table's offset mask, the same
//! for every thread), so that a switch (a new key) makes every entry stop matching until its
//! thread syncs. The inline test reads nothing of its thread's own but the table: a table
//! holds tags with the current key only while its thread captures (capture switched off is a
//! switch, and a table switched off is emptied first), except a forked child's copy, which
//! may count hits nothing reads (the child is not monitored). While the runtime works on its
//! thread, a signal handler's accesses to lines the table owns are counted inline too; the
//! runtime empties an entry's tags before its counts, so a handler's hit is never left behind
//! in an entry being emptied (at worst it is counted for the entry's next owner).
//!
//! The answer depends only on the order of accesses, not on the simulator: if the block is in a
//! slot, fewer accesses than the entry has slots touched other blocks of its set since it was
//! last used (each would have taken a slot, and the least recent goes first), so under LRU it
//! is still in L1. A shared entry only sees fewer repeats.
//!
//! The table is off (no tag matches) unless the thread counts every access in standalone mode,
//! no event counts L1 hits and no analysis runs; see `ThreadCapture::refresh_filter`.

use std::cell::Cell;
use std::mem::ManuallyDrop;

use epcache_inline::layout::{self, SLOTS};
use epcache_inline::order::{self, TABLES_BYTES};

use super::tag_key;

/// Entry slots: every offset the tag word's mask can select (`epcache_inline::layout`), which
/// covers every L1 of 256 sets or fewer, with 32-byte lines, one set per entry; longer lines
/// space the entries out (see [`Filter::word`]), so fewer fit (128 with 64-byte lines).
pub(super) const ENTRIES: usize = layout::TABLE_ENTRIES;
/// The shortest L1 line the table takes: the inline test finds an entry's byte offset as the
/// address itself masked, `(addr >> line_bits) << line_bits`, scaled by 2 in its addressing
/// mode, a whole entry per line only for lines at least half as long as an entry.
pub(super) const SHORTEST_LINE_BITS: u32 = layout::SHORTEST_LINE_BITS;
/// Records a batch holds when the filter switches on: a thread that simulates its own batch
/// does so this often, while the records are still in L1. A thread that hands its batches to
/// the simulation worker installs larger ones (`thread_capture.rs`).
const BATCH_RECORDS: usize = 256;
/// Words per record, see [`Record`].
const RECORD_WORDS: usize = layout::RECORD_WORDS;
/// Bytes per record.
const RECORD_BYTES: u64 = layout::RECORD_BYTES as u64;
/// The whole-line cache's slots, direct-mapped by 4 KiB page.
const LINE_SLOTS: usize = layout::WHOLE_SLOTS;

/// A record's structure (the structure word's low 32 bits) for an access to a line that is not
/// whole (no structure index + 1 is this large).
const NOT_WHOLE: u32 = u32::MAX;

/// A [`Record`] as the miss path writes it.
pub(super) type RecordWords = [u64; RECORD_WORDS];

/// A batch's memory: records of [`RECORD_WORDS`] words each, written by the inline miss path
/// through its address (`Filter::batch_pos`), and by the runtime through the Cells. It moves
/// whole to the simulation worker when full, so the records are never copied. Whole records
/// as arrays, so reading one needs no per-word bounds check (as chunks of a flat slice, about
/// 14 instructions more per record on the worker).
pub(super) type BatchWords = Box<[RecordCells]>;

/// Whole-line misses remembered for their strides ([`Filter::remember_whole_lines`]) ...
const WHOLE_MISSES: usize = 4;
/// ... the steps ahead whose pages get a miss's range too ...
const WHOLE_STEPS_AHEAD: u64 = 7;
/// ... and the strides, in pages, that do so: from two (a stride of one page meets each page
/// for many accesses) to this.
const WHOLE_LONGEST_STRIDE: u64 = 8;

/// One record's words in a batch.
pub(super) type RecordCells = [Cell<u64>; RECORD_WORDS];

/// An empty batch with room for `records` records.
pub(super) fn new_batch(records: usize) -> BatchWords {
    (0..records)
        .map(|_| std::array::from_fn(|_| Cell::new(0)))
        .collect()
}

/// The first `filled` records of `batch`, in order, undecoded.
pub(super) fn records_of(batch: &[RecordCells], filled: usize) -> Records<'_> {
    Records {
        cells: batch[..filled.min(batch.len())].iter(),
    }
}

/// The records of a batch, in order, undecoded ([`records_of`]). A type of its own, passed
/// as itself rather than as a `dyn Iterator`, so its `next` is inlined into the simulator's
/// step loop, which takes one record per step: a call per record copied it through memory.
pub(super) struct Records<'a> {
    cells: std::slice::Iter<'a, RecordCells>,
}

impl Iterator for Records<'_> {
    type Item = RecordWords;

    #[inline(always)]
    fn next(&mut self) -> Option<RecordWords> {
        self.cells
            .next()
            .map(|cells| cells.each_ref().map(Cell::get))
    }
}

/// One thread's table, kept in the thread-local block the access hooks read (`hook_block.rs`), as
/// Cells, so a hook reaches it from the one thread-local address it computes, with no borrow
/// flag. Each entry is one 64-byte struct ([`Entry`]), so one offset reaches an entry's tag
/// and counts alike, in one host line.
///
/// A block's *tag* is the address of its line's last byte with the thread's key on top
/// (`addr | tag_bits`, see `tag_key.rs`). An empty entry holds tag 0, as the thread-local
/// block starts: no access can have it, as no key is 0.
pub(super) struct Filter {
    /// L1's line size less one, with the key the thread holds on top (0 while off): an
    /// address with these bits set is its tag.
    tag_bits: Cell<u64>,
    /// log2 of L1's line size.
    line_bits: Cell<u32>,
    /// `line_bits - SHORTEST_LINE_BITS`: entry `e`'s words are at index `e << spread`.
    spread: Cell<u32>,
    /// Entries in use less one (a power of two less one).
    entry_mask: Cell<u32>,
    /// The `tag_key` slot holding this thread's key, plus one (0 while off).
    key_slot: Cell<u8>,
    /// The entries, one per slot (see [`Filter::word`]).
    entries: [Entry; ENTRIES],
    /// The order tables for the slots in use (`epcache_inline::order`), as the inline
    /// sequence reads them.
    order_tables: [Cell<u8>; TABLES_BYTES],
    /// Slots of each entry in use: at most L1's ways, 1 unless L1 replaces by LRU (0 while
    /// off).
    usable: Cell<u8>,
    /// The address where the inline miss path writes its next record, in `batch`.
    batch_pos: Cell<u64>,
    /// The address of the end of `batch`'s room: 0 while off (and `batch_pos` too), so the
    /// miss path never appends then.
    batch_end: Cell<u64>,
    /// The address of `batch`'s first record (0 while off).
    batch_start: Cell<u64>,
    /// Accesses the inline miss path took entries over for, in order, waiting to be simulated
    /// (`None` while off). `batch_pos` and `batch_end` point into it whenever the thread may
    /// run instrumented code with the miss path open (its synced word is the tag word):
    /// anything that replaces or drops it runs inside the runtime, where the path is closed,
    /// except for a miss path a signal handler interrupted, which `in_miss` covers. Freed by
    /// [`Self::switch_off`], never by a destructor: the thread block has none (a
    /// `thread_local!` block, off x86_64, would otherwise be destroyed before the runtime's
    /// own thread-end handler runs).
    batch: Cell<ManuallyDrop<Option<BatchWords>>>,
    /// Miss paths of this thread between loading `batch_pos` and storing it back: above 0
    /// only in a signal handler that interrupted one. That path then still writes its record
    /// at the address it loaded and stores that address plus one record as `batch_pos`, so
    /// while it is above 0 the batch stays the table's, allocated, where it is:
    /// [`Self::replace_batch`] declines to hand it to the worker, and switching the table off
    /// only takes its room away (`install_batch`). (A count, not a flag, so the handler's own
    /// miss paths leave it as they found it. The records themselves may then be miscounted:
    /// a drain in the handler empties the batch the resumed path appends after.)
    in_miss: Cell<u8>,
    /// Whole lines of one data structure (or of none), by page: addresses in
    /// `whole_lo[s]..whole_hi[s]` lie in lines whose bytes all have the answer
    /// `whole_structure[s]` (index + 1, 0 for none), so an access in one of them may own an
    /// entry. All zero (no address in range) while off.
    whole_lo: [Cell<u64>; LINE_SLOTS],
    whole_hi: [Cell<u64>; LINE_SLOTS],
    whole_structure: [Cell<u32>; LINE_SLOTS],
    /// The last few whole-line misses, `(page, structure, stride in pages or 0)`, the latest
    /// first: a structure's stride across pages, for [`Filter::remember_whole_lines`].
    whole_misses: [Cell<(u64, u32, i64)>; WHOLE_MISSES],
    /// Whether the table is on.
    on: Cell<bool>,
}

/// One entry of the table: its L1 set's most recently used lines, up to [`SLOTS`], each in a
/// slot with its tag and counts, and their order of recency. The words lie as
/// `epcache_inline::layout` says: the read tags and the order byte in the entry's first host
/// line, the hit counts in the second, what only writes read in the third, so that a read's
/// test and count touch two lines. An entry's offset is the address masked, with no shift;
/// arrays by field would need the address shifted for every offset, an instruction per access.
#[repr(C, align(64))]
struct Entry {
    /// The tag of the block owning each slot, or 0.
    read_tag: [Cell<u64>; SLOTS],
    /// The slots by recency (`epcache_inline::order`), XORed with the identity.
    order: Cell<u8>,
    _first_line: [u8; 64 - SLOTS * 8 - 1],
    /// Repeat hits not yet counted, by slot.
    read_hits: [Cell<u64>; SLOTS],
    write_hits: [Cell<u64>; SLOTS],
    /// The slot's tag when its block was written since it took the slot over (a write only
    /// matches then), else 0.
    write_tag: [Cell<u64>; SLOTS],
    /// `epcache_inline::layout::DIRTY_MARK` (the record's dirty bit) when the inline test
    /// counted a write to the slot's block while the slot was clean: the simulator has yet to
    /// mark the line dirty.
    dirty_pending: [Cell<u64>; SLOTS],
    _last_line: [u8; 64],
}

impl Entry {
    const fn new() -> Entry {
        Entry {
            read_tag: [const { Cell::new(0) }; SLOTS],
            order: Cell::new(0),
            _first_line: [0; 64 - SLOTS * 8 - 1],
            read_hits: [const { Cell::new(0) }; SLOTS],
            write_hits: [const { Cell::new(0) }; SLOTS],
            write_tag: [const { Cell::new(0) }; SLOTS],
            dirty_pending: [const { Cell::new(0) }; SLOTS],
            _last_line: [0; 64],
        }
    }

    /// Every word of the entry's slots.
    fn words(&self) -> impl Iterator<Item = &Cell<u64>> {
        self.read_tag
            .iter()
            .chain(&self.read_hits)
            .chain(&self.write_hits)
            .chain(&self.write_tag)
            .chain(&self.dirty_pending)
    }

    /// Whether the entry owns no block, holds nothing pending and has the identity order.
    fn is_free(&self) -> bool {
        self.words().all(|w| w.get() == 0) && self.order.get() == 0
    }

    /// Empties everything, counts, marks and order included.
    fn clear_all(&self) {
        for word in self.words() {
            word.set(0);
        }
        self.order.set(0);
    }

    /// The slot whose tag in `tags` is `tag`, if any (the first, as the inline test compares
    /// them in order).
    #[inline(always)]
    fn slot_of(tags: &[Cell<u64>; SLOTS], tag: u64) -> Option<usize> {
        tags.iter().position(|t| t.get() == tag)
    }
}

/// Bytes per entry.
const ENTRY_BYTES: usize = layout::ENTRY_BYTES;

/// An access the inline miss path took a slot over for, not yet simulated: a one-line access
/// within a whole line (`Filter::whole_line`) that missed the filter. The slot's previous
/// owner's hits and dirty mark moved into it, so they are counted and settled in order, and
/// the entry's order before it, so the order of the hits since is applied first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Record {
    pub(super) addr: u64,
    pub(super) size: u32,
    pub(super) write: bool,
    /// The previous owner's tag, without its key (0 for none) ...
    pub(super) old_tag: u64,
    /// ... its line's pending dirty mark ...
    pub(super) old_dirty: bool,
    /// ... and its uncounted hits, `(reads, writes)`.
    pub(super) old_hits: (u64, u64),
    /// The access's line's data structure (index + 1, 0 for none), from the whole-line
    /// cache: the answer of the data structures the thread attributes with until its next
    /// sync point, which the simulating side's finder holds too. `None` for an access to a
    /// line that is not whole (`Filter::stage_unowned`), which leaves its slot empty and is
    /// counted for its first byte's structure.
    pub(super) structure: Option<u32>,
    /// The entry's order byte before the access (`epcache_inline::order`).
    pub(super) order: u8,
    /// The access's code address: where its site's hook call returns to (0: unknown), so its
    /// misses count for its source line (`line_table.rs`).
    pub(super) code: u64,
}

impl Record {
    /// The record's first word holds the address below this bit, the access in its top byte:
    /// its size, whether it writes and the old owner's dirty mark (`epcache_inline::layout`).
    const META_SHIFT: u32 = layout::META_SHIFT;

    /// The meta byte of an access, without the dirty mark (which only the miss path knows).
    const fn meta(size: u32, write: bool) -> u8 {
        layout::meta(size, write)
    }

    pub(super) fn decode(words: RecordWords) -> Record {
        let first = words[layout::RECORD_ADDRESS];
        let meta = (first >> Self::META_SHIFT) as u8;
        Record {
            addr: first & ((1 << Self::META_SHIFT) - 1),
            size: u32::from(meta & layout::META_SIZE_MASK),
            write: meta >> layout::META_WRITE_SHIFT & 1 == 1,
            old_tag: words[layout::RECORD_OLD_TAG] & tag_key::ADDRESS_MASK,
            old_dirty: meta >> layout::META_DIRTY_SHIFT & 1 == 1,
            old_hits: (
                words[layout::RECORD_OLD_READ_HITS],
                words[layout::RECORD_OLD_WRITE_HITS],
            ),
            structure: Some(words[layout::RECORD_STRUCTURE] as u32).filter(|&s| s != NOT_WHOLE),
            order: (words[layout::RECORD_STRUCTURE] >> layout::RECORD_ORDER_SHIFT) as u8,
            code: words[layout::RECORD_CODE_ADDRESS],
        }
    }
}

// The inline test `epcache cc` writes into instrumented code (`epcache_inline::emit`) computes
// an entry's offset as `Filter::offset` does and reads the entry's words at that offset; its
// miss path writes records at the address `batch_pos` holds while below `batch_end`, and picks
// a whole-line slot by `epcache_inline::layout::whole_slot`. The table is laid out as
// `epcache_inline::layout` says (the words' types, checked by
// `tests::the_table_is_laid_out_as_the_inline_sequence_reads_it`).
const _: () = {
    assert!(std::mem::size_of::<Entry>() == ENTRY_BYTES);
    assert!(std::mem::offset_of!(Entry, read_tag) == layout::ENTRY_READ_TAG);
    assert!(std::mem::offset_of!(Entry, order) == layout::ENTRY_ORDER);
    assert!(std::mem::offset_of!(Entry, write_tag) == layout::ENTRY_WRITE_TAG);
    assert!(std::mem::offset_of!(Entry, read_hits) == layout::ENTRY_READ_HITS);
    assert!(std::mem::offset_of!(Entry, write_hits) == layout::ENTRY_WRITE_HITS);
    assert!(std::mem::offset_of!(Entry, dirty_pending) == layout::ENTRY_DIRTY_PENDING);
    assert!(std::mem::size_of::<Cell<u64>>() == layout::SLOT_STRIDE);
    assert!(std::mem::size_of::<RecordCells>() == layout::RECORD_BYTES);
    // `append_record` writes the words in the record's order.
    assert!(
        layout::RECORD_ADDRESS == 0
            && layout::RECORD_OLD_TAG == 1
            && layout::RECORD_OLD_READ_HITS == 2
            && layout::RECORD_OLD_WRITE_HITS == 3
            && layout::RECORD_STRUCTURE == 4
            && layout::RECORD_CODE_ADDRESS == 5
    );
};

/// Repeat hits handed back to be counted: `(slot, reads, writes)`, the slot numbered across
/// the table (`entry * SLOTS + slot`); the simulating side keeps each slot's data structure
/// (`Counting`, `counting.rs`), since it is known only once the access that took the slot over
/// is simulated.
pub(super) type Pending = (u32, u64, u64);

impl Filter {
    /// Offsets the inline repeat-hit test reads (`epcache_inline::emit`): each field of entry 0
    /// (the offset mask is in the tag word, `tag_key.rs`).
    pub(super) const READ_TAGS_OFFSET: usize =
        Self::ENTRIES_OFFSET + std::mem::offset_of!(Entry, read_tag);
    pub(super) const WRITE_TAGS_OFFSET: usize =
        Self::ENTRIES_OFFSET + std::mem::offset_of!(Entry, write_tag);
    pub(super) const READ_HITS_OFFSET: usize =
        Self::ENTRIES_OFFSET + std::mem::offset_of!(Entry, read_hits);
    pub(super) const WRITE_HITS_OFFSET: usize =
        Self::ENTRIES_OFFSET + std::mem::offset_of!(Entry, write_hits);
    pub(super) const DIRTY_PENDING_OFFSET: usize =
        Self::ENTRIES_OFFSET + std::mem::offset_of!(Entry, dirty_pending);
    pub(super) const ORDER_OFFSET: usize =
        Self::ENTRIES_OFFSET + std::mem::offset_of!(Entry, order);
    pub(super) const ORDER_TABLES_OFFSET: usize = std::mem::offset_of!(Filter, order_tables);
    const ENTRIES_OFFSET: usize = std::mem::offset_of!(Filter, entries);
    pub(super) const BATCH_POS_OFFSET: usize = std::mem::offset_of!(Filter, batch_pos);
    pub(super) const BATCH_END_OFFSET: usize = std::mem::offset_of!(Filter, batch_end);
    pub(super) const IN_MISS_OFFSET: usize = std::mem::offset_of!(Filter, in_miss);
    pub(super) const WHOLE_LO_OFFSET: usize = std::mem::offset_of!(Filter, whole_lo);
    pub(super) const WHOLE_HI_OFFSET: usize = std::mem::offset_of!(Filter, whole_hi);
    pub(super) const WHOLE_STRUCTURE_OFFSET: usize = std::mem::offset_of!(Filter, whole_structure);

    /// An empty table, off.
    pub(super) const fn new() -> Filter {
        Filter {
            // Zero (as the thread-local block starts) until switched on: with every tag 0
            // nothing matches.
            tag_bits: Cell::new(0),
            line_bits: Cell::new(0),
            spread: Cell::new(0),
            entry_mask: Cell::new(0),
            key_slot: Cell::new(0),
            entries: [const { Entry::new() }; ENTRIES],
            order_tables: [const { Cell::new(0) }; TABLES_BYTES],
            usable: Cell::new(0),
            batch_pos: Cell::new(0),
            batch_end: Cell::new(0),
            batch_start: Cell::new(0),
            batch: Cell::new(ManuallyDrop::new(None)),
            in_miss: Cell::new(0),
            whole_lo: [const { Cell::new(0) }; LINE_SLOTS],
            whole_hi: [const { Cell::new(0) }; LINE_SLOTS],
            whole_structure: [const { Cell::new(0) }; LINE_SLOTS],
            whole_misses: [const { Cell::new((0, 0, 0)) }; WHOLE_MISSES],
            on: Cell::new(false),
        }
    }

    /// Whether the table is as [`Self::new`] makes it: off, every entry free.
    #[cfg(test)]
    pub(super) fn is_empty(&self) -> bool {
        !self.on.get()
            && self.tag_bits.get() == 0
            && self.line_bits.get() == 0
            && self.spread.get() == 0
            && self.entry_mask.get() == 0
            && self.key_slot.get() == 0
            && self.entries.iter().all(Entry::is_free)
            && self.usable.get() == 0
            && self.batch_pos.get() == 0
            && self.batch_end.get() == 0
            && self.batch_start.get() == 0
            && !self.has_batch()
            && self.in_miss.get() == 0
            && (0..LINE_SLOTS).all(|s| {
                self.whole_lo[s].get() == 0
                    && self.whole_hi[s].get() == 0
                    && self.whole_structure[s].get() == 0
            })
    }

    /// Entries in use.
    fn used(&self) -> usize {
        self.entry_mask.get() as usize + 1
    }

    /// The index of `addr`'s entry.
    #[inline(always)]
    fn index(&self, addr: u64) -> usize {
        (addr >> (self.line_bits.get() & 63)) as usize & self.entry_mask.get() as usize
    }

    /// The slot of entry `e`: entries of lines longer than the shortest are spread out, one per
    /// `line >> SHORTEST_LINE_BITS` slots.
    #[inline(always)]
    fn word(&self, e: usize) -> usize {
        (e << (self.spread.get() & 31)) % ENTRIES
    }

    /// The byte offset of `addr`'s entry in the table, as the inline test computes it from
    /// the tag word (whose key and mask the thread's `tag_bits` hold).
    #[cfg(test)]
    fn offset(&self, addr: u64) -> usize {
        let mask = tag_key::offset_mask_of(self.tag_bits.get());
        epcache_inline::tag_word::entry_offset(addr, mask) as usize
    }

    /// The first address of `block`.
    #[inline(always)]
    fn address(&self, block: u64) -> u64 {
        block << (self.line_bits.get() & 63)
    }

    /// The tag of the line holding `addr`.
    #[inline(always)]
    fn tag(&self, addr: u64) -> u64 {
        addr | self.tag_bits.get()
    }

    /// The block of the slot tag `tag` (a tag's address bits shifted down by the line bits).
    #[inline(always)]
    fn block_of(&self, tag: u64) -> u64 {
        (tag & tag_key::ADDRESS_MASK) >> (self.line_bits.get() & 63)
    }

    /// Hands the pending dirty marks of entry `i`'s slots to `mark`, as the blocks to mark
    /// dirty.
    #[inline(always)]
    fn settle_entry(&self, i: usize, mut mark: impl FnMut(u64)) {
        let e = &self.entries[self.word(i)];
        for s in 0..SLOTS {
            if e.dirty_pending[s].replace(0) != 0 {
                mark(self.block_of(e.read_tag[s].get()));
            }
        }
    }

    /// Hands the pending hits of entry `i`'s slots to `take`.
    #[inline(always)]
    fn drain_entry(&self, i: usize, mut take: impl FnMut(Pending)) {
        let e = &self.entries[self.word(i)];
        for s in 0..SLOTS {
            self.drain_slot(i, e, s, &mut take);
        }
    }

    /// Hands the pending hits of slot `s` of entry `i` (`e`) to `take`.
    #[inline(always)]
    fn drain_slot(&self, i: usize, e: &Entry, s: usize, take: impl FnOnce(Pending)) {
        let (reads, writes) = (e.read_hits[s].replace(0), e.write_hits[s].replace(0));
        if reads | writes != 0 {
            take(((i * SLOTS + s) as u32, reads, writes));
        }
    }

    /// Empties entry `i`'s tags, and its order goes back to the identity.
    #[inline(always)]
    fn clear_entry(&self, i: usize) {
        let e = &self.entries[self.word(i)];
        for s in 0..SLOTS {
            e.read_tag[s].set(0);
            e.write_tag[s].set(0);
        }
        e.order.set(0);
    }

    /// The order byte after a use of slot `slot` in the order `before`.
    #[inline(always)]
    fn after_hit(&self, slot: usize, before: u8) -> u8 {
        self.order_tables[order::AFTER_HIT + slot * order::TABLE_BYTES + usize::from(before)].get()
    }

    /// The slot a miss takes in the order `before`, and the order after.
    #[inline(always)]
    fn miss_in(&self, before: u8) -> (usize, u8) {
        let b = usize::from(before);
        (
            usize::from(self.order_tables[order::VICTIM + b].get()) % SLOTS,
            self.order_tables[order::AFTER_MISS + b].get(),
        )
    }

    /// Entry `i`'s order byte now: the order the hits since the last access the runtime
    /// simulated for it left.
    #[inline(always)]
    pub(super) fn order_of(&self, i: usize) -> u8 {
        self.entries[self.word(i)].order.get()
    }

    /// Counts the access as a repeat hit if it is one; `false` means it must be simulated.
    #[inline(always)]
    pub(super) fn repeat_hit(&self, addr: u64, size: u32, write: bool) -> bool {
        let tag = self.tag(addr);
        let e = &self.entries[self.word(self.index(addr))];
        // A read matches a clean or written slot, a write only a written one.
        let tags = if write { &e.write_tag } else { &e.read_tag };
        // Its last byte in the same line (a size of 0 counts as 1). The zero check keeps an
        // explicit access to address 0 from matching an empty slot while the table is off.
        let last = addr.wrapping_add(u64::from(size.max(1)) - 1);
        if self.tag(last) != tag || tag == 0 {
            return false;
        }
        let Some(slot) = Entry::slot_of(tags, tag) else {
            return false;
        };
        let count = if write {
            &e.write_hits[slot]
        } else {
            &e.read_hits[slot]
        };
        count.set(count.get() + 1);
        e.order.set(self.after_hit(slot, e.order.get()));
        true
    }

    /// What the inline test `epcache cc` writes into instrumented code does, once the thread
    /// is known to capture, by its model (`epcache_inline::model::hit_test`, run over this
    /// table with the thread's word): a repeat hit as [`Self::repeat_hit`] counts it, and
    /// also a write within one line to a block that owns its entry clean, which marks the
    /// entry written and dirty pending. `false` for a size no hook reports.
    #[cfg(test)]
    pub(super) fn inline_hit(&self, addr: u64, size: u32, write: bool) -> bool {
        use epcache_inline::{emit, model};
        // Only the fixed-size hooks get a site (`emit::hooked_access`).
        if !emit::HOOK_SIZES.contains(&size) {
            return false;
        }
        let word = self.tag_bits.get();
        let access = emit::Access { size, write };
        let regs = model::Registers::loaded(word);
        model::hit_test(&mut self.inline_view(word), regs, access, addr).is_some()
    }

    /// The table as the inline sequence's model reads and writes it, for a thread that
    /// captures with the tag word `word` and has nothing to sync.
    #[cfg(test)]
    pub(super) fn inline_view(&self, word: u64) -> InlineView<'_> {
        InlineView { filter: self, word }
    }

    /// Whether the slot of `addr`'s block has a dirty mark pending.
    #[cfg(test)]
    pub(super) fn dirty_pending(&self, addr: u64) -> bool {
        let e = &self.entries[self.word(self.index(addr))];
        Entry::slot_of(&e.read_tag, self.tag(addr)).is_some_and(|s| e.dirty_pending[s].get() != 0)
    }

    /// A write within one line to a block that owns its slot clean: it hits one of the set's
    /// most recent lines, and simulating it only marks that line dirty and makes it the most
    /// recent. The slot is marked written and made the entry's most recent, and returned;
    /// `None` for any other access.
    #[inline(always)]
    pub(super) fn clean_write(&self, addr: u64, size: u32) -> Option<usize> {
        let tag = self.tag(addr);
        let e = &self.entries[self.word(self.index(addr))];
        let last = addr.wrapping_add(u64::from(size.max(1)) - 1);
        if self.tag(last) != tag || tag == 0 {
            return None;
        }
        let slot = Entry::slot_of(&e.read_tag, tag)?;
        e.write_tag[slot].set(tag);
        e.order.set(self.after_hit(slot, e.order.get()));
        Some(slot)
    }

    /// What the inline miss path `epcache cc` writes into instrumented code does, after its
    /// hit test failed for a one-line access of a thread that captures: if the line is whole
    /// (`whole_line`) and the batch has room, the entry is taken over for the access (its old
    /// owner's tag, hits and dirty mark moved into a record appended to the batch) and `true`
    /// returned; the access is simulated when the runtime drains the batch. The runtime does the
    /// same for a one-line access that reaches it (`ThreadCapture::stage`). `code` is the
    /// access's code address (0: unknown).
    pub(super) fn inline_miss(&self, addr: u64, size: u32, write: bool, code: u64) -> bool {
        let one_line = self.tag(addr + u64::from(size.max(1)) - 1) == self.tag(addr);
        match self.whole_line(addr).filter(|_| one_line) {
            Some(structure) => self.append_record(addr, size, write, Some(structure), code),
            None => false,
        }
    }

    /// What the runtime does with a one-line access that reaches it (`ThreadCapture::stage`)
    /// whose line is not whole (it holds bytes of two data structures), which the
    /// inline miss path leaves to it: as the simulator would have after simulating it, the
    /// entry is emptied, and its old owner's tag, hits and dirty mark go into a record
    /// appended to the batch (with [`NOT_WHOLE`] for the structure). `false` when the access
    /// straddles lines or the batch is full.
    pub(super) fn stage_unowned(&self, addr: u64, size: u32, write: bool, code: u64) -> bool {
        let one_line = self.tag(addr + u64::from(size.max(1)) - 1) == self.tag(addr);
        one_line && self.on.get() && self.append_record(addr, size, write, None, code)
    }

    /// Appends the record of a one-line access to the batch if it has room, moving the old
    /// owner of the slot it takes (its entry's least recent) into it with its hits and dirty
    /// mark, and the entry's order before it: the access's block then owns the slot when its
    /// line is whole (`structure` is its data structure, index + 1), and nothing does when it
    /// is not (`None`). `code` is the access's code address.
    fn append_record(
        &self,
        addr: u64,
        size: u32,
        write: bool,
        structure: Option<u32>,
        code: u64,
    ) -> bool {
        let pos = self.batch_pos.get();
        if pos >= self.batch_end.get() {
            return false;
        }
        let filled = self.filled();
        let Some(batch) = self.take_batch_box() else {
            return false;
        };
        let Some(record) = batch.get(filled) else {
            self.put_batch_box(Some(batch));
            return false;
        };
        let tag = self.tag(addr);
        let owner = if structure.is_some() { tag } else { 0 };
        let e = &self.entries[self.word(self.index(addr))];
        let before = e.order.get();
        let (slot, after) = self.miss_in(before);
        let dirty = e.dirty_pending[slot].replace(0) != 0;
        let meta = Record::meta(size, write) | u8::from(dirty) << layout::META_DIRTY_SHIFT;
        let words = [
            addr | u64::from(meta) << Record::META_SHIFT,
            e.read_tag[slot].replace(owner),
            e.read_hits[slot].replace(0),
            e.write_hits[slot].replace(0),
            u64::from(structure.unwrap_or(NOT_WHOLE))
                | u64::from(before) << layout::RECORD_ORDER_SHIFT,
            code,
        ];
        e.write_tag[slot].set(if write { owner } else { 0 });
        e.order.set(after);
        for (cell, w) in record.iter().zip(words) {
            cell.set(w);
        }
        self.put_batch_box(Some(batch));
        self.batch_pos.set(pos + RECORD_BYTES);
        true
    }

    /// The batch, taken out of its cell (which holds `None` until [`Self::put_batch_box`]).
    fn take_batch_box(&self) -> Option<BatchWords> {
        ManuallyDrop::into_inner(self.batch.replace(ManuallyDrop::new(None)))
    }

    /// Puts `batch` in the cell [`Self::take_batch_box`] emptied.
    fn put_batch_box(&self, batch: Option<BatchWords>) {
        let previous = self.batch.replace(ManuallyDrop::new(batch));
        debug_assert!(previous.is_none(), "a batch put over another");
    }

    /// Records in the batch.
    #[inline(always)]
    fn filled(&self) -> usize {
        (self.batch_pos.get().saturating_sub(self.batch_start.get()) / RECORD_BYTES) as usize
    }

    /// Records waiting in the batch.
    pub(super) fn batch_len(&self) -> usize {
        self.filled()
    }

    /// Whether records wait in the batch.
    #[inline(always)]
    pub(super) fn batch_waiting(&self) -> bool {
        self.batch_pos.get() != self.batch_start.get()
    }

    /// Whether the batch has no room for another record (a table that is off has none).
    pub(super) fn batch_full(&self) -> bool {
        self.batch_pos.get() >= self.batch_end.get()
    }

    /// Whether the table holds a batch (it does while on).
    #[cfg(test)]
    fn has_batch(&self) -> bool {
        let batch = self.take_batch_box();
        let has = batch.is_some();
        self.put_batch_box(batch);
        has
    }

    /// Runs `simulate` on the records in the batch, in order, undecoded, then empties it.
    pub(super) fn drain_batch_with<R>(&self, simulate: impl FnOnce(&mut Records<'_>) -> R) -> R {
        let filled = self.filled();
        let batch = self.take_batch_box();
        let done = simulate(&mut records_of(
            batch.as_deref().unwrap_or_default(),
            filled,
        ));
        self.put_batch_box(batch);
        self.batch_pos.set(self.batch_start.get());
        done
    }

    /// Installs `next` as the batch (a table that is off keeps none, and drops it) and
    /// returns the one it replaces with its record count: the records move whole, so the
    /// thread can hand them to another (`worker.rs`) while the table goes on.
    pub(super) fn replace_batch(&self, next: BatchWords) -> Option<(BatchWords, usize)> {
        if !self.on.get() || self.in_miss_path() {
            return None;
        }
        let filled = self.filled();
        let old = self.take_batch_box();
        self.install_batch(Some(next));
        old.map(|b| (b, filled))
    }

    /// Whether a miss path of this thread was interrupted (by a signal handler now running)
    /// between loading `batch_pos` and storing it back.
    pub(super) fn in_miss_path(&self) -> bool {
        self.in_miss.get() != 0
    }

    /// Makes `batch` the table's, empty, with the miss path's addresses pointing into it (or
    /// at nothing, for `None`), and frees the one it held. Not while a miss path is
    /// interrupted (`in_miss`): the table's batch then stays, emptied, with its room for
    /// `Some` and none for `None`, and `batch` is dropped, as nothing points into it.
    fn install_batch(&self, batch: Option<BatchWords>) {
        let old = self.take_batch_box();
        if self.in_miss_path()
            && let Some(kept) = old
        {
            let end = kept.as_ptr_range().end as u64;
            self.batch_pos.set(self.batch_start.get());
            self.batch_end.set(if batch.is_some() {
                end
            } else {
                self.batch_start.get()
            });
            self.put_batch_box(Some(kept));
            return;
        }
        let (start, end) = batch.as_deref().map_or((0, 0), |b| {
            let range = b.as_ptr_range();
            (range.start as u64, range.end as u64)
        });
        self.batch_start.set(start);
        self.batch_pos.set(start);
        self.batch_end.set(end);
        self.put_batch_box(batch);
        drop(old);
    }

    /// The data structure (index + 1, 0 for none) of the line holding `addr` if the whole-line
    /// cache knows it to be whole.
    #[inline(always)]
    pub(super) fn whole_line(&self, addr: u64) -> Option<u32> {
        let slot = layout::whole_slot(addr);
        (self.whole_lo[slot].get() <= addr && addr < self.whole_hi[slot].get())
            .then(|| self.whole_structure[slot].get())
    }

    /// Remembers, in `addr`'s page's slot, that the lines of `lo..hi` (line-aligned) are whole,
    /// with the answer `structure` (index + 1, 0 for none); called when the whole-line cache
    /// missed at `addr`.
    ///
    /// When the same structure's last miss was a few pages back (a stride of 2 to
    /// [`WHOLE_LONGEST_STRIDE`] pages), or this miss is the step after those its last one
    /// filled, the pages of the next [`WHOLE_STEPS_AHEAD`] steps at that stride get the range
    /// too, as far as it reaches. Why: a sweep along the rows of column-major arrays (ADI's
    /// second sweep) meets a new page at every step, and when it walks several arrays in step
    /// their pages take each other's slots, so most of its steps missed and went to the
    /// runtime. Why only strides: filling the pages after every miss took the slots that a
    /// column sweep's other array was using, which then missed in turn.
    pub(super) fn remember_whole_lines(&self, addr: u64, lo: u64, hi: u64, structure: u32) {
        let remember = |at: u64| {
            let slot = layout::whole_slot(at);
            self.whole_lo[slot].set(lo);
            self.whole_hi[slot].set(hi);
            self.whole_structure[slot].set(structure);
        };
        remember(addr);
        let page = addr >> layout::WHOLE_PAGE_SHIFT;
        // This structure's last miss, kept or the oldest made way for; the latest first.
        let same = self
            .whole_misses
            .iter()
            .position(|m| m.get().1 == structure);
        let last = same.map(|i| self.whole_misses[i].get());
        let gone = same.unwrap_or(WHOLE_MISSES - 1);
        for i in (1..=gone).rev() {
            self.whole_misses[i].set(self.whole_misses[i - 1].get());
        }
        let stride = last.map_or(0, |(last, _, stride)| {
            let moved = page.wrapping_sub(last) as i64;
            // The stride it had, when this miss is the step after those filled ahead ...
            let ahead = WHOLE_STEPS_AHEAD as i64 + 1;
            if stride != 0 && moved % stride == 0 && (1..=ahead).contains(&(moved / stride)) {
                stride
            // ... or the pages since its last miss.
            } else if (2..=WHOLE_LONGEST_STRIDE).contains(&moved.unsigned_abs()) {
                moved
            } else {
                0
            }
        });
        self.whole_misses[0].set((page, structure, stride));
        if stride == 0 {
            return;
        }
        let step = stride << layout::WHOLE_PAGE_SHIFT;
        let mut at = addr;
        for _ in 0..WHOLE_STEPS_AHEAD {
            at = at.wrapping_add_signed(step);
            if at < lo || at >= hi {
                break;
            }
            remember(at);
        }
    }

    /// Forgets every whole line (data structures changed).
    pub(super) fn forget_whole_lines(&self) {
        let words = self.whole_lo.iter().chain(&self.whole_hi);
        for word in words {
            word.set(0);
        }
        for structure in &self.whole_structure {
            structure.set(0);
        }
        for miss in &self.whole_misses {
            miss.set((0, 0, 0));
        }
    }

    /// Whether the table is on.
    pub(super) fn is_on(&self) -> bool {
        self.on.get()
    }

    /// Entries the table uses for an L1 of `1 << line_bits`-byte lines in `sets` sets (a power
    /// of two): one per set, as many as fit; `None` if fewer than two fit (an access straddling
    /// two lines must map them to different entries, see `epcache_inline::emit`: lines of 8 KiB
    /// and longer) or the lines are too short for the inline test's offset (below 32 bytes).
    pub(super) fn entries_for(line_bits: u32, sets: u64) -> Option<usize> {
        let spread = line_bits.checked_sub(SHORTEST_LINE_BITS)?;
        let fit = ENTRIES.checked_shr(spread).unwrap_or(0) as u64;
        let entries = sets.min(fit);
        (entries >= 2 && entries.is_power_of_two()).then_some(entries as usize)
    }

    /// Switches the table on for an L1 of `1 << line_bits`-byte lines in `sets` sets, with
    /// `usable` lines an entry may hold (what
    /// [`epcache_sim::simulator::capture_path::CaptureFastPath::repeat_hit_shape`] admits), keyed with the tag word
    /// `word` the thread last synced to; a no-op when already on. It stays off (and `false` is
    /// returned) when [`Self::entries_for`] declines the shape, when every `tag_key` slot is
    /// taken, or when another thread's filter set another shape in the tag word.
    pub(super) fn switch_on(&self, line_bits: u32, sets: u64, usable: usize, word: u64) -> bool {
        if self.on.get() {
            return true;
        }
        let usable = usable.clamp(1, SLOTS);
        let Some(entries) = Self::entries_for(line_bits, sets) else {
            return false;
        };
        let line_low = (1u64 << line_bits) - 1;
        let offset_mask = ((entries - 1) as u32) << line_bits;
        if !tag_key::set_shape(line_low, offset_mask) {
            return false;
        }
        let Some(slot) = tag_key::acquire(word) else {
            return false;
        };
        // Another shape may have been set between the two. Only a process whose simulators
        // differ in L1 (tests) meets this, and a setter that checked the slots just before
        // this one was taken can still get in after the check (as with line bits before
        // v6), and the table's inline and runtime offsets then disagree. No program meets
        // it: one process simulates one L1.
        if !tag_key::set_shape(line_low, offset_mask) {
            tag_key::release(slot);
            return false;
        }
        debug_assert!(self.entries.iter().all(Entry::is_free));
        self.key_slot.set(slot + 1);
        // The shape just set (`word`, read at the thread's sync, may predate it: the thread
        // then syncs again, see `HookBlock::switch_filter_on`).
        self.tag_bits.set(tag_key::word_of(
            tag_key::key_of(word),
            line_low,
            offset_mask,
        ));
        self.set_shape(line_bits, entries, usable);
        self.install_batch(Some(new_batch(BATCH_RECORDS)));
        self.on.set(true);
        true
    }

    /// Where each entry's words sit for `entries` entries of `1 << line_bits`-byte lines (as
    /// [`Self::entries_for`] gives them), and the order tables for `usable` slots an entry.
    fn set_shape(&self, line_bits: u32, entries: usize, usable: usize) {
        self.line_bits.set(line_bits);
        self.spread.set(line_bits - SHORTEST_LINE_BITS);
        self.entry_mask.set(entries as u32 - 1);
        for (cell, byte) in self
            .order_tables
            .iter()
            .zip(order::OrderTables::new(usable).bytes())
        {
            cell.set(byte);
        }
        self.usable.set(usable as u8);
    }

    /// `entry_mask << line_bits`: `addr & mask` is the byte offset of `addr`'s entry in the
    /// table, as the tag word tells the inline test (`tag_key::word_of`, set by `switch_on`).
    #[cfg(test)]
    fn offset_mask(&self) -> u32 {
        self.entry_mask.get() << (self.line_bits.get() & 31)
    }

    /// The thread synced to the tag word `word`: its slot holds the word's key from now on, and
    /// every tag is made over with it (the caller checks the word again after this, see
    /// `tag_key.rs`).
    pub(super) fn rekey(&self, word: u64) {
        let Some(slot) = self.key_slot.get().checked_sub(1) else {
            return;
        };
        tag_key::hold(slot, word);
        let bits = self.tag_bits.get();
        if tag_key::key_of(bits) == tag_key::key_of(word) {
            return;
        }
        for e in 0..self.used() {
            let entry = &self.entries[self.word(e)];
            for tag in entry.read_tag.iter().chain(&entry.write_tag) {
                if tag.get() != 0 {
                    tag.set(tag_key::rekeyed(tag.get(), word));
                }
            }
        }
        self.tag_bits
            .set(tag_key::tag_bits(word, bits & tag_key::ADDRESS_MASK));
    }

    /// Switches the table off. The caller emptied it first (`flush` with `forget`), so no count
    /// or dirty mark is left behind.
    pub(super) fn switch_off(&self) {
        debug_assert!(
            self.entries.iter().all(Entry::is_free),
            "switched off unflushed"
        );
        debug_assert!(!self.batch_waiting(), "switched off undrained");
        if let Some(slot) = self.key_slot.replace(0).checked_sub(1) {
            tag_key::release(slot);
        }
        self.tag_bits.set(0);
        self.line_bits.set(0);
        self.spread.set(0);
        self.entry_mask.set(0);
        self.usable.set(0);
        self.install_batch(None);
        self.forget_whole_lines();
        self.on.set(false);
    }

    /// Empties the table and switches it off, dropping what it held: for a thread whose
    /// counts cannot be taken any more.
    pub(super) fn abandon(&self) {
        for entry in &self.entries {
            entry.clear_all();
        }
        self.batch_pos.set(self.batch_start.get());
        self.switch_off();
    }

    /// Hands every pending count to `take` and every pending dirty mark to `mark`; with
    /// `forget`, also empties the table (after the simulator was replaced, or when data
    /// structures changed). The caller applies each entry's order first (`Self::order_of`).
    pub(super) fn flush(
        &self,
        forget: bool,
        mut take: impl FnMut(Pending),
        mut mark: impl FnMut(u64),
    ) {
        debug_assert!(!self.batch_waiting(), "flushed undrained");
        if forget {
            self.forget_whole_lines();
        }
        for i in 0..self.used().min(ENTRIES) {
            let e = &self.entries[self.word(i)];
            if forget {
                // The tags go first: from then on a signal handler's inline test cannot count
                // into the entry being emptied, which switching off requires empty.
                let owners: [u64; SLOTS] = std::array::from_fn(|s| e.read_tag[s].replace(0));
                for (s, owner) in owners.into_iter().enumerate() {
                    e.write_tag[s].set(0);
                    if e.dirty_pending[s].replace(0) != 0 {
                        mark(self.block_of(owner));
                    }
                }
                e.order.set(0);
            } else {
                self.settle_entry(i, &mut mark);
            }
            self.drain_entry(i, &mut take);
        }
    }

    /// Before the simulator runs a one-line access to `block`: the pending dirty marks of the
    /// block's entry, if any, are handed to `mark` (the blocks to mark dirty).
    #[inline(always)]
    pub(super) fn settle(&self, block: u64, mark: impl FnMut(u64)) {
        self.settle_entry(self.index(self.address(block)), mark);
    }

    /// Before the simulator runs an access over several lines (or straddling two): the
    /// pending dirty marks of their entries are handed to `mark`.
    pub(super) fn settle_lines(&self, addr: u64, size: u32, mut mark: impl FnMut(u64)) {
        if !self.on.get() {
            return;
        }
        for i in self.indices(addr, size) {
            self.settle_entry(i, &mut mark);
        }
    }

    /// The indices of the entries an access's lines map to, each once.
    pub(super) fn indices(&self, addr: u64, size: u32) -> impl Iterator<Item = usize> + use<> {
        let used = self.used().min(ENTRIES);
        let bits = self.line_bits.get() & 63;
        let first = addr >> bits;
        let last = addr.saturating_add(u64::from(size.max(1)) - 1) >> bits;
        let (first, count) = if last - first >= used as u64 - 1 {
            (0, used)
        } else {
            (first, (last - first) as usize + 1)
        };
        (0..count).map(move |k| (first as usize).wrapping_add(k) % used)
    }

    /// After the simulator ran a one-line access to `block`: the block's slot becomes its
    /// entry's most recent, or, if it has none, it takes the least recent slot over, as the
    /// inline miss path does (with a tag only if its line is `whole`: all its bytes in one data
    /// structure, or in none), the slot's previous owner's pending counts handed to `take`.
    /// Returns the slot (numbered across the table, as [`Pending`]'s), `None` while off.
    #[inline(always)]
    pub(super) fn take_over(
        &self,
        block: u64,
        write: bool,
        whole: bool,
        take: impl FnOnce(Pending),
    ) -> Option<usize> {
        if !self.on.get() {
            return None;
        }
        let addr = self.address(block);
        let i = self.index(addr);
        let e = &self.entries[self.word(i)];
        let tag = self.tag(addr);
        let before = e.order.get();
        let slot = match Entry::slot_of(&e.read_tag, tag) {
            // The same block keeps its pending hits and its written mark while its line is
            // whole.
            Some(slot) => {
                e.order.set(self.after_hit(slot, before));
                if !whole {
                    self.drain_slot(i, e, slot, take);
                }
                slot
            }
            None => {
                let (slot, after) = self.miss_in(before);
                debug_assert!(
                    e.dirty_pending[slot].get() == 0,
                    "settled before the access"
                );
                self.drain_slot(i, e, slot, take);
                e.write_tag[slot].set(0);
                e.order.set(after);
                slot
            }
        };
        // A line that is not whole keeps its place in the order with no tag.
        let owner = if whole { tag } else { 0 };
        e.read_tag[slot].set(owner);
        if write || !whole {
            e.write_tag[slot].set(owner);
        }
        Some(i * SLOTS + slot)
    }

    /// After the simulator ran an access over several lines (or straddling two), whose
    /// entries [`Self::settle_lines`] settled before: their entries are given up, their
    /// pending counts handed to `take`.
    pub(super) fn forget_lines(&self, addr: u64, size: u32, mut take: impl FnMut(Pending)) {
        if !self.on.get() {
            return;
        }
        for i in self.indices(addr, size) {
            debug_assert!(
                self.entries[self.word(i)]
                    .dirty_pending
                    .iter()
                    .all(|d| d.get() == 0),
                "settled before the access"
            );
            self.drain_entry(i, &mut take);
            self.clear_entry(i);
        }
    }
}

/// A table as `epcache_inline::model` sees the words the inline sequence reads and writes:
/// its entries, the batch it appends to and the whole-line cache, with `word` as both the
/// process-wide tag word and the thread's synced word.
#[cfg(test)]
pub(super) struct InlineView<'a> {
    filter: &'a Filter,
    word: u64,
}

#[cfg(test)]
impl epcache_inline::model::SiteMemory for InlineView<'_> {
    fn tag_word(&self) -> u64 {
        self.word
    }
    fn synced_word(&self) -> u64 {
        self.word
    }
    fn entry(&self, offset: u32) -> epcache_inline::model::Entry {
        let e = &self.filter.entries[offset as usize / ENTRY_BYTES];
        let get = |cells: &[Cell<u64>; SLOTS]| std::array::from_fn(|s| cells[s].get());
        epcache_inline::model::Entry {
            read_tag: get(&e.read_tag),
            order: e.order.get(),
            read_hits: get(&e.read_hits),
            write_hits: get(&e.write_hits),
            write_tag: get(&e.write_tag),
            dirty_pending: get(&e.dirty_pending),
        }
    }
    fn set_entry(&mut self, offset: u32, entry: epcache_inline::model::Entry) {
        let e = &self.filter.entries[offset as usize / ENTRY_BYTES];
        let set = |cells: &[Cell<u64>; SLOTS], values: [u64; SLOTS]| {
            for (cell, value) in cells.iter().zip(values) {
                cell.set(value);
            }
        };
        set(&e.read_tag, entry.read_tag);
        e.order.set(entry.order);
        set(&e.read_hits, entry.read_hits);
        set(&e.write_hits, entry.write_hits);
        set(&e.write_tag, entry.write_tag);
        set(&e.dirty_pending, entry.dirty_pending);
    }
    fn order_table(&self, offset: usize) -> u8 {
        self.filter.order_tables[offset].get()
    }
    fn whole_lines(&self, slot: usize) -> epcache_inline::model::WholeLines {
        epcache_inline::model::WholeLines {
            lo: self.filter.whole_lo[slot].get(),
            hi: self.filter.whole_hi[slot].get(),
            structure: self.filter.whole_structure[slot].get(),
        }
    }
    fn batch_pos(&self) -> u64 {
        self.filter.batch_pos.get()
    }
    fn batch_end(&self) -> u64 {
        self.filter.batch_end.get()
    }
    fn set_batch_pos(&mut self, pos: u64) {
        self.filter.batch_pos.set(pos);
    }
    fn write_record(&mut self, at: u64, record: epcache_inline::model::RecordWords) {
        let index = ((at - self.filter.batch_start.get()) / RECORD_BYTES) as usize;
        let batch = self
            .filter
            .take_batch_box()
            .expect("a batch while the path has room");
        for (cell, word) in batch[index].iter().zip(record) {
            cell.set(word);
        }
        self.filter.put_batch_box(Some(batch));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The code address of the tests' accesses.
    const CODE: u64 = 0x5555_0000_1234;

    #[test]
    fn the_inline_offset_finds_each_entrys_words_for_every_line_size() {
        // (line bits, L1 sets, entries expected): one entry per set while they fit, longer
        // lines spreading the entries over the same slots; lines shorter than half an entry
        // get no table.
        for (line_bits, sets, expected) in [
            (5, 512, Some(256)),
            (5, 64, Some(64)),
            (5, 256, Some(256)),
            (6, 64, Some(64)),
            (6, 512, Some(128)),
            (6, 8, Some(8)),
            (7, 64, Some(64)),
            (7, 512, Some(64)),
            (8, 1024, Some(32)),
            (12, 64, Some(2)),
            (13, 64, None),
            (4, 64, None),
            (6, 1, None),
        ] {
            assert_eq!(
                Filter::entries_for(line_bits, sets),
                expected,
                "{line_bits} {sets}"
            );
            let Some(entries) = expected else { continue };
            let f = Filter::new();
            shape_keyed(&f, line_bits, entries, 0x5a);
            let line = 1u64 << line_bits;
            let mut seen = std::collections::HashSet::new();
            for k in 0..(3 * entries as u64) {
                let addr = 0x7f00_0000_0000 + k * line + (k * 7) % line;
                let e = f.index(addr);
                assert_eq!(
                    f.offset(addr),
                    f.word(e) * ENTRY_BYTES,
                    "{line_bits} {addr:#x}"
                );
                assert!((0..ENTRIES).contains(&f.word(e)));
                // Every byte of a line has the line's offset; consecutive lines differ.
                assert_eq!(f.offset(addr | (line - 1)), f.offset(addr & !(line - 1)));
                assert_ne!(f.offset(addr), f.offset(addr + line));
                seen.insert(e);
            }
            assert_eq!(seen.len(), entries, "every entry used");
            // The tag word carries the mask the table was shaped with.
            assert_eq!(tag_key::offset_mask_of(f.tag_bits.get()), f.offset_mask());
        }
    }

    /// Shapes `f` for `entries` entries of `1 << line_bits`-byte lines with the made-up key
    /// `key`, as `switch_on` does without taking a key slot or touching the tag word.
    fn shape_keyed(f: &Filter, line_bits: u32, entries: usize, key: u8) {
        f.set_shape(line_bits, entries, SLOTS);
        f.tag_bits
            .set(tag_key::word_of(key, (1 << line_bits) - 1, f.offset_mask()));
    }

    /// The inline test's read path, by its model (`epcache_inline::model`): the offset from
    /// the first byte and the mask, the entry at that offset, the tag from the last byte.
    fn inline_read(f: &Filter, addr: u64, size: u64) -> bool {
        f.inline_hit(addr, size as u32, false)
    }

    /// A table switched on as `switch_on` leaves it, without taking a key slot (the key is
    /// made up), with a batch of `records` records and the page at `page` known whole.
    fn table_with_batch(records: usize, page: u64) -> Filter {
        let f = Filter::new();
        f.on.set(true);
        shape_keyed(&f, 6, 64, 0x5a);
        f.install_batch(Some(new_batch(records)));
        f.remember_whole_lines(page, page, page + 4096, 3);
        f
    }

    #[test]
    fn a_whole_range_is_remembered_ahead_along_a_structures_stride() {
        let page = 0x7f00_0010_0000u64;
        let pages = |n: u64| n << layout::WHOLE_PAGE_SHIFT;
        let range = (page - pages(1), page + pages(40));
        // Misses of structure 4 three pages apart, another structure's between them: the
        // second fills the next steps at that stride, as far as the range reaches.
        let f = Filter::new();
        f.remember_whole_lines(page + 8, range.0, range.1, 4);
        f.remember_whole_lines(page + pages(100), page + pages(100), page + pages(101), 9);
        f.remember_whole_lines(page + pages(3) + 8, range.0, range.1, 4);
        for k in 1..=WHOLE_STEPS_AHEAD {
            let at = page + pages(3 + 3 * k) + 16;
            assert_eq!(f.whole_line(at), Some(4), "step {k} ahead");
        }
        // The step after those filled misses (the sweep went on), and keeps the stride.
        let next = 3 + 3 * (WHOLE_STEPS_AHEAD + 1);
        f.remember_whole_lines(page + pages(next), range.0, range.1, 4);
        assert_eq!(f.whole_line(page + pages(next + 3)), Some(4));
        // Backwards too, and never past the range's end.
        let g = Filter::new();
        g.remember_whole_lines(page + pages(6), range.0, range.1, 5);
        g.remember_whole_lines(page + pages(4), range.0, range.1, 5);
        assert_eq!(g.whole_line(page + pages(2)), Some(5));
        assert_eq!(g.whole_line(page), Some(5));
        let filled = g.whole_lo.iter().filter(|c| c.get() != 0).count();
        assert_eq!(filled, 4, "slots written: pages 6, 4, 2 and 0");
        // A stride of one page, or of more than the longest, fills nothing ahead.
        for stride in [1, WHOLE_LONGEST_STRIDE + 1] {
            let h = Filter::new();
            h.remember_whole_lines(page, range.0, range.1, 6);
            h.remember_whole_lines(page + pages(stride), range.0, range.1, 6);
            let filled = h.whole_lo.iter().filter(|c| c.get() != 0).count();
            assert_eq!(filled, 2, "stride {stride}");
        }
    }

    #[test]
    fn a_batch_moves_whole_with_its_records_and_the_miss_path_writes_into_the_next() {
        let page = 0x7f00_0000_1000;
        let f = table_with_batch(2, page);
        assert!(!f.batch_waiting() && !f.batch_full());
        assert!(f.inline_miss(page + 8, 8, false, CODE));
        assert!(f.inline_miss(page + 64, 4, true, CODE));
        assert!(f.batch_full());
        assert!(!f.inline_miss(page + 128, 8, false, CODE), "no room");
        let (old, filled) = f.replace_batch(new_batch(4)).unwrap();
        assert_eq!(filled, 2);
        let records: Vec<Record> = records_of(&old, filled).map(Record::decode).collect();
        assert_eq!(
            (
                records[0].addr,
                records[0].size,
                records[0].write,
                records[0].structure,
                records[0].code
            ),
            (page + 8, 8, false, Some(3), CODE)
        );
        assert_eq!(
            (
                records[1].addr,
                records[1].size,
                records[1].write,
                records[1].structure,
                records[1].code
            ),
            (page + 64, 4, true, Some(3), CODE)
        );
        // The miss path's addresses are the new batch's, empty.
        let range = f.take_batch_box().unwrap();
        let (start, end) = (range.as_ptr() as u64, range.as_ptr_range().end as u64);
        f.put_batch_box(Some(range));
        assert_eq!((f.batch_pos.get(), f.batch_end.get()), (start, end));
        assert!(!f.batch_waiting());
        assert!(f.inline_miss(page + 128, 8, false, CODE));
        let mut drained = Vec::new();
        f.drain_batch_with(|records| drained.extend(records.map(Record::decode)));
        assert_eq!(drained.len(), 1);
        assert_eq!(drained[0].addr, page + 128);
        assert!(!f.batch_waiting());
        // Off, the table holds no batch and the miss path finds no room.
        f.drain_batch_with(|_| ());
        f.flush(true, |_| {}, |_| {});
        f.switch_off();
        assert_eq!((f.batch_pos.get(), f.batch_end.get()), (0, 0));
        assert!(f.batch_full() && !f.has_batch());
        assert!(f.replace_batch(new_batch(2)).is_none());
    }

    #[test]
    fn a_batch_an_interrupted_miss_path_still_writes_into_stays_where_it_is() {
        let page = 0x7f00_0000_1000;
        let f = table_with_batch(2, page);
        assert!(f.inline_miss(page, 8, false, CODE));
        // A signal handler interrupted a miss path after it loaded the position.
        f.in_miss.set(1);
        let loaded = f.batch_pos.get();
        assert!(f.replace_batch(new_batch(4)).is_none(), "must not move");
        assert_eq!(f.batch_pos.get(), loaded);
        // The path went on (the count is back to 0): the batch may move again.
        f.in_miss.set(0);
        let (old, filled) = f.replace_batch(new_batch(4)).unwrap();
        assert_eq!((filled, old.as_ptr() as u64 + RECORD_BYTES), (1, loaded));
    }

    #[test]
    fn a_table_switched_off_and_on_under_an_interrupted_miss_path_keeps_its_batch() {
        // Found by review: a handler's region boundaries switched the table off and on, the
        // interrupted path stored its old position back, and the miss path then wrote from a
        // freed batch's address up to the new batch's end, through other memory.
        let page = 0x7f00_0000_1000;
        let f = table_with_batch(BATCH_RECORDS, page);
        assert!(f.inline_miss(page, 8, false, CODE));
        let in_range = |f: &Filter, pos: u64| {
            let batch = f.take_batch_box().expect("a batch");
            let range = batch.as_ptr_range();
            f.put_batch_box(Some(batch));
            (range.start as u64..=range.end as u64).contains(&pos)
                && f.batch_start.get() == range.start as u64
                && f.batch_end.get() <= range.end as u64
        };
        // `incb in_miss`, `movq batch_pos, %rsi`.
        f.in_miss.set(1);
        let loaded = f.batch_pos.get();
        // The handler: flushed and off (a region boundary), then on again.
        f.drain_batch_with(|_| ());
        f.flush(true, |_| {}, |_| {});
        f.switch_off();
        assert!(f.batch_full(), "no room while off");
        assert!(in_range(&f, loaded), "kept while the path is interrupted");
        shape_keyed(&f, 6, 64, 0x5a);
        f.install_batch(Some(new_batch(BATCH_RECORDS)));
        f.on.set(true);
        // The path resumes: `movq %rsi+40, batch_pos`, `decb in_miss`.
        f.batch_pos.set(loaded + RECORD_BYTES);
        f.in_miss.set(0);
        assert!(
            in_range(&f, f.batch_pos.get()),
            "the position is the batch's"
        );
        // Off with no path interrupted: the batch goes.
        f.drain_batch_with(|_| ());
        f.flush(true, |_| {}, |_| {});
        f.switch_off();
        assert!(!f.has_batch());
    }

    #[test]
    fn the_inline_test_matches_only_lines_the_table_owns_under_its_key() {
        let f = Filter::new();
        // On as `switch_on` leaves it, without taking a key slot (the key is made up).
        f.on.set(true);
        shape_keyed(&f, 6, 64, 0x5a);
        let addr = 0x7f00_0000_1040;
        f.take_over(addr >> 6, false, true, |_| {});
        assert!(inline_read(&f, addr, 8));
        assert!(inline_read(&f, addr + 56, 8));
        assert!(
            !inline_read(&f, addr + 60, 8),
            "straddles into the next line"
        );
        assert!(!inline_read(&f, addr + 64, 8), "the next line owns nothing");
        assert!(
            !inline_read(&f, addr + 64 * 64, 8),
            "another line of the set"
        );
        // A switch: the word's key moves on, and the table's tags match nothing until the
        // thread syncs (the inline test ORs the word it loads, as `inline_read` ORs the
        // thread's bits; here the bits stand for the new word).
        let old = f.tag_bits.get();
        f.tag_bits
            .set(tag_key::word_of(0x5b, 63, tag_key::offset_mask_of(old)));
        assert!(!inline_read(&f, addr, 8), "stale key");
        f.tag_bits.set(old);
        let mut pending = Vec::new();
        f.flush(true, |p| pending.push(p), |_| {});
        // An empty entry's first owner takes its least recent slot, the last.
        let slot = ((addr >> 6) & 63) as usize * SLOTS + SLOTS - 1;
        assert_eq!(pending, [(slot as u32, 2, 0)]);
        // Emptied (capture switched off empties it first): nothing matches, whatever the key.
        assert!(!inline_read(&f, addr, 8));
        f.switch_off();
    }

    #[test]
    fn the_table_is_laid_out_as_the_inline_sequence_reads_it() {
        use epcache_inline::layout::ThreadWord;
        let f = Filter::new();
        // Each word's size and count, as the sequence's instructions take them.
        for (word, bytes, count) in [
            (
                ThreadWord::WholeLo,
                std::mem::size_of_val(&f.whole_lo[0]),
                f.whole_lo.len(),
            ),
            (
                ThreadWord::WholeHi,
                std::mem::size_of_val(&f.whole_hi[0]),
                f.whole_hi.len(),
            ),
            (
                ThreadWord::WholeStructure,
                std::mem::size_of_val(&f.whole_structure[0]),
                f.whole_structure.len(),
            ),
            (ThreadWord::BatchPos, std::mem::size_of_val(&f.batch_pos), 1),
            (ThreadWord::BatchEnd, std::mem::size_of_val(&f.batch_end), 1),
            (ThreadWord::InMiss, std::mem::size_of_val(&f.in_miss), 1),
            (
                ThreadWord::ReadTags,
                std::mem::size_of_val(&f.entries[0].read_tag[0]),
                f.entries.len(),
            ),
            (
                ThreadWord::DirtyPending,
                std::mem::size_of_val(&f.entries[0].dirty_pending[0]),
                f.entries.len(),
            ),
            (
                ThreadWord::Order,
                std::mem::size_of_val(&f.entries[0].order),
                f.entries.len(),
            ),
            (
                ThreadWord::OrderTables,
                std::mem::size_of_val(&f.order_tables[0]),
                f.order_tables.len(),
            ),
        ] {
            assert_eq!((bytes, count), (word.bytes(), word.values().0), "{word:?}");
        }
        // The symbols of the entry's words are entry 0's, at the layout's offsets.
        for (word, offset) in [
            (ThreadWord::ReadTags, Filter::READ_TAGS_OFFSET),
            (ThreadWord::Order, Filter::ORDER_OFFSET),
            (ThreadWord::WriteTags, Filter::WRITE_TAGS_OFFSET),
            (ThreadWord::ReadHits, Filter::READ_HITS_OFFSET),
            (ThreadWord::WriteHits, Filter::WRITE_HITS_OFFSET),
            (ThreadWord::DirtyPending, Filter::DIRTY_PENDING_OFFSET),
        ] {
            assert_eq!(
                offset - Filter::ENTRIES_OFFSET,
                word.entry_offset().unwrap(),
                "{word:?}"
            );
        }
        assert_eq!(Filter::ENTRIES_OFFSET % ENTRY_BYTES, 0);
    }

    /// Every entry's words and order byte, in order.
    fn entry_words(f: &Filter) -> Vec<(Vec<u64>, u8)> {
        f.entries
            .iter()
            .map(|e| (e.words().map(Cell::get).collect(), e.order.get()))
            .collect()
    }

    /// The records in `f`'s batch, which is emptied.
    fn drained(f: &Filter) -> Vec<RecordWords> {
        let mut records = Vec::new();
        f.drain_batch_with(|r| records.extend(r));
        records
    }

    #[test]
    fn the_runtime_takes_entries_over_as_the_inline_miss_path_does() {
        // `inline_miss`, which the runtime runs for accesses it stages while its thread
        // simulates on a second core, must leave the table and batch as the inline sequence's
        // miss path does (its model, which `epcache-inline` tests the assembled sequence
        // against): both then hold the same owners for the inline test to find.
        use epcache_inline::emit::{Access, HOOK_SIZES};
        use epcache_inline::model::{self, Registers};
        let page = 0x7f00_0000_1000;
        let (runtime, modelled) = (table_with_batch(32, page), table_with_batch(32, page));
        // Sixteen pages, more lines than the table holds; the second page half whole, and
        // pages 2 to 15 whole.
        for f in [&runtime, &modelled] {
            f.remember_whole_lines(page + 4096, page + 4096, page + 6144, 5);
            for p in 2..16 {
                let at = page + p * 4096;
                f.remember_whole_lines(at, at, at + 4096, 6);
            }
        }
        let word = runtime.tag_bits.get();
        let regs = Registers::loaded(word);
        let (mut batched, mut declined, mut hits) = (0, 0, 0);
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        for _ in 0..20_000 {
            crate::test_rng::xorshift(&mut x);
            let size = HOOK_SIZES[(x % 5) as usize];
            let write = x >> 8 & 1 == 1;
            // Two pages, the second half whole; now and then a page whose slot the first's
            // holds (not whole).
            let far = if x >> 40 & 15 == 0 { 64 * 4096 } else { 0 };
            let addr = page + far + (x >> 16) % (16 * 4096);
            let access = Access { size, write };
            let hit = model::hit_test(&mut runtime.inline_view(word), regs, access, addr);
            let hit_modelled = model::hit_test(&mut modelled.inline_view(word), regs, access, addr);
            assert_eq!(hit, hit_modelled);
            if hit.is_some() {
                hits += 1;
                continue;
            }
            // Each site its own code address.
            let code = 0x5555_0000_0000 | x & 0xfff;
            let by_runtime = runtime.inline_miss(addr, size, write, code);
            let by_model =
                model::miss_path(&mut modelled.inline_view(word), regs, access, addr, code).is_ok();
            assert_eq!(by_runtime, by_model, "{addr:#x} {access:?}");
            if by_runtime {
                batched += 1;
            } else {
                declined += 1;
            }
            assert!(
                entry_words(&runtime) == entry_words(&modelled),
                "{addr:#x} {access:?}"
            );
            let filled = |f: &Filter| f.batch_pos.get() - f.batch_start.get();
            assert_eq!(filled(&runtime), filled(&modelled));
            if runtime.batch_full() {
                assert_eq!(drained(&runtime), drained(&modelled));
            }
        }
        assert_eq!(drained(&runtime), drained(&modelled));
        assert!(
            batched > 1000 && declined > 1000 && hits > 1000,
            "{batched} batched, {declined} declined, {hits} hits"
        );
    }
}
