//! The values tools work with: targets, regions, data structures, requests, results with their
//! buckets' bytes, halts and watch events; plain Rust types, converted from the MRI's messages here
//! and only here.

use std::ops::Range;

use epcache_proto::v1;
use epcache_sim::analysis::{
    AnalysisReport, DistanceHistogram, EvictorMatrix, FieldUse, MissClassBuckets, MissClassCounts,
    MissClassReport, RangeAnalysis, ReuseBuckets, ReuseReport,
};
use serde::Serialize;

use crate::ClientError;

fn missing(what: &str) -> ClientError {
    ClientError::Protocol(format!("the daemon's answer lacks {what}"))
}

fn range(r: Option<v1::AddressRange>, what: &str) -> Result<Range<u64>, ClientError> {
    let r = r.ok_or_else(|| missing(what))?;
    Ok(r.start..r.end)
}

/// What a target is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TargetState {
    /// Creating its tables.
    Starting,
    /// Running the program.
    Running,
    /// Blocked at start (`EPCACHE_WAIT`) until a tool continues it.
    WaitingForTool,
    /// Blocked at a halting point.
    Halted,
    /// Finished normally.
    Exited,
    /// Gone without finishing (killed or crashed).
    Died,
    /// A state this client does not know (a newer daemon).
    Unknown,
}

impl From<v1::TargetState> for TargetState {
    fn from(s: v1::TargetState) -> Self {
        match s {
            v1::TargetState::Starting => TargetState::Starting,
            v1::TargetState::Running => TargetState::Running,
            v1::TargetState::WaitingForTool => TargetState::WaitingForTool,
            v1::TargetState::Halted => TargetState::Halted,
            v1::TargetState::Exited => TargetState::Exited,
            v1::TargetState::Died => TargetState::Died,
            v1::TargetState::Unspecified => TargetState::Unknown,
        }
    }
}

impl std::fmt::Display for TargetState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            TargetState::Starting => "starting",
            TargetState::Running => "running",
            TargetState::WaitingForTool => "waiting for a tool",
            TargetState::Halted => "halted",
            TargetState::Exited => "exited",
            TargetState::Died => "died",
            TargetState::Unknown => "unknown",
        })
    }
}

/// Which side of a region.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Boundary {
    /// Where it starts.
    Entry,
    /// Where it ends.
    Exit,
}

impl std::fmt::Display for Boundary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Boundary::Entry => "entry",
            Boundary::Exit => "exit",
        })
    }
}

fn boundary(b: i32) -> Result<Boundary, ClientError> {
    match v1::Boundary::try_from(b) {
        Ok(v1::Boundary::Entry) => Ok(Boundary::Entry),
        Ok(v1::Boundary::Exit) => Ok(Boundary::Exit),
        _ => Err(missing("a boundary")),
    }
}

/// A region boundary a target is halted at.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Position {
    /// Index of the region.
    pub region_index: u32,
    /// Its name.
    pub region: String,
    /// Entry or exit.
    pub boundary: Boundary,
    /// The thread that halted there: the target's index of it (in the order its threads began
    /// capturing), when the target says.
    pub thread_index: Option<u32>,
    /// Its OpenMP thread number, when it is in an OpenMP team and the target says.
    pub openmp_thread: Option<u32>,
}

impl TryFrom<v1::Position> for Position {
    type Error = ClientError;
    fn try_from(p: v1::Position) -> Result<Self, ClientError> {
        let minus_one = |v: u32| v.checked_sub(1);
        Ok(Position {
            region_index: p.region_index,
            region: p.region_name,
            boundary: boundary(p.boundary)?,
            thread_index: minus_one(p.thread_index),
            openmp_thread: minus_one(p.openmp_thread),
        })
    }
}

impl std::fmt::Display for Position {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} of {}", self.boundary, self.region)?;
        // The first thread of a program without OpenMP goes unsaid: most halts are its.
        match (self.thread_index, self.openmp_thread) {
            (Some(index), Some(openmp)) => write!(f, " (OpenMP thread {openmp}, thread {index})"),
            (None, Some(openmp)) => write!(f, " (OpenMP thread {openmp})"),
            (Some(index), None) if index > 0 => write!(f, " (thread {index})"),
            _ => Ok(()),
        }
    }
}

/// A monitored process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Target {
    /// Its pid, which names it in every call.
    pub pid: u32,
    /// Its start time (clock ticks after boot).
    pub start_time: u64,
    /// Its program name.
    pub program: String,
    /// What it is doing.
    pub state: TargetState,
    /// Where it is halted.
    pub halted_at: Option<Position>,
    /// Regions registered so far.
    pub regions: u32,
    /// Data structures registered so far.
    pub data_structures: u32,
    /// Requests placed through the daemon.
    pub requests: u32,
    /// The cores of the machine its threads are; `None` when each thread simulates a
    /// hierarchy of its own.
    pub cores: Option<u32>,
}

impl TryFrom<v1::Target> for Target {
    type Error = ClientError;
    fn try_from(t: v1::Target) -> Result<Self, ClientError> {
        Ok(Target {
            pid: t.pid,
            start_time: t.start_time,
            state: t.state().into(),
            program: t.program,
            halted_at: t.halted_at.map(Position::try_from).transpose()?,
            regions: t.regions,
            data_structures: t.data_structures,
            requests: t.requests,
            cores: Some(t.cores).filter(|&n| n > 0),
        })
    }
}

/// How a region was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RegionKind {
    /// A function.
    Function,
    /// A marker in the source.
    Marker,
    /// Unknown to this client.
    Unknown,
}

/// A region of the target's code.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Region {
    /// Index in the target's region table.
    pub index: u32,
    /// File id of its key.
    pub file_id: u32,
    /// First line of its key.
    pub line: u32,
    /// Its name.
    pub name: String,
    /// Its source file, empty when unknown.
    pub file: String,
    /// Function or marker.
    pub kind: RegionKind,
}

