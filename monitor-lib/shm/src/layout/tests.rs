//! Layout validation tests: every corrupt header field or table index gives a typed error, and
//! random bytes never panic the validator.

use proptest::prelude::*;

use super::*;
use crate::sysv::HeapImage;

fn small() -> Capacities {
    Capacities {
        regions: 8,
        data_structures: 8,
        request_slots: 4,
        buckets_per_slot: 8,
        result_words: 35,
        string_bytes: 64,
    }
}

fn formatted() -> (HeapImage, Layout) {
    let layout = Layout::plan(&small()).unwrap();
    let image = HeapImage::zeroed(layout.total);
    layout.write_header(image.view(), 1234, 99).unwrap();
    (image, layout)
}

#[test]
fn a_fresh_header_validates_to_the_planned_layout() {
    let (image, layout) = formatted();
    assert_eq!(Layout::validate(image.view()).unwrap(), layout);
    assert_eq!(layout.buckets_per_slot(), 8);
    assert_eq!(layout.result_words(), 35);
    assert_eq!(layout.span(Table::Config).capacity, 16);
}

#[test]
fn capacities_must_leave_room_for_one_row_of_the_largest_histogram() {
    let too_small = Capacities {
        result_words: (RESULT_HEADER_WORDS + ROW_HEADER_WORDS + 7) as u32,
        ..small()
    };
    let e = Layout::plan(&too_small).unwrap_err();
    assert!(e.to_string().contains("one row of 8 buckets"), "{e}");
    // A header whose bucket limit does not fit its blocks is refused too.
    let (image, _) = formatted();
    image
        .view()
        .u32_at(header::MAX_BUCKETS)
        .unwrap()
        .store(26, Ordering::Relaxed);
    assert!(matches!(
        Layout::validate(image.view()),
        Err(LayoutError::BadHeaderField {
            field: "buckets per request",
            ..
        })
    ));
}

#[test]
fn each_corrupt_header_field_is_a_typed_error() {
    type Check = fn(&LayoutError) -> bool;
    let cases: &[(usize, u64, bool, Check)] = &[
        (header::MAGIC, 0x1234, true, |e| {
            matches!(e, LayoutError::BadMagic { found: 0x1234 })
        }),
        // The next version: one this build does not read.
        (
            header::VERSION,
            LAYOUT_VERSION as u64 + 1,
            false,
            |e| matches!(e, LayoutError::UnsupportedVersion { found } if *found == LAYOUT_VERSION + 1),
        ),
        (header::HEADER_SIZE, 8, false, |e| {
            matches!(
                e,
                LayoutError::BadHeaderField {
                    field: "header size",
                    ..
                }
            )
        }),
        (header::TOTAL_SIZE, 1 << 40, true, |e| {
            matches!(
                e,
                LayoutError::BadHeaderField {
                    field: "total size",
                    ..
                }
            )
        }),
        (header::TARGET_PID, 0, false, |e| {
            matches!(
                e,
                LayoutError::BadHeaderField {
                    field: "target pid",
                    ..
                }
            )
        }),
    ];
    for &(offset, value, wide, check) in cases {
        let (image, _) = formatted();
        let v = image.view();
        if wide {
            v.u64_at(offset).unwrap().store(value, Ordering::Relaxed);
        } else {
            v.u32_at(offset)
                .unwrap()
                .store(value as u32, Ordering::Relaxed);
        }
        let e = Layout::validate(v).unwrap_err();
        assert!(check(&e), "offset {offset}: {e}");
    }
}

