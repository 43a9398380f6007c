//! The `epcache` daemon subcommands end to end: an embedded daemon on a Unix socket, a real target
//! process, and the real binary for targets, describe, request, step, results, histogram (bars and
//! SVG), continue, watch, and a bad request refused while the target runs on.

use epcache_test_support::client as daemon_support;

use std::process::{Command, Output};
use std::time::Duration;

use daemon_support::synthetic::A_LINES;
use daemon_support::*;

async fn epcache(daemon: &str, args: &[&str]) -> Output {
    // The subcommand and its arguments first, then the daemon, as a user types it.
    let mut all: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    all.extend(["--daemon".to_owned(), daemon.to_owned()]);
    // The binary blocks; the daemon needs this runtime's workers meanwhile.
    tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_epcache"))
            .args(&all)
            .output()
            .unwrap()
    })
    .await
    .unwrap()
}

fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "epcache failed: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_drives_a_target_from_request_to_histogram() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = start_daemon(dir.path()).await;
    let addr = daemon.endpoint();
    let mut target = spawn_target(dir.path(), 2);
    let mut client = epcache_client::Client::connect(&addr).await.unwrap();
    wait_listed(&mut client, target.pid).await;
    let pid = target.pid.to_string();

    let listed: serde_json::Value =
        serde_json::from_str(&ok(&epcache(&addr, &["targets", "--json"]).await)).unwrap();
    assert_eq!(listed[0]["pid"], target.pid);
    assert_eq!(listed[0]["state"], "waiting_for_tool");
    // No machine of cores: each thread keeps a hierarchy of its own.
    assert!(listed[0]["cores"].is_null(), "{listed}");
    let text = ok(&epcache(&addr, &["targets"]).await);
    assert!(
        text.contains("synthetic") && text.contains("waiting for a tool"),
        "{text}"
    );

    let text = ok(&epcache(&addr, &["describe", &pid]).await);
    for needle in [
        "kernel",
        "init",
        "A",
        "PAPI_L1_LDM",
        "counter array of 64",
        "each thread simulates a hierarchy of its own",
    ] {
        assert!(text.contains(needle), "{needle} missing from:\n{text}");
    }

    let placed: serde_json::Value = serde_json::from_str(&ok(&epcache(
        &addr,
        &[
            "request",
            &pid,
            "--region",
            "kernel",
            "--array",
            "A",
            "--event",
            "PAPI_L1_LDM",
            "--buckets",
            "25",
            "--json",
        ],
    )
    .await))
    .unwrap();
    let id = placed["id"].as_u64().unwrap().to_string();
    assert_eq!(placed["buckets"], 25);

    let text = ok(&epcache(&addr, &["step", &pid, "--to-exit", "kernel"]).await);
    assert_eq!(text, "halted at the exit of kernel\n");

    let results: serde_json::Value =
        serde_json::from_str(&ok(&epcache(&addr, &["results", &pid, "--json"]).await)).unwrap();
    assert_eq!(results[0]["total"], A_LINES);
    assert_eq!(results[0]["buckets"].as_array().unwrap().len(), 25);
    let text = ok(&epcache(&addr, &["results", &pid]).await);
    assert!(
        text.contains("25 buckets") && text.contains(&A_LINES.to_string()),
        "{text}"
    );

    let svg = dir.path().join("hist.svg");
    let text = ok(&epcache(
        &addr,
        &[
            "histogram",
            &pid,
            &id,
            "--width",
            "20",
            "--svg",
            svg.to_str().unwrap(),
        ],
    )
    .await);
    println!("{text}");
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].starts_with("PAPI_L1_LDM over A during kernel: 25 buckets of 1600 bytes"),
        "{text}"
    );
    assert_eq!(lines.len(), 26, "{text}");
    // Equal buckets: every bar is full width.
    assert!(
        lines[1..].iter().all(|l| l.ends_with(&"█".repeat(20))),
        "{text}"
    );
    assert!(lines[1].trim_start().starts_with("+0..+1600"), "{text}");
    let svg = std::fs::read_to_string(&svg).unwrap();
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    assert_eq!(svg.matches("fill=\"#4269d0\"").count(), 25);

    let watch = {
        let addr = addr.clone();
        let pid = pid.clone();
        tokio::spawn(async move { epcache(&addr, &["watch", &pid, "--json"]).await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    ok(&epcache(&addr, &["continue", &pid, "--to-end"]).await);
    let out = tokio::time::timeout(Duration::from_secs(20), watch)
        .await
        .expect("watch did not end with the target")
        .unwrap();
    let events: Vec<serde_json::Value> = ok(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(events[0]["event"], "target");
    let last = events.last().unwrap();
    assert_eq!(last["event"], "exited");
    assert_eq!(last["exit"]["died"], false);
    assert!(
        events
            .iter()
            .any(|e| e["event"] == "result_updated" && e["result"]["total"] == 2 * A_LINES)
    );
    assert!(target.wait_for_exit(Duration::from_secs(10)).success());
    daemon.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_refuses_an_unknown_region_and_the_target_runs_on() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = start_daemon(dir.path()).await;
    let addr = daemon.endpoint();
    let mut target = spawn_target(dir.path(), 1);
    let mut client = epcache_client::Client::connect(&addr).await.unwrap();
    wait_listed(&mut client, target.pid).await;
    let pid = target.pid.to_string();
    let out = epcache(
        &addr,
        &[
            "request",
            &pid,
            "--region",
            "kernal",
            "--array",
            "A",
            "--event",
            "PAPI_L1_LDM",
        ],
    )
    .await;
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no region `kernal`") && err.contains("nearest: kernel"),
        "{err}"
    );
    let out = epcache(
        &addr,
        &[
            "request",
            &pid,
            "--region",
            "kernel",
            "--array",
            "Q",
            "--event",
            "PAPI_L1_LDM",
        ],
    )
    .await;
    assert!(String::from_utf8_lossy(&out.stderr).contains("nearest: A"));
    ok(&epcache(&addr, &["continue", &pid, "--to-end"]).await);
    assert!(target.wait_for_exit(Duration::from_secs(10)).success());
    daemon.shutdown().await;

    let out = epcache(&addr, &["targets"]).await;
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot reach epcached"), "{err}");
}

/// The subcommands agree with each other: `--buckets 0` is a static count for `request` as for
/// `run`, `step --count 0` is refused rather than taken as 1, `continue --json` prints JSON, a
/// failure under `--json` is JSON on stdout with the daemon's code, and aggregations are
/// spelled as their flags.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_subcommands_agree_on_their_flags() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = start_daemon(dir.path()).await;
    let addr = daemon.endpoint();
    let mut target = spawn_target(dir.path(), 1);
    let mut client = epcache_client::Client::connect(&addr).await.unwrap();
    wait_listed(&mut client, target.pid).await;
    let pid = target.pid.to_string();

    let placed: serde_json::Value = serde_json::from_str(&ok(&epcache(
        &addr,
        &[
            "request",
            &pid,
            "--region",
            "kernel",
            "--array",
            "A",
            "--event",
            "PAPI_L1_LDM",
            "--buckets",
            "0",
            "--aggregation",
            "per-thread",
            "--json",
        ],
    )
    .await))
    .unwrap();
    assert_eq!(placed["buckets"], 0, "a static count: {placed}");
    assert_eq!(placed["aggregation"], "per-thread");
    let text = ok(&epcache(&addr, &["describe", &pid]).await);
    assert!(
        text.contains("per-thread") && !text.contains("perthread"),
        "{text}"
    );

    // A histogram over two L1 lines cannot have four buckets of whole lines: it gets two, and
    // says so.
    let described: serde_json::Value =
        serde_json::from_str(&ok(&epcache(&addr, &["describe", &pid, "--json"]).await)).unwrap();
    let a = described["data_structures"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["name"] == "A")
        .unwrap();
    let start = a["range"]["start"].as_u64().unwrap();
    // The L1 line size, the third field of the first data level of the spec.
    let spec = described["cache_spec"].as_str().unwrap();
    let l1 = spec.split(';').find(|l| !l.starts_with("I1")).unwrap();
    let line: u64 = l1.rsplit(',').next().unwrap().parse().unwrap();
    let range = format!("{start}:{}", start + 2 * line);
    let out = epcache(
        &addr,
        &[
            "request",
            &pid,
            "--region",
            "kernel",
            "--range",
            &range,
            "--event",
            "PAPI_L1_LDM",
            "--buckets",
            "4",
            "--json",
        ],
    )
    .await;
    let placed: serde_json::Value = serde_json::from_str(&ok(&out)).unwrap();
    assert_eq!(placed["buckets"], 2, "{placed}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("2 bucket(s)")
            && err.contains("not the 4 asked")
            && err.contains("round up to that width"),
        "{err}"
    );
    // More buckets than a result block holds are refused before anything is placed.
    let out = epcache(
        &addr,
        &[
            "request",
            &pid,
            "--region",
            "kernel",
            "--range",
            &range,
            "--event",
            "PAPI_L1_LDM",
            "--buckets",
            "5000",
        ],
    )
    .await;
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--buckets 5000") && err.contains("nothing was placed"),
        "{err}"
    );

    let out = epcache(&addr, &["step", &pid, "--count", "0"]).await;
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--count"), "{err}");

    // Another tool's cancel without ids takes nothing, and says whose requests are there.
    let out = epcache(&addr, &["cancel", &pid, "--tool", "someone-else"]).await;
    let said = ok(&out);
    assert!(
        said.contains("nothing of this tool's to cancel") && said.contains("(tool `epcache-cli`)"),
        "{said}"
    );

    let out = epcache(&addr, &["cancel", &pid, "987654", "--json"]).await;
    assert_eq!(out.status.code(), Some(1));
    let failure: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    assert_eq!(failure["code"], "NotFound", "{failure}");
    assert!(
        failure["error"].as_str().unwrap().contains("987654"),
        "{failure}"
    );

    let resumed: serde_json::Value = serde_json::from_str(&ok(&epcache(
        &addr,
        &["continue", &pid, "--to-end", "--json"],
    )
    .await))
    .unwrap();
    assert_eq!(resumed["pid"], target.pid);
    assert!(target.wait_for_exit(Duration::from_secs(10)).success());
    daemon.shutdown().await;
}
