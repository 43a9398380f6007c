//! The runtime inside a real program built with `epcache cc`: regions and arrays named from
//! DWARF in the standalone report, and the EP-Cache scenario driven through the segment by a tool
//! in this process (the program waits at start, a histogram and a static count go in, the
//! program halts at the region's end, the results are read).

use std::path::Path;
use std::process::{Command, Stdio};

use epcache_shm::layout::{Aggregation, Boundary, Mode, RequestSpec, RequestTarget, TargetState};

use crate::capture_support::{
    available, build_gauss_regions, epcache_cc, kernel, region, run_to, run_with_report,
    runtime_built, start_waiting, structure,
};

/// The EP-Cache paper's first-level cache for the Gauss study.
const PAPER_L1: &str = "D1=8K,2,32;LL=1M,8,64";

fn build_gauss(dir: &Path) -> Option<std::path::PathBuf> {
    build_gauss_regions(dir, "runtime_regions")
}

/// Builds the kernel `source` with `epcache cc -- gcc -O1 <flags>` into `dir/program`; `None`
/// when gcc or the runtime is missing (which fails under CI).
fn build_kernel(
    dir: &Path,
    source: &str,
    program: &str,
    flags: &[&str],
) -> Option<std::path::PathBuf> {
    if !available("gcc", "runtime_regions") || !runtime_built("runtime_regions") {
        return None;
    }
    let source = kernel(source);
    let mut line = vec!["gcc", "-O1"];
    line.extend_from_slice(flags);
    line.extend_from_slice(&[source.to_str().unwrap(), "-o", program]);
    epcache_cc(dir, &line);
    Some(dir.join(program))
}

#[test]
fn standalone_report_names_functions_markers_and_arrays() {
    let dir = tempfile::tempdir().unwrap();
    let Some(program) = build_gauss(dir.path()) else {
        return;
    };
    let (_, report) = run_with_report(dir.path(), &program, PAPER_L1);
    let original = region(&report, "original");
    assert_eq!(original["kind"], "function");
    assert!(
        original["file"]
            .as_str()
            .unwrap()
            .ends_with("gauss_regions.c")
    );
    assert_eq!(original["line"], 14);
    let marker = region(&report, "elimination");
    assert_eq!(marker["kind"], "marker");
    assert_eq!(marker["line"], 30, "the line of EPCACHE_REGION_BEGIN");
    // The original loop order reads A's 99*99*... elements column-wise: the triple loop reads
    // A[i][j], A[i][k], A[k][j], A[k][k] for k < N-1, j, i > k: 4 * sum_{k} (N-1-k)^2 reads.
    let n = 100u64;
    let reads: u64 = (0..n - 1).map(|k| 4 * (n - 1 - k) * (n - 1 - k)).sum();
    let a = structure(original, "A");
    assert_eq!(a["bytes"], 40_000);
    assert_eq!(a["events"]["PAPI_L1_DCR"], reads);
    assert_eq!(a["events"]["PAPI_L1_DCW"], reads / 4);
    // The marker encloses exactly the function call: the same counts.
    assert_eq!(
        structure(marker, "A")["events"],
        a["events"],
        "marker and function disagree"
    );
    // The paper's finding: the optimised order misses far less on A.
    let optimised = structure(region(&report, "optimised"), "A");
    let (before, after) = (
        a["events"]["PAPI_L1_LDM"].as_u64().unwrap(),
        optimised["events"]["PAPI_L1_LDM"].as_u64().unwrap(),
    );
    assert!(
        after * 3 < before,
        "read misses of A: {before} original, {after} optimised"
    );
}

