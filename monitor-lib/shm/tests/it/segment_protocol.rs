//! The segment protocol across two real processes: this test binary re-runs itself with
//! `EPCACHE_TEST_ROLE` set to play the target, while the test plays the tool.

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use epcache_shm::discovery;
use epcache_shm::layout::{
    Aggregation, Boundary, DataStructureIndex, DataStructureKind, HaltingPoint, LayoutError, Mode,
    PublishedModel, RegionIndex, RegionKind, RequestResult, RequestSpec, RequestTarget,
    TargetState,
};
use epcache_shm::target::{HaltOutcome, Mcc, MccOptions};
use epcache_shm::tool::{TargetHandle, ToolError};
use epcache_shm::{Segment, SegmentError};
use epcache_sim::ranges::AddressRange;
use epcache_test_support::roles;

const ROLE: &str = "EPCACHE_TEST_ROLE";

fn now_nanos() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}

/// The child's part, played from `main.rs`'s `child_role` test; a no-op in an ordinary run.
pub(crate) fn play_role() {
    match std::env::var(ROLE).as_deref() {
        Ok("target") => run_target(),
        Ok("sleeper") => {
            let mcc = Mcc::create(MccOptions::default()).unwrap();
            println!("SHMID {}", mcc.shm_id());
            std::thread::sleep(Duration::from_secs(60));
        }
        _ => {}
    }
}

fn run_target() {
    let mcc = Mcc::create(MccOptions {
        program: "segment-test-target".into(),
        ..MccOptions::default()
    })
    .unwrap();
    mcc.register_region(1, 10, RegionKind::Function, "main", "main.c")
        .unwrap();
    let kernel = mcc
        .register_region(1, 20, RegionKind::Marker, "kernel", "main.c")
        .unwrap();
    let data = vec![0u64; 512];
    mcc.register_data_structure(
        "data",
        AddressRange::new(data.as_ptr() as u64, 4096),
        DataStructureKind::HeapRegistered,
    )
    .unwrap();
    mcc.publish_model(&PublishedModel {
        spec: "D1=8K,2,32;LL=1M,8,64".to_owned(),
        counters: 64,
        cores: 2,
    })
    .unwrap();
    println!("SHMID {}", mcc.shm_id());
    assert_eq!(
        mcc.wait_for_tool(Duration::from_secs(20)),
        HaltOutcome::Released
    );
    let entry = mcc.lookup(1, 20).unwrap();
    assert_eq!(entry, kernel);
    assert_eq!(
        mcc.boundary(entry.region, Boundary::Entry),
        HaltOutcome::NotHalted
    );
    assert!(mcc.has_request(entry));
    let requests = mcc.active_requests(entry);
    assert_eq!(requests.len(), 1);
    let request = requests[0];
    assert_eq!(request.range.len(), 4096, "the data structure was resolved");
    // `instances` carries the send time here, so the tool can measure the wake latency.
    assert!(
        mcc.write_result(
            request.slot,
            &RequestResult::summed(request.generation, now_nanos(), 10, vec![1, 2, 3, 4]),
        )
        .unwrap()
    );
    assert_eq!(
        mcc.boundary(entry.region, Boundary::Exit),
        HaltOutcome::Released
    );
}

fn spawn(role: &str, runtime_dir: &std::path::Path) -> (Child, i32) {
    let mut child = roles::rerun(roles::CHILD_ROLE_TEST)
        .env(ROLE, role)
        .env("EPCACHE_RUNTIME_DIR", runtime_dir)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    while let Some(line) = lines.next() {
        let line = line.unwrap();
        // The harness prints "test child_role ... " on the same line, so look inside the line.
        if let Some((_, id)) = line.split_once("SHMID ") {
            // Keep draining, or the child's harness dies of a broken pipe when it reports.
            std::thread::spawn(move || lines.for_each(drop));
            return (child, id.trim().parse().unwrap());
        }
    }
    let _ = child.kill();
    let status = child.wait();
    panic!("the {role} child never printed its segment id ({status:?})");
}

fn listed_in_sysvipc(id: i32) -> bool {
    std::fs::read_to_string("/proc/sysvipc/shm")
        .unwrap()
        .lines()
        .skip(1)
        .any(|l| l.split_whitespace().nth(1) == Some(&id.to_string()))
}

