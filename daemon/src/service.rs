//! The `Mri` gRPC service: each call looks its target up, resolves names, talks to the segment
//! through the target's attachment and answers in MRI messages; refusals are [`DaemonError`]s.

use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use epcache_proto::v1;
use epcache_proto::v1::mri_server::Mri;
use epcache_shm::layout::{Boundary, HaltingPoint, TargetState, TraceState};
use epcache_shm::process;
use epcache_shm::tool::{ToolError, TraceHandle};
use epcache_sim::cache::HierarchySpec;
use tokio::sync::{broadcast, mpsc, watch};
use tokio_stream::Stream;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status};

use crate::error::DaemonError;
use crate::model;
use crate::registry::{Placed, Registry, Session, TargetEntry, lock};
use crate::resolve;
use crate::trace_order;
use crate::transport::connection_of;

/// The metadata key naming the calling tool; requests and halting points belong to it.
pub const TOOL_METADATA: &str = "epcache-tool";

/// Events buffered per watch stream before the stream waits for its reader.
const STREAM_BUFFER: usize = 256;

/// The service; cheap to clone.
#[derive(Debug, Clone)]
pub(crate) struct MriService {
    registry: Arc<Registry>,
    shutdown: watch::Receiver<bool>,
}

impl MriService {
    pub(crate) fn new(registry: Arc<Registry>, shutdown: watch::Receiver<bool>) -> Self {
        MriService { registry, shutdown }
    }
}

fn tool_of<T>(request: &Request<T>) -> String {
    request
        .metadata()
        .get(TOOL_METADATA)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned()
}

/// A published cache model whose spec parsed.
struct ParsedModel {
    spec: HierarchySpec,
    counters: u32,
    cores: u32,
}

/// What the target published as its cache: `None` before it did; `Err` with why when that does
/// not parse (the runtime publishes its own complaint about a bad `EPCACHE_CACHE`, which is
/// passed on without its `epcache: ` prefix, not parsed as a spec).
fn published_hierarchy(
    entry: &TargetEntry,
) -> Result<Option<Result<ParsedModel, String>>, DaemonError> {
    let Some(model) = entry.handle.model()? else {
        return Ok(None);
    };
    Ok(Some(match model.spec.parse::<HierarchySpec>() {
        Ok(spec) => Ok(ParsedModel {
            spec,
            counters: model.counters,
            cores: model.cores,
        }),
        Err(e) => match model.spec.strip_prefix("epcache: ") {
            Some(why) => {
                tracing::info!(pid = entry.pid(), why, "target simulates no cache");
                Err(why.to_owned())
            }
            None => {
                tracing::warn!(pid = entry.pid(), spec = %model.spec, error = %e, "target published a cache spec this daemon cannot parse");
                Err(format!(
                    "its cache spec `{}` does not parse here: {e}",
                    model.spec
                ))
            }
        },
    }))
}

/// The halting point `point` asks for, armed on the target and owned by `session` of `tool`.
fn arm(
    entry: &TargetEntry,
    point: &v1::HaltingPoint,
    tool: &str,
    session: Session,
) -> Result<(), DaemonError> {
    // Checked before anything else, like every enum of a request: an unknown value from a newer
    // MRI must not silently become a step to any boundary.
    let boundary = v1::Boundary::try_from(point.boundary).map_err(|_| {
        DaemonError::InvalidArgument(format!(
            "halting point boundary value {} is not one of ENTRY, EXIT (unset means either, the next boundary)",
            point.boundary
        ))
    })?;
    let region = match &point.region {
        Some(selector) if selector.by.is_some() => {
            let regions = entry.handle.regions()?;
            Some(resolve::region(entry.pid(), Some(selector), &regions)?.index)
        }
        _ => None,
    };
    let armed = match boundary {
        v1::Boundary::Unspecified => entry.handle.set_step_point(region, point.skip)?,
        b => entry.handle.set_halting_point(Some(HaltingPoint {
            region,
            boundary: if b == v1::Boundary::Entry {
                Boundary::Entry
            } else {
                Boundary::Exit
            },
            skip: point.skip,
        }))?,
    };
    entry.own_point(tool, session, armed);
    Ok(())
}

