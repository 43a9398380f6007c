//! Throughput of the simulator on two realistic access streams (accesses per second, one core):
//! the plain hierarchy, with one dynamic histogram active (the figure), and with every
//! analysis on; the first two also through the batch API (`access_batch` on the whole stream).
//!
//! With `EPCACHE_BENCH_ONCE=<workload>:<shape>:<mode>` set (workload `matmul` or `lu`, shape an
//! index into `SHAPES`, mode `hierarchy`, `histogram` or `analyses`, the first two optionally
//! with `-batch`) the binary instead runs the stream once to warm the caches and once more
//! inside `measured_pass`, prints the counts and exits: a deterministic run for
//! `valgrind --tool=callgrind --toggle-collect='*measured_pass*'`, whose instruction counts do
//! not depend on how busy the machine is. `EPCACHE_BENCH_PASSES=n` adds n timed passes (each
//! of at least 16 M accesses, the stream repeated) and prints the best rate.

use criterion::{Criterion, Throughput, criterion_group};
use epcache_sim::analysis::AnalysisConfig;
use epcache_sim::cache::{AccessKind, Hierarchy, HierarchySpec};
use epcache_sim::monitor::{CounterArrayConfig, HistogramIndex};
use epcache_sim::ranges::{AddressRange, NamedRange, RangeSet};
use epcache_sim::simulator::Simulator;
use std::hint::black_box;

const N: u64 = 96;
const BASE: u64 = 0x1000_0000;

/// One range over the data of both workloads: the three matrices of `C += A * B` (contiguous)
/// and lu's single matrix of order 2N (4N^2 doubles).
fn matrices() -> AddressRange {
    AddressRange::new(BASE, 4 * N * N * 8)
}

/// The address stream of a naive double-precision matrix multiply of order `N`: a realistic mix
/// of unit-stride, large-stride and repeated accesses (about 7% L1 misses at 32 KB, 8 ways).
fn matmul_stream() -> Vec<(u64, u32, AccessKind)> {
    let (a, b, c) = (BASE, BASE + N * N * 8, BASE + 2 * N * N * 8);
    let mut out = Vec::with_capacity((N * N * (2 * N + 2)) as usize);
    for i in 0..N {
        for j in 0..N {
            out.push((c + (i * N + j) * 8, 8, AccessKind::Read));
            for k in 0..N {
                out.push((a + (i * N + k) * 8, 8, AccessKind::Read));
                out.push((b + (k * N + j) * 8, 8, AccessKind::Read));
            }
            out.push((c + (i * N + j) * 8, 8, AccessKind::Write));
        }
    }
    out
}

/// The data stream of PolyBench's `lu` (no pivoting, row-major doubles) of order `N`, the kernel
/// of the Cachegrind reference figure: mostly unit-stride row walks.
fn lu_stream() -> Vec<(u64, u32, AccessKind)> {
    let n = 2 * N;
    let at = |i: u64, j: u64| BASE + (i * n + j) * 8;
    let mut out = Vec::new();
    for i in 0..n {
        for j in 0..i {
            for k in 0..j {
                out.push((at(i, k), 8, AccessKind::Read));
                out.push((at(k, j), 8, AccessKind::Read));
                out.push((at(i, j), 8, AccessKind::Read));
                out.push((at(i, j), 8, AccessKind::Write));
            }
            out.push((at(j, j), 8, AccessKind::Read));
            out.push((at(i, j), 8, AccessKind::Read));
            out.push((at(i, j), 8, AccessKind::Write));
        }
        for j in i..n {
            for k in 0..i {
                out.push((at(i, k), 8, AccessKind::Read));
                out.push((at(k, j), 8, AccessKind::Read));
                out.push((at(i, j), 8, AccessKind::Read));
                out.push((at(i, j), 8, AccessKind::Write));
            }
        }
    }
    out
}

/// The figure: one dynamic histogram (L1 load misses over the workload's matrices, 96
/// buckets of 48 lines) active over the whole stream.
fn histogram_simulator(spec: &HierarchySpec) -> (Simulator, HistogramIndex) {
    let mut sim = Simulator::new(spec, CounterArrayConfig::default()).unwrap();
    let hist = sim
        .monitor_mut()
        .add_histogram("PAPI_L1_LDM", matrices(), 48)
        .unwrap();
    sim.monitor_mut().start().unwrap();
    (sim, hist)
}

