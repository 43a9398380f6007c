//! Throughput of the simulator on a realistic access stream (accesses per second, one core):
//! the plain hierarchy, with one dynamic histogram active (the figure), and with every analysis on.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use epcache_monitor::analysis::AnalysisConfig;
use epcache_monitor::cache::{AccessKind, Hierarchy, HierarchySpec};
use epcache_monitor::monitor::CounterArrayConfig;
use epcache_monitor::ranges::{AddressRange, NamedRange, RangeSet};
use epcache_monitor::simulator::Simulator;
use std::hint::black_box;

const N: u64 = 96;
const BASE: u64 = 0x1000_0000;

/// The three matrices of `C += A * B`, contiguous, so one range covers them all.
fn matrices() -> AddressRange {
    AddressRange::new(BASE, 3 * N * N * 8)
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

const SHAPES: &[(&str, &str)] = &[
    ("L1 32K 8-way + L2 1M 16-way", "D1=32K,8,64;L2=1M,16,64"),
    ("L1 64K 16-way + L2 1M 16-way", "D1=64K,16,64;L2=1M,16,64"),
];

fn bench(c: &mut Criterion) {
    let stream = matmul_stream();
    let mut group = c.benchmark_group("accesses");
    group.throughput(Throughput::Elements(stream.len() as u64));
    group.sample_size(20);
    for &(name, spec) in SHAPES {
        let spec: HierarchySpec = spec.parse().unwrap();

        let mut plain = Hierarchy::new(&spec).unwrap();
        group.bench_function(format!("{name}, LRU, hierarchy only"), |bench| {
            bench.iter(|| {
                for &(addr, size, kind) in &stream {
                    black_box(plain.access(addr, size, kind));
                }
            })
        });

        // The figure: one dynamic histogram (L1 load misses over all three matrices,
        // 96 buckets of 36 lines) active while the whole stream runs.
        let mut sim = Simulator::new(&spec, CounterArrayConfig::default()).unwrap();
        let hist = sim
            .monitor_mut()
            .add_histogram("PAPI_L1_LDM", matrices(), 36)
            .unwrap();
        sim.monitor_mut().start().unwrap();
        group.bench_function(format!("{name}, LRU, one dynamic histogram"), |bench| {
            bench.iter(|| {
                for &(addr, size, kind) in &stream {
                    sim.access(addr, size, kind);
                }
            })
        });
        assert!(sim.monitor().read_histogram(hist).unwrap().total() > 0);

        let mut analysed = Simulator::new(&spec, CounterArrayConfig::default()).unwrap();
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
        group.bench_function(format!("{name}, LRU, every analysis on"), |bench| {
            bench.iter(|| {
                for &(addr, size, kind) in &stream {
                    analysed.access(addr, size, kind);
                }
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
