//! epcached, the analysis daemon: it discovers monitored targets, attaches to their segments and
//! serves the Monitoring Request Interface (`epcache.mri.v1.Mri`) to any number of tools over
//! gRPC, with the standard health and reflection services beside it.
//!
//! The binary `epcached` is a thin wrapper; `epcache run` and `epcache demo` embed the same
//! daemon in-process through [`serve`]:
//!
//! ```no_run
//! # async fn demo() -> Result<(), epcache_daemon::ServeError> {
//! // A private runtime directory, and the daemon's socket in it (DIR/epcached.sock).
//! let daemon = epcache_daemon::serve(epcache_daemon::Config::private("/tmp/my-epcache")).await?;
//! println!("tools connect to {}", daemon.endpoint());
//! // ... run tools against it ...
//! daemon.shutdown().await;
//! # Ok(()) }
//! ```
//!
//! By default it listens on a Unix socket in the user's runtime directory and serves only
//! processes of the same user (their peer credentials are checked on every connection); TCP
//! needs a bearer token, loopback included.
//!
//! # Layout
//! - [`config`]: where to listen, token, TLS, who may connect, runtime directory.
//! - `transport`: the accept loops, peer credentials, the connection every call comes on.
//! - `registry`: discovery, one attachment and watcher per target, the event broadcast;
//!   `unknown_pid` says what a pid it knows no target for is instead.
//! - `service`: the `Mri` calls.
//! - `resolve`: names to indices, with the nearest names in refusals.
//! - [`error`]: the daemon's errors and their one mapping to gRPC statuses.
//! - [`model`]: conversions between monitor types and MRI messages.

#![forbid(unsafe_code)]

pub mod config;
pub mod error;
pub mod model;
mod registry;
mod resolve;
mod runtime_dir_lock;
mod service;
mod token_file;
mod trace_order;
mod transport;
mod unknown_pid;

use std::future::Future;
use std::sync::Arc;

use epcache_proto::v1::mri_server::MriServer;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tonic::service::Interceptor;
use tonic::transport::Server;
use tonic::{Request, Status};

pub use config::{
    Config, DAEMON_SOCKET, DEFAULT_HALT_LEASE, DEFAULT_PORT, ListenAddr, MIN_TOKEN_CHARS, TlsFiles,
};
pub use error::{DaemonError, ServeError};
pub use resolve::nearest;
pub use runtime_dir_lock::RuntimeDirLockError;
pub use service::TOOL_METADATA;
pub use token_file::{TokenFileError, bearer_token, read_token_file};
pub use transport::{ConnectionInfo, Peer, connection_of};

use crate::registry::Registry;
use crate::service::MriService;

/// Checks `authorization: Bearer TOKEN` on every MRI call when the daemon has a token.
#[derive(Clone)]
struct BearerAuth {
    expected: Option<Arc<[u8]>>,
}

impl std::fmt::Debug for BearerAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BearerAuth")
            .field("required", &self.expected.is_some())
            .finish()
    }
}

/// Compares without an early exit, so the time taken says nothing about the token.
fn same_secret(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

impl Interceptor for BearerAuth {
    fn call(&mut self, request: Request<()>) -> Result<Request<()>, Status> {
        let Some(expected) = &self.expected else {
            return Ok(request);
        };
        let given = request
            .metadata()
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::as_bytes);
        let peer =
            connection_of(&request).map_or_else(|| "unknown".to_owned(), |c| c.peer.to_string());
        match given {
            Some(token) if same_secret(token, expected) => Ok(request),
            Some(_) => {
                tracing::warn!(%peer, "authentication failed: wrong bearer token");
                Err(Status::unauthenticated(
                    "the bearer token does not match this daemon's; check --token-file / EPCACHE_TOKEN",
                ))
            }
            None => {
                tracing::warn!(%peer, "authentication failed: no bearer token");
                Err(Status::unauthenticated(
                    "this daemon requires a bearer token (authorization: Bearer TOKEN); give the tool --token-file or EPCACHE_TOKEN",
                ))
            }
        }
    }
}

/// A running daemon. Dropping it stops the server and the watchers without the graceful
/// release (a target halted at a point goes on by itself once no tool is attached); call
/// [`DaemonHandle::shutdown`] to let targets go first.
#[derive(Debug)]
pub struct DaemonHandle {
    addr: ListenAddr,
    registry: Arc<Registry>,
    stop: watch::Sender<bool>,
    server: Option<JoinHandle<Result<(), tonic::transport::Error>>>,
    discovery: Option<JoinHandle<()>>,
    /// This daemon's hold on its runtime directory, let go when the handle goes.
    _runtime_dir: runtime_dir_lock::RuntimeDirLock,
}

impl DaemonHandle {
    /// Where it listens, with the port it actually bound.
    pub fn addr(&self) -> &ListenAddr {
        &self.addr
    }

