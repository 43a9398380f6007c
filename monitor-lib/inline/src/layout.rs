//! The words of a thread's block the sequence reads and writes, under the names the runtime
//! defines them by (inline capture ABI v9), and the shape of what they hold: a table entry of
//! [`SLOTS`] lines and their recency order, a batch record with its meta byte, the whole-line
//! cache, the order tables (`crate::order`).
//!
//! The runtime places the words where the Rust compiler lays its block out and names each
//! with a thread-local symbol at its offset (`capture/thread_block.rs`), which the sequence
//! reaches with the local-exec model (`%fs:name@tpoff`): the program's code and the runtime it
//! links cannot disagree on where a word is. What the sequence assumes beyond the names is
//! written here, and the runtime checks its types against it (at compile time, or in its tests
//! where a field's type cannot be named there): each word's size, an entry's size and the
//! place of its words (each of a slot's words 8 bytes after the previous slot's), and the
//! record the miss path writes.
//!
//! An entry's words lie in three host lines, so that a read touches two: the read tags and
//! the order byte, then the hit counts; the write tags and dirty marks, which only writes
//! read, in the third.
//!
//! A program whose runtime lacks a symbol of this version fails to link, naming it.

pub use crate::order::SLOTS;
use crate::order::TABLES_BYTES;

/// The ABI version every symbol's name carries (`epcache_inline_v9_...`): a new version for
/// any change of what a word means, so objects and runtimes of different versions do not link.
pub const ABI_VERSION: u32 = 9;

/// The full name of the inline capture ABI's symbol `name`, as a string literal (so the
/// runtime's `global_asm!` and `export_name` can use it): `abi_symbol!(read_tags)` is
/// `"epcache_inline_v9_read_tags"`.
#[macro_export]
macro_rules! abi_symbol {
    ($name:ident) => {
        concat!("epcache_inline_v9_", stringify!($name))
    };
}

/// The process-wide tag word's symbol (`crate::tag_word`): a plain global, not thread-local.
pub const TAG_WORD_SYMBOL: &str = abi_symbol!(tag_word);

/// A symbol every runtime with this ABI defines: `epcache cc` names it when a link fails
/// without it.
pub const ABI_PROBE: &str = ThreadWord::ReadTags.symbol();

/// log2 of a table entry's size: four host cache lines, three of them used.
pub const ENTRY_SHIFT: u32 = 8;
/// Bytes per table entry.
pub const ENTRY_BYTES: usize = 1 << ENTRY_SHIFT;
/// log2 of the scale of the sequence's addressing mode: an entry's byte offset is the access's
/// address masked, times 8, which the address of every entry word does at no cost
/// (`sym@tpoff(,%rdx,8)`). So the masked address needs only a multiple of an eighth of an
/// entry, and one entry per line fits lines as short as 32 bytes (the EP-Cache and METRIC
/// papers' L1) with no shift in the sequence. With the scale the slot's size, the miss path
/// reaches the slot it takes by adding its number to the masked address.
pub const OFFSET_SCALE_SHIFT: u32 = 3;
/// log2 of the shortest L1 line the table takes: one entry per line, at the line's address
/// masked and scaled ([`OFFSET_SCALE_SHIFT`]).
pub const SHORTEST_LINE_BITS: u32 = ENTRY_SHIFT - OFFSET_SCALE_SHIFT;
/// Entries the table must hold: one per value of the tag word's mask byte, every offset it can
/// select (`tag_word.rs` checks the two agree).
pub const TABLE_ENTRIES: usize = 256;

