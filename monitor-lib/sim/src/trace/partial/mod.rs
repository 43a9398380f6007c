//! Partial data traces (`.eppt`): a region's data accesses compressed online into regular
//! section descriptors, with irregular remainders kept raw, in exactly the order they happened.
//!
//! Every access gets a global sequence number (0, 1, 2, ... in program order) and belongs to a
//! *stream*: its access site (the code address of the instruction), its kind and its size. Each
//! stream is compressed on its own:
//!
//! - an **RSD** (regular section descriptor) is a run of a stream's accesses whose sequence
//!   numbers *and* addresses both form arithmetic progressions: `(seq + j * s, addr + j * a)` for
//!   `j < count`. A loop with `k` accesses per iteration gives each of its sites the sequence
//!   stride `k`;
//! - a **PRSD** (power RSD) repeats a descriptor's whole shape with its own sequence and address
//!   shifts: an outer loop. Descriptors nest up to [`MAX_DEPTH`] dimensions, so a triple loop
//!   (matrix multiply) is one descriptor per site whatever its trip counts;
//! - accesses no descriptor of at least three elements covers are kept **raw**, per stream, as
//!   delta-encoded (sequence number, address) pairs in blocks of at most [`RAW_BLOCK`] entries.
//!
//! Replay ([`PartialTrace::accesses`]) merges all descriptors' and raw blocks' streams by
//! sequence number, so the order is exactly the recorded one; the reader checks that the merged
//! sequence numbers are `0, 1, 2, ...` with no gap and no duplicate.
//!
//! The compressor ([`PartialWriter`]) keeps, per stream, one open run and one open repetition
//! group per nesting level (at most [`MAX_DEPTH`]) plus at most [`RAW_BLOCK`] raw entries;
//! everything closed is written out at once, so its memory is bounded by the number of streams,
//! not by the length of the trace.
//!
//! # Threads
//!
//! A trace holds one or more *threads*, each its own access order (sequence numbers from 0),
//! replayed on a hierarchy of its own: the runtime records every thread of a program that
//! captures while the trace is open, and each simulates a private hierarchy in the live run.
//! A thread's records are a sequence of *bodies*, each a complete stream table, descriptors,
//! raw blocks and marks ending with its own `END`; a thread that ends a body at a traced
//! instance's end (the runtime's safe points) leaves everything up to that instance in the
//! file even if it never gets to finish (an OpenMP worker asleep in its pool when the program
//! exits, or a process killed outright). The reader joins a thread's bodies into one order,
//! and drops a last body that never reached its `END` ([`PartialTrace::unfinished_threads`]). Bodies reach
//! the file as *chunks* of bytes tagged with their thread, so threads write one file at once,
//! each chunk whole under a lock, in any interleaving.
//!
//! # Layout (version 4)
//!
//! Integers are LEB128 varints unless said otherwise; `zz` marks a zigzag-encoded signed value.
//!
//! | offset | size | field |
//! |-------:|-----:|-------|
//! | 0 | 8 | magic `89 45 50 50 54 0d 0a 1a` (`\x89EPPT\r\n\x1a`) |
//! | 8 | 4 | format version, little-endian, [`PARTIAL_VERSION`] |
//! | 12 | 4 | flags, little-endian: bit 0 [`FLAG_MARKED`], the others zero |
//! | 16 | .. | file records, each a tag byte, its fields and a checksum, the last one `END` |
//!
//! Every file record ends with a checksum: the CRC-32 (the IEEE polynomial of zlib and gzip;
//! 4 bytes, little-endian) of the header followed by the record's bytes from its tag on. A
//! file changed after it was written (a flipped bit in an address replays to other counts,
//! with nothing else to tell; a flipped flag counts other accesses) is refused rather than
//! replayed. A record cut short by the end of the file, checksum included, is a file never
//! finished, unless the file ends with a whole `END` record: then a length was damaged. A
//! reader checks a record's checksum before any of its fields' values, and a record it cannot
//! read to its end (an unknown tag, a varint too long) in such a file is damage too.
//! File records:
//!
//! - `0x08 CHUNK`: thread number (below [`MAX_THREADS`]), byte count `n` (1 to [`MAX_CHUNK`]),
//!   then `n` bytes of that thread's body records, continuing its previous chunk.
//! - `0x04 SITE`: code address, source file (varint length + UTF-8), line, function, data
//!   structure name (empty when unknown). Optional, at most one per code address, anywhere
//!   between chunks (a recorder describes its sites at its safe points, so a file never
//!   finished names them too).
//! - `0x05 RANGE`: data structure name, first byte, one past its last byte: the named address
//!   ranges per-structure tables attribute accesses to.
//! - `0x09 NOTE`: a UTF-8 text (varint length, at most [`MAX_NOTE`] bytes) the recorder wants
//!   every replay to say: what the trace lacks that the run counted (an instance going on in a
//!   thread blocked at exit), or how the run differed from a replay (threads as cores).
//! - `0x06 END`: the number of chunks. Nothing may follow it; a file without it was never
//!   finished, and a reader keeps the ended bodies of the chunks before the point where it
//!   stops (a last record cut short included) and says so ([`PartialTrace::never_finished`]).
//!
//! Body records (inside a thread's chunks):
//!
//! - `0x01 STREAM`: code address, kind byte (1 load, 2 store, 3 modify, 0 instruction), size.
//!   Streams are numbered from 0 in the order of their body's `STREAM` records, each defined
//!   before its first use.
//! - `0x02 DESC`: stream, depth `d` (1..=[`MAX_DEPTH`]), first sequence number, first address,
//!   then `d` dimensions innermost first, each `count` (at least 2), sequence stride, `zz`
//!   address stride (wrapping). Element `(i_0, .., i_{d-1})` is at
//!   `seq + sum(i_k * seq_stride_k)`, `addr + sum(i_k * addr_stride_k)`; every dimension's
//!   sequence stride exceeds the span of the dimensions inside it, so elements are in order.
//! - `0x03 RAW`: stream, entry count `n` (1..=[`RAW_BLOCK`]), first sequence number, first
//!   address, then `n - 1` entries: a 65-bit varint `zz(address delta) << 1 | p`, where `p` says
//!   the sequence delta equals the previous entry's (1 for the first entry); when `p` is 0 the
//!   sequence delta (at least 1) follows.
//! - `0x07 MARK`: a sequence number and a kind byte, 1 *begin* or 2 *end*: the accesses from
//!   that sequence number on are counted (begin) or only simulated (end). Marks come in order,
//!   alternating from a begin; a body's open span ends with the body. With [`FLAG_MARKED`] a
//!   thread counts only the accesses between a begin and the next end, and a thread with no
//!   marks counts nothing (it never ran the traced region; its accesses still warm its
//!   caches); without it a thread with no marks counts every access (a trace converted from a
//!   whole-program log). The accesses outside the spans warm the caches up, so a recording
//!   that starts before a region's instances replays them from the cache state they met.
//! - `0x06 END`: access count, descriptor count, raw entry count of the body; sequence numbers
//!   and stream numbers start again from 0 after it.
//!
//! Descriptors and raw blocks are written when they close, so their order in a body is not
//! the access order; the reader sorts them by first sequence number.
//!
//! Versions 3 and 2, which this build still reads, are version 4 without checksums, and
//! version 2 without `NOTE` records too. Version 1 is
//! one thread's single body with its `SITE` and
//! `RANGE` records among the body records and no chunks: everything after the header up to
//! the body's `END`, with flags 0.

