//! The `.epct` trace format: a compact binary form of a lackey trace for fast re-runs.
//!
//! Layout (all integers little-endian):
//!
//! | offset | size | field |
//! |-------:|-----:|-------|
//! | 0 | 8 | magic `89 45 50 43 54 0d 0a 1a` (`\x89EPCT\r\n\x1a`, so text-mode mangling shows) |
//! | 8 | 4 | format version, [`EPCT_VERSION`] |
//! | 12 | 4 | flags, zero in version 1 |
//! | 16 | 8 | record count (`u64::MAX` while a writer has not finished) |
//! | 24 | .. | records |
//!
//! Each record is a tag byte, then an optional address delta, then an optional size:
//!
//! - tag bits 0-1: kind (0 instruction, 1 load, 2 store, 3 modify);
//! - tag bit 2: the address is the predicted one, and no delta follows;
//! - tag bits 3-7: size code: 1..=24 is the size itself, 25..=31 is `32 << (code - 25)`
//!   (32 to 2048 bytes), 0 means the size follows as a varint.
//!
//! The predicted address is the end (address + size) of the previous record of the same stream,
//! instruction or data, so straight-line code and sequential sweeps cost one byte per record.
//! The delta is `address - predicted` as a zigzag LEB128 varint.

use std::io::{self, Read, Seek, SeekFrom, Write};

use super::{TraceKind, TraceRecord};

/// The eight bytes every `.epct` file starts with.
pub const EPCT_MAGIC: [u8; 8] = *b"\x89EPCT\r\n\x1a";
/// The format version this code reads and writes.
pub const EPCT_VERSION: u32 = 1;
/// Bytes before the first record.
pub const EPCT_HEADER_LEN: usize = 24;

const COUNT_OFFSET: u64 = 16;
const UNFINISHED: u64 = u64::MAX;
const PREDICTED_BIT: u8 = 1 << 2;
const SIZE_SHIFT: u32 = 3;
const LAST_LITERAL_SIZE: u32 = 24;
/// A tag, a ten-byte delta and a five-byte size.
const MAX_RECORD_LEN: usize = 16;

/// Why an `.epct` trace could not be read. Every variant names the byte offset in the file.
#[derive(Debug, thiserror::Error)]
pub enum EpctError {
    #[error("offset {offset}: cannot read the trace")]
    Io {
        offset: u64,
        #[source]
        source: io::Error,
    },
    #[error("offset 0: not an epct trace (bad magic {found:02x?})")]
    BadMagic { found: Vec<u8> },
    #[error(
        "offset 8: epct format version {found} is not supported (this build reads version {EPCT_VERSION})"
    )]
    UnsupportedVersion { found: u32 },
    #[error("offset 12: unknown epct flags {found:#x}")]
    UnsupportedFlags { found: u32 },
    #[error(
        "offset 16: the trace was never finished (its writer stopped before recording the count)"
    )]
    Unfinished,
    #[error(
        "offset {offset}: the trace is truncated inside {inside} ({records_read} of {declared} records read)"
    )]
    Truncated {
        offset: u64,
        inside: &'static str,
        records_read: u64,
        declared: u64,
    },
    #[error("offset {offset}: bad record: {why}")]
    BadRecord { offset: u64, why: &'static str },
    #[error("offset {offset}: data after the {declared} records the header declares")]
    TrailingData { offset: u64, declared: u64 },
}

/// The per-stream state both sides keep to predict the next address.
#[derive(Debug, Clone, Copy, Default)]
struct Predictor {
    /// End of the previous record, index 0 for instructions and 1 for data.
    next_addr: [u64; 2],
}

impl Predictor {
    #[inline]
    fn stream(kind: TraceKind) -> usize {
        usize::from(!kind.is_instr())
    }

    #[inline]
    fn predict(&self, kind: TraceKind) -> u64 {
        self.next_addr[Self::stream(kind)]
    }

