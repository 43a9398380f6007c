//! The versioned layout of an epcache segment: the header, where each table lives, how entries
//! are encoded in 64-bit words, and the validation a reader runs before trusting any of it.
//!
//! Every multi-byte field is a naturally aligned atomic word in native byte order. The target
//! writes the header, the configuration, region and data-structure tables, the strings and the
//! results; the tool writes request slots, request flags, the halting point and the release word.
//!
//! # The protocol
//!
//! - The target creates a private segment (mode 0600) and marks it for removal at once, so it
//!   vanishes when the last process detaches or dies, whoever goes first. Tools attach by id
//!   (Linux allows it until the last detach) after checking its owner and mode, and validate
//!   the whole header before they use anything.
//! - The state word reads `Starting` until the target's regions and data structures are
//!   registered, then `Running`, or first `WaitingForTool` when `EPCACHE_WAIT` asks, so a tool
//!   never sees a target that is about to wait at start as `Running`. Going to `Running` is no
//!   halt: a tool that caches the state must read the word again to see it.
//! - The target publishes table entries before their count (Release), and writes each result
//!   block as a seqlock (odd sequence while writing).
//! - A tool claims a request slot by CAS (free, cancelled or rejected to claimed, generation
//!   plus one), fills it, stores `Pending` (Release), sets the slot's bit in the region's flag
//!   word, sets `CAPTURE_HINT`, then bumps `TOOL_SEQUENCE` (Release). Every cancel and every
//!   change of the halting point bumps it too: a target boundary that sees the sequence
//!   unchanged knows nothing new is armed.
//! - At a region entry the target sees the flag, loads the slot (Acquire), validates it and
//!   marks it `Active`, or `Rejected` when it can never serve it (a freed data structure, more
//!   buckets than a slot holds, unknown analysis bits, a level it does not simulate); one whose
//!   bytes do not exist yet (an unallocated allocatable, a site with no live block) stays
//!   pending. The tool refuses the same requests at `submit`, with the reason.
//! - Halting: the tool writes the halting point; the target that meets it writes where it is,
//!   sets `Halted`, bumps the halt generation and wakes it (futex). The tool waits on that word
//!   in 100 ms slices to notice a dead target (pid and start time from /proc), and releases by
//!   storing the generation into the release word and waking it. The target waits in 1 s
//!   slices, says so on stderr from [`crate::target::WAIT_NOTICE_INTERVAL`] on, and goes on by
//!   itself once no tool is attached: nothing leaves a program halted for ever.

use std::sync::atomic::{AtomicU64, Ordering};

use super::sysv::{View, ViewError};
use epcache_sim::monitor::Event;
use epcache_sim::ranges::AddressRange;

/// First word of every epcache segment.
pub const MAGIC: u64 = u64::from_le_bytes(*b"EPCACHE\x01");
/// Bumped whenever the meaning of any byte changes; readers refuse other versions.
pub const LAYOUT_VERSION: u32 = 8;
/// Bytes before the first table.
pub const HEADER_BYTES: usize = 256;
/// Request slots are bits of one 64-bit flag word per region, so at most 64.
pub const MAX_REQUEST_SLOTS: u32 = 64;
/// Words before a result block's rows: sequence, generation and row count, buckets per row,
/// text length and kind, and the histogram's [`BucketGeometry`] (see [`write_result`]).
pub const RESULT_HEADER_WORDS: usize = 7;
/// Words before a row's buckets: whose row it is, instances, total.
pub const ROW_HEADER_WORDS: usize = 3;
/// Upper bound on buckets per request, so a hostile header cannot make a reader allocate gigabytes.
pub const MAX_BUCKETS_PER_SLOT: u32 = 1 << 20;
/// Upper bound on a result block's words (32 MiB), for the same reason.
pub const MAX_RESULT_WORDS: u32 = 1 << 22;

/// Byte offsets of the header fields.
pub mod header {
    /// u64 [`super::MAGIC`].
    pub const MAGIC: usize = 0;
    /// u32 layout version.
    pub const VERSION: usize = 8;
    /// u32 header size in bytes.
    pub const HEADER_SIZE: usize = 12;
    /// u64 total segment bytes the layout uses.
    pub const TOTAL_SIZE: usize = 16;
    /// u32 target pid.
    pub const TARGET_PID: usize = 24;
    /// u64 target start time (clock ticks after boot, /proc/PID/stat field 22): pid reuse check.
    pub const TARGET_START_TIME: usize = 32;
    /// u32 [`super::TargetState`], written by the target.
    pub const TARGET_STATE: usize = 40;
    /// u32 bumped by the tool whenever it changed requests or the halting point (futex word).
    pub const TOOL_SEQUENCE: usize = 44;
    /// u64 bumped by the target while it waits, so a tool sees it is alive.
    pub const HEARTBEAT: usize = 48;
    /// u32 bumped by the target each time it halts or exits (futex word the tool waits on).
    pub const HALT_GENERATION: usize = 56;
    /// u32 the tool sets to the halt generation it releases (futex word the target waits on).
    pub const RELEASE_GENERATION: usize = 60;
    /// u64 halting point: region (bits 0..32), boundary (bits 32..40), armed (bit 40), or
    /// taken ([`POINT_TAKEN`]) while the thread that matched it is halted there.
    pub const HALTING_POINT: usize = 64;
    /// u32 boundaries the halting point lets pass before halting.
    pub const HALT_SKIP: usize = 72;
    /// u64 where the target halted: region (bits 0..32), boundary (bits 32..40), and the
    /// thread that halted ([`super::HaltingThread`], bits 40..64).
    pub const HALTED_AT: usize = 80;
    /// u32 published regions.
    pub const REGION_COUNT: usize = 88;
    /// u32 published data structures.
    pub const DATA_STRUCTURE_COUNT: usize = 92;
    /// u32 string bytes used.
    pub const STRINGS_USED: usize = 96;
    /// u32 counters in the simulated counter array.
    pub const COUNTERS: usize = 100;
    /// u64 the cache spec the target simulates, as a string reference (offset | length << 32);
    /// 0 until the target publishes it.
    pub const CACHE_SPEC: usize = 104;
    /// u32 written by the tool after every change: nonzero when it may have armed anything (a
    /// request, a halting point, a step). The target's dual-compiled functions run their
    /// instrumented copies while it is nonzero; only a hint, every armed check is made again.
    pub const CAPTURE_HINT: usize = 112;
    /// u32 histogram buckets one request may ask for (at most one row of them fits a result
    /// block, see [`super::write_result`]).
    pub const MAX_BUCKETS: usize = 116;
    /// u32 the cores of the machine the target's threads are (`EPCACHE_CORES`), written with the
    /// cache spec; 0 when each thread simulates a hierarchy of its own.
    pub const CORES: usize = 120;
    /// Table descriptors: per [`super::Table`], u64 offset, u32 capacity, u32 entry bytes.
    pub const TABLES: usize = 128;
}

/// What a target simulates, as it publishes it for tools to describe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublishedModel {
    /// The cache spec, as the user gave it.
    pub spec: String,
    /// Counters in the simulated counter array.
    pub counters: u32,
    /// Cores of the machine the threads are (1 to `epcache_sim::cache::MAX_CORES`), or 0 when
    /// each thread simulates a hierarchy of its own.
    pub cores: u32,
}

/// The tables of a segment, in descriptor order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Table {
    /// The configuration hash table: (file, line) → region, request flags.
    Config,
    /// Regions: key, kind, name.
    Regions,
    /// Data structures: address range, kind, name.
    DataStructures,
    /// UTF-8 names, referenced by offset and length.
    Strings,
    /// Request slots written by the tool.
    RequestSlots,
    /// One result block per request slot.
    Results,
    /// The one trace block ([`TRACE_BLOCK_WORDS`]): a tool's order to record a partial trace
    /// and what became of it.
    Trace,
}

impl Table {
    /// All tables, in descriptor order.
    pub const ALL: [Table; 7] = [
        Table::Config,
        Table::Regions,
        Table::DataStructures,
        Table::Strings,
        Table::RequestSlots,
        Table::Results,
        Table::Trace,
    ];

    fn descriptor(self) -> usize {
        header::TABLES + 16 * self as usize
    }

    fn fixed_entry_bytes(self) -> Option<usize> {
        match self {
            Table::Config => Some(CONFIG_ENTRY_WORDS * 8),
            Table::Regions => Some(REGION_ENTRY_WORDS * 8),
            Table::DataStructures => Some(DATA_STRUCTURE_ENTRY_WORDS * 8),
            Table::Strings => Some(1),
            Table::RequestSlots => Some(SLOT_WORDS * 8),
            Table::Results => None,
            Table::Trace => Some(TRACE_BLOCK_WORDS * 8),
        }
    }
}

impl std::fmt::Display for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Table::Config => "configuration table",
            Table::Regions => "region table",
            Table::DataStructures => "data-structure table",
            Table::Strings => "string area",
            Table::RequestSlots => "request slots",
            Table::Results => "result space",
            Table::Trace => "trace block",
        })
    }
}

