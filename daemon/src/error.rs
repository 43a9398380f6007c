//! The daemon's errors and their one mapping to gRPC statuses: every handler returns a
//! [`DaemonError`], and only `From<DaemonError> for Status` decides codes.
//!
//! The rule: NOT_FOUND when a name (target, region, data structure, request) matches nothing,
//! with the nearest names in the message; INVALID_ARGUMENT when the request could never be served
//! as written; FAILED_PRECONDITION when it could, but not in the target's present state (ended,
//! running, no model yet); RESOURCE_EXHAUSTED when the target's request slots are full;
//! DEADLINE_EXCEEDED when a step's wait ran out; DATA_LOSS when a segment fails validation;
//! PERMISSION_DENIED when the kernel refuses; UNAVAILABLE while shutting down.

use std::time::Duration;

use epcache_shm::SegmentError;
use epcache_shm::tool::ToolError;
use tonic::{Code, Status};

/// Something a call could not do.
#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    /// No target with this pid.
    #[error(
        "no target with pid {pid} is known to this daemon: {why}; list targets with `epcache targets`"
    )]
    UnknownTarget {
        /// The pid asked for.
        pid: u32,
        /// What the pid is instead, and the targets the daemon does know, in words.
        why: String,
    },
    /// The target ended.
    #[error(
        "target pid {pid} {how}; it cannot {action} any more (its last results stay readable for a while)"
    )]
    TargetEnded {
        /// Its pid.
        pid: u32,
        /// "exited" or "died (killed or crashed)".
        how: &'static str,
        /// What the call wanted.
        action: &'static str,
    },
    /// A name that matches nothing.
    #[error(
        "no {what} `{}` in target pid {pid}{}",
        echo(name),
        nearest_text(nearest)
    )]
    NotFound {
        /// "region", "data structure", "request"...
        what: &'static str,
        /// What was asked for.
        name: String,
        /// The target.
        pid: u32,
        /// The closest existing names.
        nearest: Vec<String>,
    },
    /// A name that matches several things.
    #[error(
        "{what} `{}` is ambiguous in target pid {pid}: {candidates}; {hint}",
        echo(name)
    )]
    Ambiguous {
        /// "region" or "data structure".
        what: &'static str,
        /// What was asked for.
        name: String,
        /// The target.
        pid: u32,
        /// The matches, in words.
        candidates: String,
        /// How to name one of them.
        hint: &'static str,
    },
    /// A request that could never be served as written.
    #[error("{0}")]
    InvalidArgument(String),
    /// A request that cannot be served in the target's present state.
    #[error("{0}")]
    FailedPrecondition(String),
    /// A step did not reach its point in time.
    #[error("target pid {pid} did not reach the halting point within {:.1} s; the point was taken back and the target runs on: step again to stop it", waited.as_secs_f64())]
    StepTimeout {
        /// The target.
        pid: u32,
        /// How long the call waited.
        waited: Duration,
    },
    /// Another tool armed its own halting point while a step waited: the target halted there.
    #[error(
        "target pid {pid} halted at {at}, where {by} asked it to: another tool's step or halting point replaced this step's while it waited; step again to go on to yours"
    )]
    StepReplaced {
        /// The target.
        pid: u32,
        /// Where it halted.
        at: String,
        /// The tool whose point it was, as far as this daemon knows.
        by: String,
    },
    /// One request of several failed; the others were withdrawn.
    #[error(
        "the call's request {} of {count}: {source} (no request of this call was placed)",
        index + 1
    )]
    InRequest {
        /// Its position in the call, from 0 (said from 1, as tables number requests).
        index: usize,
        /// How many requests the call held.
        count: usize,
        /// What was wrong with it.
        source: Box<DaemonError>,
    },
    /// The segment protocol refused or failed.
    #[error(transparent)]
    Tool(#[from] ToolError),
    /// Sending a signal failed.
    #[error("signalling pid {pid}: {errno}")]
    Signal {
        /// The target.
        pid: u32,
        /// The kernel's answer.
        errno: nix::errno::Errno,
    },
    /// The daemon is stopping.
    #[error("epcached is shutting down; reconnect to a running daemon")]
    ShuttingDown,
}

