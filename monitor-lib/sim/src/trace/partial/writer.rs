//! Writing a partial trace: a [`ThreadWriter`] per recorded thread compresses its accesses
//! online (streams found on the fly, closed descriptors and full raw blocks written out as they
//! come) into body records for its sink; a [`TraceFile`] takes the bodies' bytes as chunks
//! tagged with their thread, the sites described as they come, and ends the file with the
//! sites not described yet and the ranges. A
//! [`PartialWriter`] is the two for one thread.

use std::collections::{BTreeMap, HashMap};

use foldhash::fast::FixedState;
use std::io::{self, Write};

use super::codec::{put_str, put_varint, put_varint128, zigzag};
use super::compress::{Closed, StreamCompressor};
use super::{
    CHECKSUM_LEN, Descriptor, FLAG_MARKED, MAX_CHUNK, MAX_NOTE, Mark, PARTIAL_MAGIC,
    PARTIAL_VERSION, PartialAccess, RAW_BLOCK, SiteInfo, StructureRange, TAG_CHUNK, TAG_DESC,
    TAG_END, TAG_MARK, TAG_NOTE, TAG_RANGE, TAG_RAW, TAG_SITE, TAG_STREAM, kind_code,
    record_checksum,
};

/// A stream's identity: code address, kind code and size.
type StreamKey = (u64, u8, u32);

/// Slots of the recent-streams cache: a power of two.
const RECENT: usize = 256;

/// The recent-streams slot of `key`: a multiplicative hash of the whole key, whose top bits
/// differ for sites a few bytes apart (a slot per low bits let two sites of one loop body
/// take turns in a slot, each access then a map lookup, wherever the linker put the code).
#[inline(always)]
fn recent_slot((site, kind, size): StreamKey) -> usize {
    let mixed =
        (site ^ u64::from(kind) << 56 ^ u64::from(size) << 48).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (mixed >> (64 - RECENT.trailing_zeros())) as usize
}

/// Compresses one thread's accesses online into body records on `sink` (see the format),
/// writing them in pieces of about 64 KiB; [`ThreadWriter::end_body`] closes everything still
/// open and ends the body.
#[derive(Debug)]
pub struct ThreadWriter<W: Write> {
    sink: W,
    buffer: Vec<u8>,
    bytes: u64,
    streams: HashMap<StreamKey, u32, FixedState>,
    /// Streams by a hash of their key, in front of `streams`: a loop body's few sites take
    /// turns, and a hash map's lookup per access cost more than compressing the access.
    recent: Box<[Option<(StreamKey, u32)>; RECENT]>,
    /// Every site recorded, in any body, with the first address it accessed.
    site_firsts: BTreeMap<u64, u64>,
    compressors: Vec<StreamCompressor>,
    raw: Vec<Vec<(u64, u64)>>,
    closed: Vec<Closed>,
    /// The body's accesses so far (its next sequence number), and those of the bodies ended.
    seq: u64,
    earlier_accesses: u64,
    descriptors: u64,
    raw_entries: u64,
    /// The last mark written in this body, which the next must differ from.
    last_mark: Option<Mark>,
}

impl<W: Write> ThreadWriter<W> {
    const FLUSH_AT: usize = 1 << 16;

    /// A writer of body records on `sink`, which gets them in pieces of about 64 KiB.
    pub fn new(sink: W) -> Self {
        Self {
            sink,
            buffer: Vec::with_capacity(Self::FLUSH_AT + 256),
            bytes: 0,
            streams: HashMap::with_hasher(FixedState::default()),
            recent: Box::new([None; RECENT]),
            site_firsts: BTreeMap::new(),
            compressors: Vec::new(),
            raw: Vec::new(),
            closed: Vec::new(),
            seq: 0,
            earlier_accesses: 0,
            descriptors: 0,
            raw_entries: 0,
            last_mark: None,
        }
    }

    /// The sink, for a caller that moves what it got elsewhere.
    pub fn sink_mut(&mut self) -> &mut W {
        &mut self.sink
    }

    /// Appends the next access.
    #[inline]
    pub fn record(&mut self, access: &PartialAccess) -> io::Result<()> {
        let key = (access.site, kind_code(access.kind), access.size);
        let slot = recent_slot(key);
        let stream = match self.recent[slot] {
            Some((k, s)) if k == key => s,
            _ => {
                let s = self.stream_of(key, access.addr);
                self.recent[slot] = Some((key, s));
                s
            }
        };
        let seq = self.seq;
        self.seq += 1;
        self.compressors[stream as usize].push(seq, access.addr, &mut self.closed);
        if !self.closed.is_empty() {
            self.write_closed(stream)?;
        }
        Ok(())
    }

