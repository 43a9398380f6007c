//! Which data structure holds an address: a thread's cache of recent answers in front of the
//! process-wide sorted lookup (`data.rs`), and the whole-line answers it keeps in the
//! thread's repeat-hit filter for the inline miss path.
//!
//! A finder answers from the snapshot of the data structures it took last, until it is told
//! to take the current one (`refresh`): a thread refreshes its finders at its sync point after
//! the structures changed, once everything it captured before has been simulated under the old
//! ones. So an access is attributed with the data structures as they were at the thread's last
//! sync point before it, however late it is simulated: a heap array freed by another thread
//! after its writes keeps them, where attributing at simulation time lost the writes still
//! batched (all of them once visits were staged for a second core).
//!
//! A thread has two: one in its monitoring, which travels with the simulator to a second core,
//! and one that stays on the thread to find whole lines for the accesses it stages in its
//! filter's batch, with the simulator here or away (`ThreadCapture::stage`). Both are
//! refreshed together.

use std::sync::Arc;

use super::data::{self, Lookup};
use super::filter::Filter;

const FOUND_SLOTS: usize = 64;

/// The slot of `addr`'s 4 KiB page in a finder's answers: a multiplicative mix of the page
/// number, as arrays a power of two of pages apart (two 8 MiB grids) took one slot by turns
/// under the page number's low bits, and every access searched.
#[inline(always)]
fn found_slot(addr: u64) -> usize {
    const _: () = assert!(FOUND_SLOTS.is_power_of_two());
    ((addr >> 12).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - FOUND_SLOTS.trailing_zeros()))
        as usize
}
/// A slot that holds no answer (its range is empty).
const NOT_FOUND: (u64, u64, u32) = (1, 0, 0);

/// One thread's answers from one snapshot of the data structures.
#[derive(Debug, Clone)]
pub(crate) struct StructureFinder {
    /// The snapshot, taken when the finder was made or last refreshed (never later: a finder
    /// that took it at its first search answered the first batches a worker simulated with
    /// the data structures of that moment, a heap array freed meanwhile not among them).
    lookup: Arc<Lookup>,
    /// Its generation (`data::generation`).
    generation: u64,
    /// Direct-mapped by 4 KiB page: the answers found last, `(lo, hi, index + 1 or 0 for
    /// none)`, each good for any address in `lo..hi`. Kernels interleave a few structures (a
    /// matrix product touches three in turn), which one remembered answer would miss every time.
    found: [(u64, u64, u32); FOUND_SLOTS],
    /// The line size (log2) of the whole-line answers [`Self::structure_of_line`] keeps in
    /// the thread's filter; set by the first line lookup.
    line_bits: Option<u32>,
}

impl StructureFinder {
    /// A finder answering from the data structures as they are now.
    pub(crate) fn now() -> Self {
        let (generation, lookup) = data::snapshot();
        StructureFinder {
            lookup,
            generation,
            found: [NOT_FOUND; FOUND_SLOTS],
            line_bits: None,
        }
    }

    /// The generation of the data structures it answers from.
    pub(crate) fn generation(&self) -> u64 {
        self.generation
    }

    /// The index of the data structure holding `addr`, if any: from the page's remembered
    /// answer when `addr` lies in its range, else a search.
    #[inline(always)]
    pub(crate) fn structure_of(&mut self, addr: u64) -> Option<usize> {
        let (lo, hi, found) = self.found[found_slot(addr)];
        if lo <= addr && addr < hi {
            return (found as usize).checked_sub(1);
        }
        self.find(addr)
    }

    /// Answers from the data structures as they are now from here on. The whole lines the
    /// thread's filter remembers must be forgotten with it (`Filter::forget_whole_lines`).
    pub(crate) fn refresh(&mut self) {
        (self.generation, self.lookup) = data::snapshot();
        self.found = [NOT_FOUND; FOUND_SLOTS];
    }

