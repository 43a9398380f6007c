//! The live data structures' address spans, sorted by start, as the immutable snapshot every
//! thread's finder searches (`structure_finder.rs`) while the registry (`data.rs`) makes the
//! next one.
//!
//! Why chunks: a snapshot is shared, so a change cannot edit it in place. Copying every span
//! on each allocation or free made a program holding many tracked heap blocks quadratic (20,000
//! live 8 KiB blocks took 12 s to allocate, unmonitored). The spans lie in chunks of at most
//! `2 * CHUNK`, each shared by every snapshot that has it unchanged; a change copies the one
//! chunk it touches and the chunks' index, and a search is two binary searches.
//!
//! Order: spans are kept sorted as `(start, end, index)` tuples, so structures that overlap
//! (an array and one of its slices) answer as they did in one sorted vector: the last span whose
//! start is at or below the address, if the address lies below its end.

use std::sync::Arc;

/// `(start, end, index)`: a structure's bytes `start..end` and its registry index.
pub(crate) type Span = (u64, u64, u32);

/// Spans per chunk after a split or a build; a chunk grows to twice this before it splits.
const CHUNK: usize = 256;

/// Live data structures sorted by start address.
#[derive(Debug, Default, Clone)]
pub(crate) struct Lookup {
    /// Each chunk's first span, for the search among chunks.
    firsts: Vec<Span>,
    /// Non-empty sorted runs of spans; every span of a chunk sorts before the next chunk's.
    chunks: Vec<Arc<Vec<Span>>>,
}

impl Lookup {
    /// A lookup over `spans`, which must be sorted.
    pub(crate) fn of_spans(spans: Vec<Span>) -> Self {
        debug_assert!(spans.is_sorted());
        let chunks: Vec<Arc<Vec<Span>>> =
            spans.chunks(CHUNK).map(|c| Arc::new(c.to_vec())).collect();
        Lookup {
            firsts: chunks.iter().map(|c| c[0]).collect(),
            chunks,
        }
    }

