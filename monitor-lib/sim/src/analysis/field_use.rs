//! Spatial use per member of an array of structures: of the bytes of each member that lines
//! brought into the level, the share the program accessed before the line left.
//!
//! A by-field histogram says which member the accesses went to; this says which members rode
//! along unused in the lines they fetched. For `struct {double x, y, z; int id;}` read only
//! through `x`, `x` has spatial use 1 and `y`, `z`, `id` 0, while the range's spatial use is
//! 0.25: the three quarters of every line the loop pays for and never reads are the other
//! members. The counts are taken when a residency closes, byte by byte over the line's part
//! of the range, so they cost nothing per access beyond what the reuse analysis already pays.

use crate::monitor::{FieldLayout, FieldLayoutError};

/// Fetched and used bytes of one member (or of the padding) over a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct FieldUse {
    /// The member's bytes brought into the level, summed over residencies.
    pub fetched_bytes: u64,
    /// Those of them accessed before their line left.
    pub used_bytes: u64,
    /// `used_bytes / fetched_bytes`; `None` when none was fetched.
    pub spatial_use: Option<f64>,
}

/// The member of every byte of one range's elements, and the bytes counted per member.
#[derive(Debug, Clone)]
pub(crate) struct FieldBytes {
    start: u64,
    end: u64,
    element_bytes: u64,
    /// Member (bucket) of each byte of an element; the last bucket is the padding.
    member_of_byte: Vec<u32>,
    fetched: Vec<u64>,
    used: Vec<u64>,
}

impl FieldBytes {
    /// Counts per member of `layout` over the range `[start, end)`, which starts at an element.
    pub(crate) fn new(
        start: u64,
        end: u64,
        layout: &FieldLayout,
    ) -> Result<Self, FieldLayoutError> {
        let member_of_byte = layout.bucket_of_byte()?;
        Ok(Self {
            start,
            end,
            element_bytes: layout.element_bytes,
            member_of_byte,
            fetched: vec![0; layout.buckets()],
            used: vec![0; layout.buckets()],
        })
    }

    /// Counts one closed residency of the line at `line_start`: each of its bytes inside the
    /// range is fetched for its member, and used when `used(offset in line)` says so.
    pub(crate) fn add(&mut self, line_start: u64, line_size: u32, used: impl Fn(u32) -> bool) {
        let from = line_start.max(self.start);
        let to = line_start
            .saturating_add(u64::from(line_size))
            .min(self.end);
        for byte in from..to {
            let member = self.member_of_byte[((byte - self.start) % self.element_bytes) as usize];
            self.fetched[member as usize] += 1;
            if used((byte - line_start) as u32) {
                self.used[member as usize] += 1;
            }
        }
    }

    /// Forgets the counts.
    pub(crate) fn reset(&mut self) {
        self.fetched.fill(0);
        self.used.fill(0);
    }

    /// One entry per member, then the padding.
    pub(crate) fn report(&self) -> Vec<FieldUse> {
        self.fetched
            .iter()
            .zip(&self.used)
            .map(|(&fetched_bytes, &used_bytes)| FieldUse {
                fetched_bytes,
                used_bytes,
                spatial_use: (fetched_bytes > 0).then(|| used_bytes as f64 / fetched_bytes as f64),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::monitor::field_layout::particle_for_tests as particle;

    #[test]
    fn a_line_read_only_through_x_uses_all_of_x_and_nothing_else() {
        let mut f = FieldBytes::new(0x1000, 0x1000 + 32 * 4, &particle()).unwrap();
        // A 64-byte line holds two elements; x is bytes 0..8 and 32..40.
        f.add(0x1000, 64, |b| b % 32 < 8);
        let r = f.report();
        let fetched: Vec<_> = r.iter().map(|u| u.fetched_bytes).collect();
        let used: Vec<_> = r.iter().map(|u| u.used_bytes).collect();
        assert_eq!(fetched, [16, 16, 16, 8, 8]);
        assert_eq!(used, [16, 0, 0, 0, 0]);
        assert_eq!(r[0].spatial_use, Some(1.0));
        assert_eq!(r[1].spatial_use, Some(0.0));
    }

    #[test]
    fn only_the_lines_part_inside_the_range_counts() {
        // The range starts 16 bytes into the line and ends 8 bytes into the next element.
        let mut f = FieldBytes::new(0x1010, 0x1010 + 40, &particle()).unwrap();
        f.add(0x1000, 64, |_| true);
        let r = f.report();
        // Bytes 0x1010..0x1038: one whole element (32 bytes) and x of the next (8).
        let fetched: Vec<_> = r.iter().map(|u| u.fetched_bytes).collect();
        assert_eq!(fetched, [8 + 8, 8, 8, 4, 4]);
        f.reset();
        assert!(
            f.report()
                .iter()
                .all(|u| u.fetched_bytes == 0 && u.spatial_use.is_none())
        );
    }
}