#[test]
fn each_corrupt_table_descriptor_is_a_typed_error() {
    for table in Table::ALL {
        let d = header::TABLES + 16 * table as usize;
        // (word offset, value, is u64)
        for (off, value, wide) in [
            (d, 3, true),                    // misaligned
            (d, 8, true),                    // inside the header
            (d, u64::MAX - 7, true),         // past the end, overflowing
            (d + 8, u32::MAX as u64, false), // capacity past the end
            (d + 12, 3, false),              // wrong entry size
        ] {
            let (image, _) = formatted();
            let v = image.view();
            if wide {
                v.u64_at(off).unwrap().store(value, Ordering::Relaxed);
            } else {
                v.u32_at(off)
                    .unwrap()
                    .store(value as u32, Ordering::Relaxed);
            }
            let e = Layout::validate(v).unwrap_err();
            assert!(
                matches!(
                    e,
                    LayoutError::BadTable { .. } | LayoutError::Overlap { .. }
                ),
                "{table} word {off} = {value}: {e}"
            );
        }
    }
    // Two tables at the same place.
    let (image, layout) = formatted();
    let regions = header::TABLES + 16 * Table::Regions as usize;
    image
        .view()
        .u64_at(regions)
        .unwrap()
        .store(layout.span(Table::Config).offset as u64, Ordering::Relaxed);
    assert!(matches!(
        Layout::validate(image.view()),
        Err(LayoutError::Overlap { .. })
    ));
}

#[test]
fn corrupt_entries_and_counts_are_typed_errors() {
    let (image, layout) = formatted();
    let v = image.view();
    assert!(matches!(
        layout.checked_count(Table::Regions, 9),
        Err(LayoutError::BadIndex { .. })
    ));
    assert!(matches!(
        layout.entry_words(v, Table::Regions, 8),
        Err(LayoutError::BadIndex { .. })
    ));
    let w = layout.entry_words(v, Table::Regions, 0).unwrap();
    w[2].store(RegionKind::Marker as u64, Ordering::Relaxed);
    w[1].store(name_word(60, 10), Ordering::Relaxed);
    assert!(matches!(
        read_region(v, &layout, 0),
        Err(LayoutError::BadString { .. })
    ));
    v.copy_in(layout.span(Table::Strings).offset, &[0xff, 0xfe])
        .unwrap();
    w[1].store(name_word(0, 2), Ordering::Relaxed);
    assert!(matches!(
        read_region(v, &layout, 0),
        Err(LayoutError::BadString {
            why: "not UTF-8",
            ..
        })
    ));
    w[1].store(name_word(0, 0), Ordering::Relaxed);
    w[2].store(9, Ordering::Relaxed);
    assert!(matches!(
        read_region(v, &layout, 0),
        Err(LayoutError::BadEnum { .. })
    ));
    let slot = layout.entry_words(v, Table::RequestSlots, 0).unwrap();
    slot[2].store(0xdead << 32, Ordering::Relaxed);
    assert!(matches!(
        RequestSpec::load(slot, 8),
        Err(LayoutError::BadEnum {
            what: "event code",
            ..
        })
    ));
}

#[test]
fn requests_round_trip_and_results_are_seqlocked() {
    let (image, layout) = formatted();
    let v = image.view();
    let spec = RequestSpec {
        region: RegionIndex(3),
        target: RequestTarget::Range(AddressRange::new(0x1000, 4096)),
        event: Event::L1_LDM,
        mode: Mode::Histogram {
            buckets: 8,
            bucket_bytes: 512,
        },
        aggregation: Aggregation::Summed,
        analyses: 5,
    };
    let slot = layout.entry_words(v, Table::RequestSlots, 1).unwrap();
    spec.store(slot);
    assert_eq!(RequestSpec::load(slot, 8).unwrap(), spec);
    assert!(RequestSpec::load(slot, 4).is_err(), "too many buckets");
    let block = layout.entry_words(v, Table::Results, 1).unwrap();
    assert_eq!(read_result(block, 10).unwrap(), None);
    let result = RequestResult::summed(2, 3, 40, vec![5; 8]);
    write_result(block, &result);
    assert_eq!(read_result(block, 10).unwrap(), Some(result));
    block[1].store(2 | 99 << 32, Ordering::Relaxed);
    assert!(read_result(block, 10).is_err(), "row count past the block");
    block[1].store(2 | 1 << 32, Ordering::Relaxed);
    block[2].store(99, Ordering::Relaxed);
    assert!(
        read_result(block, 10).is_err(),
        "bucket count past the block"
    );
}

