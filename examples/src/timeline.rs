//! DTrack's timeline, measured live by a tool: the program runs under an embedded daemon, the tool
//! halts it at every entry and exit of one "interval" region, and records an event (L1 misses by
//! default) per data structure per interval, so phases that whole-run totals hide show up.
//!
//! Data structures that appear while the program runs join the timeline at the next interval
//! entry the tool halts at ([`epcache_client::Survey`]); intervals before that count zero for
//! them, as nothing lived there. A heap block (named by its allocation line) is requested by its
//! allocation site, so its column follows the block the site allocated last, and counts zero in
//! an interval entered while the site had no live block.

use std::fmt::Write as _;

use epcache_client::{
    Aggregation, Boundary, ClientError, DataRef, Launch, LocalError, LocalTarget, Pair, Region,
    RegionRef, Request, StepOutcome, StepTo, Survey,
};

/// Boundaries the tool steps through looking for a marker region that is not yet known (marker
/// regions exist once first met).
const MARKER_SEARCH_LIMIT: u32 = 100_000;

/// Why the timeline could not be recorded.
#[derive(Debug, thiserror::Error)]
pub enum TimelineError {
    #[error(transparent)]
    Launch(#[from] LocalError),
    #[error(transparent)]
    Client(#[from] ClientError),
    #[error(
        "{program} ended before region {region} ran; its regions were {names:?} (a marker region is known once met)"
    )]
    NeverRan {
        program: String,
        region: String,
        names: Vec<String>,
    },
    #[error(
        "region {region} was not entered within {MARKER_SEARCH_LIMIT} region boundaries; is it the right name?"
    )]
    NotFound { region: String },
    #[error("{program} failed ({status}) after {intervals} intervals")]
    ProgramFailed {
        program: String,
        status: std::process::ExitStatus,
        intervals: usize,
    },
}

/// What to record.
#[derive(Debug, Clone)]
pub struct TimelineOptions {
    /// The program and its environment.
    pub launch: Launch,
    /// The region whose instances are the intervals (a function or a marker).
    pub interval: String,
    /// The event counted (PAPI-style name).
    pub event: String,
}

/// The event per data structure per interval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Timeline {
    /// The interval region.
    pub interval: String,
    /// The event.
    pub event: String,
    /// Column names: the data structures in the order they were first seen.
    pub structures: Vec<String>,
    /// Per interval: the count per structure (same order as `structures`; shorter rows were
    /// recorded before later structures existed) and the count over the whole address space.
    pub intervals: Vec<IntervalCounts>,
}

/// One interval's counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IntervalCounts {
    /// Per data structure, in the timeline's column order.
    pub per_structure: Vec<u64>,
    /// Everything the interval counted, stack and unnamed memory included.
    pub all: u64,
}

impl Timeline {
    /// The count of `structure` in every interval (zero where it did not exist yet).
    pub fn series(&self, structure: &str) -> Option<Vec<u64>> {
        let column = self.structures.iter().position(|s| s == structure)?;
        Some(
            self.intervals
                .iter()
                .map(|i| i.per_structure.get(column).copied().unwrap_or(0))
                .collect(),
        )
    }

    /// What the intervals counted outside every named structure.
    pub fn unnamed(&self) -> Vec<u64> {
        self.intervals
            .iter()
            .map(|i| i.all.saturating_sub(i.per_structure.iter().sum()))
            .collect()
    }
}

/// One request of the timeline and how many instances its result covered when last read.
struct Column {
    id: u64,
    seen_instances: u64,
}

impl Column {
    fn new(id: u64) -> Column {
        Column {
            id,
            seen_instances: 0,
        }
    }
}

