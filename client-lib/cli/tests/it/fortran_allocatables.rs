//! Fortran ALLOCATABLE and POINTER module arrays are their data (issue 25): `fields::u` was its
//! 88-byte descriptor, and its heap block a separate `prog.f90:32` structure. Built with
//! `epcache cc -- gfortran`, the report names `fields::u` with the bytes each region used (it is
//! deallocated and allocated again at another size and other bounds in between) and the reads
//! and writes counted by hand, and no allocation site; requests on `fields::u` and `fields::p`,
//! placed before the program allocated anything, give histograms whose sums are the static
//! counts in the report of the same run (a block's address, and so the lines it straddles, may
//! differ from run to run).

use std::path::Path;
use std::process::Command;

use crate::capture_support::{
    available, epcache_cc, kernel, region, run_with_report, runtime_built, structure,
};

const CACHE: &str = "D1=8K,2,32;LL=1M,8,64";
const PROGRAM: &str = "allocatable_module";
/// `allocatable_module.f90`'s sizes: `u(1:N1)`, then `u(0:N2-1)`, and `p(1:NP)` (doubles, each
/// larger than the L1, so the sweeps miss alike with and without the code before them simulated).
const N1: u64 = 2000;
const N2: u64 = 3000;
const NP: u64 = 2048;

/// Builds kernel `source` as `program` in `dir`; false when gfortran or the runtime is missing.
fn build(dir: &Path, source: &str, program: &str) -> bool {
    if !available("gfortran", "fortran_allocatables") || !runtime_built("fortran_allocatables") {
        return false;
    }
    let source = kernel(source);
    // -O0 keeps every array reference of the source a load or store: the hand counts are the
    // source's.
    epcache_cc(
        dir,
        &["gfortran", "-O0", source.to_str().unwrap(), "-o", program],
    );
    true
}

fn event(value: &serde_json::Value, name: &str) -> u64 {
    value["events"][name]
        .as_u64()
        .unwrap_or_else(|| panic!("no {name} in {value}"))
}

/// Reads and writes of a structure in a region.
fn reads_writes(value: &serde_json::Value) -> (u64, u64) {
    (event(value, "PAPI_L1_DCR"), event(value, "PAPI_L1_DCW"))
}

fn dims(value: &serde_json::Value) -> Vec<(i64, u64)> {
    value["shape"]["dimensions"]
        .as_array()
        .unwrap_or_else(|| panic!("no shape in {value}"))
        .iter()
        .map(|d| (d["lower"].as_i64().unwrap(), d["extent"].as_u64().unwrap()))
        .collect()
}

