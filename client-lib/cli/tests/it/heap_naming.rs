//! Heap blocks of unmodified C, C++ and Fortran programs built with `epcache cc`, named by their
//! allocation sites: the aligned C allocators, C++ `new[]` and `std::vector` (named by the
//! program's line, not the standard library's), and Fortran ALLOCATE; each kernel's reads and
//! writes land on the structure it sweeps, equal to hand counts.

use std::path::Path;

use crate::capture_support::{
    available, epcache_cc, kernel, region, run_with_report, runtime_built, structure,
};

const CACHE: &str = "D1=8K,2,32;LL=1M,8,64";
/// Elements of every array the fixtures sweep (doubles).
const N: u64 = 20_000;

/// Builds fixture `source` with `epcache cc -- COMPILER FLAGS` into `program` in `dir`; false
/// (after the loud SKIPPED) when the compiler or the runtime is missing.
fn build(dir: &Path, compiler: &str, flags: &[&str], source: &str, program: &str) -> bool {
    if !available(compiler, "heap_naming") || !runtime_built("heap_naming") {
        return false;
    }
    let source = kernel(source);
    let mut line = vec![compiler];
    line.extend_from_slice(flags);
    line.extend([source.to_str().unwrap(), "-o", program]);
    epcache_cc(dir, &line);
    true
}

/// Checks that `sweep` (called once per site) read and wrote each of `sites`' N doubles once,
/// and that each is an allocation site of `bytes` (when given).
fn assert_swept(report: &serde_json::Value, sites: &[(&str, Option<u64>)]) {
    let sweep = region(report, "sweep");
    assert_eq!(sweep["instances"], sites.len(), "one sweep per array");
    for &(site, bytes) in sites {
        let block = structure(sweep, site);
        assert_eq!(block["kind"], "alloc_site", "{site}");
        if let Some(bytes) = bytes {
            assert_eq!(block["bytes"], bytes, "{site}");
        }
        assert_eq!(block["events"]["PAPI_L1_DCR"], N, "{site} reads");
        assert_eq!(block["events"]["PAPI_L1_DCW"], N, "{site} writes");
    }
    let heap_structures = sweep["data_structures"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["kind"] == "alloc_site")
        .count();
    assert_eq!(
        heap_structures,
        sites.len(),
        "only the swept arrays are heap structures of sweep:\n{sweep:#}"
    );
}

#[test]
fn aligned_c_allocations_are_named_by_allocation_site() {
    let dir = tempfile::tempdir().unwrap();
    if !build(
        dir.path(),
        "gcc",
        &["-O1"],
        "heap_aligned.c",
        "heap_aligned",
    ) {
        return;
    }
    let (stdout, report) = run_with_report(dir.path(), &dir.path().join("heap_aligned"), CACHE);
    // The wrappers keep the allocators' contracts: alignment, and posix_memalign's EINVAL for
    // an alignment that is not a power-of-two multiple of the pointer size.
    assert_eq!(
        stdout.lines().next(),
        Some("aligned 1 1 1 1 refused 1 1"),
        "{stdout}"
    );
    // posix_memalign, aligned_alloc, memalign, valloc, pvalloc (rounded up to whole pages by
    // glibc; the block is the size asked for).
    let bytes = Some(8 * N);
    assert_swept(
        &report,
        &[
            ("heap_aligned.c:12", bytes),
            ("heap_aligned.c:13", bytes),
            ("heap_aligned.c:14", bytes),
            ("heap_aligned.c:15", bytes),
            ("heap_aligned.c:16", bytes),
        ],
    );
}

