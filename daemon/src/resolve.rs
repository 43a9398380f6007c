//! Turning a tool's names into the segment's indices: regions by key, name or index, data
//! structures by name, range or index, allocation sites by FILE:LINE (checked against the
//! target's source files), events, and histogram bucket widths, with the nearest names in every
//! refusal.

use epcache_proto::v1;
use epcache_shm::layout::{
    self, DataStructureIndex, DataStructureInfo, DataStructureKind, Mode, RegionInfo, RequestSpec,
    RequestTarget, SiteBlock, SiteKey,
};
use epcache_shm::region_names;
use epcache_sim::cache::HierarchySpec;
use epcache_sim::monitor::{Event, EventError};
use epcache_sim::ranges::AddressRange;

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
pub fn nearest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let lower = name.to_lowercase();
    let mut scored: Vec<(bool, usize, &str)> = candidates
        .into_iter()
        .map(|c| {
            let cl = c.to_lowercase();
            let related = !lower.is_empty() && (cl.contains(&lower) || lower.contains(&cl));
            // A scoped name (`fields::work`, `alpha::A::init`) is as near as its last part.
            let short = c.rsplit("::").next().unwrap_or(c);
            (!related, distance(name, c).min(distance(name, short)), c)
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

/// Whether a data structure is offered as a nearest name: live ones, Fortran allocatables not
/// allocated yet and allocation sites (a request may name them before they hold bytes), but
/// not gfortran's own tables (`__vtab_...`, `__def_init_...`, `__copy_...`).
fn worth_suggesting(d: &DataStructureInfo) -> bool {
    let compilers = ["__vtab_", "__def_init_", "__copy_"];
    (d.live
        || matches!(
            d.kind,
            DataStructureKind::Allocatable | DataStructureKind::AllocationSite
        ))
        && !compilers.iter().any(|c| d.name.contains(c))
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
                nearest: {
                    let same_file: Vec<String> = regions
                        .iter()
                        .filter(|r| r.file_id == k.file_id)
                        .take(NEAREST)
                        .map(describe_region)
                        .collect();
                    if same_file.is_empty() {
                        vec![format!("the keys `epcache describe {pid}` lists")]
                    } else {
                        same_file
                    }
                },
            }),
        v1::region_selector::By::Name(name) => {
            // Exact names first, else the short, symbol or other-case forms of them.
            let found: Vec<&RegionInfo> =
                region_names::find(regions.iter().map(|r| r.name.as_str()), name)
                    .into_iter()
                    .map(|i| &regions[i])
                    .collect();
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
                    hint: "give its whole name as listed (an overload's with its parameter list), or one of the keys listed, FILE_ID:LINE, which `--region-key` of `epcache request` and `epcache trace record` and `--region` of `epcache run` take (an MRI client may give its index)",
                }),
            }
        }
    }
}

/// The bytes a request names, as far as the daemon can tell when it is placed.
#[derive(Debug, Clone)]
pub(crate) enum Data {
    /// Fixed now: an address range, or a data structure's bytes.
    Fixed {
        target: RequestTarget,
        range: AddressRange,
        structure: Option<DataStructureInfo>,
    },
    /// Known only in the target, at each entry of the region: an allocatable array (its bytes
    /// are wherever its descriptor points then, none while unallocated), or an allocation site
    /// (one of its live blocks).
    InTarget {
        target: RequestTarget,
        /// The allocatable, as it is now.
        structure: Option<DataStructureInfo>,
        /// The site, as the request names it.
        site: Option<(String, u32)>,
    },
}

