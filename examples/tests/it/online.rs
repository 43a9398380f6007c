//! The incremental online-analysis tool program (`src/online.rs`) on `examples/c/heat.c`, a
//! time-stepped relaxation whose `relax` sweeps a band of U's rows column by column, with a 32 KB
//! 8-way 64 B-line L1.
//!
//! Hand counts behind the assertions: U's rows are 2 KB (32 lines). Row by row, relax loads
//! each line of U once per instance; in the band (rows 96 to 127), a column touches 34 lines
//! 2 KB apart that fall into 2 sets of 8 ways, so every line is gone by the next column and the
//! band's 12.5% of U's bytes hold about half of relax's misses. smooth and source miss once per
//! line of what they touch, so relax's U is the worst pair per instance by a factor of two.
//! The tool must find exactly that: the pair, then the band, with the histogram's buckets summing
//! to the static count beside it and the survey agreeing with the standalone report and, for the
//! whole function, with Cachegrind.

use crate::support::{self, Build, Shape, assert_within};

const WHO: &str = "online analysis tool";
const ROW_BYTES: u64 = 256 * 8;
const BAND: std::ops::Range<u64> = 96..128;
const STEPS: u64 = 6;
const LINE: u64 = 64;
/// The L1 of the hand counts, and an L2 below it.
const SHAPE: Shape = Shape {
    i1: Shape::ANY_I1,
    d1: (32 << 10, 8, 64),
    ll: (1 << 20, 16, 64),
};

const HEAT: Build<'static> = Build {
    compiler: "gcc",
    source: "c/heat.c",
    opt: "-O1",
    extra: &[],
    libs: &[],
};

#[test]
fn the_online_tool_finds_the_band_relax_sweeps_by_columns() {
    if !support::tools_available(WHO, &["gcc", "valgrind"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let program = HEAT.with_epcache(dir.path(), "heat");
    let options = epcache_examples::online::OnlineOptions {
        launch: support::quiet_launch(&program, &[], &SHAPE),
        event: "PAPI_L1_DCM".into(),
        survey_instances: 2,
        buckets: 25,
    };
    let finding = epcache_examples::block_on(epcache_examples::online::analyse(&options, |m| {
        eprintln!("{m}")
    }))
    .unwrap()
    .unwrap_or_else(|e| panic!("the online analysis of heat.c: {e}"));
    eprintln!("{}", epcache_examples::online::render(&finding));

    // The decision.
    assert_eq!(
        (finding.region.as_str(), finding.structure.as_str()),
        ("relax", "U")
    );
    let worst = &finding.survey[0];
    let runner_up = &finding.survey[1];
    assert!(
        worst.per_instance() > 1.8 * runner_up.per_instance(),
        "relax's U should stand out: {:?}",
        finding.survey
    );
    // The survey's counts are the standalone report's, per instance (every step is alike).
    let report = support::run_with_report(&program, &[], &SHAPE);
    for entry in &finding.survey {
        let l1 = report.data_structure_l1(&entry.region, &entry.structure);
        let whole_run = l1.read_misses + l1.write_misses;
        let instances = report.instances(&entry.region);
        assert_eq!(
            entry.count * instances,
            whole_run * entry.instances,
            "{} in {}: the survey's {} over {} instances vs the report's {whole_run} over {instances}",
            entry.structure,
            entry.region,
            entry.count,
            entry.instances
        );
    }
    assert_eq!(report.instances("relax"), STEPS);
    // relax touches only U, so its U misses are all of the function's: Cachegrind's too.
    let cg = support::cachegrind(&HEAT.plain(dir.path(), "heat-plain"), &[], &SHAPE);
    assert_within(
        "relax: L1 misses per instance vs Cachegrind's",
        worst.per_instance(),
        cg.function("relax").misses() as f64 / STEPS as f64,
        0.03,
    );

    // Where: the coarse histogram.
    let u = finding.structure_range.clone();
    let band = u.start + BAND.start * ROW_BYTES..u.start + BAND.end * ROW_BYTES;
    let coarse = finding
        .coarse
        .as_ref()
        .expect("relax ran again after the survey");
    let total: u64 = coarse.histogram.buckets.iter().map(|b| b.count).sum();
    assert_eq!(total, coarse.static_count, "buckets vs the static count");
    assert_eq!(
        total as f64,
        worst.per_instance(),
        "one instance, as surveyed"
    );
    let bucket = coarse.histogram.request.bucket_bytes;
    assert!(
        coarse.hot.start + bucket > band.start && coarse.hot.end < band.end + bucket,
        "hot span {:?} is not the band {band:?}",
        coarse.hot
    );
    assert!(coarse.hot_share >= 0.5);
    // Away from the band (and the rows beside it, which the column sweep also reads), each line
    // misses once.
    let near_band = band.start - ROW_BYTES..band.end + ROW_BYTES;
    for b in &coarse.histogram.buckets {
        if b.range.end <= near_band.start || b.range.start >= near_band.end {
            let lines = (b.range.end - b.range.start).div_ceil(LINE);
            assert!(
                b.count.abs_diff(lines) <= 1,
                "bucket {:?} away from the band: {} misses for {lines} lines",
                b.range,
                b.count
            );
        }
    }

    // The zoom: inside the band the misses are even (within 10%: the band's first row also
    // misses the lines the row-wise part left), and the rows before it miss far less.
    let zoom = finding.zoom.as_ref().expect("the hot span is narrow");
    let total: u64 = zoom.histogram.buckets.iter().map(|b| b.count).sum();
    assert_eq!(total, zoom.static_count);
    let inside: Vec<u64> = zoom
        .histogram
        .buckets
        .iter()
        .filter(|b| b.range.start >= band.start && b.range.end <= band.end)
        // The span's last bucket may be narrower than the rest.
        .filter(|b| b.range.end - b.range.start == zoom.histogram.request.bucket_bytes)
        .map(|b| b.count)
        .collect();
    assert!(inside.len() >= 10, "{:?}", zoom.histogram.buckets);
    let mean = inside.iter().sum::<u64>() as f64 / inside.len() as f64;
    for count in &inside {
        assert_within(
            "a bucket inside the band vs their mean",
            *count as f64,
            mean,
            0.1,
        );
    }
    let before: Vec<u64> = zoom
        .histogram
        .buckets
        .iter()
        .filter(|b| b.range.end <= band.start - ROW_BYTES)
        .map(|b| b.count)
        .collect();
    assert!(
        before.iter().all(|&c| (c as f64) < 0.2 * mean),
        "rows before the band should miss once per line: {before:?} vs {mean}"
    );
}
