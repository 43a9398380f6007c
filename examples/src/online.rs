//! The EP-Cache paper's incremental online analysis as a tool program: it steps the program
//! region by region and decides each next request from the data so far.
//!
//! 1. **Survey**: a static count of the event (L1 misses by default) for every data structure in
//!    every function region but `main` and every marker region, stepping from region boundary to
//!    region boundary until some region has run `survey_instances` times (the program has begun
//!    to repeat itself). The survey grows as the program runs ([`epcache_client::Survey`]): at
//!    each halt a heap array allocated since (named by its allocation line) or a marker met since
//!    joins it, so a program whose arrays are all `malloc`'d is surveyed as one with globals.
//! 2. **Decide**: the (region, data structure) with the most misses per instance is the worst.
//!    The survey's requests are cancelled, so the rest of the run pays only for what follows.
//! 3. **Locate**: a histogram of the worst structure in the worst region over its next instance,
//!    with a static count beside it (the buckets must sum to it). The shortest run of buckets
//!    holding half the misses is the hot span. A heap array is requested by its allocation site,
//!    so the histogram covers the block the region works on when it is entered.
//! 4. **Zoom**: when the hot span is at most a third of the structure, a histogram of just that
//!    span over the instance after, so the hot spot is resolved to a few lines.
//!
//! Then the program is released to its end.

use std::fmt::Write as _;
use std::ops::Range;

use epcache_client::{
    ClientError, DataRef, Launch, LocalError, LocalTarget, Pair, Region, RegionRef, Request,
    RequestResult, StepOutcome, StepTo, Survey, SurveyedData,
};

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
        "{program} ran no region to survey before {when}: it has no function but main and met no marker region; put its loops in functions of their own (each is a region under `epcache cc`) or between EPCACHE_REGION_BEGIN and EPCACHE_REGION_END"
    )]
    NoRegions { program: String, when: &'static str },
    #[error(
        "{program} has no data structure to survey: no global or static array in its debug information, and no heap block of 4096 bytes or more was allocated before {when}"
    )]
    NoData { program: String, when: &'static str },
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
    /// The worst region and structure, and the structure's bytes (a heap block's when the
    /// histogram bound to it).
    pub region: String,
    pub structure: String,
    pub structure_range: Range<u64>,
    /// The histogram over the whole structure; `None` if the program ended first.
    pub coarse: Option<Located>,
    /// The histogram over the hot span; `None` if the span was wide or the program ended.
    pub zoom: Option<Located>,
}

/// What the survey found as it grew, in words.
fn say_extension(ext: &epcache_client::Extension, progress: &mut impl FnMut(&str)) {
    for d in &ext.data {
        if let DataRef::Site { .. } = d.data {
            progress(&format!(
                "heap array {} ({} bytes) joins the survey, requested by its allocation site",
                d.name,
                d.range.end - d.range.start
            ));
        }
    }
    for r in ext
        .regions
        .iter()
        .filter(|r| r.kind == epcache_client::RegionKind::Marker)
    {
        progress(&format!("marker region {} joins the survey", r.name));
    }
    if let Some(first) = ext.left_out.first() {
        progress(&format!(
            "the target's request slots are full: {} (region, data structure) pair(s) from {} in {} on are not surveyed",
            ext.left_out.len(),
            first.data.as_deref().unwrap_or("its own counts"),
            first.region_name
        ));
    }
}

