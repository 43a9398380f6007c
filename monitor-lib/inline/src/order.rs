//! An entry's recency order: which of its [`SLOTS`] lines its set used last, and in what order,
//! in one byte, with the tables that update it.
//!
//! An entry holds its L1 set's most recently used lines, up to [`SLOTS`] of them (the runtime
//! chooses how many it uses, `usable`, at most the set's ways). A repeat hit on any of them is
//! counted without simulating, which is exact only if the simulator later learns the order in
//! which they were used: under LRU, the set's next miss evicts by that order, and the lines
//! keep it below the new one. So the entry keeps the order, and a hit or a take-over updates
//! it by one table lookup (a load indexed by the order byte), with no branch and no compare:
//! the sequence cannot afford to search for a slot's position.
//!
//! The order byte lists the slots by recency, two bits each: bits `2p..2p+1` hold the slot at
//! position `p`, position 0 the most recent. The byte stored in the entry is that order XORed
//! with [`IDENTITY`], so a zeroed entry (as a thread's block starts, and as the runtime
//! empties one) holds the identity order. The tables depend on `usable` only: a hit on slot
//! `j` moves it to position 0 (a slot beyond the usable ones, which never holds a line, leaves
//! the order as it is), and a miss takes the slot at position `usable - 1` (the least recent)
//! and moves it to position 0. The stored byte's low two bits name the most recent slot, which
//! the sequence tries before the others.

/// Lines an entry holds at most.
pub const SLOTS: usize = 4;

/// The order byte of a zeroed entry: slot `p` at position `p`.
pub const IDENTITY: u8 = 0b11_10_01_00;

/// The stored order byte's bits that name the most recent slot, which the sequence tries
/// first: [`IDENTITY`] has slot 0 at position 0, so the XOR leaves them as they are.
pub const MOST_RECENT_MASK: u8 = (SLOTS - 1) as u8;

const _: () = assert!(IDENTITY & MOST_RECENT_MASK == 0 && SLOTS.is_power_of_two());

/// Bytes of each table: one value per order byte.
pub const TABLE_BYTES: usize = 256;

/// The tables the sequence reads, in the order they lie in the thread's block: the order after
/// a hit on slot `j` (one table per slot), the order after a miss, and the slot a miss takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrderTables {
    pub after_hit: [[u8; TABLE_BYTES]; SLOTS],
    pub after_miss: [u8; TABLE_BYTES],
    pub victim: [u8; TABLE_BYTES],
}

/// Byte offsets of the tables in [`OrderTables::bytes`]: the hit table of slot `j` at
/// `AFTER_HIT + j * TABLE_BYTES` ...
pub const AFTER_HIT: usize = 0;
/// ... the miss table ...
pub const AFTER_MISS: usize = SLOTS * TABLE_BYTES;
/// ... and the victim table.
pub const VICTIM: usize = AFTER_MISS + TABLE_BYTES;
/// Bytes of all the tables.
pub const TABLES_BYTES: usize = VICTIM + TABLE_BYTES;

/// The slots of the stored order byte `stored`, most recent first.
#[inline]
pub const fn by_recency(stored: u8) -> [usize; SLOTS] {
    let order = stored ^ IDENTITY;
    let mut slots = [0; SLOTS];
    let mut p = 0;
    while p < SLOTS {
        slots[p] = (order >> (2 * p)) as usize & (SLOTS - 1);
        p += 1;
    }
    slots
}

/// The stored order byte of `slots`, most recent first.
#[inline]
pub const fn stored(slots: [usize; SLOTS]) -> u8 {
    let mut order = 0u8;
    let mut p = 0;
    while p < SLOTS {
        order |= ((slots[p] & (SLOTS - 1)) as u8) << (2 * p);
        p += 1;
    }
    order ^ IDENTITY
}

/// The stored order after a use of `slot` in the stored order `before`, of an entry using its
/// first `usable` positions: the slot moves to position 0 if it is at one of them; otherwise
/// (a byte no table made, or a slot beyond them) nothing changes.
pub const fn after_use(before: u8, slot: usize, usable: usize) -> u8 {
    let mut slots = by_recency(before);
    let mut p = 0;
    while p < usable && p < SLOTS {
        if slots[p] == slot {
            while p > 0 {
                slots[p] = slots[p - 1];
                p -= 1;
            }
            slots[0] = slot;
            return stored(slots);
        }
        p += 1;
    }
    before
}

/// The slot a miss takes in the stored order `before`: the least recent of the first `usable`.
pub const fn victim(before: u8, usable: usize) -> usize {
    by_recency(before)[usable - 1]
}

