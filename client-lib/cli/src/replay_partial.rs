//! `epcache replay` of a partial trace (`.eppt`): the level totals of any replay, then per
//! access site and per data structure tables, the compression figures and, on request,
//! miss-ratio curves per structure (as an SVG plot too).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use anyhow::Context;
use epcache_sim::cache::Hierarchy;
use epcache_sim::partial_replay::{
    MissRatioCurve, OwnerRow, PartialReplayReport, SampledCurves, expected_error,
    miss_ratio_curves, replay_partial, sampled_miss_ratio_curves, stated_error,
};
use epcache_sim::trace::partial::PartialTrace;

use crate::histogram::svg_axes;
use crate::numbers::grouped;
use crate::output::print_stdout;
use crate::report;
use crate::trace_input::TraceInput;

/// The options of `epcache replay` that only partial traces use.
#[derive(Debug, Clone)]
pub(crate) struct PartialOptions {
    /// Data level the temporal/spatial and evictor columns watch.
    pub(crate) level: usize,
    pub(crate) mrc: Option<MrcGeometry>,
    pub(crate) mrc_max: Option<u64>,
    /// `--mrc-sample`: SHARDS's sampling rate, for sampled (fully associative) curves.
    pub(crate) mrc_sample: Option<f64>,
    pub(crate) svg: Option<PathBuf>,
    /// Rows of each text table.
    pub(crate) top: usize,
}

/// `--mrc WAYS,LINE`: the associativity (`full` for fully associative) and the line size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MrcGeometry {
    pub(crate) ways: Option<u32>,
    pub(crate) line: u32,
}

impl FromStr for MrcGeometry {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let Some((ways, line)) = s.split_once(',') else {
            return Err(format!(
                "`{s}` is not WAYS,LINE (e.g. `8,64`, or `full,64` for fully associative)"
            ));
        };
        let ways = match ways.trim() {
            "full" => None,
            w => Some(w.parse::<u32>().ok().filter(|&w| w > 0).ok_or_else(|| {
                format!("the associativity `{w}` in `{s}` is not `full` or a positive number")
            })?),
        };
        let line = line
            .trim()
            .parse::<u32>()
            .map_err(|_| format!("the line size in `{s}` is not a number"))?;
        if line < 4 || !line.is_power_of_two() {
            return Err(format!(
                "the line size {line} in `{s}` is not a power of two of at least 4 bytes (e.g. 32 or 64)"
            ));
        }
        Ok(Self { ways, line })
    }
}

impl MrcGeometry {
    /// The smallest cache the curves have, in bytes: one set (one line, fully associative),
    /// or, sampled at `rate`, the fewest lines a sampled point has.
    pub(crate) fn smallest_cache(&self, sample_rate: Option<f64>) -> u64 {
        let lines = match sample_rate {
            Some(rate) => epcache_sim::partial_replay::smallest_lines(rate),
            None => u64::from(self.ways.unwrap_or(1)),
        };
        lines.saturating_mul(u64::from(self.line))
    }
}

/// Parses `--mrc-sample`: a rate from [`MIN_SAMPLE_RATE`] to 1.
pub(crate) fn sample_rate(s: &str) -> Result<f64, String> {
    let rate: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a number"))?;
    if (MIN_SAMPLE_RATE..=1.0).contains(&rate) {
        Ok(rate)
    } else {
        Err(format!(
            "the rate {s} is not from {MIN_SAMPLE_RATE} to 1 (e.g. 0.01); below one line in a million no cache under 4 million lines would get a point"
        ))
    }
}

/// The lowest `--mrc-sample` rate: one line in a million.
pub(crate) const MIN_SAMPLE_RATE: f64 = 1e-6;

