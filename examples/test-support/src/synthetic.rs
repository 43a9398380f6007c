//! A synthetic monitored program, built on the MCC directly as the capture runtime will be: it
//! registers regions and data structures, publishes its cache model, serves requests at region
//! entry with its own simulated hierarchy and counter arrays, writes results at region exit and
//! halts at boundaries. The daemon's tests and bench, the client's and the command line's run
//! their own test binary again with [`ROLE`] set to play it (see [`crate::processes`]).
//!
//! The program: `main` { `init` (writes every element of `A`), then `iterations` times:
//! `kernel` (reads every element of `A`), `idle` (nothing) }. With [`SCRATCH`] set, `main`
//! allocates a heap block at [`SCRATCH_SITE`] after `init`, as the capture runtime registers
//! one, and `idle` reads it. `A` is the paper's `REAL A(100,100)`:
//! 40,000 bytes on a 64-byte boundary, so on `D1=8K,2,32` every `kernel` instance reads 10,000
//! elements and misses each of its 1,250 lines once (the array is five times the cache, and the
//! sweep is sequential): 50 read misses per 1,600-byte bucket, by hand.

use std::collections::HashMap;
use std::io::Write;
use std::time::Duration;

use epcache_shm::config_table::ConfigEntry;
use epcache_shm::layout::{
    Aggregation, Boundary, BucketGeometry, DataStructureDetails, DataStructureKind, Mode,
    PublishedModel, RegionKind, RequestResult, ResultRow, ResultText, RowThreads, SiteKey,
    analysis_bits,
};
use epcache_shm::target::{ActiveRequest, Mcc, MccOptions};
use epcache_sim::analysis::{Analyses, AnalysisConfig};
use epcache_sim::cache::{AccessKind, Hierarchy, HierarchySpec};
use epcache_sim::monitor::{CounterArrayConfig, EventSet, HistogramIndex};
use epcache_sim::ranges::{AddressRange, NamedRange, RangeSet};

/// Set to `target` to make the test binary play the program.
pub const ROLE: &str = "EPCACHE_SYNTH_ROLE";
/// Kernel instances to run; 0 runs until killed.
pub const ITERATIONS: &str = "EPCACHE_SYNTH_ITERATIONS";
/// `none` makes regions empty (the step benchmark); anything else sweeps `A`.
pub const WORK: &str = "EPCACHE_SYNTH_WORK";
/// Milliseconds to sleep after each `idle`, so a test can act while the program runs.
pub const PAUSE_MS: &str = "EPCACHE_SYNTH_PAUSE_MS";
/// Milliseconds to stay `Starting` after registering, as a program reading a large debug
/// build's DWARF does, before running on its own (no start wait unless `EPCACHE_WAIT`).
pub const SETUP_MS: &str = "EPCACHE_SYNTH_SETUP_MS";
/// Text to publish as the cache model instead of [`SPEC`] (the program still simulates `SPEC`),
/// as the runtime publishes its complaint about a bad `EPCACHE_CACHE`.
pub const MODEL_TEXT: &str = "EPCACHE_SYNTH_MODEL_TEXT";
/// Set to allocate the scratch block after `init` and read it in every `idle`.
pub const SCRATCH: &str = "EPCACHE_SYNTH_SCRATCH";
/// The scratch block's allocation site, in the regions' source file.
pub const SCRATCH_SITE: (&str, u32) = ("synthetic.f90", 77);
/// Bytes of the scratch block: 128 L1 lines, every one a miss in `idle` after `kernel`'s
/// sweep of `A` (five times the cache) evicted them.
pub const SCRATCH_BYTES: u64 = 4096;

/// The cache the program simulates.
pub const SPEC: &str = "D1=8K,2,32;LL=1M,8,64";
/// Bytes of `A`.
pub const A_BYTES: u64 = 40_000;
/// Elements of `A` (4-byte REALs).
pub const A_ELEMENTS: u64 = A_BYTES / 4;
/// L1 lines of `A`.
pub const A_LINES: u64 = A_BYTES / 32;
/// Region names, in registration order.
pub const REGIONS: [&str; 4] = ["main", "init", "kernel", "idle"];

/// One request being measured during one region instance.
struct Measure {
    request: ActiveRequest,
    set: EventSet,
    histogram: Option<HistogramIndex>,
    analyses: Option<Analyses>,
}

/// Results summed across instances, per (slot, generation).
#[derive(Default)]
struct Accumulated {
    instances: u64,
    total: u64,
    buckets: Vec<u64>,
}

struct Program {
    mcc: Mcc,
    hierarchy: Hierarchy,
    open: Vec<Vec<Measure>>,
    sums: HashMap<(u32, u32), Accumulated>,
    line: u64,
}