/// The bytes `selector` names: fixed now, or bound in the target (allocatables, allocation
/// sites, which are followed to the block `block` asks for).
pub(crate) fn data(
    pid: u32,
    selector: Option<&v1::DataSelector>,
    regions: &[RegionInfo],
    structures: &[DataStructureInfo],
    block: SiteBlock,
) -> Result<Data, DaemonError> {
    let by = selector.and_then(|s| s.by.as_ref()).ok_or_else(|| {
        DaemonError::InvalidArgument(
            "the request names no data; give a data structure by name or index, an allocation site FILE:LINE, or an address range"
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
            return Ok(Data::Fixed {
                target: RequestTarget::Range(range),
                range,
                structure: None,
            });
        }
        v1::data_selector::By::Site(site) => {
            return allocation_site(pid, &site.file, site.line, regions, structures, block);
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
        v1::data_selector::By::Name(asked) => {
            // The same text, else a short or other-case form of one name (`u` for
            // `fields::u`, `U` in Fortran), as regions are found.
            let mut names: Vec<&str> =
                region_names::find(structures.iter().map(|d| d.name.as_str()), asked)
                    .into_iter()
                    .map(|i| structures[i].name.as_str())
                    .collect();
            names.sort_unstable();
            names.dedup();
            if names.len() > 1 {
                return Err(DaemonError::Ambiguous {
                    what: "data structure",
                    name: asked.clone(),
                    pid,
                    candidates: names.join(", "),
                    hint: "give the whole name",
                });
            }
            let name = &names.first().map_or(asked.as_str(), |n| n).to_owned();
            let all: Vec<&DataStructureInfo> =
                structures.iter().filter(|d| &d.name == name).collect();
            // An allocatable's entries share its name; the last is where it is now.
            if let Some(allocatable) = all
                .iter()
                .rev()
                .find(|d| d.kind == DataStructureKind::Allocatable)
            {
                return Ok(in_target_structure(allocatable));
            }
            // A name that is an allocation site's names its blocks, now and later.
            let site = site_name(name);
            if let Some((file, line)) = &site
                && all
                    .iter()
                    .all(|d| d.kind == DataStructureKind::AllocationSite)
            {
                return allocation_site(pid, file, *line, regions, structures, block);
            }
            let live: Vec<&DataStructureInfo> = all.iter().copied().filter(|d| d.live).collect();
            match (live.as_slice(), all.is_empty()) {
                ([one], _) => one,
                ([], true) => {
                    let mut nearest = nearest(
                        name,
                        structures
                            .iter()
                            .filter(|d| worth_suggesting(d))
                            .map(|d| d.name.as_str()),
                    );
                    if name.contains('%') {
                        nearest.push(
                            "(components are followed in variables of a derived type and in \
                             fixed-size arrays of at most 64 of them; those of an ALLOCATABLE \
                             array of derived type, a larger array or a class(...) variable are \
                             not: their blocks are named by their ALLOCATE line, FILE:LINE)"
                                .to_owned(),
                        );
                    }
                    return Err(DaemonError::NotFound {
                        what: "data structure",
                        name: name.clone(),
                        pid,
                        nearest,
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
    if chosen.kind == DataStructureKind::Allocatable {
        return Ok(in_target_structure(chosen));
    }
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
    Ok(Data::Fixed {
        target: RequestTarget::DataStructure(DataStructureIndex(chosen.index.0)),
        range: chosen.range,
        structure: Some(chosen.clone()),
    })
}

fn in_target_structure(d: &DataStructureInfo) -> Data {
    Data::InTarget {
        target: RequestTarget::DataStructure(d.index),
        structure: Some(d.clone()),
        site: None,
    }
}

/// `FILE:LINE` (a file name and a line number from 1), as heap blocks are named.
pub(crate) fn site_name(name: &str) -> Option<(String, u32)> {
    let (file, line) = name.rsplit_once(':')?;
    let line: u32 = line.parse().ok()?;
    (!file.is_empty() && !file.ends_with(':') && line > 0).then(|| (file.to_owned(), line))
}

/// The base name of a path.
fn base_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// An allocation site, checked against the target's source files: those of its regions (every
/// function with code) and of the sites that allocated so far. A file it has none of can never
/// allocate, so the request is refused with the nearest files.
fn allocation_site(
    pid: u32,
    file: &str,
    line: u32,
    regions: &[RegionInfo],
    structures: &[DataStructureInfo],
    block: SiteBlock,
) -> Result<Data, DaemonError> {
    // One array of a statement allocating several: `t@heat.f90:6`.
    let (array, file) = match file.rsplit_once('@') {
        Some((array, file)) if !array.is_empty() => (Some(array), file),
        _ => (None, file),
    };
    let base = base_name(file);
    if base.is_empty() || line == 0 {
        return Err(DaemonError::InvalidArgument(format!(
            "allocation site `{file}:{line}` needs a file name and a line from 1, e.g. prog.c:50"
        )));
    }
    let mut files: Vec<&str> = regions
        .iter()
        .map(|r| base_name(&r.file))
        .chain(
            structures
                .iter()
                .filter(|d| d.kind == DataStructureKind::AllocationSite)
                .filter_map(|d| d.name.rsplit_once(':').map(|(f, _)| f))
                .map(|f| f.rsplit_once('@').map_or(f, |(_, f)| f)),
        )
        .filter(|f| !f.is_empty())
        .collect();
    files.sort_unstable();
    files.dedup();
    if !files.contains(&base) {
        let sites = structures
            .iter()
            .filter(|d| d.kind == DataStructureKind::AllocationSite)
            .map(|d| d.name.as_str());
        let mut near = nearest(base, files.iter().copied());
        near.extend(
            nearest(&format!("{base}:{line}"), sites)
                .into_iter()
                .take(2),
        );
        return Err(DaemonError::NotFound {
            what: "source file for allocation site",
            name: format!("{file}:{line}"),
            pid,
            nearest: near,
        });
    }
    let site = match array {
        Some(array) => SiteKey::of_object(base, line, array),
        None => SiteKey::new(base, line),
    };
    let named = match array {
        Some(array) => format!("{array}@{base}"),
        None => base.to_owned(),
    };
    Ok(Data::InTarget {
        target: RequestTarget::AllocationSite { site, block },
        structure: None,
        site: Some((named, line)),
    })
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
    /// For a request whose bytes the target binds: how to describe its buckets once it has.
    pub(crate) bound_later: Option<BoundLater>,
}

/// How a request bound in the target (an allocation site, an allocatable) cuts its bytes into
/// histogram buckets, once the daemon learns what they are (`TargetEntry::bound`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BoundLater {
    /// `None` for a static count.
    pub(crate) granularity: Option<Granularity>,
    /// The target's L1 line size.
    pub(crate) line: u64,
}

/// A histogram's buckets, as asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Granularity {
    /// This many, of whole lines each.
    Count(u32),
    /// This many bytes each.
    Width(u64),
}

impl BoundLater {
    /// Bucket width and count over `range`, as the target cuts it (`monitoring::bucket_bytes`).
    pub(crate) fn buckets(&self, range: AddressRange) -> (u64, u32) {
        let width = match self.granularity {
            None => return (0, 0),
            Some(Granularity::Count(n)) => range
                .len()
                .div_ceil(u64::from(n.max(1)))
                .div_ceil(self.line)
                .max(1)
                .saturating_mul(self.line),
            Some(Granularity::Width(w)) => w.max(1),
        };
        (
            width,
            u32::try_from(range.len().div_ceil(width)).unwrap_or(u32::MAX),
        )
    }
}

/// Resolves one request against a target's regions, data structures and model.
pub(crate) fn request(
    pid: u32,
    request: &v1::MonitoringRequest,
    regions: &[RegionInfo],
    structures: &[DataStructureInfo],
    model: Option<&HierarchySpec>,
    cores: u32,
) -> Result<Resolved, DaemonError> {
    let region = region(pid, request.region.as_ref(), regions)?;
    let site_block = v1::SiteBlock::try_from(request.site_block)
        .map(model::site_block)
        .map_err(|_| {
            DaemonError::InvalidArgument(format!(
                "site_block value {} is not one of LATEST, LARGEST",
                request.site_block
            ))
        })?;
    let data = data(pid, request.data.as_ref(), regions, structures, site_block)?;
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
    if event.is_coherence() && cores < 2 {
        let threads = if cores == 0 {
            "its threads each simulate a cache hierarchy of their own (no EPCACHE_CORES, or one its cache could not make a machine of, as it said on its stderr)"
        } else {
            "its machine has one core"
        };
        return Err(DaemonError::FailedPrecondition(format!(
            "target pid {pid}: {event} counts coherence events, which only a machine of several cores simulates, and {threads}, so it would count nothing; start the program with EPCACHE_CORES=N (`epcache run --cores N`)"
        )));
    }
    if let Some(why) = event.never_counts_on(model, cores as usize) {
        return Err(DaemonError::FailedPrecondition(format!(
            "target pid {pid}: {why}"
        )));
    }
    let analyses = model::analysis_mask(&request.analyses).map_err(DaemonError::InvalidArgument)?;
    let line = u64::from(model.data[0].geometry.line_size);
    let (target, range, structure, site, bound_later) = match data {
        Data::Fixed {
            target,
            range,
            structure,
        } => (target, range, structure, None, None),
        Data::InTarget {
            target,
            structure,
            site,
        } => {
            let granularity = match &request.mode {
                Some(v1::monitoring_request::Mode::Histogram(h)) => Some(granularity(h, line)?),
                Some(
                    v1::monitoring_request::Mode::StaticCount(_)
                    | v1::monitoring_request::Mode::ByField(_),
                )
                | None => None,
            };
            let range = structure
                .as_ref()
                .filter(|d| d.live)
                .map_or(AddressRange::new(0, 0), |d| d.range);
            let later = BoundLater { granularity, line };
            (target, range, structure, site, Some(later))
        }
    };
    let (mode, bucket_bytes, buckets) = match (&request.mode, bound_later) {
        // Bound in the target, which cuts the bytes it binds to (the daemon says how, once it
        // knows them): a count splits them evenly, a width is kept.
        (
            _,
            Some(BoundLater {
                granularity: Some(g),
                ..
            }),
        ) => match g {
            Granularity::Count(n) => (
                Mode::Histogram {
                    buckets: n,
                    bucket_bytes: 0,
                },
                0,
                n,
            ),
            Granularity::Width(w) => (
                Mode::Histogram {
                    buckets: 1,
                    bucket_bytes: w,
                },
                w,
                1,
            ),
        },
        (Some(v1::monitoring_request::Mode::Histogram(h)), None) => {
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
        (Some(v1::monitoring_request::Mode::ByField(f)), _) => {
            let spans = field_spans(pid, f, structure.as_ref())?;
            (
                Mode::Fields(spans),
                spans.element_bytes(),
                spans.buckets() as u32,
            )
        }
        _ => (Mode::Static, 0, 0),
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
    let binding = if bound_later.is_some() {
        v1::Binding::Waiting
    } else {
        v1::Binding::Unspecified
    };
    let mut info = model::request_info(
        pid,
        &spec,
        region,
        structure.as_ref(),
        range,
        (buckets, bucket_bytes),
    );
    info.allocation_site = site.map(|(file, line)| v1::AllocationSite { file, line });
    info.site_block = if matches!(target, RequestTarget::AllocationSite { .. }) {
        model::site_block_to_mri(site_block) as i32
    } else {
        v1::SiteBlock::Unspecified as i32
    };
    info.binding = binding as i32;
    if let Some(v1::monitoring_request::Mode::ByField(f)) = &request.mode {
        info.fields = f.fields.clone();
    }
    Ok(Resolved {
        info,
        spec,
        bound_later,
    })
}

/// A by-field request's member table as a slot carries it, checked against the data
/// structure's element when its type is known.
fn field_spans(
    pid: u32,
    mode: &v1::FieldMode,
    structure: Option<&DataStructureInfo>,
) -> Result<layout::FieldSpans, DaemonError> {
    let name = structure.map_or_else(|| "the range".to_owned(), |d| d.name.clone());
    if mode.fields.is_empty() {
        return Err(DaemonError::InvalidArgument(format!(
            "the by-field request on {name} in pid {pid} lists no members; give the element's members (the epcache client reads them from the program's debug info)"
        )));
    }
    if let Some(shape) = structure.and_then(|d| d.details.shape.as_ref())
        && shape.element_bytes != mode.element_bytes
    {
        return Err(DaemonError::InvalidArgument(format!(
            "the by-field request on {name} in pid {pid} divides it into {}-byte elements, but its declared elements are {} bytes: the member table is of another type (an --element-type of another size, or another build of the program)",
            mode.element_bytes, shape.element_bytes
        )));
    }
    let members: Vec<(u64, u64)> = mode.fields.iter().map(|f| (f.offset, f.bytes)).collect();
    layout::FieldSpans::new(mode.element_bytes, &members).map_err(|e| {
        DaemonError::InvalidArgument(format!("the by-field request on {name} in pid {pid}: {e}"))
    })
}

/// How a histogram over bytes the target binds later is cut: a count (at most a result block's
/// largest) or a width in lines.
fn granularity(mode: &v1::HistogramMode, line: u64) -> Result<Granularity, DaemonError> {
    match mode.granularity {
        Some(v1::histogram_mode::Granularity::Buckets(n))
            if (1..=layout::MAX_BUCKETS_PER_SLOT).contains(&n) =>
        {
            Ok(Granularity::Count(n))
        }
        Some(v1::histogram_mode::Granularity::Buckets(n)) if n > 0 => {
            Err(DaemonError::InvalidArgument(format!(
                "{n} histogram buckets; no target holds more than {} per request",
                layout::MAX_BUCKETS_PER_SLOT
            )))
        }
        Some(v1::histogram_mode::Granularity::BucketLines(l)) if l > 0 => {
            Ok(Granularity::Width(u64::from(l) * line))
        }
        _ => Err(DaemonError::InvalidArgument(
            "a histogram needs a bucket count or a bucket width in lines of at least 1".into(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use epcache_shm::layout::{DataStructureKind, RegionIndex, RegionKind};

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
                details: Default::default(),
                context: Vec::new(),
            },
            DataStructureInfo {
                index: DataStructureIndex(1),
                name: "old".into(),
                range: AddressRange::new(100_000, 64),
                kind: DataStructureKind::HeapRegistered,
                live: false,
                details: Default::default(),
                context: Vec::new(),
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
        // A key of no file the target has points at `describe`, which lists the keys.
        let nowhere = v1::RegionSelector {
            by: Some(v1::region_selector::By::Key(v1::RegionKey {
                file_id: 99,
                line: 1,
            })),
        };
        let err = region(1, Some(&nowhere), &r).unwrap_err();
        assert!(err.to_string().contains("`epcache describe 1`"), "{err}");
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
        // Fortran module procedures are named with their module; the short name, the symbol
        // and capitals find one, and a short name two modules share is ambiguous.
        let mut f = regions();
        for name in ["mesh::init", "grid::init", "fields::sweep"] {
            let mut r = f[0].clone();
            r.index = RegionIndex(f.len() as u32);
            r.name = name.into();
            f.push(r);
        }
        let found = |n: &str| region(1, Some(&by_name(n)), &f).map(|r| r.name.clone());
        assert_eq!(found("__mesh_MOD_init").unwrap(), "mesh::init");
        assert_eq!(found("SWEEP").unwrap(), "fields::sweep");
        assert_eq!(found("init").unwrap(), "init", "the exact name first");
        f.remove(1);
        let err = region(1, Some(&by_name("init")), &f).unwrap_err();
        assert!(
            err.to_string().contains("mesh::init") && err.to_string().contains("grid::init"),
            "{err}"
        );
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
        let data = |selector: &v1::DataSelector| {
            super::data(1, Some(selector), &regions(), &d, SiteBlock::Latest)
        };
        let Data::Fixed {
            range, structure, ..
        } = data(&name("A")).unwrap()
        else {
            panic!("a live registered array has fixed bytes")
        };
        assert_eq!((range.start, range.len()), (4096, 40_000));
        assert_eq!(structure.unwrap().name, "A");
        assert!(matches!(
            data(&name("old")),
            Err(DaemonError::FailedPrecondition(_))
        ));
        let err = data(&name("Ab")).unwrap_err();
        assert!(err.to_string().contains("nearest: A"), "{err}");
        // A module allocatable not allocated yet is suggested (a request may wait for it);
        // gfortran's own tables are not.
        let mut d = structures();
        for (name, kind) in [
            ("fields::u", DataStructureKind::Allocatable),
            ("fields::__vtab_fields_Grid_t", DataStructureKind::Global),
        ] {
            d.push(DataStructureInfo {
                index: DataStructureIndex(d.len() as u32),
                name: name.into(),
                range: AddressRange::new(0, 0),
                kind,
                live: name.contains("vtab"),
                details: Default::default(),
                context: Vec::new(),
            });
        }
        let err = super::data(1, Some(&name("w")), &regions(), &d, SiteBlock::Latest)
            .unwrap_err()
            .to_string();
        assert!(!err.contains("vtab"), "{err}");
        // A short or other-case name finds the one array it stands for; two make it ambiguous.
        for short in ["u", "U", "fields::U"] {
            let found = super::data(1, Some(&name(short)), &regions(), &d, SiteBlock::Latest);
            assert!(
                matches!(found, Ok(Data::InTarget { .. })),
                "{short}: {found:?}"
            );
        }
        let mut two = d.clone();
        let mut other = two[2].clone();
        other.name = "grid::u".into();
        two.push(other);
        let err = super::data(1, Some(&name("u")), &regions(), &two, SiteBlock::Latest)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("fields::u") && err.contains("grid::u"),
            "{err}"
        );
        let empty = v1::DataSelector {
            by: Some(v1::data_selector::By::Range(v1::AddressRange {
                start: 9,
                end: 9,
            })),
        };
        assert!(matches!(data(&empty), Err(DaemonError::InvalidArgument(_))));
    }

    /// Issue 25: a heap array could not be requested before the program allocated it. A name
    /// of the form FILE:LINE in one of the target's source files is an allocation site, bound in
    /// the target, whether or not a block exists yet; a file the target has no code in can
    /// never allocate and is refused with the nearest files; a live site's name follows the
    /// site rather than the one block; an allocatable waits for its allocation.
    #[test]
    fn allocation_sites_and_allocatables_are_bound_in_the_target() {
        let mut d = structures();
        d.push(DataStructureInfo {
            index: DataStructureIndex(2),
            name: "a.c:77".into(),
            range: AddressRange::new(1 << 20, 8192),
            kind: DataStructureKind::AllocationSite,
            live: true,
            details: Default::default(),
            context: Vec::new(),
        });
        d.push(DataStructureInfo {
            index: DataStructureIndex(3),
            name: "fields::u".into(),
            range: AddressRange::new(0, 0),
            kind: DataStructureKind::Allocatable,
            live: false,
            details: Default::default(),
            context: Vec::new(),
        });
        let name = |n: &str| v1::DataSelector {
            by: Some(v1::data_selector::By::Name(n.into())),
        };
        let data = |selector: &v1::DataSelector, block| {
            super::data(1, Some(selector), &regions(), &d, block)
        };
        // Not allocated yet: the file is the regions' own.
        let Data::InTarget { target, site, .. } =
            data(&name("a.c:50"), SiteBlock::Largest).unwrap()
        else {
            panic!("a site is bound in the target")
        };
        assert_eq!(
            target,
            RequestTarget::AllocationSite {
                site: SiteKey::new("a.c", 50),
                block: SiteBlock::Largest
            }
        );
        assert_eq!(site, Some(("a.c".to_owned(), 50)));
        // A path names the same site as its base name.
        let by_site = v1::DataSelector {
            by: Some(v1::data_selector::By::Site(v1::AllocationSite {
                file: "/src/a.c".into(),
                line: 50,
            })),
        };
        assert!(matches!(
            data(&by_site, SiteBlock::Latest).unwrap(),
            Data::InTarget {
                target: RequestTarget::AllocationSite { site, .. },
                ..
            } if site == SiteKey::new("a.c", 50)
        ));
        // A live block's name is its site's: later blocks are followed.
        assert!(matches!(
            data(&name("a.c:77"), SiteBlock::Latest).unwrap(),
            Data::InTarget {
                target: RequestTarget::AllocationSite { .. },
                ..
            }
        ));
        let err = data(&name("b.c:50"), SiteBlock::Latest).unwrap_err();
        assert!(matches!(err, DaemonError::NotFound { .. }), "{err}");
        assert!(
            err.to_string()
                .contains("source file for allocation site `b.c:50`")
                && err.to_string().contains("nearest: a.c"),
            "{err}"
        );
        // Not a site: a line must follow the colon.
        assert!(matches!(
            data(&name("a.c:x"), SiteBlock::Latest),
            Err(DaemonError::NotFound { .. })
        ));
        let Data::InTarget {
            target, structure, ..
        } = data(&name("fields::u"), SiteBlock::Latest).unwrap()
        else {
            panic!("an allocatable is bound in the target")
        };
        assert_eq!(target, RequestTarget::DataStructure(DataStructureIndex(3)));
        assert_eq!(structure.unwrap().name, "fields::u");
    }

    /// A histogram over bytes bound later is cut by the target as the daemon then describes it.
    #[test]
    fn a_request_bound_later_is_cut_when_bound() {
        let model: HierarchySpec = "D1=8K,2,32;LL=1M,8,64".parse().unwrap();
        let req = v1::MonitoringRequest {
            region: Some(by_name("init")),
            data: Some(v1::DataSelector {
                by: Some(v1::data_selector::By::Name("a.c:50".into())),
            }),
            event: "PAPI_L1_LDM".into(),
            mode: Some(v1::monitoring_request::Mode::Histogram(v1::HistogramMode {
                granularity: Some(v1::histogram_mode::Granularity::Buckets(8)),
            })),
            aggregation: 0,
            analyses: vec![],
            site_block: 0,
        };
        let r = request(5, &req, &regions(), &structures(), Some(&model), 0).unwrap();
        assert_eq!(
            r.spec.mode,
            Mode::Histogram {
                buckets: 8,
                bucket_bytes: 0
            }
        );
        assert_eq!(r.info.binding(), v1::Binding::Waiting);
        assert_eq!(r.info.site_block(), v1::SiteBlock::Latest);
        let later = r.bound_later.unwrap();
        // 20,000 doubles in 8 buckets of whole 32-byte lines.
        assert_eq!(later.buckets(AddressRange::new(4096, 160_000)), (20_000, 8));
        assert_eq!(later.buckets(AddressRange::new(0, 100)), (32, 4));
        let bad = v1::MonitoringRequest {
            site_block: 7,
            ..req
        };
        assert!(matches!(
            request(5, &bad, &regions(), &structures(), Some(&model), 0),
            Err(DaemonError::InvalidArgument(_))
        ));
    }

    #[test]
    fn coherence_events_need_a_machine_of_several_cores() {
        let model: HierarchySpec = "D1=32K,2,32;LL=1M,8,64,shared".parse().unwrap();
        let req = v1::MonitoringRequest {
            region: Some(by_name("init")),
            data: Some(v1::DataSelector {
                by: Some(v1::data_selector::By::Name("a.c:50".into())),
            }),
            event: "EPC_L1_FSM".into(),
            mode: Some(v1::monitoring_request::Mode::StaticCount(v1::StaticMode {})),
            aggregation: 0,
            analyses: vec![],
            site_block: 0,
        };
        let refused = |cores| request(5, &req, &regions(), &structures(), Some(&model), cores);
        for (cores, says) in [(0, "hierarchy of their own"), (1, "one core")] {
            match refused(cores) {
                Err(DaemonError::FailedPrecondition(why)) => {
                    assert!(why.contains(says) && why.contains("EPCACHE_CORES"), "{why}");
                }
                other => panic!("{cores} cores: {other:?}"),
            }
        }
        assert!(refused(2).is_ok());
        // At the last level, which both cores share, a coherence miss never happens.
        let at_ll = v1::MonitoringRequest {
            event: "EPC_L2_TSM".into(),
            ..req.clone()
        };
        match request(5, &at_ll, &regions(), &structures(), Some(&model), 2) {
            Err(DaemonError::FailedPrecondition(why)) => {
                assert!(
                    why.contains("LL is one cache shared by all 2 cores"),
                    "{why}"
                );
            }
            other => panic!("{other:?}"),
        }
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
            site_block: 0,
        };
        let r = request(5, &req, &regions(), &structures(), Some(&model), 0).unwrap();
        assert_eq!(r.info.event, "PAPI_L1_LDM");
        assert_eq!((r.info.buckets, r.info.bucket_bytes), (25, 1600));
        assert_eq!(r.info.aggregation(), v1::Aggregation::Summed);
        assert_eq!(r.spec.region, RegionIndex(1));
        req.event = "PAPI_L3_LDM".into();
        let err = request(5, &req, &regions(), &structures(), Some(&model), 0).unwrap_err();
        assert!(err.to_string().contains("has 2 data level"), "{err}");
        req.event = "PAPI_L1_XYZ".into();
        assert!(matches!(
            request(5, &req, &regions(), &structures(), Some(&model), 0),
            Err(DaemonError::InvalidArgument(_))
        ));
        req.event = "PAPI_L1_LDM".into();
        assert!(matches!(
            request(5, &req, &regions(), &structures(), None, 0),
            Err(DaemonError::FailedPrecondition(_))
        ));
    }

    fn particle_fields() -> Vec<v1::Field> {
        [("x", 0, 8), ("y", 8, 8), ("z", 16, 8), ("id", 24, 4)]
            .into_iter()
            .map(|(name, offset, bytes)| v1::Field {
                name: name.into(),
                offset,
                bytes,
            })
            .collect()
    }

    #[test]
    fn a_by_field_request_carries_its_member_table_and_is_checked_against_the_type() {
        let model: HierarchySpec = "D1=8K,2,32;LL=1M,8,64".parse().unwrap();
        let by_field = |element_bytes, fields| v1::MonitoringRequest {
            region: Some(by_name("init")),
            data: Some(v1::DataSelector {
                by: Some(v1::data_selector::By::Name("A".into())),
            }),
            event: "PAPI_L1_DCR".into(),
            mode: Some(v1::monitoring_request::Mode::ByField(v1::FieldMode {
                element_bytes,
                fields,
            })),
            ..Default::default()
        };
        let r = request(
            5,
            &by_field(32, particle_fields()),
            &regions(),
            &structures(),
            Some(&model),
            0,
        )
        .unwrap();
        let Mode::Fields(spans) = r.spec.mode else {
            panic!("{:?}", r.spec.mode)
        };
        assert_eq!(
            spans.members().collect::<Vec<_>>(),
            [(0, 8), (8, 8), (16, 8), (24, 4)]
        );
        assert_eq!((r.info.buckets, r.info.bucket_bytes), (5, 32));
        assert_eq!(r.info.fields, particle_fields());
        // No members; a member past the element; an element the type contradicts.
        let e = request(
            5,
            &by_field(32, vec![]),
            &regions(),
            &structures(),
            Some(&model),
            0,
        )
        .unwrap_err();
        assert!(e.to_string().contains("lists no members"), "{e}");
        let e = request(
            5,
            &by_field(16, particle_fields()),
            &regions(),
            &structures(),
            Some(&model),
            0,
        )
        .unwrap_err();
        assert!(
            e.to_string().contains("runs past the 16-byte element"),
            "{e}"
        );
        let mut typed = structures();
        typed[0].details.shape = Some(epcache_shm::layout::Shape {
            element_bytes: 24,
            dims: vec![],
            column_major: false,
        });
        let e = request(
            5,
            &by_field(32, particle_fields()),
            &regions(),
            &typed,
            Some(&model),
            0,
        )
        .unwrap_err();
        assert!(
            e.to_string().contains("its declared elements are 24 bytes"),
            "{e}"
        );
    }
}
