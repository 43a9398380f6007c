//! OpenMP programs monitored as threads of one machine: what coherence costs.
//!
//! A 2-D Jacobi relaxation over two grids, shared out among 2 and then 4 OpenMP threads by rows
//! ([`OMP_JACOBI_C`]), run: plainly (native); under Cachegrind on the plain build, which runs
//! the threads one at a time; monitored with a hierarchy per thread (the default: no
//! coherence, nothing shared); and monitored as cores of one machine (`EPCACHE_CORES`, the LL
//! shared, the D1s kept coherent by MESI). The goal (issue 27): coherence makes a monitored run
//! at most 1.5 times slower than the private-only one. With 2 threads the two monitored
//! variants run again beside a CPU-bound process (the busy machine line). With a baseline
//! build (`Baseline`), its two monitored variants run in the same rounds, and a line per thread
//! count compares the builds: on this shared host that, not two runs of the bench, is what
//! tells a change from the host's load.
//!
//! Every variant runs with `OMP_WAIT_POLICY=passive`, so threads waiting at a barrier sleep
//! rather than spin: under Cachegrind, which runs one thread at a time, a spinning waiter only
//! burns the time slice the working thread needs.

use std::path::Path;

use super::{
    Baseline, CACHEGRIND_CACHE, EPCACHE_CACHE, Spread, Variant, cachegrind_wrapper, env_or,
    interleaved, verdict,
};

/// The Jacobi kernel: `N` from the build, sweeps from `argv[1]`, threads from
/// `OMP_NUM_THREADS`; prints a checksum.
const OMP_JACOBI_C: &str = r#"
#include <stdio.h>
#include <stdlib.h>
double grid[N][N] __attribute__((aligned(64)));
double next[N][N] __attribute__((aligned(64)));

void relax(void) {
#pragma omp parallel for schedule(static)
  for (int i = 1; i < N - 1; i++)
    for (int j = 1; j < N - 1; j++)
      next[i][j] = 0.25 * (grid[i - 1][j] + grid[i + 1][j] + grid[i][j - 1] + grid[i][j + 1]);
#pragma omp parallel for schedule(static)
  for (int i = 1; i < N - 1; i++)
    for (int j = 1; j < N - 1; j++) grid[i][j] = next[i][j];
}

int main(int argc, char **argv) {
  int sweeps = argc > 1 ? atoi(argv[1]) : 10;
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) grid[i][j] = (i == 0) ? 1.0 : 0.0;
  for (int s = 0; s < sweeps; s++) relax();
  double sum = 0.0;
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) sum += grid[i][j];
  printf("%.9e\n", sum);
  return 0;
}
"#;

/// The busy machine's competitor: CPU-bound until killed.
const SPIN_C: &str = "int main(void) { volatile unsigned long x = 0; for (;;) x++; }\n";

/// The grid's order: two grids of 8 MiB, as large as the LL.
const DEFAULT_OMP_N: u32 = 1024;
/// Sweeps per run.
const DEFAULT_OMP_SWEEPS: u32 = 10;
/// The goal: a machine of cores at most this much slower than a hierarchy per thread.
const GOAL_COHERENCE_RATIO: f64 = 1.5;

