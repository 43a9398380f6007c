//! The tool's side of the segment (the paper's RIP), which the daemon uses: attach, validate
//! every field before use, list regions and data structures, submit and cancel requests, set
//! halting points, release the target, wait for its halts and read results. No byte pattern in
//! the segment makes it panic; a wrong one is a typed error.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::config_table::{ConfigEntry, ConfigTable};
use super::discovery::TargetRecord;
use super::futex;
use super::layout::{
    self, Boundary, DataStructureIndex, DataStructureInfo, DataStructureKind, HaltingPoint,
    HaltingThread, Layout, LayoutError, MAX_REQUEST_SLOTS, Mode, PublishedModel, RegionIndex,
    RegionInfo, RequestResult, RequestSpec, RequestTarget, SlotOwner, SlotState, Table,
    TargetState, TraceState, analysis_bits, header,
};
use super::process;
use super::sysv::{Access, Segment, SegmentError, ViewError};
use epcache_sim::cache::MAX_CORES;

/// How often a waiting tool checks that the target still lives; a halt wakes it at once anyway.
const LIVENESS_CHECK: Duration = Duration::from_millis(100);

/// Something a tool could not do, or found wrong.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// A System V call failed.
    #[error(transparent)]
    Segment(#[from] SegmentError),
    /// The segment is not a valid epcache segment.
    #[error("segment {shm_id}: {source}")]
    Layout {
        /// The segment id.
        shm_id: i32,
        /// What is wrong.
        source: LayoutError,
    },
    /// A discovery record names a segment of another process.
    #[error(
        "the record of pid {record_pid} names segment {shm_id}, which belongs to pid {header_pid}; the record is stale: list targets again"
    )]
    StaleRecord {
        /// The segment id.
        shm_id: i32,
        /// The pid in the record.
        record_pid: u32,
        /// The pid in the segment.
        header_pid: u32,
    },
    /// A discovery record names a segment the process it names did not create: a copied or
    /// forged segment, which must not make a tool act on (signal, halt) that process.
    #[error(
        "the record of pid {record_pid} names segment {shm_id}, which was created by pid {creator_pid}, not by that process; the segment is a copy or a forgery and is ignored"
    )]
    ForeignSegment {
        /// The segment id.
        shm_id: i32,
        /// The pid in the record (and in the segment's header).
        record_pid: u32,
        /// The pid that created the segment (`shm_cpid`).
        creator_pid: i32,
    },
    /// A request names a region that does not exist.
    #[error(
        "region {index} does not exist (the target has {count} regions); list the regions first"
    )]
    NoSuchRegion {
        /// The index asked for.
        index: u32,
        /// Regions published.
        count: usize,
    },
    /// A request names a data structure that does not exist or was freed.
    #[error(
        "data structure {index} does not exist or was unregistered (the target has {count}); list the data structures first"
    )]
    NoSuchDataStructure {
        /// The index asked for.
        index: u32,
        /// Data structures published.
        count: usize,
    },
    /// A request the target could never serve.
    #[error("invalid request: {why}")]
    InvalidRequest {
        /// What is wrong.
        why: String,
    },
    /// Every request slot is in use.
    #[error("all {capacity} request slots are in use; cancel a request first")]
    NoFreeSlot {
        /// Slots in the segment.
        capacity: usize,
    },
    /// The request was cancelled or its slot reused.
    #[error(
        "request in slot {slot} (generation {generation}) no longer exists; it was cancelled or replaced"
    )]
    StaleRequest {
        /// The slot.
        slot: u32,
        /// The generation the tool holds.
        generation: u32,
    },
    /// The target process is gone without saying goodbye.
    #[error(
        "target pid {pid} died (killed or crashed) without exiting normally; results already read are all there is, and its segment disappears when this tool detaches"
    )]
    TargetDied {
        /// Its pid.
        pid: u32,
    },
    /// The target finished normally.
    #[error(
        "target pid {pid} has exited; its last results can still be read until the tool detaches"
    )]
    TargetExited {
        /// Its pid.
        pid: u32,
    },
    /// The target did not halt in time.
    #[error(
        "target pid {pid} did not halt within {} s; it is still running: wait again, or set a halting point it will reach",
        waited.as_secs_f64()
    )]
    Timeout {
        /// Its pid.
        pid: u32,
        /// How long the tool waited.
        waited: Duration,
    },
    /// A trace order while another is asked for or being recorded.
    #[error(
        "target pid {pid} already has a trace asked for or being recorded (it is {state:?}); one trace at a time: wait until it is written"
    )]
    TraceBusy {
        /// Its pid.
        pid: u32,
        /// Where the other order is.
        state: TraceState,
    },
    /// A trace order to a target that no longer waits at its start.
    #[error(
        "target pid {pid} is {state:?}, not waiting at its start: a trace is recorded from the program's first access, so that re-simulating it gives the live counts exactly; start the program with EPCACHE_WAIT=yes and ask while it waits (or record it alone: `epcache run --trace REGION`)"
    )]
    TraceNotAtStart {
        /// Its pid.
        pid: u32,
        /// What it is doing.
        state: TargetState,
    },
    /// Release asked while the target runs.
    #[error(
        "target pid {pid} is not halted (it is {state:?}); wait for a halt before releasing it"
    )]
    NotHalted {
        /// Its pid.
        pid: u32,
        /// What it is doing.
        state: TargetState,
    },
}

