//! What an epcached instance is told: where to listen, the bearer token, TLS files, who may
//! connect, where targets announce themselves, how long ended targets stay readable, how long a
//! halt outlasts the tools that stopped calling, and the bounds on idle and silent connections.
//!
//! The default is the safe one: a Unix socket, `epcached.sock` in the user's runtime directory
//! (mode 0700, this user's), created mode 0600, and every connection's peer credentials checked
//! (this user only). TCP is served only with a bearer token, loopback included: any local user
//! can reach a loopback port.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

pub use epcache_shm::discovery::DAEMON_SOCKET;

/// The port of the examples of a TCP listener (`--listen 127.0.0.1:50551`, with a token).
pub const DEFAULT_PORT: u16 = 50551;

/// How long a halt lasts with no tool call about its target (`epcached --halt-lease`).
pub const DEFAULT_HALT_LEASE: Duration = Duration::from_secs(600);

/// The shortest bearer token accepted.
pub const MIN_TOKEN_CHARS: usize = 16;

/// Where the daemon listens, or where a tool finds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListenAddr {
    /// A TCP address; served only with a bearer token.
    Tcp(SocketAddr),
    /// A Unix socket at this path (created mode 0600; each peer's uid is checked too).
    Unix(PathBuf),
}

impl Default for ListenAddr {
    /// `epcached.sock` in the default runtime directory.
    fn default() -> Self {
        ListenAddr::in_runtime_dir(&epcache_shm::discovery::runtime_dir())
    }
}

/// An address that is neither `HOST:PORT`, `PORT` nor `unix:PATH`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{text}` is not a daemon address; use HOST:PORT (e.g. 127.0.0.1:{DEFAULT_PORT}), a port alone, or unix:/path/to/socket"
)]
pub struct BadAddress {
    /// What was given.
    pub text: String,
}

impl FromStr for ListenAddr {
    type Err = BadAddress;

    /// Accepts `unix:PATH`, `http://HOST:PORT`, `HOST:PORT` (`localhost` is 127.0.0.1) and a bare
    /// port (on 127.0.0.1).
    fn from_str(text: &str) -> Result<Self, BadAddress> {
        let bad = || BadAddress {
            text: text.to_owned(),
        };
        let t = text.trim();
        if let Some(path) = t.strip_prefix("unix:") {
            let path = path.strip_prefix("//").unwrap_or(path);
            return if path.is_empty() {
                Err(bad())
            } else {
                Ok(ListenAddr::Unix(path.into()))
            };
        }
        let t = t
            .strip_prefix("http://")
            .or_else(|| t.strip_prefix("https://"))
            .unwrap_or(t)
            .trim_end_matches('/');
        if let Ok(port) = t.parse::<u16>() {
            return Ok(ListenAddr::Tcp(SocketAddr::new(
                IpAddr::V4(Ipv4Addr::LOCALHOST),
                port,
            )));
        }
        if let Some(port) = t.strip_prefix("localhost:") {
            let port = port.parse().map_err(|_| bad())?;
            return Ok(ListenAddr::Tcp(SocketAddr::new(
                IpAddr::V4(Ipv4Addr::LOCALHOST),
                port,
            )));
        }
        t.parse().map(ListenAddr::Tcp).map_err(|_| bad())
    }
}

impl fmt::Display for ListenAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ListenAddr::Tcp(a) => write!(f, "{a}"),
            ListenAddr::Unix(p) => write!(f, "unix:{}", p.display()),
        }
    }
}

impl ListenAddr {
    /// The daemon socket of runtime directory `dir`: `unix:DIR/epcached.sock`.
    pub fn in_runtime_dir(dir: &Path) -> ListenAddr {
        ListenAddr::Unix(epcache_shm::discovery::daemon_socket(dir))
    }

    /// Whether only this machine can reach it (loopback TCP or a Unix socket).
    pub fn is_local(&self) -> bool {
        match self {
            ListenAddr::Tcp(a) => a.ip().is_loopback(),
            ListenAddr::Unix(_) => true,
        }
    }
}

/// A TLS certificate chain and its private key, both PEM files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    /// The certificate chain.
    pub cert: PathBuf,
    /// The private key.
    pub key: PathBuf,
}

