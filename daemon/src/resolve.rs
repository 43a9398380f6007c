//! Turning a tool's names into the segment's indices: regions by key, name or index, data
//! structures by name, range or index, events, and histogram bucket widths, with the nearest
//! names in every refusal.

use epcache_monitor::cache::HierarchySpec;
use epcache_monitor::monitor::{Event, EventError};
use epcache_monitor::ranges::AddressRange;
use epcache_monitor::shm::layout::{
    self, DataStructureIndex, DataStructureInfo, Mode, RegionInfo, RequestSpec, RequestTarget,
};
use epcache_proto::v1;

use crate::error::DaemonError;
use crate::model;

/// How many near names a refusal lists.
const NEAREST: usize = 3;

/// How many characters of each name [`distance`] compares: names longer than that are told
/// apart by their start, and a 12 KB name costs no more than a short one.
const DISTANCE_CHARS: usize = 256;

/// Levenshtein distance over the first [`DISTANCE_CHARS`] chars, case-insensitive.
fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.to_lowercase().chars().take(DISTANCE_CHARS).collect();
    let b: Vec<char> = b.to_lowercase().chars().take(DISTANCE_CHARS).collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != cb))
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// The names closest to `name`: those containing it (or contained in it) first, then by edit
/// distance; at most [`NEAREST`], without repeats, each cut as [`crate::error::echo`] cuts.
pub(crate) fn nearest<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Vec<String> {
    let lower = name.to_lowercase();
    let mut scored: Vec<(bool, usize, &str)> = candidates
        .into_iter()
        .map(|c| {
            let cl = c.to_lowercase();
            let related = !lower.is_empty() && (cl.contains(&lower) || lower.contains(&cl));
            (!related, distance(name, c), c)
        })
        .collect();
    scored.sort();
    let mut out: Vec<String> = Vec::new();
    for (_, _, c) in scored {
        // A target's name can be as long as it likes; a message repeats only its start.
        let c = crate::error::echo(c);
        if !out.contains(&c) {
            out.push(c);
        }
        if out.len() == NEAREST {
            break;
        }
    }
    out
}

fn describe_region(r: &RegionInfo) -> String {
    format!(
        "{} (index {}, key {}:{}{})",
        r.name,
        r.index.0,
        r.file_id,
        r.line,
        if r.file.is_empty() {
            String::new()
        } else {
            format!(", {}:{}", r.file, r.line)
        }
    )
}

/// The region `selector` names.
pub(crate) fn region<'r>(
    pid: u32,
    selector: Option<&v1::RegionSelector>,
    regions: &'r [RegionInfo],
) -> Result<&'r RegionInfo, DaemonError> {
    let by = selector.and_then(|s| s.by.as_ref()).ok_or_else(|| {
        DaemonError::InvalidArgument(
            "the request names no region; give one by name, key (file id and line) or index".into(),
        )
    })?;
    let names = || regions.iter().map(|r| r.name.as_str());
    match by {
        v1::region_selector::By::Index(i) => {
            regions
                .get(*i as usize)
                .ok_or_else(|| DaemonError::NotFound {
                    what: "region with index",
                    name: i.to_string(),
                    pid,
                    nearest: vec![format!("indices 0 to {}", regions.len().saturating_sub(1))],
                })
        }
        v1::region_selector::By::Key(k) => regions
            .iter()
            .find(|r| r.file_id == k.file_id && r.line == k.line)
            .ok_or_else(|| DaemonError::NotFound {
                what: "region with key",
                name: format!("{}:{}", k.file_id, k.line),
                pid,
                nearest: regions
                    .iter()
                    .filter(|r| r.file_id == k.file_id)
                    .take(NEAREST)
                    .map(describe_region)
                    .collect(),
            }),
        v1::region_selector::By::Name(name) => {
            let found: Vec<&RegionInfo> = regions.iter().filter(|r| &r.name == name).collect();
            match found.as_slice() {
                [one] => Ok(one),
                [] if regions.is_empty() => Err(DaemonError::NotFound {
                    what: "region",
                    name: name.clone(),
                    pid,
                    nearest: vec![
                        "(none: the target has registered no region yet; markers, Rust's \
                         included, are registered when the program first reaches them)"
                            .to_owned(),
                    ],
                }),
                [] => Err(DaemonError::NotFound {
                    what: "region",
                    name: name.clone(),
                    pid,
                    nearest: nearest(name, names()),
                }),
                many => Err(DaemonError::Ambiguous {
                    what: "region",
                    name: name.clone(),
                    pid,
                    candidates: many
                        .iter()
                        .map(|r| describe_region(r))
                        .collect::<Vec<_>>()
                        .join("; "),
                    hint: "name it by one of the keys listed (FILE_ID:LINE: `--region-key` of `epcache request`, `--region` of `epcache run`) or by index",
                }),
            }
        }
    }
}

