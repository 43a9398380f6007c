//! The MRI end to end: a real daemon on a Unix socket, real target processes (this binary run again
//! as the synthetic program), raw gRPC clients. Expected counts are worked out by hand in
//! `epcache_test_support::synthetic`.

use std::time::Duration;

use epcache_proto::v1;
use tokio_stream::StreamExt;
use tonic::Code;

use crate::support::synthetic::{A_BYTES, A_ELEMENTS, A_LINES, REGIONS, SPEC};
use crate::support::*;

const WAIT: (&str, &str) = ("EPCACHE_WAIT", "20");

fn results_by_id(results: &[v1::RequestResult], id: u64) -> &v1::RequestResult {
    results
        .iter()
        .find(|r| r.request.as_ref().unwrap().id == id)
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ep_cache_scenario_histogram_sums_to_the_static_count() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = start_daemon(dir.path()).await;
    let mut target = spawn_target(dir.path(), &[WAIT, ("EPCACHE_SYNTH_ITERATIONS", "3")]);
    let mut tool = connect(&daemon, "scenario").await;
    let listed = wait_listed(&mut tool, target.pid).await;
    assert_eq!(listed.program, "synthetic");
    assert_eq!(listed.state(), v1::TargetState::WaitingForTool);

    let d = tool
        .describe_target(v1::DescribeTargetRequest { pid: target.pid })
        .await
        .unwrap()
        .into_inner();
    let names: Vec<_> = d.regions.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, REGIONS);
    assert_eq!(
        d.regions[2].key,
        Some(v1::RegionKey {
            file_id: 1,
            line: 30
        })
    );
    assert_eq!(d.regions[2].kind(), v1::RegionKind::Marker);
    let a = &d.data_structures[0];
    assert_eq!(a.name, "A");
    let range = a.range.unwrap();
    assert_eq!(range.end - range.start, A_BYTES);
    assert_eq!(range.start % 64, 0);
    let model = d.model.unwrap();
    assert_eq!(
        model.spec,
        SPEC.parse::<epcache_sim::cache::HierarchySpec>()
            .unwrap()
            .to_string()
    );
    assert_eq!(model.counters, 64);
    assert_eq!(model.levels.len(), 2);
    assert!(d.events.iter().any(|e| e.name == "PAPI_L1_LDM"));
    assert!(d.events.iter().any(|e| e.name == "PAPI_L2_DCM"));

    // The paper's request: L1 read misses over A during the kernel, in 25 portions, and the same
    // as one static count; and read hits, to check the other side of the outcome.
    let placed = tool
        .add_requests(v1::AddRequestsRequest {
            pid: target.pid,
            requests: vec![
                histogram_request("kernel", "A", "PAPI_L1_LDM", 25),
                static_request("kernel", "A", "PAPI_L1_LDM"),
                static_request("kernel", "A", "EPC_L1_LDH"),
            ],
        })
        .await
        .unwrap()
        .into_inner()
        .requests;
    assert_eq!((placed[0].buckets, placed[0].bucket_bytes), (25, 1600));
    assert_eq!(placed[0].owner, "scenario");
    assert_eq!(placed[0].region.as_ref().unwrap().name, "kernel");
    let (hist, misses, hits) = (placed[0].id, placed[1].id, placed[2].id);

    let halt = step_to_exit(&mut tool, target.pid, "kernel").await;
    assert_eq!(halt.state(), v1::TargetState::Halted);
    let at = halt.position.unwrap();
    assert_eq!(
        (at.region_name.as_str(), at.boundary()),
        ("kernel", v1::Boundary::Exit)
    );

    let results = tool
        .read_results(v1::ReadResultsRequest {
            pid: target.pid,
            ids: vec![],
        })
        .await
        .unwrap()
        .into_inner()
        .results;
    let h = results_by_id(&results, hist);
    let s = results_by_id(&results, misses);
    assert!(h.available && s.available);
    assert_eq!(s.total, A_LINES, "one miss per line of A in a cold sweep");
    assert_eq!(h.buckets.len(), 25);
    assert!(
        h.buckets.iter().all(|b| b.count == A_LINES / 25),
        "{:?}",
        h.buckets
    );
    assert_eq!(h.buckets.iter().map(|b| b.count).sum::<u64>(), s.total);
    assert_eq!(h.total, s.total);
    let mut next = range.start;
    for b in &h.buckets {
        let r = b.range.unwrap();
        assert_eq!((r.start, r.end - r.start), (next, 1600));
        next = r.end;
    }
    assert_eq!(next, range.end);
    assert_eq!(results_by_id(&results, hits).total, A_ELEMENTS - A_LINES);
    assert_eq!(h.instances, 1);

    // Let it finish; the watch stream sees the summed results, then the exit.
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
    .unwrap();
    let mut last_total = 0;
    let mut exit = None;
    while let Some(event) = tokio::time::timeout(Duration::from_secs(20), events.next())
        .await
        .expect("the watch stream went quiet")
    {
        match event.unwrap().kind.unwrap() {
            v1::event::Kind::Result(r) if r.request.as_ref().unwrap().id == misses => {
                last_total = r.total
            }
            v1::event::Kind::Exited(e) => exit = Some(e),
            _ => {}
        }
    }
    let exit = exit.expect("the stream ends with the exit");
    assert!(!exit.died, "{exit:?}");
    assert_eq!(last_total, 3 * A_LINES);
    assert!(target.wait_for_exit(Duration::from_secs(10)).success());

    // An ended target's last results stay readable.
    let results = tool
        .read_results(v1::ReadResultsRequest {
            pid: target.pid,
            ids: vec![hist],
        })
        .await
        .unwrap()
        .into_inner()
        .results;
    assert_eq!(results[0].instances, 3);
    assert_eq!(results[0].total, 3 * A_LINES);
    let listed = wait_listed(&mut tool, target.pid).await;
    assert_eq!(listed.state(), v1::TargetState::Exited);
    daemon.shutdown().await;
}