/// Words per configuration-table entry: key, region index + 1 (0 = empty), request flags.
pub const CONFIG_ENTRY_WORDS: usize = 3;
/// Words per region entry: key, name (offset | length << 32), kind | config slot << 32, source
/// file name (offset | length << 32).
pub const REGION_ENTRY_WORDS: usize = 4;
/// Words per data-structure entry: start, length, name, kind | live << 32, the allocation site
/// ([`SiteKey::to_word`], 0 for none), the shape's header ([`Shape`]: element bytes | rank << 32
/// | column-major << 40, 0 when the type is unknown), then each dimension's lower bound (as
/// `i64`) and extent, [`MAX_SHAPE_RANK`] of them, then the allocation context
/// ([`DATA_STRUCTURE_CONTEXT_WORD`]).
pub const DATA_STRUCTURE_ENTRY_WORDS: usize = 7 + 2 * MAX_SHAPE_RANK;
/// The data-structure entry word naming a heap block's allocation context: a string (offset |
/// length << 32, 0 for none) of `file:line` frames separated by newlines, innermost first (the
/// allocator's call, through the program's wrappers, to the line that asked and its callers).
pub const DATA_STRUCTURE_CONTEXT_WORD: usize = 6 + 2 * MAX_SHAPE_RANK;
/// Dimensions a data-structure entry holds: Fortran 90's limit. An array of higher rank is
/// published without its shape.
pub const MAX_SHAPE_RANK: usize = 7;
/// Words per request slot: word 0 is the [`SlotState`] and generation, words 1 to 6 the
/// [`RequestSpec`], word 7 the binding the target writes ([`SLOT_BINDING_WORD`]), words 8 and 9
/// the [`SlotOwner`], words 10 to 25 a by-field request's member table ([`FieldSpans`]).
pub const SLOT_WORDS: usize = field_spans::FIELD_HEADER_WORD + 1 + field_spans::FIELD_SPAN_WORDS;

/// How big each table is; fixed when the segment is created.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capacities {
    /// Regions that can be registered.
    pub regions: u32,
    /// Data structures that can be registered.
    pub data_structures: u32,
    /// Requests that can be attached at once (at most [`MAX_REQUEST_SLOTS`]).
    pub request_slots: u32,
    /// Histogram buckets one request may ask for.
    pub buckets_per_slot: u32,
    /// Words of each request's result block: its header, one row per thread (or one for all
    /// threads) of [`ROW_HEADER_WORDS`] plus the buckets, then the analysis report's text. At
    /// least one row of `buckets_per_slot` buckets must fit.
    pub result_words: u32,
    /// Bytes for region and data-structure names.
    pub string_bytes: u32,
}

impl Default for Capacities {
    fn default() -> Self {
        Capacities {
            regions: 4096,
            data_structures: 4096,
            request_slots: 64,
            buckets_per_slot: 1024,
            // 64 KiB a slot, 4 MiB for 64 slots, touched only as results are written: 7 rows
            // of the largest histogram, 2,000 rows of a static count, or 60 KB of report.
            result_words: 8192,
            string_bytes: 256 * 1024,
        }
    }
}

/// Where one table lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TableSpan {
    /// Byte offset from the segment start (8-aligned).
    pub offset: usize,
    /// Number of entries (bytes, for the string area).
    pub capacity: usize,
    /// Bytes per entry.
    pub entry_bytes: usize,
}

impl TableSpan {
    /// Byte offset of entry `index` (callers check `index < capacity`).
    pub fn entry(&self, index: usize) -> usize {
        self.offset + index * self.entry_bytes
    }

    fn end(&self) -> Option<usize> {
        self.capacity
            .checked_mul(self.entry_bytes)?
            .checked_add(self.offset)
    }
}

/// Something about a segment's bytes that is not an epcache layout we understand.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LayoutError {
    /// Fewer bytes than a header.
    #[error(
        "segment is {len} bytes, smaller than an epcache header ({HEADER_BYTES}); the id names some other program's segment"
    )]
    TooSmall {
        /// Segment size.
        len: usize,
    },
    /// The first word is not [`MAGIC`].
    #[error(
        "segment magic is {found:#018x}, not epcache's {MAGIC:#018x}; the id names some other program's segment"
    )]
    BadMagic {
        /// What was there.
        found: u64,
    },
    /// A layout version this build does not know.
    #[error(
        "segment layout version {found}, this build reads version {LAYOUT_VERSION}; use an epcache tool built from the same release as the target"
    )]
    UnsupportedVersion {
        /// What was there.
        found: u32,
    },
    /// A header field with an impossible value.
    #[error(
        "segment header field `{field}` holds {value}, which is impossible ({why}); the segment is corrupt"
    )]
    BadHeaderField {
        /// Field name.
        field: &'static str,
        /// Its value.
        value: u64,
        /// What it should be.
        why: &'static str,
    },
    /// A table descriptor that does not fit the segment or the format.
    #[error(
        "{table} descriptor (offset {offset}, capacity {capacity}, entry {entry_bytes} bytes) is invalid: {why}; the segment is corrupt"
    )]
    BadTable {
        /// Which table.
        table: Table,
        /// Declared offset.
        offset: u64,
        /// Declared capacity.
        capacity: u32,
        /// Declared entry size.
        entry_bytes: u32,
        /// What is wrong.
        why: &'static str,
    },
    /// Two tables claim the same bytes.
    #[error("{first} and {second} overlap; the segment is corrupt")]
    Overlap {
        /// One table.
        first: Table,
        /// The other.
        second: Table,
    },
    /// A count or index read from the segment points past its table.
    #[error("{table}: {what} {value} is out of range (limit {limit}); the segment is corrupt")]
    BadIndex {
        /// Which table.
        table: Table,
        /// What the number is.
        what: &'static str,
        /// The number.
        value: u64,
        /// The exclusive limit.
        limit: u64,
    },
    /// A result whose bucket width and sizes do not describe its buckets.
    #[error(
        "a result's buckets of {bucket_bytes} bytes over {smallest} to {largest} bytes do not fit its {buckets} buckets per row; the segment is corrupt"
    )]
    BadGeometry {
        /// Bucket width.
        bucket_bytes: u64,
        /// Smallest instance's bytes.
        smallest: u64,
        /// Largest instance's bytes.
        largest: u64,
        /// Buckets per row.
        buckets: u64,
    },
    /// A name that is out of the string area or not UTF-8.
    #[error("name at string offset {offset}, length {len}: {why}; the segment is corrupt")]
    BadString {
        /// Offset into the string area.
        offset: u32,
        /// Length.
        len: u32,
        /// What is wrong.
        why: &'static str,
    },
    /// A by-field request whose member table is malformed.
    #[error("a by-field request's member table: {why}")]
    BadFields {
        /// What is wrong with it.
        why: String,
    },
    /// An enumerated field with an unknown value.
    #[error("{what} holds unknown value {value}; the segment is corrupt or from a newer epcache")]
    BadEnum {
        /// What the field is.
        what: &'static str,
        /// Its value.
        value: u64,
    },
    /// Capacities that cannot be laid out.
    #[error("cannot lay out a segment: {why}")]
    BadCapacities {
        /// What is wrong.
        why: String,
    },
    /// An access the view refused (only reachable through a bug, since offsets are validated).
    #[error(transparent)]
    View(#[from] ViewError),
}

/// A validated description of where everything is; all offsets are in bounds of the view it
/// was made from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// Bytes the layout uses.
    pub total: usize,
    spans: [TableSpan; 7],
    max_buckets: u32,
}

impl Layout {
    /// Plans a layout for `caps`: tables one after another, 8-aligned, after the header.
    pub fn plan(caps: &Capacities) -> Result<Layout, LayoutError> {
        let bad = |why: String| LayoutError::BadCapacities { why };
        if caps.request_slots == 0 || caps.request_slots > MAX_REQUEST_SLOTS {
            return Err(bad(format!(
                "{} request slots; use 1 to {MAX_REQUEST_SLOTS}",
                caps.request_slots
            )));
        }
        if caps.buckets_per_slot == 0 || caps.buckets_per_slot > MAX_BUCKETS_PER_SLOT {
            return Err(bad(format!(
                "{} buckets per slot; use 1 to {MAX_BUCKETS_PER_SLOT}",
                caps.buckets_per_slot
            )));
        }
        let one_row = RESULT_HEADER_WORDS + ROW_HEADER_WORDS + caps.buckets_per_slot as usize;
        if (caps.result_words as usize) < one_row || caps.result_words > MAX_RESULT_WORDS {
            return Err(bad(format!(
                "{} words per result block; use {one_row} (one row of {} buckets) to {MAX_RESULT_WORDS}",
                caps.result_words, caps.buckets_per_slot
            )));
        }
        if caps.regions == 0 || caps.regions > 1 << 24 {
            return Err(bad(format!("{} regions; use 1 to 2^24", caps.regions)));
        }
        let config_capacity = (caps.regions as usize * 2).next_power_of_two();
        let capacities = [
            config_capacity,
            caps.regions as usize,
            caps.data_structures as usize,
            caps.string_bytes as usize,
            caps.request_slots as usize,
            caps.request_slots as usize,
            1,
        ];
        let result_bytes = caps.result_words as usize * 8;
        let mut offset = HEADER_BYTES;
        let mut spans = [TableSpan {
            offset: 0,
            capacity: 0,
            entry_bytes: 0,
        }; 7];
        for (i, table) in Table::ALL.into_iter().enumerate() {
            let entry_bytes = table.fixed_entry_bytes().unwrap_or(result_bytes);
            spans[i] = TableSpan {
                offset,
                capacity: capacities[i],
                entry_bytes,
            };
            offset = (offset + capacities[i] * entry_bytes).next_multiple_of(8);
        }
        Ok(Layout {
            total: offset,
            spans,
            max_buckets: caps.buckets_per_slot,
        })
    }

