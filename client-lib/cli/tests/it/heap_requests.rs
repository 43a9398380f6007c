//! Heap arrays requested by allocation site before the program allocates them (issue 25): with
//! `epcache run --array FILE:LINE` the request waits in the program, binds there to the block
//! allocated at that line when the region is entered, and gives the histogram whose sum is the
//! array's static count in the standalone report of the same run (`--all-regions`: a block's
//! address, and so the lines it straddles, may differ from run to run); `--site-block largest`
//! binds to a site's largest block rather than its latest; a site that never allocated is
//! reported unbound, and a file the program has no code in is refused before the program runs
//! on, with the nearest files.

use std::path::Path;
use std::process::{Command, Output};

use crate::capture_support::{available, epcache_cc, kernel, region, runtime_built, structure};

const CACHE: &str = "D1=8K,2,32;LL=1M,8,64";
const PROGRAM: &str = "heap_request";
/// `heap_request.c`'s lines: `malloc` in `vector` (called for a large then a small block), the
/// array `a`, and a block allocated only with more than four arguments.
const VECTOR_LINE: u32 = 10;
const A_LINE: u32 = 21;
const NEVER_LINE: u32 = 31;
/// `heap_request.c`'s N: doubles in `a` and in the large block.
const N: u64 = 20_000;

fn build(dir: &Path) -> bool {
    if !available("gcc", "heap_requests") || !runtime_built("heap_requests") {
        return false;
    }
    let source = kernel("heap_request.c");
    epcache_cc(
        dir,
        &["gcc", "-O1", source.to_str().unwrap(), "-o", PROGRAM],
    );
    true
}

/// `epcache run --cache CACHE ARGS --json -- ./heap_request` (add `--all-regions` for the
/// standalone report after the results).
fn run(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_epcache"))
        .args(["run", "--cache", CACHE])
        .args(args)
        .args(["--json", "--"])
        .arg(dir.join(PROGRAM))
        .output()
        .unwrap()
}

/// The JSON documents `epcache run --json` prints after the program's line: the results, then
/// with `--all-regions` the standalone report.
fn documents(out: &Output) -> Vec<serde_json::Value> {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let start = stdout
        .find("\n[")
        .unwrap_or_else(|| panic!("no results in {stdout}\n{}", stderr(out)));
    serde_json::Deserializer::from_str(&stdout[start..])
        .into_iter()
        .collect::<Result<_, _>>()
        .unwrap()
}