impl TryFrom<v1::Region> for Region {
    type Error = ClientError;
    fn try_from(r: v1::Region) -> Result<Self, ClientError> {
        let key = r.key.ok_or_else(|| missing("a region key"))?;
        Ok(Region {
            index: r.index,
            file_id: key.file_id,
            line: key.line,
            kind: match r.kind() {
                v1::RegionKind::Function => RegionKind::Function,
                v1::RegionKind::Marker => RegionKind::Marker,
                v1::RegionKind::Unspecified => RegionKind::Unknown,
            },
            name: r.name,
            file: r.file,
        })
    }
}

/// Where a data structure came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DataStructureKind {
    /// A global or static.
    Global,
    /// A heap array the program registered.
    Heap,
    /// Heap blocks of one allocation site.
    AllocationSite,
    /// A Fortran ALLOCATABLE or POINTER array: the data its descriptor points to.
    Allocatable,
    /// Unknown to this client.
    Unknown,
}

/// One dimension of an array.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Dimension {
    /// Its first index (0 in C, 1 by default in Fortran).
    pub lower_bound: i64,
    /// Elements along it.
    pub extent: u64,
}

/// What a data structure's type says about its elements: enough to name a histogram's buckets
/// in the array's terms (element indices; rows of a 2-D array).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Shape {
    /// Bytes of one element.
    pub element_bytes: u64,
    /// Dimensions in declaration order (C's `double a[100][50]`: 100 then 50; Fortran's
    /// `real a(100,50)`: 100 then 50); empty for a scalar.
    pub dimensions: Vec<Dimension>,
    /// Whether the first dimension varies fastest in memory (Fortran), rather than the last (C).
    pub column_major: bool,
}

impl Shape {
    /// The elements (all dimensions) this shape holds.
    pub fn elements(&self) -> u64 {
        self.dimensions
            .iter()
            .fold(1u64, |n, d| n.saturating_mul(d.extent))
    }
}

impl From<v1::ArrayShape> for Shape {
    fn from(s: v1::ArrayShape) -> Self {
        Shape {
            element_bytes: s.element_bytes,
            dimensions: s
                .dimensions
                .into_iter()
                .map(|d| Dimension {
                    lower_bound: d.lower_bound,
                    extent: d.extent,
                })
                .collect(),
            column_major: s.column_major,
        }
    }
}

/// A data structure of the target.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DataStructure {
    /// Index in the target's data-structure table.
    pub index: u32,
    /// Its name.
    pub name: String,
    /// Its bytes.
    pub range: Range<u64>,
    /// Where it came from.
    pub kind: DataStructureKind,
    /// False once freed (an allocatable: while unallocated).
    pub live: bool,
    /// What its type says, when the target's debug information says it.
    pub shape: Option<Shape>,
    /// A heap block's allocation context: `file:line` frames from the allocator's call,
    /// through the program's wrappers, to the line that asked (its name) and its callers,
    /// innermost first; empty for other structures.
    pub context: Vec<String>,
}

impl TryFrom<v1::DataStructure> for DataStructure {
    type Error = ClientError;
    fn try_from(d: v1::DataStructure) -> Result<Self, ClientError> {
        Ok(DataStructure {
            index: d.index,
            kind: match d.kind() {
                v1::DataStructureKind::Global => DataStructureKind::Global,
                v1::DataStructureKind::HeapRegistered => DataStructureKind::Heap,
                v1::DataStructureKind::AllocationSite => DataStructureKind::AllocationSite,
                v1::DataStructureKind::Allocatable => DataStructureKind::Allocatable,
                v1::DataStructureKind::Unspecified => DataStructureKind::Unknown,
            },
            range: range(d.range, "a data structure's range")?,
            name: d.name,
            live: d.live,
            shape: d.shape.map(Shape::from),
            context: d.context,
        })
    }
}

/// An event the target can count.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EventInfo {
    /// PAPI-style name.
    pub name: String,
    /// What it counts.
    pub description: String,
}

/// How the instances of a region combine in a result. Its names (`per-instance`, `per-thread`,
/// `summed`) are the command line's, its tables' and its JSON's: [`Aggregation::name`] is the
/// one place they are spelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Aggregation {
    /// Each instance replaces the last.
    PerInstance,
    /// One result per thread.
    PerThread,
    /// All instances summed (the default).
    #[default]
    Summed,
}

/// A name that is no [`Aggregation`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not an aggregation; use per-instance, per-thread or summed")]
pub struct UnknownAggregation(pub String);

impl Aggregation {
    /// Every aggregation, in the order help texts list them.
    pub const ALL: [Aggregation; 3] = [
        Aggregation::PerInstance,
        Aggregation::PerThread,
        Aggregation::Summed,
    ];

    /// Its name: `per-instance`, `per-thread` or `summed`.
    pub fn name(self) -> &'static str {
        match self {
            Aggregation::PerInstance => "per-instance",
            Aggregation::PerThread => "per-thread",
            Aggregation::Summed => "summed",
        }
    }

    fn to_mri(self) -> v1::Aggregation {
        match self {
            Aggregation::PerInstance => v1::Aggregation::PerInstance,
            Aggregation::PerThread => v1::Aggregation::PerThread,
            Aggregation::Summed => v1::Aggregation::Summed,
        }
    }

    fn from_mri(a: v1::Aggregation) -> Self {
        match a {
            v1::Aggregation::PerInstance => Aggregation::PerInstance,
            v1::Aggregation::PerThread => Aggregation::PerThread,
            v1::Aggregation::Summed | v1::Aggregation::Unspecified => Aggregation::Summed,
        }
    }
}

