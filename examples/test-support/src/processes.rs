//! What the end-to-end tests of the daemon, the client and the command line share: real target
//! processes (the test binary run again as the synthetic program) and a daemon listening on the
//! socket of an isolated runtime directory (`DIR/epcached.sock`).

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use epcache_daemon::{Config, DaemonHandle};

use crate::{roles, synthetic};

/// Plays the synthetic program when the test binary was started as one; a no-op otherwise.
/// Each crate's `tests/it/main.rs` calls it from its root `#[test] fn child_role()`
/// ([`roles::CHILD_ROLE_TEST`]).
pub fn child_role() {
    if std::env::var(synthetic::ROLE).as_deref() == Ok("target") {
        synthetic::run_target();
    }
}

/// A target process, killed if the test ends before it does.
#[derive(Debug)]
pub struct Target {
    pub child: Child,
    pub pid: u32,
}

impl Target {
    /// Waits for the process to end, at most `limit`.
    pub fn wait_for_exit(&mut self, limit: Duration) -> ExitStatus {
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(
                started.elapsed() < limit,
                "target pid {} still runs after {limit:?}",
                self.pid
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Target {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts the synthetic program with `env` (see [`synthetic`]) announcing itself in `runtime_dir`,
/// and returns once its segment exists.
pub fn spawn_target(runtime_dir: &Path, env: &[(&str, &str)]) -> Target {
    let mut child = roles::rerun(roles::CHILD_ROLE_TEST)
        .env(synthetic::ROLE, "target")
        .env("EPCACHE_RUNTIME_DIR", runtime_dir)
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    for line in lines.by_ref() {
        if line.unwrap().contains("SYNTHETIC READY") {
            // Keep draining, or the child's harness dies of a broken pipe when it reports.
            std::thread::spawn(move || lines.for_each(drop));
            return Target { child, pid };
        }
    }
    let status = child.wait();
    panic!(
        "the synthetic target never became ready ({status:?}); does this crate's \
         tests/it/main.rs define `#[test] fn {}()` at its root?",
        roles::CHILD_ROLE_TEST
    );
}

/// A daemon watching `runtime_dir` and listening on its socket, `runtime_dir/epcached.sock`.
pub async fn start_daemon(runtime_dir: &Path) -> DaemonHandle {
    epcache_daemon::serve(Config {
        discovery_interval: Duration::from_millis(50),
        ..Config::private(runtime_dir)
    })
    .await
    .unwrap()
}
