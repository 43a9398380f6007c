//! The tool programs on a program whose arrays are all on the heap (`examples/c/heat_heap.c`,
//! heat.c's relaxation with U, V and F `posix_memalign`'d): they learn each grid when it is
//! allocated, by its allocation line, and measure it as they measure heat.c's globals (issue 31).
//!
//! - `online` names U (`heat_heap.c:LINE`) in relax as the worst pair and its band of rows as the
//!   hot span; its survey counts are the standalone report's, per instance;
//! - `metric_table` prints one row per grid in each kernel with reads, writes, hits, misses,
//!   temporal reuse and spatial use, equal to the standalone report's counts, and the evictor
//!   table;
//! - a tool's error is printed as `epcache`'s are (`tool: message`, its causes, exit 1), never
//!   with a backtrace, whatever `RUST_BACKTRACE` says; and a program with nothing to survey is
//!   told the true reason.
//!
//! The cache is online.rs's (32 KB 8-way 64 B-line L1): see heat.c for the hand counts. The grids
//! are line-aligned, so a row of U is 32 whole lines as there.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::support::{self, Build, Shape};

const WHO: &str = "tool programs on heap arrays";
const ROW_BYTES: u64 = 256 * 8;
const BAND: std::ops::Range<u64> = 96..128;
const STEPS: u64 = 6;
const SHAPE: Shape = Shape {
    i1: Shape::ANY_I1,
    d1: (32 << 10, 8, 64),
    ll: (1 << 20, 16, 64),
};

const HEAT_HEAP: Build<'static> = Build {
    compiler: "gcc",
    source: "c/heat_heap.c",
    opt: "-O1",
    extra: &[],
    libs: &[],
};

/// `heat_heap.c:LINE` of the grid `name` (U, V or F): the line of its `posix_memalign`.
fn site(name: &str) -> String {
    let line = support::line_of("c/heat_heap.c", &format!("posix_memalign((void **)&{name}"));
    format!("heat_heap.c:{line}")
}

