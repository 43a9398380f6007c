//! Shared by the tests that build programs with `epcache cc`: the test kernels, the runtime
//! library cargo built, tool checks that fail loudly under CI, building and running with a
//! report (these last from `epcache-test-support`), reading the report, and driving a waiting
//! program through its segment.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};

use epcache_test_support::captured;
use std::time::{Duration, Instant};

pub(crate) fn kernel(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/kernels")
        .join(name)
}

pub(crate) use epcache_test_support::tools::{available, skipped, static_libc_available};

/// Builds `source` with `epcache cc -- COMPILER -O2 ... -lpthread` twice in `dir`: `inline`
/// (checking from the verbose notes that at least `min_sites` hook calls got the inline test)
/// and `calls` (`EPCACHE_CC_INLINE=off`, every access calling its hook).
pub(crate) fn build_inline_and_calls(
    dir: &Path,
    compiler: &str,
    source: &str,
    min_sites: usize,
    min_carried: usize,
) {
    let built = epcache_cc_with(
        dir,
        &[("EPCACHE_CC_VERBOSE", "1")],
        &[compiler, "-O2", source, "-lpthread", "-o", "inline"],
    );
    let notes = String::from_utf8_lossy(&built.stderr);
    assert!(inlined_sites(&notes) >= min_sites, "{notes}");
    assert!(carried_sites(&notes) >= min_carried, "{notes}");
    epcache_cc_with(
        dir,
        &[("EPCACHE_CC_INLINE", "off")],
        &[compiler, "-O2", source, "-lpthread", "-o", "calls"],
    );
}

/// How many access hook calls got the inline repeat-hit test, from `epcache cc`'s verbose
/// notes (`EPCACHE_CC_VERBOSE=1`) on one source.
fn inlined_sites(notes: &str) -> usize {
    notes
        .lines()
        .find_map(|line| line.strip_suffix(" access hook calls test for repeat hits inline"))
        .and_then(|line| line.rsplit("; ").next()?.parse().ok())
        .unwrap_or_else(|| panic!("no inline count in the notes:\n{notes}"))
}

/// How many inline tests took the tag word's mask from an earlier one, from the same notes.
fn carried_sites(notes: &str) -> usize {
    notes
        .lines()
        .find_map(|line| {
            line.strip_suffix(
                " inline tests find the tag word's mask in a register left by an earlier test",
            )
        })
        .and_then(|line| line.rsplit(": ").next()?.parse().ok())
        .unwrap_or_else(|| panic!("no count of carried masks in the notes:\n{notes}"))
}

/// The runtime library `epcache cc` links, as cargo built it for this run (handed to
/// `epcache cc` through `EPCACHE_RUNTIME`).
pub(crate) fn runtime_library() -> Option<PathBuf> {
    epcache_test_support::artifacts::runtime_library(Path::new(env!("CARGO_BIN_EXE_epcache")))
}

/// Whether the runtime was built; missing, it fails under CI and is reported as SKIPPED elsewhere.
pub(crate) fn runtime_built(who: &str) -> bool {
    runtime_library().is_some()
        || skipped(&format!(
            "{who}: no libepcache_monitor.a under {}; run `cargo test --workspace` or `cargo build -p epcache-monitor`",
            Path::new(env!("CARGO_BIN_EXE_epcache")).display()
        ))
}

pub(crate) fn epcache_cc(dir: &Path, compiler_line: &[&str]) -> Output {
    epcache_cc_with(dir, &[], compiler_line)
}

/// [`epcache_cc`] with extra environment (`EPCACHE_CC_DUAL`, `EPCACHE_CC_VERBOSE`).
pub(crate) fn epcache_cc_with(dir: &Path, env: &[(&str, &str)], compiler_line: &[&str]) -> Output {
    captured::epcache_cc(
        Path::new(env!("CARGO_BIN_EXE_epcache")),
        &runtime_library().expect("checked by runtime_built"),
        dir,
        env,
        compiler_line,
    )
}

/// Runs `program` in `dir` with capture reporting to a file; returns its stdout and the parsed
/// report.
pub(crate) fn run_with_report(
    dir: &Path,
    program: &Path,
    cache: &str,
) -> (String, serde_json::Value) {
    captured::run_with_report(dir, program, &[], cache)
}

/// The one region `name` finds in a standalone report, as a request's name does (`sweep`
/// finds `grids::sweep`: `epcache_shm::region_names`).
pub(crate) fn region<'a>(report: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    let regions = report["regions"].as_array().unwrap();
    let names = regions.iter().map(|r| r["name"].as_str().unwrap_or(""));
    match epcache_shm::region_names::find(names, name).as_slice() {
        [one] => &regions[*one],
        found => panic!(
            "{} regions named {name} in the report:\n{report:#}",
            found.len()
        ),
    }
}

