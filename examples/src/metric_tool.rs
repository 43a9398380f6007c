//! METRIC's tables measured live by a tool: the program runs under an embedded daemon; per region
//! the tool places static counts of reads, read misses, writes and write misses over every data
//! structure and over the whole address space, with the reuse and evictor analyses on the last,
//! lets the program run to its end and builds the tables from the results.
//!
//! A target has a fixed number of request slots; regions that do not fit in one run are measured
//! in further runs of the same program, so the tables never silently lose a region.

use epcache_client::{
    Analysis, ClientError, DataRef, DataStructure, Launch, LocalError, LocalTarget, Region,
    RegionKind, RegionRef, Request, RequestInfo, RequestResult,
};

use crate::metric_table::{Counts, RegionTable};

/// The four counts of a table row, as PAPI event suffixes (`PAPI_L1_DCR`, ...).
const EVENT_SUFFIXES: [&str; 4] = ["DCR", "LDM", "DCW", "STM"];

/// Why the tables could not be measured.
#[derive(Debug, thiserror::Error)]
pub enum MetricError {
    #[error(transparent)]
    Launch(#[from] LocalError),
    #[error(transparent)]
    Client(#[from] ClientError),
    #[error("{program} has no region named {name}; its function regions are {names:?}")]
    NoSuchRegion {
        program: String,
        name: String,
        names: Vec<String>,
    },
    #[error(
        "{program} has no function regions but main to measure; name regions with --region (markers are requestable once met)"
    )]
    NoRegions { program: String },
    #[error(
        "region {region} needs {needed} requests ({structures} data structures and the whole region, 4 events each, and the analyses) but a target has {slots} slots"
    )]
    TooManyRequests {
        region: String,
        needed: usize,
        structures: usize,
        slots: usize,
    },
    #[error("the analyses of region {region} did not run: {message}")]
    Analysis { region: String, message: String },
    #[error("{program} failed ({status}) in run {run}; its tables would describe a broken run")]
    ProgramFailed {
        program: String,
        status: std::process::ExitStatus,
        run: usize,
    },
}

/// What to measure.
#[derive(Debug, Clone)]
pub struct MetricOptions {
    /// The program and its environment (cache, arguments).
    pub launch: Launch,
    /// Regions by name; empty for every function region but `main`.
    pub regions: Vec<String>,
    /// Data level of the counts, 1 = L1 (the analyses watch the L1).
    pub level: usize,
}

/// One region's requests, by role.
struct Placed {
    region: Region,
    /// Per data structure (name, ids of the four events).
    structures: Vec<(String, [u64; 4])>,
    /// The whole region's four events.
    total: [u64; 4],
    /// The request that carries the analyses (none without data structures).
    analyses: Option<u64>,
}

/// Runs the program as often as its regions need (usually once) and returns one table per
/// region, in the order the regions were chosen; `progress` hears about each run.
pub async fn measure(
    options: &MetricOptions,
    mut progress: impl FnMut(&str),
) -> Result<Vec<RegionTable>, MetricError> {
    let program = options.launch.program.display().to_string();
    let mut target = LocalTarget::launch(options.launch.clone()).await?;
    let pid = target.pid();
    let description = target.client().describe(pid).await?;
    let regions = choose_regions(&program, &description.regions, &options.regions)?;
    let structures: Vec<DataStructure> = description
        .data_structures
        .into_iter()
        .filter(|d| d.live && !d.range.is_empty())
        .collect();
    let per_region = 4 * (structures.len() + 1) + 1;
    let slots = description.request_slots as usize;
    if per_region > slots {
        return Err(MetricError::TooManyRequests {
            region: regions[0].name.clone(),
            needed: per_region,
            structures: structures.len(),
            slots,
        });
    }
    let groups: Vec<&[Region]> = regions.chunks(slots / per_region).collect();
    let mut tables = Vec::new();
    for (run, group) in groups.iter().enumerate() {
        if run > 0 {
            target = LocalTarget::launch(options.launch.clone()).await?;
        }
        progress(&format!(
            "run {} of {}: {} region(s), {} data structure(s), {} requests",
            run + 1,
            groups.len(),
            group.len(),
            structures.len(),
            group.len() * per_region
        ));
        let mut placed = Vec::new();
        for region in group.iter() {
            placed.push(place(&mut target, region, &structures, options.level).await?);
        }
        let status = target.run_to_end().await?;
        if !status.success() {
            return Err(MetricError::ProgramFailed {
                program,
                status,
                run: run + 1,
            });
        }
        for p in &placed {
            tables.push(table(&mut target, p, options.level).await?);
        }
    }
    Ok(tables)
}

