//! The `epcached` binary: it listens on the runtime directory's socket by default and prints
//! where, serves, refuses TCP without a token (loopback included), a short token and an unsafe
//! runtime directory, and on SIGTERM lets a halted target go and exits cleanly.

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use epcache_proto::v1;

use crate::support::*;

#[test]
fn off_loopback_without_a_token_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_epcached"))
        .args(["--listen", "0.0.0.0:0", "--runtime-dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bearer token"), "{err}");
}

#[test]
fn loopback_without_a_token_is_refused_too() {
    let dir = tempfile::tempdir().unwrap();
    for addr in ["127.0.0.1:0", "[::1]:0", "0"] {
        let out = Command::new(env!("CARGO_BIN_EXE_epcached"))
            .args(["--listen", addr, "--runtime-dir"])
            .arg(dir.path())
            .env_remove("EPCACHED_TOKEN")
            .output()
            .unwrap();
        assert!(!out.status.success(), "{addr}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("bearer token") && err.contains("every local user"),
            "{addr}: {err}"
        );
    }
}

#[test]
fn the_help_says_what_the_default_is_and_why() {
    let out = Command::new(env!("CARGO_BIN_EXE_epcached"))
        .arg("--help")
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    for needle in [
        "epcached.sock",
        "peer's credentials",
        "--allow-root",
        "bearer token",
        "loopback",
    ] {
        assert!(help.contains(needle), "{needle} missing from:\n{help}");
    }
}

#[test]
fn a_runtime_directory_others_may_write_is_refused_at_start() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let open = dir.path().join("open");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_epcached"))
        .arg("--runtime-dir")
        .arg(&open)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&open.display().to_string()) && err.contains("chmod 700"),
        "{err}"
    );
}

/// A second daemon on a runtime directory one serves (a TCP one for remote tools beside the
/// Unix one) is refused with the first one's pid: its lease and its shutdown would let go of
/// halts and start waits the first one's tools set.
#[test]
fn a_second_daemon_on_a_served_runtime_directory_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut first = Command::new(env!("CARGO_BIN_EXE_epcached"))
        .arg("--runtime-dir")
        .arg(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(first.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(line.starts_with("epcached listening on "), "{line}");
    let token = dir.path().join("token");
    std::fs::write(&token, "a-long-enough-secret-for-the-test").unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    let second = Command::new(env!("CARGO_BIN_EXE_epcached"))
        .args(["--listen", "127.0.0.1:0", "--token-file"])
        .arg(&token)
        .arg("--runtime-dir")
        .arg(dir.path())
        .output()
        .unwrap();
    let _ = first.kill();
    let _ = first.wait();
    assert!(!second.status.success());
    let err = String::from_utf8_lossy(&second.stderr);
    assert!(
        err.contains(&format!("another epcached (pid {})", first.id()))
            && err.contains("--runtime-dir"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_releases_a_halted_target_and_exits_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let mut daemon = Command::new(env!("CARGO_BIN_EXE_epcached"))
        .arg("--runtime-dir")
        .arg(dir.path())
        .env("RUST_LOG", "info")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(daemon.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    let endpoint = line
        .trim()
        .strip_prefix("epcached listening on ")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .to_owned();
    assert_eq!(
        endpoint,
        format!("unix:{}", dir.path().join("epcached.sock").display())
    );

    let mut target = spawn_target(
        dir.path(),
        &[("EPCACHE_WAIT", "20"), ("EPCACHE_SYNTH_ITERATIONS", "3")],
    );
    let channel = crate::support::channel(&endpoint).await.unwrap();
    let mut tool =
        epcache_proto::v1::mri_client::MriClient::with_interceptor(channel, Tool("bin".into()));
    wait_listed(&mut tool, target.pid).await;
    tool.add_requests(v1::AddRequestsRequest {
        pid: target.pid,
        requests: vec![static_request("kernel", "A", "PAPI_L1_LDM")],
    })
    .await
    .unwrap();
    step_to_exit(&mut tool, target.pid, "kernel").await;
    // Halted, with the point armed again: only the shutdown policy lets it finish.
    tool.set_halting_point(v1::SetHaltingPointRequest {
        pid: target.pid,
        point: Some(v1::HaltingPoint {
            region: Some(region("kernel")),
            boundary: v1::Boundary::Exit as i32,
            skip: 0,
        }),
    })
    .await
    .unwrap();

    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(daemon.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let started = Instant::now();
    let status = loop {
        if let Some(s) = daemon.try_wait().unwrap() {
            break s;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "epcached ignored SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status:?}");
    assert!(target.wait_for_exit(Duration::from_secs(10)).success());
    let mut log = String::new();
    daemon
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut log)
        .unwrap();
    assert!(log.contains("SIGTERM"), "{log}");
    assert!(log.contains("let target go"), "{log}");
    // Written to a pipe, not a terminal: plain text, no colour escapes.
    assert!(
        !log.contains('\x1b'),
        "ANSI escapes in a log that is no terminal: {log:?}"
    );
}
