//! What capture costs a C program built with `epcache cc`, measured side by side in one run.
//!
//! `cargo bench -p epcache-cli --bench capture_overhead` builds, with the runtime of the
//! bench's own profile (`target/release` under `cargo bench`):
//! - a loop calling a tiny instrumented function (a function region) or making a marker pair,
//!   timed inside the program in its thread's CPU time, run with the segment on (the default)
//!   and no request, minus the same loop built plainly: nanoseconds per region enter+exit pair;
//! - a matrix-multiply kernel built with capture but nothing requested (its plain copies run),
//!   against the same kernel built plainly with `gcc -O2`, and built instrumented only
//!   (`EPCACHE_CC_DUAL=off`, hooks that only return: the floor of a run whose every access
//!   calls its hook);
//! - the same kernel with everything monitored (`EPCACHE_REPORT`: every region and data
//!   structure; simulated on a second core while the program runs on), also run with
//!   `EPCACHE_PIPELINE=off` (simulated on the program's thread), built with
//!   `EPCACHE_CC_INLINE=off` (every access calls its hook), and recording the kernel's partial
//!   trace (`EPCACHE_TRACE=matmul:1`),
//!   against `valgrind --tool=cachegrind --cache-sim=yes` with the same caches on the plain
//!   build;
//! - for information, a sparse matrix-vector product (loads through an index array, which gcc
//!   does not vectorise, so Cachegrind sees as many accesses as the instrumented copy makes)
//!   and the matrix multiply built by clang (which instruments after vectorising), each
//!   monitored against Cachegrind on its plain build;
//! - an OpenMP Jacobi with 2 and 4 threads, monitored with a hierarchy per thread and as cores
//!   of one machine kept coherent (`threads.rs`), against native and Cachegrind.
//!
//! This machine is a 2-core VM on a shared host. In one process, in its own CPU time, a
//! vectorised kernel switches between two speeds about 1.5-2x apart (whether its data fits in
//! L1, L2 or neither), in phases of a fraction of a second to minutes, while a dependent
//! multiply chain stays within 5%: something on the host shares the core's execution
//! resources. Huge pages, array placement and pinning change nothing, and a busy other core of
//! ours adds at most about 20%. Other processes' time slices inflate wall time on top. So the
//! fast programs run as many short processes, interleaved round by round (the order reversed
//! every other round) so every phase hits all variants alike, and are timed in CPU time as
//! well as wall time. Each figure is given as min / lower quartile / median / max of its runs,
//! and the goals are judged on the lower quartiles (the runs the machine disturbed least, less
//! luck-dependent than the minimum), with the minimum and median ratios beside them. The
//! simulating variants take seconds and are compared by their medians, as before.
//!
//! `EPCACHE_BENCH_RUNS` sets the number of processes per fast variant (simulating ones get a
//! fifth, at least 3), `EPCACHE_BENCH_N` the matrix order, `EPCACHE_BENCH_PAIRS` the iterations
//! of one timed loop and `EPCACHE_BENCH_LOOPS` the timed loops per pair process;
//! `EPCACHE_BENCH_PROFILE=1` adds Callgrind's instruction counts per region pair and per kernel
//! iteration, with the hottest functions. `EPCACHE_BENCH_SECTIONS` runs some sections only
//! (comma-separated: `pairs`, `matmul`, `info`, `openmp`; all by default), and
//! `EPCACHE_BENCH_OMP_N` and `EPCACHE_BENCH_OMP_SWEEPS` size the OpenMP kernel;
//! `EPCACHE_BENCH_BASELINE_EPCACHE` and `EPCACHE_BENCH_BASELINE_RUNTIME` (copies of another
//! build's `epcache` and `libepcache_monitor.a`) add that build's monitored OpenMP variants,
//! interleaved with this build's ([`Baseline`]).

mod threads;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Instant;

// Tool checks that fail under CI, and the runtime cargo built for this profile (the bench's
// `epcache` binary is the release one, so its runtime is too).
use epcache_test_support::{artifacts, tools};

/// The loop whose iterations are region pairs; it times `argv[3]` loops (default 1) of
/// `argv[2]` iterations each in the thread's CPU time (what other processes' time slices do
/// not inflate) and prints nanoseconds per iteration for each. `plain_noop` lives in another,
/// never instrumented, file: gcc gives a function TSan entry and exit hooks only when it has a
/// memory access or a call, and a call to an uninstrumented function adds no access hook to the
/// pair.
const PAIRS_C: &str = r#"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef EPCACHE
#include "epcache.h"
#else
#define EPCACHE_REGION_BEGIN(name) ((void)0)
#define EPCACHE_REGION_END() ((void)0)
#endif

void plain_noop(long i);

__attribute__((noinline)) void tiny(long i) { plain_noop(i); }

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  if (argc != 3 && argc != 4) return 2;
  long n = atol(argv[2]);
  int loops = argc == 4 ? atoi(argv[3]) : 1;
  int marker = strcmp(argv[1], "marker") == 0;
  for (int l = 0; l < loops; l++) {
    double t0 = now();
    if (marker) {
      for (long i = 0; i < n; i++) {
        EPCACHE_REGION_BEGIN("pair");
        plain_noop(i);
        EPCACHE_REGION_END();
      }
    } else {
      for (long i = 0; i < n; i++) tiny(i);
    }
    double t1 = now();
    printf("%.6f ", (t1 - t0) * 1e9 / (double)n);
  }
  printf("\n");
  return 0;
}
"#;