/// A submitted request: its slot and the generation that tells it apart from later reuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestHandle {
    /// The slot.
    pub slot: u32,
    /// Its generation.
    pub generation: u32,
}

/// A request whose tool died, taken back from its slot by
/// [`TargetHandle::reclaim_abandoned`]: what it asked for and what it had measured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Abandoned {
    /// The slot and generation it had.
    pub handle: RequestHandle,
    /// The tool process that placed it, now gone.
    pub owner: SlotOwner,
    /// The request, when its words still read as one.
    pub spec: Option<RequestSpec>,
    /// Its last result, read after the slot was taken back (so none is written after it).
    pub result: Option<RequestResult>,
}

/// A halting point as a tool armed it: the word it stored and the halt generation just before,
/// so the tool can later take back exactly that point ([`TargetHandle::disarm`]) and tell a
/// halt at it from earlier ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArmedPoint {
    /// The halting-point word stored (0 when the point was cleared).
    pub word: u64,
    /// The halt generation when it was armed: a halt at the point has a later one.
    pub after: u32,
}

/// A halt of the target, as the tool sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Halt {
    /// Halt generation (pass it to the next [`TargetHandle::wait_for_halt`]).
    pub generation: u32,
    /// Halted at a point, or waiting at start.
    pub state: TargetState,
    /// The region boundary it stopped at; `None` at start.
    pub position: Option<(RegionIndex, Boundary)>,
    /// The thread that stopped there, as far as the target said.
    pub thread: HaltingThread,
}

/// A tool's attachment to one target's segment.
#[derive(Debug)]
pub struct TargetHandle {
    segment: Segment,
    layout: Layout,
    config: ConfigTable,
    pid: u32,
    start_time: u64,
    /// This tool process, as the owner of the requests it places.
    me: SlotOwner,
}

impl TargetHandle {
    /// Attaches to segment `shm_id` (owned by this user, mode 0600) and validates its header.
    pub fn attach(shm_id: i32) -> Result<TargetHandle, ToolError> {
        let segment = Segment::attach(shm_id, Access::ReadWrite)?;
        let layout = Layout::validate(segment.view())
            .map_err(|source| ToolError::Layout { shm_id, source })?;
        let view = segment.view();
        let word = |off| view.load_u32(off, Ordering::Relaxed);
        let pid = word(header::TARGET_PID).unwrap_or(0);
        let start_time = view
            .load_u64(header::TARGET_START_TIME, Ordering::Relaxed)
            .unwrap_or(0);
        Ok(TargetHandle {
            config: ConfigTable::new(&layout),
            segment,
            layout,
            pid,
            start_time,
            me: SlotOwner {
                pid: std::process::id(),
                start_time: process::own_start_time(),
            },
        })
    }

