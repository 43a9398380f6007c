//! One program launched under a daemon embedded in the tool's own process: what the demo,
//! `epcache run` and the example tool programs share, so a tool can monitor a run from its first
//! region to its end without a separate `epcached`.
//!
//! The program starts with `EPCACHE_WAIT`, so it blocks before `main` until the tool released
//! it: every request placed before the first release covers the whole run. What it holds then
//! is what is known before `main`: globals and functions. A tool that also wants the heap
//! arrays and marker regions the program creates later looks again at its halts
//! ([`crate::Survey`]).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::{Client, ClientError, ConnectOptions, TargetState};

/// How long the program waits at start for the tool (EPCACHE_WAIT), and how long the tool
/// waits for the daemon to see it.
const START_WAIT: Duration = Duration::from_secs(60);
const DISCOVERY_LIMIT: Duration = Duration::from_secs(30);

/// What to launch and how.
#[derive(Debug, Clone)]
pub struct Launch {
    /// The program, built with `epcache cc` or linking epcache-monitor.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// The simulated cache (EPCACHE_CACHE); the program's default when `None`.
    pub cache: Option<String>,
    /// Further environment for the program.
    pub env: Vec<(OsString, OsString)>,
    /// The tool's name, shown to other tools as the owner of its requests.
    pub tool: String,
    /// Whether the program's standard output reaches the tool's (else it is discarded).
    pub show_output: bool,
}

impl Launch {
    /// `program` with no arguments, the default cache and its output shown.
    pub fn new(program: impl Into<PathBuf>, tool: impl Into<String>) -> Launch {
        Launch {
            program: program.into(),
            args: Vec::new(),
            cache: None,
            env: Vec::new(),
            tool: tool.into(),
            show_output: true,
        }
    }

    /// Sets the arguments.
    pub fn args<I, S>(mut self, args: I) -> Launch
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        self.args = args.into_iter().map(Into::into).collect();
        self
    }

    /// Sets the simulated cache.
    pub fn cache(mut self, spec: impl Into<String>) -> Launch {
        self.cache = Some(spec.into());
        self
    }
}

