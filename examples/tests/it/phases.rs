//! A DTrack-style phase example (`examples/c/phases.c`) with DTrack's caches (64 KB 2-way DL1,
//! 512 KB direct-mapped L2, 64 B lines): which data structure misses changes from phase to phase,
//! which whole-run totals hide.
//!
//! The hand counts behind the assertions (see the program's comment for the phases):
//! - stream, 16 intervals: X's 256 KB chunk misses once per 8-double line (16 x 4096), Y's 16 KB
//!   window stays in the L1 but is loaded again each time stream follows another phase (4 x 256
//!   lines at most), plus a few misses per call where the call's stack line shares a set with X
//!   and Y (where the stack lies moves with the environment's size: Cachegrind counted 16, 28
//!   or 40 such misses over the 16 calls as the environment grew by 512-byte steps);
//! - stride, 8 intervals: one read per line over 256 KB of Y, 4 passes: every read misses;
//! - chase, 8 intervals: 4 passes over 4096 nodes of 64 B (a 256 KB block): one miss per node
//!   visit (a node's `next` and `value` share a line).
//!
//! The standalone report gives the totals per phase function and per data structure; the
//! timeline per interval comes from the `timeline` tool program, which halts the program at every
//! entry and exit of the "interval" marker. Both are checked here, and against each other.

use std::sync::OnceLock;

use crate::support::{self, Build, CgRun, L1, Shape, assert_agrees_with_cachegrind, assert_within};

const WHO: &str = "DTrack-style phase example";
const STREAM_CALLS: u64 = 16;
const CHUNK_DOUBLES: u64 = 1 << 15;
const STREAM_MISSES: u64 = STREAM_CALLS * CHUNK_DOUBLES / 8;
const Y_WINDOW_LINES: u64 = 256;
/// At most four misses per stream call from its stack line evicting, and being evicted by, a
/// line of X or Y in a shared set.
const STACK_MISSES: u64 = 4 * STREAM_CALLS;
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
        (STREAM_MISSES..=STREAM_MISSES + 4 * Y_WINDOW_LINES + STACK_MISSES).contains(&stream.1),
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

#[test]
fn the_timeline_tool_shows_each_phase_in_its_interval() {
    if !support::tools_available(WHO, &["gcc"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let program = PHASES.with_epcache(dir.path(), "phases");
    let options = epcache_examples::timeline::TimelineOptions {
        launch: support::quiet_launch(&program, &[], &Shape::DTRACK),
        interval: "interval".into(),
        event: "PAPI_L1_DCM".into(),
    };
    let timeline = epcache_examples::block_on(epcache_examples::timeline::record(&options, |_| {}))
        .unwrap()
        .unwrap_or_else(|e| panic!("recording the timeline: {e}"));
    // Every interval is there, the first included: the marker is met before its requests exist,
    // and what the tool places while the program waits at its entry covers that instance.
    assert_eq!(timeline.intervals.len(), 32);
    let site = format!(
        "phases.c:{}",
        support::line_of("c/phases.c", "nodes = malloc(")
    );
    let series = |name: &str| {
        timeline
            .series(name)
            .unwrap_or_else(|| panic!("no column {name} in {:?}", timeline.structures))
    };
    let (x, y, nodes) = (series("X"), series("Y"), series(&site));
    let chunk_lines = CHUNK_DOUBLES / 8;
    let stride_misses = STRIDE_READS / 8;
    let chase_misses = CHASE_VISITS / 8;
    for k in 0..32 {
        let at = |what: &str, v: &[u64]| format!("interval {k}: {what} {}", v[k]);
        match k / 4 % 4 {
            0 | 2 => {
                // stream: X's chunk misses once per line; Y's window comes back after another
                // phase and then stays.
                assert_eq!(x[k], chunk_lines, "{}", at("X", &x));
                assert!(y[k] <= Y_WINDOW_LINES, "{}", at("Y", &y));
                assert_eq!(nodes[k], 0, "{}", at("nodes", &nodes));
            }
            1 => {
                assert_eq!(x[k], 0, "{}", at("X", &x));
                assert!(
                    y[k] >= stride_misses - Y_WINDOW_LINES && y[k] <= stride_misses,
                    "{}",
                    at("Y", &y)
                );
                assert_eq!(nodes[k], 0, "{}", at("nodes", &nodes));
            }
            _ => {
                assert_eq!((x[k], y[k]), (0, 0), "interval {k}: chase touches X or Y");
                assert_within(
                    &format!("interval {k}: misses of the nodes"),
                    nodes[k] as f64,
                    chase_misses as f64,
                    0.01,
                );
            }
        }
    }
    // The timeline sums to the whole-run totals of the standalone report.
    let report = support::run_with_report(&program, &[], &Shape::DTRACK);
    let misses = |region: &str, name: &str| {
        let l1 = report.data_structure_l1_or_zero(region, name);
        l1.read_misses + l1.write_misses
    };
    assert_eq!(x.iter().sum::<u64>(), misses("interval", "X"));
    assert_eq!(y.iter().sum::<u64>(), misses("interval", "Y"));
    assert_eq!(nodes.iter().sum::<u64>(), misses("interval", &site));
}
