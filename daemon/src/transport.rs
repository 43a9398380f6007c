//! How tools reach the daemon: the accept loops of a Unix socket (each peer's credentials checked:
//! this user only, root only when allowed) and of a TCP listener (which [`crate::serve`] allows
//! only with a bearer token), and the connection type they hand to the gRPC server.
//!
//! Every accepted connection is wrapped in a [`Tracked`] stream, which
//! - gives each call its [`ConnectionInfo`] (a connection id and the peer) in the request's
//!   extensions, so the service knows which connection armed a halting point;
//! - closes a connection that has not sent the HTTP/2 preface within the handshake bound;
//! - says when the connection is gone (its id on a channel), so what it owned can be let go.
//!
//! Idle and silent connections past the handshake are the HTTP/2 keepalive's business (pings with
//! a timeout, set on the server in [`crate::serve`]).

use std::fmt;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, UnixListener};
use tokio::sync::{mpsc, watch};
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::server::Connected;

/// Bytes of the HTTP/2 client preface (`PRI * HTTP/2.0...`), which every gRPC client sends first.
const PREFACE_BYTES: usize = 24;

/// How long the accept loop pauses after a failed accept (out of file descriptors...), so it
/// does not spin.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// Who is at the other end of a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Peer {
    /// A process on a Unix socket, as the kernel vouches (SO_PEERCRED).
    Unix {
        /// Its user.
        uid: u32,
        /// Its process, when the kernel says.
        pid: Option<i32>,
    },
    /// A TCP client.
    Tcp(SocketAddr),
}

impl fmt::Display for Peer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Peer::Unix {
                uid,
                pid: Some(pid),
            } => write!(f, "uid {uid} pid {pid}"),
            Peer::Unix { uid, pid: None } => write!(f, "uid {uid}"),
            Peer::Tcp(addr) => write!(f, "{addr}"),
        }
    }
}

/// What every call knows about the connection it came on (in the request's extensions).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionInfo {
    /// Unique within one daemon; halting points armed by `SetHaltingPoint` belong to it.
    pub id: u64,
    /// The other end.
    pub peer: Peer,
}

/// The connection a request came on, if the server put it there (always, for requests served
/// from [`crate::serve`]'s listeners, with or without TLS).
pub fn connection_of<T>(request: &tonic::Request<T>) -> Option<ConnectionInfo> {
    let extensions = request.extensions();
    if let Some(info) = extensions.get::<ConnectionInfo>() {
        return Some(*info);
    }
    #[cfg(feature = "tls")]
    if let Some(info) = extensions.get::<tonic::transport::server::TlsConnectInfo<ConnectionInfo>>()
    {
        return Some(*info.get_ref());
    }
    None
}

/// Who may connect on the Unix socket.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PeerPolicy {
    /// The daemon's own uid: the one user it serves.
    pub(crate) uid: u32,
    /// Whether root is let in too.
    pub(crate) allow_root: bool,
}

impl PeerPolicy {
    fn admits(&self, uid: u32) -> bool {
        uid == self.uid || (uid == 0 && self.allow_root)
    }
}

/// How accepted connections are bounded and reported.
#[derive(Debug, Clone)]
pub(crate) struct Accepting {
    /// How long a new connection may take to send the HTTP/2 preface.
    pub(crate) handshake_timeout: Duration,
    /// Where a closed connection's id goes.
    pub(crate) closed: mpsc::UnboundedSender<u64>,
    /// Completes the accept loop when it turns true.
    pub(crate) stop: watch::Receiver<bool>,
}

static NEXT_CONNECTION: AtomicU64 = AtomicU64::new(1);

/// Sends the connection's id when dropped, i.e. when the server is done with the connection.
#[derive(Debug)]
struct ClosedNotice {
    id: u64,
    closed: mpsc::UnboundedSender<u64>,
}

impl Drop for ClosedNotice {
    fn drop(&mut self) {
        let _ = self.closed.send(self.id);
    }
}

/// An accepted connection as the gRPC server sees it; see the module docs.
#[derive(Debug)]
pub(crate) struct Tracked<S> {
    inner: S,
    info: ConnectionInfo,
    /// Until the preface arrived: when to give up on it, and how many bytes are still missing.
    handshake: Option<(Pin<Box<tokio::time::Sleep>>, usize)>,
    _closed: ClosedNotice,
}

impl<S> Tracked<S> {
    fn new(inner: S, peer: Peer, accepting: &Accepting) -> Tracked<S> {
        let id = NEXT_CONNECTION.fetch_add(1, Ordering::Relaxed);
        Tracked {
            inner,
            info: ConnectionInfo { id, peer },
            handshake: Some((
                Box::pin(tokio::time::sleep(accepting.handshake_timeout)),
                PREFACE_BYTES,
            )),
            _closed: ClosedNotice {
                id,
                closed: accepting.closed.clone(),
            },
        }
    }
}