    /// Attaches to the segment a discovery record names, checking it belongs to that process:
    /// the header names the same pid and start time, the kernel says that pid created the
    /// segment, and the process with that pid is the one that started at that time. Only then
    /// may a tool act on the pid (halt it, signal it).
    pub fn attach_record(record: &TargetRecord) -> Result<TargetHandle, ToolError> {
        let handle = Self::attach(record.shm_id)?;
        if handle.pid != record.pid || handle.start_time != record.start_time {
            return Err(ToolError::StaleRecord {
                shm_id: record.shm_id,
                record_pid: record.pid,
                header_pid: handle.pid,
            });
        }
        let creator_pid = handle.segment.stat()?.creator_pid;
        if u32::try_from(creator_pid).ok() != Some(record.pid) {
            return Err(ToolError::ForeignSegment {
                shm_id: record.shm_id,
                record_pid: record.pid,
                creator_pid,
            });
        }
        if !process::is_same_process_alive(record.pid, record.start_time) {
            return Err(ToolError::StaleRecord {
                shm_id: record.shm_id,
                record_pid: record.pid,
                header_pid: handle.pid,
            });
        }
        Ok(handle)
    }

    /// The target's pid.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The segment id.
    pub fn shm_id(&self) -> i32 {
        self.segment.id()
    }

    fn corrupt(&self, source: LayoutError) -> ToolError {
        ToolError::Layout {
            shm_id: self.segment.id(),
            source,
        }
    }

    fn view_err(&self, e: ViewError) -> ToolError {
        self.corrupt(LayoutError::View(e))
    }

    /// What the target is doing.
    pub fn state(&self) -> Result<TargetState, ToolError> {
        let v = self
            .segment
            .view()
            .load_u32(header::TARGET_STATE, Ordering::Acquire)
            .map_err(|e| self.view_err(e))?;
        TargetState::from_word(v).map_err(|e| self.corrupt(e))
    }

    /// Whether the target process still runs (it may have exited without a word if killed).
    pub fn target_alive(&self) -> bool {
        process::is_same_process_alive(self.pid, self.start_time)
    }

    fn count(&self, table: Table, field: usize) -> Result<usize, ToolError> {
        let n = self
            .segment
            .view()
            .load_u32(field, Ordering::Acquire)
            .map_err(|e| self.view_err(e))?;
        self.layout
            .checked_count(table, n)
            .map_err(|e| self.corrupt(e))
    }

    /// The cache spec the target simulates, its counter-array size and its machine's cores,
    /// once the target published them (`None` before).
    pub fn model(&self) -> Result<Option<PublishedModel>, ToolError> {
        let view = self.segment.view();
        let spec = view
            .load_u64(header::CACHE_SPEC, Ordering::Acquire)
            .map_err(|e| self.view_err(e))?;
        if spec == 0 {
            return Ok(None);
        }
        let counters = view
            .load_u32(header::COUNTERS, Ordering::Relaxed)
            .map_err(|e| self.view_err(e))?;
        let cores = view
            .load_u32(header::CORES, Ordering::Relaxed)
            .map_err(|e| self.view_err(e))?;
        if cores as usize > MAX_CORES {
            return Err(self.corrupt(LayoutError::BadHeaderField {
                field: "cores",
                value: u64::from(cores),
                why: "a machine has at most 64 cores",
            }));
        }
        let text = self
            .layout
            .read_name(view, spec as u32, (spec >> 32) as u32)
            .map_err(|e| self.corrupt(e))?;
        Ok(Some(PublishedModel {
            spec: text,
            counters,
            cores,
        }))
    }

