//! Reading a partial trace: the whole file is parsed and checked up front (it is compact by
//! design), each thread's chunks joined and its bodies into one order; then
//! [`ThreadTrace::accesses`] merges a thread's descriptors' and raw blocks' streams by sequence
//! number.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::io::Read;
use std::ops::Range;

use super::codec::{Cursor, Text, unzigzag};
use super::{
    CHECKSUM_LEN, CHECKSUMMED_VERSION, CountedSpans, Descriptor, Dim, FLAG_MARKED, MAX_CHUNK,
    MAX_DEPTH, MAX_NOTE, MAX_THREADS, Mark, PARTIAL_HEADER_LEN, PARTIAL_MAGIC, PARTIAL_VERSION,
    PartialAccess, PartialError, RAW_BLOCK, SiteInfo, StructureRange, TAG_CHUNK, TAG_DESC, TAG_END,
    TAG_MARK, TAG_NOTE, TAG_RANGE, TAG_RAW, TAG_SITE, TAG_STREAM, kind_of, record_checksum,
};
use crate::trace::TraceKind;

/// A stream's identity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct StreamDef {
    site: u64,
    kind: TraceKind,
    size: u32,
}

/// A raw block, its entries still encoded.
#[derive(Debug, Clone)]
struct RawBlock {
    stream: u32,
    entries: u64,
    seq: u64,
    addr: u64,
    /// The encoded entries after the first, in the file's bytes.
    bytes: Range<usize>,
    /// File offset of `bytes.start`.
    offset: u64,
}

/// What a partial trace holds, and how well it compressed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct TraceStats {
    pub accesses: u64,
    /// Bytes of the file.
    pub bytes: u64,
    pub streams: u64,
    pub descriptors: u64,
    /// Accesses described by descriptors rather than kept raw.
    pub described_accesses: u64,
    pub raw_accesses: u64,
}

impl TraceStats {
    /// Adds `other`'s counts (all but the bytes, which are the file's).
    fn add_counts(&mut self, other: &TraceStats) {
        self.accesses += other.accesses;
        self.streams += other.streams;
        self.descriptors += other.descriptors;
        self.described_accesses += other.described_accesses;
        self.raw_accesses += other.raw_accesses;
    }

    /// Accesses per byte of trace.
    pub fn accesses_per_byte(&self) -> f64 {
        self.accesses as f64 / self.bytes.max(1) as f64
    }

    /// Share of the accesses covered by descriptors, from 0 to 1.
    pub fn described_share(&self) -> f64 {
        self.described_accesses as f64 / self.accesses.max(1) as f64
    }
}

/// A whole partial trace, parsed and checked: its threads and the tables they share.
#[derive(Debug, Clone)]
pub struct PartialTrace {
    threads: Vec<ThreadTrace>,
    sites: BTreeMap<u64, SiteInfo>,
    ranges: Vec<StructureRange>,
    stats: TraceStats,
    /// Threads whose last body never reached its `END` (dropped).
    unfinished: Vec<u64>,
    /// Where a file with no `END` record stops.
    never_finished: Option<u64>,
    /// The recorder's `NOTE` records, in file order.
    notes: Vec<String>,
}

/// One thread of a partial trace: its bodies joined into one access order.
#[derive(Debug, Clone)]
pub struct ThreadTrace {
    /// Its number in the file.
    id: u64,
    marked: bool,
    /// Its body records, the chunks joined.
    bytes: Vec<u8>,
    streams: Vec<StreamDef>,
    pub(super) descriptors: Vec<Descriptor>,
    raw: Vec<RawBlock>,
    marks: Vec<(u64, Mark)>,
    stats: TraceStats,
}

/// The records of one body, its numbers still its own (from 0).
#[derive(Debug, Default)]
struct Body {
    streams: Vec<StreamDef>,
    descriptors: Vec<Descriptor>,
    raw: Vec<RawBlock>,
    marks: Vec<(u64, Mark)>,
    stats: TraceStats,
}

/// The site table and ranges (which version 1 keeps among a body's records), and the
/// recorder's notes (version 3 on).
#[derive(Debug, Default)]
struct Tables {
    sites: BTreeMap<u64, SiteInfo>,
    ranges: Vec<StructureRange>,
    notes: Vec<String>,
}

fn bad(offset: u64, why: impl Into<String>) -> PartialError {
    PartialError::BadRecord {
        offset,
        why: why.into(),
    }
}