#[test]
fn a_tool_steps_the_program_and_reads_a_histogram_through_the_segment() {
    let dir = tempfile::tempdir().unwrap();
    let Some(program) = build_gauss(dir.path()) else {
        return;
    };
    let (child, tool) = start_waiting(
        &program,
        &dir.path().join("run"),
        &[("EPCACHE_CACHE", PAPER_L1)],
    );
    let model = tool.model().unwrap().expect("the model is published");
    assert_eq!(model.spec, PAPER_L1);
    assert!(model.counters > 0);
    // One thread's program, with no EPCACHE_CORES: a hierarchy per thread.
    assert_eq!(model.cores, 0);

    let regions = tool.regions().unwrap();
    let original = regions.iter().find(|r| r.name == "original").unwrap();
    let a = tool
        .data_structures()
        .unwrap()
        .into_iter()
        .find(|d| d.name == "A")
        .expect("A from DWARF");
    assert_eq!(a.range.len(), 40_000);
    let event = "PAPI_L1_LDM".parse().unwrap();
    let histogram = tool
        .submit(&RequestSpec {
            region: original.index,
            target: RequestTarget::DataStructure(a.index),
            event,
            mode: Mode::Histogram {
                buckets: 25,
                bucket_bytes: 0,
            },
            aggregation: Aggregation::PerInstance,
            analyses: 0,
        })
        .unwrap();
    let total = tool
        .submit(&RequestSpec {
            region: original.index,
            target: RequestTarget::DataStructure(a.index),
            event,
            mode: Mode::Static,
            aggregation: Aggregation::PerInstance,
            analyses: 0,
        })
        .unwrap();
    run_to(&tool, original.index, Boundary::Exit);
    let h = tool
        .read_result(histogram)
        .unwrap()
        .expect("histogram result")
        .sum();
    let t = tool
        .read_result(total)
        .unwrap()
        .expect("static result")
        .sum();
    assert_eq!(
        h.buckets.len(),
        25,
        "40,000 bytes in 25 portions of 50 lines"
    );
    assert_eq!(h.buckets.iter().sum::<u64>(), t.total);
    assert_eq!(h.instances, 1);
    // Partial trace: the caches start cold at the region's entry, so every line of A misses at
    // least once, and the column-wise order misses far more than that.
    assert!(t.total > 40_000 / 32 * 10, "only {} misses", t.total);

    tool.set_halting_point(None).unwrap();
    tool.release().unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(tool.state().unwrap(), TargetState::Exited);
}

/// Cachegrind's counts per function (`fn=` blocks of its output), event name to count.
fn cachegrind_per_function(
    dir: &Path,
    program: &Path,
) -> std::collections::BTreeMap<String, std::collections::BTreeMap<String, u64>> {
    let out_file = dir.join("cachegrind.out");
    let out = Command::new("valgrind")
        .args([
            "--tool=cachegrind",
            "--cache-sim=yes",
            "--I1=32768,8,64",
            "--D1=8192,2,32",
            "--LL=1048576,8,64",
        ])
        .arg(format!("--cachegrind-out-file={}", out_file.display()))
        .arg(program)
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .expect("running valgrind");
    assert!(
        out.status.success(),
        "cachegrind failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&out_file).unwrap();
    let events: Vec<String> = text
        .lines()
        .find_map(|l| l.strip_prefix("events:"))
        .expect("an events line")
        .split_whitespace()
        .map(str::to_owned)
        .collect();
    let mut per_function = std::collections::BTreeMap::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        if let Some(name) = line.strip_prefix("fn=") {
            current = Some(name.to_owned());
            continue;
        }
        let Some(function) = &current else { continue };
        let mut fields = line.split_whitespace();
        // Cost lines start with a line number; other lines (fl=, summary:) do not.
        if fields.next().is_none_or(|f| f.parse::<u64>().is_err()) {
            continue;
        }
        let counts: &mut std::collections::BTreeMap<String, u64> =
            per_function.entry(function.clone()).or_default();
        for (event, value) in events.iter().zip(fields) {
            *counts.entry(event.clone()).or_default() += value.parse::<u64>().unwrap_or(0);
        }
    }
    per_function
}