#[test]
fn a_by_field_request_round_trips_through_its_slot_and_a_forged_table_is_refused() {
    let (image, layout) = formatted();
    let v = image.view();
    let spans = FieldSpans::new(32, &[(0, 8), (8, 8), (16, 8), (24, 4)]).unwrap();
    let spec = RequestSpec {
        region: RegionIndex(1),
        target: RequestTarget::DataStructure(DataStructureIndex(2)),
        event: Event::L1_LDM,
        mode: Mode::Fields(spans),
        aggregation: Aggregation::Summed,
        analyses: 0,
    };
    let slot = layout.entry_words(v, Table::RequestSlots, 2).unwrap();
    spec.store(slot);
    assert_eq!(RequestSpec::load(slot, 8).unwrap(), spec);
    assert_eq!(
        spec.histogram_buckets(AddressRange::new(0, 32_000)),
        Some(5),
        "one bucket per member and the padding, whatever the range"
    );
    assert!(
        RequestSpec::load(slot, 4).is_err(),
        "more buckets than a slot holds"
    );
    // A bucket count that disagrees with the table, and a span past the element.
    let w5 = slot[5].load(Ordering::Relaxed);
    slot[5].store(w5 & 0xffff_ffff | 9 << 32, Ordering::Relaxed);
    assert!(RequestSpec::load(slot, 16).is_err());
    slot[5].store(w5, Ordering::Relaxed);
    slot[FIELD_HEADER_WORD + 1].store(40 << 16, Ordering::Relaxed);
    let e = RequestSpec::load(slot, 8).unwrap_err();
    assert!(e.to_string().contains("member 0"), "{e}");
}

fn thread_row(tid: u32, total: u64, buckets: Vec<u64>) -> ResultRow {
    ResultRow {
        threads: RowThreads::Thread {
            tid,
            openmp: Some(tid % 3),
            index: Some(tid % 254),
        },
        instances: 1,
        total,
        buckets,
    }
}

#[test]
fn per_thread_rows_round_trip_and_threads_past_the_room_are_summed_into_one_row() {
    let (image, layout) = formatted();
    let block = layout.entry_words(image.view(), Table::Results, 0).unwrap();
    // 28 words after the header: two rows of 8 buckets (11 words each).
    let two = RequestResult {
        generation: 1,
        rows: vec![
            thread_row(101, 8, vec![1; 8]),
            thread_row(102, 16, vec![2; 8]),
        ],
        geometry: BucketGeometry::default(),
        text: ResultText::None,
    };
    write_result(block, &two);
    assert_eq!(read_result(block, 10).unwrap().as_ref(), Some(&two));

    let five = RequestResult {
        generation: 1,
        rows: (0..5)
            .map(|i| thread_row(200 + i, 8 * u64::from(i + 1), vec![u64::from(i + 1); 8]))
            .collect(),
        geometry: BucketGeometry::default(),
        text: ResultText::None,
    };
    write_result(block, &five);
    let read = read_result(block, 10).unwrap().unwrap();
    assert_eq!(read.rows.len(), 2);
    assert_eq!(read.rows[0], five.rows[0], "the first thread keeps its row");
    assert_eq!(read.rows[1].threads, RowThreads::Others(4));
    assert_eq!(read.rows[1].instances, 4);
    assert_eq!(read.rows[1].buckets, vec![2 + 3 + 4 + 5; 8]);
    assert_eq!(read.sum(), five.sum(), "nothing is lost");
    assert_eq!(read.total(), 8 * 15);

    // Static rows are 3 words: nine fit.
    let many = RequestResult {
        generation: 1,
        rows: (0..9).map(|i| thread_row(i + 1, 1, Vec::new())).collect(),
        geometry: BucketGeometry::default(),
        text: ResultText::None,
    };
    write_result(block, &many);
    assert_eq!(read_result(block, 10).unwrap().unwrap(), many);
}