impl OrderTables {
    /// The tables of an entry that uses `usable` slots (1 to [`SLOTS`]).
    pub fn new(usable: usize) -> OrderTables {
        assert!((1..=SLOTS).contains(&usable), "{usable} usable slots");
        let mut tables = OrderTables {
            after_hit: [[0; TABLE_BYTES]; SLOTS],
            after_miss: [0; TABLE_BYTES],
            victim: [0; TABLE_BYTES],
        };
        for before in 0..=u8::MAX {
            let b = usize::from(before);
            for (slot, table) in tables.after_hit.iter_mut().enumerate() {
                table[b] = after_use(before, slot, usable);
            }
            let taken = victim(before, usable);
            tables.victim[b] = taken as u8;
            tables.after_miss[b] = after_use(before, taken, usable);
        }
        tables
    }

    /// The byte at `offset` of [`Self::bytes`].
    pub fn byte(&self, offset: usize) -> u8 {
        let (table, at) = (offset / TABLE_BYTES, offset % TABLE_BYTES);
        match table {
            t if t < SLOTS => self.after_hit[t][at],
            t if t == SLOTS => self.after_miss[at],
            _ => self.victim[at],
        }
    }

    /// The tables as they lie in the thread's block ([`AFTER_HIT`], [`AFTER_MISS`], [`VICTIM`]).
    pub fn bytes(&self) -> [u8; TABLES_BYTES] {
        let mut out = [0; TABLES_BYTES];
        for (slot, table) in self.after_hit.iter().enumerate() {
            out[AFTER_HIT + slot * TABLE_BYTES..][..TABLE_BYTES].copy_from_slice(table);
        }
        out[AFTER_MISS..][..TABLE_BYTES].copy_from_slice(&self.after_miss);
        out[VICTIM..][..TABLE_BYTES].copy_from_slice(&self.victim);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_zeroed_entry_holds_the_identity_order() {
        assert_eq!(by_recency(0), [0, 1, 2, 3]);
        assert_eq!(stored([0, 1, 2, 3]), 0);
        assert_eq!(stored([3, 0, 1, 2]), 0b10_01_00_11 ^ IDENTITY);
        for b in 0..=u8::MAX {
            assert_eq!(stored(by_recency(b)), b);
            // The sequence's probe of the most recent slot reads it from the low bits.
            assert_eq!(usize::from(b & MOST_RECENT_MASK), by_recency(b)[0]);
        }
    }

    #[test]
    fn a_hit_moves_its_slot_to_the_front_and_a_miss_takes_the_least_recent() {
        let t = OrderTables::new(4);
        let o = stored([2, 0, 3, 1]);
        assert_eq!(by_recency(t.after_hit[3][usize::from(o)]), [3, 2, 0, 1]);
        assert_eq!(by_recency(t.after_hit[2][usize::from(o)]), [2, 0, 3, 1]);
        assert_eq!(t.victim[usize::from(o)], 1);
        assert_eq!(by_recency(t.after_miss[usize::from(o)]), [1, 2, 0, 3]);
        // Two usable slots: the others never move and are never taken.
        let t = OrderTables::new(2);
        let o = stored([1, 0, 2, 3]);
        assert_eq!(t.victim[usize::from(o)], 0);
        assert_eq!(by_recency(t.after_miss[usize::from(o)]), [0, 1, 2, 3]);
        assert_eq!(t.after_hit[3][usize::from(o)], o);
        assert_eq!(by_recency(t.after_hit[0][usize::from(o)]), [0, 1, 2, 3]);
        // One: slot 0 always.
        let t = OrderTables::new(1);
        assert!(
            t.victim
                .iter()
                .all(|&v| v == by_recency(0)[0] as u8 || v < 4)
        );
        assert_eq!(t.victim[0], 0);
        assert_eq!(t.after_miss[0], 0);
        assert_eq!(t.after_hit[0][0], 0);
    }

    #[test]
    fn the_tables_keep_a_permutation_of_the_slots_as_lru_would() {
        // Against a plain LRU list of slots, over every sequence of four uses from the
        // identity, for every usable count.
        for usable in 1..=SLOTS {
            let t = OrderTables::new(usable);
            for seq in 0..(SLOTS + 1).pow(4) {
                let mut byte = 0u8;
                let mut lru: Vec<usize> = (0..SLOTS).collect();
                let mut s = seq;
                for _ in 0..4 {
                    let op = s % (SLOTS + 1);
                    s /= SLOTS + 1;
                    let slot = if op == SLOTS {
                        let v = t.victim[usize::from(byte)] as usize;
                        assert_eq!(v, lru[usable - 1]);
                        byte = t.after_miss[usize::from(byte)];
                        v
                    } else {
                        byte = t.after_hit[op][usize::from(byte)];
                        op
                    };
                    if let Some(p) = lru[..usable].iter().position(|&x| x == slot) {
                        lru.remove(p);
                        lru.insert(0, slot);
                    }
                    assert_eq!(by_recency(byte).to_vec(), lru, "usable {usable} seq {seq}");
                }
            }
        }
    }
}