impl std::fmt::Display for Aggregation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Aggregation {
    type Err = UnknownAggregation;
    fn from_str(s: &str) -> Result<Self, UnknownAggregation> {
        Aggregation::ALL
            .into_iter()
            .find(|a| a.name() == s)
            .ok_or_else(|| UnknownAggregation(s.to_owned()))
    }
}

impl Serialize for Aggregation {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

/// A seed-paper analysis.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Analysis {
    /// Temporal reuse and spatial use of lines.
    Reuse,
    /// Which data structure evicted which.
    Evictors,
    /// Compulsory, capacity and conflict misses.
    MissClasses,
    /// Reuse-distance histograms.
    ReuseDistance,
}

impl Analysis {
    fn to_mri(self) -> v1::Analysis {
        match self {
            Analysis::Reuse => v1::Analysis::Reuse,
            Analysis::Evictors => v1::Analysis::Evictors,
            Analysis::MissClasses => v1::Analysis::MissClasses,
            Analysis::ReuseDistance => v1::Analysis::ReuseDistance,
        }
    }

    fn from_mri(a: i32) -> Option<Self> {
        match v1::Analysis::try_from(a).ok()? {
            v1::Analysis::Reuse => Some(Analysis::Reuse),
            v1::Analysis::Evictors => Some(Analysis::Evictors),
            v1::Analysis::MissClasses => Some(Analysis::MissClasses),
            v1::Analysis::ReuseDistance => Some(Analysis::ReuseDistance),
            v1::Analysis::Unspecified => None,
        }
    }
}

/// Names a region.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RegionRef {
    /// By name.
    Name(String),
    /// By key: file id and first line.
    Key {
        /// File id.
        file_id: u32,
        /// First line.
        line: u32,
    },
    /// By index.
    Index(u32),
}

impl From<&str> for RegionRef {
    fn from(name: &str) -> Self {
        RegionRef::Name(name.to_owned())
    }
}

impl From<String> for RegionRef {
    fn from(name: String) -> Self {
        RegionRef::Name(name)
    }
}

impl RegionRef {
    pub(crate) fn to_mri(&self) -> v1::RegionSelector {
        use v1::region_selector::By;
        v1::RegionSelector {
            by: Some(match self {
                RegionRef::Name(n) => By::Name(n.clone()),
                RegionRef::Key { file_id, line } => By::Key(v1::RegionKey {
                    file_id: *file_id,
                    line: *line,
                }),
                RegionRef::Index(i) => By::Index(*i),
            }),
        }
    }
}

/// Names the bytes a request counts in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DataRef {
    /// A data structure by name. A name FILE:LINE that names no global or registered array is
    /// an allocation site (as [`DataRef::Site`]).
    Name(String),
    /// An address range.
    Range(Range<u64>),
    /// A data structure by index.
    Index(u32),
    /// The heap blocks allocated at a source line, whether or not one exists yet: the target
    /// binds the request to one of them at each entry of the region ([`SiteBlock`] says which).
    Site {
        /// The source file (its base name counts).
        file: String,
        /// The line of the allocating call.
        line: u32,
    },
}

/// A source line that allocates heap blocks, as a request names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AllocationSite {
    /// The source file's base name (`prog.c`).
    pub file: String,
    /// The line of the allocating call.
    pub line: u32,
}

/// Which of an allocation site's live blocks a request binds to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SiteBlock {
    /// The one allocated last: a site that allocates its array again is followed to each new
    /// block (the default).
    #[default]
    Latest,
    /// The largest.
    Largest,
}

impl SiteBlock {
    fn to_mri(self) -> v1::SiteBlock {
        match self {
            SiteBlock::Latest => v1::SiteBlock::Latest,
            SiteBlock::Largest => v1::SiteBlock::Largest,
        }
    }
}

/// Where a request whose bytes the target binds stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Binding {
    /// Its bytes were fixed when it was placed.
    Fixed,
    /// Nothing to bind to yet: the allocation site had no live block, or the allocatable was
    /// unallocated, whenever the region ran. At the target's end: it measured nothing.
    Waiting,
    /// Bound at the region's last entry (see the request's data structure and range).
    Bound,
}

impl DataRef {
    pub(crate) fn to_mri(&self) -> v1::DataSelector {
        use v1::data_selector::By;
        v1::DataSelector {
            by: Some(match self {
                DataRef::Name(n) => By::Name(n.clone()),
                DataRef::Range(r) => By::Range(v1::AddressRange {
                    start: r.start,
                    end: r.end,
                }),
                DataRef::Index(i) => By::Index(*i),
                DataRef::Site { file, line } => By::Site(v1::AllocationSite {
                    file: file.clone(),
                    line: *line,
                }),
            }),
        }
    }
}

impl From<&str> for DataRef {
    fn from(name: &str) -> Self {
        DataRef::Name(name.to_owned())
    }
}

impl From<String> for DataRef {
    fn from(name: String) -> Self {
        DataRef::Name(name)
    }
}

impl From<Range<u64>> for DataRef {
    fn from(r: Range<u64>) -> Self {
        DataRef::Range(r)
    }
}

/// Static count or histogram.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    /// One count.
    Static,
    /// This many equal buckets of whole L1 lines.
    Buckets(u32),
    /// Buckets this many L1 lines wide.
    BucketLines(u32),
    /// One bucket per member of an array of structures, summed over every element, then one
    /// for the padding (see [`Request::by_field`]).
    ByField {
        /// Bytes of one element.
        element_bytes: u64,
        /// Its members.
        fields: Vec<Field>,
    },
}

/// A member of the element of an array of structures, as the program's debug info gives it
/// (`epcache_symbols::Member`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Field {
    /// Its name as declared.
    pub name: String,
    /// Bytes from the element's first byte.
    pub offset: u64,
    /// Its bytes.
    pub bytes: u64,
}

