//! `epcache step` as separate processes against a real daemon and target: a step killed with
//! SIGKILL leaves no halting point behind, a halt a step reported stays for the next command, and
//! the exit status says whether the target halted, finished or died.

use epcache_test_support::client as daemon_support;

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use daemon_support::*;
use epcache_client::TargetState;

use crate::capture_support::wait_within;

/// `epcache ARGS --daemon ADDR`, run to its end off the async workers.
async fn epcache(daemon: &str, args: &[&str]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_epcache"));
    command.args(args).args(["--daemon", daemon]);
    tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap()
}

/// A target that enters `kernel` 40 times, 20 ms apart, waiting for a tool at start.
fn slow_target(dir: &std::path::Path) -> Target {
    processes::spawn_target(
        dir,
        &[
            ("EPCACHE_WAIT", "20"),
            (synthetic::ITERATIONS, "40"),
            (synthetic::PAUSE_MS, "20"),
        ],
    )
}

/// Whether the target ran to a normal end within `limit` (it is killed past that).
fn runs_to_its_end(target: &mut Target, limit: Duration) -> bool {
    wait_within(&mut target.child, limit).is_some_and(|status| status.success())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_killed_with_sigkill_leaves_the_target_running_to_its_end() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = start_daemon(dir.path()).await;
    let addr = daemon.endpoint();
    let mut target = slow_target(dir.path());
    let mut client = epcache_client::Client::connect(&addr).await.unwrap();
    wait_listed(&mut client, target.pid).await;
    let pid = target.pid.to_string();
    let mut step = Command::new(env!("CARGO_BIN_EXE_epcache"))
        .args(["step", &pid, "--to-entry", "kernel", "--count", "20"])
        .args(["--daemon", &addr])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Until the step has released the target (it runs), then kill the tool.
    let started = Instant::now();
    loop {
        let listed = client.targets().await.unwrap();
        if listed
            .iter()
            .any(|t| t.pid == target.pid && t.state == TargetState::Running)
        {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "{listed:?}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    step.kill().unwrap();
    step.wait().unwrap();
    assert!(
        runs_to_its_end(&mut target, Duration::from_secs(10)),
        "the target halted at the point of a killed `epcache step` and stayed halted"
    );
    daemon.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reported_halt_stays_for_the_next_command_and_exit_codes_tell_the_outcome() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = start_daemon(dir.path()).await;
    let addr = daemon.endpoint();
    let mut target = processes::spawn_target(
        dir.path(),
        &[("EPCACHE_WAIT", "20"), (synthetic::ITERATIONS, "2")],
    );
    let mut client = epcache_client::Client::connect(&addr).await.unwrap();
    wait_listed(&mut client, target.pid).await;
    let pid = target.pid.to_string();

    let out = epcache(&addr, &["step", &pid, "--to-exit", "kernel"]).await;
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "halted at the exit of kernel\n"
    );
    // The step's process and connection are gone; the halt it reported is not.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let listed = client.targets().await.unwrap();
    let t = listed.iter().find(|t| t.pid == target.pid).unwrap();
    assert_eq!(t.state, TargetState::Halted, "{t:?}");
    let out = epcache(&addr, &["step", &pid, "--to-exit", "kernel"]).await;
    assert_eq!(out.status.code(), Some(0), "{out:?}");

    // Past the last kernel: the program finishes first.
    let out = epcache(&addr, &["step", &pid, "--to-exit", "kernel"]).await;
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("the target exited"));
    assert!(target.wait_for_exit(Duration::from_secs(10)).success());

    // Killed while a step waits: exit status 4.
    let mut doomed = slow_target(dir.path());
    wait_listed(&mut client, doomed.pid).await;
    let doomed_pid = doomed.pid.to_string();
    let step = {
        let addr = addr.clone();
        tokio::spawn(async move {
            epcache(
                &addr,
                &[
                    "step",
                    &doomed_pid,
                    "--to-entry",
                    "kernel",
                    "--count",
                    "1000",
                ],
            )
            .await
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    doomed.child.kill().unwrap();
    let out = tokio::time::timeout(Duration::from_secs(10), step)
        .await
        .expect("the step hung after the target died")
        .unwrap();
    assert_eq!(out.status.code(), Some(4), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("the target died"));

    let help = epcache(&addr, &["step", "--help"]).await;
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(
        help.contains("Exit status") && help.contains("4 the"),
        "{help}"
    );
    daemon.shutdown().await;
}