    #[inline]
    fn advance(&mut self, record: &TraceRecord) {
        self.next_addr[Self::stream(record.kind)] =
            record.addr.wrapping_add(u64::from(record.size));
    }
}

#[inline]
fn kind_code(kind: TraceKind) -> u8 {
    match kind {
        TraceKind::Instr => 0,
        TraceKind::Load => 1,
        TraceKind::Store => 2,
        TraceKind::Modify => 3,
    }
}

#[inline]
fn kind_of(code: u8) -> TraceKind {
    match code & 3 {
        0 => TraceKind::Instr,
        1 => TraceKind::Load,
        2 => TraceKind::Store,
        _ => TraceKind::Modify,
    }
}

#[inline]
fn size_code(size: u32) -> u8 {
    match size {
        1..=LAST_LITERAL_SIZE => size as u8,
        32 | 64 | 128 | 256 | 512 | 1024 | 2048 => (25 + (size / 32).trailing_zeros()) as u8,
        _ => 0,
    }
}

#[inline]
fn size_of_code(code: u8) -> u32 {
    let code = u32::from(code);
    if code <= LAST_LITERAL_SIZE {
        code
    } else {
        32 << (code - 25)
    }
}

#[inline]
fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push(value as u8 | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

#[inline]
fn zigzag(delta: i64) -> u64 {
    ((delta << 1) ^ (delta >> 63)) as u64
}

#[inline]
fn unzigzag(value: u64) -> i64 {
    (value >> 1) as i64 ^ -((value & 1) as i64)
}

/// Writes records to a seekable sink; [`EpctWriter::finish`] records the count in the header.
#[derive(Debug)]
pub struct EpctWriter<W: Write + Seek> {
    sink: W,
    buffer: Vec<u8>,
    predictor: Predictor,
    records: u64,
    bytes: u64,
}

impl<W: Write + Seek> EpctWriter<W> {
    const FLUSH_AT: usize = 1 << 16;

    /// Writes the header (marked unfinished) at the sink's current position.
    pub fn new(mut sink: W) -> io::Result<Self> {
        let mut header = Vec::with_capacity(EPCT_HEADER_LEN);
        header.extend_from_slice(&EPCT_MAGIC);
        header.extend_from_slice(&EPCT_VERSION.to_le_bytes());
        header.extend_from_slice(&0u32.to_le_bytes());
        header.extend_from_slice(&UNFINISHED.to_le_bytes());
        sink.write_all(&header)?;
        Ok(Self {
            sink,
            buffer: Vec::with_capacity(Self::FLUSH_AT + MAX_RECORD_LEN),
            predictor: Predictor::default(),
            records: 0,
            bytes: EPCT_HEADER_LEN as u64,
        })
    }

    /// Appends one record.
    pub fn write(&mut self, record: &TraceRecord) -> io::Result<()> {
        let predicted = self.predictor.predict(record.kind);
        let code = size_code(record.size);
        let mut tag = kind_code(record.kind) | (code << SIZE_SHIFT);
        if record.addr == predicted {
            tag |= PREDICTED_BIT;
        }
        self.buffer.push(tag);
        if record.addr != predicted {
            put_varint(
                &mut self.buffer,
                zigzag(record.addr.wrapping_sub(predicted) as i64),
            );
        }
        if code == 0 {
            put_varint(&mut self.buffer, u64::from(record.size));
        }
        self.predictor.advance(record);
        self.records += 1;
        if self.buffer.len() >= Self::FLUSH_AT {
            self.flush_buffer()?;
        }
        Ok(())
    }

    /// Records written so far.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Bytes written so far, header included.
    pub fn bytes(&self) -> u64 {
        self.bytes + self.buffer.len() as u64
    }

    fn flush_buffer(&mut self) -> io::Result<()> {
        self.sink.write_all(&self.buffer)?;
        self.bytes += self.buffer.len() as u64;
        self.buffer.clear();
        Ok(())
    }

    /// Writes the remaining records and the record count; returns the sink.
    pub fn finish(mut self) -> io::Result<W> {
        self.flush_buffer()?;
        let end = self.sink.stream_position()?;
        let start = end - self.bytes;
        self.sink.seek(SeekFrom::Start(start + COUNT_OFFSET))?;
        self.sink.write_all(&self.records.to_le_bytes())?;
        self.sink.seek(SeekFrom::Start(end))?;
        self.sink.flush()?;
        Ok(self.sink)
    }
}

/// Reads records from an `.epct` stream, checking the header, every record and the count.
#[derive(Debug)]
pub struct EpctReader<R> {
    source: R,
    buffer: Vec<u8>,
    /// `buffer[pos..len]` is not decoded yet.
    pos: usize,
    len: usize,
    /// File offset of `buffer[0]`.
    buffer_offset: u64,
    at_eof: bool,
    predictor: Predictor,
    declared: u64,
    records_read: u64,
    finished: bool,
}

impl<R: Read> EpctReader<R> {
    const BUFFER_LEN: usize = 1 << 18;

    /// Reads and checks the header.
    pub fn new(mut source: R) -> Result<Self, EpctError> {
        let mut header = [0u8; EPCT_HEADER_LEN];
        let got = read_up_to(&mut source, &mut header)
            .map_err(|source| EpctError::Io { offset: 0, source })?;
        let magic_len = got.min(EPCT_MAGIC.len());
        if header[..magic_len] != EPCT_MAGIC[..magic_len] || got == 0 {
            return Err(EpctError::BadMagic {
                found: header[..magic_len].to_vec(),
            });
        }
        if got < EPCT_HEADER_LEN {
            return Err(EpctError::Truncated {
                offset: got as u64,
                inside: "the header",
                records_read: 0,
                declared: 0,
            });
        }
        let word = |at: usize| u32::from_le_bytes(header[at..at + 4].try_into().expect("4 bytes"));
        let version = word(8);
        if version != EPCT_VERSION {
            return Err(EpctError::UnsupportedVersion { found: version });
        }
        let flags = word(12);
        if flags != 0 {
            return Err(EpctError::UnsupportedFlags { found: flags });
        }
        let declared = u64::from_le_bytes(header[16..24].try_into().expect("8 bytes"));
        if declared == UNFINISHED {
            return Err(EpctError::Unfinished);
        }
        Ok(Self {
            source,
            buffer: vec![0; Self::BUFFER_LEN],
            pos: 0,
            len: 0,
            buffer_offset: EPCT_HEADER_LEN as u64,
            at_eof: false,
            predictor: Predictor::default(),
            declared,
            records_read: 0,
            finished: false,
        })
    }

    /// The record count the header declares.
    pub fn declared_records(&self) -> u64 {
        self.declared
    }

    /// Records decoded so far.
    pub fn records_read(&self) -> u64 {
        self.records_read
    }

    /// Bytes of the file decoded so far, header included.
    pub fn bytes_read(&self) -> u64 {
        self.offset()
    }

    fn offset(&self) -> u64 {
        self.buffer_offset + self.pos as u64
    }

    /// Makes at least `want` undecoded bytes available unless the file ends first.
    #[inline]
    fn refill(&mut self, want: usize) -> Result<(), EpctError> {
        if self.len - self.pos >= want || self.at_eof {
            return Ok(());
        }
        self.refill_from_source(want)
    }

    // Kept out of line so the per-record check above stays small.
    #[cold]
    fn refill_from_source(&mut self, want: usize) -> Result<(), EpctError> {
        self.buffer.copy_within(self.pos..self.len, 0);
        self.buffer_offset += self.pos as u64;
        self.len -= self.pos;
        self.pos = 0;
        while self.len < want && !self.at_eof {
            match self.source.read(&mut self.buffer[self.len..]) {
                Ok(0) => self.at_eof = true,
                Ok(n) => self.len += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(source) => {
                    return Err(EpctError::Io {
                        offset: self.buffer_offset + self.len as u64,
                        source,
                    });
                }
            }
        }
        Ok(())
    }

    /// The next record, `Ok(None)` after the declared count (when nothing follows it).
    #[inline(always)]
    pub fn next_record(&mut self) -> Result<Option<TraceRecord>, EpctError> {
        if self.records_read == self.declared {
            self.refill(1)?;
            if self.len > self.pos {
                return Err(EpctError::TrailingData {
                    offset: self.offset(),
                    declared: self.declared,
                });
            }
            return Ok(None);
        }
        self.refill(MAX_RECORD_LEN)?;
        let start = self.offset();
        let bytes = &self.buffer[self.pos..self.len];
        let truncated = |inside| EpctError::Truncated {
            offset: start,
            inside,
            records_read: self.records_read,
            declared: self.declared,
        };
        let bad = |why| EpctError::BadRecord { offset: start, why };
        let (&tag, mut rest) = bytes.split_first().ok_or_else(|| truncated("a record"))?;
        let kind = kind_of(tag);
        let predicted = self.predictor.predict(kind);
        let addr = if tag & PREDICTED_BIT != 0 {
            predicted
        } else {
            let (delta, after) = take_varint(rest).map_err(|e| match e {
                VarintError::Short => truncated("an address delta"),
                VarintError::Overflow => bad("the address delta overflows 64 bits"),
            })?;
            rest = after;
            predicted.wrapping_add(unzigzag(delta) as u64)
        };
        let code = tag >> SIZE_SHIFT;
        let size = if code != 0 {
            size_of_code(code)
        } else {
            let (size, after) = take_varint(rest).map_err(|e| match e {
                VarintError::Short => truncated("a size"),
                VarintError::Overflow => bad("the size overflows 64 bits"),
            })?;
            rest = after;
            match u32::try_from(size) {
                Ok(0) => return Err(bad("the size is zero")),
                Ok(size) => size,
                Err(_) => return Err(bad("the size does not fit in 32 bits")),
            }
        };
        self.pos = self.len - rest.len();
        let record = TraceRecord { kind, addr, size };
        self.predictor.advance(&record);
        self.records_read += 1;
        Ok(Some(record))
    }
}

impl<R: Read> Iterator for EpctReader<R> {
    type Item = Result<TraceRecord, EpctError>;

    #[inline(always)]
    fn next(&mut self) -> Option<Self::Item> {
        if self.finished {
            return None;
        }
        let item = self.next_record().transpose();
        super::end_at_error(item, &mut self.finished)
    }
}

enum VarintError {
    Short,
    Overflow,
}

#[inline]
fn take_varint(bytes: &[u8]) -> Result<(u64, &[u8]), VarintError> {
    let mut value = 0u64;
    for (i, &b) in bytes.iter().enumerate().take(10) {
        if i == 9 && b > 1 {
            return Err(VarintError::Overflow);
        }
        value |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Ok((value, &bytes[i + 1..]));
        }
    }
    if bytes.len() >= 10 {
        Err(VarintError::Overflow)
    } else {
        Err(VarintError::Short)
    }
}