impl PartialTrace {
    /// Reads a whole partial trace from `source`.
    pub fn read(mut source: impl Read) -> Result<Self, PartialError> {
        let mut bytes = Vec::new();
        source
            .read_to_end(&mut bytes)
            .map_err(|source| PartialError::Io {
                offset: bytes.len() as u64,
                source,
            })?;
        Self::parse(bytes)
    }

    /// Parses and checks a whole partial trace.
    pub fn parse(bytes: Vec<u8>) -> Result<Self, PartialError> {
        let magic_len = bytes.len().min(PARTIAL_MAGIC.len());
        if bytes.is_empty() || bytes[..magic_len] != PARTIAL_MAGIC[..magic_len] {
            return Err(PartialError::BadMagic {
                found: bytes[..magic_len].to_vec(),
            });
        }
        if bytes.len() < PARTIAL_HEADER_LEN {
            return Err(PartialError::Truncated {
                offset: bytes.len() as u64,
                inside: "the header",
            });
        }
        let word = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
        let version = word(8);
        if version == 0 || version > PARTIAL_VERSION {
            return Err(PartialError::UnsupportedVersion { found: version });
        }
        let flags = word(12);
        let known = if version == 1 { 0 } else { FLAG_MARKED };
        if flags & !known != 0 {
            return Err(PartialError::UnsupportedFlags { found: flags });
        }
        let marked = flags & FLAG_MARKED != 0;
        let file_bytes = bytes.len() as u64;
        let mut tables = Tables::default();
        let mut unfinished = Vec::new();
        let mut never_finished = None;
        let threads = if version == 1 {
            let mut cursor = Cursor::new(&bytes[PARTIAL_HEADER_LEN..], PARTIAL_HEADER_LEN as u64);
            let body = parse_body(&mut cursor, PARTIAL_HEADER_LEN, Some(&mut tables))?;
            if !cursor.is_empty() {
                return Err(bad(cursor.offset(), "data after the END record"));
            }
            let mut thread = ThreadTrace::new(0, marked, bytes);
            thread.append(body);
            vec![thread]
        } else {
            let (streams, stopped_at) = read_chunks(&bytes, version, &mut tables)?;
            never_finished = stopped_at;
            let mut threads = Vec::with_capacity(streams.len());
            for (id, stream) in streams {
                let (thread, finished) =
                    ThreadTrace::of_bodies(id, marked, stream, stopped_at.is_none())?;
                if !finished {
                    unfinished.push(id);
                }
                threads.push(thread);
            }
            threads
        };
        let mut stats = TraceStats {
            bytes: file_bytes,
            ..TraceStats::default()
        };
        for t in &threads {
            stats.add_counts(&t.stats);
        }
        Ok(Self {
            threads,
            sites: tables.sites,
            ranges: tables.ranges,
            stats,
            unfinished,
            never_finished,
            notes: tables.notes,
        })
    }

    /// What the recorder said every replay should say (see the format's `NOTE`).
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// Where the file stops, when it has no `END` record: its writer was killed (or the file
    /// was cut) before it finished. What is read is what the threads' ended bodies hold (they
    /// reach the file at the recorder's safe points, with the sites they hold described); the
    /// ranges, written at the end, are missing, and a body going on is lost (see
    /// [`Self::unfinished_threads`]).
    pub fn never_finished(&self) -> Option<u64> {
        self.never_finished
    }

    /// What the trace holds and how well it compressed, all threads together.
    pub fn stats(&self) -> TraceStats {
        self.stats
    }

    /// The threads, by number.
    pub fn threads(&self) -> &[ThreadTrace] {
        &self.threads
    }

    /// Numbers of the threads whose last body never ended (its writer did not get to finish: a
    /// thread blocked when the program exited) after it had begun a counted span, which is
    /// lost; what they recorded before it is kept. A last body of accesses outside any span
    /// (a pool thread asleep at exit) loses nothing and is not listed.
    pub fn unfinished_threads(&self) -> &[u64] {
        &self.unfinished
    }

    /// The site table: code address to source, for the sites the writer described.
    pub fn sites(&self) -> &BTreeMap<u64, SiteInfo> {
        &self.sites
    }

    /// The named address ranges (data structures).
    pub fn ranges(&self) -> &[StructureRange] {
        &self.ranges
    }

    /// Every access site's code address, in address order.
    pub fn site_addresses(&self) -> Vec<u64> {
        let mut sites: Vec<u64> = self
            .threads
            .iter()
            .flat_map(|t| t.streams.iter().map(|s| s.site))
            .collect();
        sites.sort_unstable();
        sites.dedup();
        sites
    }
}

