//! The standalone mode's repeat-hit filter: a per-thread table that answers, before the
//! simulator is reached, most accesses of a kernel that walks its arrays line by line.
//!
//! One entry per L1 set (sets beyond the table share entries by their low bits) remembers the
//! block the set's last simulated access touched and whether a write to it was simulated since.
//! An access within one line whose block is its entry's (and, for a write, whose entry says
//! written) is a hit on the set's most recent line: under the shapes
//! [`crate::simulator::Simulator::repeat_hit_shape`] admits, simulating it would change nothing but L1's hit
//! count. Such an access only increments the entry's read or write count, which is added to
//! the thread's counts (and the entry's data structure's) when the entry changes hands and
//! before anyone reads the counts: at region boundaries, when data structures change, when
//! the thread's capture is dropped. Every other access goes through the simulator and then
//! takes over its set's entry.
//!
//! `epcache cc` writes the same test inline into instrumented code (`thread_block.rs` names the
//! words it reads). Inline, a write to a block whose entry is clean is answered too: the entry
//! is marked written and *dirty pending*, and the write counted as a hit, because simulating
//! it would only have set the line's dirty bit. The bit matters only when the line is evicted,
//! which only a simulated access to the same set can do, so the runtime settles a pending
//! entry (marks the line dirty in the simulator, `Simulator::mark_l1_dirty`) before it
//! simulates an access whose block maps to that entry (a block's set and its entry share low
//! bits, so an access that could evict the line always maps to its entry) and before an entry
//! is emptied.
//!
//! The answer depends only on the order of accesses, not on the simulator: if the block is its
//! entry's, no access has touched its set since the block was last simulated (or it would own
//! the entry). A shared entry only sees fewer repeats.
//!
//! The table is off (no tag matches) unless the thread counts every access in standalone mode,
//! no event counts L1 hits and no analysis runs; see `ThreadCapture::refresh_filter`.

use std::cell::Cell;

/// Entries per thread: covers every L1 of 256 sets or fewer one set per entry.
const ENTRIES: usize = 256;
/// A tag that matches no access: blocks are addresses shifted right by at least 3 bits.
const NONE: u64 = u64::MAX;

/// One entry: a block, its pending hits and its data structure, in 32 bytes so an entry is
/// one shift of its index away and never straddles a host cache line.
#[repr(C, align(32))]
struct Entry {
    /// `!(block << 1 | written)`, or `!NONE`: stored inverted so that an empty entry is zero
    /// bytes, as the thread-local block the hooks read starts (`thread_block.rs`).
    inverted_tag: Cell<u64>,
    /// Repeat hits not yet counted: reads, writes.
    hits: [Cell<u64>; 2],
    /// The data structure of the block's line (index + 1, 0 for none).
    structure: Cell<u32>,
    /// Nonzero when the inline test counted a write to the block while the entry was clean:
    /// the simulator has yet to mark the line dirty.
    dirty_pending: Cell<u32>,
}

impl Entry {
    const fn empty() -> Entry {
        Entry {
            inverted_tag: Cell::new(!NONE),
            hits: [const { Cell::new(0) }; 2],
            structure: Cell::new(0),
            dirty_pending: Cell::new(0),
        }
    }

    /// `block << 1 | written`, or [`NONE`].
    #[inline(always)]
    fn tag(&self) -> u64 {
        !self.inverted_tag.get()
    }

    #[inline(always)]
    fn set_tag(&self, tag: u64) {
        self.inverted_tag.set(!tag);
    }

    /// Whether the entry owns no block and holds nothing pending.
    fn is_free(&self) -> bool {
        self.tag() == NONE
            && self.hits.iter().all(|h| h.get() == 0)
            && self.dirty_pending.get() == 0
    }

    /// Hands a pending dirty mark to `mark`, as the block to mark dirty.
    #[inline(always)]
    fn settle(&self, mark: impl FnOnce(u64)) {
        if self.dirty_pending.replace(0) != 0 {
            mark(self.tag() >> 1);
        }
    }

    /// Hands the pending hits to `take`.
    #[inline(always)]
    fn drain(&self, take: impl FnOnce(Pending)) {
        let (reads, writes) = (self.hits[0].replace(0), self.hits[1].replace(0));
        if reads | writes != 0 {
            take((self.structure.get(), reads, writes));
        }
    }
}

// The inline test `epcache cc` writes into instrumented code (`inline_capture.rs`) steps
// through the entries by a shift of 5 and reads the tag and the two counts at these offsets.
const _: () = {
    assert!(std::mem::size_of::<Entry>() == 1 << INLINE_ENTRY_SHIFT);
    assert!(std::mem::offset_of!(Entry, inverted_tag) == 0);
    assert!(std::mem::offset_of!(Entry, hits) == 8);
    assert!(std::mem::offset_of!(Entry, dirty_pending) == 28);
    assert!(
        ENTRIES <= 256,
        "the inline test reads the entry mask as one byte"
    );
};

