//! What another local user, a forged segment or a hostile client can and cannot make the daemon
//! do: real daemons, real target processes, real segments, and a second uid (this test binary
//! run again as uid 65534) where it matters.

use std::io::{BufRead, BufReader, Read};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use epcache_proto::v1;
use epcache_shm::discovery::{self, TargetRecord};
use epcache_shm::layout::header;
use epcache_shm::process;
use epcache_shm::{Access, Segment};
use epcache_test_support::{roles, tools};
use tonic::Code;

use crate::support::*;

/// Set to a daemon endpoint to make this test binary play a process of another user that tries
/// to reach it.
const INTRUDER: &str = "EPCACHE_TEST_INTRUDER";
/// The uid of that other user.
const NOBODY: u32 = 65534;

const WAIT: (&str, &str) = ("EPCACHE_WAIT", "20");

/// Plays the other user's process when asked: connects to the socket, then tries to list the
/// targets, and says on stdout how far it got.
#[test]
fn intruder_role() {
    let Ok(endpoint) = std::env::var(INTRUDER) else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let path = endpoint.strip_prefix("unix:").unwrap();
        match tokio::net::UnixStream::connect(path).await {
            Ok(_) => println!("INTRUDER CONNECTED"),
            Err(e) => println!("INTRUDER CANNOT CONNECT: {e}"),
        }
        let listed = tokio::time::timeout(Duration::from_secs(10), async {
            let channel = crate::support::channel(&endpoint)
                .await
                .map_err(|e| e.to_string())?;
            epcache_proto::v1::mri_client::MriClient::new(channel)
                .list_targets(v1::ListTargetsRequest {})
                .await
                .map(|r| r.into_inner().targets.len())
                .map_err(|e| e.to_string())
        })
        .await;
        match listed {
            Ok(Ok(n)) => println!("INTRUDER LISTED {n}"),
            Ok(Err(e)) => println!("INTRUDER REFUSED: {e}"),
            Err(_) => println!("INTRUDER REFUSED: timed out"),
        }
    });
}

/// Whether this process may run others as uid [`NOBODY`]; says why not (and fails under CI).
fn can_switch_users() -> bool {
    epcache_shm::current_uid() == 0
        || tools::skipped(&format!(
            "the second-uid tests need root to run a process as uid {NOBODY}"
        ))
}

/// The intruder's test, as a filter that runs this binary as it alone.
pub(crate) fn intruder_role_test() -> String {
    roles::test_path(module_path!(), "intruder_role")
}

/// Runs the intruder as uid [`NOBODY`] against `endpoint` and returns what it printed.
fn intrude(endpoint: &str) -> String {
    let out = roles::rerun(&intruder_role_test())
        .env(INTRUDER, endpoint)
        .uid(NOBODY)
        .gid(NOBODY)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        text.contains("INTRUDER LISTED") || text.contains("INTRUDER REFUSED"),
        "the intruder did not report: {text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

/// `epcached` with `args`, its first stdout line read (so it listens); returns the endpoint.
fn start_epcached(command: &mut Command) -> (Child, String) {
    let mut daemon = command
        .env("RUST_LOG", "info")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(daemon.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let endpoint = line
        .trim()
        .strip_prefix("epcached listening on ")
        .unwrap_or_else(|| {
            let _ = daemon.kill();
            let mut err = String::new();
            let _ = daemon.stderr.take().unwrap().read_to_string(&mut err);
            panic!("epcached did not start: {line:?}\n{err}")
        })
        .to_owned();
    (daemon, endpoint)
}

/// Stops `daemon` and returns its log, without colour escapes.
fn stop_epcached(mut daemon: Child) -> String {
    let _ = daemon.kill();
    let _ = daemon.wait();
    let mut log = String::new();
    daemon
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut log)
        .unwrap();
    let mut plain = String::with_capacity(log.len());
    let mut chars = log.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // CSI: ESC [ parameters final-letter
            for e in chars.by_ref() {
                if e.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            plain.push(c);
        }
    }
    plain
}

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_user_cannot_reach_the_default_socket() {
    if !can_switch_users() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let daemon = start_daemon(dir.path()).await;
    let target = spawn_target(dir.path(), &[WAIT, ("EPCACHE_SYNTH_ITERATIONS", "1")]);
    let mut owner = connect(&daemon, "owner").await;
    wait_listed(&mut owner, target.pid).await;
    assert_eq!(
        daemon.endpoint(),
        format!("unix:{}", dir.path().join("epcached.sock").display())
    );
    let endpoint = daemon.endpoint();
    let seen = tokio::task::spawn_blocking(move || intrude(&endpoint))
        .await
        .unwrap();
    assert!(
        seen.contains("INTRUDER CANNOT CONNECT") && seen.contains("INTRUDER REFUSED"),
        "{seen}"
    );
    // The owner still can.
    let targets = owner
        .list_targets(v1::ListTargetsRequest {})
        .await
        .unwrap()
        .into_inner()
        .targets;
    assert!(targets.iter().any(|t| t.pid == target.pid));
    daemon.shutdown().await;
}

