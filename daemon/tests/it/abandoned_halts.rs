//! No program stays halted for a tool that is gone: a real daemon, real target processes, and
//! tools that vanish mid-step (the call dropped, its timeout), close the connection that set a
//! halting point, or find the target's state word corrupted. Each target must run to its end.

use std::time::Duration;

use epcache_proto::v1;
use epcache_shm::layout::header;
use epcache_shm::{Access, Segment};
use tokio_stream::StreamExt;

use crate::support::*;

const WAIT: (&str, &str) = ("EPCACHE_WAIT", "20");

/// A target that enters `kernel` 40 times, 20 ms apart, after waiting for a tool at start.
fn slow_target(dir: &std::path::Path) -> Target {
    spawn_target(
        dir,
        &[
            WAIT,
            ("EPCACHE_SYNTH_ITERATIONS", "40"),
            ("EPCACHE_SYNTH_PAUSE_MS", "20"),
        ],
    )
}

/// A step to the 20th entry of `kernel`, about 400 ms into the run.
fn far_step(pid: u32, timeout_ms: u64) -> v1::StepRequest {
    v1::StepRequest {
        pid,
        until: Some(v1::step_request::Until::RegionEntry(region("kernel"))),
        count: 20,
        timeout_ms,
    }
}

/// Whether the target ran to a normal end within `limit` (else it is still halted somewhere).
fn runs_to_its_end(target: &mut Target, limit: Duration) -> bool {
    let started = std::time::Instant::now();
    while started.elapsed() < limit {
        if let Some(status) = target.child.try_wait().unwrap() {
            return status.success();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_dropped_by_its_caller_leaves_no_point_behind() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = start_daemon(dir.path()).await;
    let mut target = slow_target(dir.path());
    let mut tool = connect(&daemon, "impatient").await;
    wait_listed(&mut tool, target.pid).await;
    // The caller gives up after 100 ms and drops the call, long before the 20th entry.
    let gave_up = tokio::time::timeout(
        Duration::from_millis(100),
        tool.step(far_step(target.pid, 0)),
    )
    .await;
    assert!(gave_up.is_err(), "the step returned early: {gave_up:?}");
    assert!(
        runs_to_its_end(&mut target, Duration::from_secs(10)),
        "the target halted at the abandoned point and stayed halted"
    );
    daemon.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_that_times_out_leaves_no_point_behind() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = start_daemon(dir.path()).await;
    let mut target = slow_target(dir.path());
    let mut tool = connect(&daemon, "hasty").await;
    wait_listed(&mut tool, target.pid).await;
    let e = tool.step(far_step(target.pid, 100)).await.unwrap_err();
    assert_eq!(e.code(), tonic::Code::DeadlineExceeded, "{e}");
    assert!(e.message().contains("taken back"), "{e}");
    assert!(
        runs_to_its_end(&mut target, Duration::from_secs(10)),
        "the target halted at the timed-out step's point and stayed halted"
    );
    daemon.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_past_its_grpc_deadline_leaves_no_point_behind() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = start_daemon(dir.path()).await;
    let mut target = slow_target(dir.path());
    let mut tool = connect(&daemon, "deadline").await;
    wait_listed(&mut tool, target.pid).await;
    // The gRPC deadline (grpc-timeout), not the step's own timeout_ms.
    let mut call = tonic::Request::new(far_step(target.pid, 0));
    call.set_timeout(Duration::from_millis(100));
    let e = tool.step(call).await.unwrap_err();
    assert!(
        matches!(
            e.code(),
            tonic::Code::DeadlineExceeded | tonic::Code::Cancelled
        ),
        "{e}"
    );
    assert!(
        runs_to_its_end(&mut target, Duration::from_secs(10)),
        "the target halted at the point of a step past its deadline and stayed halted"
    );
    daemon.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_halt_at_the_point_of_a_closed_connection_is_released() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = start_daemon(dir.path()).await;
    let mut target = slow_target(dir.path());
    let mut observer = connect(&daemon, "observer").await;
    wait_listed(&mut observer, target.pid).await;
    let mut events = observer
        .watch(v1::WatchRequest { pid: target.pid })
        .await
        .unwrap()
        .into_inner();
    {
        // Its own connection: it sets a point and goes before the target reaches it.
        let mut setter = connect(&daemon, "setter").await;
        setter
            .set_halting_point(v1::SetHaltingPointRequest {
                pid: target.pid,
                point: Some(v1::HaltingPoint {
                    region: Some(region("kernel")),
                    boundary: v1::Boundary::Exit as i32,
                    skip: 0,
                }),
            })
            .await
            .unwrap();
        setter
            .r#continue(v1::ContinueRequest {
                pid: target.pid,
                clear_halting_point: false,
            })
            .await
            .unwrap();
        // The target halts at the point while its owner is still connected...
        loop {
            let event = tokio::time::timeout(Duration::from_secs(10), events.next())
                .await
                .expect("the target never halted at the point")
                .unwrap()
                .unwrap();
            if let Some(v1::event::Kind::Halted(h)) = event.kind
                && h.state() == v1::TargetState::Halted
            {
                break;
            }
        }
    }
    // ... which then closes without anyone having received the halt.
    assert!(
        runs_to_its_end(&mut target, Duration::from_secs(10)),
        "the target stayed halted at the point of a connection that is gone"
    );
    daemon.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_point_of_a_closed_connection_is_taken_back_before_it_is_reached() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = start_daemon(dir.path()).await;
    let mut target = slow_target(dir.path());
    let mut observer = connect(&daemon, "observer").await;
    wait_listed(&mut observer, target.pid).await;
    {
        let mut setter = connect(&daemon, "setter").await;
        setter
            .set_halting_point(v1::SetHaltingPointRequest {
                pid: target.pid,
                point: Some(v1::HaltingPoint {
                    region: Some(region("kernel")),
                    boundary: v1::Boundary::Entry as i32,
                    skip: 19,
                }),
            })
            .await
            .unwrap();
    }
    // Give the daemon a moment to see the connection close, then let the target start.
    tokio::time::sleep(Duration::from_millis(200)).await;
    observer
        .r#continue(v1::ContinueRequest {
            pid: target.pid,
            clear_halting_point: false,
        })
        .await
        .unwrap();
    assert!(
        runs_to_its_end(&mut target, Duration::from_secs(10)),
        "the target halted at the point of a connection that is gone"
    );
    daemon.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn continue_to_the_end_of_a_running_target_clears_its_point() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = start_daemon(dir.path()).await;
    let mut target = slow_target(dir.path());
    let mut tool = connect(&daemon, "runner").await;
    wait_listed(&mut tool, target.pid).await;
    tool.r#continue(v1::ContinueRequest {
        pid: target.pid,
        clear_halting_point: false,
    })
    .await
    .unwrap();
    // Running, with a point ~400 ms ahead, armed by a connection that stays open.
    tool.set_halting_point(v1::SetHaltingPointRequest {
        pid: target.pid,
        point: Some(v1::HaltingPoint {
            region: Some(region("kernel")),
            boundary: v1::Boundary::Entry as i32,
            skip: 19,
        }),
    })
    .await
    .unwrap();
    let mut events = tool
        .watch(v1::WatchRequest { pid: target.pid })
        .await
        .unwrap()
        .into_inner();
    tool.r#continue(v1::ContinueRequest {
        pid: target.pid,
        clear_halting_point: true,
    })
    .await
    .expect("continue --to-end refused a running target");
    assert!(
        runs_to_its_end(&mut target, Duration::from_secs(10)),
        "the target halted after continue --to-end"
    );
    while let Some(event) = tokio::time::timeout(Duration::from_secs(5), events.next())
        .await
        .expect("the watch went quiet")
    {
        if let Some(v1::event::Kind::Halted(h)) = event.unwrap().kind {
            assert_ne!(h.state(), v1::TargetState::Halted, "it halted: {h:?}");
        }
    }
    daemon.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn continue_releases_a_target_whose_state_word_is_corrupted() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = start_daemon(dir.path()).await;
    let mut target = spawn_target(dir.path(), &[WAIT, ("EPCACHE_SYNTH_ITERATIONS", "3")]);
    let mut tool = connect(&daemon, "repair").await;
    let listed = wait_listed(&mut tool, target.pid).await;
    step_to_exit(&mut tool, target.pid, "kernel").await;
    // A fault injector overwrites the state word of the halted target.
    let segment = Segment::attach(listed.shm_id, Access::ReadWrite).unwrap();
    segment
        .view()
        .u32_at(header::TARGET_STATE)
        .unwrap()
        .store(0x5eed_f00d, std::sync::atomic::Ordering::Release);
    tool.r#continue(v1::ContinueRequest {
        pid: target.pid,
        clear_halting_point: false,
    })
    .await
    .expect("continue refused the target with a corrupted state word");
    assert!(
        runs_to_its_end(&mut target, Duration::from_secs(10)),
        "the target with a corrupted state word stayed halted"
    );
    drop(segment);
    daemon.shutdown().await;
}

