//! Named address ranges (data structures) and the fast lookup from an address to its range and bucket.

/// A half-open byte range `[start, end)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct AddressRange {
    pub start: u64,
    pub end: u64,
}

impl AddressRange {
    /// `[start, start + len)`.
    pub const fn new(start: u64, len: u64) -> Self {
        Self {
            start,
            end: start.saturating_add(len),
        }
    }

    pub fn len(&self) -> u64 {
        self.end - self.start
    }

    pub fn is_empty(&self) -> bool {
        self.end <= self.start
    }

    #[inline]
    pub fn contains(&self, addr: u64) -> bool {
        // One comparison: addresses below start wrap around to huge offsets.
        addr.wrapping_sub(self.start) < self.end - self.start
    }
}

/// A data structure the analyses report on: a name, its bytes, and the histogram bucket width.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct NamedRange {
    pub name: String,
    pub range: AddressRange,
    /// Bucket width in bytes for per-bucket results (a multiple of the line size).
    pub bucket_bytes: u64,
}

impl NamedRange {
    pub fn buckets(&self) -> usize {
        self.range.len().div_ceil(self.bucket_bytes.max(1)) as usize
    }
}

/// Non-overlapping named ranges, sorted, looked up by binary search.
#[derive(Debug, Clone, Default)]
pub struct RangeSet {
    ranges: Vec<NamedRange>,
    /// `order[i]` is the index into `ranges` of the i-th range by start address.
    order: Vec<usize>,
}

/// Two data structures that claim the same bytes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "data structure `{new}` [{new_start:#x}, {new_end:#x}) overlaps `{old}`; ranges given to one analysis must be disjoint"
)]
pub struct OverlappingRanges {
    pub new: String,
    pub old: String,
    pub new_start: u64,
    pub new_end: u64,
}

impl RangeSet {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a range; returns its index (stable: the order of insertion).
    pub fn insert(&mut self, r: NamedRange) -> Result<usize, OverlappingRanges> {
        if let Some(old) = self
            .ranges
            .iter()
            .find(|o| o.range.start < r.range.end && r.range.start < o.range.end)
        {
            return Err(OverlappingRanges {
                new: r.name,
                old: old.name.clone(),
                new_start: r.range.start,
                new_end: r.range.end,
            });
        }
        let idx = self.ranges.len();
        let pos = self
            .order
            .partition_point(|&i| self.ranges[i].range.start < r.range.start);
        self.ranges.push(r);
        self.order.insert(pos, idx);
        Ok(idx)
    }

    /// Index of the range holding `addr`, if any.
    #[inline]
    pub fn find(&self, addr: u64) -> Option<usize> {
        let pos = self
            .order
            .partition_point(|&i| self.ranges[i].range.start <= addr);
        let idx = *self.order.get(pos.checked_sub(1)?)?;
        self.ranges[idx].range.contains(addr).then_some(idx)
    }

    /// Index of the range and bucket holding `addr`.
    #[inline]
    pub fn find_bucket(&self, addr: u64) -> Option<(usize, usize)> {
        let idx = self.find(addr)?;
        let r = &self.ranges[idx];
        Some((
            idx,
            ((addr - r.range.start) / r.bucket_bytes.max(1)) as usize,
        ))
    }

    pub fn get(&self, idx: usize) -> &NamedRange {
        &self.ranges[idx]
    }

    pub fn len(&self) -> usize {
        self.ranges.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// The ranges in insertion order.
    pub fn iter(&self) -> impl Iterator<Item = &NamedRange> {
        self.ranges.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(name: &str, start: u64, len: u64, bucket: u64) -> NamedRange {
        NamedRange {
            name: name.into(),
            range: AddressRange::new(start, len),
            bucket_bytes: bucket,
        }
    }

    #[test]
    fn finds_ranges_and_buckets() {
        let mut s = RangeSet::new();
        assert_eq!(s.insert(named("B", 0x2000, 0x100, 64)), Ok(0));
        assert_eq!(s.insert(named("A", 0x1000, 0x100, 32)), Ok(1));
        assert_eq!(s.find(0x0fff), None);
        assert_eq!(s.find_bucket(0x1000), Some((1, 0)));
        assert_eq!(s.find_bucket(0x10ff), Some((1, 7)));
        assert_eq!(s.find(0x1100), None);
        assert_eq!(s.find_bucket(0x2041), Some((0, 1)));
        assert_eq!(s.find(u64::MAX), None);
        assert_eq!(s.get(1).buckets(), 8);
    }

    #[test]
    fn overlaps_are_refused_by_name() {
        let mut s = RangeSet::new();
        s.insert(named("A", 0x1000, 0x100, 32)).unwrap();
        let e = s.insert(named("B", 0x10f0, 0x100, 32)).unwrap_err();
        assert!(e.to_string().contains("`B`") && e.to_string().contains("`A`"));
    }

    #[test]
    fn contains_is_half_open() {
        let r = AddressRange::new(10, 5);
        assert!(!r.contains(9) && r.contains(10) && r.contains(14) && !r.contains(15));
    }
}
