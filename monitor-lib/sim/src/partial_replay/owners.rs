//! Per-owner counts of one replay: an owner is an access site or a data structure, whichever
//! the caller numbers the accesses by. Hits and misses per level, temporal and spatial hits,
//! residencies and spatial use at the watched level, and who evicted whose lines there.

use std::collections::HashMap;

use crate::cache::{AccessOutcome, LevelResult, LineEvent, LineEventKind, MAX_LEVELS};
use crate::trace::TraceKind;

/// Longest line whose bytes the tracker tells apart.
pub(crate) const MAX_LINE_SIZE: u32 = 256;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct ByteMask([u64; 4]);

impl ByteMask {
    fn mark(&mut self, start: u32, end: u32) {
        for byte in start..end {
            self.0[(byte / 64) as usize] |= 1 << (byte % 64);
        }
    }

    fn covers(&self, start: u32, end: u32) -> bool {
        (start..end).all(|byte| self.0[(byte / 64) as usize] & (1 << (byte % 64)) != 0)
    }

    fn bytes(&self) -> u64 {
        self.0.iter().map(|w| u64::from(w.count_ones())).sum()
    }
}

/// One stay of a line in the watched level.
#[derive(Debug, Clone, Copy)]
struct Resident {
    /// The owner whose access filled it.
    owner: u32,
    /// Whether it was filled while counting: only then does its use count.
    counted: bool,
    used: ByteMask,
}

/// What one owner's accesses did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct OwnerCounts {
    /// Trace records (a modify is one record, and two cache accesses in native mode).
    pub(crate) records: u64,
    /// The records by kind: loads, stores, modifies.
    pub(crate) by_kind: [u64; 3],
    /// Cache accesses that reached each data level, and how many of them missed there.
    pub(crate) reached: [u64; MAX_LEVELS],
    pub(crate) misses: [u64; MAX_LEVELS],
    /// Hits at the watched level on bytes this residency had already seen.
    pub(crate) temporal_hits: u64,
    /// Hits at the watched level on bytes new to the residency (brought in by another access).
    pub(crate) spatial_hits: u64,
    /// Lines this owner's accesses filled at the watched level, and the bytes of them used
    /// before they left (or by the end).
    pub(crate) fills: u64,
    pub(crate) bytes_used: u64,
}

/// Per-owner counts and the evictor matrix of one watched level.
#[derive(Debug, Clone)]
pub(crate) struct OwnerTracker {
    level: usize,
    line_bits: u32,
    pub(crate) line_size: u32,
    pub(crate) counts: Vec<OwnerCounts>,
    resident: HashMap<u64, Resident>,
    /// (evictor, victim) -> lines.
    pub(crate) evictions: HashMap<(u32, u32), u64>,
    /// Whether accesses are counted now; outside a trace's counted spans they only move the
    /// residencies on (they warm the cache up).
    pub(crate) counting: bool,
}

impl OwnerTracker {
    /// `line_size` must be a power of two of at most [`MAX_LINE_SIZE`].
    pub(crate) fn new(owners: usize, level: usize, line_size: u32) -> Self {
        Self {
            level,
            line_bits: line_size.trailing_zeros(),
            line_size,
            counts: vec![OwnerCounts::default(); owners],
            resident: HashMap::new(),
            evictions: HashMap::new(),
            counting: true,
        }
    }

    /// Counts one trace record without simulating it (an access of the record is counted by
    /// [`OwnerTracker::on_access`]).
    pub(crate) fn on_record(&mut self, owner: u32, kind: TraceKind) {
        if self.counting {
            let counts = &mut self.counts[owner as usize];
            counts.records += 1;
            match kind {
                TraceKind::Load => counts.by_kind[0] += 1,
                TraceKind::Store => counts.by_kind[1] += 1,
                TraceKind::Modify => counts.by_kind[2] += 1,
                TraceKind::Instr => {}
            }
        }
    }

    /// Follows one cache access of `owner`: `outcome` and `events` are what the hierarchy
    /// returned and recorded for it.
    pub(crate) fn on_access(
        &mut self,
        owner: u32,
        (addr, size): (u64, u32),
        outcome: &AccessOutcome,
        events: &[LineEvent],
    ) {
        let counting = self.counting;
        let mut uncounted = OwnerCounts::default();
        let counts = if counting {
            &mut self.counts[owner as usize]
        } else {
            &mut uncounted
        };
        for (level, result) in outcome.levels.iter().enumerate() {
            match result {
                LevelResult::NotReached => break,
                LevelResult::Hit => counts.reached[level] += 1,
                LevelResult::Miss => {
                    counts.reached[level] += 1;
                    counts.misses[level] += 1;
                }
            }
        }
        let bits = self.line_bits;
        if counting && outcome.levels[self.level] == LevelResult::Hit {
            let temporal = line_spans(addr, size, bits).all(|(block, start, end)| {
                self.resident
                    .get(&block)
                    .is_some_and(|r| r.used.covers(start, end))
            });
            let counts = &mut self.counts[owner as usize];
            if temporal {
                counts.temporal_hits += 1;
            } else {
                counts.spatial_hits += 1;
            }
        }
        let level = self.level;
        for event in events.iter().filter(|e| usize::from(e.level) == level) {
            match event.kind {
                LineEventKind::Fill { evicted } | LineEventKind::WritebackFill { evicted } => {
                    if let Some(victim) = evicted
                        && let Some(victim) = self.close(victim >> self.line_bits)
                        && counting
                    {
                        *self.evictions.entry((owner, victim)).or_default() += 1;
                    }
                    if counting {
                        self.counts[owner as usize].fills += 1;
                    }
                    self.resident.insert(
                        event.line_addr >> self.line_bits,
                        Resident {
                            owner,
                            counted: counting,
                            used: ByteMask::default(),
                        },
                    );
                }
                LineEventKind::Invalidated => {
                    self.close(event.line_addr >> self.line_bits);
                }
                LineEventKind::Hit | LineEventKind::Bypass => {}
            }
        }
        for (block, start, end) in line_spans(addr, size, bits) {
            if let Some(r) = self.resident.get_mut(&block) {
                r.used.mark(start, end);
            }
        }
    }

    /// Ends a residency; returns the owner that filled the line.
    fn close(&mut self, block: u64) -> Option<u32> {
        let r = self.resident.remove(&block)?;
        if r.counted {
            self.counts[r.owner as usize].bytes_used += r.used.bytes();
        }
        Some(r.owner)
    }

    /// Ends every residency still open, as at the end of a run.
    pub(crate) fn finish(&mut self) {
        for (_, r) in self.resident.drain() {
            if r.counted {
                self.counts[r.owner as usize].bytes_used += r.used.bytes();
            }
        }
    }
}

/// The lines an access of `size` bytes at `addr` touches, each with the byte offsets
/// `[start, end)` it covers in the line.
fn line_spans(addr: u64, size: u32, bits: u32) -> impl Iterator<Item = (u64, u32, u32)> {
    let end = addr.saturating_add(u64::from(size.max(1)));
    let (first, last) = (addr >> bits, (end - 1) >> bits);
    (first..=last).map(move |block| {
        let line_start = block << bits;
        let line_end = line_start.saturating_add(1 << bits);
        (
            block,
            (addr.max(line_start) - line_start) as u32,
            (end.min(line_end) - line_start) as u32,
        )
    })
}