#[test]
fn peer_credentials_refuse_another_user_on_an_opened_socket() {
    if !can_switch_users() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let runtime = dir.path().join("rt");
    let open = dir.path().join("open");
    std::fs::create_dir(&open).unwrap();
    let socket = open.join("epcached.sock");
    let (daemon, endpoint) = start_epcached(
        Command::new(env!("CARGO_BIN_EXE_epcached"))
            .arg("--runtime-dir")
            .arg(&runtime)
            .arg("--listen")
            .arg(format!("unix:{}", socket.display())),
    );
    let target = spawn_target(&runtime, &[WAIT, ("EPCACHE_SYNTH_ITERATIONS", "1")]);
    // Everything on the way deliberately opened to everyone.
    chmod(dir.path(), 0o755);
    chmod(&open, 0o777);
    chmod(&socket, 0o777);
    let seen = intrude(&endpoint);
    let log = stop_epcached(daemon);
    drop(target);
    assert!(
        seen.contains("INTRUDER CONNECTED") && seen.contains("INTRUDER REFUSED"),
        "{seen}"
    );
    assert!(
        log.contains("refused a connection from another user") && log.contains("uid=65534"),
        "{log}"
    );
}

#[test]
fn root_is_served_only_when_allowed() {
    if !can_switch_users() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    chmod(dir.path(), 0o711);
    let runtime = dir.path().join("rt");
    std::fs::create_dir(&runtime).unwrap();
    chmod(&runtime, 0o700);
    std::os::unix::fs::chown(&runtime, Some(NOBODY), Some(NOBODY)).unwrap();
    let list_as_root = |endpoint: String| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(async move {
                let channel = crate::support::channel(&endpoint)
                    .await
                    .map_err(|e| e.to_string())?;
                epcache_proto::v1::mri_client::MriClient::new(channel)
                    .list_targets(v1::ListTargetsRequest {})
                    .await
                    .map(|_| ())
                    .map_err(|e| e.to_string())
            })
    };
    for allow_root in [false, true] {
        let mut command = Command::new(env!("CARGO_BIN_EXE_epcached"));
        command
            .arg("--runtime-dir")
            .arg(&runtime)
            .uid(NOBODY)
            .gid(NOBODY);
        if allow_root {
            command.arg("--allow-root");
        }
        let (daemon, endpoint) = start_epcached(&mut command);
        let listed = list_as_root(endpoint);
        let log = stop_epcached(daemon);
        if allow_root {
            assert!(listed.is_ok(), "{listed:?}\n{log}");
        } else {
            assert!(listed.is_err(), "root was served without --allow-root");
            assert!(
                log.contains("uid=0") && log.contains("--allow-root"),
                "{log}"
            );
        }
    }
}

