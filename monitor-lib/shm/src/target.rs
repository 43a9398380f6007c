//! The target's side of the segment (the paper's MCC): create and publish it, register regions
//! and data structures, look regions up on the hot path, pick up requests, write results, and
//! block at halting points until a tool releases the program, never silently and never forever
//! without a tool attached.
//!
//! A halted target goes on by itself once no process but itself is attached: the tool that
//! could release it is gone. A child of `fork` keeps its inherited attachment until it execs or
//! exits (dual-compiled code may still read the words the gate pointed at), so a halted parent
//! whose tool died goes on only once such children are gone, and says so from
//! [`WAIT_NOTICE_INTERVAL`] on, less and less often, meanwhile. [`Mcc::finish`] does nothing outside the creating
//! process, so a child's exit never marks its parent's segment exited.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use super::config_table::{ConfigEntry, ConfigTable, ConfigTableError};
use super::discovery::{self, DiscoveryError, TargetRecord};
use super::futex;
use super::layout::{
    self, Boundary, Capacities, DataStructureDetails, DataStructureIndex, DataStructureKind,
    HaltingThread, Layout, LayoutError, PublishedModel, RegionIndex, RegionKind, RequestResult,
    RequestSpec, RequestTarget, SiteBlock, SiteKey, SlotState, Table, header,
};
use super::process;
use super::sysv::{Segment, SegmentError, ViewError};
use epcache_sim::ranges::AddressRange;

/// How long `EPCACHE_WAIT=yes` waits for a tool.
pub const DEFAULT_START_WAIT: Duration = Duration::from_secs(60);
/// When a blocked target first says on stderr that it is still waiting; each later notice
/// comes twice as long after the one before, up to [`WAIT_NOTICE_LONGEST`], so a program left
/// halted for the whole halt lease does not fill its stderr.
pub const WAIT_NOTICE_INTERVAL: Duration = Duration::from_secs(5);
/// The longest time between two notices of a blocked target.
pub const WAIT_NOTICE_LONGEST: Duration = Duration::from_secs(120);