    /// The regions the target registered so far.
    pub fn regions(&self) -> Result<Vec<RegionInfo>, ToolError> {
        let n = self.count(Table::Regions, header::REGION_COUNT)?;
        (0..n)
            .map(|i| layout::read_region(self.segment.view(), &self.layout, i))
            .collect::<Result<_, _>>()
            .map_err(|e| self.corrupt(e))
    }

    /// The data structures the target registered so far.
    pub fn data_structures(&self) -> Result<Vec<DataStructureInfo>, ToolError> {
        let n = self.count(Table::DataStructures, header::DATA_STRUCTURE_COUNT)?;
        (0..n)
            .map(|i| layout::read_data_structure(self.segment.view(), &self.layout, i))
            .collect::<Result<_, _>>()
            .map_err(|e| self.corrupt(e))
    }

    /// Data structure `index`, when the target registered it.
    pub fn data_structure(
        &self,
        index: DataStructureIndex,
    ) -> Result<Option<DataStructureInfo>, ToolError> {
        let n = self.count(Table::DataStructures, header::DATA_STRUCTURE_COUNT)?;
        if index.0 as usize >= n {
            return Ok(None);
        }
        layout::read_data_structure(self.segment.view(), &self.layout, index.0 as usize)
            .map(Some)
            .map_err(|e| self.corrupt(e))
    }

    fn config_entry(&self, region: RegionIndex) -> Result<ConfigEntry, ToolError> {
        let count = self.count(Table::Regions, header::REGION_COUNT)?;
        if region.0 as usize >= count {
            return Err(ToolError::NoSuchRegion {
                index: region.0,
                count,
            });
        }
        let info = layout::read_region(self.segment.view(), &self.layout, region.0 as usize)
            .map_err(|e| self.corrupt(e))?;
        // The region table and the hash table must agree, or flags would go to the wrong region.
        match self
            .config
            .lookup(self.segment.view(), info.file_id, info.line)
        {
            Some(entry) if entry.region == region => Ok(entry),
            _ => Err(self.corrupt(LayoutError::BadIndex {
                table: Table::Config,
                what: "region missing from the configuration table, index",
                value: region.0.into(),
                limit: count as u64,
            })),
        }
    }

    /// How many requests the target can hold at once.
    pub fn request_slots(&self) -> u32 {
        u32::try_from(self.layout.span(Table::RequestSlots).capacity).unwrap_or(MAX_REQUEST_SLOTS)
    }

    /// Publishes what the tool just changed: the capture hint first (so a target that sees the
    /// new sequence also sees the hint), then the sequence.
    fn bump_tool_sequence(&self) {
        self.publish_capture_hint();
        if let Ok(seq) = self.segment.view().u32_at(header::TOOL_SEQUENCE) {
            seq.fetch_add(1, Ordering::Release);
            futex::wake(seq, u32::MAX);
        }
    }

    /// Sets [`header::CAPTURE_HINT`] to whether anything is armed. Two tools changing one target
    /// at once could each compute the hint before the other's change; looking again after the
    /// store (sequentially consistent) until the look agrees makes the last store right.
    fn publish_capture_hint(&self) {
        let view = self.segment.view();
        let Ok(hint) = view.u32_at(header::CAPTURE_HINT) else {
            return;
        };
        let mut armed = self.layout.anything_armed(view);
        for _ in 0..8 {
            hint.store(u32::from(armed), Ordering::SeqCst);
            std::sync::atomic::fence(Ordering::SeqCst);
            let now = self.layout.anything_armed(view);
            if now == armed {
                return;
            }
            armed = now;
        }
        // Still changing under us: err on the side that monitors.
        hint.store(1, Ordering::SeqCst);
    }