/// Why a local launch failed.
#[derive(Debug, thiserror::Error)]
pub enum LocalError {
    /// The runtime directory for the program's discovery record.
    #[error("cannot create a runtime directory for the embedded daemon: {0}")]
    RuntimeDir(std::io::Error),
    /// The embedded daemon did not start.
    #[error("cannot start the embedded daemon")]
    Daemon(#[from] epcache_daemon::ServeError),
    /// The program did not start.
    #[error("cannot start {program}: is the path right and the file executable?")]
    Spawn {
        /// The program.
        program: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
    /// The program ended before the daemon saw it.
    #[error(
        "{program} ended ({status}) before it announced itself; was it built with `epcache cc` (or does it link epcache-monitor)?"
    )]
    EndedEarly {
        /// The program.
        program: PathBuf,
        /// How it ended.
        status: ExitStatus,
    },
    /// The daemon never saw the program waiting.
    #[error(
        "{program} (pid {pid}) did not show up at the embedded daemon within {seconds} s; was it built with `epcache cc`, and is EPCACHE_MCC unset?"
    )]
    NotDiscovered {
        /// The program.
        program: PathBuf,
        /// Its pid.
        pid: u32,
        /// How long the tool waited.
        seconds: u64,
    },
    /// Waiting for the program failed.
    #[error("waiting for {program}: {source}")]
    Wait {
        /// The program.
        program: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
    /// A call to the embedded daemon failed.
    #[error(transparent)]
    Client(#[from] ClientError),
}

/// A launched program waiting at start, its embedded daemon and a client connected to it.
///
/// Dropping it kills the program if it still runs, so a tool that stops early never leaves it
/// waiting on a tool that is gone.
pub struct LocalTarget {
    client: Client,
    pid: u32,
    program: PathBuf,
    child: Option<Child>,
    daemon: Option<epcache_daemon::DaemonHandle>,
    // Held for its lifetime: the daemon watches it and the program writes its record there.
    runtime_dir: tempfile::TempDir,
}

impl LocalTarget {
    /// Starts a daemon in this process, launches the program waiting at start, and returns once
    /// the daemon lists it as waiting for a tool (its regions and data structures registered).
    pub async fn launch(launch: Launch) -> Result<LocalTarget, LocalError> {
        const PREFIX: &str = "epcache-local-";
        // The directory's random tail is six characters.
        let runtime_dir = tempfile::Builder::new()
            .prefix(PREFIX)
            .tempdir_in(epcache_shm::discovery::private_parent(PREFIX.len() + 6))
            .map_err(LocalError::RuntimeDir)?;
        // On the socket in the private runtime directory: only this user can reach it.
        let daemon = epcache_daemon::serve(epcache_daemon::Config {
            discovery_interval: Duration::from_millis(50),
            ..epcache_daemon::Config::private(runtime_dir.path())
        })
        .await?;
        let mut command = Command::new(&launch.program);
        command
            .args(&launch.args)
            .env("EPCACHE_WAIT", START_WAIT.as_secs().to_string())
            .env("EPCACHE_RUNTIME_DIR", runtime_dir.path())
            .envs(launch.env.iter().map(|(k, v)| (k, v)))
            .stdout(if launch.show_output {
                Stdio::inherit()
            } else {
                Stdio::null()
            });
        if let Some(cache) = &launch.cache {
            command.env("EPCACHE_CACHE", cache);
        }
        let child = command.spawn().map_err(|source| LocalError::Spawn {
            program: launch.program.clone(),
            source,
        })?;
        let pid = child.id();
        let client = Client::connect_with(ConnectOptions {
            address: daemon.endpoint(),
            tool: launch.tool.clone(),
            ..ConnectOptions::default()
        })
        .await?;
        let mut target = LocalTarget {
            client,
            pid,
            program: launch.program,
            child: Some(child),
            daemon: Some(daemon),
            runtime_dir,
        };
        target.wait_until_waiting().await?;
        Ok(target)
    }

    async fn wait_until_waiting(&mut self) -> Result<(), LocalError> {
        let started = Instant::now();
        loop {
            let listed = self.client.targets().await?;
            if listed
                .iter()
                .any(|t| t.pid == self.pid && t.state == TargetState::WaitingForTool)
            {
                return Ok(());
            }
            if let Some(child) = self.child.as_mut()
                && let Ok(Some(status)) = child.try_wait()
            {
                return Err(LocalError::EndedEarly {
                    program: self.program.clone(),
                    status,
                });
            }
            if started.elapsed() > DISCOVERY_LIMIT {
                return Err(LocalError::NotDiscovered {
                    program: self.program.clone(),
                    pid: self.pid,
                    seconds: DISCOVERY_LIMIT.as_secs(),
                });
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// The program's pid, the target's name in every call.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The client connected to the embedded daemon.
    pub fn client(&mut self) -> &mut Client {
        &mut self.client
    }

    /// Where the embedded daemon listens, for other tools to join.
    pub fn endpoint(&self) -> String {
        self.daemon
            .as_ref()
            .map_or_else(String::new, epcache_daemon::DaemonHandle::endpoint)
    }

    /// The directory the embedded daemon watches.
    pub fn runtime_dir(&self) -> &Path {
        self.runtime_dir.path()
    }

    /// Releases the program for good (no halting point) and waits until it ended and the
    /// daemon saw it end, so every result it published can be read; the daemon keeps serving.
    pub async fn run_to_end(&mut self) -> Result<ExitStatus, LocalError> {
        // A program that already ended (stepped past its last boundary) cannot be resumed.
        if !self.has_ended() {
            match self.client.resume(self.pid, true).await {
                Ok(()) => {}
                Err(e) if e.code() == Some(tonic::Code::FailedPrecondition) => {}
                Err(e) => return Err(e.into()),
            }
        }
        let status = self.wait().await?;
        let started = Instant::now();
        while started.elapsed() < DISCOVERY_LIMIT {
            let ended = self.client.targets().await?.iter().any(|t| {
                t.pid == self.pid && matches!(t.state, TargetState::Exited | TargetState::Died)
            });
            if ended {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        Ok(status)
    }

    /// Runs the program to its end ([`LocalTarget::run_to_end`]) and stops the daemon.
    pub async fn finish(mut self) -> Result<ExitStatus, LocalError> {
        let status = self.run_to_end().await?;
        if let Some(daemon) = self.daemon.take() {
            daemon.shutdown().await;
        }
        Ok(status)
    }

    fn has_ended(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| matches!(c.try_wait(), Ok(Some(_))))
    }

    async fn wait(&mut self) -> Result<ExitStatus, LocalError> {
        let child = self
            .child
            .as_mut()
            .expect("the child is only taken on drop");
        loop {
            match child.try_wait() {
                Ok(Some(status)) => return Ok(status),
                Ok(None) => tokio::time::sleep(Duration::from_millis(10)).await,
                Err(source) => {
                    return Err(LocalError::Wait {
                        program: self.program.clone(),
                        source,
                    });
                }
            }
        }
    }
}

impl std::fmt::Debug for LocalTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalTarget")
            .field("pid", &self.pid)
            .field("program", &self.program)
            .field("endpoint", &self.endpoint())
            .finish_non_exhaustive()
    }
}

impl Drop for LocalTarget {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take()
            && matches!(child.try_wait(), Ok(None))
        {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