#[test]
fn cpp_new_and_vectors_are_named_by_the_programs_line() {
    // -O2 inlines the vector's allocation into main from the standard headers; -O0 keeps every
    // layer an out-of-line template instance, so the site is found by walking the stack.
    for opt in ["-O2", "-O0"] {
        let dir = tempfile::tempdir().unwrap();
        if !build(dir.path(), "g++", &[opt], "heap_new.cpp", "heap_new") {
            return;
        }
        let (stdout, report) = run_with_report(dir.path(), &dir.path().join("heap_new"), CACHE);
        // operator new's semantics are libstdc++'s own: std::bad_alloc from a failing new[],
        // null from the nothrow one, the alignment of an over-aligned type.
        assert_eq!(
            stdout.lines().next(),
            Some("bad_alloc 1 nothrow_null 1 aligned 1"),
            "{opt}: {stdout}"
        );
        // Line 12: new double[N](); 13: std::vector<double> v(N), u(2 * N), each named by
        // its vector (the first N of u swept); 15: push_back, which
        // allocates in an out-of-line template instance (its blocks grow to 32768 doubles; each
        // block is the line's, the last is swept); 16: new Cell[N / 8]() of 64-byte aligned
        // cells, through the aligned operator new[].
        assert_swept(
            &report,
            &[
                ("heap_new.cpp:12", Some(8 * N)),
                ("v@heap_new.cpp:13", Some(8 * N)),
                ("u@heap_new.cpp:13", Some(16 * N)),
                ("heap_new.cpp:15", Some(8 * 32_768)),
                ("heap_new.cpp:16", Some(8 * N)),
            ],
        );
        let all_names: Vec<&str> = report["regions"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|r| r["data_structures"].as_array().unwrap())
            .filter_map(|d| d["name"].as_str())
            .collect();
        assert!(
            all_names
                .iter()
                .all(|n| !n.contains(".h:") && !n.contains(".tcc:")),
            "{opt}: no structure is named by a standard library header: {all_names:?}"
        );
        // A vector's growth frees its old block after the new one is live: one call, one
        // array, not several.
        assert_eq!(several_arrays(&report), Vec::<String>::new(), "{opt}");
    }
}

/// A program that keeps more tracked blocks live than the segment's table holds: every block's
/// writes are the site's in the report, and the note about the full table says the report still
/// counts them. (Each allocation changes the lookup threads search: it once copied every live
/// block's span, and 20,000 live blocks took seconds.)
#[test]
fn more_live_blocks_than_the_segments_table_holds_are_all_counted() {
    let dir = tempfile::tempdir().unwrap();
    if !build(dir.path(), "gcc", &["-O1"], "heap_many_live.c", "many") {
        return;
    }
    let program = dir.path().join("many");
    let report_path = dir.path().join("many.json");
    let out = std::process::Command::new(&program)
        .arg("6000")
        .env("EPCACHE_REPORT", &report_path)
        .env("EPCACHE_CACHE", CACHE)
        .env("EPCACHE_RUNTIME_DIR", dir.path().join("run"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("data-structure table is full") && stderr.contains("still counts them"),
        "{stderr}"
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report_path).unwrap()).unwrap();
    let site = structure(region(&report, "main"), "heap_many_live.c:10");
    assert_eq!(site["events"]["PAPI_L1_DCW"], 6000 * 128, "{site:#}");
}

/// A request for one of two vectors grown on one line (`a.push_back(..); b.push_back(..);`)
/// is warned before the start that the line's blocks cannot be told apart, and pointed at the
/// line's name; so is a name the line does not grow.
#[test]
fn a_request_for_one_of_two_vectors_grown_on_a_line_is_warned() {
    let dir = tempfile::tempdir().unwrap();
    if !build(dir.path(), "g++", &["-O1", "-g"], "heap_grown.cpp", "grown") {
        return;
    }
    for (array, says) in [
        ("a@heap_grown.cpp:8", "which may be another's"),
        ("c@heap_grown.cpp:8", "it is none of them"),
    ] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_epcache"))
            .args([
                "run", "--cache", CACHE, "--region", "main", "--array", array,
            ])
            .args(["--event", "PAPI_L1_DCW", "--"])
            .arg(dir.path().join("grown"))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        assert!(
            stderr.contains("grows `a` and `b` through member calls")
                && stderr.contains(says)
                && stderr.contains("ask for `heap_grown.cpp:8`"),
            "{array}: {stderr}"
        );
    }
}

