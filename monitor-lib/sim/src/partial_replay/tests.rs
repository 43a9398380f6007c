//! Re-simulating partial traces: level totals equal a plain replay's, per-site and
//! per-structure tables add up and attribute hits and evictions by hand, marked spans count
//! from the warm cache, and curve points equal re-simulation at their size.

use proptest::prelude::*;

use super::*;
use crate::cache::AccessKind;
use crate::cache::HierarchySpec;
use crate::replay::replay;
use crate::trace::TraceRecord;
use crate::trace::partial::{PartialAccess, PartialWriter, SiteInfo, StructureRange};

fn spec(s: &str) -> HierarchySpec {
    s.parse().unwrap()
}

fn access(site: u64, kind: TraceKind, addr: u64, size: u32) -> PartialAccess {
    PartialAccess {
        site,
        kind,
        addr,
        size,
    }
}

fn trace_of(
    accesses: &[PartialAccess],
    ranges: &[(&str, u64, u64)],
    sites: &[(u64, &str)],
) -> PartialTrace {
    let mut w = PartialWriter::new(Vec::new()).unwrap();
    for a in accesses {
        w.record(a).unwrap();
    }
    for &(name, start, end) in ranges {
        w.add_range(StructureRange {
            name: name.into(),
            start,
            end,
        });
    }
    for &(site, structure) in sites {
        w.set_site(
            site,
            SiteInfo {
                file: "k.c".into(),
                line: site as u32,
                function: "kernel".into(),
                structure: structure.into(),
            },
        );
    }
    PartialTrace::parse(w.finish().unwrap()).unwrap()
}

fn records(accesses: &[PartialAccess]) -> Vec<Result<TraceRecord, std::convert::Infallible>> {
    accesses
        .iter()
        .map(|a| {
            Ok(TraceRecord {
                kind: a.kind,
                addr: a.addr,
                size: a.size,
            })
        })
        .collect()
}

/// `C[i][j] += A[i][k] * B[k][j]` on `n x n` doubles; A at 0x10000, B at 0x20000, C at 0x30000.
fn matmul(n: u64) -> Vec<PartialAccess> {
    let mut out = Vec::new();
    for i in 0..n {
        for j in 0..n {
            for k in 0..n {
                out.push(access(0xa, TraceKind::Load, 0x10000 + 8 * (i * n + k), 8));
                out.push(access(0xb, TraceKind::Load, 0x20000 + 8 * (k * n + j), 8));
            }
            out.push(access(0xc, TraceKind::Modify, 0x30000 + 8 * (i * n + j), 8));
        }
    }
    out
}

const MATMUL_RANGES: [(&str, u64, u64); 3] = [
    ("A", 0x10000, 0x18000),
    ("B", 0x20000, 0x28000),
    ("C", 0x30000, 0x38000),
];

#[test]
fn levels_equal_a_plain_replay_and_the_tables_add_up() {
    let accesses = matmul(24);
    let trace = trace_of(&accesses, &MATMUL_RANGES, &[]);
    for (cache, compat) in [
        ("D1=1K,2,32;L2=8K,4,64", false),
        ("I1=1K,2,32;D1=1K,2,32;LL=8K,4,64", true),
    ] {
        let mut plain = Hierarchy::new(&spec(cache)).unwrap();
        if compat {
            plain = plain.cachegrind_compatible();
        }
        let expected = replay(records(&accesses), &mut plain, compat).unwrap();
        let mut h = Hierarchy::new(&spec(cache)).unwrap();
        if compat {
            h = h.cachegrind_compatible();
        }
        let report = replay_partial(&trace, &mut h, compat, 0).unwrap();
        assert_eq!(report.summary, expected, "{cache}");
        for table in [&report.sites, &report.structures] {
            for level in expected.levels.iter().filter(|l| l.name != "I1") {
                let sum = |f: fn(&OwnerLevel) -> u64| -> u64 {
                    table
                        .iter()
                        .map(|r| f(&r.levels.iter().find(|(n, _)| *n == level.name).unwrap().1))
                        .sum()
                };
                assert_eq!(sum(|l| l.accesses), level.data_reads + level.writes);
                assert_eq!(
                    sum(|l| l.misses),
                    level.data_read_misses + level.write_misses
                );
            }
        }
        let names: Vec<_> = report.structures.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["A", "B", "C"]);
        assert_eq!(report.compression.described_share, 1.0);
    }
}

