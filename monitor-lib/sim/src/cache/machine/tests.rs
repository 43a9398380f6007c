//! The machine against hand-computed lock-step streams (false sharing, true sharing, padding,
//! downgrades, groups, straddling accesses) and against the hierarchy on random streams.

use super::*;
use crate::cache::Hierarchy;
use AccessKind::{Read, Write};
use LevelResult::{Hit, Miss};

/// Private L1 and L2, an L3 all cores share, 64-byte lines.
const THREE_LEVELS: &str = "D1=1K,2,64;L2=4K,4,64;L3=64K,8,64,shared";

fn machine(spec: &str, cores: usize) -> Machine {
    Machine::new(&spec.parse().unwrap(), cores).unwrap()
}

/// The coherence bits of `level` in an outcome.
fn at(out: &CoreOutcome, level: usize) -> u8 {
    (out.coherence >> (8 * level)) as u8
}

const COHM_FSM: u8 = COHERENCE_MISS | FALSE_SHARING_MISS;
const COHM_TSM: u8 = COHERENCE_MISS | TRUE_SHARING_MISS;

/// Two cores take turns writing 8 bytes at `offsets[core]`, `rounds` times each.
fn ping_pong(m: &mut Machine, offsets: [u64; 2], rounds: usize) -> Vec<CoreOutcome> {
    let mut out = Vec::new();
    for _ in 0..rounds {
        for (core, offset) in offsets.iter().enumerate() {
            out.push(m.access(core, 0x1000 + offset, 8, Write));
        }
    }
    out
}

#[test]
fn adjacent_words_written_in_turn_are_false_sharing_after_both_first_misses() {
    let mut m = machine(THREE_LEVELS, 2);
    let out = ping_pong(&mut m, [0, 8], 100);
    // Core 0's first write is a cold miss everywhere; core 1's misses L1 and L2 cold, finds
    // the line in the shared L3, and invalidates core 0's copies.
    assert_eq!(out[0].coherence, 0);
    assert_eq!(out[0].outcome.levels[..3], [Miss, Miss, Miss]);
    assert_eq!(out[1].coherence, u32::from(INVALIDATION));
    assert_eq!(out[1].outcome.levels[..3], [Miss, Miss, Hit]);
    // From then on every write finds its copy gone from L1 and L2: a coherence miss at both,
    // false sharing (the other core wrote only the other word), and invalidates the other's.
    for (i, o) in out.iter().enumerate().skip(2) {
        assert_eq!(o.outcome.levels[..3], [Miss, Miss, Hit], "access {i}");
        assert_eq!(at(o, 0), COHM_FSM | INVALIDATION, "access {i}");
        assert_eq!(at(o, 1), COHM_FSM, "access {i}");
        assert_eq!(
            at(o, 2),
            0,
            "the shared level never loses the line: access {i}"
        );
    }
    let total = |f: fn(&CoherenceStats) -> u64| f(m.coherence_stats(0)) + f(m.coherence_stats(1));
    assert_eq!(total(|s| s.invalidations), 199);
    assert_eq!(total(|s| s.coherence_misses[0]), 198);
    assert_eq!(total(|s| s.false_sharing[0]), 198);
    assert_eq!(total(|s| s.false_sharing[1]), 198);
    assert_eq!(total(|s| s.true_sharing[0]), 0);
    assert_eq!(total(|s| s.coherence_misses[2]), 0);
    assert_eq!(m.level_stats(0).write_misses, 200);
    assert_eq!(m.level_stats(2).write_misses, 1);
}

#[test]
fn the_same_word_written_in_turn_is_true_sharing() {
    let mut m = machine(THREE_LEVELS, 2);
    let out = ping_pong(&mut m, [0, 0], 50);
    for (i, o) in out.iter().enumerate().skip(2) {
        assert_eq!(at(o, 0), COHM_TSM | INVALIDATION, "access {i}");
        assert_eq!(at(o, 1), COHM_TSM, "access {i}");
    }
    // Overlapping by one byte is enough.
    let mut m = machine(THREE_LEVELS, 2);
    let out = ping_pong(&mut m, [0, 7], 3);
    assert_eq!(at(&out[2], 0) & !INVALIDATION, COHM_TSM);
}

