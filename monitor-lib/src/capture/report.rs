//! The standalone report (`EPCACHE_REPORT=FILE`): the run's totals per level, and every region's
//! and every data structure's counts by PAPI event name, as JSON; gathered from the totals and
//! the registries ([`report_from_totals`]) and written whole ([`write_report`]).
//!
//! The file is written through a temporary beside it and a rename: a process that ends while
//! it writes (a watchdog, a second signal) leaves the previous file or the whole new one,
//! never a report cut short.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use epcache_shm::layout::{DataStructureKind, RegionKind, Shape};
use epcache_sim::cache::HierarchySpec;

use super::cores::{self, Interleaving, MachineTotals};
use super::data::{self, DataStructure};
use super::monitoring::{COHERENCE_COUNTS, Counts};
use super::region_registry::{self, RegionMeta};
use super::report_lines::{ReportLine, line_rows, miss_events};
use super::runtime_guard::RuntimeGuard;
use super::settings::{CACHE_ENV, CaptureError, process_spec};
use super::this_thread::{close_all_open, flush_current_thread};
use super::totals::{self, CaptureTotals, StandaloneTotals, standalone_totals};
use super::{hand_over, tracing, worker};

/// What a captured run measured.
#[derive(Debug, Clone, Serialize)]
pub struct CaptureReport {
    /// The cache spec as given (`EPCACHE_CACHE`, or the default preset's name).
    pub cache: String,
    /// The hierarchy that spec resolved to, when it resolved.
    pub spec: Option<HierarchySpec>,
    /// Why nothing could be simulated (a `cache` that does not resolve); absent when the run
    /// was monitored.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// How many threads' simulators the totals sum.
    pub threads: u32,
    /// Threads still inside a region when the program ended that did not hand their counts on
    /// in time (blocked, or running code built without capture): the report lacks what they
    /// counted in those regions. 0 when it has everything.
    pub threads_unreported: u32,
    /// The cores of the one machine the threads ran on (`EPCACHE_CORES`): its coherence
    /// events (`PAPI_CA_INV`, `EPC_L<n>_{COHM,FSM,TSM}`) are then in every region's and data
    /// structure's events. Absent when every thread simulated a hierarchy of its own.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cores: Option<u32>,
    /// Why the machine `EPCACHE_CORES` asked for could not be made (every thread then
    /// simulated a hierarchy of its own); absent when none was asked or it was made.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cores_refused: Option<String>,
    /// On a machine of cores: its accesses in the one order it simulated, and how often the
    /// next came from another thread (`thread_switches`). Threads take turns in stretches
    /// while they simulate, and coherence misses need two threads' accesses close together:
    /// read them against this.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cores_interleaving: Option<Interleaving>,
    /// Line visits the simulation thread simulated while the program ran on (`worker.rs`,
    /// `EPCACHE_PIPELINE`); 0 when every access was simulated on the program's own threads.
    pub simulated_on_second_core: u64,
    /// How the accesses were handled (which paths the run took; the counts do not depend on
    /// them).
    pub handled: AccessHandling,
    /// Totals per data level, L1 first. Live capture simulates no instruction fetches, so an
    /// instruction cache in the spec is not listed.
    pub levels: Vec<LevelTotals>,
    /// `program` (the whole run) first, then every region that ran, in registration order.
    pub regions: Vec<ReportRegion>,
    /// Misses counted for no source line because the per-line tables were full (64 Ki keys per
    /// thread and for the process); every other miss is in a region's `lines`.
    pub unattributed_line_misses: BTreeMap<String, u64>,
    /// The partial trace file the run was asked to write (`EPCACHE_TRACE_OUTPUT`), once a
    /// thread tried to create it; absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace_file: Option<TraceFileReport>,
}

/// The file a standalone run traced into, as the runtime left it: whether it could create it
/// and which file it is, so a launcher can tell its program's trace from a file another
/// process wrote at the same path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TraceFileReport {
    /// The path asked for.
    pub path: String,
    /// Whether the file was created (or an existing one taken over) for the trace.
    pub written: bool,
    /// The file's device and inode when written; 0 otherwise.
    pub device: u64,
    pub inode: u64,
    /// Why it could not be, when it was not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Which paths a run's accesses took.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct AccessHandling {
    /// L1 accesses answered by the repeat-hit table (the inline test, or the hooks) without
    /// simulating: the fast path of a kernel walking its arrays line by line.
    pub repeat_hits: u64,
    /// Accesses simulated from batches (the inline miss path's records, or staged by the
    /// runtime), in order, on the program's thread or the simulation thread. The rest of L1's
    /// reads and writes were simulated one at a time as they happened.
    pub batched: u64,
    /// Times a thread stopped handing batches to the simulation thread because the machine
    /// had more runnable threads than cores, and simulated them itself for a while.
    pub pipeline_fallbacks: u64,
}