/// The names of the structures the report says several arrays share.
fn several_arrays(report: &serde_json::Value) -> Vec<String> {
    let mut names: Vec<String> = report["regions"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|r| r["data_structures"].as_array().unwrap())
        .filter(|d| d["several_arrays"] == true)
        .map(|d| d["name"].as_str().unwrap().to_owned())
        .collect();
    names.sort_unstable();
    names.dedup();
    names
}

/// Arrays allocated two to a line: a statement whose text lists them (`c`, `d`) names each
/// block by its array and the line, with its own counts; one the runtime cannot read (a macro)
/// keeps the line's name, which the report and `epcache run`'s table say covers several
/// arrays; a site whose one call keeps two blocks live at once (`heap_churn.c`, below) is not
/// marked.
#[test]
fn arrays_allocated_in_one_statement_are_named_apart_or_said_to_share_their_line() {
    let dir = tempfile::tempdir().unwrap();
    if !build(
        dir.path(),
        "gcc",
        &["-O1", "-g"],
        "heap_one_line.c",
        "one_line",
    ) {
        return;
    }
    let program = dir.path().join("one_line");
    let (stdout, report) = run_with_report(dir.path(), &program, CACHE);
    // 1 + 1 for a, b, c, and 1 + 2 for d.
    assert_eq!(stdout.trim(), "9.0");
    let sweep = region(&report, "sweep");
    // c swept once, d twice: each N reads and writes a sweep.
    for (array, sweeps) in [("c@heap_one_line.c:15", 1), ("d@heap_one_line.c:15", 2)] {
        let block = structure(sweep, array);
        assert_eq!(block["kind"], "alloc_site", "{array}");
        assert_eq!(block["bytes"], 8 * N, "{array}");
        assert_eq!(block["events"]["PAPI_L1_DCR"], sweeps * N, "{array}");
        assert_eq!(block["events"]["PAPI_L1_DCW"], sweeps * N, "{array}");
    }
    // a and b: two sweeps under the macro line's one name.
    let shared = structure(sweep, "heap_one_line.c:14");
    assert_eq!(shared["events"]["PAPI_L1_DCR"], 2 * N);
    assert_eq!(several_arrays(&report), ["heap_one_line.c:14"]);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_epcache"))
        .args(["run", "--all-regions", "--cache", CACHE, "--"])
        .arg(&program)
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        table.contains("share the name heap_one_line.c:14, which counts them together"),
        "{table}"
    );
}

#[test]
fn fortran_allocate_is_named_by_its_source_line() {
    let dir = tempfile::tempdir().unwrap();
    if !build(
        dir.path(),
        "gfortran",
        &["-O1"],
        "heap_allocate.f90",
        "heap_allocate",
    ) {
        return;
    }
    let (stdout, report) = run_with_report(dir.path(), &dir.path().join("heap_allocate"), CACHE);
    assert_eq!(stdout.trim(), "5.0");
    // Line 21: allocate(x(n)); 22: allocate(y(100, 200)), both N doubles.
    assert_swept(
        &report,
        &[
            ("heap_allocate.f90:21", Some(8 * N)),
            ("heap_allocate.f90:22", Some(8 * N)),
        ],
    );
    // The table names each line by the array its statement allocates, as a request takes it.
    let table = std::process::Command::new(env!("CARGO_BIN_EXE_epcache"))
        .args(["run", "--cache", CACHE, "--all-regions", "--"])
        .arg(dir.path().join("heap_allocate"))
        .current_dir(dir.path())
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&table.stdout);
    for array in ["x@heap_allocate.f90:21", "y@heap_allocate.f90:22"] {
        assert!(table.contains(array), "{array} in\n{table}");
    }
}