    /// Checks `spec` against the target's tables and attaches it to its region; the target picks
    /// it up at the region's next entry. A request naming an unallocated allocatable, or an
    /// allocation site, waits in the target until there are bytes to bind it to.
    pub fn submit(&self, spec: &RequestSpec) -> Result<RequestHandle, ToolError> {
        let entry = self.config_entry(spec.region)?;
        // The bytes, when they are known now.
        let range = match spec.target {
            RequestTarget::DataStructure(d) => {
                let all = self.data_structures()?;
                match all.get(d.0 as usize) {
                    Some(ds) if ds.live => Some(ds.range),
                    Some(ds) if ds.kind == DataStructureKind::Allocatable => None,
                    _ => {
                        return Err(ToolError::NoSuchDataStructure {
                            index: d.0,
                            count: all.len(),
                        });
                    }
                }
            }
            RequestTarget::Range(r) if r.is_empty() => {
                return Err(ToolError::InvalidRequest {
                    why: format!("address range [{:#x}, {:#x}) is empty", r.start, r.end),
                });
            }
            RequestTarget::Range(r) => Some(r),
            RequestTarget::AllocationSite { .. } => None,
        };
        // The target makes the same checks and rejects what fails them; refused here, the
        // tool learns why at once. Bytes bound later are checked by the target when it binds.
        let buckets = match (range, spec.mode) {
            (Some(range), _) => spec.histogram_buckets(range),
            (None, Mode::Histogram { buckets, .. }) => Some(u64::from(buckets)),
            (None, Mode::Static) => None,
            (None, Mode::Fields(spans)) => Some(spans.buckets()),
        };
        if let Some(buckets) = buckets
            && (buckets == 0 || buckets > self.layout.buckets_per_slot() as u64)
        {
            return Err(ToolError::InvalidRequest {
                why: format!(
                    "{buckets} histogram buckets over {} bytes; this target's segment holds 1 to {} per request (give fewer buckets or larger ones)",
                    range.map_or(0, |r| r.len()),
                    self.layout.buckets_per_slot()
                ),
            });
        }
        if spec.analyses & !analysis_bits::ALL != 0 {
            return Err(ToolError::InvalidRequest {
                why: format!(
                    "unknown analysis bits {:#x} (known: {:#x})",
                    spec.analyses,
                    analysis_bits::ALL
                ),
            });
        }
        let view = self.segment.view();
        let capacity = self.layout.span(Table::RequestSlots).capacity;
        for slot in 0..capacity {
            let words = self
                .layout
                .entry_words(view, Table::RequestSlots, slot)
                .map_err(|e| self.corrupt(e))?;
            let head = words[0].load(Ordering::Acquire);
            let reusable = matches!(
                SlotState::from_word(head),
                Ok(SlotState::Free | SlotState::Cancelled | SlotState::Rejected)
            );
            let generation = ((head >> 32) as u32).wrapping_add(1);
            if !reusable
                || words[0]
                    .compare_exchange(
                        head,
                        layout::slot_word(SlotState::Claimed, generation),
                        Ordering::AcqRel,
                        Ordering::Relaxed,
                    )
                    .is_err()
            {
                continue;
            }
            self.me.store(words, generation);
            spec.store(words);
            // Release: the target that sees Pending (Acquire) sees the fields stored above, and
            // so does a tool that looks for requests whose owner died.
            words[0].store(
                layout::slot_word(SlotState::Pending, generation),
                Ordering::Release,
            );
            self.config.set_flag(view, entry, slot as u32);
            self.bump_tool_sequence();
            return Ok(RequestHandle {
                slot: slot as u32,
                generation,
            });
        }
        Err(ToolError::NoFreeSlot { capacity })
    }

