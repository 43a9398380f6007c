//! Conversion between the monitor's types and MRI messages (the only place it happens): the cache
//! description, regions, data structures, states, halts, request options, histogram buckets,
//! per-thread rows and analysis reports.

use epcache_proto::v1;
use epcache_shm::layout::{
    Aggregation, Boundary, DataStructureInfo, DataStructureKind, RegionInfo, RegionKind,
    RequestSpec, ResultRow, RowThreads, Shape, SiteBlock, TargetState, TraceState, analysis_bits,
};
use epcache_shm::tool::TraceStatus;
use epcache_sim::analysis::{
    AnalysisReport, DistanceHistogram, EvictorMatrix, MissClassCounts, MissClassReport,
    RangeAnalysis, ReuseReport,
};
use epcache_sim::cache::{HierarchySpec, LevelSpec, Replacement, Sharing, WritePolicy};
use epcache_sim::monitor::Event;
use epcache_sim::ranges::AddressRange;

/// The MRI description of a trace order: `status` as the trace block holds it, `ended` when the
/// target is gone (an order it never finished is then lost).
pub fn trace_info(
    pid: u32,
    id: u32,
    region: String,
    output: String,
    status: &TraceStatus,
    ended: bool,
) -> v1::TraceInfo {
    let state = match status.state {
        TraceState::Claimed | TraceState::Pending | TraceState::Recording if ended => {
            v1::TraceState::Lost
        }
        TraceState::Free | TraceState::Claimed | TraceState::Pending => v1::TraceState::Pending,
        TraceState::Recording => v1::TraceState::Recording,
        TraceState::Written => v1::TraceState::Written,
        TraceState::Failed => v1::TraceState::Failed,
        TraceState::Refused => v1::TraceState::Refused,
    };
    let o = &status.outcome;
    let settled = matches!(status.state, TraceState::Written | TraceState::Failed);
    v1::TraceInfo {
        pid,
        id,
        region,
        output,
        state: state as i32,
        accesses: if settled { o.accesses } else { 0 },
        instances: if settled { o.instances } else { 0 },
        complete: settled && o.complete,
        budget_reached: settled && o.budget_reached,
        message: match state {
            v1::TraceState::Refused => "the target left its start wait before taking the order (its EPCACHE_WAIT ran out, or a tool released it first); nothing is recorded".into(),
            v1::TraceState::Lost => "the target ended before it said the trace was written (killed, crashed, or ended without its exit handlers); the file, if any, is incomplete".into(),
            _ if settled => o.message.clone(),
            _ => String::new(),
        },
    }
}

/// The MRI description of a target's simulated hardware.
pub fn cache_model(
    spec: &HierarchySpec,
    counters: u32,
    counter_bits: u32,
    cores: u32,
) -> v1::CacheModel {
    let level = |l: &LevelSpec, instruction_only: bool| {
        let (replacement, random_seed) = match l.replacement {
            Replacement::Lru => (v1::Replacement::Lru, 0),
            Replacement::TreePlru => (v1::Replacement::TreePlru, 0),
            Replacement::Random { seed } => (v1::Replacement::Random, seed),
        };
        let write_policy = match l.write {
            WritePolicy::WriteBack => v1::WritePolicy::WriteBack,
            WritePolicy::WriteThrough => v1::WritePolicy::WriteThrough,
        };
        v1::CacheLevel {
            name: l.name.clone(),
            size_bytes: l.geometry.size,
            associativity: l.geometry.assoc,
            line_size: l.geometry.line_size,
            replacement: replacement as i32,
            random_seed,
            write_policy: write_policy as i32,
            inclusive: l.inclusive,
            instruction_only,
            shared_by: match l.sharing {
                Sharing::Private => 1,
                Sharing::Shared { cores } => cores.unwrap_or(0),
            },
        }
    };
    v1::CacheModel {
        spec: spec.to_string(),
        levels: spec
            .instr
            .iter()
            .map(|l| level(l, true))
            .chain(spec.data.iter().map(|l| level(l, false)))
            .collect(),
        counters,
        counter_bits,
        cores,
    }
}

/// An address range as the MRI carries it.
pub fn range(r: AddressRange) -> v1::AddressRange {
    v1::AddressRange {
        start: r.start,
        end: r.end,
    }
}

