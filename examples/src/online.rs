//! The EP-Cache paper's incremental online analysis as a tool program: it steps the program
//! region by region and decides each next request from the data so far.
//!
//! 1. **Survey**: a static count of the event (L1 misses by default) for every data structure in
//!    every function region but `main`, stepping from region exit to region exit until some
//!    region has run `survey_instances` times (the program has begun to repeat itself).
//! 2. **Decide**: the (region, data structure) with the most misses per instance is the worst.
//!    The survey's requests are cancelled, so the rest of the run pays only for what follows.
//! 3. **Locate**: a histogram of the worst structure in the worst region over its next instance,
//!    with a static count beside it (the buckets must sum to it). The shortest run of buckets
//!    holding half the misses is the hot span.
//! 4. **Zoom**: when the hot span is at most a third of the structure, a histogram of just that
//!    span over the instance after, so the hot spot is resolved to a few lines.
//!
//! Then the program is released to its end.

use std::fmt::Write as _;
use std::ops::Range;

use epcache_client::{
    Boundary, ClientError, DataRef, DataStructure, HaltingPoint, Launch, LocalError, LocalTarget,
    Region, RegionKind, RegionRef, Request, RequestResult, StepOutcome, StepTo,
};
use epcache_shm::layout::MAX_REQUEST_SLOTS;

/// Halts the survey takes at most, so a program whose regions are tiny and called millions of
/// times is not stepped forever; the survey then decides on what it has.
const SURVEY_HALT_LIMIT: u32 = 20_000;

/// Requests kept free during the survey for the histograms that follow.
const RESERVED_SLOTS: usize = 3;

/// Why the analysis could not finish.
#[derive(Debug, thiserror::Error)]
pub enum OnlineError {
    #[error(transparent)]
    Launch(#[from] LocalError),
    #[error(transparent)]
    Client(#[from] ClientError),
    #[error(
        "{program} has no function regions but main and no data structures to survey; build it with `epcache cc` and -g"
    )]
    NothingToSurvey { program: String },
    #[error("{program} ended during the survey, before any surveyed region counted a {event}")]
    NothingCounted { program: String, event: String },
    #[error("{program} failed ({status}); the analysis describes a broken run")]
    ProgramFailed {
        program: String,
        status: std::process::ExitStatus,
    },
}

/// What to analyse.
#[derive(Debug, Clone)]
pub struct OnlineOptions {
    /// The program and its environment.
    pub launch: Launch,
    /// The event ranked and located (PAPI-style name).
    pub event: String,
    /// The survey ends once some region has run this many times.
    pub survey_instances: u64,
    /// Buckets of each histogram.
    pub buckets: u32,
}

/// One surveyed (region, data structure) pair.
#[derive(Debug, Clone, PartialEq)]
pub struct SurveyEntry {
    pub region: String,
    pub structure: String,
    /// The event's count over the survey.
    pub count: u64,
    /// Instances of the region the survey saw.
    pub instances: u64,
}

impl SurveyEntry {
    /// The count per instance, the survey's ranking.
    pub fn per_instance(&self) -> f64 {
        self.count as f64 / self.instances.max(1) as f64
    }
}

/// A histogram the tool read, and the span it found hot in it.
#[derive(Debug, Clone, PartialEq)]
pub struct Located {
    /// The histogram (its buckets carry their address ranges).
    pub histogram: RequestResult,
    /// The static count placed beside it over the same instance.
    pub static_count: u64,
    /// The shortest run of buckets holding at least half the count.
    pub hot: Range<u64>,
    /// The share of the count in `hot`.
    pub hot_share: f64,
}

