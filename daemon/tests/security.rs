//! What another local user, a forged segment or a hostile client can and cannot make the daemon
//! do: real daemons, real target processes, real segments, and a second uid (this test binary
//! run again as uid 65534) where it matters.

mod support;

use std::time::Duration;

use epcache_monitor::shm::discovery::{self, TargetRecord};
use epcache_monitor::shm::layout::header;
use epcache_monitor::shm::process;
use epcache_monitor::shm::{Access, Segment};
use epcache_proto::v1;
use support::*;
use tonic::Code;

#[test]
fn child_role() {
    support::child_role();
}

const WAIT: (&str, &str) = ("EPCACHE_WAIT", "20");

/// A segment that copies `target`'s, with its header claiming `pid` (started at `start_time`):
/// what a process of this user could make to point the daemon at someone else's process.
fn forge_segment(original_shm_id: i32, pid: u32, start_time: u64) -> Segment {
    let original = Segment::attach(original_shm_id, Access::ReadOnly).unwrap();
    let len = original.view().len();
    let mut bytes = vec![0u8; len];
    original.view().copy_out(0, &mut bytes).unwrap();
    let forged = Segment::create(len).unwrap();
    forged.view().copy_in(0, &bytes).unwrap();
    forged.view().copy_in(header::TARGET_PID, &pid.to_ne_bytes()).unwrap();
    forged
        .view()
        .copy_in(header::TARGET_START_TIME, &start_time.to_ne_bytes())
        .unwrap();
    forged
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forged_segment_cannot_point_the_daemon_at_another_process() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = start_daemon(dir.path()).await;
    let target = spawn_target(dir.path(), &[WAIT, ("EPCACHE_SYNTH_ITERATIONS", "1")]);
    let mut tool = connect(&daemon, "forger").await;
    let listed = wait_listed(&mut tool, target.pid).await;

    // An unrelated process of this user, and a segment and record claiming to be it.
    let mut bystander = std::process::Command::new("sleep")
        .arg("60")
        .spawn()
        .unwrap();
    let victim = bystander.id();
    let process::Liveness::Alive { start_time } = process::liveness(victim) else {
        panic!("sleep is not running");
    };
    let forged = forge_segment(listed.shm_id, victim, start_time);
    discovery::write_record(
        dir.path(),
        &TargetRecord {
            pid: victim,
            start_time,
            shm_id: forged.id(),
            program: "forged".into(),
        },
    )
    .unwrap();

    // Several discovery passes.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let targets = tool
        .list_targets(v1::ListTargetsRequest {})
        .await
        .unwrap()
        .into_inner()
        .targets;
    assert!(
        targets.iter().all(|t| t.pid != victim),
        "the forged target is listed: {targets:?}"
    );
    assert!(targets.iter().any(|t| t.pid == target.pid));
    let e = tool
        .terminate(v1::TerminateRequest { pid: victim })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::NotFound, "{e}");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        bystander.try_wait().unwrap().is_none(),
        "the unrelated process was signalled"
    );
    let _ = bystander.kill();
    let _ = bystander.wait();
    daemon.shutdown().await;
}