/// Every analysis on, over the three matrices of matmul.
fn analysed_simulator(spec: &HierarchySpec) -> Simulator {
    let mut analysed = Simulator::new(spec, CounterArrayConfig::default()).unwrap();
    let mut ranges = RangeSet::new();
    for (i, name) in ["A", "B", "C"].into_iter().enumerate() {
        let start = BASE + i as u64 * N * N * 8;
        ranges
            .insert(NamedRange {
                name: name.into(),
                range: AddressRange::new(start, N * N * 8),
                bucket_bytes: 64 * 16,
            })
            .unwrap();
    }
    let all = AnalysisConfig {
        reuse: true,
        evictors: true,
        miss_classes: true,
        reuse_distance: true,
        level: 0,
    };
    analysed.set_analyses(all, ranges).unwrap();
    analysed
}

const SHAPES: &[(&str, &str)] = &[
    ("L1 32K 8-way + L2 1M 16-way", "D1=32K,8,64;L2=1M,16,64"),
    ("L1 64K 16-way + L2 1M 16-way", "D1=64K,16,64;L2=1M,16,64"),
];

fn bench(c: &mut Criterion) {
    for (workload, stream) in [("matmul", matmul_stream()), ("lu", lu_stream())] {
        let mut group = c.benchmark_group(workload);
        group.throughput(Throughput::Elements(stream.len() as u64));
        group.sample_size(10);
        for &(name, spec) in SHAPES {
            bench_shape(&mut group, name, &spec.parse().unwrap(), &stream);
        }
        group.finish();
    }
}

fn bench_shape(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    spec: &HierarchySpec,
    stream: &[(u64, u32, AccessKind)],
) {
    for &(mode, label) in MODES {
        let mut subject = Subject::new(mode, spec);
        let mut driven = false;
        group.bench_function(format!("{name}, LRU, {label}"), |bench| {
            driven = true;
            bench.iter(|| drive(&mut subject, stream))
        });
        // A benchmark left out by a name filter never runs, and its histogram stays empty.
        if let (
            true,
            Subject::Simulator {
                sim,
                hist: Some(hist),
                ..
            },
        ) = (driven, &subject)
        {
            assert!(sim.monitor().read_histogram(*hist).unwrap().total() > 0);
        }
    }
}

/// What the bench measures on each shape: the `EPCACHE_BENCH_ONCE` mode and the criterion label.
const MODES: &[(&str, &str)] = &[
    ("hierarchy", "hierarchy only"),
    ("hierarchy-batch", "hierarchy only, batch"),
    ("histogram", "one dynamic histogram"),
    ("histogram-batch", "one dynamic histogram, batch"),
    ("analyses", "every analysis on"),
];

/// What one pass of a stream drives, and how: one `access` call per access, or the whole
/// stream as one `access_batch`.
enum Subject {
    Hierarchy {
        hierarchy: Box<Hierarchy>,
        batch: bool,
    },
    Simulator {
        sim: Box<Simulator>,
        hist: Option<HistogramIndex>,
        batch: bool,
    },
}

impl Subject {
    fn new(mode: &str, spec: &HierarchySpec) -> Self {
        let batch = mode.ends_with("-batch");
        match mode.trim_end_matches("-batch") {
            "hierarchy" => Subject::Hierarchy {
                hierarchy: Box::new(Hierarchy::new(spec).unwrap()),
                batch,
            },
            "histogram" => {
                let (sim, hist) = histogram_simulator(spec);
                Subject::Simulator {
                    sim: Box::new(sim),
                    hist: Some(hist),
                    batch,
                }
            }
            "analyses" => Subject::Simulator {
                sim: Box::new(analysed_simulator(spec)),
                hist: None,
                batch,
            },
            _ => panic!(
                "unknown mode {mode}; use hierarchy, histogram or analyses, optionally with -batch"
            ),
        }
    }

    fn hierarchy(&self) -> &Hierarchy {
        match self {
            Subject::Hierarchy { hierarchy, .. } => hierarchy,
            Subject::Simulator { sim, .. } => sim.hierarchy(),
        }
    }
}

