//! What capture costs a C program built with `epcache cc`, measured side by side in one run.
//!
//! `cargo bench -p epcache-client --bench capture_overhead` builds, with the runtime of the
//! bench's own profile (`target/release` under `cargo bench`):
//! - a loop calling a tiny instrumented function (a function region) or making a marker pair,
//!   timed inside the program with `clock_gettime`, run with the segment on (the default) and no
//!   request, minus the same loop built plainly: nanoseconds per region enter+exit pair;
//! - a matrix-multiply kernel built with capture but nothing requested (its plain copies run),
//!   against the same kernel built plainly with `gcc -O2`, and built instrumented only
//!   (`EPCACHE_CC_DUAL=off`, hooks that only return: the floor of a monitored run);
//! - the same kernel with everything monitored (`EPCACHE_REPORT`: every region and data
//!   structure), against `valgrind --tool=cachegrind --cache-sim=yes` with the same caches on
//!   the plain build.
//!
//! It prints medians of several runs with the goals beside them. `EPCACHE_BENCH_RUNS` sets the
//! number of runs of the fast programs (slow ones get half), `EPCACHE_BENCH_N` the matrix order,
//! `EPCACHE_BENCH_PAIRS` the loop count; `EPCACHE_BENCH_PROFILE=1` adds Callgrind's
//! instruction counts per region pair and per kernel iteration, with the hottest functions.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Instant;

// The capture tests' helpers: tool checks that fail under CI, and the runtime cargo built for
// this profile (the bench's `epcache` binary is the release one, so its runtime is too).
#[path = "../tests/capture_support/mod.rs"]
mod capture_support;

/// The loop whose iterations are region pairs. `plain_noop` lives in another, never
/// instrumented, file: gcc gives a function TSan entry and exit hooks only when it has a memory
/// access or a call, and a call to an uninstrumented function adds no access hook to the pair.
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
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  if (argc != 3) return 2;
  long n = atol(argv[2]);
  int marker = strcmp(argv[1], "marker") == 0;
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
  printf("%.6f\n", (t1 - t0) * 1e9 / (double)n);
  return 0;
}
"#;

const NOOP_C: &str = r#"
void plain_noop(long i) { __asm__ volatile("" : : "r"(i)); }
"#;

/// Row-major i-k-j matrix multiply over globals (named A, B, C from DWARF); prints a checksum
/// and the kernel's own time.
const MATMUL_C: &str = r#"
#include <stdio.h>
#include <time.h>
double A[N][N], B[N][N], C[N][N];

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
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
  double t0 = now();
  matmul();
  double t1 = now();
  double sum = 0.0;
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) sum += C[i][j];
  printf("%.6e %.6f\n", sum, t1 - t0);
  return 0;
}
"#;

/// Caches for both epcache and Cachegrind: 32 KB 8-way L1, 8 MB 16-way LL, 64-byte lines.
const EPCACHE_CACHE: &str = "D1=32K,8,64;LL=8M,16,64";
const CACHEGRIND_CACHE: [&str; 3] = ["--I1=32768,8,64", "--D1=32768,8,64", "--LL=8388608,16,64"];

const DEFAULT_RUNS: usize = 5;
/// About half a second plainly here.
const DEFAULT_N: u32 = 700;
const DEFAULT_PAIRS: u64 = 50_000_000;

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
    let out = Command::new(env!("CARGO_BIN_EXE_epcache"))
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

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    if n % 2 == 1 {
        xs[n / 2]
    } else {
        (xs[n / 2 - 1] + xs[n / 2]) / 2.0
    }
}

/// One way of running a program; every run gets a private runtime directory for the segment's
/// discovery record.
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

