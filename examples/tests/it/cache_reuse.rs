//! The cache-reuse example of Weidendorfer and Trinitis (Table 1) reproduced on a real program
//! (`examples/c/reuse.c`) with their Pentium M's caches (32 KB and 1 MB, 8-way, 64 B lines):
//! a row-wise sum over `int m[1000][1000]` loads 62,500 lines into the L1, a column-wise one
//! 999,992.
//!
//! The paper's "L1 loads" are L1 misses; its temporal reuse is accesses per load (16 row-wise,
//! 1 column-wise), which the counts give. Its L2 loads are 62,500 and 60,190: the column-wise
//! pass finds 2,310 lines still in the L2 from the row-wise one. Our layout puts m on a line
//! boundary, so row-wise is exactly 62,500 and column-wise every access misses (1,000,000; the
//! paper's m kept 8 lines); Cachegrind agrees, and counts 60,191 L2 loads. Allowed: 0.1% of the
//! paper's figures (about 1,000 column-wise loads, a few L2 lines).
//!
//! Spatial use (100% vs 6%) and temporal reuse per line residency come from the reuse analysis,
//! which a tool requests: the `metric_table` tool program's measurement is checked against the
//! hand counts (a row-wise line is used whole, 16 ints of 4 B in 64 B; a column-wise one for one
//! int, 4 of 64 bytes, 6.25%) and against the standalone report's counts of the same program.

use std::sync::OnceLock;

use crate::support::{self, Build, CgRun, Shape, assert_agrees_with_cachegrind, assert_within};

const WHO: &str = "cache-reuse reproduction";
const ELEMENTS: u64 = 1_000_000;
/// (function, paper's L1 loads, paper's L2 loads, paper's L1 temporal reuse)
const PAPER: [(&str, f64, f64, f64); 2] = [
    ("sum_rows", 62_500.0, 62_500.0, 16.0),
    ("sum_cols", 999_992.0, 60_190.0, 1.0),
];
const TOLERANCE: f64 = 0.001;

const REUSE: Build<'static> = Build {
    compiler: "gcc",
    source: "c/reuse.c",
    opt: "-O1",
    extra: &[],
    libs: &[],
};

fn cachegrind() -> &'static CgRun {
    static RUN: OnceLock<CgRun> = OnceLock::new();
    RUN.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let program = REUSE.plain(dir.path(), "reuse");
        support::cachegrind(&program, &[], &Shape::PENTIUM_M)
    })
}

/// Table 1 against one tool's (L1 reads, L1 loads, L2 loads) for each sum.
fn check_against_the_paper(tool: &str, counts: [(u64, u64, u64); 2]) {
    for ((function, l1_loads, l2_loads, reuse), (reads, ours_l1, ours_l2)) in
        PAPER.iter().zip(counts)
    {
        assert_within(
            &format!("{tool} {function}: reads"),
            reads as f64,
            ELEMENTS as f64,
            TOLERANCE,
        );
        assert_within(
            &format!("{tool} {function}: L1 loads"),
            ours_l1 as f64,
            *l1_loads,
            TOLERANCE,
        );
        assert_within(
            &format!("{tool} {function}: L2 loads"),
            ours_l2 as f64,
            *l2_loads,
            TOLERANCE,
        );
        assert_within(
            &format!("{tool} {function}: L1 temporal reuse"),
            reads as f64 / ours_l1 as f64,
            *reuse,
            TOLERANCE,
        );
    }
}

#[test]
fn cachegrind_reproduces_the_cache_reuse_table() {
    if !support::tools_available(WHO, &["gcc", "valgrind"]) {
        return;
    }
    let run = cachegrind();
    assert!(run.stdout.contains("row-wise sum"), "{}", run.stdout);
    let counts = PAPER.map(|(function, ..)| {
        let c = run.function(function);
        (c.dr, c.d1mr, c.dlmr)
    });
    check_against_the_paper("Cachegrind", counts);
}