fn nearest_text(nearest: &[String]) -> String {
    if nearest.is_empty() {
        String::new()
    } else {
        format!("; nearest: {}", nearest.join(", "))
    }
}

/// How many characters of a name from a request (or a target) a message repeats.
pub(crate) const ECHO_CHARS: usize = 120;

/// The longest status message sent; what is beyond is cut (names are cut before, by [`echo`]).
const MAX_MESSAGE_CHARS: usize = 2048;

/// `text` as a message repeats it: whole up to [`ECHO_CHARS`], else its start, "..." and its
/// length, so a 12 KB name does not come back whole.
pub(crate) fn echo(text: &str) -> String {
    let chars = text.chars().count();
    if chars <= ECHO_CHARS {
        text.to_owned()
    } else {
        let start: String = text.chars().take(ECHO_CHARS).collect();
        format!("{start}... ({chars} characters)")
    }
}

impl DaemonError {
    /// The gRPC code this error maps to.
    pub fn code(&self) -> Code {
        match self {
            DaemonError::UnknownTarget { .. } | DaemonError::NotFound { .. } => Code::NotFound,
            DaemonError::TargetEnded { .. } | DaemonError::FailedPrecondition(_) => {
                Code::FailedPrecondition
            }
            DaemonError::Ambiguous { .. } | DaemonError::InvalidArgument(_) => {
                Code::InvalidArgument
            }
            DaemonError::StepTimeout { .. } => Code::DeadlineExceeded,
            DaemonError::StepReplaced { .. } => Code::Aborted,
            DaemonError::InRequest { source, .. } => source.code(),
            DaemonError::Tool(e) => tool_code(e),
            DaemonError::Signal { errno, .. } => match errno {
                nix::errno::Errno::EPERM => Code::PermissionDenied,
                nix::errno::Errno::ESRCH => Code::FailedPrecondition,
                _ => Code::Internal,
            },
            DaemonError::ShuttingDown => Code::Unavailable,
        }
    }
}

fn tool_code(e: &ToolError) -> Code {
    match e {
        ToolError::Segment(SegmentError::NotOwner { .. } | SegmentError::TooOpen { .. })
        | ToolError::ForeignSegment { .. } => Code::PermissionDenied,
        // The segment vanished under us: its target is gone.
        ToolError::Segment(_) | ToolError::StaleRecord { .. } => Code::FailedPrecondition,
        ToolError::Layout { .. } => Code::DataLoss,
        ToolError::NoSuchRegion { .. }
        | ToolError::NoSuchDataStructure { .. }
        | ToolError::StaleRequest { .. } => Code::NotFound,
        ToolError::InvalidRequest { .. } => Code::InvalidArgument,
        ToolError::NoFreeSlot { .. } => Code::ResourceExhausted,
        ToolError::TargetDied { .. }
        | ToolError::TargetExited { .. }
        | ToolError::NotHalted { .. }
        | ToolError::TraceBusy { .. }
        | ToolError::TraceNotAtStart { .. } => Code::FailedPrecondition,
        ToolError::Timeout { .. } => Code::DeadlineExceeded,
    }
}

impl From<DaemonError> for Status {
    fn from(e: DaemonError) -> Status {
        let code = e.code();
        if matches!(code, Code::Internal | Code::DataLoss) {
            tracing::warn!(error = %e, "call failed");
        } else {
            tracing::debug!(error = %e, ?code, "call refused");
        }
        let mut message = e.to_string();
        let chars = message.chars().count();
        if chars > MAX_MESSAGE_CHARS {
            message = message.chars().take(MAX_MESSAGE_CHARS).collect();
            message.push_str(&format!("... (message of {chars} characters cut)"));
        }
        Status::new(code, message)
    }
}

