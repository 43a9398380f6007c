//! The `epcache` command line finds the daemon where `epcached` listens by default, the socket in
//! the user's runtime directory, with no address given; `--daemon` and `$EPCACHE_DAEMON` still
//! override it.

use epcache_test_support::client as daemon_support;

use std::process::{Command, Output};

use daemon_support::*;

/// `epcache ARGS` with `EPCACHE_RUNTIME_DIR` set, and `EPCACHE_DAEMON` as given.
async fn epcache(runtime_dir: &std::path::Path, daemon_env: Option<&str>, args: &[&str]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_epcache"));
    command
        .args(args)
        .env("EPCACHE_RUNTIME_DIR", runtime_dir)
        .env_remove("EPCACHE_DAEMON")
        .env_remove("EPCACHE_TOKEN");
    if let Some(address) = daemon_env {
        command.env("EPCACHE_DAEMON", address);
    }
    tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_reaches_the_daemon_on_the_runtime_directory_socket_by_default() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = start_daemon(dir.path()).await;
    let target = spawn_target(dir.path(), 1);
    let mut client = epcache_client::Client::connect(&daemon.endpoint())
        .await
        .unwrap();
    wait_listed(&mut client, target.pid).await;

    let out = epcache(dir.path(), None, &["targets", "--json"]).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(listed[0]["pid"], target.pid);

    // An address given wins over the default: here one where nobody listens.
    let nowhere = dir.path().join("nobody-here.sock");
    let nowhere = format!("unix:{}", nowhere.display());
    let out = epcache(dir.path(), Some(&nowhere), &["targets"]).await;
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("nobody-here.sock"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = epcache(
        dir.path(),
        Some(&nowhere),
        &["targets", "--daemon", &daemon.endpoint()],
    )
    .await;
    assert!(out.status.success());

    // The help says where the default is.
    let out = epcache(dir.path(), None, &["targets", "--help"]).await;
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(help.contains("epcached.sock"), "{help}");
    client.resume(target.pid, true).await.unwrap();
    daemon.shutdown().await;
}