#[test]
fn epcache_reproduces_the_cache_reuse_table() {
    if !support::tools_available(WHO, &["gcc", "valgrind"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let program = REUSE.with_epcache(dir.path(), "reuse");
    let report = support::run_with_report(&program, &[], &Shape::PENTIUM_M);
    assert!(report.stdout.contains("row-wise sum"), "{}", report.stdout);
    let cg = cachegrind();
    support::assert_program_agrees_with_cachegrind(&report, cg, "c/reuse.c");
    let counts = PAPER.map(|(function, ..)| {
        let region = report.region_l1(function);
        assert_agrees_with_cachegrind(function, region, cg.function(function));
        let l2 = report.region_event(function, "PAPI_L2_LDM");
        assert_within(
            &format!("{function}: L2 read misses vs Cachegrind's"),
            l2 as f64,
            cg.function(function).dlmr as f64,
            0.03,
        );
        // Every access is to m, and every miss.
        let m = report.data_structure_l1(function, "m");
        assert_eq!((m.reads, m.writes), (ELEMENTS, 0), "{function}: m");
        assert_eq!(m.read_misses, region.read_misses, "{function}: m's misses");
        (m.reads, m.read_misses, l2)
    });
    check_against_the_paper("epcache", counts);
}

#[test]
fn a_tool_measures_the_spatial_use_and_temporal_reuse_of_each_sum() {
    if !support::tools_available(WHO, &["gcc"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let program = REUSE.with_epcache(dir.path(), "reuse");
    let tables =
        support::metric_tables(&program, &[], &Shape::PENTIUM_M, &["sum_rows", "sum_cols"]);
    let report = support::run_with_report(&program, &[], &Shape::PENTIUM_M);
    // (function, spatial use, temporal reuse): the hand counts above.
    for (table, (function, spatial, temporal)) in tables
        .iter()
        .zip([("sum_rows", 1.0, 16.0), ("sum_cols", 4.0 / 64.0, 1.0)])
    {
        assert_eq!(table.region, function);
        assert_eq!(table.instances, 1, "{function}");
        let m = table
            .rows
            .iter()
            .find(|r| r.name == "m")
            .unwrap_or_else(|| panic!("{function}: no row for m in {table:?}"));
        // The tool's counts through the segment are the standalone report's.
        let standalone = report.data_structure_l1(function, "m");
        assert_eq!(
            (m.counts.reads, m.counts.read_misses),
            (standalone.reads, standalone.read_misses),
            "{function}: the tool's counts of m vs the standalone report's"
        );
        let got = m.spatial_use.expect("the reuse analysis ran");
        assert_within(
            &format!("{function}: spatial use of m"),
            got,
            spatial,
            TOLERANCE,
        );
        let got = m.temporal_reuse.expect("the reuse analysis ran");
        assert_within(
            &format!("{function}: temporal reuse of m"),
            got,
            temporal,
            TOLERANCE,
        );
        // m evicts only itself: nothing else lives in these loops.
        assert!(
            table
                .evictors
                .iter()
                .all(|(victim, by, _)| victim == "m" && by == "m"),
            "{function}: {:?}",
            table.evictors
        );
    }
}

/// A request may name the whole address space, with an analysis on it: the target serves it
/// (it once overflowed computing the range's bucket width and aborted) and every miss of the
/// row-wise sum is compulsory to the analysis, which starts empty at the region's entry.
#[test]
fn a_tool_may_analyse_the_whole_address_space() {
    if !support::tools_available(WHO, &["gcc"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let program = REUSE.with_epcache(dir.path(), "reuse");
    let launch = support::quiet_launch(&program, &[], &Shape::PENTIUM_M);
    let (status, result, misses) = epcache_examples::block_on(async {
        let mut target = epcache_client::LocalTarget::launch(launch).await.unwrap();
        let pid = target.pid();
        let everything = epcache_examples::WHOLE_ADDRESS_SPACE;
        let placed = target
            .client()
            .requests(
                pid,
                &[
                    epcache_client::Request::count("sum_rows", everything.clone(), "PAPI_L1_DCM")
                        .analysis(epcache_client::Analysis::MissClasses),
                    epcache_client::Request::count("sum_rows", everything, "PAPI_L1_DCM"),
                ],
            )
            .await
            .unwrap();
        let status = target.run_to_end().await.unwrap();
        let ids: Vec<u64> = placed.iter().map(|p| p.id).collect();
        let mut results = target.client().results(pid, &ids).await.unwrap();
        let misses = results.pop().unwrap().total;
        (status, results.pop().unwrap(), misses)
    })
    .unwrap();
    assert!(status.success(), "the target ended with {status}");
    assert!(result.available, "{result:?}");
    let report = result.analysis.as_ref().expect("a report");
    let classes = report.miss_classes.expect("miss classes were asked for");
    assert_eq!(classes.total(), misses, "{classes:?}");
    assert_eq!(classes.compulsory, misses, "{classes:?}");
    assert_within("sum_rows misses", misses as f64, 62_500.0, TOLERANCE);
}
