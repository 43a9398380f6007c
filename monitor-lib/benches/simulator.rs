//! Throughput of the simulated hierarchy on realistic access streams (accesses per second, one core).

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use epcache_monitor::cache::{AccessKind, Hierarchy, HierarchySpec};
use std::hint::black_box;

/// The address stream of a naive double-precision matrix multiply `C += A * B` of order `n`:
/// a realistic mix of unit-stride, large-stride and repeated accesses.
fn matmul_stream(n: u64) -> Vec<(u64, u32, AccessKind)> {
    let (a, b, c) = (0x1000_0000u64, 0x2000_0000u64, 0x3000_0000u64);
    let mut out = Vec::with_capacity((n * n * (2 * n + 2)) as usize);
    for i in 0..n {
        for j in 0..n {
            out.push((c + (i * n + j) * 8, 8, AccessKind::Read));
            for k in 0..n {
                out.push((a + (i * n + k) * 8, 8, AccessKind::Read));
                out.push((b + (k * n + j) * 8, 8, AccessKind::Read));
            }
            out.push((c + (i * n + j) * 8, 8, AccessKind::Write));
        }
    }
    out
}

fn hierarchy(spec: &str) -> Hierarchy {
    Hierarchy::new(&spec.parse::<HierarchySpec>().unwrap()).unwrap()
}

fn bench_hierarchy(c: &mut Criterion) {
    let stream = matmul_stream(96);
    let mut group = c.benchmark_group("hierarchy");
    group.throughput(Throughput::Elements(stream.len() as u64));
    group.sample_size(20);
    for (name, spec) in [
        ("L1 8-way + L2 16-way, LRU", "D1=32K,8,64;L2=1M,16,64"),
        ("L1 16-way + L2 16-way, LRU", "D1=64K,16,64;L2=1M,16,64"),
        (
            "L1 8-way + L2 16-way, tree-PLRU",
            "D1=32K,8,64,plru;L2=1M,16,64,plru",
        ),
    ] {
        let mut h = hierarchy(spec);
        group.bench_function(name, |bench| {
            bench.iter(|| {
                for &(addr, size, kind) in &stream {
                    black_box(h.access(addr, size, kind));
                }
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench_hierarchy);
criterion_main!(benches);