/// Two arrays of one statement allocated through a wrapper of a wrapper that the compiler
/// inlines into the statement (`vec_new` around `xmalloc`) are named apart: a request for
/// the first counts the first, not the line's latest block.
#[test]
fn arrays_of_one_statement_through_inlined_wrappers_are_named_apart() {
    for level in ["-O1", "-O2"] {
        let dir = tempfile::tempdir().unwrap();
        if !build(
            dir.path(),
            "gcc",
            &[level, "-g"],
            "wrapped_statement.c",
            "wrapped",
        ) {
            return;
        }
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_epcache"))
            .args(["run", "--cache", CACHE, "--json"])
            .args(["--region", "touch", "--array", "a@wrapped_statement.c:24"])
            .args(["--event", "PAPI_L1_DCR"])
            .args(["--region", "touch", "--array", "b@wrapped_statement.c:24"])
            .args(["--event", "PAPI_L1_DCR", "--"])
            .arg(dir.path().join("wrapped"))
            .current_dir(dir.path())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{level}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let results = crate::capture_support::run_results(&stdout);
        let totals: Vec<u64> = results
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["total"].as_u64().unwrap())
            .collect();
        assert_eq!(totals, [10_000, 9_000], "{level}: {results:#}");
    }
}

/// A site that allocates and frees over and over is one data structure: its blocks take over
/// the entry of the ones freed before them, so the MCC's table (4096 entries) does not fill
/// after 10000 blocks, and the site's counts are all its blocks' accesses.
#[test]
fn a_site_that_allocates_and_frees_in_a_loop_stays_one_structure() {
    let dir = tempfile::tempdir().unwrap();
    if !build(dir.path(), "gcc", &["-O1", "-g"], "heap_churn.c", "churn") {
        return;
    }
    let report_path = dir.path().join("report.json");
    let out = std::process::Command::new(dir.path().join("churn"))
        .env("EPCACHE_REPORT", &report_path)
        .env("EPCACHE_CACHE", CACHE)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        !stderr.contains("table is full"),
        "freed blocks' entries must be reused:\n{stderr}"
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report_path).unwrap()).unwrap();
    let sweep = region(&report, "sweep");
    // 5000 rounds of two blocks, each written then read once over its 1024 doubles.
    let accesses = 5000 * 2 * 1024;
    let site = structure(sweep, "heap_churn.c:10");
    assert_eq!(site["kind"], "alloc_site");
    assert_eq!(site["bytes"], 8192);
    assert_eq!(site["events"]["PAPI_L1_DCR"], accesses);
    assert_eq!(site["events"]["PAPI_L1_DCW"], accesses);
    assert_eq!(several_arrays(&report), Vec::<String>::new());
}

/// A C++ program that uses nothing of libstdc++ but `operator new` and `delete`: the wrappers'
/// weak references to the real operators did not keep the library needed under the compiler's
/// `--as-needed`, and the program died at its first allocation (SIGSEGV at address 0).
#[test]
fn a_cpp_program_using_only_operator_new_runs_and_names_its_vector() {
    // Linked dynamically, statically and with libstdc++.a alone (where the operators' members
    // must be asked for: the static program died at address 0 at its first allocation).
    for (flags, name) in [
        (&["-O1"][..], "new_only"),
        (&["-O1", "-static"], "new_only_static"),
        (&["-O1", "-static-libstdc++"], "new_only_static_libstdcxx"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        if !build(dir.path(), "g++", flags, "heap_new_only.cpp", name) {
            return;
        }
        let (_, report) = run_with_report(dir.path(), &dir.path().join(name), CACHE);
        let sweep = region(&report, "sweep");
        assert_eq!(sweep["instances"], 1, "{name}");
        let reads: u64 = sweep["data_structures"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| d["kind"] == "alloc_site")
            .map(|d| d["events"]["PAPI_L1_DCR"].as_u64().unwrap_or(0))
            .sum();
        // `heap_new_only.cpp`'s N.
        assert_eq!(
            reads, 4096,
            "{name}: the vector's reads, counted for its allocation site"
        );
    }
}
