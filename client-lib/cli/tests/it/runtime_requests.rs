//! Requests a real target cannot serve, placed through the segment directly (as a tool without
//! the daemon's checks would): the runtime rejects them once and runs on, instead of keeping
//! them active, unanswered, with a complaint at every boundary.
//! And requests on an OpenMP loop and on the function holding it, which every thread's
//! instances serve together.

use epcache_shm::layout::{Aggregation, Boundary, Mode, RequestSpec, RequestTarget, SlotState};

use crate::capture_support::{self, build_gauss_regions, run_to, start_waiting};

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
        tool.read_result(l1).unwrap().is_some_and(|r| r.total() > 0),
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

/// A request on an OpenMP loop counts every thread's share: each thread publishes its
/// instances into one result. So does one on the function holding the loop, `axpy`: the
/// team's workers enter its part of the loop there too, each thread's part an instance.
#[test]
fn a_request_on_a_parallel_loop_or_its_function_counts_every_thread() {
    let dir = tempfile::tempdir().unwrap();
    if !capture_support::available("gcc", "runtime_requests")
        || !capture_support::runtime_built("runtime_requests")
    {
        return;
    }
    let source = capture_support::kernel("omp_axpy.c");
    capture_support::epcache_cc(
        dir.path(),
        &[
            "gcc",
            "-O1",
            "-fopenmp",
            source.to_str().unwrap(),
            "-o",
            "axpy",
        ],
    );
    let (child, tool) = start_waiting(
        &dir.path().join("axpy"),
        &dir.path().join("run"),
        &[("EPCACHE_CACHE", TWO_LEVELS), ("OMP_NUM_THREADS", "2")],
    );
    let regions = tool.regions().unwrap();
    let b = tool
        .data_structures()
        .unwrap()
        .into_iter()
        .find(|d| d.name == "b")
        .unwrap();
    let mut placed = Vec::new();
    for name in ["axpy._omp_fn.0", "axpy"] {
        let region = regions.iter().find(|r| r.name == name).unwrap();
        let request = |mode| RequestSpec {
            region: region.index,
            target: RequestTarget::DataStructure(b.index),
            event: "PAPI_L1_DCR".parse().unwrap(),
            mode,
            aggregation: Aggregation::Summed,
            analyses: 0,
        };
        let count = tool.submit(&request(Mode::Static)).unwrap();
        let histogram = tool
            .submit(&request(Mode::Histogram {
                buckets: 4,
                bucket_bytes: 0,
            }))
            .unwrap();
        placed.push((name, count, histogram));
    }
    tool.release().unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // N = 1000000 elements of b, each read once, by one thread or the other.
    let n = 1_000_000;
    for (name, count, histogram) in placed {
        let count = tool.read_result(count).unwrap().unwrap().sum();
        assert_eq!(count.instances, 2, "{name}: one instance per thread");
        assert_eq!(count.total, n, "{name}");
        let histogram = tool.read_result(histogram).unwrap().unwrap().sum();
        assert_eq!(histogram.total, n, "{name}");
        // A static schedule: each thread reads its half, so every quarter is there.
        assert_eq!(histogram.buckets.len(), 4, "{name}");
        for bucket in &histogram.buckets {
            assert!(
                (n / 4 - 64..=n / 4 + 64).contains(bucket),
                "{name}: {:?}",
                histogram.buckets
            );
        }
    }
}