/// Issue 25: requests on an allocation site placed before the target allocated there bind in
/// the target when the region is entered, and say so (binding BOUND, the block's bytes and the
/// buckets cut over them); one on a line that never allocates stays WAITING to the end, in the
/// results and in the description; a file the target has no code in is refused by name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allocation_site_requests_bind_in_the_target_or_say_they_never_did() {
    use crate::support::synthetic::{SCRATCH, SCRATCH_BYTES, SCRATCH_SITE};
    let dir = tempfile::tempdir().unwrap();
    let daemon = start_daemon(dir.path()).await;
    let mut target = spawn_target(
        dir.path(),
        &[WAIT, ("EPCACHE_SYNTH_ITERATIONS", "2"), (SCRATCH, "1")],
    );
    let mut tool = connect(&daemon, "sites").await;
    wait_listed(&mut tool, target.pid).await;
    let (file, line) = SCRATCH_SITE;
    let site = format!("{file}:{line}");
    let never = format!("{file}:{}", line + 1);
    let placed = tool
        .add_requests(v1::AddRequestsRequest {
            pid: target.pid,
            requests: vec![
                histogram_request("idle", &site, "PAPI_L1_LDM", 4),
                static_request("idle", &never, "PAPI_L1_LDM"),
            ],
        })
        .await
        .unwrap()
        .into_inner()
        .requests;
    assert_eq!(placed[0].binding(), v1::Binding::Waiting);
    assert_eq!(placed[0].bucket_bytes, 0, "cut once bound");
    assert_eq!(
        placed[0].allocation_site,
        Some(v1::AllocationSite {
            file: file.into(),
            line
        })
    );
    let status = tool
        .add_requests(v1::AddRequestsRequest {
            pid: target.pid,
            requests: vec![static_request("idle", "other.f90:3", "PAPI_L1_LDM")],
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::NotFound);
    assert!(
        status.message().contains("nearest: synthetic.f90"),
        "{}",
        status.message()
    );

    tool.r#continue(v1::ContinueRequest {
        pid: target.pid,
        clear_halting_point: true,
    })
    .await
    .unwrap();
    assert!(target.wait_for_exit(Duration::from_secs(20)).success());
    let results = tool
        .read_results(v1::ReadResultsRequest {
            pid: target.pid,
            ids: vec![],
        })
        .await
        .unwrap()
        .into_inner()
        .results;
    let bound = results_by_id(&results, placed[0].id);
    let info = bound.request.as_ref().unwrap();
    assert_eq!(info.binding(), v1::Binding::Bound);
    assert_eq!(info.data_structure.as_ref().unwrap().name, site);
    let range = info.range.unwrap();
    assert_eq!(range.end - range.start, SCRATCH_BYTES);
    assert_eq!((info.buckets, info.bucket_bytes), (4, SCRATCH_BYTES / 4));
    assert_eq!(bound.instances, 2);
    assert_eq!(
        bound.total,
        2 * SCRATCH_BYTES / 32,
        "every line missed in each idle"
    );
    assert_eq!(
        bound.buckets.iter().map(|b| b.count).sum::<u64>(),
        bound.total
    );
    // Served at each of its region's instances, over no bytes: nothing counted, unbound.
    let unbound = results_by_id(&results, placed[1].id);
    assert!(unbound.available);
    assert_eq!((unbound.instances, unbound.total), (2, 0));
    assert_eq!(
        unbound.request.as_ref().unwrap().binding(),
        v1::Binding::Waiting
    );
    let described = tool
        .describe_target(v1::DescribeTargetRequest { pid: target.pid })
        .await
        .unwrap()
        .into_inner()
        .requests;
    let states: Vec<_> = described.iter().map(|r| (r.id, r.binding())).collect();
    assert!(
        states.contains(&(placed[0].id, v1::Binding::Bound)),
        "{states:?}"
    );
    assert!(
        states.contains(&(placed[1].id, v1::Binding::Waiting)),
        "{states:?}"
    );
    daemon.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_added_mid_run_are_served_from_the_next_instance() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = start_daemon(dir.path()).await;
    // Runs on its own, forever, with no tool holding it.
    let mut target = spawn_target(
        dir.path(),
        &[
            ("EPCACHE_SYNTH_ITERATIONS", "0"),
            ("EPCACHE_SYNTH_PAUSE_MS", "2"),
        ],
    );
    let mut tool = connect(&daemon, "late").await;
    wait_listed(&mut tool, target.pid).await;
    let mut events = tool
        .watch(v1::WatchRequest { pid: target.pid })
        .await
        .unwrap()
        .into_inner();
    let placed = tool
        .add_requests(v1::AddRequestsRequest {
            pid: target.pid,
            requests: vec![static_request("kernel", "A", "PAPI_L1_LDM")],
        })
        .await
        .unwrap()
        .into_inner()
        .requests;
    let id = placed[0].id;
    // Results arrive by themselves, without a halt, and grow by one instance at a time.
    let mut seen = Vec::new();
    while seen.len() < 2 {
        let event = tokio::time::timeout(Duration::from_secs(10), events.next())
            .await
            .expect("no result arrived")
            .unwrap()
            .unwrap();
        if let Some(v1::event::Kind::Result(r)) = event.kind {
            assert_eq!(r.request.as_ref().unwrap().id, id);
            assert_eq!(r.total, r.instances * A_LINES, "{r:?}");
            seen.push(r.instances);
        }
    }
    assert!(seen[1] > seen[0], "{seen:?}");

    // Cancel: no more updates for it; the program runs on.
    let cancelled = tool
        .cancel_requests(v1::CancelRequestsRequest {
            pid: target.pid,
            ids: vec![],
        })
        .await
        .unwrap()
        .into_inner()
        .cancelled;
    assert_eq!(cancelled, [id]);
    assert!(target.child.try_wait().unwrap().is_none());

    // Terminate sends SIGTERM; the daemon reports a death (no normal exit ran).
    tool.terminate(v1::TerminateRequest { pid: target.pid })
        .await
        .unwrap();
    let status = target.wait_for_exit(Duration::from_secs(10));
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(15));
    let exit = loop {
        let event = tokio::time::timeout(Duration::from_secs(10), events.next())
            .await
            .expect("no exit event")
            .expect("stream ended before the exit")
            .unwrap();
        if let Some(v1::event::Kind::Exited(e)) = event.kind {
            break e;
        }
    };
    assert!(exit.died, "{exit:?}");
    assert!(
        events.next().await.is_none(),
        "the stream ends after the exit"
    );
    let err = tool
        .terminate(v1::TerminateRequest { pid: target.pid })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::FailedPrecondition, "{err}");
    daemon.shutdown().await;
}

