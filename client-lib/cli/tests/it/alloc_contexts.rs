//! Heap blocks named by their allocation context: a C program whose three arrays all come from
//! one wrapper (`alloc_array`, through `posix_memalign`, or through a second wrapper `xmalloc`)
//! reports three data structures named by the three lines that asked for them, at -O0 and at
//! -O2, with the wrapper kept out of line or inlined into `main`, whether or not
//! `EPCACHE_ALLOC_WRAPPERS` names it; each carries its context from the allocator's call out.

use std::path::Path;
use std::process::Command;

use crate::capture_support::{available, epcache_cc, kernel, region, runtime_built, structure};

const CACHE: &str = "D1=8K,2,32;LL=1M,8,64";
/// Doubles per array (the fixture's N).
const N: u64 = 20_000;
const SOURCE: &str = "alloc_wrappers.c";
/// The lines of `main` that ask for the three arrays.
const ASKING: [&str; 3] = [
    "alloc_wrappers.c:32",
    "alloc_wrappers.c:33",
    "alloc_wrappers.c:34",
];

/// Builds the fixture with `flags` into `dir/program`; false (after the loud SKIPPED) when gcc
/// or the runtime is missing.
fn build(dir: &Path, flags: &[&str]) -> bool {
    if !available("gcc", "alloc_contexts") || !runtime_built("alloc_contexts") {
        return false;
    }
    let source = kernel(SOURCE);
    let mut line = vec!["gcc", "-g"];
    line.extend_from_slice(flags);
    line.extend([source.to_str().unwrap(), "-o", "program"]);
    epcache_cc(dir, &line);
    true
}

/// Runs `dir/program` standalone with `env`; its report and stderr.
fn run(dir: &Path, env: &[(&str, &str)]) -> (serde_json::Value, String) {
    let report = dir.join("report.json");
    let _ = std::fs::remove_file(&report);
    let out = Command::new(dir.join("program"))
        .env("EPCACHE_REPORT", &report)
        .env("EPCACHE_CACHE", CACHE)
        .env_remove("EPCACHE_ALLOC_WRAPPERS")
        .envs(env.iter().copied())
        .current_dir(dir)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "3.0");
    let text = std::fs::read_to_string(&report).expect("the program wrote its report");
    (serde_json::from_str(&text).unwrap(), stderr)
}

/// The sweep's heap structures are exactly the three asking lines, each swept once (N reads
/// and writes), each with a context that starts at `allocator_line` (the allocator's call
/// inside the wrapper) and reaches its own line.
fn assert_three_contexts(report: &serde_json::Value, allocator_line: &str, what: &str) {
    let sweep = region(report, "sweep");
    let mut names: Vec<&str> = sweep["data_structures"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["kind"] == "alloc_site")
        .filter_map(|d| d["name"].as_str())
        .collect();
    names.sort_unstable();
    assert_eq!(names, ASKING, "{what}: one structure per asking line");
    for name in ASKING {
        let block = structure(sweep, name);
        assert_eq!(block["bytes"], 8 * N, "{what}: {name}");
        assert_eq!(block["events"]["PAPI_L1_DCR"], N, "{what}: {name} reads");
        assert_eq!(block["events"]["PAPI_L1_DCW"], N, "{what}: {name} writes");
        let context: Vec<&str> = block["context"]
            .as_array()
            .unwrap_or_else(|| panic!("{what}: {name} has no context: {block:#}"))
            .iter()
            .filter_map(|f| f.as_str())
            .collect();
        assert_eq!(
            context.first(),
            Some(&allocator_line),
            "{what}: {name}'s context starts at the allocator's call: {context:?}"
        );
        assert!(
            context.contains(&name),
            "{what}: {name}'s context holds its own line: {context:?}"
        );
    }
}