#[test]
fn per_function_counts_agree_with_cachegrind() {
    let dir = tempfile::tempdir().unwrap();
    if !available("valgrind", "runtime_regions") {
        return;
    }
    let Some(program) = build_gauss(dir.path()) else {
        return;
    };
    // Cachegrind measures the same source built plainly, with the same flags and debug info.
    let plain = dir.path().join("gauss_plain");
    // The markers need the runtime; the plain build links empty ones.
    let stubs = dir.path().join("markers.c");
    std::fs::write(
        &stubs,
        "void epcache_region_begin(const char *n) { (void)n; }\nvoid epcache_region_end(void) {}\n",
    )
    .unwrap();
    let status = Command::new("gcc")
        .args(["-O2", "-g", "-I"])
        .arg(epcache_include::dir())
        .arg(kernel("gauss_regions.c"))
        .arg(&stubs)
        .args(["-o"])
        .arg(&plain)
        .status()
        .unwrap();
    assert!(status.success());
    let theirs = cachegrind_per_function(dir.path(), &plain);
    let (_, report) = run_with_report(dir.path(), &program, PAPER_L1);
    for function in ["original", "optimised"] {
        let cg = &theirs[function];
        let ours = &region(&report, function)["events"];
        let ours = |e: &str| ours[e].as_u64().unwrap() as f64;
        let within = |name: &str, ours: f64, theirs: u64, tolerance: f64| {
            let theirs = theirs as f64;
            let off = (ours - theirs).abs() / theirs.max(1.0);
            eprintln!(
                "{function} {name}: epcache {ours} cachegrind {theirs} ({:.2}%)",
                off * 100.0
            );
            // A few accesses of the stack frame are not instrumented (gcc's TSan pass skips
            // non-escaping locals), so tiny counts get an absolute allowance of 16.
            assert!(
                off <= tolerance || (ours - theirs).abs() <= 16.0,
                "{function} {name}: epcache {ours}, Cachegrind {theirs}: {:.2}% apart (allowed {:.0}%)",
                off * 100.0,
                tolerance * 100.0
            );
        };
        within("reads", ours("PAPI_L1_DCR"), cg["Dr"], 0.01);
        within("writes", ours("PAPI_L1_DCW"), cg["Dw"], 0.01);
        within("L1 read misses", ours("PAPI_L1_LDM"), cg["D1mr"], 0.03);
        within("L1 write misses", ours("PAPI_L1_STM"), cg["D1mw"], 0.03);
        within("LL read misses", ours("PAPI_L2_LDM"), cg["DLmr"], 0.03);
        within("LL write misses", ours("PAPI_L2_STM"), cg["DLmw"], 0.03);
    }
}

#[test]
fn heap_blocks_of_an_unmodified_program_are_named_by_allocation_site() {
    let dir = tempfile::tempdir().unwrap();
    let Some(program) = build_kernel(dir.path(), "heap_sites.c", "heap_sites", &[]) else {
        return;
    };
    let (_, report) = run_with_report(dir.path(), &program, PAPER_L1);
    let sweep = region(&report, "sweep");
    assert_eq!(sweep["instances"], 3);
    // N = 200: x and y hold N*N doubles, the reallocated y twice that; sweep reads and writes
    // every element once per call. The 64-byte block is below the tracking threshold.
    let n = 200 * 200u64;
    for (site, bytes, accesses) in [
        ("heap_sites.c:8", 8 * n, n),
        ("heap_sites.c:15", 8 * n, n),
        ("heap_sites.c:17", 16 * n, 2 * n),
    ] {
        let block = structure(sweep, site);
        assert_eq!(block["kind"], "alloc_site");
        assert_eq!(block["bytes"], bytes, "{site}");
        assert_eq!(block["events"]["PAPI_L1_DCR"], accesses, "{site}");
        assert_eq!(block["events"]["PAPI_L1_DCW"], accesses, "{site}");
    }
    assert!(
        sweep["data_structures"]
            .as_array()
            .unwrap()
            .iter()
            .all(|d| d["name"] != "heap_sites.c:9"),
        "a 64-byte block is not tracked"
    );
}

