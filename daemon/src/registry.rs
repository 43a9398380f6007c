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

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use dashmap::DashMap;
use epcache_monitor::analysis::AnalysisReport;
use epcache_monitor::ranges::AddressRange;
use epcache_monitor::shm::discovery::{self, TargetRecord};
use epcache_monitor::shm::layout::{self, Boundary, RegionIndex, RequestResult, TargetState};
use epcache_monitor::shm::tool::{RequestHandle, TargetHandle, ToolError};
use epcache_proto::v1;
use tokio::sync::{broadcast, watch};
use tokio::task::JoinHandle;

use crate::error::DaemonError;
use crate::model;
use crate::resolve::BoundLater;

/// How long a watcher waits on the halt futex before it looks at results and its stop flag.
pub(crate) const WATCH_SLICE: Duration = Duration::from_millis(100);

/// Events kept for slow watch streams before they must resynchronise.
const EVENT_BACKLOG: usize = 4096;

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

/// A request placed through this daemon.
#[derive(Debug, Clone)]
pub(crate) struct Placed {
    /// How the MRI describes it.
    pub(crate) info: v1::RequestInfo,
    /// Its slot and generation.
    pub(crate) handle: RequestHandle,
    /// For a request whose bytes the target binds (an allocation site, an allocatable): how to
    /// describe them once it has ([`TargetEntry::bound`]).
    pub(crate) bound_later: Option<BoundLater>,
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
    /// The tool that armed the halting point last.
    pub(crate) halt_owner: Mutex<Option<String>>,
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

    fn position(&self, position: Option<(RegionIndex, Boundary)>) -> Option<v1::Position> {
        position.map(|(region, boundary)| v1::Position {
            region_index: region.0,
            region_name: self.region_name(region),
            boundary: model::boundary(boundary) as i32,
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
            halted_at: if halted {
                self.position(status.position)
            } else {
                None
            },
            regions: self.handle.regions().map_or(0, |r| r.len() as u32),
            data_structures: self.handle.data_structures().map_or(0, |d| d.len() as u32),
            requests: lock(&self.requests).len() as u32,
        }
    }

    /// The MRI form of a halt status.
    pub(crate) fn halt_message(&self, status: &Status) -> v1::Halt {
        v1::Halt {
            generation: status.generation,
            state: model::target_state(status.state) as i32,
            position: self.position(status.position),
        }
    }

    /// The latest result of `placed`, read from the segment and checked.
    pub(crate) fn result(&self, placed: &Placed) -> Result<v1::RequestResult, DaemonError> {
        let raw = self.handle.read_result(placed.handle)?;
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
                let (width, count) = later.buckets(d.range);
                info.binding = v1::Binding::Bound as i32;
                info.range = Some(model::range(d.range));
                info.bucket_bytes = width;
                info.buckets = count;
                info.data_structure = Some(model::data_structure(&d));
            }
            None => info.binding = v1::Binding::Waiting as i32,
        }
        placed
    }
}

/// The MRI form of a request's result: buckets with their bytes, or the analysis report.
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
    out.instances = r.instances;
    if !info.analyses.is_empty() {
        // Never trusted: the text must unpack and parse as a report before it is passed on.
        match layout::unpack_text(&r.buckets, r.total)
            .map_err(|e| e.to_string())
            .and_then(|text| {
                serde_json::from_str::<AnalysisReport>(&text).map_err(|e| e.to_string())
            })
            .and_then(|report| serde_json::to_string(&report).map_err(|e| e.to_string()))
        {
            Ok(json) => out.analysis_json = json,
            Err(e) => {
                tracing::warn!(pid = info.pid, request = info.id, error = %e, "target wrote an unreadable analysis report");
                out.available = false;
            }
        }
        return out;
    }
    out.total = r.total;
    if info.buckets > 0 {
        let range = info.range.map_or(AddressRange::new(0, 0), |r| {
            AddressRange::new(r.start, r.end.saturating_sub(r.start))
        });
        out.buckets = model::buckets(range, info.bucket_bytes, &r.buckets);
    }
    out
}