#[test]
fn allocatable_and_pointer_arrays_are_named_and_measured_over_their_data() {
    let dir = tempfile::tempdir().unwrap();
    if !build(dir.path(), "allocatable_module.f90", PROGRAM) {
        return;
    }
    let (stdout, report) = run_with_report(dir.path(), &dir.path().join(PROGRAM), CACHE);
    // u(0) + u(N2-1) + p(NP): 2 * 3 + 2 * 3 + 1.5 * 2.
    assert_eq!(stdout.trim(), "15.0");

    let first = structure(region(&report, "first_sweep"), "fields::u");
    assert_eq!(first["kind"], "allocatable", "{first}");
    assert_eq!(first["bytes"], 8 * N1, "u(1:N1) in first_sweep: {first}");
    assert_eq!(dims(first), [(1, N1)]);
    assert_eq!(first["shape"]["element_bytes"], 8);
    assert_eq!(first["shape"]["column_major"], true);
    assert_eq!(reads_writes(first), (N1, N1));

    let second = structure(region(&report, "second_sweep"), "fields::u");
    assert_eq!(
        second["bytes"],
        8 * N2,
        "u(0:N2-1) in second_sweep: {second}"
    );
    assert_eq!(dims(second), [(0, N2)]);
    assert_eq!(reads_writes(second), (N2, N2));

    let p = structure(region(&report, "touch_pointer"), "fields::p");
    assert_eq!(p["kind"], "allocatable", "{p}");
    assert_eq!(p["bytes"], 8 * NP);
    assert_eq!(dims(p), [(1, NP)]);
    assert_eq!(reads_writes(p), (NP, NP));

    // Over the run: each array filled once per allocation, swept, and read by the print.
    let program = region(&report, "program");
    let u = structure(program, "fields::u");
    assert_eq!(u["bytes"], 8 * N2, "the larger allocation");
    assert_eq!(reads_writes(u), (N1 + N2 + 2, 2 * (N1 + N2)));
    assert_eq!(
        reads_writes(structure(program, "fields::p")),
        (NP + 1, 2 * NP)
    );
    assert_no_allocation_sites(&report);

    // Requests placed while the program waits at start, before its first ALLOCATE: each binds
    // when its region is entered, `fields::u` in second_sweep to the array's second
    // allocation.
    let out = Command::new(env!("CARGO_BIN_EXE_epcache"))
        .args(["run", "--cache", CACHE, "--all-regions"])
        .args(["--region", "first_sweep", "--array", "fields::u"])
        .args(["--event", "PAPI_L1_LDM"])
        .args(["--region", "second_sweep", "--array", "fields::u"])
        .args(["--event", "PAPI_L1_LDM"])
        .args(["--region", "touch_pointer", "--array", "fields::p"])
        .args(["--event", "PAPI_L1_LDM", "--buckets", "8", "--json", "--"])
        .arg(dir.path().join(PROGRAM))
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let (results, report) = &results_and_report(&stdout, &said);
    for (i, (region_name, array, bytes)) in [
        ("first_sweep", "fields::u", 8 * N1),
        ("second_sweep", "fields::u", 8 * N2),
        ("touch_pointer", "fields::p", 8 * NP),
    ]
    .into_iter()
    .enumerate()
    {
        let result = &results[i];
        let expected = event(structure(region(report, region_name), array), "PAPI_L1_LDM");
        assert!(expected > 0);
        assert_eq!(result["request"]["binding"], "bound", "{result:#}");
        assert_eq!(result["request"]["data_structure"]["name"], array);
        assert_eq!(result["request"]["data_structure"]["kind"], "allocatable");
        let range = &result["request"]["range"];
        assert_eq!(
            range["end"].as_u64().unwrap() - range["start"].as_u64().unwrap(),
            bytes,
            "{region_name}: {result:#}"
        );
        let buckets = result["buckets"].as_array().unwrap();
        assert_eq!(buckets.len(), 8, "{region_name}");
        let sum: u64 = buckets.iter().map(|b| b["count"].as_u64().unwrap()).sum();
        assert_eq!(sum, expected, "{region_name}: {result:#}");
    }
}

/// The blocks are the arrays': no allocation site of the program's is a structure of its own.
fn assert_no_allocation_sites(report: &serde_json::Value) {
    let sites: Vec<&serde_json::Value> = report["regions"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|r| r["data_structures"].as_array().unwrap())
        .filter(|d| d["kind"] == "alloc_site")
        .collect();
    assert!(sites.is_empty(), "{sites:#?}");
}

/// `derived_components.f90`'s array length.
const COMPONENT_N: u64 = 4000;