/// The threads' chunks of a version 2 or later trace joined, by thread number (with the
/// tables), and, for a file that stops before its `END` record (its last record cut or
/// missing), where it stops: the chunks before are kept, for [`ThreadTrace::of_bodies`] to
/// take the ended bodies from. Anything else wrong is an error.
type Chunks = (BTreeMap<u64, Vec<u8>>, Option<u64>);

fn read_chunks(bytes: &[u8], version: u32, tables: &mut Tables) -> Result<Chunks, PartialError> {
    let mut threads: BTreeMap<u64, Vec<u8>> = BTreeMap::new();
    let mut chunks = 0u64;
    let mut cursor = Cursor::new(&bytes[PARTIAL_HEADER_LEN..], PARTIAL_HEADER_LEN as u64);
    let sums = (version >= CHECKSUMMED_VERSION).then(|| Seals::of(bytes));
    // Where a record runs past the end of the file: a file never finished, unless it ends
    // with a sealed END.
    let cut = |at: u64| match &sums {
        Some(sums) if sums.ends_with_end() => Err(PartialError::Damaged {
            offset: at,
            why: "a record runs past the end of a file that ends with its END record".into(),
        }),
        _ => Ok(Some(at)),
    };
    loop {
        let at = cursor.offset();
        if cursor.is_empty() {
            return Ok((threads, Some(at)));
        }
        let record = match read_file_record(&mut cursor, at, version) {
            Ok(record) => record,
            Err(PartialError::Truncated { .. }) => return cut(at).map(|stop| (threads, stop)),
            // A checksummed file's writer writes only tags and varints it reads: anything
            // else is damage, whose extent is unknown, so whose checksum cannot be tried.
            Err(e) if sums.is_some() => {
                return Err(PartialError::Damaged {
                    offset: at,
                    why: e.to_string(),
                });
            }
            Err(e) => return Err(e),
        };
        if let Some(sums) = &sums {
            let end = cursor.offset() as usize;
            match cursor.bytes(CHECKSUM_LEN, "a record's checksum") {
                Ok(sum) if sums.seals(&bytes[at as usize..end], sum) => {}
                Ok(_) => {
                    return Err(PartialError::Checksum {
                        offset: at,
                        record: record.what(),
                    });
                }
                Err(_) => return cut(at).map(|stop| (threads, stop)),
            }
        }
        // Only now, the record sealed, what its fields say.
        match record {
            FileRecord::Chunk { thread, piece } => {
                if thread >= MAX_THREADS {
                    return Err(bad(
                        at,
                        format!("thread {thread} is not below {MAX_THREADS}"),
                    ));
                }
                if piece.is_empty() || piece.len() as u64 > MAX_CHUNK {
                    let len = piece.len();
                    return Err(bad(at, format!("a chunk of {len} bytes (1..={MAX_CHUNK})")));
                }
                threads.entry(thread).or_default().extend_from_slice(piece);
                chunks += 1;
            }
            FileRecord::Table(record) => tables.take(at, record.checked(at)?)?,
            FileRecord::Note(note) => {
                let note = note.checked()?;
                if note.len() as u64 > MAX_NOTE {
                    return Err(bad(at, format!("a note of {} bytes", note.len())));
                }
                tables.notes.push(note);
            }
            FileRecord::End { chunks: declared } => {
                if !cursor.is_empty() {
                    return Err(bad(cursor.offset(), "data after the END record"));
                }
                if declared != chunks {
                    return Err(bad(
                        at,
                        format!("END declares {declared} chunks; the file holds {chunks}"),
                    ));
                }
                return Ok((threads, None));
            }
        }
    }
}

/// The checksums of a version 4 file's records.
struct Seals<'a> {
    bytes: &'a [u8],
    /// The CRC-32 of the header, which every record's checksum starts from.
    header: u32,
}

impl<'a> Seals<'a> {
    fn of(bytes: &'a [u8]) -> Self {
        Self {
            bytes,
            header: crc32fast::hash(&bytes[..PARTIAL_HEADER_LEN]),
        }
    }

    /// Whether `sum` is the checksum of `record` in this file.
    fn seals(&self, record: &[u8], sum: &[u8]) -> bool {
        *sum == record_checksum(self.header, &[record])
    }

    /// Whether the file ends with a whole `END` record and its checksum: a record before it
    /// that seems to run past the end had its length damaged, it was not cut.
    fn ends_with_end(&self) -> bool {
        let Some(body) = self.bytes.len().checked_sub(CHECKSUM_LEN) else {
            return false;
        };
        let (head, sum) = self.bytes.split_at(body);
        // The END's tag, then a varint of 1 to 10 bytes whose last byte has no continuation.
        (2..=11).any(|len| {
            body >= PARTIAL_HEADER_LEN + len
                && head[body - len] == TAG_END
                && head[body - 1] & 0x80 == 0
                && head[body - len + 1..body - 1].iter().all(|b| b & 0x80 != 0)
                && self.seals(&head[body - len..], sum)
        })
    }
}

