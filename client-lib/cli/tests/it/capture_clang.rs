//! clang code captured both ways the runtime accepts: `epcache cc -- clang` (the TSan entry
//! points, with function regions and the inline repeat-hit test) and SanitizerCoverage's
//! `trace-loads`/`trace-stores` compiled by hand and linked through `epcache cc`; counts against
//! the kernel's hand counts and against the same build calling its hooks, and the global named
//! from clang's DWARF 5.

use std::path::Path;

use crate::capture_support::{
    self, available, epcache_cc, kernel, region, run_with_report, runtime_built, structure,
};

const SMALL_L1: &str = "D1=4K,4,64";
/// `capture_sum.c`: N stores to `a`, then N loads of it.
const N: u64 = 4096;

fn events(value: &serde_json::Value) -> (u64, u64) {
    (
        value["events"]["PAPI_L1_DCR"].as_u64().unwrap(),
        value["events"]["PAPI_L1_DCW"].as_u64().unwrap(),
    )
}

fn check(report: &serde_json::Value, functions: bool) {
    let program = region(report, "program");
    assert_eq!(events(program), (N, N), "{report:#}");
    assert_eq!(
        events(structure(program, "a")),
        (N, N),
        "a from clang's DWARF"
    );
    if functions {
        assert_eq!(events(region(report, "fill")), (0, N));
        assert_eq!(events(region(report, "total")), (N, 0));
        assert_eq!(region(report, "fill")["line"], 6);
    }
}

fn ready(who: &str) -> bool {
    available("clang", who) && runtime_built(who)
}

#[test]
fn clang_through_epcache_cc_counts_and_names_like_gcc() {
    if !ready("clang_through_epcache_cc_counts_and_names_like_gcc") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let source = kernel("capture_sum.c");
    epcache_cc(
        dir.path(),
        &["clang", "-O1", "-o", "sum", source.to_str().unwrap()],
    );
    let (stdout, report) = run_with_report(dir.path(), &dir.path().join("sum"), SMALL_L1);
    assert_eq!(stdout.trim(), (N * (N - 1) / 2).to_string());
    check(&report, true);
}

#[test]
fn clang_sanitizer_coverage_objects_link_with_the_runtime() {
    if !ready("clang_sanitizer_coverage_objects_link_with_the_runtime") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let source = kernel("capture_sum.c");
    // As README says: clang's own flags for the compile step (`func` is the coverage level
    // clang wants beside the load and store callbacks), epcache cc for the link.
    let compiled = std::process::Command::new("clang")
        .args([
            "-O1",
            "-g",
            "-fsanitize-coverage=func,trace-loads,trace-stores",
            "-c",
            source.to_str().unwrap(),
            "-o",
        ])
        .arg(dir.path().join("sum.o"))
        .status()
        .unwrap();
    assert!(compiled.success());
    epcache_cc(dir.path(), &["clang", "sum.o", "-o", "sum"]);
    let program = Path::new(dir.path()).join("sum");
    let (stdout, report) = run_with_report(dir.path(), &program, SMALL_L1);
    assert_eq!(stdout.trim(), (N * (N - 1) / 2).to_string());
    // SanitizerCoverage has no function entry hook: the program is the one region.
    check(&report, false);
}