#[test]
fn evictors_and_temporal_and_spatial_hits_are_attributed_by_site() {
    // D1: two sets of one 32-byte way. 0x000 and 0x040 share set 0.
    let ld = |site, addr| access(site, TraceKind::Load, addr, 8);
    let accesses = [
        ld(1, 0x000), // miss, site 1 fills line 0x000
        ld(2, 0x008), // spatial hit: bytes 8..16 are new to the residency
        ld(1, 0x000), // temporal hit
        ld(3, 0x040), // miss, evicts site 1's line
        ld(1, 0x000), // miss, evicts site 3's line
        ld(3, 0x040), // miss, evicts site 1's line again
    ];
    let trace = trace_of(&accesses, &[], &[(1, "x"), (3, "y")]);
    let mut h = Hierarchy::new(&spec("D1=64,1,32")).unwrap();
    let report = replay_partial(&trace, &mut h, false, 0).unwrap();
    let site = |name: &str| report.sites.iter().find(|r| r.name == name).unwrap();
    let s1 = site("0x1");
    assert_eq!((s1.temporal_hits, s1.spatial_hits, s1.fills), (1, 0, 2));
    assert_eq!(s1.evicted_by.len(), 1);
    assert_eq!(
        (s1.evicted_by[0].evictor.as_str(), s1.evicted_by[0].lines),
        ("0x3", 2)
    );
    assert_eq!(s1.source.as_deref(), Some("k.c:1"));
    assert_eq!(s1.structure.as_deref(), Some("x"));
    let s2 = site("0x2");
    assert_eq!((s2.temporal_hits, s2.spatial_hits, s2.fills), (0, 1, 0));
    let s3 = site("0x3");
    assert_eq!(s3.levels[0].1.misses, 2);
    assert_eq!(s3.evicted_by[0].evictor, "0x1");
    // Site 1's first residency used bytes 0..16 (16 of 32), its second 0..8, both closed.
    assert_eq!(s1.spatial_use, Some(24.0 / 64.0));
    // Structures come from the site table here: x (site 1), y (site 3), (other) (site 2).
    let x = report.structures.iter().find(|r| r.name == "x").unwrap();
    assert_eq!(x.evicted_by[0].evictor, "y");
    assert!(report.structures.iter().any(|r| r.name == OTHER));
}

/// A site whose accesses fall in two structures (a stencil called on two arrays in turn) is
/// said to touch both, most first, whatever the site table named when it was first seen; a
/// site of one structure keeps the single name.
#[test]
fn a_site_touching_two_structures_names_both() {
    let mut accesses = Vec::new();
    for i in 0..30 {
        accesses.push(access(1, TraceKind::Load, 0x1000 + 8 * i, 8));
        accesses.push(access(2, TraceKind::Store, 0x2000 + 8 * i, 8));
    }
    for i in 0..10 {
        accesses.push(access(1, TraceKind::Load, 0x2000 + 8 * i, 8));
    }
    let ranges = [("A", 0x1000, 0x1100), ("B", 0x2000, 0x2100)];
    let trace = trace_of(&accesses, &ranges, &[(1, "A"), (2, "B")]);
    let mut h = Hierarchy::new(&spec("D1=1K,2,32")).unwrap();
    let report = replay_partial(&trace, &mut h, false, 0).unwrap();
    let site = |name: &str| report.sites.iter().find(|r| r.name == name).unwrap();
    let both = site("0x1");
    assert_eq!(both.structure.as_deref(), Some("A"));
    let touched: Vec<(&str, u64)> = both
        .structures
        .iter()
        .map(|s| (s.name.as_str(), s.accesses))
        .collect();
    assert_eq!(touched, [("A", 30), ("B", 10)]);
    let one = site("0x2");
    assert_eq!(one.structure.as_deref(), Some("B"));
    assert!(one.structures.is_empty());
}