/// A file record read to its end, its fields not yet checked: its checksum comes after it, and
/// a field of a damaged record must not be taken for the damage.
enum FileRecord<'a> {
    Chunk { thread: u64, piece: &'a [u8] },
    Table(TableFields<'a>),
    Note(Text<'a>),
    End { chunks: u64 },
}

impl FileRecord<'_> {
    /// What the record is, for a message.
    fn what(&self) -> &'static str {
        match self {
            Self::Chunk { .. } => "a chunk of a thread's records",
            Self::Table(TableFields::Site { .. }) => "a site's description",
            Self::Table(TableFields::Range { .. }) => "a data structure's range",
            Self::Note(_) => "a note",
            Self::End { .. } => "the END record",
        }
    }
}

/// The file record at `at`, read to its end.
fn read_file_record<'a>(
    cursor: &mut Cursor<'a>,
    at: u64,
    version: u32,
) -> Result<FileRecord<'a>, PartialError> {
    match cursor.byte("a record")? {
        TAG_CHUNK => {
            let thread = cursor.varint("a chunk's thread")?;
            let len = cursor.varint("a chunk's length")?;
            let piece = cursor.bytes(usize::try_from(len).unwrap_or(usize::MAX), "a chunk")?;
            Ok(FileRecord::Chunk { thread, piece })
        }
        tag @ (TAG_SITE | TAG_RANGE) => Ok(FileRecord::Table(read_table_record(cursor, tag)?)),
        TAG_NOTE if version >= 3 => Ok(FileRecord::Note(cursor.text("a note")?)),
        TAG_END => Ok(FileRecord::End {
            chunks: cursor.varint("the chunk count")?,
        }),
        tag => Err(bad(at, format!("unknown record tag {tag:#04x}"))),
    }
}

/// A `SITE` or `RANGE` record, checked.
enum TableRecord {
    Site { site: u64, info: SiteInfo },
    Range(StructureRange),
}

impl Tables {
    /// Takes in the table record read at `at`.
    fn take(&mut self, at: u64, record: TableRecord) -> Result<(), PartialError> {
        match record {
            TableRecord::Site { site, info } => {
                if self.sites.insert(site, info).is_some() {
                    return Err(bad(at, format!("site {site:#x} is described twice")));
                }
            }
            TableRecord::Range(range) => self.ranges.push(range),
        }
        Ok(())
    }
}

/// A `SITE` or `RANGE` record's fields as they lie in the file.
enum TableFields<'a> {
    Site {
        site: u64,
        file: Text<'a>,
        line: u64,
        function: Text<'a>,
        structure: Text<'a>,
    },
    Range {
        name: Text<'a>,
        start: u64,
        end: u64,
    },
}

impl TableFields<'_> {
    /// The record read at `at`, its fields checked.
    fn checked(self, at: u64) -> Result<TableRecord, PartialError> {
        match self {
            Self::Site {
                site,
                file,
                line,
                function,
                structure,
            } => Ok(TableRecord::Site {
                site,
                info: SiteInfo {
                    file: file.checked()?,
                    line: u32::try_from(line)
                        .map_err(|_| bad(at, "the line number does not fit in 32 bits"))?,
                    function: function.checked()?,
                    structure: structure.checked()?,
                },
            }),
            Self::Range { name, start, end } => {
                let name = name.checked()?;
                if end <= start {
                    return Err(bad(at, format!("range `{name}` is empty or reversed")));
                }
                Ok(TableRecord::Range(StructureRange { name, start, end }))
            }
        }
    }
}

/// A `SITE` or `RANGE` record (`tag`) after its tag byte, read to its end.
fn read_table_record<'a>(
    cursor: &mut Cursor<'a>,
    tag: u8,
) -> Result<TableFields<'a>, PartialError> {
    Ok(if tag == TAG_SITE {
        TableFields::Site {
            site: cursor.varint("a site's code address")?,
            file: cursor.text("a site's file")?,
            line: cursor.varint("a site's line")?,
            function: cursor.text("a site's function")?,
            structure: cursor.text("a site's data structure")?,
        }
    } else {
        TableFields::Range {
            name: cursor.text("a range's name")?,
            start: cursor.varint("a range's start")?,
            end: cursor.varint("a range's end")?,
        }
    })
}

