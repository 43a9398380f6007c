//! METRIC's tables measured live by a tool: the program runs under an embedded daemon; per region
//! the tool places static counts of reads, read misses, writes and write misses over every data
//! structure and over the whole address space, with the reuse and evictor analyses on one more
//! request, lets the program run to its end and builds the tables from the results.
//!
//! The data structures are learned as the program creates them ([`epcache_client::Survey`]): the
//! tool halts the program at every region entry and looks again, so a heap array allocated after
//! start (named by its allocation line, requested by its allocation site) gets its rows from the
//! first instance of each region entered after the allocation, and a marker region from its first
//! instance. After [`LOOK_LIMIT`] halts the tool stops looking and lets the program run.
//!
//! A target has a fixed number of request slots; a region whose requests do not fit (its own, or
//! those of a structure that appears later) is withdrawn and measured in a further run of the
//! same program, so the tables never silently lose a region or a row. The target runs one set of
//! analyses at a time, so of two nested regions (a marker around a kernel function, a function
//! calling another) only the inner one gets its report; a region whose report is missing is
//! measured again alone in a further run.

use std::collections::HashSet;

use epcache_client::{
    Analysis, Boundary, ClientError, Extension, HaltingPoint, Launch, LocalError, LocalTarget,
    Pair, Region, RegionRef, Request, RequestResult, StepOutcome, StepTo, Survey,
};

use crate::metric_table::{Counts, RegionTable};

/// The four counts of a table row, as PAPI event suffixes (`PAPI_L1_DCR`, ...).
const EVENT_SUFFIXES: [&str; 4] = ["DCR", "LDM", "DCW", "STM"];

/// Region entries at which the tool looks for new data structures and regions, at most: a
/// program that enters tiny regions millions of times is not halted millions of times (a halt
/// and a look take about 3.6 ms in a debug build: 7 s at most).
pub const LOOK_LIMIT: u32 = 2_000;

/// Whether `asked` (a region the user listed) names `region`: whole, or by its short, symbol
/// or other-case form (`epcache_client::region_names`).
fn names(asked: &str, region: &str) -> bool {
    epcache_client::region_names::name_match(region, asked).is_some()
}

/// Why the tables could not be measured.
#[derive(Debug, thiserror::Error)]
pub enum MetricError {
    #[error(transparent)]
    Launch(#[from] LocalError),
    #[error(transparent)]
    Client(#[from] ClientError),
    #[error(
        "{program} ran no region named {name}; its regions were {names:?} (a marker region is known once met)"
    )]
    NoSuchRegion {
        program: String,
        name: String,
        names: Vec<String>,
    },
    #[error(
        "{program} ran no region to measure: it has no function but main and met no marker region; name one with --region, or put its loops in functions of their own"
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
    /// Regions by name; empty for every function region but `main` and every marker region.
    pub regions: Vec<String>,
    /// Data level of the counts, 1 = L1 (the analyses watch the L1).
    pub level: usize,
}

/// A region as the runs know it: its index may differ from run to run (markers are numbered as
/// met), its name and first line do not.
fn key(region: &Region) -> (String, u32) {
    (region.name.clone(), region.line)
}

