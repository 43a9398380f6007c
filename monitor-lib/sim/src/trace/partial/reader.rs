//! Reading a partial trace: the whole file is parsed and checked up front (it is compact by
//! design), then [`PartialTrace::accesses`] merges the descriptors' and raw blocks' streams by
//! sequence number.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::io::Read;
use std::ops::Range;

use super::codec::{Cursor, unzigzag};
use super::{
    Descriptor, Dim, MAX_DEPTH, Mark, PARTIAL_HEADER_LEN, PARTIAL_MAGIC, PARTIAL_VERSION,
    PartialAccess, PartialError, RAW_BLOCK, SiteInfo, StructureRange, TAG_DESC, TAG_END, TAG_MARK,
    TAG_RANGE, TAG_RAW, TAG_SITE, TAG_STREAM, kind_of,
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
    /// Accesses per byte of trace.
    pub fn accesses_per_byte(&self) -> f64 {
        self.accesses as f64 / self.bytes.max(1) as f64
    }

    /// Share of the accesses covered by descriptors, from 0 to 1.
    pub fn described_share(&self) -> f64 {
        self.described_accesses as f64 / self.accesses.max(1) as f64
    }
}

/// A whole partial trace, parsed and checked.
#[derive(Debug, Clone)]
pub struct PartialTrace {
    bytes: Vec<u8>,
    streams: Vec<StreamDef>,
    pub(super) descriptors: Vec<Descriptor>,
    raw: Vec<RawBlock>,
    sites: BTreeMap<u64, SiteInfo>,
    ranges: Vec<StructureRange>,
    marks: Vec<(u64, Mark)>,
    stats: TraceStats,
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
        if version != PARTIAL_VERSION {
            return Err(PartialError::UnsupportedVersion { found: version });
        }
        let flags = word(12);
        if flags != 0 {
            return Err(PartialError::UnsupportedFlags { found: flags });
        }
        let mut trace = Self {
            streams: Vec::new(),
            descriptors: Vec::new(),
            raw: Vec::new(),
            sites: BTreeMap::new(),
            ranges: Vec::new(),
            marks: Vec::new(),
            stats: TraceStats {
                bytes: bytes.len() as u64,
                ..TraceStats::default()
            },
            bytes: Vec::new(),
        };
        let mut cursor = Cursor::new(&bytes[PARTIAL_HEADER_LEN..], PARTIAL_HEADER_LEN as u64);
        let mut raw_ranges = Vec::new();
        loop {
            if cursor.is_empty() {
                return Err(PartialError::Unfinished {
                    offset: cursor.offset(),
                });
            }
            let at = cursor.offset();
            match cursor.byte("a record")? {
                TAG_STREAM => {
                    let site = cursor.varint("a stream's code address")?;
                    let kind = kind_of(cursor.byte("a stream's kind")?)
                        .ok_or_else(|| bad(at, "unknown access kind"))?;
                    let size = cursor.varint("a stream's size")?;
                    let size = u32::try_from(size)
                        .ok()
                        .filter(|&s| s > 0)
                        .ok_or_else(|| bad(at, format!("access size {size} is not 1..2^32")))?;
                    trace.streams.push(StreamDef { site, kind, size });
                }
                TAG_DESC => {
                    let d = trace.read_descriptor(&mut cursor, at)?;
                    trace.stats.described_accesses += d.elements();
                    trace.descriptors.push(d);
                }
                TAG_RAW => {
                    let block = trace.read_raw(&mut cursor, at, PARTIAL_HEADER_LEN)?;
                    trace.stats.raw_accesses += block.entries;
                    raw_ranges.push(block);
                }
                TAG_SITE => {
                    let site = cursor.varint("a site's code address")?;
                    let info = SiteInfo {
                        file: cursor.string("a site's file")?,
                        line: u32::try_from(cursor.varint("a site's line")?)
                            .map_err(|_| bad(at, "the line number does not fit in 32 bits"))?,
                        function: cursor.string("a site's function")?,
                        structure: cursor.string("a site's data structure")?,
                    };
                    if trace.sites.insert(site, info).is_some() {
                        return Err(bad(at, format!("site {site:#x} is described twice")));
                    }
                }
                TAG_RANGE => {
                    let name = cursor.string("a range's name")?;
                    let start = cursor.varint("a range's start")?;
                    let end = cursor.varint("a range's end")?;
                    if end <= start {
                        return Err(bad(at, format!("range `{name}` is empty or reversed")));
                    }
                    trace.ranges.push(StructureRange { name, start, end });
                }
                TAG_MARK => {
                    let seq = cursor.varint("a mark's sequence number")?;
                    let mark = match cursor.byte("a mark's kind")? {
                        1 => Mark::Begin,
                        2 => Mark::End,
                        k => return Err(bad(at, format!("unknown mark kind {k}"))),
                    };
                    let expected = match trace.marks.last() {
                        Some((_, Mark::Begin)) => Mark::End,
                        _ => Mark::Begin,
                    };
                    if mark != expected || trace.marks.last().is_some_and(|&(s, _)| s > seq) {
                        return Err(bad(
                            at,
                            "marks must come in order, alternating from a begin",
                        ));
                    }
                    trace.marks.push((seq, mark));
                }
                TAG_END => {
                    let accesses = cursor.varint("the access count")?;
                    let descriptors = cursor.varint("the descriptor count")?;
                    let raw = cursor.varint("the raw entry count")?;
                    if !cursor.is_empty() {
                        return Err(bad(cursor.offset(), "data after the END record"));
                    }
                    let s = &mut trace.stats;
                    if descriptors != trace.descriptors.len() as u64
                        || raw != s.raw_accesses
                        || s.described_accesses.checked_add(s.raw_accesses) != Some(accesses)
                    {
                        return Err(bad(
                            at,
                            format!(
                                "END declares {accesses} accesses in {descriptors} descriptors and {raw} raw entries; the file holds {} in {} and {}",
                                s.described_accesses + s.raw_accesses,
                                trace.descriptors.len(),
                                s.raw_accesses
                            ),
                        ));
                    }
                    if trace.marks.last().is_some_and(|&(seq, _)| seq > accesses) {
                        return Err(bad(at, "a mark lies beyond the last access"));
                    }
                    s.accesses = accesses;
                    s.descriptors = descriptors;
                    s.streams = trace.streams.len() as u64;
                    break;
                }
                tag => return Err(bad(at, format!("unknown record tag {tag:#04x}"))),
            }
        }
        trace.raw = raw_ranges;
        trace.bytes = bytes;
        Ok(trace)
    }

    fn stream_index(&self, value: u64, at: u64) -> Result<u32, PartialError> {
        if value < self.streams.len() as u64 {
            Ok(value as u32)
        } else {
            Err(bad(at, format!("stream {value} is not defined before use")))
        }
    }

    fn read_descriptor(&self, c: &mut Cursor<'_>, at: u64) -> Result<Descriptor, PartialError> {
        let stream = self.stream_index(c.varint("a descriptor's stream")?, at)?;
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

    fn read_raw(&self, c: &mut Cursor<'_>, at: u64, base: usize) -> Result<RawBlock, PartialError> {
        let stream = self.stream_index(c.varint("a raw block's stream")?, at)?;
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

    /// What the trace holds and how well it compressed.
    pub fn stats(&self) -> TraceStats {
        self.stats
    }

    /// The site table: code address to source, for the sites the writer described.
    pub fn sites(&self) -> &BTreeMap<u64, SiteInfo> {
        &self.sites
    }

    /// The marks (see the format's `MARK`), in order.
    pub fn marks(&self) -> &[(u64, Mark)] {
        &self.marks
    }

    /// The named address ranges (data structures).
    pub fn ranges(&self) -> &[StructureRange] {
        &self.ranges
    }

    /// Every access site's code address, in address order.
    pub fn site_addresses(&self) -> Vec<u64> {
        let mut sites: Vec<u64> = self.streams.iter().map(|s| s.site).collect();
        sites.sort_unstable();
        sites.dedup();
        sites
    }

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
    trace: &'a PartialTrace,
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
