//! Reuse-distance histograms, overall and per data structure, and what they predict for other cache sizes.

/// Distances below this have a bucket each.
const LINEAR_LIMIT: u64 = 32;
/// Each power of two from [`LINEAR_LIMIT`] on is split into `2^SUB_BITS` equal buckets, so every
/// cache size of the form `m * 2^k` with `m < 32` (any power-of-two size times an odd factor up to
/// 31: 12-way, 20-way, 30 MB last-level caches...) is a bucket boundary and predicts exactly.
const SUB_BITS: u32 = 4;
const SUB_BUCKETS: u64 = 1 << SUB_BITS;

/// Index of the fine bucket holding `distance`.
fn fine_index(distance: u64) -> usize {
    if distance < LINEAR_LIMIT {
        return distance as usize;
    }
    let octave = 63 - distance.leading_zeros();
    let mantissa = distance >> (octave - SUB_BITS);
    (LINEAR_LIMIT + u64::from(octave - 5) * SUB_BUCKETS + (mantissa - SUB_BUCKETS)) as usize
}

/// Index of the log2 bucket holding `distance`.
fn log2_index(distance: u64) -> usize {
    (64 - distance.leading_zeros()) as usize
}

/// A histogram of reuse distances of the accesses that reached one cache level.
///
/// The distance of an access is the number of distinct lines the level saw since the previous
/// access to the same line; an access that touches several lines takes the largest, so an access
/// counts as a miss of a fully-associative LRU cache when any of its lines would miss, the way
/// the hierarchy counts it.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DistanceHistogram {
    /// Accesses counted, cold ones included.
    pub accesses: u64,
    /// Accesses touching a line the level had never seen: misses of any cache, however large.
    pub cold: u64,
    /// `log2[0]` counts distance 0, `log2[k]` distances in `[2^(k-1), 2^k)`.
    pub log2: Vec<u64>,
    /// Finer buckets for exact predictions: `fine[i]` counts distances from
    /// [`DistanceHistogram::fine_bucket_start`]`(i)` up to the next bucket's start.
    pub fine: Vec<u64>,
}

impl DistanceHistogram {
    /// Counts one access; `None` is a cold access.
    #[inline]
    pub(crate) fn record(&mut self, distance: Option<u64>) {
        self.accesses += 1;
        let Some(distance) = distance else {
            self.cold += 1;
            return;
        };
        bump(&mut self.fine, fine_index(distance));
        bump(&mut self.log2, log2_index(distance));
    }

    /// The smallest distance fine bucket `index` counts.
    pub fn fine_bucket_start(index: usize) -> u64 {
        let index = index as u64;
        if index < LINEAR_LIMIT {
            return index;
        }
        let above = index - LINEAR_LIMIT;
        let octave = 5 + above / SUB_BUCKETS;
        if octave >= 64 {
            // Past the largest distance: the end of the last bucket.
            return u64::MAX;
        }
        let mantissa = SUB_BUCKETS + above % SUB_BUCKETS;
        mantissa << (octave - u64::from(SUB_BITS))
    }

    /// Whether [`DistanceHistogram::predicted_misses`] is exact for a cache of `lines` lines
    /// (it is for every size below 32 and every `m * 2^k` with `m < 32`).
    pub fn is_exact_for(lines: u64) -> bool {
        lines == 0 || Self::fine_bucket_start(fine_index(lines)) == lines
    }

    /// How many of these accesses a fully-associative LRU cache of `lines` lines would miss.
    ///
    /// Exact when [`DistanceHistogram::is_exact_for`] says so; otherwise the bucket holding
    /// `lines` is split in proportion, assuming its distances are spread evenly.
    pub fn predicted_misses(&self, lines: u64) -> u64 {
        if lines == 0 {
            return self.accesses;
        }
        let split = fine_index(lines);
        let beyond: u64 = self.fine.iter().skip(split + 1).sum();
        let in_split = self.fine.get(split).copied().unwrap_or(0);
        let start = Self::fine_bucket_start(split);
        let end = Self::fine_bucket_start(split + 1);
        // Distances in [lines, end) miss; [start, lines) hit.
        let missing_part = u128::from(in_split) * u128::from(end - lines) / u128::from(end - start);
        self.cold + beyond + missing_part as u64
    }
}

#[inline]
fn bump(counts: &mut Vec<u64>, index: usize) {
    if index >= counts.len() {
        counts.resize(index + 1, 0);
    }
    counts[index] += 1;
}

/// The overall histogram and one per named range, filled as accesses arrive.
#[derive(Debug, Clone)]
pub(crate) struct ReuseDistances {
    pub(crate) overall: DistanceHistogram,
    pub(crate) per_range: Vec<DistanceHistogram>,
}

impl ReuseDistances {
    pub(crate) fn new(ranges: usize) -> Self {
        Self {
            overall: DistanceHistogram::default(),
            per_range: vec![DistanceHistogram::default(); ranges],
        }
    }

    /// Counts one access attributed to `range` (`None`: no named range).
    #[inline]
    pub(crate) fn record(&mut self, range: Option<usize>, distance: Option<u64>) {
        self.overall.record(distance);
        if let Some(range) = range {
            self.per_range[range].record(distance);
        }
    }

    pub(crate) fn reset(&mut self) {
        *self = Self::new(self.per_range.len());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fine_buckets_tile_the_distances_without_gaps() {
        for distance in 0..5000u64 {
            let i = fine_index(distance);
            let start = DistanceHistogram::fine_bucket_start(i);
            let end = DistanceHistogram::fine_bucket_start(i + 1);
            assert!(
                start <= distance && distance < end,
                "{distance} in [{start}, {end})"
            );
        }
        assert_eq!(fine_index(u64::MAX), fine_index(u64::MAX - 1));
    }

    #[test]
    fn common_cache_sizes_predict_exactly() {
        for lines in [1, 7, 31, 32, 48, 512, 768, 20480, 491_520, 1 << 40] {
            assert!(DistanceHistogram::is_exact_for(lines), "{lines}");
        }
        assert!(!DistanceHistogram::is_exact_for(33));
    }

    #[test]
    fn log2_buckets_hold_powers_of_two_ranges() {
        let mut h = DistanceHistogram::default();
        for d in [0, 1, 2, 3, 4, 7, 8] {
            h.record(Some(d));
        }
        h.record(None);
        assert_eq!(h.log2, [1, 1, 2, 2, 1]);
        assert_eq!((h.accesses, h.cold), (8, 1));
    }

    #[test]
    fn predictions_count_distances_at_or_beyond_the_size() {
        let mut h = DistanceHistogram::default();
        for d in [0, 3, 3, 40, 100] {
            h.record(Some(d));
        }
        h.record(None);
        assert_eq!(h.predicted_misses(0), 6);
        assert_eq!(h.predicted_misses(1), 5);
        assert_eq!(h.predicted_misses(3), 5);
        assert_eq!(h.predicted_misses(4), 3);
        assert_eq!(h.predicted_misses(40), 3);
        assert_eq!(h.predicted_misses(41), 2); // 40 shares [40, 42) with 41: split in half, rounded down
        assert_eq!(h.predicted_misses(1 << 20), 1);
    }
}
