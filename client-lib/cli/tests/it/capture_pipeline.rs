//! Simulation on a second core (`monitor-lib/src/capture/worker.rs`): a program whose batched
//! line visits (or, under a cache the filter cannot serve, whose accesses) are handed to the
//! simulation thread (`EPCACHE_PIPELINE=always`, so a busy
//! machine does not send them back to the program's thread) reports exactly what it reports
//! when its own thread simulates them (`EPCACHE_PIPELINE=off`), with a heap array freed while its last
//! visits are still staged, regions entered between hand-offs and a child forked in the middle
//! of a sweep; and a heap array another thread frees keeps the writes made before the free,
//! however late they are simulated.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::capture_support::{
    available, counts_of, epcache_cc, kernel, region, runtime_built, skipped,
    static_libc_available, structure, wait_within,
};

/// L1 and LL both indexed by address bits below 4 KiB, so placement by the allocator (which the
/// runtime's own allocations shift) cannot change a miss.
const CACHE: &str = "D1=32K,8,64;LL=256K,64,64";
/// `pipeline.c`'s order and rounds: every sweep touches each of N*N elements once.
const ELEMENTS: u64 = 512 * 512;
const ROUNDS: u64 = 3;

/// Runs `program args` with the report, the pipeline as `pipeline`, and a deadline: a child or
/// a thread waiting for a simulator that never comes back would hang it.
fn run(dir: &Path, program: &Path, args: &[&str], pipeline: &str) -> serde_json::Value {
    run_cached(dir, program, args, pipeline, CACHE)
}

/// [`run`] with the cache `cache`.
fn run_cached(
    dir: &Path,
    program: &Path,
    args: &[&str],
    pipeline: &str,
    cache: &str,
) -> serde_json::Value {
    let report = dir.join(format!("report-{pipeline}.json"));
    let mut child = Command::new(program)
        .args(args)
        .env("EPCACHE_REPORT", &report)
        .env("EPCACHE_CACHE", cache)
        .env("EPCACHE_PIPELINE", pipeline)
        .env("EPCACHE_MCC", "off")
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let Some(status) = wait_within(&mut child, Duration::from_secs(120)) else {
        panic!("EPCACHE_PIPELINE={pipeline}: the program did not end within 120 s");
    };
    assert!(status.success(), "EPCACHE_PIPELINE={pipeline}: {status}");
    serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap()
}