/// Runs the program, halting at each interval's entry (where structures that appeared since
/// join the timeline: a heap array by its allocation site, so its requests follow the block the
/// site allocates) and exit (to read the counts), and returns the timeline; `progress` hears
/// about each interval.
pub async fn record(
    options: &TimelineOptions,
    mut progress: impl FnMut(&str),
) -> Result<Timeline, TimelineError> {
    let program = options.launch.program.display().to_string();
    let mut target = LocalTarget::launch(options.launch.clone()).await?;
    let pid = target.pid();
    let interval = first_entry(&mut target, &program, &options.interval).await?;
    let mut timeline = Timeline {
        interval: options.interval.clone(),
        event: options.event.clone(),
        structures: Vec::new(),
        intervals: Vec::new(),
    };
    let event = options.event.as_str();
    let count = |pair: Pair<'_>| {
        let data = pair
            .data
            .map_or(DataRef::Range(crate::WHOLE_ADDRESS_SPACE), |d| {
                d.data.clone()
            });
        vec![
            Request::count(RegionRef::Index(pair.region.index), data, event)
                .aggregation(Aggregation::PerInstance),
        ]
    };
    let the_interval = |r: &Region| r.index == interval;
    let mut survey = Survey::new();
    // The whole address space's column, then one per data structure as they appear.
    let mut all: Option<Column> = None;
    let mut columns: Vec<Column> = Vec::new();
    let mut warned_full = false;
    loop {
        // Halted at an entry: structures that appeared since the last one join from here on.
        let ext = survey
            .extend(target.client(), pid, the_interval, count)
            .await?;
        if let Some(left) = ext.left_out.first()
            && !warned_full
        {
            progress(&format!(
                "the target's request slots are taken; {} and later structures are left out",
                left.data.as_deref().unwrap_or("the interval's own count")
            ));
            warned_full = true;
        }
        for p in &survey.placements()[columns.len() + usize::from(all.is_some())..] {
            let id = p.requests[0].id;
            match p.data {
                None => all = Some(Column::new(id)),
                Some(d) => {
                    timeline.structures.push(survey.data()[d].name.clone());
                    columns.push(Column::new(id));
                }
            }
        }
        match target
            .client()
            .step(pid, StepTo::RegionExit(RegionRef::Index(interval)))
            .await?
        {
            StepOutcome::Halted(_) => {}
            StepOutcome::Exited(_) => break,
        }
        let mut ids: Vec<u64> = columns.iter().map(|c| c.id).collect();
        ids.extend(all.as_ref().map(|c| c.id));
        let results = target.client().results(pid, &ids).await?;
        // A per-instance result holds the last instance it covered: it belongs to this interval
        // only if its instance count moved (a request waiting for its site's next block, or
        // for its allocatable's allocation, does not move).
        let mut fresh = |column: &mut Column| {
            let Some(r) = results.iter().find(|r| r.request.id == column.id) else {
                return 0;
            };
            let moved = r.available && r.instances > column.seen_instances;
            column.seen_instances = r.instances;
            if moved { r.total } else { 0 }
        };
        let row = IntervalCounts {
            per_structure: columns.iter_mut().map(&mut fresh).collect(),
            all: all.as_mut().map_or(0, &mut fresh),
        };
        progress(&format!(
            "interval {}: {} {}",
            timeline.intervals.len(),
            row.all,
            options.event
        ));
        timeline.intervals.push(row);
        match target
            .client()
            .step(pid, StepTo::RegionEntry(RegionRef::Index(interval)))
            .await?
        {
            StepOutcome::Halted(_) => {}
            StepOutcome::Exited(_) => break,
        }
    }
    let status = target.finish().await?;
    if !status.success() {
        return Err(TimelineError::ProgramFailed {
            program,
            status,
            intervals: timeline.intervals.len(),
        });
    }
    Ok(timeline)
}

/// Halts the program at the first entry of `name` and returns the region's index. A function
/// region is known from the start; a marker region only once met, so the tool steps boundary by
/// boundary until it is.
async fn first_entry(
    target: &mut LocalTarget,
    program: &str,
    name: &str,
) -> Result<u32, TimelineError> {
    let pid = target.pid();
    let description = target.client().describe(pid).await?;
    let names: Vec<String> = description.regions.iter().map(|r| r.name.clone()).collect();
    let never_ran = || TimelineError::NeverRan {
        program: program.to_owned(),
        region: name.to_owned(),
        names: names.clone(),
    };
    let found = epcache_client::region_names::find(
        description.regions.iter().map(|r| r.name.as_str()),
        name,
    );
    if let [one] = found.as_slice() {
        let region = &description.regions[*one];
        return match target
            .client()
            .step(pid, StepTo::RegionEntry(RegionRef::Index(region.index)))
            .await?
        {
            StepOutcome::Halted(_) => Ok(region.index),
            StepOutcome::Exited(_) => Err(never_ran()),
        };
    }
    for _ in 0..MARKER_SEARCH_LIMIT {
        match target.client().step(pid, StepTo::NextBoundary).await? {
            StepOutcome::Halted(halt) => {
                if let Some(p) = halt.position
                    && epcache_client::region_names::name_match(&p.region, name).is_some()
                    && p.boundary == Boundary::Entry
                {
                    return Ok(p.region_index);
                }
            }
            StepOutcome::Exited(_) => return Err(never_ran()),
        }
    }
    Err(TimelineError::NotFound {
        region: name.to_owned(),
    })
}

/// The timeline as a table: one line per interval, one column per structure, then what no
/// structure holds and the interval's total.
pub fn render(timeline: &Timeline) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} per data structure per instance of {}",
        timeline.event, timeline.interval
    );
    let width = |name: &str| name.len().max(10);
    let _ = write!(out, "{:>8}", "interval");
    for name in &timeline.structures {
        let _ = write!(out, " {:>w$}", name, w = width(name));
    }
    let _ = writeln!(out, " {:>10} {:>10}", "(unnamed)", "(all)");
    let unnamed = timeline.unnamed();
    for (k, row) in timeline.intervals.iter().enumerate() {
        let _ = write!(out, "{k:>8}");
        for (c, name) in timeline.structures.iter().enumerate() {
            let v = row.per_structure.get(c).copied().unwrap_or(0);
            let _ = write!(out, " {:>w$}", v, w = width(name));
        }
        let _ = writeln!(out, " {:>10} {:>10}", unnamed[k], row.all);
    }
    out
}