const NOOP_C: &str = r#"
void plain_noop(long i) { __asm__ volatile("" : : "r"(i)); }
"#;

/// Row-major i-k-j matrix multiply over globals (named A, B, C from DWARF); prints a checksum,
/// the kernel's own wall and CPU time, and the process's CPU time up to the end of `main`
/// (with the runtime's start, which runs before `main`).
const MATMUL_C: &str = r#"
#include <stdio.h>
#include <time.h>
double A[N][N], B[N][N], C[N][N];

static double seconds(clockid_t clock) {
  struct timespec t;
  clock_gettime(clock, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void init(void) {
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) {
      A[i][j] = (double)((i + j) % 7) * 0.5;
      B[i][j] = (double)((i * j) % 5) * 0.25;
      C[i][j] = 0.0;
    }
}

void matmul(void) {
  for (int i = 0; i < N; i++)
    for (int k = 0; k < N; k++) {
      double r = A[i][k];
      for (int j = 0; j < N; j++) C[i][j] += r * B[k][j];
    }
}

int main(void) {
  init();
  double w0 = seconds(CLOCK_MONOTONIC), c0 = seconds(CLOCK_THREAD_CPUTIME_ID);
  matmul();
  double c1 = seconds(CLOCK_THREAD_CPUTIME_ID), w1 = seconds(CLOCK_MONOTONIC);
  double sum = 0.0;
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) sum += C[i][j];
  printf("%.6e %.6f %.6f %.6f\n", sum, w1 - w0, c1 - c0, seconds(CLOCK_PROCESS_CPUTIME_ID));
  return 0;
}
"#;

/// Caches for both epcache and Cachegrind: 32 KB 8-way L1, 8 MB 16-way LL, 64-byte lines.
/// A sparse matrix-vector product (CSR, 27 points per row as a 3-D stencil's matrix): loads
/// through an index array, which gcc -O2 does not vectorise, so Cachegrind sees as many accesses
/// as the instrumented copy makes; for information beside the matrix multiply (whose plain
/// build Cachegrind runs vectorised, with half the accesses). Prints the checksum and the
/// kernel's wall time.
const SPMV_C: &str = r#"
#include <stdio.h>
#include <time.h>
#define ROWS 200000
#define PER 27
#define REPS 20
double val[ROWS * PER], x[ROWS], y[ROWS];
int col[ROWS * PER], rowptr[ROWS + 1];

void spmv(void) {
  for (int i = 0; i < ROWS; i++) {
    double s = 0.0;
    for (int k = rowptr[i]; k < rowptr[i + 1]; k++) s += val[k] * x[col[k]];
    y[i] = s;
  }
}

