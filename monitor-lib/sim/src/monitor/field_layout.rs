//! The buckets of a by-field histogram: the histogram's range is an array of equal elements (an
//! array of structures), and an access counts in the bucket of the member that holds its byte
//! offset within the element, summed over every element; bytes no member holds (padding) count in
//! one last bucket, so the buckets still sum to the static count of the range.
//!
//! The counter array sees one address per access (the first byte, as hardware would match its
//! tag), so an access straddling two members counts once, for the member holding its first byte:
//! splitting it by bytes would count one access in two buckets and break the sum. Members that
//! overlap (a union's) give each byte to the member listed first.

use serde::Serialize;

/// Most bytes of one element a by-field histogram takes: its byte table is resident, 4 bytes per
/// element byte.
pub const MAX_ELEMENT_BYTES: u64 = 1 << 16;

/// Most members one by-field histogram takes (its buckets are the members and padding).
pub const MAX_FIELDS: usize = 1024;

/// One member's bytes within the element.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct FieldSpan {
    /// Bytes from the element's first byte.
    pub offset: u64,
    pub bytes: u64,
}

/// The element a by-field histogram divides its range into, and the members that are its buckets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FieldLayout {
    /// Bytes of one element; the range starts at an element's first byte.
    pub element_bytes: u64,
    /// Bucket `i` is `members[i]`; bucket `members.len()` is the padding.
    pub members: Vec<FieldSpan>,
}

/// Why a field layout cannot be a histogram's buckets.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FieldLayoutError {
    #[error(
        "an element of {element_bytes} bytes cannot be divided by field: it must be 1 to {MAX_ELEMENT_BYTES} bytes"
    )]
    ElementBytes { element_bytes: u64 },
    #[error(
        "a by-field histogram of {members} members is not supported: at most {MAX_FIELDS}, and at least 1"
    )]
    Members { members: usize },
    #[error(
        "member {index} ({offset}+{bytes} bytes) is empty or runs past the {element_bytes}-byte element; give members from the element's type"
    )]
    Member {
        index: usize,
        offset: u64,
        bytes: u64,
        element_bytes: u64,
    },
}

impl FieldLayout {
    /// Buckets of a histogram with this layout: one per member and the padding.
    pub fn buckets(&self) -> usize {
        self.members.len() + 1
    }

    /// Checks the layout and builds its table: the bucket of each byte of the element.
    pub(crate) fn bucket_of_byte(&self) -> Result<Vec<u32>, FieldLayoutError> {
        let element_bytes = self.element_bytes;
        if element_bytes == 0 || element_bytes > MAX_ELEMENT_BYTES {
            return Err(FieldLayoutError::ElementBytes { element_bytes });
        }
        if self.members.is_empty() || self.members.len() > MAX_FIELDS {
            return Err(FieldLayoutError::Members {
                members: self.members.len(),
            });
        }
        let padding = self.members.len() as u32;
        let mut table = vec![padding; element_bytes as usize];
        for (index, m) in self.members.iter().enumerate() {
            let end = m
                .offset
                .checked_add(m.bytes)
                .filter(|&end| end <= element_bytes);
            let Some(end) = end.filter(|_| m.bytes > 0) else {
                return Err(FieldLayoutError::Member {
                    index,
                    offset: m.offset,
                    bytes: m.bytes,
                    element_bytes,
                });
            };
            for slot in &mut table[m.offset as usize..end as usize] {
                if *slot == padding {
                    *slot = index as u32;
                }
            }
        }
        Ok(table)
    }
}

/// `struct { double x, y, z; int id; }`: 32 bytes, the last 4 padding; the tests' element.
#[cfg(test)]
pub(crate) fn particle_for_tests() -> FieldLayout {
    FieldLayout {
        element_bytes: 32,
        members: [(0, 8), (8, 8), (16, 8), (24, 4)]
            .into_iter()
            .map(|(offset, bytes)| FieldSpan { offset, bytes })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(element_bytes: u64, members: &[(u64, u64)]) -> FieldLayout {
        FieldLayout {
            element_bytes,
            members: members
                .iter()
                .map(|&(offset, bytes)| FieldSpan { offset, bytes })
                .collect(),
        }
    }

    #[test]
    fn each_byte_goes_to_its_member_and_padding_to_the_last_bucket() {
        // struct { double x, y, z; int id; }: 28 bytes of members, 4 of padding.
        let table = layout(32, &[(0, 8), (8, 8), (16, 8), (24, 4)])
            .bucket_of_byte()
            .unwrap();
        let mut expected = vec![0; 8];
        expected.extend([1; 8]);
        expected.extend([2; 8]);
        expected.extend([3; 4]);
        expected.extend([4; 4]);
        assert_eq!(table, expected);
    }

    #[test]
    fn overlapping_members_give_each_byte_to_the_first_listed() {
        // union-like: a 4-byte member over the first half of an 8-byte one.
        let table = layout(8, &[(0, 4), (0, 8)]).bucket_of_byte().unwrap();
        assert_eq!(table, [0, 0, 0, 0, 1, 1, 1, 1]);
    }

    #[test]
    fn bad_layouts_are_refused_with_what_to_fix() {
        let e = layout(0, &[(0, 1)]).bucket_of_byte().unwrap_err();
        assert!(e.to_string().contains("1 to 65536 bytes"), "{e}");
        let e = layout(8, &[]).bucket_of_byte().unwrap_err();
        assert!(e.to_string().contains("at least 1"), "{e}");
        let e = layout(8, &[(4, 8)]).bucket_of_byte().unwrap_err();
        assert!(
            e.to_string().contains("runs past the 8-byte element"),
            "{e}"
        );
        let e = layout(8, &[(u64::MAX, 2)]).bucket_of_byte().unwrap_err();
        assert!(e.to_string().contains("member 0"), "{e}");
        let e = layout(8, &[(0, 0)]).bucket_of_byte().unwrap_err();
        assert!(e.to_string().contains("is empty"), "{e}");
    }
}