/// A derived-type variable's ALLOCATABLE components were their allocation line's block, and
/// the two components allocated on one line one structure: each is now an array of its own,
/// named by its variable and path (a nested type's too), with its shape and the reads and
/// writes counted by hand; a request names one by its short path.
#[test]
fn derived_type_components_are_arrays_of_their_own() {
    let dir = tempfile::tempdir().unwrap();
    let program = "derived_components";
    if !build(dir.path(), "derived_components.f90", program) {
        return;
    }
    let (stdout, report) = run_with_report(dir.path(), &dir.path().join(program), CACHE);
    // rho%val(1) after advect (1 + 2) plus rho%grid%u(n, 2), a copy of rho%val(n).
    assert_eq!(stdout.trim(), "6.0");
    let n = COMPONENT_N;

    let setup = region(&report, "setup");
    for array in ["state::rho%val", "state::vel%val"] {
        let value = structure(setup, array);
        assert_eq!(value["kind"], "allocatable", "{value}");
        assert_eq!(value["bytes"], 8 * n, "{value}");
        assert_eq!(dims(value), [(1, n)]);
        assert_eq!(reads_writes(value), (0, n), "{array} filled in setup");
    }
    let advect = region(&report, "advect");
    assert_eq!(reads_writes(structure(advect, "state::rho%val")), (n, n));
    assert_eq!(reads_writes(structure(advect, "state::vel%val")), (n, 0));
    let fill = region(&report, "fill_grid");
    let grid = structure(fill, "state::rho%grid%u");
    assert_eq!(grid["kind"], "allocatable", "{grid}");
    assert_eq!(dims(grid), [(1, n), (1, 2)]);
    assert_eq!(reads_writes(grid), (0, n));
    assert_eq!(reads_writes(structure(fill, "state::rho%val")), (n, 0));
    // The variable keeps its own bytes, the descriptors the program reads on its way.
    let rho = structure(advect, "state::rho");
    assert_eq!(rho["kind"], "global", "{rho}");
    assert!(event(rho, "PAPI_L1_DCR") > 0, "{rho}");
    assert_no_allocation_sites(&report);

    let results = run_requests(
        &dir.path().join(program),
        &[("advect", "vel%val", "PAPI_L1_DCR")],
    );
    let result = &results[0];
    assert_eq!(result["request"]["binding"], "bound", "{result:#}");
    assert_eq!(
        result["request"]["data_structure"]["name"],
        "state::vel%val"
    );
    assert_eq!(result["total"], n, "{result:#}");
}