/// A segment that copies `target`'s, with its header claiming `pid` (started at `start_time`):
/// what a process of this user could make to point the daemon at someone else's process.
fn forge_segment(original_shm_id: i32, pid: u32, start_time: u64) -> Segment {
    let original = Segment::attach(original_shm_id, Access::ReadOnly).unwrap();
    let len = original.view().len();
    let mut bytes = vec![0u8; len];
    original.view().copy_out(0, &mut bytes).unwrap();
    let forged = Segment::create(len).unwrap();
    forged.view().copy_in(0, &bytes).unwrap();
    forged
        .view()
        .copy_in(header::TARGET_PID, &pid.to_ne_bytes())
        .unwrap();
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

/// A call naming another user's process is told whose it is, and nothing of its program beyond
/// its name (no environment, no command line).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pid_of_another_user_is_named_as_theirs_and_not_described() {
    if !can_switch_users() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let daemon = start_daemon(dir.path()).await;
    let mut tool = connect(&daemon, "curious").await;
    let mut theirs = Command::new("sleep")
        .arg("60")
        .env("EPCACHE_RUNTIME_DIR", "/their/secret/place")
        .uid(NOBODY)
        .gid(NOBODY)
        .spawn()
        .unwrap();
    let e = tool
        .describe_target(v1::DescribeTargetRequest { pid: theirs.id() })
        .await
        .unwrap_err();
    let _ = theirs.kill();
    let _ = theirs.wait();
    daemon.shutdown().await;
    assert_eq!(e.code(), Code::NotFound, "{e}");
    assert!(
        e.message().contains(&format!("belongs to uid {NOBODY}")),
        "{}",
        e.message()
    );
    assert!(
        !e.message().contains("secret"),
        "their environment leaked: {}",
        e.message()
    );
}