/// A region as the MRI describes it.
pub fn region(r: &RegionInfo) -> v1::Region {
    v1::Region {
        index: r.index.0,
        key: Some(v1::RegionKey {
            file_id: r.file_id,
            line: r.line,
        }),
        name: r.name.clone(),
        file: r.file.clone(),
        kind: match r.kind {
            RegionKind::Function => v1::RegionKind::Function,
            RegionKind::Marker => v1::RegionKind::Marker,
        } as i32,
    }
}

/// A data structure as the MRI describes it.
pub fn data_structure(d: &DataStructureInfo) -> v1::DataStructure {
    v1::DataStructure {
        index: d.index.0,
        name: d.name.clone(),
        range: Some(range(d.range)),
        kind: match d.kind {
            DataStructureKind::Global => v1::DataStructureKind::Global,
            DataStructureKind::HeapRegistered => v1::DataStructureKind::HeapRegistered,
            DataStructureKind::AllocationSite => v1::DataStructureKind::AllocationSite,
            DataStructureKind::Allocatable => v1::DataStructureKind::Allocatable,
        } as i32,
        live: d.live,
        shape: d.details.shape.as_ref().map(shape),
        context: d.context.clone(),
    }
}

/// A data structure's shape as the MRI carries it.
pub fn shape(s: &Shape) -> v1::ArrayShape {
    v1::ArrayShape {
        element_bytes: s.element_bytes,
        dimensions: s
            .dims
            .iter()
            .map(|d| v1::Dimension {
                lower_bound: d.lower,
                extent: d.extent,
            })
            .collect(),
        column_major: s.column_major,
    }
}

/// The segment's site block for an MRI one; unset means the latest.
pub fn site_block(b: v1::SiteBlock) -> SiteBlock {
    match b {
        v1::SiteBlock::Largest => SiteBlock::Largest,
        v1::SiteBlock::Latest | v1::SiteBlock::Unspecified => SiteBlock::Latest,
    }
}

/// The MRI's name for a segment site block.
pub fn site_block_to_mri(b: SiteBlock) -> v1::SiteBlock {
    match b {
        SiteBlock::Latest => v1::SiteBlock::Latest,
        SiteBlock::Largest => v1::SiteBlock::Largest,
    }
}

/// A boundary as the MRI names it.
pub fn boundary(b: Boundary) -> v1::Boundary {
    match b {
        Boundary::Entry => v1::Boundary::Entry,
        Boundary::Exit => v1::Boundary::Exit,
    }
}

/// A live target's state as the MRI names it (ends are the daemon's knowledge, not the segment's).
pub fn target_state(s: TargetState) -> v1::TargetState {
    match s {
        TargetState::Starting => v1::TargetState::Starting,
        TargetState::Running => v1::TargetState::Running,
        TargetState::WaitingForTool => v1::TargetState::WaitingForTool,
        TargetState::Halted => v1::TargetState::Halted,
        TargetState::Exited => v1::TargetState::Exited,
    }
}

/// The segment's aggregation for an MRI one; unset means summed.
pub fn aggregation(a: v1::Aggregation) -> Aggregation {
    match a {
        v1::Aggregation::PerInstance => Aggregation::PerInstance,
        v1::Aggregation::PerThread => Aggregation::PerThread,
        v1::Aggregation::Summed | v1::Aggregation::Unspecified => Aggregation::Summed,
    }
}

/// The MRI's name for a segment aggregation.
pub fn aggregation_to_mri(a: Aggregation) -> v1::Aggregation {
    match a {
        Aggregation::PerInstance => v1::Aggregation::PerInstance,
        Aggregation::PerThread => v1::Aggregation::PerThread,
        Aggregation::Summed => v1::Aggregation::Summed,
    }
}