    /// Withdraws a request; its slot becomes reusable and the target stops serving it.
    pub fn cancel(&self, handle: RequestHandle) -> Result<(), ToolError> {
        let view = self.segment.view();
        let words = self
            .layout
            .entry_words(view, Table::RequestSlots, handle.slot as usize)
            .map_err(|e| self.corrupt(e))?;
        let head = words[0].load(Ordering::Acquire);
        let live = matches!(
            SlotState::from_word(head),
            Ok(SlotState::Pending | SlotState::Active | SlotState::Rejected)
        );
        if (head >> 32) as u32 != handle.generation
            || !live
            || words[0]
                .compare_exchange(
                    head,
                    layout::slot_word(SlotState::Cancelled, handle.generation),
                    Ordering::AcqRel,
                    Ordering::Relaxed,
                )
                .is_err()
        {
            return Err(ToolError::StaleRequest {
                slot: handle.slot,
                generation: handle.generation,
            });
        }
        let region = RegionIndex(words[1].load(Ordering::Relaxed) as u32);
        if let Ok(entry) = self.config_entry(region) {
            self.config.clear_flag(view, entry, handle.slot);
        }
        self.bump_tool_sequence();
        Ok(())
    }

    /// Takes back the slots of requests whose tool process died (a daemon killed or crashed):
    /// they would otherwise stay taken, and be served, for the target's life. A slot is taken
    /// back only when its owner, by pid and start time, is not alive: a live tool's requests,
    /// this one's or another daemon's, are never touched, nor is a pid reused by another
    /// process taken for the owner. Each slot is withdrawn as [`TargetHandle::cancel`] does,
    /// then its last result is read, for the caller to keep: the slot is free for reuse once
    /// this returns. A slot still being claimed (its owner not yet written) is left alone.
    pub fn reclaim_abandoned(&self) -> Result<Vec<Abandoned>, ToolError> {
        let view = self.segment.view();
        let mut taken = Vec::new();
        for slot in 0..self.layout.span(Table::RequestSlots).capacity {
            let words = self
                .layout
                .entry_words(view, Table::RequestSlots, slot)
                .map_err(|e| self.corrupt(e))?;
            let head = words[0].load(Ordering::Acquire);
            let generation = (head >> 32) as u32;
            let state = SlotState::from_word(head);
            if !matches!(
                state,
                Ok(SlotState::Claimed | SlotState::Pending | SlotState::Active)
            ) {
                continue;
            }
            let Some(owner) = SlotOwner::load(words, generation) else {
                continue;
            };
            if owner == self.me || process::is_same_process_alive(owner.pid, owner.start_time) {
                continue;
            }
            // A claim never filled in holds no request.
            let spec = (state != Ok(SlotState::Claimed))
                .then(|| RequestSpec::load(words, self.layout.buckets_per_slot()).ok())
                .flatten();
            if words[0]
                .compare_exchange(
                    head,
                    layout::slot_word(SlotState::Cancelled, generation),
                    Ordering::AcqRel,
                    Ordering::Relaxed,
                )
                .is_err()
            {
                // Someone else changed it first (another tool reclaiming it, the target
                // rejecting it): not ours to take.
                continue;
            }
            if let Some(entry) = spec.and_then(|s| self.config_entry(s.region).ok()) {
                self.config.clear_flag(view, entry, slot as u32);
            }
            let handle = RequestHandle {
                slot: slot as u32,
                generation,
            };
            taken.push(Abandoned {
                handle,
                owner,
                spec,
                result: self.read_result(handle)?,
            });
        }
        if !taken.is_empty() {
            self.bump_tool_sequence();
        }
        Ok(taken)
    }

    /// Sets (or with `None` clears) where the target stops next.
    pub fn set_halting_point(&self, point: Option<HaltingPoint>) -> Result<ArmedPoint, ToolError> {
        self.arm(
            point.and_then(|p| p.region),
            point.map_or(0, |p| p.to_word()),
            point.map_or(0, |p| p.skip),
        )
    }