impl Field {
    fn to_mri(&self) -> v1::Field {
        v1::Field {
            name: self.name.clone(),
            offset: self.offset,
            bytes: self.bytes,
        }
    }

    fn from_mri(f: v1::Field) -> Field {
        Field {
            name: f.name,
            offset: f.offset,
            bytes: f.bytes,
        }
    }
}

/// A monitoring request: one event in one range during one region.
///
/// ```
/// use epcache_client::{Aggregation, Analysis, Request};
/// let misses = Request::histogram("kernel", "A", "PAPI_L1_LDM", 25);
/// let hits = Request::count("kernel", 0x1000..0x2000, "EPC_L1_LDH").aggregation(Aggregation::PerInstance);
/// let classes = Request::count("kernel", "A", "PAPI_L1_DCM").analysis(Analysis::MissClasses);
/// # let _ = (misses, hits, classes);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The region whose instances are measured.
    pub region: RegionRef,
    /// The bytes counted.
    pub data: DataRef,
    /// The event (PAPI-style name).
    pub event: String,
    /// Static or histogram.
    pub mode: Mode,
    /// How instances combine.
    pub aggregation: Aggregation,
    /// Analyses to run.
    pub analyses: Vec<Analysis>,
    /// Which block, when the data is an allocation site.
    pub site_block: SiteBlock,
}

impl Request {
    /// A static count of `event` over `data` during `region`, summed over instances.
    pub fn count(
        region: impl Into<RegionRef>,
        data: impl Into<DataRef>,
        event: impl Into<String>,
    ) -> Request {
        Request {
            region: region.into(),
            data: data.into(),
            event: event.into(),
            mode: Mode::Static,
            aggregation: Aggregation::Summed,
            analyses: Vec::new(),
            site_block: SiteBlock::Latest,
        }
    }

    /// A histogram of `event` over `data` during `region` in `buckets` equal buckets.
    pub fn histogram(
        region: impl Into<RegionRef>,
        data: impl Into<DataRef>,
        event: impl Into<String>,
        buckets: u32,
    ) -> Request {
        Request {
            mode: Mode::Buckets(buckets),
            ..Request::count(region, data, event)
        }
    }

    /// A histogram of `event` over the array of structures `data` during `region` by member:
    /// one bucket per field of the `element_bytes`-byte element, summed over every element,
    /// then one for the padding. An access counts for the member holding its first byte.
    pub fn by_field(
        region: impl Into<RegionRef>,
        data: impl Into<DataRef>,
        event: impl Into<String>,
        element_bytes: u64,
        fields: Vec<Field>,
    ) -> Request {
        Request {
            mode: Mode::ByField {
                element_bytes,
                fields,
            },
            ..Request::count(region, data, event)
        }
    }

    /// Makes it a histogram with buckets `lines` L1 lines wide.
    pub fn bucket_lines(mut self, lines: u32) -> Request {
        self.mode = Mode::BucketLines(lines);
        self
    }

    /// Sets how instances combine.
    pub fn aggregation(mut self, aggregation: Aggregation) -> Request {
        self.aggregation = aggregation;
        self
    }

    /// Adds an analysis; the result then carries the analysis report.
    pub fn analysis(mut self, analysis: Analysis) -> Request {
        self.analyses.push(analysis);
        self
    }

    /// Sets which of an allocation site's blocks the request binds to.
    pub fn site_block(mut self, block: SiteBlock) -> Request {
        self.site_block = block;
        self
    }

    pub(crate) fn to_mri(&self) -> v1::MonitoringRequest {
        use v1::monitoring_request::Mode as M;
        v1::MonitoringRequest {
            region: Some(self.region.to_mri()),
            data: Some(self.data.to_mri()),
            event: self.event.clone(),
            mode: Some(match &self.mode {
                Mode::Static => M::StaticCount(v1::StaticMode {}),
                Mode::Buckets(n) => M::Histogram(v1::HistogramMode {
                    granularity: Some(v1::histogram_mode::Granularity::Buckets(*n)),
                }),
                Mode::BucketLines(l) => M::Histogram(v1::HistogramMode {
                    granularity: Some(v1::histogram_mode::Granularity::BucketLines(*l)),
                }),
                Mode::ByField {
                    element_bytes,
                    fields,
                } => M::ByField(v1::FieldMode {
                    element_bytes: *element_bytes,
                    fields: fields.iter().map(Field::to_mri).collect(),
                }),
            }),
            aggregation: self.aggregation.to_mri() as i32,
            analyses: self.analyses.iter().map(|a| a.to_mri() as i32).collect(),
            site_block: self.site_block.to_mri() as i32,
        }
    }
}

/// A request as the daemon placed it, every name resolved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RequestInfo {
    /// The daemon's id for it.
    pub id: u64,
    /// The target.
    pub pid: u32,
    /// The region measured.
    pub region: Region,
    /// The data structure, when the request named one.
    pub data_structure: Option<DataStructure>,
    /// The bytes counted.
    pub range: Range<u64>,
    /// The event.
    pub event: String,
    /// Histogram buckets; 0 for a static count.
    pub buckets: u32,
    /// Bucket width in bytes; 0 for a static count; a by-field request's element size.
    pub bucket_bytes: u64,
    /// A by-field request's members (its buckets, then the padding); empty otherwise.
    pub fields: Vec<Field>,
    /// How instances combine.
    pub aggregation: Aggregation,
    /// Analyses switched on.
    pub analyses: Vec<Analysis>,
    /// The tool that placed it.
    pub owner: String,
    /// Its tool is gone and the daemon took its slot back: it no longer counts, and its result
    /// is the last it had.
    pub adopted: bool,
    /// The allocation site it names, when it names one.
    pub allocation_site: Option<AllocationSite>,
    /// Which of the site's blocks it binds to.
    pub site_block: SiteBlock,
    /// Whether the target has bound its bytes (a request on a site or an allocatable).
    pub binding: Binding,
}