    /// [`Self::structure_of`], and whether every byte of the `1 << line_bits`-byte line holding
    /// `addr` has the same answer (a line may hold the end of one structure and the start of
    /// the next). Every call passes the same `line_bits`. Whole lines are remembered in the
    /// thread's filter (`Filter::whole_line`), where the inline miss path reads them too.
    #[inline(always)]
    pub(crate) fn structure_of_line(
        &mut self,
        addr: u64,
        line_bits: u32,
        lines: &Filter,
    ) -> (Option<usize>, bool) {
        // The common case in two compares: the page's remembered line range holds the line.
        if let Some(found) = lines.whole_line(addr) {
            return ((found as usize).checked_sub(1), true);
        }
        self.structure_of_line_searched(addr, line_bits, lines)
    }

    /// [`Self::structure_of_line`] when no remembered line range holds the line; the line's
    /// range is remembered when the whole line has `addr`'s answer.
    #[inline(never)]
    fn structure_of_line_searched(
        &mut self,
        addr: u64,
        line_bits: u32,
        lines: &Filter,
    ) -> (Option<usize>, bool) {
        debug_assert!(
            self.line_bits.is_none_or(|b| b == line_bits),
            "one line size"
        );
        self.line_bits = Some(line_bits);
        let structure = self.structure_of(addr);
        let (lo, hi, found) = self.found[found_slot(addr)];
        // Lines wholly inside `lo..hi`: from the first starting at or after `lo` to the last
        // ending at or before `hi` (exclusive).
        let (first, end) = (lo.div_ceil(1 << line_bits), hi >> line_bits);
        let line = addr >> line_bits;
        let whole = first <= line && line < end;
        if whole {
            lines.remember_whole_lines(addr, first << line_bits, end << line_bits, found);
        }
        (structure, whole)
    }

    #[inline(never)]
    fn find(&mut self, addr: u64) -> Option<usize> {
        let (lo, hi, index) = self.lookup.find_with_extent(addr);
        self.found[found_slot(addr)] = (lo, hi, index.map_or(0, |i| i + 1));
        Some(index? as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrays_a_power_of_two_of_pages_apart_take_slots_of_their_own() {
        // Two or three arrays interleaved by a kernel, a power of two of pages apart (the
        // page number's low bits took one slot for all of them): each page its own slot.
        let base = 0x5555_0000_0000u64;
        for pages in [64u64, 2048, 4096, 1 << 20] {
            let step = pages << 12;
            let slots = [
                found_slot(base),
                found_slot(base + step),
                found_slot(base + 2 * step),
            ];
            assert!(
                slots[0] != slots[1] && slots[1] != slots[2] && slots[0] != slots[2],
                "{pages} pages apart: slots {slots:?}"
            );
        }
    }

    /// A finder over `spans` (start, end, index), as a snapshot would give.
    fn finder_over(spans: Vec<(u64, u64, u32)>) -> StructureFinder {
        StructureFinder {
            lookup: Arc::new(Lookup::of_spans(spans)),
            generation: 0,
            found: [NOT_FOUND; FOUND_SLOTS],
            line_bits: None,
        }
    }

    #[test]
    fn answers_equal_the_search_whichever_slot_they_come_from() {
        // Three 8 MiB arrays with gaps between, walked as ADI's row sweep walks them (a new
        // page every access, the arrays in turn), then at random: every answer, from a page
        // slot or a search, is the search's.
        let mib = 1u64 << 20;
        let spans = vec![
            (0x10_0000_0000, 0x10_0000_0000 + 8 * mib, 0),
            (0x10_0000_0000 + 8 * mib + 64, 0x10_0000_0000 + 16 * mib, 1),
            (0x10_0000_0000 + 16 * mib, 0x10_0000_0000 + 24 * mib - 8, 2),
        ];
        let mut finder = finder_over(spans.clone());
        let lookup = Lookup::of_spans(spans);
        let mut addrs = Vec::new();
        for j in 0..3000u64 {
            for a in 0..3 {
                addrs.push(0x10_0000_0000 + a * 8 * mib + j * 8192 + 8 * (j % 7));
            }
        }
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            addrs.push(0x10_0000_0000 - mib + x % (26 * mib));
        }
        for addr in addrs {
            let want = lookup.find_with_extent(addr).2.map(|i| i as usize);
            assert_eq!(finder.structure_of(addr), want, "{addr:#x}");
        }
    }
}