#[test]
fn a_tool_drives_a_target_in_another_process() {
    let dir = tempfile::tempdir().unwrap();
    let (mut child, id) = spawn("target", dir.path());
    let records = discovery::list_targets(dir.path()).unwrap();
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].shm_id, id);
    let tool = TargetHandle::attach_record(&records[0]).unwrap();

    let start = tool.wait_for_halt(0, Duration::from_secs(10)).unwrap();
    assert_eq!(start.state, TargetState::WaitingForTool);
    let names: Vec<_> = tool
        .regions()
        .unwrap()
        .into_iter()
        .map(|r| r.name)
        .collect();
    assert_eq!(names, ["main", "kernel"]);
    assert_eq!(tool.regions().unwrap()[1].file, "main.c");
    assert_eq!(
        tool.model().unwrap(),
        Some(PublishedModel {
            spec: "D1=8K,2,32;LL=1M,8,64".to_owned(),
            counters: 64,
            cores: 2,
        })
    );
    let data = tool.data_structures().unwrap();
    assert_eq!(data[0].name, "data");
    assert_eq!(data[0].range.len(), 4096);

    let spec = RequestSpec {
        region: RegionIndex(1),
        target: RequestTarget::DataStructure(DataStructureIndex(0)),
        event: "PAPI_L1_LDM".parse().unwrap(),
        mode: Mode::Histogram {
            buckets: 4,
            bucket_bytes: 0,
        },
        aggregation: Aggregation::Summed,
        analyses: 0,
    };
    assert!(matches!(
        tool.submit(&RequestSpec {
            region: RegionIndex(9),
            ..spec
        }),
        Err(ToolError::NoSuchRegion { index: 9, count: 2 })
    ));
    let request = tool.submit(&spec).unwrap();
    tool.set_halting_point(Some(HaltingPoint {
        region: Some(RegionIndex(1)),
        boundary: Boundary::Exit,
        skip: 0,
    }))
    .unwrap();
    tool.release().unwrap();

    let halt = tool
        .wait_for_halt(start.generation, Duration::from_secs(10))
        .unwrap();
    let woke = now_nanos();
    assert_eq!(halt.state, TargetState::Halted);
    assert_eq!(halt.position, Some((RegionIndex(1), Boundary::Exit)));
    let result = tool.read_result(request).unwrap().unwrap().sum();
    assert_eq!(result.buckets, [1, 2, 3, 4]);
    assert_eq!(result.total, 10);
    println!(
        "result written -> tool woken by the halt futex: {:.1} us",
        woke.saturating_sub(result.instances) as f64 / 1000.0
    );

    tool.release().unwrap();
    assert!(matches!(
        tool.wait_for_halt(halt.generation, Duration::from_secs(10)),
        Err(ToolError::TargetExited { .. })
    ));
    assert!(child.wait().unwrap().success(), "the target failed");
    assert!(discovery::list_targets(dir.path()).unwrap().is_empty());
    drop(tool);
    assert!(!listed_in_sysvipc(id), "segment {id} leaked");
}

#[test]
fn a_killed_target_is_reported_and_its_segment_disappears() {
    let dir = tempfile::tempdir().unwrap();
    let (mut child, id) = spawn("sleeper", dir.path());
    // The creator already marked it for removal; a second process can still attach by id.
    let tool = TargetHandle::attach(id).unwrap();
    assert!(Segment::stat_id(id).unwrap().marked_for_removal);
    assert!(listed_in_sysvipc(id));
    let generation = tool.halt_generation();
    let killed = Instant::now();
    child.kill().unwrap();
    let err = tool
        .wait_for_halt(generation, Duration::from_secs(10))
        .unwrap_err();
    let noticed = killed.elapsed();
    assert!(matches!(err, ToolError::TargetDied { .. }), "{err}");
    assert!(err.to_string().contains("died"), "{err}");
    assert!(noticed < Duration::from_secs(2), "took {noticed:?}");
    println!("target death noticed after {noticed:?}");
    child.wait().unwrap();
    assert!(listed_in_sysvipc(id), "the tool still holds it");
    drop(tool);
    assert!(!listed_in_sysvipc(id), "segment {id} leaked");
    assert!(discovery::list_targets(dir.path()).unwrap().is_empty());
    assert!(!discovery::record_path(dir.path(), child.id()).exists());
}

#[test]
fn a_segment_nobody_holds_dies_with_its_creator() {
    let dir = tempfile::tempdir().unwrap();
    let (mut child, id) = spawn("sleeper", dir.path());
    assert!(listed_in_sysvipc(id));
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(!listed_in_sysvipc(id), "segment {id} leaked");
}

#[test]
fn foreign_and_bad_segments_are_refused() {
    let segment = Segment::create(4096).unwrap();
    let err = TargetHandle::attach(segment.id()).unwrap_err();
    assert!(
        matches!(
            err,
            ToolError::Layout {
                source: LayoutError::BadMagic { .. },
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("not epcache's"), "{err}");

    if segment.set_owner_uid(65534).is_err() {
        eprintln!("SKIPPED foreign owner check: changing a segment's owner needs privilege");
        return;
    }
    let err = TargetHandle::attach(segment.id()).unwrap_err();
    assert!(
        matches!(
            err,
            ToolError::Segment(SegmentError::NotOwner { owner: 65534, .. })
        ),
        "{err}"
    );
    assert!(
        err.to_string().contains("run the tool as uid 65534"),
        "{err}"
    );
}

#[test]
fn a_machine_of_more_cores_than_any_is_a_corrupt_segment() {
    let dir = tempfile::tempdir().unwrap();
    let mcc = Mcc::create(MccOptions {
        program: "segment-test-cores".into(),
        runtime_dir: Some(dir.path().to_owned()),
        ..MccOptions::default()
    })
    .unwrap();
    mcc.publish_model(&PublishedModel {
        spec: "D1=8K,2,32".to_owned(),
        counters: 64,
        cores: 65,
    })
    .unwrap();
    let tool = TargetHandle::attach(mcc.shm_id()).unwrap();
    let err = tool.model().unwrap_err();
    assert!(
        matches!(
            err,
            ToolError::Layout {
                source: LayoutError::BadHeaderField { field: "cores", .. },
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("at most 64 cores"), "{err}");
}