/// Runs the program as often as its regions need (usually once) and returns one table per
/// region, in the order the regions were named (else as they appeared); `progress` hears about
/// each run.
pub async fn measure(
    options: &MetricOptions,
    mut progress: impl FnMut(&str),
) -> Result<Vec<RegionTable>, MetricError> {
    let program = options.launch.program.display().to_string();
    let level = options.level;
    let events: Vec<String> = EVENT_SUFFIXES
        .iter()
        .map(|s| format!("PAPI_L{level}_{s}"))
        .collect();
    let wanted = |r: &Region| {
        if options.regions.is_empty() {
            crate::surveyed_by_default(r)
        } else {
            options.regions.iter().any(|n| names(n, &r.name))
        }
    };
    // Four counts per pair, the region's own four over the whole address space, and the
    // analyses on the region's first data structure (they cover every live one whatever the
    // request names; their result is the report alone, hence a request of its own).
    let template = |pair: Pair<'_>| {
        let region = RegionRef::Index(pair.region.index);
        let data = pair.data.map_or_else(
            || epcache_client::DataRef::Range(crate::WHOLE_ADDRESS_SPACE),
            |d| d.data.clone(),
        );
        let mut requests: Vec<Request> = events
            .iter()
            .map(|e| Request::count(region.clone(), data.clone(), e.as_str()))
            .collect();
        if pair.first_data_of_region {
            requests.push(
                Request::count(region, data, "PAPI_L1_DCA")
                    .analysis(Analysis::Reuse)
                    .analysis(Analysis::Evictors),
            );
        }
        requests
    };

    let mut measured: HashSet<(String, u32)> = HashSet::new();
    // Regions whose analyses did not run beside others: each is measured in a run of its own.
    let mut alone: Vec<(String, u32)> = Vec::new();
    let mut tables: Vec<(Region, RegionTable)> = Vec::new();
    let mut seen_names: Vec<String> = Vec::new();
    let mut most_structures = 0;
    for run in 1.. {
        let mut target = LocalTarget::launch(options.launch.clone()).await?;
        let pid = target.pid();
        let by_itself = alone.first().cloned();
        let select = |r: &Region| match &by_itself {
            Some(only) => key(r) == *only,
            None => wanted(r) && !measured.contains(&key(r)),
        };
        let mut survey = Survey::new();
        let ext = survey
            .extend(target.client(), pid, select, template)
            .await?;
        withdraw_left_out(&mut target, &mut survey, &ext).await?;
        let mut halts = 0;
        let any_entry = StepTo::Point(HaltingPoint {
            region: None,
            boundary: Some(Boundary::Entry),
            skip: 0,
        });
        loop {
            if halts == LOOK_LIMIT {
                progress(&format!(
                    "run {run}: stopped looking for new data structures after {LOOK_LIMIT} region entries; any created later are not in the tables"
                ));
                break;
            }
            match target.client().step(pid, any_entry.clone()).await? {
                StepOutcome::Halted(_) => halts += 1,
                StepOutcome::Exited(_) => break,
            }
            let ext = survey
                .extend(target.client(), pid, select, template)
                .await?;
            withdraw_left_out(&mut target, &mut survey, &ext).await?;
        }
        let status = target.run_to_end().await?;
        if !status.success() {
            return Err(MetricError::ProgramFailed {
                program,
                status,
                run,
            });
        }
        let joined: Vec<Region> = survey.joined().cloned().collect();
        progress(&format!(
            "run {run}: {} region(s), {} data structure(s), {} requests",
            joined.len(),
            survey.data().len(),
            survey
                .placements()
                .iter()
                .map(|p| p.requests.len())
                .sum::<usize>()
        ));
        for region in &joined {
            match table(&mut target, &survey, region, level).await? {
                Measured::Table(table) => {
                    tables.push((region.clone(), table));
                    measured.insert(key(region));
                }
                Measured::AnalysesMissing(message) if by_itself.is_some() => {
                    return Err(MetricError::Analysis {
                        region: region.name.clone(),
                        message,
                    });
                }
                Measured::AnalysesMissing(_) => {
                    progress(&format!(
                        "the analyses of {} did not run beside those of a region around or inside it: measuring it alone in another run",
                        region.name
                    ));
                    alone.push(key(region));
                }
            }
        }
        if by_itself.is_some() {
            alone.remove(0);
        }
        for r in survey.regions() {
            if !seen_names.contains(&r.name) {
                seen_names.push(r.name.clone());
            }
        }
        most_structures = most_structures.max(survey.data().len());
        let left: Vec<&Region> = survey
            .regions()
            .iter()
            .filter(|r| wanted(r) && !measured.contains(&key(r)) && !alone.contains(&key(r)))
            .collect();
        if left.is_empty() && alone.is_empty() {
            break;
        }
        if joined.is_empty() {
            // Not even one region fits alone.
            let slots = target.client().describe(pid).await?.request_slots as usize;
            return Err(MetricError::TooManyRequests {
                region: left.first().map_or_else(String::new, |r| r.name.clone()),
                needed: 4 * (most_structures + 1) + 1,
                structures: most_structures,
                slots,
            });
        }
        if !left.is_empty() {
            progress(&format!(
                "{} region(s) did not fit in the target's request slots: measuring them in another run",
                left.len()
            ));
        }
    }
    if let Some(name) = options
        .regions
        .iter()
        .find(|n| !tables.iter().any(|(r, _)| names(n, &r.name)))
    {
        return Err(MetricError::NoSuchRegion {
            program,
            name: name.clone(),
            names: seen_names,
        });
    }
    if tables.is_empty() {
        return Err(MetricError::NoRegions { program });
    }
    if options.regions.is_empty() {
        tables.sort_by_key(|(r, _)| r.index);
    } else {
        tables.sort_by_key(|(r, _)| options.regions.iter().position(|n| names(n, &r.name)));
    }
    Ok(tables.into_iter().map(|(_, t)| t).collect())
}

/// Withdraws the regions with pairs left out: they are measured whole in a later run.
async fn withdraw_left_out(
    target: &mut LocalTarget,
    survey: &mut Survey,
    ext: &Extension,
) -> Result<(), ClientError> {
    let pid = target.pid();
    let mut withdrawn = HashSet::new();
    for left in &ext.left_out {
        if withdrawn.insert(left.region) {
            survey.withdraw(target.client(), pid, left.region).await?;
        }
    }
    Ok(())
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

/// A region's table, or why its analyses are missing.
enum Measured {
    Table(RegionTable),
    AnalysesMissing(String),
}

async fn table(
    target: &mut LocalTarget,
    survey: &Survey,
    region: &Region,
    level: usize,
) -> Result<Measured, MetricError> {
    let pid = target.pid();
    let placements: Vec<_> = survey
        .placements()
        .iter()
        .filter(|p| p.region == region.index)
        .collect();
    let ids: Vec<u64> = placements.iter().flat_map(|p| p.ids()).collect();
    let results = target.client().results(pid, &ids).await?;
    let four = |ids: &[u64]| [ids[0], ids[1], ids[2], ids[3]];
    let mut total = Counts::default();
    let mut structures = Vec::new();
    let mut carrier = None;
    for p in &placements {
        let ids = p.ids();
        match p.data {
            None => total = counts(&results, &four(&ids)),
            Some(d) => {
                structures.push((survey.data()[d].name.clone(), counts(&results, &four(&ids))))
            }
        }
        if let Some(&id) = ids.get(4) {
            carrier = results.iter().find(|r| r.request.id == id);
        }
    }
    let analyses = match carrier.filter(|r| r.available) {
        None => None,
        Some(r) => match &r.analysis {
            Some(report) => Some(report.clone()),
            None => {
                return Ok(Measured::AnalysesMissing(
                    r.analysis_missing
                        .clone()
                        .unwrap_or_else(|| "the target wrote counts but no report".into()),
                ));
            }
        },
    };
    let file = region.file.rsplit('/').next().unwrap_or(&region.file);
    Ok(Measured::Table(RegionTable::assemble(
        region.name.clone(),
        format!("{file}:{}", region.line),
        results.iter().map(|r| r.instances).max().unwrap_or(0),
        total,
        structures,
        analyses.as_ref(),
        level,
    )))
}
