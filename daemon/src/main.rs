//! `epcached`: the analysis daemon's command line; everything it does is in the library.

#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::Parser;
use epcache_daemon::{Config, DEFAULT_HALT_LEASE, ListenAddr, MIN_TOKEN_CHARS, TlsFiles};
use tracing_subscriber::EnvFilter;

/// epcached: serves the Monitoring Request Interface of the epcache targets of this user.
///
/// Targets announce themselves in the runtime directory ($EPCACHE_RUNTIME_DIR, else
/// $XDG_RUNTIME_DIR/epcache, else /tmp/epcache-UID), which must belong to this user and be
/// writable by nobody else. Logging follows RUST_LOG (default info).
///
/// By default epcached listens on the Unix socket RUNTIME_DIR/epcached.sock (mode 0600, in a
/// directory of mode 0700), and on every connection checks the peer's credentials: only this
/// user's processes are served (root too with --allow-root); others are refused and logged.
/// Whoever connects can list, halt, step and terminate your programs, so a TCP port, which
/// every local user can reach even on loopback, is served only with a bearer token
/// (--token-file or $EPCACHED_TOKEN, at least 16 characters), ideally with TLS beyond loopback.
#[derive(Debug, Parser)]
#[command(name = "epcached", version, about, long_about)]
struct Args {
    /// Where to listen: unix:PATH, or HOST:PORT / a port alone (on 127.0.0.1) with a token
    /// [default: unix:RUNTIME_DIR/epcached.sock].
    #[arg(long, value_name = "ADDR")]
    listen: Option<ListenAddr>,
    /// Also serve root on the Unix socket (by default only this user's processes are served).
    #[arg(long)]
    allow_root: bool,
    /// A file holding the bearer token tools must send, at least 16 characters (else the token
    /// itself from $EPCACHED_TOKEN, its value and not a file's name, else none); required for
    /// TCP.
    #[arg(long)]
    token_file: Option<PathBuf>,
    /// TLS certificate chain (PEM); needs --tls-key and a build with the `tls` feature.
    #[arg(long, requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// TLS private key (PEM).
    #[arg(long, requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Where targets write their discovery records.
    #[arg(long)]
    runtime_dir: Option<PathBuf>,
    /// Seconds an ended target stays listed so its last results can be read.
    #[arg(long, default_value_t = 60)]
    keep_exited: u64,
    /// Seconds a program stays halted (or waiting at start) with no tool call naming it (a
    /// step, results, a request, a status) before epcached lets it go on by itself, so a
    /// stepping tool that died never leaves it halted for as long as the daemon runs (1 to
    /// 604800, a week).
    #[arg(long, value_name = "SECONDS", default_value_t = DEFAULT_HALT_LEASE.as_secs(),
          value_parser = clap::value_parser!(u64).range(1..=7 * 24 * 3600))]
    halt_lease: u64,
}

async fn termination() {
    use tokio::signal::unix::{SignalKind, signal};
    // SIGTERM is how systemd, Kubernetes and Slurm ask for a graceful stop.
    match (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) {
        (Ok(mut term), Ok(mut int)) => {
            tokio::select! {
                _ = term.recv() => tracing::info!("SIGTERM: shutting down"),
                _ = int.recv() => tracing::info!("SIGINT: shutting down"),
            }
        }
        _ => {
            tracing::error!("cannot install signal handlers; stop with SIGKILL");
            std::future::pending::<()>().await;
        }
    }
}

fn main() {
    if let Err(error) = run() {
        // As `epcache` does: the message and its causes, never a backtrace.
        eprintln!("epcached: {error}");
        for cause in error.chain().skip(1) {
            eprintln!("  caused by: {cause}");
        }
        std::process::exit(1);
    }
}

#[tokio::main]
async fn run() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        // Colours for a terminal only: a log file or journal gets plain text.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let args = Args::parse();
    let token = epcache_daemon::bearer_token(args.token_file.as_deref(), "EPCACHED_TOKEN")?
        .filter(|t| !t.trim().is_empty());
    if let Some(t) = &token
        && t.chars().count() < MIN_TOKEN_CHARS
    {
        let source = match &args.token_file {
            Some(path) => format!("the token file {}", path.display()),
            None => "EPCACHED_TOKEN".to_owned(),
        };
        anyhow::bail!(
            "{source} holds {} characters; a bearer token needs at least {MIN_TOKEN_CHARS} (e.g. `head -c 32 /dev/urandom | base64 > FILE`)",
            t.chars().count()
        );
    }
    let runtime_dir = args
        .runtime_dir
        .unwrap_or_else(epcache_shm::discovery::runtime_dir);
    let config = Config {
        listen: args
            .listen
            .unwrap_or_else(|| ListenAddr::in_runtime_dir(&runtime_dir)),
        token,
        allow_root: args.allow_root,
        tls: args
            .tls_cert
            .zip(args.tls_key)
            .map(|(cert, key)| TlsFiles { cert, key }),
        runtime_dir,
        exited_retention: Duration::from_secs(args.keep_exited),
        halt_lease: Duration::from_secs(args.halt_lease),
        ..Config::default()
    };
    let daemon = epcache_daemon::serve(config)
        .await
        .context("starting epcached")?;
    // The one line on stdout, for scripts and tests that asked for port 0.
    println!("epcached listening on {}", daemon.endpoint());
    daemon.serve_until(termination()).await?;
    Ok(())
}