int main(void) {
  int nx = 60, plane = 60 * 60;
  for (int i = 0; i < ROWS; i++) {
    rowptr[i] = i * PER;
    x[i] = 1.0;
    int k = 0;
    for (int dz = -1; dz <= 1; dz++)
      for (int dy = -1; dy <= 1; dy++)
        for (int dx = -1; dx <= 1; dx++) {
          long c = (long)i + dz * plane + dy * nx + dx;
          c = (c + ROWS) % ROWS;
          col[i * PER + k] = (int)c;
          val[i * PER + k] = 1.0 / (1 + k);
          k++;
        }
  }
  rowptr[ROWS] = ROWS * PER;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (int r = 0; r < REPS; r++) spmv();
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double sum = 0.0;
  for (int i = 0; i < ROWS; i++) sum += y[i];
  printf("%.6e %.6f\n", sum, (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9);
  return 0;
}
"#;

const EPCACHE_CACHE: &str = "D1=32K,8,64;LL=8M,16,64";
const CACHEGRIND_CACHE: [&str; 3] = ["--I1=32768,8,64", "--D1=32768,8,64", "--LL=8388608,16,64"];

const DEFAULT_RUNS: usize = 15;
/// About 0.13 s of kernel plainly here, on a quiet host.
const DEFAULT_N: u32 = 700;
/// 10 to 40 ms per loop here: short enough that most loops fall inside one quiet phase.
const DEFAULT_PAIRS: u64 = 5_000_000;
const DEFAULT_LOOPS: usize = 5;

const GOAL_PAIR_NS: f64 = 5.0;
const GOAL_IDLE_RATIO: f64 = 1.3;
const GOAL_SPEEDUP: f64 = 3.0;

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn checked(what: &str, out: Output) -> Output {
    assert!(
        out.status.success(),
        "{what} failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn gcc(dir: &Path, args: &[&str]) {
    let out = Command::new("gcc")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("running gcc");
    checked(&format!("gcc {args:?}"), out);
}

fn epcache_cc(dir: &Path, runtime: &Path, args: &[&str]) {
    epcache_cc_with(dir, runtime, &[], args);
}

/// [`epcache_cc`] with extra environment (`EPCACHE_CC_DUAL=off`).
fn epcache_cc_with(dir: &Path, runtime: &Path, env: &[(&str, &str)], args: &[&str]) {
    epcache_cc_by(
        Path::new(env!("CARGO_BIN_EXE_epcache")),
        dir,
        runtime,
        env,
        args,
    );
}

/// [`epcache_cc_with`] by the `epcache` binary `epcache` (another build's: [`Baseline`]).
fn epcache_cc_by(epcache: &Path, dir: &Path, runtime: &Path, env: &[(&str, &str)], args: &[&str]) {
    let out = Command::new(epcache)
        .env("EPCACHE_RUNTIME", runtime)
        .envs(env.iter().copied())
        .arg("cc")
        .arg("--")
        .arg("gcc")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("running epcache cc");
    checked(&format!("epcache cc -- gcc {args:?}"), out);
}

/// Another build's `epcache` and runtime (copies of both made before a change), named by
/// `EPCACHE_BENCH_BASELINE_EPCACHE` and `EPCACHE_BENCH_BASELINE_RUNTIME`: the OpenMP section
/// then runs that build's copies of its monitored variants interleaved with this build's, so a
/// change is measured against the build before it in the same minutes of a shared host.
struct Baseline {
    epcache: PathBuf,
    runtime: PathBuf,
}

impl Baseline {
    /// The baseline the environment names, if any; one of the two variables alone is a
    /// mistake, refused before anything runs.
    fn from_env() -> Option<Baseline> {
        let epcache = std::env::var_os("EPCACHE_BENCH_BASELINE_EPCACHE").map(PathBuf::from);
        let runtime = std::env::var_os("EPCACHE_BENCH_BASELINE_RUNTIME").map(PathBuf::from);
        match (epcache, runtime) {
            (None, None) => None,
            (Some(epcache), Some(runtime)) => {
                for path in [&epcache, &runtime] {
                    assert!(path.is_file(), "no baseline file {}", path.display());
                }
                Some(Baseline { epcache, runtime })
            }
            _ => panic!(
                "EPCACHE_BENCH_BASELINE_EPCACHE and EPCACHE_BENCH_BASELINE_RUNTIME go together: \
                 name a copy of another build's `epcache` and its libepcache_monitor.a"
            ),
        }
    }
}

/// Order statistics of one figure over many runs. On a shared host the low end is the runs
/// disturbed least; the spread says how much the machine moved meanwhile.
#[derive(Clone, Copy)]
struct Spread {
    min: f64,
    q25: f64,
    median: f64,
    max: f64,
}

impl Spread {
    fn of(xs: &[f64]) -> Spread {
        assert!(!xs.is_empty(), "no runs to summarise");
        let mut s = xs.to_vec();
        s.sort_by(f64::total_cmp);
        // Linear interpolation between the closest ranks.
        let at = |p: f64| {
            let x = p * (s.len() - 1) as f64;
            let (lo, hi) = (x.floor() as usize, x.ceil() as usize);
            s[lo] + (s[hi] - s[lo]) * (x - lo as f64)
        };
        Spread {
            min: s[0],
            q25: at(0.25),
            median: at(0.5),
            max: s[s.len() - 1],
        }
    }

    /// `min q25 median max`, each `width` wide with `precision` decimals.
    fn row(&self, width: usize, precision: usize) -> String {
        [self.min, self.q25, self.median, self.max]
            .iter()
            .map(|x| format!("{x:>width$.precision$}"))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The three comparable statistics of `self` against `base`, combined by `f`.
    fn against(&self, base: &Spread, f: impl Fn(f64, f64) -> f64) -> [f64; 3] {
        [
            f(self.q25, base.q25),
            f(self.min, base.min),
            f(self.median, base.median),
        ]
    }
}

/// One way of running a program; every run gets a private runtime directory for the segment's
/// discovery record.
#[derive(Clone)]
struct Variant<'a> {
    name: &'static str,
    program: &'a Path,
    args: Vec<String>,
    env: Vec<(&'static str, String)>,
    wrapper: Vec<String>,
}

impl Variant<'_> {
    /// Runs once; returns the wall time in seconds and stdout.
    fn run(&self, dir: &Path) -> (f64, String) {
        let mut command = match self.wrapper.split_first() {
            Some((tool, args)) => {
                let mut c = Command::new(tool);
                c.args(args).arg(self.program);
                c
            }
            None => Command::new(self.program),
        };
        command
            .args(&self.args)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .env("EPCACHE_RUNTIME_DIR", dir.join("run"))
            .current_dir(dir)
            .stdin(Stdio::null());
        let started = Instant::now();
        let out = command.output().expect("running a bench program");
        let seconds = started.elapsed().as_secs_f64();
        let out = checked(self.name, out);
        (seconds, String::from_utf8_lossy(&out.stdout).into_owned())
    }
}

/// Runs every variant `runs` times, interleaved so drift on a shared machine hits all alike,
/// every other round in reverse so no variant always follows the same one; returns
/// (wall seconds, stdout) per variant per run.
fn interleaved(dir: &Path, variants: &[&Variant<'_>], runs: usize) -> Vec<Vec<(f64, String)>> {
    let mut results = vec![Vec::new(); variants.len()];
    for round in 0..runs {
        let mut order: Vec<usize> = (0..variants.len()).collect();
        if round % 2 == 1 {
            order.reverse();
        }
        for i in order {
            let (v, r) = (variants[i], &mut results[i]);
            let run = v.run(dir);
            eprintln!(
                "  run {}/{runs} {:<34} {:>8.3} s  {}",
                round + 1,
                v.name,
                run.0,
                run.1.trim()
            );
            r.push(run);
        }
    }
    results
}

/// `valgrind --tool=cachegrind` simulating the bench's caches, its output file `out_file`.
fn cachegrind_wrapper(out_file: &str) -> Vec<String> {
    ["valgrind", "--tool=cachegrind", "--cache-sim=yes"]
        .into_iter()
        .map(str::to_owned)
        .chain([format!("--cachegrind-out-file={out_file}")])
        .chain(CACHEGRIND_CACHE.iter().map(|s| (*s).to_owned()))
        .collect()
}

fn verdict(met: bool) -> &'static str {
    if met { "met" } else { "MISSED" }
}

fn region_pairs(dir: &Path, runtime: &Path, runs: usize) {
    let pairs: u64 = env_or("EPCACHE_BENCH_PAIRS", DEFAULT_PAIRS).max(1);
    let loops: usize = env_or("EPCACHE_BENCH_LOOPS", DEFAULT_LOOPS).max(1);
    std::fs::write(dir.join("pairs.c"), PAIRS_C).unwrap();
    std::fs::write(dir.join("noop.c"), NOOP_C).unwrap();
    gcc(dir, &["-O2", "-c", "noop.c", "-o", "noop.o"]);
    gcc(
        dir,
        &["-O2", "-g", "pairs.c", "noop.o", "-o", "pairs_plain"],
    );
    epcache_cc(
        dir,
        runtime,
        &["-O2", "-DEPCACHE", "-c", "pairs.c", "-o", "pairs.o"],
    );
    epcache_cc(dir, runtime, &["pairs.o", "noop.o", "-o", "pairs_epcache"]);
    let plain = dir.join("pairs_plain");
    let captured = dir.join("pairs_epcache");
    let variant = |name, program, kind: &str, env: Vec<(&'static str, String)>| Variant {
        name,
        program,
        args: vec![kind.to_owned(), pairs.to_string(), loops.to_string()],
        env,
        wrapper: Vec::new(),
    };
    let mcc_off = || vec![("EPCACHE_MCC", "off".to_owned())];
    let variants = [
        variant("function loop, plain", &plain, "function", vec![]),
        variant("function loop, epcache", &captured, "function", vec![]),
        variant(
            "function loop, epcache, MCC off",
            &captured,
            "function",
            mcc_off(),
        ),
        variant("marker loop, plain", &plain, "marker", vec![]),
        variant("marker loop, epcache", &captured, "marker", vec![]),
        variant(
            "marker loop, epcache, MCC off",
            &captured,
            "marker",
            mcc_off(),
        ),
    ];
    eprintln!(
        "region pairs: {runs} processes per variant, each timing {loops} loops of {pairs} iterations"
    );
    let results = interleaved(dir, &variants.iter().collect::<Vec<_>>(), runs);
    let ns: Vec<Spread> = results
        .iter()
        .map(|r| {
            let loops: Vec<f64> = r
                .iter()
                .flat_map(|(_, out)| out.split_whitespace())
                .map(|x| x.parse::<f64>().expect("ns per iteration"))
                .collect();
            Spread::of(&loops)
        })
        .collect();
    println!(
        "\nregion enter+exit pair, nothing requested: {runs} processes per variant, interleaved, \
         each timing {loops} loops of {pairs} iterations"
    );
    println!(
        "{:<34} {:>27} {:>24} {:>9} {:>16}",
        "", "ns/iter: min q25 median max", "ns/pair: q25 (min, med)", "plain its", "goal <= 5 ns"
    );
    for (i, v) in variants.iter().enumerate() {
        let base = if i < 3 { &ns[0] } else { &ns[3] };
        if v.env.is_empty() && v.program == plain.as_path() {
            println!("{:<34} {}", v.name, ns[i].row(6, 2));
            continue;
        }
        let [pair, pair_min, pair_median] = ns[i].against(base, |a, b| a - b);
        let goal = if v.env.is_empty() {
            verdict(pair <= GOAL_PAIR_NS)
        } else {
            "(segment off)"
        };
        println!(
            "{:<34} {} {:>9.2} ({:>5.2}, {:>5.2}) {:>9.2} {:>16}",
            v.name,
            ns[i].row(6, 2),
            pair,
            pair_min,
            pair_median,
            pair / base.q25,
            goal
        );
    }
    println!(
        "a pair is the loop's time per iteration minus the plain loop's, judged on the lower \
         quartiles; `plain its` gives it in plain-loop iterations, which moves less with the host"
    );
}

fn matmul(dir: &Path, runtime: &Path, runs: usize) {
    let n: u32 = env_or("EPCACHE_BENCH_N", DEFAULT_N);
    let define = format!("-DN={n}");
    std::fs::write(dir.join("matmul.c"), MATMUL_C).unwrap();
    gcc(
        dir,
        &["-O2", "-g", &define, "matmul.c", "-o", "matmul_plain"],
    );
    epcache_cc(
        dir,
        runtime,
        &["-O2", &define, "matmul.c", "-o", "matmul_epcache"],
    );
    // Every function in its instrumented copy only: what the hooks cost while they only return.
    epcache_cc_with(
        dir,
        runtime,
        &[("EPCACHE_CC_DUAL", "off")],
        &["-O2", &define, "matmul.c", "-o", "matmul_instrumented"],
    );
    // The dual build with every access calling its hook: what the inline repeat-hit test saves.
    epcache_cc_with(
        dir,
        runtime,
        &[("EPCACHE_CC_INLINE", "off")],
        &["-O2", &define, "matmul.c", "-o", "matmul_calls"],
    );
    let plain = dir.join("matmul_plain");
    let captured = dir.join("matmul_epcache");
    let calls = dir.join("matmul_calls");
    let instrumented = dir.join("matmul_instrumented");
    let report = dir.join("report.json");
    let base = Variant {
        name: "plain gcc -O2",
        program: &plain,
        args: vec![],
        env: vec![],
        wrapper: vec![],
    };
    let idle = Variant {
        name: "epcache cc, nothing requested",
        program: &captured,
        args: vec![],
        env: vec![],
        wrapper: vec![],
    };
    let idle_hooks = Variant {
        name: "instrumented only, nothing requested",
        program: &instrumented,
        args: vec![],
        env: vec![],
        wrapper: vec![],
    };
    let full = Variant {
        name: "epcache cc, EPCACHE_REPORT (all)",
        program: &captured,
        args: vec![],
        env: vec![
            ("EPCACHE_REPORT", report.display().to_string()),
            ("EPCACHE_CACHE", EPCACHE_CACHE.to_owned()),
        ],
        wrapper: vec![],
    };
    let full_calls = Variant {
        name: "  the same, EPCACHE_CC_INLINE=off",
        program: &calls,
        ..full.clone()
    };
    let mut one_core_env = full.env.clone();
    one_core_env.push(("EPCACHE_PIPELINE", "off".to_owned()));
    let full_one_core = Variant {
        name: "  the same, EPCACHE_PIPELINE=off",
        env: one_core_env,
        ..full.clone()
    };
    // Recording a partial trace of the kernel (issue 29's check: no dearer than monitoring it).
    let mut traced_env = full.env.clone();
    traced_env.push(("EPCACHE_TRACE", "matmul:1".to_owned()));
    traced_env.push((
        "EPCACHE_TRACE_OUTPUT",
        dir.join("matmul.eppt").display().to_string(),
    ));
    let traced = Variant {
        name: "  the same, recording matmul's trace",
        env: traced_env,
        ..full.clone()
    };
    let cachegrind = Variant {
        name: "cachegrind --cache-sim=yes, plain",
        program: &plain,
        args: vec![],
        env: vec![],
        wrapper: cachegrind_wrapper(&dir.join("cachegrind.out").display().to_string()),
    };
    eprintln!("matmul N={n}: {runs} runs of each fast variant");
    let fast = interleaved(dir, &[&base, &idle, &idle_hooks], runs);
    let with_valgrind = tools::available("valgrind", "capture_overhead");
    let slow_runs = (runs / 5).max(3);
    // The traced run goes last, so the others keep their places.
    let slow: Vec<&Variant<'_>> = if with_valgrind {
        vec![&full, &full_calls, &full_one_core, &cachegrind, &traced]
    } else {
        vec![&full, &full_calls, &full_one_core, &traced]
    };
    eprintln!("matmul N={n}: {slow_runs} runs of each simulating variant");
    let slow = interleaved(dir, &slow, slow_runs);

    // The kernel really ran monitored: the report counts at least its N^3 reads of B.
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).expect("the report")).unwrap();
    let d1 = json["levels"]
        .as_array()
        .and_then(|l| l.iter().find(|l| l["name"] == "D1"))
        .expect("D1 in the report");
    let reads = d1["reads"].as_u64().unwrap_or(0);
    assert!(
        reads >= u64::from(n).pow(3),
        "the monitored run counted only {reads} reads"
    );
    let checksum = |r: &[(f64, String)]| r[0].1.split_whitespace().next().map(str::to_owned);
    assert_eq!(checksum(&fast[0]), checksum(&fast[1]), "different results");
    assert_eq!(checksum(&fast[0]), checksum(&fast[2]), "different results");

    // Per run: the whole run's wall time (measured here) and, from the program, its kernel's
    // wall and CPU time and its CPU time up to the end of main.
    let field = |out: &str, i: usize| -> f64 {
        out.split_whitespace()
            .nth(i)
            .and_then(|t| t.parse().ok())
            .unwrap_or_else(|| panic!("field {i} of the kernel's output {out:?}"))
    };
    let spread = |r: &[(f64, String)], f: &dyn Fn(f64, &str) -> f64| {
        Spread::of(&r.iter().map(|(s, out)| f(*s, out)).collect::<Vec<_>>())
    };
    let wall = |r: &[(f64, String)]| spread(r, &|s, _| s);
    let cpu = |r: &[(f64, String)]| spread(r, &|_, out| field(out, 3));
    let kernel_wall = |r: &[(f64, String)]| spread(r, &|_, out| field(out, 1));
    let kernel_cpu = |r: &[(f64, String)]| spread(r, &|_, out| field(out, 2));
    let ratio = |a: &Spread, b: &Spread| a.against(b, |x, y| x / y);
    println!(
        "\nmatmul N={n} (i-k-j over doubles: {} element reads and writes in the source; \
         the monitored run counted {reads} reads at D1)",
        3 * u64::from(n).pow(3)
    );
    println!(
        "{runs} runs per variant, interleaved, in seconds: min q25 median max; CPU is the \
         process's own (up to the end of main) and the kernel thread's, which other processes' \
         time slices do not inflate"
    );
    println!(
        "{:<42} {:<27} {:<27} whole run / plain: q25 (min, med)",
        "", "whole run", "kernel"
    );
    let plain_cpu = cpu(&fast[0]);
    let plain_wall = wall(&fast[0]);
    let notes = [
        String::new(),
        format!("<= {GOAL_IDLE_RATIO}x of plain (CPU q25): "),
        "(EPCACHE_CC_DUAL=off)".to_owned(),
    ];
    for (i, (v, note)) in [&base, &idle, &idle_hooks].iter().zip(notes).enumerate() {
        for (what, whole, kernel, base) in [
            ("CPU", cpu(&fast[i]), kernel_cpu(&fast[i]), &plain_cpu),
            ("wall", wall(&fast[i]), kernel_wall(&fast[i]), &plain_wall),
        ] {
            let name = if what == "CPU" { v.name } else { "" };
            let mut line = format!(
                "{name:<37} {what:<4} {} {}",
                whole.row(6, 3),
                kernel.row(6, 3)
            );
            if i > 0 {
                let [q25, min, median] = ratio(&whole, base);
                line += &format!(" {q25:>9.2}x ({min:.2}x, {median:.2}x)");
                if what == "CPU" && i == 1 {
                    line += &format!("  {note}{}", verdict(q25 <= GOAL_IDLE_RATIO));
                } else if what == "CPU" {
                    line += &format!("  {note}");
                }
            }
            println!("{line}");
        }
    }
    let [k_ratio, k_min, k_median] = ratio(&kernel_cpu(&fast[1]), &kernel_cpu(&fast[0]));
    // Outside the kernel: where the runtime's own start (reading the program's DWARF, creating
    // the segment) shows, since the idle kernel runs its plain copy.
    let outside = |r: &[(f64, String)]| spread(r, &|_, out| field(out, 3) - field(out, 2));
    println!(
        "nothing requested, the kernel alone: {k_ratio:.2}x of plain in CPU time ({k_min:.2}x, \
         {k_median:.2}x); the rest of the run (start, init), CPU q25: plain {:.1} ms, epcache cc \
         {:.1} ms",
        outside(&fast[0]).q25 * 1e3,
        outside(&fast[1]).q25 * 1e3
    );

    // The simulating variants take seconds: medians, against the plain build's median.
    let plain_wall = plain_wall.median;
    let median_of = |r: &[(f64, String)]| (wall(r).median, kernel_wall(r).median);
    println!("\nsimulating variants, median of {slow_runs} runs (ratio against the plain median):");
    println!(
        "{:<37} {:>9} {:>11} {:>9}",
        "", "wall s", "kernel s", "ratio"
    );
    let (full_wall, full_kernel) = median_of(&slow[0]);
    println!(
        "{:<37} {full_wall:>9.3} {full_kernel:>11.3} {:>8.2}x",
        full.name,
        full_wall / plain_wall
    );
    let (calls_wall, calls_kernel) = median_of(&slow[1]);
    println!(
        "{:<37} {calls_wall:>9.3} {calls_kernel:>11.3} {:>8.2}x",
        full_calls.name,
        calls_wall / plain_wall
    );
    let (one_core_wall, one_core_kernel) = median_of(&slow[2]);
    println!(
        "{:<37} {one_core_wall:>9.3} {one_core_kernel:>11.3} {:>8.2}x",
        full_one_core.name,
        one_core_wall / plain_wall
    );
    let (traced_wall, traced_kernel) = median_of(&slow[slow.len() - 1]);
    println!(
        "{:<37} {traced_wall:>9.3} {traced_kernel:>11.3} {:>8.2}x",
        traced.name,
        traced_wall / plain_wall
    );
    println!(
        "recording the kernel's partial trace: {:.2}x the monitored kernel (wall, medians; goal: at most 1x: {})",
        traced_kernel / full_kernel,
        verdict(traced_kernel <= full_kernel)
    );
    // The monitored run simulates on a second core: its CPU time is the program's and the
    // simulation thread's together.
    println!(
        "CPU time (process, median): everything monitored {:.3} s, on the program's thread only {:.3} s",
        cpu(&slow[0]).median,
        cpu(&slow[2]).median
    );
    if with_valgrind {
        let (cg_wall, cg_kernel) = median_of(&slow[3]);
        let speedup = cg_wall / full_wall;
        println!(
            "{:<37} {cg_wall:>9.3} {cg_kernel:>11.3} {:>8.2}x",
            cachegrind.name,
            cg_wall / plain_wall
        );
        let how = if speedup >= 1.0 {
            format!("{speedup:.2}x faster")
        } else {
            format!("{:.2}x slower", 1.0 / speedup)
        };
        println!(
            "epcache (everything monitored) vs Cachegrind: {how} (goal: at least {GOAL_SPEEDUP}x faster: {})",
            verdict(speedup >= GOAL_SPEEDUP)
        );
        // What a call per access costs before the runtime does anything: a monitored run whose
        // every access calls its hook can be no faster than the instrumented-only build with
        // hooks that only return (the inline test avoids the call for repeat hits).
        println!(
            "call-per-access floor: the instrumented-only build with nothing requested runs {:.2}x faster than Cachegrind",
            cg_wall / wall(&fast[2]).median
        );
    }
    println!(
        "caches: epcache {EPCACHE_CACHE}; cachegrind {}",
        CACHEGRIND_CACHE.join(" ")
    );
}