/// A target the daemon finds while it registers (`Starting`) and that then runs on its own
/// leaves `Starting` in the listing too, with no halt to announce it: tools wait past
/// `Starting`, and waited forever whenever the scan caught a target registering.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_target_found_while_starting_is_listed_running_once_it_runs() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = start_daemon(dir.path()).await;
    let target = spawn_target(
        dir.path(),
        &[
            (crate::support::synthetic::SETUP_MS, "2000"),
            ("EPCACHE_SYNTH_ITERATIONS", "0"),
            ("EPCACHE_SYNTH_PAUSE_MS", "2"),
        ],
    );
    let mut tool = connect(&daemon, "early").await;
    // Found during the setup: listed `Starting` first.
    let first = loop {
        let targets = tool
            .list_targets(v1::ListTargetsRequest {})
            .await
            .unwrap()
            .into_inner()
            .targets;
        if let Some(t) = targets.into_iter().find(|t| t.pid == target.pid) {
            break t;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(first.state(), v1::TargetState::Starting);
    let listed = wait_listed(&mut tool, target.pid).await;
    assert_eq!(listed.state(), v1::TargetState::Running);
    daemon.shutdown().await;
}

/// A target released from its start wait runs on, and is listed so: no halt announces it, and
/// the daemon kept listing the last halt (here the start wait) for the rest of the run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_released_target_is_listed_running() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = start_daemon(dir.path()).await;
    let target = spawn_target(
        dir.path(),
        &[
            WAIT,
            ("EPCACHE_SYNTH_ITERATIONS", "0"),
            ("EPCACHE_SYNTH_PAUSE_MS", "2"),
        ],
    );
    let mut tool = connect(&daemon, "releaser").await;
    let waiting = wait_listed(&mut tool, target.pid).await;
    assert_eq!(waiting.state(), v1::TargetState::WaitingForTool);
    tool.r#continue(v1::ContinueRequest {
        pid: target.pid,
        clear_halting_point: false,
    })
    .await
    .unwrap();
    let started = std::time::Instant::now();
    loop {
        let listed = tool
            .list_targets(v1::ListTargetsRequest {})
            .await
            .unwrap()
            .into_inner()
            .targets
            .into_iter()
            .find(|t| t.pid == target.pid)
            .unwrap();
        if listed.state() == v1::TargetState::Running {
            assert_eq!(listed.halted_at, None, "{listed:?}");
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "still listed {listed:?} after its release"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    daemon.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn several_tools_and_targets_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = start_daemon(dir.path()).await;
    let mut one = spawn_target(dir.path(), &[WAIT, ("EPCACHE_SYNTH_ITERATIONS", "2")]);
    let mut two = spawn_target(dir.path(), &[WAIT, ("EPCACHE_SYNTH_ITERATIONS", "1")]);
    let mut stepper = connect(&daemon, "stepper").await;
    let mut counter = connect(&daemon, "counter").await;
    let mut watcher = connect(&daemon, "watcher").await;
    wait_listed(&mut stepper, one.pid).await;
    wait_listed(&mut stepper, two.pid).await;
    let all = watcher
        .list_targets(v1::ListTargetsRequest {})
        .await
        .unwrap()
        .into_inner()
        .targets;
    assert_eq!(all.len(), 2);

    let mut stream = watcher
        .watch(v1::WatchRequest { pid: one.pid })
        .await
        .unwrap()
        .into_inner();
    let first = stream.next().await.unwrap().unwrap();
    assert!(
        matches!(first.kind, Some(v1::event::Kind::Target(_))),
        "{first:?}"
    );

    let mine = stepper
        .add_requests(v1::AddRequestsRequest {
            pid: one.pid,
            requests: vec![histogram_request("kernel", "A", "PAPI_L1_LDM", 10)],
        })
        .await
        .unwrap()
        .into_inner()
        .requests[0]
        .id;
    let theirs = counter
        .add_requests(v1::AddRequestsRequest {
            pid: one.pid,
            requests: vec![
                static_request("init", "A", "PAPI_L1_STM"),
                static_request("init", "A", "PAPI_L1_DCW"),
            ],
        })
        .await
        .unwrap()
        .into_inner()
        .requests;
    // The other target, driven by the counter at the same time.
    let other = counter
        .add_requests(v1::AddRequestsRequest {
            pid: two.pid,
            requests: vec![static_request("kernel", "A", "PAPI_L1_DCR")],
        })
        .await
        .unwrap()
        .into_inner()
        .requests[0]
        .id;
    let (halt, _) = tokio::join!(
        step_to_exit(&mut stepper, one.pid, "kernel"),
        step_to_exit(&mut counter, two.pid, "kernel"),
    );
    assert_eq!(halt.position.unwrap().region_name, "kernel");

    // The watcher saw the results of init and the kernel before the halt at the kernel's exit.
    let mut results_before_halt = std::collections::HashSet::new();
    loop {
        let event = tokio::time::timeout(Duration::from_secs(10), stream.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        match event.kind.unwrap() {
            v1::event::Kind::Result(r) => {
                results_before_halt.insert(r.request.unwrap().id);
            }
            v1::event::Kind::Halted(h)
                if h.position
                    .as_ref()
                    .is_some_and(|p| p.region_name == "kernel") =>
            {
                break;
            }
            _ => {}
        }
    }
    assert!(
        results_before_halt.contains(&mine),
        "{results_before_halt:?}"
    );
    assert!(
        results_before_halt.contains(&theirs[0].id),
        "{results_before_halt:?}"
    );

    let read = counter
        .read_results(v1::ReadResultsRequest {
            pid: one.pid,
            ids: vec![theirs[0].id, theirs[1].id],
        })
        .await
        .unwrap()
        .into_inner()
        .results;
    assert_eq!(
        read[0].total, A_LINES,
        "write-allocate: one write miss per line"
    );
    assert_eq!(read[1].total, A_ELEMENTS);
    let read = counter
        .read_results(v1::ReadResultsRequest {
            pid: two.pid,
            ids: vec![other],
        })
        .await
        .unwrap()
        .into_inner()
        .results;
    assert_eq!(read[0].total, A_ELEMENTS);

    // The stepper leaves: its request goes, the counter's stay, the target is let go.
    let detached = stepper
        .detach(v1::DetachRequest { pid: one.pid })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(detached.cancelled, [mine]);
    assert!(detached.cleared_halting_point && detached.released);
    let d = watcher
        .describe_target(v1::DescribeTargetRequest { pid: one.pid })
        .await
        .unwrap()
        .into_inner();
    let left: Vec<u64> = d.requests.iter().map(|r| r.id).collect();
    assert_eq!(left, [theirs[0].id, theirs[1].id]);
    assert!(one.wait_for_exit(Duration::from_secs(10)).success());
    counter
        .r#continue(v1::ContinueRequest {
            pid: two.pid,
            clear_halting_point: true,
        })
        .await
        .unwrap();
    assert!(two.wait_for_exit(Duration::from_secs(10)).success());
    daemon.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_get_the_right_status_and_the_target_runs_on() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = start_daemon(dir.path()).await;
    let mut target = spawn_target(dir.path(), &[WAIT, ("EPCACHE_SYNTH_ITERATIONS", "3")]);
    let mut tool = connect(&daemon, "careless").await;
    wait_listed(&mut tool, target.pid).await;
    let pid = target.pid;
    let good = tool
        .add_requests(v1::AddRequestsRequest {
            pid,
            requests: vec![static_request("kernel", "A", "PAPI_L1_LDM")],
        })
        .await
        .unwrap()
        .into_inner()
        .requests[0]
        .id;

    let refuse = |requests: Vec<v1::MonitoringRequest>| v1::AddRequestsRequest { pid, requests };
    let refuser = tool.clone();
    let bad = |r| {
        let mut t = refuser.clone();
        async move { t.add_requests(r).await.unwrap_err() }
    };
    let e = bad(refuse(vec![static_request("kernal", "A", "PAPI_L1_LDM")])).await;
    assert_eq!(e.code(), Code::NotFound, "{e}");
    assert!(
        e.message().contains("no region `kernal`") && e.message().contains("nearest: kernel"),
        "{e}"
    );
    let e = bad(refuse(vec![static_request("kernel", "B", "PAPI_L1_LDM")])).await;
    assert_eq!(e.code(), Code::NotFound, "{e}");
    assert!(e.message().contains("nearest: A"), "{e}");
    let e = bad(refuse(vec![static_request("kernel", "A", "PAPI_L1_XYZ")])).await;
    assert_eq!(e.code(), Code::InvalidArgument, "{e}");
    assert!(e.message().contains("unknown event"), "{e}");
    let e = bad(refuse(vec![static_request("kernel", "A", "PAPI_L3_LDM")])).await;
    assert_eq!(e.code(), Code::InvalidArgument, "{e}");
    // A coherence event on a target whose threads are no machine's cores would count nothing.
    let e = bad(refuse(vec![static_request("kernel", "A", "EPC_L1_FSM")])).await;
    assert_eq!(e.code(), Code::FailedPrecondition, "{e}");
    assert!(
        e.message().contains("hierarchy of their own") && e.message().contains("EPCACHE_CORES=N"),
        "{e}"
    );
    // 1,250 one-line buckets: more than the target's 1,024 per request.
    let e = bad(refuse(vec![histogram_request(
        "kernel",
        "A",
        "PAPI_L1_LDM",
        5000,
    )]))
    .await;
    assert_eq!(e.code(), Code::InvalidArgument, "{e}");
    assert!(e.message().contains("buckets"), "{e}");
    let mut empty = static_request("kernel", "A", "PAPI_L1_LDM");
    empty.data = Some(v1::DataSelector {
        by: Some(v1::data_selector::By::Range(v1::AddressRange {
            start: 64,
            end: 64,
        })),
    });
    let e = bad(refuse(vec![empty])).await;
    assert_eq!(e.code(), Code::InvalidArgument, "{e}");
    // All or none: a good request beside a bad one is not placed either.
    let e = bad(refuse(vec![
        static_request("init", "A", "PAPI_L1_STM"),
        static_request("nowhere", "A", "PAPI_L1_STM"),
    ]))
    .await;
    assert!(
        e.message().starts_with("the call's request 2 of 2: "),
        "{e}"
    );
    let e = tool
        .describe_target(v1::DescribeTargetRequest { pid: 999_999_999 })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::NotFound, "{e}");
    let e = tool
        .cancel_requests(v1::CancelRequestsRequest {
            pid,
            ids: vec![12345],
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::NotFound, "{e}");
    let e = tool
        .step(v1::StepRequest {
            pid,
            until: Some(v1::step_request::Until::RegionExit(region("nope"))),
            count: 1,
            timeout_ms: 0,
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::NotFound, "{e}");
    // Fill every slot: the next request is refused as resource exhaustion, then they go again.
    let many: Vec<_> = (0..63)
        .map(|_| static_request("idle", "x", "PAPI_L1_DCA"))
        .collect();
    let filled = tool
        .add_requests(refuse(many))
        .await
        .unwrap()
        .into_inner()
        .requests;
    let e = bad(refuse(vec![static_request("idle", "x", "PAPI_L1_DCA")])).await;
    assert_eq!(e.code(), Code::ResourceExhausted, "{e}");
    tool.cancel_requests(v1::CancelRequestsRequest {
        pid,
        ids: filled.iter().map(|r| r.id).collect(),
    })
    .await
    .unwrap();
    let d = tool
        .describe_target(v1::DescribeTargetRequest { pid })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(d.requests.iter().map(|r| r.id).collect::<Vec<_>>(), [good]);

    // Untouched: the program runs to its end and the good request measured every instance.
    tool.r#continue(v1::ContinueRequest {
        pid,
        clear_halting_point: true,
    })
    .await
    .unwrap();
    let e = tool
        .r#continue(v1::ContinueRequest {
            pid,
            clear_halting_point: false,
        })
        .await;
    if let Err(e) = e {
        assert_eq!(e.code(), Code::FailedPrecondition, "{e}");
    }
    assert!(target.wait_for_exit(Duration::from_secs(10)).success());
    let started = std::time::Instant::now();
    loop {
        let r = tool
            .read_results(v1::ReadResultsRequest {
                pid,
                ids: vec![good],
            })
            .await
            .unwrap()
            .into_inner()
            .results;
        if r[0].instances == 3 {
            assert_eq!(r[0].total, 3 * A_LINES);
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(5), "{r:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Once it ended, calls that need a live target say so.
    loop {
        let t = wait_listed(&mut tool, pid).await;
        if t.state() == v1::TargetState::Exited {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let e = bad(refuse(vec![static_request("kernel", "A", "PAPI_L1_LDM")])).await;
    assert_eq!(e.code(), Code::FailedPrecondition, "{e}");
    assert!(e.message().contains("exited"), "{e}");
    daemon.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_target_that_cannot_simulate_refuses_requests_with_its_own_complaint() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = start_daemon(dir.path()).await;
    // What the runtime publishes when EPCACHE_CACHE does not parse.
    let complaint = "epcache: cannot simulate the cache `D1=32K,8,60` (from EPCACHE_CACHE): the line size 60 is not a power of two";
    let target = spawn_target(
        dir.path(),
        &[WAIT, (crate::support::synthetic::MODEL_TEXT, complaint)],
    );
    let mut tool = connect(&daemon, "hopeful").await;
    wait_listed(&mut tool, target.pid).await;
    let pid = target.pid;
    let described = tool
        .describe_target(v1::DescribeTargetRequest { pid })
        .await
        .unwrap()
        .into_inner();
    assert!(described.model.is_none(), "no model to show");
    // Said as the target said it, once: no second `epcache: ` inside.
    assert_eq!(
        described.cache_error,
        complaint.strip_prefix("epcache: ").unwrap()
    );
    assert!(described.regions.iter().any(|r| r.name == "kernel"));
    let e = tool
        .add_requests(v1::AddRequestsRequest {
            pid,
            requests: vec![static_request("kernel", "A", "PAPI_L1_LDM")],
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::FailedPrecondition, "{e}");
    assert!(
        e.message().contains("cannot simulate")
            && e.message().contains("line size 60")
            && !e.message().contains("epcache: "),
        "{e}"
    );
    drop(target);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_target_that_dies_or_exits_while_a_tool_waits_ends_the_wait() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = start_daemon(dir.path()).await;
    // Killed: runs forever, the tool waits for an exit of `main` that never comes.
    let mut doomed = spawn_target(
        dir.path(),
        &[
            WAIT,
            ("EPCACHE_SYNTH_ITERATIONS", "0"),
            ("EPCACHE_SYNTH_PAUSE_MS", "1"),
        ],
    );
    let mut tool = connect(&daemon, "patient").await;
    wait_listed(&mut tool, doomed.pid).await;
    let e = tool
        .step(v1::StepRequest {
            pid: doomed.pid,
            until: Some(v1::step_request::Until::RegionExit(region("main"))),
            count: 1,
            timeout_ms: 300,
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::DeadlineExceeded, "{e}");
    let mut events = tool
        .watch(v1::WatchRequest { pid: doomed.pid })
        .await
        .unwrap()
        .into_inner();
    let pid = doomed.pid;
    let mut waiting = tool.clone();
    let step = tokio::spawn(async move {
        waiting
            .step(v1::StepRequest {
                pid,
                until: Some(v1::step_request::Until::RegionExit(region("main"))),
                count: 1,
                timeout_ms: 0,
            })
            .await
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let killed = std::time::Instant::now();
    doomed.child.kill().unwrap();
    let reply = tokio::time::timeout(Duration::from_secs(5), step)
        .await
        .expect("the step hung after the target died")
        .unwrap()
        .unwrap()
        .into_inner();
    match reply.outcome {
        Some(v1::step_response::Outcome::Exited(e)) => assert!(e.died, "{e:?}"),
        other => panic!("expected the target's death, got {other:?}"),
    }
    println!(
        "death reported to the stepping tool after {:?}",
        killed.elapsed()
    );
    let mut died = false;
    while let Some(event) = tokio::time::timeout(Duration::from_secs(5), events.next())
        .await
        .expect("the watch hung after the target died")
    {
        if let Some(v1::event::Kind::Exited(e)) = event.unwrap().kind {
            died = e.died;
        }
    }
    assert!(died);

    // Exits normally while the tool waits for a point it will never reach again.
    let mut finishing = spawn_target(dir.path(), &[WAIT, ("EPCACHE_SYNTH_ITERATIONS", "2")]);
    wait_listed(&mut tool, finishing.pid).await;
    let reply = tool
        .step(v1::StepRequest {
            pid: finishing.pid,
            until: Some(v1::step_request::Until::RegionEntry(region("main"))),
            count: 2,
            timeout_ms: 20_000,
        })
        .await
        .unwrap()
        .into_inner();
    match reply.outcome {
        Some(v1::step_response::Outcome::Exited(e)) => assert!(!e.died, "{e:?}"),
        other => panic!("expected the target's exit, got {other:?}"),
    }
    assert!(finishing.wait_for_exit(Duration::from_secs(10)).success());
    // A step on the ended target says how it ended, as the waiting one was told.
    let reply = tool
        .step(v1::StepRequest {
            pid: finishing.pid,
            until: None,
            count: 1,
            timeout_ms: 5_000,
        })
        .await
        .unwrap()
        .into_inner();
    match reply.outcome {
        Some(v1::step_response::Outcome::Exited(e)) => assert!(!e.died, "{e:?}"),
        other => panic!("expected the ended target's exit, got {other:?}"),
    }
    daemon.shutdown().await;
}

/// A step whose halting point another tool replaced while it waited does not take the other's
/// halt for its own: it fails (ABORTED), saying where the target halted and whose point that
/// was, and the other tool's step receives the halt.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_whose_point_another_tool_replaced_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = start_daemon(dir.path()).await;
    let target = spawn_target(dir.path(), &[WAIT, ("EPCACHE_SYNTH_ITERATIONS", "1000000")]);
    let mut first = connect(&daemon, "first").await;
    let mut second = connect(&daemon, "second").await;
    wait_listed(&mut first, target.pid).await;
    let pid = target.pid;
    // Far ahead: the millionth entry of `idle`.
    let waiting = tokio::spawn(async move {
        first
            .step(v1::StepRequest {
                pid,
                until: Some(v1::step_request::Until::RegionEntry(region("idle"))),
                count: 1_000_000,
                timeout_ms: 20_000,
            })
            .await
    });
    // The first step arms its point, then lets the start wait go: once the target runs, its
    // point is armed. Only then may the second step replace it; a first step arriving after
    // the second would replace the second's point instead.
    let started = std::time::Instant::now();
    loop {
        let running = second
            .list_targets(v1::ListTargetsRequest {})
            .await
            .unwrap()
            .into_inner()
            .targets
            .iter()
            .any(|t| t.pid == pid && t.state() == v1::TargetState::Running);
        if running {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the first step never let the target run"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let reply = second
        .step(v1::StepRequest {
            pid,
            until: Some(v1::step_request::Until::RegionEntry(region("kernel"))),
            count: 1,
            timeout_ms: 10_000,
        })
        .await
        .unwrap()
        .into_inner();
    let Some(v1::step_response::Outcome::Halted(h)) = reply.outcome else {
        panic!("the second step did not halt: {reply:?}");
    };
    assert_eq!(h.position.unwrap().region_name, "kernel");
    let replaced = waiting.await.unwrap().unwrap_err();
    assert_eq!(replaced.code(), Code::Aborted, "{replaced:?}");
    assert!(
        replaced
            .message()
            .contains("halted at the entry of region `kernel`")
            && replaced.message().contains("tool `second`"),
        "{}",
        replaced.message()
    );
    drop(target);
    daemon.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stepping_visits_every_boundary_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = start_daemon(dir.path()).await;
    let mut target = spawn_target(dir.path(), &[WAIT, ("EPCACHE_SYNTH_ITERATIONS", "1")]);
    let mut tool = connect(&daemon, "stepper").await;
    wait_listed(&mut tool, target.pid).await;
    let mut visited = Vec::new();
    loop {
        let reply = tool
            .step(v1::StepRequest {
                pid: target.pid,
                until: None,
                count: 1,
                timeout_ms: 10_000,
            })
            .await
            .unwrap()
            .into_inner();
        match reply.outcome.unwrap() {
            v1::step_response::Outcome::Halted(h) => {
                let p = h.position.unwrap();
                visited.push(format!(
                    "{}:{}",
                    p.region_name,
                    if p.boundary() == v1::Boundary::Entry {
                        "in"
                    } else {
                        "out"
                    }
                ));
            }
            v1::step_response::Outcome::Exited(e) => {
                assert!(!e.died);
                break;
            }
        }
    }
    assert_eq!(
        visited,
        [
            "main:in",
            "init:in",
            "init:out",
            "kernel:in",
            "kernel:out",
            "idle:in",
            "idle:out",
            "main:out"
        ]
    );
    assert!(target.wait_for_exit(Duration::from_secs(10)).success());

    // N boundaries on: from the start, the fourth boundary is the kernel's entry.
    let mut target = spawn_target(dir.path(), &[WAIT, ("EPCACHE_SYNTH_ITERATIONS", "1")]);
    wait_listed(&mut tool, target.pid).await;
    let reply = tool
        .step(v1::StepRequest {
            pid: target.pid,
            until: None,
            count: 4,
            timeout_ms: 10_000,
        })
        .await
        .unwrap()
        .into_inner();
    let Some(v1::step_response::Outcome::Halted(h)) = reply.outcome else {
        panic!("{reply:?}");
    };
    let p = h.position.unwrap();
    assert_eq!(
        (p.region_name.as_str(), p.boundary()),
        ("kernel", v1::Boundary::Entry)
    );
    // A halting point set on its own, then continue: it stops there.
    tool.set_halting_point(v1::SetHaltingPointRequest {
        pid: target.pid,
        point: Some(v1::HaltingPoint {
            region: Some(region("main")),
            boundary: v1::Boundary::Exit as i32,
            skip: 0,
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
        clear_halting_point: false,
    })
    .await
    .unwrap();
    loop {
        let event = tokio::time::timeout(Duration::from_secs(10), events.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        if let Some(v1::event::Kind::Halted(h)) = event.kind
            && h.position.as_ref().is_some_and(|p| p.region_name == "main")
        {
            assert_eq!(h.position.unwrap().boundary(), v1::Boundary::Exit);
            break;
        }
    }
    tool.r#continue(v1::ContinueRequest {
        pid: target.pid,
        clear_halting_point: true,
    })
    .await
    .unwrap();
    assert!(target.wait_for_exit(Duration::from_secs(10)).success());
    daemon.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_analysis_request_returns_its_report() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = start_daemon(dir.path()).await;
    let mut target = spawn_target(dir.path(), &[WAIT, ("EPCACHE_SYNTH_ITERATIONS", "1")]);
    let mut tool = connect(&daemon, "analyst").await;
    wait_listed(&mut tool, target.pid).await;
    let mut request = static_request("kernel", "A", "PAPI_L1_DCM");
    request.analyses = vec![v1::Analysis::MissClasses as i32];
    let id = tool
        .add_requests(v1::AddRequestsRequest {
            pid: target.pid,
            requests: vec![request],
        })
        .await
        .unwrap()
        .into_inner()
        .requests[0]
        .id;
    step_to_exit(&mut tool, target.pid, "kernel").await;
    let r = tool
        .read_results(v1::ReadResultsRequest {
            pid: target.pid,
            ids: vec![id],
        })
        .await
        .unwrap()
        .into_inner()
        .results
        .remove(0);
    assert!(r.available, "{r:?}");
    let report = r.analysis.expect("a typed analysis report");
    assert_eq!(report.level_name, "D1");
    let classes = report.miss_classes.expect("miss classes were asked for");
    // The classes split the level's misses since the analyses started at the kernel's entry:
    // one per line of A, every one new to the analysis's shadow cache.
    assert_eq!(
        classes.compulsory + classes.capacity + classes.conflict,
        A_LINES
    );
    assert_eq!(classes.compulsory, A_LINES);
    assert_eq!(report.ranges.len(), 1);
    tool.detach(v1::DetachRequest { pid: target.pid })
        .await
        .unwrap();
    assert!(target.wait_for_exit(Duration::from_secs(10)).success());
    daemon.shutdown().await;
}

/// A histogram with analyses keeps its histogram: the buckets sum to its total and to the
/// static count of the same range and event, and the report comes beside them, typed. (Before,
/// the report was packed as text into the bucket words: 0 buckets, total 0, and the report a
/// JSON string inside the message.) A per-thread request of the one-thread program gives one
/// row, with the thread's id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_histogram_with_analyses_returns_its_buckets_and_a_typed_report() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = start_daemon(dir.path()).await;
    let mut target = spawn_target(dir.path(), &[WAIT, ("EPCACHE_SYNTH_ITERATIONS", "1")]);
    let mut tool = connect(&daemon, "analyst").await;
    wait_listed(&mut tool, target.pid).await;
    let mut histogram = histogram_request("kernel", "A", "PAPI_L1_LDM", 25);
    histogram.analyses = vec![
        v1::Analysis::Reuse as i32,
        v1::Analysis::Evictors as i32,
        v1::Analysis::MissClasses as i32,
        v1::Analysis::ReuseDistance as i32,
    ];
    let mut per_thread = static_request("kernel", "A", "PAPI_L1_LDM");
    per_thread.aggregation = v1::Aggregation::PerThread as i32;
    let ids: Vec<u64> = tool
        .add_requests(v1::AddRequestsRequest {
            pid: target.pid,
            requests: vec![
                histogram,
                static_request("kernel", "A", "PAPI_L1_LDM"),
                per_thread,
            ],
        })
        .await
        .unwrap()
        .into_inner()
        .requests
        .iter()
        .map(|r| r.id)
        .collect();
    step_to_exit(&mut tool, target.pid, "kernel").await;
    let results = tool
        .read_results(v1::ReadResultsRequest {
            pid: target.pid,
            ids: ids.clone(),
        })
        .await
        .unwrap()
        .into_inner()
        .results;
    let (h, s, t) = (&results[0], &results[1], &results[2]);
    assert!(h.available && s.available && t.available, "{results:?}");
    assert_eq!(s.total, A_LINES);
    assert_eq!(h.buckets.len(), 25, "{h:?}");
    assert_eq!(h.buckets.iter().map(|b| b.count).sum::<u64>(), h.total);
    assert_eq!(h.total, s.total);
    assert!(h.buckets.iter().all(|b| b.count == A_LINES / 25));
    assert!(h.analysis_missing.is_empty(), "{}", h.analysis_missing);

    let report = h.analysis.as_ref().expect("a typed analysis report");
    assert_eq!((report.level_name.as_str(), report.line_size), ("D1", 32));
    let data = &report.ranges[0];
    // Every line of A is filled once in the kernel and each of its 4-byte elements read once.
    let reuse = data.reuse.as_ref().expect("reuse was asked for");
    assert_eq!((reuse.residencies, reuse.accesses), (A_LINES, A_ELEMENTS));
    assert_eq!((reuse.temporal_reuse, reuse.spatial_use), (8.0, 1.0));
    assert_eq!(reuse.bucket_residencies.len(), A_LINES as usize);
    let classes = report.miss_classes.expect("miss classes were asked for");
    assert_eq!(classes.compulsory, A_LINES);
    let distances = report.reuse_distance.as_ref().expect("reuse distance");
    assert_eq!((distances.accesses, distances.cold), (A_ELEMENTS, A_LINES));
    let evictors = report.evictors.as_ref().expect("evictors");
    assert_eq!(evictors.names, ["data", "(other)"]);
    assert_eq!(evictors.rows.len(), 2);
    assert_eq!(report.distinct_lines, A_LINES);

    assert!(s.threads.is_empty(), "a summed request has no thread rows");
    assert_eq!(t.threads.len(), 1, "{t:?}");
    let row = &t.threads[0];
    assert!(row.thread_id != 0 && !row.other_threads, "{row:?}");
    assert_eq!((row.threads, row.instances), (1, 1));
    assert_eq!((row.total, t.total), (A_LINES, A_LINES));
    tool.detach(v1::DetachRequest { pid: target.pid })
        .await
        .unwrap();
    assert!(target.wait_for_exit(Duration::from_secs(10)).success());
    daemon.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutting_down_lets_a_halted_target_go_and_ends_streams() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = start_daemon(dir.path()).await;
    let mut target = spawn_target(dir.path(), &[WAIT, ("EPCACHE_SYNTH_ITERATIONS", "2")]);
    let mut tool = connect(&daemon, "leaving").await;
    wait_listed(&mut tool, target.pid).await;
    tool.add_requests(v1::AddRequestsRequest {
        pid: target.pid,
        requests: vec![static_request("kernel", "A", "PAPI_L1_LDM")],
    })
    .await
    .unwrap();
    step_to_exit(&mut tool, target.pid, "kernel").await;
    // Armed again, so without the release policy it would halt at the next kernel exit too.
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
    let mut events = tool
        .watch(v1::WatchRequest { pid: 0 })
        .await
        .unwrap()
        .into_inner();
    daemon.shutdown().await;
    assert!(target.wait_for_exit(Duration::from_secs(10)).success());
    let mut ended = false;
    while let Some(item) = tokio::time::timeout(Duration::from_secs(5), events.next())
        .await
        .expect("the watch stream outlived the daemon")
    {
        if let Err(status) = item {
            assert_eq!(status.code(), Code::Unavailable, "{status}");
            ended = true;
        }
    }
    assert!(ended, "the stream ends with UNAVAILABLE");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_reflection_and_the_bearer_token() {
    let dir = tempfile::tempdir().unwrap();
    let err = epcache_daemon::serve(epcache_daemon::Config {
        listen: "0.0.0.0:0".parse().unwrap(),
        runtime_dir: dir.path().to_owned(),
        ..Default::default()
    })
    .await
    .unwrap_err();
    assert!(err.to_string().contains("bearer token"), "{err}");

    let daemon = epcache_daemon::serve(epcache_daemon::Config {
        listen: "127.0.0.1:0".parse().unwrap(),
        token: Some("correct horse battery staple".into()),
        ..epcache_daemon::Config::private(dir.path())
    })
    .await
    .unwrap();
    let channel = tonic::transport::Channel::from_shared(daemon.endpoint())
        .unwrap()
        .connect()
        .await
        .unwrap();

    let mut health = tonic_health::pb::health_client::HealthClient::new(channel.clone());
    let status = health
        .check(tonic_health::pb::HealthCheckRequest {
            service: "epcache.mri.v1.Mri".into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        status.status(),
        tonic_health::pb::health_check_response::ServingStatus::Serving
    );

    use tonic_reflection::pb::v1::server_reflection_client::ServerReflectionClient;
    use tonic_reflection::pb::v1::{
        ServerReflectionRequest, server_reflection_request::MessageRequest,
        server_reflection_response::MessageResponse,
    };
    let mut reflection = ServerReflectionClient::new(channel.clone());
    let mut replies = reflection
        .server_reflection_info(tokio_stream::iter([ServerReflectionRequest {
            host: String::new(),
            message_request: Some(MessageRequest::ListServices(String::new())),
        }]))
        .await
        .unwrap()
        .into_inner();
    let reply = replies.next().await.unwrap().unwrap();
    let Some(MessageResponse::ListServicesResponse(list)) = reply.message_response else {
        panic!("{reply:?}");
    };
    let names: Vec<_> = list.service.iter().map(|s| s.name.as_str()).collect();
    assert!(names.contains(&"epcache.mri.v1.Mri"), "{names:?}");
    assert!(names.contains(&"grpc.health.v1.Health"), "{names:?}");

    let mut anonymous = epcache_proto::v1::mri_client::MriClient::new(channel.clone());
    let e = anonymous
        .list_targets(v1::ListTargetsRequest {})
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::Unauthenticated, "{e}");
    let mut authorised = epcache_proto::v1::mri_client::MriClient::with_interceptor(
        channel,
        |mut r: tonic::Request<()>| {
            r.metadata_mut().insert(
                "authorization",
                "Bearer correct horse battery staple".parse().unwrap(),
            );
            Ok(r)
        },
    );
    authorised
        .list_targets(v1::ListTargetsRequest {})
        .await
        .unwrap();
    daemon.shutdown().await;
}

/// Whether System V segment `id` still exists (`/proc/sysvipc/shm` lists every segment).
fn segment_exists(id: i32) -> bool {
    std::fs::read_to_string("/proc/sysvipc/shm")
        .unwrap()
        .lines()
        .skip(1)
        .any(|line| line.split_whitespace().nth(1) == Some(&id.to_string()))
}

/// A watch of every target, left open (a user's `epcache watch` in a terminal), holds no ended
/// target's segment past the daemon's retention of it: the segment, marked for removal, goes
/// once the daemon lets it go, while the stream stays open.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_watch_keeps_no_ended_target_attached() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = epcache_daemon::serve(epcache_daemon::Config {
        discovery_interval: Duration::from_millis(50),
        exited_retention: Duration::from_millis(300),
        ..epcache_daemon::Config::private(dir.path())
    })
    .await
    .unwrap();
    let mut target = spawn_target(dir.path(), &[WAIT, ("EPCACHE_SYNTH_ITERATIONS", "1")]);
    let mut tool = connect(&daemon, "watcher").await;
    let listed = wait_listed(&mut tool, target.pid).await;
    assert!(segment_exists(listed.shm_id));
    let mut events = tool
        .watch(v1::WatchRequest { pid: 0 })
        .await
        .unwrap()
        .into_inner();
    let first = events.next().await.unwrap().unwrap();
    assert_eq!(first.pid, target.pid);
    tool.r#continue(v1::ContinueRequest {
        pid: target.pid,
        clear_halting_point: true,
    })
    .await
    .unwrap();
    target.wait_for_exit(Duration::from_secs(20));
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while segment_exists(listed.shm_id) {
        assert!(
            std::time::Instant::now() < deadline,
            "segment {} of the ended target is still attached while a watch is open",
            listed.shm_id
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The stream is still open: it saw the exit, and ends only with the daemon.
    let mut exited = false;
    while let Ok(Some(event)) =
        tokio::time::timeout(Duration::from_millis(200), events.next()).await
    {
        exited |= matches!(event.unwrap().kind, Some(v1::event::Kind::Exited(_)));
    }
    assert!(exited, "the watch saw the target end");
    daemon.shutdown().await;
}