/// One level's totals over the run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LevelTotals {
    /// The level's name in the spec (`D1`, `L2`, `LL`, ...).
    pub name: String,
    pub reads: u64,
    pub read_misses: u64,
    pub writes: u64,
    pub write_misses: u64,
    /// Dirty lines written to the next level.
    pub writebacks: u64,
}

/// One region's counts by PAPI event name (`PAPI_L1_DCR`, `PAPI_L1_LDM`, ...).
#[derive(Debug, Clone, Serialize)]
pub struct ReportRegion {
    /// The region's readable name.
    pub name: String,
    /// Source file, when the region has one.
    pub file: Option<String>,
    /// First line, when the region has one.
    pub line: Option<u32>,
    /// `program`, `function` or `marker`.
    pub kind: &'static str,
    /// How many times the region ran (all threads).
    pub instances: u64,
    /// On how many threads it ran (for `program`, how many threads were simulated).
    pub threads: u32,
    /// When it ran on more than one thread: each thread's instances and counts (its data
    /// structures' are in `data_structures`, summed), in the order threads started capturing.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub per_thread: Vec<ReportThread>,
    /// Event name to count, everything simulated while the region was open (nested regions
    /// included).
    pub events: BTreeMap<String, u64>,
    /// Counts of the accesses to each data structure touched in the region.
    pub data_structures: Vec<ReportDataStructure>,
    /// Misses per source line of the accesses made while the region was open (nested regions
    /// included), per data structure, most L1 misses first. Only misses are counted per line:
    /// most hits are counted by the repeat-hit filter without their code address.
    pub lines: Vec<ReportLine>,
}

/// One thread's part of a region.
#[derive(Debug, Clone, Serialize)]
pub struct ReportThread {
    /// The runtime's number for the thread: the order in which it started capturing, from 0.
    /// (Not its OS thread id, which differs from run to run: two runs of one program give the
    /// same report.)
    pub thread: u32,
    /// Its OpenMP thread number, when the program has OpenMP.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub openmp_thread: Option<u32>,
    /// Its core of the machine the threads ran on (`EPCACHE_CORES`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub core: Option<u32>,
    /// How many times the region ran on this thread.
    pub instances: u64,
    /// Event name to count, as the region's.
    pub events: BTreeMap<String, u64>,
}

/// One data structure's counts within a region.
#[derive(Debug, Clone, Serialize)]
pub struct ReportDataStructure {
    /// The name the programmer wrote (`A`, `gauss_mod::a`, `main.c:42` for an allocation site).
    pub name: String,
    /// `global`, `heap` (registered), `alloc_site` or `allocatable` (a Fortran ALLOCATABLE or
    /// POINTER array: its data, wherever its descriptor pointed while the region ran).
    pub kind: &'static str,
    /// First byte.
    pub start: u64,
    /// Size in bytes.
    pub bytes: u64,
    /// What its type says about its elements, when the debug information says it (globals,
    /// allocatables): `null` otherwise.
    pub shape: Option<ReportShape>,
    /// Event name to count, for accesses whose first byte lies in the structure.
    pub events: BTreeMap<String, u64>,
    /// An allocation site's context: `file:line` frames from the allocator's call, through
    /// the program's allocation wrappers, to the line that names it and its callers,
    /// innermost first (as its first block had it); empty for other structures.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub context: Vec<String>,
    /// An allocation site whose line made blocks live at once from two allocation calls (two
    /// arrays allocated in one statement, `allocate(t(n), tnew(n))`): its counts are theirs
    /// together. Absent otherwise.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub several_arrays: bool,
}