/// A POINTER associated with other arrays' data (slices of a pool, an ALLOCATABLE) was left
/// unallocated, and a request on it measured nothing with a false "not allocated": each pointer
/// is now measured over the bytes it points to, which still count for their owner.
#[test]
fn pointers_to_other_arrays_data_are_measured_over_it() {
    let dir = tempfile::tempdir().unwrap();
    let program = "pointer_aliases";
    if !build(dir.path(), "pointer_aliases.f90", program) {
        return;
    }
    let n: u64 = 2048;
    let mut command = Command::new(env!("CARGO_BIN_EXE_epcache"));
    command.args(["run", "--cache", CACHE]);
    for (region, array) in [
        ("axpy", "u%val"),
        ("axpy", "v%val"),
        ("axpy", "pool"),
        ("viaq", "q"),
        ("viaq", "xx"),
        ("read_evens", "evens"),
    ] {
        command.args([
            "--region",
            region,
            "--array",
            array,
            "--event",
            "PAPI_L1_DCA",
        ]);
    }
    let out = command
        .args(["--all-regions", "--json", "--"])
        .arg(dir.path().join(program))
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    // The strided pointer's request stays unbound (status 2), saying why.
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(said.contains("pointed at a strided section"), "{said}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    // u%val(1): 1 + 3 sweeps adding 2 * 1; xx(n): 0 + 1.
    assert_eq!(stdout.lines().next(), Some("  8.0"), "{stdout}");
    let (results, report) = &results_and_report(&stdout, &said);
    // Three sweeps reading u and v and writing u; one reading and writing q.
    for (i, (array, total, bytes)) in [
        ("aliases::u%val", 3 * 2 * n, 8 * n),
        ("aliases::v%val", 3 * n, 8 * n),
        ("aliases::pool", 3 * 3 * n, 16 * n),
        ("aliases::q", 2 * n, 8 * n),
        ("aliases::xx", 2 * n, 8 * n),
    ]
    .into_iter()
    .enumerate()
    {
        let result = &results[i];
        assert_eq!(result["request"]["binding"], "bound", "{array}: {result:#}");
        assert_eq!(result["request"]["data_structure"]["name"], array);
        assert_eq!(result["total"], total, "{array}: {result:#}");
        let range = &result["request"]["range"];
        assert_eq!(
            range["end"].as_u64().unwrap() - range["start"].as_u64().unwrap(),
            bytes,
            "{array}: {result:#}"
        );
    }
    // Every other element of the pool: a request over its span would count the gaps too (2n - 1
    // of the pool's reads, not n), so it is not bound.
    let evens = &results[5];
    assert_ne!(evens["request"]["binding"], "bound", "{evens:#}");
    assert_eq!(evens["total"], 0, "{evens:#}");
    // The report counts the bytes for their owners: the pool and xx, not the pointers.
    let axpy = region(report, "axpy");
    assert_eq!(
        reads_writes(structure(axpy, "aliases::pool")),
        (6 * n, 3 * n)
    );
    let viaq = region(report, "viaq");
    assert_eq!(reads_writes(structure(viaq, "aliases::xx")), (n, n));
    for region in [axpy, viaq] {
        let names: Vec<&str> = region["data_structures"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["name"].as_str().unwrap())
            .collect();
        assert!(
            !names
                .iter()
                .any(|n| ["aliases::u%val", "aliases::v%val", "aliases::q"].contains(n)),
            "{names:?}"
        );
    }
}

/// The results and the report `epcache run --all-regions --json` prints after the program's own
/// output (`said`, its stderr, shown when they are missing).
fn results_and_report(stdout: &str, said: &str) -> (serde_json::Value, serde_json::Value) {
    let start = stdout
        .find("\n[")
        .unwrap_or_else(|| panic!("{stdout}\n{said}"));
    let mut documents = serde_json::Deserializer::from_str(&stdout[start..])
        .into_iter::<serde_json::Value>()
        .map(Result::unwrap);
    let results = documents.next().expect("the results");
    let report = documents.next().expect("the report");
    (results, report)
}

/// `statement_arrays.f90`'s grids: 200 x 200 doubles, relaxed twice.
const GRID: u64 = 200;

/// A main program's two arrays allocated in one statement (their descriptors on its stack, which
/// the runtime does not follow) were one structure named by the line: each is now named by its
/// own name and the line (`t@statement_arrays.f90:9`), with hand-counted reads and writes, and
/// a request placed before the allocation names one of them, or the line (whose latest block,
/// `tnew`, it binds).
#[test]
fn arrays_of_one_allocate_statement_are_named_and_requested_apart() {
    let dir = tempfile::tempdir().unwrap();
    let program = "statement_arrays";
    if !build(dir.path(), "statement_arrays.f90", program) {
        return;
    }
    let inner = (GRID - 2) * (GRID - 2);
    let (stdout, report) = run_with_report(dir.path(), &dir.path().join(program), CACHE);
    assert_eq!(stdout.trim(), "2.0");
    let relax = region(&report, "relax");
    assert_eq!(
        reads_writes(structure(relax, "t@statement_arrays.f90:9")),
        (2 * 4 * inner, 0)
    );
    assert_eq!(
        reads_writes(structure(relax, "tnew@statement_arrays.f90:9")),
        (0, 2 * inner)
    );
    assert_no_line_named_several(&report);

    let results = run_requests(
        &dir.path().join(program),
        &[
            ("relax", "tnew@statement_arrays.f90:9", "PAPI_L1_DCW"),
            ("relax", "t@statement_arrays.f90:9", "PAPI_L1_DCR"),
            ("relax", "statement_arrays.f90:9", "PAPI_L1_DCW"),
        ],
    );
    let totals: Vec<u64> = results
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["total"].as_u64().unwrap())
        .collect();
    assert_eq!(totals, [2 * inner, 2 * 4 * inner, 2 * inner], "{results:#}");
}

/// `growing_allocatable.f90`'s sizes, in doubles, in the order the region sees them.
const SIZES: [u64; 3] = [1000, 3000, 2000];