/// What the analysis found.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    /// The event.
    pub event: String,
    /// Every surveyed pair that counted something, worst first.
    pub survey: Vec<SurveyEntry>,
    /// Region boundaries the program halted at during the survey.
    pub survey_halts: u32,
    /// The worst region and structure, and the structure's bytes.
    pub region: String,
    pub structure: String,
    pub structure_range: Range<u64>,
    /// The histogram over the whole structure; `None` if the program ended first.
    pub coarse: Option<Located>,
    /// The histogram over the hot span; `None` if the span was wide or the program ended.
    pub zoom: Option<Located>,
}

/// Runs the analysis; `progress` hears each decision as it is made.
pub async fn analyse(
    options: &OnlineOptions,
    mut progress: impl FnMut(&str),
) -> Result<Finding, OnlineError> {
    let program = options.launch.program.display().to_string();
    let mut target = LocalTarget::launch(options.launch.clone()).await?;
    let pid = target.pid();
    let description = target.client().describe(pid).await?;
    let regions: Vec<Region> = description
        .regions
        .into_iter()
        .filter(|r| r.kind == RegionKind::Function && r.name != "main")
        .collect();
    let structures: Vec<DataStructure> = description
        .data_structures
        .into_iter()
        .filter(|d| d.live && !d.range.is_empty())
        .collect();
    if regions.is_empty() || structures.is_empty() {
        return Err(OnlineError::NothingToSurvey { program });
    }

    // 1. Survey.
    let mut pairs = Vec::new();
    let mut requests = Vec::new();
    'all: for r in &regions {
        for d in &structures {
            if requests.len() + RESERVED_SLOTS >= MAX_REQUEST_SLOTS as usize {
                progress(&format!(
                    "the survey covers the first {} (region, data structure) pairs: the target's request slots are full",
                    requests.len()
                ));
                break 'all;
            }
            pairs.push((r.name.clone(), d.name.clone()));
            requests.push(Request::count(
                RegionRef::Index(r.index),
                DataRef::Index(d.index),
                options.event.as_str(),
            ));
        }
    }
    let placed = target.client().requests(pid, &requests).await?;
    let ids: Vec<u64> = placed.iter().map(|p| p.id).collect();
    progress(&format!(
        "survey: {} static counts of {} ({} regions x {} data structures)",
        ids.len(),
        options.event,
        regions.len(),
        structures.len()
    ));
    let any_exit = StepTo::Point(HaltingPoint {
        region: None,
        boundary: Some(Boundary::Exit),
        skip: 0,
    });
    let mut exits: Vec<(String, u64)> = Vec::new();
    let mut survey_halts = 0;
    let mut ended = false;
    while survey_halts < SURVEY_HALT_LIMIT {
        match target.client().step(pid, any_exit.clone()).await? {
            StepOutcome::Halted(halt) => {
                survey_halts += 1;
                let Some(p) = halt.position else { continue };
                let seen = match exits.iter_mut().find(|(name, _)| *name == p.region) {
                    Some((_, n)) => {
                        *n += 1;
                        *n
                    }
                    None => {
                        exits.push((p.region.clone(), 1));
                        1
                    }
                };
                if seen >= options.survey_instances && regions.iter().any(|r| r.name == p.region) {
                    progress(&format!(
                        "survey ends at the exit of {} (instance {seen}) after {survey_halts} halts",
                        p.region
                    ));
                    break;
                }
            }
            StepOutcome::Exited(_) => {
                ended = true;
                break;
            }
        }
    }
    let results = target.client().results(pid, &ids).await?;
    let mut survey: Vec<SurveyEntry> = pairs
        .into_iter()
        .zip(&results)
        .filter(|(_, r)| r.available && r.total > 0)
        .map(|((region, structure), r)| SurveyEntry {
            region,
            structure,
            count: r.total,
            instances: r.instances,
        })
        .collect();
    survey.sort_by(|a, b| {
        b.per_instance()
            .total_cmp(&a.per_instance())
            .then_with(|| (&a.region, &a.structure).cmp(&(&b.region, &b.structure)))
    });
    let Some(worst) = survey.first().cloned() else {
        return Err(OnlineError::NothingCounted {
            program,
            event: options.event.clone(),
        });
    };

    // 2. Decide.
    progress(&format!(
        "worst: {} in {} ({:.0} per instance); the survey's requests are cancelled",
        worst.structure,
        worst.region,
        worst.per_instance()
    ));
    if !ended {
        target.client().cancel(pid, &ids).await?;
    }
    let region = regions
        .iter()
        .find(|r| r.name == worst.region)
        .expect("the survey only counts chosen regions");
    let structure = structures
        .iter()
        .find(|d| d.name == worst.structure)
        .expect("the survey only counts chosen structures");
    let mut finding = Finding {
        event: options.event.clone(),
        survey,
        survey_halts,
        region: region.name.clone(),
        structure: structure.name.clone(),
        structure_range: structure.range.clone(),
        coarse: None,
        zoom: None,
    };
    if ended {
        progress("the program ended during the survey: nothing left to locate");
        return finish(target, finding, program).await;
    }

    // 3. Locate, then 4. zoom in when the hot span is narrow.
    let coarse = locate(
        &mut target,
        options,
        region,
        DataRef::Index(structure.index),
        &mut progress,
    )
    .await?;
    let narrow = coarse
        .as_ref()
        .filter(|c| 3 * (c.hot.end - c.hot.start) <= structure.range.end - structure.range.start);
    if let Some(c) = narrow {
        progress(&format!(
            "hot span: bytes {}..{} of {} hold {:.0}% of the {}; zooming in",
            c.hot.start - structure.range.start,
            c.hot.end - structure.range.start,
            structure.name,
            100.0 * c.hot_share,
            options.event
        ));
        finding.zoom = locate(
            &mut target,
            options,
            region,
            DataRef::Range(c.hot.clone()),
            &mut progress,
        )
        .await?;
    }
    finding.coarse = coarse;
    finish(target, finding, program).await
}

