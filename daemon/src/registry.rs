//! The targets a daemon knows: discovery from the runtime directory, one attachment and one
//! watcher per target, the requests placed through the daemon, and the event broadcast that
//! watch streams and steps listen to.
//!
//! Each target has a blocking watcher task that waits for its halts on the segment's futex
//! (`TargetHandle::wait_for_halt`, in slices of [`WATCH_SLICE`]). After every halt, and at the
//! end of every slice, it reads the results of the requests placed through this daemon and
//! broadcasts the changed ones, so a tool always sees the results of a region before the halt at
//! its exit. The end of a target (normal exit, or death noticed from /proc) is broadcast once and
//! ends the watcher; the attachment stays for [`crate::Config::exited_retention`] so the last
//! results can be read, then the target is forgotten and the segment detached.
//!
//! Requests placed by a tool process that died (a daemon killed or crashed) would keep their
//! slots for the target's life. When the daemon attaches to a target, and every
//! [`RECLAIM_EVERY`] slices after, it takes those slots back (`TargetHandle::reclaim_abandoned`:
//! only slots whose owner, by pid and start time, is gone) and adopts the requests into its
//! registry, owned by `epcached pid N (gone)`, with the last result each had: final, listed and
//! readable like its own, never cancelled in the segment again (their slots are free).
//!
//! A halting point belongs to the session that armed it ([`Session`]): a `Step` call, or the
//! connection a `SetHaltingPoint` came on. When that session ends without the halt having been
//! delivered (the call was dropped or timed out, the connection closed), [`TargetEntry::abandon`]
//! takes the point back if the target has not reached it, and releases the target if it halted
//! there with nobody to receive the halt: no program stays halted for a tool that is gone. A halt
//! a `Step` returned stays, so a tool can read results and step again from another process.
//!
//! Every halt, delivered or not, is held on a lease ([`crate::Config::halt_lease`]): each call
//! naming the target ([`Registry::get`]) and each new halt renews it, and a watcher that finds
//! its target halted (or waiting at start) with the lease run out lets it go on and says so in
//! the log. A tool that stepped and died, or a user who walked away, thus never leaves a program
//! halted for as long as the daemon runs, and a tool that keeps calling keeps it halted.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use dashmap::DashMap;
use epcache_proto::v1;
use epcache_shm::discovery::{self, TargetRecord};
use epcache_shm::layout::{
    Aggregation, Boundary, HaltingThread, Mode, RegionIndex, RequestResult, RequestTarget,
    ResultText, TargetState,
};
use epcache_shm::tool::{Abandoned, ArmedPoint, RequestHandle, TargetHandle, ToolError};
use epcache_sim::analysis::AnalysisReport;
use epcache_sim::cache::HierarchySpec;
use epcache_sim::ranges::AddressRange;
use tokio::sync::{broadcast, watch};
use tokio::task::JoinHandle;

use crate::error::DaemonError;
use crate::model;
use crate::resolve::BoundLater;
use crate::unknown_pid;

/// How long a watcher waits on the halt futex before it looks at results and its stop flag.
pub(crate) const WATCH_SLICE: Duration = Duration::from_millis(100);

/// Events kept for slow watch streams before they must resynchronise.
const EVENT_BACKLOG: usize = 4096;

/// Watch slices between two looks for requests whose tool died (about a second).
pub(crate) const RECLAIM_EVERY: u32 = 10;

/// Longest explanation of a missing analysis report passed on to tools.
const MAX_NOTE_BYTES: usize = 4096;

/// How long an abandoned point's halt may take to show after the target took the point (the
/// target clears the point, then publishes the halt: microseconds apart).
const HALT_IN_FLIGHT: Duration = Duration::from_millis(500);

/// Who a halting point belongs to: its halt is theirs to receive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Session {
    /// One `Step` call, by a daemon-wide call number.
    Step(u64),
    /// The connection a `SetHaltingPoint` came on.
    Connection(u64),
    /// A call that came on no known connection (an in-process server without the daemon's
    /// listeners); nothing takes it back but `Detach`, `Continue` and shutdown.
    Unowned,
    /// A step delivered the halt at the point: the halt stays until its tool (or another)
    /// continues, steps or detaches.
    Delivered,
}

/// The halting point armed through this daemon, and whose it is.
#[derive(Debug, Clone)]
pub(crate) struct HaltOwner {
    /// The tool's name (`Detach` clears the point of its own tool).
    pub(crate) tool: String,
    /// The session whose end takes the point back.
    pub(crate) session: Session,
    /// What was armed.
    pub(crate) armed: ArmedPoint,
}