/// A data structure's elements as its type declares them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReportShape {
    /// Bytes of one element.
    pub element_bytes: u64,
    /// Dimensions in declaration order (`double a[100][50]`: 100 then 50; Fortran
    /// `real a(0:9,100)`: 0..9 then 1..100); empty for a scalar.
    pub dimensions: Vec<ReportDimension>,
    /// Whether the first dimension varies fastest in memory (Fortran), rather than the last (C).
    pub column_major: bool,
}

/// One dimension of a [`ReportShape`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ReportDimension {
    /// Its first index.
    pub lower: i64,
    /// Elements along it.
    pub extent: u64,
}

impl From<&Shape> for ReportShape {
    fn from(shape: &Shape) -> Self {
        ReportShape {
            element_bytes: shape.element_bytes,
            dimensions: shape
                .dims
                .iter()
                .map(|d| ReportDimension {
                    lower: d.lower,
                    extent: d.extent,
                })
                .collect(),
            column_major: shape.column_major,
        }
    }
}

/// PAPI-named events of standalone counts for `levels` data levels, with the coherence events
/// when the threads were cores of one machine.
fn events_of(counts: &Counts, levels: usize, coherence: bool) -> BTreeMap<String, u64> {
    let mut events = BTreeMap::new();
    if coherence {
        add_coherence_events(&mut events, levels, |level, event| {
            counts[COHERENCE_COUNTS + 4 * level + event]
        });
    }
    for level in 0..levels {
        let c = &counts[level * 4..level * 4 + 4];
        let (rh, rm, wh, wm) = (c[0], c[1], c[2], c[3]);
        let name = |suffix: &str| format!("PAPI_L{}_{suffix}", level + 1);
        events.insert(name("DCR"), rh + rm);
        events.insert(name("LDM"), rm);
        events.insert(name("DCW"), wh + wm);
        events.insert(name("STM"), wm);
        events.insert(name("DCA"), rh + rm + wh + wm);
        events.insert(name("DCH"), rh + wh);
        events.insert(name("DCM"), rm + wm);
        events.insert(format!("EPC_L{}_LDH", level + 1), rh);
        events.insert(format!("EPC_L{}_STH", level + 1), wh);
    }
    events
}

/// The coherence events of `levels` data levels, `count(level, event)` giving each (event 0
/// coherence misses, 1 false sharing, 2 true sharing, and at level 0 event 3 invalidations).
fn add_coherence_events(
    events: &mut BTreeMap<String, u64>,
    levels: usize,
    count: impl Fn(usize, usize) -> u64,
) {
    events.insert("PAPI_CA_INV".to_owned(), count(0, 3));
    for level in 0..levels {
        for (event, suffix) in ["COHM", "FSM", "TSM"].iter().enumerate() {
            events.insert(format!("EPC_L{}_{suffix}", level + 1), count(level, event));
        }
    }
}

/// Region `id`'s rows per thread, when more than one thread ran it.
fn per_thread_rows(
    standalone: &StandaloneTotals,
    id: u32,
    levels: usize,
    coherence: bool,
) -> Vec<ReportThread> {
    let mut rows: Vec<ReportThread> = standalone
        .threads
        .iter()
        .filter_map(|t| {
            let (_, instances, counts) = t.regions.iter().find(|(r, n, _)| *r == id && *n > 0)?;
            Some(ReportThread {
                thread: t.who.index,
                openmp_thread: t.who.openmp,
                core: t.who.core,
                instances: *instances,
                events: events_of(counts, levels, coherence),
            })
        })
        .collect::<Vec<_>>();
    rows.sort_by_key(|r| r.thread);
    if rows.len() > 1 { rows } else { Vec::new() }
}

fn kind_of_structure(kind: DataStructureKind) -> &'static str {
    match kind {
        DataStructureKind::Global => "global",
        DataStructureKind::HeapRegistered => "heap",
        DataStructureKind::AllocationSite => "alloc_site",
        DataStructureKind::Allocatable => "allocatable",
    }
}

