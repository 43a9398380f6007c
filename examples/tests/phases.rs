//! A DTrack-style phase example (`examples/c/phases.c`) with DTrack's caches (64 KB 2-way DL1,
//! 512 KB direct-mapped L2, 64 B lines): which data structure misses changes from phase to phase,
//! which whole-run totals hide.
//!
//! The hand counts behind the assertions (see the program's comment for the phases):
//! - stream, 16 intervals: X's 256 KB chunk misses once per 8-double line (16 x 4096), Y's 16 KB
//!   window stays in the L1 but is loaded again each time stream follows another phase (4 x 256
//!   lines at most);
//! - stride, 8 intervals: one read per line over 256 KB of Y, 4 passes: every read misses;
//! - chase, 8 intervals: 4 passes over 4096 nodes of 64 B (a 256 KB block): one miss per node
//!   visit (a node's `next` and `value` share a line).
//!
//! The timeline per interval needs a tool stepping the "interval" marker region by region; the
//! standalone report gives the totals per phase function and per data structure, checked here.

mod support;

use std::sync::OnceLock;

use support::{Build, CgRun, L1, Shape, assert_agrees_with_cachegrind, assert_within};

const WHO: &str = "DTrack-style phase example";
const STREAM_CALLS: u64 = 16;
const CHUNK_DOUBLES: u64 = 1 << 15;
const STREAM_MISSES: u64 = STREAM_CALLS * CHUNK_DOUBLES / 8;
const Y_WINDOW_LINES: u64 = 256;
const STRIDE_READS: u64 = 8 * 4 * (1 << 15) / 8;
const CHASE_VISITS: u64 = 8 * 4 * 4096;

const PHASES: Build<'static> = Build {
    compiler: "gcc",
    source: "c/phases.c",
    opt: "-O1",
    extra: &[],
    libs: &[],
};

fn cachegrind() -> &'static CgRun {
    static RUN: OnceLock<CgRun> = OnceLock::new();
    RUN.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let program = PHASES.plain(dir.path(), "phases");
        support::cachegrind(&program, &[], &Shape::DTRACK)
    })
}

/// The hand counts on each phase's (reads, read misses); 1% for a tool's extra stack reads.
fn check_phases(tool: &str, stream: (u64, u64), stride: (u64, u64), chase: (u64, u64)) {
    assert_within(
        &format!("{tool} phase_stream reads"),
        stream.0 as f64,
        (2 * STREAM_CALLS * CHUNK_DOUBLES) as f64,
        0.01,
    );
    assert!(
        (STREAM_MISSES..=STREAM_MISSES + 4 * Y_WINDOW_LINES + 32).contains(&stream.1),
        "{tool} phase_stream: {} read misses, expected X's {STREAM_MISSES} plus at most Y's \
         reloads",
        stream.1
    );
    assert_within(
        &format!("{tool} phase_stride reads"),
        stride.0 as f64,
        STRIDE_READS as f64,
        0.01,
    );
    assert!(
        stride.1 as f64 >= 0.99 * STRIDE_READS as f64,
        "{tool} phase_stride: only {} of {STRIDE_READS} reads missed",
        stride.1
    );
    assert_within(
        &format!("{tool} phase_chase reads"),
        chase.0 as f64,
        (2 * CHASE_VISITS) as f64,
        0.01,
    );
    assert_within(
        &format!("{tool} phase_chase read misses"),
        chase.1 as f64,
        CHASE_VISITS as f64,
        0.01,
    );
}

#[test]
fn cachegrind_sees_the_phases() {
    if !support::tools_available(WHO, &["gcc", "valgrind"]) {
        return;
    }
    let run = cachegrind();
    assert!(run.stdout.contains("16 stream chunks"), "{}", run.stdout);
    let counts = |f| {
        let c = run.function(f);
        (c.dr, c.d1mr)
    };
    check_phases(
        "Cachegrind",
        counts("phase_stream"),
        counts("phase_stride"),
        counts("phase_chase"),
    );
}

#[test]
fn epcache_sees_each_phase_in_its_own_data_structure() {
    if !support::tools_available(WHO, &["gcc", "valgrind"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let program = PHASES.with_epcache(dir.path(), "phases");
    let report = support::run_with_report(&program, &[], &Shape::DTRACK);
    assert!(
        report.stdout.contains("16 stream chunks"),
        "{}",
        report.stdout
    );
    let cg = cachegrind();
    support::assert_program_agrees_with_cachegrind(&report, cg, "c/phases.c");
    let mut counts = Vec::new();
    for (function, calls) in [
        ("phase_stream", STREAM_CALLS),
        ("phase_stride", 8),
        ("phase_chase", 8),
    ] {
        assert_eq!(report.instances(function), calls, "{function}");
        let region = report.region_l1(function);
        assert_agrees_with_cachegrind(function, region, cg.function(function));
        counts.push((region.reads, region.read_misses));
    }
    check_phases("epcache", counts[0], counts[1], counts[2]);

    let site = format!(
        "phases.c:{}",
        support::line_of("c/phases.c", "nodes = malloc(")
    );
    let ds = |region: &str, name: &str| report.data_structure_l1_or_zero(region, name);
    // stream: X's misses are all the phase's but Y's few reloads; the nodes are untouched.
    let (x, y) = (ds("phase_stream", "X"), ds("phase_stream", "Y"));
    assert_eq!(x.reads, STREAM_CALLS * CHUNK_DOUBLES);
    assert_eq!(y.reads, STREAM_CALLS * CHUNK_DOUBLES);
    assert_eq!(x.read_misses, STREAM_MISSES, "stream X: {x:?}");
    assert!(y.read_misses <= 4 * Y_WINDOW_LINES, "stream Y: {y:?}");
    // stride: Y misses on every read; X is idle.
    let (x, y) = (ds("phase_stride", "X"), ds("phase_stride", "Y"));
    assert_eq!(x, L1::default(), "stride X");
    assert_eq!(y.reads, STRIDE_READS);
    assert!(y.read_misses as f64 >= 0.99 * STRIDE_READS as f64, "{y:?}");
    // chase: the nodes' block, named by its allocation site, holds every miss; X and Y are idle.
    assert_eq!(ds("phase_chase", "X"), L1::default(), "chase X");
    assert_eq!(ds("phase_chase", "Y"), L1::default(), "chase Y");
    let nodes = report.data_structure_l1("phase_chase", &site);
    assert_eq!(nodes.reads, 2 * CHASE_VISITS, "chase nodes: {nodes:?}");
    assert_within(
        "chase: misses of the nodes",
        nodes.read_misses as f64,
        CHASE_VISITS as f64,
        0.01,
    );
    // The marker around each interval ran 32 times and holds all three phases.
    assert_eq!(report.instances("interval"), 32);
    let interval = report.region_l1("interval");
    let phase_reads: u64 = counts.iter().map(|c| c.0).sum();
    assert_within(
        "interval reads vs the phases'",
        interval.reads as f64,
        phase_reads as f64,
        0.001,
    );
}
