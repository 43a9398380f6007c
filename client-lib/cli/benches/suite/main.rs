//! The suite: whole monitored runs of nine kernels of different kinds, each under two caches,
//! against Cachegrind and the plain program, with the verdicts of issue 30's goals.
//!
//! `cargo bench -p epcache-cli --bench suite` builds each kernel of `benches/suite_kernels/`
//! (eight in C with gcc -O2, ADI in Fortran with gfortran -O2) plainly and with `epcache cc`
//! (with the runtime of the bench's own profile), then for each cache runs, interleaved round by
//! round: the plain build (native), Cachegrind on the plain build with the same caches
//! (`--cache-sim=yes`), and the monitored build with `EPCACHE_REPORT` (everything monitored)
//! with the pipeline (simulation on a second core) and with `EPCACHE_PIPELINE=off` (one core).
//! It prints wall times (medians of the runs), the ratios, their geometric means and the
//! verdicts; a *busy machine* row runs one kernel again beside a CPU-bound competitor process;
//! the results also go to a JSON file for `docs/performance.md`.
//!
//! Counts: the two monitored runs of a kernel must count exactly alike (the bench fails
//! otherwise); their L1 and LL misses are printed against Cachegrind's (a different build of
//! the program: the instrumented copy makes scalar accesses where Cachegrind sees vectors, and
//! Cachegrind models no write-backs, so these agree closely, not exactly); and, when
//! `suite_kernels/reference.json` holds counts for this scale, every level's totals must equal
//! them (the counts must not change with the runtime). `EPCACHE_SUITE_REFERENCE=write` records
//! this run's counts there. Every run is made without address-space randomisation, and every
//! kernel's arrays are 2 MiB-aligned (`common.h`; ADI carves its three out of one allocation),
//! so where they lie does not depend on the runtime linked in.
//!
//! Settings (environment):
//! - `EPCACHE_SUITE_SCALE` (default 1): multiplies every kernel's repetitions (at 1,
//!   Cachegrind takes roughly 2 to 8 s per kernel on the idle 2-core VM); 0.1 checks that
//!   everything works in a minute or two;
//! - `EPCACHE_SUITE_RUNS` (default 3): runs of each variant, interleaved;
//! - `EPCACHE_SUITE_KERNELS` (comma-separated names) and `EPCACHE_SUITE_CACHES` (`64B`, `32B`):
//!   a subset;
//! - `EPCACHE_SUITE_JSON`: where the results go (default `epcache-suite.json` in the temporary
//!   directory);
//! - `EPCACHE_SUITE_EPCACHE` and `EPCACHE_SUITE_RUNTIME`: another build's `epcache` binary and
//!   `libepcache_monitor.a` (copies kept from before a change) to build the monitored kernels
//!   with, for alternating comparisons of two builds;
//! - `EPCACHE_SUITE_PROFILE=1`: instead of timed runs, Callgrind's instruction counts (which do
//!   not depend on what else the machine runs): the whole one-core monitored run, the
//!   instructions per access the program's thread adds over the plain build, and the simulating
//!   thread's instructions per record it simulated. Compare builds with these;
//! - `EPCACHE_SUITE_FILTER_MODEL=1`: instead of timed runs, the share of accesses that would
//!   reach the inline miss path with repeat-hit tables of other shapes (`filter_model.rs`);
//! - `EPCACHE_SUITE_AGAINST=DIR`: instead of the table against Cachegrind, this build's
//!   monitored runs against another build's (`DIR` holds its `epcache` and
//!   `libepcache_monitor.a`), alternating run by run, with the ratios (`against.rs`);
//! - `EPCACHE_SUITE_RECORD=1`: every monitored run also records a partial trace of the whole
//!   program (`main`, or the Fortran program's own name), so `EPCACHE_SUITE_AGAINST` compares
//!   two builds' recordings (a recording costs about ten monitored runs: scale it down).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use epcache_test_support::{artifacts, tools};
use serde_json::{Value, json};

mod against;
mod filter_model;

/// One kernel of the suite.
struct Kernel {
    name: &'static str,
    /// Its source file in `suite_kernels/`, and the text of it.
    file: &'static str,
    source: &'static str,
    compiler: &'static str,
    /// Repetitions at scale 1 (the kernel's first argument).
    reps: f64,
    what: &'static str,
}