/// A histogram over an allocatable whose size changes between the region's instances counts
/// the same elements in every instance in each bucket (hand counts per bucket from its bytes:
/// element k is read once per instance that has it), reaches the largest size, says the
/// smallest and largest, and is labelled by elements up to the largest; a per-instance request
/// keeps its latest instance's own buckets.
#[test]
fn a_histogram_over_an_array_of_changing_size_counts_the_same_elements_in_every_instance() {
    let dir = tempfile::tempdir().unwrap();
    let program = "growing_allocatable";
    if !build(dir.path(), "growing_allocatable.f90", program) {
        return;
    }
    let run = |extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_epcache"))
            .args(["run", "--cache", CACHE])
            .args(["--region", "total", "--array", "grid::u", "--event"])
            .args(["PAPI_L1_DCR", "--buckets", "10"])
            .args(extra)
            .arg("--")
            .arg(dir.path().join(program))
            .output()
            .unwrap()
    };
    let summed = run(&["--json"]);
    let per_instance = run(&["--aggregation", "per-instance", "--json"]);
    let text = run(&[]);
    for out in [&summed, &per_instance, &text] {
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let result = |out: &std::process::Output| {
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let start = stdout.find("\n[").unwrap_or_else(|| panic!("{stdout}"));
        let results: serde_json::Value = serde_json::from_str(stdout[start..].trim()).unwrap();
        results[0].clone()
    };

    let summed = result(&summed);
    let bytes = |b: &serde_json::Value, end: &str| b["range"][end].as_u64().unwrap();
    let buckets = summed["buckets"].as_array().unwrap();
    let base = bytes(&buckets[0], "start");
    let largest = SIZES.iter().max().unwrap() * 8;
    assert!(buckets.len() <= 10, "{summed:#}");
    assert_eq!(bytes(buckets.last().unwrap(), "end") - base, largest);
    for b in buckets {
        let first = (bytes(b, "start") - base) / 8 + 1;
        let last = (bytes(b, "end") - base) / 8;
        let expected: u64 = (first..=last)
            .map(|k| SIZES.iter().filter(|&&n| n >= k).count() as u64)
            .sum();
        assert_eq!(
            b["count"], expected,
            "elements ({first}:{last}) in {summed:#}"
        );
    }
    assert_eq!(summed["total"], SIZES.iter().sum::<u64>());
    assert_eq!(summed["instance_bytes"]["smallest"], 8000);
    assert_eq!(summed["instance_bytes"]["largest"], largest);

    let latest = result(&per_instance);
    assert_eq!(latest["instances"], 3);
    assert_eq!(latest["total"], SIZES[2]);
    assert_eq!(
        latest["buckets"].as_array().unwrap().len(),
        10,
        "{latest:#}"
    );
    assert_eq!(latest["instance_bytes"]["largest"], SIZES[2] * 8);

    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("grid::u had different sizes in these instances (8000 to 24000 bytes)"),
        "{text}"
    );
    // 32-byte lines: 800-byte tenths of the first instance, doubled twice for the largest.
    assert!(text.contains("(1:400) 1200"), "{text}");
}

