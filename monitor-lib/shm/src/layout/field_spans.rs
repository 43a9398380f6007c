//! A by-field request's member table as a request slot carries it: the element's size and each
//! member's bytes within it, packed two members to a word after the slot's owner words. The
//! runtime needs nothing else to bind the histogram (one bucket per member, then one for the
//! padding); the names stay with the tool, which read them from the program's debug info.

use std::sync::atomic::{AtomicU64, Ordering};

/// The slot word holding the element size (low 32 bits) and the member count (the next 32).
pub const FIELD_HEADER_WORD: usize = 10;
/// Words of member spans after [`FIELD_HEADER_WORD`].
pub const FIELD_SPAN_WORDS: usize = 15;
/// Most members a slot carries: two per span word.
pub const MAX_SLOT_FIELDS: usize = 2 * FIELD_SPAN_WORDS;
/// Largest element a slot describes: a span's end is 16 bits.
pub const MAX_SLOT_ELEMENT_BYTES: u32 = u16::MAX as u32;

/// The element and its members' `[start, end)` bytes, as a by-field request carries them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldSpans {
    element_bytes: u32,
    count: u8,
    spans: [(u16, u16); MAX_SLOT_FIELDS],
}

/// Why a member table cannot go in a slot (or came out of one malformed).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FieldSpansError {
    #[error(
        "an element of {0} bytes cannot be counted by field: 1 to {MAX_SLOT_ELEMENT_BYTES} bytes can"
    )]
    ElementBytes(u64),
    #[error(
        "{0} members cannot be counted by field: a request carries 1 to {MAX_SLOT_FIELDS} (count a range of the element's members with a histogram instead)"
    )]
    Count(usize),
    #[error(
        "member {index} ([{start}, {end}) within the element) is empty or runs past the {element_bytes}-byte element"
    )]
    Span {
        index: usize,
        start: u64,
        end: u64,
        element_bytes: u64,
    },
}

impl FieldSpans {
    /// A member table: `element_bytes` and each member's `(offset, bytes)`, checked.
    pub fn new(element_bytes: u64, members: &[(u64, u64)]) -> Result<Self, FieldSpansError> {
        if element_bytes == 0 || element_bytes > u64::from(MAX_SLOT_ELEMENT_BYTES) {
            return Err(FieldSpansError::ElementBytes(element_bytes));
        }
        if members.is_empty() || members.len() > MAX_SLOT_FIELDS {
            return Err(FieldSpansError::Count(members.len()));
        }
        let mut spans = [(0u16, 0u16); MAX_SLOT_FIELDS];
        for (index, &(offset, bytes)) in members.iter().enumerate() {
            let end = offset.saturating_add(bytes);
            if bytes == 0 || end > element_bytes {
                return Err(FieldSpansError::Span {
                    index,
                    start: offset,
                    end,
                    element_bytes,
                });
            }
            spans[index] = (offset as u16, end as u16);
        }
        Ok(Self {
            element_bytes: element_bytes as u32,
            count: members.len() as u8,
            spans,
        })
    }

    /// Bytes of one element.
    pub fn element_bytes(&self) -> u64 {
        u64::from(self.element_bytes)
    }

    /// Each member's `(offset, bytes)` within the element.
    pub fn members(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.spans[..usize::from(self.count)]
            .iter()
            .map(|&(start, end)| (u64::from(start), u64::from(end - start)))
    }

    /// Buckets of the histogram: one per member and the padding.
    pub fn buckets(&self) -> u64 {
        u64::from(self.count) + 1
    }

    /// Writes the table into slot words 10 to 25.
    pub(crate) fn store(&self, words: &[AtomicU64]) {
        let put = |i: usize, v: u64| {
            if let Some(w) = words.get(i) {
                w.store(v, Ordering::Relaxed);
            }
        };
        put(
            FIELD_HEADER_WORD,
            u64::from(self.element_bytes) | u64::from(self.count) << 32,
        );
        for (i, pair) in self.spans.chunks(2).enumerate() {
            let half = |(start, end): (u16, u16)| u64::from(start) | u64::from(end) << 16;
            put(
                FIELD_HEADER_WORD + 1 + i,
                half(pair[0]) | half(pair[1]) << 32,
            );
        }
    }