/// Runs every variant `runs` times, interleaved so drift on a shared machine hits all alike;
/// returns (wall seconds, stdout) per variant per run.
fn interleaved(dir: &Path, variants: &[&Variant<'_>], runs: usize) -> Vec<Vec<(f64, String)>> {
    let mut results = vec![Vec::new(); variants.len()];
    for round in 0..runs {
        for (v, r) in variants.iter().zip(results.iter_mut()) {
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

fn verdict(met: bool) -> &'static str {
    if met { "met" } else { "MISSED" }
}

fn region_pairs(dir: &Path, runtime: &Path, runs: usize) {
    let pairs: u64 = env_or("EPCACHE_BENCH_PAIRS", DEFAULT_PAIRS);
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
        args: vec![kind.to_owned(), pairs.to_string()],
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
    eprintln!("region pairs: {pairs} iterations per run, {runs} runs");
    let results = interleaved(dir, &variants.iter().collect::<Vec<_>>(), runs);
    let ns: Vec<f64> = results
        .iter()
        .map(|r| {
            median(
                r.iter()
                    .map(|(_, out)| out.trim().parse::<f64>().expect("ns per iteration"))
                    .collect(),
            )
        })
        .collect();
    println!("\nregion enter+exit pair, nothing requested ({pairs} per run, median of {runs}):");
    println!(
        "{:<36} {:>10} {:>12} {:>16}",
        "", "ns/iter", "ns/pair", "goal <= 5 ns"
    );
    for (i, v) in variants.iter().enumerate() {
        let base = if i < 3 { ns[0] } else { ns[3] };
        if v.env.is_empty() && v.program == plain.as_path() {
            println!("{:<36} {:>10.2}", v.name, ns[i]);
            continue;
        }
        let pair = ns[i] - base;
        let goal = if v.env.is_empty() {
            verdict(pair <= GOAL_PAIR_NS)
        } else {
            "(segment off)"
        };
        println!("{:<36} {:>10.2} {:>12.2} {:>16}", v.name, ns[i], pair, goal);
    }
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
    let plain = dir.join("matmul_plain");
    let captured = dir.join("matmul_epcache");
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
    let mut wrapper = vec![
        "valgrind".to_owned(),
        "--tool=cachegrind".to_owned(),
        "--cache-sim=yes".to_owned(),
        format!(
            "--cachegrind-out-file={}",
            dir.join("cachegrind.out").display()
        ),
    ];
    wrapper.extend(CACHEGRIND_CACHE.iter().map(|s| (*s).to_owned()));
    let cachegrind = Variant {
        name: "cachegrind --cache-sim=yes, plain",
        program: &plain,
        args: vec![],
        env: vec![],
        wrapper,
    };
    eprintln!("matmul N={n}: {runs} runs of the fast variants");
    let fast = interleaved(dir, &[&base, &idle, &idle_hooks], runs);
    let with_valgrind = capture_support::available("valgrind", "capture_overhead");
    let slow_runs = runs.div_ceil(2).max(1);
    let slow: Vec<&Variant<'_>> = if with_valgrind {
        vec![&full, &cachegrind]
    } else {
        vec![&full]
    };
    eprintln!("matmul N={n}: {slow_runs} runs of the simulating variants");
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

    let wall = |r: &[(f64, String)]| median(r.iter().map(|(s, _)| *s).collect());
    let kernel = |r: &[(f64, String)]| {
        median(
            r.iter()
                .filter_map(|(_, out)| out.split_whitespace().nth(1)?.parse().ok())
                .collect(),
        )
    };
    let (plain_wall, idle_wall) = (wall(&fast[0]), wall(&fast[1]));
    let (plain_kernel, idle_kernel) = (kernel(&fast[0]), kernel(&fast[1]));
    println!(
        "\nmatmul N={n} (i-k-j over doubles: {} element reads and writes in the source; \
         the monitored run counted {reads} reads at D1), median wall time:",
        3 * u64::from(n).pow(3)
    );
    println!(
        "{:<36} {:>9} {:>11} {:>9} {:>24}",
        "", "wall s", "kernel s", "ratio", "goal"
    );
    println!("{:<36} {plain_wall:>9.3} {plain_kernel:>11.3}", base.name);
    let idle_ratio = idle_wall / plain_wall;
    println!(
        "{:<36} {idle_wall:>9.3} {idle_kernel:>11.3} {idle_ratio:>8.2}x {:>24}",
        idle.name,
        format!(
            "<= {GOAL_IDLE_RATIO}x of plain: {}",
            verdict(idle_ratio <= GOAL_IDLE_RATIO)
        )
    );
    let hooks_wall = wall(&fast[2]);
    println!(
        "{:<36} {hooks_wall:>9.3} {:>11.3} {:>8.2}x {:>24}",
        idle_hooks.name,
        kernel(&fast[2]),
        hooks_wall / plain_wall,
        "(EPCACHE_CC_DUAL=off)"
    );
    let full_wall = wall(&slow[0]);
    println!(
        "{:<36} {full_wall:>9.3} {:>11.3} {:>8.2}x",
        full.name,
        kernel(&slow[0]),
        full_wall / plain_wall
    );
    if with_valgrind {
        let cg_wall = wall(&slow[1]);
        let speedup = cg_wall / full_wall;
        println!(
            "{:<36} {cg_wall:>9.3} {:>11.3} {:>8.2}x",
            cachegrind.name,
            kernel(&slow[1]),
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
        // What the instrumented code costs before the runtime does anything: the monitored run
        // can be no faster than the instrumented copy with hooks that only return.
        println!(
            "floor: the instrumented-only build with nothing requested runs {:.2}x faster than Cachegrind (the call per access alone)",
            cg_wall / hooks_wall
        );
    }
    println!(
        "caches: epcache {EPCACHE_CACHE}; cachegrind {}; the kernel column is the program's own clock_gettime around matmul()",
        CACHEGRIND_CACHE.join(" ")
    );
}

fn main() {
    // `cargo bench` passes `--bench`; libtest-style filters are not supported.
    if !capture_support::available("gcc", "capture_overhead") {
        return;
    }
    let runs: usize = env_or("EPCACHE_BENCH_RUNS", DEFAULT_RUNS).max(1);
    let runtime = capture_support::runtime_library().unwrap_or_else(|| {
        panic!("no libepcache_monitor.a for this profile: run the bench through `cargo bench -p epcache-client`")
    });
    eprintln!("runtime: {}", runtime.display());
    let dir = tempfile::tempdir().expect("a temporary directory");
    region_pairs(dir.path(), &runtime, runs);
    matmul(dir.path(), &runtime, runs);
    if std::env::var_os("EPCACHE_BENCH_PROFILE").is_some()
        && capture_support::available("valgrind", "capture_overhead")
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