impl RequestInfo {
    /// What the request counts in, in words: the allocation site, the data structure's name, or
    /// the range.
    pub fn data_name(&self) -> String {
        match (&self.allocation_site, &self.data_structure) {
            (Some(site), _) => format!("{}:{}", site.file, site.line),
            (None, Some(d)) => d.name.clone(),
            (None, None) => format!("[{:#x}, {:#x})", self.range.start, self.range.end),
        }
    }

    /// Why a request has measured nothing, when its data never existed while its region ran:
    /// what the user should know at the program's end.
    pub fn unbound_reason(&self) -> Option<String> {
        if self.binding != Binding::Waiting {
            return None;
        }
        Some(match &self.allocation_site {
            Some(site) => format!(
                "no block of at least 4096 bytes allocated at {}:{} was live while {} ran",
                site.file, site.line, self.region.name
            ),
            None => format!(
                "{} was not allocated while {} ran (or, a POINTER, pointed at a strided \
                 section, such as a(5,:) or x(1:n:2), whose gaps a request over its span would \
                 count: ask for the array it points into)",
                self.data_name(),
                self.region.name
            ),
        })
    }
}

impl TryFrom<v1::RequestInfo> for RequestInfo {
    type Error = ClientError;
    fn try_from(r: v1::RequestInfo) -> Result<Self, ClientError> {
        let site_block = match r.site_block() {
            v1::SiteBlock::Largest => SiteBlock::Largest,
            v1::SiteBlock::Latest | v1::SiteBlock::Unspecified => SiteBlock::Latest,
        };
        let binding = match r.binding() {
            v1::Binding::Waiting => Binding::Waiting,
            v1::Binding::Bound => Binding::Bound,
            v1::Binding::Unspecified => Binding::Fixed,
        };
        Ok(RequestInfo {
            id: r.id,
            pid: r.pid,
            aggregation: Aggregation::from_mri(r.aggregation()),
            region: r
                .region
                .ok_or_else(|| missing("a request's region"))?
                .try_into()?,
            data_structure: r.data_structure.map(DataStructure::try_from).transpose()?,
            range: range(r.range, "a request's range")?,
            event: r.event,
            buckets: r.buckets,
            bucket_bytes: r.bucket_bytes,
            fields: r.fields.into_iter().map(Field::from_mri).collect(),
            analyses: r
                .analyses
                .into_iter()
                .filter_map(Analysis::from_mri)
                .collect(),
            site_block,
            binding,
            allocation_site: r.allocation_site.map(|s| AllocationSite {
                file: s.file,
                line: s.line,
            }),
            owner: r.owner,
            adopted: r.adopted,
        })
    }
}

/// One histogram bucket.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Bucket {
    /// The bytes it covers.
    pub range: Range<u64>,
    /// Occurrences of the event there.
    pub count: u64,
    /// In a by-field result, the member's name (`(padding)` for the last bucket); the range is
    /// then the member's bytes in the first element.
    pub field: Option<String>,
}

fn buckets(list: Vec<v1::Bucket>) -> Result<Vec<Bucket>, ClientError> {
    list.into_iter()
        .map(|b| {
            Ok(Bucket {
                range: range(b.range, "a bucket's range")?,
                count: b.count,
                field: (!b.field.is_empty()).then_some(b.field),
            })
        })
        .collect()
}

/// The counts of one thread in a per-thread request's result, or of the threads that did not
/// get a row of their own.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ThreadResult {
    /// The thread's OS id; `None` for the row that sums the threads past the target's room for
    /// rows (always the last).
    pub thread_id: Option<u32>,
    /// The thread's OpenMP thread number, where the program has OpenMP.
    pub openmp_thread: Option<u32>,
    /// The target's number for the thread (the order its threads began capturing), as halts
    /// and the standalone report's per-thread rows number it, when the target says.
    pub thread_index: Option<u32>,
    /// Threads the row covers: 1, or how many the row of other threads sums.
    pub threads: u32,
    /// Region instances the thread(s) ran.
    pub instances: u64,
    /// Occurrences of the event on the thread(s).
    pub total: u64,
    /// Histogram buckets on the thread(s), lowest addresses first.
    pub buckets: Vec<Bucket>,
}

impl ThreadResult {
    /// Who the row is, in words: `thread 1 (tid 4242, OpenMP 1)` (the target's number for it,
    /// then its OS id), `tid 4242` where the target gives no number, or `3 other threads`.
    pub fn label(&self) -> String {
        let Some(tid) = self.thread_id else {
            return format!(
                "{} other thread{}",
                self.threads,
                if self.threads == 1 { "" } else { "s" }
            );
        };
        let openmp = self.openmp_thread.map(|n| format!("OpenMP {n}"));
        match (self.thread_index, openmp) {
            (Some(index), Some(openmp)) => format!("thread {index} (tid {tid}, {openmp})"),
            (Some(index), None) => format!("thread {index} (tid {tid})"),
            (None, Some(openmp)) => format!("tid {tid} ({openmp})"),
            (None, None) => format!("tid {tid}"),
        }
    }
}

impl TryFrom<v1::ThreadResult> for ThreadResult {
    type Error = ClientError;
    fn try_from(t: v1::ThreadResult) -> Result<Self, ClientError> {
        Ok(ThreadResult {
            thread_id: (!t.other_threads).then_some(t.thread_id),
            openmp_thread: t.openmp_thread.filter(|_| !t.other_threads),
            thread_index: t.thread_index.filter(|_| !t.other_threads),
            threads: t.threads,
            instances: t.instances,
            total: t.total,
            buckets: buckets(t.buckets)?,
        })
    }
}