    /// Reads a table back, checking it as [`Self::new`] does.
    pub(crate) fn load(words: &[AtomicU64]) -> Result<Self, FieldSpansError> {
        let get = |i: usize| words.get(i).map_or(0, |w| w.load(Ordering::Relaxed));
        let header = get(FIELD_HEADER_WORD);
        let count = (header >> 32) as usize;
        if count == 0 || count > MAX_SLOT_FIELDS {
            return Err(FieldSpansError::Count(count));
        }
        let members: Vec<(u64, u64)> = (0..count)
            .map(|i| {
                let word = get(FIELD_HEADER_WORD + 1 + i / 2) >> (32 * (i % 2));
                let (start, end) = (word & 0xffff, (word >> 16) & 0xffff);
                (start, end.saturating_sub(start))
            })
            .collect();
        Self::new(u64::from(header as u32), &members)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words() -> Vec<AtomicU64> {
        (0..FIELD_HEADER_WORD + 1 + FIELD_SPAN_WORDS)
            .map(|_| AtomicU64::new(0))
            .collect()
    }

    #[test]
    fn a_member_table_goes_through_the_slot_unchanged() {
        let particle = [(0, 8), (8, 8), (16, 8), (24, 4)];
        let spans = FieldSpans::new(32, &particle).unwrap();
        let w = words();
        spans.store(&w);
        let back = FieldSpans::load(&w).unwrap();
        assert_eq!(back, spans);
        assert_eq!(back.members().collect::<Vec<_>>(), particle);
        assert_eq!(back.buckets(), 5);
        // The most members, and the largest element.
        let many: Vec<_> = (0..MAX_SLOT_FIELDS as u64).map(|i| (2 * i, 2)).collect();
        let spans = FieldSpans::new(u64::from(MAX_SLOT_ELEMENT_BYTES), &many).unwrap();
        spans.store(&w);
        assert_eq!(
            FieldSpans::load(&w).unwrap().members().collect::<Vec<_>>(),
            many
        );
    }

    #[test]
    fn malformed_tables_are_refused_saying_why() {
        let e = FieldSpans::new(0, &[(0, 1)]).unwrap_err();
        assert!(e.to_string().contains("1 to 65535 bytes"), "{e}");
        let e = FieldSpans::new(1 << 16, &[(0, 1)]).unwrap_err();
        assert!(matches!(e, FieldSpansError::ElementBytes(65536)), "{e}");
        let e = FieldSpans::new(8, &[]).unwrap_err();
        assert!(e.to_string().contains("1 to 30"), "{e}");
        let e = FieldSpans::new(8, &[(0, 8); 31]).unwrap_err();
        assert!(matches!(e, FieldSpansError::Count(31)), "{e}");
        let e = FieldSpans::new(8, &[(0, 4), (6, 4)]).unwrap_err();
        assert!(e.to_string().contains("member 1 ([6, 10)"), "{e}");
        let e = FieldSpans::new(8, &[(u64::MAX, 4)]).unwrap_err();
        assert!(matches!(e, FieldSpansError::Span { index: 0, .. }), "{e}");
        // Words a tool never wrote: an end before its start, a count past the words.
        let w = words();
        w[FIELD_HEADER_WORD].store(32 | 1 << 32, Ordering::Relaxed);
        w[FIELD_HEADER_WORD + 1].store(8 | 4 << 16, Ordering::Relaxed);
        assert!(FieldSpans::load(&w).is_err());
        w[FIELD_HEADER_WORD].store(32 | 200 << 32, Ordering::Relaxed);
        assert_eq!(FieldSpans::load(&w), Err(FieldSpansError::Count(200)));
    }
}
