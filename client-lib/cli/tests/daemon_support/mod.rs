//! What the client's daemon tests share: an embedded daemon on the socket of an isolated runtime
//! directory, and real target processes (the test binary run again as the daemon
//! tests' synthetic program, whose expected counts are worked out by hand there).

#![allow(dead_code)]

#[path = "../../../../daemon/tests/support/synthetic.rs"]
pub(crate) mod synthetic;

#[path = "../../../../daemon/tests/support/processes.rs"]
pub(crate) mod processes;

use std::path::Path;
use std::time::{Duration, Instant};

// Each test binary uses some of them.
#[allow(unused_imports)]
pub(crate) use processes::{Target, child_role, start_daemon};

/// Starts the synthetic program, waiting for a tool at start, with `iterations` kernels.
pub(crate) fn spawn_target(runtime_dir: &Path, iterations: u32) -> Target {
    processes::spawn_target(
        runtime_dir,
        &[
            (synthetic::ITERATIONS, &iterations.to_string()),
            ("EPCACHE_WAIT", "20"),
        ],
    )
}

/// Waits until the daemon lists `pid` past its setup.
pub(crate) async fn wait_listed(client: &mut epcache_client::Client, pid: u32) {
    let started = Instant::now();
    // Past its setup (state `Starting`), as a tool waits before describing it.
    let listed = |targets: Vec<epcache_client::Target>| {
        targets
            .iter()
            .any(|t| t.pid == pid && t.state != epcache_client::TargetState::Starting)
    };
    while !listed(client.targets().await.unwrap()) {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "pid {pid} never listed"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