#[test]
fn counters_padded_to_a_line_each_share_nothing() {
    let mut m = machine(THREE_LEVELS, 2);
    let out = ping_pong(&mut m, [0, 64], 100);
    assert!(out.iter().all(|o| o.coherence == 0));
    assert_eq!(m.level_stats(0).write_misses, 2, "one cold miss per core");
    assert_eq!(m.coherence_stats(0).invalidations, 0);
}

#[test]
fn a_read_downgrades_the_writer_and_its_dirty_data_goes_to_the_shared_level() {
    let mut m = machine(THREE_LEVELS, 2);
    m.access(0, 0x1000, 8, Write);
    // Core 1 reads what core 0 holds modified: a cold miss (it never had the line), served
    // by L3, into which core 0's dirty copy is written back; core 0 keeps a clean copy.
    let read = m.access(1, 0x1000, 8, Read);
    assert_eq!(read.coherence, 0);
    assert_eq!(read.outcome.levels[..3], [Miss, Miss, Hit]);
    assert_eq!(m.level_stats(0).writebacks, 1);
    assert_eq!(m.coherence_stats(1).downgrades, 1);
    assert!(m.holds(0, 0, 0x1000) && m.holds(1, 0, 0x1000));
    // Core 0 writes again: it hits its clean (Shared) copy, and the upgrade invalidates core 1's.
    let write = m.access(0, 0x1000, 8, Write);
    assert_eq!(write.outcome.levels[0], Hit);
    assert_eq!(write.coherence, u32::from(INVALIDATION));
    assert!(!m.holds(1, 0, 0x1000) && !m.holds(1, 1, 0x1000));
    // Core 1 reads the word core 0 wrote: true sharing at L1 and L2.
    let again = m.access(1, 0x1000, 4, Read);
    assert_eq!(
        (at(&again, 0), at(&again, 1), at(&again, 2)),
        (COHM_TSM, COHM_TSM, 0)
    );
    // A further write by core 0 of a line nobody else holds now... core 1 does: invalidated.
    // Reads that hit never touch the directory and never count.
    assert_eq!(m.access(1, 0x1000, 4, Read).coherence, 0);
}

#[test]
fn an_exclusive_line_is_written_without_an_invalidation() {
    let mut m = machine(THREE_LEVELS, 2);
    // Core 0 reads, then writes, a line no other core has: the silent upgrade.
    assert_eq!(m.access(0, 0x2000, 8, Read).coherence, 0);
    assert_eq!(m.access(0, 0x2000, 8, Write).coherence, 0);
    // Core 1 once had a line it has since evicted: a write finds no copy, sends nothing.
    m.access(1, 0x4000, 8, Read);
    for i in 1..=64 {
        m.access(1, 0x4000 + i * 1024, 8, Read); // same L1 and L2 sets: evicts it
    }
    assert!(!m.holds(1, 0, 0x4000) && !m.holds(1, 1, 0x4000));
    assert_eq!(m.access(0, 0x4000, 8, Write).coherence, 0);
}

#[test]
fn groups_share_their_copy_and_lose_it_together() {
    // Four cores: L2 shared by pairs, L3 by all.
    let mut m = machine("D1=1K,2,64;L2=4K,4,64,shared=2;L3=64K,8,64,shared", 4);
    assert_eq!(
        (m.group_size(0), m.group_size(1), m.group_size(2)),
        (1, 2, 4)
    );
    m.access(0, 0x1000, 8, Write);
    // Core 1 shares core 0's L2: it misses L1 and finds the line in the pair's L2.
    let mate = m.access(1, 0x1000, 8, Read);
    assert_eq!(mate.outcome.levels[..2], [Miss, Hit]);
    // Core 2, of the other pair, writes: both cores of the first pair lose L1 and their L2.
    let far = m.access(2, 0x1000, 8, Write);
    assert_eq!(far.coherence, u32::from(INVALIDATION));
    assert_eq!(far.outcome.levels[..3], [Miss, Miss, Hit]);
    // Core 1 comes back first: coherence misses at L1 and L2 ...
    let back = m.access(1, 0x1000, 8, Read);
    assert_eq!((at(&back, 0), at(&back, 1)), (COHM_TSM, COHM_TSM));
    // ... and core 0 then finds the pair's L2 refilled: a coherence miss at L1 only.
    let second = m.access(0, 0x1000, 8, Read);
    assert_eq!(second.outcome.levels[..2], [Miss, Hit]);
    assert_eq!((at(&second, 0), at(&second, 1)), (COHM_TSM, 0));
}

