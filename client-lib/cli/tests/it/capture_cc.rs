//! `epcache cc` end to end: real gcc and gfortran build small kernels with capture, the programs
//! run with `EPCACHE_REPORT`, and the report's counts are checked against hand counts.

use std::path::Path;
use std::process::Command;

use crate::capture_support::{
    self, available, epcache_cc, kernel, region, run_with_report, runtime_built, runtime_library,
};

/// A first-level cache smaller than the kernels' 16 KB array, so the read sweep after the write
/// sweep misses on every line again: 16 KB / 64 B = 256 misses per sweep.
const SMALL_L1: &str = "D1=4K,4,64";
const N: u64 = 4096;
const LINE: u64 = 64;

fn no_libtsan(program: &Path) {
    let Ok(out) = Command::new("ldd").arg(program).output() else {
        eprintln!("ldd not found: libtsan check skipped");
        return;
    };
    let libraries = String::from_utf8_lossy(&out.stdout);
    assert!(
        !libraries.contains("libtsan"),
        "{} links libtsan:\n{libraries}",
        program.display()
    );
}

/// Whether `compiler` and the runtime are there for test `who` (each missing one fails under
/// CI and is reported as SKIPPED elsewhere).
fn ready(compiler: &str, who: &str) -> bool {
    available(compiler, who) && runtime_built(who)
}

/// Builds kernel `source` with `epcache cc -- COMPILE.. -o program`, runs it (with
/// `OMP_NUM_THREADS=threads`) writing a report under `D1=32K,8,64;LL=8M,16,64`, and returns what
/// it printed and the report; panics when the program fails.
fn build_and_report(
    dir: &Path,
    compile: &[&str],
    source: &str,
    threads: u32,
) -> (String, serde_json::Value) {
    let source = kernel(source);
    let mut line = compile.to_vec();
    line.extend(["-o", "program", source.to_str().unwrap()]);
    epcache_cc(dir, &line);
    let report_path = dir.join("report.json");
    let out = Command::new(dir.join("program"))
        .env("OMP_NUM_THREADS", threads.to_string())
        .env("EPCACHE_REPORT", &report_path)
        .env("EPCACHE_CACHE", "D1=32K,8,64;LL=8M,16,64")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = serde_json::from_str(&std::fs::read_to_string(&report_path).unwrap()).unwrap();
    (String::from_utf8_lossy(&out.stdout).into_owned(), report)
}

fn level<'a>(report: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    report["levels"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["name"] == name)
        .unwrap_or_else(|| panic!("no level {name} in {report:#}"))
}

fn count(value: &serde_json::Value, field: &str) -> u64 {
    value[field].as_u64().unwrap_or_else(|| panic!("{field}"))
}