/// Runs the analysis; `progress` hears each decision as it is made.
pub async fn analyse(
    options: &OnlineOptions,
    mut progress: impl FnMut(&str),
) -> Result<Finding, OnlineError> {
    let program = options.launch.program.display().to_string();
    let mut target = LocalTarget::launch(options.launch.clone()).await?;
    let pid = target.pid();
    let event = options.event.as_str();
    let count = |pair: Pair<'_>| match pair.data {
        Some(d) => vec![Request::count(
            RegionRef::Index(pair.region.index),
            d.data.clone(),
            event,
        )],
        None => Vec::new(),
    };

    // 1. Survey, extended at every halt.
    let mut survey = Survey::new().reserve(RESERVED_SLOTS);
    let ext = survey
        .extend(target.client(), pid, crate::surveyed_by_default, count)
        .await?;
    say_extension(&ext, &mut progress);
    progress(&format!(
        "survey: static counts of {event} over every data structure in every region but main, as they appear ({} regions x {} data structures at start)",
        ext.regions.len(),
        ext.data.len()
    ));
    let mut exits: Vec<(u32, u64)> = Vec::new();
    let mut survey_halts = 0;
    let mut ended = false;
    while survey_halts < SURVEY_HALT_LIMIT {
        match target.client().step(pid, StepTo::NextBoundary).await? {
            StepOutcome::Halted(halt) => {
                survey_halts += 1;
                let ext = survey
                    .extend(target.client(), pid, crate::surveyed_by_default, count)
                    .await?;
                say_extension(&ext, &mut progress);
                let Some(p) = halt.position else { continue };
                if p.boundary != epcache_client::Boundary::Exit {
                    continue;
                }
                let seen = match exits.iter_mut().find(|(index, _)| *index == p.region_index) {
                    Some((_, n)) => {
                        *n += 1;
                        *n
                    }
                    None => {
                        exits.push((p.region_index, 1));
                        1
                    }
                };
                let surveyed = survey.joined().any(|r| r.index == p.region_index);
                if seen >= options.survey_instances && surveyed {
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
    let when = if ended {
        "it ended"
    } else {
        "the survey ended"
    };
    if survey.joined().next().is_none() {
        return Err(OnlineError::NoRegions { program, when });
    }
    if survey.data().is_empty() {
        return Err(OnlineError::NoData { program, when });
    }
    let placements: Vec<(u32, usize, u64)> = survey
        .placements()
        .iter()
        .filter_map(|p| Some((p.region, p.data?, p.requests.first()?.id)))
        .collect();
    let ids: Vec<u64> = placements.iter().map(|p| p.2).collect();
    let results = target.client().results(pid, &ids).await?;
    let mut ranked: Vec<(SurveyEntry, u32, usize)> = placements
        .iter()
        .filter_map(|&(region, data, id)| {
            let r = results.iter().find(|r| r.request.id == id)?;
            (r.available && r.total > 0).then(|| {
                let entry = SurveyEntry {
                    region: survey.region(region)?.name.clone(),
                    structure: survey.data()[data].name.clone(),
                    count: r.total,
                    instances: r.instances,
                };
                Some((entry, region, data))
            })?
        })
        .collect();
    ranked.sort_by(|(a, ..), (b, ..)| {
        b.per_instance()
            .total_cmp(&a.per_instance())
            .then_with(|| (&a.region, &a.structure).cmp(&(&b.region, &b.structure)))
    });
    let Some((worst, region_index, data_index)) = ranked.first().cloned() else {
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
        survey.cancel(target.client(), pid).await?;
    }
    let region = survey
        .region(region_index)
        .cloned()
        .expect("the survey only counts regions it has");
    let structure: SurveyedData = survey.data()[data_index].clone();
    let mut finding = Finding {
        event: options.event.clone(),
        survey: ranked.into_iter().map(|(entry, ..)| entry).collect(),
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
        &region,
        structure.data.clone(),
        &mut progress,
    )
    .await?;
    if let Some(c) = &coarse {
        // What the histogram bound to: a heap array's block when the region was entered.
        finding.structure_range = c.histogram.request.range.clone();
    }
    let whole = finding.structure_range.clone();
    let narrow = coarse
        .as_ref()
        .filter(|c| 3 * (c.hot.end - c.hot.start) <= whole.end - whole.start);
    if let Some(c) = narrow {
        progress(&format!(
            "hot span: bytes {}..{} of {} hold {:.0}% of the {}; zooming in",
            c.hot.start - whole.start,
            c.hot.end - whole.start,
            structure.name,
            100.0 * c.hot_share,
            options.event
        ));
        finding.zoom = locate(
            &mut target,
            options,
            &region,
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
    let width = match placed[0].bucket_bytes {
        // A heap array's buckets are cut when the request binds to its block.
        0 => "bytes fixed when it binds".to_owned(),
        bytes => format!("{bytes} bytes"),
    };
    progress(&format!(
        "histogram of {} over {} in {}: {} buckets of {width}, for its next instance",
        options.event,
        placed[0].data_name(),
        region.name,
        placed[0].buckets,
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