/// How a target ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct End {
    /// Killed or crashed, rather than finished.
    pub(crate) died: bool,
    /// What the daemon knows, in words.
    pub(crate) reason: String,
    /// When the daemon noticed.
    pub(crate) at: Instant,
}

/// A target's state as its watcher last saw it.
#[derive(Debug, Clone)]
pub(crate) struct Status {
    /// The last halt generation seen.
    pub(crate) generation: u32,
    /// What the segment said.
    pub(crate) state: TargetState,
    /// Where it is halted.
    pub(crate) position: Option<(RegionIndex, Boundary)>,
    /// The thread that halted there, as far as the target said.
    pub(crate) thread: HaltingThread,
    /// Set once it ended.
    pub(crate) end: Option<End>,
}

impl Status {
    /// Whether this status is a halt after generation `g0` (wrapping).
    pub(crate) fn halted_after(&self, g0: u32) -> bool {
        (self.generation.wrapping_sub(g0) as i32) > 0
            && matches!(
                self.state,
                TargetState::Halted | TargetState::WaitingForTool
            )
    }
}

/// Where a request's results come from.
#[derive(Debug, Clone)]
pub(crate) enum Origin {
    /// Placed through this daemon: read from its slot.
    Placed,
    /// Adopted from a tool process that died: the last result it had (none when the target had
    /// written none), final, since its slot was freed.
    Adopted(Option<Arc<RequestResult>>),
}

/// A request placed through this daemon, or adopted from a tool that died.
#[derive(Debug, Clone)]
pub(crate) struct Placed {
    /// How the MRI describes it.
    pub(crate) info: v1::RequestInfo,
    /// Its slot and generation.
    pub(crate) handle: RequestHandle,
    /// Where its results come from.
    pub(crate) origin: Origin,
    /// For a request whose bytes the target binds (an allocation site, an allocatable): how to
    /// describe them once it has ([`TargetEntry::bound`]).
    pub(crate) bound_later: Option<BoundLater>,
}

impl Placed {
    /// A request this daemon placed in `handle`'s slot; `bound_later` for one whose bytes the
    /// target binds.
    pub(crate) fn new(
        info: v1::RequestInfo,
        handle: RequestHandle,
        bound_later: Option<BoundLater>,
    ) -> Placed {
        Placed {
            info,
            handle,
            origin: Origin::Placed,
            bound_later,
        }
    }

    /// Withdraws it from the target, when its slot is still its own (an adopted request's is
    /// not); a request the target already dropped is gone either way.
    pub(crate) fn cancel(&self, handle: &TargetHandle) -> Result<(), ToolError> {
        match self.origin {
            Origin::Placed => match handle.cancel(self.handle) {
                Ok(()) | Err(ToolError::StaleRequest { .. }) => Ok(()),
                Err(e) => Err(e),
            },
            Origin::Adopted(_) => Ok(()),
        }
    }

    /// Its latest result: from the segment, or the one it was adopted with.
    pub(crate) fn read(&self, handle: &TargetHandle) -> Result<Option<RequestResult>, ToolError> {
        match &self.origin {
            Origin::Placed => handle.read_result(self.handle),
            Origin::Adopted(result) => Ok(result.as_deref().cloned()),
        }
    }
}

/// One attached target.
#[derive(Debug)]
pub(crate) struct TargetEntry {
    /// Its discovery record.
    pub(crate) record: TargetRecord,
    /// The attachment.
    pub(crate) handle: TargetHandle,
    status: watch::Sender<Status>,
    /// Requests placed through this daemon, by id.
    pub(crate) requests: Mutex<BTreeMap<u64, Placed>>,
    /// The halting point armed through this daemon last, while it is someone's.
    pub(crate) halt_owner: Mutex<Option<HaltOwner>>,
    /// The last halt generation a `Step` returned to its tool.
    delivered: Mutex<Option<u32>>,
    /// When the halt lease was last renewed: a call naming the target, or a new halt.
    renewed: Mutex<Instant>,
    /// How long a halt lasts unrenewed.
    halt_lease: Duration,
    region_names: Mutex<Vec<String>>,
    stop: AtomicBool,
}