/// The latest result of a request.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RequestResult {
    /// The request.
    pub request: RequestInfo,
    /// False until the target wrote a result.
    pub available: bool,
    /// Region instances covered (over every thread).
    pub instances: u64,
    /// Occurrences in the whole range (the buckets' sum for a histogram; over every thread).
    pub total: u64,
    /// Histogram buckets, lowest addresses first (over every thread).
    pub buckets: Vec<Bucket>,
    /// For a per-thread request, one row per thread: by OpenMP thread number where the program
    /// has OpenMP, else by OS thread id; the row summing the threads past the target's room last.
    pub threads: Vec<ThreadResult>,
    /// For an analysis request, the report of the region's latest instance.
    pub analysis: Option<AnalysisReport>,
    /// For an analysis request without a report, why (it did not fit the target's result
    /// block, or the analyses could not run).
    pub analysis_missing: Option<String>,
    /// For a histogram whose target said so: the bytes counted in its smallest and largest
    /// instance (see [`RequestResult::sizes_differ`]).
    pub instance_bytes: Option<InstanceBytes>,
}

/// The sizes of the data a histogram counted over its instances.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct InstanceBytes {
    /// Bytes counted in the smallest instance.
    pub smallest: u64,
    /// Bytes counted in the largest instance.
    pub largest: u64,
}

impl RequestResult {
    /// Whether the histogram's instances counted data of different sizes (an allocatable
    /// reallocated, an allocation site's newer block): every bucket then counts the same
    /// offsets from the data's start in each, and the buckets reach the largest size.
    pub fn sizes_differ(&self) -> bool {
        self.instance_bytes.is_some_and(|b| b.smallest != b.largest)
    }
}

impl TryFrom<v1::RequestResult> for RequestResult {
    type Error = ClientError;
    fn try_from(r: v1::RequestResult) -> Result<Self, ClientError> {
        let mut threads: Vec<ThreadResult> = r
            .threads
            .into_iter()
            .map(ThreadResult::try_from)
            .collect::<Result<_, _>>()?;
        sort_threads(&mut threads);
        Ok(RequestResult {
            request: r
                .request
                .ok_or_else(|| missing("a result's request"))?
                .try_into()?,
            available: r.available,
            instances: r.instances,
            total: r.total,
            buckets: buckets(r.buckets)?,
            threads,
            analysis: r.analysis.map(analysis_report).transpose()?,
            analysis_missing: Some(r.analysis_missing).filter(|m| !m.is_empty()),
            instance_bytes: (r.largest_instance_bytes > 0
                && r.smallest_instance_bytes <= r.largest_instance_bytes)
                .then_some(InstanceBytes {
                    smallest: r.smallest_instance_bytes,
                    largest: r.largest_instance_bytes,
                }),
        })
    }
}

/// Per-thread rows by OpenMP thread number where there is one, else by the target's number
/// for the thread (as the standalone report orders its rows), else by OS thread id, the row of
/// other threads last: the target keeps them in the order they first ended an instance, which
/// races.
fn sort_threads(threads: &mut [ThreadResult]) {
    threads.sort_by_key(|t| {
        (
            t.thread_id.is_none(),
            t.openmp_thread.is_none(),
            t.openmp_thread,
            t.thread_index.is_none(),
            t.thread_index,
            t.thread_id,
        )
    });
}

fn malformed(what: &str) -> ClientError {
    ClientError::Protocol(format!("the daemon's analysis report is malformed: {what}"))
}

/// `counts / per` where `per` is nonzero: the ratios the report's counts give.
fn ratio(counts: u64, per: f64) -> Option<f64> {
    (per > 0.0).then(|| counts as f64 / per)
}

fn reuse_report(r: v1::ReuseReport, line_size: u32) -> Result<ReuseReport, ClientError> {
    let n = r.bucket_residencies.len();
    if r.bucket_accesses.len() != n || r.bucket_bytes_used.len() != n {
        return Err(malformed("reuse buckets of different lengths"));
    }
    let line = f64::from(line_size);
    let buckets = ReuseBuckets {
        temporal_reuse: (0..n)
            .map(|i| ratio(r.bucket_accesses[i], r.bucket_residencies[i] as f64))
            .collect(),
        spatial_use: (0..n)
            .map(|i| {
                ratio(
                    r.bucket_bytes_used[i],
                    r.bucket_residencies[i] as f64 * line,
                )
            })
            .collect(),
        residencies: r.bucket_residencies,
        accesses: r.bucket_accesses,
        bytes_used: r.bucket_bytes_used,
    };
    let some = r.residencies > 0;
    Ok(ReuseReport {
        residencies: r.residencies,
        accesses: r.accesses,
        bytes_used: r.bytes_used,
        temporal_reuse: some.then_some(r.temporal_reuse),
        spatial_use: some.then_some(r.spatial_use),
        buckets,
        fields: r
            .fields
            .into_iter()
            .map(|f| FieldUse {
                fetched_bytes: f.fetched_bytes,
                used_bytes: f.used_bytes,
                spatial_use: ratio(f.used_bytes, f.fetched_bytes as f64),
            })
            .collect(),
    })
}

fn miss_class_counts(c: v1::MissClassCounts) -> MissClassCounts {
    MissClassCounts {
        compulsory: c.compulsory,
        capacity: c.capacity,
        conflict: c.conflict,
    }
}

fn miss_class_report(m: v1::MissClassReport) -> Result<MissClassReport, ClientError> {
    let n = m.bucket_compulsory.len();
    if m.bucket_capacity.len() != n || m.bucket_conflict.len() != n {
        return Err(malformed("miss-class buckets of different lengths"));
    }
    Ok(MissClassReport {
        total: miss_class_counts(m.total.unwrap_or_default()),
        buckets: MissClassBuckets {
            compulsory: m.bucket_compulsory,
            capacity: m.bucket_capacity,
            conflict: m.bucket_conflict,
        },
    })
}

