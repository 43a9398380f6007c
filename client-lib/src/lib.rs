//! The tools' side of epcache: a typed async client for the Monitoring Request Interface that
//! `epcached` serves. The `epcache` command line (`client-lib/cli/`) and the example tools are
//! built on it.
//!
//! A tool connects to a daemon, lists the monitored targets, describes one (its regions, data
//! structures, cache model and events), places requests (static counts or histograms of an event
//! over a data structure during a region), steps the target from region boundary to region
//! boundary or watches its events, and reads results: totals and histogram buckets, each with the
//! bytes it covers.
//!
//! ```no_run
//! use epcache_client::{Client, Request, StepOutcome, StepTo};
//!
//! # async fn demo() -> Result<(), epcache_client::ClientError> {
//! let mut client = Client::connect(&epcache_client::default_address()).await?;
//! let pid = client.targets().await?[0].pid;
//! let misses = client.request(pid, Request::histogram("kernel", "A", "PAPI_L1_LDM", 25)).await?;
//! let total = client.request(pid, Request::count("kernel", "A", "PAPI_L1_LDM")).await?;
//! match client.step(pid, StepTo::RegionExit("kernel".into())).await? {
//!     StepOutcome::Halted(halt) => println!("halted at {:?}", halt.position),
//!     StepOutcome::Exited(exit) => println!("the program ended: {}", exit.reason),
//! }
//! let results = client.results(pid, &[misses.id, total.id]).await?;
//! let sum: u64 = results[0].buckets.iter().map(|b| b.count).sum();
//! assert_eq!(sum, results[1].total);
//! client.detach(pid).await?;
//! # Ok(()) }
//! ```
//!
//! Refusals keep the daemon's gRPC status ([`ClientError::Rpc`]): `NotFound` for unknown names
//! (the message lists the nearest), `InvalidArgument` for requests that can never be served,
//! `FailedPrecondition` for a target that ended or is not halted.
//!
//! Layout:
//! - [`Client`] (`client.rs`): the connection (Unix socket, TCP, TLS with the `tls` feature)
//!   and one async method per MRI call;
//! - `types.rs`: the typed requests, descriptions, halts and results, converted from and to the
//!   `epcache.mri.v1` messages ([`mri`]) and checked on the way in;
//! - `local` (feature `embedded`): one program launched under a daemon embedded in the tool's
//!   own process, for tools that monitor a run from its start without a separate `epcached`;
//! - [`survey`]: the regions and data structures a tool surveys, learned again at each halt as
//!   the program allocates heap arrays and meets markers, with the tool's requests over them.
//!
//! Architecture Invariant: without the `embedded` feature the client does not depend on the
//! daemon: a remote tool compiles the gRPC client, the protocol's discovery paths and the
//! simulator's report types, never the server nor the in-target runtime.

#![forbid(unsafe_code)]

mod client;
#[cfg(feature = "embedded")]
pub mod local;
pub mod survey;
mod types;

pub use client::{Client, ConnectOptions};
pub use epcache_proto::v1 as mri;
/// How a name a user types finds regions (`init` finds `mesh::init`), as the daemon resolves it.
pub use epcache_shm::region_names;
/// The analysis report an analysis request's result carries ([`RequestResult::analysis`]): the
/// runtime's own types, with their methods (predictions from reuse distances, evictor look-ups).
pub use epcache_sim::analysis::{
    AnalysisReport, DistanceHistogram, EvictorMatrix, FieldUse, MissClassBuckets, MissClassCounts,
    MissClassReport, RangeAnalysis, ReuseBuckets, ReuseReport,
};
#[cfg(feature = "embedded")]
pub use local::{Launch, LocalError, LocalTarget};
pub use survey::{Extension, LeftOut, Pair, Placement, Survey, SurveyedData};
pub use types::{
    Aggregation, AllocationSite, Analysis, Binding, Boundary, Bucket, DataRef, DataStructure,
    DataStructureKind, Description, Detached, Dimension, Event, EventInfo, Field, Halt,
    HaltingPoint, InstanceBytes, Mode, Position, Region, RegionKind, RegionRef, Request,
    RequestInfo, RequestResult, Shape, SiteBlock, StepOutcome, StepTo, Target, TargetExit,
    TargetState, ThreadResult, TraceInfo, TraceOrder, TraceState, UnknownAggregation,
};