    /// Marks that counting begins or ends before the next access (see the format's `MARK`).
    /// A mark repeating the previous one, or an end before any begin, is ignored: it would
    /// change nothing.
    pub fn mark(&mut self, mark: Mark) {
        if self.last_mark == Some(mark) || (self.last_mark.is_none() && mark == Mark::End) {
            return;
        }
        self.last_mark = Some(mark);
        self.buffer.push(TAG_MARK);
        put_varint(&mut self.buffer, self.seq);
        self.buffer.push(match mark {
            Mark::Begin => 1,
            Mark::End => 2,
        });
    }

    /// Accesses recorded so far, in every body.
    pub fn accesses(&self) -> u64 {
        self.earlier_accesses + self.seq
    }

    /// Accesses of the body going on, which only its end puts in the file as something a
    /// reader can use.
    pub fn body_accesses(&self) -> u64 {
        self.seq
    }

    /// Bytes written so far (the open descriptors and raw entries not included).
    pub fn bytes(&self) -> u64 {
        self.bytes + self.buffered()
    }

    /// Bytes of records not yet handed to the sink.
    fn buffered(&self) -> u64 {
        self.buffer.len() as u64
    }

    /// The code address of every site recorded so far, with the first address it accessed.
    pub fn sites(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.site_firsts.iter().map(|(&site, &addr)| (site, addr))
    }

    fn stream_of(&mut self, key: StreamKey, addr: u64) -> u32 {
        if let Some(&s) = self.streams.get(&key) {
            return s;
        }
        let s = self.compressors.len() as u32;
        self.streams.insert(key, s);
        self.site_firsts.entry(key.0).or_insert(addr);
        self.compressors.push(StreamCompressor::new(s));
        self.raw.push(Vec::new());
        self.buffer.push(TAG_STREAM);
        put_varint(&mut self.buffer, key.0);
        self.buffer.push(key.1);
        put_varint(&mut self.buffer, u64::from(key.2));
        s
    }

    fn write_closed(&mut self, stream: u32) -> io::Result<()> {
        let mut closed = std::mem::take(&mut self.closed);
        for c in closed.drain(..) {
            match c {
                Closed::Desc(d) => self.write_descriptor(&d),
                Closed::Raw { seq, addr } => {
                    let raw = &mut self.raw[stream as usize];
                    raw.push((seq, addr));
                    if raw.len() == RAW_BLOCK {
                        self.write_raw_block(stream);
                    }
                }
            }
        }
        self.closed = closed;
        if self.buffer.len() >= Self::FLUSH_AT {
            self.flush_buffer()?;
        }
        Ok(())
    }

    fn write_descriptor(&mut self, d: &Descriptor) {
        self.descriptors += 1;
        let out = &mut self.buffer;
        out.push(TAG_DESC);
        put_varint(out, u64::from(d.stream));
        put_varint(out, d.dims.len() as u64);
        put_varint(out, d.seq);
        put_varint(out, d.addr);
        for dim in &d.dims {
            put_varint(out, dim.count);
            put_varint(out, dim.seq_stride);
            put_varint(out, zigzag(dim.addr_stride));
        }
    }

    fn write_raw_block(&mut self, stream: u32) {
        let raw = &mut self.raw[stream as usize];
        if raw.is_empty() {
            return;
        }
        // Accesses of a pair demoted from a descriptor can arrive after later lone ones.
        raw.sort_unstable();
        self.raw_entries += raw.len() as u64;
        let out = &mut self.buffer;
        out.push(TAG_RAW);
        put_varint(out, u64::from(stream));
        put_varint(out, raw.len() as u64);
        let (mut seq, mut addr) = raw[0];
        put_varint(out, seq);
        put_varint(out, addr);
        let mut seq_delta = 1;
        for &(s, a) in &raw[1..] {
            let predicted = s - seq == seq_delta;
            let value = u128::from(zigzag(a.wrapping_sub(addr))) << 1 | u128::from(predicted);
            put_varint128(out, value);
            if !predicted {
                seq_delta = s - seq;
                put_varint(out, seq_delta);
            }
            (seq, addr) = (s, a);
        }
        raw.clear();
    }

    fn flush_buffer(&mut self) -> io::Result<()> {
        self.sink.write_all(&self.buffer)?;
        self.bytes += self.buffer.len() as u64;
        self.buffer.clear();
        Ok(())
    }