#[test]
fn an_access_across_two_lines_deals_with_both() {
    let mut m = machine(THREE_LEVELS, 2);
    m.access(0, 0x1000, 8, Write);
    m.access(0, 0x1040, 8, Write);
    // Core 1 writes 16 bytes across the two lines, the bytes core 0 did not write.
    let wide = m.access(1, 0x1038, 16, Write);
    assert_eq!(wide.coherence, u32::from(INVALIDATION));
    // Core 0 writes its first word back: false sharing (core 1 wrote bytes 56..64 of that line).
    let own = m.access(0, 0x1000, 8, Write);
    assert_eq!(at(&own, 0) & !INVALIDATION, COHM_FSM);
    // Core 0 writes the second line's first bytes, which core 1 wrote too: true sharing.
    let shared = m.access(0, 0x1040, 4, Write);
    assert_eq!(at(&shared, 0) & !INVALIDATION, COHM_TSM);
}

#[test]
fn a_machine_needs_a_sensible_shape() {
    let spec: HierarchySpec = THREE_LEVELS.parse().unwrap();
    let e = Machine::new(&spec, 0).unwrap_err().to_string();
    assert!(e.contains("1 to 64 cores"), "{e}");
    assert!(Machine::new(&spec, 65).is_err());
    let mixed: HierarchySpec = "D1=1K,2,32;L2=4K,4,64".parse().unwrap();
    let e = Machine::new(&mixed, 2).unwrap_err().to_string();
    assert!(e.contains("one line size"), "{e}");
    // One core has no coherence to keep: any lines will do.
    assert!(Machine::new(&mixed, 1).is_ok());
    // Groups of three cores cannot share out four, but can two (a group is at most all).
    let threes: HierarchySpec = "D1=1K,2,64;L2=8K,4,64,shared=3".parse().unwrap();
    let e = Machine::new(&threes, 4).unwrap_err().to_string();
    assert!(
        e.contains("groups of 3 cores") && e.contains("4 cores"),
        "{e}"
    );
    assert!(Machine::new(&threes, 6).is_ok());
    assert!(Machine::new(&threes, 2).is_ok());
}

/// A random data stream over `span` bytes: mixed sizes (some straddling, some wider than a
/// line, a zero size) and about one write in three.
fn random_stream(seed: u64, len: usize, span: u64) -> Vec<(u64, u32, AccessKind)> {
    let mut x = seed;
    (0..len)
        .map(|_| {
            crate::test_rng::xorshift(&mut x);
            let size = [1, 4, 8, 8, 8, 16, 0, 100][(x >> 20) as usize % 8];
            let kind = if (x >> 30).is_multiple_of(3) {
                Write
            } else {
                Read
            };
            (x % span, size, kind)
        })
        .collect()
}

