//! Layout validation tests: every corrupt header field or table index gives a typed error, and
//! random bytes never panic the validator.

use proptest::prelude::*;

use super::*;
use crate::shm::sysv::HeapImage;

fn small() -> Capacities {
    Capacities {
        regions: 8,
        data_structures: 8,
        request_slots: 4,
        buckets_per_slot: 8,
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
    assert_eq!(layout.span(Table::Config).capacity, 16);
}

#[test]
fn each_corrupt_header_field_is_a_typed_error() {
    type Check = fn(&LayoutError) -> bool;
    let cases: &[(usize, u64, bool, Check)] = &[
        (header::MAGIC, 0x1234, true, |e| {
            matches!(e, LayoutError::BadMagic { found: 0x1234 })
        }),
        (header::VERSION, 7, false, |e| {
            matches!(e, LayoutError::UnsupportedVersion { found: 7 })
        }),
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
    let result = RequestResult {
        generation: 2,
        instances: 3,
        total: 40,
        buckets: vec![5; 8],
    };
    write_result(block, &result);
    assert_eq!(read_result(block, 10).unwrap(), Some(result));
    block[1].store(2 | 99 << 32, Ordering::Relaxed);
    assert!(
        read_result(block, 10).is_err(),
        "bucket count past the block"
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

#[test]
fn text_round_trips_through_result_words_and_bad_lengths_are_refused() {
    let text = "{\"ranges\":[\"A\",\"ünïcode\"]}";
    let words = pack_text(text);
    assert_eq!(words.len(), text.len().div_ceil(8));
    assert_eq!(unpack_text(&words, text.len() as u64).unwrap(), text);
    assert!(unpack_text(&words, words.len() as u64 * 8 + 1).is_err());
    // Cutting inside a multi-byte character is not UTF-8.
    let cut = text.find('ü').unwrap() as u64 + 1;
    assert!(unpack_text(&words, cut).is_err());
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