/// The bytes `selector` names, and the data structure when it names one.
pub(crate) fn data(
    pid: u32,
    selector: Option<&v1::DataSelector>,
    structures: &[DataStructureInfo],
) -> Result<(RequestTarget, AddressRange, Option<DataStructureInfo>), DaemonError> {
    let by = selector.and_then(|s| s.by.as_ref()).ok_or_else(|| {
        DaemonError::InvalidArgument(
            "the request names no data; give a data structure by name or index, or an address range"
                .into(),
        )
    })?;
    let chosen = match by {
        v1::data_selector::By::Range(r) => {
            if r.end <= r.start {
                return Err(DaemonError::InvalidArgument(format!(
                    "address range [{:#x}, {:#x}) is empty; its end must lie after its start",
                    r.start, r.end
                )));
            }
            let range = AddressRange::new(r.start, r.end - r.start);
            return Ok((RequestTarget::Range(range), range, None));
        }
        v1::data_selector::By::Index(i) => {
            structures
                .get(*i as usize)
                .ok_or_else(|| DaemonError::NotFound {
                    what: "data structure with index",
                    name: i.to_string(),
                    pid,
                    nearest: vec![format!(
                        "indices 0 to {}",
                        structures.len().saturating_sub(1)
                    )],
                })?
        }
        v1::data_selector::By::Name(name) => {
            let all: Vec<&DataStructureInfo> =
                structures.iter().filter(|d| &d.name == name).collect();
            let live: Vec<&DataStructureInfo> = all.iter().copied().filter(|d| d.live).collect();
            match (live.as_slice(), all.is_empty()) {
                ([one], _) => one,
                ([], true) => {
                    return Err(DaemonError::NotFound {
                        what: "data structure",
                        name: name.clone(),
                        pid,
                        nearest: nearest(
                            name,
                            structures
                                .iter()
                                .filter(|d| d.live)
                                .map(|d| d.name.as_str()),
                        ),
                    });
                }
                ([], false) => all[all.len() - 1],
                (many, _) => {
                    return Err(DaemonError::Ambiguous {
                        what: "data structure",
                        name: name.clone(),
                        pid,
                        candidates: many
                            .iter()
                            .map(|d| {
                                format!(
                                    "index {} at [{:#x}, {:#x})",
                                    d.index.0, d.range.start, d.range.end
                                )
                            })
                            .collect::<Vec<_>>()
                            .join("; "),
                        hint: "name it by index or address range",
                    });
                }
            }
        }
    };
    if !chosen.live {
        return Err(DaemonError::FailedPrecondition(format!(
            "data structure `{}` (index {}) in target pid {pid} was freed; name a live one or an address range",
            chosen.name, chosen.index.0
        )));
    }
    if chosen.range.is_empty() {
        return Err(DaemonError::InvalidArgument(format!(
            "data structure `{}` in target pid {pid} has no bytes",
            chosen.name
        )));
    }
    Ok((
        RequestTarget::DataStructure(DataStructureIndex(chosen.index.0)),
        chosen.range,
        Some(chosen.clone()),
    ))
}