fn distance_histogram(d: v1::DistanceHistogram) -> DistanceHistogram {
    DistanceHistogram {
        accesses: d.accesses,
        cold: d.cold,
        log2: d.log2,
        fine: d.fine,
    }
}

fn evictor_matrix(e: v1::EvictorMatrix) -> Result<EvictorMatrix, ClientError> {
    let n = e.names.len();
    if e.rows.len() != n || e.rows.iter().any(|r| r.victims.len() != n) {
        return Err(malformed(
            "the evictor matrix is not one row and column per range",
        ));
    }
    Ok(EvictorMatrix {
        names: e.names,
        counts: e.rows.into_iter().map(|r| r.victims).collect(),
    })
}

fn analysis_report(a: v1::AnalysisReport) -> Result<AnalysisReport, ClientError> {
    let line_size = a.line_size;
    let ranges = a
        .ranges
        .into_iter()
        .map(|r| {
            let range = range(r.range, "an analysed range's bytes")?;
            Ok(RangeAnalysis {
                name: r.name,
                start: range.start,
                end: range.end,
                bucket_bytes: r.bucket_bytes,
                reuse: r.reuse.map(|x| reuse_report(x, line_size)).transpose()?,
                miss_classes: r.miss_classes.map(miss_class_report).transpose()?,
                reuse_distance: r.reuse_distance.map(distance_histogram),
            })
        })
        .collect::<Result<_, ClientError>>()?;
    let miss_classes = a.miss_classes.map(miss_class_counts);
    let reuse_distance = a.reuse_distance.map(distance_histogram);
    // A shadow cache runs for the miss classes and the reuse distances, and only then.
    let shadow = miss_classes.is_some() || reuse_distance.is_some();
    Ok(AnalysisReport {
        level: a.level as usize,
        level_name: a.level_name,
        line_size,
        lines: a.lines,
        ranges,
        miss_classes,
        evictors: a.evictors.map(evictor_matrix).transpose()?,
        reuse_distance,
        distinct_lines: shadow.then_some(a.distinct_lines),
    })
}

/// A halt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Halt {
    /// Counts the target's halts.
    pub generation: u32,
    /// Halted, or waiting at start.
    pub state: TargetState,
    /// The boundary; `None` while waiting at start.
    pub position: Option<Position>,
    /// Seconds the daemon keeps the target halted with no call naming it before it lets the
    /// program go on; `None` from a daemon that keeps halts for ever.
    pub lease_seconds: Option<u32>,
}

impl TryFrom<v1::Halt> for Halt {
    type Error = ClientError;
    fn try_from(h: v1::Halt) -> Result<Self, ClientError> {
        Ok(Halt {
            generation: h.generation,
            state: h.state().into(),
            position: h.position.map(Position::try_from).transpose()?,
            lease_seconds: (h.lease_seconds > 0).then_some(h.lease_seconds),
        })
    }
}

/// A target's end.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TargetExit {
    /// Killed or crashed rather than finished.
    pub died: bool,
    /// What the daemon knows.
    pub reason: String,
}

impl From<v1::TargetExit> for TargetExit {
    fn from(e: v1::TargetExit) -> Self {
        TargetExit {
            died: e.died,
            reason: e.reason,
        }
    }
}

/// Where a step ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StepOutcome {
    /// The target halted.
    Halted(Halt),
    /// It ended first.
    Exited(TargetExit),
}

/// A halting point.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HaltingPoint {
    /// The region; `None` for any.
    pub region: Option<RegionRef>,
    /// Entry or exit; `None` for either.
    pub boundary: Option<Boundary>,
    /// Matching boundaries to let pass first.
    pub skip: u32,
}

impl HaltingPoint {
    pub(crate) fn to_mri(&self) -> v1::HaltingPoint {
        v1::HaltingPoint {
            region: self.region.as_ref().map(RegionRef::to_mri),
            boundary: match self.boundary {
                None => v1::Boundary::Unspecified,
                Some(Boundary::Entry) => v1::Boundary::Entry,
                Some(Boundary::Exit) => v1::Boundary::Exit,
            } as i32,
            skip: self.skip,
        }
    }
}

/// Where to step to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StepTo {
    /// The next boundary of any region.
    NextBoundary,
    /// The next exit of a region.
    RegionExit(RegionRef),
    /// The next entry of a region.
    RegionEntry(RegionRef),
    /// Any halting point.
    Point(HaltingPoint),
}

impl StepTo {
    pub(crate) fn to_mri(&self) -> Option<v1::step_request::Until> {
        use v1::step_request::Until;
        match self {
            StepTo::NextBoundary => None,
            StepTo::RegionExit(r) => Some(Until::RegionExit(r.to_mri())),
            StepTo::RegionEntry(r) => Some(Until::RegionEntry(r.to_mri())),
            StepTo::Point(p) => Some(Until::Point(p.to_mri())),
        }
    }
}

/// Something that happened to a target, from [`crate::Client::watch`].
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// The target as it is when the watch began or when it appeared.
    Target {
        /// The target.
        target: Target,
    },
    /// It halted at a region boundary (or waits at start).
    Halted {
        /// The target.
        pid: u32,
        /// The halt.
        halt: Halt,
    },
    /// A request's result changed.
    ResultUpdated {
        /// The target.
        pid: u32,
        /// The new result.
        result: Box<RequestResult>,
    },
    /// It ended; nothing follows for it.
    Exited {
        /// The target.
        pid: u32,
        /// How.
        exit: TargetExit,
    },
}