    /// The address as tools give it: `http://HOST:PORT` or `unix:PATH`.
    pub fn endpoint(&self) -> String {
        match &self.addr {
            ListenAddr::Tcp(a) => format!("http://{a}"),
            ListenAddr::Unix(p) => format!("unix:{}", p.display()),
        }
    }

    /// Runs until `signal` completes or the server fails, then shuts down gracefully.
    pub async fn serve_until(mut self, signal: impl Future<Output = ()>) -> Result<(), ServeError> {
        let server = self.server.take();
        let failed = async {
            match server {
                Some(s) => s.await,
                None => std::future::pending().await,
            }
        };
        let outcome = tokio::select! {
            () = signal => None,
            r = failed => Some(r),
        };
        self.shutdown().await;
        match outcome {
            Some(Ok(Err(e))) => Err(ServeError::Server(e.to_string())),
            _ => Ok(()),
        }
    }

    /// Stops gracefully: every live target's requests placed through this daemon are cancelled,
    /// its halting point cleared, and it is released if halted; watch streams and waiting steps
    /// end with UNAVAILABLE; the listener closes and segments are detached.
    pub async fn shutdown(mut self) {
        self.registry.shut_down().await;
        let _ = self.stop.send(true);
        if let Some(server) = self.server.take() {
            let _ = server.await;
        }
        if let Some(discovery) = self.discovery.take() {
            let _ = discovery.await;
        }
        if let ListenAddr::Unix(path) = &self.addr {
            let _ = std::fs::remove_file(path);
        }
        tracing::info!("epcached stopped");
    }
}

impl Drop for DaemonHandle {
    fn drop(&mut self) {
        // Without the graceful release; but the watchers must end, or a runtime that waits for
        // its blocking tasks would wait for the targets to end.
        self.registry.stop_watchers();
        let _ = self.stop.send(true);
    }
}

/// Starts a daemon on the current tokio runtime and returns once it listens.
pub async fn serve(config: Config) -> Result<DaemonHandle, ServeError> {
    if let Some(token) = &config.token
        && token.trim().chars().count() < config::MIN_TOKEN_CHARS
    {
        return Err(ServeError::WeakToken {
            chars: token.trim().chars().count(),
        });
    }
    if matches!(config.listen, ListenAddr::Tcp(_)) && config.token.is_none() {
        return Err(ServeError::NeedsToken {
            addr: config.listen.to_string(),
        });
    }
    // Targets announce themselves there: another user who may write into it could plant records.
    epcache_shm::discovery::ensure_runtime_dir(&config.runtime_dir)?;
    // Its programs' halts and waits are this daemon's alone.
    let runtime_dir_lock = runtime_dir_lock::RuntimeDirLock::take(&config.runtime_dir)?;
    if !config.listen.is_local() && config.tls.is_none() {
        tracing::warn!(addr = %config.listen, "listening beyond this machine without TLS: the bearer token travels in clear text");
    }
    let registry = Arc::new(Registry::new(
        config.runtime_dir.clone(),
        config.exited_retention,
        config.halt_lease,
    ));
    let (stop, stopped) = watch::channel(false);

    let (health, health_service) = tonic_health::server::health_reporter();
    health
        .set_serving::<MriServer<tonic::service::interceptor::InterceptedService<MriService, BearerAuth>>>()
        .await;
    let reflection = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(epcache_proto::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .build_v1()
        .map_err(|e| ServeError::Server(format!("reflection: {e}")))?;
    let mri = MriServer::with_interceptor(
        MriService::new(registry.clone(), stopped.clone()),
        BearerAuth {
            expected: config
                .token
                .as_ref()
                .map(|t| Arc::from(t.trim().as_bytes())),
        },
    );

    let mut builder = Server::builder()
        .http2_keepalive_interval(Some(config.keepalive_interval))
        .http2_keepalive_timeout(Some(config.keepalive_timeout));
    if let Some(tls) = &config.tls {
        builder = with_tls(builder, tls, &config.listen)?;
    }
    let router = builder
        .add_service(health_service)
        .add_service(reflection)
        .add_service(mri);
    let mut until = stopped.clone();
    let shutdown_signal = async move {
        let _ = until.wait_for(|s| *s).await;
    };
    let (closed_tx, closed_rx) = tokio::sync::mpsc::unbounded_channel();
    let accepting = transport::Accepting {
        handshake_timeout: config.handshake_timeout,
        closed: closed_tx,
        stop: stopped.clone(),
    };
    let (addr, server) = match &config.listen {
        ListenAddr::Tcp(a) => {
            let bind_err = |source| ServeError::Bind {
                addr: a.to_string(),
                source,
            };
            let listener = tokio::net::TcpListener::bind(a).await.map_err(bind_err)?;
            let bound = listener.local_addr().map_err(bind_err)?;
            let incoming = transport::accept_tcp(listener, accepting);
            (
                ListenAddr::Tcp(bound),
                tokio::spawn(router.serve_with_incoming_shutdown(incoming, shutdown_signal)),
            )
        }
        ListenAddr::Unix(path) => {
            let bind_err = |source| ServeError::Bind {
                addr: format!("unix:{}", path.display()),
                source,
            };
            remove_stale_socket(path).map_err(bind_err)?;
            let listener = tokio::net::UnixListener::bind(path).map_err(bind_err)?;
            {
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
                    .map_err(bind_err)?;
            }
            let policy = transport::PeerPolicy {
                uid: epcache_shm::current_uid(),
                allow_root: config.allow_root,
            };
            let incoming = transport::accept_unix(listener, policy, accepting);
            (
                ListenAddr::Unix(path.clone()),
                tokio::spawn(router.serve_with_incoming_shutdown(incoming, shutdown_signal)),
            )
        }
    };
    tracing::info!(%addr, runtime_dir = %config.runtime_dir.display(), token = config.token.is_some(), tls = config.tls.is_some(), allow_root = config.allow_root, "epcached listening");
    spawn_connection_reaper(registry.clone(), closed_rx);

    let discovery = {
        let registry = registry.clone();
        let mut stopped = stopped.clone();
        let interval = config.discovery_interval;
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(interval);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = tick.tick() => {}
                    _ = stopped.wait_for(|s| *s) => return,
                }
                let r = registry.clone();
                // Reading the directory and /proc, and attaching, are blocking system calls.
                if tokio::task::spawn_blocking(move || r.discover())
                    .await
                    .is_err()
                {
                    tracing::error!("discovery pass panicked");
                }
            }
        })
    };
    Ok(DaemonHandle {
        addr,
        registry,
        stop,
        server: Some(server),
        discovery: Some(discovery),
        _runtime_dir: runtime_dir_lock,
    })
}

