//! Which data structure and bucket an access or a line belongs to, as one flat index per bucket.

use crate::ranges::{NamedRange, RangeSet};

/// One bucket of one named range, numbered across all ranges so per-bucket counters live in one `Vec`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Slot {
    /// Index of the range in the [`RangeSet`] (insertion order).
    pub(crate) range: usize,
    /// Position of the bucket in the flat numbering.
    pub(crate) flat: usize,
}

/// The ranges the analyses report on, with the flat bucket numbering.
#[derive(Debug, Clone)]
pub(crate) struct BucketIndex {
    ranges: RangeSet,
    /// `first_bucket[r]` is the flat number of range `r`'s bucket 0; one extra entry holds the total.
    first_bucket: Vec<usize>,
}

impl BucketIndex {
    pub(crate) fn new(ranges: RangeSet) -> Self {
        let mut first_bucket = Vec::with_capacity(ranges.len() + 1);
        let mut next = 0;
        for range in ranges.iter() {
            first_bucket.push(next);
            next += range.buckets();
        }
        first_bucket.push(next);
        Self {
            ranges,
            first_bucket,
        }
    }

    /// Number of named ranges; also the index the analyses use for the pseudo-range "(other)".
    pub(crate) fn range_count(&self) -> usize {
        self.ranges.len()
    }

    /// Number of buckets over all ranges.
    pub(crate) fn bucket_count(&self) -> usize {
        self.first_bucket[self.ranges.len()]
    }

    pub(crate) fn range(&self, range: usize) -> &NamedRange {
        self.ranges.get(range)
    }

    /// The flat numbers of range `range`'s buckets.
    pub(crate) fn flat_buckets(&self, range: usize) -> std::ops::Range<usize> {
        self.first_bucket[range]..self.first_bucket[range + 1]
    }

    /// The bucket holding byte `addr`.
    #[inline]
    pub(crate) fn locate(&self, addr: u64) -> Option<Slot> {
        let (range, bucket) = self.ranges.find_bucket(addr)?;
        Some(Slot {
            range,
            flat: self.first_bucket[range] + bucket,
        })
    }

    /// The bucket a whole line belongs to: the one holding its first byte, or, when a range starts
    /// inside the line, the one holding its last byte.
    ///
    /// A line's owner must not depend on which access touched it, so evictor and victim are
    /// named the same way whoever asks. A range lying strictly inside one line owns none of it.
    #[inline]
    pub(crate) fn locate_line(&self, line_addr: u64, line_size: u32) -> Option<Slot> {
        self.locate(line_addr)
            .or_else(|| self.locate(line_addr + u64::from(line_size) - 1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ranges::AddressRange;

    fn index() -> BucketIndex {
        let mut ranges = RangeSet::new();
        for (name, start, len) in [("b", 0x2000, 0x100), ("a", 0x1010, 0x80)] {
            ranges
                .insert(NamedRange {
                    name: name.into(),
                    range: AddressRange::new(start, len),
                    bucket_bytes: 64,
                })
                .unwrap();
        }
        BucketIndex::new(ranges)
    }

    #[test]
    fn buckets_are_numbered_range_after_range() {
        let index = index();
        assert_eq!(index.bucket_count(), 4 + 2);
        assert_eq!(index.flat_buckets(1), 4..6);
        assert_eq!(index.locate(0x20c0), Some(Slot { range: 0, flat: 3 }));
        assert_eq!(index.locate(0x1050), Some(Slot { range: 1, flat: 5 }));
        assert_eq!(index.locate(0x1090), None);
    }

    #[test]
    fn a_line_starting_before_its_range_belongs_to_it() {
        let index = index();
        // Line 0x1000..0x1040 holds 0x30 bytes of `a`, which starts at 0x1010.
        assert_eq!(
            index.locate_line(0x1000, 64),
            Some(Slot { range: 1, flat: 4 })
        );
        assert_eq!(index.locate_line(0x0fc0, 64), None);
    }
}
