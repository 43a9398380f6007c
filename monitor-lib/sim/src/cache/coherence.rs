//! The coherence directory of a [`Machine`](super::Machine): per line, who holds it modified,
//! which cores may hold copies, and which cores lost their copy to another core's write (and
//! what bytes were written since), so that their next miss on it is classified.
//!
//! The protocol is MESI, kept as a directory rather than as a state per cached copy:
//! - **Modified** is `owner`: the one core whose write made every other copy go. While it stays
//!   the owner its writes send nothing.
//! - **Shared** and **Exclusive** are the copies of `holders` with no owner. A write from a core
//!   that is not the owner invalidates every copy not shared with it (one invalidation request,
//!   counted once however many copies it reaches; none when no other copy was there, which is
//!   the silent Exclusive-to-Modified upgrade).
//! - **Invalid** is the absence of a copy; `pending` remembers the cores whose copy a write
//!   removed until each touches the line again.
//!
//! A read of a line another core holds modified downgrades that core's copies to Shared: their
//! dirty data is written into the first level both cores share (or to memory when none is
//! shared), as a write-back. A write that takes a line from its owner carries the data with it
//! (the writer's copy becomes the dirty one), so an invalidated dirty copy writes nothing back.
//!
//! `holders` is a superset: a core that evicted its copy stays in it until a write finds the
//! copy gone; invalidations are counted only for copies really found, so the superset costs
//! probes, never counts.
//!
//! The sharing classification follows the definition of the issue: a coherence miss is *false
//! sharing* when the bytes the missing access touches are disjoint from every byte other cores
//! wrote to the line since this core's copy was invalidated, and *true sharing* otherwise. Bytes
//! are tracked as a 64-bit mask per line: one bit per byte for lines of up to 64 bytes, one bit
//! per `line / 64` bytes for longer lines.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Most cores a machine may have: a core set is one `u64`.
pub const MAX_CORES: usize = 64;

/// What the directory knows of one line.
#[derive(Debug, Clone, Default)]
pub(super) struct LineState {
    /// The core holding the line modified (MESI's M), if any.
    pub(super) owner: Option<u8>,
    /// Cores that may hold a copy in a level not every core shares (a superset).
    pub(super) holders: u64,
    /// Cores whose copy a write removed and which have not touched the line since.
    pub(super) pending: Vec<Pending>,
}

/// A core's copy removed by another core's write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Pending {
    pub(super) core: u8,
    /// Data levels (bit per level) the write removed the core's copy from.
    pub(super) levels: u8,
    /// Bytes other cores wrote since (see [`byte_mask`]).
    pub(super) written: u64,
}

impl LineState {
    /// Takes out `core`'s pending entry: it touches the line now.
    pub(super) fn take_pending(&mut self, core: u8) -> Option<Pending> {
        let at = self.pending.iter().position(|p| p.core == core)?;
        Some(self.pending.swap_remove(at))
    }

    /// Adds `written` to what every other pending core will find written.
    pub(super) fn written_by(&mut self, core: u8, written: u64) {
        for p in self.pending.iter_mut().filter(|p| p.core != core) {
            p.written |= written;
        }
    }

    /// Records that `core` lost its copy at `levels` to a write of `written`.
    pub(super) fn lost(&mut self, core: u8, levels: u8, written: u64) {
        match self.pending.iter_mut().find(|p| p.core == core) {
            Some(p) => {
                p.levels |= levels;
                p.written |= written;
            }
            None => self.pending.push(Pending {
                core,
                levels,
                written,
            }),
        }
    }
}

/// Lines per chunk of the [`Directory`].
const CHUNK_LINES: u64 = 64;

