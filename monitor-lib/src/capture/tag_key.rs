//! The process-wide tag word every repeat-hit filter tag is made with: how the inline test
//! learns that its thread must sync without reading the switch epoch, and where it finds the
//! table's offset mask with the same load.
//!
//! The inline hit test (`epcache_inline::emit`) loads the word [`TAG_WORD`] and takes two things
//! from it (its fields are `epcache_inline::tag_word`'s); a site that follows another with nothing
//! in between that could change them reuses both from registers (`carried_registers.rs` in
//! `epcache-cc`), and a loop reloads the word at its head, so a thread sees a new key within one
//! iteration. The access's tag is the address of its line's last byte ORed with the word: L1's line
//! size less one in the low bits, a *key* in bits 48 to 55 and the table's offset mask (bits 56 to
//! 63, the mask shifted right by 6, see `offset_mask_of`), which every tag carries alike. The
//! entry's byte offset is the first byte's address ANDed with that mask. A thread's filter
//! holds tags made with the key of the word it last synced to, so while the word is unchanged
//! its repeat hits match, and once the word's key changes none does: the access falls to the
//! miss path, which compares the word with the thread's synced copy and sends it to the
//! runtime to sync. Every switch of the epoch changes the key (`rekey`, after the epoch, so a
//! thread that read the new key has the new epoch too), which is how one OR replaced the epoch
//! compare in front of every access.
//! The mask rides in the same word because a second load per access (a thread-local word of
//! its own) made the matmul bench's monitored run, which is bound by its loads, about 6% slower.
//!
//! Tags keep 48 address bits: user addresses on x86_64 Linux stay below 2^47 unless a program
//! maps memory above it on purpose (five-level paging with an `mmap` hint), which the inline
//! test does not support (ARCHITECTURE.md). Every thread of a program simulates the same L1,
//! so the shape (line bits and mask) is process-wide; threads differ only in whether their
//! table holds anything.
//!
//! Keys are 8 bits, so they repeat. A key must never come back while a thread still holds
//! tags made with it: each thread whose filter is on holds its key in one of [`SLOTS`] slots
//! (`hold`, re-checked against the word and the epoch after the store, so a rekey that missed
//! the slot is seen), and `rekey` picks the next key that no slot holds and that is not the
//! current one, one caller at a time (a scan overtaken by other moves could pick a key held
//! meanwhile). A thread that finds no free slot keeps its filter off (its accesses are
//! simulated one by one, counts unchanged).

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

use epcache_inline::tag_word;

pub(super) use super::gate_abi::TAG_WORD;

/// Threads that can keep their filter on at once.
pub(super) const SLOTS: usize = 128;

/// The key's place in a tag.
const KEY_SHIFT: u32 = tag_word::KEY_SHIFT;
/// The key's bits in the word.
const KEY_BITS: u64 = tag_word::KEY_BITS;
/// The offset mask's unit: entries are 64 bytes, so its low 6 bits are always 0.
const MASK_UNIT_BITS: u32 = tag_word::MASK_UNIT_BITS;

/// The address bits of a tag (below the key).
pub(super) const ADDRESS_MASK: u64 = tag_word::ADDRESS_MASK;

/// The key each slot holds; 0 for a free slot (no key is 0).
static HELD: [AtomicU8; SLOTS] = [const { AtomicU8::new(0) }; SLOTS];
/// Set while one caller of [`rekey`] scans the slots and moves the key, so no other does.
static REKEYING: AtomicBool = AtomicBool::new(false);
/// Set by every caller of [`rekey`]; the one rekeying moves the key once more for each time it
/// finds it set.
static REKEY_WANTED: AtomicBool = AtomicBool::new(false);

/// The key of `word`.
pub(super) use tag_word::key_of;

/// The table offset mask `word` holds: what the inline test ANDs the first byte's address
/// with; the runtime keeps the mask it set in its table.
#[cfg(test)]
pub(super) use tag_word::offset_mask_of;

/// A word with `key`, L1's line size less one and the table's offset mask (a multiple of 64
/// below 2^14, see [`set_shape`]).
pub(super) use tag_word::word_of;

/// `tag`'s address bits with `word`'s key and mask on top.
pub(super) const fn rekeyed(tag: u64, word: u64) -> u64 {
    tag & ADDRESS_MASK | word & !ADDRESS_MASK
}

/// The word's key and mask with the line's low bits: what a thread's tags are ORed with.
pub(super) const fn tag_bits(word: u64, line_low: u64) -> u64 {
    word & !ADDRESS_MASK | line_low
}