fn results(out: &Output) -> serde_json::Value {
    documents(out).swap_remove(0)
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn bucket_sum(result: &serde_json::Value) -> u64 {
    result["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["count"].as_u64().unwrap())
        .sum()
}

#[test]
fn a_heap_array_is_requested_by_its_allocation_site_before_it_exists() {
    let dir = tempfile::tempdir().unwrap();
    if !build(dir.path()) {
        return;
    }
    let site = format!("{PROGRAM}.c:{A_LINE}");
    // The program waits at start, before main allocates anything: the request waits too.
    // `--output` takes the report; the results stay on stdout.
    let written = dir.path().join("report.json");
    let out = run(
        dir.path(),
        &[
            "--all-regions",
            "--output",
            written.to_str().unwrap(),
            "--region",
            "scale",
            "--array",
            &site,
            "--event",
            "PAPI_L1_LDM",
            "--buckets",
            "8",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let documents = documents(&out);
    assert_eq!(documents.len(), 1, "the results alone on stdout");
    let result = &documents[0][0];
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&written).unwrap()).unwrap();
    let scale = region(&report, "scale");
    let expected = structure(scale, &site)["events"]["PAPI_L1_LDM"]
        .as_u64()
        .unwrap();
    assert!(expected > 0, "{scale:#}");
    assert_eq!(result["request"]["binding"], "bound", "{result:#}");
    assert_eq!(result["request"]["data_structure"]["name"], site);
    assert_eq!(result["buckets"].as_array().unwrap().len(), 8);
    assert_eq!(bucket_sum(result), expected, "{result:#}");
    assert_eq!(result["total"], expected);
    // The buckets cover the block the site allocated.
    let range = &result["request"]["range"];
    assert_eq!(
        range["end"].as_u64().unwrap() - range["start"].as_u64().unwrap(),
        8 * N
    );
}

#[test]
fn a_sites_largest_or_latest_block_is_measured_as_asked() {
    let dir = tempfile::tempdir().unwrap();
    if !build(dir.path()) {
        return;
    }
    let site = format!("{PROGRAM}.c:{VECTOR_LINE}");
    let request = |block: &str| {
        let out = run(
            dir.path(),
            &[
                "--all-regions",
                "--region",
                "scale",
                "--array",
                &site,
                "--event",
                "PAPI_L1_LDM",
                "--buckets",
                "4",
                "--site-block",
                block,
            ],
        );
        assert!(out.status.success(), "{}", stderr(&out));
        let documents = documents(&out);
        // `scale` touches the large block of the site, never the small one allocated after it.
        let expected = structure(region(&documents[1], "scale"), &site)["events"]["PAPI_L1_LDM"]
            .as_u64()
            .unwrap();
        assert!(expected > 0);
        (documents[0][0].clone(), expected)
    };
    let (largest, expected) = request("largest");
    assert_eq!(largest["request"]["site_block"], "largest");
    assert_eq!(bucket_sum(&largest), expected, "{largest:#}");
    let range = &largest["request"]["range"];
    assert_eq!(
        range["end"].as_u64().unwrap() - range["start"].as_u64().unwrap(),
        8 * N
    );
    let (latest, _) = request("latest");
    assert_eq!(latest["request"]["binding"], "bound");
    assert_eq!(bucket_sum(&latest), 0, "the small block: {latest:#}");
    let range = &latest["request"]["range"];
    assert_eq!(
        range["end"].as_u64().unwrap() - range["start"].as_u64().unwrap(),
        8 * N / 2
    );
}

/// A request on the region that allocates its array (here `main`, entered before anything is
/// allocated, as a kernel inlined into a main program is) counts the array from its
/// allocation on: every access the standalone report counts for the block in `main`. The
/// array's own name before the line (`a@heap_request.c:21`) binds to the line's one block; the
/// name alone, which the program has no data structure of, is refused with that name to ask
/// for.
#[test]
fn a_request_on_the_region_that_allocates_its_array_counts_it_from_the_allocation() {
    let dir = tempfile::tempdir().unwrap();
    if !build(dir.path()) {
        return;
    }
    let named = format!("a@{PROGRAM}.c:{A_LINE}");
    let out = run(
        dir.path(),
        &[
            "--all-regions",
            "--region",
            "main",
            "--array",
            &named,
            "--event",
            "PAPI_L1_DCA",
            "--buckets",
            "8",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let documents = documents(&out);
    let (result, report) = (&documents[0][0], &documents[1]);
    let block = structure(region(report, "main"), &format!("{PROGRAM}.c:{A_LINE}"));
    let expected = block["events"]["PAPI_L1_DCA"].as_u64().unwrap();
    // Written once, scaled (read and written), printed: N + 2N + 1 at least.
    assert!(expected > 3 * N, "{block:#}");
    assert_eq!(result["instances"], 1, "{result:#}");
    assert_eq!(result["total"], expected, "{result:#}");
    assert_eq!(bucket_sum(result), expected, "{result:#}");
    assert_eq!(result["request"]["binding"], "bound", "{result:#}");
    assert_eq!(result["buckets"].as_array().unwrap().len(), 8);

    let out = run(
        dir.path(),
        &["--region", "main", "--array", "a", "--event", "PAPI_L1_DCA"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!("ask for `{named}`")),
        "{}",
        stderr(&out)
    );
}

/// A request whose region never runs measures nothing and says that, not that its data was
/// never allocated.
#[test]
fn a_request_on_a_region_that_never_runs_says_so() {
    let dir = tempfile::tempdir().unwrap();
    if !build(dir.path()) {
        return;
    }
    let site = format!("{PROGRAM}.c:{A_LINE}");
    let out = run(
        dir.path(),
        &[
            "--region",
            "unused",
            "--array",
            &site,
            "--event",
            "PAPI_L1_LDM",
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("a request measured nothing: `unused` never ran"),
        "{}",
        stderr(&out)
    );
    assert!(!stderr(&out).contains("stayed unbound"), "{}", stderr(&out));
    let result = &results(&out)[0];
    assert_eq!(result["available"], false, "{result:#}");
}

#[test]
fn a_site_that_never_allocates_is_reported_unbound_and_an_unknown_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    if !build(dir.path()) {
        return;
    }
    let never = format!("{PROGRAM}.c:{NEVER_LINE}");
    let out = run(
        dir.path(),
        &[
            "--region",
            "scale",
            "--array",
            &never,
            "--event",
            "PAPI_L1_LDM",
            "--buckets",
            "8",
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!(
            "a request stayed unbound: no block of at least 4096 bytes allocated at {never} was live while scale ran"
        )),
        "{}",
        stderr(&out)
    );
    assert!(
        stderr(&out).contains("ask for a region during which the program allocates it"),
        "{}",
        stderr(&out)
    );
    // The line has code (a branch never taken): no warning before the start.
    assert!(!stderr(&out).contains("has no code"), "{}", stderr(&out));
    // Served at each of scale's two instances, over no bytes: nothing counted, and unbound.
    let result = &results(&out)[0];
    assert_eq!(result["instances"], 2, "{result:#}");
    assert_eq!(result["total"], 0, "{result:#}");
    assert_eq!(result["request"]["binding"], "waiting", "{result:#}");
    assert_eq!(result["request"]["allocation_site"]["line"], NEVER_LINE);

    // A line past the file's code is said before the program starts, with the nearest line
    // that has code.
    let past = format!("{PROGRAM}.c:999");
    let out = run(
        dir.path(),
        &[
            "--region",
            "scale",
            "--array",
            &past,
            "--event",
            "PAPI_L1_LDM",
        ],
    );
    let said = stderr(&out);
    let warning = format!("{past} has no code in the program");
    assert!(said.contains(&warning), "{said}");
    assert!(
        said.find(&warning) < said.find("daemon for this run"),
        "{said}"
    );

    // So does `epcache request` on a running program, from its executable, before it asks
    // any daemon (here none answers).
    let mut waiting = Command::new(dir.path().join(PROGRAM))
        .env("EPCACHE_WAIT", "30")
        .env("EPCACHE_RUNTIME_DIR", dir.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = waiting.id().to_string();
    let request = |array: &str| {
        Command::new(env!("CARGO_BIN_EXE_epcache"))
            .args(["request", &pid, "--region", "scale", "--array", array])
            .args(["--event", "PAPI_L1_LDM", "--daemon"])
            .arg(format!("unix:{}", dir.path().join("none.sock").display()))
            .output()
            .unwrap()
    };
    let out = request(&past);
    // A line that has code, named from the current directory, is not said to have none.
    let quiet = request(&format!("./{never}"));
    // An array the line does not allocate is said, with the one it does.
    let other = request(&format!("x@{PROGRAM}.c:{A_LINE}"));
    let _ = waiting.kill();
    let _ = waiting.wait();
    assert!(!out.status.success());
    assert!(stderr(&out).contains(&warning), "{}", stderr(&out));
    assert!(
        !stderr(&quiet).contains("has no code"),
        "{}",
        stderr(&quiet)
    );
    assert!(
        stderr(&other).contains(&format!(
            "{PROGRAM}.c:{A_LINE} allocates `a`, not `x`: the request would count that line's \
             block under the name `x`; ask for `a@{PROGRAM}.c:{A_LINE}`"
        )),
        "{}",
        stderr(&other)
    );

    let out = run(
        dir.path(),
        &[
            "--region",
            "scale",
            "--array",
            "heap_requst.c:21",
            "--event",
            "PAPI_L1_LDM",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    let said = stderr(&out);
    assert!(
        said.contains("no source file for allocation site `heap_requst.c:21`")
            && said.contains("nearest: heap_request.c"),
        "{said}"
    );
    // The program ran to its end, unmonitored.
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("39998 "));
}

/// Four threads each allocate their own array at one line inside a parallel region: a request
/// on the line counts every thread's writes and reads of its own block. Each thread bound to
/// the latest block any thread had made, and moved to it whenever another allocated, so its
/// own accesses went uncounted at random (QA: 12,490 of 16,384 writes, 4 runs in 10).
#[test]
fn threads_allocating_at_one_line_each_count_their_own_block() {
    let dir = tempfile::tempdir().unwrap();
    let who = "threads_allocating_at_one_line_each_count_their_own_block";
    if !available("gcc", who) || !runtime_built(who) {
        return;
    }
    let source = kernel("omp_private_alloc.c");
    epcache_cc(
        dir.path(),
        &[
            "gcc",
            "-O1",
            "-fopenmp",
            source.to_str().unwrap(),
            "-o",
            "private",
        ],
    );
    let site = "omp_private_alloc.c:14";
    // 4 threads, 2 passes each writing and reading 2,048 doubles.
    let expected = 4 * 2 * 2048;
    for _ in 0..3 {
        let out = Command::new(env!("CARGO_BIN_EXE_epcache"))
            .args(["run", "--cache", CACHE])
            .args([
                "--region",
                "chunks",
                "--array",
                site,
                "--event",
                "PAPI_L1_DCW",
            ])
            .args([
                "--region",
                "chunks",
                "--array",
                site,
                "--event",
                "PAPI_L1_DCR",
            ])
            .args(["--json", "--"])
            .arg(dir.path().join("private"))
            .env("OMP_NUM_THREADS", "4")
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        let results = results(&out);
        let totals: Vec<u64> = results
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["total"].as_u64().unwrap())
            .collect();
        assert_eq!(totals, [expected, expected], "{}", stderr(&out));
    }
}