/// The event `name`, checked against the levels the target simulates.
pub(crate) fn event(pid: u32, name: &str, model: &HierarchySpec) -> Result<Event, DaemonError> {
    Event::for_hierarchy(name, model).map_err(|e| {
        let text = match &e {
            // The message repeats the name: at most its start.
            EventError::Unknown(unknown) => {
                e.to_string()
                    .replacen(&unknown.name, &crate::error::echo(&unknown.name), 1)
            }
            EventError::NoSuchLevel { .. } => e.to_string(),
        };
        DaemonError::InvalidArgument(format!("target pid {pid}: {text}"))
    })
}

/// The histogram's bucket width in bytes and its bucket count. A count cuts the range into
/// equal buckets of whole L1 lines (the last one shorter, and fewer buckets than asked when the
/// range has fewer lines); a width in lines is taken as it is.
pub(crate) fn buckets(
    mode: &v1::HistogramMode,
    range: AddressRange,
    line: u64,
) -> Result<(u64, u32), DaemonError> {
    let len = range.len();
    let width = match mode.granularity {
        Some(v1::histogram_mode::Granularity::Buckets(0))
        | Some(v1::histogram_mode::Granularity::BucketLines(0))
        | None => {
            return Err(DaemonError::InvalidArgument(
                "a histogram needs a bucket count or a bucket width in lines of at least 1".into(),
            ));
        }
        Some(v1::histogram_mode::Granularity::Buckets(n)) => {
            len.div_ceil(u64::from(n)).div_ceil(line).max(1) * line
        }
        Some(v1::histogram_mode::Granularity::BucketLines(l)) => u64::from(l) * line,
    };
    let count = len.div_ceil(width);
    if count > u64::from(layout::MAX_BUCKETS_PER_SLOT) {
        return Err(DaemonError::InvalidArgument(format!(
            "{count} histogram buckets of {width} bytes over {len} bytes; no target holds more than {} per request: use wider buckets",
            layout::MAX_BUCKETS_PER_SLOT
        )));
    }
    Ok((width, count as u32))
}

/// A request resolved against a target's tables: what to submit and how to describe it.
#[derive(Debug, Clone)]
pub(crate) struct Resolved {
    /// What goes into the slot.
    pub(crate) spec: RequestSpec,
    /// The request as the MRI reports it (id and pid filled in later).
    pub(crate) info: v1::RequestInfo,
}

/// Resolves one request against a target's regions, data structures and model.
pub(crate) fn request(
    pid: u32,
    request: &v1::MonitoringRequest,
    regions: &[RegionInfo],
    structures: &[DataStructureInfo],
    model: Option<&HierarchySpec>,
) -> Result<Resolved, DaemonError> {
    let region = region(pid, request.region.as_ref(), regions)?;
    let (target, range, data) = data(pid, request.data.as_ref(), structures)?;
    let model = model.ok_or_else(|| {
        DaemonError::FailedPrecondition(format!(
            "target pid {pid} has not published its cache model yet, so events cannot be checked; wait until it runs"
        ))
    })?;
    if request.event.trim().is_empty() {
        return Err(DaemonError::InvalidArgument(
            "the request names no event; e.g. PAPI_L1_LDM (see `epcache describe`)".into(),
        ));
    }
    let event = event(pid, &request.event, model)?;
    let analyses = model::analysis_mask(&request.analyses).map_err(DaemonError::InvalidArgument)?;
    let line = u64::from(model.data[0].geometry.line_size);
    let (mode, bucket_bytes, buckets) = match &request.mode {
        Some(v1::monitoring_request::Mode::Histogram(h)) => {
            let (width, count) = buckets(h, range, line)?;
            (
                Mode::Histogram {
                    buckets: count,
                    bucket_bytes: width,
                },
                width,
                count,
            )
        }
        Some(v1::monitoring_request::Mode::StaticCount(_)) | None => (Mode::Static, 0, 0),
    };
    // Refused like an unknown analysis: a value from a newer MRI must not silently mean SUMMED.
    let aggregation = v1::Aggregation::try_from(request.aggregation)
        .map(model::aggregation)
        .map_err(|_| {
            DaemonError::InvalidArgument(format!(
                "aggregation value {} is not one of PER_INSTANCE, PER_THREAD, SUMMED (unset means SUMMED)",
                request.aggregation
            ))
        })?;
    let spec = RequestSpec {
        region: region.index,
        target,
        event,
        mode,
        aggregation,
        analyses,
    };
    Ok(Resolved {
        info: model::request_info(
            pid,
            &spec,
            region,
            data.as_ref(),
            range,
            (buckets, bucket_bytes),
        ),
        spec,
    })
}