mod codec;
mod compress;
mod reader;
#[cfg(test)]
mod tests;
mod writer;

pub use reader::{PartialAccesses, PartialTrace, ThreadTrace, TraceStats};
pub use writer::{PartialWriter, ThreadWriter, TraceFile};

use super::TraceKind;

/// The eight bytes every partial trace starts with.
pub const PARTIAL_MAGIC: [u8; 8] = *b"\x89EPPT\r\n\x1a";
/// The format version this code writes (it reads versions 1 to 3 too).
pub const PARTIAL_VERSION: u32 = 4;
/// The first version whose file records end with a checksum.
const CHECKSUMMED_VERSION: u32 = 4;
/// Bytes of a file record's checksum.
const CHECKSUM_LEN: usize = 4;

/// A file record's checksum: the CRC-32 of the header, whose own CRC-32 is `header`, followed
/// by the record's `pieces` in order.
fn record_checksum(header: u32, pieces: &[&[u8]]) -> [u8; CHECKSUM_LEN] {
    let mut sum = crc32fast::Hasher::new_with_initial(header);
    for piece in pieces {
        sum.update(piece);
    }
    sum.finalize().to_le_bytes()
}
/// Most bytes of one `NOTE` record's text.
pub const MAX_NOTE: u64 = 4096;
/// Header flag: counting follows the marks, and a thread without marks counts nothing.
pub const FLAG_MARKED: u32 = 1;
/// Most threads one trace holds (thread numbers are below it).
pub const MAX_THREADS: u64 = 1 << 16;
/// Most bytes of one chunk.
pub const MAX_CHUNK: u64 = 1 << 24;
/// Most dimensions a descriptor may have.
pub const MAX_DEPTH: usize = 6;
/// Most entries of one raw block.
pub const RAW_BLOCK: usize = 4096;
/// Bytes before the first record.
pub const PARTIAL_HEADER_LEN: usize = 16;

const TAG_STREAM: u8 = 1;
const TAG_DESC: u8 = 2;
const TAG_RAW: u8 = 3;
const TAG_SITE: u8 = 4;
const TAG_RANGE: u8 = 5;
const TAG_END: u8 = 6;
const TAG_MARK: u8 = 7;
const TAG_CHUNK: u8 = 8;
const TAG_NOTE: u8 = 9;