/// One body's records from `cursor` up to and including its `END`. `base` is the position of
/// the cursor's first byte in the bytes raw blocks will be decoded from; `tables` takes the
/// `SITE` and `RANGE` records a version 1 body holds (they are bad records in version 2).
fn parse_body(
    cursor: &mut Cursor<'_>,
    base: usize,
    tables: Option<&mut Tables>,
) -> Result<Body, PartialError> {
    let mut body = Body::default();
    parse_body_into(&mut body, cursor, base, tables)?;
    Ok(body)
}

/// [`parse_body`] into `body`, which holds what was read before an error.
fn parse_body_into(
    body: &mut Body,
    cursor: &mut Cursor<'_>,
    base: usize,
    mut tables: Option<&mut Tables>,
) -> Result<(), PartialError> {
    loop {
        if cursor.is_empty() {
            return Err(PartialError::Unfinished {
                offset: cursor.offset(),
            });
        }
        let at = cursor.offset();
        let tag = cursor.byte("a record")?;
        match tag {
            TAG_STREAM => {
                let site = cursor.varint("a stream's code address")?;
                let kind = kind_of(cursor.byte("a stream's kind")?)
                    .ok_or_else(|| bad(at, "unknown access kind"))?;
                let size = cursor.varint("a stream's size")?;
                let size = u32::try_from(size)
                    .ok()
                    .filter(|&s| s > 0)
                    .ok_or_else(|| bad(at, format!("access size {size} is not 1..2^32")))?;
                body.streams.push(StreamDef { site, kind, size });
            }
            TAG_DESC => {
                let d = read_descriptor(body, cursor, at)?;
                body.stats.described_accesses += d.elements();
                body.descriptors.push(d);
            }
            TAG_RAW => {
                let block = read_raw(body, cursor, at, base)?;
                body.stats.raw_accesses += block.entries;
                body.raw.push(block);
            }
            TAG_SITE | TAG_RANGE => match tables.as_deref_mut() {
                Some(tables) => tables.take(at, read_table_record(cursor, tag)?.checked(at)?)?,
                None => return Err(bad(at, "a site or range record inside a thread's body")),
            },
            TAG_MARK => {
                let seq = cursor.varint("a mark's sequence number")?;
                let mark = match cursor.byte("a mark's kind")? {
                    1 => Mark::Begin,
                    2 => Mark::End,
                    k => return Err(bad(at, format!("unknown mark kind {k}"))),
                };
                let expected = match body.marks.last() {
                    Some((_, Mark::Begin)) => Mark::End,
                    _ => Mark::Begin,
                };
                if mark != expected || body.marks.last().is_some_and(|&(s, _)| s > seq) {
                    return Err(bad(
                        at,
                        "marks must come in order, alternating from a begin",
                    ));
                }
                body.marks.push((seq, mark));
            }
            TAG_END => {
                let accesses = cursor.varint("the access count")?;
                let descriptors = cursor.varint("the descriptor count")?;
                let raw = cursor.varint("the raw entry count")?;
                let s = &mut body.stats;
                if descriptors != body.descriptors.len() as u64
                    || raw != s.raw_accesses
                    || s.described_accesses.checked_add(s.raw_accesses) != Some(accesses)
                {
                    return Err(bad(
                        at,
                        format!(
                            "END declares {accesses} accesses in {descriptors} descriptors and {raw} raw entries; the body holds {} in {} and {}",
                            s.described_accesses + s.raw_accesses,
                            body.descriptors.len(),
                            s.raw_accesses
                        ),
                    ));
                }
                if body.marks.last().is_some_and(|&(seq, _)| seq > accesses) {
                    return Err(bad(at, "a mark lies beyond the last access"));
                }
                s.accesses = accesses;
                s.descriptors = descriptors;
                s.streams = body.streams.len() as u64;
                return Ok(());
            }
            tag => return Err(bad(at, format!("unknown record tag {tag:#04x}"))),
        }
    }
}

/// `e`, a thread's body's error, saying which thread (its offset is in the thread's bytes).
fn in_thread(id: u64, e: PartialError) -> PartialError {
    match e {
        PartialError::BadRecord { offset, why } => PartialError::BadRecord {
            offset,
            why: format!("thread {id}'s records, byte {offset}: {why}"),
        },
        e => e,
    }
}

fn stream_index(body: &Body, value: u64, at: u64) -> Result<u32, PartialError> {
    if value < body.streams.len() as u64 {
        Ok(value as u32)
    } else {
        Err(bad(at, format!("stream {value} is not defined before use")))
    }
}