#[test]
fn one_core_counts_exactly_what_the_hierarchy_counts() {
    // Every policy the walk knows: packed and general stores, tree-PLRU, random, write-through
    // at each depth, inclusion (back-invalidation), mixed line sizes, one to four levels, and
    // sharing options, which mean nothing to one core.
    let specs = [
        "D1=1K,8,64",
        "D1=1K,8,64;L2=4K,16,64",
        "D1=1K,2,64;L2=2K,4,64,inclusive;LL=8K,16,64",
        "D1=2K,16,64;L2=4K,8,64,plru,shared",
        "D1=512,4,64,random;L2=4K,32,64,shared=2",
        "D1=1K,8,32;L2=4K,8,64;L3=16K,16,128,shared",
        "D1=1K,2,64,write-through;L2=4K,8,64",
        "D1=1K,2,64;L2=2K,4,64,write-through;L3=8K,8,64,inclusive,shared",
        "D1=768,4,64;L2=3K,4,64,inclusive;L3=6K,8,64,inclusive;L4=24K,8,64,shared",
        "D1=256,1,32;L2=1K,2,32,inclusive,shared",
    ];
    for (i, text) in specs.iter().enumerate() {
        let spec: HierarchySpec = text.parse().unwrap();
        let mut hierarchy = Hierarchy::new(&spec).unwrap();
        let mut m = Machine::new(&spec, 1).unwrap();
        for (n, &(addr, size, kind)) in random_stream(i as u64 + 3, 30_000, 12_000)
            .iter()
            .enumerate()
        {
            let expected = hierarchy.access(addr, size, kind);
            let got = m.access(0, addr, size, kind);
            assert_eq!(got.outcome, expected, "{text}: access {n}");
            assert_eq!(got.coherence, 0);
        }
        for level in 0..hierarchy.depth() {
            assert_eq!(
                m.level_stats(level),
                *hierarchy.level_stats(level),
                "{text}: level {level}"
            );
            let resident = |c: &CacheLevel| {
                let mut blocks: Vec<u64> = c.resident_blocks().collect();
                blocks.sort_unstable();
                blocks
            };
            assert_eq!(
                resident(&m.levels[level].copies[0]),
                resident(hierarchy.cache(level)),
                "{text}: level {level}"
            );
        }
    }
}

#[test]
fn cores_that_share_no_line_are_independent_hierarchies() {
    // All levels private, each core in its own address range: the machine is four hierarchies
    // side by side, and no coherence event ever happens.
    let spec: HierarchySpec = "D1=1K,2,64;L2=4K,4,64,inclusive;L3=16K,8,64"
        .parse()
        .unwrap();
    let mut m = Machine::new(&spec, 4).unwrap();
    let mut alone: Vec<Hierarchy> = (0..4).map(|_| Hierarchy::new(&spec).unwrap()).collect();
    let streams: Vec<_> = (0..4u64)
        .map(|core| random_stream(core + 11, 20_000, 10_000))
        .collect();
    for n in 0..20_000 {
        for (core, stream) in streams.iter().enumerate() {
            let (addr, size, kind) = stream[n];
            let addr = addr + (core as u64) * (1 << 20);
            let expected = alone[core].access(addr, size, kind);
            let got = m.access(core, addr, size, kind);
            assert_eq!(got.outcome, expected, "core {core}, access {n}");
            assert_eq!(got.coherence, 0);
        }
    }
    for (core, h) in alone.iter().enumerate() {
        for level in 0..3 {
            assert_eq!(m.core_stats(core, level), h.level_stats(level));
        }
    }
}

#[test]
fn shared_levels_see_every_core_and_the_totals_add_up() {
    // Two cores streaming through the same array share the L3: the second core finds in L3
    // what the first brought in, so the L3 misses are those of one core alone.
    let mut m = machine(THREE_LEVELS, 2);
    for i in 0..512u64 {
        m.access(0, i * 64, 8, Read);
    }
    for i in 0..512u64 {
        m.access(1, i * 64, 8, Read);
    }
    assert_eq!(m.core_stats(0, 2).read_misses, 512);
    assert_eq!(m.core_stats(1, 2).read_misses, 0);
    assert_eq!(m.core_stats(1, 2).reads, 512);
    assert_eq!(m.level_stats(2).reads, 1024);
    // Reads only: no coherence event.
    assert_eq!(*m.coherence_stats(0), CoherenceStats::default());
}