/// Something the MCC could not do.
#[derive(Debug, thiserror::Error)]
pub enum MccError {
    /// A System V call failed.
    #[error(transparent)]
    Segment(#[from] SegmentError),
    /// The capacities cannot be laid out.
    #[error(transparent)]
    Layout(#[from] LayoutError),
    /// The configuration table refused a region.
    #[error(transparent)]
    Config(#[from] ConfigTableError),
    /// The discovery record could not be written.
    #[error(transparent)]
    Discovery(#[from] DiscoveryError),
    /// A table or the string area is full.
    #[error("the segment's {table} is full (capacity {capacity})")]
    Full {
        /// Which table.
        table: Table,
        /// Its capacity.
        capacity: usize,
    },
    /// A view access failed (a bug: the layout is the MCC's own).
    #[error(transparent)]
    View(#[from] ViewError),
}

/// How to create the MCC.
#[derive(Debug, Clone)]
pub struct MccOptions {
    /// Table sizes.
    pub capacities: Capacities,
    /// Program name for the discovery record.
    pub program: String,
    /// Where to write the discovery record; `None` for the default runtime directory.
    pub runtime_dir: Option<PathBuf>,
}

impl Default for MccOptions {
    fn default() -> Self {
        MccOptions {
            capacities: Capacities::default(),
            program: std::env::args()
                .next()
                .and_then(|a| {
                    Path::new(&a)
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                })
                .unwrap_or_else(|| "unknown".into()),
            runtime_dir: None,
        }
    }
}

/// How a block at a halting point (or at start) ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HaltOutcome {
    /// No halting point matched; the program did not stop.
    NotHalted,
    /// A tool released the program.
    Released,
    /// No tool is attached any more, so nobody could release it; the program goes on.
    ToolDetached,
    /// The start wait's patience ran out with no tool; the program goes on.
    GaveUp,
}

/// A request the target should serve at a region, resolved to bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ActiveRequest {
    /// Its slot (bit in the region's flags).
    pub slot: u32,
    /// The slot generation it was submitted under; results carry it.
    pub generation: u32,
    /// What the tool asked for.
    pub spec: RequestSpec,
    /// The bytes it covers, with data structures resolved.
    pub range: AddressRange,
}

/// The Monitor Control Component: owns the segment on the target's side.
///
/// Every method takes `&self`, so one MCC serves all threads: the hot-path checks (request flag,
/// halting point) are lock-free loads; registrations, which are rare, take a lock.
#[derive(Debug)]
pub struct Mcc {
    segment: Segment,
    layout: Layout,
    config: ConfigTable,
    program: String,
    /// The process that created the segment: a child that `fork` copied this value into must
    /// not finish the parent's segment when it exits.
    owner_pid: u32,
    record: Mutex<Option<PathBuf>>,
    tables: Mutex<OwnTables>,
    /// The trace order taken as the start wait ended ([`Mcc::take_trace_order`]), until the
    /// runtime asks for it ([`Mcc::taken_trace`]).
    taken_trace: Mutex<Option<Result<TakenTrace, String>>>,
    /// Held by the thread taking a halting point, through its halt ([`Mcc::boundary_then`]).
    taking_halt: Mutex<()>,
}

/// The target's own copies of what it published: it never needs to re-read (and re-check) what
/// it wrote.
#[derive(Debug, Default)]
struct OwnTables {
    regions: u32,
    data_structures: Vec<OwnStructure>,
    strings_used: u32,
    /// Counts the times a data structure became live.
    serial: u64,
}

/// What the target published of one data structure, and what only it needs to bind requests.
#[derive(Debug, Clone, Copy)]
struct OwnStructure {
    range: AddressRange,
    live: bool,
    kind: DataStructureKind,
    site: Option<SiteKey>,
    /// When it last became live: of an allocation site's blocks, the latest has the largest.
    serial: u64,
    /// The thread that made it live ([`this_thread_token`]).
    allocated_by: usize,
    /// The entry that follows it: an allocatable allocated again at another size.
    successor: Option<DataStructureIndex>,
}

/// What a request slot's words come to at a region's entry.
#[derive(Debug)]
enum Resolution {
    /// Serve it over `range`, bound to the data structure when it names one. The range is
    /// empty, and nothing bound, while the allocatable it names is unallocated or the
    /// allocation site has no live block: the instance counts its data from the moment it
    /// exists ([`Mcc::where_now`]).
    Serve(RequestSpec, AddressRange, Option<DataStructureIndex>),
    /// Never: malformed, another region's, a freed array, more buckets than the slot holds.
    Refuse,
}

/// The range a request is served over while its data does not exist yet.
const NO_BYTES_YET: AddressRange = AddressRange::new(0, 0);

impl Mcc {
    /// Creates the segment (mode 0600, already marked for removal so it cannot leak), writes the
    /// header and the discovery record. The target is `Starting` until [`Mcc::ready`]: a tool
    /// that sees the record waits while it registers its regions and data structures.
    pub fn create(options: MccOptions) -> Result<Mcc, MccError> {
        let layout = Layout::plan(&options.capacities)?;
        let segment = Segment::create(layout.total)?;
        let pid = std::process::id();
        let start_time = process::own_start_time();
        layout.write_header(segment.view(), pid, start_time)?;
        let dir = options.runtime_dir.unwrap_or_else(discovery::runtime_dir);
        let record = discovery::write_record(
            &dir,
            &TargetRecord {
                pid,
                start_time,
                shm_id: segment.id(),
                program: options.program.clone(),
            },
        )?;
        let mcc = Mcc {
            config: ConfigTable::new(&layout),
            segment,
            layout,
            program: options.program,
            owner_pid: pid,
            record: Mutex::new(Some(record)),
            tables: Mutex::new(OwnTables::default()),
            taken_trace: Mutex::new(None),
            taking_halt: Mutex::new(()),
        };
        mcc.set_state(layout::TargetState::Starting);
        Ok(mcc)
    }

    /// The segment's System V id (what a tool attaches by).
    pub fn shm_id(&self) -> i32 {
        self.segment.id()
    }

    /// Ends the setup [`Mcc::create`] began: the target waits for a tool first when
    /// `EPCACHE_WAIT` asks (see [`Mcc::wait_for_tool_if_asked`]), then runs (state `Running`).
    /// From `Starting` it goes straight to `WaitingForTool`, so a tool never sees it `Running`
    /// before the start wait.
    pub fn ready(&self) -> HaltOutcome {
        let outcome = self.wait_for_tool_if_asked();
        self.set_state(layout::TargetState::Running);
        outcome
    }

    /// The discovery record file, while it exists.
    pub fn record_path(&self) -> Option<PathBuf> {
        self.record
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn tables(&self) -> std::sync::MutexGuard<'_, OwnTables> {
        // A panic while registering leaves the copies consistent (each field is set last).
        self.tables.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn set_state(&self, state: layout::TargetState) {
        if let Ok(w) = self.segment.view().u32_at(header::TARGET_STATE) {
            w.store(state as u32, Ordering::Release);
        }
    }

    fn add_string(&self, tables: &mut OwnTables, name: &str) -> Result<u64, MccError> {
        let strings = self.layout.span(Table::Strings);
        let len = name.len();
        if tables.strings_used as usize + len > strings.capacity {
            return Err(MccError::Full {
                table: Table::Strings,
                capacity: strings.capacity,
            });
        }
        let offset = tables.strings_used;
        self.segment
            .view()
            .copy_in(strings.offset + offset as usize, name.as_bytes())?;
        tables.strings_used += len as u32;
        self.segment
            .view()
            .u32_at(header::STRINGS_USED)?
            .store(tables.strings_used, Ordering::Release);
        Ok(layout::name_word(offset, len as u32))
    }

    /// Registers a region keyed by (file id, first line); returns its configuration entry, which
    /// the region hooks keep so entry and exit cost no hashing.
    pub fn register_region(
        &self,
        file_id: u32,
        line: u32,
        kind: RegionKind,
        name: &str,
        file: &str,
    ) -> Result<ConfigEntry, MccError> {
        let mut tables = self.tables();
        let capacity = self.layout.span(Table::Regions).capacity;
        if tables.regions as usize >= capacity {
            return Err(MccError::Full {
                table: Table::Regions,
                capacity,
            });
        }
        let index = RegionIndex(tables.regions);
        let entry = self
            .config
            .insert(self.segment.view(), file_id, line, index)?;
        let name = self.add_string(&mut tables, name)?;
        let file = self.add_string(&mut tables, file)?;
        let view = self.segment.view();
        let w = self
            .layout
            .entry_words(view, Table::Regions, index.0 as usize)?;
        w[3].store(file, Ordering::Relaxed);
        w[0].store(
            u64::from(file_id) << 32 | u64::from(line),
            Ordering::Relaxed,
        );
        w[1].store(name, Ordering::Relaxed);
        w[2].store(kind as u64 | u64::from(entry.slot) << 32, Ordering::Relaxed);
        tables.regions += 1;
        // Release publishes the entry written above to a tool that loads the count with Acquire.
        view.u32_at(header::REGION_COUNT)?
            .store(tables.regions, Ordering::Release);
        Ok(entry)
    }

    /// Publishes what the target simulates, for tools to describe: the cache spec (as the user
    /// gave it), the number of counters in the counter array and the machine's cores.
    pub fn publish_model(&self, model: &PublishedModel) -> Result<(), MccError> {
        let spec = self.add_string(&mut self.tables(), &model.spec)?;
        let view = self.segment.view();
        view.u32_at(header::COUNTERS)?
            .store(model.counters, Ordering::Relaxed);
        view.u32_at(header::CORES)?
            .store(model.cores, Ordering::Relaxed);
        // Release publishes the two words above to a tool that loads the spec with Acquire.
        view.u64_at(header::CACHE_SPEC)?
            .store(spec, Ordering::Release);
        Ok(())
    }

    /// Registers a data structure by name and bytes, live.
    pub fn register_data_structure(
        &self,
        name: &str,
        range: AddressRange,
        kind: DataStructureKind,
    ) -> Result<DataStructureIndex, MccError> {
        self.register_data_structure_with(name, range, kind, true, &DataStructureDetails::default())
    }

    /// Registers a data structure with its allocation site and shape; `live` false for an
    /// allocatable that is not allocated yet.
    pub fn register_data_structure_with(
        &self,
        name: &str,
        range: AddressRange,
        kind: DataStructureKind,
        live: bool,
        details: &DataStructureDetails,
    ) -> Result<DataStructureIndex, MccError> {
        let mut tables = self.tables();
        let capacity = self.layout.span(Table::DataStructures).capacity;
        let index = tables.data_structures.len();
        if index >= capacity {
            return Err(MccError::Full {
                table: Table::DataStructures,
                capacity,
            });
        }
        let name = self.add_string(&mut tables, name)?;
        let view = self.segment.view();
        let w = self
            .layout
            .entry_words(view, Table::DataStructures, index)?;
        w[0].store(range.start, Ordering::Relaxed);
        w[1].store(range.len(), Ordering::Relaxed);
        w[2].store(name, Ordering::Relaxed);
        details.store(w);
        w[layout::DATA_STRUCTURE_CONTEXT_WORD].store(0, Ordering::Relaxed);
        w[3].store(kind as u64 | u64::from(live) << 32, Ordering::Relaxed);
        tables.serial += 1;
        let serial = tables.serial;
        tables.data_structures.push(OwnStructure {
            range,
            live,
            kind,
            site: details.site,
            serial,
            allocated_by: this_thread_token(),
            successor: None,
        });
        view.u32_at(header::DATA_STRUCTURE_COUNT)?
            .store(tables.data_structures.len() as u32, Ordering::Release);
        Ok(DataStructureIndex(index as u32))
    }

    /// Publishes the allocation context of heap-site structure `index` (`file:line` frames,
    /// innermost first), once: later calls leave the first context, so a site's blocks do not
    /// fill the string area.
    pub fn set_context(
        &self,
        index: DataStructureIndex,
        context: &[String],
    ) -> Result<(), MccError> {
        if context.is_empty() {
            return Ok(());
        }
        let mut tables = self.tables();
        if index.0 as usize >= tables.data_structures.len() {
            return Ok(());
        }
        let w = self.layout.entry_words(
            self.segment.view(),
            Table::DataStructures,
            index.0 as usize,
        )?;
        if w[layout::DATA_STRUCTURE_CONTEXT_WORD].load(Ordering::Relaxed) != 0 {
            return Ok(());
        }
        let word = self.add_string(&mut tables, &context.join("\n"))?;
        w[layout::DATA_STRUCTURE_CONTEXT_WORD].store(word, Ordering::Release);
        Ok(())
    }

    /// Marks a data structure as gone (a freed heap array); requests naming it are rejected.
    pub fn unregister_data_structure(&self, index: DataStructureIndex) {
        if let Some(ds) = self.tables().data_structures.get_mut(index.0 as usize) {
            ds.live = false;
            if let Ok(w) = self.layout.entry_words(
                self.segment.view(),
                Table::DataStructures,
                index.0 as usize,
            ) {
                w[3].fetch_and(0xffff_ffff, Ordering::Release);
            }
        }
    }

    /// Gives a data structure a new range and details and marks it live: a heap block that
    /// took over its allocation site's entry from a freed one, an allocatable allocated (again).
    /// The range and details are stored before the live bit (Release), so a tool that sees the
    /// bit set with Acquire sees them.
    pub fn reuse_data_structure(
        &self,
        index: DataStructureIndex,
        range: AddressRange,
        details: &DataStructureDetails,
    ) {
        let mut tables = self.tables();
        tables.serial += 1;
        let serial = tables.serial;
        if let Some(ds) = tables.data_structures.get_mut(index.0 as usize) {
            ds.range = range;
            ds.live = true;
            ds.site = details.site;
            ds.serial = serial;
            ds.allocated_by = this_thread_token();
            if let Ok(w) = self.layout.entry_words(
                self.segment.view(),
                Table::DataStructures,
                index.0 as usize,
            ) {
                w[0].store(range.start, Ordering::Relaxed);
                w[1].store(range.len(), Ordering::Relaxed);
                details.store(w);
                w[3].fetch_or(1 << 32, Ordering::Release);
            }
        }
    }

    /// Says that `successor` follows `index` (an allocatable allocated again at another size):
    /// requests naming `index` are served over `successor` from the region's next entry on.
    pub fn set_successor(&self, index: DataStructureIndex, successor: DataStructureIndex) {
        let mut tables = self.tables();
        if (successor.0 as usize) < tables.data_structures.len()
            && let Some(ds) = tables.data_structures.get_mut(index.0 as usize)
        {
            ds.successor = Some(successor);
        }
    }

    /// The configuration entry of region (file id, first line), if registered.
    #[inline]
    pub fn lookup(&self, file_id: u32, line: u32) -> Option<ConfigEntry> {
        self.config.lookup(self.segment.view(), file_id, line)
    }

    /// Whether a tool attached a request to `entry`: the check on every region entry.
    #[inline]
    pub fn has_request(&self, entry: ConfigEntry) -> bool {
        self.config.has_request(self.segment.view(), entry)
    }

    /// The word a tool bumps (Release) after each change to requests or the halting point. A
    /// target that found nothing armed ([`Mcc::anything_armed`]) as of one value of it needs no
    /// other check at a region boundary while it keeps that value.
    pub fn tool_sequence(&self) -> Option<&AtomicU32> {
        self.segment.view().u32_at(header::TOOL_SEQUENCE).ok()
    }

    /// Whether a tool asked for anything: a request waiting or being served in any slot, or a
    /// halting point (or step) armed. Load [`Mcc::tool_sequence`] with Acquire before calling:
    /// whatever the tool changed before that bump is then seen here. Costs one load per
    /// request slot, so call it when the sequence moved, not per boundary.
    pub fn anything_armed(&self) -> bool {
        self.layout.anything_armed(self.segment.view())
    }

    /// The word a tool sets nonzero while it may have anything armed (see
    /// [`header::CAPTURE_HINT`]): the runtime points the gate of dual-compiled functions at it.
    pub fn capture_hint(&self) -> Option<&AtomicU32> {
        self.segment.view().u32_at(header::CAPTURE_HINT).ok()
    }

    /// The requests attached to `entry`, validated and marked active. Invalid ones (another
    /// region, a dead data structure, too many buckets) are marked rejected and skipped: a bad
    /// request never stops the program. One whose bytes do not exist yet (an unallocated
    /// allocatable, an allocation site without a live block) is served over no bytes, for the
    /// runtime to follow its data once the instance allocates it ([`Mcc::where_now`]); one
    /// bound to a data structure or a site's block has its binding written into its slot
    /// ([`layout::SLOT_BINDING_WORD`]), so a tool tells the two apart.
    pub fn active_requests(&self, entry: ConfigEntry) -> Vec<ActiveRequest> {
        let view = self.segment.view();
        let mut flags = self.config.request_flags(view, entry);
        let mut out = Vec::new();
        while flags != 0 {
            let slot = flags.trailing_zeros();
            flags &= flags - 1;
            let Ok(words) = self
                .layout
                .entry_words(view, Table::RequestSlots, slot as usize)
            else {
                continue;
            };
            let head = words[0].load(Ordering::Acquire);
            let generation = (head >> 32) as u32;
            let state = SlotState::from_word(head);
            if !matches!(state, Ok(SlotState::Pending | SlotState::Active)) {
                continue;
            }
            match self.resolve(words, entry) {
                Resolution::Serve(spec, range, bound) => {
                    if state == Ok(SlotState::Pending) {
                        // A concurrent cancel wins: then the slot is not ours to serve. Another
                        // thread entering the region at once may have made it active first:
                        // then it is served here too (each thread's instance counts).
                        let active = layout::slot_word(SlotState::Active, generation);
                        if let Err(now) = words[0].compare_exchange(
                            head,
                            active,
                            Ordering::AcqRel,
                            Ordering::Acquire,
                        ) && now != active
                        {
                            continue;
                        }
                    }
                    if let Some(index) = bound {
                        let binding = layout::binding_word(index, generation);
                        // Only for the request it was resolved for: a tool that replaced it
                        // meanwhile cleared the word for its own.
                        if words[0].load(Ordering::Acquire) >> 32 == u64::from(generation) {
                            words[layout::SLOT_BINDING_WORD].store(binding, Ordering::Release);
                        }
                    }
                    out.push(ActiveRequest {
                        slot,
                        generation,
                        spec,
                        range,
                    });
                }
                Resolution::Refuse => {
                    let _ = words[0].compare_exchange(
                        head,
                        layout::slot_word(SlotState::Rejected, generation),
                        Ordering::AcqRel,
                        Ordering::Relaxed,
                    );
                }
            }
        }
        out
    }

    fn resolve(&self, words: &[std::sync::atomic::AtomicU64], entry: ConfigEntry) -> Resolution {
        let Ok(spec) = RequestSpec::load(words, self.layout.buckets_per_slot()) else {
            return Resolution::Refuse;
        };
        if spec.region != entry.region {
            return Resolution::Refuse;
        }
        let (range, bound) = match spec.target {
            RequestTarget::Range(r) => (r, None),
            RequestTarget::DataStructure(d) => match self.current_structure(d) {
                Some((index, ds)) if ds.live => (ds.range, Some(index)),
                Some((_, ds)) if ds.kind == DataStructureKind::Allocatable => {
                    return Resolution::Serve(spec, NO_BYTES_YET, None);
                }
                _ => return Resolution::Refuse,
            },
            RequestTarget::AllocationSite { site, block } => match self.site_block(site, block) {
                Some((index, range)) => (range, Some(index)),
                None => return Resolution::Serve(spec, NO_BYTES_YET, None),
            },
        };
        if range.is_empty() {
            return Resolution::Refuse;
        }
        // With explicit bucket bytes the range decides the count: a raw request could ask for
        // millions of counters per thread, and for results that do not fit the slot.
        if spec
            .histogram_buckets(range)
            .is_some_and(|n| n == 0 || n > self.layout.buckets_per_slot() as u64)
        {
            return Resolution::Refuse;
        }
        Resolution::Serve(spec, range, bound)
    }

    /// Data structure `index`, or the entry that follows it now (an allocatable allocated again
    /// at another size), with that entry's index.
    fn current_structure(
        &self,
        index: DataStructureIndex,
    ) -> Option<(DataStructureIndex, OwnStructure)> {
        let tables = self.tables();
        let mut index = index;
        // Each successor was registered after its predecessor, so the chain ends; the bound is
        // for the chain's length all the same.
        for _ in 0..=tables.data_structures.len() {
            let ds = *tables.data_structures.get(index.0 as usize)?;
            match ds.successor {
                Some(next) if next.0 > index.0 => index = next,
                _ => return Some((index, ds)),
            }
        }
        None
    }

    /// The live block of allocation site `site` a request binds to, as `block` asks, for the
    /// calling thread: among the blocks it allocated itself when it has any.
    fn site_block(
        &self,
        site: SiteKey,
        block: SiteBlock,
    ) -> Option<(DataStructureIndex, AddressRange)> {
        let tables = self.tables();
        let live = || {
            tables.data_structures.iter().enumerate().filter(|(_, ds)| {
                ds.live && ds.site.is_some_and(|b| site.answers(b)) && !ds.range.is_empty()
            })
        };
        // A thread's own blocks first: threads that each allocate at one line (a private
        // array in a parallel region) count their own, not the latest another thread made.
        let me = this_thread_token();
        let own = live().any(|(_, ds)| ds.allocated_by == me);
        let candidates = live().filter(|(_, ds)| !own || ds.allocated_by == me);
        let chosen = match block {
            SiteBlock::Latest => candidates.max_by_key(|(_, ds)| ds.serial),
            SiteBlock::Largest => candidates.max_by_key(|(_, ds)| (ds.range.len(), ds.serial)),
        };
        chosen.map(|(i, ds)| (DataStructureIndex(i as u32), ds.range))
    }

    /// Where the bytes of `request`, bound at its region's entry, are now: a request naming a
    /// data structure follows the entry that succeeds it (an allocatable allocated again), one
    /// naming an allocation site the site's block `block` asks for, with the binding word
    /// written for tools; `None` while there are none (an allocatable deallocated, a site
    /// without a live block). A request on an address range stays where it is.
    pub fn where_now(&self, request: &ActiveRequest) -> Option<AddressRange> {
        let (range, bound) = match request.spec.target {
            RequestTarget::Range(r) => return Some(r),
            RequestTarget::DataStructure(d) => match self.current_structure(d) {
                Some((index, ds)) if ds.live && !ds.range.is_empty() => (ds.range, index),
                _ => return None,
            },
            RequestTarget::AllocationSite { site, block } => self
                .site_block(site, block)
                .map(|(index, range)| (range, index))?,
        };
        if let Ok(words) = self.layout.entry_words(
            self.segment.view(),
            Table::RequestSlots,
            request.slot as usize,
        ) && words[0].load(Ordering::Acquire) >> 32 == u64::from(request.generation)
        {
            words[layout::SLOT_BINDING_WORD].store(
                layout::binding_word(bound, request.generation),
                Ordering::Release,
            );
        }
        Some(range)
    }

    /// Buckets one row of a result block holds: a histogram never has more.
    pub fn buckets_per_slot(&self) -> usize {
        self.layout.buckets_per_slot()
    }

    /// Marks the active request in `slot` (of `generation`) rejected: the runtime cannot serve
    /// it (an event at a level its cache does not have). Nothing if the tool changed the slot.
    pub fn reject(&self, slot: u32, generation: u32) {
        let view = self.segment.view();
        if let Ok(words) = self
            .layout
            .entry_words(view, Table::RequestSlots, slot as usize)
        {
            let _ = words[0].compare_exchange(
                layout::slot_word(SlotState::Active, generation),
                layout::slot_word(SlotState::Rejected, generation),
                Ordering::AcqRel,
                Ordering::Relaxed,
            );
        }
    }

    /// Publishes `result` for the request in `slot`, unless the tool cancelled or replaced it.
    /// Rows or a report that do not fit the block are folded or replaced by a note, never
    /// dropped silently (see [`layout::write_result`]).
    pub fn write_result(&self, slot: u32, result: &RequestResult) -> Result<bool, MccError> {
        let view = self.segment.view();
        let head = self
            .layout
            .entry_words(view, Table::RequestSlots, slot as usize)?[0]
            .load(Ordering::Acquire);
        if head != layout::slot_word(SlotState::Active, result.generation) {
            return Ok(false);
        }
        let words = self
            .layout
            .entry_words(view, Table::Results, slot as usize)?;
        layout::write_result(words, result);
        Ok(true)
    }

    /// Called at every region boundary: halts if the tool's halting point matches. Costs one
    /// load when no halting point is armed.
    #[inline]
    pub fn boundary(&self, region: RegionIndex, boundary: Boundary) -> HaltOutcome {
        self.boundary_then(region, boundary, HaltingThread::default)
    }

    /// [`Mcc::boundary`], running `before_halt` once the halting point matched (and was
    /// disarmed), before the halt is announced to tools: a threaded runtime stops its other
    /// threads' publications there, so a tool that sees the halt reads complete results; it
    /// says which thread halts, which the halt tells tools.
    #[inline]
    pub fn boundary_then(
        &self,
        region: RegionIndex,
        boundary: Boundary,
        before_halt: impl FnOnce() -> HaltingThread,
    ) -> HaltOutcome {
        let view = self.segment.view();
        let Ok(point) = view.u64_at(header::HALTING_POINT) else {
            return HaltOutcome::NotHalted;
        };
        let armed = point.load(Ordering::Acquire);
        if armed & (layout::POINT_ARMED | layout::POINT_TAKEN) == 0 {
            return HaltOutcome::NotHalted;
        }
        self.boundary_slow(armed, region, boundary, before_halt)
    }

    /// Threads at boundaries that match the point (armed, or taken by a thread halted there)
    /// take it one at a time, each holding `taking_halt` through its halt: the first marks it
    /// taken and halts; each other looks again once that halt is released, at the point the tool
    /// left, which may be this very boundary again (a step to the next exit of a parallel loop's
    /// body, which every thread of the team leaves) or elsewhere (then it runs on, never
    /// halting, unasked, at a point the tool no longer wants). A thread that reads the point
    /// while it is taken finds it matching and waits too: no thread passes the boundary a step
    /// asked for unseen because another was halted at it.
    #[cold]
    fn boundary_slow(
        &self,
        seen: u64,
        region: RegionIndex,
        boundary: Boundary,
        before_halt: impl FnOnce() -> HaltingThread,
    ) -> HaltOutcome {
        if !point_matches(seen, region, boundary) {
            return HaltOutcome::NotHalted;
        }
        let _taking = self.taking_halt.lock().unwrap_or_else(|e| e.into_inner());
        let view = self.segment.view();
        let Ok(point) = view.u64_at(header::HALTING_POINT) else {
            return HaltOutcome::NotHalted;
        };
        let armed = point.load(Ordering::Acquire);
        if armed & layout::POINT_ARMED == 0 || !point_matches(armed, region, boundary) {
            return HaltOutcome::NotHalted;
        }
        if let Ok(skip) = view.u32_at(header::HALT_SKIP)
            && skip
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |s| s.checked_sub(1))
                .is_ok()
        {
            return HaltOutcome::NotHalted;
        }
        // A tool may have replaced or cleared the point since it was read: then no halt here.
        let taken = armed & !layout::POINT_ARMED | layout::POINT_TAKEN;
        if point
            .compare_exchange(armed, taken, Ordering::AcqRel, Ordering::Relaxed)
            .is_err()
        {
            return HaltOutcome::NotHalted;
        }
        let thread = before_halt();
        let outcome = self.block(
            layout::TargetState::Halted,
            layout::position_word(region.0, boundary, thread),
            None,
        );
        // Unless the tool armed the next point meanwhile, nothing is armed any more.
        let _ = point.compare_exchange(taken, 0, Ordering::AcqRel, Ordering::Relaxed);
        outcome
    }

    /// Blocks at start until a tool releases the program or `patience` passes, saying so on
    /// stderr.
    pub fn wait_for_tool(&self, patience: Duration) -> HaltOutcome {
        eprintln!(
            "epcache: {} (pid {}) waits up to {} s for a tool to release it (EPCACHE_WAIT); segment id {}, record {}",
            self.program,
            std::process::id(),
            patience.as_secs_f64(),
            self.shm_id(),
            self.record_path()
                .map_or("none".into(), |p| p.display().to_string()),
        );
        self.block(layout::TargetState::WaitingForTool, 0, Some(patience))
    }

    /// Does what `EPCACHE_WAIT` asks: nothing when unset or off, else [`Mcc::wait_for_tool`].
    pub fn wait_for_tool_if_asked(&self) -> HaltOutcome {
        match start_wait_from_env(std::env::var("EPCACHE_WAIT").ok().as_deref()) {
            Some(patience) => self.wait_for_tool(patience),
            None => HaltOutcome::NotHalted,
        }
    }

    fn block(
        &self,
        state: layout::TargetState,
        position: u64,
        patience: Option<Duration>,
    ) -> HaltOutcome {
        let view = self.segment.view();
        let (Ok(halt_gen), Ok(release), Ok(halted_at), Ok(heartbeat)) = (
            view.u32_at(header::HALT_GENERATION),
            view.u32_at(header::RELEASE_GENERATION),
            view.u64_at(header::HALTED_AT),
            view.u64_at(header::HEARTBEAT),
        ) else {
            return HaltOutcome::NotHalted;
        };
        halted_at.store(position, Ordering::Relaxed);
        self.set_state(state);
        // Release: a tool that sees the new generation sees the position and state too.
        let generation = halt_gen.fetch_add(1, Ordering::AcqRel).wrapping_add(1);
        futex::wake(halt_gen, u32::MAX);
        let started = Instant::now();
        let mut last_notice = started;
        let mut notice_interval = WAIT_NOTICE_INTERVAL;
        let outcome = loop {
            let released = release.load(Ordering::Acquire);
            if released == generation {
                break HaltOutcome::Released;
            }
            heartbeat.fetch_add(1, Ordering::Relaxed);
            let waited = started.elapsed();
            if let Some(p) = patience
                && waited >= p
            {
                eprintln!(
                    "epcache: pid {}: no tool released the program within {} s; continuing without a tool",
                    std::process::id(),
                    p.as_secs()
                );
                break HaltOutcome::GaveUp;
            }
            // At a halting point a tool armed it; if no tool is attached now, nobody can release us.
            if patience.is_none() && self.segment.stat().is_ok_and(|s| s.attach_count <= 1) {
                eprintln!(
                    "epcache: pid {}: halted, but no tool is attached to segment {} any more; continuing",
                    std::process::id(),
                    self.shm_id()
                );
                break HaltOutcome::ToolDetached;
            }
            if last_notice.elapsed() >= notice_interval {
                last_notice = Instant::now();
                notice_interval = (notice_interval * 2).min(WAIT_NOTICE_LONGEST);
                let tools = self
                    .segment
                    .stat()
                    .map_or(0, |s| s.attach_count.saturating_sub(1));
                eprintln!(
                    "epcache: pid {} {} ({} s so far; segment id {})",
                    std::process::id(),
                    wait_notice(state, tools),
                    waited.as_secs(),
                    self.shm_id()
                );
            }
            let slice = patience.map_or(Duration::from_secs(1), |p| {
                (p - waited).min(Duration::from_secs(1))
            });
            futex::wait(release, released, slice);
        };
        if state == layout::TargetState::WaitingForTool {
            // Taken while the state still says the program waits: a tool that sees it running
            // with an order pending knows the order was never taken.
            let taken = self.take_trace_order();
            *self.taken_trace.lock().unwrap_or_else(|e| e.into_inner()) = taken;
        }
        self.set_state(layout::TargetState::Running);
        outcome
    }
}

/// This thread's token, unique among the live threads: the address of a thread-local (no
/// allocation, so an allocation hook may ask).
fn this_thread_token() -> usize {
    thread_local! {
        static TOKEN: u8 = const { 0 };
    }
    TOKEN.with(|t| std::ptr::from_ref(t) as usize)
}

/// Whether the halting point word `word` asks for this boundary of `region`. Its boundary
/// byte is a bit set (entry 1, exit 2), so a step can ask for either.
fn point_matches(word: u64, region: RegionIndex, boundary: Boundary) -> bool {
    let want_region = word as u32;
    let want_boundary = word >> 32 & 0xff;
    (want_region == layout::ANY_REGION || want_region == region.0)
        && want_boundary & boundary as u64 != 0
}

/// What a waiting target says from time to time: whether any tool is attached to
/// its segment (`tools`, the attachments besides its own), and what it waits for.
fn wait_notice(state: layout::TargetState, tools: u64) -> String {
    let at = if state == layout::TargetState::WaitingForTool {
        "waits at start"
    } else {
        "is halted"
    };
    match tools {
        0 => format!("{at}; no tool is attached yet"),
        1 => format!("{at}; a tool is attached and has not released it yet"),
        n => format!("{at}; {n} tools are attached and none has released it yet"),
    }
}

/// The environment variable in which the launcher a program must not outlive (`epcache run`)
/// gives its pid: the runtime has the kernel end the program with SIGTERM when that process
/// dies, if it is the program's parent.
pub const LAUNCHER_ENV: &str = "EPCACHE_LAUNCHER_PID";

/// What `EPCACHE_WAIT` asks for: unset, empty, `0`, `no`, `off`, `false` mean no wait; `yes`,
/// `on`, `true` mean [`DEFAULT_START_WAIT`]; a number is seconds. Anything else is reported on
/// stderr and treated as `yes`, since the user clearly wanted a wait.
pub fn start_wait_from_env(value: Option<&str>) -> Option<Duration> {
    let v = value?.trim().to_ascii_lowercase();
    match v.as_str() {
        "" | "0" | "no" | "off" | "false" => None,
        "yes" | "on" | "true" => Some(DEFAULT_START_WAIT),
        n => match n.parse::<f64>() {
            Ok(secs) if secs.is_finite() && secs > 0.0 => {
                Some(Duration::from_secs_f64(secs.min(86_400.0)))
            }
            _ => {
                eprintln!(
                    "epcache: EPCACHE_WAIT={n:?} is not a number of seconds or yes/no; waiting the default {} s",
                    DEFAULT_START_WAIT.as_secs()
                );
                Some(DEFAULT_START_WAIT)
            }
        },
    }
}

impl Mcc {
    /// Says the program has finished: the state becomes `Exited`, a waiting tool is woken at
    /// once (rather than after its liveness check), and the discovery record is removed. The
    /// results stay readable while a tool keeps the segment attached. Idempotent; `Drop` calls it,
    /// and a runtime whose MCC lives in a static calls it from `atexit`. Called in a process that
    /// `fork` made from the creator, it does nothing: the program it would finish is the parent.
    pub fn finish(&self) {
        if std::process::id() != self.owner_pid {
            return;
        }
        let Some(record) = self.record.lock().unwrap_or_else(|e| e.into_inner()).take() else {
            return;
        };
        self.set_state(layout::TargetState::Exited);
        if let Ok(halt_gen) = self.segment.view().u32_at(header::HALT_GENERATION) {
            halt_gen.fetch_add(1, Ordering::AcqRel);
            futex::wake(halt_gen, u32::MAX);
        }
        let _ = std::fs::remove_file(record);
    }
}

impl Drop for Mcc {
    fn drop(&mut self) {
        self.finish();
    }
}

mod trace;
pub use trace::TakenTrace;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::{Aggregation, HaltingPoint, Mode};
    use crate::tool::{TargetHandle, ToolError};

    /// A segment with one function region `kernel` registered, and a tool attached to it.
    fn kernel_and_tool(dir: &Path, program: &str) -> (Mcc, ConfigEntry, TargetHandle) {
        let mcc = Mcc::create(MccOptions {
            program: program.into(),
            runtime_dir: Some(dir.to_owned()),
            ..MccOptions::default()
        })
        .unwrap();
        let kernel = mcc
            .register_region(1, 20, RegionKind::Function, "kernel", "k.c")
            .unwrap();
        let tool = TargetHandle::attach(mcc.shm_id()).unwrap();
        (mcc, kernel, tool)
    }

    /// What a runtime's region boundaries rely on to skip every check: each tool change bumps
    /// the sequence, and the look after it sees exactly whether anything is armed.
    #[test]
    fn every_tool_change_bumps_the_sequence_and_shows_in_the_armed_look() {
        let dir = tempfile::tempdir().unwrap();
        let (mcc, kernel, tool) = kernel_and_tool(dir.path(), "armed-look");
        let seq = mcc.tool_sequence().unwrap();
        let before = seq.load(Ordering::Acquire);
        assert!(!mcc.anything_armed());

        let spec = RequestSpec {
            region: kernel.region,
            target: RequestTarget::Range(AddressRange::new(0x1000, 4096)),
            event: "PAPI_L1_DCM".parse().unwrap(),
            mode: Mode::Static,
            aggregation: Aggregation::Summed,
            analyses: 0,
        };
        let request = tool.submit(&spec).unwrap();
        let submitted = seq.load(Ordering::Acquire);
        assert_ne!(submitted, before);
        assert!(mcc.anything_armed(), "a pending request is armed");
        assert_eq!(mcc.active_requests(kernel).len(), 1);
        assert!(mcc.anything_armed(), "an active request is armed");
        tool.cancel(request).unwrap();
        let cancelled = seq.load(Ordering::Acquire);
        assert_ne!(cancelled, submitted);
        assert!(!mcc.anything_armed(), "a cancelled request is not");

        tool.set_halting_point(Some(HaltingPoint {
            region: Some(kernel.region),
            boundary: Boundary::Entry,
            skip: 0,
        }))
        .unwrap();
        assert_ne!(seq.load(Ordering::Acquire), cancelled);
        assert!(mcc.anything_armed(), "a halting point is armed");
        tool.set_halting_point(None).unwrap();
        assert!(!mcc.anything_armed());
        tool.set_step_point(None, 0).unwrap();
        assert!(mcc.anything_armed(), "a step is armed");
    }

    /// A tool takes back only the point it armed, releases only the halt it means, and can
    /// release a target whose state word was overwritten with garbage.
    #[test]
    fn a_tool_takes_back_its_own_point_and_can_force_a_release() {
        let dir = tempfile::tempdir().unwrap();
        let (mcc, kernel, tool) = kernel_and_tool(dir.path(), "take-back");
        let at_entry = Some(HaltingPoint {
            region: Some(kernel.region),
            boundary: Boundary::Entry,
            skip: 0,
        });
        let mine = tool.set_halting_point(at_entry).unwrap();
        let theirs = tool.set_step_point(None, 0).unwrap();
        assert!(!tool.disarm(&mine).unwrap(), "another point replaced it");
        assert!(mcc.anything_armed());
        assert!(tool.disarm(&theirs).unwrap());
        assert!(!mcc.anything_armed());
        assert!(!tool.disarm(&theirs).unwrap(), "only once");

        let armed = tool.set_halting_point(at_entry).unwrap();
        std::thread::scope(|scope| {
            let blocked = scope.spawn(|| mcc.boundary(kernel.region, Boundary::Entry));
            let halt = tool
                .wait_for_halt(armed.after, Duration::from_secs(10))
                .unwrap();
            assert_eq!(halt.state, layout::TargetState::Halted);
            assert!(!tool.disarm(&armed).unwrap(), "the target took it");
            assert!(!tool.release_halt(halt.generation.wrapping_sub(1)).unwrap());
            // A fault injector writes garbage into the state word.
            mcc.segment
                .view()
                .u32_at(header::TARGET_STATE)
                .unwrap()
                .store(0xdead_beef, Ordering::Release);
            assert!(tool.release().is_err(), "the state cannot be read");
            assert_eq!(tool.force_release().unwrap(), halt.generation);
            assert_eq!(blocked.join().unwrap(), HaltOutcome::Released);
        });
        assert_eq!(tool.state().unwrap(), layout::TargetState::Running);
    }

    /// Two threads that read one armed point at the same moment: the first takes it and halts;
    /// the other waits for that halt to be released and then looks at the point the tool left:
    /// the same boundary again halts it, a point elsewhere (or none) lets it run on.
    #[test]
    fn a_thread_that_matched_a_point_another_took_looks_again_after_that_halt() {
        let dir = tempfile::tempdir().unwrap();
        let (mcc, kernel, tool) = kernel_and_tool(dir.path(), "one-halt");
        let other = mcc
            .register_region(2, 40, RegionKind::Function, "other", "k.c")
            .unwrap();
        let at_exit = Some(HaltingPoint {
            region: Some(kernel.region),
            boundary: Boundary::Exit,
            skip: 0,
        });
        let no_halt = || -> HaltingThread { panic!("a halt began at a point not armed") };
        // The other thread took the point and its halt is over; the tool armed one elsewhere.
        let stale = tool.set_halting_point(at_exit).unwrap();
        let elsewhere = tool.set_step_point(Some(other.region), 0).unwrap();
        let outcome = mcc.boundary_slow(stale.word, kernel.region, Boundary::Exit, no_halt);
        assert_eq!(outcome, HaltOutcome::NotHalted);
        let point = mcc.segment.view().u64_at(header::HALTING_POINT).unwrap();
        assert_eq!(point.load(Ordering::Acquire), elsewhere.word);
        assert!(tool.disarm(&elsewhere).unwrap());

        let armed = tool.set_halting_point(at_exit).unwrap();
        std::thread::scope(|scope| {
            let first = scope.spawn(|| mcc.boundary(kernel.region, Boundary::Exit));
            let halt = tool
                .wait_for_halt(armed.after, Duration::from_secs(10))
                .unwrap();
            assert!(!tool.disarm(&armed).unwrap(), "the first took it");
            // The second read the point before the first took it; the third reads it taken.
            // Both wait for that halt.
            let second = scope.spawn(|| {
                mcc.boundary_slow(armed.word, kernel.region, Boundary::Exit, || {
                    HaltingThread::default()
                })
            });
            let third = scope.spawn(|| mcc.boundary(kernel.region, Boundary::Exit));
            std::thread::sleep(Duration::from_millis(50));
            assert_eq!(
                tool.halt_generation(),
                halt.generation,
                "one halt at a time"
            );
            // The tool's next step is to the same exit: one of them halts there.
            let again = tool.set_halting_point(at_exit).unwrap();
            assert!(tool.release_halt(halt.generation).unwrap());
            assert_eq!(first.join().unwrap(), HaltOutcome::Released);
            let next = tool
                .wait_for_halt(again.after, Duration::from_secs(10))
                .unwrap();
            assert_eq!(next.position, Some((kernel.region, Boundary::Exit)));
            // Released with nothing armed after it: the other runs on.
            assert!(tool.release_halt(next.generation).unwrap());
            let mut outcomes = [second.join().unwrap(), third.join().unwrap()];
            outcomes.sort_by_key(|o| *o != HaltOutcome::NotHalted);
            assert_eq!(outcomes, [HaltOutcome::NotHalted, HaltOutcome::Released]);
            assert_eq!(tool.halt_generation(), next.generation);
        });
        assert_eq!(tool.state().unwrap(), layout::TargetState::Running);
        assert!(!mcc.anything_armed(), "the taken point was cleared");
    }

    /// What the tool-side checks would refuse, written into a slot raw, is rejected by the
    /// target and never served: histogram bucket bytes that make more buckets than a slot
    /// holds, unknown analysis bits, and an event at a level the runtime lacks (`reject`).
    #[test]
    fn raw_requests_the_target_cannot_serve_are_rejected() {
        let dir = tempfile::tempdir().unwrap();
        let (mcc, kernel, tool) = kernel_and_tool(dir.path(), "raw-requests");
        let per_slot = mcc.layout.buckets_per_slot() as u64;
        let histogram = RequestSpec {
            region: kernel.region,
            target: RequestTarget::Range(AddressRange::new(0x10_0000, 64 * per_slot)),
            event: "PAPI_L1_DCM".parse().unwrap(),
            mode: Mode::Histogram {
                buckets: 16,
                bucket_bytes: 64,
            },
            aggregation: Aggregation::Summed,
            analyses: 0,
        };
        assert_eq!(
            histogram.histogram_buckets(AddressRange::new(0, 64 * per_slot)),
            Some(per_slot)
        );
        let slot_words = |slot: u32| {
            mcc.layout
                .entry_words(mcc.segment.view(), Table::RequestSlots, slot as usize)
                .unwrap()
        };
        let state =
            |slot: u32| SlotState::from_word(slot_words(slot)[0].load(Ordering::Acquire)).unwrap();
        let overwrite = |slot: u32, word: usize, value: u64| {
            slot_words(slot)[word].store(value, Ordering::Relaxed);
        };

        // Exactly a slot's worth of 64-byte buckets is served.
        let fits = tool.submit(&histogram).unwrap();
        let served = mcc.active_requests(kernel);
        assert_eq!(served.len(), 1);
        tool.cancel(fits).unwrap();

        // Eight-byte buckets over the same range: eight times too many.
        let too_fine = tool.submit(&histogram).unwrap();
        overwrite(too_fine.slot, 6, 8);
        assert!(mcc.active_requests(kernel).is_empty());
        assert_eq!(state(too_fine.slot), SlotState::Rejected);

        let unknown_analysis = tool.submit(&histogram).unwrap();
        let w5 = slot_words(unknown_analysis.slot)[5].load(Ordering::Relaxed);
        overwrite(unknown_analysis.slot, 5, w5 | 1 << (16 + 7));
        assert!(mcc.active_requests(kernel).is_empty());
        assert_eq!(state(unknown_analysis.slot), SlotState::Rejected);

        let unservable = tool.submit(&histogram).unwrap();
        let active = mcc.active_requests(kernel);
        assert_eq!(active.len(), 1);
        mcc.reject(active[0].slot, active[0].generation);
        assert_eq!(state(unservable.slot), SlotState::Rejected);
        assert!(
            mcc.active_requests(kernel).is_empty(),
            "a rejected request stays rejected"
        );
    }

    /// Any words at all in a pending request slot of a region (a tool with a bug, or another
    /// process of the same user writing the segment): the target reads them without panicking,
    /// and serves only what the tool side's own checks accept, for that region, with a
    /// histogram that fits the slot's result space; a served request binds to a simulator's
    /// counter array without panicking (an error there is said and the request skipped, as
    /// `Monitoring::start` does).
    #[test]
    fn random_slot_words_are_served_only_when_a_tool_could_have_sent_them() {
        use proptest::prelude::*;
        use proptest::test_runner::{Config, TestRunner};

        let dir = tempfile::tempdir().unwrap();
        let (mcc, kernel, tool) = kernel_and_tool(dir.path(), "random-slots");
        let other = mcc
            .register_region(1, 40, RegionKind::Marker, "other", "k.c")
            .unwrap();
        let a = mcc
            .register_data_structure(
                "a",
                // Large, so explicit bucket widths can ask for more buckets than a slot holds.
                AddressRange::new(0x10_0000, 1 << 30),
                DataStructureKind::HeapRegistered,
            )
            .unwrap();
        let per_slot = mcc.layout.buckets_per_slot();
        let template = RequestSpec {
            region: kernel.region,
            target: RequestTarget::DataStructure(a),
            event: "PAPI_L1_DCM".parse().unwrap(),
            mode: Mode::Static,
            aggregation: Aggregation::Summed,
            analyses: 0,
        };
        let spec: epcache_sim::cache::HierarchySpec = "D1=8K,2,32;LL=1M,8,64".parse().unwrap();
        // The runner's closure is `Fn`: what it changes sits in cells.
        let sim = std::cell::RefCell::new(
            epcache_sim::simulator::Simulator::new(
                &spec,
                epcache_sim::monitor::CounterArrayConfig::default(),
            )
            .unwrap(),
        );
        // Words 1 to 7 random, or one of them random and the rest a valid request's (a static
        // count or a histogram): wholly
        // random words are almost never valid, one bad field at a time reaches every check.
        let histogram = RequestSpec {
            mode: Mode::Histogram {
                buckets: 16,
                bucket_bytes: 0,
            },
            ..template
        };
        let words = (
            prop::collection::vec(any::<u64>(), layout::SLOT_WORDS - 1),
            prop::option::of(0..layout::SLOT_WORDS - 1),
            any::<bool>(),
            any::<bool>(),
        );
        let served = std::cell::Cell::new(0u32);
        let mut runner = TestRunner::new(Config::with_cases(2000));
        runner
            .run(&words, |(random, only, near_valid, as_histogram)| {
                let sent = if as_histogram { &histogram } else { &template };
                let handle = tool.submit(sent).unwrap();
                let slot = mcc
                    .layout
                    .entry_words(
                        mcc.segment.view(),
                        Table::RequestSlots,
                        handle.slot as usize,
                    )
                    .unwrap();
                let valid: Vec<u64> = slot[1..]
                    .iter()
                    .map(|w| w.load(Ordering::Relaxed))
                    .collect();
                for (i, word) in slot[1..].iter().enumerate() {
                    let value = match only {
                        Some(j) if j != i => valid[i],
                        // Small values hit the enums' and counts' edges more often.
                        _ if near_valid => random[i] % 1024,
                        _ => random[i],
                    };
                    word.store(value, Ordering::Relaxed);
                }
                for entry in [kernel, other] {
                    for request in mcc.active_requests(entry) {
                        served.set(served.get() + 1);
                        prop_assert_eq!(request.spec.region, entry.region);
                        prop_assert!(!request.range.is_empty());
                        if let Some(n) = request.spec.histogram_buckets(request.range) {
                            prop_assert!((1..=per_slot as u64).contains(&n), "{} buckets", n);
                        }
                        // The tool side accepts it too (in a slot of its own).
                        let resent = tool.submit(&request.spec);
                        prop_assert!(resent.is_ok(), "{:?}: {:?}", request.spec, resent);
                        tool.cancel(resent.unwrap()).unwrap();
                        let event = request.spec.event.to_string();
                        let mut sim = sim.borrow_mut();
                        let mut monitor = sim.monitor_mut();
                        let _ = match request.spec.histogram_buckets(request.range) {
                            None => monitor.add_event(&event, request.range).map(drop),
                            Some(n) => {
                                let lines = request.range.len().div_ceil(n).div_ceil(32);
                                monitor
                                    .add_histogram(&event, request.range, lines.max(1))
                                    .map(drop)
                            }
                        };
                        let _ = monitor.cleanup();
                    }
                }
                // Back to the valid words, so the cancel finds the slot's region and clears
                // its flag.
                for (word, value) in slot[1..].iter().zip(&valid) {
                    word.store(*value, Ordering::Relaxed);
                }
                let _ = tool.cancel(handle);
                Ok(())
            })
            .unwrap();
        assert!(
            served.get() > 0,
            "no random request was valid: the test checks nothing served"
        );
    }

    /// A daemon killed with requests placed leaves them taken for the target's life: the next
    /// tool takes back those whose owner is gone, by pid and start time, keeping their last
    /// results, and leaves a live tool's alone (its own, another live process's).
    #[test]
    fn slots_of_dead_tools_are_taken_back_with_their_results_and_live_ones_are_not() {
        use crate::layout::SlotOwner;

        let dir = tempfile::tempdir().unwrap();
        let (mcc, kernel, tool) = kernel_and_tool(dir.path(), "reclaim");
        let spec = RequestSpec {
            region: kernel.region,
            target: RequestTarget::Range(AddressRange::new(0x1000, 4096)),
            event: "PAPI_L1_DCM".parse().unwrap(),
            mode: Mode::Static,
            aggregation: Aggregation::Summed,
            analyses: 0,
        };
        let mut reaped = std::process::Command::new("true").spawn().unwrap();
        let dead_pid = reaped.id();
        reaped.wait().unwrap();
        let mut sleeper = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let process::Liveness::Alive {
            start_time: sleeper_start,
        } = process::liveness(sleeper.id())
        else {
            panic!("the sleeper is not running");
        };
        let me = process::own_start_time();
        let owners = [
            // Gone.
            SlotOwner {
                pid: dead_pid,
                start_time: 1,
            },
            // This pid, but another start time: a process that had the pid before.
            SlotOwner {
                pid: std::process::id(),
                start_time: me + 1,
            },
            // Another live tool process.
            SlotOwner {
                pid: sleeper.id(),
                start_time: sleeper_start,
            },
        ];
        let mut handles = Vec::new();
        for owner in owners {
            let handle = tool.submit(&spec).unwrap();
            let words = mcc
                .layout
                .entry_words(
                    mcc.segment.view(),
                    Table::RequestSlots,
                    handle.slot as usize,
                )
                .unwrap();
            owner.store(words, handle.generation);
            handles.push(handle);
        }
        let mine = tool.submit(&spec).unwrap();
        let served = mcc.active_requests(kernel);
        assert_eq!(served.len(), 4);
        for (i, r) in served.iter().enumerate() {
            let result = RequestResult::summed(r.generation, 1, 10 + i as u64, Vec::new());
            assert!(mcc.write_result(r.slot, &result).unwrap());
        }

        // Another tool (here the same process, as a second daemon would attach).
        let other = TargetHandle::attach(mcc.shm_id()).unwrap();
        let taken = other.reclaim_abandoned().unwrap();
        let taken_slots: Vec<u32> = taken.iter().map(|a| a.handle.slot).collect();
        assert_eq!(taken_slots, [handles[0].slot, handles[1].slot]);
        for (a, owner) in taken.iter().zip(owners) {
            assert_eq!(a.owner, owner);
            assert_eq!(a.spec, Some(spec));
            let result = a.result.as_ref().expect("its published result is kept");
            assert_eq!(result.generation, a.handle.generation);
            assert!((10..14).contains(&result.total()), "{result:?}");
            assert_eq!(
                tool.request_state(a.handle).unwrap(),
                Some(SlotState::Cancelled)
            );
        }
        for live in [handles[2], mine] {
            assert_eq!(tool.request_state(live).unwrap(), Some(SlotState::Active));
            assert!(tool.read_result(live).unwrap().is_some());
        }
        assert_eq!(
            mcc.active_requests(kernel).len(),
            2,
            "the flags are cleared"
        );
        assert!(other.reclaim_abandoned().unwrap().is_empty(), "taken once");
        // The taken slots are free again: all but the two live requests can be placed.
        let capacity = tool.request_slots() as usize;
        let placed: Vec<_> = (0..capacity - 2)
            .map(|_| tool.submit(&spec).unwrap())
            .collect();
        assert!(matches!(
            tool.submit(&spec),
            Err(crate::tool::ToolError::NoFreeSlot { .. })
        ));
        assert_eq!(placed.len(), capacity - 2);
        let _ = sleeper.kill();
        let _ = sleeper.wait();
    }

    /// Threads that each allocate a block at one line (a private array in a parallel region)
    /// bind a request on the site to their own latest block, whichever thread allocated last;
    /// a thread that allocated none there binds to the process's latest.
    #[test]
    fn a_thread_binds_a_site_to_the_block_it_allocated_itself() {
        let dir = tempfile::tempdir().unwrap();
        let (mcc, kernel, tool) = kernel_and_tool(dir.path(), "own-blocks");
        let site = SiteKey::new("priv.c", 9);
        tool.submit(&RequestSpec {
            region: kernel.region,
            target: RequestTarget::AllocationSite {
                site,
                block: SiteBlock::Latest,
            },
            event: "PAPI_L1_DCW".parse().unwrap(),
            mode: Mode::Static,
            aggregation: Aggregation::Summed,
            analyses: 0,
        })
        .unwrap();
        let request = mcc.active_requests(kernel).remove(0);
        let allocate = |start| {
            let range = AddressRange::new(start, 16384);
            mcc.register_data_structure_with(
                "priv.c:9",
                range,
                DataStructureKind::AllocationSite,
                true,
                &DataStructureDetails {
                    site: Some(site),
                    shape: None,
                },
            )
            .unwrap();
            range
        };
        let (first_allocated, first_ready) = std::sync::mpsc::channel();
        let (second_allocated, second_ready) = std::sync::mpsc::channel();
        let (mcc, request, allocate) = (&mcc, &request, &allocate);
        std::thread::scope(|scope| {
            let first = scope.spawn(move || {
                let mine = allocate(0x10_0000);
                first_allocated.send(()).unwrap();
                // The other thread allocates after this one: its block is the latest.
                second_ready.recv().unwrap();
                (mine, mcc.where_now(request))
            });
            let second = scope.spawn(move || {
                first_ready.recv().unwrap();
                let mine = allocate(0x20_0000);
                second_allocated.send(()).unwrap();
                (mine, mcc.where_now(request))
            });
            for thread in [first, second] {
                let (mine, bound) = thread.join().unwrap();
                assert_eq!(bound, Some(mine));
            }
        });
        assert_eq!(
            mcc.where_now(request),
            Some(AddressRange::new(0x20_0000, 16384)),
            "a thread with no block of its own there"
        );
    }

    /// A heap array can be requested before the program allocates it. A request on an
    /// allocation site is served over no bytes, unbound (not rejected), while the site has no
    /// live block, for the runtime to follow the site's data once the instance allocates it;
    /// it binds at the region's entry to the latest or the largest block, tells the tool which,
    /// and follows the site to its next block.
    #[test]
    fn a_site_request_waits_for_a_block_and_binds_to_the_latest_or_the_largest() {
        let dir = tempfile::tempdir().unwrap();
        let (mcc, kernel, tool) = kernel_and_tool(dir.path(), "site-requests");
        let site = SiteKey::new("prog.c", 50);
        let request = |block| RequestSpec {
            region: kernel.region,
            target: RequestTarget::AllocationSite { site, block },
            event: "PAPI_L1_LDM".parse().unwrap(),
            mode: Mode::Histogram {
                buckets: 8,
                bucket_bytes: 0,
            },
            aggregation: Aggregation::Summed,
            analyses: 0,
        };
        let latest = tool.submit(&request(SiteBlock::Latest)).unwrap();
        let largest = tool.submit(&request(SiteBlock::Largest)).unwrap();
        let no_block_yet = mcc.active_requests(kernel);
        assert_eq!(no_block_yet.len(), 2);
        assert!(no_block_yet.iter().all(|r| r.range.is_empty()));
        for handle in [latest, largest] {
            assert_eq!(tool.request_state(handle).unwrap(), Some(SlotState::Active));
            assert_eq!(tool.request_binding(handle).unwrap(), None);
        }
        // Where the runtime, following it inside the instance, finds its data: none yet.
        assert_eq!(mcc.where_now(&no_block_yet[0]), None);
        let block = |start, bytes, at: SiteKey| {
            mcc.register_data_structure_with(
                "prog.c:50",
                AddressRange::new(start, bytes),
                DataStructureKind::AllocationSite,
                true,
                &DataStructureDetails {
                    site: Some(at),
                    shape: None,
                },
            )
            .unwrap()
        };
        let big = block(0x10_0000, 8192, site);
        let small = block(0x20_0000, 4096, site);
        block(0x30_0000, 65536, SiteKey::new("prog.c", 51));
        let served: Vec<(u32, AddressRange)> = mcc
            .active_requests(kernel)
            .iter()
            .map(|r| (r.slot, r.range))
            .collect();
        assert_eq!(
            served,
            [
                (latest.slot, AddressRange::new(0x20_0000, 4096)),
                (largest.slot, AddressRange::new(0x10_0000, 8192)),
            ]
        );
        assert_eq!(tool.request_binding(latest).unwrap(), Some(small));
        assert_eq!(tool.request_binding(largest).unwrap(), Some(big));
        assert_eq!(tool.request_state(latest).unwrap(), Some(SlotState::Active));
        // The latest block freed, and another allocated where it was: followed.
        mcc.unregister_data_structure(small);
        let again = AddressRange::new(0x40_0000, 4096);
        mcc.reuse_data_structure(
            small,
            again,
            &DataStructureDetails {
                site: Some(site),
                shape: None,
            },
        );
        let served = mcc.active_requests(kernel);
        assert_eq!(served[0].range, again);
        assert_eq!(mcc.where_now(&no_block_yet[0]), Some(again));
        // Every block freed: the next instance is served over no bytes, bound as it was.
        mcc.unregister_data_structure(small);
        mcc.unregister_data_structure(big);
        assert!(
            mcc.active_requests(kernel)
                .iter()
                .all(|r| r.range.is_empty())
        );
        assert_eq!(tool.request_state(latest).unwrap(), Some(SlotState::Active));
        assert_eq!(tool.request_binding(latest).unwrap(), Some(small));
    }

    /// A request on an allocatable is served over no bytes, unbound, while it is unallocated,
    /// and follows it to the entry that continues it when it is allocated again at another
    /// size; a freed registered array is still refused.
    #[test]
    fn an_allocatable_request_waits_for_its_data_and_follows_it() {
        let dir = tempfile::tempdir().unwrap();
        let (mcc, kernel, tool) = kernel_and_tool(dir.path(), "allocatables");
        let first = mcc
            .register_data_structure_with(
                "fields::u",
                AddressRange::new(0, 0),
                DataStructureKind::Allocatable,
                false,
                &DataStructureDetails::default(),
            )
            .unwrap();
        let spec = RequestSpec {
            region: kernel.region,
            target: RequestTarget::DataStructure(first),
            event: "PAPI_L1_LDM".parse().unwrap(),
            mode: Mode::Static,
            aggregation: Aggregation::Summed,
            analyses: 0,
        };
        let handle = tool.submit(&spec).unwrap();
        let unallocated = mcc.active_requests(kernel);
        assert!(unallocated[0].range.is_empty());
        assert_eq!(tool.request_state(handle).unwrap(), Some(SlotState::Active));
        assert_eq!(tool.request_binding(handle).unwrap(), None);
        let data = AddressRange::new(0x10_0000, 8000);
        mcc.reuse_data_structure(first, data, &DataStructureDetails::default());
        // Allocated inside the instance: followed there, and bound for the tool.
        assert_eq!(mcc.where_now(&unallocated[0]), Some(data));
        assert_eq!(tool.request_binding(handle).unwrap(), Some(first));
        assert_eq!(mcc.active_requests(kernel)[0].range, data);
        mcc.unregister_data_structure(first);
        assert!(
            mcc.active_requests(kernel)[0].range.is_empty(),
            "deallocated"
        );
        let bigger = AddressRange::new(0x20_0000, 16000);
        let second = mcc
            .register_data_structure_with(
                "fields::u",
                bigger,
                DataStructureKind::Allocatable,
                true,
                &DataStructureDetails::default(),
            )
            .unwrap();
        mcc.set_successor(first, second);
        assert_eq!(mcc.active_requests(kernel)[0].range, bigger);
        assert_eq!(tool.request_binding(handle).unwrap(), Some(second));

        let freed = mcc
            .register_data_structure("x", data, DataStructureKind::HeapRegistered)
            .unwrap();
        mcc.unregister_data_structure(freed);
        assert!(matches!(
            tool.submit(&RequestSpec {
                target: RequestTarget::DataStructure(freed),
                ..spec
            }),
            Err(ToolError::NoSuchDataStructure { .. })
        ));
    }

    #[test]
    fn epcache_wait_values() {
        assert_eq!(start_wait_from_env(None), None);
        assert_eq!(start_wait_from_env(Some("0")), None);
        assert_eq!(start_wait_from_env(Some("off")), None);
        assert_eq!(start_wait_from_env(Some("yes")), Some(DEFAULT_START_WAIT));
        assert_eq!(
            start_wait_from_env(Some("2.5")),
            Some(Duration::from_millis(2500))
        );
        assert_eq!(start_wait_from_env(Some("soon")), Some(DEFAULT_START_WAIT));
    }

    #[test]
    fn a_waiting_target_says_whether_a_tool_is_attached() {
        use layout::TargetState::{Halted, WaitingForTool};
        assert_eq!(
            wait_notice(WaitingForTool, 0),
            "waits at start; no tool is attached yet"
        );
        assert_eq!(
            wait_notice(WaitingForTool, 1),
            "waits at start; a tool is attached and has not released it yet"
        );
        assert!(wait_notice(Halted, 2).starts_with("is halted; 2 tools are attached"));
    }
}