    /// Where `table` lives.
    /// Whether a tool asked for anything: a request waiting or being served in any slot, or a
    /// halting point (or step) armed or being taken. A word that cannot be read counts as armed. Costs one
    /// load per request slot.
    pub fn anything_armed(&self, view: &View) -> bool {
        let halting = view
            .load_u64(header::HALTING_POINT, Ordering::Acquire)
            .map_or(true, |point| point & (POINT_ARMED | POINT_TAKEN) != 0);
        if halting {
            return true;
        }
        (0..self.span(Table::RequestSlots).capacity).any(|slot| {
            self.entry_words(view, Table::RequestSlots, slot)
                .map_or(true, |words| {
                    matches!(
                        SlotState::from_word(words[0].load(Ordering::Acquire)),
                        Ok(SlotState::Pending | SlotState::Active)
                    )
                })
        })
    }

    pub fn span(&self, table: Table) -> TableSpan {
        self.spans[table as usize]
    }

    /// Histogram buckets one request may ask for.
    pub fn buckets_per_slot(&self) -> usize {
        self.max_buckets as usize
    }

    /// Words of one result block.
    pub fn result_words(&self) -> usize {
        self.span(Table::Results).entry_bytes / 8
    }

    /// Writes the header of a freshly created (zeroed) segment. The magic goes last, with
    /// Release, so a reader that sees it also sees every other header field.
    pub fn write_header(&self, view: &View, pid: u32, start_time: u64) -> Result<(), ViewError> {
        view.u32_at(header::VERSION)?
            .store(LAYOUT_VERSION, Ordering::Relaxed);
        view.u32_at(header::HEADER_SIZE)?
            .store(HEADER_BYTES as u32, Ordering::Relaxed);
        view.u64_at(header::TOTAL_SIZE)?
            .store(self.total as u64, Ordering::Relaxed);
        view.u32_at(header::TARGET_PID)?
            .store(pid, Ordering::Relaxed);
        view.u64_at(header::TARGET_START_TIME)?
            .store(start_time, Ordering::Relaxed);
        view.u32_at(header::MAX_BUCKETS)?
            .store(self.max_buckets, Ordering::Relaxed);
        for table in Table::ALL {
            let span = self.span(table);
            let d = table.descriptor();
            view.u64_at(d)?.store(span.offset as u64, Ordering::Relaxed);
            view.u32_at(d + 8)?
                .store(span.capacity as u32, Ordering::Relaxed);
            view.u32_at(d + 12)?
                .store(span.entry_bytes as u32, Ordering::Relaxed);
        }
        view.u64_at(header::MAGIC)?.store(MAGIC, Ordering::Release);
        Ok(())
    }

    /// Reads and checks the header of `view`: magic, version, sizes, and that every table is
    /// aligned, in bounds, of the right entry size and disjoint from the others. Never panics.
    pub fn validate(view: &View) -> Result<Layout, LayoutError> {
        if view.len() < HEADER_BYTES {
            return Err(LayoutError::TooSmall { len: view.len() });
        }
        let magic = view.load_u64(header::MAGIC, Ordering::Acquire)?;
        if magic != MAGIC {
            return Err(LayoutError::BadMagic { found: magic });
        }
        let version = view.load_u32(header::VERSION, Ordering::Relaxed)?;
        if version != LAYOUT_VERSION {
            return Err(LayoutError::UnsupportedVersion { found: version });
        }
        let header_size = view.load_u32(header::HEADER_SIZE, Ordering::Relaxed)?;
        if header_size as usize != HEADER_BYTES {
            return Err(LayoutError::BadHeaderField {
                field: "header size",
                value: header_size.into(),
                why: "must be 256",
            });
        }
        let total = view.load_u64(header::TOTAL_SIZE, Ordering::Relaxed)?;
        if total > view.len() as u64 || total < HEADER_BYTES as u64 {
            return Err(LayoutError::BadHeaderField {
                field: "total size",
                value: total,
                why: "larger than the segment or smaller than the header",
            });
        }
        let total = total as usize;
        let pid = view.load_u32(header::TARGET_PID, Ordering::Relaxed)?;
        if pid == 0 || pid > i32::MAX as u32 {
            return Err(LayoutError::BadHeaderField {
                field: "target pid",
                value: pid.into(),
                why: "not a process id",
            });
        }
        let mut spans = [TableSpan {
            offset: 0,
            capacity: 0,
            entry_bytes: 0,
        }; 7];
        for table in Table::ALL {
            let d = table.descriptor();
            let offset = view.load_u64(d, Ordering::Relaxed)?;
            let capacity = view.load_u32(d + 8, Ordering::Relaxed)?;
            let entry_bytes = view.load_u32(d + 12, Ordering::Relaxed)?;
            let bad = |why| LayoutError::BadTable {
                table,
                offset,
                capacity,
                entry_bytes,
                why,
            };
            let expected = table.fixed_entry_bytes();
            if let Some(expected) = expected {
                if entry_bytes as usize != expected {
                    return Err(bad("entry size differs from this layout version's"));
                }
            } else if entry_bytes % 8 != 0
                || (entry_bytes as usize) < (RESULT_HEADER_WORDS + ROW_HEADER_WORDS + 1) * 8
                || entry_bytes as usize > MAX_RESULT_WORDS as usize * 8
            {
                return Err(bad(
                    "result blocks must hold their header and one row of at least one bucket, in at most 2^22 words",
                ));
            }
            if offset % 8 != 0 {
                return Err(bad("offset is not 8-aligned"));
            }
            if offset < HEADER_BYTES as u64 {
                return Err(bad("offset lies inside the header"));
            }
            let span = TableSpan {
                offset: offset as usize,
                capacity: capacity as usize,
                entry_bytes: entry_bytes as usize,
            };
            if offset > total as u64 || span.end().is_none_or(|end| end > total) {
                return Err(bad("table extends past the segment's total size"));
            }
            match table {
                Table::Config if !capacity.is_power_of_two() => {
                    return Err(bad("capacity must be a power of two"));
                }
                Table::RequestSlots | Table::Results
                    if capacity == 0 || capacity > MAX_REQUEST_SLOTS =>
                {
                    return Err(bad("there must be 1 to 64 request slots"));
                }
                Table::Regions if capacity == 0 => {
                    return Err(bad("there must be room for a region"));
                }
                Table::Trace if capacity != 1 => {
                    return Err(bad("there is exactly one trace block"));
                }
                _ => {}
            }
            spans[table as usize] = span;
        }
        if spans[Table::Results as usize].capacity != spans[Table::RequestSlots as usize].capacity {
            let r = spans[Table::Results as usize];
            return Err(LayoutError::BadTable {
                table: Table::Results,
                offset: r.offset as u64,
                capacity: r.capacity as u32,
                entry_bytes: r.entry_bytes as u32,
                why: "needs exactly one result block per request slot",
            });
        }
        if spans[Table::Config as usize].capacity < spans[Table::Regions as usize].capacity {
            let c = spans[Table::Config as usize];
            return Err(LayoutError::BadTable {
                table: Table::Config,
                offset: c.offset as u64,
                capacity: c.capacity as u32,
                entry_bytes: c.entry_bytes as u32,
                why: "has fewer entries than there can be regions",
            });
        }
        for (i, a) in Table::ALL.into_iter().enumerate() {
            for b in Table::ALL.into_iter().skip(i + 1) {
                let (sa, sb) = (spans[a as usize], spans[b as usize]);
                // Both ends were checked above, so these cannot overflow.
                let (ea, eb) = (
                    sa.offset + sa.capacity * sa.entry_bytes,
                    sb.offset + sb.capacity * sb.entry_bytes,
                );
                if sa.offset < eb && sb.offset < ea {
                    return Err(LayoutError::Overlap {
                        first: a,
                        second: b,
                    });
                }
            }
        }
        let max_buckets = view.load_u32(header::MAX_BUCKETS, Ordering::Relaxed)?;
        let block_words = spans[Table::Results as usize].entry_bytes / 8;
        if max_buckets == 0
            || max_buckets > MAX_BUCKETS_PER_SLOT
            || RESULT_HEADER_WORDS + ROW_HEADER_WORDS + max_buckets as usize > block_words
        {
            return Err(LayoutError::BadHeaderField {
                field: "buckets per request",
                value: max_buckets.into(),
                why: "must be 1 to 2^20, and one row of them must fit a result block",
            });
        }
        Ok(Layout {
            total,
            spans,
            max_buckets,
        })
    }