fn read_up_to(source: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match source.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

#[cfg(test)]
mod tests {
    use std::io::Cursor;

    use proptest::prelude::*;

    use super::*;

    fn encode(records: &[TraceRecord]) -> Vec<u8> {
        let mut writer = EpctWriter::new(Cursor::new(Vec::new())).unwrap();
        for r in records {
            writer.write(r).unwrap();
        }
        writer.finish().unwrap().into_inner()
    }

    fn decode(bytes: &[u8]) -> Result<Vec<TraceRecord>, EpctError> {
        EpctReader::new(bytes)?.collect()
    }

    fn rec(kind: TraceKind, addr: u64, size: u32) -> TraceRecord {
        TraceRecord { kind, addr, size }
    }

    fn header(count: u64) -> Vec<u8> {
        let mut h = EPCT_MAGIC.to_vec();
        h.extend_from_slice(&1u32.to_le_bytes());
        h.extend_from_slice(&0u32.to_le_bytes());
        h.extend_from_slice(&count.to_le_bytes());
        h
    }

    #[test]
    fn hand_built_records_decode_as_specified() {
        let mut bytes = header(4);
        // Instruction at 0x10, 3 bytes: delta +0x10 from 0 -> zigzag 0x20.
        bytes.extend_from_slice(&[3 << 3, 0x20]);
        // The next instruction right after it: predicted, one byte.
        bytes.extend_from_slice(&[(4 << 3) | PREDICTED_BIT]);
        // A 32-byte store at 0x8 (data stream starts at 0): code 25, delta +8 -> 16.
        bytes.extend_from_slice(&[(25 << 3) | 2, 16]);
        // A 100-byte modify at 0x0, 40 bytes below the predicted 0x28: zigzag(-40) = 79, size varint.
        bytes.extend_from_slice(&[3, 79, 100]);
        assert_eq!(
            decode(&bytes).unwrap(),
            [
                rec(TraceKind::Instr, 0x10, 3),
                rec(TraceKind::Instr, 0x13, 4),
                rec(TraceKind::Store, 0x8, 32),
                rec(TraceKind::Modify, 0x0, 100),
            ]
        );
        assert_eq!(
            encode(&decode(&bytes).unwrap()),
            bytes,
            "the writer produces the same bytes"
        );
    }

    #[test]
    fn header_errors_are_typed_and_name_the_offset() {
        assert!(matches!(decode(b""), Err(EpctError::BadMagic { .. })));
        assert!(matches!(
            decode(b"I  0401ab70,3\n"),
            Err(EpctError::BadMagic { .. })
        ));
        let short = &header(0)[..12];
        let err = decode(short).unwrap_err();
        assert!(
            matches!(err, EpctError::Truncated { offset: 12, .. }),
            "{err}"
        );
        let mut v2 = header(0);
        v2[8] = 2;
        let err = decode(&v2).unwrap_err();
        assert!(matches!(err, EpctError::UnsupportedVersion { found: 2 }));
        assert!(err.to_string().starts_with("offset 8:"), "{err}");
        let mut flags = header(0);
        flags[12] = 1;
        assert!(matches!(
            decode(&flags),
            Err(EpctError::UnsupportedFlags { found: 1 })
        ));
        assert!(matches!(
            decode(&header(u64::MAX)),
            Err(EpctError::Unfinished)
        ));
    }

    #[test]
    fn record_errors_name_the_record_offset() {
        let mut truncated = header(2);
        truncated.extend_from_slice(&[3 << 3 | PREDICTED_BIT, 3 << 3, 0x80]);
        let err = decode(&truncated).unwrap_err();
        assert!(
            matches!(
                err,
                EpctError::Truncated {
                    offset: 25,
                    inside: "an address delta",
                    records_read: 1,
                    declared: 2
                }
            ),
            "{err}"
        );
        let mut missing = header(3);
        missing.push(PREDICTED_BIT | 1 << 3);
        let err = decode(&missing).unwrap_err();
        assert!(
            matches!(
                err,
                EpctError::Truncated {
                    offset: 25,
                    inside: "a record",
                    ..
                }
            ),
            "{err}"
        );
        let mut zero = header(1);
        zero.extend_from_slice(&[PREDICTED_BIT, 0]);
        let err = decode(&zero).unwrap_err();
        assert!(
            matches!(
                err,
                EpctError::BadRecord {
                    offset: 24,
                    why: "the size is zero"
                }
            ),
            "{err}"
        );
        let mut overflow = header(1);
        overflow.push(1 << 3);
        overflow.extend_from_slice(&[0xff; 10]);
        assert!(matches!(
            decode(&overflow),
            Err(EpctError::BadRecord { offset: 24, .. })
        ));
        let mut trailing = header(1);
        trailing.extend_from_slice(&[PREDICTED_BIT | 1 << 3, 0]);
        let err = decode(&trailing).unwrap_err();
        assert!(
            matches!(
                err,
                EpctError::TrailingData {
                    offset: 25,
                    declared: 1
                }
            ),
            "{err}"
        );
    }

    /// Hands out its bytes a few at a time, so records straddle every refill.
    struct Trickle<'a>(&'a [u8], usize);

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.1 = self.1 % 7 + 1;
            let n = self.1.min(buf.len()).min(self.0.len());
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    #[test]
    fn records_of_every_length_decode_across_refills() {
        // Deltas from none (a lone tag) to ten bytes, literal and varint sizes, both streams,
        // over more than one buffer's worth of bytes, read whole and a few bytes at a time.
        let mut records = Vec::new();
        let (mut i_addr, mut d_addr) = (0x40_0000u64, 0x7ff0_0000u64);
        for i in 0u64..120_000 {
            let jump = [0, 40, 5_000, 900_000, 1 << 40, 1 << 60][(i % 6) as usize];
            i_addr = i_addr.wrapping_add(jump);
            records.push(rec(TraceKind::Instr, i_addr, 1 + (i % 15) as u32));
            i_addr = i_addr.wrapping_add(1 + i % 15);
            let size = [8, 4, 64, 3000][(i % 4) as usize];
            d_addr = d_addr.wrapping_sub(jump / 2);
            records.push(rec(any_data_kind(i), d_addr, size));
            d_addr = d_addr.wrapping_add(u64::from(size));
        }
        let bytes = encode(&records);
        assert!(bytes.len() > EpctReader::<&[u8]>::BUFFER_LEN);
        assert_eq!(decode(&bytes).unwrap(), records);
        let trickled: Vec<_> = EpctReader::new(Trickle(&bytes, 0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(trickled, records);
    }

    fn any_data_kind(i: u64) -> TraceKind {
        [TraceKind::Load, TraceKind::Store, TraceKind::Modify][(i % 3) as usize]
    }

    #[test]
    fn sequential_records_take_one_byte() {
        let records: Vec<_> = (0..1000)
            .map(|i| rec(TraceKind::Instr, 0x40_0000 + 4 * i, 4))
            .collect();
        // The first record carries a four-byte delta from address 0; every later one is a lone tag.
        assert_eq!(encode(&records).len(), EPCT_HEADER_LEN + 5 + 999);
    }

    #[test]
    fn every_size_code_round_trips() {
        for size in 1..=4096 {
            let code = size_code(size);
            if code != 0 {
                assert_eq!(size_of_code(code), size);
            }
        }
    }

    fn any_kind() -> impl Strategy<Value = TraceKind> {
        prop_oneof![
            Just(TraceKind::Instr),
            Just(TraceKind::Load),
            Just(TraceKind::Store),
            Just(TraceKind::Modify),
        ]
    }

    fn any_record() -> impl Strategy<Value = TraceRecord> {
        let addr = prop_oneof![any::<u64>(), 0x1000u64..0x2000, Just(u64::MAX)];
        let size = prop_oneof![1u32..=64, Just(2048), 1..=u32::MAX];
        (any_kind(), addr, size).prop_map(|(kind, addr, size)| TraceRecord { kind, addr, size })
    }

    proptest! {
        #[test]
        fn records_round_trip(records in proptest::collection::vec(any_record(), 0..300)) {
            prop_assert_eq!(decode(&encode(&records)).unwrap(), records);
        }

        #[test]
        fn every_truncation_is_an_error(records in proptest::collection::vec(any_record(), 1..40)) {
            let bytes = encode(&records);
            for cut in 0..bytes.len() {
                prop_assert!(decode(&bytes[..cut]).is_err(), "cut at {}", cut);
            }
        }

        #[test]
        fn arbitrary_bytes_never_panic(tail in proptest::collection::vec(any::<u8>(), 0..200), count in 0u64..50) {
            let mut bytes = header(count);
            bytes.extend_from_slice(&tail);
            let _ = decode(&bytes);
        }
    }
}