const KERNELS: [Kernel; 9] = [
    Kernel {
        name: "matmul",
        file: "matmul.c",
        source: include_str!("../suite_kernels/matmul.c"),
        compiler: "gcc",
        reps: 8.0,
        what: "hit-heavy i-k-j matrix multiply, N=256",
    },
    Kernel {
        name: "jacobi2d",
        file: "jacobi2d.c",
        source: include_str!("../suite_kernels/jacobi2d.c"),
        compiler: "gcc",
        reps: 24.0,
        what: "2-D five-point Jacobi over two 1024x1024 grids",
    },
    Kernel {
        name: "heat3d",
        file: "heat3d.c",
        source: include_str!("../suite_kernels/heat3d.c"),
        compiler: "gcc",
        reps: 7.0,
        what: "3-D seven-point heat over two 128^3 grids",
    },
    Kernel {
        name: "fdtd",
        file: "fdtd.c",
        source: include_str!("../suite_kernels/fdtd.c"),
        compiler: "gcc",
        reps: 16.0,
        what: "FDTD-like update of three 1000x1000 fields",
    },
    Kernel {
        name: "colsweep",
        file: "colsweep.c",
        source: include_str!("../suite_kernels/colsweep.c"),
        compiler: "gcc",
        reps: 40.0,
        what: "column-order sweep (transposed copy), 1536x1536",
    },
    Kernel {
        name: "triad",
        file: "triad.c",
        source: include_str!("../suite_kernels/triad.c"),
        compiler: "gcc",
        reps: 60.0,
        what: "streaming triad over three arrays of 2M doubles",
    },
    Kernel {
        name: "spmv",
        file: "spmv.c",
        source: include_str!("../suite_kernels/spmv.c"),
        compiler: "gcc",
        reps: 12.0,
        what: "CSR sparse matrix-vector product (gather), 200000 rows of 27",
    },
    Kernel {
        name: "list",
        file: "list.c",
        source: include_str!("../suite_kernels/list.c"),
        compiler: "gcc",
        reps: 30.0,
        what: "linked-list walk over 1M heap nodes in shuffled order",
    },
    Kernel {
        name: "adi",
        file: "adi.f90",
        source: include_str!("../suite_kernels/adi.f90"),
        compiler: "gfortran",
        reps: 14.0,
        what: "ADI integration (Fortran), three 1024x1024 arrays",
    },
];

const COMMON_H: &str = include_str!("../suite_kernels/common.h");
const SPIN_C: &str = include_str!("../suite_kernels/spin.c");