/// All targets of one daemon.
#[derive(Debug)]
pub(crate) struct Registry {
    targets: DashMap<u32, Arc<TargetEntry>>,
    events: broadcast::Sender<v1::Event>,
    next_request: AtomicU64,
    runtime_dir: PathBuf,
    retention: Duration,
    watchers: Mutex<Vec<JoinHandle<()>>>,
    refused: Mutex<HashSet<(u32, u64)>>,
    shutting_down: AtomicBool,
}

impl Registry {
    /// An empty registry watching `runtime_dir`.
    pub(crate) fn new(runtime_dir: PathBuf, retention: Duration) -> Registry {
        Registry {
            targets: DashMap::new(),
            events: broadcast::channel(EVENT_BACKLOG).0,
            next_request: AtomicU64::new(1),
            runtime_dir,
            retention,
            watchers: Mutex::new(Vec::new()),
            refused: Mutex::new(HashSet::new()),
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

    /// The target with `pid`.
    pub(crate) fn get(&self, pid: u32) -> Result<Arc<TargetEntry>, DaemonError> {
        if let Some(e) = self.targets.get(&pid) {
            return Ok(e.value().clone());
        }
        let known = self.all();
        let known = if known.is_empty() {
            format!(
                "it knows none; targets announce themselves in {}",
                self.runtime_dir.display()
            )
        } else {
            format!(
                "it knows {}",
                known
                    .iter()
                    .take(8)
                    .map(|e| format!("{} ({})", e.pid(), e.record.program))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        Err(DaemonError::UnknownTarget { pid, known })
    }

    /// One discovery pass: attaches to new targets and forgets ended ones past retention.
    pub(crate) fn discover(self: &Arc<Self>) {
        if self.shutting_down() {
            return;
        }
        match discovery::list_targets(&self.runtime_dir) {
            Ok(records) => {
                for record in records {
                    self.consider(record);
                }
            }
            Err(e) => tracing::debug!(error = %e, "cannot list targets"),
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
        let position = match state {
            // Asking for the halt after the previous generation returns the current one at once.
            TargetState::Halted => handle
                .wait_for_halt(generation.wrapping_sub(1), Duration::ZERO)
                .ok()
                .and_then(|h| h.position),
            _ => None,
        };
        let entry = Arc::new(TargetEntry {
            record,
            handle,
            status: watch::channel(Status {
                generation,
                state,
                position,
                end: None,
            })
            .0,
            requests: Mutex::new(BTreeMap::new()),
            halt_owner: Mutex::new(None),
            region_names: Mutex::new(Vec::new()),
            stop: AtomicBool::new(false),
        });
        tracing::info!(pid = entry.pid(), program = %entry.record.program, shm_id = entry.record.shm_id, "attached to target");
        self.targets.insert(entry.pid(), entry.clone());
        let _ = self.events.send(v1::Event {
            pid: entry.pid(),
            kind: Some(v1::event::Kind::Target(entry.describe())),
        });
        let events = self.events.clone();
        let watcher = tokio::task::spawn_blocking(move || watch_target(&entry, &events));
        let mut watchers = lock(&self.watchers);
        watchers.retain(|w| !w.is_finished());
        watchers.push(watcher);
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
                    let _ = entry.handle.cancel(p.handle);
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
        let raw = match entry.handle.read_result(p.handle) {
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
            }
        });
    }
}

/// Says, once the target ended, which requests on an allocation site or an allocatable never
/// had bytes to measure: the site allocated no block of at least 4096 bytes (smaller ones are
/// not tracked), or the array stayed unallocated, whenever the region was entered.
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
                "request over {data} never bound: nothing was allocated there whenever the region was entered"
            );
        }
    }
}

fn watch_target(entry: &TargetEntry, events: &broadcast::Sender<v1::Event>) {
    let mut seen = Seen::new();
    let mut after = entry.status().generation;
    loop {
        if entry.stop.load(Ordering::Acquire) {
            return;
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
                    end: None,
                };
                let message = entry.halt_message(&status);
                entry.status.send_replace(status);
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
        });
        let _ = events.send(v1::Event {
            pid: entry.pid(),
            kind: Some(v1::event::Kind::Exited(message)),
        });
        return;
    }
}
