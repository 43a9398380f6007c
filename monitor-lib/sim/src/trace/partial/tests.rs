//! The partial trace format's tests: round trips of any stream (proptest), constant size for
//! regular loop nests, compact raw remainders, hand-built files as documented, and errors.

use std::collections::BTreeMap;

use proptest::prelude::*;

use super::*;

fn encode(accesses: &[PartialAccess]) -> Vec<u8> {
    let mut writer = PartialWriter::new(Vec::new()).unwrap();
    for a in accesses {
        writer.record(a).unwrap();
    }
    writer.finish().unwrap()
}

/// A version 4 file of `header` and `records`, each followed by its checksum as a writer
/// seals it.
fn sealed(header: &[u8], records: &[&[u8]]) -> Vec<u8> {
    let start = crc32fast::hash(header);
    let mut file = header.to_vec();
    for record in records {
        file.extend_from_slice(record);
        file.extend_from_slice(&record_checksum(start, &[record]));
    }
    file
}

fn decode(bytes: &[u8]) -> Result<Vec<PartialAccess>, PartialError> {
    let trace = PartialTrace::parse(bytes.to_vec())?;
    trace.threads().iter().flat_map(|t| t.accesses()).collect()
}

fn load(site: u64, addr: u64) -> PartialAccess {
    PartialAccess {
        site,
        kind: TraceKind::Load,
        addr,
        size: 8,
    }
}

fn store(site: u64, addr: u64) -> PartialAccess {
    PartialAccess {
        kind: TraceKind::Store,
        ..load(site, addr)
    }
}

/// `C[i][j] += A[i][k] * B[k][j]` over `n x n` doubles, C loaded and stored in the k loop.
fn matmul(n: u64) -> Vec<PartialAccess> {
    let (a, b, c) = (0x10_0000u64, 0x20_0000u64, 0x30_0000u64);
    let mut out = Vec::new();
    for i in 0..n {
        for j in 0..n {
            for k in 0..n {
                out.push(load(0x401000, a + 8 * (i * n + k)));
                out.push(load(0x401004, b + 8 * (k * n + j)));
                out.push(load(0x401008, c + 8 * (i * n + j)));
                out.push(store(0x40100c, c + 8 * (i * n + j)));
            }
        }
    }
    out
}

/// A five-point Jacobi sweep over the interior of an `n x n` grid, `steps` times.
fn stencil(n: u64, steps: u64) -> Vec<PartialAccess> {
    let (src, dst) = (0x50_0000u64, 0x90_0000u64);
    let at = |base: u64, i: u64, j: u64| base + 8 * (i * n + j);
    let mut out = Vec::new();
    for _ in 0..steps {
        for i in 1..n - 1 {
            for j in 1..n - 1 {
                out.push(load(0x402000, at(src, i - 1, j)));
                out.push(load(0x402004, at(src, i + 1, j)));
                out.push(load(0x402008, at(src, i, j - 1)));
                out.push(load(0x40200c, at(src, i, j + 1)));
                out.push(store(0x402010, at(dst, i, j)));
            }
        }
    }
    out
}

