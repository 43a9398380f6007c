//! Writing a partial trace: streams found on the fly, each compressed online, closed
//! descriptors and full raw blocks written out as they come.

use std::collections::{BTreeMap, HashMap};
use std::io::{self, Write};

use super::codec::{put_str, put_varint, put_varint128, zigzag};
use super::compress::{Closed, StreamCompressor};
use super::{
    Descriptor, Mark, PARTIAL_MAGIC, PARTIAL_VERSION, PartialAccess, RAW_BLOCK, SiteInfo,
    StructureRange, TAG_DESC, TAG_END, TAG_MARK, TAG_RANGE, TAG_RAW, TAG_SITE, TAG_STREAM,
    kind_code,
};

/// A stream's identity: code address, kind code and size.
type StreamKey = (u64, u8, u32);

/// Slots of the recent-streams cache.
const RECENT: usize = 64;

/// Compresses accesses online into a partial trace on `sink`; [`PartialWriter::finish`] closes
/// everything still open and writes the site table and the `END` record.
#[derive(Debug)]
pub struct PartialWriter<W: Write> {
    sink: W,
    buffer: Vec<u8>,
    bytes: u64,
    streams: HashMap<StreamKey, u32>,
    /// Streams by a hash of their key, in front of `streams`: a loop body's few sites take
    /// turns, and a hash map's lookup per access cost more than compressing the access.
    recent: Box<[Option<(StreamKey, u32)>; RECENT]>,
    /// Each stream's key and first address, in stream order.
    stream_keys: Vec<(StreamKey, u64)>,
    compressors: Vec<StreamCompressor>,
    raw: Vec<Vec<(u64, u64)>>,
    closed: Vec<Closed>,
    seq: u64,
    descriptors: u64,
    raw_entries: u64,
    sites: BTreeMap<u64, SiteInfo>,
    ranges: Vec<StructureRange>,
    /// The last mark written, which the next must differ from.
    last_mark: Option<Mark>,
}

impl<W: Write> PartialWriter<W> {
    const FLUSH_AT: usize = 1 << 16;

    /// Writes the header.
    pub fn new(mut sink: W) -> io::Result<Self> {
        let mut header = PARTIAL_MAGIC.to_vec();
        header.extend_from_slice(&PARTIAL_VERSION.to_le_bytes());
        header.extend_from_slice(&0u32.to_le_bytes());
        sink.write_all(&header)?;
        Ok(Self {
            sink,
            buffer: Vec::with_capacity(Self::FLUSH_AT + 256),
            bytes: header.len() as u64,
            streams: HashMap::new(),
            recent: Box::new([None; RECENT]),
            stream_keys: Vec::new(),
            compressors: Vec::new(),
            raw: Vec::new(),
            closed: Vec::new(),
            seq: 0,
            descriptors: 0,
            raw_entries: 0,
            sites: BTreeMap::new(),
            ranges: Vec::new(),
            last_mark: None,
        })
    }

    /// Appends the next access.
    #[inline]
    pub fn record(&mut self, access: &PartialAccess) -> io::Result<()> {
        let key = (access.site, kind_code(access.kind), access.size);
        let slot = (access.site ^ access.site >> 9 ^ u64::from(key.1) << 3) as usize % RECENT;
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

    /// Names the source of the access site at code address `site` (the last call wins).
    pub fn set_site(&mut self, site: u64, info: SiteInfo) {
        self.sites.insert(site, info);
    }

    /// Adds a named address range (a data structure) for per-structure tables.
    pub fn add_range(&mut self, range: StructureRange) {
        self.ranges.push(range);
    }

    /// Accesses recorded so far.
    pub fn accesses(&self) -> u64 {
        self.seq
    }

    /// Bytes written so far (the open descriptors and raw entries not included).
    pub fn bytes(&self) -> u64 {
        self.bytes + self.buffer.len() as u64
    }

    /// The code address of every site recorded so far, with the first address it accessed.
    pub fn sites(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        let mut seen = std::collections::HashSet::new();
        self.stream_keys
            .iter()
            .filter(move |((site, _, _), _)| seen.insert(*site))
            .map(|&((site, _, _), addr)| (site, addr))
    }

    fn stream_of(&mut self, key: StreamKey, addr: u64) -> u32 {
        if let Some(&s) = self.streams.get(&key) {
            return s;
        }
        let s = self.compressors.len() as u32;
        self.streams.insert(key, s);
        self.stream_keys.push((key, addr));
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

    /// Closes every open descriptor, writes the remaining raw entries, the site table, the
    /// ranges and the `END` record; returns the sink.
    pub fn finish(mut self) -> io::Result<W> {
        for stream in 0..self.compressors.len() {
            self.compressors[stream].finish(&mut self.closed);
            self.write_closed(stream as u32)?;
            self.write_raw_block(stream as u32);
        }
        for (site, info) in std::mem::take(&mut self.sites) {
            let out = &mut self.buffer;
            out.push(TAG_SITE);
            put_varint(out, site);
            put_str(out, &info.file);
            put_varint(out, u64::from(info.line));
            put_str(out, &info.function);
            put_str(out, &info.structure);
        }
        for range in std::mem::take(&mut self.ranges) {
            let out = &mut self.buffer;
            out.push(TAG_RANGE);
            put_str(out, &range.name);
            put_varint(out, range.start);
            put_varint(out, range.end);
        }
        self.buffer.push(TAG_END);
        put_varint(&mut self.buffer, self.seq);
        put_varint(&mut self.buffer, self.descriptors);
        put_varint(&mut self.buffer, self.raw_entries);
        self.flush_buffer()?;
        self.sink.flush()?;
        Ok(self.sink)
    }
}