#[test]
fn unbalanced_markers_are_said_with_their_line_and_closed_at_the_function_s_return() {
    let dir = tempfile::tempdir().unwrap();
    let Some(program) = build_kernel(dir.path(), "stray_end.c", "stray", &["-g"]) else {
        return;
    };
    let out = Command::new(&program)
        .env("EPCACHE_RUNTIME_DIR", dir.path().join("run"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "7");
    // The stray end in `closes` (line 10 of the kernel), by its source line and function: on
    // the region stack it meets the function's own frame.
    assert!(
        stderr.contains(
            "epcache: a marker region ended inside a function it did not begin in; the end is \
             ignored (at "
        ) && stderr.contains("stray_end.c:10 in closes; said once per thread)"),
        "{stderr}"
    );
    // The region `opens` left open ends with the function: it holds the loop's accesses.
    let (_, report) = run_with_report(dir.path(), &program, PAPER_L1);
    let a = structure(region(&report, "left_open"), "a");
    assert_eq!(a["events"]["PAPI_L1_DCR"], 1024);
    assert_eq!(a["events"]["PAPI_L1_DCW"], 1024);
}

/// A relative `EPCACHE_REPORT` is taken from the directory the program started in, even if it
/// changes directory before it ends; `%p` in it is the process id; a report directory that
/// does not exist is said at start.
#[test]
fn a_relative_report_path_survives_a_change_of_directory() {
    let dir = tempfile::tempdir().unwrap();
    let Some(program) = build_kernel(dir.path(), "chdir_exit.c", "chdir_exit", &[]) else {
        return;
    };
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let out = Command::new(&program)
        .arg(&elsewhere)
        .env("EPCACHE_REPORT", "report.json")
        .env("EPCACHE_CACHE", PAPER_L1)
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(
        !elsewhere.join("report.json").exists(),
        "written after the chdir"
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("report.json")).unwrap())
            .unwrap();
    assert_eq!(
        structure(region(&report, "sweep"), "a")["events"]["PAPI_L1_DCR"],
        4096
    );
    // `%p` is the process id: a program that starts others passes one name to all.
    let child = Command::new(&program)
        .arg(&elsewhere)
        .env("EPCACHE_REPORT", "report.%p.json")
        .env("EPCACHE_CACHE", PAPER_L1)
        .current_dir(dir.path())
        .spawn()
        .unwrap();
    let pid = child.id();
    assert!(child.wait_with_output().unwrap().status.success());
    assert!(dir.path().join(format!("report.{pid}.json")).is_file());
    let out = Command::new(&program)
        .env("EPCACHE_REPORT", "missing/report.json")
        .env("EPCACHE_CACHE", PAPER_L1)
        .current_dir(dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("names a directory that does not exist"),
        "{stderr}"
    );
}

/// A program that calls `exit` from inside a function (as C code does on an error path and
/// Fortran's `STOP` does): the regions still open, `work` and `main`, are in the report with
/// their counts, ended as at a return.
#[test]
fn regions_open_at_exit_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let Some(program) = build_kernel(dir.path(), "exit_nested.c", "exit_nested", &[]) else {
        return;
    };
    let out = Command::new(&program)
        .env("EPCACHE_REPORT", "report.json")
        .env("EPCACHE_CACHE", PAPER_L1)
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("report.json")).unwrap())
            .unwrap();
    for name in ["work", "main"] {
        let open = region(&report, name);
        assert_eq!(open["instances"], 1, "{name}");
        let v = structure(open, "v");
        assert_eq!(v["events"]["PAPI_L1_DCR"], 4096, "{name}");
        assert_eq!(v["events"]["PAPI_L1_DCW"], 4096, "{name}");
    }
}

/// A program that ends with threads it never joined, still inside their regions: the one
/// still running hands its counts on at its next captured access, so its sweeps are in the
/// report; the one blocked in the C library cannot, and the report and stderr say that one
/// thread's counts are missing. Before, both were silently left out.
#[test]
fn threads_still_in_regions_at_exit_hand_their_counts_on() {
    let dir = tempfile::tempdir().unwrap();
    let Some(program) = build_kernel(
        dir.path(),
        "exit_with_threads.c",
        "exit_with_threads",
        &["-pthread"],
    ) else {
        return;
    };
    let out = Command::new(&program)
        .env("EPCACHE_REPORT", "report.json")
        .env("EPCACHE_CACHE", PAPER_L1)
        .current_dir(dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{out:?}");
    let seen: u64 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("report.json")).unwrap())
            .unwrap();
    // At least the sweeps main saw finish, and what the running one got through.
    let sweeps = region(&report, "sweep_x");
    let instances = sweeps["instances"].as_u64().unwrap();
    assert!(instances >= seen, "{instances} sweeps, main saw {seen}");
    let writes = structure(sweeps, "X")["events"]["PAPI_L1_DCW"]
        .as_u64()
        .unwrap();
    assert!(
        (instances * 4096..(instances + 1) * 4096).contains(&writes),
        "{writes} writes of X in {instances} sweeps"
    );
    // `runner` is still open: its count so far is there, its instance is not.
    let runner = region(&report, "runner");
    assert_eq!(runner["instances"], 0);
    assert_eq!(structure(runner, "X")["events"]["PAPI_L1_DCW"], writes);
    // The blocked thread's sweep of Y is missing, and said to be.
    assert_eq!(report["threads_unreported"], 1, "{stderr}");
    assert!(
        stderr.contains("1 thread was still inside a region when the program ended"),
        "{stderr}"
    );
    let y_writes = report["regions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["name"] == "sweep_y_then_block")
        .flat_map(|r| r["data_structures"].as_array().unwrap())
        .filter(|d| d["name"] == "Y")
        .map(|d| d["events"]["PAPI_L1_DCW"].as_u64().unwrap())
        .sum::<u64>();
    assert_eq!(y_writes, 0);
}