/// Replays the partial trace in `input` and prints the report.
pub(crate) fn run(
    input: TraceInput,
    trace_path: &Path,
    hierarchy: &mut Hierarchy,
    compat: bool,
    options: &PartialOptions,
    json: bool,
) -> anyhow::Result<()> {
    let name = trace_path.display();
    let started = std::time::Instant::now();
    let trace = PartialTrace::read(input).with_context(|| format!("in partial trace `{name}`"))?;
    let report = replay_partial(&trace, hierarchy, compat, options.level)
        .with_context(|| format!("replaying partial trace `{name}`"))?;
    if let Some(at) = report.never_finished_at_byte {
        eprintln!(
            "warning: `{name}` was never finished: it has no END record, and its last whole record ends at byte {at} of {} (the recording process was killed, or the file was cut). Replayed: what each thread had recorded up to its last safe point (the end of an instance once 65,536 accesses were recorded since the one before, or, inside a long one, the entry of a region it calls once 16,777,216 were); later accesses are lost, and data structures are known only by the sites that accessed them.",
            report.compression.stats.bytes
        );
    }
    let mut sample = None;
    let curves = match (options.mrc, options.mrc_sample) {
        (Some(g), Some(rate)) => {
            let sampled = sampled_miss_ratio_curves(&trace, g.line, rate, options.mrc_max)
                .with_context(|| format!("sampled miss-ratio curves of `{name}`"))?;
            let curves = sampled.curves.clone();
            sample = Some(sampled);
            Some(curves)
        }
        (Some(g), None) => Some(
            miss_ratio_curves(&trace, g.ways, g.line, options.mrc_max)
                .with_context(|| format!("miss-ratio curves of `{name}`"))?,
        ),
        (None, _) => None,
    };
    let seconds = started.elapsed().as_secs_f64();
    if let (Some(path), Some(curves), Some(g)) = (&options.svg, &curves, options.mrc) {
        std::fs::write(path, svg(curves, g, &name.to_string()))
            .with_context(|| format!("writing `{}`", path.display()))?;
    }
    if json {
        let mut value = serde_json::to_value(&report)?;
        value["trace"] = serde_json::json!({
            "path": trace_path.display().to_string(),
            "format": "partial",
        });
        value["elapsed_seconds"] = serde_json::json!(seconds);
        if let Some(curves) = &curves {
            value["mrc"] = serde_json::to_value(curves)?;
        }
        if let Some(s) = &sample {
            value["mrc_sample"] = serde_json::json!({
                "method": "SHARDS fixed-rate",
                "rate": s.rate,
                "sampled_lines": s.sampled_lines,
                "sampled_accesses": s.sampled_accesses,
                "expected_mean_absolute_error": expected_error(s.rate, s.sampled_lines),
            });
        }
        print_stdout(&format!("{}\n", serde_json::to_string_pretty(&value)?))
    } else {
        let mut out = report::table(&report.summary, seconds, report.compression.stats.accesses);
        out.push_str(&tables(&report, options.top));
        if let Some(curves) = &curves {
            out.push_str(&curve_table(curves));
        }
        if let Some(s) = &sample {
            out.push_str(&sample_note(s));
        }
        print_stdout(&out)
    }
}

/// What a sampled curve is, in words.
fn sample_note(s: &SampledCurves) -> String {
    if s.rate >= 1.0 {
        return format!(
            "sampled at rate 1: every one of {} distinct lines followed, so the curves are exact (from {} lines up)\n",
            grouped(s.sampled_lines),
            epcache_sim::partial_replay::smallest_lines(s.rate)
        );
    }
    format!(
        "sampled (SHARDS, rate {}): {} distinct lines, {} accesses; miss ratios are estimates, within about {:.1} percentage points of exact on average for a sample of this size\n",
        format!("{:.6}", s.rate)
            .trim_end_matches('0')
            .trim_end_matches('.'),
        grouped(s.sampled_lines),
        grouped(s.sampled_accesses),
        100.0 * stated_error(s.sampled_lines)
    )
}

fn ratio(r: Option<f64>) -> String {
    r.map_or_else(|| "-".into(), |r| format!("{:.1}%", 100.0 * r))
}

/// Each thread's counted records and its misses per level, when the trace has several.
fn thread_table(report: &PartialReplayReport) -> String {
    let mut out = String::from("\nper thread (each on caches of its own):\n");
    let _ = write!(out, "{:<8} {:>12} {:>12}", "thread", "loads", "stores");
    let names: Vec<&str> = report
        .summary
        .levels
        .iter()
        .map(|l| l.name.as_str())
        .collect();
    for name in &names {
        let _ = write!(out, " {:>13}", format!("{name} misses"));
    }
    out.push('\n');
    for t in &report.per_thread {
        let r = &t.records;
        let _ = write!(
            out,
            "{:<8} {:>12} {:>12}",
            t.thread,
            grouped(r.loads + r.modifies),
            grouped(r.stores)
        );
        for level in &t.levels {
            let _ = write!(
                out,
                " {:>13}",
                grouped(level.read_misses + level.write_misses)
            );
        }
        out.push('\n');
    }
    out
}