/// Bytes from one slot's word to the next slot's: slot `s`'s word `W` is at `W + s * SLOT_STRIDE`.
pub const SLOT_STRIDE: usize = 8;
/// Byte offsets of an entry's words in the entry, each the first slot's: the owning line's tag
/// (0 for none) ...
pub const ENTRY_READ_TAG: usize = 0;
/// ... the entry's recency order (`crate::order`), one byte ...
pub const ENTRY_ORDER: usize = SLOTS * SLOT_STRIDE;
/// ... the repeat hits not yet counted, reads ...
pub const ENTRY_READ_HITS: usize = 64;
/// ... and writes ...
pub const ENTRY_WRITE_HITS: usize = ENTRY_READ_HITS + SLOTS * SLOT_STRIDE;
/// ... the owning line's tag once the line was written since it took the slot over (else 0) ...
pub const ENTRY_WRITE_TAG: usize = 128;
/// ... and [`DIRTY_MARK`] once a write to the line was counted while the slot was clean: the
/// runtime has yet to mark the line dirty in its simulator.
pub const ENTRY_DIRTY_PENDING: usize = ENTRY_WRITE_TAG + SLOTS * SLOT_STRIDE;

/// Words per batch record, each 8 bytes.
pub const RECORD_WORDS: usize = 6;
/// Bytes per record: what the miss path adds to the batch position.
pub const RECORD_BYTES: usize = RECORD_WORDS * 8;
/// Word indices in a record: the access's address with the meta byte on top ...
pub const RECORD_ADDRESS: usize = 0;
/// ... the old owner's tag (the owner of the slot the access took) ...
pub const RECORD_OLD_TAG: usize = 1;
/// ... its uncounted read hits ...
pub const RECORD_OLD_READ_HITS: usize = 2;
/// ... and write hits ...
pub const RECORD_OLD_WRITE_HITS: usize = 3;
/// ... the data structure of the access's line (from the whole-line cache), in the low 32 bits,
/// and the entry's order byte before the access at [`RECORD_ORDER_SHIFT`] ...
pub const RECORD_STRUCTURE: usize = 4;
/// The order byte's place in the structure word (its fifth byte).
pub const RECORD_ORDER_SHIFT: u32 = 32;
/// ... and the site's code address: where its hook call returns to, the address the runtime
/// is given for the same access on the hook path, so a miss counts for the site's source line
/// whichever path batched it.
pub const RECORD_CODE_ADDRESS: usize = 5;
/// The meta byte's place in the record's first word; the address keeps the bits below.
pub const META_SHIFT: u32 = 56;
/// The meta byte's bits holding the access's size.
pub const META_SIZE_MASK: u8 = 31;
/// The meta byte's bit saying the access writes.
pub const META_WRITE_SHIFT: u32 = 5;
/// The meta byte's bit holding the old owner's pending dirty mark.
pub const META_DIRTY_SHIFT: u32 = 6;
/// What the sequence stores as an entry's pending dirty mark: the meta byte's dirty bit, so
/// the miss path ORs the mark into the meta byte as it is.
pub const DIRTY_MARK: u64 = 1 << META_DIRTY_SHIFT;

/// The meta byte of an access, without the dirty mark (which only the miss path knows).
#[inline]
pub const fn meta(size: u32, write: bool) -> u8 {
    (size as u8 & META_SIZE_MASK) | (write as u8) << META_WRITE_SHIFT
}

/// The whole-line cache is direct-mapped by page of this many bits ...
pub const WHOLE_PAGE_SHIFT: u32 = 12;
/// ... over this many slots ...
pub const WHOLE_SLOTS: usize = 64;
/// ... by the top bits of the page number's low 32 bits times this (Fibonacci hashing). By
/// the page number's low bits alone, arrays a power of two of pages apart (a stencil's two
/// grids, 512 KiB or 8 MiB each) took the same slot, each miss of one evicted the other's
/// range, and every line miss went to its hook: a quarter of a Jacobi sweep's instructions.
/// Any two pages less than 2^32 pages apart by a power of two get different slots.
pub const WHOLE_SLOT_MULTIPLIER: u32 = 0x9e37_79b1;

/// The whole-line cache's slot for `addr`.
#[inline]
pub const fn whole_slot(addr: u64) -> usize {
    ((addr >> WHOLE_PAGE_SHIFT) as u32).wrapping_mul(WHOLE_SLOT_MULTIPLIER) as usize
        >> (u32::BITS - WHOLE_SLOTS.trailing_zeros())
}