#[test]
fn the_report_follows_the_counts_and_one_that_does_not_fit_is_replaced_by_a_note() {
    let (image, layout) = formatted();
    let block = layout.entry_words(image.view(), Table::Results, 0).unwrap();
    let text = "{\"ranges\":[\"A\",\"ünïcode\"]}";
    let with_report = RequestResult {
        text: ResultText::Report(text.into()),
        ..RequestResult::summed(4, 1, 36, vec![4, 5, 6, 7, 8, 6, 0, 0])
    };
    write_result(block, &with_report);
    assert_eq!(read_result(block, 10).unwrap().unwrap(), with_report);

    // 17 words of room after one row of 8 buckets: 136 bytes.
    let big = RequestResult {
        text: ResultText::Report("x".repeat(137)),
        ..with_report.clone()
    };
    write_result(block, &big);
    let read = read_result(block, 10).unwrap().unwrap();
    assert_eq!(read.rows, with_report.rows, "the counts stay");
    let ResultText::Missing(note) = &read.text else {
        panic!("{:?}", read.text);
    };
    assert!(
        note.starts_with("the analysis report has 137 bytes"),
        "{note}"
    );

    // A text length past the block, and bytes that are not UTF-8, are refused.
    write_result(block, &with_report);
    let text_word = block[3].load(Ordering::Relaxed);
    block[3].store(text_word & !0xffff_ffff | 137, Ordering::Relaxed);
    assert!(read_result(block, 10).is_err());
    block[3].store(text_word, Ordering::Relaxed);
    let first_text_word = RESULT_HEADER_WORDS + ROW_HEADER_WORDS + 8;
    block[first_text_word].store(u64::MAX, Ordering::Relaxed);
    assert!(matches!(
        read_result(block, 10),
        Err(LayoutError::BadString { .. })
    ));
}

#[test]
fn a_results_bucket_geometry_round_trips_and_one_that_does_not_fit_its_buckets_is_refused() {
    let (image, layout) = formatted();
    let block = layout.entry_words(image.view(), Table::Results, 0).unwrap();
    // Three instances of 8,000 to 24,000 bytes, in buckets of 3,328: eight cover the largest.
    let grown = RequestResult {
        geometry: BucketGeometry {
            bucket_bytes: 3328,
            smallest: 8000,
            largest: 24_000,
        },
        ..RequestResult::summed(1, 3, 48, vec![6; 8])
    };
    write_result(block, &grown);
    let read = read_result(block, 10).unwrap().unwrap();
    assert_eq!(read, grown);
    assert!(read.geometry.sizes_differ());

    for (word, value) in [(4, 0), (4, 2048), (5, 30_000)] {
        write_result(block, &grown);
        block[word].store(value, Ordering::Relaxed);
        assert!(
            matches!(read_result(block, 10), Err(LayoutError::BadGeometry { .. })),
            "word {word} = {value}"
        );
    }
}

#[test]
fn a_slot_owner_belongs_to_the_generation_that_wrote_it() {
    let (image, layout) = formatted();
    let slot = layout
        .entry_words(image.view(), Table::RequestSlots, 2)
        .unwrap();
    let owner = SlotOwner {
        pid: 4321,
        start_time: 777,
    };
    assert_eq!(SlotOwner::load(slot, 1), None, "nobody wrote one");
    owner.store(slot, 1);
    assert_eq!(SlotOwner::load(slot, 1), Some(owner));
    assert_eq!(
        SlotOwner::load(slot, 2),
        None,
        "a claim whose owner is not written yet names no owner"
    );
}

