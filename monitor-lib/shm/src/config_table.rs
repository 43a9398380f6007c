//! The configuration table: an open-addressing hash table in the segment, keyed by (file id,
//! first line), giving the region index and the request flags. An unmonitored region costs the
//! target one probe and one flag load.
//!
//! Entry words: key (file << 32 | line), region index + 1 (0 = empty), request flags (bit i set
//! = request slot i attached). Only the target inserts: it writes the key, then the region word
//! with Release, so a reader that sees the region word (Acquire) sees the key. Only tools change
//! the flags.

use std::sync::atomic::{AtomicU64, Ordering};

use super::layout::{CONFIG_ENTRY_WORDS, Layout, RegionIndex, Table};
use super::sysv::{View, ViewError};

/// A configuration-table insert that could not be done.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigTableError {
    /// Every entry is used.
    #[error(
        "the configuration table is full ({capacity} entries); create the segment with a larger region capacity"
    )]
    Full {
        /// Entries in the table.
        capacity: usize,
    },
    /// The key is already there.
    #[error("region key (file {file_id}, line {line}) is already registered as region {}", existing.0)]
    Duplicate {
        /// File id of the key.
        file_id: u32,
        /// Line of the key.
        line: u32,
        /// The region it maps to.
        existing: RegionIndex,
    },
    /// The table's words are not reachable (only through a bug: the layout was validated).
    #[error(transparent)]
    View(#[from] ViewError),
}

/// A found entry: the region and where its flags live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConfigEntry {
    /// The region the key maps to.
    pub region: RegionIndex,
    /// The entry's position in the table.
    pub slot: u32,
}

/// The configuration table of one segment (a description; the words are in the view).
#[derive(Debug, Clone, Copy)]
pub struct ConfigTable {
    offset: usize,
    capacity: usize,
}

fn key(file_id: u32, line: u32) -> u64 {
    u64::from(file_id) << 32 | u64::from(line)
}

impl ConfigTable {
    /// The table `layout` describes.
    pub fn new(layout: &Layout) -> Self {
        let span = layout.span(Table::Config);
        ConfigTable {
            offset: span.offset,
            capacity: span.capacity,
        }
    }