#[test]
fn curve_points_equal_re_simulation_at_the_same_size() {
    let accesses = matmul(20);
    let trace = trace_of(&accesses, &MATMUL_RANGES, &[]);
    let d1_misses = |cache: &str| {
        let mut h = Hierarchy::new(&spec(cache)).unwrap();
        let report = replay_partial(&trace, &mut h, false, 0).unwrap();
        let misses = |rows: &[OwnerRow], name: &str| {
            rows.iter().find(|r| r.name == name).unwrap().levels[0]
                .1
                .misses
        };
        (
            misses(&report.structures, "B"),
            report.summary.levels[0].read_misses + report.summary.levels[0].write_misses,
        )
    };
    for ways in [None, Some(2), Some(4)] {
        let curves = miss_ratio_curves(&trace, ways, 32, Some(16384)).unwrap();
        let curve = |name: &str| curves.iter().find(|c| c.structure == name).unwrap();
        for size in [256u64, 1024, 4096] {
            let assoc = ways.map_or(size / 32, u64::from);
            let (b, all) = d1_misses(&format!("D1={size},{assoc},32"));
            let at = |name| {
                curve(name)
                    .points
                    .iter()
                    .find(|p| p.size == size)
                    .unwrap()
                    .misses
            };
            assert_eq!(at("B"), b, "{ways:?} {size}");
            assert_eq!(at("(all)"), all, "{ways:?} {size}");
        }
        // Larger caches never miss more under LRU when fully associative.
        if ways.is_none() {
            let points = &curve("(all)").points;
            assert!(points.windows(2).all(|w| w[1].misses <= w[0].misses));
        }
    }
}

fn any_access() -> impl Strategy<Value = PartialAccess> {
    (
        0u64..5,
        prop_oneof![
            Just(TraceKind::Load),
            Just(TraceKind::Store),
            Just(TraceKind::Modify)
        ],
        0u64..4096,
        prop_oneof![Just(8u32), 1u32..=70],
    )
        .prop_map(|(site, kind, addr, size)| access(site, kind, addr, size))
}

proptest! {
    #[test]
    fn any_stream_replays_to_the_plain_totals(accesses in proptest::collection::vec(any_access(), 1..300)) {
        let trace = trace_of(&accesses, &[("low", 0, 1024)], &[]);
        let cache = spec("D1=512,2,32;L2=2K,4,64");
        let expected = replay(records(&accesses), &mut Hierarchy::new(&cache).unwrap(), false).unwrap();
        let report = replay_partial(&trace, &mut Hierarchy::new(&cache).unwrap(), false, 1).unwrap();
        prop_assert_eq!(report.summary, expected);
        let records: u64 = report.sites.iter().map(|r| r.accesses).sum();
        prop_assert_eq!(records, accesses.len() as u64);
    }
}

#[test]
fn marked_spans_count_only_their_accesses_from_the_warm_cache() {
    // Warm-up, instance 1, between, instance 2, after: random loads over 4 KB.
    let mut state = 0x1234_5678u64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let parts: Vec<Vec<PartialAccess>> = [300, 200, 150, 250, 100]
        .iter()
        .map(|&n| {
            (0..n)
                .map(|_| access(next() % 3, TraceKind::Load, next() % 4096, 8))
                .collect()
        })
        .collect();
    let mut w = PartialWriter::new(Vec::new()).unwrap();
    for (i, part) in parts.iter().enumerate() {
        match i {
            1 | 3 => w.mark(crate::trace::partial::Mark::Begin),
            2 | 4 => w.mark(crate::trace::partial::Mark::End),
            _ => {}
        }
        for a in part {
            w.record(a).unwrap();
        }
    }
    let trace = PartialTrace::parse(w.finish().unwrap()).unwrap();
    let cache = spec("D1=512,2,32;L2=2K,4,64");
    // Expected: one hierarchy fed everything, the two instances' deltas summed.
    let mut h = Hierarchy::new(&cache).unwrap();
    let mut expected = [[0u64; 4]; 2];
    for (i, part) in parts.iter().enumerate() {
        let before: Vec<_> = (0..2).map(|l| *h.level_stats(l)).collect();
        for a in part {
            h.access(a.addr, a.size, AccessKind::Read);
        }
        if i == 1 || i == 3 {
            for (l, b) in before.iter().enumerate() {
                let s = h.level_stats(l);
                expected[l][0] += s.reads - b.reads;
                expected[l][1] += s.read_misses - b.read_misses;
                expected[l][2] += s.writebacks - b.writebacks;
            }
        }
    }
    let report = replay_partial(&trace, &mut Hierarchy::new(&cache).unwrap(), false, 0).unwrap();
    for (l, level) in report.summary.levels.iter().enumerate() {
        assert_eq!(
            [level.reads, level.read_misses, level.writebacks, 0],
            expected[l],
            "{}",
            level.name
        );
    }
    assert_eq!(report.summary.records.loads, 450);
    let records: u64 = report.sites.iter().map(|r| r.accesses).sum();
    assert_eq!(records, 450);
    let d1_misses: u64 = report.sites.iter().map(|r| r.levels[0].1.misses).sum();
    assert_eq!(d1_misses, expected[0][1]);
    // The curves count the same accesses: at D1's own shape, the same misses.
    let curves = miss_ratio_curves(&trace, Some(2), 32, Some(512)).unwrap();
    let all = curves.iter().find(|c| c.structure == "(all)").unwrap();
    assert_eq!(all.accesses, 450);
    assert_eq!(all.points.last().unwrap().misses, expected[0][1]);
}