/// Per-structure counts as report entries: structures never touched are left out, and entries
/// of the same name (a heap array registered again, blocks of one allocation site) are summed.
fn structures_of(
    counts: &[Counts],
    structures: &[DataStructure],
    levels: usize,
    coherence: bool,
) -> Vec<ReportDataStructure> {
    let mut out: Vec<(ReportDataStructure, Counts)> = Vec::new();
    for (i, c) in counts.iter().enumerate() {
        let Some(d) = structures.get(i) else { continue };
        if c.iter().all(|&v| v == 0) {
            continue;
        }
        match out.iter_mut().find(|(r, _)| r.name == d.name) {
            Some((r, sum)) => {
                r.several_arrays |= d.several_arrays;
                // The shape of the largest entry, which the bytes are.
                if d.largest_bytes > r.bytes {
                    r.bytes = d.largest_bytes;
                    r.shape = d.details.shape.as_ref().map(ReportShape::from);
                }
                for (a, b) in sum.iter_mut().zip(c) {
                    *a += b;
                }
            }
            None => out.push((
                ReportDataStructure {
                    name: d.name.clone(),
                    kind: kind_of_structure(d.kind),
                    start: d.range.start,
                    bytes: d.largest_bytes,
                    shape: d.details.shape.as_ref().map(ReportShape::from),
                    events: BTreeMap::new(),
                    context: d.context.clone(),
                    several_arrays: d.several_arrays,
                },
                *c,
            )),
        }
    }
    out.into_iter()
        .map(|(mut r, c)| {
            r.events = events_of(&c, levels, coherence);
            r
        })
        .collect()
}

impl CaptureReport {
    /// The report of `totals` and the standalone counts, simulated with `spec` (given as
    /// `cache`), naming regions and structures from their registries; `machine` the cores
    /// and coherence totals of the machine the threads ran on, if they did (the totals absent
    /// when an access never let go of the machine: `cores::machine_totals`), whose write-backs
    /// replace the threads' own (a machine's write-backs are its own).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        cache: String,
        spec: Option<HierarchySpec>,
        error: Option<String>,
        totals: &CaptureTotals,
        standalone: &StandaloneTotals,
        regions: &[RegionMeta],
        structures: &[DataStructure],
        machine: Option<(usize, Option<MachineTotals>)>,
    ) -> Self {
        let (cores, machine_totals) = machine.unzip();
        let machine_totals = machine_totals.flatten();
        let data_level_names: Vec<&str> = spec.as_ref().map_or_else(Vec::new, |spec| {
            spec.data.iter().map(|l| l.name.as_str()).collect()
        });
        let levels: Vec<LevelTotals> = data_level_names
            .iter()
            .enumerate()
            .filter_map(|(level, name)| {
                let (name, s) = totals.levels.iter().find(|(n, _)| n == name)?;
                Some(LevelTotals {
                    name: name.clone(),
                    reads: s.reads,
                    read_misses: s.read_misses,
                    writes: s.writes,
                    write_misses: s.write_misses,
                    // A machine's write-backs are its own, none of them a thread's.
                    writebacks: machine_totals.as_ref().map_or(s.writebacks, |m| {
                        m.writebacks.get(level).copied().unwrap_or(0)
                    }),
                })
            })
            .collect();
        let mut events = BTreeMap::new();
        for (index, level) in levels.iter().enumerate() {
            let papi = |suffix: &str| format!("PAPI_L{}_{suffix}", index + 1);
            events.insert(papi("DCR"), level.reads);
            events.insert(papi("DCW"), level.writes);
            events.insert(papi("DCA"), level.reads + level.writes);
            events.insert(papi("LDM"), level.read_misses);
            events.insert(papi("STM"), level.write_misses);
            events.insert(papi("DCM"), level.read_misses + level.write_misses);
        }
        let depth = data_level_names.len();

        let coherence = cores.is_some();
        let interleaving = machine_totals.as_ref().map(|m| m.interleaving);
        let mut rows = line_rows(&standalone.lines, structures, depth, coherence);
        if coherence {
            // The threads' own, as the level totals are: a thread that never handed its counts
            // on is in neither.
            add_coherence_events(&mut events, depth, |level, event| {
                standalone.whole[COHERENCE_COUNTS + 4 * level + event]
            });
        }
        let mut report_regions = vec![ReportRegion {
            name: "program".to_owned(),
            file: None,
            line: None,
            kind: "program",
            instances: 1,
            threads: totals.threads,
            per_thread: Vec::new(),
            events,
            data_structures: structures_of(&standalone.structures, structures, depth, coherence),
            lines: rows.remove(&None).unwrap_or_default(),
        }];
        let mut ran: Vec<_> = standalone.regions.iter().collect();
        ran.sort_by_key(|(id, _)| *id);
        for (id, counts) in ran {
            let Some(meta) = regions.get(*id as usize) else {
                continue;
            };
            report_regions.push(ReportRegion {
                name: meta.name.clone(),
                file: Some(meta.file.clone()),
                line: Some(meta.line),
                kind: match meta.kind {
                    RegionKind::Function => "function",
                    RegionKind::Marker => "marker",
                },
                instances: counts.instances,
                threads: standalone
                    .threads
                    .iter()
                    .filter(|t| t.regions.iter().any(|(r, n, _)| r == id && *n > 0))
                    .count() as u32,
                per_thread: per_thread_rows(standalone, *id, depth, coherence),
                events: events_of(&counts.levels, depth, coherence),
                data_structures: structures_of(&counts.structures, structures, depth, coherence),
                lines: rows.remove(&Some(*id)).unwrap_or_default(),
            });
        }
        Self {
            cache,
            spec,
            error,
            threads: totals.threads,
            threads_unreported: 0,
            cores: cores.map(|c| c as u32),
            cores_refused: None,
            cores_interleaving: interleaving,
            simulated_on_second_core: 0,
            handled: AccessHandling::default(),
            levels,
            regions: report_regions,
            unattributed_line_misses: miss_events(&standalone.lines.unattributed, depth, coherence),
            trace_file: None,
        }
    }

    /// The report as pretty-printed JSON.
    pub fn to_json(&self) -> String {
        // Serialising plain structs, strings and integers cannot fail.
        serde_json::to_string_pretty(self).expect("the report serialises")
    }
}