/// Lets go of what each closed connection owned. Ends when every connection and the listener
/// are gone (all senders dropped).
fn spawn_connection_reaper(
    registry: Arc<Registry>,
    mut closed: tokio::sync::mpsc::UnboundedReceiver<u64>,
) {
    tokio::spawn(async move {
        while let Some(id) = closed.recv().await {
            tracing::debug!(connection = id, "connection closed");
            let r = registry.clone();
            // Segment stores and futex wakes, and perhaps a short wait for a halt in flight.
            let _ = tokio::task::spawn_blocking(move || r.connection_closed(id)).await;
        }
    });
}

/// Removes a socket file left by a daemon that did not stop cleanly; anything else at the path
/// is left alone (the bind then fails and says so).
fn remove_stale_socket(path: &std::path::Path) -> std::io::Result<()> {
    use std::os::unix::fs::FileTypeExt;
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_socket() => {
            if std::os::unix::net::UnixStream::connect(path).is_ok() {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::AddrInUse,
                    "another daemon answers on this socket",
                ));
            }
            std::fs::remove_file(path)
        }
        _ => Ok(()),
    }
}

#[cfg(feature = "tls")]
fn with_tls(builder: Server, tls: &TlsFiles, listen: &ListenAddr) -> Result<Server, ServeError> {
    if matches!(listen, ListenAddr::Unix(_)) {
        return Err(ServeError::Tls(
            "TLS is for TCP listeners; a Unix socket is protected by its file mode".into(),
        ));
    }
    let read = |p: &std::path::Path| {
        std::fs::read(p).map_err(|e| ServeError::Tls(format!("reading {}: {e}", p.display())))
    };
    let identity = tonic::transport::Identity::from_pem(read(&tls.cert)?, read(&tls.key)?);
    builder
        .tls_config(tonic::transport::ServerTlsConfig::new().identity(identity))
        .map_err(|e| ServeError::Tls(format!("TLS configuration: {e}")))
}

#[cfg(not(feature = "tls"))]
fn with_tls(_: Server, _: &TlsFiles, _: &ListenAddr) -> Result<Server, ServeError> {
    Err(ServeError::Tls(
        "this epcached was built without TLS; rebuild it with `cargo build -p epcache-daemon --features tls`".into(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_compare_whole() {
        assert!(same_secret(b"abc", b"abc"));
        assert!(!same_secret(b"abc", b"abd"));
        assert!(!same_secret(b"abc", b"abcd"));
    }

    #[test]
    fn the_interceptor_wants_the_exact_bearer_token() {
        let mut auth = BearerAuth {
            expected: Some(Arc::from(&b"s3cret"[..])),
        };
        let with = |v: &str| {
            let mut r = Request::new(());
            r.metadata_mut().insert("authorization", v.parse().unwrap());
            r
        };
        assert!(auth.call(with("Bearer s3cret")).is_ok());
        let wrong = auth.call(with("Bearer nope")).unwrap_err();
        assert_eq!(wrong.code(), tonic::Code::Unauthenticated);
        let none = auth.call(Request::new(())).unwrap_err();
        assert!(none.message().contains("requires a bearer token"));
        let mut open = BearerAuth { expected: None };
        assert!(open.call(Request::new(())).is_ok());
    }
}
