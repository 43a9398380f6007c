//! Temporal reuse and spatial use of each line from its fill to its eviction, as Callgrind's cache-reuse extension measures them.

use super::attribution::BucketIndex;
use super::field_use::{FieldBytes, FieldUse};
use super::line_hash::{LineMap, line_map_with_capacity};
use crate::cache::{LineEvent, LineEventKind};

/// Longest line whose bytes a [`ByteMask`] can tell apart.
pub(crate) const MAX_LINE_SIZE: u32 = 256;

/// Which bytes of a line have been touched, one bit per byte.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct ByteMask([u64; 4]);

impl ByteMask {
    /// Marks bytes `[start, end)` of the line.
    #[inline]
    fn mark(&mut self, start: u32, end: u32) {
        let mut from = start;
        while from < end {
            let word = (from / 64) as usize;
            let to = ((word as u32 + 1) * 64).min(end);
            let width = to - from;
            let bits = if width == 64 {
                u64::MAX
            } else {
                ((1u64 << width) - 1) << (from % 64)
            };
            self.0[word] |= bits;
            from = to;
        }
    }

    fn bytes(&self) -> u64 {
        self.0.iter().map(|w| u64::from(w.count_ones())).sum()
    }

    fn contains(&self, byte: u32) -> bool {
        self.0[(byte / 64) as usize] & (1 << (byte % 64)) != 0
    }
}

/// One stay of one line in the level.
#[derive(Debug, Clone, Copy)]
struct Residency {
    /// Index of the line owner's range.
    range: usize,
    /// Flat bucket of the line's owner.
    flat: usize,
    accesses: u64,
    /// Number of the last access counted, so an access touching the line twice counts once.
    last_access: u64,
    used: ByteMask,
}

/// Totals of closed residencies of one bucket.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct ReuseCounts {
    pub(crate) residencies: u64,
    pub(crate) accesses: u64,
    pub(crate) bytes_used: u64,
}

impl ReuseCounts {
    fn add(&mut self, residency: &Residency) {
        self.residencies += 1;
        self.accesses += residency.accesses;
        self.bytes_used += residency.used.bytes();
    }
}

/// Follows every line of one level that belongs to a named range from fill to eviction.
///
/// Accesses are counted from the program's side: every access touching a resident line counts,
/// whether or not an upper level served it. At the first level that is every access to the line;
/// below, it is what Callgrind reports as the reuse of a block in L2 (its L1 reuse summed in).
#[derive(Debug, Clone)]
pub(crate) struct ReuseTracker {
    line_bits: u32,
    line_size: u32,
    /// Open residencies by block number.
    open: LineMap<Residency>,
    closed: Vec<ReuseCounts>,
    /// Ranges divided by field, by range index: their closed residencies' bytes per member.
    fields: Vec<(usize, FieldBytes)>,
}

impl ReuseTracker {
    /// `line_size` must be at most [`MAX_LINE_SIZE`].
    pub(crate) fn new(line_size: u32, lines: u64, buckets: usize) -> Self {
        debug_assert!(line_size <= MAX_LINE_SIZE);
        Self {
            line_bits: line_size.trailing_zeros(),
            line_size,
            open: line_map_with_capacity(lines as usize),
            closed: vec![ReuseCounts::default(); buckets],
            fields: Vec::new(),
        }
    }

    /// Also counts the bytes of range `range` per member of `fields` (spatial use per field).
    pub(crate) fn divide_by_field(&mut self, range: usize, fields: FieldBytes) {
        self.fields.retain(|(r, _)| *r != range);
        self.fields.push((range, fields));
    }

    /// Spatial use per member of range `range`, when it is divided by field.
    pub(crate) fn field_use(&self, range: usize) -> Option<Vec<FieldUse>> {
        let (_, fields) = self.fields.iter().find(|(r, _)| *r == range)?;
        let mut fields = fields.clone();
        for (&block, residency) in self.open.iter().filter(|(_, o)| o.range == range) {
            fields.add(block << self.line_bits, self.line_size, |b| {
                residency.used.contains(b)
            });
        }
        Some(fields.report())
    }

