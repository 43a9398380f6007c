//! A program that forks without exec: the child must leave the parent's monitoring alone. It
//! writes no report over the parent's, and its exit neither marks the parent's segment exited
//! nor removes the parent's discovery record.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use epcache_shm::discovery;
use epcache_shm::layout::TargetState;
use epcache_shm::tool::TargetHandle;

use crate::capture_support::{
    available, epcache_cc, kernel, region, runtime_built, structure, wait_within,
};

const CACHE: &str = "D1=32K,8,64;LL=1M,16,64";
/// Elements of `A` in the kernel: each sweep reads and writes every one once.
const N: u64 = 4096;

fn build(dir: &Path) -> Option<PathBuf> {
    if !available("gcc", "runtime_fork") || !runtime_built("runtime_fork") {
        return None;
    }
    let source = kernel("fork_child.c");
    epcache_cc(
        dir,
        &[
            "gcc",
            "-O1",
            "-g",
            source.to_str().unwrap(),
            "-o",
            "fork_child",
        ],
    );
    Some(dir.join("fork_child"))
}

/// `program` set to run standalone, reporting to `report` with the tests' caches, and with no
/// segment for a tool (`EPCACHE_MCC=off`).
fn standalone(program: impl AsRef<std::ffi::OsStr>, report: &Path) -> Command {
    let mut command = Command::new(program);
    command
        .env("EPCACHE_REPORT", report)
        .env("EPCACHE_CACHE", CACHE)
        .env("EPCACHE_MCC", "off");
    command
}

#[test]
fn a_forked_child_that_outlives_its_parent_writes_no_report_over_the_parents() {
    let dir = tempfile::tempdir().unwrap();
    let Some(program) = build(dir.path()) else {
        return;
    };
    let path = dir.path().join("report.json");
    // The child keeps the parent's stdout open, so this returns once the child has exited too,
    // after its exit handlers ran: those used to rewrite the report from the child's copy of
    // the counts (two sweeps, and no `after_child`).
    let out = standalone(&program, &path).arg("orphan").output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let sweep = structure(region(&report, "sweep"), "A");
    assert_eq!(
        sweep["events"]["PAPI_L1_DCR"], N,
        "the parent's one sweep only"
    );
    assert_eq!(sweep["events"]["PAPI_L1_DCW"], N);
    let after = structure(region(&report, "after_child"), "A");
    assert_eq!(after["events"]["PAPI_L1_DCR"], N);
}