/// One cache, as epcache and Cachegrind each take it.
struct Cache {
    label: &'static str,
    epcache: &'static str,
    cachegrind: [&'static str; 3],
}

const CACHES: [Cache; 2] = [
    Cache {
        label: "64B",
        epcache: "D1=32K,8,64;LL=8M,16,64",
        cachegrind: ["--I1=32768,8,64", "--D1=32768,8,64", "--LL=8388608,16,64"],
    },
    Cache {
        label: "32B",
        epcache: "D1=32K,2,32;LL=1M,8,64",
        cachegrind: ["--I1=32768,8,64", "--D1=32768,2,32", "--LL=1048576,8,64"],
    },
];

/// The kernel and cache of the busy machine row.
const BUSY_KERNEL: &str = "jacobi2d";

// Issue 30's goals.
const GOAL_EACH_VS_CACHEGRIND: f64 = 3.0;
const GOAL_GMEAN_VS_CACHEGRIND: f64 = 5.0;
const GOAL_ONE_CORE_GMEAN: f64 = 2.5;
const GOAL_GMEAN_VS_NATIVE: f64 = 8.0;
const GOAL_BUSY_VS_ONE_CORE: f64 = 1.1;

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The names in the comma-separated `name`, or `None` when it is unset.
fn subset(name: &str) -> Option<Vec<String>> {
    std::env::var(name)
        .ok()
        .map(|v| v.split(',').map(|s| s.trim().to_owned()).collect())
}

fn run_checked(what: &str, command: &mut Command) -> String {
    let out = command.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    tools::check_output(what, &out);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The suite's builds: each kernel plain and with `epcache cc`.
struct Builds {
    dir: PathBuf,
}

impl Builds {
    fn plain(&self, k: &Kernel) -> PathBuf {
        self.dir.join(format!("{}_plain", k.name))
    }
    fn monitored(&self, k: &Kernel) -> PathBuf {
        self.dir.join(format!("{}_epcache", k.name))
    }

    /// Builds every kernel in `dir` with `epcache` (its `cc`) and `runtime`.
    fn build(dir: &Path, epcache: &Path, runtime: &Path, kernels: &[&Kernel]) -> Builds {
        std::fs::write(dir.join("common.h"), COMMON_H).unwrap();
        std::fs::write(dir.join("spin.c"), SPIN_C).unwrap();
        run_checked(
            "gcc spin.c",
            Command::new("gcc")
                .args(["-O1", "spin.c", "-o", "spin"])
                .current_dir(dir),
        );
        let builds = Builds {
            dir: dir.to_owned(),
        };
        for k in kernels {
            std::fs::write(dir.join(k.file), k.source).unwrap();
            let plain = builds.plain(k);
            run_checked(
                &format!("{} {}", k.compiler, k.file),
                Command::new(k.compiler)
                    .args(["-O2", "-g", k.file, "-o"])
                    .arg(&plain)
                    .current_dir(dir),
            );
            run_checked(
                &format!("epcache cc -- {} {}", k.compiler, k.file),
                Command::new(epcache)
                    .env("EPCACHE_RUNTIME", runtime)
                    .args(["cc", "--", k.compiler, "-O2", k.file, "-o"])
                    .arg(builds.monitored(k))
                    .current_dir(dir),
            );
        }
        builds
    }
}

/// How a program is run.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Variant {
    Native,
    Cachegrind,
    Epcache,
    EpcacheOneCore,
}

impl Variant {
    const ALL: [Variant; 4] = [
        Variant::Native,
        Variant::Cachegrind,
        Variant::Epcache,
        Variant::EpcacheOneCore,
    ];
}

/// What one run measured.
struct Run {
    seconds: f64,
    checksum: String,
    /// The monitored run's report, or Cachegrind's summary as `{event: count}`.
    counts: Option<Value>,
}

fn run_variant(
    builds: &Builds,
    k: &Kernel,
    cache: &Cache,
    variant: Variant,
    reps: u32,
    tag: &str,
) -> Run {
    let dir = &builds.dir;
    let report = dir.join(format!("report-{tag}.json"));
    let cg_out = dir.join(format!("cachegrind-{tag}.out"));
    // Every run without address-space randomisation: where the heap, the stack and a PIE's
    // globals lie changes which sets conflict, and the counts are compared exactly.
    let mut command = Command::new("setarch");
    command.args([std::env::consts::ARCH, "-R"]);
    match variant {
        Variant::Native => {
            command.arg(builds.plain(k));
        }
        Variant::Cachegrind => {
            command
                .arg("valgrind")
                .args(["--tool=cachegrind", "--cache-sim=yes"])
                .arg(format!("--cachegrind-out-file={}", cg_out.display()))
                .args(cache.cachegrind)
                .arg(builds.plain(k));
        }
        Variant::Epcache | Variant::EpcacheOneCore => {
            command
                .arg(builds.monitored(k))
                .env("EPCACHE_REPORT", &report)
                .env("EPCACHE_CACHE", cache.epcache);
            if variant == Variant::EpcacheOneCore {
                command.env("EPCACHE_PIPELINE", "off");
            }
            if records() {
                command
                    .env("EPCACHE_TRACE", format!("{}:1", traced_region(k)))
                    .env(
                        "EPCACHE_TRACE_OUTPUT",
                        dir.join(format!("trace-{tag}.eppt")),
                    );
            }
        }
    }
    command
        .arg(reps.to_string())
        .env("EPCACHE_RUNTIME_DIR", dir.join("run"))
        .current_dir(dir)
        .stdin(Stdio::null());
    let started = Instant::now();
    let stdout = run_checked(&format!("{} {variant:?}", k.name), &mut command);
    let seconds = started.elapsed().as_secs_f64();
    let counts = match variant {
        Variant::Native => None,
        Variant::Cachegrind => Some(cachegrind_summary(&cg_out)),
        Variant::Epcache | Variant::EpcacheOneCore => Some(
            serde_json::from_str(&std::fs::read_to_string(&report).expect("the report"))
                .expect("the report is JSON"),
        ),
    };
    Run {
        seconds,
        checksum: stdout.split_whitespace().next().unwrap_or("").to_owned(),
        counts,
    }
}

/// Cachegrind's totals (`events:` and `summary:` of its output file) as `{event: count}`.
fn cachegrind_summary(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).expect("Cachegrind's output file");
    let line = |prefix: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(prefix))
            .unwrap_or_else(|| panic!("no {prefix} line in {}", path.display()))
            .split_whitespace()
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    let events = line("events:");
    let summary = line("summary:");
    let map: serde_json::Map<String, Value> = events
        .into_iter()
        .zip(summary)
        .map(|(e, n)| (e, json!(n.parse::<u64>().unwrap_or(0))))
        .collect();
    Value::Object(map)
}