    /// How many spans it holds.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.chunks.iter().map(|c| c.len()).sum()
    }

    /// The chunk and the position in it of the last span whose start is at or below `addr`.
    fn last_starting_at_or_below(&self, addr: u64) -> Option<(usize, usize)> {
        let c = self
            .firsts
            .partition_point(|&(start, _, _)| start <= addr)
            .checked_sub(1)?;
        let i = self.chunks[c].partition_point(|&(start, _, _)| start <= addr);
        Some((c, i - 1))
    }

    /// The span after position `i` of chunk `c`, in this chunk or the next.
    fn after(&self, c: usize, i: usize) -> Option<Span> {
        self.chunks[c]
            .get(i + 1)
            .or_else(|| self.firsts.get(c + 1))
            .copied()
    }

    /// The index of the structure holding `addr`; the last by start when structures overlap.
    #[cfg(test)]
    pub(crate) fn find(&self, addr: u64) -> Option<u32> {
        self.find_span(addr).map(|(_, _, index)| index)
    }

    /// The span `(start, end, index)` of the structure holding `addr`.
    #[cfg(test)]
    pub(crate) fn find_span(&self, addr: u64) -> Option<Span> {
        let (c, i) = self.last_starting_at_or_below(addr)?;
        let span = self.chunks[c][i];
        (addr < span.1).then_some(span)
    }

    /// What [`Lookup::find_span`] answers for `addr` (the structure's index, or none), with the
    /// bytes `lo..hi` around `addr` for which it answers the same: a cache of the answer is good
    /// for any address in them, and for addresses outside any structure too.
    pub(crate) fn find_with_extent(&self, addr: u64) -> (u64, u64, Option<u32>) {
        let Some((c, i)) = self.last_starting_at_or_below(addr) else {
            // The next structure's start bounds the answer: from there the search finds it.
            return (0, self.firsts.first().map_or(u64::MAX, |s| s.0), None);
        };
        let (start, end, index) = self.chunks[c][i];
        let next = self.after(c, i).map_or(u64::MAX, |s| s.0);
        if addr < end {
            (start, end.min(next), Some(index))
        } else {
            (end, next, None)
        }
    }

    /// The spans that start at `start`, in order.
    pub(crate) fn starting_at(&self, start: u64) -> impl Iterator<Item = Span> + '_ {
        // Chunks from the last whose first span starts before `start` (spans starting at
        // `start` may begin in it) to the first that starts after.
        let from = self
            .firsts
            .partition_point(|s| s.0 < start)
            .saturating_sub(1);
        self.chunks[from.min(self.chunks.len())..]
            .iter()
            .flat_map(|c| c.iter().copied())
            .skip_while(move |s| s.0 < start)
            .take_while(move |s| s.0 == start)
    }

    /// This lookup with `span` added.
    pub(crate) fn with(&self, span: Span) -> Lookup {
        let mut next = self.clone();
        if next.chunks.is_empty() {
            next.chunks.push(Arc::new(vec![span]));
            next.firsts.push(span);
            return next;
        }
        // The last chunk whose first span sorts at or before it (else the first chunk).
        let c = next
            .firsts
            .partition_point(|first| *first <= span)
            .saturating_sub(1);
        let mut chunk = next.chunks[c].as_ref().clone();
        let at = chunk.partition_point(|s| *s <= span);
        chunk.insert(at, span);
        if chunk.len() > 2 * CHUNK {
            let tail = chunk.split_off(CHUNK);
            next.firsts.insert(c + 1, tail[0]);
            next.chunks.insert(c + 1, Arc::new(tail));
        }
        next.firsts[c] = chunk[0];
        next.chunks[c] = Arc::new(chunk);
        next
    }

    /// This lookup without `span`; `None` when it does not hold it.
    pub(crate) fn without(&self, span: Span) -> Option<Lookup> {
        let c = self
            .firsts
            .partition_point(|first| *first <= span)
            .checked_sub(1)?;
        let at = self.chunks[c].binary_search(&span).ok()?;
        let mut next = self.clone();
        let mut chunk = next.chunks[c].as_ref().clone();
        chunk.remove(at);
        if chunk.is_empty() {
            next.chunks.remove(c);
            next.firsts.remove(c);
        } else {
            next.firsts[c] = chunk[0];
            next.chunks[c] = Arc::new(chunk);
        }
        Some(next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small xorshift: the same sequence every run.
    struct Random(u64);

    impl Random {
        fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }
    }

    /// What one sorted vector answers, as the lookup did before it had chunks.
    fn model_extent(spans: &[Span], addr: u64) -> (u64, u64, Option<u32>) {
        let i = spans.partition_point(|&(start, _, _)| start <= addr);
        let next = spans.get(i).map_or(u64::MAX, |s| s.0);
        match i.checked_sub(1).map(|p| spans[p]) {
            Some((start, end, index)) if addr < end => (start, end.min(next), Some(index)),
            Some((_, end, _)) => (end, next, None),
            None => (0, next, None),
        }
    }

    #[test]
    fn lookup_finds_the_structure_holding_an_address() {
        let lookup = Lookup::of_spans(vec![(100, 200, 0), (200, 260, 1), (400, 500, 2)]);
        assert_eq!(lookup.find(99), None);
        assert_eq!(lookup.find(100), Some(0));
        assert_eq!(lookup.find(199), Some(0));
        assert_eq!(lookup.find(200), Some(1));
        assert_eq!(lookup.find(300), None);
        assert_eq!(lookup.find(499), Some(2));
        assert_eq!(lookup.find(500), None);
    }

    #[test]
    fn extents_cover_only_addresses_with_the_same_answer() {
        // 150..180 overlaps the end of 100..200: from 150 on the search answers 1 or nothing.
        let lookup = Lookup::of_spans(vec![(100, 200, 0), (150, 180, 1), (400, 500, 2)]);
        assert_eq!(lookup.find_with_extent(50), (0, 100, None));
        assert_eq!(lookup.find_with_extent(120), (100, 150, Some(0)));
        assert_eq!(lookup.find_with_extent(160), (150, 180, Some(1)));
        assert_eq!(lookup.find_with_extent(190), (180, 400, None));
        assert_eq!(lookup.find_with_extent(450), (400, 500, Some(2)));
        assert_eq!(lookup.find_with_extent(600), (500, u64::MAX, None));
        for (addr, (lo, hi, answer)) in [120u64, 160, 190, 450, 600, 50]
            .into_iter()
            .map(|a| (a, lookup.find_with_extent(a)))
        {
            for probe in [lo, hi.saturating_sub(1), addr] {
                assert_eq!(lookup.find(probe), answer, "{probe} in {lo}..{hi}");
            }
        }
    }

    #[test]
    fn adding_and_removing_thousands_of_spans_answers_as_one_sorted_vector() {
        let mut random = Random(0x2545_F491_4F6C_DD1D);
        let mut model: Vec<Span> = Vec::new();
        let mut lookup = Lookup::default();
        for step in 0..6_000u32 {
            // Mostly adds, so the lookup grows past several chunks; starts on a coarse grid so
            // that some coincide and some spans overlap.
            if model.is_empty() || random.below(10) < 7 {
                let start = random.below(4_000) * 64;
                let span = (start, start + 64 * (1 + random.below(8)), step);
                lookup = lookup.with(span);
                let at = model.partition_point(|s| *s <= span);
                model.insert(at, span);
            } else {
                let span = model.remove(random.below(model.len() as u64) as usize);
                lookup = lookup.without(span).expect("held");
            }
            if step % 97 == 0 {
                assert_eq!(lookup.len(), model.len());
                for _ in 0..64 {
                    let addr = random.below(4_100 * 64);
                    assert_eq!(
                        lookup.find_with_extent(addr),
                        model_extent(&model, addr),
                        "{addr}"
                    );
                    let at: Vec<Span> = model.iter().copied().filter(|s| s.0 == addr).collect();
                    assert_eq!(lookup.starting_at(addr).collect::<Vec<_>>(), at);
                }
            }
        }
        assert!(lookup.chunks.len() > 4, "{} chunks", lookup.chunks.len());
        assert!(
            lookup
                .chunks
                .iter()
                .all(|c| !c.is_empty() && c.len() <= 2 * CHUNK)
        );
        assert!(lookup.without((1, 2, 3)).is_none());
    }

    #[test]
    fn a_snapshot_keeps_its_spans_after_the_next_is_made() {
        let old = Lookup::of_spans(vec![(100, 200, 0), (300, 400, 1)]);
        let new = old.with((200, 260, 2)).without((100, 200, 0)).unwrap();
        assert_eq!(old.find(150), Some(0));
        assert_eq!(old.find(250), None);
        assert_eq!(new.find(150), None);
        assert_eq!(new.find(250), Some(2));
        assert_eq!(new.find_span(350), Some((300, 400, 1)));
    }
}