/// Data structure `name` within a report's region.
pub(crate) fn structure<'a>(region: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    region["data_structures"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["name"] == name)
        .unwrap_or_else(|| panic!("no data structure {name} in region {}", region["name"]))
}

/// Starts `program` (with `env`) waiting at start for a tool (`EPCACHE_WAIT=30`), its record
/// in `runtime_dir`, stdout and stderr piped; returns it with a tool attached once it waits.
pub(crate) fn start_waiting(
    program: &Path,
    runtime_dir: &Path,
    env: &[(&str, &str)],
) -> (std::process::Child, epcache_shm::tool::TargetHandle) {
    use std::time::Duration;

    use epcache_shm::discovery;
    let child = Command::new(program)
        .env("EPCACHE_WAIT", "30")
        .env("EPCACHE_RUNTIME_DIR", runtime_dir)
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("starting {}: {e}", program.display()));
    // Discovery: the record appears once the target has created its segment.
    let record = discovery::wait_for_record(runtime_dir, child.id(), Duration::from_secs(20))
        .unwrap_or_else(|| panic!("{} never published its record", program.display()));
    let tool = epcache_shm::tool::TargetHandle::attach_record(&record).unwrap();
    let start = tool.wait_for_halt(0, Duration::from_secs(20)).unwrap();
    assert_eq!(
        start.state,
        epcache_shm::layout::TargetState::WaitingForTool
    );
    (child, tool)
}

/// `tests/kernels/gauss_regions.c` built with `epcache cc -- gcc -O2` into `dir`; `None`
/// (SKIPPED, or failed under CI) when gcc or the runtime is missing.
pub(crate) fn build_gauss_regions(dir: &Path, who: &str) -> Option<PathBuf> {
    if !available("gcc", who) || !runtime_built(who) {
        return None;
    }
    let source = kernel("gauss_regions.c");
    epcache_cc(
        dir,
        &[
            "gcc",
            "-O2",
            source.to_str().unwrap(),
            "-o",
            "gauss_regions",
        ],
    );
    Some(dir.join("gauss_regions"))
}

/// Releases the target to run until `boundary` of `region` and waits (30 s at most) until it
/// halts there.
pub(crate) fn run_to(
    tool: &epcache_shm::tool::TargetHandle,
    region: epcache_shm::layout::RegionIndex,
    boundary: epcache_shm::layout::Boundary,
) -> epcache_shm::tool::Halt {
    tool.set_halting_point(Some(epcache_shm::layout::HaltingPoint {
        region: Some(region),
        boundary,
        skip: 0,
    }))
    .unwrap();
    let generation = tool.halt_generation();
    tool.release().unwrap();
    let halt = tool
        .wait_for_halt(generation, std::time::Duration::from_secs(30))
        .unwrap();
    assert_eq!(halt.state, epcache_shm::layout::TargetState::Halted);
    halt
}

/// The counts `tests/kernels/copies.c` must report whatever the compiler: its library calls
/// (`memset`, `memcpy`, an overlapping `memmove`, of run-time sizes) and its 4096-byte struct
/// copy each count one access per 64-byte line of each range, once.
pub(crate) fn check_copies(report: &serde_json::Value) {
    let lines = 8192 / 64;
    for (region_name, array, counts) in [
        ("fill", "src", (0, lines)),
        ("copy", "src", (lines, 0)),
        ("copy", "dst", (0, lines)),
        ("shift", "dst", (lines - 1, lines - 1)),
        ("assign", "src", (lines / 2, 0)),
        ("assign", "dst", (0, lines / 2)),
    ] {
        let events = &structure(region(report, region_name), array)["events"];
        let found = (
            events["PAPI_L1_DCR"].as_u64().unwrap(),
            events["PAPI_L1_DCW"].as_u64().unwrap(),
        );
        assert_eq!(found, counts, "{array} in {region_name}");
    }
}

/// Waits for `child` to end, up to `limit`: its status, or `None` once it was killed for
/// running longer (a hang the caller reports).
pub(crate) fn wait_within(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A standalone report without what may differ between two runs of one program that count
/// alike: where the allocator put the heap arrays, how much the second core simulated, which
/// paths accesses took, and which file a trace went to. The per-line rows stay: every path
/// counts a miss for its line.
pub(crate) fn counts_of(mut report: serde_json::Value) -> serde_json::Value {
    fn strip(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::Object(map) => {
                map.remove("start");
                map.remove("simulated_on_second_core");
                map.remove("handled");
                map.remove("trace_file");
                map.values_mut().for_each(strip);
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
    strip(&mut report);
    report
}

/// The results JSON `epcache run --json` prints after the program's own output.
pub(crate) fn run_results(stdout: &str) -> serde_json::Value {
    let start = stdout
        .rfind("\n[\n")
        .map(|i| i + 1)
        .unwrap_or_else(|| panic!("no JSON array at the end of the output:\n{stdout}"));
    serde_json::from_str(&stdout[start..]).unwrap()
}