    /// Entries in the table (a power of two).
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    #[inline]
    fn words<'v>(&self, view: &'v View) -> Result<&'v [AtomicU64], ViewError> {
        view.u64_slice(self.offset, self.capacity * CONFIG_ENTRY_WORDS)
    }

    #[inline]
    fn home(&self, key: u64) -> usize {
        // Fibonacci hashing: the multiply spreads consecutive lines of one file over the table.
        (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as usize & (self.capacity - 1)
    }

    /// Adds (file, line) → `region`. Target only.
    pub fn insert(
        &self,
        view: &View,
        file_id: u32,
        line: u32,
        region: RegionIndex,
    ) -> Result<ConfigEntry, ConfigTableError> {
        let words = self.words(view)?;
        let want = key(file_id, line);
        let mut i = self.home(want);
        for _ in 0..self.capacity {
            let e = &words[i * CONFIG_ENTRY_WORDS..][..CONFIG_ENTRY_WORDS];
            let tag = e[1].load(Ordering::Acquire);
            if tag == 0 {
                e[0].store(want, Ordering::Relaxed);
                e[2].store(0, Ordering::Relaxed);
                e[1].store(u64::from(region.0) + 1, Ordering::Release);
                return Ok(ConfigEntry {
                    region,
                    slot: i as u32,
                });
            }
            if e[0].load(Ordering::Relaxed) == want {
                return Err(ConfigTableError::Duplicate {
                    file_id,
                    line,
                    existing: RegionIndex((tag - 1) as u32),
                });
            }
            i = (i + 1) & (self.capacity - 1);
        }
        Err(ConfigTableError::Full {
            capacity: self.capacity,
        })
    }

    /// The entry for (file, line), if registered. The target's per-region cost.
    #[inline]
    pub fn lookup(&self, view: &View, file_id: u32, line: u32) -> Option<ConfigEntry> {
        let words = self.words(view).ok()?;
        let want = key(file_id, line);
        let mut i = self.home(want);
        for _ in 0..self.capacity {
            let e = &words[i * CONFIG_ENTRY_WORDS..][..CONFIG_ENTRY_WORDS];
            let tag = e[1].load(Ordering::Acquire);
            if tag == 0 {
                return None;
            }
            if e[0].load(Ordering::Relaxed) == want {
                return Some(ConfigEntry {
                    region: RegionIndex(tag.wrapping_sub(1) as u32),
                    slot: i as u32,
                });
            }
            i = (i + 1) & (self.capacity - 1);
        }
        None
    }

    fn flags<'v>(&self, view: &'v View, slot: u32) -> Option<&'v AtomicU64> {
        if slot as usize >= self.capacity {
            return None;
        }
        view.u64_at(self.offset + (slot as usize * CONFIG_ENTRY_WORDS + 2) * 8)
            .ok()
    }

    /// The request flags of `entry` (bit i = slot i). Relaxed is enough: the target then loads
    /// each flagged slot's state with Acquire, which the tool stored with Release before it
    /// set the flag.
    #[inline]
    pub fn request_flags(&self, view: &View, entry: ConfigEntry) -> u64 {
        self.flags(view, entry.slot)
            .map_or(0, |f| f.load(Ordering::Relaxed))
    }

    /// Whether any request is attached to `entry`.
    #[inline]
    pub fn has_request(&self, view: &View, entry: ConfigEntry) -> bool {
        self.request_flags(view, entry) != 0
    }

    /// Sets flag `bit` on `entry` (tool side, after the slot is Pending).
    pub fn set_flag(&self, view: &View, entry: ConfigEntry, bit: u32) {
        if let Some(f) = self.flags(view, entry.slot) {
            f.fetch_or(1 << (bit & 63), Ordering::Release);
        }
    }

    /// Clears flag `bit` on `entry` (tool side, on cancel).
    pub fn clear_flag(&self, view: &View, entry: ConfigEntry, bit: u32) {
        if let Some(f) = self.flags(view, entry.slot) {
            f.fetch_and(!(1 << (bit & 63)), Ordering::Release);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::Capacities;
    use crate::sysv::HeapImage;

    fn table(regions: u32) -> (HeapImage, ConfigTable) {
        let layout = Layout::plan(&Capacities {
            regions,
            ..Capacities::default()
        })
        .unwrap();
        let image = HeapImage::zeroed(layout.total);
        (image, ConfigTable::new(&layout))
    }

    #[test]
    fn inserted_keys_are_found_and_others_are_not() {
        let (image, t) = table(100);
        let v = image.view();
        for line in 0..100 {
            t.insert(v, 7, line * 3, RegionIndex(line)).unwrap();
        }
        for line in 0..100 {
            assert_eq!(t.lookup(v, 7, line * 3).unwrap().region, RegionIndex(line));
            assert_eq!(t.lookup(v, 7, line * 3 + 1), None);
        }
        assert_eq!(t.lookup(v, 8, 0), None);
    }

    #[test]
    fn colliding_keys_probe_onwards() {
        let (image, t) = table(4);
        let v = image.view();
        let cap = t.capacity() as u32;
        // Find keys sharing a home slot, which the tiny table makes plentiful.
        let home0 = t.home(key(1, 0));
        let same: Vec<u32> = (1..10_000)
            .filter(|&l| t.home(key(1, l)) == home0)
            .take(3)
            .collect();
        assert_eq!(same.len(), 3);
        t.insert(v, 1, 0, RegionIndex(0)).unwrap();
        for (i, &l) in same.iter().enumerate() {
            t.insert(v, 1, l, RegionIndex(i as u32 + 1)).unwrap();
        }
        for (i, &l) in same.iter().enumerate() {
            let e = t.lookup(v, 1, l).unwrap();
            assert_eq!(e.region, RegionIndex(i as u32 + 1));
            assert_ne!(e.slot as usize, home0);
        }
        assert!(cap >= 8);
    }

    #[test]
    fn a_full_table_and_duplicates_are_errors() {
        let (image, t) = table(4);
        let v = image.view();
        for l in 0..t.capacity() as u32 {
            t.insert(v, 2, l, RegionIndex(l)).unwrap();
        }
        assert_eq!(
            t.insert(v, 2, 999, RegionIndex(9)),
            Err(ConfigTableError::Full { capacity: 8 })
        );
        assert!(matches!(
            t.insert(v, 2, 3, RegionIndex(9)),
            Err(ConfigTableError::Duplicate { existing, .. }) if existing == RegionIndex(3)
        ));
        // A full table still answers misses without looping forever.
        assert_eq!(t.lookup(v, 3, 3), None);
    }

    #[test]
    fn flags_are_per_entry() {
        let (image, t) = table(16);
        let v = image.view();
        let a = t.insert(v, 1, 10, RegionIndex(0)).unwrap();
        let b = t.insert(v, 1, 20, RegionIndex(1)).unwrap();
        assert!(!t.has_request(v, a));
        t.set_flag(v, a, 5);
        t.set_flag(v, a, 63);
        assert!(t.has_request(v, a) && !t.has_request(v, b));
        assert_eq!(t.request_flags(v, a), 1 << 5 | 1 << 63);
        t.clear_flag(v, a, 5);
        t.clear_flag(v, a, 63);
        assert!(!t.has_request(v, a));
    }
}