/// SHARDS at rate 1 samples every line: its curves are the exact ones, point for point.
#[test]
fn sampling_every_line_gives_the_exact_curves() {
    let trace = trace_of(&matmul(20), &MATMUL_RANGES, &[]);
    let exact = miss_ratio_curves(&trace, None, 32, Some(16384)).unwrap();
    let sampled = sampled_miss_ratio_curves(&trace, 32, 1.0, Some(16384)).unwrap();
    assert_eq!(sampled.rate, 1.0);
    assert_eq!(sampled.curves, exact);
    assert_eq!(mean_absolute_error(&exact, &sampled.curves), Some(0.0));
    for bad in [0.0, -0.5, 1.5, f64::NAN] {
        assert!(matches!(
            sampled_miss_ratio_curves(&trace, 32, bad, None),
            Err(MrcError::BadRate(_))
        ));
    }
}

/// A rate keeps about that share of the lines, spread over the address space, and curves start
/// at `1 / rate` lines.
#[test]
fn the_sampler_keeps_its_share_of_lines_and_points_start_at_its_inverse() {
    let sampler = Sampler::new(0.01).unwrap();
    assert!((sampler.rate() - 0.01).abs() < 1e-6);
    let kept = (0..1_000_000u64).filter(|&l| sampler.takes(l)).count();
    assert!((9_000..11_000).contains(&kept), "{kept}");
    // Neighbouring lines are not sampled together.
    let runs = (0..1_000_000u64)
        .filter(|&l| sampler.takes(l) && sampler.takes(l + 1))
        .count();
    assert!(runs < 300, "{runs}");
    assert_eq!(smallest_lines(0.01), 512);
    assert_eq!(smallest_lines(0.5), 8);
}

/// A long irregular stream (a working set of 64K lines, mostly hot, gathered at random): the
/// sampled curve stays within the error `epcache replay` states for its sample size.
#[test]
fn a_sampled_curve_of_a_long_stream_stays_near_the_exact_one() {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut accesses = Vec::with_capacity(400_000);
    for i in 0..400_000u64 {
        let r = next();
        // Half the accesses in a 2K-line hot set, the rest over 64K lines, plus a sweep.
        let line = match i % 4 {
            0 | 1 => r % 2048,
            2 => 2048 + r % 65536,
            _ => 70_000 + i / 4 % 8192,
        };
        accesses.push(access(
            0xa + i % 4,
            TraceKind::Load,
            0x100_0000 + line * 64,
            8,
        ));
    }
    let trace = trace_of(&accesses, &[], &[]);
    let exact = miss_ratio_curves(&trace, None, 64, None).unwrap();
    for rate in [0.1, 0.01] {
        let sampled = sampled_miss_ratio_curves(&trace, 64, rate, None).unwrap();
        let error = mean_absolute_error(&exact, &sampled.curves).unwrap();
        eprintln!(
            "rate {rate}: {} lines, mean absolute error {error}",
            sampled.sampled_lines
        );
        assert!(
            sampled.sampled_lines > 400,
            "{rate}: {}",
            sampled.sampled_lines
        );
        assert!(
            error <= stated_error(sampled.sampled_lines),
            "rate {rate}: mean absolute error {error} over {} lines",
            sampled.sampled_lines
        );
    }
}

/// One thread of [`threads_trace`]: its accesses and its counted span, if any.
type ThreadPart<'a> = (&'a [PartialAccess], Option<(usize, usize)>);