/// A report's level totals, `{level: [reads, read misses, writes, write misses, write-backs]}`.
fn level_totals(report: &Value) -> BTreeMap<String, [u64; 5]> {
    report["levels"]
        .as_array()
        .expect("levels in the report")
        .iter()
        .map(|l| {
            let n = |f: &str| l[f].as_u64().unwrap_or(0);
            (
                l["name"].as_str().unwrap_or("?").to_owned(),
                [
                    n("reads"),
                    n("read_misses"),
                    n("writes"),
                    n("write_misses"),
                    n("writebacks"),
                ],
            )
        })
        .collect()
}

/// L1 and last-level misses of a report.
fn report_misses(report: &Value) -> (u64, u64) {
    let levels = report["levels"].as_array().expect("levels");
    let misses = |l: &Value| {
        l["read_misses"].as_u64().unwrap_or(0) + l["write_misses"].as_u64().unwrap_or(0)
    };
    (misses(&levels[0]), misses(levels.last().unwrap()))
}

/// D1 and LL misses of a Cachegrind summary.
fn cachegrind_misses(summary: &Value) -> (u64, u64) {
    let n = |e: &str| summary[e].as_u64().unwrap_or(0);
    (n("D1mr") + n("D1mw"), n("DLmr") + n("DLmw"))
}

fn median(xs: &[f64]) -> f64 {
    let mut s = xs.to_vec();
    s.sort_by(f64::total_cmp);
    let m = s.len() / 2;
    if s.len() % 2 == 1 {
        s[m]
    } else {
        (s[m - 1] + s[m]) / 2.0
    }
}

fn gmean(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    (xs.iter().map(|x| x.ln()).sum::<f64>() / xs.len() as f64).exp()
}

fn verdict(met: bool) -> &'static str {
    if met { "met" } else { "MISSED" }
}

/// The kernel's repetitions at `scale`.
/// Whether monitored runs record a partial trace too (`EPCACHE_SUITE_RECORD=1`).
fn records() -> bool {
    std::env::var("EPCACHE_SUITE_RECORD").is_ok_and(|v| v == "1")
}

/// The region a recording run traces: the whole program (`main` in C; the Fortran kernel's
/// program carries the kernel's name).
fn traced_region(k: &Kernel) -> &'static str {
    if k.compiler == "gfortran" {
        k.name
    } else {
        "main"
    }
}

fn reps(k: &Kernel, scale: f64) -> u32 {
    ((k.reps * scale).round() as u32).max(1)
}

/// The scale as the reference file keys it.
fn scale_key(scale: f64) -> String {
    format!("{scale}")
}

fn reference_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/suite_kernels/reference.json")
}

/// One kernel under one cache: median seconds per variant and the counts.
struct Row {
    kernel: &'static str,
    cache: &'static str,
    seconds: BTreeMap<&'static str, f64>,
    levels: BTreeMap<String, [u64; 5]>,
    epcache_misses: (u64, u64),
    cachegrind_misses: (u64, u64),
    report: Value,
}

fn variant_key(v: Variant) -> &'static str {
    match v {
        Variant::Native => "native",
        Variant::Cachegrind => "cachegrind",
        Variant::Epcache => "epcache",
        Variant::EpcacheOneCore => "epcache_one_core",
    }
}

