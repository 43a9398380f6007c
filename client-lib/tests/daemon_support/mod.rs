//! What the client's daemon tests share: an embedded daemon on 127.0.0.1:0 with an isolated
//! runtime directory, and real target processes (the test binary run again as the daemon
//! tests' synthetic program, whose expected counts are worked out by hand there).

#![allow(dead_code)]

#[path = "../../../daemon/tests/support/synthetic.rs"]
pub(crate) mod synthetic;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use epcache_daemon::{Config, DaemonHandle};

/// Plays the synthetic program when the test binary was started as one.
pub(crate) fn child_role() {
    if std::env::var(synthetic::ROLE).as_deref() == Ok("target") {
        synthetic::run_target();
    }
}

/// A target process, killed if the test ends first.
pub(crate) struct Target {
    pub(crate) child: Child,
    pub(crate) pid: u32,
}

impl Target {
    /// Waits for the process to end, at most `limit`.
    pub(crate) fn wait_for_exit(&mut self, limit: Duration) -> ExitStatus {
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(
                started.elapsed() < limit,
                "target pid {} still runs",
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

/// Starts the synthetic program, waiting for a tool at start, with `iterations` kernels.
pub(crate) fn spawn_target(runtime_dir: &Path, iterations: u32) -> Target {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_role", "--nocapture", "--test-threads=1"])
        .env(synthetic::ROLE, "target")
        .env(synthetic::ITERATIONS, iterations.to_string())
        .env("EPCACHE_WAIT", "20")
        .env("EPCACHE_RUNTIME_DIR", runtime_dir)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    for line in lines.by_ref() {
        if line.unwrap().contains("SYNTHETIC READY") {
            std::thread::spawn(move || lines.for_each(drop));
            return Target { child, pid };
        }
    }
    let status = child.wait();
    panic!("the synthetic target never became ready ({status:?})");
}

/// An embedded daemon on 127.0.0.1:0.
pub(crate) async fn start_daemon(runtime_dir: &Path) -> DaemonHandle {
    epcache_daemon::serve(Config {
        runtime_dir: runtime_dir.to_owned(),
        discovery_interval: Duration::from_millis(50),
        ..Config::loopback(0)
    })
    .await
    .unwrap()
}

/// Waits until the daemon lists `pid`.
pub(crate) async fn wait_listed(client: &mut epcache_client::Client, pid: u32) {
    let started = Instant::now();
    while !client.targets().await.unwrap().iter().any(|t| t.pid == pid) {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "pid {pid} never listed"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