/// Takes back a step's halting point unless the step delivered its halt: dropped with the call
/// (the client went away, its deadline passed) or on a refusal or timeout.
struct StepSession {
    entry: Arc<TargetEntry>,
    session: Session,
    delivered: bool,
}

impl Drop for StepSession {
    fn drop(&mut self) {
        if self.delivered {
            return;
        }
        let entry = self.entry.clone();
        let session = self.session;
        // It may wait briefly for a halt in flight: off the async workers.
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn_blocking(move || entry.abandon(session));
            }
            Err(_) => entry.abandon(session),
        }
    }
}

/// Releases a target that may or may not be halted: a running one simply runs on.
fn release_if_halted(entry: &TargetEntry) -> Result<bool, DaemonError> {
    match entry.handle.release() {
        Ok(()) => Ok(true),
        Err(ToolError::NotHalted { .. }) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Completes when the daemon begins to stop.
async fn until_stopped(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await;
}

type EventStream = Pin<Box<dyn Stream<Item = Result<v1::Event, Status>> + Send>>;

#[tonic::async_trait]
impl Mri for MriService {
    async fn list_targets(
        &self,
        _request: Request<v1::ListTargetsRequest>,
    ) -> Result<Response<v1::ListTargetsResponse>, Status> {
        let targets = self.registry.all().iter().map(|e| e.describe()).collect();
        Ok(Response::new(v1::ListTargetsResponse { targets }))
    }

    async fn describe_target(
        &self,
        request: Request<v1::DescribeTargetRequest>,
    ) -> Result<Response<v1::DescribeTargetResponse>, Status> {
        let entry = self.registry.get(request.get_ref().pid)?;
        let regions = entry.handle.regions().map_err(DaemonError::from)?;
        let structures = entry.handle.data_structures().map_err(DaemonError::from)?;
        let (model, events, cache_error) = match published_hierarchy(&entry)? {
            Some(Ok(m)) => (
                Some(model::cache_model(&m.spec, m.counters, 0, m.cores)),
                model::events(m.spec.data.len()),
                String::new(),
            ),
            Some(Err(why)) => (None, Vec::new(), why),
            None => (None, Vec::new(), String::new()),
        };
        Ok(Response::new(v1::DescribeTargetResponse {
            target: Some(entry.describe()),
            regions: regions.iter().map(model::region).collect(),
            data_structures: structures.iter().map(model::data_structure).collect(),
            model,
            events,
            requests: {
                let placed: Vec<Placed> = lock(&entry.requests).values().cloned().collect();
                placed.iter().map(|p| entry.bound(p).info).collect()
            },
            request_slots: entry.handle.request_slots(),
            cache_error,
        }))
    }

    async fn add_requests(
        &self,
        request: Request<v1::AddRequestsRequest>,
    ) -> Result<Response<v1::AddRequestsResponse>, Status> {
        let tool = tool_of(&request);
        let call = request.into_inner();
        let entry = self.registry.get(call.pid)?;
        entry.ensure_live("take requests")?;
        if call.requests.is_empty() {
            return Err(DaemonError::InvalidArgument("the call carries no request".into()).into());
        }
        let regions = entry.handle.regions().map_err(DaemonError::from)?;
        let structures = entry.handle.data_structures().map_err(DaemonError::from)?;
        // A target that cannot simulate (a bad EPCACHE_CACHE) would leave requests active and
        // never answered: refuse them with what the target said.
        let (spec, cores) = match published_hierarchy(&entry)? {
            Some(Ok(m)) => (Some(m.spec), m.cores),
            Some(Err(published)) => {
                return Err(DaemonError::FailedPrecondition(format!(
                    "target pid {} cannot simulate a cache, so it can serve no request: {published}; restart it with a valid EPCACHE_CACHE (the spec syntax of `epcache replay --help`)",
                    call.pid
                ))
                .into());
            }
            None => (None, 0),
        };
        // Resolve everything first: a refused call must leave the target untouched.
        let resolved =
            call.requests
                .iter()
                .enumerate()
                .map(|(index, r)| {
                    resolve::request(call.pid, r, &regions, &structures, spec.as_ref(), cores)
                        .map_err(|source| DaemonError::InRequest {
                            index,
                            count: call.requests.len(),
                            source: Box::new(source),
                        })
                })
                .collect::<Result<Vec<_>, _>>()?;
        let count = resolved.len();
        let mut placed: Vec<Placed> = Vec::with_capacity(count);
        for (index, r) in resolved.into_iter().enumerate() {
            match entry.handle.submit(&r.spec) {
                Ok(handle) => {
                    let mut info = r.info;
                    info.id = self.registry.request_id();
                    info.owner = tool.clone();
                    placed.push(Placed::new(info, handle, r.bound_later));
                }
                Err(e) => {
                    for p in &placed {
                        let _ = p.cancel(&entry.handle);
                    }
                    return Err(DaemonError::InRequest {
                        index,
                        count,
                        source: Box::new(e.into()),
                    }
                    .into());
                }
            }
        }
        let mut requests = lock(&entry.requests);
        for p in &placed {
            requests.insert(p.info.id, p.clone());
        }
        drop(requests);
        tracing::info!(pid = call.pid, tool = %tool, placed = placed.len(), "requests placed");
        Ok(Response::new(v1::AddRequestsResponse {
            requests: placed.into_iter().map(|p| p.info).collect(),
        }))
    }

    async fn cancel_requests(
        &self,
        request: Request<v1::CancelRequestsRequest>,
    ) -> Result<Response<v1::CancelRequestsResponse>, Status> {
        let tool = tool_of(&request);
        let call = request.into_inner();
        let entry = self.registry.get(call.pid)?;
        let mut requests = lock(&entry.requests);
        let ids: Vec<u64> = if call.ids.is_empty() {
            requests
                .values()
                .filter(|p| p.info.owner == tool)
                .map(|p| p.info.id)
                .collect()
        } else {
            if let Some(&missing) = call.ids.iter().find(|id| !requests.contains_key(id)) {
                let nearest = requests.keys().take(8).map(u64::to_string).collect();
                return Err(DaemonError::NotFound {
                    what: "request",
                    name: missing.to_string(),
                    pid: call.pid,
                    nearest,
                }
                .into());
            }
            call.ids.clone()
        };
        for id in &ids {
            if let Some(p) = requests.remove(id)
                && let Err(e) = p.cancel(&entry.handle)
            {
                tracing::debug!(pid = call.pid, request = id, error = %e, "cancel");
            }
        }
        Ok(Response::new(v1::CancelRequestsResponse { cancelled: ids }))
    }

    async fn set_halting_point(
        &self,
        request: Request<v1::SetHaltingPointRequest>,
    ) -> Result<Response<v1::SetHaltingPointResponse>, Status> {
        let tool = tool_of(&request);
        let session =
            connection_of(&request).map_or(Session::Unowned, |c| Session::Connection(c.id));
        let call = request.into_inner();
        let entry = self.registry.get(call.pid)?;
        entry.ensure_live("halt")?;
        match &call.point {
            // The point belongs to the connection: when it closes, the point goes with it.
            Some(point) => arm(&entry, point, &tool, session)?,
            None => {
                entry
                    .handle
                    .set_halting_point(None)
                    .map_err(DaemonError::from)?;
                entry.disown_point();
            }
        }
        Ok(Response::new(v1::SetHaltingPointResponse {}))
    }

    async fn r#continue(
        &self,
        request: Request<v1::ContinueRequest>,
    ) -> Result<Response<v1::ContinueResponse>, Status> {
        let call = request.into_inner();
        let entry = self.registry.get(call.pid)?;
        entry.ensure_live("continue")?;
        if call.clear_halting_point {
            entry
                .handle
                .set_halting_point(None)
                .map_err(DaemonError::from)?;
            entry.disown_point();
        }
        match entry.handle.release() {
            Ok(()) => {}
            // To its end: a running target with its point cleared is just that. The release is
            // forced all the same, in case the state word lies (a running target ignores it).
            Err(ToolError::NotHalted { .. }) if call.clear_halting_point => {
                entry.handle.force_release().map_err(DaemonError::from)?;
            }
            // A state word that does not parse cannot say whether the target waits: release
            // it regardless; its own patience covers a target that was not waiting.
            Err(ToolError::Layout { source, .. }) => {
                let generation = entry.handle.force_release().map_err(DaemonError::from)?;
                tracing::warn!(pid = call.pid, generation, error = %source, "forced a release: the target's state word is unreadable");
            }
            Err(e) => return Err(DaemonError::from(e).into()),
        }
        Ok(Response::new(v1::ContinueResponse {}))
    }

    async fn step(
        &self,
        request: Request<v1::StepRequest>,
    ) -> Result<Response<v1::StepResponse>, Status> {
        let tool = tool_of(&request);
        let call = request.into_inner();
        let entry = self.registry.get(call.pid)?;
        // A target that ended is answered as a step that was waiting when it ended: a tool's
        // step loop tells "it finished" or "it died" from a refusal the same way either way.
        if let Some(end) = entry.status().end {
            return Ok(Response::new(v1::StepResponse {
                outcome: Some(v1::step_response::Outcome::Exited(v1::TargetExit {
                    died: end.died,
                    reason: end.reason,
                })),
            }));
        }
        let skip = call.count.saturating_sub(1);
        let point = match call.until {
            None => v1::HaltingPoint {
                region: None,
                boundary: v1::Boundary::Unspecified as i32,
                skip,
            },
            Some(v1::step_request::Until::RegionExit(r)) => v1::HaltingPoint {
                region: Some(r),
                boundary: v1::Boundary::Exit as i32,
                skip,
            },
            Some(v1::step_request::Until::RegionEntry(r)) => v1::HaltingPoint {
                region: Some(r),
                boundary: v1::Boundary::Entry as i32,
                skip,
            },
            Some(v1::step_request::Until::Point(p)) => p,
        };
        let mut status = entry.subscribe();
        // The segment's generation, not the watcher's, which may lag behind it.
        let before = entry.handle.halt_generation();
        let mut session = StepSession {
            entry: entry.clone(),
            session: self.registry.step_session(),
            delivered: false,
        };
        arm(&entry, &point, &tool, session.session)?;
        release_if_halted(&entry)?;
        let started = Instant::now();
        let wait = status.wait_for(|s| s.end.is_some() || s.halted_after(before));
        let mut shutdown = self.shutdown.clone();
        let outcome = tokio::select! {
            s = async {
                if call.timeout_ms == 0 {
                    Ok(wait.await)
                } else {
                    tokio::time::timeout(Duration::from_millis(call.timeout_ms), wait).await
                }
            } => s,
            () = until_stopped(&mut shutdown) => return Err(DaemonError::ShuttingDown.into()),
        };
        let status = match outcome {
            Err(_) => {
                return Err(DaemonError::StepTimeout {
                    pid: call.pid,
                    waited: started.elapsed(),
                }
                .into());
            }
            // The registry forgot the target: it ended long ago.
            Ok(Err(_)) => {
                return Err(DaemonError::UnknownTarget {
                    pid: call.pid,
                    why: "it ended".into(),
                }
                .into());
            }
            Ok(Ok(s)) => s.clone(),
        };
        // A halt at another tool's point is that tool's to receive, not this step's.
        if status.end.is_none() {
            let owner = lock(&entry.halt_owner).clone();
            if let Some(other) = owner.filter(|o| o.session != session.session) {
                return Err(DaemonError::StepReplaced {
                    pid: call.pid,
                    at: entry.where_halted(&status),
                    by: if other.tool.is_empty() {
                        "another tool".into()
                    } else {
                        format!("tool `{}`", other.tool)
                    },
                }
                .into());
            }
        }
        let outcome = match &status.end {
            Some(end) => v1::step_response::Outcome::Exited(v1::TargetExit {
                died: end.died,
                reason: end.reason.clone(),
            }),
            None => v1::step_response::Outcome::Halted(entry.halt_message(&status)),
        };
        entry.delivered(session.session, status.generation);
        session.delivered = true;
        Ok(Response::new(v1::StepResponse {
            outcome: Some(outcome),
        }))
    }

    type WatchStream = EventStream;

    async fn watch(
        &self,
        request: Request<v1::WatchRequest>,
    ) -> Result<Response<Self::WatchStream>, Status> {
        let pid = request.get_ref().pid;
        // Subscribe before the snapshot, so nothing between the two is lost.
        let mut events = self.registry.events();
        let watched = if pid == 0 {
            self.registry.all()
        } else {
            vec![self.registry.get(pid)?]
        };
        // Taken now, so the stream holds no target's entry (and its attached segment) past the
        // daemon's retention of it: a watch may stay open for days.
        let first = snapshot(&watched);
        drop(watched);
        let (tx, rx) = mpsc::channel(STREAM_BUFFER);
        let registry = self.registry.clone();
        let mut shutdown = self.shutdown.clone();
        tokio::spawn(async move {
            let mut ended = false;
            for event in first {
                ended |= matches!(event.kind, Some(v1::event::Kind::Exited(_)));
                if tx.send(Ok(event)).await.is_err() {
                    return;
                }
            }
            if pid != 0 && ended {
                return;
            }
            loop {
                let event = tokio::select! {
                    e = events.recv() => e,
                    () = until_stopped(&mut shutdown) => {
                        let _ = tx.send(Err(DaemonError::ShuttingDown.into())).await;
                        return;
                    }
                    _ = tx.closed() => return,
                };
                let batch = match event {
                    Ok(e) if pid == 0 || e.pid == pid => vec![e],
                    Ok(_) => continue,
                    // Too slow a reader: say where things stand now instead of what was missed.
                    Err(broadcast::error::RecvError::Lagged(missed)) => {
                        tracing::debug!(missed, "watch stream lagged; resynchronising");
                        let entries = if pid == 0 {
                            registry.all()
                        } else {
                            registry.get(pid).map(|e| vec![e]).unwrap_or_default()
                        };
                        snapshot(&entries)
                    }
                    Err(broadcast::error::RecvError::Closed) => return,
                };
                for event in batch {
                    let last = pid != 0 && matches!(event.kind, Some(v1::event::Kind::Exited(_)));
                    if tx.send(Ok(event)).await.is_err() || last {
                        return;
                    }
                }
            }
        });
        Ok(Response::new(Box::pin(ReceiverStream::new(rx))))
    }

    async fn read_results(
        &self,
        request: Request<v1::ReadResultsRequest>,
    ) -> Result<Response<v1::ReadResultsResponse>, Status> {
        let call = request.into_inner();
        let entry = self.registry.get(call.pid)?;
        let placed: Vec<Placed> = {
            let requests = lock(&entry.requests);
            if call.ids.is_empty() {
                requests.values().cloned().collect()
            } else {
                call.ids
                    .iter()
                    .map(|id| {
                        requests
                            .get(id)
                            .cloned()
                            .ok_or_else(|| DaemonError::NotFound {
                                what: "request",
                                name: id.to_string(),
                                pid: call.pid,
                                nearest: requests.keys().take(8).map(u64::to_string).collect(),
                            })
                    })
                    .collect::<Result<_, _>>()?
            }
        };
        let results = placed
            .iter()
            .map(|p| entry.result(p))
            .collect::<Result<_, _>>()?;
        Ok(Response::new(v1::ReadResultsResponse { results }))
    }

    async fn detach(
        &self,
        request: Request<v1::DetachRequest>,
    ) -> Result<Response<v1::DetachResponse>, Status> {
        let tool = tool_of(&request);
        let call = request.into_inner();
        let entry = self.registry.get(call.pid)?;
        let mine: Vec<Placed> = {
            let mut requests = lock(&entry.requests);
            let ids: Vec<u64> = requests
                .values()
                .filter(|p| p.info.owner == tool)
                .map(|p| p.info.id)
                .collect();
            ids.iter().filter_map(|id| requests.remove(id)).collect()
        };
        let live = entry.status().end.is_none();
        if live {
            for p in &mine {
                let _ = p.cancel(&entry.handle);
            }
        }
        let owned = {
            let mut owner = lock(&entry.halt_owner);
            let owned = owner.as_ref().is_some_and(|o| o.tool == tool);
            if owned {
                *owner = None;
            }
            owned
        };
        let mut released = false;
        if owned && live {
            entry
                .handle
                .set_halting_point(None)
                .map_err(DaemonError::from)?;
            released = release_if_halted(&entry)?;
        }
        tracing::info!(pid = call.pid, tool = %tool, cancelled = mine.len(), released, "tool detached");
        Ok(Response::new(v1::DetachResponse {
            cancelled: mine.iter().map(|p| p.info.id).collect(),
            cleared_halting_point: owned && live,
            released,
        }))
    }

    async fn terminate(
        &self,
        request: Request<v1::TerminateRequest>,
    ) -> Result<Response<v1::TerminateResponse>, Status> {
        let call = request.into_inner();
        let entry = self.registry.get(call.pid)?;
        entry.ensure_live("be terminated")?;
        // The pid could have been reused since the target was discovered; its start time says.
        if !process::is_same_process_alive(entry.record.pid, entry.record.start_time) {
            return Err(DaemonError::FailedPrecondition(format!(
                "pid {} is no longer the target that started at tick {}; nothing was signalled",
                call.pid, entry.record.start_time
            ))
            .into());
        }
        let pid = i32::try_from(call.pid).map_err(|_| {
            DaemonError::InvalidArgument(format!("pid {} is out of range", call.pid))
        })?;
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGTERM,
        )
        .map_err(|errno| DaemonError::Signal {
            pid: call.pid,
            errno,
        })?;
        tracing::info!(pid = call.pid, "sent SIGTERM");
        Ok(Response::new(v1::TerminateResponse {}))
    }

    async fn start_trace(
        &self,
        request: Request<v1::StartTraceRequest>,
    ) -> Result<Response<v1::StartTraceResponse>, Status> {
        let call = request.into_inner();
        let entry = self.registry.get(call.pid)?;
        entry.ensure_live("record a trace")?;
        let regions = entry.handle.regions().map_err(DaemonError::from)?;
        let structures = entry.handle.data_structures().map_err(DaemonError::from)?;
        let (order, region) = trace_order::resolve(&call, &regions, &structures)?;
        let handle = entry
            .handle
            .start_trace(&order)
            .map_err(DaemonError::from)?;
        tracing::info!(pid = call.pid, region = %region, output = %order.path, "trace asked for");
        let status = entry
            .handle
            .trace_status(handle)
            .map_err(DaemonError::from)?
            .ok_or_else(|| {
                DaemonError::FailedPrecondition(format!(
                    "another trace order replaced this one on target pid {} at once; read it with ReadTrace",
                    call.pid
                ))
            })?;
        Ok(Response::new(v1::StartTraceResponse {
            trace: Some(model::trace_info(
                call.pid,
                handle.generation,
                region,
                order.path,
                &status,
                false,
            )),
        }))
    }

    async fn read_trace(
        &self,
        request: Request<v1::ReadTraceRequest>,
    ) -> Result<Response<v1::ReadTraceResponse>, Status> {
        let call = request.into_inner();
        let entry = self.registry.get(call.pid)?;
        let handle = TraceHandle {
            generation: call.id,
        };
        let not_found = || DaemonError::NotFound {
            what: "trace order",
            name: call.id.to_string(),
            pid: call.pid,
            nearest: Vec::new(),
        };
        let mut status = entry
            .handle
            .trace_status(handle)
            .map_err(DaemonError::from)?
            .ok_or_else(not_found)?;
        let ended = entry.status().end.is_some() || !entry.handle.target_alive();
        // Still pending once the target left its start wait: it never takes the order now.
        if status.state == TraceState::Pending
            && (ended
                || entry.handle.state().map_err(DaemonError::from)? != TargetState::WaitingForTool)
            && entry
                .handle
                .refuse_trace(handle)
                .map_err(DaemonError::from)?
        {
            status = entry
                .handle
                .trace_status(handle)
                .map_err(DaemonError::from)?
                .ok_or_else(not_found)?;
        }
        let order = status.order.clone();
        let region = order
            .as_ref()
            .map(|o| entry.region_name(o.region))
            .unwrap_or_default();
        let output = order.map(|o| o.path).unwrap_or_default();
        Ok(Response::new(v1::ReadTraceResponse {
            trace: Some(model::trace_info(
                call.pid, call.id, region, output, &status, ended,
            )),
        }))
    }
}

/// Where `entries` stand, as a watch stream starts with: each target, and its end if it ended.
fn snapshot(entries: &[Arc<TargetEntry>]) -> Vec<v1::Event> {
    let mut out = Vec::new();
    for e in entries {
        out.push(v1::Event {
            pid: e.pid(),
            kind: Some(v1::event::Kind::Target(e.describe())),
        });
        let status = e.status();
        if let Some(end) = &status.end {
            out.push(v1::Event {
                pid: e.pid(),
                kind: Some(v1::event::Kind::Exited(v1::TargetExit {
                    died: end.died,
                    reason: end.reason.clone(),
                })),
            });
        }
    }
    out
}