/// A recursive function's region counts every call as an instance and every access once, as a
/// counter read at the outermost call's entry and exit would: before, each level added its
/// whole subtree again (here 5050 writes of X for the program's 100).
#[test]
fn a_recursive_region_counts_its_accesses_once() {
    let dir = tempfile::tempdir().unwrap();
    let Some(program) = build_kernel(dir.path(), "recursion.c", "recursion", &[]) else {
        return;
    };
    let (_, report) = run_with_report(dir.path(), &program, PAPER_L1);
    let descend = region(&report, "descend");
    assert_eq!(descend["instances"], 101);
    for array in ["X", "Y"] {
        let writes = &structure(descend, array)["events"]["PAPI_L1_DCW"];
        assert_eq!(*writes, 100, "{array}");
        assert_eq!(
            *writes,
            structure(region(&report, "program"), array)["events"]["PAPI_L1_DCW"]
        );
    }
}

/// Two files' statics of one name are two data structures, named apart by their files
/// (`buf@a.c`, `buf@b.c`) with their own sizes and counts; before, regions holding both showed
/// one `buf` with one's start, the other's size and both's counts.
#[test]
fn same_named_statics_of_two_files_stay_apart() {
    if !available("gcc", "runtime_regions") || !runtime_built("runtime_regions") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // `used`: gcc keeps the stores to arrays nothing reads.
    std::fs::write(
        dir.path().join("a.c"),
        "static double buf[1000] __attribute__((used));\nvoid fa(void) { for (int i = 0; i < 1000; i++) buf[i] = i; }\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("b.c"),
        "static double buf[4000] __attribute__((used));\nvoid fb(void) { for (int i = 0; i < 4000; i++) buf[i] = i; }\n\
         void fa(void);\nint main(void) { fa(); fb(); return 0; }\n",
    )
    .unwrap();
    epcache_cc(dir.path(), &["gcc", "-O1", "a.c", "b.c", "-o", "statics"]);
    let (_, report) = run_with_report(dir.path(), &dir.path().join("statics"), PAPER_L1);
    let main = region(&report, "main");
    for (name, elements) in [("buf@a.c", 1000), ("buf@b.c", 4000)] {
        let buf = structure(main, name);
        assert_eq!(buf["bytes"], elements * 8, "{name}");
        assert_eq!(buf["events"]["PAPI_L1_DCW"], elements, "{name}");
    }
}

/// A `longjmp` skips the exit hooks of the functions it leaves (and the end of the marker one
/// of them opened): each is closed at the next region boundary below its frame, as at a return,
/// so instances and counts stay those of the source, and nothing piles up round after round.
#[test]
fn regions_a_longjmp_leaves_are_closed() {
    // The kernel's default number of rounds.
    const ROUNDS: u64 = 100_000;
    for opt in ["-O0", "-O2"] {
        let dir = tempfile::tempdir().unwrap();
        let Some(program) = build_kernel(dir.path(), "longjmp_loop.c", "longjmp_loop", &[opt])
        else {
            return;
        };
        let (stdout, report) = run_with_report(dir.path(), &program, PAPER_L1);
        assert_eq!(stdout.trim(), ROUNDS.to_string());
        // (region, instances, reads and writes of `v` each): `inner` and `middle` each add one
        // to an element per round, `guarded` holds `inner`, `sweep` halves all 4096 once.
        let expected = [
            ("inner", ROUNDS, ROUNDS),
            ("guarded", ROUNDS, ROUNDS),
            ("middle", ROUNDS, 2 * ROUNDS),
            ("attempt", ROUNDS, 2 * ROUNDS),
            ("sweep", 1, 4096),
            ("main", 1, 2 * ROUNDS + 4096),
        ];
        for (name, instances, accesses) in expected {
            let r = region(&report, name);
            assert_eq!(r["instances"], instances, "{opt}: {name}");
            let v = structure(r, "v");
            assert_eq!(v["events"]["PAPI_L1_DCR"], accesses, "{opt}: {name}");
            assert_eq!(v["events"]["PAPI_L1_DCW"], accesses, "{opt}: {name}");
        }
    }
}