/// Where `epcached` listens by default: `unix:RUNTIME_DIR/epcached.sock`, the runtime directory
/// being `$EPCACHE_RUNTIME_DIR`, else `$XDG_RUNTIME_DIR/epcache`, else `/tmp/epcache-UID` (as the
/// daemon and the targets resolve it).
pub fn default_address() -> String {
    let dir = epcache_shm::discovery::runtime_dir();
    format!(
        "unix:{}",
        epcache_shm::discovery::daemon_socket(&dir).display()
    )
}

/// Something a call to the daemon could not do.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The address is not one a daemon can have.
    #[error(
        "`{address}` is not a daemon address; use unix:/path/to/socket (the default is the daemon's socket in your runtime directory), HOST:PORT or a port alone"
    )]
    Address {
        /// What was given.
        address: String,
    },
    /// No daemon answered.
    #[error("cannot reach epcached at {address}: {source}; {advice}")]
    Connect {
        /// The address tried.
        address: String,
        /// What failed.
        source: tonic::transport::Error,
        /// What to try: start a daemon, or, for a socket of another user's, your own.
        advice: String,
    },
    /// A daemon of another user's closed the connection at once.
    #[error("epcached at {address} closed the connection ({why}): {advice}")]
    Refused {
        /// The address.
        address: String,
        /// What the transport said.
        why: String,
        /// Whose socket it is, and what to do.
        advice: String,
    },
    /// The daemon refused or failed the call; the code says why (see the crate docs). The
    /// status is not the error's source: its message is the error's, said once.
    #[error("{}", .0.message())]
    Rpc(tonic::Status),
    /// The daemon's answer was not what this client understands.
    #[error("{0}; is the daemon from the same epcache release?")]
    Protocol(String),
    /// The connection broke during a call: the daemon ended (or was killed) while it worked.
    #[error(
        "the connection to epcached broke during the call ({}): the daemon ended or was killed; the programs it held halted or waiting were let go and run on; start epcached again (they attach to it again) and call again",
        .0.message()
    )]
    Lost(tonic::Status),
}

impl From<tonic::Status> for ClientError {
    fn from(status: tonic::Status) -> Self {
        // What tonic says of a connection that went away under a call, never a daemon's own
        // refusal (those carry the daemon's words).
        let message = status.message();
        let broken = matches!(
            status.code(),
            tonic::Code::Unavailable | tonic::Code::Unknown
        ) && (message.starts_with("transport error")
            || message.starts_with("h2 protocol error")
            || message.contains("connection reset")
            || message.contains("broken pipe"));
        if broken {
            ClientError::Lost(status)
        } else {
            ClientError::Rpc(status)
        }
    }
}

impl ClientError {
    /// The gRPC code of a refusal, if the daemon answered with one.
    pub fn code(&self) -> Option<tonic::Code> {
        match self {
            ClientError::Rpc(s) | ClientError::Lost(s) => Some(s.code()),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connection_broken_under_a_call_is_told_from_a_refusal() {
        for message in [
            "transport error",
            "h2 protocol error: error reading a body from connection",
        ] {
            let e = ClientError::from(tonic::Status::unknown(message));
            assert!(matches!(e, ClientError::Lost(_)), "{message}: {e:?}");
            assert!(e.to_string().contains("start epcached again"), "{e}");
        }
        let refusal = tonic::Status::unavailable("the daemon is shutting down");
        assert!(matches!(ClientError::from(refusal), ClientError::Rpc(_)));
    }
}