/// Colours of the series, in column order (colour-blind safe, Okabe and Ito).
const COLOURS: [&str; 8] = [
    "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000",
];

/// The timeline as an SVG line plot: intervals along x, the event's count up y, one line per
/// data structure and one for unnamed memory.
pub fn svg(timeline: &Timeline) -> String {
    let (width, height) = (760.0_f64, 360.0_f64);
    let (left, right, top, bottom) = (70.0, 170.0, 30.0, 45.0);
    let plot_w = width - left - right;
    let plot_h = height - top - bottom;
    let mut series: Vec<(String, Vec<u64>)> = timeline
        .structures
        .iter()
        .filter_map(|s| Some((s.clone(), timeline.series(s)?)))
        .filter(|(_, v)| v.iter().any(|&c| c > 0))
        .collect();
    let unnamed = timeline.unnamed();
    if unnamed.iter().any(|&c| c > 0) {
        series.push(("(unnamed)".to_owned(), unnamed));
    }
    let max = series
        .iter()
        .flat_map(|(_, v)| v.iter().copied())
        .max()
        .unwrap_or(0)
        .max(1) as f64;
    let n = timeline.intervals.len().max(2) as f64;
    let x = |k: usize| left + plot_w * k as f64 / (n - 1.0);
    let y = |v: u64| top + plot_h * (1.0 - v as f64 / max);
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(
        out,
        r#"<text x="{left}" y="18" font-size="14">{} per data structure per instance of {}</text>"#,
        escape(&timeline.event),
        escape(&timeline.interval)
    );
    let _ = writeln!(
        out,
        r##"<rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#888"/>"##
    );
    for tick in 0..=4 {
        let v = (max * f64::from(tick) / 4.0).round() as u64;
        let _ = writeln!(
            out,
            r#"<text x="{}" y="{}" text-anchor="end">{v}</text>"#,
            left - 6.0,
            y(v) + 4.0
        );
    }
    let step = (timeline.intervals.len() / 8).max(1);
    for k in (0..timeline.intervals.len()).step_by(step) {
        let _ = writeln!(
            out,
            r#"<text x="{}" y="{}" text-anchor="middle">{k}</text>"#,
            x(k),
            top + plot_h + 16.0
        );
    }
    let _ = writeln!(
        out,
        r#"<text x="{}" y="{}" text-anchor="middle">interval</text>"#,
        left + plot_w / 2.0,
        height - 8.0
    );
    for (i, (name, values)) in series.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let points: Vec<String> = values
            .iter()
            .enumerate()
            .map(|(k, &v)| format!("{:.1},{:.1}", x(k), y(v)))
            .collect();
        let _ = writeln!(
            out,
            r#"<polyline fill="none" stroke="{colour}" stroke-width="2" points="{}"><title>{}</title></polyline>"#,
            points.join(" "),
            escape(name)
        );
        let ly = top + 16.0 * i as f64 + 8.0;
        let lx = left + plot_w + 12.0;
        let _ = writeln!(
            out,
            r#"<line x1="{lx}" y1="{ly}" x2="{}" y2="{ly}" stroke="{colour}" stroke-width="3"/><text x="{}" y="{}">{}</text>"#,
            lx + 18.0,
            lx + 24.0,
            ly + 4.0,
            escape(name)
        );
    }
    out.push_str("</svg>\n");
    out
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timeline() -> Timeline {
        Timeline {
            interval: "interval".into(),
            event: "PAPI_L1_DCM".into(),
            structures: vec!["X".into(), "Y".into(), "main.c:9".into()],
            intervals: vec![
                IntervalCounts {
                    per_structure: vec![4096, 3],
                    all: 4100,
                },
                IntervalCounts {
                    per_structure: vec![0, 16384, 0],
                    all: 16384,
                },
                IntervalCounts {
                    per_structure: vec![0, 0, 16390],
                    all: 16400,
                },
            ],
        }
    }

    #[test]
    fn series_fill_the_intervals_before_a_structure_existed_with_zero() {
        let t = timeline();
        assert_eq!(t.series("main.c:9"), Some(vec![0, 0, 16390]));
        assert_eq!(t.series("X"), Some(vec![4096, 0, 0]));
        assert_eq!(t.series("nope"), None);
        assert_eq!(t.unnamed(), vec![1, 0, 10]);
    }

    #[test]
    fn the_table_and_the_plot_show_every_series() {
        let t = timeline();
        let table = render(&t);
        assert_eq!(table.lines().count(), 2 + 3, "{table}");
        assert!(table.lines().nth(3).unwrap().contains("16384"), "{table}");
        let plot = svg(&t);
        // X, Y, the heap block and the unnamed rest each get a line and a legend entry.
        assert_eq!(plot.matches("<polyline").count(), 4, "{plot}");
        assert!(plot.contains(">main.c:9<"), "{plot}");
        assert!(plot.ends_with("</svg>\n"));
    }
}
