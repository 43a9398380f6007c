//! Evictor attribution: how often a line of one data structure was pushed out by a fill for another.

use super::attribution::BucketIndex;
use crate::cache::{LineEvent, LineEventKind};

/// Name of the pseudo-range for lines outside every named range.
pub const OTHER_RANGE: &str = "(other)";

/// Counts of evictions by (evictor range, victim range), the last index standing for "(other)".
#[derive(Debug, Clone)]
pub(crate) struct EvictorCounts {
    /// Named ranges plus one for "(other)".
    width: usize,
    line_size: u32,
    /// Row-major: `counts[evictor * width + victim]`.
    counts: Vec<u64>,
}

impl EvictorCounts {
    pub(crate) fn new(named_ranges: usize, line_size: u32) -> Self {
        let width = named_ranges + 1;
        Self {
            width,
            line_size,
            counts: vec![0; width * width],
        }
    }

    /// Counts the evictions among `events` at `level`.
    ///
    /// Write-back fills count too: the dirty line coming down from above is as much a
    /// competitor for the set as a demand fill.
    #[inline]
    pub(crate) fn on_events(&mut self, index: &BucketIndex, level: u8, events: &[LineEvent]) {
        for event in events.iter().filter(|e| e.level == level) {
            let (LineEventKind::Fill {
                evicted: Some(victim),
            }
            | LineEventKind::WritebackFill {
                evicted: Some(victim),
            }) = event.kind
            else {
                continue;
            };
            let evictor = self.owner(index, event.line_addr);
            let victim = self.owner(index, victim);
            self.counts[evictor * self.width + victim] += 1;
        }
    }

    fn owner(&self, index: &BucketIndex, line_addr: u64) -> usize {
        index
            .locate_line(line_addr, self.line_size)
            .map_or(self.width - 1, |slot| slot.range)
    }

    pub(crate) fn reset(&mut self) {
        self.counts.fill(0);
    }

    pub(crate) fn report(&self, index: &BucketIndex) -> EvictorMatrix {
        let names = (0..index.range_count())
            .map(|r| index.range(r).name.clone())
            .chain([OTHER_RANGE.to_owned()])
            .collect();
        EvictorMatrix {
            names,
            counts: self
                .counts
                .chunks(self.width)
                .map(<[u64]>::to_vec)
                .collect(),
        }
    }
}

/// Which range's fills evicted which range's lines.
///
/// A line belongs to the range holding its first byte (or its last, when a range starts inside
/// it); lines of no named range belong to [`OTHER_RANGE`].
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct EvictorMatrix {
    /// Range names in the order of rows and columns; the last is [`OTHER_RANGE`].
    pub names: Vec<String>,
    /// `counts[evictor][victim]`: lines of `victim` evicted by a fill of a line of `evictor`.
    pub counts: Vec<Vec<u64>>,
}

impl EvictorMatrix {
    /// Evictions of `victim`'s lines by `evictor`'s fills, by range name; `None` for an unknown name.
    pub fn count(&self, evictor: &str, victim: &str) -> Option<u64> {
        let position = |name| self.names.iter().position(|n| n == name);
        Some(self.counts[position(evictor)?][position(victim)?])
    }

    /// Every eviction of `victim`'s lines, whoever caused it.
    pub fn evictions_of(&self, victim: &str) -> Option<u64> {
        let column = self.names.iter().position(|n| n == victim)?;
        Some(self.counts.iter().map(|row| row[column]).sum())
    }
}
