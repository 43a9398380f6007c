//! Property tests of the counter array's promise: whatever the spills, a histogram's buckets equal a
//! naive per-bucket count and sum to the static count of the same range and event.

use epcache_sim::cache::{AccessKind, AccessOutcome, LevelResult, MAX_LEVELS};
use epcache_sim::monitor::{CounterArray, CounterArrayConfig, Event, SpillStats};
use epcache_sim::ranges::AddressRange;
use proptest::prelude::*;

/// Bucket widths as multiples of an 8-byte line, powers of two and not, so both index paths run.
const BUCKET_WIDTHS: &[u64] = &[8, 16, 24, 32, 48, 64, 96, 128];

#[derive(Debug, Clone)]
struct Access {
    addr: u64,
    outcome: AccessOutcome,
}

fn level_result() -> impl Strategy<Value = LevelResult> {
    prop_oneof![
        Just(LevelResult::NotReached),
        Just(LevelResult::Hit),
        Just(LevelResult::Miss),
    ]
}

fn outcome() -> impl Strategy<Value = AccessOutcome> {
    (
        prop_oneof![Just(AccessKind::Read), Just(AccessKind::Write)],
        prop::array::uniform4(level_result()),
    )
        .prop_map(|(kind, levels)| AccessOutcome { kind, levels })
}

/// A range in a window of memory the streams cover, unaligned to buckets on purpose.
fn range() -> impl Strategy<Value = AddressRange> {
    (0x1000u64..0x1100, 1u64..600).prop_map(|(start, len)| AddressRange::new(start, len))
}

/// Accesses around a range: offsets from its start spread over the whole window of generated
/// ranges (so some fall outside, below and above), and most of them on a few hot bytes near the
/// start so that narrow counters overflow.
fn stream(max_len: usize) -> impl Strategy<Value = Vec<(i64, AccessOutcome)>> {
    let offset = prop_oneof![
        1 => -64i64..0x100 + 600 + 64,
        3 => prop::sample::select(vec![0i64, 1, 8, 40]),
    ];
    prop::collection::vec((offset, outcome()), 0..max_len)
}

/// The stream placed at `base`.
fn placed(stream: &[(i64, AccessOutcome)], base: u64) -> Vec<Access> {
    stream
        .iter()
        .map(|&(offset, outcome)| Access {
            addr: base.wrapping_add_signed(offset),
            outcome,
        })
        .collect()
}

/// Counter widths from 8 to 16 bits, mostly 8 so that overflows are common.
fn counter_bits() -> impl Strategy<Value = u32> {
    prop_oneof![3 => Just(8u32), 1 => 9u32..=16]
}

fn every_event() -> Vec<Event> {
    Event::all(MAX_LEVELS)
}

fn naive_buckets(accesses: &[Access], range: AddressRange, event: Event, width: u64) -> Vec<u64> {
    let mut buckets = vec![0; range.len().div_ceil(width) as usize];
    for a in accesses {
        if a.addr >= range.start && a.addr < range.end && event.matches(&a.outcome) {
            buckets[((a.addr - range.start) / width) as usize] += 1;
        }
    }
    buckets
}

