//! Exact LRU stack distances in O(log n) per reference: a Fenwick tree over reference times.
//!
//! Time advances by one per reference. The tree holds a 1 at the time of each line's most recent
//! reference and 0 elsewhere, so the number of distinct lines referenced since a line's previous
//! reference is the number of ones after that time: one prefix sum.

use super::line_hash::{LineMap, line_map_with_capacity};

/// Smallest time span the tree covers; compaction below this would run too often to pay off.
const MIN_SPAN: usize = 1024;

/// Prefix sums over 0/1 marks, one per reference time.
#[derive(Debug, Clone, Default)]
struct Fenwick {
    /// 1-based implicit tree: `tree[i]` sums the marks in `(i - lowbit(i), i]`.
    tree: Vec<u32>,
}

impl Fenwick {
    /// A tree over `span` times whose first `marked` times are marked, built in O(span).
    fn with_leading_marks(span: usize, marked: usize) -> Self {
        let mut tree = vec![0u32; span + 1];
        for (i, node) in tree.iter_mut().enumerate().skip(1) {
            let low = i - (i & i.wrapping_neg());
            *node = i.min(marked).saturating_sub(low) as u32;
        }
        Self { tree }
    }

    fn span(&self) -> usize {
        self.tree.len() - 1
    }

    #[inline]
    fn mark(&mut self, time: usize) {
        let mut i = time + 1;
        while i < self.tree.len() {
            self.tree[i] += 1;
            i += i & i.wrapping_neg();
        }
    }

    #[inline]
    fn unmark(&mut self, time: usize) {
        let mut i = time + 1;
        while i < self.tree.len() {
            self.tree[i] -= 1;
            i += i & i.wrapping_neg();
        }
    }

    /// Marks at times `[0, end)`.
    #[inline]
    fn marks_before(&self, end: usize) -> u64 {
        let mut i = end;
        let mut sum = 0u64;
        while i > 0 {
            sum += u64::from(self.tree[i]);
            i &= i - 1;
        }
        sum
    }
}

/// The LRU stack of every line referenced so far, answering each reference with its stack distance.
///
/// Memory stays proportional to the number of distinct lines: when time reaches the end of the
/// tree, live times are renumbered 0..lines in order (which keeps every distance) and the tree
/// is rebuilt with room for as many references again.
#[derive(Debug, Clone)]
pub(crate) struct LruStack {
    marks: Fenwick,
    /// Time of each line's most recent reference.
    last_reference: LineMap<usize>,
    now: usize,
    /// Reused by compaction so it allocates only when the number of lines has grown.
    by_time: Vec<(usize, u64)>,
}

impl LruStack {
    pub(crate) fn new(expected_lines: usize) -> Self {
        let span = (2 * expected_lines).max(MIN_SPAN);
        Self {
            marks: Fenwick::with_leading_marks(span, 0),
            last_reference: line_map_with_capacity(expected_lines),
            now: 0,
            by_time: Vec::new(),
        }
    }

    /// References `block` and returns how many distinct other lines were referenced since its
    /// previous reference, or `None` on its first reference.
    ///
    /// A fully-associative LRU cache of `c` lines hits exactly when the distance is below `c`.
    #[inline]
    pub(crate) fn reference(&mut self, block: u64) -> Option<u64> {
        if self.now == self.marks.span() {
            self.compact();
        }
        let now = self.now;
        self.now += 1;
        self.marks.mark(now);
        let previous = self.last_reference.insert(block, now)?;
        self.marks.unmark(previous);
        Some(self.marks.marks_before(now) - self.marks.marks_before(previous + 1))
    }

    /// Number of distinct lines referenced so far.
    pub(crate) fn distinct_lines(&self) -> usize {
        self.last_reference.len()
    }

    fn compact(&mut self) {
        self.by_time.clear();
        self.by_time.extend(
            self.last_reference
                .iter()
                .map(|(&block, &time)| (time, block)),
        );
        self.by_time.sort_unstable();
        for (rank, &(_, block)) in self.by_time.iter().enumerate() {
            self.last_reference.insert(block, rank);
        }
        let lines = self.by_time.len();
        self.marks = Fenwick::with_leading_marks((2 * lines).max(MIN_SPAN), lines);
        self.now = lines;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Stack distance by brute force: distinct blocks between the two references.
    fn naive_distances(stream: &[u64]) -> Vec<Option<u64>> {
        stream
            .iter()
            .enumerate()
            .map(|(i, b)| {
                let previous = stream[..i].iter().rposition(|x| x == b)?;
                let between: std::collections::HashSet<_> =
                    stream[previous + 1..i].iter().collect();
                Some(between.len() as u64)
            })
            .collect()
    }

    #[test]
    fn a_b_c_a_is_distance_two() {
        let mut stack = LruStack::new(4);
        let got: Vec<_> = [1, 2, 3, 1, 1, 3].map(|b| stack.reference(b)).to_vec();
        assert_eq!(got, [None, None, None, Some(2), Some(0), Some(1)]);
        assert_eq!(stack.distinct_lines(), 3);
    }

    #[test]
    fn distances_survive_many_compactions() {
        // 5000 references over 300 lines cross the 1024-time span several times.
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let stream: Vec<u64> = (0..5000)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state % 300
            })
            .collect();
        let mut stack = LruStack::new(1);
        let got: Vec<_> = stream.iter().map(|&b| stack.reference(b)).collect();
        assert_eq!(got, naive_distances(&stream));
        assert!(stack.marks.span() <= 2 * 300 + MIN_SPAN);
    }

    #[test]
    fn prebuilt_marks_match_marking_one_by_one() {
        let built = Fenwick::with_leading_marks(37, 20);
        let mut marked = Fenwick::with_leading_marks(37, 0);
        (0..20).for_each(|t| marked.mark(t));
        assert_eq!(built.tree, marked.tree);
    }
}