impl<S> Connected for Tracked<S> {
    type ConnectInfo = ConnectionInfo;

    fn connect_info(&self) -> ConnectionInfo {
        self.info
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Tracked<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.inner).poll_read(cx, buf);
        let Some((deadline, missing)) = &mut this.handshake else {
            return polled;
        };
        match polled {
            Poll::Ready(Ok(())) => {
                let read = buf.filled().len() - before;
                *missing = missing.saturating_sub(read);
                // The preface is in, or the peer closed: no more bound either way.
                if *missing == 0 || read == 0 {
                    this.handshake = None;
                }
                Poll::Ready(Ok(()))
            }
            Poll::Pending => match deadline.as_mut().poll(cx) {
                Poll::Ready(()) => {
                    tracing::info!(connection = this.info.id, peer = %this.info.peer, "closed a connection that sent no HTTP/2 preface in time");
                    Poll::Ready(Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "no HTTP/2 preface within the handshake bound",
                    )))
                }
                Poll::Pending => Poll::Pending,
            },
            failed => failed,
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Tracked<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// The connections the server gets.
pub(crate) type Incoming<S> = ReceiverStream<Result<Tracked<S>, io::Error>>;

/// Accepts on `listener` until stopped; connections from users `policy` does not admit are
/// logged (uid and pid) and closed at once, before any byte is read.
pub(crate) fn accept_unix(
    listener: UnixListener,
    policy: PeerPolicy,
    mut accepting: Accepting,
) -> Incoming<tokio::net::UnixStream> {
    let (tx, rx) = mpsc::channel(16);
    tokio::spawn(async move {
        loop {
            let accepted = tokio::select! {
                a = listener.accept() => a,
                _ = accepting.stop.wait_for(|s| *s) => return,
                () = tx.closed() => return,
            };
            let stream = match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    tracing::warn!(error = %e, "accepting a connection failed");
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                    continue;
                }
            };
            let peer = match stream.peer_cred() {
                Ok(cred) => Peer::Unix {
                    uid: cred.uid(),
                    pid: cred.pid(),
                },
                Err(e) => {
                    tracing::warn!(error = %e, "refused a connection whose peer credentials cannot be read");
                    continue;
                }
            };
            let Peer::Unix { uid, pid } = peer else {
                unreachable!("a Unix peer was just made")
            };
            if !policy.admits(uid) {
                tracing::warn!(
                    uid,
                    pid = pid.unwrap_or(0),
                    daemon_uid = policy.uid,
                    "refused a connection from another user (epcached serves only its own user{})",
                    if uid == 0 {
                        "; root needs --allow-root"
                    } else {
                        ""
                    }
                );
                continue;
            }
            if tx
                .send(Ok(Tracked::new(stream, peer, &accepting)))
                .await
                .is_err()
            {
                return;
            }
        }
    });
    ReceiverStream::new(rx)
}

/// Accepts on `listener` until stopped (the bearer token is checked on every call).
pub(crate) fn accept_tcp(
    listener: TcpListener,
    mut accepting: Accepting,
) -> Incoming<tokio::net::TcpStream> {
    let (tx, rx) = mpsc::channel(16);
    tokio::spawn(async move {
        loop {
            let accepted = tokio::select! {
                a = listener.accept() => a,
                _ = accepting.stop.wait_for(|s| *s) => return,
                () = tx.closed() => return,
            };
            let (stream, addr) = match accepted {
                Ok(a) => a,
                Err(e) => {
                    tracing::warn!(error = %e, "accepting a connection failed");
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                    continue;
                }
            };
            // Steps are small messages where Nagle's delay would dominate.
            let _ = stream.set_nodelay(true);
            if tx
                .send(Ok(Tracked::new(stream, Peer::Tcp(addr), &accepting)))
                .await
                .is_err()
            {
                return;
            }
        }
    });
    ReceiverStream::new(rx)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_policy_admits_the_same_user_and_root_only_when_allowed() {
        let strict = PeerPolicy {
            uid: 1000,
            allow_root: false,
        };
        assert!(strict.admits(1000));
        assert!(!strict.admits(1001) && !strict.admits(0));
        let rooted = PeerPolicy {
            allow_root: true,
            ..strict
        };
        assert!(rooted.admits(0) && !rooted.admits(65534));
        let root_daemon = PeerPolicy {
            uid: 0,
            allow_root: false,
        };
        assert!(root_daemon.admits(0) && !root_daemon.admits(65534));
    }
}
