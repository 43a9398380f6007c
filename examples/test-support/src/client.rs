//! What the client's and the command line's daemon tests share: an embedded daemon on the
//! socket of an isolated runtime directory and the synthetic program (re-exported from
//! [`crate::processes`] and [`crate::synthetic`]), the program started waiting for a tool, and
//! waiting until a typed client sees it.

use std::path::Path;
use std::time::{Duration, Instant};

pub use crate::processes::{self, Target, child_role, start_daemon};
pub use crate::synthetic;

/// Starts the synthetic program, waiting for a tool at start, with `iterations` kernels.
pub fn spawn_target(runtime_dir: &Path, iterations: u32) -> Target {
    processes::spawn_target(
        runtime_dir,
        &[
            (synthetic::ITERATIONS, &iterations.to_string()),
            ("EPCACHE_WAIT", "20"),
        ],
    )
}

/// Waits until the daemon lists `pid` past its setup.
pub async fn wait_listed(client: &mut epcache_client::Client, pid: u32) {
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