/// Runs every variant of `k` under `cache` `runs` times, interleaved (every other round in
/// reverse), and checks that all runs print one checksum and both monitored runs count alike.
fn measure(builds: &Builds, k: &Kernel, cache: &Cache, runs: usize, scale: f64) -> Row {
    let reps = reps(k, scale);
    let mut times: BTreeMap<&'static str, Vec<f64>> = BTreeMap::new();
    let mut checksums = Vec::new();
    let mut reports: BTreeMap<&'static str, Value> = BTreeMap::new();
    for round in 0..runs {
        let mut order = Variant::ALL.to_vec();
        if round % 2 == 1 {
            order.reverse();
        }
        for v in order {
            let tag = format!("{}-{}-{}", k.name, cache.label, variant_key(v));
            let run = run_variant(builds, k, cache, v, reps, &tag);
            eprintln!(
                "  {} {} {:<17} run {}/{runs}: {:>8.3} s",
                k.name,
                cache.label,
                variant_key(v),
                round + 1,
                run.seconds
            );
            times.entry(variant_key(v)).or_default().push(run.seconds);
            checksums.push((variant_key(v), run.checksum));
            if let Some(counts) = run.counts {
                reports.insert(variant_key(v), counts);
            }
        }
    }
    let first = &checksums[0].1;
    for (v, c) in &checksums {
        assert_eq!(
            c, first,
            "{} {}: {v} printed another result",
            k.name, cache.label
        );
    }
    let levels = level_totals(&reports["epcache"]);
    assert_eq!(
        levels,
        level_totals(&reports["epcache_one_core"]),
        "{} {}: the monitored runs with and without the pipeline counted differently",
        k.name,
        cache.label
    );
    Row {
        kernel: k.name,
        cache: cache.label,
        seconds: times.iter().map(|(v, t)| (*v, median(t))).collect(),
        epcache_misses: report_misses(&reports["epcache"]),
        cachegrind_misses: cachegrind_misses(&reports["cachegrind"]),
        levels,
        report: reports["epcache"].clone(),
    }
}

/// A CPU-bound process running until dropped.
struct Competitor(Child);

impl Competitor {
    fn start(builds: &Builds) -> Competitor {
        Competitor(
            Command::new(builds.dir.join("spin"))
                .stdin(Stdio::null())
                .spawn()
                .expect("starting the competitor"),
        )
    }
}

