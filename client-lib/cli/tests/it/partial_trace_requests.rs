//! The MRI's trace request end to end: a real daemon on a real socket, a real target built with
//! `epcache cc` waiting at its start, and `epcache trace record` as a separate process. The
//! trace the target writes replays, under its cache, to exactly the live counts its standalone
//! report gives for the region (and, under a daemon alone, that requests on the region give);
//! bad requests (an unknown region, a bad path, a second trace
//! while one is asked for, a trace once the target runs) are refused with the reason, and the
//! target still runs to its end.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use epcache_test_support::client::{processes, start_daemon, synthetic, wait_listed};

use crate::capture_support::{available, epcache_cc, kernel, runtime_built, wait_within};
use crate::partial_recording::{assert_exact, build_same_names, replay};

const CACHE: &str = "D1=8K,2,32;LL=64K,8,64";

/// `epcache ARGS --daemon ADDR`, run off the async workers.
async fn epcache(daemon: &str, args: &[&str]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_epcache"));
    command.args(args).args(["--daemon", daemon]);
    tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap()
}

/// `partial_matmul.c` built with `epcache cc -- gcc -O2` into `dir`, or `None` (skipped).
fn build(dir: &Path, who: &str) -> Option<PathBuf> {
    if !(available("gcc", who) && runtime_built(who)) {
        return None;
    }
    let src = kernel("partial_matmul.c");
    epcache_cc(dir, &["gcc", "-O2", "-o", "prog", src.to_str().unwrap()]);
    Some(dir.join("prog"))
}

/// A test's directory (the guard that removes it, and its canonical path, the daemon's
/// runtime directory), the program built in it and a daemon on it; `None` (skipped) when the
/// program cannot be built.
async fn set_up(
    who: &str,
) -> Option<(
    tempfile::TempDir,
    PathBuf,
    PathBuf,
    epcache_daemon::DaemonHandle,
)> {
    let guard = tempfile::tempdir().unwrap();
    let dir = std::fs::canonicalize(guard.path()).unwrap();
    let program = build(&dir, who)?;
    let daemon = start_daemon(&dir).await;
    Some((guard, dir, program, daemon))
}

/// The program, waiting at start for a tool, its record in `dir`, its report at `dir/r.json`.
fn start(program: &Path, dir: &Path) -> Child {
    start_with_report(program, dir, true)
}

/// Starts `program` waiting for a tool under the test's daemon directory and cache, with the
/// standalone report `r.json` or without any.
fn start_with_report(program: &Path, dir: &Path, report: bool) -> Child {
    let mut command = Command::new(program);
    if report {
        command.env("EPCACHE_REPORT", dir.join("r.json"));
    }
    command
        .env("EPCACHE_WAIT", "30")
        .env("EPCACHE_RUNTIME_DIR", dir)
        .env("EPCACHE_CACHE", CACHE)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn ends_well(target: &mut Child) {
    let status = wait_within(target, Duration::from_secs(60)).expect("the target never ended");
    assert!(status.success(), "{status:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trace_asked_through_the_daemon_replays_to_the_live_counts() {
    let Some((_guard, dir, program, daemon)) = set_up("trace request").await else {
        return;
    };
    let addr = daemon.endpoint();
    let mut target = start(&program, &dir);
    let mut client = epcache_client::Client::connect(&addr).await.unwrap();
    wait_listed(&mut client, target.id()).await;
    let trace = dir.join("asked.eppt");
    let pid = target.id().to_string();
    let out = epcache(
        &addr,
        &[
            "trace",
            "record",
            "--target",
            &pid,
            "--region",
            "multiply",
            "--instances",
            "1",
            "--json",
            "--output",
            trace.to_str().unwrap(),
        ],
    )
    .await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let said: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(said["state"], "written", "{said}");
    assert_eq!(said["complete"], true, "{said}");
    assert_eq!(said["instances"], 1, "{said}");
    assert_eq!(said["region"], "multiply");
    assert_eq!(said["output"], trace.to_str().unwrap());
    ends_well(&mut target);
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("r.json")).unwrap()).unwrap();
    let replayed = replay(&trace, CACHE);
    assert_exact(&report, &replayed, "multiply");
    assert_eq!(
        said["accesses"], replayed["compression"]["accesses"],
        "the accesses the target said it wrote"
    );
    // The file is the user's alone.
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&trace).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    daemon.shutdown().await;
}