    /// `count` checked against `table`'s capacity.
    pub fn checked_count(&self, table: Table, count: u32) -> Result<usize, LayoutError> {
        let limit = self.span(table).capacity;
        if count as usize > limit {
            return Err(LayoutError::BadIndex {
                table,
                what: "published count",
                value: count.into(),
                limit: limit as u64,
            });
        }
        Ok(count as usize)
    }

    /// The words of entry `index` of `table`, after checking the index.
    pub fn entry_words<'v>(
        &self,
        view: &'v View,
        table: Table,
        index: usize,
    ) -> Result<&'v [AtomicU64], LayoutError> {
        let span = self.span(table);
        if index >= span.capacity {
            return Err(LayoutError::BadIndex {
                table,
                what: "index",
                value: index as u64,
                limit: span.capacity as u64,
            });
        }
        Ok(view.u64_slice(span.entry(index), span.entry_bytes / 8)?)
    }

    /// The UTF-8 name at (`offset`, `len`) in the string area, checked.
    pub fn read_name(&self, view: &View, offset: u32, len: u32) -> Result<String, LayoutError> {
        let strings = self.span(Table::Strings);
        let bad = |why| LayoutError::BadString { offset, len, why };
        let end = offset as u64 + len as u64;
        if end > strings.capacity as u64 {
            return Err(bad("past the end of the string area"));
        }
        let mut bytes = vec![0; len as usize];
        view.copy_out(strings.offset + offset as usize, &mut bytes)?;
        String::from_utf8(bytes).map_err(|_| bad("not UTF-8"))
    }
}

/// Index of a region in the region table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RegionIndex(pub u32);

/// Index of a data structure in the data-structure table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DataStructureIndex(pub u32);

/// What the target is doing (header word `TARGET_STATE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetState {
    /// Creating its tables.
    Starting = 0,
    /// Running the program.
    Running = 1,
    /// Blocked at start until a tool releases it (`EPCACHE_WAIT`).
    WaitingForTool = 2,
    /// Blocked at a halting point until a tool releases it.
    Halted = 3,
    /// Finished; the segment holds its last results.
    Exited = 4,
}

impl TargetState {
    /// Decodes the state word.
    pub fn from_word(word: u32) -> Result<Self, LayoutError> {
        Ok(match word {
            0 => TargetState::Starting,
            1 => TargetState::Running,
            2 => TargetState::WaitingForTool,
            3 => TargetState::Halted,
            4 => TargetState::Exited,
            value => {
                return Err(LayoutError::BadEnum {
                    what: "target state",
                    value: value.into(),
                });
            }
        })
    }
}

/// Which side of a region a halting point or halt is at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Boundary {
    /// Where the region starts.
    Entry = 1,
    /// Where the region ends.
    Exit = 2,
}

impl Boundary {
    /// Decodes a boundary byte.
    pub fn from_word(word: u64) -> Result<Self, LayoutError> {
        match word {
            1 => Ok(Boundary::Entry),
            2 => Ok(Boundary::Exit),
            value => Err(LayoutError::BadEnum {
                what: "boundary",
                value,
            }),
        }
    }
}

/// Region index in a halting point meaning "the next boundary of any region" (stepping).
pub const ANY_REGION: u32 = u32::MAX;

/// Boundary bits of a halting point that match either side of a region (a step to the next
/// boundary of any kind); see [`HaltingPoint::step_word`].
pub const EITHER_BOUNDARY: u64 = Boundary::Entry as u64 | Boundary::Exit as u64;

/// The armed bit of a halting point word.
pub const POINT_ARMED: u64 = 1 << 40;
/// The bit that replaces [`POINT_ARMED`] while the thread that matched the point is halted
/// there: other threads at the same boundary wait for that halt and look again at what the tool
/// armed next. The halted thread clears the word when released, unless a tool set another.
pub const POINT_TAKEN: u64 = 1 << 41;

/// Where the target should stop next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HaltingPoint {
    /// The region, or `None` for any region (step to the next boundary).
    pub region: Option<RegionIndex>,
    /// Entry or exit.
    pub boundary: Boundary,
    /// Matching boundaries to let pass before halting (0: halt at the next one).
    pub skip: u32,
}

impl HaltingPoint {
    /// The packed header word (armed).
    pub fn to_word(&self) -> u64 {
        let region = self.region.map_or(ANY_REGION, |r| r.0);
        u64::from(region) | (self.boundary as u64) << 32 | POINT_ARMED
    }

    /// The packed header word (armed) of a point at either boundary of `region` (or any region).
    pub fn step_word(region: Option<RegionIndex>) -> u64 {
        u64::from(region.map_or(ANY_REGION, |r| r.0)) | EITHER_BOUNDARY << 32 | POINT_ARMED
    }
}

/// Packs a position (region, boundary) and the thread that halted there into a word, as
/// `HALTED_AT` holds it.
pub fn position_word(region: u32, boundary: Boundary, thread: HaltingThread) -> u64 {
    u64::from(region) | (boundary as u64) << 32 | thread.bits() << 40
}

/// The thread that halted at a halting point, as far as the target knows it: its index in the
/// order threads began capturing, and its OpenMP thread number. Each is kept plus one in 12 bits
/// of `HALTED_AT` (0: not known; past 4094 it is not kept), so a segment written before the
/// field says nothing rather than thread 0.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HaltingThread {
    /// The runtime's index of the thread (0 for the first that captured).
    pub index: Option<u32>,
    /// Its OpenMP thread number within its team.
    pub openmp: Option<u32>,
}

impl HaltingThread {
    const FIELD: u64 = 0xfff;

    fn bits(self) -> u64 {
        let field = |v: Option<u32>| {
            v.map(|v| u64::from(v) + 1)
                .filter(|&v| v <= Self::FIELD)
                .unwrap_or(0)
        };
        field(self.index) | field(self.openmp) << 12
    }

    /// The thread a `HALTED_AT` word names.
    pub fn from_position_word(word: u64) -> HaltingThread {
        let field = |shift: u32| match word >> shift & Self::FIELD {
            0 => None,
            v => Some(v as u32 - 1),
        };
        HaltingThread {
            index: field(40),
            openmp: field(52),
        }
    }
}

/// Kind of a region.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RegionKind {
    /// A function, found automatically.
    Function = 1,
    /// A marker the programmer placed.
    Marker = 2,
}

impl RegionKind {
    fn from_word(word: u64) -> Result<Self, LayoutError> {
        match word {
            1 => Ok(RegionKind::Function),
            2 => Ok(RegionKind::Marker),
            value => Err(LayoutError::BadEnum {
                what: "region kind",
                value,
            }),
        }
    }
}

/// Kind of a data structure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DataStructureKind {
    /// A global or static, from debug information.
    Global = 1,
    /// A heap array registered through the API.
    HeapRegistered = 2,
    /// Heap blocks grouped by allocation site.
    AllocationSite = 3,
    /// A Fortran ALLOCATABLE or POINTER array, named by the program: its bytes are the data its
    /// descriptor points to, and it is not live while unallocated (unassociated). A new entry of
    /// the same name follows it when it is allocated again at another size.
    Allocatable = 4,
}

impl DataStructureKind {
    fn from_word(word: u64) -> Result<Self, LayoutError> {
        match word {
            1 => Ok(DataStructureKind::Global),
            2 => Ok(DataStructureKind::HeapRegistered),
            3 => Ok(DataStructureKind::AllocationSite),
            4 => Ok(DataStructureKind::Allocatable),
            value => Err(LayoutError::BadEnum {
                what: "data-structure kind",
                value,
            }),
        }
    }
}

/// A region as the region table describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegionInfo {
    /// Its index.
    pub index: RegionIndex,
    /// File id of its key.
    pub file_id: u32,
    /// First line of its key.
    pub line: u32,
    /// Function or marker.
    pub kind: RegionKind,
    /// Readable name.
    pub name: String,
    /// Source file of its key (empty when unknown).
    pub file: String,
}

/// The source line a heap block was allocated at, as a request names it: a 32-bit FNV-1a hash
/// of the file's base name (`prog.c`, as heap blocks are named) and the line; for one of
/// several arrays allocated in one statement (`t@heat.f90:6`), a tag of the array's name in the
/// line word's top byte ([`SiteKey::of_object`]). A key without a tag answers every array of its
/// line, and a key with one the blocks the runtime could not tell apart by array, which carry
/// none ([`SiteKey::answers`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SiteKey {
    /// [`SiteKey::file_hash`] of the file's base name.
    pub file: u32,
    /// The line of the allocating call (bits 0..24), and the array's tag (bits 24..32).
    pub line: u32,
}