    /// Sets the halting point to the next boundary, entry or exit, of `region` (or of any
    /// region), after letting `skip` such boundaries pass: a step.
    pub fn set_step_point(
        &self,
        region: Option<RegionIndex>,
        skip: u32,
    ) -> Result<ArmedPoint, ToolError> {
        self.arm(region, HaltingPoint::step_word(region), skip)
    }

    fn arm(
        &self,
        region: Option<RegionIndex>,
        word: u64,
        skip: u32,
    ) -> Result<ArmedPoint, ToolError> {
        let view = self.segment.view();
        if let Some(r) = region {
            self.config_entry(r)?;
        }
        let after = self.halt_generation();
        view.u32_at(header::HALT_SKIP)
            .map_err(|e| self.view_err(e))?
            .store(skip, Ordering::Relaxed);
        // Release: a target that sees the armed point sees its skip count.
        view.u64_at(header::HALTING_POINT)
            .map_err(|e| self.view_err(e))?
            .store(word, Ordering::Release);
        self.bump_tool_sequence();
        Ok(ArmedPoint { word, after })
    }

    /// Clears the halting point if it is still `armed` (the target did not reach it, and nobody
    /// set another since); whether it was.
    pub fn disarm(&self, armed: &ArmedPoint) -> Result<bool, ToolError> {
        if armed.word == 0 {
            return Ok(false);
        }
        let cleared = self
            .segment
            .view()
            .u64_at(header::HALTING_POINT)
            .map_err(|e| self.view_err(e))?
            .compare_exchange(armed.word, 0, Ordering::AcqRel, Ordering::Acquire)
            .is_ok();
        if cleared {
            self.bump_tool_sequence();
        }
        Ok(cleared)
    }

    /// The current halt generation: what to pass to [`TargetHandle::wait_for_halt`] to wait for
    /// the next halt.
    pub fn halt_generation(&self) -> u32 {
        self.segment
            .view()
            .load_u32(header::HALT_GENERATION, Ordering::Acquire)
            .unwrap_or(0)
    }

    fn current_halt(&self, generation: u32) -> Result<Halt, ToolError> {
        let state = self.state()?;
        let (position, thread) = match state {
            TargetState::Halted => {
                let at = self
                    .segment
                    .view()
                    .load_u64(header::HALTED_AT, Ordering::Relaxed)
                    .map_err(|e| self.view_err(e))?;
                let boundary = Boundary::from_word(at >> 32 & 0xff).map_err(|e| self.corrupt(e))?;
                (
                    Some((RegionIndex(at as u32), boundary)),
                    HaltingThread::from_position_word(at),
                )
            }
            _ => (None, HaltingThread::default()),
        };
        Ok(Halt {
            generation,
            state,
            position,
            thread,
        })
    }

    /// Waits until the target halts with a generation other than `after`, exits, dies, or
    /// `timeout` passes. Woken by futex at once on a halt; checks liveness every 100 ms.
    pub fn wait_for_halt(&self, after: u32, timeout: Duration) -> Result<Halt, ToolError> {
        let view = self.segment.view();
        let halt_gen = view
            .u32_at(header::HALT_GENERATION)
            .map_err(|e| self.view_err(e))?;
        let started = Instant::now();
        loop {
            let generation = halt_gen.load(Ordering::Acquire);
            if generation != after {
                let halt = self.current_halt(generation)?;
                return match halt.state {
                    TargetState::Exited => Err(ToolError::TargetExited { pid: self.pid }),
                    TargetState::Halted | TargetState::WaitingForTool => Ok(halt),
                    // Released again before we looked (another tool): wait for the next one.
                    TargetState::Running | TargetState::Starting => {
                        return self
                            .wait_for_halt(generation, timeout.saturating_sub(started.elapsed()));
                    }
                };
            }
            if !self.target_alive() {
                return Err(ToolError::TargetDied { pid: self.pid });
            }
            let waited = started.elapsed();
            if waited >= timeout {
                return Err(ToolError::Timeout {
                    pid: self.pid,
                    waited,
                });
            }
            futex::wait(halt_gen, generation, (timeout - waited).min(LIVENESS_CHECK));
        }
    }