impl Drop for Competitor {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn main() {
    // `cargo bench` passes `--bench`; libtest-style filters are not supported.
    if !tools::all_available(
        "suite",
        &["gcc", "gfortran", "valgrind", "setarch"],
        "the suite builds C and Fortran kernels, compares with Cachegrind and runs without address randomisation",
    ) {
        return;
    }
    let scale: f64 = env_or("EPCACHE_SUITE_SCALE", 1.0);
    assert!(scale > 0.0, "EPCACHE_SUITE_SCALE must be above 0");
    let runs: usize = env_or("EPCACHE_SUITE_RUNS", 3).max(1);
    let kernel_names = subset("EPCACHE_SUITE_KERNELS");
    let cache_labels = subset("EPCACHE_SUITE_CACHES");
    let kernels: Vec<&Kernel> = KERNELS
        .iter()
        .filter(|k| {
            kernel_names
                .as_ref()
                .is_none_or(|n| n.iter().any(|n| n == k.name))
        })
        .collect();
    let caches: Vec<&Cache> = CACHES
        .iter()
        .filter(|c| {
            cache_labels
                .as_ref()
                .is_none_or(|l| l.iter().any(|l| l == c.label))
        })
        .collect();
    assert!(
        !kernels.is_empty() && !caches.is_empty(),
        "EPCACHE_SUITE_KERNELS / EPCACHE_SUITE_CACHES select nothing (kernels: {}; caches: 64B, 32B)",
        KERNELS.map(|k| k.name).join(", ")
    );
    // Another build's `epcache` and runtime (a copy of both made before a change) measure
    // that build instead, for alternating comparisons.
    let epcache = std::env::var_os("EPCACHE_SUITE_EPCACHE").map_or_else(
        || PathBuf::from(env!("CARGO_BIN_EXE_epcache")),
        PathBuf::from,
    );
    let runtime = match std::env::var_os("EPCACHE_SUITE_RUNTIME") {
        Some(path) => PathBuf::from(path),
        None => artifacts::runtime_library(Path::new(env!("CARGO_BIN_EXE_epcache"))).unwrap_or_else(|| {
            panic!("no libepcache_monitor.a for this profile: run the bench through `cargo bench -p epcache-cli`")
        }),
    };
    eprintln!(
        "epcache: {}; runtime: {}",
        epcache.display(),
        runtime.display()
    );
    let against = std::env::var_os("EPCACHE_SUITE_AGAINST").map(|dir| {
        let dir = PathBuf::from(dir);
        let files = against::other_build(&dir);
        (dir, files)
    });
    let temp = tempfile::tempdir().expect("a temporary directory");
    let builds = Builds::build(temp.path(), &epcache, &runtime, &kernels);
    if std::env::var("EPCACHE_SUITE_PROFILE").is_ok_and(|v| v == "1") {
        profile(&builds, &kernels, &caches, scale);
        return;
    }
    if std::env::var("EPCACHE_SUITE_FILTER_MODEL").is_ok_and(|v| v == "1") {
        filter_model::report(&builds, &kernels, &caches, scale);
        return;
    }
    if let Some((dir, (other_epcache, other_runtime))) = &against {
        let other_dir = temp.path().join("against");
        std::fs::create_dir_all(&other_dir).expect("a directory for the other build");
        let other = Builds::build(&other_dir, other_epcache, other_runtime, &kernels);
        against::report(&builds, &other, dir, &kernels, &caches, runs, scale);
        return;
    }
    let started = Instant::now();
    let mut rows = Vec::new();
    for k in &kernels {
        for cache in &caches {
            eprintln!(
                "{} under {} ({}), {} repetitions",
                k.name,
                cache.label,
                cache.epcache,
                reps(k, scale)
            );
            rows.push(measure(&builds, k, cache, runs, scale));
        }
    }
    let busy = kernels.iter().find(|k| k.name == BUSY_KERNEL).map(|k| {
        eprintln!(
            "busy machine: {} under {} beside a CPU-bound process",
            k.name, caches[0].label
        );
        let _competitor = Competitor::start(&builds);
        measure(&builds, k, caches[0], runs, scale)
    });
    report(
        &rows,
        busy.as_ref(),
        &kernels,
        scale,
        runs,
        started.elapsed().as_secs_f64(),
    );
}

/// Prints the table, the geometric means and verdicts, checks the counts against the
/// reference, and writes the JSON.
fn report(
    rows: &[Row],
    busy: Option<&Row>,
    kernels: &[&Kernel],
    scale: f64,
    runs: usize,
    elapsed: f64,
) {
    println!(
        "\nsuite at scale {scale} ({runs} runs of each variant, interleaved; wall seconds, medians)"
    );
    for k in kernels {
        println!("  {:<9} {}", k.name, k.what);
    }
    println!(
        "\n{:<9} {:<4} {:>9} {:>9} {:>9} {:>9}  {:>8} {:>8} {:>8}  {:>13} {:>13}",
        "kernel",
        "L1",
        "native",
        "Cachegr.",
        "epcache",
        "one core",
        "CG/ep",
        "CG/ep1",
        "ep/nat",
        "D1 miss ep/CG",
        "LL miss ep/CG"
    );
    let ratio = |a: u64, b: u64| {
        if b == 0 {
            f64::NAN
        } else {
            a as f64 / b as f64
        }
    };
    let (mut vs_cg, mut vs_cg_one, mut vs_native) = (Vec::new(), Vec::new(), Vec::new());
    let mut each_met = true;
    for r in rows {
        let s = |v: &str| r.seconds[v];
        let (cg, one, native) = (
            s("cachegrind") / s("epcache"),
            s("cachegrind") / s("epcache_one_core"),
            s("epcache") / s("native"),
        );
        vs_cg.push(cg);
        vs_cg_one.push(one);
        vs_native.push(native);
        each_met &= cg >= GOAL_EACH_VS_CACHEGRIND;
        println!(
            "{:<9} {:<4} {:>9.3} {:>9.3} {:>9.3} {:>9.3}  {:>7.2}x {:>7.2}x {:>7.2}x  {:>13.4} {:>13.4}{}",
            r.kernel,
            r.cache,
            s("native"),
            s("cachegrind"),
            s("epcache"),
            s("epcache_one_core"),
            cg,
            one,
            native,
            ratio(r.epcache_misses.0, r.cachegrind_misses.0),
            ratio(r.epcache_misses.1, r.cachegrind_misses.1),
            if cg >= GOAL_EACH_VS_CACHEGRIND {
                ""
            } else {
                "  < 3x"
            }
        );
    }
    let (g_cg, g_one, g_native) = (gmean(&vs_cg), gmean(&vs_cg_one), gmean(&vs_native));
    println!(
        "geometric means: {g_cg:.2}x faster than Cachegrind with the second core, {g_one:.2}x on one core; {g_native:.2}x native"
    );
    println!("goals:");
    println!(
        "  every kernel and cache at least {GOAL_EACH_VS_CACHEGRIND}x faster than Cachegrind (second core): {}",
        verdict(each_met)
    );
    println!(
        "  geometric mean at least {GOAL_GMEAN_VS_CACHEGRIND}x faster than Cachegrind: {g_cg:.2}x {}",
        verdict(g_cg >= GOAL_GMEAN_VS_CACHEGRIND)
    );
    println!(
        "  one core, geometric mean at least {GOAL_ONE_CORE_GMEAN}x: {g_one:.2}x {}",
        verdict(g_one >= GOAL_ONE_CORE_GMEAN)
    );
    println!(
        "  geometric mean at most {GOAL_GMEAN_VS_NATIVE}x native: {g_native:.2}x {}",
        verdict(g_native <= GOAL_GMEAN_VS_NATIVE)
    );
    let busy_json = busy.map(|b| {
        let s = |v: &str| b.seconds[v];
        let slower = s("epcache") / s("epcache_one_core");
        println!(
            "busy machine ({} {}, one CPU-bound process beside it): native {:.3} s, Cachegrind {:.3} s, epcache {:.3} s, one core {:.3} s; \
             the pipeline takes {slower:.2}x the one-core time (goal at most {GOAL_BUSY_VS_ONE_CORE}x: {}); {:.2}x faster than Cachegrind",
            b.kernel,
            b.cache,
            s("native"),
            s("cachegrind"),
            s("epcache"),
            s("epcache_one_core"),
            verdict(slower <= GOAL_BUSY_VS_ONE_CORE),
            s("cachegrind") / s("epcache")
        );
        json!({
            "kernel": b.kernel, "cache": b.cache, "seconds": b.seconds,
            "pipeline_over_one_core": slower,
            "pipeline_fallbacks": b.report["pipeline_fallbacks"],
            "simulated_on_second_core": b.report["simulated_on_second_core"],
        })
    });
    let counts_ok = check_reference(rows, scale);
    println!(
        "caches: {}",
        CACHES
            .map(|c| format!("{} = {}", c.label, c.epcache))
            .join("; ")
    );
    let json = json!({
        "scale": scale,
        "runs": runs,
        "elapsed_seconds": elapsed,
        "caches": CACHES.map(|c| json!({"label": c.label, "epcache": c.epcache, "cachegrind": c.cachegrind})),
        "rows": rows.iter().map(|r| json!({
            "kernel": r.kernel, "cache": r.cache, "seconds": r.seconds,
            "cachegrind_over_epcache": r.seconds["cachegrind"] / r.seconds["epcache"],
            "cachegrind_over_one_core": r.seconds["cachegrind"] / r.seconds["epcache_one_core"],
            "epcache_over_native": r.seconds["epcache"] / r.seconds["native"],
            "levels": r.levels,
            "misses": {"epcache": [r.epcache_misses.0, r.epcache_misses.1], "cachegrind": [r.cachegrind_misses.0, r.cachegrind_misses.1]},
            "simulated_on_second_core": r.report["simulated_on_second_core"],
        })).collect::<Vec<_>>(),
        "gmeans": {"cachegrind_over_epcache": g_cg, "cachegrind_over_one_core": g_one, "epcache_over_native": g_native},
        "busy": busy_json,
        "counts_match_reference": counts_ok,
    });
    let path = std::env::var_os("EPCACHE_SUITE_JSON")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("epcache-suite.json"));
    std::fs::write(&path, serde_json::to_string_pretty(&json).unwrap()).expect("writing the JSON");
    println!(
        "results as JSON: {} (whole suite {elapsed:.0} s)",
        path.display()
    );
    assert_ne!(
        counts_ok,
        Some(false),
        "the counts differ from the reference (see above)"
    );
}