/// The segment's analysis bits for a list of MRI analyses; an unknown or unset value is named.
pub fn analysis_mask(list: &[i32]) -> Result<u16, String> {
    list.iter().try_fold(0u16, |bits, &a| {
        Ok(bits
            | match v1::Analysis::try_from(a) {
                Ok(v1::Analysis::Reuse) => analysis_bits::REUSE,
                Ok(v1::Analysis::Evictors) => analysis_bits::EVICTORS,
                Ok(v1::Analysis::MissClasses) => analysis_bits::MISS_CLASSES,
                Ok(v1::Analysis::ReuseDistance) => analysis_bits::REUSE_DISTANCE,
                _ => {
                    return Err(format!(
                        "analysis value {a} is not one of REUSE, EVICTORS, MISS_CLASSES, REUSE_DISTANCE"
                    ));
                }
            })
    })
}

/// The MRI analyses a bit set stands for, in a fixed order.
pub fn analyses_from_bits(bits: u16) -> Vec<i32> {
    [
        (analysis_bits::REUSE, v1::Analysis::Reuse),
        (analysis_bits::EVICTORS, v1::Analysis::Evictors),
        (analysis_bits::MISS_CLASSES, v1::Analysis::MissClasses),
        (analysis_bits::REUSE_DISTANCE, v1::Analysis::ReuseDistance),
    ]
    .into_iter()
    .filter(|&(bit, _)| bits & bit != 0)
    .map(|(_, a)| a as i32)
    .collect()
}

/// The events a hierarchy with `data_levels` data levels can count, named and described.
pub fn events(data_levels: usize) -> Vec<v1::EventInfo> {
    Event::catalogue(data_levels)
        .into_iter()
        .map(|(name, description)| v1::EventInfo { name, description })
        .collect()
}

/// Histogram counts with the bytes each bucket covers: bucket `i` starts at
/// `range.start + i * bucket_bytes`, the last one is cut at `range.end`. Counts beyond the range
/// (which a well-behaved target never writes) are dropped rather than given invented addresses.
pub fn buckets(range: AddressRange, bucket_bytes: u64, counts: &[u64]) -> Vec<v1::Bucket> {
    let mut start = range.start;
    counts
        .iter()
        .map_while(|&count| {
            if start >= range.end || bucket_bytes == 0 {
                return None;
            }
            let end = start.saturating_add(bucket_bytes).min(range.end);
            let bucket = v1::Bucket {
                range: Some(v1::AddressRange { start, end }),
                count,
                field: String::new(),
            };
            start = end;
            Some(bucket)
        })
        .collect()
}

/// How the MRI describes a request: its region, data structure (when it names one), the bytes
/// it counts, and a histogram's `buckets` of `bucket_bytes` (0 and 0 for a static count). The
/// id and owner are the caller's.
pub fn request_info(
    pid: u32,
    spec: &RequestSpec,
    region: &RegionInfo,
    data: Option<&DataStructureInfo>,
    counted: AddressRange,
    (buckets, bucket_bytes): (u32, u64),
) -> v1::RequestInfo {
    v1::RequestInfo {
        id: 0,
        pid,
        region: Some(self::region(region)),
        data_structure: data.map(data_structure),
        range: Some(range(counted)),
        event: spec.event.to_string(),
        buckets,
        bucket_bytes,
        aggregation: aggregation_to_mri(spec.aggregation) as i32,
        analyses: analyses_from_bits(spec.analyses),
        owner: String::new(),
        // A request on an allocation site: the caller says which and how it binds.
        ..v1::RequestInfo::default()
    }
}

/// A per-thread row of a result, with its buckets' bytes as [`buckets_of`] gives them.
pub fn thread_result(
    row: &ResultRow,
    info: &v1::RequestInfo,
    counted: AddressRange,
) -> v1::ThreadResult {
    let (thread_id, openmp_thread, thread_index, other_threads) = match row.threads {
        RowThreads::Thread { tid, openmp, index } => (tid, openmp, index, false),
        RowThreads::Others(_) => (0, None, None, true),
        RowThreads::All => (0, None, None, false),
    };
    v1::ThreadResult {
        thread_id,
        openmp_thread,
        thread_index,
        other_threads,
        threads: row.threads.threads(),
        instances: row.instances,
        total: row.total,
        buckets: buckets_of(info, counted, &row.buckets),
    }
}