/// The bits of [`SiteKey::line`] that hold the line.
const SITE_LINE_MASK: u32 = 0x00ff_ffff;

impl SiteKey {
    /// The key of array `object`, one of several allocated in one statement at `file`:`line`:
    /// the line's key with a tag of 1 to 255 from the name's hash (two arrays of one statement
    /// whose tags collide share a key, as a line's arrays did before).
    pub fn of_object(file: &str, line: u32, object: &str) -> SiteKey {
        let mut key = SiteKey::new(file, line & SITE_LINE_MASK);
        let tag = 1 + Self::file_hash(object) % 255;
        key.line |= tag << 24;
        key
    }

    /// Whether a request for this key binds to a block of key `block`: the same key; or one of
    /// them names the whole line (no tag) and the other an array of it. A block without a tag
    /// is its line's only array (`allocate(t(n))`, which the runtime does not name), or one of
    /// a statement it could not take apart, whose name covers them all.
    pub fn answers(self, block: SiteKey) -> bool {
        self == block
            || (self.file == block.file
                && (self.line & !SITE_LINE_MASK == 0 || block.line & !SITE_LINE_MASK == 0)
                && self.line & SITE_LINE_MASK == block.line & SITE_LINE_MASK)
    }

    /// The key of `file` (a path or a base name: only the base name counts) at `line`.
    pub fn new(file: &str, line: u32) -> SiteKey {
        let base = file.rsplit('/').next().unwrap_or(file);
        SiteKey {
            file: Self::file_hash(base),
            line,
        }
    }

    /// 32-bit FNV-1a of `name`'s bytes.
    pub fn file_hash(name: &str) -> u32 {
        let mut hash: u32 = 0x811c_9dc5;
        for byte in name.bytes() {
            hash ^= u32::from(byte);
            hash = hash.wrapping_mul(0x0100_0193);
        }
        hash
    }

    /// The entry word: file hash | line << 32 (never 0 for a real line).
    pub fn to_word(self) -> u64 {
        u64::from(self.file) | u64::from(self.line) << 32
    }

    /// The key an entry word holds; `None` for 0 or a line 0 (no source line).
    pub fn from_word(word: u64) -> Option<SiteKey> {
        let line = (word >> 32) as u32;
        (line != 0).then_some(SiteKey {
            file: word as u32,
            line,
        })
    }
}

/// One dimension of a data structure's shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dimension {
    /// Its first index (0 in C, 1 by default in Fortran).
    pub lower: i64,
    /// Elements along it.
    pub extent: u64,
}

/// What a data structure's type says about its elements, so that tools can name a histogram's
/// buckets in the array's terms (element indices, rows).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shape {
    /// Bytes of one element (at least 1, at most `u32::MAX`).
    pub element_bytes: u64,
    /// Dimensions in declaration order; empty for a scalar, or an array whose dimensions are
    /// not known (an allocatable before its first allocation). At most [`MAX_SHAPE_RANK`].
    pub dims: Vec<Dimension>,
    /// Whether the first dimension varies fastest in memory (Fortran), rather than the last (C).
    pub column_major: bool,
}

impl Shape {
    /// The shape's header word, or 0 when it cannot be published (an element size of 0 or past
    /// `u32::MAX`, more than [`MAX_SHAPE_RANK`] dimensions).
    fn header_word(&self) -> u64 {
        if self.element_bytes == 0
            || self.element_bytes > u64::from(u32::MAX)
            || self.dims.len() > MAX_SHAPE_RANK
        {
            return 0;
        }
        self.element_bytes | (self.dims.len() as u64) << 32 | u64::from(self.column_major) << 40
    }
}

/// What a data-structure entry says beyond its name, bytes and kind.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DataStructureDetails {
    /// Where a heap block was allocated (for an allocatable, the block it holds now).
    pub site: Option<SiteKey>,
    /// What its type says.
    pub shape: Option<Shape>,
}

impl DataStructureDetails {
    /// Writes the details into words 4 and on of a data-structure entry (the writer's job to
    /// publish them with the live bit's Release store).
    pub fn store(&self, words: &[AtomicU64]) {
        let put = |i: usize, v: u64| {
            if let Some(w) = words.get(i) {
                w.store(v, Ordering::Relaxed);
            }
        };
        put(4, self.site.map_or(0, SiteKey::to_word));
        let header = self.shape.as_ref().map_or(0, Shape::header_word);
        put(5, header);
        let dims = self
            .shape
            .as_ref()
            .filter(|_| header != 0)
            .map(|s| &s.dims[..]);
        for i in 0..MAX_SHAPE_RANK {
            let d = dims.and_then(|d| d.get(i));
            put(6 + 2 * i, d.map_or(0, |d| d.lower as u64));
            put(7 + 2 * i, d.map_or(0, |d| d.extent));
        }
    }

    /// Reads words 4 and on of a data-structure entry, checking the shape's header.
    fn load(words: &[AtomicU64]) -> Result<DataStructureDetails, LayoutError> {
        let get = |i: usize| words.get(i).map_or(0, |w| w.load(Ordering::Relaxed));
        let header = get(5);
        let shape = if header == 0 {
            None
        } else {
            let rank = (header >> 32 & 0xff) as usize;
            if header >> 41 != 0 || header as u32 == 0 {
                return Err(LayoutError::BadEnum {
                    what: "data-structure shape header",
                    value: header,
                });
            }
            if rank > MAX_SHAPE_RANK {
                return Err(LayoutError::BadIndex {
                    table: Table::DataStructures,
                    what: "shape rank",
                    value: rank as u64,
                    limit: MAX_SHAPE_RANK as u64 + 1,
                });
            }
            Some(Shape {
                element_bytes: u64::from(header as u32),
                dims: (0..rank)
                    .map(|i| Dimension {
                        lower: get(6 + 2 * i) as i64,
                        extent: get(7 + 2 * i),
                    })
                    .collect(),
                column_major: header >> 40 & 1 != 0,
            })
        };
        Ok(DataStructureDetails {
            site: SiteKey::from_word(get(4)),
            shape,
        })
    }
}

/// A data structure as the data-structure table describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataStructureInfo {
    /// Its index.
    pub index: DataStructureIndex,
    /// The name the programmer wrote.
    pub name: String,
    /// Its bytes.
    pub range: AddressRange,
    /// Where it came from.
    pub kind: DataStructureKind,
    /// False once unregistered (heap arrays freed), and for an allocatable while it is
    /// unallocated.
    pub live: bool,
    /// Where a heap block was allocated, and what the type says.
    pub details: DataStructureDetails,
    /// A heap block's allocation context: `file:line` frames, innermost first (the
    /// allocator's call first); empty for other structures.
    pub context: Vec<String>,
}

/// Packs a string reference.
pub fn name_word(offset: u32, len: u32) -> u64 {
    u64::from(offset) | u64::from(len) << 32
}

/// Reads and checks region `index`.
pub fn read_region(view: &View, layout: &Layout, index: usize) -> Result<RegionInfo, LayoutError> {
    let w = layout.entry_words(view, Table::Regions, index)?;
    let key = w[0].load(Ordering::Relaxed);
    let name = w[1].load(Ordering::Relaxed);
    let kind = RegionKind::from_word(w[2].load(Ordering::Relaxed) & 0xffff_ffff)?;
    Ok(RegionInfo {
        index: RegionIndex(index as u32),
        file_id: (key >> 32) as u32,
        line: key as u32,
        kind,
        name: layout.read_name(view, name as u32, (name >> 32) as u32)?,
        file: {
            let file = w[3].load(Ordering::Relaxed);
            layout.read_name(view, file as u32, (file >> 32) as u32)?
        },
    })
}

/// Reads and checks data structure `index`.
pub fn read_data_structure(
    view: &View,
    layout: &Layout,
    index: usize,
) -> Result<DataStructureInfo, LayoutError> {
    let w = layout.entry_words(view, Table::DataStructures, index)?;
    let start = w[0].load(Ordering::Relaxed);
    let len = w[1].load(Ordering::Relaxed);
    let name = w[2].load(Ordering::Relaxed);
    let kind_live = w[3].load(Ordering::Relaxed);
    if start.checked_add(len).is_none() {
        return Err(LayoutError::BadIndex {
            table: Table::DataStructures,
            what: "address range length",
            value: len,
            limit: u64::MAX - start,
        });
    }
    Ok(DataStructureInfo {
        index: DataStructureIndex(index as u32),
        name: layout.read_name(view, name as u32, (name >> 32) as u32)?,
        range: AddressRange::new(start, len),
        kind: DataStructureKind::from_word(kind_live & 0xffff_ffff)?,
        live: kind_live >> 32 != 0,
        details: DataStructureDetails::load(w)?,
        context: {
            let context = w[DATA_STRUCTURE_CONTEXT_WORD].load(Ordering::Acquire);
            if context == 0 {
                Vec::new()
            } else {
                layout
                    .read_name(view, context as u32, (context >> 32) as u32)?
                    .split('\n')
                    .map(str::to_owned)
                    .collect()
            }
        },
    })
}