/// A thread-local word of the ABI: the runtime defines a symbol for each (for the table's
/// words, at entry 0; for the whole-line cache's, at slot 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ThreadWord {
    /// The tag word the thread synced to while it captures, else 0: the miss path batches only
    /// while it equals the tag word (the thread captures and has no switch to pick up).
    SyncedWord,
    /// The entries' words ([`ENTRY_READ_TAG`] and the following).
    ReadTags,
    Order,
    WriteTags,
    ReadHits,
    WriteHits,
    DirtyPending,
    /// The order tables (`crate::order::OrderTables::bytes`), which the runtime fills for the
    /// slots it uses.
    OrderTables,
    /// The address where the miss path writes its next record ...
    BatchPos,
    /// ... while it is below this one (both 0 while the thread has no batch).
    BatchEnd,
    /// Miss paths of the thread between loading the batch position and storing it back (one
    /// byte): above 0 only in a signal handler that interrupted one, which must then leave the
    /// batch where it is.
    InMiss,
    /// The whole-line cache, by [`whole_slot`]: addresses in `whole_lo..whole_hi` lie in lines
    /// whose bytes are all of the data structure `whole_structure` (index + 1, 0 for none).
    WholeLo,
    WholeHi,
    WholeStructure,
}

impl ThreadWord {
    /// Every word, in the order the runtime's symbol list names them.
    pub const ALL: [ThreadWord; 14] = [
        ThreadWord::SyncedWord,
        ThreadWord::ReadTags,
        ThreadWord::Order,
        ThreadWord::WriteTags,
        ThreadWord::ReadHits,
        ThreadWord::WriteHits,
        ThreadWord::DirtyPending,
        ThreadWord::OrderTables,
        ThreadWord::BatchPos,
        ThreadWord::BatchEnd,
        ThreadWord::InMiss,
        ThreadWord::WholeLo,
        ThreadWord::WholeHi,
        ThreadWord::WholeStructure,
    ];

    /// The word's symbol.
    pub const fn symbol(self) -> &'static str {
        match self {
            ThreadWord::SyncedWord => abi_symbol!(synced_word),
            ThreadWord::ReadTags => abi_symbol!(read_tags),
            ThreadWord::Order => abi_symbol!(order),
            ThreadWord::WriteTags => abi_symbol!(write_tags),
            ThreadWord::ReadHits => abi_symbol!(read_hits),
            ThreadWord::WriteHits => abi_symbol!(write_hits),
            ThreadWord::DirtyPending => abi_symbol!(dirty_pending),
            ThreadWord::OrderTables => abi_symbol!(order_tables),
            ThreadWord::BatchPos => abi_symbol!(batch_pos),
            ThreadWord::BatchEnd => abi_symbol!(batch_end),
            ThreadWord::InMiss => abi_symbol!(in_miss),
            ThreadWord::WholeLo => abi_symbol!(whole_lo),
            ThreadWord::WholeHi => abi_symbol!(whole_hi),
            ThreadWord::WholeStructure => abi_symbol!(whole_structure),
        }
    }

    /// Bytes of one value (one entry's slot's, one table byte, one whole-line slot's).
    pub const fn bytes(self) -> usize {
        match self {
            ThreadWord::InMiss | ThreadWord::Order | ThreadWord::OrderTables => 1,
            ThreadWord::WholeStructure => 4,
            _ => 8,
        }
    }

    /// How many values the word has, and the bytes from one to the next.
    pub const fn values(self) -> (usize, usize) {
        match self.entry_offset() {
            Some(_) => (TABLE_ENTRIES, ENTRY_BYTES),
            None => match self {
                ThreadWord::WholeLo | ThreadWord::WholeHi | ThreadWord::WholeStructure => {
                    (WHOLE_SLOTS, self.bytes())
                }
                ThreadWord::OrderTables => (TABLES_BYTES, 1),
                _ => (1, self.bytes()),
            },
        }
    }

    /// The word's offset in a table entry, for the entries' words.
    pub const fn entry_offset(self) -> Option<usize> {
        match self {
            ThreadWord::ReadTags => Some(ENTRY_READ_TAG),
            ThreadWord::Order => Some(ENTRY_ORDER),
            ThreadWord::WriteTags => Some(ENTRY_WRITE_TAG),
            ThreadWord::ReadHits => Some(ENTRY_READ_HITS),
            ThreadWord::WriteHits => Some(ENTRY_WRITE_HITS),
            ThreadWord::DirtyPending => Some(ENTRY_DIRTY_PENDING),
            _ => None,
        }
    }
}