/// A request's histogram counts as MRI buckets: by member for a by-field request
/// ([`field_buckets`]), else by bytes ([`buckets`]).
pub fn buckets_of(
    info: &v1::RequestInfo,
    counted: AddressRange,
    counts: &[u64],
) -> Vec<v1::Bucket> {
    if info.fields.is_empty() {
        buckets(counted, info.bucket_bytes, counts)
    } else {
        field_buckets(counted.start, &info.fields, counts)
    }
}

/// What a by-field histogram's bucket of the padding is called.
pub const PADDING: &str = "(padding)";

/// A by-field histogram's counts by member: bucket `i` is `fields[i]` (its range the member's
/// bytes in the first element, from `start`), the one after them the padding (an empty range).
/// Counts past those (which a well-behaved target never writes) are dropped.
pub fn field_buckets(start: u64, fields: &[v1::Field], counts: &[u64]) -> Vec<v1::Bucket> {
    counts
        .iter()
        .zip(
            fields
                .iter()
                .map(|f| {
                    let first = start.saturating_add(f.offset);
                    (f.name.clone(), first, first.saturating_add(f.bytes))
                })
                .chain([(PADDING.to_owned(), start, start)]),
        )
        .map(|(&count, (field, start, end))| v1::Bucket {
            range: Some(v1::AddressRange { start, end }),
            count,
            field,
        })
        .collect()
}

fn miss_class_counts(c: &MissClassCounts) -> v1::MissClassCounts {
    v1::MissClassCounts {
        compulsory: c.compulsory,
        capacity: c.capacity,
        conflict: c.conflict,
    }
}

fn miss_class_report(m: &MissClassReport) -> v1::MissClassReport {
    v1::MissClassReport {
        total: Some(miss_class_counts(&m.total)),
        bucket_compulsory: m.buckets.compulsory.clone(),
        bucket_capacity: m.buckets.capacity.clone(),
        bucket_conflict: m.buckets.conflict.clone(),
    }
}

/// A reuse report as the MRI carries it; its per-member spatial use is named by `fields` (the
/// request's member table) and dropped when the target wrote a different number of members.
fn reuse_report(r: &ReuseReport, fields: &[v1::Field]) -> v1::ReuseReport {
    let names = fields
        .iter()
        .map(|f| f.name.as_str())
        .chain([PADDING])
        .collect::<Vec<_>>();
    let field_use = if r.fields.len() == names.len() {
        r.fields
            .iter()
            .zip(names)
            .map(|(u, name)| v1::FieldUse {
                name: name.to_owned(),
                fetched_bytes: u.fetched_bytes,
                used_bytes: u.used_bytes,
                spatial_use: u.spatial_use.unwrap_or(0.0),
            })
            .collect()
    } else {
        Vec::new()
    };
    v1::ReuseReport {
        fields: field_use,
        residencies: r.residencies,
        accesses: r.accesses,
        bytes_used: r.bytes_used,
        temporal_reuse: r.temporal_reuse.unwrap_or(0.0),
        spatial_use: r.spatial_use.unwrap_or(0.0),
        bucket_residencies: r.buckets.residencies.clone(),
        bucket_accesses: r.buckets.accesses.clone(),
        bucket_bytes_used: r.buckets.bytes_used.clone(),
    }
}

fn distance_histogram(d: &DistanceHistogram) -> v1::DistanceHistogram {
    v1::DistanceHistogram {
        accesses: d.accesses,
        cold: d.cold,
        log2: d.log2.clone(),
        fine: d.fine.clone(),
    }
}

fn evictor_matrix(e: &EvictorMatrix) -> v1::EvictorMatrix {
    v1::EvictorMatrix {
        names: e.names.clone(),
        rows: e
            .counts
            .iter()
            .map(|row| v1::EvictorRow {
                victims: row.clone(),
            })
            .collect(),
    }
}

fn range_analysis(r: &RangeAnalysis, fields: &[v1::Field]) -> v1::RangeAnalysis {
    v1::RangeAnalysis {
        name: r.name.clone(),
        range: Some(v1::AddressRange {
            start: r.start,
            end: r.end,
        }),
        bucket_bytes: r.bucket_bytes,
        reuse: r.reuse.as_ref().map(|u| reuse_report(u, fields)),
        miss_classes: r.miss_classes.as_ref().map(miss_class_report),
        reuse_distance: r.reuse_distance.as_ref().map(distance_histogram),
    }
}