/// Runs tool program `tool` (one of this package's binaries) with `args`, with
/// `RUST_BACKTRACE=1` as a developer's shell may have it.
fn tool(tool: &str, args: &[&str]) -> Output {
    let binary = match tool {
        "online" => env!("CARGO_BIN_EXE_online"),
        "metric_table" => env!("CARGO_BIN_EXE_metric_table"),
        "timeline" => env!("CARGO_BIN_EXE_timeline"),
        _ => panic!("no tool program {tool}"),
    };
    Command::new(binary)
        .args(args)
        .env("RUST_BACKTRACE", "1")
        .output()
        .unwrap_or_else(|e| panic!("running {tool}: {e}"))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn heat_heap(dir: &Path) -> PathBuf {
    HEAT_HEAP.with_epcache(dir, "heat_heap")
}

/// `online --cache SPEC -- ./heat_heap` prints `worst: heat_heap.c:LINE in relax` (U's line) and,
/// for the histogram over the whole of U, a hot span on the band of rows relax sweeps by columns.
#[test]
fn online_names_the_worst_heap_array_by_its_allocation_line_and_its_hot_band() {
    if !support::tools_available(WHO, &["gcc"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let program = heat_heap(dir.path());
    let spec = SHAPE.epcache_spec();
    let out = tool(
        "online",
        &["--cache", &spec, "--", program.to_str().unwrap()],
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let u = site("U");
    assert!(
        stdout.contains(&format!("\nworst: {u} in relax\n")),
        "U by its allocation line, in relax:\n{stdout}"
    );
    assert!(
        stderr.contains(&format!("heap array {u} (524288 bytes) joins the survey")),
        "{stderr}"
    );
    // The first histogram is over the whole of U: its buckets' offsets, and its hot span.
    let whole = stdout
        .split(&format!("of {u} in relax, whole structure"))
        .nth(1)
        .unwrap_or_else(|| panic!("no histogram over the whole of U:\n{stdout}"));
    let bucket = whole
        .lines()
        .nth(1)
        .and_then(|l| {
            let (start, end) = l.trim_start_matches([' ', '*']).split_once("..")?;
            let end = end.split_whitespace().next()?;
            Some(end.parse::<u64>().ok()? - start.trim().parse::<u64>().ok()?)
        })
        .unwrap_or_else(|| panic!("no first bucket in:\n{whole}"));
    let hot_line = whole
        .lines()
        .find(|l| l.contains("hot span (*): bytes"))
        .unwrap_or_else(|| panic!("no hot span in:\n{whole}"));
    let span = hot_line
        .split("bytes ")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .and_then(|s| s.split_once(".."))
        .and_then(|(a, b)| Some((a.parse::<u64>().ok()?, b.parse::<u64>().ok()?)))
        .unwrap_or_else(|| panic!("unreadable hot span: {hot_line}"));
    assert!(hot_line.contains(&format!("of {u},")), "{hot_line}");
    let band = BAND.start * ROW_BYTES..BAND.end * ROW_BYTES;
    assert!(
        span.0 + bucket > band.start && span.1 < band.end + bucket,
        "hot span {span:?} (buckets of {bucket} bytes) is not the band {band:?}:\n{stdout}"
    );
}

/// The survey, the decision and the histograms of `online`'s library on heat_heap.c, as
/// online.rs checks them on heat.c.
#[test]
fn the_online_analysis_counts_heap_arrays_as_the_standalone_report() {
    if !support::tools_available(WHO, &["gcc"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let program = heat_heap(dir.path());
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
    .unwrap_or_else(|e| panic!("the online analysis of heat_heap.c: {e}"));
    eprintln!("{}", epcache_examples::online::render(&finding));
    let u = site("U");
    assert_eq!(
        (finding.region.as_str(), finding.structure.as_str()),
        ("relax", u.as_str())
    );
    let surveyed: Vec<&str> = finding
        .survey
        .iter()
        .map(|e| e.structure.as_str())
        .collect();
    for grid in ["U", "V", "F"] {
        assert!(
            surveyed.contains(&site(grid).as_str()),
            "{grid} was surveyed: {surveyed:?}"
        );
    }
    let (worst, runner_up) = (&finding.survey[0], &finding.survey[1]);
    assert!(
        worst.per_instance() > 1.8 * runner_up.per_instance(),
        "relax's U should stand out: {:?}",
        finding.survey
    );
    // Every pair's count is the standalone report's, per instance (every step is alike, and
    // each grid joined the survey before the first instance of every kernel).
    let report = support::run_with_report(&program, &[], &SHAPE);
    assert_eq!(report.instances("relax"), STEPS);
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
    // The histogram bound to U's block: its range is the block's, its buckets sum to the count.
    let coarse = finding.coarse.as_ref().expect("relax ran again");
    assert_eq!(
        finding.structure_range.end - finding.structure_range.start,
        256 * ROW_BYTES
    );
    assert_eq!(coarse.histogram.request.range, finding.structure_range);
    let total: u64 = coarse.histogram.buckets.iter().map(|b| b.count).sum();
    assert_eq!(total, coarse.static_count);
    assert_eq!(total as f64, worst.per_instance());
    let zoom = finding.zoom.as_ref().expect("the hot span is narrow");
    let total: u64 = zoom.histogram.buckets.iter().map(|b| b.count).sum();
    assert_eq!(total, zoom.static_count);
}

/// One row of a `metric_table` table: (reads, writes, hits, misses, temporal use, spatial use).
type Row = (u64, u64, u64, u64, String, String);
/// One line of an evictor table: (victim, evictor, lines).
type Eviction = (String, String, u64);

/// The rows of region `region`'s table in `metric_table`'s output, by name, and whether the
/// table has an evictor part naming `victim` evicted by `evictor`.
fn metric_rows(output: &str, region: &str) -> (Vec<(String, Row)>, Vec<Eviction>) {
    let table = output
        .split("\n\n")
        .find(|t| t.trim_start().starts_with(&format!("{region} (")))
        .unwrap_or_else(|| panic!("no table for {region} in:\n{output}"));
    let mut rows = Vec::new();
    let mut evictors = Vec::new();
    let mut in_evictors = false;
    for line in table.lines().skip(2) {
        let words: Vec<&str> = line.split_whitespace().collect();
        if words.first() == Some(&"evicted") {
            in_evictors = true;
            continue;
        }
        if in_evictors {
            evictors.push((
                words[0].to_owned(),
                words[1].to_owned(),
                words[2].parse().unwrap(),
            ));
            continue;
        }
        // "(whole region)" is two words.
        let (name, numbers) = if words[0] == "(whole" {
            ("(whole region)".to_owned(), &words[2..])
        } else {
            (words[0].to_owned(), &words[1..])
        };
        let n = |i: usize| numbers[i].parse::<u64>().unwrap();
        rows.push((
            name,
            (
                n(0),
                n(1),
                n(2),
                n(3),
                numbers[5].to_owned(),
                numbers[6].to_owned(),
            ),
        ));
    }
    (rows, evictors)
}

/// `metric_table --cache SPEC -- ./heat_heap` prints, for each kernel, one row per grid it
/// touches (named by allocation line) with the standalone report's reads, writes, hits and
/// misses and the analyses' temporal and spatial use, and the evictor table.
#[test]
fn metric_table_prints_a_row_per_heap_array_and_the_evictors() {
    if !support::tools_available(WHO, &["gcc"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let program = heat_heap(dir.path());
    let spec = SHAPE.epcache_spec();
    let out = tool(
        "metric_table",
        &["--cache", &spec, "--", program.to_str().unwrap()],
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let report = support::run_with_report(&program, &[], &SHAPE);
    let (u, v, f) = (site("U"), site("V"), site("F"));
    for (region, grids) in [
        ("smooth", vec![&u, &v]),
        ("relax", vec![&u]),
        ("source", vec![&u, &v, &f]),
    ] {
        let (rows, evictors) = metric_rows(&stdout, region);
        let names: Vec<&str> = rows.iter().map(|r| r.0.as_str()).collect();
        let mut expected: Vec<&str> = grids.iter().map(|g| g.as_str()).collect();
        expected.push("(whole region)");
        let mut sorted = names.clone();
        sorted.sort_unstable();
        expected.sort_unstable();
        assert_eq!(sorted, expected, "{region}: one row per grid it touches");
        for (name, (reads, writes, hits, misses, temporal, spatial)) in &rows {
            if name == "(whole region)" {
                continue;
            }
            let l1 = report.data_structure_l1(region, name);
            assert_eq!(
                (*reads, *writes, *misses),
                (l1.reads, l1.writes, l1.misses()),
                "{region} {name}: the tool's counts vs the standalone report's"
            );
            assert_eq!(*hits, l1.accesses() - l1.misses(), "{region} {name}");
            let temporal: f64 = temporal
                .parse()
                .unwrap_or_else(|_| panic!("{region} {name}: temporal use {temporal}"));
            let spatial: f64 = spatial
                .parse()
                .unwrap_or_else(|_| panic!("{region} {name}: spatial use {spatial}"));
            assert!(temporal >= 1.0, "{region} {name}: temporal use {temporal}");
            assert!(
                (0.0..=1.0).contains(&spatial) && spatial > 0.5,
                "{region} {name}: spatial use {spatial}"
            );
        }
        // Each grid's lines are evicted by the grids the kernel streams through, by name.
        assert!(
            !evictors.is_empty(),
            "{region}: no evictor table:\n{stdout}"
        );
        assert!(
            evictors
                .iter()
                .any(|(victim, by, lines)| grids.contains(&victim)
                    && grids.contains(&by)
                    && *lines > 0),
            "{region}: {evictors:?}"
        );
    }
    // relax sweeps U alone: U evicts itself (lines of its band, column by column).
    let (_, evictors) = metric_rows(&stdout, "relax");
    let by_itself = evictors
        .iter()
        .find(|(victim, by, _)| *victim == u && *by == u)
        .map_or(0, |e| e.2);
    assert!(by_itself > 10_000, "relax: {evictors:?}");
}

/// A tool's error: `tool: message` and its causes, exit 1, no backtrace though RUST_BACKTRACE is
/// set (a `main` returning anyhow's error printed "Error: ...", "Caused by:" and the backtrace).
#[test]
fn tool_errors_print_like_epcache_without_a_backtrace() {
    let missing = "/nonexistent/epcache-heap-tools/program";
    for (name, args) in [
        ("online", vec!["--", missing]),
        ("metric_table", vec!["--", missing]),
        ("timeline", vec!["--interval", "work", "--", missing]),
    ] {
        let out = tool(name, &args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{name}: {stderr}");
        assert!(
            stderr.starts_with(&format!("{name}: ")),
            "{name}: the message comes first, named by the tool:\n{stderr}"
        );
        assert!(
            stderr.contains(&format!("\n  caused by: cannot start {missing}: ")),
            "{name}: the causes follow, one per line:\n{stderr}"
        );
        assert!(
            !stderr.to_lowercase().contains("backtrace"),
            "{name}: no backtrace:\n{stderr}"
        );
        assert!(out.stdout.is_empty(), "{name}: nothing on stdout");
    }
    // A usage error too.
    let out = tool("online", &["--survey", "0"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr.starts_with("online: --survey 0: give a whole number above 0\n"),
        "{stderr}"
    );
}

/// Builds C source `code` with `epcache cc -- gcc -O1` into `dir/name`.
fn build_c(dir: &Path, name: &str, code: &str) -> PathBuf {
    let source = dir.join(format!("{name}.c"));
    std::fs::write(&source, code).unwrap();
    let epcache = support::epcache();
    let output = dir.join(name);
    let out = Command::new(&epcache.binary)
        .env("EPCACHE_RUNTIME", &epcache.runtime)
        .args(["cc", "--", "gcc", "-O1", "-o"])
        .arg(&output)
        .arg(&source)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    output
}

/// A program with nothing to survey is told why, truly: all its code in main (its heap array
/// would be surveyed, but no region holds its loop), or regions but no data structure (no global,
/// no heap block large enough to be named). The old message, "no function regions but main and
/// no data structures to survey; build it with `epcache cc` and -g", was wrong for both: they
/// are built with `epcache cc`, which passes -g.
#[test]
fn a_program_with_nothing_to_survey_is_told_the_true_reason() {
    if !support::tools_available(WHO, &["gcc"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let main_only = build_c(
        dir.path(),
        "main_only",
        "#include <stdio.h>\n#include <stdlib.h>\n\
         int main(void) {\n  double *a = malloc(8192 * sizeof *a);\n  double s = 0;\n\
           for (int i = 0; i < 8192; i++) a[i] = i;\n  for (int i = 0; i < 8192; i++) s += a[i];\n\
           printf(\"%f\\n\", s);\n  free(a);\n  return 0;\n}\n",
    );
    let out = tool("online", &["--", main_only.to_str().unwrap()]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("ran no region to survey before it ended: it has no function but main and met no marker region"),
        "{stderr}"
    );
    assert!(!stderr.contains("build it with"), "{stderr}");
    let out = tool("metric_table", &["--", main_only.to_str().unwrap()]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("ran no region to measure: it has no function but main"),
        "{stderr}"
    );

    let no_data = build_c(
        dir.path(),
        "no_data",
        "#include <stdio.h>\n\
         __attribute__((noipa)) long work(int n) {\n  long s = 0;\n\
           for (int i = 0; i < n; i++) s += i;\n  return s;\n}\n\
         int main(void) {\n  long s = 0;\n  for (int k = 0; k < 3; k++) s += work(1000);\n\
           printf(\"%ld\\n\", s);\n  return 0;\n}\n",
    );
    let out = tool("online", &["--", no_data.to_str().unwrap()]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(
            "has no data structure to survey: no global or static array in its debug information, and no heap block of 4096 bytes or more was allocated before "
        ),
        "{stderr}"
    );
}
