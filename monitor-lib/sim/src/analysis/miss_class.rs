//! Miss classification: compulsory, capacity or conflict, against an infinite and a fully-associative shadow cache.

use super::attribution::Slot;

/// Why an access missed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MissClass {
    /// An infinite cache would have missed too: the access touched a line for the first time.
    Compulsory,
    /// A fully-associative LRU cache with as many lines would have missed too.
    Capacity,
    /// A fully-associative LRU cache with as many lines would have hit: the set mapping is to blame.
    Conflict,
}

impl MissClass {
    /// The class of a miss whose reuse distance (the largest over its lines, `None` when any
    /// line is new) is `distance`, in a level of `lines` lines.
    #[inline]
    pub(crate) fn of(distance: Option<u64>, lines: u64) -> Self {
        match distance {
            None => Self::Compulsory,
            Some(d) if d >= lines => Self::Capacity,
            Some(_) => Self::Conflict,
        }
    }
}

/// Misses by class.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct MissClassCounts {
    pub compulsory: u64,
    pub capacity: u64,
    pub conflict: u64,
}

impl MissClassCounts {
    /// All misses counted.
    pub fn total(&self) -> u64 {
        self.compulsory + self.capacity + self.conflict
    }

    #[inline]
    fn add(&mut self, class: MissClass) {
        match class {
            MissClass::Compulsory => self.compulsory += 1,
            MissClass::Capacity => self.capacity += 1,
            MissClass::Conflict => self.conflict += 1,
        }
    }
}

/// Counts classified misses overall and per bucket.
#[derive(Debug, Clone)]
pub(crate) struct MissClassifier {
    lines: u64,
    pub(crate) all: MissClassCounts,
    pub(crate) per_bucket: Vec<MissClassCounts>,
}

impl MissClassifier {
    pub(crate) fn new(lines: u64, buckets: usize) -> Self {
        Self {
            lines,
            all: MissClassCounts::default(),
            per_bucket: vec![MissClassCounts::default(); buckets],
        }
    }

    /// Counts one miss at the level, attributed to `slot`.
    #[inline]
    pub(crate) fn record_miss(&mut self, slot: Option<Slot>, distance: Option<u64>) {
        let class = MissClass::of(distance, self.lines);
        self.all.add(class);
        if let Some(slot) = slot {
            self.per_bucket[slot.flat].add(class);
        }
    }

    pub(crate) fn reset(&mut self) {
        self.all = MissClassCounts::default();
        self.per_bucket.fill(MissClassCounts::default());
    }
}

/// Miss classes of one range, in total and per bucket.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct MissClassReport {
    pub total: MissClassCounts,
    /// Per-bucket vectors, one entry per bucket.
    pub buckets: MissClassBuckets,
}

/// Per-bucket vectors of a [`MissClassReport`].
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct MissClassBuckets {
    pub compulsory: Vec<u64>,
    pub capacity: Vec<u64>,
    pub conflict: Vec<u64>,
}

impl MissClassReport {
    pub(crate) fn from_buckets(counts: &[MissClassCounts]) -> Self {
        let mut total = MissClassCounts::default();
        let mut buckets = MissClassBuckets::default();
        for c in counts {
            total.compulsory += c.compulsory;
            total.capacity += c.capacity;
            total.conflict += c.conflict;
            buckets.compulsory.push(c.compulsory);
            buckets.capacity.push(c.capacity);
            buckets.conflict.push(c.conflict);
        }
        Self { total, buckets }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distance_against_size_decides_the_class() {
        assert_eq!(MissClass::of(None, 8), MissClass::Compulsory);
        assert_eq!(MissClass::of(Some(8), 8), MissClass::Capacity);
        assert_eq!(MissClass::of(Some(7), 8), MissClass::Conflict);
    }

    #[test]
    fn misses_outside_every_range_count_only_overall() {
        let mut c = MissClassifier::new(4, 2);
        c.record_miss(Some(Slot { range: 0, flat: 1 }), Some(9));
        c.record_miss(None, None);
        assert_eq!(c.all.total(), 2);
        assert_eq!(c.per_bucket[1].capacity, 1);
        assert_eq!(c.per_bucket[0].total(), 0);
    }
}