/// Sets the word's shape (line bits `line_low` and the table's offset mask) unless a filter
/// keyed with another shape is on, and says whether it is the shape now. Every thread of a
/// program simulates the same L1, so shapes differ only between the simulators of one test
/// process, one after the other.
pub(super) fn set_shape(line_low: u64, offset_mask: u32) -> bool {
    // Line bits from the filter's shortest line to its longest (4 KiB: two entries of 128
    // slots' spacing), below the key; a mask of whole 32-byte units whose scaled offsets stay
    // within the table's 16 KiB.
    debug_assert!((line_low + 1).is_power_of_two() && line_low & !ADDRESS_MASK == 0);
    // (The mask's byte in the word holds 8 bits in units of `1 << MASK_UNIT_BITS`.)
    debug_assert!(
        offset_mask & ((1 << MASK_UNIT_BITS) - 1) == 0
            && offset_mask < 1 << (u64::BITS - tag_word::MASK_SHIFT + MASK_UNIT_BITS)
    );
    let shape = word_of(0, line_low, offset_mask);
    let mut word = TAG_WORD.load(Ordering::SeqCst);
    loop {
        let bits = word & !KEY_BITS;
        if bits == shape {
            return true;
        }
        if bits != 0 && HELD.iter().any(|k| k.load(Ordering::SeqCst) != 0) {
            return false;
        }
        match TAG_WORD.compare_exchange(
            word,
            word & KEY_BITS | shape,
            Ordering::SeqCst,
            Ordering::SeqCst,
        ) {
            Ok(_) => return true,
            Err(now) => word = now,
        }
    }
}

/// Takes a free slot, holding `word`'s key; `None` when every slot is taken, or for a word
/// with no key (a thread sent to sync again has 0 for its word, see `HookBlock::switch_filter_on`).
pub(super) fn acquire(word: u64) -> Option<u8> {
    let key = key_of(word);
    if key == 0 {
        return None;
    }
    (0..SLOTS).find_map(|slot| {
        HELD[slot]
            .compare_exchange(0, key, Ordering::SeqCst, Ordering::Relaxed)
            .is_ok()
            .then_some(slot as u8)
    })
}

/// Makes `slot` hold `word`'s key.
pub(super) fn hold(slot: u8, word: u64) {
    HELD[usize::from(slot) % SLOTS].store(key_of(word), Ordering::SeqCst);
}

/// Gives `slot` up.
pub(super) fn release(slot: u8) {
    HELD[usize::from(slot) % SLOTS].store(0, Ordering::SeqCst);
}

/// Gives the word a new key: the next after the current one that no slot holds. Called after
/// every bump of the switch epoch, on any thread, in a signal handler too (atomics only, no
/// wait). One caller at a time scans and moves the key: a scan that another move overtook
/// could otherwise pick a key a thread took hold of meanwhile, once the keys came round to
/// the word it read. A caller that finds another at it leaves the move to it, which moves the
/// key again when it sees the request, so a key change still follows every call.
pub(super) fn rekey() {
    REKEY_WANTED.store(true, Ordering::SeqCst);
    loop {
        if REKEYING.swap(true, Ordering::SeqCst) {
            return;
        }
        while REKEY_WANTED.swap(false, Ordering::SeqCst) {
            move_key();
        }
        REKEYING.store(false, Ordering::SeqCst);
        // A request made after the last check and before the release found the flag set.
        if !REKEY_WANTED.load(Ordering::SeqCst) {
            return;
        }
    }
}

/// [`rekey`]'s move, by its one caller at a time.
fn move_key() {
    loop {
        let word = TAG_WORD.load(Ordering::SeqCst);
        let mut held = [0u64; 4];
        for slot in &HELD {
            let key = slot.load(Ordering::SeqCst);
            held[usize::from(key / 64)] |= 1 << (key % 64);
        }
        let current = key_of(word);
        // At most SLOTS keys are held, so one of the 255 is free.
        let next = (1..=255u16)
            .map(|step| ((u16::from(current) + step - 1) % 255 + 1) as u8)
            .find(|&k| k != current && held[usize::from(k / 64)] & 1 << (k % 64) == 0)
            .unwrap_or(current);
        let new = word & !KEY_BITS | u64::from(next) << KEY_SHIFT;
        // Only the shape can change meanwhile (`set_shape`).
        if TAG_WORD
            .compare_exchange(word, new, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rekey_never_picks_a_held_key_nor_the_current_one() {
        // Unit tests share the process-wide word: only relations that hold whatever other
        // tests do are asserted.
        let word = TAG_WORD.load(Ordering::SeqCst);
        let next = (key_of(word) % 255) + 1;
        let slot = acquire(word_of(next, 0, 0)).expect("a free slot");
        rekey();
        assert_eq!(acquire(0), None, "no slot for a word without a key");
        let after = TAG_WORD.load(Ordering::SeqCst);
        assert_ne!(key_of(after), next, "held key picked");
        assert_ne!(key_of(after), 0);
        release(slot);
    }

    #[test]
    fn keys_and_the_mask_sit_above_every_user_address() {
        let tag = 0x0000_ffff_ffff_ffff_u64;
        let word = word_of(0x7f, 63, 0x1fe0);
        assert_eq!(word, 0xff7f_0000_0000_003f);
        assert_eq!(rekeyed(tag, word), 0xff7f_ffff_ffff_ffff);
        assert_eq!(rekeyed(tag, word) & ADDRESS_MASK, tag);
        assert_eq!(tag_bits(word, 63), word);
        assert_eq!(key_of(word), 0x7f);
        // What the inline test computes: `shrq $56`, `shll $5`, then the AND (its model says
        // the same).
        assert_eq!(offset_mask_of(word), 0x1fe0);
        assert_eq!(((word >> 56) as u32) << 5, 0x1fe0);
        assert_eq!(epcache_inline::model::Registers::loaded(word).mask, 0x1fe0);
        assert_eq!(offset_mask_of(word_of(1, 4095, 1 << 12)), 1 << 12);
        assert_eq!(offset_mask_of(word_of(9, 63, 0)), 0);
    }
}