/// Locks a mutex, going on with the data if a panicking holder poisoned it: every critical
/// section here leaves the data consistent.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl TargetEntry {
    /// The pid.
    pub(crate) fn pid(&self) -> u32 {
        self.record.pid
    }

    /// The latest status.
    pub(crate) fn status(&self) -> Status {
        self.status.borrow().clone()
    }

    /// A receiver of status changes.
    pub(crate) fn subscribe(&self) -> watch::Receiver<Status> {
        self.status.subscribe()
    }

    /// Refuses `action` once the target ended.
    pub(crate) fn ensure_live(&self, action: &'static str) -> Result<(), DaemonError> {
        match &self.status.borrow().end {
            Some(end) => Err(DaemonError::TargetEnded {
                pid: self.pid(),
                how: if end.died {
                    "died (killed or crashed)"
                } else {
                    "exited"
                },
                action,
            }),
            None => Ok(()),
        }
    }

    /// The name of region `index`, from a cache refreshed when the target registered more.
    pub(crate) fn region_name(&self, index: RegionIndex) -> String {
        let mut names = lock(&self.region_names);
        if index.0 as usize >= names.len()
            && let Ok(regions) = self.handle.regions()
        {
            *names = regions.into_iter().map(|r| r.name).collect();
        }
        names.get(index.0 as usize).cloned().unwrap_or_default()
    }

    fn position(&self, status: &Status) -> Option<v1::Position> {
        let plus_one = |v: Option<u32>| v.map_or(0, |v| v.saturating_add(1));
        status.position.map(|(region, boundary)| v1::Position {
            region_index: region.0,
            region_name: self.region_name(region),
            boundary: model::boundary(boundary) as i32,
            thread_index: plus_one(status.thread.index),
            openmp_thread: plus_one(status.thread.openmp),
        })
    }

    /// The MRI description of the target as it is now.
    pub(crate) fn describe(&self) -> v1::Target {
        let status = self.status();
        let state = match &status.end {
            Some(End { died: true, .. }) => v1::TargetState::Died,
            Some(End { died: false, .. }) => v1::TargetState::Exited,
            None => model::target_state(status.state),
        };
        let halted = matches!(state, v1::TargetState::Halted);
        v1::Target {
            pid: self.record.pid,
            start_time: self.record.start_time,
            program: self.record.program.clone(),
            shm_id: self.record.shm_id,
            state: state as i32,
            halted_at: if halted { self.position(&status) } else { None },
            regions: self.handle.regions().map_or(0, |r| r.len() as u32),
            data_structures: self.handle.data_structures().map_or(0, |d| d.len() as u32),
            requests: lock(&self.requests).len() as u32,
            cores: self.handle.model().ok().flatten().map_or(0, |m| m.cores),
        }
    }

    /// The MRI form of a halt status.
    pub(crate) fn halt_message(&self, status: &Status) -> v1::Halt {
        v1::Halt {
            generation: status.generation,
            state: model::target_state(status.state) as i32,
            position: self.position(status),
            lease_seconds: u32::try_from(self.halt_lease.as_secs()).unwrap_or(u32::MAX),
        }
    }

    /// Where a halted target is, in words: `the entry of region `work``, or `its start`.
    pub(crate) fn where_halted(&self, status: &Status) -> String {
        status.position.map_or_else(
            || "its start".to_owned(),
            |(region, boundary)| {
                let side = match boundary {
                    Boundary::Entry => "entry",
                    Boundary::Exit => "exit",
                };
                format!("the {side} of region `{}`", self.region_name(region))
            },
        )
    }

    /// Renews the halt lease: a tool is still about.
    pub(crate) fn renew_lease(&self) {
        *lock(&self.renewed) = Instant::now();
    }

    /// Lets the target go on if it is halted (or waiting at start) and nothing renewed the
    /// lease for [`crate::Config::halt_lease`]. Only the halt the watcher saw is released: one
    /// the target reached since is left for the next look.
    fn end_unrenewed_halt(&self) {
        let status = self.status();
        if status.end.is_some()
            || !matches!(
                status.state,
                TargetState::Halted | TargetState::WaitingForTool
            )
        {
            return;
        }
        let idle = lock(&self.renewed).elapsed();
        if idle < self.halt_lease {
            return;
        }
        match self.handle.release_halt(status.generation) {
            Ok(true) => {
                let at = self.where_halted(&status);
                tracing::warn!(
                    pid = self.pid(),
                    program = %self.record.program,
                    idle_seconds = idle.as_secs(),
                    "let a program halted at {at} go on: no tool called about it for the halt lease (epcached --halt-lease)"
                );
                *lock(&self.halt_owner) = None;
                self.renew_lease();
            }
            Ok(false) => {}
            Err(e) => {
                tracing::debug!(pid = self.pid(), error = %e, "cannot release an unrenewed halt")
            }
        }
    }

    /// Records that `session` armed `armed` for `tool`, replacing any earlier owner.
    pub(crate) fn own_point(&self, tool: &str, session: Session, armed: ArmedPoint) {
        *lock(&self.halt_owner) = Some(HaltOwner {
            tool: tool.to_owned(),
            session,
            armed,
        });
    }

    /// Forgets who owns the point (it was cleared through the daemon).
    pub(crate) fn disown_point(&self) {
        *lock(&self.halt_owner) = None;
    }

    /// Records that `session` delivered the halt of `generation` to its tool: the halt stays,
    /// still the tool's for `Detach`, but no session's end lets it go any more.
    pub(crate) fn delivered(&self, session: Session, generation: u32) {
        *lock(&self.delivered) = Some(generation);
        if let Some(owner) = lock(&self.halt_owner)
            .as_mut()
            .filter(|o| o.session == session)
        {
            owner.session = Session::Delivered;
        }
    }

    /// `session` ended without its halt delivered: takes back the point it armed if the target
    /// has not reached it (and nobody armed another since), or, if the target halted there and
    /// no `Step` received that halt, releases it. May wait up to [`HALT_IN_FLIGHT`] for a halt
    /// the target is publishing, so call it where blocking is allowed.
    pub(crate) fn abandon(&self, session: Session) {
        let owner = {
            let mut owner = lock(&self.halt_owner);
            match owner.as_ref() {
                Some(o) if o.session == session => owner.take(),
                _ => None,
            }
        };
        let Some(owner) = owner else {
            return;
        };
        if self.status().end.is_some() {
            return;
        }
        match self.handle.disarm(&owner.armed) {
            Ok(true) => {
                tracing::info!(pid = self.pid(), tool = %owner.tool, ?session, "took back the halting point of a tool that went");
                return;
            }
            Ok(false) => {}
            Err(e) => {
                tracing::warn!(pid = self.pid(), error = %e, "cannot take back an abandoned halting point");
                return;
            }
        }
        // The target took the point (or another tool replaced it outside this daemon). Its halt
        // there is the first one after arming; if that is where the target still is and no
        // step received it, it is the abandoned one.
        let ours = owner.armed.after.wrapping_add(1);
        let halt = match self.handle.wait_for_halt(owner.armed.after, HALT_IN_FLIGHT) {
            Ok(h) if h.state == TargetState::Halted && h.generation == ours => h,
            _ => return,
        };
        if *lock(&self.delivered) == Some(halt.generation) {
            return;
        }
        match self.handle.release_halt(halt.generation) {
            Ok(true) => {
                tracing::info!(pid = self.pid(), tool = %owner.tool, ?session, generation = halt.generation, "released a halt nobody received");
            }
            Ok(false) => {}
            Err(e) => {
                tracing::warn!(pid = self.pid(), error = %e, "cannot release an abandoned halt");
            }
        }
    }

    /// The latest result of `placed`, read from the segment and checked.
    pub(crate) fn result(&self, placed: &Placed) -> Result<v1::RequestResult, DaemonError> {
        let raw = placed.read(&self.handle)?;
        Ok(result_message(&self.bound(placed), raw.as_ref()))
    }

    /// `placed` as the target has bound it: for a request on an allocation site or an
    /// allocatable, the data structure the target bound it to at the region's last entry, its
    /// bytes now, and its buckets cut as the target cut them; WAITING while there is none.
    /// Other requests are as placed.
    pub(crate) fn bound(&self, placed: &Placed) -> Placed {
        let Some(later) = placed.bound_later else {
            return placed.clone();
        };
        let mut placed = placed.clone();
        let structure = self
            .handle
            .request_binding(placed.handle)
            .ok()
            .flatten()
            .and_then(|index| self.handle.data_structure(index).ok().flatten());
        let info = &mut placed.info;
        match structure {
            Some(d) => {
                info.binding = v1::Binding::Bound as i32;
                info.range = Some(model::range(d.range));
                // A by-field request's buckets are its members, whatever the bytes.
                if info.fields.is_empty() {
                    let (width, count) = later.buckets(d.range);
                    info.bucket_bytes = width;
                    info.buckets = count;
                }
                info.data_structure = Some(model::data_structure(&d));
            }
            None => info.binding = v1::Binding::Waiting as i32,
        }
        placed
    }

    /// The MRI description of a request a dead tool left, as far as the target's tables still
    /// tell it; `None` when its region is gone from them (a corrupt slot).
    fn adopted_info(&self, abandoned: &Abandoned) -> Option<v1::RequestInfo> {
        let spec = abandoned.spec?;
        let region = self
            .handle
            .regions()
            .ok()?
            .into_iter()
            .nth(spec.region.0 as usize)?;
        let (data, counted) = match spec.target {
            RequestTarget::Range(r) => (None, r),
            RequestTarget::DataStructure(d) => {
                let ds = self
                    .handle
                    .data_structures()
                    .ok()?
                    .into_iter()
                    .nth(d.0 as usize)?;
                let range = ds.range;
                (Some(ds), range)
            }
            // What the target last bound it to, when its binding word still says.
            RequestTarget::AllocationSite { .. } => {
                let bound = self
                    .handle
                    .request_binding(abandoned.handle)
                    .ok()
                    .flatten()
                    .and_then(|index| self.handle.data_structure(index).ok().flatten());
                match bound {
                    Some(ds) => {
                        let range = ds.range;
                        (Some(ds), range)
                    }
                    None => (None, AddressRange::new(0, 0)),
                }
            }
        };
        let histogram = match spec.mode {
            Mode::Static => (0, 0),
            Mode::Histogram {
                buckets,
                bucket_bytes: 0,
            } => {
                // As the runtime cuts it: whole L1 lines.
                let line = self
                    .handle
                    .model()
                    .ok()
                    .flatten()
                    .and_then(|m| m.spec.parse::<HierarchySpec>().ok())
                    .and_then(|h| h.data.first().map(|l| u64::from(l.geometry.line_size)))
                    .unwrap_or(1);
                let width = counted
                    .len()
                    .div_ceil(u64::from(buckets.max(1)))
                    .div_ceil(line)
                    .max(1)
                    .saturating_mul(line);
                (counted.len().div_ceil(width) as u32, width)
            }
            Mode::Histogram { bucket_bytes, .. } => {
                (counted.len().div_ceil(bucket_bytes) as u32, bucket_bytes)
            }
            // The member names stay with the tool that placed it.
            Mode::Fields(spans) => (spans.buckets() as u32, spans.element_bytes()),
        };
        let mut info = model::request_info(
            self.pid(),
            &spec,
            &region,
            data.as_ref(),
            counted,
            histogram,
        );
        info.owner = format!("epcached pid {} (gone)", abandoned.owner.pid);
        info.adopted = true;
        Some(info)
    }
}