proptest! {
    #[test]
    fn random_bytes_never_panic_the_validator(bytes in prop::collection::vec(any::<u8>(), 0..4096)) {
        let image = HeapImage::from_bytes(&bytes);
        let _ = Layout::validate(image.view());
    }

    #[test]
    fn random_tables_behind_a_valid_header_never_panic(
        noise in prop::collection::vec(any::<u64>(), 1..512),
        seed_header in any::<bool>(),
    ) {
        let (image, layout) = formatted();
        let v = image.view();
        // Scribble over everything after the header (and sometimes over the descriptors too).
        let from = if seed_header { header::TABLES } else { HEADER_BYTES };
        for (i, w) in (from..layout.total).step_by(8).zip(noise.iter().cycle()) {
            v.u64_at(i).unwrap().store(*w, Ordering::Relaxed);
        }
        if let Ok(l) = Layout::validate(v) {
            for i in 0..l.span(Table::Regions).capacity {
                let _ = read_region(v, &l, i);
            }
            for i in 0..l.span(Table::DataStructures).capacity {
                let _ = read_data_structure(v, &l, i);
            }
            for i in 0..l.span(Table::RequestSlots).capacity {
                if let Ok(w) = l.entry_words(v, Table::RequestSlots, i) {
                    let _ = RequestSpec::load(w, l.buckets_per_slot());
                }
                if let Ok(w) = l.entry_words(v, Table::Results, i) {
                    let _ = read_result(w, 2);
                }
            }
        }
    }
}

/// What issue 25 asks the data-structure table to carry: an entry's allocation site and shape
/// round-trip through its words (C's `double a[100][50]`, row-major from 0; Fortran's
/// `real a(0:9,100)`, column-major), and a corrupt shape header is a typed error.
#[test]
fn data_structure_entries_carry_their_site_and_shape() {
    let (image, layout) = formatted();
    let v = image.view();
    let w = layout.entry_words(v, Table::DataStructures, 2).unwrap();
    let dims = |d: &[(i64, u64)]| {
        d.iter()
            .map(|&(lower, extent)| Dimension { lower, extent })
            .collect::<Vec<_>>()
    };
    for details in [
        DataStructureDetails {
            site: None,
            shape: Some(Shape {
                element_bytes: 8,
                dims: dims(&[(0, 100), (0, 50)]),
                column_major: false,
            }),
        },
        DataStructureDetails {
            site: Some(SiteKey::new("/src/prog.f90", 32)),
            shape: Some(Shape {
                element_bytes: 4,
                dims: dims(&[(0, 10), (1, 100)]),
                column_major: true,
            }),
        },
        DataStructureDetails::default(),
    ] {
        w[3].store(
            DataStructureKind::Allocatable as u64 | 1 << 32,
            Ordering::Relaxed,
        );
        details.store(w);
        let read = read_data_structure(v, &layout, 2).unwrap();
        assert_eq!(read.details, details);
        assert_eq!(read.kind, DataStructureKind::Allocatable);
    }
    // A site is its file's base name and line.
    assert_eq!(
        SiteKey::new("/src/prog.f90", 32),
        SiteKey::new("prog.f90", 32)
    );
    assert_ne!(SiteKey::new("prog.f90", 32), SiteKey::new("prog.f90", 33));
    // Eight dimensions are more than an entry holds: published without a shape.
    DataStructureDetails {
        site: None,
        shape: Some(Shape {
            element_bytes: 8,
            dims: dims(&[(1, 2); 8]),
            column_major: true,
        }),
    }
    .store(w);
    assert_eq!(
        read_data_structure(v, &layout, 2).unwrap().details.shape,
        None
    );
    w[5].store(8 | 9 << 32, Ordering::Relaxed);
    assert!(matches!(
        read_data_structure(v, &layout, 2),
        Err(LayoutError::BadIndex {
            what: "shape rank",
            ..
        })
    ));
    w[5].store(8 | 1 << 45, Ordering::Relaxed);
    assert!(matches!(
        read_data_structure(v, &layout, 2),
        Err(LayoutError::BadEnum { .. })
    ));
    w[3].store(9, Ordering::Relaxed);
    assert!(matches!(
        read_data_structure(v, &layout, 2),
        Err(LayoutError::BadEnum { .. })
    ));
}