/// log2 of an entry's size, which the inline repeat-hit test's name promises (`_v1`).
const INLINE_ENTRY_SHIFT: u32 = 5;

/// Repeat hits handed back to be counted: `(structure index + 1 or 0, reads, writes)`.
pub(super) type Pending = (u32, u64, u64);

/// One thread's table, kept in the thread-local block the access hooks read (`state.rs`), as
/// Cells, so a hook reaches it from the one thread-local address it computes, with no borrow
/// flag.
pub(super) struct Filter {
    /// log2 of L1's line size.
    line_bits: Cell<u32>,
    /// L1's line size less one.
    line_mask: Cell<u64>,
    /// Entries in use less one (a power of two less one, at most `ENTRIES - 1`).
    mask: Cell<u64>,
    entries: [Entry; ENTRIES],
    /// Whether the table is on.
    on: Cell<bool>,
}

impl Filter {
    /// Offsets the inline repeat-hit test reads (`inline_capture.rs`): L1's line bits (a
    /// `u32`), the entry mask (its low byte), the first entry, and its read and write counts.
    pub(super) const LINE_BITS_OFFSET: usize = std::mem::offset_of!(Filter, line_bits);
    pub(super) const MASK_OFFSET: usize = std::mem::offset_of!(Filter, mask);
    pub(super) const ENTRIES_OFFSET: usize = std::mem::offset_of!(Filter, entries);
    pub(super) const READ_HITS_OFFSET: usize = Self::ENTRIES_OFFSET + 8;
    pub(super) const WRITE_HITS_OFFSET: usize = Self::ENTRIES_OFFSET + 16;
    pub(super) const DIRTY_PENDING_OFFSET: usize = Self::ENTRIES_OFFSET + 28;

    /// An empty table, off.
    pub(super) const fn new() -> Filter {
        Filter {
            // Zero (as the thread-local block starts) until switched on: with every tag
            // `NONE` nothing reads them to any effect.
            line_bits: Cell::new(0),
            line_mask: Cell::new(0),
            mask: Cell::new(0),
            entries: [const { Entry::empty() }; ENTRIES],
            on: Cell::new(false),
        }
    }

    /// Whether the table is as [`Self::new`] makes it: off, every entry free.
    #[cfg(test)]
    pub(super) fn is_empty(&self) -> bool {
        !self.on.get()
            && self.line_bits.get() == 0
            && self.line_mask.get() == 0
            && self.mask.get() == 0
            && self
                .entries
                .iter()
                .all(|e| e.is_free() && e.structure.get() == 0)
    }

    #[inline(always)]
    fn entry(&self, block: u64) -> &Entry {
        &self.entries[(block & self.mask.get()) as usize % ENTRIES]
    }

    /// Counts the access as a repeat hit if it is one; `false` means it must be simulated.
    #[inline(always)]
    pub(super) fn repeat_hit(&self, addr: u64, size: u32, write: bool) -> bool {
        // Wrapping shifts: `bits` is below 64, and x86 masks the count itself.
        let bits = self.line_bits.get();
        let block = addr.wrapping_shr(bits);
        let entry = self.entry(block);
        // A read matches a clean or written entry, a write only a written one.
        let matches = entry.tag() | u64::from(!write) == block << 1 | 1;
        // Its last byte in the same line (a size of 0 counts as 1).
        let last = addr.wrapping_add(u64::from(size.max(1)) - 1);
        if !(matches && (last ^ addr).wrapping_shr(bits) == 0) {
            return false;
        }
        let count = &entry.hits[usize::from(write)];
        count.set(count.get() + 1);
        true
    }

    /// What the inline test `epcache cc` writes into instrumented code does
    /// (`inline_capture.rs`), once the thread is known to capture: a repeat hit as
    /// [`Self::repeat_hit`] counts it, and also a write within one line to a block that owns
    /// its entry clean, which marks the entry written and dirty pending.
    #[cfg(test)]
    pub(super) fn inline_hit(&self, addr: u64, size: u32, write: bool) -> bool {
        let bits = self.line_bits.get();
        let block = addr.wrapping_shr(bits);
        let last = addr.wrapping_add(u64::from(size.max(1)) - 1);
        if (last ^ addr).wrapping_shr(bits) != 0 {
            return false;
        }
        let entry = self.entry(block);
        let tag = entry.tag();
        if tag == block << 1 | 1 || tag == block << 1 && !write {
            // The same test as `repeat_hit`, now known to pass.
            return self.repeat_hit(addr, size, write);
        }
        if tag != block << 1 {
            return false;
        }
        entry.set_tag(block << 1 | 1);
        entry.dirty_pending.set(1);
        let count = &entry.hits[1];
        count.set(count.get() + 1);
        true
    }

    /// Whether the entry of `addr`'s block has a dirty mark pending.
    #[cfg(test)]
    pub(super) fn dirty_pending(&self, addr: u64) -> bool {
        self.entry(addr >> self.line_bits.get()).dirty_pending.get() != 0
    }

