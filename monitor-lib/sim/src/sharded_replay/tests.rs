//! A sharded replay against one thread's replay of the same trace: equal totals and contents,
//! for hierarchies of every kind of store and policy, in both modes, with accesses that
//! straddle the slices' borders.

use proptest::prelude::*;

use super::*;
use crate::cache::{HierarchySpec, SetShards};
use crate::replay::{cachegrind_hierarchy, replay_with_progress};
use crate::trace::TraceKind;

fn spec(s: &str) -> HierarchySpec {
    s.parse().unwrap()
}

/// Small hierarchies, so a few KiB of addresses fill them and the slices alternate every few
/// hundred bytes: many accesses straddle a border.
const SPECS: [&str; 6] = [
    "D1=1K,2,32;LL=8K,4,64",
    "I1=1K,2,32;D1=1K,8,64;L2=4K,16,64",
    "D1=2K,4,32;L2=8K,2,64,inclusive;LL=32K,8,128",
    "D1=1K,2,32,plru;L2=8K,4,64,wt",
    "D1=4K,32,32;LL=16K,4,64",
    "I1=2K,2,64;D1=2K,2,64;LL=16K,8,64",
];

/// Records over `span` bytes: loads, stores, modifies and fetches of sizes 1 to 700 bytes, some
/// straddling lines and borders, some wider than a slice.
fn trace(span: u64) -> impl Strategy<Value = Vec<TraceRecord>> {
    let kind = prop_oneof![
        Just(TraceKind::Load),
        Just(TraceKind::Store),
        Just(TraceKind::Modify),
        Just(TraceKind::Instr),
    ];
    let size = prop_oneof![8 => Just(8u32), 2 => 1u32..16, 1 => 16u32..129, 1 => 129u32..700];
    prop::collection::vec((kind, 0..span, size), 1..3000).prop_map(|records| {
        records
            .into_iter()
            .map(|(kind, addr, size)| TraceRecord { kind, addr, size })
            .collect()
    })
}

/// Totals and resident lines of every level after replaying `records` into `hierarchy`.
fn replayed(
    mut hierarchy: Hierarchy,
    records: &[TraceRecord],
    compat: bool,
    shards: Option<SetShards>,
) -> (ReplaySummary, Vec<Vec<u64>>) {
    let ok = records.iter().map(|r| Ok::<_, ()>(*r));
    let summary = match shards {
        Some(shards) => replay_in_shards(ok, &mut hierarchy, compat, &shards, |_| {}),
        None => replay_with_progress(ok, &mut hierarchy, compat, |_| {}),
    }
    .unwrap();
    let contents = (0..hierarchy.depth())
        .map(|level| {
            let mut blocks: Vec<u64> = hierarchy.cache(level).resident_blocks().collect();
            blocks.sort_unstable();
            blocks
        })
        .collect();
    (summary, contents)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn shards_count_exactly_what_one_replay_counts(
        which in 0..SPECS.len(),
        records in trace(24 * 1024),
        shards in prop_oneof![Just(2u32), Just(4)],
    ) {
        let spec = spec(SPECS[which]);
        let Ok(sharding) = SetShards::new(&spec, shards) else {
            return Ok(());
        };
        let one = replayed(Hierarchy::new(&spec).unwrap(), &records, false, None);
        let split = replayed(Hierarchy::new(&spec).unwrap(), &records, false, Some(sharding));
        prop_assert_eq!(&one.0.levels, &split.0.levels, "{}", SPECS[which]);
        prop_assert_eq!(one.0.records, split.0.records);
        prop_assert_eq!(one.1, split.1);
    }

    #[test]
    fn shards_count_exactly_what_cachegrind_counts(
        records in trace(24 * 1024),
        shards in prop_oneof![Just(2u32), Just(4)],
    ) {
        let spec = spec("I1=1K,2,32;D1=1K,2,32;LL=8K,4,64");
        let sharding = SetShards::new(&spec, shards).unwrap();
        let one = replayed(cachegrind_hierarchy(&spec).unwrap(), &records, true, None);
        let split = replayed(cachegrind_hierarchy(&spec).unwrap(), &records, true, Some(sharding));
        prop_assert_eq!(&one.0.cachegrind, &split.0.cachegrind);
        prop_assert_eq!(&one.0.levels, &split.0.levels);
        prop_assert_eq!(one.1, split.1);
    }
}

#[test]
fn a_long_trace_runs_on_the_threads_and_reports_progress_as_one_replay_does() {
    // Sequential 8-byte loads and stores over 1 MiB, 16 times (two progress reports): every
    // chunk is simulated side by side, none straddles a border.
    let records: Vec<TraceRecord> = (0..16u64)
        .flat_map(|_| (0..(1u64 << 20) / 8).map(|i| (i * 8, i % 3 == 0)))
        .map(|(addr, store)| TraceRecord {
            kind: if store {
                TraceKind::Store
            } else {
                TraceKind::Load
            },
            addr,
            size: 8,
        })
        .collect();
    let spec = spec("D1=32K,8,64;LL=256K,16,64");
    let sharding = SetShards::new(&spec, 2).unwrap();
    let ok = || records.iter().map(|r| Ok::<_, ()>(*r));
    let mut calls = (Vec::new(), Vec::new());
    let mut one = Hierarchy::new(&spec).unwrap();
    let expected = replay_with_progress(ok(), &mut one, false, |n| calls.0.push(n)).unwrap();
    let mut split = Hierarchy::new(&spec).unwrap();
    let got = replay_in_shards(ok(), &mut split, false, &sharding, |n| calls.1.push(n)).unwrap();
    assert_eq!(expected.levels, got.levels);
    assert_eq!(calls.0, calls.1);
    assert_eq!(calls.1.len(), 2, "{} records", records.len());
    // Every line of the 1 MiB misses once per pass in the 256 KiB LL.
    let ll = got.level("LL").unwrap();
    assert_eq!(ll.read_misses + ll.write_misses, 16 * 16384);
}

#[test]
fn a_trace_error_stops_the_sharded_replay_too() {
    let spec = spec("D1=32K,8,64;LL=1M,16,64");
    let sharding = SetShards::new(&spec, 2).unwrap();
    let trace = [
        Ok(TraceRecord {
            kind: TraceKind::Load,
            addr: 0,
            size: 4,
        }),
        Err("bad line 2"),
    ];
    let mut h = Hierarchy::new(&spec).unwrap();
    assert_eq!(
        replay_in_shards(trace, &mut h, false, &sharding, |_| {}).unwrap_err(),
        "bad line 2"
    );
}
