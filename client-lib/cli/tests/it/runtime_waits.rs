//! A target never waits forever, and never silently: `EPCACHE_WAIT` with no tool coming gives
//! up after its time, with no segment it says it does not wait, and a target halted at a
//! halting point goes on by itself once its tool has gone (detached, as a killed tool is).

use std::process::Command;
use std::time::{Duration, Instant};

use epcache_shm::layout::Boundary;

use crate::capture_support::{build_gauss_regions, run_to, start_waiting};

#[test]
fn a_start_wait_with_no_tool_gives_up_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let Some(program) =
        build_gauss_regions(dir.path(), "a_start_wait_with_no_tool_gives_up_and_says_so")
    else {
        return;
    };
    let started = Instant::now();
    let out = Command::new(&program)
        .env("EPCACHE_WAIT", "1")
        .env("EPCACHE_RUNTIME_DIR", dir.path().join("run"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "it did not wait"
    );
    assert!(stderr.contains("waits up to 1 s for a tool"), "{stderr}");
    assert!(
        stderr.contains("no tool released the program within 1 s; continuing without a tool"),
        "{stderr}"
    );

    // No segment: nothing to wait for, and it says why it does not.
    let started = Instant::now();
    let out = Command::new(&program)
        .env("EPCACHE_WAIT", "60")
        .env("EPCACHE_MCC", "off")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(started.elapsed() < Duration::from_secs(30), "it waited");
    assert!(
        stderr.contains("EPCACHE_WAIT=60 is set, but this program has no segment"),
        "{stderr}"
    );
}

#[test]
fn a_halted_target_goes_on_when_its_tool_goes_away() {
    let dir = tempfile::tempdir().unwrap();
    let Some(program) = build_gauss_regions(
        dir.path(),
        "a_halted_target_goes_on_when_its_tool_goes_away",
    ) else {
        return;
    };
    let (child, tool) = start_waiting(&program, &dir.path().join("run"), &[]);
    let original = tool
        .regions()
        .unwrap()
        .into_iter()
        .find(|r| r.name == "original")
        .unwrap();
    run_to(&tool, original.index, Boundary::Entry);

    // The tool goes away without releasing it: its attachment ends as a killed tool's does.
    drop(tool);
    let gone = Instant::now();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        gone.elapsed() < Duration::from_secs(20),
        "it took {:?} to go on",
        gone.elapsed()
    );
    assert!(
        stderr.contains("halted, but no tool is attached to segment"),
        "{stderr}"
    );
}