/// A name two regions share (static functions of two files) is refused with their keys, and
/// `--region-key` records the one asked for: `same_name_b.c`'s `init`, entered twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_region_of_a_shared_name_is_traced_by_its_key() {
    let who = "a region traced by its key";
    if !(available("gcc", who) && runtime_built(who)) {
        return;
    }
    let guard = tempfile::tempdir().unwrap();
    let dir = std::fs::canonicalize(guard.path()).unwrap();
    build_same_names(&dir);
    let daemon = start_daemon(&dir).await;
    let addr = daemon.endpoint();
    let mut target = start_with_report(&dir.join("prog"), &dir, false);
    let mut client = epcache_client::Client::connect(&addr).await.unwrap();
    wait_listed(&mut client, target.id()).await;
    let pid = target.id().to_string();
    let trace = dir.join("b.eppt");
    let record = |region: [&str; 2]| {
        let (addr, pid, trace) = (addr.clone(), pid.clone(), trace.clone());
        let region = region.map(str::to_owned);
        async move {
            epcache(
                &addr,
                &[
                    "trace",
                    "record",
                    "--target",
                    &pid,
                    &region[0],
                    &region[1],
                    "--json",
                    "--output",
                    trace.to_str().unwrap(),
                ],
            )
            .await
        }
    };
    let out = record(["--region", "init"]).await;
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{said}");
    assert!(
        said.contains("`--region-key` of `epcache request` and `epcache trace record`"),
        "{said}"
    );

    let described: serde_json::Value =
        serde_json::from_slice(&epcache(&addr, &["describe", &pid, "--json"]).await.stdout)
            .unwrap();
    let in_b = described["regions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "init" && r["file"].as_str().unwrap().ends_with("same_name_b.c"))
        .expect("same_name_b.c's init is listed");
    let key = format!("{}:{}", in_b["file_id"], in_b["line"]);
    let out = record(["--region-key", &key]).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let said: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(said["state"], "written", "{said}");
    assert_eq!(said["instances"], 2, "{said}");
    ends_well(&mut target);
    daemon.shutdown().await;
}

/// Under a daemon alone (no standalone report): the live counts are the results of requests
/// placed on the region beside the trace, over every byte; the trace replays to them exactly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trace_beside_requests_replays_to_their_results() {
    let Some((_guard, dir, program, daemon)) = set_up("trace beside requests").await else {
        return;
    };
    let addr = daemon.endpoint();
    let mut target = start_with_report(&program, &dir, false);
    let pid = target.id();
    let mut client = epcache_client::Client::connect(&addr).await.unwrap();
    wait_listed(&mut client, pid).await;
    let events = &crate::partial_recording::EVENTS[..6];
    let requests: Vec<epcache_client::Request> = events
        .iter()
        .map(|(event, _, _)| epcache_client::Request::count("multiply", 0..u64::MAX, *event))
        .collect();
    let placed = client.requests(pid, &requests).await.unwrap();
    let trace = dir.join("beside.eppt");
    let order = epcache_client::TraceOrder::new("multiply", trace.to_str().unwrap());
    let asked = client.start_trace(pid, &order).await.unwrap();
    client.resume(pid, false).await.unwrap();
    ends_well(&mut target);
    let info = client.read_trace(pid, asked.id).await.unwrap();
    assert_eq!(info.state, epcache_client::TraceState::Written, "{info:?}");
    assert!(info.complete && info.instances == 1, "{info:?}");
    let ids: Vec<u64> = placed.iter().map(|p| p.id).collect();
    let results = client.results(pid, &ids).await.unwrap();
    let replayed = replay(&trace, CACHE);
    for ((event, level, field), result) in events.iter().zip(&results) {
        assert!(result.available, "{event}: no result");
        assert_eq!(
            replayed["levels"][level][field].as_u64(),
            Some(result.total),
            "{event}: live request vs {level}.{field} re-simulated"
        );
    }
    assert!(results[0].total > 100_000);
    daemon.shutdown().await;
}