#[cfg(test)]
mod tests {
    use epcache_monitor::shm::layout::{DataStructureKind, RegionIndex, RegionKind};

    use super::*;

    fn regions() -> Vec<RegionInfo> {
        ["main", "init", "kernel", "kernel"]
            .iter()
            .enumerate()
            .map(|(i, name)| RegionInfo {
                index: RegionIndex(i as u32),
                file_id: 1,
                line: 10 * (i as u32 + 1),
                kind: RegionKind::Function,
                name: (*name).into(),
                file: "a.c".into(),
            })
            .collect()
    }

    fn structures() -> Vec<DataStructureInfo> {
        vec![
            DataStructureInfo {
                index: DataStructureIndex(0),
                name: "A".into(),
                range: AddressRange::new(4096, 40_000),
                kind: DataStructureKind::HeapRegistered,
                live: true,
            },
            DataStructureInfo {
                index: DataStructureIndex(1),
                name: "old".into(),
                range: AddressRange::new(100_000, 64),
                kind: DataStructureKind::HeapRegistered,
                live: false,
            },
        ]
    }

    fn by_name(name: &str) -> v1::RegionSelector {
        v1::RegionSelector {
            by: Some(v1::region_selector::By::Name(name.into())),
        }
    }

    #[test]
    fn nearest_names_prefer_related_then_close_ones() {
        let names = [
            "main",
            "init",
            "kernel",
            "gauss_original",
            "gauss_optimized",
        ];
        assert_eq!(nearest("kernal", names), ["kernel", "init", "main"]);
        assert_eq!(
            nearest("gauss", names)[..2],
            ["gauss_original", "gauss_optimized"]
        );
        assert!(nearest("x", std::iter::empty()).is_empty());
    }

    #[test]
    fn regions_resolve_by_name_key_and_index() {
        let r = regions();
        assert_eq!(region(1, Some(&by_name("init")), &r).unwrap().index.0, 1);
        let key = v1::RegionSelector {
            by: Some(v1::region_selector::By::Key(v1::RegionKey {
                file_id: 1,
                line: 40,
            })),
        };
        assert_eq!(region(1, Some(&key), &r).unwrap().index.0, 3);
        let err = region(1, Some(&by_name("kernal")), &r).unwrap_err();
        assert!(err.to_string().contains("nearest: kernel"), "{err}");
        let err = region(1, Some(&by_name("kernel")), &r).unwrap_err();
        assert!(matches!(err, DaemonError::Ambiguous { .. }), "{err}");
        assert!(
            err.to_string().contains("key 1:30") && err.to_string().contains("key 1:40"),
            "{err}"
        );
        assert!(matches!(
            region(1, None, &r),
            Err(DaemonError::InvalidArgument(_))
        ));
        // A target with no region yet (a Rust program before its first marker) says why.
        let err = region(1, Some(&by_name("sum_v")), &[]).unwrap_err();
        assert!(
            err.to_string()
                .contains("registered when the program first reaches them"),
            "{err}"
        );
    }