/// Checks every row's level totals against `reference.json` at this scale (or records them
/// with `EPCACHE_SUITE_REFERENCE=write`); `None` when the file holds nothing for this scale.
fn check_reference(rows: &[Row], scale: f64) -> Option<bool> {
    let path = reference_path();
    let mut reference: Value = std::fs::read_to_string(&path)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_else(|| json!({}));
    let key = scale_key(scale);
    if std::env::var("EPCACHE_SUITE_REFERENCE").is_ok_and(|v| v == "write") {
        for r in rows {
            reference[&key][r.kernel][r.cache] = json!(r.levels);
        }
        std::fs::write(
            &path,
            serde_json::to_string_pretty(&reference).unwrap() + "\n",
        )
        .expect("writing the reference");
        println!(
            "counts recorded as the reference for scale {key}: {}",
            path.display()
        );
        return Some(true);
    }
    let at_scale = reference.get(&key)?;
    let mut ok = true;
    let mut checked = 0;
    for r in rows {
        let Some(expected) = at_scale.get(r.kernel).and_then(|k| k.get(r.cache)) else {
            continue;
        };
        checked += 1;
        if *expected != json!(r.levels) {
            ok = false;
            println!(
                "COUNTS CHANGED: {} {}: {} (reference {})",
                r.kernel,
                r.cache,
                json!(r.levels),
                expected
            );
        }
    }
    println!(
        "counts against the reference (scale {key}, {checked} kernel-cache pairs): {}",
        if ok { "identical" } else { "CHANGED" }
    );
    Some(ok)
}