impl Program {
    fn access(&mut self, addr: u64, kind: AccessKind) {
        let outcome = self.hierarchy.access(addr, 4, kind);
        for measures in &mut self.open {
            for m in measures.iter_mut() {
                m.set.observe(addr, &outcome);
                if let Some(a) = &mut m.analyses {
                    a.on_access(addr, 4, kind, &outcome, self.hierarchy.line_events());
                }
            }
        }
    }

    fn measure(&mut self, request: ActiveRequest) -> Option<Measure> {
        let event = request.spec.event.to_string();
        let mut set =
            EventSet::for_hierarchy(CounterArrayConfig::default(), &self.hierarchy).ok()?;
        set.add_event(&event, request.range).ok()?;
        let histogram = match request.spec.mode {
            Mode::Static => None,
            Mode::Histogram {
                buckets,
                bucket_bytes,
            } => {
                let width = if bucket_bytes == 0 {
                    request
                        .range
                        .len()
                        .div_ceil(u64::from(buckets))
                        .div_ceil(self.line)
                        * self.line
                } else {
                    bucket_bytes
                };
                Some(
                    set.add_histogram(&event, request.range, width.div_ceil(self.line))
                        .ok()?,
                )
            }
            Mode::Fields(spans) => {
                let fields = epcache_sim::monitor::FieldLayout {
                    element_bytes: spans.element_bytes(),
                    members: spans
                        .members()
                        .map(|(offset, bytes)| epcache_sim::monitor::FieldSpan { offset, bytes })
                        .collect(),
                };
                Some(
                    set.add_field_histogram(&event, request.range, fields)
                        .ok()?,
                )
            }
        };
        let analyses = if request.spec.analyses != 0 {
            let bits = request.spec.analyses;
            let config = AnalysisConfig {
                reuse: bits & analysis_bits::REUSE != 0,
                evictors: bits & analysis_bits::EVICTORS != 0,
                miss_classes: bits & analysis_bits::MISS_CLASSES != 0,
                reuse_distance: bits & analysis_bits::REUSE_DISTANCE != 0,
                level: request.spec.event.level(),
            };
            let mut ranges = RangeSet::new();
            ranges
                .insert(NamedRange {
                    name: "data".into(),
                    range: request.range,
                    bucket_bytes: self.line,
                })
                .ok()?;
            let a = Analyses::new(config, ranges, &self.hierarchy).ok()?;
            if a.needs_line_events() {
                self.hierarchy.set_record_lines(true);
            }
            Some(a)
        } else {
            None
        };
        set.start().ok()?;
        Some(Measure {
            request,
            set,
            histogram,
            analyses,
        })
    }

    fn finish(&mut self, mut m: Measure) {
        let r = m.request;
        // An analysis request's counts come with the report of this instance.
        let text = match &mut m.analyses {
            Some(a) => {
                a.finish();
                ResultText::Report(serde_json::to_string(&a.report()).unwrap())
            }
            None => ResultText::None,
        };
        let total = m.set.stop().unwrap()[0];
        let buckets = m
            .histogram
            .map(|h| m.set.read_histogram(h).unwrap().buckets)
            .unwrap_or_default();
        let sum = self.sums.entry((r.slot, r.generation)).or_default();
        match r.spec.aggregation {
            Aggregation::PerInstance => {
                *sum = Accumulated {
                    instances: sum.instances + 1,
                    total,
                    buckets,
                };
            }
            // One thread: its row sums its instances.
            Aggregation::Summed | Aggregation::PerThread => {
                sum.instances += 1;
                sum.total += total;
                sum.buckets.resize(buckets.len(), 0);
                for (s, b) in sum.buckets.iter_mut().zip(buckets) {
                    *s += b;
                }
            }
        }
        let threads = match r.spec.aggregation {
            Aggregation::PerThread => RowThreads::Thread {
                tid: thread_id(),
                openmp: None,
                index: None,
            },
            Aggregation::Summed | Aggregation::PerInstance => RowThreads::All,
        };
        let result = RequestResult {
            generation: r.generation,
            rows: vec![ResultRow {
                threads,
                instances: sum.instances,
                total: sum.total,
                buckets: sum.buckets.clone(),
            }],
            geometry: BucketGeometry::default(),
            text,
        };
        let _ = self.mcc.write_result(r.slot, &result);
    }