    /// Ends the body: closes every open descriptor, writes the remaining raw entries and the
    /// body's `END`, and hands everything to the sink. The next access starts a new body
    /// (streams and sequence numbers from 0), inside a counted span if this one ended in one. A
    /// body without accesses is not written.
    pub fn end_body(&mut self) -> io::Result<()> {
        let in_span = self.last_mark == Some(Mark::Begin);
        if self.seq == 0 {
            // Marks before any access describe nothing.
            self.buffer.clear();
        } else {
            for stream in 0..self.compressors.len() {
                self.compressors[stream].finish(&mut self.closed);
                self.write_closed(stream as u32)?;
                self.write_raw_block(stream as u32);
            }
            self.buffer.push(TAG_END);
            put_varint(&mut self.buffer, self.seq);
            put_varint(&mut self.buffer, self.descriptors);
            put_varint(&mut self.buffer, self.raw_entries);
        }
        self.flush_buffer()?;
        self.earlier_accesses += self.seq;
        self.seq = 0;
        self.descriptors = 0;
        self.raw_entries = 0;
        self.streams.clear();
        *self.recent = [None; RECENT];
        self.compressors.clear();
        self.raw.clear();
        self.last_mark = None;
        if in_span {
            self.mark(Mark::Begin);
        }
        Ok(())
    }

    /// Ends the body ([`Self::end_body`]) and returns the sink, flushed.
    pub fn finish(mut self) -> io::Result<W> {
        self.end_body()?;
        self.buffer.clear();
        self.sink.flush()?;
        Ok(self.sink)
    }
}

/// A partial trace file: the header, then the threads' body bytes as chunks
/// ([`TraceFile::chunk`], in any interleaving) and the sites described as they come
/// ([`TraceFile::site`]), then [`TraceFile::finish`]'s other sites, ranges and `END`.
#[derive(Debug)]
pub struct TraceFile<W: Write> {
    sink: W,
    chunks: u64,
    bytes: u64,
    /// The checksum of the header, which every record's checksum starts from.
    header_sum: u32,
}

impl<W: Write> TraceFile<W> {
    /// Writes the header; `marked` sets [`FLAG_MARKED`] (a recording of a region's instances,
    /// whose threads without marks count nothing).
    pub fn new(mut sink: W, marked: bool) -> io::Result<Self> {
        let mut header = PARTIAL_MAGIC.to_vec();
        header.extend_from_slice(&PARTIAL_VERSION.to_le_bytes());
        let flags = if marked { FLAG_MARKED } else { 0 };
        header.extend_from_slice(&flags.to_le_bytes());
        sink.write_all(&header)?;
        Ok(Self {
            sink,
            chunks: 0,
            bytes: header.len() as u64,
            header_sum: crc32fast::hash(&header),
        })
    }

    /// Appends `bytes` of thread `thread`'s body records (nothing when empty).
    pub fn chunk(&mut self, thread: u64, bytes: &[u8]) -> io::Result<()> {
        for piece in bytes.chunks(MAX_CHUNK as usize) {
            let mut head = vec![TAG_CHUNK];
            put_varint(&mut head, thread);
            put_varint(&mut head, piece.len() as u64);
            self.sink.write_all(&head)?;
            self.sink.write_all(piece)?;
            self.sink
                .write_all(&record_checksum(self.header_sum, &[&head, piece]))?;
            self.chunks += 1;
            self.bytes += (head.len() + piece.len() + CHECKSUM_LEN) as u64;
        }
        Ok(())
    }

    /// Bytes written so far.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Writes a `NOTE` record: a sentence every replay of the trace repeats (cut to
    /// [`MAX_NOTE`] bytes, at a character boundary).
    pub fn note(&mut self, text: &str) -> io::Result<()> {
        let mut end = text.len().min(MAX_NOTE as usize);
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        let mut out = vec![TAG_NOTE];
        put_str(&mut out, &text[..end]);
        seal(&mut out, 0, self.header_sum);
        self.sink.write_all(&out)?;
        self.bytes += out.len() as u64;
        Ok(())
    }

    /// Hands every chunk appended so far to the file (a buffering sink keeps them otherwise),
    /// so a reader finds them even if the writer is killed before [`TraceFile::finish`].
    pub fn flush(&mut self) -> io::Result<()> {
        self.sink.flush()
    }

    /// Writes a `SITE` record: the source of the accesses at code address `site`. A site is
    /// described at most once in a file: a recorder describes its sites as it hands the file
    /// what it recorded, so a file never finished names them too, and [`Self::finish`] the
    /// rest.
    pub fn site(&mut self, site: u64, info: &SiteInfo) -> io::Result<()> {
        let mut out = Vec::new();
        put_site(&mut out, site, info, self.header_sum);
        self.sink.write_all(&out)?;
        self.bytes += out.len() as u64;
        Ok(())
    }