/// The compression line and the two tables, as text.
fn tables(report: &PartialReplayReport, top: usize) -> String {
    let mut out = String::new();
    let c = &report.compression;
    let _ = writeln!(
        out,
        "\ntrace    {} accesses in {} bytes: {:.1} accesses per byte; {:.1}% in {} descriptors, {} raw, {} streams{}",
        grouped(c.stats.accesses),
        grouped(c.stats.bytes),
        c.accesses_per_byte,
        100.0 * c.described_share,
        grouped(c.stats.descriptors),
        grouped(c.stats.raw_accesses),
        c.stats.streams,
        match report.threads {
            1 => String::new(),
            n => format!("; {n} threads, each replayed on caches of its own"),
        },
    );
    for note in &report.recording_notes {
        let _ = writeln!(out, "note     (from the recording) {note}");
    }
    if !report.unfinished_threads.is_empty() {
        let _ = writeln!(
            out,
            "note     thread(s) {:?} never finished their last part (blocked when the program exited, or the process was killed): what they recorded after their last safe point is not counted, and an instance it cut is counted up to there",
            report.unfinished_threads
        );
    }
    if report.per_thread.len() > 1 {
        out.push_str(&thread_table(report));
    }
    for (title, rows) in [
        ("access site", &report.sites),
        ("data structure", &report.structures),
    ] {
        let _ = writeln!(
            out,
            "\nper {title} (temporal/spatial hits, spatial use and evictors at {}), by misses there:",
            report.watched_level
        );
        let level_names: Vec<&str> = rows
            .first()
            .map(|r| r.levels.iter().map(|(n, _)| n.as_str()).collect())
            .unwrap_or_default();
        let _ = write!(out, "{:<20} {:<24} {:>12}", title, "source", "accesses");
        for name in &level_names {
            let _ = write!(out, " {:>11}", format!("{name} misses"));
        }
        let _ = writeln!(
            out,
            " {:>9} {:>9} {:>8}  evicted by",
            "temporal", "spatial", "sp.use"
        );
        let watched = level_names
            .iter()
            .position(|n| *n == report.watched_level)
            .unwrap_or(0);
        // Sites only the warm-up before a recorded span used are in --json alone.
        let mut sorted: Vec<&OwnerRow> = rows.iter().filter(|r| r.accesses > 0).collect();
        sorted.sort_by_key(|r| std::cmp::Reverse(r.levels.get(watched).map_or(0, |l| l.1.misses)));
        for row in sorted.iter().take(top) {
            // The file's last component keeps the column narrow; --json has the whole path.
            let short = row
                .source
                .as_deref()
                .map(|s| s.rsplit('/').next().unwrap_or(s).to_owned());
            let source = [short, site_kind(row), site_structures(row)]
                .into_iter()
                .flatten()
                .collect::<Vec<_>>()
                .join(" ");
            let _ = write!(
                out,
                "{:<20} {:<24} {:>12}",
                row.name,
                source,
                grouped(row.accesses)
            );
            for (_, l) in &row.levels {
                let _ = write!(out, " {:>11}", ratio(l.miss_ratio));
            }
            let evictors: Vec<String> = row
                .evicted_by
                .iter()
                .take(3)
                .map(|e| format!("{} {:.1}%", e.evictor, 100.0 * e.share))
                .collect();
            let _ = writeln!(
                out,
                " {:>9} {:>9} {:>8}  {}",
                grouped(row.temporal_hits),
                grouped(row.spatial_hits),
                ratio(row.spatial_use),
                evictors.join(", ")
            );
        }
        if sorted.len() > top {
            let _ = writeln!(
                out,
                "({} more; --top or --json for all)",
                sorted.len() - top
            );
        }
    }
    out
}

/// What a site's accesses are, `read`, `write` or `modify`, or `read+write` for a mix; `None`
/// for a structure's row, whose name says what it is.
fn site_kind(row: &OwnerRow) -> Option<String> {
    if row.source.is_none() && row.structure.is_none() {
        return None;
    }
    let kinds: Vec<&str> = [
        (row.loads, "read"),
        (row.stores, "write"),
        (row.modifies, "modify"),
    ]
    .into_iter()
    .filter(|&(n, _)| n > 0)
    .map(|(_, kind)| kind)
    .collect();
    (!kinds.is_empty()).then(|| kinds.join("+"))
}

/// The structures a site's accesses fell in, most first (`A+B`); at most three named.
fn site_structures(row: &OwnerRow) -> Option<String> {
    const SHOWN: usize = 3;
    if row.structures.is_empty() {
        return row.structure.clone();
    }
    let mut names: Vec<&str> = row
        .structures
        .iter()
        .take(SHOWN)
        .map(|s| s.name.as_str())
        .collect();
    let more = row.structures.len().saturating_sub(SHOWN);
    let more = format!("{more} more");
    if row.structures.len() > SHOWN {
        names.push(&more);
    }
    Some(names.join("+"))
}

fn size_label(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{}M", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{}K", b >> 10),
        b => b.to_string(),
    }
}

