//! The varints, zigzag values and strings of the partial trace format, and a checked cursor
//! that names the offset of whatever it fails to read.

use super::PartialError;

pub(super) fn put_varint(out: &mut Vec<u8>, value: u64) {
    put_varint128(out, u128::from(value));
}

pub(super) fn put_varint128(out: &mut Vec<u8>, mut value: u128) {
    while value >= 0x80 {
        out.push(value as u8 | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

pub(super) fn zigzag(delta: u64) -> u64 {
    let delta = delta as i64;
    ((delta << 1) ^ (delta >> 63)) as u64
}

pub(super) fn unzigzag(value: u64) -> u64 {
    ((value >> 1) as i64 ^ -((value & 1) as i64)) as u64
}

pub(super) fn put_str(out: &mut Vec<u8>, s: &str) {
    put_varint(out, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

/// Longest string field accepted, so a corrupt length cannot make a reader copy gigabytes.
const MAX_STR: u64 = 1 << 16;

/// Reads fields from a byte slice that starts at file offset `base`.
#[derive(Debug, Clone)]
pub(super) struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
    base: u64,
}

impl<'a> Cursor<'a> {
    pub(super) fn new(bytes: &'a [u8], base: u64) -> Self {
        Self {
            bytes,
            pos: 0,
            base,
        }
    }

    pub(super) fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    pub(super) fn is_empty(&self) -> bool {
        self.pos == self.bytes.len()
    }

    pub(super) fn position(&self) -> usize {
        self.pos
    }

    pub(super) fn byte(&mut self, inside: &'static str) -> Result<u8, PartialError> {
        let b = *self.bytes.get(self.pos).ok_or(PartialError::Truncated {
            offset: self.offset(),
            inside,
        })?;
        self.pos += 1;
        Ok(b)
    }

    /// A varint of at most `bits` bits.
    pub(super) fn varint128(
        &mut self,
        bits: u32,
        inside: &'static str,
    ) -> Result<u128, PartialError> {
        let start = self.offset();
        let mut value = 0u128;
        let mut shift = 0u32;
        loop {
            let b = self.byte(inside)?;
            let part = u128::from(b & 0x7f);
            if shift >= bits || (bits - shift < 7 && part >> (bits - shift) != 0) {
                return Err(PartialError::BadRecord {
                    offset: start,
                    why: format!("{inside} overflows {bits} bits"),
                });
            }
            value |= part << shift;
            if b & 0x80 == 0 {
                return Ok(value);
            }
            shift += 7;
        }
    }

    /// The next `n` bytes.
    pub(super) fn bytes(
        &mut self,
        n: usize,
        inside: &'static str,
    ) -> Result<&'a [u8], PartialError> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.bytes.len());
        let Some(end) = end else {
            return Err(PartialError::Truncated {
                offset: self.base + self.bytes.len() as u64,
                inside,
            });
        };
        let piece = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(piece)
    }

    pub(super) fn varint(&mut self, inside: &'static str) -> Result<u64, PartialError> {
        Ok(self.varint128(64, inside)? as u64)
    }

    /// A string field's bytes, read to their end but not yet checked (see [`Text::checked`]):
    /// a reader sees a record's whole extent, and its checksum, before what its fields mean.
    pub(super) fn text(&mut self, inside: &'static str) -> Result<Text<'a>, PartialError> {
        let offset = self.offset();
        let len = self.varint(inside)?;
        let bytes = self.bytes(usize::try_from(len).unwrap_or(usize::MAX), inside)?;
        Ok(Text {
            bytes,
            offset,
            inside,
        })
    }
}

/// A string field as it lies in the file.
#[derive(Debug, Clone, Copy)]
pub(super) struct Text<'a> {
    bytes: &'a [u8],
    offset: u64,
    inside: &'static str,
}

impl Text<'_> {
    /// The field as a string: UTF-8 and at most [`MAX_STR`] bytes.
    pub(super) fn checked(self) -> Result<String, PartialError> {
        let bad = |why: String| PartialError::BadRecord {
            offset: self.offset,
            why,
        };
        if self.bytes.len() as u64 > MAX_STR {
            return Err(bad(format!(
                "{} is {} bytes long (at most {MAX_STR})",
                self.inside,
                self.bytes.len()
            )));
        }
        let text = std::str::from_utf8(self.bytes)
            .map_err(|_| bad(format!("{} is not UTF-8", self.inside)))?;
        Ok(text.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip_and_reject_overflow() {
        for v in [0u128, 1, 127, 128, u128::from(u64::MAX), (1 << 65) - 1] {
            let mut out = Vec::new();
            put_varint128(&mut out, v);
            assert_eq!(Cursor::new(&out, 0).varint128(65, "x").unwrap(), v);
        }
        let mut out = Vec::new();
        put_varint128(&mut out, 1 << 64);
        assert!(Cursor::new(&out, 0).varint("a value").is_err());
        assert!(Cursor::new(&[0xff; 11], 0).varint("a value").is_err());
        for d in [0u64, 1, u64::MAX, 1 << 63, 12345] {
            assert_eq!(unzigzag(zigzag(d)), d);
        }
    }
}