/// A request on a region that allocates its arrays again follows them inside the instance:
/// the writes to the new `u` and `v` are counted for each (1,000 + 4,000 + 9,000 elements),
/// never the old block's bytes, which the new `u` may reuse while the request is on `v`.
#[test]
fn a_request_follows_an_array_allocated_again_inside_its_region() {
    let dir = tempfile::tempdir().unwrap();
    let program = "reallocating_region";
    if !build(dir.path(), "reallocating_region.f90", program) {
        return;
    }
    let results = run_requests(
        &dir.path().join(program),
        &[
            ("setup", "grid2::u", "PAPI_L1_DCW"),
            ("setup", "grid2::v", "PAPI_L1_DCW"),
        ],
    );
    let counts: Vec<(u64, u64)> = results
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["instances"].as_u64().unwrap(),
                r["total"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(counts, [(3, 14_000), (3, 14_000)], "{results:#}");
}

/// A histogram over an array allocated again at another size inside one instance says both
/// sizes, so a reader learns why its buckets are wider than asked: every write of both
/// arrays (1,000 then 3,000 doubles) in buckets wide enough for the larger.
#[test]
fn a_histogram_over_an_array_grown_inside_one_instance_says_both_sizes() {
    let dir = tempfile::tempdir().unwrap();
    let program = "grows_inside_its_region";
    if !build(dir.path(), "grows_inside_its_region.f90", program) {
        return;
    }
    let results = run_json(
        &dir.path().join(program),
        &[
            "--region",
            "setup",
            "--array",
            "grid::u",
            "--event",
            "PAPI_L1_DCW",
            "--buckets",
            "10",
        ],
    );
    let result = &results[0];
    assert_eq!(result["instances"], 1, "{result:#}");
    assert_eq!(result["total"], 4000, "{result:#}");
    let sizes = &result["instance_bytes"];
    assert_eq!(
        (sizes["smallest"].as_u64(), sizes["largest"].as_u64()),
        (Some(8000), Some(24_000)),
        "{result:#}"
    );
    let buckets = result["buckets"].as_array().unwrap();
    let sum: u64 = buckets.iter().map(|b| b["count"].as_u64().unwrap()).sum();
    assert_eq!(sum, 4000, "{result:#}");
    assert!(buckets.len() <= 10, "{result:#}");
}

/// `main_allocates.f90`'s array: doubles, allocated at line 9 of the main program.
const MAIN_N: u64 = 5000;

/// A main program's own array (its descriptor in the main program's frame, named by its
/// ALLOCATE line) requested on the main program, which is entered before the array exists:
/// counted from the ALLOCATE on, every write and read, whether the request names the array
/// before the line (`t@main_allocates.f90:9`, though the statement allocates it alone) or the
/// line. The array's name alone is refused with the name to ask for.
#[test]
fn a_request_on_the_main_program_counts_the_array_it_allocates() {
    let dir = tempfile::tempdir().unwrap();
    let program = "main_allocates";
    if !build(dir.path(), "main_allocates.f90", program) {
        return;
    }
    let results = run_requests(
        &dir.path().join(program),
        &[
            ("main_allocates", "t@main_allocates.f90:9", "PAPI_L1_DCW"),
            ("main_allocates", "main_allocates.f90:9", "PAPI_L1_DCR"),
        ],
    );
    let counts: Vec<(u64, u64, &str)> = results
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["instances"].as_u64().unwrap(),
                r["total"].as_u64().unwrap(),
                r["request"]["binding"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        counts,
        [(1, MAIN_N, "bound"), (1, MAIN_N, "bound")],
        "{results:#}"
    );

    let out = Command::new(env!("CARGO_BIN_EXE_epcache"))
        .args(["run", "--cache", CACHE, "--region", "main_allocates"])
        .args(["--array", "t", "--event", "PAPI_L1_DCW", "--"])
        .arg(dir.path().join(program))
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(said.contains("ask for `t@main_allocates.f90:9`"), "{said}");

    // A histogram placed before its array exists gets its width when it binds; fewer buckets
    // than asked are said then, as at placement for an array that exists.
    let out = Command::new(env!("CARGO_BIN_EXE_epcache"))
        .args(["run", "--cache", CACHE, "--region", "main_allocates"])
        .args([
            "--array",
            "t@main_allocates.f90:9",
            "--event",
            "PAPI_L1_DCW",
        ])
        .args(["--buckets", "500", "--json", "--"])
        .arg(dir.path().join(program))
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    let buckets =
        crate::capture_support::run_results(&String::from_utf8_lossy(&out.stdout))[0]["buckets"]
            .as_array()
            .unwrap()
            .len();
    assert!(buckets < 500, "{buckets}");
    assert!(
        said.contains(&format!("{buckets} bucket(s) of")) && said.contains("not the 500 asked"),
        "{said}"
    );
}

/// No allocation line of the report covers several arrays.
fn assert_no_line_named_several(report: &serde_json::Value) {
    let several: Vec<&serde_json::Value> = report["regions"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|r| r["data_structures"].as_array().unwrap())
        .filter(|d| d["several_arrays"] == true)
        .collect();
    assert!(several.is_empty(), "{several:#?}");
}

/// The results `epcache run --json` prints for `requests` (region, array, event) over `program`,
/// which must succeed.
fn run_requests(program: &Path, requests: &[(&str, &str, &str)]) -> serde_json::Value {
    let args: Vec<&str> = requests
        .iter()
        .flat_map(|&(region, array, event)| {
            ["--region", region, "--array", array, "--event", event]
        })
        .collect();
    run_json(program, &args)
}

/// The results `epcache run --cache CACHE ARGS --json` prints over `program`, which must
/// succeed.
fn run_json(program: &Path, args: &[&str]) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_epcache"))
        .args(["run", "--cache", CACHE])
        .args(args)
        .args(["--json", "--"])
        .arg(program)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    crate::capture_support::run_results(&String::from_utf8_lossy(&out.stdout))
}