/// State of a request slot (low half of its first word; the high half is its generation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlotState {
    /// Unused.
    Free = 0,
    /// A tool is filling it.
    Claimed = 1,
    /// Filled by a tool, not yet picked up by the target.
    Pending = 2,
    /// The target monitors it.
    Active = 3,
    /// The tool withdrew it; a tool may reuse it.
    Cancelled = 4,
    /// The target found it invalid; a tool may reuse it.
    Rejected = 5,
}

impl SlotState {
    /// Decodes the low half of a slot's first word.
    pub fn from_word(word: u64) -> Result<Self, LayoutError> {
        Ok(match word & 0xffff_ffff {
            0 => SlotState::Free,
            1 => SlotState::Claimed,
            2 => SlotState::Pending,
            3 => SlotState::Active,
            4 => SlotState::Cancelled,
            5 => SlotState::Rejected,
            value => {
                return Err(LayoutError::BadEnum {
                    what: "request slot state",
                    value,
                });
            }
        })
    }
}

/// Packs a slot's state and generation.
pub fn slot_word(state: SlotState, generation: u32) -> u64 {
    state as u64 | u64::from(generation) << 32
}

/// The tool process that placed the request in a slot: words 8 (pid, and the slot generation
/// it claimed, so a reader tells its own claim's owner from a former request's) and 9 (start
/// time, so a later process with the same pid is not taken for it). A tool writes them after
/// claiming the slot and before storing it `Pending` (Release); whoever finds the owner dead may
/// take the slot back ([`super::tool::TargetHandle::reclaim_abandoned`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlotOwner {
    /// Its process id.
    pub pid: u32,
    /// Its start time (clock ticks after boot, /proc/PID/stat field 22).
    pub start_time: u64,
}

impl SlotOwner {
    /// Writes the owner of the request of `generation` into slot words 8 and 9: the start time
    /// first, then the pid word with Release, so a reader that sees this generation's pid word
    /// (Acquire) sees its start time.
    pub fn store(&self, words: &[AtomicU64], generation: u32) {
        if let (Some(pid), Some(start)) = (words.get(8), words.get(9)) {
            start.store(self.start_time, Ordering::Relaxed);
            pid.store(
                u64::from(self.pid) | u64::from(generation) << 32,
                Ordering::Release,
            );
        }
    }

    /// The owner of the request of `generation`; `None` while the words still name a former
    /// request's owner (a claim not yet filled in).
    pub fn load(words: &[AtomicU64], generation: u32) -> Option<SlotOwner> {
        let pid = words.get(8)?.load(Ordering::Acquire);
        if (pid >> 32) as u32 != generation || pid as u32 == 0 {
            return None;
        }
        Some(SlotOwner {
            pid: pid as u32,
            start_time: words.get(9)?.load(Ordering::Relaxed),
        })
    }
}

/// The request-slot word the target writes (the tool only clears it, in
/// [`RequestSpec::store`]): the data structure a request naming a data structure or an
/// allocation site was bound to at its region's last entry.
pub const SLOT_BINDING_WORD: usize = 7;

/// Packs a binding: the data structure's index + 1 (0 while the request waits for one) | the
/// slot's generation << 32, so that a binding written late for a request the tool has since
/// replaced is told apart.
pub fn binding_word(index: DataStructureIndex, generation: u32) -> u64 {
    u64::from(index.0.wrapping_add(1)) | u64::from(generation) << 32
}

/// The data structure a binding word names for the request of `generation`, if any.
pub fn binding_of(word: u64, generation: u32) -> Option<DataStructureIndex> {
    let index = (word as u32).checked_sub(1)?;
    ((word >> 32) as u32 == generation).then_some(DataStructureIndex(index))
}

/// What a request counts in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestTarget {
    /// An explicit address range.
    Range(AddressRange),
    /// A data structure from the table, resolved by the target when the region starts: the
    /// entry that follows it when it is an allocatable allocated again at another size, and
    /// waited for while that is unallocated.
    DataStructure(DataStructureIndex),
    /// The heap blocks allocated at a source line: the target binds the request, at each entry
    /// of the region, to one of the site's live blocks, and waits while there is none.
    AllocationSite {
        /// The site.
        site: SiteKey,
        /// Which of its live blocks.
        block: SiteBlock,
    },
}

/// Which of an allocation site's live blocks a request binds to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SiteBlock {
    /// The one allocated last: a site that allocates its array again follows it to each new
    /// block.
    #[default]
    Latest = 0,
    /// The largest (the latest of those).
    Largest = 1,
}

/// Static count or histogram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// One count for the whole range.
    Static,
    /// Counts per portion of the range.
    Histogram {
        /// Number of portions (at most the segment's buckets per slot).
        buckets: u32,
        /// Bytes per portion; 0 means the range split evenly into `buckets`.
        bucket_bytes: u64,
    },
    /// One count per member of the range's element, summed over every element, and one for the
    /// bytes no member holds (see `field_spans.rs`).
    Fields(FieldSpans),
}

/// How region instances are combined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Aggregation {
    /// Each instance's result replaces the previous one.
    PerInstance = 0,
    /// One result per thread (a row per thread in the result block).
    PerThread = 1,
    /// All instances summed.
    Summed = 2,
}

/// A measurement request, as a tool writes it into a slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestSpec {
    /// The region whose instances are measured.
    pub region: RegionIndex,
    /// Which bytes.
    pub target: RequestTarget,
    /// Which event.
    pub event: Event,
    /// Static or histogram.
    pub mode: Mode,
    /// How instances combine.
    pub aggregation: Aggregation,
    /// Analyses to switch on (bit flags, reserved for the analyses' request encoding).
    pub analyses: u16,
}

impl RequestSpec {
    /// Writes the request into slot words 1..8 (word 0, the state, is the caller's); word 7,
    /// the binding the target writes ([`binding_word`]), starts empty.
    pub fn store(&self, words: &[AtomicU64]) {
        let (kind, ds, start, len) = match self.target {
            RequestTarget::Range(r) => (0u64, 0u64, r.start, r.len()),
            RequestTarget::DataStructure(d) => (1, u64::from(d.0), 0, 0),
            RequestTarget::AllocationSite { site, block } => (2, block as u64, site.to_word(), 0),
        };
        let (mode, buckets, width) = match self.mode {
            Mode::Static => (0u64, 0u64, 0u64),
            Mode::Histogram {
                buckets,
                bucket_bytes,
            } => (1, u64::from(buckets), bucket_bytes),
            Mode::Fields(spans) => {
                spans.store(words);
                (2, spans.buckets(), spans.element_bytes())
            }
        };
        let put = |i: usize, v: u64| words[i].store(v, Ordering::Relaxed);
        put(1, u64::from(self.region.0) | kind << 32);
        put(2, ds | u64::from(self.event.code()) << 32);
        put(3, start);
        put(4, len);
        put(
            5,
            mode | (self.aggregation as u64) << 8 | u64::from(self.analyses) << 16 | buckets << 32,
        );
        put(6, width);
        put(7, 0);
    }

    /// Reads a request back from slot words, checking every field it can check alone.
    pub fn load(words: &[AtomicU64], max_buckets: usize) -> Result<RequestSpec, LayoutError> {
        let get = |i: usize| words.get(i).map_or(0, |w| w.load(Ordering::Relaxed));
        let (w1, w2, w5) = (get(1), get(2), get(5));
        let bad = |what, value| LayoutError::BadEnum { what, value };
        let target = match w1 >> 32 {
            0 => RequestTarget::Range(AddressRange::new(get(3), get(4))),
            1 => RequestTarget::DataStructure(DataStructureIndex(w2 as u32)),
            2 => RequestTarget::AllocationSite {
                site: SiteKey::from_word(get(3)).ok_or(bad("allocation site", get(3)))?,
                block: match w2 as u32 {
                    0 => SiteBlock::Latest,
                    1 => SiteBlock::Largest,
                    v => return Err(bad("site block", v.into())),
                },
            },
            v => return Err(bad("request target kind", v)),
        };
        let event = Event::from_code((w2 >> 32) as u32).ok_or(bad("event code", w2 >> 32))?;
        let buckets = (w5 >> 32) as u32;
        let mode = match w5 & 0xff {
            0 => Mode::Static,
            1 if buckets >= 1 && buckets as usize <= max_buckets => Mode::Histogram {
                buckets,
                bucket_bytes: get(6),
            },
            1 => {
                return Err(LayoutError::BadIndex {
                    table: Table::RequestSlots,
                    what: "histogram bucket count",
                    value: buckets.into(),
                    limit: max_buckets as u64 + 1,
                });
            }
            2 => {
                let spans = FieldSpans::load(words)
                    .map_err(|e| LayoutError::BadFields { why: e.to_string() })?;
                if spans.buckets() as usize > max_buckets || u64::from(buckets) != spans.buckets() {
                    return Err(LayoutError::BadIndex {
                        table: Table::RequestSlots,
                        what: "by-field bucket count",
                        value: buckets.into(),
                        limit: max_buckets as u64 + 1,
                    });
                }
                Mode::Fields(spans)
            }
            v => return Err(bad("request mode", v)),
        };
        let aggregation = match (w5 >> 8) & 0xff {
            0 => Aggregation::PerInstance,
            1 => Aggregation::PerThread,
            2 => Aggregation::Summed,
            v => return Err(bad("aggregation", v)),
        };
        let analyses = (w5 >> 16) as u16;
        if analyses & !analysis_bits::ALL != 0 {
            return Err(bad("analysis bits", u64::from(analyses)));
        }
        Ok(RequestSpec {
            region: RegionIndex(w1 as u32),
            target,
            event,
            mode,
            aggregation,
            analyses,
        })
    }