fn curve_table(curves: &[MissRatioCurve]) -> String {
    let mut out = String::from("\nmiss ratio by cache size:\n");
    let Some(all) = curves.last() else {
        return out;
    };
    let _ = write!(out, "{:<20}", "structure");
    for p in &all.points {
        let _ = write!(out, " {:>6}", size_label(p.size));
    }
    out.push('\n');
    for c in curves {
        let _ = write!(out, "{:<20}", c.structure);
        for p in &c.points {
            let _ = write!(out, " {:>5.1}%", 100.0 * p.miss_ratio);
        }
        out.push('\n');
    }
    out
}

const COLOURS: [&str; 8] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
];

/// The curves as a standalone SVG: miss ratio (percent) over cache size on a log2 axis.
pub(crate) fn svg(curves: &[MissRatioCurve], g: MrcGeometry, title: &str) -> String {
    let (w, h) = (900.0_f64, 420.0_f64);
    let (left, right, top, bottom) = (70.0, 180.0, 40.0, 60.0);
    let (plot_w, plot_h) = (w - left - right, h - top - bottom);
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">"#
    );
    let ways = g
        .ways
        .map_or("fully associative".into(), |w| format!("{w}-way"));
    let _ = writeln!(
        out,
        r#"<text x="{left}" y="24" font-size="14">Miss ratio by cache size ({ways}, {}-byte lines): {}</text>"#,
        g.line,
        xml_escape(title)
    );
    svg_axes(
        &mut out,
        (left, top, plot_w, plot_h),
        &[0, 20, 40, 60, 80, 100],
    );
    let sizes: Vec<u64> = curves
        .last()
        .map(|c| c.points.iter().map(|p| p.size).collect())
        .unwrap_or_default();
    let steps = sizes.len().saturating_sub(1).max(1) as f64;
    let x_of = |i: usize| left + plot_w * i as f64 / steps;
    for (i, &size) in sizes.iter().enumerate() {
        let _ = writeln!(
            out,
            r#"<text x="{:.2}" y="{}" text-anchor="middle">{}</text>"#,
            x_of(i),
            top + plot_h + 18.0,
            size_label(size)
        );
    }
    let _ = writeln!(
        out,
        r#"<text x="{:.2}" y="{}" text-anchor="middle">cache size (bytes)</text>"#,
        left + plot_w / 2.0,
        h - 12.0
    );
    for (n, c) in curves.iter().enumerate() {
        let colour = COLOURS[n % COLOURS.len()];
        let path: Vec<String> = c
            .points
            .iter()
            .enumerate()
            .map(|(i, p)| {
                format!(
                    "{}{:.2} {:.2}",
                    if i == 0 { "M" } else { "L" },
                    x_of(i),
                    top + plot_h * (1.0 - p.miss_ratio)
                )
            })
            .collect();
        let _ = writeln!(
            out,
            r#"<path d="{}" stroke="{colour}" stroke-width="2" fill="none"/>"#,
            path.join(" ")
        );
        let _ = writeln!(
            out,
            r#"<text x="{}" y="{}" fill="{colour}">{}</text>"#,
            left + plot_w + 12.0,
            top + 16.0 * (n as f64 + 1.0),
            xml_escape(&c.structure)
        );
    }
    out.push_str("</svg>\n");
    out
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mrc_geometry_parses_and_rejects_clearly() {
        assert_eq!(
            "8,64".parse::<MrcGeometry>().unwrap(),
            MrcGeometry {
                ways: Some(8),
                line: 64
            }
        );
        assert_eq!("full,32".parse::<MrcGeometry>().unwrap().ways, None);
        assert!(
            "8".parse::<MrcGeometry>()
                .unwrap_err()
                .contains("WAYS,LINE")
        );
        assert!(
            "0,64"
                .parse::<MrcGeometry>()
                .unwrap_err()
                .contains("positive")
        );
        for bad in ["2,48", "full,0", "4,2"] {
            let err = bad.parse::<MrcGeometry>().unwrap_err();
            assert!(err.contains("power of two"), "{bad}: {err}");
        }
    }

    #[test]
    fn sampling_rates_and_the_smallest_cache_are_bounded() {
        assert_eq!(sample_rate("0.01").unwrap(), 0.01);
        assert_eq!(sample_rate("1").unwrap(), 1.0);
        for bad in ["0", "1e-300", "1.5", "-0.1", "NaN", "x"] {
            assert!(sample_rate(bad).is_err(), "{bad}");
        }
        let full = MrcGeometry {
            ways: None,
            line: 64,
        };
        assert_eq!(full.smallest_cache(None), 64);
        // 4/0.01 = 400 lines, rounded up to 512.
        assert_eq!(full.smallest_cache(Some(0.01)), 512 * 64);
        let four_way = MrcGeometry {
            ways: Some(4),
            line: 32,
        };
        assert_eq!(four_way.smallest_cache(None), 128);
    }
}