    /// Writes the sites not described yet, the ranges and the `END`; returns the sink, flushed.
    pub fn finish(
        mut self,
        sites: &BTreeMap<u64, SiteInfo>,
        ranges: &[StructureRange],
    ) -> io::Result<W> {
        let mut out = Vec::new();
        for (&site, info) in sites {
            put_site(&mut out, site, info, self.header_sum);
        }
        for range in ranges {
            let record = out.len();
            out.push(TAG_RANGE);
            put_str(&mut out, &range.name);
            put_varint(&mut out, range.start);
            put_varint(&mut out, range.end);
            seal(&mut out, record, self.header_sum);
        }
        let record = out.len();
        out.push(TAG_END);
        put_varint(&mut out, self.chunks);
        seal(&mut out, record, self.header_sum);
        self.sink.write_all(&out)?;
        self.sink.flush()?;
        Ok(self.sink)
    }
}

/// A `SITE` record for `site` into `out`, sealed with the file's `header_sum`.
fn put_site(out: &mut Vec<u8>, site: u64, info: &SiteInfo, header_sum: u32) {
    let record = out.len();
    out.push(TAG_SITE);
    put_varint(out, site);
    put_str(out, &info.file);
    put_varint(out, u64::from(info.line));
    put_str(out, &info.function);
    put_str(out, &info.structure);
    seal(out, record, header_sum);
}

/// Ends the file record that starts at `record` in `out` with its checksum: the CRC-32 of the
/// header (whose own checksum is `header_sum`) followed by the record.
fn seal(out: &mut Vec<u8>, record: usize, header_sum: u32) {
    let sum = record_checksum(header_sum, &[&out[record..]]);
    out.extend_from_slice(&sum);
}

/// One thread's accesses compressed online into a whole trace file on `sink` (a
/// [`ThreadWriter`] and a [`TraceFile`]): for traces converted from another format, which
/// count every access.
#[derive(Debug)]
pub struct PartialWriter<W: Write> {
    file: TraceFile<W>,
    thread: ThreadWriter<Vec<u8>>,
    sites: BTreeMap<u64, SiteInfo>,
    ranges: Vec<StructureRange>,
}

impl<W: Write> PartialWriter<W> {
    /// Writes the header.
    pub fn new(sink: W) -> io::Result<Self> {
        Ok(Self {
            file: TraceFile::new(sink, false)?,
            thread: ThreadWriter::new(Vec::new()),
            sites: BTreeMap::new(),
            ranges: Vec::new(),
        })
    }

    /// Appends the next access.
    #[inline]
    pub fn record(&mut self, access: &PartialAccess) -> io::Result<()> {
        self.thread.record(access)?;
        if !self.thread.sink_mut().is_empty() {
            self.pass_on()?;
        }
        Ok(())
    }

    fn pass_on(&mut self) -> io::Result<()> {
        let piece = self.thread.sink_mut();
        self.file.chunk(0, piece)?;
        piece.clear();
        Ok(())
    }

    /// Marks that counting begins or ends before the next access (see the format's `MARK`).
    pub fn mark(&mut self, mark: Mark) {
        self.thread.mark(mark);
    }

    /// Names the source of the access site at code address `site` (the last call wins).
    pub fn set_site(&mut self, site: u64, info: SiteInfo) {
        self.sites.insert(site, info);
    }

    /// Adds a named address range (a data structure) for per-structure tables.
    pub fn add_range(&mut self, range: StructureRange) {
        self.ranges.push(range);
    }

    /// Writes a note every replay repeats ([`TraceFile::note`]).
    pub fn note(&mut self, text: &str) -> io::Result<()> {
        self.file.note(text)
    }

    /// Accesses recorded so far.
    pub fn accesses(&self) -> u64 {
        self.thread.accesses()
    }

    /// Bytes written so far (the open descriptors and raw entries not included).
    pub fn bytes(&self) -> u64 {
        self.file.bytes() + self.thread.buffered()
    }

    /// The code address of every site recorded so far, with the first address it accessed.
    pub fn sites(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.thread.sites()
    }

    /// Ends the thread's body, writes the site table, the ranges and the `END`; returns the
    /// sink.
    pub fn finish(mut self) -> io::Result<W> {
        self.thread.end_body()?;
        self.pass_on()?;
        self.file.finish(&self.sites, &self.ranges)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A loop body's sites lie a few bytes apart, loads and stores alike: each takes a
    /// recent-streams slot of its own, wherever the code was linked, so none of them goes to
    /// the map at every access.
    #[test]
    fn a_loop_bodys_sites_take_slots_of_their_own() {
        for base in [0x40_1000u64, 0x40_1abc, 0x5555_5555_5234, 0x7f00_0000_1000] {
            for spacing in 1..12 {
                let keys: Vec<StreamKey> = (0..12u64)
                    .map(|i| (base + i * spacing, (i % 2) as u8, 8))
                    .collect();
                let mut slots: Vec<usize> = keys.iter().map(|&k| recent_slot(k)).collect();
                slots.sort_unstable();
                slots.dedup();
                assert_eq!(slots.len(), keys.len(), "base {base:#x}, spacing {spacing}");
            }
        }
    }
}