/// An access budget cuts the recording (said incomplete, the budget reached, exactly that many
/// accesses written); a data-structure selection writes only that structure's accesses, and
/// its replay says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_budget_cuts_the_trace_and_a_selection_keeps_one_structure() {
    let Some((_guard, dir, program, daemon)) = set_up("trace budget and selection").await else {
        return;
    };
    let addr = daemon.endpoint();
    let mut client = epcache_client::Client::connect(&addr).await.unwrap();
    for (name, extra) in [("budget", ["--budget", "10000"]), ("b", ["--data", "b"])] {
        let mut target = start(&program, &dir);
        wait_listed(&mut client, target.id()).await;
        let trace = dir.join(format!("{name}.eppt"));
        let pid = target.id().to_string();
        let mut args = vec![
            "trace",
            "record",
            "--json",
            "--target",
            &pid,
            "--region",
            "multiply",
            "--output",
            trace.to_str().unwrap(),
        ];
        args.extend(extra);
        let out = epcache(&addr, &args).await;
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let said: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        ends_well(&mut target);
        let replayed = replay(&trace, CACHE);
        assert_eq!(
            said["accesses"], replayed["compression"]["accesses"],
            "{said}"
        );
        if name == "budget" {
            assert_eq!(said["accesses"], 10_000, "{said}");
            assert_eq!(said["budget_reached"], true, "{said}");
            assert_eq!(said["complete"], false, "{said}");
            assert!(
                said["message"].as_str().unwrap().contains("budget"),
                "{said}"
            );
            // The initialisation's stores come first; the instance is cut after the rest.
            assert_eq!(said["instances"], 1, "{said}");
        } else {
            assert_eq!(said["complete"], true, "{said}");
            // Only b's loads: one per inner iteration.
            assert_eq!(said["accesses"], 48 * 48 * 48 + 48 * 48, "{said}");
            let structures = replayed["structures"].as_array().unwrap();
            assert!(
                structures
                    .iter()
                    .all(|s| s["name"] == "b" || s["accesses"] == 0),
                "{structures:?}"
            );
            // Its replay says that only b was recorded, so its misses are not the run's.
            let notes = replayed["recording_notes"].as_array().unwrap();
            assert!(
                notes.iter().any(|n| n
                    .as_str()
                    .unwrap()
                    .starts_with("only the accesses to b were recorded")),
                "{notes:?}"
            );
        }
    }
    daemon.shutdown().await;
}