/// The report of the run so far: the calling thread's open regions are closed and it is
/// flushed first.
pub fn report_from_totals() -> CaptureReport {
    close_all_open();
    flush_current_thread();
    let (cache, spec, error) = match process_spec() {
        Ok((text, spec)) => (text.clone(), Some(spec.clone()), None),
        Err(why) => (
            std::env::var(CACHE_ENV).unwrap_or_default(),
            None,
            Some(why.clone()),
        ),
    };
    let standalone = standalone_totals();
    let mut report = CaptureReport::new(
        cache,
        spec,
        error,
        &totals::totals(),
        &standalone,
        &region_registry::all(),
        &data::all(),
        cores::count().map(|n| (n, cores::machine_totals())),
    );
    report.threads_unreported = hand_over::unreported();
    report.trace_file = tracing::standalone_file().map(|(path, fate)| {
        let path = path.display().to_string();
        match fate {
            Ok((device, inode)) => TraceFileReport {
                path,
                written: true,
                device,
                inode,
                error: None,
            },
            Err(why) => TraceFileReport {
                path,
                written: false,
                device: 0,
                inode: 0,
                error: Some(why),
            },
        }
    });
    report.cores_refused = cores::refused().map(str::to_owned);
    report.simulated_on_second_core = worker::simulated();
    let (repeat_hits, batched) = totals::handled();
    report.handled = AccessHandling {
        repeat_hits,
        batched,
        pipeline_fallbacks: worker::fallbacks(),
    };
    report
}

/// Writes the run's report as JSON to `path` (what `EPCACHE_REPORT` does at exit).
pub fn write_report(path: &Path) -> Result<(), CaptureError> {
    let _busy = RuntimeGuard::enter();
    let report = report_from_totals();
    write_whole(path, report.to_json().as_bytes()).map_err(|source| CaptureError::Report {
        path: path.to_owned(),
        source,
    })
}

