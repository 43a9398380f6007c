//! A partial-trace order (the MRI's StartTrace) and what became of it, as tools see them.

use serde::Serialize;

use super::{DataRef, RegionRef};
use crate::ClientError;
use epcache_proto::v1;

/// What to record: a region's instances, from the recording thread's first access, into a
/// file the target writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceOrder {
    /// The region whose instances are counted.
    pub region: RegionRef,
    /// Instances to record; `None` records every one.
    pub instances: Option<u64>,
    /// The most accesses to write; `None` sets no limit.
    pub access_budget: Option<u64>,
    /// The data structures whose accesses are written; empty writes every access (what exact
    /// re-simulation needs).
    pub data: Vec<DataRef>,
    /// The absolute path the target writes.
    pub output: String,
    /// Whether an existing file may be replaced.
    pub overwrite: bool,
}

impl TraceOrder {
    /// Every instance of `region`, every access, into `output` (a new file).
    pub fn new(region: impl Into<RegionRef>, output: impl Into<String>) -> TraceOrder {
        TraceOrder {
            region: region.into(),
            instances: None,
            access_budget: None,
            data: Vec::new(),
            output: output.into(),
            overwrite: false,
        }
    }

    pub(crate) fn to_mri(&self, pid: u32) -> v1::StartTraceRequest {
        v1::StartTraceRequest {
            pid,
            region: Some(self.region.to_mri()),
            instances: self.instances.unwrap_or(0),
            access_budget: self.access_budget.unwrap_or(0),
            data_structures: self.data.iter().map(DataRef::to_mri).collect(),
            output: self.output.clone(),
            overwrite: self.overwrite,
        }
    }
}

/// Where a trace order is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TraceState {
    /// Placed; the target takes it when released from its start wait.
    Pending,
    /// Being recorded.
    Recording,
    /// The file is written.
    Written,
    /// Nothing usable was written (see the message).
    Failed,
    /// Taken back: the target left its start wait first.
    Refused,
    /// The target ended before it said the trace was written.
    Lost,
}

impl TraceState {
    /// Whether nothing will change any more.
    pub fn is_final(self) -> bool {
        !matches!(self, TraceState::Pending | TraceState::Recording)
    }
}

/// A trace order and what became of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TraceInfo {
    /// The target.
    pub pid: u32,
    /// The order's id on the target.
    pub id: u32,
    /// The region it counts.
    pub region: String,
    /// The file.
    pub output: String,
    /// Where it is.
    pub state: TraceState,
    /// Accesses written (known once written).
    pub accesses: u64,
    /// Instances of the region it holds.
    pub instances: u64,
    /// Whether it holds everything asked.
    pub complete: bool,
    /// Whether the access budget ended it.
    pub budget_reached: bool,
    /// What the target said; empty when nothing needs saying.
    pub message: String,
}

impl TryFrom<v1::TraceInfo> for TraceInfo {
    type Error = ClientError;
    fn try_from(t: v1::TraceInfo) -> Result<Self, ClientError> {
        let state = match v1::TraceState::try_from(t.state) {
            Ok(v1::TraceState::Pending) => TraceState::Pending,
            Ok(v1::TraceState::Recording) => TraceState::Recording,
            Ok(v1::TraceState::Written) => TraceState::Written,
            Ok(v1::TraceState::Failed) => TraceState::Failed,
            Ok(v1::TraceState::Refused) => TraceState::Refused,
            Ok(v1::TraceState::Lost) => TraceState::Lost,
            Ok(v1::TraceState::Unspecified) | Err(_) => {
                return Err(ClientError::Protocol(format!(
                    "the daemon's trace state {} is unknown (a newer daemon?)",
                    t.state
                )));
            }
        };
        Ok(TraceInfo {
            pid: t.pid,
            id: t.id,
            region: t.region,
            output: t.output,
            state,
            accesses: t.accesses,
            instances: t.instances,
            complete: t.complete,
            budget_reached: t.budget_reached,
            message: t.message,
        })
    }
}