    #[test]
    fn data_resolves_live_names_and_refuses_freed_and_empty() {
        let d = structures();
        let name = |n: &str| v1::DataSelector {
            by: Some(v1::data_selector::By::Name(n.into())),
        };
        let (_, range, info) = data(1, Some(&name("A")), &d).unwrap();
        assert_eq!((range.start, range.len()), (4096, 40_000));
        assert_eq!(info.unwrap().name, "A");
        assert!(matches!(
            data(1, Some(&name("old")), &d),
            Err(DaemonError::FailedPrecondition(_))
        ));
        let err = data(1, Some(&name("a")), &d).unwrap_err();
        assert!(err.to_string().contains("nearest: A"), "{err}");
        let empty = v1::DataSelector {
            by: Some(v1::data_selector::By::Range(v1::AddressRange {
                start: 9,
                end: 9,
            })),
        };
        assert!(matches!(
            data(1, Some(&empty), &d),
            Err(DaemonError::InvalidArgument(_))
        ));
    }

    #[test]
    fn bucket_widths_are_whole_lines() {
        let count = |n| v1::HistogramMode {
            granularity: Some(v1::histogram_mode::Granularity::Buckets(n)),
        };
        let lines = |n| v1::HistogramMode {
            granularity: Some(v1::histogram_mode::Granularity::BucketLines(n)),
        };
        // The paper's A(100,100) of REAL: 40,000 bytes, 1,250 lines of 32 bytes, 25 buckets of 50.
        let a = AddressRange::new(4096, 40_000);
        assert_eq!(buckets(&count(25), a, 32).unwrap(), (1600, 25));
        assert_eq!(buckets(&lines(16), a, 32).unwrap(), (512, 79));
        // 3 lines in 2 buckets: 2 lines, then 1.
        assert_eq!(
            buckets(&count(2), AddressRange::new(0, 96), 32).unwrap(),
            (64, 2)
        );
        // More buckets than lines: one line each, fewer buckets.
        assert_eq!(
            buckets(&count(10), AddressRange::new(0, 64), 32).unwrap(),
            (32, 2)
        );
        assert!(buckets(&count(0), a, 32).is_err());
        assert!(buckets(&lines(1), AddressRange::new(0, 1 << 40), 32).is_err());
    }

    #[test]
    fn a_request_resolves_every_name_and_checks_the_event_level() {
        let model: HierarchySpec = "D1=8K,2,32;LL=1M,8,64".parse().unwrap();
        let mut req = v1::MonitoringRequest {
            region: Some(by_name("init")),
            data: Some(v1::DataSelector {
                by: Some(v1::data_selector::By::Name("A".into())),
            }),
            event: "papi_l1_ldm".into(),
            mode: Some(v1::monitoring_request::Mode::Histogram(v1::HistogramMode {
                granularity: Some(v1::histogram_mode::Granularity::Buckets(25)),
            })),
            aggregation: 0,
            analyses: vec![],
        };
        let r = request(5, &req, &regions(), &structures(), Some(&model)).unwrap();
        assert_eq!(r.info.event, "PAPI_L1_LDM");
        assert_eq!((r.info.buckets, r.info.bucket_bytes), (25, 1600));
        assert_eq!(r.info.aggregation(), v1::Aggregation::Summed);
        assert_eq!(r.spec.region, RegionIndex(1));
        req.event = "PAPI_L3_LDM".into();
        let err = request(5, &req, &regions(), &structures(), Some(&model)).unwrap_err();
        assert!(err.to_string().contains("has 2 data level"), "{err}");
        req.event = "PAPI_L1_XYZ".into();
        assert!(matches!(
            request(5, &req, &regions(), &structures(), Some(&model)),
            Err(DaemonError::InvalidArgument(_))
        ));
        req.event = "PAPI_L1_LDM".into();
        assert!(matches!(
            request(5, &req, &regions(), &structures(), None),
            Err(DaemonError::FailedPrecondition(_))
        ));
    }
}