/// Why a daemon could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: String,
        /// What failed.
        source: std::io::Error,
    },
    /// A TCP address without a token.
    #[error(
        "listening on TCP {addr} without a bearer token would let anyone who reaches the port (on loopback: every local user) drive your programs; give a token of at least {min} characters (--token-file or EPCACHED_TOKEN), or use the default Unix socket",
        min = crate::config::MIN_TOKEN_CHARS
    )]
    NeedsToken {
        /// The address.
        addr: String,
    },
    /// A token too short to be a secret.
    #[error(
        "the bearer token has {chars} characters; use at least {min} (e.g. `head -c 32 /dev/urandom | base64 > token`)",
        min = crate::config::MIN_TOKEN_CHARS
    )]
    WeakToken {
        /// How many it has.
        chars: usize,
    },
    /// TLS was asked for a Unix socket, or without the feature.
    #[error("{0}")]
    Tls(String),
    /// The server could not be built or stopped with an error.
    #[error("the gRPC server: {0}")]
    Server(String),
    /// The runtime directory is unusable.
    #[error(transparent)]
    RuntimeDir(#[from] epcache_shm::discovery::DiscoveryError),
    /// Another daemon serves the runtime directory.
    #[error(transparent)]
    RuntimeDirServed(#[from] crate::runtime_dir_lock::RuntimeDirLockError),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_match_nothing_say_what_is_near() {
        let e = DaemonError::NotFound {
            what: "region",
            name: "kernal".into(),
            pid: 7,
            nearest: vec!["kernel".into(), "init".into()],
        };
        let s = Status::from(e);
        assert_eq!(s.code(), Code::NotFound);
        assert_eq!(
            s.message(),
            "no region `kernal` in target pid 7; nearest: kernel, init"
        );
    }

    #[test]
    fn echoed_names_and_whole_messages_are_capped() {
        let long = "r".repeat(12_000);
        let s = Status::from(DaemonError::NotFound {
            what: "region",
            name: long.clone(),
            pid: 7,
            nearest: vec!["kernel".into()],
        });
        assert!(s.message().len() < 600, "{}", s.message().len());
        assert!(
            s.message().contains("... (12000 characters)"),
            "{}",
            s.message()
        );
        assert!(s.message().ends_with("kernel"), "{}", s.message());
        let s = Status::from(DaemonError::InvalidArgument(long));
        assert!(s.message().len() < 2200, "{}", s.message().len());
        assert!(s.message().ends_with("(message of 12000 characters cut)"));
        assert_eq!(echo("short"), "short");
    }

    #[test]
    fn a_failing_request_of_several_keeps_its_code_and_says_which() {
        let e = DaemonError::InRequest {
            index: 2,
            count: 3,
            source: Box::new(DaemonError::Tool(ToolError::NoFreeSlot { capacity: 64 })),
        };
        let s = Status::from(e);
        assert_eq!(s.code(), Code::ResourceExhausted);
        assert!(
            s.message()
                .starts_with("the call's request 3 of 3: all 64 request slots"),
            "{}",
            s.message()
        );
    }

    #[test]
    fn segment_protocol_errors_map_to_the_documented_codes() {
        let cases = [
            (ToolError::TargetDied { pid: 1 }, Code::FailedPrecondition),
            (ToolError::TargetExited { pid: 1 }, Code::FailedPrecondition),
            (
                ToolError::TraceBusy {
                    pid: 1,
                    state: epcache_shm::layout::TraceState::Recording,
                },
                Code::FailedPrecondition,
            ),
            (
                ToolError::TraceNotAtStart {
                    pid: 1,
                    state: epcache_shm::layout::TargetState::Running,
                },
                Code::FailedPrecondition,
            ),
            (
                ToolError::InvalidRequest { why: "x".into() },
                Code::InvalidArgument,
            ),
            (
                ToolError::StaleRequest {
                    slot: 1,
                    generation: 2,
                },
                Code::NotFound,
            ),
            (
                ToolError::Timeout {
                    pid: 1,
                    waited: Duration::from_secs(1),
                },
                Code::DeadlineExceeded,
            ),
        ];
        for (e, code) in cases {
            assert_eq!(Status::from(DaemonError::Tool(e)).code(), code);
        }
    }
}