/// Every build of the fixture, with and without the user's list of wrappers.
#[test]
fn arrays_from_one_wrapper_are_named_by_the_lines_that_ask_for_them() {
    // (flags, the allocator's call in the wrapper): line 22 is posix_memalign in alloc_array,
    // line 12 malloc in xmalloc.
    let builds: [(&[&str], &str); 6] = [
        (&["-O0"], "alloc_wrappers.c:22"),
        (&["-O2"], "alloc_wrappers.c:22"),
        (&["-O2", "-DWRAPPER_ATTR="], "alloc_wrappers.c:22"),
        (&["-O0", "-DTWO_LEVEL"], "alloc_wrappers.c:12"),
        (&["-O2", "-DTWO_LEVEL"], "alloc_wrappers.c:12"),
        (
            &["-O2", "-DTWO_LEVEL", "-DWRAPPER_ATTR="],
            "alloc_wrappers.c:12",
        ),
    ];
    for (flags, allocator_line) in builds {
        let dir = tempfile::tempdir().unwrap();
        if !build(dir.path(), flags) {
            return;
        }
        let (report, stderr) = run(dir.path(), &[]);
        assert_three_contexts(&report, allocator_line, &format!("{flags:?} by default"));
        assert!(!stderr.contains("EPCACHE_ALLOC_WRAPPERS"), "{stderr}");
        let (report, stderr) = run(
            dir.path(),
            &[("EPCACHE_ALLOC_WRAPPERS", "alloc_array,xmalloc")],
        );
        assert_three_contexts(&report, allocator_line, &format!("{flags:?} listed"));
        assert!(!stderr.contains("EPCACHE_ALLOC_WRAPPERS"), "{stderr}");
    }
}

/// The arrays' variables are found through the wrapper too: `epcache run`'s table shows each
/// line as its array (`a@alloc_wrappers.c:32`), and a request for `a` alone is told that name.
#[test]
fn arrays_through_a_wrapper_are_named_by_their_variables() {
    for flags in [&["-O2"][..], &["-O2", "-DTWO_LEVEL", "-DWRAPPER_ATTR="]] {
        let dir = tempfile::tempdir().unwrap();
        if !build(dir.path(), flags) {
            return;
        }
        let epcache = |args: &[&str]| {
            let out = Command::new(env!("CARGO_BIN_EXE_epcache"))
                .args(["run", "--cache", CACHE])
                .args(args)
                .arg("--")
                .arg(dir.path().join("program"))
                .current_dir(dir.path())
                .env_remove("EPCACHE_ALLOC_WRAPPERS")
                .output()
                .unwrap();
            (
                String::from_utf8_lossy(&out.stdout).into_owned(),
                String::from_utf8_lossy(&out.stderr).into_owned(),
            )
        };
        let (table, _) = epcache(&["--all-regions"]);
        for (array, line) in ["a", "b", "c"].iter().zip(ASKING) {
            assert!(
                table.contains(&format!("{array}@{line}")),
                "{flags:?}: {array}@{line} in\n{table}"
            );
        }
        let (_, said) = epcache(&[
            "--region",
            "sweep",
            "--array",
            "a",
            "--event",
            "PAPI_L1_DCR",
        ]);
        assert!(
            said.contains("ask for `a@alloc_wrappers.c:32`"),
            "{flags:?}: {said}"
        );
    }
}