impl ThreadTrace {
    fn new(id: u64, marked: bool, bytes: Vec<u8>) -> Self {
        Self {
            id,
            marked,
            bytes,
            streams: Vec::new(),
            descriptors: Vec::new(),
            raw: Vec::new(),
            marks: Vec::new(),
            stats: TraceStats::default(),
        }
    }

    /// Thread `id`'s bodies from its joined chunks, and whether all it recorded in spans is
    /// there: a last body cut short is left out, which loses counted accesses only if it had
    /// begun a span; in a file that was never finished (`file_finished` false), a last body
    /// ending inside a span was cut there too. Offsets in errors are positions in the thread's
    /// bytes.
    fn of_bodies(
        id: u64,
        marked: bool,
        bytes: Vec<u8>,
        file_finished: bool,
    ) -> Result<(Self, bool), PartialError> {
        let mut bodies = Vec::new();
        let mut cursor = Cursor::new(&bytes, 0);
        let mut finished = true;
        while !cursor.is_empty() {
            let mut body = Body::default();
            match parse_body_into(&mut body, &mut cursor, 0, None) {
                Ok(()) => bodies.push(body),
                Err(PartialError::Unfinished { .. } | PartialError::Truncated { .. }) => {
                    let open_span = bodies
                        .last()
                        .and_then(|b: &Body| b.marks.last())
                        .is_some_and(|&(_, m)| m == Mark::Begin);
                    finished = body.marks.is_empty() && !open_span;
                    break;
                }
                Err(e) => return Err(in_thread(id, e)),
            }
        }
        if finished && !file_finished {
            finished = !bodies
                .last()
                .and_then(|b: &Body| b.marks.last())
                .is_some_and(|&(_, m)| m == Mark::Begin);
        }
        let mut thread = Self::new(id, marked, bytes);
        for body in bodies {
            thread.append(body);
        }
        Ok((thread, finished))
    }

    /// Joins `body` after the bodies already here: its sequence and stream numbers move past
    /// theirs, and a span the last one left open ends with it.
    fn append(&mut self, mut body: Body) {
        let (seq_base, stream_base) = (self.stats.accesses, self.streams.len() as u32);
        for d in &mut body.descriptors {
            d.seq += seq_base;
            d.stream += stream_base;
        }
        for r in &mut body.raw {
            r.seq += seq_base;
            r.stream += stream_base;
        }
        if self.marks.last().is_some_and(|&(_, m)| m == Mark::Begin) {
            self.marks.push((seq_base, Mark::End));
        }
        self.marks
            .extend(body.marks.iter().map(|&(seq, m)| (seq + seq_base, m)));
        self.streams.extend(body.streams);
        self.descriptors.extend(body.descriptors);
        self.raw.extend(body.raw);
        self.stats.add_counts(&body.stats);
    }

    /// The thread's number in the file.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// What the thread holds and how well it compressed (`bytes` is 0: chunks interleave).
    pub fn stats(&self) -> TraceStats {
        self.stats
    }

    /// The marks (see the format's `MARK`), in order.
    pub fn marks(&self) -> &[(u64, Mark)] {
        &self.marks
    }

    /// Which of the thread's accesses are counted.
    pub fn counted_spans(&self) -> CountedSpans<'_> {
        CountedSpans::new(&self.marks, self.marked)
    }

    /// How many of the thread's accesses are counted, as [`Self::counted_spans`] tells them:
    /// from each begin to the next end, from a last begin to the thread's last access.
    pub fn counted_accesses(&self) -> u64 {
        let total = self.stats.accesses;
        if self.marks.is_empty() {
            return if self.marked { 0 } else { total };
        }
        let mut counted = 0;
        let mut begun = None;
        for &(at, mark) in &self.marks {
            match (mark, begun) {
                (Mark::Begin, None) => begun = Some(at),
                (Mark::End, Some(from)) => {
                    counted += at.saturating_sub(from);
                    begun = None;
                }
                _ => {}
            }
        }
        counted + begun.map_or(0, |from| total.saturating_sub(from))
    }
}