/// For information beside the goal, judged on gcc's matrix multiply: the gather kernel
/// ([`SPMV_C`], gcc), and the matrix multiply built by clang, which instruments after
/// vectorising (so its capture sees the wide accesses Cachegrind sees), each monitored against
/// Cachegrind on its plain build.
fn for_information(dir: &Path, runtime: &Path, runs: usize) {
    if !tools::available("valgrind", "capture_overhead") {
        return;
    }
    std::fs::write(dir.join("spmv.c"), SPMV_C).unwrap();
    let n: u32 = env_or("EPCACHE_BENCH_N", DEFAULT_N);
    let define = format!("-DN={n}");
    versus_cachegrind(
        dir,
        runtime,
        runs,
        "gcc",
        &["-O2", "spmv.c"],
        "a gather kernel gcc does not vectorise (sparse matrix-vector product, 200000 rows of \
         27, 20 times)",
    );
    if tools::available("clang", "capture_overhead") {
        versus_cachegrind(
            dir,
            runtime,
            runs,
            "clang",
            &["-O2", &define, "matmul.c"],
            &format!("the matrix multiply (N={n}) built by clang -O2"),
        );
    }
}

/// Builds `source_args` with `compiler` plainly and with `epcache cc`, and prints the monitored
/// run (`EPCACHE_REPORT`) against Cachegrind on the plain build, medians of a few interleaved
/// runs; both must print the same checksum.
fn versus_cachegrind(
    dir: &Path,
    runtime: &Path,
    runs: usize,
    compiler: &str,
    source_args: &[&str],
    what: &str,
) {
    let (plain, captured) = (dir.join("info_plain"), dir.join("info_epcache"));
    let mut plain_build = vec!["-g"];
    plain_build.extend_from_slice(source_args);
    plain_build.extend(["-o", "info_plain"]);
    checked(
        &format!("{compiler} {plain_build:?}"),
        Command::new(compiler)
            .args(&plain_build)
            .current_dir(dir)
            .output()
            .expect("running the compiler"),
    );
    let mut captured_build = vec![compiler];
    captured_build.extend_from_slice(source_args);
    captured_build.extend(["-o", "info_epcache"]);
    let out = Command::new(env!("CARGO_BIN_EXE_epcache"))
        .env("EPCACHE_RUNTIME", runtime)
        .arg("cc")
        .arg("--")
        .args(&captured_build)
        .current_dir(dir)
        .output()
        .expect("running epcache cc");
    checked(&format!("epcache cc -- {captured_build:?}"), out);
    let monitored = Variant {
        name: "epcache cc, EPCACHE_REPORT (all)",
        program: &captured,
        args: vec![],
        env: vec![
            (
                "EPCACHE_REPORT",
                dir.join("info.json").display().to_string(),
            ),
            ("EPCACHE_CACHE", EPCACHE_CACHE.to_owned()),
        ],
        wrapper: vec![],
    };
    let cachegrind = Variant {
        name: "cachegrind --cache-sim=yes, plain",
        program: &plain,
        args: vec![],
        env: vec![],
        wrapper: cachegrind_wrapper("/dev/null"),
    };
    let slow_runs = (runs / 5).max(3);
    eprintln!("{what}: {slow_runs} runs of each simulating variant");
    let results = interleaved(dir, &[&monitored, &cachegrind], slow_runs);
    let checksum = |r: &[(f64, String)]| r[0].1.split_whitespace().next().map(str::to_owned);
    assert_eq!(
        checksum(&results[0]),
        checksum(&results[1]),
        "different results"
    );
    let median =
        |r: &[(f64, String)]| Spread::of(&r.iter().map(|(s, _)| *s).collect::<Vec<_>>()).median;
    let (ep, cg) = (median(&results[0]), median(&results[1]));
    println!(
        "\nfor information, {what}: epcache {ep:.3} s, Cachegrind {cg:.3} s (medians of \
         {slow_runs} runs, wall): {:.2}x faster",
        cg / ep
    );
}

