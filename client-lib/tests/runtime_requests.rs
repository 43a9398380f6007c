//! Requests a real target cannot serve, placed through the segment directly (as a tool without
//! the daemon's checks would): the runtime rejects them once and runs on, instead of keeping
//! them active, unanswered, with a complaint at every boundary.

mod capture_support;

use capture_support::{build_gauss_regions, run_to, start_waiting};
use epcache_monitor::shm::layout::{
    Aggregation, Boundary, Mode, RequestSpec, RequestTarget, SlotState,
};

/// Two data levels: no L3 to count at.
const TWO_LEVELS: &str = "D1=8K,2,32;LL=1M,8,64";

#[test]
fn an_event_at_a_level_the_target_lacks_is_rejected_once() {
    let dir = tempfile::tempdir().unwrap();
    let Some(program) = build_gauss_regions(dir.path(), "runtime_requests") else {
        return;
    };
    let (child, tool) = start_waiting(
        &program,
        &dir.path().join("run"),
        &[("EPCACHE_CACHE", TWO_LEVELS)],
    );
    let regions = tool.regions().unwrap();
    let original = regions.iter().find(|r| r.name == "original").unwrap();
    let a = tool
        .data_structures()
        .unwrap()
        .into_iter()
        .find(|d| d.name == "A")
        .unwrap();
    let request = |event: &str| RequestSpec {
        region: original.index,
        target: RequestTarget::DataStructure(a.index),
        event: event.parse().unwrap(),
        mode: Mode::Static,
        aggregation: Aggregation::Summed,
        analyses: 0,
    };
    let l3 = tool.submit(&request("PAPI_L3_LDM")).unwrap();
    let l1 = tool.submit(&request("PAPI_L1_LDM")).unwrap();
    run_to(&tool, original.index, Boundary::Exit);
    assert_eq!(tool.request_state(l3).unwrap(), Some(SlotState::Rejected));
    assert_eq!(tool.request_state(l1).unwrap(), Some(SlotState::Active));
    assert!(
        tool.read_result(l1).unwrap().is_some_and(|r| r.total > 0),
        "the servable request beside it is served"
    );
    assert!(tool.read_result(l3).unwrap().is_none());

    tool.set_halting_point(None).unwrap();
    tool.release().unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("cannot be served"), "{stderr}");
}