/// How to run a daemon.
#[derive(Debug, Clone)]
pub struct Config {
    /// Where to listen; port 0 picks a free port (see [`crate::DaemonHandle::addr`]). The default
    /// is the socket of the default runtime directory: with another `runtime_dir`, use
    /// [`Config::private`] to put the socket there too.
    pub listen: ListenAddr,
    /// The bearer token tools must send (`authorization: Bearer TOKEN`), at least
    /// [`MIN_TOKEN_CHARS`] characters; required for TCP.
    pub token: Option<String>,
    /// Whether root may connect on the Unix socket besides the daemon's own user.
    pub allow_root: bool,
    /// TLS for a TCP listener (needs the `tls` feature).
    pub tls: Option<TlsFiles>,
    /// Where targets write their discovery records.
    pub runtime_dir: PathBuf,
    /// How often the runtime directory is scanned for new and vanished targets.
    pub discovery_interval: Duration,
    /// How long an ended target stays listed, so tools can read its last results.
    pub exited_retention: Duration,
    /// How long a target stays halted (or waiting at start) with no tool call naming it before
    /// the daemon lets it go on: a stepping tool that died, or a user who walked away, never
    /// leaves a program halted for as long as the daemon runs.
    pub halt_lease: Duration,
    /// How long a new connection may take to send the HTTP/2 preface before it is closed.
    pub handshake_timeout: Duration,
    /// How long a connection may stay quiet before the daemon pings it (HTTP/2 keepalive).
    pub keepalive_interval: Duration,
    /// How long a ping may go unanswered before the connection is closed.
    pub keepalive_timeout: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            listen: ListenAddr::default(),
            token: None,
            allow_root: false,
            tls: None,
            runtime_dir: epcache_shm::discovery::runtime_dir(),
            discovery_interval: Duration::from_millis(150),
            exited_retention: Duration::from_secs(60),
            halt_lease: DEFAULT_HALT_LEASE,
            handshake_timeout: Duration::from_secs(10),
            keepalive_interval: Duration::from_secs(30),
            keepalive_timeout: Duration::from_secs(10),
        }
    }
}

impl Config {
    /// The default configuration for targets announcing themselves in `runtime_dir`, listening
    /// on the socket there (`DIR/epcached.sock`): what an embedded daemon (`epcache run`, a
    /// test) uses with a private directory of its own.
    pub fn private(runtime_dir: impl Into<PathBuf>) -> Config {
        let runtime_dir = runtime_dir.into();
        Config {
            listen: ListenAddr::in_runtime_dir(&runtime_dir),
            runtime_dir,
            ..Config::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_parse_in_every_accepted_form() {
        let local = |port| ListenAddr::Tcp(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port));
        assert_eq!("7000".parse::<ListenAddr>().unwrap(), local(7000));
        assert_eq!("localhost:7001".parse::<ListenAddr>().unwrap(), local(7001));
        assert_eq!(
            "http://127.0.0.1:7002/".parse::<ListenAddr>().unwrap(),
            local(7002)
        );
        assert_eq!(
            "unix:/run/epcache/d.sock".parse::<ListenAddr>().unwrap(),
            ListenAddr::Unix("/run/epcache/d.sock".into())
        );
        let any: ListenAddr = "0.0.0.0:9".parse().unwrap();
        assert!(!any.is_local());
        assert!("[::1]:9".parse::<ListenAddr>().unwrap().is_local());
        let err = "nowhere".parse::<ListenAddr>().unwrap_err();
        assert!(err.to_string().contains("unix:/path"), "{err}");
        assert!("unix:".parse::<ListenAddr>().is_err());
        assert_eq!(local(5).to_string(), "127.0.0.1:5");
    }

    #[test]
    fn the_default_is_the_socket_in_the_runtime_directory() {
        let private = Config::private("/run/x");
        assert_eq!(
            private.listen,
            ListenAddr::Unix("/run/x/epcached.sock".into())
        );
        assert_eq!(private.runtime_dir, PathBuf::from("/run/x"));
        assert!(matches!(ListenAddr::default(), ListenAddr::Unix(p) if p.ends_with(DAEMON_SOCKET)));
    }
}