fn main() {
    // `cargo bench` passes `--bench`; libtest-style filters are not supported.
    if !tools::available("gcc", "capture_overhead") {
        return;
    }
    let runs: usize = env_or("EPCACHE_BENCH_RUNS", DEFAULT_RUNS).max(1);
    let runtime = artifacts::runtime_library(Path::new(env!("CARGO_BIN_EXE_epcache"))).unwrap_or_else(|| {
        panic!("no libepcache_monitor.a for this profile: run the bench through `cargo bench -p epcache-cli`")
    });
    eprintln!("runtime: {}", runtime.display());
    let baseline = Baseline::from_env();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let sections = std::env::var("EPCACHE_BENCH_SECTIONS").unwrap_or_default();
    let wanted = |name: &str| sections.is_empty() || sections.split(',').any(|s| s.trim() == name);
    if wanted("pairs") {
        region_pairs(dir.path(), &runtime, runs);
    }
    if wanted("matmul") {
        matmul(dir.path(), &runtime, runs);
    }
    if wanted("info") {
        for_information(dir.path(), &runtime, runs);
    }
    if wanted("openmp") && tools::available("valgrind", "capture_overhead") {
        threads::openmp(dir.path(), &runtime, baseline.as_ref(), runs);
    }
    if std::env::var_os("EPCACHE_BENCH_PROFILE").is_some()
        && tools::available("valgrind", "capture_overhead")
    {
        profile(dir.path(), &runtime);
    }
}