/// The pass callgrind measures; kept out of line so `--toggle-collect` can name it.
#[inline(never)]
fn measured_pass(subject: &mut Subject, stream: &[(u64, u32, AccessKind)]) {
    drive(subject, stream);
}

#[inline(always)]
fn drive(subject: &mut Subject, stream: &[(u64, u32, AccessKind)]) {
    match subject {
        Subject::Hierarchy {
            hierarchy,
            batch: false,
        } => {
            for &(addr, size, kind) in stream {
                black_box(hierarchy.access(addr, size, kind));
            }
        }
        Subject::Hierarchy {
            hierarchy,
            batch: true,
        } => hierarchy.access_batch(stream),
        Subject::Simulator {
            sim, batch: false, ..
        } => {
            for &(addr, size, kind) in stream {
                sim.access(addr, size, kind);
            }
        }
        Subject::Simulator {
            sim, batch: true, ..
        } => sim.access_batch(stream),
    }
}

/// `EPCACHE_BENCH_ONCE`: see the module documentation.
fn run_once(what: &str) {
    let parts: Vec<&str> = what.split(':').collect();
    let [workload, shape, mode] = parts[..] else {
        panic!("EPCACHE_BENCH_ONCE={what}: expected <matmul|lu>:<shape index>:<mode>");
    };
    let stream = match workload {
        "matmul" => matmul_stream(),
        "lu" => lu_stream(),
        _ => panic!("EPCACHE_BENCH_ONCE: unknown workload {workload}; use matmul or lu"),
    };
    let (name, spec) = SHAPES[shape
        .parse::<usize>()
        .expect("shape is an index into SHAPES")];
    let spec: HierarchySpec = spec.parse().unwrap();
    let mut subject = Subject::new(mode, &spec);
    // The warm-up pass leaves the caches as criterion's repeated iterations see them.
    // Inlined here rather than a second out-of-line function, which the compiler would merge
    // with `measured_pass` (same body), and callgrind would then count both passes.
    drive(&mut subject, &stream);
    measured_pass(&mut subject, &stream);
    let h = subject.hierarchy();
    let l1 = h.level_stats(0);
    println!(
        "{workload} on {name}, {mode}: {} accesses per pass; L1 after two passes: {} reads, {} read misses, {} writes, {} write misses",
        stream.len(),
        l1.reads,
        l1.read_misses,
        l1.writes,
        l1.write_misses
    );
    // EPCACHE_BENCH_PASSES=n: n timed passes more, the best printed; for quick A/B runs of two
    // builds alternated on a busy machine, where the best of several passes is the stable figure.
    // Time on the CPU (from /proc/thread-self/schedstat) leaves out waits for a CPU, which wall
    // time on a shared machine mostly is; the kernel updates it only at scheduler ticks (a few
    // ms), so a timed pass drives the stream as often as it takes to reach about 16 M
    // accesses (matmul's 1.8 M-access stream alone was two or three ticks).
    let passes: u32 = std::env::var("EPCACHE_BENCH_PASSES").map_or(0, |n| n.parse().unwrap());
    let repeats = (16_000_000 / stream.len()).max(1);
    let mut best_wall = f64::INFINITY;
    let mut best_cpu = f64::INFINITY;
    for _ in 0..passes {
        let (start, cpu_start) = (std::time::Instant::now(), on_cpu_ns());
        for _ in 0..repeats {
            drive(&mut subject, &stream);
        }
        best_wall = best_wall.min(start.elapsed().as_secs_f64());
        if let (Some(a), Some(b)) = (cpu_start, on_cpu_ns()) {
            best_cpu = best_cpu.min((b - a) as f64 / 1e9);
        }
    }
    if passes > 0 {
        let rate = |secs: f64| (stream.len() * repeats) as f64 / secs / 1e6;
        println!(
            "best of {passes} passes: {:.1} M accesses/s wall, {:.1} M accesses/s on the CPU",
            rate(best_wall),
            rate(best_cpu)
        );
    }
}

/// Nanoseconds this thread has run on a CPU, if the kernel says.
fn on_cpu_ns() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    stat.split_whitespace().next()?.parse().ok()
}

criterion_group!(benches, bench);

fn main() {
    if let Ok(what) = std::env::var("EPCACHE_BENCH_ONCE") {
        run_once(&what);
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