fn read_descriptor(body: &Body, c: &mut Cursor<'_>, at: u64) -> Result<Descriptor, PartialError> {
    let stream = stream_index(body, c.varint("a descriptor's stream")?, at)?;
    let depth = c.varint("a descriptor's depth")?;
    if depth == 0 || depth > MAX_DEPTH as u64 {
        return Err(bad(at, format!("depth {depth} is not 1..={MAX_DEPTH}")));
    }
    let seq = c.varint("a descriptor's sequence number")?;
    let addr = c.varint("a descriptor's address")?;
    let mut dims = Vec::with_capacity(depth as usize);
    let mut span = 0u128;
    let mut elements = 1u64;
    for _ in 0..depth {
        let dim = Dim {
            count: c.varint("a dimension's count")?,
            seq_stride: c.varint("a dimension's sequence stride")?,
            addr_stride: unzigzag(c.varint("a dimension's address stride")?),
        };
        if dim.count < 2 {
            return Err(bad(at, "a dimension's count is below 2"));
        }
        if u128::from(dim.seq_stride) <= span {
            return Err(bad(
                at,
                "a dimension's sequence stride does not exceed the span inside it",
            ));
        }
        span += u128::from(dim.count - 1) * u128::from(dim.seq_stride);
        elements = elements
            .checked_mul(dim.count)
            .ok_or_else(|| bad(at, "the descriptor's element count overflows"))?;
        if u128::from(seq) + span > u128::from(u64::MAX) {
            return Err(bad(at, "the descriptor's sequence numbers overflow"));
        }
        dims.push(dim);
    }
    Ok(Descriptor {
        stream,
        seq,
        addr,
        dims,
    })
}

fn read_raw(
    body: &Body,
    c: &mut Cursor<'_>,
    at: u64,
    base: usize,
) -> Result<RawBlock, PartialError> {
    let stream = stream_index(body, c.varint("a raw block's stream")?, at)?;
    let entries = c.varint("a raw block's entry count")?;
    if entries == 0 || entries > RAW_BLOCK as u64 {
        return Err(bad(
            at,
            format!("a raw block of {entries} entries (1..={RAW_BLOCK})"),
        ));
    }
    let seq = c.varint("a raw block's sequence number")?;
    let addr = c.varint("a raw block's address")?;
    let start = c.position();
    let offset = c.offset();
    // Decode once to check, so replay cannot meet a bad entry.
    let mut decoder = RawDecoder {
        seq,
        addr,
        seq_delta: 1,
    };
    for _ in 1..entries {
        decoder.next(c)?;
    }
    Ok(RawBlock {
        stream,
        entries,
        seq,
        addr,
        bytes: base + start..base + c.position(),
        offset,
    })
}

impl ThreadTrace {
    /// The accesses in the order they were recorded.
    pub fn accesses(&self) -> PartialAccesses<'_> {
        let mut pending: Vec<(u64, Source)> = self
            .descriptors
            .iter()
            .enumerate()
            .map(|(i, d)| (d.seq, Source::Desc(i)))
            .chain(
                self.raw
                    .iter()
                    .enumerate()
                    .map(|(i, r)| (r.seq, Source::Raw(i))),
            )
            .collect();
        pending.sort_unstable_by_key(|&(seq, _)| Reverse(seq));
        PartialAccesses {
            trace: self,
            pending,
            active: Vec::new(),
            free: Vec::new(),
            heap: BinaryHeap::new(),
            next_seq: 0,
            failed: false,
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum Source {
    Desc(usize),
    Raw(usize),
}

#[derive(Debug, Clone, Copy)]
struct RawDecoder {
    seq: u64,
    addr: u64,
    seq_delta: u64,
}

impl RawDecoder {
    fn next(&mut self, c: &mut Cursor<'_>) -> Result<(u64, u64), PartialError> {
        let at = c.offset();
        let value = c.varint128(65, "a raw entry")?;
        let delta = unzigzag((value >> 1) as u64);
        if value & 1 == 0 {
            let seq_delta = c.varint("a raw entry's sequence delta")?;
            if seq_delta == 0 {
                return Err(bad(at, "a raw entry's sequence delta is zero"));
            }
            self.seq_delta = seq_delta;
        }
        self.seq = self
            .seq
            .checked_add(self.seq_delta)
            .ok_or_else(|| bad(at, "a raw entry's sequence number overflows"))?;
        self.addr = self.addr.wrapping_add(delta);
        Ok((self.seq, self.addr))
    }
}

/// Where one active source stands.
#[derive(Debug, Clone)]
enum Position {
    Desc {
        index: usize,
        at: [u64; MAX_DEPTH],
        seq: u64,
        addr: u64,
    },
    Raw {
        index: usize,
        left: u64,
        pos: usize,
        decoder: RawDecoder,
    },
}

/// The accesses of a [`PartialTrace`] in recorded order (see [`PartialTrace::accesses`]).
#[derive(Debug)]
pub struct PartialAccesses<'a> {
    trace: &'a ThreadTrace,
    /// Sources not started yet, latest first sequence number first (popped from the end).
    pending: Vec<(u64, Source)>,
    active: Vec<Option<Position>>,
    free: Vec<usize>,
    /// (next sequence number, slot in `active`).
    heap: BinaryHeap<Reverse<(u64, usize)>>,
    next_seq: u64,
    failed: bool,
}

impl PartialAccesses<'_> {
    fn start(&mut self, source: Source) {
        let trace = self.trace;
        let (seq, position) = match source {
            Source::Desc(index) => {
                let d = &trace.descriptors[index];
                (
                    d.seq,
                    Position::Desc {
                        index,
                        at: [0; MAX_DEPTH],
                        seq: d.seq,
                        addr: d.addr,
                    },
                )
            }
            Source::Raw(index) => {
                let r = &trace.raw[index];
                (
                    r.seq,
                    Position::Raw {
                        index,
                        left: r.entries - 1,
                        pos: r.bytes.start,
                        decoder: RawDecoder {
                            seq: r.seq,
                            addr: r.addr,
                            seq_delta: 1,
                        },
                    },
                )
            }
        };
        let slot = match self.free.pop() {
            Some(slot) => {
                self.active[slot] = Some(position);
                slot
            }
            None => {
                self.active.push(Some(position));
                self.active.len() - 1
            }
        };
        self.heap.push(Reverse((seq, slot)));
    }

