//! The process-wide tag word: every tag the sequence compares carries it, and the table's offset
//! mask rides in its top byte.
//!
//! An access's tag is the address of its last byte ORed with the word: L1's line size less one
//! in the low bits (so every byte of a line has the line's tag), a *key* in bits 48 to 55 that
//! the runtime changes at every switch a thread must sync for (`capture/tag_key.rs`), and the
//! offset mask shifted right by [`MASK_UNIT_BITS`] in bits 56 to 63. The entry's byte offset in
//! the table is the access's first byte's address ANDed with that mask, times two (the
//! addressing mode's scale, [`crate::layout::OFFSET_SCALE_SHIFT`]): entries are
//! [`crate::layout::ENTRY_BYTES`] long, one per line of at least half that size, so the masked
//! address needs no shift.
//!
//! Why the mask is in the word: the sequence then loads one word per access, not two, and a
//! monitored program's thread is bound by its loads, not its instructions (two shifts more cost
//! less than a load; docs/performance.md). The price is that the test reads nothing of its own
//! thread but the table, so a table may hold tags with the current key only while its thread
//! captures (`capture/filter.rs`). Tags keep 48 address bits: user addresses on x86_64 Linux
//! stay below 2^47 unless a program maps above it on purpose (five-level paging and an `mmap`
//! hint), which the inline test does not support.

use crate::layout::{ENTRY_SHIFT, OFFSET_SCALE_SHIFT, SHORTEST_LINE_BITS, TABLE_ENTRIES};

/// The key's place in the word and in every tag: bits 48 to 55.
pub const KEY_SHIFT: u32 = 48;
/// The key's bits.
pub const KEY_BITS: u64 = 0xff << KEY_SHIFT;
/// The offset mask's place: the word's top byte holds the mask shifted right by
/// [`MASK_UNIT_BITS`].
pub const MASK_SHIFT: u32 = 56;
/// The offset mask's unit: the mask selects whole lines of the shortest size the table takes,
/// so its low bits are 0.
pub const MASK_UNIT_BITS: u32 = SHORTEST_LINE_BITS;
/// The address bits of a tag (below the key).
pub const ADDRESS_MASK: u64 = (1 << KEY_SHIFT) - 1;
/// The largest offset mask the top byte can hold.
pub const MAX_OFFSET_MASK: u32 = 0xff << MASK_UNIT_BITS;

// The table has an entry for every offset the largest mask selects, and no more.
const _: () =
    assert!(((MAX_OFFSET_MASK as usize) << OFFSET_SCALE_SHIFT >> ENTRY_SHIFT) + 1 == TABLE_ENTRIES);

/// A word with `key`, L1's line size less one (`line_low`) and the table's offset mask (in units
/// of `1 << MASK_UNIT_BITS`, at most [`MAX_OFFSET_MASK`]).
#[inline]
pub const fn word_of(key: u8, line_low: u64, offset_mask: u32) -> u64 {
    (offset_mask as u64 >> MASK_UNIT_BITS) << MASK_SHIFT | (key as u64) << KEY_SHIFT | line_low
}

/// The key of `word`.
#[inline]
pub const fn key_of(word: u64) -> u8 {
    (word >> KEY_SHIFT) as u8
}

/// The offset mask `word` holds, as the sequence decodes it (a shift right by [`MASK_SHIFT`]
/// of the whole word, then a 32-bit shift left by [`MASK_UNIT_BITS`]).
#[inline]
pub const fn offset_mask_of(word: u64) -> u32 {
    ((word >> MASK_SHIFT) as u32) << MASK_UNIT_BITS
}

/// The tag of an access whose last byte is at `last`, made with `word`.
#[inline]
pub const fn tag(last: u64, word: u64) -> u64 {
    last | word
}

/// The byte offset in the table of the entry for the access starting at `first`, with the mask
/// `offset_mask` (the sequence ANDs the low 32 bits of the address, and its addressing mode
/// scales the result by `1 << OFFSET_SCALE_SHIFT`).
#[inline]
pub const fn entry_offset(first: u64, offset_mask: u32) -> u32 {
    (first as u32 & offset_mask) << OFFSET_SCALE_SHIFT
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fields_sit_above_every_user_address_and_round_trip() {
        let word = word_of(0x7f, 63, 0x1fe0);
        assert_eq!(word, 0xff7f_0000_0000_003f);
        assert_eq!(key_of(word), 0x7f);
        assert_eq!(offset_mask_of(word), 0x1fe0);
        assert_eq!(offset_mask_of(word), MAX_OFFSET_MASK);
        assert_eq!(word & ADDRESS_MASK, 63);
        assert_eq!(word & KEY_BITS, 0x7f << KEY_SHIFT);
        assert_eq!(offset_mask_of(word_of(1, 8191, 1 << 12)), 1 << 12);
        assert_eq!(offset_mask_of(word_of(1, 31, 0x1fe0)), 0x1fe0);
        assert_eq!(offset_mask_of(word_of(9, 63, 0)), 0);
        // Every address a program can use (below 2^47) keeps its bits in a tag.
        assert_eq!(tag((1 << 47) - 1, word) & ADDRESS_MASK, (1 << 47) - 1);
        // 64-byte lines, 64 entries: every other slot; 32-byte lines, 256: every slot.
        assert_eq!(entry_offset(0x7f00_0000_1047, 0x0fc0), 0x200);
        assert_eq!(entry_offset(0x7f00_0000_e027, 0x1fe0), 0x100);
        assert_eq!(entry_offset(0x7f00_0000_e047, 0x1fe0), 0x200);
        assert_eq!(entry_offset(0x7f00_0000_ffff, 0x1fe0), 0xff00);
    }
}