/// Instructions executed inside the functions `collect` (and what they call) by one run of
/// `program` under Callgrind, and the top of its flat profile.
fn callgrind(
    dir: &Path,
    tag: &str,
    program: &Path,
    args: &[&str],
    env: &[(&str, String)],
    collect: &[&str],
) -> (u64, String) {
    let out_file = dir.join(format!("callgrind.{tag}.out"));
    let mut command = Command::new("valgrind");
    command
        .arg("--tool=callgrind")
        .arg(format!("--callgrind-out-file={}", out_file.display()))
        .args(collect.iter().map(|f| format!("--toggle-collect={f}")))
        .arg(program)
        .args(args)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .env("EPCACHE_RUNTIME_DIR", dir.join("run"))
        .current_dir(dir);
    checked(
        &format!("callgrind {tag}"),
        command.output().expect("running valgrind"),
    );
    let annotate = Command::new("callgrind_annotate")
        .arg("--inclusive=no")
        .arg(&out_file)
        .output()
        .expect("running callgrind_annotate");
    let text = String::from_utf8_lossy(&annotate.stdout).into_owned();
    let number = |line: &str| -> Option<u64> {
        line.split_whitespace()
            .next()?
            .replace(',', "")
            .parse()
            .ok()
    };
    let total = text
        .lines()
        .find(|l| l.contains("PROGRAM TOTALS"))
        .and_then(number)
        .unwrap_or(0);
    let top: Vec<String> = text
        .lines()
        .skip_while(|l| !l.contains("file:function"))
        .skip(2)
        .take(10)
        .map(|l| format!("    {}", l.chars().take(150).collect::<String>()))
        .collect();
    (total, top.join("\n"))
}