/// The MRI form of a request's result: the counts (summed over threads), the buckets with their
/// bytes, one row per thread for a per-thread request, and the analysis report, parsed and
/// checked before it is passed on.
pub(crate) fn result_message(placed: &Placed, raw: Option<&RequestResult>) -> v1::RequestResult {
    let info = &placed.info;
    let mut out = v1::RequestResult {
        request: Some(info.clone()),
        ..Default::default()
    };
    let Some(r) = raw else {
        return out;
    };
    out.available = true;
    let mut counted = info.range.map_or(AddressRange::new(0, 0), |r| {
        AddressRange::new(r.start, r.end.saturating_sub(r.start))
    });
    // A histogram's buckets as the target cut them (`layout::BucketGeometry`): as wide as its
    // largest instance needed, reaching that instance's size.
    let mut info = info.clone();
    let g = r.geometry;
    if g.bucket_bytes > 0 && info.fields.is_empty() && info.buckets > 0 {
        info.bucket_bytes = g.bucket_bytes;
        info.buckets = u32::try_from(g.largest.div_ceil(g.bucket_bytes)).unwrap_or(u32::MAX);
        counted = AddressRange::new(counted.start, counted.len().max(g.largest));
        out.smallest_instance_bytes = g.smallest;
        out.largest_instance_bytes = g.largest;
        out.request = Some(info.clone());
    }
    let info = &info;
    let sum = r.sum();
    out.instances = sum.instances;
    out.total = sum.total;
    if info.buckets > 0 {
        out.buckets = model::buckets_of(info, counted, &sum.buckets);
    }
    if model::aggregation(info.aggregation()) == Aggregation::PerThread {
        out.threads = r
            .rows
            .iter()
            .map(|row| model::thread_result(row, info, counted))
            .collect();
    }
    match &r.text {
        ResultText::None => {}
        // Never trusted: the text must parse as a report before it is passed on.
        ResultText::Report(json) => match serde_json::from_str::<AnalysisReport>(json) {
            Ok(report) => out.analysis = Some(model::analysis_report(&report, &info.fields)),
            Err(e) => {
                tracing::warn!(pid = info.pid, request = info.id, error = %e, "target wrote an unreadable analysis report");
                out.analysis_missing =
                    format!("the target wrote an unreadable analysis report: {e}");
            }
        },
        ResultText::Missing(why) => {
            let mut end = why.len().min(MAX_NOTE_BYTES);
            while !why.is_char_boundary(end) {
                end -= 1;
            }
            out.analysis_missing = why[..end].to_owned();
        }
    }
    out
}