/// Reads `stream` until the daemon closes it; how long that took, or `None` within `limit`.
async fn closed_within(stream: &mut tokio::net::UnixStream, limit: Duration) -> Option<Duration> {
    use tokio::io::AsyncReadExt;
    let started = std::time::Instant::now();
    let mut buf = [0u8; 1024];
    loop {
        match tokio::time::timeout_at(
            tokio::time::Instant::from_std(started + limit),
            stream.read(&mut buf),
        )
        .await
        {
            Err(_) => return None,
            Ok(Ok(0) | Err(_)) => return Some(started.elapsed()),
            // The server's SETTINGS and PINGs, never answered.
            Ok(Ok(_)) => {}
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_and_idle_connections_are_closed() {
    use tokio::io::AsyncWriteExt;
    let dir = tempfile::tempdir().unwrap();
    let daemon = epcache_daemon::serve(epcache_daemon::Config {
        handshake_timeout: Duration::from_millis(300),
        keepalive_interval: Duration::from_millis(300),
        keepalive_timeout: Duration::from_millis(300),
        ..epcache_daemon::Config::private(dir.path())
    })
    .await
    .unwrap();
    let socket = dir.path().join("epcached.sock");

    // Connects and says nothing: closed at the handshake bound.
    let mut mute = tokio::net::UnixStream::connect(&socket).await.unwrap();
    let took = closed_within(&mut mute, Duration::from_secs(5)).await;
    assert!(
        took.is_some_and(|t| t >= Duration::from_millis(250)),
        "a connection that never sent the HTTP/2 preface stayed open: {took:?}"
    );

    // Completes the handshake, then never answers a ping: closed by the keepalive.
    let mut deaf = tokio::net::UnixStream::connect(&socket).await.unwrap();
    deaf.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
        .await
        .unwrap();
    // An empty SETTINGS frame: length 0, type 4, flags 0, stream 0.
    deaf.write_all(&[0, 0, 0, 4, 0, 0, 0, 0, 0]).await.unwrap();
    let took = closed_within(&mut deaf, Duration::from_secs(5)).await;
    assert!(
        took.is_some_and(|t| t >= Duration::from_millis(250)),
        "a connection that never answered a keepalive ping stayed open: {took:?}"
    );

    // A live client answers pings and keeps its connection across idle time.
    let mut live = connect(&daemon, "idle").await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    live.list_targets(v1::ListTargetsRequest {}).await.unwrap();
    daemon.shutdown().await;
}

/// Runs `command` to its end, or kills it after 10 s (a daemon that started serving) and fails.
fn refused_at_start(command: &mut Command) -> String {
    let mut child = command
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > Duration::from_secs(10) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("epcached started serving instead of refusing");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let status = child.wait().unwrap();
    assert!(!status.success());
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    err
}

#[test]
fn a_token_shorter_than_16_characters_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = private_file(dir.path(), "abcde\n");
    let err = refused_at_start(
        Command::new(env!("CARGO_BIN_EXE_epcached"))
            .args(["--listen", "127.0.0.1:0", "--runtime-dir"])
            .arg(dir.path().join("rt"))
            .arg("--token-file")
            .arg(&file),
    );
    assert!(
        err.contains("5 characters") && err.contains("at least 16"),
        "{err}"
    );
    let err = refused_at_start(
        Command::new(env!("CARGO_BIN_EXE_epcached"))
            .args(["--listen", "127.0.0.1:0", "--runtime-dir"])
            .arg(dir.path().join("rt"))
            .env("EPCACHED_TOKEN", "abcde"),
    );
    assert!(
        err.contains("EPCACHED_TOKEN") && err.contains("at least 16"),
        "{err}"
    );
}

/// A token file only its owner can read, holding `token`.
fn private_file(dir: &std::path::Path, token: &str) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let file = dir.join("token");
    std::fs::write(&file, token).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    file
}

/// A token file other users can read is refused by the daemon, saying how to make it private:
/// whoever reads the token can drive the user's programs (`cli.rs` checks the tools).
#[test]
fn a_token_file_others_can_read_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let file = private_file(dir.path(), "the-right-token-of-enough-length\n");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let err = refused_at_start(
        Command::new(env!("CARGO_BIN_EXE_epcached"))
            .args(["--listen", "127.0.0.1:0", "--runtime-dir"])
            .arg(dir.path().join("rt"))
            .arg("--token-file")
            .arg(&file),
    );
    assert!(
        err.contains("can be read by other users (mode 644)") && err.contains("chmod 600"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_library_refuses_a_short_token_too() {
    let dir = tempfile::tempdir().unwrap();
    let err = epcache_daemon::serve(epcache_daemon::Config {
        token: Some("   short   ".into()),
        ..epcache_daemon::Config::private(dir.path())
    })
    .await
    .unwrap_err();
    assert!(err.to_string().contains("5 characters"), "{err}");
}

#[test]
fn failed_authentications_are_logged_with_the_peer_and_without_the_token() {
    let dir = tempfile::tempdir().unwrap();
    let file = private_file(dir.path(), "the-right-token-of-enough-length\n");
    let (daemon, endpoint) = start_epcached(
        Command::new(env!("CARGO_BIN_EXE_epcached"))
            .args(["--listen", "127.0.0.1:0", "--runtime-dir"])
            .arg(dir.path().join("rt"))
            .arg("--token-file")
            .arg(&file),
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let channel = crate::support::channel(&endpoint).await.unwrap();
        let anonymous = epcache_proto::v1::mri_client::MriClient::new(channel.clone())
            .list_targets(v1::ListTargetsRequest {})
            .await
            .unwrap_err();
        assert_eq!(anonymous.code(), Code::Unauthenticated);
        let wrong = epcache_proto::v1::mri_client::MriClient::with_interceptor(
            channel,
            |mut r: tonic::Request<()>| {
                r.metadata_mut().insert(
                    "authorization",
                    "Bearer guessed-wrong-secret-value".parse().unwrap(),
                );
                Ok(r)
            },
        )
        .list_targets(v1::ListTargetsRequest {})
        .await
        .unwrap_err();
        assert_eq!(wrong.code(), Code::Unauthenticated);
    });
    std::thread::sleep(Duration::from_millis(100));
    let log = stop_epcached(daemon);
    assert!(
        log.contains("authentication failed: no bearer token")
            && log.contains("authentication failed: wrong bearer token")
            && log.contains("peer=127.0.0.1:"),
        "{log}"
    );
    assert!(!log.contains("guessed-wrong-secret-value"), "{log}");
    assert!(!log.contains("the-right-token"), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_enum_values_are_refused_and_long_names_not_echoed_whole() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = start_daemon(dir.path()).await;
    let mut target = spawn_target(dir.path(), &[WAIT, ("EPCACHE_SYNTH_ITERATIONS", "1")]);
    let mut tool = connect(&daemon, "fuzzer").await;
    wait_listed(&mut tool, target.pid).await;

    let mut request = static_request("kernel", "A", "PAPI_L1_LDM");
    request.aggregation = 99;
    let e = tool
        .add_requests(v1::AddRequestsRequest {
            pid: target.pid,
            requests: vec![request],
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument, "{e}");
    assert!(e.message().contains("aggregation value 99"), "{e}");

    let bad_point = v1::HaltingPoint {
        region: Some(region("kernel")),
        boundary: 7,
        skip: 0,
    };
    let e = tool
        .set_halting_point(v1::SetHaltingPointRequest {
            pid: target.pid,
            point: Some(bad_point.clone()),
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument, "{e}");
    assert!(e.message().contains("boundary value 7"), "{e}");
    let e = tool
        .step(v1::StepRequest {
            pid: target.pid,
            until: Some(v1::step_request::Until::Point(bad_point)),
            count: 1,
            timeout_ms: 1000,
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument, "{e}");

    let long = "k".repeat(12_000);
    for request in [
        static_request(&long, "A", "PAPI_L1_LDM"),
        static_request("kernel", &long, "PAPI_L1_LDM"),
        static_request("kernel", "A", &long),
    ] {
        let e = tool
            .add_requests(v1::AddRequestsRequest {
                pid: target.pid,
                requests: vec![request],
            })
            .await
            .unwrap_err();
        assert!(
            e.message().len() < 1000 && e.message().contains("12000 characters"),
            "{} characters: {}",
            e.message().len(),
            &e.message()[..200.min(e.message().len())]
        );
    }

    // Nothing of it reached the target, which runs to its end.
    let d = tool
        .describe_target(v1::DescribeTargetRequest { pid: target.pid })
        .await
        .unwrap()
        .into_inner();
    assert!(d.requests.is_empty());
    tool.r#continue(v1::ContinueRequest {
        pid: target.pid,
        clear_halting_point: true,
    })
    .await
    .unwrap();
    assert!(target.wait_for_exit(Duration::from_secs(10)).success());
    daemon.shutdown().await;
}

/// Sends and receives raw bytes, to put a malformed message on the wire.
#[derive(Debug, Clone, Default)]
struct RawCodec;

#[derive(Debug, Clone, Default)]
struct RawBytes;

impl tonic::codec::Encoder for RawBytes {
    type Item = Vec<u8>;
    type Error = tonic::Status;

    fn encode(
        &mut self,
        item: Vec<u8>,
        buf: &mut tonic::codec::EncodeBuf<'_>,
    ) -> Result<(), tonic::Status> {
        prost::bytes::BufMut::put_slice(buf, &item);
        Ok(())
    }
}

impl tonic::codec::Decoder for RawBytes {
    type Item = Vec<u8>;
    type Error = tonic::Status;

    fn decode(
        &mut self,
        buf: &mut tonic::codec::DecodeBuf<'_>,
    ) -> Result<Option<Vec<u8>>, tonic::Status> {
        use prost::bytes::Buf;
        Ok(Some(buf.copy_to_bytes(buf.remaining()).to_vec()))
    }
}

impl tonic::codec::Codec for RawCodec {
    type Encode = Vec<u8>;
    type Decode = Vec<u8>;
    type Encoder = RawBytes;
    type Decoder = RawBytes;

    fn encoder(&mut self) -> RawBytes {
        RawBytes
    }

    fn decoder(&mut self) -> RawBytes {
        RawBytes
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_message_is_invalid_argument() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = start_daemon(dir.path()).await;
    let channel = crate::support::channel(&daemon.endpoint()).await.unwrap();
    let mut grpc = tonic::client::Grpc::new(channel);
    // Field 1 (pid) as a varint whose continuation bit promises bytes that never come.
    for (method, bytes) in [
        ("DescribeTarget", vec![0x08, 0xff]),
        ("Step", vec![0x0f]),
        ("AddRequests", vec![0x12, 0x40, 0x01]),
    ] {
        grpc.ready().await.unwrap();
        let path = format!("/epcache.mri.v1.Mri/{method}");
        let e = grpc
            .unary::<_, Vec<u8>, _>(
                tonic::Request::new(bytes),
                tonic::codegen::http::uri::PathAndQuery::try_from(path).unwrap(),
                RawCodec,
            )
            .await
            .unwrap_err();
        assert_eq!(e.code(), Code::InvalidArgument, "{method}: {e}");
        assert!(e.message().contains("not valid protobuf"), "{method}: {e}");
    }
    daemon.shutdown().await;
}