fn choose_regions(
    program: &str,
    all: &[Region],
    named: &[String],
) -> Result<Vec<Region>, MetricError> {
    if named.is_empty() {
        let regions: Vec<Region> = all
            .iter()
            .filter(|r| r.kind == RegionKind::Function && r.name != "main")
            .cloned()
            .collect();
        if regions.is_empty() {
            return Err(MetricError::NoRegions {
                program: program.to_owned(),
            });
        }
        return Ok(regions);
    }
    named
        .iter()
        .map(|name| {
            all.iter()
                .find(|r| r.name == *name)
                .cloned()
                .ok_or_else(|| MetricError::NoSuchRegion {
                    program: program.to_owned(),
                    name: name.clone(),
                    names: all.iter().map(|r| r.name.clone()).collect(),
                })
        })
        .collect()
}

async fn place(
    target: &mut LocalTarget,
    region: &Region,
    structures: &[DataStructure],
    level: usize,
) -> Result<Placed, MetricError> {
    let pid = target.pid();
    let events: Vec<String> = EVENT_SUFFIXES
        .iter()
        .map(|s| format!("PAPI_L{level}_{s}"))
        .collect();
    let mut requests = Vec::new();
    for d in structures {
        for e in &events {
            requests.push(Request::count(
                RegionRef::Index(region.index),
                DataRef::Index(d.index),
                e.as_str(),
            ));
        }
    }
    for e in &events {
        requests.push(Request::count(
            RegionRef::Index(region.index),
            crate::WHOLE_ADDRESS_SPACE,
            e.as_str(),
        ));
    }
    // The analyses cover every live data structure whatever the request names; their result is
    // the report alone (an analysis request counts nothing), hence a request of its own.
    if let Some(first) = structures.first() {
        requests.push(
            Request::count(
                RegionRef::Index(region.index),
                DataRef::Index(first.index),
                "PAPI_L1_DCA",
            )
            .analysis(Analysis::Reuse)
            .analysis(Analysis::Evictors),
        );
    }
    let infos: Vec<RequestInfo> = target.client().requests(pid, &requests).await?;
    let ids: Vec<u64> = infos.iter().map(|i| i.id).collect();
    let four = |chunk: &[u64]| [chunk[0], chunk[1], chunk[2], chunk[3]];
    let counted = 4 * (structures.len() + 1);
    Ok(Placed {
        region: region.clone(),
        structures: structures
            .iter()
            .zip(ids.chunks(4))
            .map(|(d, chunk)| (d.name.clone(), four(chunk)))
            .collect(),
        total: four(&ids[counted - 4..counted]),
        analyses: ids.get(counted).copied(),
    })
}

fn counts(results: &[RequestResult], ids: &[u64; 4]) -> Counts {
    let total = |id: u64| {
        results
            .iter()
            .find(|r| r.request.id == id)
            .map_or(0, |r| r.total)
    };
    Counts {
        reads: total(ids[0]),
        read_misses: total(ids[1]),
        writes: total(ids[2]),
        write_misses: total(ids[3]),
    }
}

async fn table(
    target: &mut LocalTarget,
    placed: &Placed,
    level: usize,
) -> Result<RegionTable, MetricError> {
    let pid = target.pid();
    let mut ids: Vec<u64> = placed.structures.iter().flat_map(|s| s.1).collect();
    ids.extend(placed.total);
    ids.extend(placed.analyses);
    let results = target.client().results(pid, &ids).await?;
    let region = &placed.region;
    let carrier = placed
        .analyses
        .and_then(|id| results.iter().find(|r| r.request.id == id))
        .filter(|r| r.available);
    let analyses = match carrier {
        None => None,
        Some(r) => Some(r.analysis.clone().ok_or_else(|| {
            MetricError::Analysis {
                region: region.name.clone(),
                message: r
                    .analysis_missing
                    .clone()
                    .unwrap_or_else(|| "the target wrote counts but no report".into()),
            }
        })?),
    };
    let file = region.file.rsplit('/').next().unwrap_or(&region.file);
    Ok(RegionTable::assemble(
        region.name.clone(),
        format!("{file}:{}", region.line),
        results.iter().map(|r| r.instances).max().unwrap_or(0),
        counts(&results, &placed.total),
        placed
            .structures
            .iter()
            .map(|(name, ids)| (name.clone(), counts(&results, ids)))
            .collect(),
        analyses.as_ref(),
        level,
    ))
}