    /// A write within one line to a block that owns its entry clean: it hits the set's most
    /// recent line, and simulating it only marks that line dirty. The entry is marked written
    /// and its data structure (index + 1, 0 for none) returned; `None` for any other access.
    #[inline(always)]
    pub(super) fn clean_write(&self, addr: u64, size: u32) -> Option<u32> {
        let block = addr >> (self.line_bits.get() & 63);
        let entry = self.entry(block);
        let line_mask = self.line_mask.get();
        if entry.tag() != block << 1 || (addr & line_mask) + u64::from(size) > line_mask + 1 {
            return None;
        }
        entry.set_tag(block << 1 | 1);
        Some(entry.structure.get())
    }

    /// Whether the table is on.
    pub(super) fn is_on(&self) -> bool {
        self.on.get()
    }

    /// Switches the table on for an L1 of `1 << line_bits`-byte lines in `sets` sets (what
    /// [`crate::simulator::Simulator::repeat_hit_shape`] admits); a no-op when already on.
    pub(super) fn switch_on(&self, line_bits: u32, sets: u64) {
        if self.on.get() {
            return;
        }
        self.line_bits.set(line_bits);
        self.line_mask.set((1 << line_bits) - 1);
        self.mask.set(sets.min(ENTRIES as u64) - 1);
        self.on.set(true);
    }

    /// Switches the table off. The caller emptied it first (`flush` with `forget`), so no count
    /// or dirty mark is left behind.
    pub(super) fn switch_off(&self) {
        debug_assert!(
            self.entries.iter().all(Entry::is_free),
            "switched off unflushed"
        );
        self.on.set(false);
    }

    /// Hands every pending count to `take` and every pending dirty mark to `mark`; with
    /// `forget`, also empties the table (after the simulator was replaced, or when data
    /// structures changed).
    pub(super) fn flush(
        &self,
        forget: bool,
        mut take: impl FnMut(Pending),
        mut mark: impl FnMut(u64),
    ) {
        let used = self.mask.get() as usize + 1;
        for entry in &self.entries[..used.min(ENTRIES)] {
            entry.settle(&mut mark);
            entry.drain(&mut take);
            if forget {
                entry.set_tag(NONE);
            }
        }
    }

    /// Before the simulator runs a one-line access to `block`: the pending dirty mark of the
    /// block's entry, if any, is handed to `mark` (the block to mark dirty).
    #[inline(always)]
    pub(super) fn settle(&self, block: u64, mark: impl FnOnce(u64)) {
        self.entry(block).settle(mark);
    }

    /// Before the simulator runs an access over several lines (or straddling two): the
    /// pending dirty marks of their entries are handed to `mark`.
    pub(super) fn settle_lines(&self, addr: u64, size: u32, mut mark: impl FnMut(u64)) {
        if !self.on.get() {
            return;
        }
        let (first, last) = self.blocks(addr, size);
        if last - first >= self.mask.get() {
            let used = self.mask.get() as usize + 1;
            for entry in &self.entries[..used.min(ENTRIES)] {
                entry.settle(&mut mark);
            }
            return;
        }
        for block in first..=last {
            self.entry(block).settle(&mut mark);
        }
    }

    /// The first and last block an access touches.
    fn blocks(&self, addr: u64, size: u32) -> (u64, u64) {
        let first = addr >> self.line_bits.get();
        let last = addr.saturating_add(u64::from(size.max(1)) - 1) >> self.line_bits.get();
        (first, last)
    }

    /// After the simulator ran a one-line access to `block`: the block owns its set's entry
    /// now, attributed to `structure` (index + 1, 0 for none), or to nothing filterable when
    /// `None` (its line holds bytes of more than one structure). The previous owner's pending
    /// counts are handed to `take`.
    #[inline(always)]
    pub(super) fn take_over(
        &self,
        block: u64,
        write: bool,
        structure: Option<u32>,
        take: impl FnOnce(Pending),
    ) {
        if !self.on.get() {
            return;
        }
        let entry = self.entry(block);
        let old = entry.tag();
        let tag = match structure {
            // The same block keeps its pending hits and its written mark.
            Some(_) if old != NONE && old >> 1 == block => old | u64::from(write),
            Some(s) => {
                entry.drain(take);
                entry.structure.set(s);
                block << 1 | u64::from(write)
            }
            None => {
                entry.drain(take);
                NONE
            }
        };
        entry.set_tag(tag);
    }

    /// After the simulator ran an access over several lines (or straddling two), whose
    /// entries [`Self::settle_lines`] settled before: their entries are given up, their
    /// pending counts handed to `take`.
    pub(super) fn forget_lines(&self, addr: u64, size: u32, mut take: impl FnMut(Pending)) {
        if !self.on.get() {
            return;
        }
        let (first, last) = self.blocks(addr, size);
        if last - first >= self.mask.get() {
            self.flush(true, take, |_| {
                debug_assert!(false, "settled before the access")
            });
            return;
        }
        for block in first..=last {
            let entry = self.entry(block);
            entry.drain(&mut take);
            entry.set_tag(NONE);
        }
    }
}