/// Where counting starts or stops (see the `MARK` record).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mark {
    /// The accesses from here on are counted: a traced region's instance begins.
    Begin,
    /// The accesses from here on are only simulated: the instance ended.
    End,
}

/// Which accesses of a trace are counted, from its marks, asked in sequence order.
#[derive(Debug, Clone)]
pub struct CountedSpans<'a> {
    marks: &'a [(u64, Mark)],
    next: usize,
    counting: bool,
}

impl<'a> CountedSpans<'a> {
    /// The spans of `marks` (in order, alternating from a begin). With none, every access is
    /// counted unless `marked` (the trace's [`FLAG_MARKED`]), and then none is.
    pub fn new(marks: &'a [(u64, Mark)], marked: bool) -> Self {
        Self {
            marks,
            next: 0,
            counting: marks.is_empty() && !marked,
        }
    }

    /// Whether the access with sequence number `seq` is counted; `seq` must not decrease from
    /// one call to the next.
    #[inline]
    pub fn counts(&mut self, seq: u64) -> bool {
        while let Some(&(at, mark)) = self.marks.get(self.next) {
            if at > seq {
                break;
            }
            self.counting = mark == Mark::Begin;
            self.next += 1;
        }
        self.counting
    }
}

/// One data access of a partial trace: `size` bytes at `addr`, by the instruction at `site`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PartialAccess {
    /// Code address of the instruction (the access site).
    pub site: u64,
    pub kind: TraceKind,
    pub addr: u64,
    pub size: u32,
}

/// What is known of an access site's source.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct SiteInfo {
    pub file: String,
    pub line: u32,
    pub function: String,
    /// The data structure the site accesses, empty when unknown.
    pub structure: String,
}

/// A named address range: the bytes of one data structure.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct StructureRange {
    pub name: String,
    pub start: u64,
    pub end: u64,
}

/// Why a partial trace could not be read. Every variant names the byte offset in the file.
#[derive(Debug, thiserror::Error)]
pub enum PartialError {
    #[error("offset {offset}: cannot read the trace")]
    Io {
        offset: u64,
        #[source]
        source: std::io::Error,
    },
    #[error("offset 0: not a partial trace (bad magic {found:02x?})")]
    BadMagic { found: Vec<u8> },
    #[error(
        "offset 8: partial trace format version {found} is not supported (this build reads versions 1 to {PARTIAL_VERSION}); replay it with the epcache that wrote it, or a newer one"
    )]
    UnsupportedVersion { found: u32 },
    #[error("offset 12: unknown partial trace flags {found:#x}")]
    UnsupportedFlags { found: u32 },
    #[error("offset {offset}: the trace is truncated inside {inside}")]
    Truncated { offset: u64, inside: &'static str },
    #[error(
        "offset {offset}: the trace was never finished (no END record; its writer stopped early)"
    )]
    Unfinished { offset: u64 },
    #[error("offset {offset}: bad record: {why}")]
    BadRecord { offset: u64, why: String },
    #[error(
        "offset {offset}: {record} fails its checksum: the file was changed or damaged after it was written; copy it again from where it was recorded, or record it again"
    )]
    Checksum { offset: u64, record: &'static str },
    /// A checksummed file's record that cannot be read to its end, so whose checksum cannot
    /// be tried: `why` says what stopped the reader.
    #[error(
        "offset {offset}: {why}: the file was changed or damaged after it was written; copy it again from where it was recorded, or record it again"
    )]
    Damaged { offset: u64, why: String },
    #[error(
        "the trace's descriptors do not cover sequence number {seq} exactly once ({why}); the file is corrupt"
    )]
    BadOrder { seq: u64, why: &'static str },
}

fn kind_code(kind: TraceKind) -> u8 {
    match kind {
        TraceKind::Instr => 0,
        TraceKind::Load => 1,
        TraceKind::Store => 2,
        TraceKind::Modify => 3,
    }
}

fn kind_of(code: u8) -> Option<TraceKind> {
    Some(match code {
        0 => TraceKind::Instr,
        1 => TraceKind::Load,
        2 => TraceKind::Store,
        3 => TraceKind::Modify,
        _ => return None,
    })
}

/// One dimension of a descriptor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Dim {
    count: u64,
    seq_stride: u64,
    /// Wrapping.
    addr_stride: u64,
}

/// A multi-dimensional arithmetic pattern of one stream's accesses: an RSD with one dimension,
/// a PRSD with more.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Descriptor {
    stream: u32,
    seq: u64,
    addr: u64,
    /// Innermost first.
    dims: Vec<Dim>,
}

impl Descriptor {
    fn elements(&self) -> u64 {
        self.dims.iter().map(|d| d.count).product()
    }
}