#[test]
fn a_forked_child_that_exits_leaves_the_parents_segment_running() {
    let dir = tempfile::tempdir().unwrap();
    let Some(program) = build(dir.path()) else {
        return;
    };
    let runtime_dir = dir.path().join("run");
    let mut parent = Command::new(&program)
        .arg("wait")
        .env("EPCACHE_RUNTIME_DIR", &runtime_dir)
        .env("EPCACHE_CACHE", CACHE)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(parent.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    assert_eq!(
        line, "child exited\n",
        "the parent did not see its child exit"
    );

    // The child has exited through exit(); the parent runs on, blocked on its stdin.
    let record = discovery::wait_for_record(&runtime_dir, parent.id(), Duration::from_secs(5))
        .expect("the parent's discovery record is gone after its child exited");
    let tool = TargetHandle::attach_record(&record).unwrap();
    assert_eq!(
        tool.state().unwrap(),
        TargetState::Running,
        "the child's exit finished the parent's segment"
    );
    assert!(
        tool.regions()
            .unwrap()
            .iter()
            .any(|r| r.name == "after_child"),
        "the parent's regions are published"
    );

    drop(parent.stdin.take());
    let status = parent.wait().unwrap();
    assert!(status.success());
    assert_eq!(tool.state().unwrap(), TargetState::Exited);
}

/// The child of a threaded program, forked while another thread allocates heap blocks (which
/// the runtime names under its locks), must not hang on a lock that thread held at the fork:
/// every child allocates, writes and frees a block of its own and exits. 200 forks give the
/// race many chances; a hang is caught by the timeout.
#[test]
fn children_forked_while_another_thread_allocates_do_not_hang() {
    if !available("gcc", "runtime_fork") || !runtime_built("runtime_fork") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let source = kernel("fork_threads.c");
    epcache_cc(
        dir.path(),
        &[
            "gcc",
            "-O1",
            "-pthread",
            source.to_str().unwrap(),
            "-o",
            "fork_threads",
        ],
    );
    let path = dir.path().join("report.json");
    let mut child = standalone(dir.path().join("fork_threads"), &path)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let Some(status) = wait_within(&mut child, Duration::from_secs(60)) else {
        // The children stuck on a lock are orphans now: end them too.
        let _ = Command::new("pkill")
            .args([
                "-9",
                "-f",
                &dir.path().join("fork_threads").to_string_lossy(),
            ])
            .status();
        panic!("the program or one of its forked children hung for a minute");
    };
    let out = child.wait_with_output().unwrap();
    assert!(
        status.success(),
        "{status}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "200",
        "every child exits normally"
    );
    // The parent's report is whole and names the churning thread's blocks by their site.
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let churn = region(&report, "churn");
    let shared = structure(churn, "shared");
    assert!(shared["events"]["PAPI_L1_DCR"].as_u64().unwrap() >= 1024);
}

#[test]
fn a_program_that_ends_by_exit_without_handlers_still_leaves_its_report() {
    if !available("gcc", "runtime_fork") || !runtime_built("runtime_fork") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let source = kernel("exit_immediately.c");
    epcache_cc(
        dir.path(),
        &["gcc", "-O1", "-g", source.to_str().unwrap(), "-o", "exits"],
    );
    for (how, arg) in [("_exit", "x"), ("_Exit", "E")] {
        let path = dir.path().join(format!("report{how}.json"));
        let out = standalone(dir.path().join("exits"), &path)
            .arg(arg)
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(7),
            "{how}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        // Before, no report at all: the exit handler that writes it never ran. The children's
        // _exit wrote none over it (the fork child's would have counted three sweeps).
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{how}: no report at {}: {e}", path.display()));
        let report: serde_json::Value = serde_json::from_str(&text).unwrap();
        let sweep = region(&report, "sweep");
        assert_eq!(sweep["instances"], 2, "{how}");
        let a = structure(sweep, "A");
        assert_eq!(a["events"]["PAPI_L1_DCR"], 2 * N, "{how}");
        assert_eq!(a["events"]["PAPI_L1_DCW"], 2 * N, "{how}");
    }
}

/// `quick_exit` runs only the handlers registered with `at_quick_exit`, then the C library's
/// own `_exit`: the runtime registers its report there too, first, so it runs after the
/// program's handler and has its sweep. Before, no report.
#[test]
fn a_program_that_ends_by_quick_exit_leaves_its_report_after_its_handlers() {
    if !available("gcc", "runtime_fork") || !runtime_built("runtime_fork") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let source = kernel("quick_exit.c");
    epcache_cc(
        dir.path(),
        &["gcc", "-O1", "-g", source.to_str().unwrap(), "-o", "quick"],
    );
    let path = dir.path().join("report.json");
    let out = standalone(dir.path().join("quick"), &path)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(6), "{stderr}");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("no report at {}: {e}; {stderr}", path.display()));
    let report: serde_json::Value = serde_json::from_str(&text).unwrap();
    let sweep = region(&report, "sweep");
    // Two in main, the third in the program's at_quick_exit handler.
    assert_eq!(sweep["instances"], 3, "{stderr}");
    let a = structure(sweep, "A");
    assert_eq!(a["events"]["PAPI_L1_DCR"], 3 * N);
    assert_eq!(a["events"]["PAPI_L1_DCW"], 3 * N);
}

/// `_exit` from the program's own signal handler, which may interrupt the runtime (holding its
/// locks) or the C library's allocator: the report is skipped inside the runtime and bounded
/// by a watchdog elsewhere, so the program ends with its status at once, with a whole report or
/// none. Before, 14 runs of 16 hung on a lock the interrupted thread held, and others wrote an
/// empty report; later, one in forty hung in the handler's function entry when the signal
/// interrupted `free` (the allocator wraps now mark the thread as inside the runtime).
#[test]
fn exit_from_a_signal_handler_ends_at_once_with_a_whole_report_or_none() {
    if !available("gcc", "runtime_fork") || !runtime_built("runtime_fork") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let source = kernel("exit_from_handler.c");
    epcache_cc(
        dir.path(),
        &[
            "gcc",
            "-O1",
            "-g",
            source.to_str().unwrap(),
            "-o",
            "handler_exit",
        ],
    );
    // One run in about forty hung when the signal landed in `free` (the handler's own entry
    // is a sync point, which frees): 48 runs, a second or two, catch that most times.
    for run in 0..48u32 {
        let path = dir.path().join(format!("report{run}.json"));
        let mut child = standalone(dir.path().join("handler_exit"), &path)
            .arg((5000 + run % 8 * 1373 + run * 17).to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let Some(status) = wait_within(&mut child, Duration::from_secs(30)) else {
            let _ = child.kill();
            let _ = child.wait();
            panic!("run {run}: still running after 30 s");
        };
        assert_eq!(status.code(), Some(7), "run {run}");
        if let Ok(text) = std::fs::read_to_string(&path) {
            let report: serde_json::Value = serde_json::from_str(&text).unwrap();
            let reads = report["levels"][0]["reads"].as_u64().unwrap_or(0);
            assert!(reads > 0, "run {run}: an empty report: {text}");
        }
    }
}