/// An analysis report as the MRI carries it; `fields` is the request's member table (empty
/// unless it counts by field).
pub fn analysis_report(a: &AnalysisReport, fields: &[v1::Field]) -> v1::AnalysisReport {
    v1::AnalysisReport {
        level: a.level as u32,
        level_name: a.level_name.clone(),
        line_size: a.line_size,
        lines: a.lines,
        ranges: a.ranges.iter().map(|r| range_analysis(r, fields)).collect(),
        miss_classes: a.miss_classes.as_ref().map(miss_class_counts),
        evictors: a.evictors.as_ref().map(evictor_matrix),
        reuse_distance: a.reuse_distance.as_ref().map(distance_histogram),
        distinct_lines: a.distinct_lines.unwrap_or(0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_model_lists_every_level_with_its_policies() {
        let spec: HierarchySpec = "I1=32K,8,64;D1=32K,8,64,plru;L2=1M,16,64,random:5,wt,inclusive"
            .parse()
            .unwrap();
        let m = cache_model(&spec, 64, 32, 0);
        assert_eq!(m.spec, spec.to_string());
        let names: Vec<_> = m.levels.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(names, ["I1", "D1", "L2"]);
        assert!(m.levels[0].instruction_only && !m.levels[1].instruction_only);
        assert_eq!(m.levels[1].replacement(), v1::Replacement::TreePlru);
        assert_eq!(m.levels[2].replacement(), v1::Replacement::Random);
        assert_eq!(m.levels[2].random_seed, 5);
        assert_eq!(m.levels[2].write_policy(), v1::WritePolicy::WriteThrough);
        assert!(m.levels[2].inclusive);
        assert_eq!(m.levels[2].size_bytes, 1 << 20);
        assert!(
            m.levels.iter().all(|l| l.shared_by == 1),
            "private by default"
        );
        let machine: HierarchySpec = "D1=32K,8,64;L2=1M,16,64,shared=2;L3=8M,16,64,shared"
            .parse()
            .unwrap();
        let on_four_cores = cache_model(&machine, 64, 32, 4);
        let shared: Vec<u32> = on_four_cores.levels.iter().map(|l| l.shared_by).collect();
        assert_eq!(shared, [1, 2, 0]);
        assert_eq!(on_four_cores.cores, 4);
        assert_eq!((m.counters, m.counter_bits, m.cores), (64, 32, 0));
    }

    /// What issue 25 asks the data-structure table to publish reaches the MRI: C's
    /// `double a[100][50]` (row-major, from 0) and Fortran's `real a(100,100)` (column-major,
    /// from 1), and an allocatable's kind.
    #[test]
    fn shapes_and_allocatables_reach_the_mri() {
        use epcache_shm::layout::{DataStructureDetails, DataStructureIndex, Dimension, SiteKey};
        let structure = |kind, shape| DataStructureInfo {
            index: DataStructureIndex(3),
            name: "a".into(),
            range: AddressRange::new(0x1000, 40_000),
            kind,
            live: true,
            details: DataStructureDetails {
                site: Some(SiteKey::new("prog.f90", 32)),
                shape: Some(shape),
            },
            context: Vec::new(),
        };
        let c = data_structure(&structure(
            DataStructureKind::Global,
            Shape {
                element_bytes: 8,
                dims: vec![
                    Dimension {
                        lower: 0,
                        extent: 100,
                    },
                    Dimension {
                        lower: 0,
                        extent: 50,
                    },
                ],
                column_major: false,
            },
        ));
        let c_shape = c.shape.unwrap();
        assert_eq!(c_shape.element_bytes, 8);
        assert!(!c_shape.column_major);
        let dims: Vec<_> = c_shape
            .dimensions
            .iter()
            .map(|d| (d.lower_bound, d.extent))
            .collect();
        assert_eq!(dims, [(0, 100), (0, 50)]);
        let fortran = data_structure(&structure(
            DataStructureKind::Allocatable,
            Shape {
                element_bytes: 4,
                dims: vec![
                    Dimension {
                        lower: 1,
                        extent: 100
                    };
                    2
                ],
                column_major: true,
            },
        ));
        assert_eq!(fortran.kind(), v1::DataStructureKind::Allocatable);
        let f_shape = fortran.shape.unwrap();
        assert!(f_shape.column_major);
        assert_eq!(f_shape.element_bytes, 4);
        assert_eq!(
            f_shape
                .dimensions
                .iter()
                .map(|d| (d.lower_bound, d.extent))
                .collect::<Vec<_>>(),
            [(1, 100), (1, 100)]
        );
    }

    #[test]
    fn spatial_use_per_field_is_named_by_member_or_dropped_when_the_target_miscounts() {
        let fields: Vec<_> = ["x", "id"]
            .into_iter()
            .map(|name| v1::Field {
                name: name.into(),
                ..Default::default()
            })
            .collect();
        let used = |fetched_bytes, used_bytes| epcache_sim::analysis::FieldUse {
            fetched_bytes,
            used_bytes,
            spatial_use: Some(used_bytes as f64 / fetched_bytes as f64),
        };
        let mut report = ReuseReport {
            residencies: 2,
            accesses: 2,
            bytes_used: 16,
            temporal_reuse: Some(1.0),
            spatial_use: Some(0.125),
            buckets: Default::default(),
            fields: vec![used(16, 16), used(8, 0), used(8, 0)],
        };
        let named: Vec<_> = reuse_report(&report, &fields)
            .fields
            .into_iter()
            .map(|f| (f.name, f.fetched_bytes, f.used_bytes, f.spatial_use))
            .collect();
        assert_eq!(
            named,
            [
                ("x".to_owned(), 16, 16, 1.0),
                ("id".to_owned(), 8, 0, 0.0),
                (PADDING.to_owned(), 8, 0, 0.0)
            ]
        );
        // A target that wrote one member too many is not trusted with the names.
        report.fields.push(used(1, 1));
        assert!(reuse_report(&report, &fields).fields.is_empty());
    }

    #[test]
    fn by_field_buckets_are_named_by_member_and_end_with_the_padding() {
        let fields: Vec<_> = [("x", 0, 8), ("id", 24, 4)]
            .into_iter()
            .map(|(name, offset, bytes)| v1::Field {
                name: name.into(),
                offset,
                bytes,
            })
            .collect();
        let info = v1::RequestInfo {
            buckets: 3,
            bucket_bytes: 32,
            fields,
            ..Default::default()
        };
        let b = buckets_of(&info, AddressRange::new(1000, 320), &[7, 0, 2, 99]);
        let named: Vec<_> = b
            .iter()
            .map(|b| {
                let r = b.range.unwrap();
                (b.field.as_str(), r.start, r.end, b.count)
            })
            .collect();
        // A hostile fourth count is dropped.
        assert_eq!(
            named,
            [
                ("x", 1000, 1008, 7),
                ("id", 1024, 1028, 0),
                (PADDING, 1000, 1000, 2)
            ]
        );
    }

    #[test]
    fn buckets_cover_the_range_and_the_last_is_cut() {
        let b = buckets(AddressRange::new(1000, 250), 100, &[1, 2, 3]);
        let spans: Vec<_> = b
            .iter()
            .map(|b| {
                let r = b.range.unwrap();
                (r.start, r.end, b.count)
            })
            .collect();
        assert_eq!(spans, [(1000, 1100, 1), (1100, 1200, 2), (1200, 1250, 3)]);
        // A hostile count list longer than the range does not invent addresses.
        assert_eq!(buckets(AddressRange::new(0, 100), 100, &[1, 2]).len(), 1);
    }

    #[test]
    fn analyses_round_trip_and_unknown_ones_are_named() {
        let list = [
            v1::Analysis::Evictors as i32,
            v1::Analysis::ReuseDistance as i32,
        ];
        let bits = analysis_mask(&list).unwrap();
        assert_eq!(
            bits,
            analysis_bits::EVICTORS | analysis_bits::REUSE_DISTANCE
        );
        assert_eq!(analyses_from_bits(bits), list);
        assert!(
            analysis_mask(&[0])
                .unwrap_err()
                .contains("analysis value 0")
        );
        assert!(analysis_mask(&[42]).is_err());
    }
}