/// Whether the tools are here, and, with `second_core`, two CPUs (missing, a test fails under
/// CI and skips loudly elsewhere).
fn ready(second_core: bool) -> bool {
    if !available("gcc", "capture_pipeline") || !runtime_built("capture_pipeline") {
        return false;
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    !second_core
        || cores >= 2
        || skipped(&format!(
            "capture_pipeline: {cores} CPU here; the simulation thread needs two"
        ))
}

/// Builds the kernel `name` (`name.c`) with `epcache cc -- gcc -O2 -g ... -lpthread` in `dir`.
fn build(dir: &Path, name: &str) -> PathBuf {
    build_with(dir, name, &[])
}

/// [`build`] with more options.
fn build_with(dir: &Path, name: &str, options: &[&str]) -> PathBuf {
    let source = kernel(&format!("{name}.c"));
    let mut line = vec!["gcc", "-O2", "-g", source.to_str().unwrap(), "-o", name];
    line.extend_from_slice(options);
    line.push("-lpthread");
    epcache_cc(dir, &line);
    dir.join(name)
}

/// The name of the heap array `source` allocates on the line holding `call`.
fn site_of(source: &Path, call: &str) -> String {
    let text = std::fs::read_to_string(source).unwrap();
    let line = 1 + text.lines().position(|l| l.contains(call)).unwrap();
    format!("{}:{line}", source.file_name().unwrap().to_string_lossy())
}

#[test]
fn the_second_core_reports_exactly_what_the_programs_thread_would() {
    if !ready(true) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let program = build(dir.path(), "pipeline");
    let heap_site = site_of(&kernel("pipeline.c"), "malloc(");
    let on = run(dir.path(), &program, &["fork"], "always");
    let off = run(dir.path(), &program, &["fork"], "off");

    // The default handed visits off (thousands per batch), and `off` kept them all.
    let handed = on["simulated_on_second_core"].as_u64().unwrap();
    assert!(
        handed > ELEMENTS,
        "the simulation thread simulated {handed} line visits"
    );
    assert_eq!(off["simulated_on_second_core"], 0);

    // Hand counts: the parent's three rounds only (the forked child's sweep is not reported),
    // and every batched or staged visit of the heap array counted for it although it was freed
    // at once (its last lines went uncounted, even on the program's thread, while visits were
    // attributed when simulated rather than by the thread's last sync point).
    for report in [&on, &off] {
        let transpose = region(report, "transpose_add");
        assert_eq!(transpose["instances"], ROUNDS);
        let a = structure(transpose, "A");
        assert_eq!(a["events"]["PAPI_L1_DCR"], ROUNDS * ELEMENTS);
        assert_eq!(a["events"]["PAPI_L1_DCW"], ROUNDS * ELEMENTS);
        let b = structure(transpose, "B");
        assert_eq!(b["events"]["PAPI_L1_DCR"], ROUNDS * ELEMENTS);
        // The column walk misses L1 at every read of B.
        assert_eq!(b["events"]["PAPI_L1_LDM"], ROUNDS * ELEMENTS);
        let heap = structure(region(report, "heap_round"), &heap_site);
        assert_eq!(heap["events"]["PAPI_L1_DCR"], ELEMENTS);
        assert_eq!(heap["events"]["PAPI_L1_DCW"], ELEMENTS);
    }
    // And everything else, misses at every level included, is the same.
    assert_eq!(counts_of(on), counts_of(off));
}

/// Caches the repeat-hit filter cannot serve keep it off, and the thread then hands its
/// accesses to the worker whole (`ThreadCapture::stage_unfiltered`, written with streaming
/// stores): the second core still reports what the program's thread would, heap array, fork
/// and all.
#[test]
fn with_the_filter_off_the_second_core_reports_exactly_what_the_programs_thread_would() {
    if !ready(true) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let program = build(dir.path(), "pipeline");
    for cache in [
        "D1=32K,8,64;LL=256K,64,64,inclusive",
        "D1=32K,8,64,write-through;LL=256K,64,64",
        // 96 sets: the filter's tables take a power of two.
        "D1=48K,8,64;LL=256K,64,64",
    ] {
        let on = run_cached(dir.path(), &program, &["fork"], "always", cache);
        let off = run_cached(dir.path(), &program, &["fork"], "off", cache);
        let handed = on["simulated_on_second_core"].as_u64().unwrap();
        assert!(
            handed > ELEMENTS,
            "{cache}: the worker simulated {handed} accesses"
        );
        assert_eq!(off["simulated_on_second_core"], 0, "{cache}");
        // The filter was off: nothing was counted inline or batched.
        assert_eq!(on["handled"]["batched"], 0, "{cache}");
        assert_eq!(on["handled"]["repeat_hits"], 0, "{cache}");
        let reads = &structure(region(&on, "transpose_add"), "A")["events"]["PAPI_L1_DCR"];
        assert_eq!(reads, ROUNDS * ELEMENTS, "{cache}");
        assert_eq!(counts_of(on), counts_of(off), "{cache}");
    }
}

#[test]
fn a_heap_array_freed_by_another_thread_keeps_the_writes_made_before() {
    if !ready(false) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let program = build(dir.path(), "pipeline_free");
    let site = site_of(&kernel("pipeline_free.c"), "aligned_alloc(");
    for pipeline in ["always", "off"] {
        let report = run(dir.path(), &program, &[], pipeline);
        let x = structure(region(&report, "fill"), &site);
        assert_eq!(
            x["events"]["PAPI_L1_DCW"],
            8000 * 8,
            "EPCACHE_PIPELINE={pipeline}: the writes before the free"
        );
        assert_eq!(x["events"]["PAPI_L1_DCR"], 0);
    }
}

#[test]
fn the_simulation_thread_takes_no_signal_and_keeps_no_process_alive() {
    if !ready(true) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let program = build(dir.path(), "pipeline_ends");
    // `run` fails on a program that dies of the signal, and on one that does not end; the
    // report proves the simulation thread ran before the ending.
    for ending in ["sigwait", "pthread_exit", "cleanup", "key"] {
        let report = run(dir.path(), &program, &[ending], "always");
        assert!(
            report["simulated_on_second_core"].as_u64().unwrap() > 0,
            "{ending}: the sweep was simulated on the program's thread"
        );
        let sweep = structure(region(&report, "sweep"), "B");
        assert_eq!(sweep["events"]["PAPI_L1_DCR"], ELEMENTS, "{ending}");
        // `main` ends as `pthread_exit` unwinds it, and its thread's counts are handed on
        // there: its thread-local destructors do not run while the simulation thread lives.
        assert_eq!(region(&report, "main")["instances"], 1, "{ending}");
        assert_eq!(report["threads_unreported"], 0, "{ending}");
        // One capture for the one program thread: none made after it ended (`key`).
        assert_eq!(report["threads"], 1, "{ending}");
    }
    // What the cleanup handler wrote as `pthread_exit` unwound main is main's (the hand-over
    // used to come before the unwind, and the exit handler waited 250 ms for main in vain).
    let report = run(dir.path(), &program, &["cleanup"], "always");
    let h = structure(region(&report, "main"), "H");
    assert_eq!(h["events"]["PAPI_L1_DCW"], 512);
}

/// Static links: `pthread_join`'s wrapper reached the C library's function through a weak
/// reference, which took nothing from `libc.a` (a threaded static program died joining), and a
/// main thread ending by `pthread_exit` hands its counts on there too.
#[test]
fn static_programs_join_their_threads_and_end_by_pthread_exit() {
    if !ready(true) || !static_libc_available("capture_pipeline") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let joining = build_with(dir.path(), "pipeline_free", &["-static"]);
    let site = site_of(&kernel("pipeline_free.c"), "aligned_alloc(");
    let report = run(dir.path(), &joining, &[], "always");
    let x = structure(region(&report, "fill"), &site);
    assert_eq!(x["events"]["PAPI_L1_DCW"], 8000 * 8);
    let ending = build_with(dir.path(), "pipeline_ends", &["-static"]);
    let report = run(dir.path(), &ending, &["pthread_exit"], "always");
    assert_eq!(region(&report, "main")["instances"], 1);
    assert_eq!(report["threads_unreported"], 0);
    let sweep = structure(region(&report, "sweep"), "B");
    assert_eq!(sweep["events"]["PAPI_L1_DCR"], ELEMENTS);
}

/// Whole-line ranges the runtime remembers while the repeat-hit filter is off (an inclusive LL
/// turns it off) are forgotten when the data structures change: a second heap array at a freed
/// one's address got its writes counted for the first.
#[test]
fn a_reused_address_counts_for_the_new_array_with_the_filter_off() {
    if !ready(false) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let program = build(dir.path(), "pipeline_reuse");
    let source = kernel("pipeline_reuse.c");
    // `first` and `second` are allocation wrappers, so each block is named by the line in
    // `main` that asked for it.
    let (first, second) = (
        site_of(&source, "double *p = first();"),
        site_of(&source, "double *q = second();"),
    );
    for cache in [CACHE, "D1=32K,8,64;LL=1M,16,64,inclusive"] {
        let report = run_cached(dir.path(), &program, &[], "always", cache);
        let fill = region(&report, "fill");
        for site in [&first, &second] {
            assert_eq!(
                structure(fill, site)["events"]["PAPI_L1_DCW"],
                8192,
                "{cache}: {site}"
            );
        }
    }
}

/// A thread that is the process's only capturing one (its main thread built without capture):
/// its first batches go to the simulation thread, whose finder took its snapshot of the data
/// structures at its first search, after main had freed the array the thread wrote.
#[test]
fn a_new_threads_first_batches_count_for_the_structures_of_their_time() {
    if !ready(true) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (main, worker) = (
        kernel("pipeline_lazy_main.c"),
        kernel("pipeline_lazy_worker.c"),
    );
    let plain = Command::new("gcc")
        .args(["-O2", "-g", "-c", main.to_str().unwrap(), "-o", "main.o"])
        .current_dir(dir.path())
        .status()
        .unwrap();
    assert!(plain.success());
    epcache_cc(
        dir.path(),
        &[
            "gcc",
            "-O2",
            "-g",
            "-c",
            worker.to_str().unwrap(),
            "-o",
            "worker.o",
        ],
    );
    epcache_cc(
        dir.path(),
        &["gcc", "main.o", "worker.o", "-o", "lazy", "-lpthread"],
    );
    let site = site_of(&main, "aligned_alloc(");
    for pipeline in ["always", "off"] {
        let report = run(dir.path(), &dir.path().join("lazy"), &[], pipeline);
        let a = structure(region(&report, "worker"), &site);
        assert_eq!(
            a["events"]["PAPI_L1_DCW"], 8192,
            "EPCACHE_PIPELINE={pipeline}"
        );
    }
}

#[test]
fn accesses_to_a_line_two_arrays_share_are_staged_with_the_rest() {
    if !ready(true) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let program = build(dir.path(), "pipeline_shared");
    let on = run(dir.path(), &program, &[], "always");
    let off = run(dir.path(), &program, &[], "off");
    assert!(on["simulated_on_second_core"].as_u64().unwrap() > 0);
    // Hand counts: each round reads every element of X once and of Y twice, and writes each
    // once, the shared line's accesses included, counted for the array of their own bytes.
    const N: u64 = 1001;
    const ROUNDS: u64 = 400;
    for report in [&on, &off] {
        let sweep = region(report, "sweep");
        for (name, reads) in [("X", 1), ("Y", 2)] {
            let array = structure(sweep, name);
            assert_eq!(array["events"]["PAPI_L1_DCR"], reads * ROUNDS * N, "{name}");
            assert_eq!(array["events"]["PAPI_L1_DCW"], ROUNDS * N, "{name}");
        }
    }
    // The program's own thread stages what reaches the runtime as the shipping one does: the
    // same records go through a batch either way.
    assert_eq!(
        on["handled"]["batched"], off["handled"]["batched"],
        "records batched with the second core and without"
    );
    assert_eq!(counts_of(on), counts_of(off));
}