    /// How many buckets a histogram over `range` takes (`None` for a static count): with
    /// explicit bucket bytes the range decides, before the runtime rounds buckets up to whole
    /// lines (which only makes fewer).
    pub fn histogram_buckets(&self, range: AddressRange) -> Option<u64> {
        match self.mode {
            Mode::Static => None,
            Mode::Histogram {
                bucket_bytes: 0,
                buckets,
            } => Some(u64::from(buckets)),
            Mode::Histogram { bucket_bytes, .. } => Some(range.len().div_ceil(bucket_bytes)),
            Mode::Fields(spans) => Some(spans.buckets()),
        }
    }
}

/// Bits of [`RequestSpec::analyses`]. A request with any of them set also carries the analysis
/// report in its result block, after its counts (see [`write_result`]).
pub mod analysis_bits {
    /// Temporal reuse and spatial use per data structure.
    pub const REUSE: u16 = 1;
    /// Which data structure evicted which.
    pub const EVICTORS: u16 = 2;
    /// Compulsory, capacity and conflict misses.
    pub const MISS_CLASSES: u16 = 4;
    /// Reuse-distance histograms.
    pub const REUSE_DISTANCE: u16 = 8;
    /// Every bit this layout version knows.
    pub const ALL: u16 = 15;
}

/// Whose counts a result row holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowThreads {
    /// Every thread's: the one row of a summed or per-instance result.
    All,
    /// One thread's, by its OS thread id, with its OpenMP thread number where the program has
    /// one, and the runtime's number for it (the order threads began capturing, as the
    /// standalone report's per-thread rows and halts number them) when it is below 255.
    Thread {
        tid: u32,
        openmp: Option<u32>,
        index: Option<u32>,
    },
    /// The threads that did not get a row of their own, summed: the last row of a per-thread
    /// result with more threads than rows fit. Holds how many threads it sums.
    Others(u32),
}

impl RowThreads {
    fn to_word(self) -> u64 {
        match self {
            RowThreads::All => 0,
            // The OpenMP number plus one in bits 40 to 55, the runtime's index plus one in bits
            // 56 to 63 (0: none).
            RowThreads::Thread { tid, openmp, index } => {
                let openmp = openmp.map_or(0, |n| u64::from(n.min(0xfffe)) + 1);
                let index = index.filter(|&i| i < 0xff).map_or(0, |i| u64::from(i) + 1);
                u64::from(tid) | 1 << 32 | openmp << 40 | index << 56
            }
            RowThreads::Others(n) => 2 << 32 | u64::from(n.min(0xff_ffff)) << 40,
        }
    }

    fn from_word(word: u64) -> Result<Self, LayoutError> {
        match word >> 32 & 0xff {
            0 => Ok(RowThreads::All),
            1 => Ok(RowThreads::Thread {
                tid: word as u32,
                openmp: ((word >> 40 & 0xffff) as u32).checked_sub(1),
                index: ((word >> 56) as u32).checked_sub(1),
            }),
            2 => Ok(RowThreads::Others((word >> 40) as u32)),
            value => Err(LayoutError::BadEnum {
                what: "result row kind",
                value,
            }),
        }
    }

    /// Threads the row covers (0 for [`RowThreads::All`], which does not count them).
    pub fn threads(self) -> u32 {
        match self {
            RowThreads::All => 0,
            RowThreads::Thread { .. } => 1,
            RowThreads::Others(n) => n,
        }
    }
}

/// One row of a result: counts of some thread(s) over the region's instances.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResultRow {
    /// Whose counts.
    pub threads: RowThreads,
    /// Region instances it covers.
    pub instances: u64,
    /// Total count of the event in the range.
    pub total: u64,
    /// Per-bucket counts (empty for static requests).
    pub buckets: Vec<u64>,
}

impl ResultRow {
    fn add(&mut self, other: &ResultRow) {
        self.instances += other.instances;
        self.total += other.total;
        if self.buckets.len() < other.buckets.len() {
            self.buckets.resize(other.buckets.len(), 0);
        }
        for (a, b) in self.buckets.iter_mut().zip(&other.buckets) {
            *a += b;
        }
    }
}

/// Text a result carries after its rows.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ResultText {
    /// None: not an analysis request.
    #[default]
    None,
    /// The analysis report, as the JSON of `epcache_sim::analysis::AnalysisReport`.
    Report(String),
    /// Why an analysis request carries no report (it did not fit, the analyses could not run).
    Missing(String),
}

impl ResultText {
    fn kind(&self) -> u64 {
        match self {
            ResultText::None => 0,
            ResultText::Report(_) => 1,
            ResultText::Missing(_) => 2,
        }
    }

    fn text(&self) -> &str {
        match self {
            ResultText::None => "",
            ResultText::Report(t) | ResultText::Missing(t) => t,
        }
    }
}

/// How a histogram's buckets cut the bytes it counted, as the target cut them: the same for
/// every row. A request on an allocatable or an allocation site binds, at each instance of its
/// region, to the data as it is then, which may have another size than at the last instance;
/// its buckets then count the same offsets from the data's start in every instance, as wide as
/// the largest instance needs (see the runtime's `capture::monitoring`). All zero for a static
/// count, a by-field request and a result written before anything was bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BucketGeometry {
    /// Width of every bucket in bytes (the last may cover less data).
    pub bucket_bytes: u64,
    /// Bytes counted in the smallest instance.
    pub smallest: u64,
    /// Bytes counted in the largest instance: the buckets cover offsets `0..largest`.
    pub largest: u64,
}

impl BucketGeometry {
    /// Whether the instances counted data of different sizes.
    pub fn sizes_differ(&self) -> bool {
        self.smallest != self.largest
    }
}

/// A request's latest result, read consistently.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestResult {
    /// Generation of the request it belongs to.
    pub generation: u32,
    /// Its counts: one [`RowThreads::All`] row, or one row per thread for a per-thread request.
    pub rows: Vec<ResultRow>,
    /// How the rows' buckets cut the bytes.
    pub geometry: BucketGeometry,
    /// The analysis report of an analysis request.
    pub text: ResultText,
}

impl RequestResult {
    /// A result of one row for all threads, without text.
    pub fn summed(generation: u32, instances: u64, total: u64, buckets: Vec<u64>) -> Self {
        RequestResult {
            generation,
            rows: vec![ResultRow {
                threads: RowThreads::All,
                instances,
                total,
                buckets,
            }],
            geometry: BucketGeometry::default(),
            text: ResultText::None,
        }
    }

    /// The rows summed: every instance, count and bucket of every thread.
    pub fn sum(&self) -> ResultRow {
        let mut sum = ResultRow {
            threads: RowThreads::All,
            instances: 0,
            total: 0,
            buckets: Vec::new(),
        };
        for row in &self.rows {
            sum.add(row);
        }
        sum
    }

    /// Region instances over all rows.
    pub fn instances(&self) -> u64 {
        self.rows.iter().map(|r| r.instances).sum()
    }

    /// The event's count over all rows.
    pub fn total(&self) -> u64 {
        self.rows.iter().map(|r| r.total).sum()
    }
}

/// At most `max_rows` rows, nothing lost: when there are more, the first `max_rows - 1` stay and
/// the rest are summed into a last [`RowThreads::Others`] row that says how many threads it
/// sums. Per-thread rows are kept in the order threads first published, so a thread keeps its
/// row while more threads come.
pub fn fold_rows(rows: &[ResultRow], max_rows: usize) -> Vec<ResultRow> {
    if rows.len() <= max_rows {
        return rows.to_vec();
    }
    let keep = max_rows.saturating_sub(1);
    let mut kept = rows[..keep].to_vec();
    let mut others = ResultRow {
        threads: RowThreads::Others(0),
        instances: 0,
        total: 0,
        buckets: Vec::new(),
    };
    let mut threads = 0u32;
    for row in &rows[keep..] {
        threads = threads.saturating_add(row.threads.threads());
        others.add(row);
    }
    others.threads = RowThreads::Others(threads);
    if max_rows > 0 {
        kept.push(others);
    }
    kept
}