async fn finish(
    target: LocalTarget,
    finding: Finding,
    program: String,
) -> Result<Finding, OnlineError> {
    let status = target.finish().await?;
    if !status.success() {
        return Err(OnlineError::ProgramFailed { program, status });
    }
    Ok(finding)
}

/// A histogram and a static count of `data` over the next instance of `region`, and the hot
/// span in it; `None` when the program ends before the region runs again.
async fn locate(
    target: &mut LocalTarget,
    options: &OnlineOptions,
    region: &Region,
    data: DataRef,
    progress: &mut impl FnMut(&str),
) -> Result<Option<Located>, OnlineError> {
    let pid = target.pid();
    let at = RegionRef::Index(region.index);
    let requests = [
        Request::histogram(
            at.clone(),
            data.clone(),
            options.event.as_str(),
            options.buckets,
        ),
        Request::count(at.clone(), data, options.event.as_str()),
    ];
    let placed = target.client().requests(pid, &requests).await?;
    let ids: Vec<u64> = placed.iter().map(|p| p.id).collect();
    progress(&format!(
        "histogram of {} over {} in {}: {} buckets of {} bytes, for its next instance",
        options.event,
        placed[0].data_name(),
        region.name,
        placed[0].buckets,
        placed[0].bucket_bytes
    ));
    if let StepOutcome::Exited(_) = target.client().step(pid, StepTo::RegionExit(at)).await? {
        progress(&format!(
            "the program ended before {} ran again",
            region.name
        ));
        return Ok(None);
    }
    let mut results = target.client().results(pid, &ids).await?;
    target.client().cancel(pid, &ids).await?;
    let static_count = results.pop().map_or(0, |r| r.total);
    let histogram = results.pop().expect("two results for two requests");
    let counts: Vec<u64> = histogram.buckets.iter().map(|b| b.count).collect();
    let (first, last) = hot_span(&counts);
    let hot = match (histogram.buckets.get(first), histogram.buckets.get(last)) {
        (Some(a), Some(b)) => a.range.start..b.range.end,
        _ => histogram.request.range.clone(),
    };
    let in_hot: u64 = counts.get(first..=last).map_or(0, |c| c.iter().sum());
    Ok(Some(Located {
        hot_share: in_hot as f64 / histogram.total.max(1) as f64,
        hot,
        static_count,
        histogram,
    }))
}

