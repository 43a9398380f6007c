//! The real `epcached` killed with requests placed (issue 25 item 3): a daemon attached later
//! takes back the slots whose owner is dead and keeps their published results readable, while
//! two live daemons never take each other's slots.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use epcache_proto::v1;
use epcache_shm::discovery;
use epcache_shm::tool::TargetHandle;
use tonic::Code;

use crate::support::synthetic::A_LINES;
use crate::support::*;

/// An `epcached` process, killed if the test ends first.
struct Daemon {
    child: Child,
    endpoint: String,
}

impl Daemon {
    fn start(runtime_dir: &std::path::Path) -> Daemon {
        // Each daemon on a socket of its own in the shared runtime directory.
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let socket = runtime_dir.join(format!("epcached-{n}.sock"));
        let mut child = Command::new(env!("CARGO_BIN_EXE_epcached"))
            .arg("--listen")
            .arg(format!("unix:{}", socket.display()))
            .arg("--runtime-dir")
            .arg(runtime_dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let endpoint = line
            .trim()
            .strip_prefix("epcached listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
            .to_owned();
        Daemon { child, endpoint }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    async fn tool(&self, name: &str) -> Client {
        let channel = crate::support::channel(&self.endpoint).await.unwrap();
        epcache_proto::v1::mri_client::MriClient::with_interceptor(channel, Tool(name.into()))
    }

    /// SIGKILL: no shutdown policy runs, the requests stay in the target's slots.
    fn kill(&mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Twenty static counts and twenty 25-bucket histograms of the kernel's L1 read misses over A.
fn forty_requests() -> Vec<v1::MonitoringRequest> {
    (0..40)
        .map(|i| {
            if i % 2 == 0 {
                static_request("kernel", "A", "PAPI_L1_LDM")
            } else {
                histogram_request("kernel", "A", "PAPI_L1_LDM", 25)
            }
        })
        .collect()
}

async fn add(
    tool: &mut Client,
    pid: u32,
    requests: Vec<v1::MonitoringRequest>,
) -> Result<Vec<v1::RequestInfo>, tonic::Status> {
    tool.add_requests(v1::AddRequestsRequest { pid, requests })
        .await
        .map(|r| r.into_inner().requests)
}

async fn results(tool: &mut Client, pid: u32) -> Vec<v1::RequestResult> {
    tool.read_results(v1::ReadResultsRequest { pid, ids: vec![] })
        .await
        .unwrap()
        .into_inner()
        .results
}

/// What one kernel instance gives each of [`forty_requests`]: one miss per line of A.
fn assert_one_kernel(results: &[v1::RequestResult]) {
    assert_eq!(results.len(), 40);
    for r in results {
        assert!(r.available, "{r:?}");
        assert_eq!((r.instances, r.total), (1, A_LINES), "{r:?}");
        let info = r.request.as_ref().unwrap();
        if info.buckets > 0 {
            assert_eq!(r.buckets.len(), 25);
            assert_eq!(r.buckets.iter().map(|b| b.count).sum::<u64>(), A_LINES);
        }
    }
}

/// Holds the target's segment from the test, as a second tool would: a target halted at a
/// point whose tool is gone goes on by itself only when nobody else is attached.
fn hold_segment(runtime_dir: &std::path::Path, pid: u32) -> TargetHandle {
    let record = discovery::list_targets(runtime_dir)
        .unwrap()
        .into_iter()
        .find(|r| r.pid == pid)
        .expect("the target's discovery record");
    TargetHandle::attach_record(&record).unwrap()
}

async fn describe(tool: &mut Client, pid: u32) -> v1::DescribeTargetResponse {
    tool.describe_target(v1::DescribeTargetRequest { pid })
        .await
        .unwrap()
        .into_inner()
}

async fn finish(tool: &mut Client, target: &mut Target) {
    tool.r#continue(v1::ContinueRequest {
        pid: target.pid,
        clear_halting_point: true,
    })
    .await
    .unwrap();
    assert!(target.wait_for_exit(Duration::from_secs(20)).success());
}

/// Before, a daemon started after one was killed with 40 requests placed got 24 of the 64 slots
/// for the target's life, and the 40 results were lost with the killed daemon.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_daemon_takes_back_a_killed_ones_slots_and_keeps_its_results() {
    let dir = tempfile::tempdir().unwrap();
    let mut first = Daemon::start(dir.path());
    let mut target = spawn_target(
        dir.path(),
        &[("EPCACHE_WAIT", "20"), ("EPCACHE_SYNTH_ITERATIONS", "3")],
    );
    let mut tool = first.tool("before").await;
    wait_listed(&mut tool, target.pid).await;
    add(&mut tool, target.pid, forty_requests()).await.unwrap();
    step_to_exit(&mut tool, target.pid, "kernel").await;
    assert_one_kernel(&results(&mut tool, target.pid).await);

    let _held = hold_segment(dir.path(), target.pid);
    let killed = first.pid();
    first.kill();

    let second = Daemon::start(dir.path());
    let mut tool = second.tool("after").await;
    wait_listed(&mut tool, target.pid).await;
    let described = describe(&mut tool, target.pid).await;
    assert_eq!(described.request_slots, 64);
    assert_eq!(described.requests.len(), 40, "the killed daemon's requests");
    let gone = format!("epcached pid {killed} (gone)");
    assert!(described.requests.iter().all(|r| r.owner == gone));
    // Said to count no more, rather than look live.
    assert!(described.requests.iter().all(|r| r.adopted));
    assert_eq!(described.target.unwrap().requests, 40);
    assert_one_kernel(&results(&mut tool, target.pid).await);

    let placed = add(
        &mut tool,
        target.pid,
        [forty_requests(), forty_requests()].concat()[..64].to_vec(),
    )
    .await
    .expect("every slot is free again");
    assert_eq!(placed.len(), 64);
    finish(&mut tool, &mut target).await;
}

/// A daemon attached beside a live one leaves its slots alone; once that one is killed, the
/// other takes them back within a few watch slices. (A runtime directory takes one daemon, so
/// the second finds the target through a copy of its record in a directory of its own, as a
/// daemon of another version, or one started on another directory the program announced
/// itself in too, would.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_live_daemons_never_take_each_others_slots() {
    let dir = tempfile::tempdir().unwrap();
    let mut first = Daemon::start(dir.path());
    let mut target = spawn_target(
        dir.path(),
        &[("EPCACHE_WAIT", "20"), ("EPCACHE_SYNTH_ITERATIONS", "3")],
    );
    let mut before = first.tool("first").await;
    wait_listed(&mut before, target.pid).await;
    add(&mut before, target.pid, forty_requests())
        .await
        .unwrap();
    step_to_exit(&mut before, target.pid, "kernel").await;

    let elsewhere = tempfile::tempdir().unwrap();
    std::fs::copy(
        discovery::record_path(dir.path(), target.pid),
        discovery::record_path(elsewhere.path(), target.pid),
    )
    .unwrap();
    let second = Daemon::start(elsewhere.path());
    let mut beside = second.tool("second").await;
    wait_listed(&mut beside, target.pid).await;
    // Past several reclaim looks of the second daemon's watcher.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(describe(&mut beside, target.pid).await.requests.is_empty());
    let refused = add(
        &mut beside,
        target.pid,
        [forty_requests(), forty_requests()].concat()[..25].to_vec(),
    )
    .await
    .unwrap_err();
    assert_eq!(refused.code(), Code::ResourceExhausted, "{refused:?}");
    add(&mut beside, target.pid, forty_requests()[..24].to_vec())
        .await
        .unwrap();
    assert_one_kernel(&results(&mut before, target.pid).await);

    let _held = hold_segment(dir.path(), target.pid);
    let killed = first.pid();
    first.kill();
    let started = Instant::now();
    let adopted = loop {
        let requests = describe(&mut beside, target.pid).await.requests;
        let gone = format!("epcached pid {killed} (gone)");
        let adopted: Vec<u64> = requests
            .iter()
            .filter(|r| r.owner == gone)
            .map(|r| r.id)
            .collect();
        if !adopted.is_empty() {
            break adopted;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the killed daemon's slots were never taken back"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(adopted.len(), 40);
    let kept = tool_results(&mut beside, target.pid, adopted).await;
    assert_one_kernel(&kept);
    // Its own 24 and the 40 freed ones: withdrawing its own frees all 64.
    let cancelled = beside
        .cancel_requests(v1::CancelRequestsRequest {
            pid: target.pid,
            ids: vec![],
        })
        .await
        .unwrap()
        .into_inner()
        .cancelled;
    assert_eq!(cancelled.len(), 24);
    let placed = add(
        &mut beside,
        target.pid,
        [forty_requests(), forty_requests()].concat()[..64].to_vec(),
    )
    .await
    .unwrap();
    assert_eq!(placed.len(), 64);
    finish(&mut beside, &mut target).await;
}

async fn tool_results(tool: &mut Client, pid: u32, ids: Vec<u64>) -> Vec<v1::RequestResult> {
    tool.read_results(v1::ReadResultsRequest { pid, ids })
        .await
        .unwrap()
        .into_inner()
        .results
}