/// Writes `bytes` to `path` through a temporary file beside it and a rename, so the file is
/// either the previous one or the whole new one, never a report cut short by the process
/// ending mid-write. A path that is not a regular file (`/dev/stdout`, a pipe) or whose
/// directory takes no new file is written directly.
fn write_whole(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if std::fs::metadata(path).is_ok_and(|m| !m.is_file()) {
        return std::fs::write(path, bytes);
    }
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(format!(".{}.partial", std::process::id()));
    let temporary = PathBuf::from(temporary);
    if std::fs::write(&temporary, bytes).is_err() {
        let _ = std::fs::remove_file(&temporary);
        return std::fs::write(path, bytes);
    }
    std::fs::rename(&temporary, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&temporary);
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use epcache_sim::cache::LevelStats;

    #[test]
    fn data_levels_get_papi_names_by_depth() {
        let spec = HierarchySpec::parse("I1=1K,2,32;D1=1K,2,32;L2=4K,4,64").unwrap();
        let d1 = LevelStats {
            reads: 10,
            read_misses: 3,
            writes: 5,
            write_misses: 1,
            ..LevelStats::default()
        };
        let l2 = LevelStats {
            reads: 4,
            read_misses: 2,
            ..LevelStats::default()
        };
        let totals = CaptureTotals {
            levels: vec![
                ("I1".into(), LevelStats::default()),
                ("D1".into(), d1),
                ("L2".into(), l2),
            ],
            threads: 2,
        };
        let report = CaptureReport::new(
            "x".into(),
            Some(spec),
            None,
            &totals,
            &StandaloneTotals {
                regions: Vec::new(),
                structures: Vec::new(),
                lines: super::super::line_table::LineTotals::empty(),
                threads: Vec::new(),
                whole: [0; super::super::monitoring::COUNTS],
            },
            &[],
            &[],
            None,
        );
        let events = &report.regions[0].events;
        assert_eq!(events["PAPI_L1_DCR"], 10);
        assert_eq!(events["PAPI_L1_LDM"], 3);
        assert_eq!(events["PAPI_L1_DCW"], 5);
        assert_eq!(events["PAPI_L1_STM"], 1);
        assert_eq!(events["PAPI_L2_DCR"], 4);
        assert_eq!(events["PAPI_L2_LDM"], 2);
        let json: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
        // Live capture simulates no instruction fetches: I1 is no level of the report.
        let names: Vec<&str> = report.levels.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(names, ["D1", "L2"]);
        assert_eq!(json["levels"][0]["name"], "D1");
        assert_eq!(json["threads"], 2);
    }

    #[test]
    fn standalone_counts_become_papi_events() {
        let mut c: Counts = [0; super::super::monitoring::COUNTS];
        // L1: 7 read hits, 3 read misses, 2 write hits, 1 write miss; L2: 3 read misses reach it.
        c[..4].copy_from_slice(&[7, 3, 2, 1]);
        c[4..8].copy_from_slice(&[1, 2, 0, 1]);
        let e = events_of(&c, 2, false);
        assert_eq!(e["PAPI_L1_DCR"], 10);
        assert_eq!(e["PAPI_L1_LDM"], 3);
        assert_eq!(e["PAPI_L1_DCW"], 3);
        assert_eq!(e["PAPI_L1_STM"], 1);
        assert_eq!(e["PAPI_L1_DCH"], 9);
        assert_eq!(e["EPC_L1_LDH"], 7);
        assert_eq!(e["PAPI_L2_DCA"], 4);
        assert!(!e.contains_key("PAPI_L3_DCA"));
        // Without a machine of cores, no coherence event is listed.
        assert!(!e.contains_key("PAPI_CA_INV") && !e.contains_key("EPC_L1_FSM"));
        // With one: level 1's coherence misses, 5 false and 1 true sharing, 7 invalidations;
        // level 2 had 2 coherence misses, both false sharing.
        c[COHERENCE_COUNTS..COHERENCE_COUNTS + 8].copy_from_slice(&[6, 5, 1, 7, 2, 2, 0, 0]);
        let e = events_of(&c, 2, true);
        assert_eq!(
            [
                e["EPC_L1_COHM"],
                e["EPC_L1_FSM"],
                e["EPC_L1_TSM"],
                e["PAPI_CA_INV"]
            ],
            [6, 5, 1, 7]
        );
        assert_eq!(
            [e["EPC_L2_COHM"], e["EPC_L2_FSM"], e["EPC_L2_TSM"]],
            [2, 2, 0]
        );
        assert_eq!(e["PAPI_L1_DCR"], 10, "the access events stay");
    }

    /// The report replaces the previous file whole, leaves no temporary behind, and still goes
    /// to a path that is not a regular file.
    #[test]
    fn reports_are_written_whole_or_not_at_all() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("report.json");
        std::fs::write(
            &path,
            "a longer previous report that must not survive in part",
        )
        .unwrap();
        write_whole(&path, b"{}").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{}");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["report.json"], "a temporary file was left behind");
        write_whole(Path::new("/dev/null"), b"{}").expect("a device is written directly");
        let missing = dir.path().join("no such directory").join("report.json");
        assert!(
            write_whole(&missing, b"{}").is_err(),
            "an unwritable path fails"
        );
    }
}