// What the sequence's instructions take for granted.
const _: () = {
    // A slot's words are 8 bytes apart, the scale of the offset: the miss path adds the slot
    // it takes to the masked address and reaches each word of that slot.
    assert!(SLOT_STRIDE == 8 && SLOT_STRIDE == 1 << OFFSET_SCALE_SHIFT);
    // The read tags and the order byte share the first host line, the hits the second, the
    // write tags and dirty marks the third.
    assert!(ENTRY_ORDER < 64 && ENTRY_READ_TAG + SLOTS * SLOT_STRIDE <= ENTRY_ORDER);
    assert!(ENTRY_READ_HITS == 64 && ENTRY_WRITE_HITS + SLOTS * SLOT_STRIDE == 128);
    assert!(ENTRY_DIRTY_PENDING + SLOTS * SLOT_STRIDE <= 192 && 192 <= ENTRY_BYTES);
    // The order byte goes into the structure word's fifth byte, above any structure.
    assert!(RECORD_ORDER_SHIFT == 32);
    // The offset is computed in a 32-bit register.
    assert!(TABLE_ENTRIES * ENTRY_BYTES <= u32::MAX as usize);
    // The slot is the top bits of a 32-bit product, shifted down by 32 less log2 of the slots.
    assert!(WHOLE_SLOTS.is_power_of_two() && WHOLE_SLOTS <= 256);
    // The largest hooked access's size fits the meta byte, and the dirty mark ORed into it
    // is its own bit.
    assert!(META_SIZE_MASK as u32 >= 16 && META_SIZE_MASK < 1 << META_WRITE_SHIFT);
    assert!(META_WRITE_SHIFT < META_DIRTY_SHIFT && META_DIRTY_SHIFT < 8);
    assert!(
        META_SHIFT == 56,
        "the meta byte is the first word's top byte"
    );
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_symbol_names_this_abi_version_and_is_distinct() {
        let prefix = format!("epcache_inline_v{ABI_VERSION}_");
        let mut names: Vec<&str> = ThreadWord::ALL.iter().map(|w| w.symbol()).collect();
        names.push(TAG_WORD_SYMBOL);
        for name in &names {
            assert!(name.starts_with(&prefix), "{name}");
        }
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), ThreadWord::ALL.len() + 1);
        assert_eq!(ABI_PROBE, "epcache_inline_v9_read_tags");
    }

    #[test]
    fn the_meta_byte_holds_size_write_and_dirty_mark_apart() {
        assert_eq!(meta(8, false), 8);
        assert_eq!(meta(4, true), 4 | 1 << 5);
        assert_eq!(meta(16, true) as u64 | DIRTY_MARK, 16 | 32 | 64);
        assert_eq!(DIRTY_MARK, 64);
        assert_eq!(RECORD_BYTES, 48);
        assert_eq!(TABLE_ENTRIES, 256);
        assert_eq!(
            whole_slot(0x7f00_0004_1fff),
            (0xf000_0041u32.wrapping_mul(0x9e37_79b1) >> 26) as usize
        );
        // Pages a power of two apart (up to 2^31 pages) never share a slot.
        let page = 0x7f12_3456_7000u64;
        for m in 0..31 {
            let apart = page + (4096u64 << m);
            assert_ne!(whole_slot(page), whole_slot(apart), "2^{m} pages apart");
        }
        assert!((0..1u64 << 20).all(|p| whole_slot(p << 12) < WHOLE_SLOTS));
    }
}