    /// Counts a residency that ended (or counts as ended) in its bucket and, for a range divided
    /// by field, per member.
    fn close_residency(&mut self, block: u64, residency: &Residency) {
        self.closed[residency.flat].add(residency);
        if let Some((_, fields)) = self.fields.iter_mut().find(|(r, _)| *r == residency.range) {
            fields.add(block << self.line_bits, self.line_size, |b| {
                residency.used.contains(b)
            });
        }
    }

    /// Follows one access: the level's fills and evictions first, in the order they happened,
    /// then the access's bytes on each of its lines still resident.
    ///
    /// A line filled by this access gets the access at once, so a line evicted again within the
    /// same access (a straddling access in a one-way set) still counts it.
    pub(crate) fn on_access(
        &mut self,
        index: &BucketIndex,
        level: u8,
        access: (u64, u32),
        access_number: u64,
        events: &[LineEvent],
    ) {
        let (addr, size) = access;
        for event in events.iter().filter(|e| e.level == level) {
            match event.kind {
                LineEventKind::Fill { evicted } | LineEventKind::WritebackFill { evicted } => {
                    if let Some(victim) = evicted {
                        self.close(victim);
                    }
                    self.open(index, event.line_addr);
                    if let LineEventKind::Fill { .. } = event.kind {
                        self.touch(event.line_addr >> self.line_bits, addr, size, access_number);
                    }
                }
                LineEventKind::Invalidated => self.close(event.line_addr),
                LineEventKind::Hit | LineEventKind::Bypass => {}
            }
        }
        let last = (addr + u64::from(size.max(1)) - 1) >> self.line_bits;
        for block in addr >> self.line_bits..=last {
            self.touch(block, addr, size, access_number);
        }
    }

    fn open(&mut self, index: &BucketIndex, line_addr: u64) {
        let Some(slot) = index.locate_line(line_addr, self.line_size) else {
            return;
        };
        let fresh = Residency {
            range: slot.range,
            flat: slot.flat,
            accesses: 0,
            last_access: u64::MAX,
            used: ByteMask::default(),
        };
        // An open residency here means the hierarchy evicted the line without telling us
        // (an instruction fetch through a unified level); it ended before this fill.
        let block = line_addr >> self.line_bits;
        if let Some(stale) = self.open.insert(block, fresh) {
            self.close_residency(block, &stale);
        }
    }

    fn close(&mut self, line_addr: u64) {
        let block = line_addr >> self.line_bits;
        if let Some(residency) = self.open.remove(&block) {
            self.close_residency(block, &residency);
        }
    }

    #[inline]
    fn touch(&mut self, block: u64, addr: u64, size: u32, access_number: u64) {
        let line_start = block << self.line_bits;
        let line_end = line_start + u64::from(self.line_size);
        let access_end = addr + u64::from(size.max(1));
        // A level with shorter lines than the one above fills lines the access itself skips.
        if addr >= line_end || access_end <= line_start {
            return;
        }
        let Some(residency) = self.open.get_mut(&block) else {
            return;
        };
        if residency.last_access == access_number {
            return;
        }
        residency.last_access = access_number;
        residency.accesses += 1;
        let start = addr.max(line_start) - line_start;
        let end = access_end.min(line_end) - line_start;
        residency.used.mark(start as u32, end as u32);
    }

    /// Closes every open residency, as if the program ended here.
    pub(crate) fn finish(&mut self) {
        let open = std::mem::take(&mut self.open);
        for (block, residency) in open {
            self.close_residency(block, &residency);
        }
    }

    /// Forgets everything, open residencies included: only lines filled from now on are followed.
    pub(crate) fn reset(&mut self) {
        self.open.clear();
        self.closed.fill(ReuseCounts::default());
        for (_, fields) in &mut self.fields {
            fields.reset();
        }
    }