/// Builds the kernel plainly and with `epcache cc` (`-fopenmp`), then for 2 and 4 threads
/// prints the four variants' median wall times and the ratios; with a `baseline`, also that
/// build's two monitored variants, run in the same rounds.
pub(super) fn openmp(dir: &Path, runtime: &Path, baseline: Option<&Baseline>, runs: usize) {
    let n: u32 = env_or("EPCACHE_BENCH_OMP_N", DEFAULT_OMP_N);
    let sweeps: u32 = env_or("EPCACHE_BENCH_OMP_SWEEPS", DEFAULT_OMP_SWEEPS);
    let define = format!("-DN={n}");
    std::fs::write(dir.join("omp_jacobi.c"), OMP_JACOBI_C).unwrap();
    super::gcc(
        dir,
        &[
            "-O2",
            "-g",
            "-fopenmp",
            &define,
            "omp_jacobi.c",
            "-o",
            "omp_plain",
        ],
    );
    super::epcache_cc(
        dir,
        runtime,
        &[
            "-O2",
            "-fopenmp",
            &define,
            "omp_jacobi.c",
            "-o",
            "omp_epcache",
        ],
    );
    if let Some(b) = baseline {
        super::epcache_cc_by(
            &b.epcache,
            dir,
            &b.runtime,
            &[],
            &[
                "-O2",
                "-fopenmp",
                &define,
                "omp_jacobi.c",
                "-o",
                "omp_baseline",
            ],
        );
    }
    std::fs::write(dir.join("spin.c"), SPIN_C).unwrap();
    super::gcc(dir, &["-O1", "spin.c", "-o", "spin"]);
    let (plain, captured) = (dir.join("omp_plain"), dir.join("omp_epcache"));
    let before = dir.join("omp_baseline");
    let mut busy_line = String::new();
    let mut baseline_lines = Vec::new();
    let shared_cache = format!("{EPCACHE_CACHE},shared");
    let slow_runs = (runs / 5).max(3);
    println!(
        "\nOpenMP Jacobi, two {n}x{n} grids, {sweeps} sweeps: wall seconds, medians of \
         {slow_runs} interleaved runs (OMP_WAIT_POLICY=passive)"
    );
    println!(
        "{:<8} {:>8} {:>11} {:>14} {:>14} {:>16} {:>16} {:>10}",
        "threads",
        "native",
        "Cachegrind",
        "per-thread",
        "cores (MESI)",
        "cores/per-thread",
        "Cachegrind/cores",
        "goal <= 1.5"
    );
    for threads in [2u32, 4] {
        let omp = |extra: &[(&'static str, String)]| {
            let mut env = vec![
                ("OMP_NUM_THREADS", threads.to_string()),
                ("OMP_WAIT_POLICY", "passive".to_owned()),
            ];
            env.extend_from_slice(extra);
            env
        };
        let report = dir.join("omp_report.json").display().to_string();
        let native = Variant {
            name: "OpenMP Jacobi, plain",
            program: &plain,
            args: vec![sweeps.to_string()],
            env: omp(&[]),
            wrapper: vec![],
        };
        let cachegrind = Variant {
            name: "OpenMP Jacobi, cachegrind",
            wrapper: cachegrind_wrapper("/dev/null"),
            ..native.clone()
        };
        let per_thread = Variant {
            name: "OpenMP Jacobi, epcache per thread",
            program: &captured,
            env: omp(&[
                ("EPCACHE_REPORT", report.clone()),
                ("EPCACHE_CACHE", EPCACHE_CACHE.to_owned()),
            ]),
            ..native.clone()
        };
        let cores = Variant {
            name: "OpenMP Jacobi, epcache cores",
            program: &captured,
            env: omp(&[
                ("EPCACHE_REPORT", report),
                ("EPCACHE_CACHE", shared_cache.clone()),
                ("EPCACHE_CORES", threads.to_string()),
            ]),
            ..native.clone()
        };
        let per_thread_before = Variant {
            name: "OpenMP Jacobi, baseline per thread",
            program: &before,
            ..per_thread.clone()
        };
        let cores_before = Variant {
            name: "OpenMP Jacobi, baseline cores",
            program: &before,
            ..cores.clone()
        };
        let mut variants = vec![&native, &cachegrind, &per_thread, &cores];
        if baseline.is_some() {
            variants.extend([&per_thread_before, &cores_before]);
        }
        eprintln!("OpenMP Jacobi, {threads} threads: {slow_runs} runs of each variant");
        let results = interleaved(dir, &variants, slow_runs);
        let checksum = |r: &[(f64, String)]| r[0].1.split_whitespace().next().map(str::to_owned);
        for r in &results[1..] {
            assert_eq!(checksum(r), checksum(&results[0]), "different results");
        }
        let median =
            |i: usize| Spread::of(&results[i].iter().map(|(s, _)| *s).collect::<Vec<_>>()).median;
        let [native_s, cachegrind_s, per_thread_s, cores_s] = [0, 1, 2, 3].map(median);
        if baseline.is_some() {
            let [per_thread_b, cores_b] = [4, 5].map(median);
            baseline_lines.push(format!(
                "baseline build, {threads} threads: per-thread {per_thread_b:.3} s, cores \
                 {cores_b:.3} s ({:.2}x); this build against it: per-thread {:.2}x, cores {:.2}x",
                cores_b / per_thread_b,
                per_thread_s / per_thread_b,
                cores_s / cores_b
            ));
        }
        let ratio = cores_s / per_thread_s;
        println!(
            "{threads:<8} {native_s:>8.3} {cachegrind_s:>11.3} {per_thread_s:>14.3} {cores_s:>14.3} \
             {ratio:>15.2}x {:>15.2}x {:>10}",
            cachegrind_s / cores_s,
            verdict(ratio <= GOAL_COHERENCE_RATIO)
        );
        if threads == 2 {
            // The same two variants again beside a CPU-bound process: a machine whose threads
            // wait for one another must not wait for one that is not running.
            let mut spin = std::process::Command::new(dir.join("spin"))
                .stdin(std::process::Stdio::null())
                .spawn()
                .expect("starting the competitor");
            let busy = interleaved(dir, &[&per_thread, &cores], slow_runs);
            let _ = spin.kill();
            let _ = spin.wait();
            let [busy_per_thread, busy_cores] = [0, 1]
                .map(|i| Spread::of(&busy[i].iter().map(|(s, _)| *s).collect::<Vec<_>>()).median);
            busy_line = format!(
                "busy machine (one CPU-bound process beside it), 2 threads: per-thread {busy_per_thread:.3} s \
                 ({:.2}x idle), cores {busy_cores:.3} s ({:.2}x idle), cores/per-thread {:.2}x",
                busy_per_thread / per_thread_s,
                busy_cores / cores_s,
                busy_cores / busy_per_thread
            );
        }
    }
    println!("{busy_line}");
    for line in &baseline_lines {
        println!("{line}");
    }
    println!(
        "caches: per thread {EPCACHE_CACHE}; cores {shared_cache}; cachegrind {} (its LL is \
         the one process's)",
        CACHEGRIND_CACHE.join(" ")
    );
}