/// A request may name an allocation site and which of its blocks: it round-trips through the
/// slot, a site with no line or an unknown block choice is refused, and the target's binding
/// word belongs to one generation of the slot.
#[test]
fn site_requests_round_trip_and_bindings_belong_to_one_generation() {
    let (image, layout) = formatted();
    let v = image.view();
    let slot = layout.entry_words(v, Table::RequestSlots, 2).unwrap();
    let spec = RequestSpec {
        region: RegionIndex(1),
        target: RequestTarget::AllocationSite {
            site: SiteKey::new("prog.c", 50),
            block: SiteBlock::Largest,
        },
        event: Event::L1_LDM,
        mode: Mode::Histogram {
            buckets: 8,
            bucket_bytes: 0,
        },
        aggregation: Aggregation::Summed,
        analyses: 0,
    };
    slot[SLOT_BINDING_WORD].store(binding_word(DataStructureIndex(5), 1), Ordering::Relaxed);
    spec.store(slot);
    assert_eq!(RequestSpec::load(slot, 8).unwrap(), spec);
    assert_eq!(
        slot[SLOT_BINDING_WORD].load(Ordering::Relaxed),
        0,
        "a new request starts unbound"
    );
    slot[2].store(spec_word(slot, 2) | 7, Ordering::Relaxed);
    assert!(matches!(
        RequestSpec::load(slot, 8),
        Err(LayoutError::BadEnum {
            what: "site block",
            ..
        })
    ));
    spec.store(slot);
    slot[3].store(
        u64::from(SiteKey::new("prog.c", 50).file),
        Ordering::Relaxed,
    );
    assert!(matches!(
        RequestSpec::load(slot, 8),
        Err(LayoutError::BadEnum {
            what: "allocation site",
            ..
        })
    ));

    let word = binding_word(DataStructureIndex(0), 7);
    assert_eq!(binding_of(word, 7), Some(DataStructureIndex(0)));
    assert_eq!(binding_of(word, 8), None, "another request's binding");
    assert_eq!(binding_of(0, 0), None, "unbound");
}

fn spec_word(slot: &[AtomicU64], i: usize) -> u64 {
    slot[i].load(Ordering::Relaxed) & !0xffff_ffff
}

#[test]
fn a_halt_position_word_carries_the_halting_thread() {
    let thread = HaltingThread {
        index: Some(3),
        openmp: Some(0),
    };
    let word = position_word(17, Boundary::Exit, thread);
    assert_eq!(word as u32, 17);
    assert_eq!(word >> 32 & 0xff, Boundary::Exit as u64);
    assert_eq!(HaltingThread::from_position_word(word), thread);
    // A word from before the field, or a thread past what it keeps, says nothing.
    let old = position_word(17, Boundary::Exit, HaltingThread::default());
    assert_eq!(
        HaltingThread::from_position_word(old),
        HaltingThread::default()
    );
    let far = HaltingThread {
        index: Some(5000),
        openmp: Some(4095),
    };
    assert_eq!(
        HaltingThread::from_position_word(position_word(1, Boundary::Entry, far)),
        HaltingThread::default()
    );
}

#[test]
fn a_line_key_answers_each_array_of_its_statement_and_an_array_key_its_own_or_its_lines() {
    let line = SiteKey::new("src/heat.f90", 6);
    let (t, tnew) = (
        SiteKey::of_object("heat.f90", 6, "t"),
        SiteKey::of_object("heat.f90", 6, "tnew"),
    );
    assert_ne!(t, tnew);
    assert_eq!(t.line & 0xff_ffff, 6);
    assert!(line.answers(t) && line.answers(tnew) && line.answers(line));
    assert!(t.answers(t) && !t.answers(tnew));
    // A block of the line that carries no array's tag: the statement's only array, or arrays
    // the runtime could not tell apart.
    assert!(t.answers(line) && tnew.answers(line));
    assert!(!SiteKey::of_object("heat.f90", 7, "t").answers(line));
    assert!(!SiteKey::new("heat.f90", 7).answers(t));
    assert!(!SiteKey::new("cool.f90", 6).answers(t));
    assert_eq!(SiteKey::from_word(t.to_word()), Some(t));
}