fn xorshift(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

#[test]
fn a_loop_is_one_rsd_per_site() {
    let accesses: Vec<_> = (0..1000)
        .flat_map(|i| [load(0x10, 0x1000 + 8 * i), store(0x14, 0x9000 + 4 * i)])
        .collect();
    let bytes = encode(&accesses);
    let trace = PartialTrace::parse(bytes.clone()).unwrap();
    let stats = trace.stats();
    assert_eq!(
        (
            stats.descriptors,
            stats.described_accesses,
            stats.raw_accesses
        ),
        (2, 2000, 0)
    );
    assert_eq!(
        trace.threads()[0].descriptors[0].dims,
        [Dim {
            count: 1000,
            seq_stride: 2,
            addr_stride: 8
        }]
    );
    assert_eq!(decode(&bytes).unwrap(), accesses);
}

#[test]
fn hand_built_trace_decodes_as_documented() {
    let mut bytes = PARTIAL_MAGIC.to_vec();
    bytes.extend_from_slice(&1u32.to_le_bytes());
    bytes.extend_from_slice(&0u32.to_le_bytes());
    // Stream 0: loads of 4 bytes at site 0x10.
    bytes.extend_from_slice(&[TAG_STREAM, 0x10, 1, 4]);
    // Three accesses at seq 0, 2, 4 and addresses 0x100, 0x104, 0x108.
    bytes.extend_from_slice(&[TAG_DESC, 0, 1, 0, 0x80, 0x02, 3, 2, 8]);
    // Stream 1: stores of 8 bytes at site 0x20.
    bytes.extend_from_slice(&[TAG_STREAM, 0x20, 2, 8]);
    // Raw: seq 1 at 0x40; then seq 3 at 0x30: the delta 2 is not the predicted 1, so the flag
    // is clear (zigzag(-16) = 31 -> 62) and the delta follows; then seq 5 at 0x38, the delta
    // predicted this time (zigzag(8) = 16 -> 33).
    bytes.extend_from_slice(&[TAG_RAW, 1, 3, 1, 0x40, 62, 2, 33]);
    bytes.extend_from_slice(&[TAG_SITE, 0x10, 3, b'a', b'.', b'c', 7, 1, b'f', 1, b'x']);
    bytes.extend_from_slice(&[TAG_END, 6, 1, 3]);
    let got = decode(&bytes).unwrap();
    let st = |addr| PartialAccess {
        site: 0x20,
        kind: TraceKind::Store,
        addr,
        size: 8,
    };
    let ld = |addr| PartialAccess {
        site: 0x10,
        kind: TraceKind::Load,
        addr,
        size: 4,
    };
    assert_eq!(
        got,
        [
            ld(0x100),
            st(0x40),
            ld(0x104),
            st(0x30),
            ld(0x108),
            st(0x38)
        ]
    );
    let trace = PartialTrace::parse(bytes).unwrap();
    assert_eq!(trace.sites()[&0x10].structure, "x");
    assert_eq!(trace.sites()[&0x10].line, 7);
}

#[test]
fn matrix_multiply_takes_constant_space_per_site() {
    let mut sizes = Vec::new();
    for n in [8, 16, 32, 48] {
        let accesses = matmul(n);
        let bytes = encode(&accesses);
        let trace = PartialTrace::parse(bytes.clone()).unwrap();
        let stats = trace.stats();
        assert_eq!(stats.descriptors, 4, "n = {n}: one descriptor per site");
        assert_eq!(stats.raw_accesses, 0, "n = {n}");
        assert_eq!(decode(&bytes).unwrap(), accesses, "n = {n}");
        sizes.push(bytes.len());
    }
    // Only the varint widths of the counts and strides grow.
    assert!(
        sizes.iter().max().unwrap() - sizes.iter().min().unwrap() <= 24,
        "{sizes:?}"
    );
    assert!(sizes[3] < 200, "{sizes:?}");
}

#[test]
fn stencil_sweeps_take_constant_space_per_site() {
    let mut sizes = Vec::new();
    for (n, steps) in [(10, 2), (40, 5), (100, 9)] {
        let accesses = stencil(n, steps);
        let bytes = encode(&accesses);
        let stats = PartialTrace::parse(bytes.clone()).unwrap().stats();
        assert_eq!(
            (stats.descriptors, stats.raw_accesses),
            (5, 0),
            "{n} {steps}"
        );
        assert_eq!(decode(&bytes).unwrap(), accesses);
        sizes.push(bytes.len());
    }
    assert!(sizes[2] - sizes[0] <= 30, "{sizes:?}");
}

#[test]
fn random_gathers_stay_raw_and_compact() {
    // y[i] = x[idx[i]]: idx and y are regular, the gather is random within 1 MB.
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut accesses = Vec::new();
    for i in 0..50_000u64 {
        accesses.push(load(0x10, 0x10_0000 + 4 * i));
        accesses.push(load(
            0x14,
            0x80_0000 + 8 * (xorshift(&mut state) % (1 << 17)),
        ));
        accesses.push(store(0x18, 0x40_0000 + 8 * i));
    }
    let bytes = encode(&accesses);
    let stats = PartialTrace::parse(bytes.clone()).unwrap().stats();
    assert_eq!(stats.described_accesses, 100_000);
    assert_eq!(stats.raw_accesses, 50_000);
    // Three bytes of address delta (17 random bits, zigzag and the flag) per gathered access.
    assert!(bytes.len() < 50_000 * 4, "{} bytes", bytes.len());
    assert_eq!(decode(&bytes).unwrap(), accesses);
}

#[test]
fn closed_descriptors_are_written_while_recording() {
    let mut state = 7u64;
    let mut writer = PartialWriter::new(Vec::new()).unwrap();
    for _ in 0..200_000 {
        writer
            .record(&load(0x10, xorshift(&mut state) % (1 << 30)))
            .unwrap();
    }
    let written = writer.bytes();
    let total = writer.finish().unwrap().len() as u64;
    // All but the last raw block is out before finish.
    assert!(
        total - written < 4 * RAW_BLOCK as u64 * 2,
        "{written} of {total}"
    );
}

#[test]
fn header_and_record_errors_are_typed() {
    assert!(matches!(decode(b""), Err(PartialError::BadMagic { .. })));
    assert!(matches!(
        decode(b"\x89EPCT\r\n\x1a"),
        Err(PartialError::BadMagic { .. })
    ));
    let good = encode(&matmul(3));
    let mut newer = good.clone();
    newer[8] = PARTIAL_VERSION as u8 + 1;
    assert!(matches!(
        decode(&newer),
        Err(PartialError::UnsupportedVersion { found }) if found == PARTIAL_VERSION + 1
    ));
    let unfinished = PartialTrace::parse(good[..good.len() - 4].to_vec()).unwrap();
    assert!(unfinished.never_finished().is_some());
    let mut trailing = good.clone();
    trailing.push(0);
    assert!(matches!(
        decode(&trailing),
        Err(PartialError::BadRecord { .. })
    ));
}

#[test]
fn overlapping_descriptors_are_caught_on_replay() {
    let mut bytes = PARTIAL_MAGIC.to_vec();
    bytes.extend_from_slice(&1u32.to_le_bytes());
    bytes.extend_from_slice(&0u32.to_le_bytes());
    bytes.extend_from_slice(&[TAG_STREAM, 0x10, 1, 4]);
    // seq 0, 1, 2 and seq 2, 3, 4: six elements, one duplicate, one missing (5).
    bytes.extend_from_slice(&[TAG_DESC, 0, 1, 0, 0, 3, 1, 8]);
    bytes.extend_from_slice(&[TAG_DESC, 0, 1, 2, 0, 3, 1, 8]);
    bytes.extend_from_slice(&[TAG_END, 6, 2, 0]);
    let err = decode(&bytes).unwrap_err();
    assert!(
        matches!(
            err,
            PartialError::BadOrder {
                seq: 3,
                why: "covered twice"
            }
        ),
        "{err}"
    );
}

fn any_kind() -> impl Strategy<Value = TraceKind> {
    prop_oneof![
        Just(TraceKind::Load),
        Just(TraceKind::Store),
        Just(TraceKind::Modify),
    ]
}

fn any_access() -> impl Strategy<Value = PartialAccess> {
    let addr = prop_oneof![any::<u64>(), 0x1000u64..0x1100, Just(u64::MAX), Just(0)];
    (
        0u64..4,
        any_kind(),
        addr,
        prop_oneof![Just(8u32), 1u32..=64],
    )
        .prop_map(|(site, kind, addr, size)| PartialAccess {
            site,
            kind,
            addr,
            size,
        })
}

/// A loop nest of up to three levels whose body is a few sites with strides, as a flat stream,
/// with some accesses of the body skipped (a branch) so regular and irregular parts mix.
fn loop_nest() -> impl Strategy<Value = Vec<PartialAccess>> {
    (
        proptest::collection::vec(1u64..6, 1..=3),
        proptest::collection::vec((0u64..6, any::<i16>(), any::<i16>()), 1..4),
        any::<u64>(),
        0u64..8,
    )
        .prop_map(|(counts, body, base, skip_every)| {
            let mut out = Vec::new();
            let total: u64 = counts.iter().product();
            for flat in 0..total {
                let (mut rest, mut index) = (flat, Vec::new());
                for &c in &counts {
                    index.push(rest % c);
                    rest /= c;
                }
                for (n, &(site, inner, outer)) in body.iter().enumerate() {
                    if skip_every > 1 && (flat + n as u64).is_multiple_of(skip_every) {
                        continue;
                    }
                    let addr = base
                        .wrapping_add((index[0] as i64 * i64::from(inner)) as u64)
                        .wrapping_add(
                            (index.iter().skip(1).sum::<u64>() as i64 * i64::from(outer)) as u64,
                        );
                    out.push(load(site, addr));
                }
            }
            out
        })
}

proptest! {
    #[test]
    fn any_access_stream_round_trips(accesses in proptest::collection::vec(any_access(), 0..400)) {
        prop_assert_eq!(decode(&encode(&accesses)).unwrap(), accesses);
    }

    #[test]
    fn loop_nests_round_trip(nests in proptest::collection::vec(loop_nest(), 1..4),
                             noise in proptest::collection::vec(any_access(), 0..20)) {
        let mut accesses: Vec<_> = nests.into_iter().flatten().collect();
        for (i, a) in noise.into_iter().enumerate() {
            let at = (i * 37) % (accesses.len() + 1);
            accesses.insert(at, a);
        }
        prop_assert_eq!(decode(&encode(&accesses)).unwrap(), accesses);
    }

    #[test]
    fn every_truncation_is_said(accesses in proptest::collection::vec(any_access(), 1..30)) {
        let bytes = encode(&accesses);
        for cut in 0..PARTIAL_HEADER_LEN {
            prop_assert!(decode(&bytes[..cut]).is_err(), "cut at {}", cut);
        }
        // One body: a cut loses it, unless only the file's END is cut.
        for cut in PARTIAL_HEADER_LEN..bytes.len() {
            let trace = PartialTrace::parse(bytes[..cut].to_vec()).unwrap();
            prop_assert!(trace.never_finished().is_some(), "cut at {}", cut);
            let kept = decode(&bytes[..cut]).unwrap();
            prop_assert!(kept.is_empty() || kept == accesses, "cut at {}", cut);
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic(tail in proptest::collection::vec(any::<u8>(), 0..200)) {
        let mut bytes = PARTIAL_MAGIC.to_vec();
        bytes.extend_from_slice(&1u32.to_le_bytes());
        bytes.extend_from_slice(&0u32.to_le_bytes());
        bytes.extend_from_slice(&tail);
        let _ = decode(&bytes);
    }

    /// Version 2's chunks with arbitrary bytes inside (as a thread's records) and around them.
    #[test]
    fn arbitrary_chunks_never_panic(
        chunks in proptest::collection::vec(
            (0u64..4, proptest::collection::vec(any::<u8>(), 1..60)), 0..6),
        tail in proptest::collection::vec(any::<u8>(), 0..20),
    ) {
        let mut file = TraceFile::new(Vec::new(), true).unwrap();
        for (thread, bytes) in &chunks {
            file.chunk(*thread, bytes).unwrap();
        }
        let mut bytes = file.finish(&BTreeMap::new(), &[]).unwrap();
        let _ = decode(&bytes);
        bytes.extend_from_slice(&tail);
        let _ = decode(&bytes);
    }

    /// Two threads' traces, chunked at random points and interleaved, read back apart.
    #[test]
    fn threads_round_trip_whatever_the_chunking(
        a in proptest::collection::vec(any_access(), 1..200),
        b in proptest::collection::vec(any_access(), 1..200),
        cuts in proptest::collection::vec(1usize..40, 1..20),
    ) {
        let (ta, tb) = (thread_bytes(&a, &[], &[]), thread_bytes(&b, &[], &[]));
        let mut file = TraceFile::new(Vec::new(), false).unwrap();
        let (mut pa, mut pb) = (&ta[..], &tb[..]);
        for (i, &cut) in cuts.iter().cycle().enumerate() {
            if pa.is_empty() && pb.is_empty() {
                break;
            }
            let (thread, rest) = if i % 2 == 0 { (1, &mut pa) } else { (5, &mut pb) };
            let n = cut.min(rest.len());
            file.chunk(thread, &rest[..n]).unwrap();
            *rest = &rest[n..];
        }
        let trace = PartialTrace::parse(file.finish(&BTreeMap::new(), &[]).unwrap()).unwrap();
        let got = |t: &ThreadTrace| t.accesses().collect::<Result<Vec<_>, _>>().unwrap();
        prop_assert_eq!(trace.threads().len(), 2);
        prop_assert_eq!(got(&trace.threads()[0]), a);
        prop_assert_eq!(got(&trace.threads()[1]), b);
    }
}

#[test]
fn marks_round_trip_and_must_alternate() {
    let mut w = PartialWriter::new(Vec::new()).unwrap();
    w.mark(Mark::End); // before any begin: nothing to end
    w.record(&load(1, 0x10)).unwrap();
    w.mark(Mark::Begin);
    w.mark(Mark::Begin); // repeated: ignored
    w.record(&load(1, 0x18)).unwrap();
    w.mark(Mark::End);
    w.record(&load(1, 0x20)).unwrap();
    let trace = PartialTrace::parse(w.finish().unwrap()).unwrap();
    let thread = &trace.threads()[0];
    assert_eq!(thread.marks(), [(1, Mark::Begin), (2, Mark::End)]);
    let mut spans = thread.counted_spans();
    assert_eq!([0, 1, 2].map(|s| spans.counts(s)), [false, true, false]);
    assert_eq!(thread.counted_accesses(), 1);
    assert!(
        CountedSpans::new(&[], false).counts(5),
        "no marks: everything counts"
    );
    assert!(
        !CountedSpans::new(&[], true).counts(5),
        "no marks in a marked trace: nothing counts"
    );

    let mut bytes = PARTIAL_MAGIC.to_vec();
    bytes.extend_from_slice(&1u32.to_le_bytes());
    bytes.extend_from_slice(&0u32.to_le_bytes());
    bytes.extend_from_slice(&[TAG_STREAM, 0x10, 1, 4, TAG_RAW, 0, 1, 0, 0]);
    let mut end_first = bytes.clone();
    end_first.extend_from_slice(&[TAG_MARK, 0, 2, TAG_END, 1, 0, 1]);
    assert!(matches!(
        decode(&end_first),
        Err(PartialError::BadRecord { .. })
    ));
    let mut beyond = bytes.clone();
    beyond.extend_from_slice(&[TAG_MARK, 5, 1, TAG_END, 1, 0, 1]);
    assert!(matches!(
        decode(&beyond),
        Err(PartialError::BadRecord { .. })
    ));
}

/// Thread `id`'s body records for `accesses`, with a body ended after each of `ends` accesses
/// and the instances `spans` marked (as the runtime's recording threads write them).
fn thread_bytes(accesses: &[PartialAccess], spans: &[(u64, u64)], ends: &[u64]) -> Vec<u8> {
    let mut w = ThreadWriter::new(Vec::new());
    for (i, a) in accesses.iter().enumerate() {
        let i = i as u64;
        if spans.iter().any(|&(_, e)| e == i) {
            w.mark(Mark::End);
        }
        if ends.contains(&i) {
            w.end_body().unwrap();
        }
        if spans.iter().any(|&(b, _)| b == i) {
            w.mark(Mark::Begin);
        }
        w.record(a).unwrap();
    }
    w.finish().unwrap()
}

#[test]
fn threads_written_in_interleaved_chunks_read_back_apart() {
    let a = matmul(6);
    let mut state = 3u64;
    let b: Vec<_> = (0..3000)
        .map(|_| load(0x30, xorshift(&mut state) % (1 << 20)))
        .collect();
    // Thread 0 one body; thread 7 a body ended at each of its instances' ends.
    let bytes_a = thread_bytes(&a, &[(10, 50)], &[]);
    let bytes_b = thread_bytes(&b, &[(100, 900), (1000, 2000)], &[900, 2000]);
    let mut file = TraceFile::new(Vec::new(), true).unwrap();
    // Pieces of 7 and 5 bytes by turns: chunk boundaries fall inside records.
    let (mut pa, mut pb) = (bytes_a.chunks(7), bytes_b.chunks(5));
    loop {
        let (x, y) = (pa.next(), pb.next());
        if x.is_none() && y.is_none() {
            break;
        }
        file.chunk(0, x.unwrap_or(&[])).unwrap();
        file.chunk(7, y.unwrap_or(&[])).unwrap();
    }
    let trace = PartialTrace::parse(file.finish(&BTreeMap::new(), &[]).unwrap()).unwrap();
    let threads = trace.threads();
    assert_eq!(
        threads.iter().map(ThreadTrace::id).collect::<Vec<_>>(),
        [0, 7]
    );
    let got = |t: &ThreadTrace| t.accesses().collect::<Result<Vec<_>, _>>().unwrap();
    assert_eq!(got(&threads[0]), a);
    assert_eq!(got(&threads[1]), b);
    assert_eq!(threads[0].marks(), [(10, Mark::Begin), (50, Mark::End)]);
    assert_eq!(
        threads[1].marks(),
        [
            (100, Mark::Begin),
            (900, Mark::End),
            (1000, Mark::Begin),
            (2000, Mark::End)
        ]
    );
    assert!(trace.unfinished_threads().is_empty());
    assert_eq!(trace.stats().accesses, (a.len() + b.len()) as u64);
}

#[test]
fn a_body_ended_inside_a_span_goes_on_counting_in_the_next() {
    let a = matmul(4);
    let bytes = thread_bytes(&a, &[(5, 40)], &[20]);
    let mut file = TraceFile::new(Vec::new(), true).unwrap();
    file.chunk(0, &bytes).unwrap();
    let trace = PartialTrace::parse(file.finish(&BTreeMap::new(), &[]).unwrap()).unwrap();
    let thread = &trace.threads()[0];
    let mut spans = thread.counted_spans();
    let counted: Vec<u64> = (0..a.len() as u64).filter(|&s| spans.counts(s)).collect();
    assert_eq!(counted, (5..40).collect::<Vec<_>>());
}

#[test]
fn a_thread_whose_last_body_never_ended_keeps_the_bodies_before_it() {
    let a = matmul(5);
    let whole = thread_bytes(&a, &[(0, 100), (150, 200), (250, 300)], &[100, 200]);
    // Cut the thread's bytes inside its last body (after the second END), as a thread that
    // was never finished leaves them; the file itself is finished.
    let first_two = {
        let mut w = ThreadWriter::new(Vec::new());
        for (i, x) in a.iter().enumerate().take(200) {
            match i {
                0 | 150 => w.mark(Mark::Begin),
                100 => {
                    w.mark(Mark::End);
                    w.end_body().unwrap();
                }
                _ => {}
            }
            w.record(x).unwrap();
        }
        w.mark(Mark::End);
        w.finish().unwrap()
    };
    assert!(whole.starts_with(&first_two));
    // Cut before the last body's begin mark, nothing counted is lost; after it, its span is.
    for (cut, lost) in [(first_two.len() + 1, false), (whole.len() - 3, true)] {
        let mut file = TraceFile::new(Vec::new(), true).unwrap();
        file.chunk(3, &whole[..cut]).unwrap();
        let trace = PartialTrace::parse(file.finish(&BTreeMap::new(), &[]).unwrap()).unwrap();
        let expected: &[u64] = if lost { &[3] } else { &[] };
        assert_eq!(trace.unfinished_threads(), expected, "cut at {cut}");
        let thread = &trace.threads()[0];
        let got: Vec<_> = thread.accesses().collect::<Result<_, _>>().unwrap();
        assert_eq!(got, a[..200]);
        assert_eq!(
            thread.marks(),
            [
                (0, Mark::Begin),
                (100, Mark::End),
                (150, Mark::Begin),
                (200, Mark::End)
            ]
        );
    }
}

/// A file whose writer was killed: cut anywhere after its header, it reads as never finished,
/// with the bodies that reached the file whole, and never as an error or a panic.
#[test]
fn a_file_cut_anywhere_keeps_the_bodies_its_threads_ended() {
    let a = matmul(5);
    let body_ends = [100u64, 200];
    let whole = thread_bytes(&a, &[(0, 100), (150, 200), (250, 300)], &body_ends);
    let mut file = TraceFile::new(Vec::new(), true).unwrap();
    // Two chunks of the thread, as a recorder hands them over.
    let half = whole.len() / 2;
    file.chunk(3, &whole[..half]).unwrap();
    file.chunk(3, &whole[half..]).unwrap();
    let bytes = file.finish(&BTreeMap::new(), &[]).unwrap();
    let finished = PartialTrace::parse(bytes.clone()).unwrap();
    assert_eq!(finished.never_finished(), None);
    let all = finished.threads()[0].stats().accesses;
    for cut in PARTIAL_HEADER_LEN..bytes.len() {
        let trace = PartialTrace::parse(bytes[..cut].to_vec())
            .unwrap_or_else(|e| panic!("cut at {cut}: {e}"));
        assert!(trace.never_finished().is_some(), "cut at {cut}");
        let kept = trace.threads().first().map_or(0, |t| t.stats().accesses);
        assert!(
            kept == 0 || body_ends.contains(&kept) || kept == all,
            "cut at {cut}: {kept} accesses, not a whole number of bodies"
        );
        if let Some(thread) = trace.threads().first() {
            let got: Vec<_> = thread.accesses().collect::<Result<_, _>>().unwrap();
            assert_eq!(got, a[..kept as usize], "cut at {cut}");
        }
    }
    // Only the END missing: every body is there.
    let without_end = PartialTrace::parse(bytes[..bytes.len() - 2].to_vec()).unwrap();
    assert_eq!(without_end.threads()[0].stats().accesses, all);
    assert!(without_end.unfinished_threads().is_empty());
}

/// A body ended inside an instance (a long instance's safe point) is the last the file holds
/// when the writer is killed: its part of the instance counts, and the thread is said to be
/// cut. In a finished file the same body (an instance going on at exit) is no cut.
#[test]
fn a_killed_file_whose_last_body_ends_inside_an_instance_says_the_thread_was_cut() {
    let a = matmul(4);
    let mut w = ThreadWriter::new(Vec::new());
    w.mark(Mark::Begin);
    for x in &a[..60] {
        w.record(x).unwrap();
    }
    w.end_body().unwrap();
    let mut file = TraceFile::new(Vec::new(), true).unwrap();
    file.chunk(5, w.sink_mut()).unwrap();
    let bytes = file.finish(&BTreeMap::new(), &[]).unwrap();
    let killed = PartialTrace::parse(bytes[..bytes.len() - 2].to_vec()).unwrap();
    assert_eq!(killed.unfinished_threads(), [5]);
    assert_eq!(killed.threads()[0].counted_accesses(), 60);
    let finished = PartialTrace::parse(bytes).unwrap();
    assert!(finished.unfinished_threads().is_empty());
    assert_eq!(finished.threads()[0].counted_accesses(), 60);
}

/// Sites described between chunks (a recorder's hand-overs) are read whether or not the file
/// was finished, with those the end describes; a site described twice is a bad record.
#[test]
fn sites_described_along_the_way_survive_a_kill() {
    let site = |line| SiteInfo {
        file: "k.c".into(),
        line,
        function: "sweep".into(),
        structure: "a".into(),
    };
    let mut file = TraceFile::new(Vec::new(), true).unwrap();
    file.chunk(0, &thread_bytes(&matmul(3), &[(0, 10)], &[]))
        .unwrap();
    file.site(0x40_1000, &site(9)).unwrap();
    let handed_over = file.bytes() as usize;
    let at_end = BTreeMap::from([(0x40_1008, site(10))]);
    let bytes = file.finish(&at_end, &[]).unwrap();
    let finished = PartialTrace::parse(bytes.clone()).unwrap();
    assert_eq!(finished.sites().len(), 2);
    let killed = PartialTrace::parse(bytes[..handed_over].to_vec()).unwrap();
    assert!(killed.never_finished().is_some());
    assert_eq!(
        killed.sites().keys().copied().collect::<Vec<_>>(),
        [0x40_1000]
    );
    assert_eq!(killed.sites()[&0x40_1000].line, 9);
    let mut twice = TraceFile::new(Vec::new(), true).unwrap();
    twice.site(0x40_1000, &site(9)).unwrap();
    let bytes = twice
        .finish(&BTreeMap::from([(0x40_1000, site(9))]), &[])
        .unwrap();
    assert!(matches!(
        PartialTrace::parse(bytes),
        Err(PartialError::BadRecord { .. })
    ));
}

/// A recorder's notes come back in order; version 2 knows no notes, and a note too long is a
/// bad record.
#[test]
fn notes_are_read_back_in_version_3_only() {
    let mut file = TraceFile::new(Vec::new(), true).unwrap();
    file.chunk(0, &thread_bytes(&matmul(3), &[(0, 10)], &[]))
        .unwrap();
    file.note("1 thread(s) were inside an instance").unwrap();
    file.note(&"é".repeat(3000)).unwrap();
    let bytes = file.finish(&BTreeMap::new(), &[]).unwrap();
    let trace = PartialTrace::parse(bytes.clone()).unwrap();
    assert_eq!(trace.notes().len(), 2);
    assert_eq!(trace.notes()[0], "1 thread(s) were inside an instance");
    // Cut at a character boundary to at most MAX_NOTE bytes.
    assert_eq!(trace.notes()[1].len(), MAX_NOTE as usize);
    // Version 3 (no checksums) has notes, version 2 none.
    let mut old = PARTIAL_MAGIC.to_vec();
    old.extend_from_slice(&3u32.to_le_bytes());
    old.extend_from_slice(&FLAG_MARKED.to_le_bytes());
    old.extend_from_slice(&[TAG_NOTE, 2, b'h', b'i', TAG_END, 0]);
    assert_eq!(PartialTrace::parse(old.clone()).unwrap().notes(), ["hi"]);
    old[8] = 2;
    assert!(matches!(
        PartialTrace::parse(old),
        Err(PartialError::BadRecord { .. })
    ));
    // A sealed note past MAX_NOTE: its checksum holds, its length does not.
    let mut note = vec![TAG_NOTE, 0x81, 0x20]; // 4097 bytes
    note.extend(std::iter::repeat_n(b'x', 4097));
    let long = sealed(&bytes[..PARTIAL_HEADER_LEN], &[&note, &[TAG_END, 0]]);
    let err = PartialTrace::parse(long).unwrap_err();
    assert!(
        matches!(err, PartialError::BadRecord { offset, .. } if offset == PARTIAL_HEADER_LEN as u64),
        "{err}"
    );
}

#[test]
fn chunk_records_are_checked() {
    let mut bytes = PARTIAL_MAGIC.to_vec();
    bytes.extend_from_slice(&2u32.to_le_bytes());
    bytes.extend_from_slice(&FLAG_MARKED.to_le_bytes());
    let with = |tail: &[u8]| {
        let mut b = bytes.clone();
        b.extend_from_slice(tail);
        PartialTrace::parse(b)
    };
    // No chunks at all: a trace with no threads.
    assert!(with(&[TAG_END, 0]).unwrap().threads().is_empty());
    // An END that miscounts the chunks.
    assert!(matches!(
        with(&[TAG_CHUNK, 0, 1, TAG_END, TAG_END, 2]),
        Err(PartialError::BadRecord { .. })
    ));
    // An empty chunk, and a thread number too large.
    assert!(matches!(
        with(&[TAG_CHUNK, 0, 0, TAG_END, 1]),
        Err(PartialError::BadRecord { .. })
    ));
    assert!(matches!(
        with(&[TAG_CHUNK, 0x80, 0x80, 0x04, 1, 0, TAG_END, 1]),
        Err(PartialError::BadRecord { .. })
    ));
    // A site record inside a thread's body.
    let err = with(&[TAG_CHUNK, 0, 2, TAG_SITE, 0x10, TAG_END, 1]).unwrap_err();
    assert!(err.to_string().contains("thread 0"), "{err}");
    // Unknown flags.
    let mut flagged = bytes.clone();
    flagged[12] = 2;
    flagged.extend_from_slice(&[TAG_END, 0]);
    assert!(matches!(
        PartialTrace::parse(flagged),
        Err(PartialError::UnsupportedFlags { found: 2 })
    ));
}

/// A trace of two threads with notes, sites and ranges, as the runtime writes one; thread 0's
/// chunk, a gather kept raw, is 128 bytes or more.
fn sealed_trace() -> Vec<u8> {
    let mut state = 5u64;
    let gather: Vec<_> = (0..40)
        .map(|_| load(0x10, 8 * (xorshift(&mut state) % 4096)))
        .collect();
    let mut file = TraceFile::new(Vec::new(), true).unwrap();
    file.chunk(0, &thread_bytes(&gather, &[(0, 20)], &[]))
        .unwrap();
    file.site(
        0x10,
        &SiteInfo {
            file: "mm.c".into(),
            line: 7,
            function: "mm".into(),
            structure: "a".into(),
        },
    )
    .unwrap();
    file.chunk(1, &thread_bytes(&stencil(4, 2), &[(3, 30)], &[]))
        .unwrap();
    file.note("a note").unwrap();
    let ranges = [StructureRange {
        name: "a".into(),
        start: 0x1000,
        end: 0x2000,
    }];
    file.finish(&BTreeMap::new(), &ranges).unwrap()
}

/// Any byte of a finished file changed, in any bit, is refused (a record's checksum, the
/// header's, which every checksum starts from, or a length that runs past a sealed END says
/// so), or, where the change makes the END look cut short, read as a file never finished with
/// every access it holds: none replays to other counts.
#[test]
fn every_changed_byte_is_refused() {
    let good = sealed_trace();
    let trace = PartialTrace::parse(good.clone()).unwrap();
    assert!(trace.never_finished().is_none());
    assert_eq!(trace.threads().len(), 2);
    assert_eq!(trace.notes(), ["a note"]);
    let accesses = |t: &PartialTrace| -> Vec<Vec<PartialAccess>> {
        let all = |t: &ThreadTrace| t.accesses().collect::<Result<Vec<_>, _>>().unwrap();
        t.threads().iter().map(all).collect()
    };
    let mut read_as_cut = 0;
    for at in 0..good.len() {
        for flip in [0x01u8, 0x10, 0x80, 0xff] {
            let mut bad = good.clone();
            bad[at] ^= flip;
            let what = format!("byte {at} of {} ^ {flip:#x}", good.len());
            let parsed = match PartialTrace::parse(bad) {
                Ok(parsed) => parsed,
                // Said to be damage, whatever field the change fell in: never a field's value.
                Err(
                    PartialError::Checksum { .. }
                    | PartialError::Damaged { .. }
                    | PartialError::BadMagic { .. }
                    | PartialError::UnsupportedVersion { .. }
                    | PartialError::UnsupportedFlags { .. },
                ) => continue,
                Err(e) => panic!("{what}: {e}"),
            };
            assert!(parsed.never_finished().is_some(), "{what} read as finished");
            assert_eq!(accesses(&parsed), accesses(&trace), "{what}");
            read_as_cut += 1;
        }
    }
    // Only the END's count, whose continuation bit runs it into the checksum.
    assert!(read_as_cut <= 2, "{read_as_cut} changes read as a cut file");
    let mut sum = good.clone();
    let last = sum.len() - 1;
    sum[last] ^= 1;
    assert!(matches!(
        PartialTrace::parse(sum),
        Err(PartialError::Checksum {
            record: "the END record",
            ..
        })
    ));
}

/// A chunk whose length grew past the end of a finished file is damage, not a cut.
#[test]
fn a_length_past_a_sealed_end_is_damage() {
    let good = sealed_trace();
    let mut longer = good.clone();
    // The first chunk's length, after its tag and thread 0: its last byte made 127.
    assert_eq!(longer[PARTIAL_HEADER_LEN..][..2], [TAG_CHUNK, 0]);
    let length = PARTIAL_HEADER_LEN + 2;
    let last = length + longer[length..].iter().position(|b| b & 0x80 == 0).unwrap();
    assert_eq!(last - length, 1, "a chunk of 128 to 16,383 bytes");
    longer[last] = 0x7f;
    let err = PartialTrace::parse(longer).unwrap_err();
    assert!(
        matches!(err, PartialError::Damaged { offset, .. } if offset == PARTIAL_HEADER_LEN as u64),
        "{err}"
    );
    // Cut anywhere, the same file is one never finished.
    for cut in PARTIAL_HEADER_LEN..good.len() {
        let trace = PartialTrace::parse(good[..cut].to_vec()).unwrap();
        assert!(trace.never_finished().is_some(), "cut at {cut}");
    }
}