/// clang's listing gets the inline repeat-hit test in front of its hook calls (`callq`, 1 to 16
/// bytes, aligned or not, some straddling lines, two threads) and counts exactly what the same
/// build calling every hook counts, region by region.
#[test]
fn clang_inline_tests_count_exactly_what_the_hook_calls_count() {
    if !ready("clang_inline_tests_count_exactly_what_the_hook_calls_count") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let source = kernel("access_sizes.c");
    let source = source.to_str().unwrap();
    // Most sites take the mask from the site before them (clang 14: 37 of 45).
    capture_support::build_inline_and_calls(dir.path(), "clang", source, 10, 20);
    let cache = "D1=32K,8,64;L2=256K,8,64";
    let (inline_out, inline) = run_with_report(dir.path(), &dir.path().join("inline"), cache);
    let (calls_out, calls) = run_with_report(dir.path(), &dir.path().join("calls"), cache);
    assert_eq!(inline_out, calls_out);
    assert_eq!(inline["levels"], calls["levels"]);
    let by_name = |report: &serde_json::Value| -> Vec<(String, serde_json::Value)> {
        let mut regions: Vec<_> = report["regions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| (r["name"].as_str().unwrap().to_owned(), r["events"].clone()))
            .collect();
        regions.sort_by(|a, b| a.0.cmp(&b.0));
        regions
    };
    assert_eq!(by_name(&inline), by_name(&calls));
    // Two threads read their 4096-double lane 20 times: 163,840 doubles, in 81,920 16-byte
    // loads where clang vectorises the loop (as clang 14 does at -O2).
    let lane_reads = region(&inline, "lane")["events"]["PAPI_L1_DCR"].clone();
    assert!(
        lane_reads == 81_920 || lane_reads == 163_840,
        "lane reads {lane_reads}"
    );
}

/// clang's TSan pass leaves out the load of a read-modify-write (`v[i] += 1.0`), which
/// `epcache cc` asks it to keep: every compound assignment is a read and a write, as gcc counts
/// it. An object compiled outside `epcache cc` with clang's other answer,
/// `-mllvm -tsan-compound-read-before-write` (one `__tsan_read_write8` call per compound
/// assignment), links and counts the same. The kernel also leaves functions by `longjmp`, whose
/// regions must still close exactly.
#[test]
fn clang_counts_the_read_of_a_read_modify_write() {
    if !ready("clang_counts_the_read_of_a_read_modify_write") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let source = kernel("longjmp_loop.c");
    let source = source.to_str().unwrap();
    epcache_cc(dir.path(), &["clang", "-O1", "-o", "jumps", source]);
    let include = format!("-I{}", epcache_include::dir().display());
    let compiled = std::process::Command::new("clang")
        .args(["-O1", "-g", "-fsanitize=thread", "-mllvm"])
        .args([
            "-tsan-compound-read-before-write",
            &include,
            "-c",
            source,
            "-o",
        ])
        .arg(dir.path().join("compound.o"))
        .status()
        .unwrap();
    assert!(compiled.success());
    epcache_cc(dir.path(), &["clang", "compound.o", "-o", "compound"]);
    for program in ["jumps", "compound"] {
        let (_, report) = run_with_report(dir.path(), &dir.path().join(program), SMALL_L1);
        for (name, instances, accesses) in [
            ("inner", 100_000, 100_000),
            ("middle", 100_000, 200_000),
            ("sweep", 1, 4096),
        ] {
            let r = region(&report, name);
            assert_eq!(r["instances"], instances, "{program}: {name}");
            assert_eq!(
                events(structure(r, "v")),
                (accesses, accesses),
                "{program}: {name}: {report:#}"
            );
        }
    }
}

/// clang under a name that does not say so (`cc`, as some systems install it) is asked for its
/// version and built as clang: before, the dual build gave it gcc's `-gno-as-loc-support` and
/// nothing was built.
#[test]
fn clang_named_cc_is_built_as_clang() {
    if !ready("clang_named_cc_is_built_as_clang") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let clang = std::process::Command::new("sh")
        .args(["-c", "command -v clang"])
        .output()
        .unwrap();
    let clang = String::from_utf8_lossy(&clang.stdout).trim().to_owned();
    let cc = dir.path().join("cc");
    std::os::unix::fs::symlink(&clang, &cc).unwrap();
    let source = kernel("longjmp_loop.c");
    epcache_cc(
        dir.path(),
        &[
            cc.to_str().unwrap(),
            "-O1",
            "-o",
            "jumps",
            source.to_str().unwrap(),
        ],
    );
    let (_, report) = run_with_report(dir.path(), &dir.path().join("jumps"), SMALL_L1);
    // The reads of `v[i] += 1.0` are there: clang's own flags were given.
    assert_eq!(
        events(structure(region(&report, "inner"), "v")),
        (100_000, 100_000)
    );
}

/// A clang object's calls to the C library's `memset`, `memcpy` and `memmove` (explicit, and
/// the struct copy clang 14 also makes a `memcpy` call) are renamed to the runtime's counting
/// versions (`capture_support::check_copies`).
#[test]
fn clang_counts_its_library_copies() {
    if !ready("clang_counts_its_library_copies") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let source = kernel("copies.c");
    epcache_cc(
        dir.path(),
        &["clang", "-O2", "-o", "copies", source.to_str().unwrap()],
    );
    let (stdout, report) = run_with_report(dir.path(), &dir.path().join("copies"), SMALL_L1);
    assert_eq!(stdout.trim(), "7 7 7");
    capture_support::check_copies(&report);
}