/// A wrapper the rule misses (two allocator calls) names both arrays by its own line: the run
/// says so once, with the variable that names each by its caller's line, and with that
/// variable the two arrays are apart, each with its own reads and writes.
#[test]
fn a_line_allocating_for_several_callers_says_which_wrapper_to_name() {
    let dir = tempfile::tempdir().unwrap();
    if !available("gcc", "alloc_contexts") || !runtime_built("alloc_contexts") {
        return;
    }
    let source = kernel("two_allocator_wrapper.c");
    epcache_cc(
        dir.path(),
        &[
            "gcc",
            "-g",
            "-O1",
            source.to_str().unwrap(),
            "-o",
            "program",
        ],
    );
    let (report, stderr) = run(dir.path(), &[]);
    assert!(
        stderr.contains(
            "`two_allocator_wrapper.c:10` (in `grab`) allocates for calls from \
             two_allocator_wrapper.c:16 and two_allocator_wrapper.c:17"
        ) && stderr.contains("EPCACHE_ALLOC_WRAPPERS=grab names each block"),
        "{stderr}"
    );
    assert_eq!(
        stderr.matches("allocates for calls from").count(),
        1,
        "{stderr}"
    );
    let main = region(&report, "main");
    assert_eq!(
        structure(main, "two_allocator_wrapper.c:10")["events"]["PAPI_L1_DCW"],
        20_000
    );

    let (report, stderr) = run(dir.path(), &[("EPCACHE_ALLOC_WRAPPERS", "grab")]);
    assert!(!stderr.contains("allocates for calls from"), "{stderr}");
    let main = region(&report, "main");
    for line in [16, 17] {
        let array = structure(main, &format!("two_allocator_wrapper.c:{line}"));
        assert_eq!(array["events"]["PAPI_L1_DCW"], 10_000, "{array:#}");
        assert_eq!(array["events"]["PAPI_L1_DCR"], 10_000, "{array:#}");
    }
}

/// A name in `EPCACHE_ALLOC_WRAPPERS` that is no function of the program is said, by name, and
/// the known ones still work.
#[test]
fn an_unknown_wrapper_name_is_warned_about() {
    let dir = tempfile::tempdir().unwrap();
    if !build(dir.path(), &["-O0"]) {
        return;
    }
    let (report, stderr) = run(
        dir.path(),
        &[("EPCACHE_ALLOC_WRAPPERS", "alloc_array, alloc_aray")],
    );
    assert!(
        stderr.contains("EPCACHE_ALLOC_WRAPPERS names `alloc_aray`"),
        "{stderr}"
    );
    assert!(!stderr.contains("`alloc_array`"), "{stderr}");
    assert_three_contexts(&report, "alloc_wrappers.c:22", "with a misspelt name");
}

/// A request names a block by the line that asked for it, before the program has allocated it
/// (`epcache run` starts it waiting), through an inlined wrapper: it binds to that line's block
/// alone, and the bound structure carries its context.
#[test]
fn a_request_names_the_asking_line_before_the_block_exists() {
    let dir = tempfile::tempdir().unwrap();
    if !build(dir.path(), &["-O2", "-DWRAPPER_ATTR="]) {
        return;
    }
    let out = Command::new(env!("CARGO_BIN_EXE_epcache"))
        .args([
            "run",
            "--cache",
            CACHE,
            "--all-regions",
            "--region",
            "sweep",
        ])
        .args([
            "--array",
            ASKING[1],
            "--event",
            "PAPI_L1_DCR",
            "--buckets",
            "4",
        ])
        .args(["--json", "--"])
        .arg(dir.path().join("program"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let start = stdout
        .find("\n[")
        .unwrap_or_else(|| panic!("{stdout}\n{stderr}"));
    let documents: Vec<serde_json::Value> = serde_json::Deserializer::from_str(&stdout[start..])
        .into_iter()
        .collect::<Result<_, _>>()
        .unwrap();
    let (result, report) = (&documents[0][0], &documents[1]);
    assert_eq!(result["request"]["binding"], "bound", "{result:#}");
    let bound = &result["request"]["data_structure"];
    assert_eq!(bound["name"], ASKING[1], "{result:#}");
    let context: Vec<&str> = bound["context"]
        .as_array()
        .unwrap_or_else(|| panic!("no context: {bound:#}"))
        .iter()
        .filter_map(|f| f.as_str())
        .collect();
    assert_eq!(
        context[..2],
        ["alloc_wrappers.c:22", ASKING[1]],
        "{context:?}"
    );
    let expected = structure(region(report, "sweep"), ASKING[1])["events"]["PAPI_L1_DCR"]
        .as_u64()
        .unwrap();
    assert_eq!(expected, N);
    assert_eq!(result["total"], expected, "{result:#}");
}