/// A daemon whose halts last `lease` with no call naming their target.
async fn daemon_with_lease(dir: &std::path::Path, lease: Duration) -> epcache_daemon::DaemonHandle {
    epcache_daemon::serve(epcache_daemon::Config {
        discovery_interval: Duration::from_millis(50),
        halt_lease: lease,
        ..epcache_daemon::Config::private(dir)
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delivered_halt_lasts_while_a_tool_calls_and_ends_with_the_lease() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = daemon_with_lease(dir.path(), Duration::from_secs(1)).await;
    let mut target = slow_target(dir.path());
    let mut tool = connect(&daemon, "stepper").await;
    wait_listed(&mut tool, target.pid).await;
    let halt = step_to_exit(&mut tool, target.pid, "kernel").await;
    assert_eq!(halt.lease_seconds, 1, "{halt:?}");
    // A tool that keeps asking about the target keeps it halted, three leases long.
    for _ in 0..12 {
        tokio::time::sleep(Duration::from_millis(250)).await;
        let described = tool
            .describe_target(v1::DescribeTargetRequest { pid: target.pid })
            .await
            .unwrap()
            .into_inner();
        let state = described.target.unwrap().state();
        assert_eq!(
            state,
            v1::TargetState::Halted,
            "released while a tool called"
        );
    }
    assert!(target.child.try_wait().unwrap().is_none(), "it ran on");
    // The tool goes quiet (it died, or its user walked away): the daemon lets the target go.
    assert!(
        runs_to_its_end(&mut target, Duration::from_secs(10)),
        "the target stayed halted after its lease ran out"
    );
    daemon.shutdown().await;
}
