//! METRIC's per-reference tables from partial traces: the matrix multiply (naive and tiled) and
//! ADI (original, interchanged, fused) kernels of `examples/c`, each recorded by the runtime
//! (`EPCACHE_TRACE=KERNEL:1`) under the MIPS R12000's L1 (32 KB, 2-way, 32 B lines) and
//! re-simulated with `epcache replay`: per access site (each reference of the loop body) its
//! miss ratio and evictors, side by side with the paper's figures (printed), and the
//! re-simulated region equal to the live run's counts.
//!
//! What the paper's tables say and we require:
//! - mm naive (Figure 5): xz misses on every access (paper 1.0; at least 0.99), xy rarely
//!   (paper 0.044; below 0.1), the write of xx never (paper 0); xz's lines are evicted by xz
//!   itself (paper 95.6%; at least 90%);
//! - mm tiled (Figure 7): xz's tile stays (paper 0.0011; below 0.01), the write of xt never
//!   misses;
//! - ADI original: five references miss on every access (x[i][k], a[i][k] and b[i-1][k] in the
//!   first statement, b[i][k] and a[i][k] in the second: five misses per (i, k) in the paper's
//!   table), the others (just loaded) almost never (below 1%);
//! - ADI interchanged and fused: no reference misses on more than a quarter of its accesses
//!   (one per 4-double line walking a row), and 0.75 to 1.25 misses per (i, k) as in
//!   `metric_adi.rs`.
//!
//! The traces are small (a few kilobytes for millions of accesses: one descriptor per
//! reference and loop nest), which is the partial-trace papers' point; each must hold at least
//! 1,000 accesses per byte.

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::support::{self, Build, Report, Shape, assert_within};

const WHO: &str = "METRIC per-reference tables from partial traces";

const MM: Build<'static> = Build {
    compiler: "gcc",
    source: "c/mm.c",
    opt: "-O1",
    extra: &[],
    libs: &[],
};

const ADI: Build<'static> = Build {
    compiler: "gcc",
    source: "c/adi.c",
    opt: "-O1",
    extra: &[],
    libs: &["-lm"],
};

/// Runs `program args` recording `kernel`'s first instance; returns the run's report and the
/// replay of the recording under the same cache (JSON).
fn record(program: &Path, args: &[&str], kernel: &str) -> (Report, Value) {
    let dir = program.parent().expect("program in a directory");
    let spec = Shape::R12000.epcache_spec();
    let report = dir.join(format!("{kernel}.report.json"));
    let trace = dir.join(format!("{kernel}.eppt"));
    let out = Command::new(program)
        .args(args)
        .env("EPCACHE_REPORT", &report)
        .env("EPCACHE_CACHE", &spec)
        .env("EPCACHE_TRACE", format!("{kernel}:1"))
        .env("EPCACHE_TRACE_OUTPUT", &trace)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    epcache_test_support::tools::check_output(&format!("{kernel} recording"), &out);
    let json = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let report = Report {
        json,
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
    };
    let out = Command::new(&support::epcache().binary)
        .args(["replay", "--json", "--cache", &spec])
        .arg(&trace)
        .output()
        .unwrap();
    epcache_test_support::tools::check_output(&format!("replay of {kernel}"), &out);
    let replayed: Value = serde_json::from_slice(&out.stdout).unwrap();
    // The re-simulated region is the live one, exactly.
    let live = report.region_l1(kernel);
    let d1 = &replayed["levels"]["D1"];
    let field = |f: &str| d1[f].as_u64().unwrap();
    assert_eq!(
        (
            field("reads"),
            field("read_misses"),
            field("writes"),
            field("write_misses")
        ),
        (live.reads, live.read_misses, live.writes, live.write_misses),
        "{kernel}: re-simulated vs live L1 counts"
    );
    let per_byte = replayed["compression"]["accesses_per_byte"]
        .as_f64()
        .unwrap();
    assert!(per_byte >= 1000.0, "{kernel}: {per_byte} accesses per byte");
    (report, replayed)
}

/// The reference sites of a kernel's recording that made accesses in its instance.
fn references(replayed: &Value) -> Vec<&Value> {
    replayed["sites"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["accesses"].as_u64().unwrap() > 0)
        .collect()
}

fn miss_ratio(site: &Value) -> f64 {
    site["levels"]["D1"]["miss_ratio"].as_f64().unwrap_or(0.0)
}

/// The one reference of `structure` that `kind`s (`loads` or `stores`) and misses most.
fn reference<'a>(sites: &[&'a Value], structure: &str, kind: &str) -> &'a Value {
    sites
        .iter()
        .copied()
        .filter(|s| s["structure"] == structure && s[kind].as_u64().unwrap() > 0)
        .max_by(|a, b| miss_ratio(a).total_cmp(&miss_ratio(b)))
        .unwrap_or_else(|| panic!("no {kind} reference of {structure} in {sites:?}"))
}