/// The first and last bucket of the shortest run holding at least half the total (the one with
/// the most, among equally short runs); the whole range when everything is zero.
pub fn hot_span(counts: &[u64]) -> (usize, usize) {
    let total: u64 = counts.iter().sum();
    if total == 0 || counts.is_empty() {
        return (0, counts.len().saturating_sub(1));
    }
    let mut best = (0, counts.len() - 1, total);
    for first in 0..counts.len() {
        let mut sum = 0;
        for (last, count) in counts.iter().enumerate().skip(first) {
            sum += count;
            if 2 * sum >= total {
                let shorter = last - first < best.1 - best.0;
                let as_short_more = last - first == best.1 - best.0 && sum > best.2;
                if shorter || as_short_more {
                    best = (first, last, sum);
                }
                break;
            }
        }
    }
    (best.0, best.1)
}

/// The finding in words, with the histograms as bars.
pub fn render(f: &Finding) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "survey ({} halts): {} per instance, worst first",
        f.survey_halts, f.event
    );
    let _ = writeln!(
        out,
        "  {:<20} {:<20} {:>12} {:>10} {:>14}",
        "region", "data structure", "count", "instances", "per instance"
    );
    for e in f.survey.iter().take(10) {
        let _ = writeln!(
            out,
            "  {:<20} {:<20} {:>12} {:>10} {:>14.0}",
            e.region,
            e.structure,
            e.count,
            e.instances,
            e.per_instance()
        );
    }
    let _ = writeln!(out, "\nworst: {} in {}", f.structure, f.region);
    for (title, located) in [("whole structure", &f.coarse), ("hot span", &f.zoom)] {
        let Some(l) = located else { continue };
        let _ = writeln!(
            out,
            "\n{} of {} in {}, {}: {} (static count {})",
            f.event, f.structure, f.region, title, l.histogram.total, l.static_count
        );
        let max = l
            .histogram
            .buckets
            .iter()
            .map(|b| b.count)
            .max()
            .unwrap_or(0)
            .max(1);
        for b in &l.histogram.buckets {
            let bar = "#".repeat((40 * b.count).div_ceil(max) as usize);
            let hot = if b.range.start >= l.hot.start && b.range.end <= l.hot.end {
                '*'
            } else {
                ' '
            };
            let _ = writeln!(
                out,
                " {hot}{:>9}..{:<9} {:>10} {bar}",
                b.range.start - f.structure_range.start,
                b.range.end - f.structure_range.start,
                b.count
            );
        }
        let _ = writeln!(
            out,
            "  hot span (*): bytes {}..{} of {}, {:.1}% of its bytes, {:.0}% of the count",
            l.hot.start - f.structure_range.start,
            l.hot.end - f.structure_range.start,
            f.structure,
            100.0 * (l.hot.end - l.hot.start) as f64
                / (f.structure_range.end - f.structure_range.start) as f64,
            100.0 * l.hot_share
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::hot_span;

    #[test]
    fn the_hot_span_is_the_shortest_run_with_half_the_count() {
        assert_eq!(hot_span(&[1, 1, 10, 14, 1, 1]), (3, 3));
        assert_eq!(hot_span(&[1, 1, 10, 10, 1, 1]), (2, 3));
        assert_eq!(hot_span(&[5, 5, 5, 5]), (0, 1));
        // Of two equally short runs, the one holding more.
        assert_eq!(hot_span(&[6, 0, 0, 7, 0, 0]), (3, 3));
        assert_eq!(hot_span(&[0, 0, 0]), (0, 2));
        assert_eq!(hot_span(&[]), (0, 0));
    }
}