/// All targets of one daemon.
#[derive(Debug)]
pub(crate) struct Registry {
    targets: DashMap<u32, Arc<TargetEntry>>,
    events: broadcast::Sender<v1::Event>,
    next_request: AtomicU64,
    next_step: AtomicU64,
    runtime_dir: PathBuf,
    retention: Duration,
    halt_lease: Duration,
    watchers: Mutex<Vec<JoinHandle<()>>>,
    refused: Mutex<HashSet<(u32, u64)>>,
    dir_refused: AtomicBool,
    shutting_down: AtomicBool,
}

impl Registry {
    /// An empty registry watching `runtime_dir`, keeping ended targets for `retention` and
    /// halts for `halt_lease` unrenewed.
    pub(crate) fn new(runtime_dir: PathBuf, retention: Duration, halt_lease: Duration) -> Registry {
        Registry {
            targets: DashMap::new(),
            events: broadcast::channel(EVENT_BACKLOG).0,
            next_request: AtomicU64::new(1),
            next_step: AtomicU64::new(1),
            runtime_dir,
            retention,
            halt_lease,
            watchers: Mutex::new(Vec::new()),
            refused: Mutex::new(HashSet::new()),
            dir_refused: AtomicBool::new(false),
            shutting_down: AtomicBool::new(false),
        }
    }