/// `./prog & epcache trace record --target $!`, as the README writes it: the command asks
/// before the target has announced itself to the daemon, waits for it, and records.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trace_asked_as_the_target_starts_waits_for_it_to_announce_itself() {
    let Some((_guard, dir, program, daemon)) = set_up("trace asked at start").await else {
        return;
    };
    let addr = daemon.endpoint();
    let mut target = start(&program, &dir);
    let trace = dir.join("at-start.eppt");
    let pid = target.id().to_string();
    let args = [
        "trace",
        "record",
        "--target",
        &pid,
        "--region",
        "multiply",
        "--output",
        trace.to_str().unwrap(),
    ];
    let out = epcache(&addr, &args).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    ends_well(&mut target);
    assert!(trace.exists());
    daemon.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_trace_requests_are_refused_and_the_target_runs_to_its_end() {
    let Some((_guard, dir, program, daemon)) = set_up("bad trace requests").await else {
        return;
    };
    let addr = daemon.endpoint();
    let mut target = start(&program, &dir);
    let mut client = epcache_client::Client::connect(&addr).await.unwrap();
    wait_listed(&mut client, target.id()).await;
    let pid = target.id().to_string();
    let record = |region: &str, output: &Path, extra: &[&str]| {
        let mut args: Vec<String> = ["trace", "record", "--json", "--target", &pid, "--region"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        args.push(region.into());
        args.push("--output".into());
        args.push(output.to_str().unwrap().into());
        args.extend(extra.iter().map(|s| s.to_string()));
        args
    };
    let refused = |out: &Output, code: &str, says: &str| {
        assert!(!out.status.success());
        let error: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&out.stdout)));
        assert_eq!(error["code"], code, "{error}");
        assert!(error["error"].as_str().unwrap().contains(says), "{error}");
    };
    let run = |args: Vec<String>| {
        let addr = addr.clone();
        async move {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            epcache(&addr, &args).await
        }
    };
    let good = dir.join("t.eppt");
    // An unknown region, with the nearest names.
    let out = run(record("multiplyy", &good, &[])).await;
    refused(&out, "NotFound", "multiply");
    // A directory that does not exist, a symbolic link, an existing file.
    let out = run(record("multiply", &dir.join("none/t.eppt"), &[])).await;
    refused(&out, "InvalidArgument", "create it first");
    std::fs::write(dir.join("exists.eppt"), b"keep").unwrap();
    let out = run(record("multiply", &dir.join("exists.eppt"), &[])).await;
    refused(&out, "InvalidArgument", "exists");
    std::os::unix::fs::symlink(dir.join("exists.eppt"), dir.join("link.eppt")).unwrap();
    let out = run(record("multiply", &dir.join("link.eppt"), &["--overwrite"])).await;
    refused(&out, "InvalidArgument", "symbolic link");
    assert_eq!(std::fs::read(dir.join("exists.eppt")).unwrap(), b"keep");
    // A good order, left waiting; a second one while it is pending is refused.
    let out = run(record("multiply", &good, &["--no-release", "--no-wait"])).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let placed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(placed["state"], "pending", "{placed}");
    let out = run(record("multiply", &dir.join("u.eppt"), &["--no-wait"])).await;
    refused(&out, "FailedPrecondition", "one trace at a time");
    // Released, the target records the first order.
    let out = epcache(&addr, &["continue", &pid]).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    ends_well(&mut target);
    let info = client
        .read_trace(target.id(), placed["id"].as_u64().unwrap() as u32)
        .await
        .unwrap();
    assert_eq!(info.state, epcache_client::TraceState::Written, "{info:?}");
    assert!(info.complete, "{info:?}");
    assert!(!dir.join("u.eppt").exists());
    daemon.shutdown().await;
}

/// A target that already runs cannot be asked for a trace (recording must begin at its first
/// access), and runs on to its end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trace_asked_once_the_target_runs_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let dir = std::fs::canonicalize(dir.path()).unwrap();
    let daemon = start_daemon(&dir).await;
    let addr = daemon.endpoint();
    // Enters `kernel` 40 times, 20 ms apart.
    let mut target = processes::spawn_target(
        &dir,
        &[
            ("EPCACHE_WAIT", "20"),
            (synthetic::ITERATIONS, "40"),
            (synthetic::PAUSE_MS, "20"),
        ],
    );
    let mut client = epcache_client::Client::connect(&addr).await.unwrap();
    wait_listed(&mut client, target.pid).await;
    client.resume(target.pid, false).await.unwrap();
    let pid = target.pid.to_string();
    let late = dir.join("late.eppt");
    let out = epcache(
        &addr,
        &[
            "trace",
            "record",
            "--json",
            "--target",
            &pid,
            "--region",
            "kernel",
            "--output",
            late.to_str().unwrap(),
        ],
    )
    .await;
    assert!(!out.status.success());
    let error: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(error["code"], "FailedPrecondition", "{error}");
    assert!(
        error["error"]
            .as_str()
            .unwrap()
            .contains("not waiting at its start"),
        "{error}"
    );
    assert!(!late.exists());
    let status = wait_within(&mut target.child, Duration::from_secs(20)).expect("never ended");
    assert!(status.success(), "{status:?}");
    daemon.shutdown().await;
}
