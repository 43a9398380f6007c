//! A cheap hasher for line and block numbers, so the analyses' per-line maps cost a multiply per lookup.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Multiplicative hashing in the style of rustc's FxHash.
///
/// Keys are block numbers, often in strides of a power of two. A product's low bits depend only
/// on the key's low bits, so the result is rotated to bring the well-mixed high bits down to
/// where the hash table takes its bucket index.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct LineHasher {
    hash: u64,
}

/// An odd constant with well-spread bits (the golden ratio in fixed point, as FxHash uses).
const MULTIPLIER: u64 = 0x9e37_79b9_7f4a_7c15;

impl Hasher for LineHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
    }

    #[inline]
    fn write_u64(&mut self, value: u64) {
        self.hash = (self.hash.rotate_left(5) ^ value).wrapping_mul(MULTIPLIER);
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.hash.rotate_left(26)
    }
}

/// A `HashMap` keyed by block numbers with [`LineHasher`].
pub(crate) type LineMap<V> = HashMap<u64, V, BuildHasherDefault<LineHasher>>;

/// An empty [`LineMap`] with room for `capacity` lines, so filling it up to that size never allocates.
pub(crate) fn line_map_with_capacity<V>(capacity: usize) -> LineMap<V> {
    LineMap::with_capacity_and_hasher(capacity, BuildHasherDefault::default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::BuildHasher;

    #[test]
    fn strided_keys_spread_over_the_low_bits() {
        // Keys 0, 64, 128, ... share their six low bits; a bare multiply would keep them equal.
        let build = BuildHasherDefault::<LineHasher>::default();
        let low_bits: std::collections::HashSet<u64> =
            (0..64u64).map(|k| build.hash_one(k * 64) & 63).collect();
        assert!(
            low_bits.len() > 32,
            "only {} distinct low-bit patterns",
            low_bits.len()
        );
    }

    #[test]
    fn map_round_trips() {
        let mut map = line_map_with_capacity(4);
        map.insert(7u64, "seven");
        map.insert(7 << 40, "far");
        assert_eq!(map.get(&7), Some(&"seven"));
        assert_eq!(map.get(&(7 << 40)), Some(&"far"));
        assert_eq!(map.get(&8), None);
    }
}