    /// Whether the daemon is stopping.
    pub(crate) fn shutting_down(&self) -> bool {
        self.shutting_down.load(Ordering::Acquire)
    }

    /// A receiver of every target's events.
    pub(crate) fn events(&self) -> broadcast::Receiver<v1::Event> {
        self.events.subscribe()
    }

    /// A fresh request id.
    pub(crate) fn request_id(&self) -> u64 {
        self.next_request.fetch_add(1, Ordering::Relaxed)
    }

    /// Every target, by pid.
    pub(crate) fn all(&self) -> Vec<Arc<TargetEntry>> {
        let mut all: Vec<_> = self.targets.iter().map(|e| e.value().clone()).collect();
        all.sort_by_key(|e| e.pid());
        all
    }

    /// The target with `pid`, for a call naming it: renews its halt lease.
    pub(crate) fn get(&self, pid: u32) -> Result<Arc<TargetEntry>, DaemonError> {
        if let Some(e) = self.targets.get(&pid) {
            e.renew_lease();
            return Ok(e.value().clone());
        }
        let known = self.all();
        let known = if known.is_empty() {
            "the daemon knows no target".to_owned()
        } else {
            format!(
                "the daemon knows {}",
                known
                    .iter()
                    .take(8)
                    .map(|e| format!("{} ({})", e.pid(), e.record.program))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        let announced = lock(&self.refused).iter().any(|&(p, _)| p == pid);
        let why = unknown_pid::why_not_a_target(pid, &self.runtime_dir, announced);
        Err(DaemonError::UnknownTarget {
            pid,
            why: format!("{why}; {known}"),
        })
    }

    /// One discovery pass: attaches to new targets and forgets ended ones past retention.
    pub(crate) fn discover(self: &Arc<Self>) {
        if self.shutting_down() {
            return;
        }
        match discovery::list_targets(&self.runtime_dir) {
            Ok(records) => {
                self.dir_refused.store(false, Ordering::Relaxed);
                for record in records {
                    self.consider(record);
                }
            }
            // Checked at start; someone changed it since. Said once, until it is right again.
            Err(e) => {
                if !self.dir_refused.swap(true, Ordering::Relaxed) {
                    tracing::error!(error = %e, "cannot list targets; no new target is attached until this is fixed");
                }
            }
        }
        let now = Instant::now();
        self.targets.retain(|_, entry| {
            entry
                .status
                .borrow()
                .end
                .as_ref()
                .is_none_or(|end| now.duration_since(end.at) < self.retention)
        });
    }

    fn consider(self: &Arc<Self>, record: TargetRecord) {
        if let Some(known) = self.targets.get(&record.pid)
            && (known.record.start_time == record.start_time || known.status().end.is_none())
        {
            return;
        }
        let key = (record.pid, record.start_time);
        let handle = match TargetHandle::attach_record(&record) {
            Ok(h) => h,
            Err(e) => {
                // A record can name a segment that is still being set up or already gone; say
                // so once, not every scan.
                if lock(&self.refused).insert(key) {
                    tracing::warn!(pid = record.pid, program = %record.program, error = %e, "cannot attach to target");
                }
                return;
            }
        };
        lock(&self.refused).remove(&key);
        let generation = handle.halt_generation();
        let state = handle.state().unwrap_or(TargetState::Running);
        let halt = match state {
            // Asking for the halt after the previous generation returns the current one at once.
            TargetState::Halted => handle
                .wait_for_halt(generation.wrapping_sub(1), Duration::ZERO)
                .ok(),
            _ => None,
        };
        let (position, thread) =
            halt.map_or((None, HaltingThread::default()), |h| (h.position, h.thread));
        let entry = Arc::new(TargetEntry {
            record,
            handle,
            status: watch::channel(Status {
                generation,
                state,
                position,
                thread,
                end: None,
            })
            .0,
            requests: Mutex::new(BTreeMap::new()),
            halt_owner: Mutex::new(None),
            delivered: Mutex::new(None),
            renewed: Mutex::new(Instant::now()),
            halt_lease: self.halt_lease,
            region_names: Mutex::new(Vec::new()),
            stop: AtomicBool::new(false),
        });
        tracing::info!(pid = entry.pid(), program = %entry.record.program, shm_id = entry.record.shm_id, "attached to target");
        self.adopt_abandoned(&entry);
        self.targets.insert(entry.pid(), entry.clone());
        let _ = self.events.send(v1::Event {
            pid: entry.pid(),
            kind: Some(v1::event::Kind::Target(entry.describe())),
        });
        let registry = self.clone();
        let watcher = tokio::task::spawn_blocking(move || watch_target(&registry, &entry));
        let mut watchers = lock(&self.watchers);
        watchers.retain(|w| !w.is_finished());
        watchers.push(watcher);
    }

    /// Takes back the slots of requests whose tool process died and adopts the requests, with
    /// their last results, as final ones owned by `epcached pid N (gone)`.
    fn adopt_abandoned(&self, entry: &TargetEntry) {
        let abandoned = match entry.handle.reclaim_abandoned() {
            Ok(a) => a,
            Err(e) => {
                tracing::debug!(pid = entry.pid(), error = %e, "cannot look for abandoned requests");
                return;
            }
        };
        if abandoned.is_empty() {
            return;
        }
        let mut owners: Vec<u32> = abandoned.iter().map(|a| a.owner.pid).collect();
        owners.sort_unstable();
        owners.dedup();
        let mut adopted = 0;
        for a in &abandoned {
            let Some(mut info) = entry.adopted_info(a) else {
                continue;
            };
            info.id = self.request_id();
            let placed = Placed {
                info,
                handle: a.handle,
                origin: Origin::Adopted(a.result.clone().map(Arc::new)),
                bound_later: None,
            };
            lock(&entry.requests).insert(placed.info.id, placed);
            adopted += 1;
        }
        tracing::info!(
            pid = entry.pid(),
            freed = abandoned.len(),
            adopted,
            owners = ?owners,
            "took back the request slots of tools that died; their results stay readable here"
        );
    }

    /// Lets go of what connection `id` owned, now that it closed: the halting points it set
    /// ([`TargetEntry::abandon`]). Blocks briefly; call it where blocking is allowed.
    pub(crate) fn connection_closed(&self, id: u64) {
        for entry in self.all() {
            entry.abandon(Session::Connection(id));
        }
    }

    /// A fresh `Step` call number.
    pub(crate) fn step_session(&self) -> Session {
        Session::Step(self.next_step.fetch_add(1, Ordering::Relaxed))
    }

    /// Stops every watcher within one slice, without letting targets go (a dropped daemon).
    pub(crate) fn stop_watchers(&self) {
        self.shutting_down.store(true, Ordering::Release);
        for entry in self.all() {
            entry.stop.store(true, Ordering::Release);
        }
    }

    /// The shutdown policy: every live target gets its requests placed through this daemon
    /// cancelled and its halting point cleared, and is let go if halted or waiting at start, so
    /// no program waits for a daemon that is gone. Then the watchers stop.
    pub(crate) async fn shut_down(&self) {
        self.shutting_down.store(true, Ordering::Release);
        for entry in self.all() {
            if entry.status().end.is_none() {
                let placed: Vec<Placed> = std::mem::take(&mut *lock(&entry.requests))
                    .into_values()
                    .collect();
                for p in &placed {
                    let _ = p.cancel(&entry.handle);
                }
                let _ = entry.handle.set_halting_point(None);
                let released = entry.handle.release().is_ok();
                tracing::info!(
                    pid = entry.pid(),
                    cancelled = placed.len(),
                    released,
                    "let target go"
                );
            }
            entry.stop.store(true, Ordering::Release);
        }
        let watchers = std::mem::take(&mut *lock(&self.watchers));
        for w in watchers {
            let _ = w.await;
        }
        self.targets.clear();
    }
}

/// What a watcher remembers of each result, to broadcast only changes.
type Seen = HashMap<u64, RequestResult>;

fn publish_results(entry: &TargetEntry, seen: &mut Seen, events: &broadcast::Sender<v1::Event>) {
    let placed: Vec<Placed> = lock(&entry.requests).values().cloned().collect();
    seen.retain(|id, _| placed.iter().any(|p| p.info.id == *id));
    for p in placed {
        let raw = match p.read(&entry.handle) {
            Ok(Some(r)) => r,
            Ok(None) => continue,
            Err(e) => {
                tracing::debug!(pid = entry.pid(), request = p.info.id, error = %e, "cannot read result");
                continue;
            }
        };
        if seen.get(&p.info.id) == Some(&raw) {
            continue;
        }
        let message = result_message(&entry.bound(&p), Some(&raw));
        seen.insert(p.info.id, raw);
        let _ = events.send(v1::Event {
            pid: entry.pid(),
            kind: Some(v1::event::Kind::Result(message)),
        });
    }
}

/// The watcher of one target, run as a blocking task until the target ends or the daemon stops.
/// A target that runs on without halting leaves the state the watcher last saw with no halt to
/// tell it: one found while `Starting` that needs no start wait, and one released from a halt
/// (by `Continue`, a step's release, or its own patience running out). Each slice re-reads the
/// state word while the cached state is not `Running`, so listings do not show the target
/// starting or halted while it runs (a tool waiting past `Starting` waited in vain, and after
/// `continue` the target was listed halted at its last boundary for the rest of its run).
fn notice_running(entry: &TargetEntry) {
    let cached = entry.status().state;
    if cached != TargetState::Running
        && cached != TargetState::Exited
        && entry.handle.state().ok() == Some(TargetState::Running)
    {
        entry.status.send_modify(|s| {
            if s.state == cached {
                s.state = TargetState::Running;
                s.position = None;
                s.thread = HaltingThread::default();
            }
        });
    }
}

/// Says, once the target ended, which requests on an allocation site or an allocatable never
/// had bytes to measure: the site allocated no block of at least 4096 bytes (smaller ones are
/// not tracked), or the array stayed unallocated, while the region ran.
fn say_unbound(entry: &TargetEntry) {
    let placed: Vec<Placed> = lock(&entry.requests).values().cloned().collect();
    for p in placed.iter().filter(|p| p.bound_later.is_some()) {
        let info = entry.bound(p).info;
        if info.binding() == v1::Binding::Waiting {
            let data = match (&info.allocation_site, &info.data_structure) {
                (Some(site), _) => format!("allocation site {}:{}", site.file, site.line),
                (None, Some(d)) => format!("allocatable {}", d.name),
                (None, None) => "its data".to_owned(),
            };
            let region = info.region.as_ref().map_or("", |r| r.name.as_str());
            tracing::warn!(
                pid = entry.pid(),
                request = info.id,
                region,
                "request over {data} never bound: nothing was allocated there while the region ran"
            );
        }
    }
}

fn watch_target(registry: &Registry, entry: &TargetEntry) {
    let events = &registry.events;
    let mut seen = Seen::new();
    let mut after = entry.status().generation;
    let mut slices = 0u32;
    loop {
        if entry.stop.load(Ordering::Acquire) {
            return;
        }
        slices = slices.wrapping_add(1);
        if slices.is_multiple_of(RECLAIM_EVERY) {
            registry.adopt_abandoned(entry);
        }
        let outcome = entry.handle.wait_for_halt(after, WATCH_SLICE);
        publish_results(entry, &mut seen, events);
        let end = match outcome {
            Ok(halt) => {
                after = halt.generation;
                let status = Status {
                    generation: halt.generation,
                    state: halt.state,
                    position: halt.position,
                    thread: halt.thread,
                    end: None,
                };
                let message = entry.halt_message(&status);
                entry.status.send_replace(status);
                entry.renew_lease();
                tracing::debug!(
                    pid = entry.pid(),
                    generation = halt.generation,
                    "target halted"
                );
                let _ = events.send(v1::Event {
                    pid: entry.pid(),
                    kind: Some(v1::event::Kind::Halted(message)),
                });
                continue;
            }
            Err(ToolError::Timeout { .. }) => {
                notice_running(entry);
                entry.end_unrenewed_halt();
                continue;
            }
            Err(ToolError::TargetExited { .. }) => End {
                died: false,
                reason: "the program finished".into(),
                at: Instant::now(),
            },
            Err(ToolError::TargetDied { .. }) => End {
                died: true,
                reason: "the process is gone without finishing (killed or crashed)".into(),
                at: Instant::now(),
            },
            Err(e) => End {
                died: true,
                reason: format!("its segment can no longer be trusted: {e}"),
                at: Instant::now(),
            },
        };
        tracing::info!(pid = entry.pid(), died = end.died, reason = %end.reason, "target ended");
        say_unbound(entry);
        let message = v1::TargetExit {
            died: end.died,
            reason: end.reason.clone(),
        };
        entry.status.send_modify(|s| {
            s.end = Some(end);
            s.position = None;
            s.thread = HaltingThread::default();
        });
        let _ = events.send(v1::Event {
            pid: entry.pid(),
            kind: Some(v1::event::Kind::Exited(message)),
        });
        return;
    }
}