/// Instructions Callgrind counted in its output file (its `totals:` or `summary:` line).
fn callgrind_total(path: &Path) -> u64 {
    let text = std::fs::read_to_string(path).expect("Callgrind's output file");
    text.lines()
        .find_map(|l| {
            l.strip_prefix("totals:")
                .or_else(|| l.strip_prefix("summary:"))
        })
        .and_then(|l| l.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no totals in {}", path.display()))
}

/// Runs `program` under Callgrind (`--separate-threads=yes`: one file per thread) and returns
/// the instructions of each thread, in thread order.
fn callgrind_threads(dir: &Path, tag: &str, command_of: impl FnOnce(&mut Command)) -> Vec<u64> {
    let base = dir.join(format!("callgrind-{tag}.out"));
    let mut command = Command::new("setarch");
    command
        .args([std::env::consts::ARCH, "-R", "valgrind"])
        .args(["--tool=callgrind", "--separate-threads=yes"])
        .arg(format!("--callgrind-out-file={}", base.display()))
        .env("EPCACHE_RUNTIME_DIR", dir.join("run"))
        .current_dir(dir)
        .stdin(Stdio::null());
    command_of(&mut command);
    run_checked(&format!("callgrind {tag}"), &mut command);
    let prefix = format!("callgrind-{tag}.out-");
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(&prefix))
        })
        .collect();
    files.sort();
    let totals = files.iter().map(|f| callgrind_total(f)).collect();
    for f in files {
        let _ = std::fs::remove_file(f);
    }
    totals
}

/// `EPCACHE_SUITE_PROFILE=1`: Callgrind's instructions per kernel and cache.
fn profile(builds: &Builds, kernels: &[&Kernel], caches: &[&Cache], scale: f64) {
    println!(
        "\nprofile at scale {scale} (Callgrind instructions; `whole` is the one-core monitored run, \
         all threads; per access: what the program's thread adds over the plain build, per D1 \
         access; per record: the simulating thread's, per record it simulated)"
    );
    println!(
        "{:<9} {:<4} {:>15} {:>15} {:>12} {:>12} {:>14} {:>11}",
        "kernel", "L1", "plain", "whole", "per access", "per record", "D1 accesses", "on 2nd core"
    );
    let mut wholes = Vec::new();
    for k in kernels {
        let reps = reps(k, scale).to_string();
        let plain: u64 = callgrind_threads(&builds.dir, &format!("{}-plain", k.name), |c| {
            c.arg(builds.plain(k)).arg(&reps);
        })
        .iter()
        .sum();
        for cache in caches {
            let report = builds
                .dir
                .join(format!("profile-{}-{}.json", k.name, cache.label));
            let monitored = |c: &mut Command, pipeline: &str| {
                c.arg(builds.monitored(k))
                    .arg(&reps)
                    .env("EPCACHE_REPORT", &report)
                    .env("EPCACHE_CACHE", cache.epcache)
                    .env("EPCACHE_PIPELINE", pipeline);
            };
            let tag = format!("{}-{}", k.name, cache.label);
            let whole: u64 =
                callgrind_threads(&builds.dir, &format!("{tag}-off"), |c| monitored(c, "off"))
                    .iter()
                    .sum();
            let threads =
                callgrind_threads(&builds.dir, &format!("{tag}-on"), |c| monitored(c, "on"));
            let json: Value =
                serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
            let d1 = &json["levels"][0];
            let accesses = d1["reads"].as_u64().unwrap_or(0) + d1["writes"].as_u64().unwrap_or(0);
            let shipped = json["simulated_on_second_core"].as_u64().unwrap_or(0);
            let program_thread = threads.first().copied().unwrap_or(0);
            let others: u64 = threads.iter().skip(1).sum();
            let per = |n: f64, d: u64| if d == 0 { f64::NAN } else { n / d as f64 };
            println!(
                "{:<9} {:<4} {:>15} {:>15} {:>12.1} {:>12.1} {:>14} {:>11}",
                k.name,
                cache.label,
                plain,
                whole,
                per(program_thread as f64 - plain as f64, accesses),
                per(others as f64, shipped),
                accesses,
                shipped
            );
            wholes.push(whole as f64);
        }
    }
    println!(
        "geometric mean of the whole one-core runs' instructions: {:.4e}",
        gmean(&wholes)
    );
}