/// The directory: line (block number at the machine's line size) to what is known of it,
/// kept in chunks of the states of [`CHUNK_LINES`] consecutive lines. Why chunks: a kernel
/// streaming through arrays larger than the host's caches looks up consecutive lines, and a
/// map of one state per line put each lookup at a random place in a table as large as the
/// arrays' line count (a host cache and TLB miss per first-level miss); in chunks, consecutive
/// lines' states sit side by side and the map holds one key per chunk.
#[derive(Debug, Clone, Default)]
pub(super) struct Directory {
    chunks: HashMap<u64, Box<[LineState]>, BuildHasherDefault<BlockHasher>>,
}

impl Directory {
    /// What is known of line `block`, if any line of its chunk was ever looked at (a state
    /// never touched is the default: no owner, no holder, nobody pending).
    #[inline]
    pub(super) fn get_mut(&mut self, block: u64) -> Option<&mut LineState> {
        let chunk = self.chunks.get_mut(&(block / CHUNK_LINES))?;
        Some(&mut chunk[(block % CHUNK_LINES) as usize])
    }

    /// What is known of line `block`, its chunk made when it has none.
    #[inline]
    pub(super) fn line(&mut self, block: u64) -> &mut LineState {
        let chunk = self
            .chunks
            .entry(block / CHUNK_LINES)
            .or_insert_with(|| vec![LineState::default(); CHUNK_LINES as usize].into());
        &mut chunk[(block % CHUNK_LINES) as usize]
    }
}

/// A multiplicative hash for chunk numbers: the directory is looked up on every write and
/// every first-level miss, and SipHash's resistance to chosen keys buys nothing here.
#[derive(Default)]
pub(super) struct BlockHasher(u64);

impl Hasher for BlockHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0 ^ n)
            .wrapping_mul(0x9e37_79b9_7f4a_7c15)
            .rotate_left(29);
    }
}

/// The bytes `[addr, addr + size)` cover of the line `block` (of `1 << line_bits` bytes), one
/// bit per byte for lines of up to 64 bytes, else one bit per `line / 64` bytes.
pub(super) fn byte_mask(block: u64, line_bits: u32, addr: u64, size: u64) -> u64 {
    let line_start = block << line_bits;
    let line_end = line_start + (1u64 << line_bits);
    let start = addr.max(line_start) - line_start;
    let end = (addr + size.max(1)).min(line_end) - line_start;
    if start >= end {
        return 0;
    }
    // Bytes per bit: 1 up to 64-byte lines.
    let shift = line_bits.saturating_sub(6);
    let (first, last) = (start >> shift, (end - 1) >> shift);
    let bits = last - first + 1;
    let ones = if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    };
    ones << first
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_masks_cover_the_bytes_of_the_line_an_access_touches() {
        // 64-byte lines: bit per byte.
        assert_eq!(byte_mask(1, 6, 64, 8), 0xff);
        assert_eq!(byte_mask(1, 6, 72, 8), 0xff00);
        assert_eq!(byte_mask(1, 6, 64, 64), u64::MAX);
        // An access straddling into the next line covers only its part of this one.
        assert_eq!(byte_mask(1, 6, 124, 8), 0xf << 60);
        assert_eq!(byte_mask(2, 6, 124, 8), 0xf);
        // A zero-sized access touches one byte.
        assert_eq!(byte_mask(1, 6, 65, 0), 0b10);
        // 128-byte lines: a bit per two bytes.
        assert_eq!(byte_mask(1, 7, 128, 4), 0b11);
        assert_eq!(byte_mask(1, 7, 128 + 126, 2), 1 << 63);
    }

    #[test]
    fn pending_entries_merge_and_collect_what_others_write() {
        let mut line = LineState::default();
        line.lost(1, 0b01, 0xff);
        line.lost(2, 0b11, 0xff);
        line.written_by(1, 0xff00);
        line.lost(1, 0b10, 0);
        let one = line.take_pending(1).unwrap();
        assert_eq!((one.levels, one.written), (0b11, 0xff));
        let two = line.take_pending(2).unwrap();
        assert_eq!(two.written, 0xffff);
        assert!(line.take_pending(1).is_none());
    }
}