/// `EPCACHE_BENCH_PROFILE=1`: where the time goes, in instructions per iteration from Callgrind
/// (counted only inside the measured functions), with the top of each flat profile.
fn profile(dir: &Path, runtime: &Path) {
    const ITERATIONS: u64 = 1_000_000;
    const SMALL_N: u64 = 150;
    let iterations = ITERATIONS.to_string();
    let (plain, captured) = (dir.join("pairs_plain"), dir.join("pairs_epcache"));
    println!("\nprofile (Callgrind instructions, counted inside the measured code only):");
    let function_args = ["function", iterations.as_str()];
    let (base, _) = callgrind(dir, "fn-plain", &plain, &function_args, &[], &["tiny"]);
    let (hooked, top) = callgrind(dir, "fn-epcache", &captured, &function_args, &[], &["tiny"]);
    println!(
        "function region pair: {:.1} instructions ({} with hooks, {} plain, per call of tiny)\n{top}",
        (hooked as f64 - base as f64) / ITERATIONS as f64,
        hooked / ITERATIONS,
        base / ITERATIONS
    );
    let (markers, top) = callgrind(
        dir,
        "marker-epcache",
        &captured,
        &["marker", iterations.as_str()],
        &[],
        &["epcache_region_begin", "epcache_region_end"],
    );
    println!(
        "marker pair: {:.1} instructions\n{top}",
        markers as f64 / ITERATIONS as f64
    );

    let define = format!("-DN={SMALL_N}");
    gcc(
        dir,
        &["-O2", "-g", &define, "matmul.c", "-o", "small_plain"],
    );
    epcache_cc(
        dir,
        runtime,
        &["-O2", &define, "matmul.c", "-o", "small_epcache"],
    );
    let per_iteration = |n: u64| n as f64 / SMALL_N.pow(3) as f64;
    let (plain_kernel, _) = callgrind(
        dir,
        "mm-plain",
        &dir.join("small_plain"),
        &[],
        &[],
        &["matmul"],
    );
    let (idle_kernel, top) = callgrind(
        dir,
        "mm-idle",
        &dir.join("small_epcache"),
        &[],
        &[],
        &["matmul"],
    );
    println!(
        "matmul N={SMALL_N}, per inner iteration (3 element accesses): plain {:.1}, capture idle {:.1} instructions\n{top}",
        per_iteration(plain_kernel),
        per_iteration(idle_kernel)
    );
    let report = dir.join("profile-report.json");
    let (full_kernel, top) = callgrind(
        dir,
        "mm-full",
        &dir.join("small_epcache"),
        &[],
        &[
            ("EPCACHE_REPORT", report.display().to_string()),
            ("EPCACHE_CACHE", EPCACHE_CACHE.to_owned()),
        ],
        &["matmul"],
    );
    println!(
        "matmul N={SMALL_N}, everything monitored: {:.1} instructions per inner iteration ({:.1} per access)\n{top}",
        per_iteration(full_kernel),
        per_iteration(full_kernel) / 3.0
    );
}
