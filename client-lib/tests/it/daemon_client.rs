//! The typed client against a real embedded daemon and real target processes: the EP-Cache
//! scenario, a Unix socket with a bearer token, and refusals that keep their gRPC codes.

use epcache_test_support::client as daemon_support;

use std::time::Duration;

use daemon_support::synthetic::{A_BYTES, A_LINES};
use daemon_support::*;
use epcache_client::{
    Boundary, Client, ClientError, ConnectOptions, Event, Request, StepOutcome, StepTo, TargetState,
};
use tokio_stream::StreamExt;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typed_client_runs_the_ep_cache_scenario() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = start_daemon(dir.path()).await;
    let mut target = spawn_target(dir.path(), 2);
    let mut client = Client::connect(&daemon.endpoint()).await.unwrap();
    wait_listed(&mut client, target.pid).await;
    let pid = target.pid;

    let d = client.describe(pid).await.unwrap();
    assert_eq!(d.target.state, TargetState::WaitingForTool);
    assert_eq!(d.counters, Some(64));
    assert_eq!(
        d.request_slots, 64,
        "the synthetic target's segment has the default 64 slots"
    );
    let a = d.data_structures.iter().find(|s| s.name == "A").unwrap();
    assert_eq!(a.range.end - a.range.start, A_BYTES);

    let placed = client
        .requests(
            pid,
            &[
                Request::histogram("kernel", "A", "PAPI_L1_LDM", 25),
                Request::count("kernel", "A", "PAPI_L1_LDM"),
            ],
        )
        .await
        .unwrap();
    let (hist, total) = (placed[0].id, placed[1].id);
    assert_eq!(placed[0].range, a.range);

    let outcome = client
        .step(pid, StepTo::RegionExit("kernel".into()))
        .await
        .unwrap();
    let StepOutcome::Halted(halt) = outcome else {
        panic!("{outcome:?}");
    };
    let at = halt.position.unwrap();
    assert_eq!(
        (at.region.as_str(), at.boundary),
        ("kernel", Boundary::Exit)
    );

    let results = client.results(pid, &[hist, total]).await.unwrap();
    let (h, s) = (&results[0], &results[1]);
    assert_eq!(s.total, A_LINES);
    assert_eq!(h.buckets.len(), 25);
    assert_eq!(h.buckets.iter().map(|b| b.count).sum::<u64>(), s.total);
    assert_eq!(h.buckets[0].range.start, a.range.start);
    assert_eq!(h.buckets[24].range.end, a.range.end);
    assert!(
        h.buckets
            .windows(2)
            .all(|w| w[0].range.end == w[1].range.start)
    );

    let mut events = client.watch(Some(pid)).await.unwrap();
    assert!(matches!(
        events.next().await.unwrap().unwrap(),
        Event::Target { .. }
    ));
    let detached = client.detach(pid).await.unwrap();
    assert_eq!(detached.cancelled.len(), 2);
    assert!(detached.released);
    let mut exited = false;
    while let Some(event) = tokio::time::timeout(Duration::from_secs(10), events.next())
        .await
        .expect("watch went quiet")
    {
        if let Event::Exited { exit, .. } = event.unwrap() {
            assert!(!exit.died);
            exited = true;
        }
    }
    assert!(exited);
    assert!(target.wait_for_exit(Duration::from_secs(10)).success());
    daemon.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typed_client_over_a_unix_socket_with_a_token() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("epcached.sock");
    let daemon = epcache_daemon::serve(epcache_daemon::Config {
        listen: epcache_daemon::ListenAddr::Unix(socket.clone()),
        token: Some("a-long-enough-secret".into()),
        runtime_dir: dir.path().join("rt"),
        ..Default::default()
    })
    .await
    .unwrap();
    assert_eq!(daemon.endpoint(), format!("unix:{}", socket.display()));
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&socket).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);

    let mut anonymous = Client::connect(&daemon.endpoint()).await.unwrap();
    let err = anonymous.targets().await.unwrap_err();
    assert_eq!(err.code(), Some(tonic::Code::Unauthenticated), "{err}");
    let mut client = Client::connect_with(ConnectOptions {
        address: daemon.endpoint(),
        token: Some("a-long-enough-secret\n".into()),
        tool: "uds-test".into(),
        ..Default::default()
    })
    .await
    .unwrap();
    assert!(client.targets().await.unwrap().is_empty());
    daemon.shutdown().await;
    assert!(!socket.exists(), "the socket file is removed at shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typed_client_errors_keep_their_codes() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = start_daemon(dir.path()).await;
    let mut target = spawn_target(dir.path(), 1);
    let mut client = Client::connect(&daemon.endpoint()).await.unwrap();
    wait_listed(&mut client, target.pid).await;
    let err = client
        .request(target.pid, Request::count("kernal", "A", "PAPI_L1_LDM"))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(tonic::Code::NotFound));
    assert!(err.to_string().contains("nearest: kernel"), "{err}");
    let err = client.describe(1).await.unwrap_err();
    assert_eq!(err.code(), Some(tonic::Code::NotFound));
    client.resume(target.pid, true).await.unwrap();
    assert!(target.wait_for_exit(Duration::from_secs(10)).success());
    daemon.shutdown().await;

    // Nobody listens there any more.
    let err = Client::connect(&daemon_gone_address()).await.unwrap_err();
    assert!(matches!(err, ClientError::Connect { .. }), "{err}");
    assert!(err.to_string().contains("is it running"), "{err}");
    let err = Client::connect("nowhere").await.unwrap_err();
    assert!(matches!(err, ClientError::Address { .. }), "{err}");
}

/// A socket of another user's, with no daemon of this user behind it, is said to be theirs,
/// with what to do, not only refused.
#[tokio::test]
async fn another_users_socket_is_said_to_be_theirs() {
    if epcache_shm::current_uid() != 0
        && !epcache_test_support::tools::skipped("giving a socket to another uid needs root")
    {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("epcached.sock");
    drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
    std::os::unix::fs::chown(&path, Some(65534), Some(65534)).unwrap();
    let err = Client::connect(&format!("unix:{}", path.display()))
        .await
        .unwrap_err();
    assert!(matches!(err, ClientError::Connect { .. }), "{err}");
    let text = err.to_string();
    assert!(
        text.contains("belongs to uid 65534") && text.contains("start your own"),
        "{text}"
    );
}

/// A loopback port that was free a moment ago.
fn daemon_gone_address() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    drop(l);
    addr.to_string()
}