/// Prints a kernel's table, each row beside the paper's figure when it gives one.
fn print_table(kernel: &str, sites: &[&Value], paper: &[(&str, &str)]) {
    let label = |s: &Value| {
        format!(
            "{} {}",
            s["structure"].as_str().unwrap_or("?"),
            if s["stores"].as_u64().unwrap() > 0 {
                "write"
            } else {
                "read"
            }
        )
    };
    let label_of = |address: &str| {
        sites
            .iter()
            .find(|s| s["name"] == address)
            .map_or_else(|| address.to_owned(), |s| label(s))
    };
    eprintln!("{kernel}: reference, accesses, L1 miss ratio (paper), evicted by");
    for s in sites {
        let name = label(s);
        let theirs = paper
            .iter()
            .find(|(n, _)| *n == name)
            .map_or("-", |(_, v)| v);
        let evictors: Vec<String> = s["evicted_by"]
            .as_array()
            .unwrap()
            .iter()
            .take(2)
            .map(|e| {
                format!(
                    "{} {:.1}%",
                    label_of(e["evictor"].as_str().unwrap()),
                    100.0 * e["share"].as_f64().unwrap()
                )
            })
            .collect();
        eprintln!(
            "  {:<8} {:>10} {:>8.4} ({theirs:>6})  {}",
            name,
            s["accesses"],
            miss_ratio(s),
            evictors.join(", ")
        );
    }
}

#[test]
fn metric_mm_per_reference_tables_from_partial_traces() {
    if !support::tools_available(WHO, &["gcc"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let program = MM.with_epcache(dir.path(), "mm");
    let args = ["160", "16"];

    let (_, naive) = record(&program, &args, "mm_naive");
    let sites = references(&naive);
    print_table(
        "mm_naive",
        &sites,
        &[("xz read", "1.0"), ("xy read", "0.044"), ("xx write", "0")],
    );
    let xz = reference(&sites, "xz", "loads");
    assert!(miss_ratio(xz) >= 0.99, "naive xz: {xz}");
    assert!(miss_ratio(reference(&sites, "xy", "loads")) < 0.1);
    let xx_write = reference(&sites, "xx", "stores");
    assert_eq!(xx_write["levels"]["D1"]["misses"], 0, "{xx_write}");
    // Evicted by itself: the evictor is xz's own reference.
    let first = &xz["evicted_by"][0];
    assert_eq!(first["evictor"], xz["name"], "{xz}");
    let share = first["share"].as_f64().unwrap();
    eprintln!(
        "mm_naive: xz evicted by itself {:.1}% (paper 95.6%)",
        100.0 * share
    );
    assert!(share >= 0.9, "naive: xz evicted by itself {share}");

    let (_, tiled) = record(&program, &args, "mm_tiled");
    let sites = references(&tiled);
    print_table(
        "mm_tiled",
        &sites,
        &[("xz read", "0.0011"), ("xt write", "0")],
    );
    assert!(miss_ratio(reference(&sites, "xz", "loads")) < 0.01);
    assert_eq!(
        reference(&sites, "xt", "stores")["levels"]["D1"]["misses"],
        0
    );
}

#[test]
fn metric_adi_per_reference_tables_from_partial_traces() {
    if !support::tools_available(WHO, &["gcc"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let program = ADI.with_epcache(dir.path(), "adi");
    let iterations = (799 * 798) as f64;
    for kernel in ["adi_original", "adi_interchanged", "adi_fused"] {
        let (_, replayed) = record(&program, &[], kernel);
        let sites = references(&replayed);
        print_table(kernel, &sites, &[]);
        let misses: u64 = sites
            .iter()
            .map(|s| s["levels"]["D1"]["misses"].as_u64().unwrap())
            .sum();
        let per_iteration = misses as f64 / iterations;
        eprintln!("{kernel}: {per_iteration:.3} misses per (i, k)");
        if kernel == "adi_original" {
            let always: Vec<_> = sites.iter().filter(|s| miss_ratio(s) >= 0.99).collect();
            assert_eq!(
                always.len(),
                5,
                "{kernel}: references missing always: {always:?}"
            );
            assert!(
                sites
                    .iter()
                    .all(|s| miss_ratio(s) >= 0.99 || miss_ratio(s) < 0.01),
                "{kernel}: {sites:?}"
            );
            assert_within(
                &format!("{kernel}: misses per (i, k)"),
                per_iteration,
                5.0,
                0.01,
            );
        } else {
            assert!(
                sites.iter().all(|s| miss_ratio(s) <= 0.25 * 1.01),
                "{kernel}: {sites:?}"
            );
            assert!(
                (0.75 * 0.99..=1.25 * 1.01).contains(&per_iteration),
                "{kernel}: {per_iteration:.3} misses per (i, k)"
            );
        }
    }
}