impl TryFrom<v1::Event> for Event {
    type Error = ClientError;
    fn try_from(e: v1::Event) -> Result<Self, ClientError> {
        let pid = e.pid;
        Ok(match e.kind.ok_or_else(|| missing("an event's kind"))? {
            v1::event::Kind::Target(t) => Event::Target {
                target: t.try_into()?,
            },
            v1::event::Kind::Halted(h) => Event::Halted {
                pid,
                halt: h.try_into()?,
            },
            v1::event::Kind::Result(r) => Event::ResultUpdated {
                pid,
                result: Box::new(r.try_into()?),
            },
            v1::event::Kind::Exited(x) => Event::Exited {
                pid,
                exit: x.into(),
            },
        })
    }
}

/// Everything about one target.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Description {
    /// The target.
    pub target: Target,
    /// Its regions, by index.
    pub regions: Vec<Region>,
    /// Its data structures, by index.
    pub data_structures: Vec<DataStructure>,
    /// Its cache hierarchy in spec syntax, once published.
    pub cache_spec: Option<String>,
    /// Its cache levels (the MRI message), once published.
    #[serde(skip)]
    pub model: Option<v1::CacheModel>,
    /// Counters in its counter array, once published.
    pub counters: Option<u32>,
    /// The cores of the machine its threads are (`EPCACHE_CORES`), once published; `None` when
    /// each thread simulates a hierarchy of its own (coherence events count nothing).
    pub cores: Option<u32>,
    /// The events it can count.
    pub events: Vec<EventInfo>,
    /// The requests placed on it through the daemon.
    pub requests: Vec<RequestInfo>,
    /// How many requests it can hold at once, across every tool.
    pub request_slots: u32,
    /// Why it simulates no cache (its `EPCACHE_CACHE` did not resolve), when it said so.
    pub cache_error: Option<String>,
}

impl TryFrom<v1::DescribeTargetResponse> for Description {
    type Error = ClientError;
    fn try_from(d: v1::DescribeTargetResponse) -> Result<Self, ClientError> {
        Ok(Description {
            target: d.target.ok_or_else(|| missing("the target"))?.try_into()?,
            regions: d
                .regions
                .into_iter()
                .map(Region::try_from)
                .collect::<Result<_, _>>()?,
            data_structures: d
                .data_structures
                .into_iter()
                .map(DataStructure::try_from)
                .collect::<Result<_, _>>()?,
            cache_spec: d.model.as_ref().map(|m| m.spec.clone()),
            counters: d.model.as_ref().map(|m| m.counters),
            cores: d.model.as_ref().map(|m| m.cores).filter(|&n| n > 0),
            model: d.model,
            events: d
                .events
                .into_iter()
                .map(|e| EventInfo {
                    name: e.name,
                    description: e.description,
                })
                .collect(),
            requests: d
                .requests
                .into_iter()
                .map(RequestInfo::try_from)
                .collect::<Result<_, _>>()?,
            request_slots: d.request_slots,
            cache_error: Some(d.cache_error).filter(|e| !e.is_empty()),
        })
    }
}

/// What detaching did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Detached {
    /// The caller's requests that were cancelled.
    pub cancelled: Vec<u64>,
    /// Whether the caller's halting point was cleared.
    pub cleared_halting_point: bool,
    /// Whether the target was let go from a halt.
    pub released: bool,
}

mod trace;
pub use trace::{TraceInfo, TraceOrder, TraceState};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_thread_rows_come_by_openmp_number_then_the_targets_number_with_others_last() {
        let row = |tid: Option<u32>, omp: Option<u32>| ThreadResult {
            thread_id: tid,
            openmp_thread: omp,
            // Numbered against the OS ids' order, which the OpenMP-less rows follow only
            // where the target gives no number.
            thread_index: tid.filter(|&t| t == 5 || t == 10).map(|t| 20 - t),
            threads: 1,
            instances: 1,
            total: 1,
            buckets: Vec::new(),
        };
        let mut rows = vec![
            row(None, None),
            row(Some(40), Some(2)),
            row(Some(10), None),
            row(Some(30), Some(0)),
            row(Some(5), None),
            row(Some(20), Some(1)),
        ];
        sort_threads(&mut rows);
        let order: Vec<Option<u32>> = rows.iter().map(|t| t.thread_id).collect();
        assert_eq!(
            order,
            [Some(30), Some(20), Some(40), Some(10), Some(5), None]
        );
    }

    /// A data structure's shape and an allocatable's kind come through from the MRI; so does a
    /// request's binding to an allocation site.
    #[test]
    fn shapes_sites_and_bindings_come_through() {
        let d = DataStructure::try_from(v1::DataStructure {
            index: 4,
            name: "grids::a".into(),
            range: Some(v1::AddressRange {
                start: 0x1000,
                end: 0x1000 + 40_000,
            }),
            kind: v1::DataStructureKind::Allocatable as i32,
            live: true,
            shape: Some(v1::ArrayShape {
                element_bytes: 4,
                dimensions: vec![
                    v1::Dimension {
                        lower_bound: 1,
                        extent: 100,
                    };
                    2
                ],
                column_major: true,
            }),
            context: Vec::new(),
        })
        .unwrap();
        assert_eq!(d.kind, DataStructureKind::Allocatable);
        let shape = d.shape.unwrap();
        assert_eq!(shape.elements() * shape.element_bytes, 40_000);
        assert_eq!(shape.dimensions[1].lower_bound, 1);
        assert!(shape.column_major);

        let request = Request::count(
            "scale",
            DataRef::Site {
                file: "prog.c".into(),
                line: 50,
            },
            "PAPI_L1_LDM",
        )
        .site_block(SiteBlock::Largest)
        .to_mri();
        assert_eq!(request.site_block(), v1::SiteBlock::Largest);
        assert!(matches!(
            request.data.unwrap().by,
            Some(v1::data_selector::By::Site(v1::AllocationSite {
                line: 50,
                ..
            }))
        ));
    }
}
