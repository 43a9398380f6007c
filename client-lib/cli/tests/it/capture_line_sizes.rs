//! Every L1 line size the papers and hosts use takes the fast paths: a stencil monitored with
//! 32-, 64- and 128-byte L1 lines has most accesses answered by the repeat-hit table (inline)
//! or simulated from batches, as the report's `handled` counters say, and counts exactly what
//! it counts when every access calls its hook and is simulated on the program's thread, and
//! what Cachegrind counts on the plain build (within the allowance of the other comparisons
//! with Cachegrind: the instrumented copy does not see a few stack accesses).

use std::path::Path;
use std::process::Command;

use crate::capture_support::{
    available, build_inline_and_calls, counts_of, kernel, region, runtime_built, skipped,
};

/// (label, epcache's cache, Cachegrind's `--D1` and `--LL`).
const CACHES: [(&str, &str, [&str; 2]); 3] = [
    (
        "32-byte lines",
        "D1=32K,2,32;LL=1M,8,64",
        ["--D1=32768,2,32", "--LL=1048576,8,64"],
    ),
    (
        "64-byte lines",
        "D1=32K,8,64;LL=1M,8,64",
        ["--D1=32768,8,64", "--LL=1048576,8,64"],
    ),
    (
        "128-byte lines",
        "D1=32K,8,128;LL=1M,8,128",
        ["--D1=32768,8,128", "--LL=1048576,8,128"],
    ),
];

fn run(dir: &Path, program: &str, cache: &str, pipeline: &str) -> serde_json::Value {
    let report = dir.join(format!("report-{program}-{pipeline}.json"));
    let out = Command::new(dir.join(program))
        .arg("4")
        .env("EPCACHE_REPORT", &report)
        .env("EPCACHE_CACHE", cache)
        .env("EPCACHE_PIPELINE", pipeline)
        .env("EPCACHE_MCC", "off")
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{program}: {out:?}");
    serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap()
}

/// Cachegrind's counts of the function `function`, event name to count.
fn cachegrind_function(
    dir: &Path,
    program: &Path,
    caches: [&str; 2],
    function: &str,
) -> std::collections::BTreeMap<String, u64> {
    let out_file = dir.join("cachegrind.out");
    let out = Command::new("valgrind")
        .args(["--tool=cachegrind", "--cache-sim=yes", "--I1=32768,8,64"])
        .args(caches)
        .arg(format!("--cachegrind-out-file={}", out_file.display()))
        .arg(program)
        .arg("4")
        .output()
        .unwrap();
    assert!(out.status.success(), "cachegrind: {out:?}");
    let text = std::fs::read_to_string(&out_file).unwrap();
    let events: Vec<String> = text
        .lines()
        .find_map(|l| l.strip_prefix("events:"))
        .expect("events line")
        .split_whitespace()
        .map(str::to_owned)
        .collect();
    let mut counts = std::collections::BTreeMap::new();
    let mut inside = false;
    for line in text.lines() {
        if let Some(name) = line.strip_prefix("fn=") {
            inside = name == function;
            continue;
        }
        let mut fields = line.split_whitespace();
        if !inside || fields.next().is_none_or(|f| f.parse::<u64>().is_err()) {
            continue;
        }
        for (event, value) in events.iter().zip(fields) {
            *counts.entry(event.clone()).or_default() += value.parse::<u64>().unwrap_or(0);
        }
    }
    counts
}

#[test]
fn every_line_size_takes_the_fast_paths_and_counts_alike() {
    if !available("gcc", "capture_line_sizes")
        || !available("valgrind", "capture_line_sizes")
        || !runtime_built("capture_line_sizes")
    {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let source = kernel("stencil_sweeps.c");
    let source = source.to_str().unwrap();
    // Scalar accesses in both builds, so Cachegrind sees what the hooks report.
    let no_vectors = "-fno-tree-vectorize";
    build_inline_and_calls(dir.path(), "gcc", source, 10, 1);
    let plain = dir.path().join("plain");
    let built = Command::new("gcc")
        .args(["-O2", "-g", no_vectors, source, "-o"])
        .arg(&plain)
        .output()
        .unwrap();
    assert!(built.status.success(), "{built:?}");
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    for (label, cache, cachegrind_caches) in CACHES {
        let inline = run(dir.path(), "inline", cache, "off");
        let d1 = &inline["levels"][0];
        let accesses = d1["reads"].as_u64().unwrap() + d1["writes"].as_u64().unwrap();
        let handled = &inline["handled"];
        let (repeats, batched) = (
            handled["repeat_hits"].as_u64().unwrap(),
            handled["batched"].as_u64().unwrap(),
        );
        eprintln!("{label}: {accesses} accesses, {repeats} repeat hits, {batched} batched");
        // Most accesses take a fast path, though not all: each table entry remembers its L1
        // set's most recent line, and rows two apart share sets (with 64-byte lines, one in
        // three accesses is a repeat hit); the two grids lie a power of two apart, so their
        // pages share slots of the whole-line cache, and a miss whose slot holds the other
        // grid's page goes to its hook.
        assert!(
            repeats * 4 >= accesses,
            "{label}: only {repeats} of {accesses} accesses were repeat hits"
        );
        assert!(
            (repeats + batched) * 2 >= accesses && batched * 100 >= accesses,
            "{label}: {repeats} repeat hits and {batched} batched of {accesses} accesses"
        );
        let calls = run(dir.path(), "calls", cache, "off");
        assert_eq!(
            counts_of(inline.clone()),
            counts_of(calls),
            "{label}: the inline build counted otherwise than the one whose every access calls its hook"
        );
        if cores >= 2 {
            let on = run(dir.path(), "inline", cache, "on");
            assert_eq!(
                counts_of(inline.clone()),
                counts_of(on),
                "{label}: the pipeline counted otherwise"
            );
        } else {
            skipped(&format!(
                "capture_line_sizes: {cores} CPU; the pipeline's run needs two"
            ));
        }
        let theirs = cachegrind_function(dir.path(), &plain, cachegrind_caches, "sweep");
        let ours = &region(&inline, "sweep")["events"];
        let sweep_accesses = ours["PAPI_L1_DCA"].as_u64().unwrap() as f64;
        // Relative allowances as in `runtime_regions.rs`; Cachegrind's LL also holds the
        // program's instructions (epcache simulates no fetches), so LL misses differ by a few
        // lines, allowed up to 0.1% of the accesses.
        for (event, theirs_name, relative, absolute) in [
            ("PAPI_L1_DCR", "Dr", 0.01, 16.0),
            ("PAPI_L1_DCW", "Dw", 0.01, 16.0),
            ("PAPI_L1_LDM", "D1mr", 0.03, 16.0),
            ("PAPI_L1_STM", "D1mw", 0.03, 16.0),
            ("PAPI_L2_LDM", "DLmr", 0.03, sweep_accesses / 1000.0),
            ("PAPI_L2_STM", "DLmw", 0.03, sweep_accesses / 1000.0),
        ] {
            let (ours, theirs) = (
                ours[event].as_u64().unwrap() as f64,
                theirs[theirs_name] as f64,
            );
            let off = (ours - theirs).abs() / theirs.max(1.0);
            eprintln!("{label} {event}: epcache {ours}, Cachegrind {theirs}");
            assert!(
                off <= relative || (ours - theirs).abs() <= absolute,
                "{label} {event}: epcache {ours}, Cachegrind {theirs}: {:.2}% apart",
                off * 100.0
            );
        }
    }
}