#[test]
fn c_kernel_counts_equal_the_hand_counts() {
    if !ready("gcc", "c_kernel_counts_equal_the_hand_counts") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let source = kernel("capture_sum.c");
    // Compile and link in one command: epcache cc splits it.
    epcache_cc(
        dir.path(),
        &["gcc", "-O1", "-o", "sum", source.to_str().unwrap()],
    );
    let program = dir.path().join("sum");
    no_libtsan(&program);
    let (stdout, report) = run_with_report(dir.path(), &program, SMALL_L1);
    assert_eq!(stdout.trim(), (N * (N - 1) / 2).to_string());
    let d1 = level(&report, "D1");
    // One store per element, then one load per element; the array is line-aligned, and each
    // sweep misses once per line because the array is four times the cache.
    assert_eq!(count(d1, "writes"), N);
    assert_eq!(count(d1, "reads"), N);
    assert_eq!(count(d1, "write_misses"), N * 4 / LINE);
    assert_eq!(count(d1, "read_misses"), N * 4 / LINE);
    let events = &report["regions"][0]["events"];
    assert_eq!(count(events, "PAPI_L1_DCR"), N);
    assert_eq!(count(events, "PAPI_L1_LDM"), N * 4 / LINE);
    assert_eq!(count(events, "PAPI_L1_DCW"), N);
    assert_eq!(count(events, "PAPI_L1_STM"), N * 4 / LINE);
    assert_eq!(report["cache"], SMALL_L1);
    assert_eq!(report["threads"], 1);

    // A cache it cannot simulate is said once at start, even with nothing captured yet (a tool
    // may come later), and the program runs on.
    let out = std::process::Command::new(&program)
        .env("EPCACHE_CACHE", "D1=32K,8,60")
        .env("EPCACHE_RUNTIME_DIR", dir.path().join("run"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        (N * (N - 1) / 2).to_string()
    );
    assert_eq!(
        stderr
            .matches("cannot simulate the cache `D1=32K,8,60`")
            .count(),
        1,
        "{stderr}"
    );
    // The report says what was given and, apart, why nothing was simulated.
    let report_path = dir.path().join("bad-cache.json");
    let out = std::process::Command::new(&program)
        .env("EPCACHE_CACHE", "D1=32K,8,60")
        .env("EPCACHE_REPORT", &report_path)
        .env("EPCACHE_RUNTIME_DIR", dir.path().join("run"))
        .output()
        .unwrap();
    assert!(out.status.success());
    // The cache is the reason nothing was captured, not the build.
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("built with capture"), "{stderr}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report_path).unwrap()).unwrap();
    assert_eq!(report["cache"], "D1=32K,8,60");
    let error = report["error"].as_str().unwrap_or_default();
    assert!(error.contains("cannot simulate the cache"), "{report}");
}

/// `-flto` would make the code at link time, uninstrumented, and the program would write no
/// report: it is dropped with a note, and the program counts what it counts without it.
#[test]
fn link_time_optimisation_is_dropped_with_a_note() {
    if !ready("gcc", "link_time_optimisation_is_dropped_with_a_note") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let source = kernel("capture_sum.c");
    let out = epcache_cc(
        dir.path(),
        &["gcc", "-O2", "-flto", "-o", "sum", source.to_str().unwrap()],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("-flto dropped"), "{stderr}");
    let (_, report) = run_with_report(dir.path(), &dir.path().join("sum"), SMALL_L1);
    let d1 = level(&report, "D1");
    assert_eq!(count(d1, "reads"), N);
    assert_eq!(count(d1, "writes"), N);
}

/// A fully static, stripped link (`-static -s`, as some HPC sites build): the runtime's unwinder
/// comes from libgcc_eh (there is no static libgcc_s), the strip is dropped with a note so the
/// program still names its functions and arrays, and it counts what the dynamic build counts.
#[test]
fn static_stripped_links_still_count_and_name() {
    if !ready("gcc", "static_stripped_links_still_count_and_name")
        || !capture_support::static_libc_available("static_stripped_links_still_count_and_name")
    {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let source = kernel("capture_sum.c");
    let out = epcache_cc(
        dir.path(),
        &[
            "gcc",
            "-O1",
            "-static",
            "-s",
            "-o",
            "sum",
            source.to_str().unwrap(),
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("-s dropped"), "{stderr}");
    // glibc's warnings about the runtime's references are explained, not left to alarm.
    if stderr.contains("in statically linked applications") {
        assert!(stderr.contains("come from epcache's runtime"), "{stderr}");
    }
    let program = dir.path().join("sum");
    let (_, report) = run_with_report(dir.path(), &program, SMALL_L1);
    let d1 = level(&report, "D1");
    assert_eq!(count(d1, "reads"), N);
    assert_eq!(count(d1, "writes"), N);
    let fill = capture_support::region(&report, "fill");
    assert_eq!(
        capture_support::structure(fill, "a")["events"]["PAPI_L1_DCW"],
        N
    );
}

#[test]
fn separate_compile_and_link_steps_and_make_work() {
    if !available("gcc", "separate_compile_and_link_steps_and_make_work")
        || !available("make", "separate_compile_and_link_steps_and_make_work")
        || !runtime_built("separate_compile_and_link_steps_and_make_work")
    {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(kernel("capture_sum.c"), dir.path().join("sum.c")).unwrap();
    std::fs::write(
        dir.path().join("Makefile"),
        "sum: sum.o\n\t$(CC) -o sum sum.o\nsum.o: sum.c\n\t$(CC) -O1 -c sum.c\n",
    )
    .unwrap();
    let cc = format!("CC={} cc -- gcc", env!("CARGO_BIN_EXE_epcache"));
    let out = Command::new("make")
        .env(
            "EPCACHE_RUNTIME",
            runtime_library().expect("checked by runtime_built"),
        )
        .arg(cc)
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "make failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let program = dir.path().join("sum");
    no_libtsan(&program);
    let (_, report) = run_with_report(dir.path(), &program, SMALL_L1);
    assert_eq!(count(level(&report, "D1"), "reads"), N);
    assert_eq!(count(level(&report, "D1"), "writes"), N);
    // Without EPCACHE_REPORT the program runs plainly and writes nothing.
    let plain = Command::new(&program).output().unwrap();
    assert!(plain.status.success());
}

/// CMake, through the one-line wrapper scripts the README gives (CMake takes one compiler path,
/// not a command): its compiler checks pass, and the C and the Fortran kernel it builds count
/// what they count when built by hand, with the Fortran module array named.
#[test]
fn cmake_builds_through_the_readme_wrapper() {
    let who = "cmake_builds_through_the_readme_wrapper";
    if !available("gcc", who)
        || !available("gfortran", who)
        || !available("cmake", who)
        || !available("make", who)
        || !runtime_built(who)
    {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::copy(kernel("capture_sum.c"), root.join("sum.c")).unwrap();
    std::fs::copy(kernel("capture_sum.f90"), root.join("fsum.f90")).unwrap();
    std::fs::write(
        root.join("CMakeLists.txt"),
        "cmake_minimum_required(VERSION 3.13)\nproject(capture_sum C Fortran)\n\
         add_executable(sum sum.c)\nadd_executable(fsum fsum.f90)\n",
    )
    .unwrap();
    let epcache = env!("CARGO_BIN_EXE_epcache");
    for (script, compiler) in [("epcc", "gcc"), ("epfc", "gfortran")] {
        let path = root.join(script);
        std::fs::write(
            &path,
            format!("#!/bin/sh\nexec {epcache} cc -- {compiler} \"$@\"\n"),
        )
        .unwrap();
        let mut permissions = std::fs::metadata(&path).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
        std::fs::set_permissions(&path, permissions).unwrap();
    }
    let build = root.join("build");
    std::fs::create_dir(&build).unwrap();
    let runtime = runtime_library().expect("checked by runtime_built");
    let run = |program: &str, args: &[String]| {
        let out = Command::new(program)
            .args(args)
            .env("EPCACHE_RUNTIME", &runtime)
            .current_dir(&build)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{program} {args:?} failed:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    };
    run(
        "cmake",
        &[
            format!("-DCMAKE_C_COMPILER={}", root.join("epcc").display()),
            format!("-DCMAKE_Fortran_COMPILER={}", root.join("epfc").display()),
            "-DCMAKE_BUILD_TYPE=Release".to_owned(),
            "..".to_owned(),
        ],
    );
    run("make", &[]);
    for program in ["sum", "fsum"] {
        let program = build.join(program);
        no_libtsan(&program);
        let (stdout, report) = run_with_report(&build, &program, SMALL_L1);
        assert_eq!(stdout.trim(), (N * (N - 1) / 2).to_string());
        let d1 = level(&report, "D1");
        assert_eq!(count(d1, "reads"), N, "{}", program.display());
        assert_eq!(count(d1, "writes"), N, "{}", program.display());
    }
    let (_, report) = run_with_report(&build, &build.join("fsum"), SMALL_L1);
    let named = report["regions"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|r| r["data_structures"].as_array().unwrap())
        .any(|d| d["name"] == "kernel::a" && d["events"]["PAPI_L1_DCR"] == N);
    assert!(named, "the module array is named kernel::a: {report:#}");
}

/// A kernel in a shared library built with `epcache cc -- gcc -fPIC -shared`, called from a
/// program built with `epcache cc`: the library's function is a region and its global a data
/// structure, named from the library's own debug information at its own load address. A
/// library built plainly with -g beside it is not read.
#[test]
fn a_shared_librarys_functions_and_globals_are_named() {
    if !ready("gcc", "a_shared_librarys_functions_and_globals_are_named") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (lib, app) = (kernel("shared_lib.c"), kernel("shared_app.c"));
    epcache_cc(
        dir.path(),
        &[
            "gcc",
            "-O2",
            "-fPIC",
            "-shared",
            lib.to_str().unwrap(),
            "-o",
            "libkernel.so",
        ],
    );
    let plain = kernel("shared_plain.c");
    let out = Command::new("gcc")
        .args(["-O2", "-g", "-fPIC", "-shared"])
        .arg(&plain)
        .args(["-o", "libplain.so"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let rpath = format!("-Wl,-rpath,{}", dir.path().display());
    epcache_cc(
        dir.path(),
        &[
            "gcc",
            "-O2",
            app.to_str().unwrap(),
            "-L.",
            "-lkernel",
            "-lplain",
            &rpath,
            "-o",
            "app",
        ],
    );
    let (stdout, report) = run_with_report(dir.path(), &dir.path().join("app"), SMALL_L1);
    assert_eq!(stdout.trim(), "ok");
    let sweep = capture_support::region(&report, "lib_sweep");
    assert!(sweep["file"].as_str().unwrap().ends_with("shared_lib.c"));
    assert_eq!(sweep["instances"], 2);
    let l = capture_support::structure(sweep, "L");
    assert_eq!(l["bytes"], 8192 * 8);
    assert_eq!(l["events"]["PAPI_L1_DCR"], 2 * 8192);
    assert_eq!(l["events"]["PAPI_L1_DCW"], 2 * 8192);
    let a = capture_support::structure(capture_support::region(&report, "main"), "A");
    assert_eq!(a["events"]["PAPI_L1_DCW"], 4096);
    // The library built without capture is not read: no region, no data structure.
    let text = report.to_string();
    assert!(
        !text.contains("plain_touch") && !text.contains("\"P\""),
        "{report:#}"
    );
}

/// A library built with capture that the program opens with `dlopen` (a plugin, which the
/// linker never saw) loads, since the program exports the runtime's entry points, and is named
/// like one linked at start: the `dlopen` wrap has the runtime read it.
#[test]
fn a_dlopened_captured_library_loads_counts_and_is_named() {
    if !ready(
        "gcc",
        "a_dlopened_captured_library_loads_counts_and_is_named",
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (lib, app) = (kernel("shared_lib.c"), kernel("dlopen_app.c"));
    epcache_cc(
        dir.path(),
        &[
            "gcc",
            "-O2",
            "-fPIC",
            "-shared",
            lib.to_str().unwrap(),
            "-o",
            "libplugin.so",
        ],
    );
    epcache_cc(
        dir.path(),
        &["gcc", "-O2", app.to_str().unwrap(), "-ldl", "-o", "app"],
    );
    let (stdout, report) = run_with_report(dir.path(), &dir.path().join("app"), SMALL_L1);
    assert_eq!(stdout.trim(), "ok");
    // The plugin's two sweeps over its 8192 doubles, read and written, named from its own
    // debug information, read when it was opened.
    let sweep = capture_support::region(&report, "lib_sweep");
    assert_eq!(sweep["instances"], 2);
    let l = capture_support::structure(sweep, "L");
    assert_eq!(l["events"]["PAPI_L1_DCR"], 2 * 8192);
    assert_eq!(l["events"]["PAPI_L1_DCW"], 2 * 8192);
}

#[test]
fn threads_and_atomics_stay_correct() {
    if !ready("gcc", "threads_and_atomics_stay_correct") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let source = kernel("capture_threads.c");
    epcache_cc(
        dir.path(),
        &[
            "gcc",
            "-O2",
            "-pthread",
            "-o",
            "threads",
            source.to_str().unwrap(),
        ],
    );
    let program = dir.path().join("threads");
    no_libtsan(&program);
    let (stdout, report) = run_with_report(dir.path(), &program, SMALL_L1);
    assert!(stdout.starts_with("OK"), "wrong result: {stdout}");
    // The main thread and the four workers each simulated and were merged.
    assert_eq!(report["threads"], 5);
    // Each worker's 20000 iterations do two read-modify-writes (a store each).
    assert!(count(level(&report, "D1"), "writes") >= 4 * 20_000 * 2);
}

/// A Fortran subroutine outside any module whose body is an OpenMP loop counts its team as
/// one in a module does: gfortran names the body by the linkage name (`twice_._omp_fn.0`).
#[test]
fn a_fortran_external_subroutines_openmp_loop_counts_its_team() {
    if !ready(
        "gfortran",
        "a_fortran_external_subroutines_openmp_loop_counts_its_team",
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let source = kernel("omp_external.f90");
    epcache_cc(
        dir.path(),
        &[
            "gfortran",
            "-O2",
            "-g",
            "-fopenmp",
            "-o",
            "ext",
            source.to_str().unwrap(),
        ],
    );
    let (stdout, report) = run_with_report(
        dir.path(),
        &dir.path().join("ext"),
        "D1=32K,8,64;LL=8M,16,64",
    );
    assert_eq!(stdout.trim(), "200000.0");
    let function = capture_support::region(&report, "twice");
    assert_eq!(function["instances"], 2, "{function:#}");
    assert_eq!(function["threads"], 2, "{function:#}");
    // Every element of `a` read and written once, by one thread or the other.
    let a = capture_support::structure(function, "omp_external.f90:19");
    assert_eq!(a["events"]["PAPI_L1_DCR"], 100_000, "{function:#}");
    assert_eq!(a["events"]["PAPI_L1_DCW"], 100_000, "{function:#}");
}

/// A Fortran procedure contained in a program, holding a parallel loop, counts its whole team
/// as a module procedure does: gfortran names its body `relax.0._omp_fn.0`, after its local
/// symbol, and the body's parent was looked for under that name and not found.
#[test]
fn a_contained_fortran_procedure_counts_its_team() {
    if !ready("gfortran", "a_contained_fortran_procedure_counts_its_team") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (stdout, report) = build_and_report(
        dir.path(),
        &["gfortran", "-O1", "-fopenmp", "-fno-inline"],
        "omp_contained.f90",
        2,
    );
    assert_eq!(stdout.trim(), "28672.0");
    let body = capture_support::region(&report, "relax.0._omp_fn.0");
    let function = capture_support::region(&report, "relax");
    assert_eq!(body["threads"], 2, "{body:#}");
    assert_eq!(function["threads"], 2, "{function:#}");
    // Three calls, each thread's part an instance.
    assert_eq!(function["instances"], 6, "{function:#}");
    // Every write of `t` in the loop, 3 calls of 4,096, is the body's and its function's.
    let writes = |region: &serde_json::Value| region["events"]["PAPI_L1_DCW"].as_u64().unwrap();
    assert_eq!(writes(body), 3 * 4096, "{body:#}");
    assert!(writes(function) >= writes(body), "{function:#}");
}

/// A C++ method and a free function holding parallel loops count their whole teams: g++ names
/// their bodies by the functions' linkage names (`_ZN6solver4Axpy3run..._omp_fn.0`, declared
/// inside the function), which are named after the functions (`solver::Axpy::run._omp_fn.0`).
#[test]
fn cpp_functions_holding_parallel_loops_count_their_teams() {
    if !ready(
        "g++",
        "cpp_functions_holding_parallel_loops_count_their_teams",
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (stdout, report) =
        build_and_report(dir.path(), &["g++", "-O2", "-fopenmp"], "omp_method.cpp", 2);
    // y = 1 + 3 * 0.5 * 2 = 4, over 4,096 elements.
    assert_eq!(stdout.trim(), "16384.0");
    let events =
        |region: &serde_json::Value, event: &str| region["events"][event].as_u64().unwrap();
    for (function, calls, event, per_call) in [
        ("solver::Axpy::run", 3, "PAPI_L1_DCW", 4096),
        ("total", 1, "PAPI_L1_DCR", 4096),
    ] {
        let body = capture_support::region(&report, &format!("{function}._omp_fn.0"));
        let function = capture_support::region(&report, function);
        assert_eq!(body["threads"], 2, "{body:#}");
        assert_eq!(function["threads"], 2, "{function:#}");
        // Each thread's part of each call an instance.
        assert_eq!(function["instances"], 2 * calls, "{function:#}");
        assert!(events(body, event) >= calls * per_call, "{body:#}");
        assert!(
            events(function, event) >= events(body, event),
            "{function:#}"
        );
    }
}

/// Lambdas are regions named as a demangler names them (`main::{lambda(int)#1}::operator()`,
/// numbered per function and signature), each with its own reads; they were all `operator()`,
/// one ambiguous name. `--region` takes the name as a profiler prints it, with its parameter
/// list and `const`.
#[test]
fn lambdas_are_regions_named_as_a_demangler_names_them() {
    if !ready("g++", "lambdas_are_regions_named_as_a_demangler_names_them") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (_, report) = build_and_report(dir.path(), &["g++", "-O2"], "lambdas.cpp", 1);
    for (n, reads) in [(1, 16_384), (2, 32_768)] {
        let name = format!("main::{{lambda(int)#{n}}}::operator()");
        let lambda = capture_support::region(&report, &name);
        // Its lines' misses are its own, under its name (not every lambda's `operator()`).
        let lines = lambda["lines"].as_array().unwrap();
        assert!(
            lines.iter().any(|l| l["function"] == name.as_str())
                && lines.iter().all(|l| l["function"] != "operator()"),
            "{lines:#?}"
        );
        let counted = lambda["events"]["PAPI_L1_DCR"].as_u64().unwrap();
        // The vector's elements, and a few reads of the closure's captures.
        assert!(
            (reads..reads + 8).contains(&counted),
            "{name}: {counted} reads"
        );
    }
    let out = Command::new(env!("CARGO_BIN_EXE_epcache"))
        .args([
            "run",
            "--region",
            "main::{lambda(int)#2}::operator()(int) const",
            "--array",
            "lambdas.cpp:7",
            "--event",
            "PAPI_L1_DCR",
            "--json",
            "--",
        ])
        .arg(dir.path().join("program"))
        .current_dir(dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let results: serde_json::Value =
        serde_json::from_str(&stdout[stdout.find('[').unwrap()..]).unwrap();
    assert_eq!(results[0]["total"], 32_768, "{results:#}");
}

/// A request on a global `std::vector` counts the vector object's own bytes: the run says so
/// before the start and names the line its elements are counted under, which counts them.
#[test]
fn a_global_vector_request_points_at_its_elements_line() {
    if !ready("g++", "a_global_vector_request_points_at_its_elements_line") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let source = kernel("global_vector.cpp");
    epcache_cc(
        dir.path(),
        &["g++", "-O1", "-o", "gvec", source.to_str().unwrap()],
    );
    let run = |array: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_epcache"))
            .args(["run", "--region", "total", "--array", array])
            .args(["--event", "PAPI_L1_DCR", "--json", "--"])
            .arg(dir.path().join("gvec"))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{stderr}");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let results: serde_json::Value =
            serde_json::from_str(&stdout[stdout.find('[').unwrap()..]).unwrap();
        (results[0]["total"].as_u64().unwrap(), stderr)
    };
    let (object, said) = run("sim::gvec");
    assert!(object < 100, "{object} reads of the vector object");
    assert!(
        said.contains("is a C++ `vector<") && said.contains("`--array global_vector.cpp:5`"),
        "{said}"
    );
    let (elements, said) = run("global_vector.cpp:5");
    assert_eq!(elements, 20_000, "{said}");
}

/// A request on a module procedure whose calls the main program inlined (its own copy never
/// runs) is warned before the start, with the callers and its parallel loop's region to ask
/// for instead, and the note after the run names that region too.
#[test]
fn a_request_on_a_procedure_inlined_into_its_callers_is_warned_before_the_start() {
    if !ready(
        "gfortran",
        "a_request_on_a_procedure_inlined_into_its_callers_is_warned_before_the_start",
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let source = kernel("inlined_sweep.f90");
    epcache_cc(
        dir.path(),
        &[
            "gfortran",
            "-O2",
            "-g",
            "-fopenmp",
            "-o",
            "sweep",
            source.to_str().unwrap(),
        ],
    );
    let out = Command::new(env!("CARGO_BIN_EXE_epcache"))
        .args(["run", "--region", "sweep", "--array", "g%u"])
        .args(["--event", "PAPI_L1_DCR", "--"])
        .arg(dir.path().join("sweep"))
        .env("OMP_NUM_THREADS", "2")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let warning = stderr
        .lines()
        .find(|l| l.contains("warning: --region sweep"))
        .unwrap_or_else(|| panic!("no warning before the start:\n{stderr}"));
    assert!(
        warning.contains("was inlined into `heat`")
            && warning.contains("`heatmod::sweep._omp_fn.0`"),
        "{warning}"
    );
    // Before the program's own output.
    assert!(
        stderr.find(warning) < stderr.find("daemon for this run"),
        "{stderr}"
    );
    // And after the run, with the loop's region too (the warning is not always possible:
    // gfortran sometimes records no inlined copy).
    let after = stderr
        .lines()
        .find(|l| l.contains("`sweep` never ran"))
        .unwrap_or_else(|| panic!("nothing said after the run:\n{stderr}"));
    assert!(after.contains("`heatmod::sweep._omp_fn.0`"), "{after}");
}

/// OpenMP's worker threads never end before the report is written (libgomp keeps them in its
/// pool until the process exits), so each hands its counts on when its last open region ends:
/// the report counts every thread and every iteration of the parallel loop.
#[test]
fn openmp_worker_threads_are_in_the_report() {
    if !ready("gcc", "openmp_worker_threads_are_in_the_report") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let source = kernel("omp_axpy.c");
    epcache_cc(
        dir.path(),
        &[
            "gcc",
            "-O2",
            "-fopenmp",
            "-o",
            "axpy",
            source.to_str().unwrap(),
        ],
    );
    let program = dir.path().join("axpy");
    let report_path = dir.path().join("report.json");
    let out = Command::new(&program)
        .env("OMP_NUM_THREADS", "4")
        .env("EPCACHE_REPORT", &report_path)
        .env("EPCACHE_CACHE", "D1=32K,8,64;LL=8M,16,64")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let n: u64 = 1_000_000;
    // The sum of a[i] = i + 2 over i < n.
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        (n * (n - 1) / 2 + 2 * n).to_string()
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report_path).unwrap()).unwrap();
    assert_eq!(report["threads"], 4, "the main thread and three workers");
    // Every thread runs the outlined loop once: a[i] += s * b[i] for its share of i. gcc's
    // outlined bodies declare no source line: each is keyed by the line its code starts at
    // (the pragma's), so the two loops are two regions.
    let outlined = capture_support::region(&report, "axpy._omp_fn.0");
    assert_eq!(outlined["instances"], 4);
    assert!(outlined["file"].as_str().unwrap().ends_with("omp_axpy.c"));
    assert!(
        (13..=14).contains(&outlined["line"].as_u64().unwrap()),
        "{outlined}"
    );
    let a = capture_support::structure(outlined, "a");
    let b = capture_support::structure(outlined, "b");
    assert_eq!(a["events"]["PAPI_L1_DCR"], n, "{outlined:#}");
    assert_eq!(a["events"]["PAPI_L1_DCW"], n);
    assert_eq!(b["events"]["PAPI_L1_DCR"], n);
    // A worker's simulated caches outlive its hand-over: the second pass over `small` (16 KiB,
    // in a 32 KiB L1) misses nowhere, so its 2048 doubles miss once per 64-byte line in all.
    // The function holding the loop counts the team too: each thread's part is an instance.
    let function = capture_support::region(&report, "axpy");
    assert_eq!(function["instances"], 4, "{function:#}");
    assert_eq!(function["threads"], 4);
    let a = capture_support::structure(function, "a");
    assert_eq!(a["events"]["PAPI_L1_DCR"], n, "{function:#}");
    assert_eq!(a["events"]["PAPI_L1_DCW"], n);
    let touch = capture_support::region(&report, "touch_small");
    assert_eq!(touch["instances"], 8, "{touch:#}");
    let small = capture_support::structure(touch, "small");
    assert_eq!(small["events"]["PAPI_L1_DCR"], 2 * 2048);
    let twice = report["regions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| {
            r["name"]
                .as_str()
                .unwrap()
                .starts_with("touch_small._omp_fn")
        })
        .expect("touch_small's outlined loop is a region");
    assert_eq!(twice["instances"], 8, "two passes of four threads");
    assert!(
        (18..=19).contains(&twice["line"].as_u64().unwrap()),
        "{twice}"
    );
    let small = capture_support::structure(twice, "small");
    assert_eq!(small["events"]["PAPI_L1_DCR"], 2 * 2048);
    assert_eq!(small["events"]["PAPI_L1_LDM"], 2048 / 8, "{twice:#}");
    // The whole run: init writes both arrays, the loop reads both and writes a, the sum reads
    // a, and each pass over `small` reads and writes it.
    let (reads, writes) = (3 * n + 2 * 2048, 3 * n + 2 * 2048);
    let d1 = level(&report, "D1");
    assert!((reads..reads + 64).contains(&count(d1, "reads")), "{d1}");
    assert!((writes..writes + 64).contains(&count(d1, "writes")), "{d1}");
}

#[test]
fn cpp_threads_atomics_and_virtual_calls_stay_correct() {
    if !ready("g++", "cpp_threads_atomics_and_virtual_calls_stay_correct") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let source = kernel("capture_cpp.cpp");
    let built = epcache_cc(
        dir.path(),
        &[
            "g++",
            "-O2",
            "-pthread",
            "-o",
            "cpp",
            source.to_str().unwrap(),
        ],
    );
    // Templates, inline functions in COMDAT groups and constructor aliases all merge: the
    // program gets its plain copies too.
    let notes = String::from_utf8_lossy(&built.stderr);
    assert!(!notes.contains("instrumented only"), "{notes}");
    let program = dir.path().join("cpp");
    no_libtsan(&program);
    let idle = Command::new(&program).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&idle.stdout).trim(), "30000 2 1000");
    // The program exits non-zero when a result is wrong; run_with_report checks that.
    let (stdout, report) = run_with_report(dir.path(), &program, SMALL_L1);
    assert_eq!(stdout.trim(), "30000 2 1000");
    // 30000 fetch_adds, each a read and a write, at least.
    assert!(count(level(&report, "D1"), "writes") >= 30_000);
}

/// A template's instances share their declaration's line, and so one region: it is named by
/// every instance (`tsum<double> | tsum<float>`) and found by each, rather than by the first,
/// whose name claimed the other's counts.
#[test]
fn a_regions_functions_declared_on_one_line_all_name_it() {
    if !ready(
        "g++",
        "a_regions_functions_declared_on_one_line_all_name_it",
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let source = kernel("template_regions.cpp");
    epcache_cc(
        dir.path(),
        &["g++", "-O1", "-o", "tsum", source.to_str().unwrap()],
    );
    let (stdout, report) = run_with_report(dir.path(), &dir.path().join("tsum"), SMALL_L1);
    assert_eq!(stdout.trim(), "20480");
    let found = region(&report, "tsum<float>");
    assert_eq!(found["name"], "tsum<double> | tsum<float>", "{found}");
    assert_eq!(region(&report, "tsum<double>")["name"], found["name"]);
    assert_eq!(found["instances"], 2);
    // Both instances' reads of their vectors' elements.
    assert!(
        count(&found["events"], "PAPI_L1_DCR") >= 4096 + 8192,
        "{found}"
    );
}

#[test]
fn fortran_module_array_counts_equal_the_hand_counts() {
    if !ready(
        "gfortran",
        "fortran_module_array_counts_equal_the_hand_counts",
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let source = kernel("capture_sum.f90");
    epcache_cc(
        dir.path(),
        &["gfortran", "-O1", "-o", "sum", source.to_str().unwrap()],
    );
    let program = dir.path().join("sum");
    no_libtsan(&program);
    let (stdout, report) = run_with_report(dir.path(), &program, SMALL_L1);
    assert_eq!(stdout.trim(), (N * (N - 1) / 2).to_string());
    let d1 = level(&report, "D1");
    assert_eq!(count(d1, "writes"), N);
    assert_eq!(count(d1, "reads"), N);
    // gfortran does not line-align module arrays: 16 KB spans 256 lines, or 257 when not aligned.
    let lines = 256..=257;
    assert!(lines.contains(&count(d1, "write_misses")), "{d1}");
    assert_eq!(count(d1, "read_misses"), count(d1, "write_misses"));
}

/// Runs `epcache cc -- <compiler_line>` in `dir` with the runtime `dir/runtime`, which must
/// fail; returns its stderr.
fn cc_failing(dir: &Path, runtime: &str, compiler_line: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_epcache"))
        .args(["cc", "--"])
        .args(compiler_line)
        .env("EPCACHE_RUNTIME", dir.join(runtime))
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        !out.status.success(),
        "epcache cc -- {compiler_line:?} succeeded"
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn cc_without_a_runtime_says_how_to_build_it() {
    let dir = tempfile::tempdir().unwrap();
    let stderr = cc_failing(dir.path(), "missing.a", &["gcc", "-o", "x", "x.o"]);
    assert!(
        stderr.contains("cargo build -p epcache-monitor"),
        "{stderr}"
    );
}

#[test]
fn a_link_against_a_runtime_older_than_epcache_says_so() {
    if !available("gcc", "a_link_against_a_runtime_older_than_epcache_says_so")
        || !available("ar", "a_link_against_a_runtime_older_than_epcache_says_so")
    {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // A "runtime" with a symbol index but none of the runtime's symbols, as an old build of it
    // lacks the inline capture ABI this epcache's objects name.
    std::fs::write(dir.path().join("old.c"), "int epcache_old_runtime;\n").unwrap();
    let run = |program: &str, args: &[&str]| {
        let status = Command::new(program)
            .args(args)
            .current_dir(dir.path())
            .status()
            .unwrap();
        assert!(status.success(), "{program} {args:?}");
    };
    run("gcc", &["-c", "old.c", "-o", "old.o"]);
    run("ar", &["rcs", "libold.a", "old.o"]);
    let source = kernel("capture_sum.c");
    let source = source.to_str().unwrap();
    let stderr = cc_failing(dir.path(), "libold.a", &["gcc", "-O2", source, "-o", "sum"]);
    assert!(
        stderr.contains("undefined reference to `epcache_inline_v9_"),
        "{stderr}"
    );
    assert!(
        stderr.contains("is older than this epcache")
            && stderr.contains("cargo build -p epcache-monitor")
            && stderr.contains("EPCACHE_CC_INLINE=off"),
        "{stderr}"
    );
}

/// The memory intrinsics newer clang releases call under `-fsanitize=thread`
/// (`__tsan_memcpy`, `__tsan_memmove`, `__tsan_memset`) link, do their work (an overlapping
/// move included) and count one access per line of each range.
#[test]
fn tsan_memory_intrinsics_copy_and_count_their_ranges() {
    if !ready("gcc", "tsan_memory_intrinsics_copy_and_count_their_ranges") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let source = kernel("mem_intrinsics.c");
    epcache_cc(
        dir.path(),
        &["gcc", "-O1", "-o", "mem", source.to_str().unwrap()],
    );
    let (stdout, report) = run_with_report(dir.path(), &dir.path().join("mem"), SMALL_L1);
    assert_eq!(stdout.trim(), "1 7 7");
    let lines = 8192 / LINE;
    // (region, array, reads, writes)
    let expected = [
        ("fill", "src", 0, lines),
        ("copy", "src", lines, 0),
        ("copy", "dst", 0, lines),
        ("shift", "dst", lines - 1, lines - 1),
    ];
    for (region, array, reads, writes) in expected {
        let events =
            &capture_support::structure(capture_support::region(&report, region), array)["events"];
        assert_eq!(
            (count(events, "PAPI_L1_DCR"), count(events, "PAPI_L1_DCW")),
            (reads, writes),
            "{array} in {region}"
        );
    }
}

/// gcc reports a struct copy as a read range and a write range, and calls the C library for
/// copies of run-time size, which `epcache cc` renames to the runtime's counting versions: each
/// copy counts once (`capture_support::check_copies`). A copy of known size that gcc reports
/// as ranges and still calls `memcpy` for counts once too (`memcpy` of a whole array, twice),
/// and `_FORTIFY_SOURCE`'s checked calls count alike.
#[test]
fn gcc_counts_struct_and_library_copies_once() {
    if !ready("gcc", "gcc_counts_struct_and_library_copies_once") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let source = kernel("copies.c");
    epcache_cc(
        dir.path(),
        &["gcc", "-O2", "-o", "copies", source.to_str().unwrap()],
    );
    let (stdout, report) = run_with_report(dir.path(), &dir.path().join("copies"), SMALL_L1);
    assert_eq!(stdout.trim(), "7 7 7");
    capture_support::check_copies(&report);

    // `_FORTIFY_SOURCE` makes the calls `__memcpy_chk` and kin: counted alike, and an overflow
    // still ends the program.
    let fortify = ["gcc", "-O2", "-D_FORTIFY_SOURCE=2"];
    let source = source.to_str().unwrap();
    let listed = epcache_cc(
        dir.path(),
        &[&fortify[..], &["-S", "-o", "fortified.s", source]].concat(),
    );
    assert!(listed.status.success());
    let listing = std::fs::read_to_string(dir.path().join("fortified.s")).unwrap();
    assert!(
        listing.contains("__memcpy_chk"),
        "not fortified:\n{listing}"
    );
    epcache_cc(
        dir.path(),
        &[&fortify[..], &["-o", "fortified", source]].concat(),
    );
    let fortified = dir.path().join("fortified");
    let (stdout, report) = run_with_report(dir.path(), &fortified, SMALL_L1);
    assert_eq!(stdout.trim(), "7 7 7");
    capture_support::check_copies(&report);
    let overflow = Command::new(&fortified).arg("9000").output().unwrap();
    assert!(!overflow.status.success(), "{overflow:?}");
    assert!(
        String::from_utf8_lossy(&overflow.stderr).contains("buffer overflow detected"),
        "{overflow:?}"
    );

    std::fs::write(
        dir.path().join("fixed.c"),
        "#include <string.h>\n#include <stdio.h>\n\
         double a[4096] __attribute__((aligned(64))), b[4096] __attribute__((aligned(64)));\n\
         __attribute__((noinline)) void fixed(void) { memcpy(a, b, sizeof a); }\n\
         int main(void) { fixed(); fixed(); printf(\"%g\\n\", a[5]); return 0; }\n",
    )
    .unwrap();
    let built = epcache_cc(
        dir.path(),
        &["gcc", "-O2", "-S", "-o", "fixed.s", "fixed.c"],
    );
    assert!(built.status.success());
    let listing = std::fs::read_to_string(dir.path().join("fixed.s")).unwrap();
    assert!(
        listing.contains("__tsan_read_range") && listing.contains("memcpy"),
        "gcc no longer reports the copy as ranges before calling memcpy:\n{listing}"
    );
    epcache_cc(dir.path(), &["gcc", "-O2", "-o", "fixed", "fixed.c"]);
    let (_, report) = run_with_report(dir.path(), &dir.path().join("fixed"), SMALL_L1);
    let fixed = capture_support::region(&report, "fixed");
    assert_eq!(fixed["instances"], 2);
    // 32 KB each way per call: 512 lines, twice.
    for (array, counts) in [("a", (0, 1024)), ("b", (1024, 0))] {
        let events = &capture_support::structure(fixed, array)["events"];
        assert_eq!(
            (count(events, "PAPI_L1_DCR"), count(events, "PAPI_L1_DCW")),
            counts,
            "{array}"
        );
    }
}

/// `epcache cc` with what it failed on before (and a program path with a space, which lost
/// every name): response files (a `-c` compile read from one
/// was taken for a link and left uninstrumented), `-oFILE` written joined (two outputs), a
/// partial link (`-r`, which got the runtime archive and failed on `-lgcc_s`), `-MD` on a
/// compile-and-link (its dependency file went to a temporary directory), `-x` on a
/// compile-and-link command (the runtime archive compiled as C source, for minutes) and an
/// output directory that does not exist (blamed on the listing merge).
#[test]
fn response_files_joined_outputs_partial_links_and_bad_commands() {
    if !ready(
        "gcc",
        "response_files_joined_outputs_partial_links_and_bad_commands",
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(kernel("capture_sum.c"), dir.path().join("sum.c")).unwrap();
    std::fs::write(dir.path().join("compile.rsp"), "-O1 -c sum.c -osum.o\n").unwrap();
    epcache_cc(dir.path(), &["gcc", "@compile.rsp"]);
    epcache_cc(dir.path(), &["gcc", "-r", "sum.o", "-o", "part.o"]);
    let symbols = Command::new("nm")
        .arg(dir.path().join("part.o"))
        .output()
        .unwrap();
    let symbols = String::from_utf8_lossy(&symbols.stdout);
    assert!(
        symbols.contains("__tsan_func_entry"),
        "instrumented:\n{symbols}"
    );
    assert!(
        !symbols.contains(" T __tsan_func_entry"),
        "the runtime belongs to the final link, not the partial one"
    );
    std::fs::write(dir.path().join("link.rsp"), "part.o -o 'sum prog'\n").unwrap();
    epcache_cc(dir.path(), &["gcc", "@link.rsp"]);
    let (_, report) = run_with_report(dir.path(), &dir.path().join("sum prog"), SMALL_L1);
    assert_eq!(count(level(&report, "D1"), "writes"), N);
    // Named, though its path has a space (`/proc/self/maps` read whole).
    let fill = capture_support::region(&report, "fill");
    assert_eq!(
        capture_support::structure(fill, "a")["events"]["PAPI_L1_DCW"],
        N
    );

    // -MD on a compile-and-link: the dependency file gcc would write, not one in a temporary
    // directory.
    epcache_cc(dir.path(), &["gcc", "-O1", "-MD", "-o", "dep.x", "sum.c"]);
    let dependencies = std::fs::read_to_string(dir.path().join("dep.d")).unwrap();
    assert!(dependencies.starts_with("dep.x: sum.c"), "{dependencies}");

    let runtime = runtime_library().expect("checked by ready");
    let refused = |line: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_epcache"))
            .args(["cc", "--"])
            .args(line)
            .env("EPCACHE_RUNTIME", &runtime)
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(!out.status.success(), "{line:?} succeeded");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    std::fs::copy(dir.path().join("sum.c"), dir.path().join("sum.txt")).unwrap();
    let stderr = refused(&["gcc", "-O1", "-x", "c", "sum.txt", "-o", "px"]);
    assert!(
        stderr.contains("uses -x; compile with -c first"),
        "{stderr}"
    );
    let stderr = refused(&["gcc", "-O1", "-c", "sum.c", "-o", "nowhere/sum.o"]);
    assert!(
        stderr.contains("the directory nowhere does not exist"),
        "{stderr}"
    );
}

/// Several compilers started at once (`make -j`) that all find the epcache Fortran module
/// missing each compile it: before, they shared gfortran's temporary module file and all but
/// one could fail ("Cannot rename module file"), 2 runs of 4 on this machine.
#[test]
fn parallel_fortran_compiles_each_find_the_epcache_module() {
    if !ready(
        "gfortran",
        "parallel_fortran_compiles_each_find_the_epcache_module",
    ) {
        return;
    }
    let runtime = runtime_library().expect("checked by ready");
    for round in 0..4 {
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("cache");
        let compiles: Vec<_> = (0..4)
            .map(|n| {
                let source = dir.path().join(format!("part{n}.f90"));
                std::fs::write(
                    &source,
                    format!(
                        "subroutine part{n}\n  use epcache\n  use iso_c_binding\n  call \
                         epcache_region_begin(\"part{n}\"//c_null_char)\n  call \
                         epcache_region_end()\nend subroutine\n"
                    ),
                )
                .unwrap();
                Command::new(env!("CARGO_BIN_EXE_epcache"))
                    .args(["cc", "--", "gfortran", "-O1", "-c"])
                    .arg(&source)
                    .env("EPCACHE_RUNTIME", &runtime)
                    .env("XDG_CACHE_HOME", &cache)
                    .current_dir(dir.path())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for (n, compile) in compiles.into_iter().enumerate() {
            let out = compile.wait_with_output().unwrap();
            assert!(
                out.status.success(),
                "round {round}, part{n}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}

/// A program that calls the runtime (a region marker) but was built without capture (a plain
/// compile; for Rust, a plain `cargo build` over an instrumented one) writes an all-zero report,
/// which is easy to take for a result: it says so on stderr. An instrumented one does not.
#[test]
fn a_program_that_captured_nothing_says_so() {
    if !ready("gcc", "a_program_that_captured_nothing_says_so") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("marked.c"),
        "#include <epcache.h>\ndouble a[4096];\nint main(void) {\n  EPCACHE_REGION_BEGIN(\"fill\");\n  \
         for (int i = 0; i < 4096; i++) a[i] = i;\n  EPCACHE_REGION_END();\n  return a[7] != 7;\n}\n",
    )
    .unwrap();
    let include = epcache_include::dir();
    let plain = Command::new("gcc")
        .args(["-O1", "-g", "-c", "marked.c", "-o", "plain.o", "-I"])
        .arg(include)
        .current_dir(dir.path())
        .status()
        .unwrap();
    assert!(plain.success());
    epcache_cc(dir.path(), &["gcc", "plain.o", "-o", "plain"]);
    epcache_cc(dir.path(), &["gcc", "-O1", "marked.c", "-o", "captured"]);
    for (program, silent) in [("plain", false), ("captured", true)] {
        let out = Command::new(dir.path().join(program))
            .env("EPCACHE_REPORT", dir.path().join(format!("{program}.json")))
            .env("EPCACHE_CACHE", SMALL_L1)
            .output()
            .unwrap();
        assert!(out.status.success(), "{program}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            !stderr.contains("no load or store of this run was captured"),
            silent,
            "{program}: {stderr}"
        );
    }
}