    /// Per-bucket totals with the open residencies counted as if closed now.
    pub(crate) fn counts(&self) -> Vec<ReuseCounts> {
        let mut counts = self.closed.clone();
        for residency in self.open.values() {
            counts[residency.flat].add(residency);
        }
        counts
    }
}

/// Temporal reuse and spatial use of one range, in total and per bucket.
///
/// A residency is one stay of a line in the level, from its fill to its eviction (or the end
/// of the run). Temporal reuse is accesses per residency; spatial use is the share of the
/// bytes of the lines brought in that were accessed before they left.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ReuseReport {
    /// Residencies of lines of this range.
    pub residencies: u64,
    /// Accesses to those lines while resident.
    pub accesses: u64,
    /// Bytes accessed, summed over residencies (each byte once per residency).
    pub bytes_used: u64,
    /// `accesses / residencies`; `None` without residencies.
    pub temporal_reuse: Option<f64>,
    /// `bytes_used / (residencies * line size)`, from 0 to 1; `None` without residencies.
    pub spatial_use: Option<f64>,
    /// The same, per bucket of the range.
    pub buckets: ReuseBuckets,
    /// Spatial use per member (then the padding) of a range divided by field; empty otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fields: Vec<FieldUse>,
}

/// Per-bucket vectors of a [`ReuseReport`], one entry per bucket.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ReuseBuckets {
    pub residencies: Vec<u64>,
    pub accesses: Vec<u64>,
    pub bytes_used: Vec<u64>,
    pub temporal_reuse: Vec<Option<f64>>,
    pub spatial_use: Vec<Option<f64>>,
}

fn temporal_reuse(c: &ReuseCounts) -> Option<f64> {
    (c.residencies > 0).then(|| c.accesses as f64 / c.residencies as f64)
}

fn spatial_use(c: &ReuseCounts, line_size: u32) -> Option<f64> {
    (c.residencies > 0).then(|| c.bytes_used as f64 / (c.residencies as f64 * f64::from(line_size)))
}

impl ReuseReport {
    /// The report of the buckets `counts` of one range.
    pub(crate) fn from_buckets(counts: &[ReuseCounts], line_size: u32) -> Self {
        let mut total = ReuseCounts::default();
        let mut buckets = ReuseBuckets::default();
        for c in counts {
            total.residencies += c.residencies;
            total.accesses += c.accesses;
            total.bytes_used += c.bytes_used;
            buckets.residencies.push(c.residencies);
            buckets.accesses.push(c.accesses);
            buckets.bytes_used.push(c.bytes_used);
            buckets.temporal_reuse.push(temporal_reuse(c));
            buckets.spatial_use.push(spatial_use(c, line_size));
        }
        Self {
            residencies: total.residencies,
            accesses: total.accesses,
            bytes_used: total.bytes_used,
            temporal_reuse: temporal_reuse(&total),
            spatial_use: spatial_use(&total, line_size),
            buckets,
            fields: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_count_each_byte_once_across_words() {
        let mut m = ByteMask::default();
        m.mark(60, 70);
        m.mark(0, 4);
        m.mark(2, 6);
        m.mark(192, 256);
        assert_eq!(m.bytes(), 10 + 6 + 64);
        m.mark(0, 256);
        assert_eq!(m.bytes(), 256);
    }

    #[test]
    fn reports_divide_by_residencies_and_line_size() {
        let counts = [
            ReuseCounts {
                residencies: 2,
                accesses: 6,
                bytes_used: 32,
            },
            ReuseCounts::default(),
        ];
        let r = ReuseReport::from_buckets(&counts, 32);
        assert_eq!(r.temporal_reuse, Some(3.0));
        assert_eq!(r.spatial_use, Some(0.5));
        assert_eq!(r.buckets.temporal_reuse, [Some(3.0), None]);
    }
}