/// A marked trace of the threads in `parts`.
fn threads_trace(parts: &[ThreadPart<'_>]) -> PartialTrace {
    use crate::trace::partial::{Mark, ThreadWriter, TraceFile};
    let mut file = TraceFile::new(Vec::new(), true).unwrap();
    for (id, &(accesses, span)) in parts.iter().enumerate() {
        let mut w = ThreadWriter::new(Vec::new());
        for (i, a) in accesses.iter().enumerate() {
            match span {
                Some((b, _)) if b == i => w.mark(Mark::Begin),
                Some((_, e)) if e == i => w.mark(Mark::End),
                _ => {}
            }
            w.record(a).unwrap();
        }
        file.chunk(id as u64, &w.finish().unwrap()).unwrap();
    }
    PartialTrace::parse(
        file.finish(&std::collections::BTreeMap::new(), &[])
            .unwrap(),
    )
    .unwrap()
}

#[test]
fn each_thread_replays_on_caches_of_its_own_and_the_threads_add_up() {
    let cache = spec("D1=1K,2,32;L2=4K,4,64");
    // Two threads sweep the same 2 KiB (each misses on its own caches); a third never ran the
    // region (no marks), so it only warms caches of its own and counts nothing.
    let sweep: Vec<_> = (0..3)
        .flat_map(|_| (0..256).map(|i| access(0x10, TraceKind::Load, 0x1000 + 8 * i, 8)))
        .collect();
    let other: Vec<_> = (0..256)
        .map(|i| access(0x20, TraceKind::Store, 0x1000 + 8 * i, 8))
        .collect();
    let span = Some((256, 768));
    let both = threads_trace(&[(&sweep, span), (&sweep, span), (&other, None)]);
    assert_eq!(both.threads().len(), 3);
    let one = threads_trace(&[(&sweep, span)]);
    let replay = |t: &PartialTrace| {
        replay_partial(t, &mut Hierarchy::new(&cache).unwrap(), false, 0).unwrap()
    };
    let (two, single) = (replay(&both), replay(&one));
    for (l2, l1) in two.summary.levels.iter().zip(&single.summary.levels) {
        assert_eq!(
            (l2.reads, l2.read_misses, l2.writes),
            (2 * l1.reads, 2 * l1.read_misses, 0),
            "{}",
            l1.name
        );
    }
    // The sweep repeats within the 1 KiB D1 of 2 KiB: every line misses, each thread alone.
    assert_eq!(single.summary.levels[0].read_misses, 2 * 64);
    // Per thread: the two sweeping threads count what one alone does; the third nothing.
    let per: Vec<_> = two
        .per_thread
        .iter()
        .map(|t| {
            (
                t.thread,
                t.records.loads,
                t.levels[0].read_misses,
                t.levels[1].reads,
            )
        })
        .collect();
    let (l1, l2) = (&single.summary.levels[0], &single.summary.levels[1]);
    assert_eq!(
        per,
        [
            (0, 512, l1.read_misses, l2.reads),
            (1, 512, l1.read_misses, l2.reads),
            (2, 0, 0, 0)
        ]
    );
    assert_eq!(two.summary.records.loads, 2 * 512);
    assert_eq!(two.summary.records.stores, 0);
    let site = |r: &PartialReplayReport, name: &str| {
        r.sites.iter().find(|s| s.name == name).map(|s| s.accesses)
    };
    assert_eq!(site(&two, "0x10"), Some(1024));
    assert_eq!(site(&two, "0x20"), Some(0));
    // The curves too: each thread's own, added up.
    let c2 = miss_ratio_curves(&both, Some(2), 32, Some(1024)).unwrap();
    let c1 = miss_ratio_curves(&one, Some(2), 32, Some(1024)).unwrap();
    let all = |c: &[MissRatioCurve]| c.iter().find(|c| c.structure == "(all)").unwrap().clone();
    let (a2, a1) = (all(&c2), all(&c1));
    assert_eq!(a2.accesses, 2 * a1.accesses);
    for (p2, p1) in a2.points.iter().zip(&a1.points) {
        assert_eq!(p2.misses, 2 * p1.misses, "size {}", p1.size);
    }
    let f2 = miss_ratio_curves(&both, None, 32, Some(4096)).unwrap();
    let f1 = miss_ratio_curves(&one, None, 32, Some(4096)).unwrap();
    for (p2, p1) in all(&f2).points.iter().zip(&all(&f1).points) {
        assert_eq!(p2.misses, 2 * p1.misses, "size {}", p1.size);
    }
}

#[test]
fn sampling_every_line_is_expected_to_be_exact() {
    assert_eq!(expected_error(1.0, 50), 0.0);
    assert_eq!(expected_error(0.5, 50), stated_error(50));
    assert!(expected_error(0.01, 20_000) <= 0.01);
}