    /// The access at the slot's current position, and the slot's next sequence number if any.
    fn take(&mut self, slot: usize) -> Result<(PartialAccess, Option<u64>), PartialError> {
        let trace = self.trace;
        let position = self.active[slot].as_mut().expect("an active slot");
        let (stream, addr, next) = match position {
            Position::Desc {
                index,
                at,
                seq,
                addr,
            } => {
                let d = &trace.descriptors[*index];
                let current = *addr;
                let mut next = None;
                for (k, dim) in d.dims.iter().enumerate() {
                    at[k] += 1;
                    if at[k] < dim.count {
                        // Recompute from the base: cheap, and exact after any carry.
                        let (mut s, mut a) = (d.seq, d.addr);
                        for (i, dim) in at.iter().zip(&d.dims) {
                            s += i * dim.seq_stride;
                            a = a.wrapping_add(i.wrapping_mul(dim.addr_stride));
                        }
                        (*seq, *addr) = (s, a);
                        next = Some(s);
                        break;
                    }
                    at[k] = 0;
                }
                (d.stream, current, next)
            }
            Position::Raw {
                index,
                left,
                pos,
                decoder,
            } => {
                let r = &trace.raw[*index];
                let current = decoder.addr;
                let next = if *left == 0 {
                    None
                } else {
                    *left -= 1;
                    let base = *pos;
                    let mut c = Cursor::new(
                        &trace.bytes[base..r.bytes.end],
                        r.offset + (base - r.bytes.start) as u64,
                    );
                    let (s, _) = decoder.next(&mut c)?;
                    *pos = base + c.position();
                    Some(s)
                };
                (r.stream, current, next)
            }
        };
        let def = trace.streams[stream as usize];
        Ok((
            PartialAccess {
                site: def.site,
                kind: def.kind,
                addr,
                size: def.size,
            },
            next,
        ))
    }

    fn next_access(&mut self) -> Result<Option<PartialAccess>, PartialError> {
        let expected = self.next_seq;
        while self
            .pending
            .last()
            .is_some_and(|&(first, _)| first <= expected)
        {
            let (_, source) = self.pending.pop().expect("checked");
            self.start(source);
        }
        if expected == self.trace.stats.accesses {
            return match self.heap.peek() {
                None => Ok(None),
                Some(&Reverse((seq, _))) => Err(PartialError::BadOrder {
                    seq,
                    why: "beyond the declared access count",
                }),
            };
        }
        let Some(Reverse((seq, slot))) = self.heap.pop() else {
            return Err(PartialError::BadOrder {
                seq: expected,
                why: "no descriptor covers it",
            });
        };
        if seq != expected {
            return Err(PartialError::BadOrder {
                seq: expected,
                why: if seq < expected {
                    "covered twice"
                } else {
                    "no descriptor covers it"
                },
            });
        }
        let (access, next) = self.take(slot)?;
        match next {
            Some(next) => self.heap.push(Reverse((next, slot))),
            None => {
                self.active[slot] = None;
                self.free.push(slot);
            }
        }
        self.next_seq += 1;
        Ok(Some(access))
    }
}

impl Iterator for PartialAccesses<'_> {
    type Item = Result<PartialAccess, PartialError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let item = self.next_access().transpose();
        super::super::end_at_error(item, &mut self.failed)
    }
}