    /// Lets a halted (or start-waiting) target run on.
    pub fn release(&self) -> Result<(), ToolError> {
        let state = self.state()?;
        if !matches!(state, TargetState::Halted | TargetState::WaitingForTool) {
            return Err(ToolError::NotHalted {
                pid: self.pid,
                state,
            });
        }
        let view = self.segment.view();
        let generation = self.halt_generation();
        let release = view
            .u32_at(header::RELEASE_GENERATION)
            .map_err(|e| self.view_err(e))?;
        release.store(generation, Ordering::Release);
        futex::wake(release, u32::MAX);
        Ok(())
    }

    /// Releases the halt of generation `generation` if the target is still in it (halted, or
    /// waiting at start); whether it was. A later halt is left alone.
    pub fn release_halt(&self, generation: u32) -> Result<bool, ToolError> {
        if self.halt_generation() != generation
            || !matches!(
                self.state()?,
                TargetState::Halted | TargetState::WaitingForTool
            )
        {
            return Ok(false);
        }
        let release = self
            .segment
            .view()
            .u32_at(header::RELEASE_GENERATION)
            .map_err(|e| self.view_err(e))?;
        release.store(generation, Ordering::Release);
        futex::wake(release, u32::MAX);
        Ok(true)
    }

    /// Lets the target run on whatever its state word says (a corrupted one included): writes
    /// the current halt generation as released and wakes it. Harmless to a running target,
    /// whose next halt has a later generation. Returns the generation released.
    pub fn force_release(&self) -> Result<u32, ToolError> {
        let generation = self.halt_generation();
        let release = self
            .segment
            .view()
            .u32_at(header::RELEASE_GENERATION)
            .map_err(|e| self.view_err(e))?;
        release.store(generation, Ordering::Release);
        futex::wake(release, u32::MAX);
        Ok(generation)
    }

    /// Where the request stands (pending, active, rejected by the target...); `None` once its
    /// slot was reused for another request.
    pub fn request_state(&self, handle: RequestHandle) -> Result<Option<SlotState>, ToolError> {
        let words = self
            .layout
            .entry_words(
                self.segment.view(),
                Table::RequestSlots,
                handle.slot as usize,
            )
            .map_err(|e| self.corrupt(e))?;
        let head = words[0].load(Ordering::Acquire);
        if (head >> 32) as u32 != handle.generation {
            return Ok(None);
        }
        SlotState::from_word(head)
            .map(Some)
            .map_err(|e| self.corrupt(e))
    }

    /// The data structure the target bound a request to at its region's last entry (one naming
    /// a data structure or an allocation site); `None` while it waits for bytes, and once its
    /// slot was reused for another request.
    pub fn request_binding(
        &self,
        handle: RequestHandle,
    ) -> Result<Option<DataStructureIndex>, ToolError> {
        let words = self
            .layout
            .entry_words(
                self.segment.view(),
                Table::RequestSlots,
                handle.slot as usize,
            )
            .map_err(|e| self.corrupt(e))?;
        let word = words
            .get(layout::SLOT_BINDING_WORD)
            .map_or(0, |w| w.load(Ordering::Acquire));
        Ok(layout::binding_of(word, handle.generation))
    }

    /// The latest result of a request, read consistently; `None` before the target wrote one.
    pub fn read_result(&self, handle: RequestHandle) -> Result<Option<RequestResult>, ToolError> {
        let words = self
            .layout
            .entry_words(self.segment.view(), Table::Results, handle.slot as usize)
            .map_err(|e| self.corrupt(e))?;
        let result = layout::read_result(words, 1000).map_err(|e| self.corrupt(e))?;
        Ok(result.filter(|r| r.generation == handle.generation))
    }
}

mod trace;
pub use trace::{TraceHandle, TraceStatus};