    fn region(&mut self, entry: ConfigEntry, body: impl FnOnce(&mut Program)) {
        self.mcc.boundary(entry.region, Boundary::Entry);
        let requests = if self.mcc.has_request(entry) {
            self.mcc.active_requests(entry)
        } else {
            Vec::new()
        };
        let measures = requests
            .into_iter()
            .filter_map(|r| self.measure(r))
            .collect();
        self.open.push(measures);
        body(self);
        let measures = self.open.pop().unwrap_or_default();
        for m in measures {
            self.finish(m);
        }
        if !self.open.iter().flatten().any(|m| m.analyses.is_some()) {
            self.hierarchy.set_record_lines(false);
        }
        self.mcc.boundary(entry.region, Boundary::Exit);
    }
}

/// The OS id of the thread running the program.
pub fn thread_id() -> u32 {
    std::fs::read_link("/proc/thread-self")
        .ok()
        .and_then(|p| p.file_name()?.to_str()?.parse().ok())
        .unwrap_or(0)
}

/// Runs the program; returns when it is done (the MCC's drop tells tools it exited).
pub fn run_target() {
    let var = |name: &str| std::env::var(name).ok();
    let iterations: u64 = var(ITERATIONS).and_then(|v| v.parse().ok()).unwrap_or(3);
    let work = var(WORK).as_deref() != Some("none");
    let scratch = var(SCRATCH).is_some();
    let pause = Duration::from_millis(var(PAUSE_MS).and_then(|v| v.parse().ok()).unwrap_or(0));

    let mcc = Mcc::create(MccOptions {
        program: "synthetic".into(),
        ..MccOptions::default()
    })
    .expect("creating the MCC segment");
    let kinds = [
        RegionKind::Function,
        RegionKind::Function,
        RegionKind::Marker,
        RegionKind::Marker,
    ];
    let entries: Vec<ConfigEntry> = REGIONS
        .iter()
        .zip(kinds)
        .enumerate()
        .map(|(i, (name, kind))| {
            mcc.register_region(1, 10 * (i as u32 + 1), kind, name, "synthetic.f90")
                .unwrap()
        })
        .collect();
    let storage = vec![0u8; A_BYTES as usize + 64];
    let a_start = (storage.as_ptr() as u64).next_multiple_of(64);
    let a = AddressRange::new(a_start, A_BYTES);
    mcc.register_data_structure("A", a, DataStructureKind::HeapRegistered)
        .unwrap();
    let x = vec![0u8; 4096];
    mcc.register_data_structure(
        "x",
        AddressRange::new(x.as_ptr() as u64, 4096),
        DataStructureKind::HeapRegistered,
    )
    .unwrap();
    let model = var(MODEL_TEXT).unwrap_or_else(|| SPEC.to_owned());
    mcc.publish_model(&PublishedModel {
        spec: model,
        counters: CounterArrayConfig::default().counters as u32,
        cores: 0,
    })
    .unwrap();
    let spec: HierarchySpec = SPEC.parse().unwrap();
    let mut program = Program {
        hierarchy: Hierarchy::new(&spec).unwrap(),
        line: 32,
        mcc,
        open: Vec::new(),
        sums: HashMap::new(),
    };
    println!("SYNTHETIC READY {}", std::process::id());
    let _ = std::io::stdout().flush();
    if let Some(ms) = var(SETUP_MS).and_then(|v| v.parse().ok()) {
        std::thread::sleep(Duration::from_millis(ms));
    }
    program.mcc.ready();

    let [main, init, kernel, idle] = [entries[0], entries[1], entries[2], entries[3]];
    let scratch_storage = vec![0u8; SCRATCH_BYTES as usize + 64];
    let scratch_start = (scratch_storage.as_ptr() as u64).next_multiple_of(64);
    program.region(main, |p| {
        p.region(init, |p| {
            if work {
                for i in 0..A_ELEMENTS {
                    p.access(a_start + 4 * i, AccessKind::Write);
                }
            }
        });
        if scratch {
            let (file, line) = SCRATCH_SITE;
            p.mcc
                .register_data_structure_with(
                    &format!("{file}:{line}"),
                    AddressRange::new(scratch_start, SCRATCH_BYTES),
                    DataStructureKind::AllocationSite,
                    true,
                    &DataStructureDetails {
                        site: Some(SiteKey::new(file, line)),
                        shape: None,
                    },
                )
                .unwrap();
        }
        let mut i = 0;
        while iterations == 0 || i < iterations {
            p.region(kernel, |p| {
                if work {
                    for i in 0..A_ELEMENTS {
                        p.access(a_start + 4 * i, AccessKind::Read);
                    }
                }
            });
            p.region(idle, |p| {
                if scratch {
                    for i in 0..SCRATCH_BYTES / 4 {
                        p.access(scratch_start + 4 * i, AccessKind::Read);
                    }
                }
            });
            if !pause.is_zero() {
                std::thread::sleep(pause);
            }
            i += 1;
        }
    });
    drop(storage);
    drop(x);
    drop(scratch_storage);
}