fn config(counters: usize, counter_bits: u32) -> CounterArrayConfig {
    CounterArrayConfig {
        counters,
        counter_bits,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// One event at a time, a static counter beside a histogram with a pool of 1 to 8 counters.
    #[test]
    fn histograms_equal_the_static_count_and_the_naive_count_for_every_event(
        stream in stream(1000),
        range in range(),
        width in prop::sample::select(BUCKET_WIDTHS),
        pool in 1usize..=8,
        counter_bits in counter_bits(),
    ) {
        let accesses = placed(&stream, range.start);
        for event in every_event() {
            let mut array = CounterArray::new(config(pool + 1, counter_bits)).unwrap();
            let stat = array.bind_static(range, event).unwrap();
            let hist = array.bind_histogram(range, event, width).unwrap();
            prop_assert_eq!(array.dynamic_counters(), pool);
            let half = accesses.len() / 2;
            for a in &accesses[..half] {
                array.observe(a.addr, &a.outcome);
            }
            // Reading mid-stream must not disturb anything, and must already balance.
            let partial = array.read_histogram(hist).unwrap();
            prop_assert_eq!(partial.total(), array.read_static(stat).unwrap());
            prop_assert_eq!(&partial.buckets, &naive_buckets(&accesses[..half], range, event, width));
            for a in &accesses[half..] {
                array.observe(a.addr, &a.outcome);
            }
            let expected = naive_buckets(&accesses, range, event, width);
            let histogram = array.read_histogram(hist).unwrap();
            prop_assert_eq!(&histogram.buckets, &expected, "event {}", event);
            prop_assert_eq!(array.read_static(stat).unwrap(), expected.iter().sum::<u64>());
            prop_assert_eq!(histogram.total(), array.read_static(stat).unwrap());
            // Only one histogram: every eviction is charged to it.
            prop_assert_eq!(histogram.spills.evictions, array.spills().evictions);
            let touched = expected.iter().filter(|&&n| n > 0).count();
            if touched <= pool {
                prop_assert_eq!(histogram.spills.evictions, 0, "{} buckets fit {} counters", touched, pool);
            }
            // No counter can reach 2^bits without that many increments; an unevicted one must.
            let hottest = expected.iter().copied().max().unwrap_or(0);
            if hottest >> counter_bits == 0 {
                prop_assert_eq!(histogram.spills.overflows, 0);
            } else if histogram.spills.evictions == 0 {
                prop_assert!(histogram.spills.overflows > 0, "{} increments in {} bits", hottest, counter_bits);
            }
        }
    }

    /// Several histograms and static counters competing for one small pool.
    #[test]
    fn histograms_sharing_a_pool_each_equal_their_naive_count(
        stream in stream(800),
        bindings in prop::collection::vec(
            (range(), prop::sample::select(every_event()), prop::sample::select(BUCKET_WIDTHS)),
            1..5,
        ),
        pool in 1usize..=8,
        counter_bits in counter_bits(),
    ) {
        let accesses = placed(&stream, 0x1000);
        let mut array = CounterArray::new(config(bindings.len() + pool, counter_bits)).unwrap();
        let ids: Vec<_> = bindings
            .iter()
            .map(|&(range, event, width)| {
                let stat = array.bind_static(range, event).unwrap();
                let hist = array.bind_histogram(range, event, width).unwrap();
                (stat, hist)
            })
            .collect();
        prop_assert_eq!(array.dynamic_counters(), pool);
        for a in &accesses {
            array.observe(a.addr, &a.outcome);
        }
        let mut charged = SpillStats::default();
        for (&(range, event, width), &(stat, hist)) in bindings.iter().zip(&ids) {
            let histogram = array.read_histogram(hist).unwrap();
            prop_assert_eq!(&histogram.buckets, &naive_buckets(&accesses, range, event, width));
            prop_assert_eq!(histogram.total(), array.read_static(stat).unwrap());
            charged.evictions += histogram.spills.evictions;
            charged.overflows += histogram.spills.overflows;
        }
        prop_assert_eq!(charged.evictions, array.spills().evictions);
        prop_assert!(charged.overflows <= array.spills().overflows);
    }

    /// A reset in the middle of a stream counts exactly what follows it, with the same bindings.
    #[test]
    fn after_a_reset_only_later_accesses_count(
        before in stream(400),
        after in stream(400),
        range in range(),
        event in prop::sample::select(every_event()),
        width in prop::sample::select(BUCKET_WIDTHS),
        pool in 1usize..=8,
    ) {
        let (before, after) = (placed(&before, range.start), placed(&after, range.start));
        let mut array = CounterArray::new(config(pool + 1, 8)).unwrap();
        let stat = array.bind_static(range, event).unwrap();
        let hist = array.bind_histogram(range, event, width).unwrap();
        for a in &before {
            array.observe(a.addr, &a.outcome);
        }
        array.reset();
        prop_assert_eq!(array.spills(), SpillStats::default());
        for a in &after {
            array.observe(a.addr, &a.outcome);
        }
        let expected = naive_buckets(&after, range, event, width);
        prop_assert_eq!(&array.read_histogram(hist).unwrap().buckets, &expected);
        prop_assert_eq!(array.read_static(stat).unwrap(), expected.iter().sum::<u64>());
    }
}