/// Packs UTF-8 text into words, 8 bytes per word, little-endian.
fn pack_text(text: &str) -> Vec<u64> {
    text.as_bytes()
        .chunks(8)
        .map(|chunk| {
            let mut bytes = [0u8; 8];
            bytes[..chunk.len()].copy_from_slice(chunk);
            u64::from_le_bytes(bytes)
        })
        .collect()
}

/// The longest prefix of `text` of at most `bytes` bytes that ends on a character boundary.
fn cut(text: &str, bytes: usize) -> &str {
    let mut end = bytes.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// Writes a result block as a seqlock writer (odd sequence while writing, even when done):
///
/// - word 1: generation (bits 0..32), rows (bits 32..64);
/// - word 2: buckets per row;
/// - word 3: text bytes (bits 0..32), text kind (bits 32..40: 0 none, 1 report, 2 why missing);
/// - words 4, 5, 6: the [`BucketGeometry`]: bucket width, smallest and largest bytes counted;
/// - then each row: whose ([`RowThreads`]: thread id in bits 0..32, kind 0 all / 1 one thread /
///   2 the others in bits 32..40, how many others in bits 40..64), instances, total, buckets;
/// - then the text, 8 bytes per word, little-endian.
///
/// Nothing is lost for want of room: rows that do not fit are summed into a last "other
/// threads" row ([`fold_rows`]), and a report that does not fit after the rows is replaced by a
/// note that says its size and the room (cut to the room if even that does not fit). Every row
/// has as many buckets as the longest.
pub fn write_result(words: &[AtomicU64], result: &RequestResult) {
    let Some(room) = words.len().checked_sub(RESULT_HEADER_WORDS) else {
        return;
    };
    let buckets = result
        .rows
        .iter()
        .map(|r| r.buckets.len())
        .max()
        .unwrap_or(0)
        .min(room.saturating_sub(ROW_HEADER_WORDS));
    let row_words = ROW_HEADER_WORDS + buckets;
    let rows = fold_rows(&result.rows, room / row_words);
    let text_room = (room - rows.len() * row_words) * 8;
    let text = match &result.text {
        t if t.text().len() <= text_room => t.clone(),
        t => ResultText::Missing(
            cut(
                &format!(
                    "the analysis report has {} bytes, but the target's result block has room for {text_room} after the counts; ask for fewer analyses (reuse distance is the largest), a smaller histogram, or run the target with larger result blocks",
                    t.text().len()
                ),
                text_room,
            )
            .to_owned(),
        ),
    };
    let seq = words[0].load(Ordering::Relaxed);
    let writing = seq | 1;
    words[0].store(writing, Ordering::Relaxed);
    std::sync::atomic::fence(Ordering::Release);
    words[1].store(
        u64::from(result.generation) | (rows.len() as u64) << 32,
        Ordering::Relaxed,
    );
    words[2].store(buckets as u64, Ordering::Relaxed);
    words[3].store(
        text.text().len() as u64 | text.kind() << 32,
        Ordering::Relaxed,
    );
    let g = result.geometry;
    words[4].store(g.bucket_bytes, Ordering::Relaxed);
    words[5].store(g.smallest, Ordering::Relaxed);
    words[6].store(g.largest, Ordering::Relaxed);
    let mut at = RESULT_HEADER_WORDS;
    for row in &rows {
        words[at].store(row.threads.to_word(), Ordering::Relaxed);
        words[at + 1].store(row.instances, Ordering::Relaxed);
        words[at + 2].store(row.total, Ordering::Relaxed);
        for (i, w) in words[at + ROW_HEADER_WORDS..at + row_words]
            .iter()
            .enumerate()
        {
            w.store(row.buckets.get(i).copied().unwrap_or(0), Ordering::Relaxed);
        }
        at += row_words;
    }
    for (w, v) in words[at..].iter().zip(pack_text(text.text())) {
        w.store(v, Ordering::Relaxed);
    }
    words[0].store(writing.wrapping_add(1), Ordering::Release);
}

/// Decodes a settled copy of the used words of a result block of `block_words` words, checking
/// that rows and text fit the block (then the copy holds them all).
fn decode_result(words: &[u64], block_words: usize) -> Result<RequestResult, LayoutError> {
    let room = block_words - RESULT_HEADER_WORDS;
    let bad = |what, value: u64, limit: usize| LayoutError::BadIndex {
        table: Table::Results,
        what,
        value,
        limit: limit as u64 + 1,
    };
    let rows = (words[1] >> 32) as usize;
    let buckets = words[2];
    if buckets > room as u64 {
        return Err(bad("buckets per row", buckets, room));
    }
    let row_words = ROW_HEADER_WORDS + buckets as usize;
    if rows > room / row_words {
        return Err(bad("row count", rows as u64, room / row_words));
    }
    let text_room = (room - rows * row_words) * 8;
    let text_len = words[3] & 0xffff_ffff;
    if text_len > text_room as u64 {
        return Err(bad("text length", text_len, text_room));
    }
    let mut out = Vec::with_capacity(rows);
    let mut at = RESULT_HEADER_WORDS;
    for _ in 0..rows {
        out.push(ResultRow {
            threads: RowThreads::from_word(words[at])?,
            instances: words[at + 1],
            total: words[at + 2],
            buckets: words[at + ROW_HEADER_WORDS..at + row_words].to_vec(),
        });
        at += row_words;
    }
    let mut bytes: Vec<u8> = words[at..at + (text_len as usize).div_ceil(8)]
        .iter()
        .flat_map(|w| w.to_le_bytes())
        .collect();
    bytes.truncate(text_len as usize);
    let text = String::from_utf8(bytes).map_err(|_| LayoutError::BadString {
        offset: 0,
        len: text_len as u32,
        why: "result text is not UTF-8",
    })?;
    let text = match words[3] >> 32 & 0xff {
        0 if text.is_empty() => ResultText::None,
        1 => ResultText::Report(text),
        2 => ResultText::Missing(text),
        value => {
            return Err(LayoutError::BadEnum {
                what: "result text kind",
                value,
            });
        }
    };
    // Never trusted: a width and sizes that do not describe the rows' buckets are refused.
    let geometry = BucketGeometry {
        bucket_bytes: words[4],
        smallest: words[5],
        largest: words[6],
    };
    if geometry.smallest > geometry.largest
        || geometry.largest > 0
            && (geometry.bucket_bytes == 0
                || geometry.largest.div_ceil(geometry.bucket_bytes) > buckets)
    {
        return Err(LayoutError::BadGeometry {
            bucket_bytes: geometry.bucket_bytes,
            smallest: geometry.smallest,
            largest: geometry.largest,
            buckets,
        });
    }
    Ok(RequestResult {
        generation: words[1] as u32,
        rows: out,
        geometry,
        text,
    })
}

/// Reads a result block as a seqlock reader; `None` if it never settled in `attempts` tries or
/// holds nothing yet. Only the words the header says are used are copied, and every count in
/// it is checked against the block.
pub fn read_result(
    words: &[AtomicU64],
    attempts: usize,
) -> Result<Option<RequestResult>, LayoutError> {
    let room = words.len().saturating_sub(RESULT_HEADER_WORDS);
    for _ in 0..attempts {
        let before = words[0].load(Ordering::Acquire);
        if before & 1 == 1 {
            std::hint::spin_loop();
            continue;
        }
        if before == 0 {
            return Ok(None);
        }
        let header: Vec<u64> = words[..RESULT_HEADER_WORDS]
            .iter()
            .map(|w| w.load(Ordering::Relaxed))
            .collect();
        // What the header says is used, bounded by the block: a torn or hostile header copies
        // at most the block, and decoding says what is wrong.
        let rows = (header[1] >> 32).min(room as u64) as usize;
        let row_words = ROW_HEADER_WORDS as u64 + header[2].min(room as u64);
        let text_words = (header[3] & 0xffff_ffff).div_ceil(8) as usize;
        let used = (rows as u64 * row_words).min(room as u64) as usize;
        let end = RESULT_HEADER_WORDS + (used + text_words).min(room);
        let copy: Vec<u64> = words[..end]
            .iter()
            .map(|w| w.load(Ordering::Relaxed))
            .collect();
        std::sync::atomic::fence(Ordering::Acquire);
        if words[0].load(Ordering::Relaxed) == before {
            return decode_result(&copy, words.len()).map(Some);
        }
    }
    Ok(None)
}

mod field_spans;
pub use field_spans::{
    FIELD_HEADER_WORD, FIELD_SPAN_WORDS, FieldSpans, FieldSpansError, MAX_SLOT_ELEMENT_BYTES,
    MAX_SLOT_FIELDS,
};
mod trace_block;
pub use trace_block::{
    MAX_TRACE_MESSAGE_BYTES, MAX_TRACE_PATH_BYTES, MAX_TRACE_RANGES, TRACE_BLOCK_WORDS,
    TRACE_PATH_LEN_WORD, TRACE_STATE_WORD, TraceOrder, TraceOrderError, TraceOutcome, TraceState,
    check_trace_path, trace_generation, trace_state_word,
};

#[cfg(test)]
mod tests;