#[test]
fn first_level_hits_decide_exactly_as_the_directory_and_the_walk() {
    // Cores reading and writing a small shared range (so lines change hands, are downgraded,
    // invalidated and pending) and ranges of their own, with straddling accesses: the machine
    // that finishes its first-level hits early and walks a one-line access with one request a
    // level, and the one that always takes the general directory step and walk, give the same
    // outcomes, coherence events, totals and contents.
    for (spec, cores) in [
        (THREE_LEVELS, 2),
        (THREE_LEVELS, 4),
        ("D1=1K,8,64;L2=8K,8,64,shared=2", 4),
        ("D1=1K,2,64,write-through;L2=8K,8,64,shared", 2),
        ("D1=512,4,32;L2=4K,8,32,inclusive,shared", 3),
        // A write carried through two write-through levels into a shared third.
        (
            "D1=1K,4,64,write-through;L2=4K,8,64,write-through;L3=16K,8,64,shared",
            2,
        ),
    ] {
        let (mut fast, mut walked) = (machine(spec, cores), machine(spec, cores));
        walked.fast_hits = false;
        walked.line_walks = false;
        let streams: Vec<_> = (0..cores as u64)
            .map(|core| random_stream(core + 5, 30_000, 6_000))
            .collect();
        for n in 0..30_000 {
            for (core, stream) in streams.iter().enumerate() {
                let (addr, size, kind) = stream[n];
                // Half the accesses in a range of the core's own.
                let addr = if n % 2 == 0 {
                    addr
                } else {
                    addr + ((core as u64 + 1) << 20)
                };
                assert_eq!(
                    fast.access(core, addr, size, kind),
                    walked.access(core, addr, size, kind),
                    "{spec}, core {core}, access {n}"
                );
            }
        }
        for core in 0..cores {
            assert_eq!(
                fast.coherence_stats(core),
                walked.coherence_stats(core),
                "{spec}"
            );
            for level in 0..fast.depth() {
                assert_eq!(
                    fast.core_stats(core, level),
                    walked.core_stats(core, level),
                    "{spec}"
                );
            }
        }
        let coherence: u64 = (0..cores)
            .map(|c| fast.coherence_stats(c).invalidations)
            .sum();
        assert!(coherence > 500, "{spec}: {coherence} invalidations");
        for level in 0..fast.depth() {
            for (a, b) in fast.levels[level]
                .copies
                .iter()
                .zip(&walked.levels[level].copies)
            {
                let blocks = |c: &CacheLevel| {
                    let mut v: Vec<u64> = c.resident_blocks().collect();
                    v.sort_unstable();
                    v
                };
                assert_eq!(blocks(a), blocks(b), "{spec}, level {level}");
            }
        }
    }
}

#[test]
fn an_outcome_survives_its_event_bits() {
    // Every outcome a two-core machine with coherence gives on a random stream, plus the
    // extremes: `access_bits` gives the event bits of what `access` gives on a twin machine,
    // and the bits read back as the same outcome.
    let spec = "D1=1K,2,64;L2=2K,4,64;L3=8K,8,64,shared";
    let (mut whole, mut bits_only) = (machine(spec, 2), machine(spec, 2));
    let mut seen = std::collections::HashSet::new();
    for (n, &(addr, size, kind)) in random_stream(11, 20_000, 4_000).iter().enumerate() {
        let out = whole.access(n % 2, addr, size, kind);
        let bits = bits_only.access_bits(n % 2, addr, size, kind);
        assert_eq!(bits, out.event_bits(), "access {n}");
        assert_eq!(CoreOutcome::from_event_bits(bits), out, "access {n}");
        seen.insert(bits);
    }
    assert!(
        seen.len() > 10,
        "the stream gave only {} outcomes",
        seen.len()
    );
    for kind in [Read, Write] {
        let deepest = CoreOutcome {
            outcome: AccessOutcome {
                kind,
                levels: [Miss; MAX_LEVELS],
            },
            coherence: COHERENCE_BITS,
        };
        assert_eq!(CoreOutcome::from_event_bits(deepest.event_bits()), deepest);
    }
}
