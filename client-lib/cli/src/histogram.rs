//! `epcache histogram`: a histogram request's buckets as a bar chart in the terminal, or as an
//! SVG plot written by hand.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use clap::Args;
use epcache_client::{Bucket, RequestResult, Shape};

use crate::array_labels;
use crate::connection::{DaemonArgs, block_on, json};
use crate::output::print_stdout;

/// Show a histogram request's buckets as a bar chart, one bar per bucket labelled with the
/// elements it covers where the array's type is known (`[0..199]` in C, `(1:200)` in Fortran;
/// rows `[4..7][*]` or columns `(:,5:8)` of a 2-D array), else with its byte offsets from the
/// start, or by member name for a by-field request (`x`, `y`, ..., `(padding)`); a per-thread
/// request's as one chart per thread, on one scale.
#[derive(Debug, Args)]
pub(crate) struct HistogramArgs {
    /// The target's pid.
    pid: u32,
    /// The histogram request's id.
    id: u64,
    /// Also write the chart as an SVG image to FILE.
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
    /// Width of the longest bar, in terminal columns (at least 1).
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u16).range(1..))]
    width: u16,
    #[command(flatten)]
    daemon: DaemonArgs,
    /// Print JSON (a failure too, as {"error": ...} on stdout).
    #[arg(long)]
    pub(crate) json: bool,
}

fn title(r: &RequestResult) -> String {
    let q = &r.request;
    if !q.fields.is_empty() {
        return format!(
            "{} over {} during {}: by field of {}-byte elements ({} members and the padding), {} instance(s), total {}",
            q.event,
            q.data_name(),
            q.region.name,
            q.bucket_bytes,
            q.fields.len(),
            r.instances,
            r.total
        );
    }
    format!(
        "{} over {} during {}: {} buckets of {} bytes, {} instance(s), total {}",
        q.event,
        q.data_name(),
        q.region.name,
        r.buckets.len(),
        q.bucket_bytes,
        r.instances,
        r.total
    )
}

/// What a reader must know when the histogram counted data of different sizes (an array
/// reallocated between its instances, or inside one): what a bucket then sums. A per-instance
/// result is the last instance's, so its sizes are that instance's.
fn sizes_note(r: &RequestResult) -> Option<String> {
    let b = r.instance_bytes.filter(|_| r.sizes_differ())?;
    let (when, over) = if r.request.aggregation == epcache_client::Aggregation::PerInstance {
        ("during the last instance", "before and after it changed")
    } else {
        ("in these instances", "in every instance")
    };
    Some(format!(
        "{} had different sizes {when} ({} to {} bytes): each bucket sums the same offsets from its start {over}, in buckets wide enough for the largest",
        r.request.data_name(),
        b.smallest,
        b.largest
    ))
}

/// A bucket's label: its member in a by-field result, else the elements (or bytes) it covers.
fn bucket_label(b: &Bucket, base: u64, shape: Option<&Shape>) -> String {
    match &b.field {
        Some(field) => field.clone(),
        None => array_labels::label(&b.range, base, shape),
    }
}

/// Where a result's array starts and what its type says: bucket labels name elements from
/// there (see [`crate::array_labels`]). When its instances had different sizes, the rows or
/// columns of its latest shape are not those of the others: a 1-D array is labelled by
/// elements up to its largest size, others by byte offsets.
fn array_of(r: &RequestResult) -> (u64, Option<Shape>) {
    let Some(d) = &r.request.data_structure else {
        return (r.request.range.start, None);
    };
    let shape = match (&d.shape, r.instance_bytes) {
        (Some(s), Some(bytes)) if r.sizes_differ() => match s.dimensions.as_slice() {
            [only] if s.element_bytes > 0 => {
                let mut grown = s.clone();
                grown.dimensions[0].extent = only.extent.max(bytes.largest / s.element_bytes);
                Some(grown)
            }
            _ => None,
        },
        (shape, _) => shape.clone(),
    };
    (d.range.start, shape)
}

/// The charts of a result: its buckets, or one chart per thread for a per-thread request, each
/// under its own heading.
fn panels(r: &RequestResult) -> Vec<(Option<String>, &[Bucket])> {
    if r.threads.is_empty() {
        return vec![(None, &r.buckets)];
    }
    r.threads
        .iter()
        .map(|t| {
            (
                Some(format!(
                    "{}: {} instance(s), total {}",
                    t.label(),
                    t.instances,
                    t.total
                )),
                t.buckets.as_slice(),
            )
        })
        .collect()
}

/// The bars, eighths of a column for precision; every chart of a result on the scale of its
/// largest bucket.
pub(crate) fn bars(r: &RequestResult, width: usize) -> String {
    const EIGHTHS: [char; 8] = [' ', '▏', '▎', '▍', '▌', '▋', '▊', '▉'];
    let panels = panels(r);
    let max = panels
        .iter()
        .flat_map(|(_, b)| b.iter().map(|b| b.count))
        .max()
        .unwrap_or(0)
        .max(1);
    let (base, shape) = array_of(r);
    let label = |b: &Bucket| bucket_label(b, base, shape.as_ref());
    let label_width = panels
        .iter()
        .flat_map(|(_, b)| b.iter().map(|b| label(b).len()))
        .max()
        .unwrap_or(0);
    let count_width = max.to_string().len();
    let mut out = title(r) + "\n";
    if let Some(note) = sizes_note(r) {
        let _ = writeln!(out, "  {note}");
    }
    for (heading, buckets) in panels {
        if let Some(heading) = heading {
            let _ = writeln!(out, "{heading}");
        }
        for b in buckets {
            let eighths = (b.count as u128 * width as u128 * 8 / max as u128) as usize;
            let mut bar = "█".repeat(eighths / 8);
            if !eighths.is_multiple_of(8) {
                bar.push(EIGHTHS[eighths % 8]);
            }
            let _ = writeln!(
                out,
                "{:>label_width$} {:>count_width$} {bar}",
                label(b),
                b.count
            );
        }
    }
    out
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Round values for a count axis from 0 to at least `max`: 1, 2 or 5 times a power of ten
/// apart, at most five steps (an axis with nothing on it reads 0 and 1).
pub(crate) fn count_ticks(max: u64) -> Vec<u64> {
    let mut step = 1u64;
    'search: loop {
        for m in [1, 2, 5] {
            let candidate = step.saturating_mul(m);
            if candidate.saturating_mul(5) >= max {
                step = candidate;
                break 'search;
            }
        }
        step = step.saturating_mul(10);
    }
    let mut ticks = vec![0];
    while *ticks.last().expect("starts with 0") < max.max(1) {
        let next = ticks.last().expect("starts with 0").saturating_add(step);
        ticks.push(next);
    }
    ticks
}

/// Draws the two axes of a plot area `(x, y, width, height)` and its count scale at `ticks`
/// ([`count_ticks`]); the area's top is the last tick.
pub(crate) fn svg_axes(out: &mut String, (x, y, w, h): (f64, f64, f64, f64), ticks: &[u64]) {
    let _ = writeln!(
        out,
        r#"<path d="M{x} {y} V{} H{}" stroke="black" fill="none"/>"#,
        y + h,
        x + w
    );
    let top = ticks.last().copied().unwrap_or(1).max(1) as f64;
    for &tick in ticks {
        let at = y + h - h * tick as f64 / top;
        let _ = writeln!(
            out,
            r#"<text x="{}" y="{:.2}" text-anchor="end">{tick}</text>"#,
            x - 6.0,
            at + 4.0,
        );
    }
}

/// A bar chart as a standalone SVG document: one panel, or one per thread of a per-thread
/// request, stacked, on one count scale.
pub(crate) fn svg(r: &RequestResult) -> String {
    let panels = panels(r);
    let w = 900.0_f64;
    let (left, right, top, bottom) = (70.0, 20.0, 40.0, 60.0);
    let panel_h = if panels.len() == 1 { 320.0 } else { 220.0 };
    let h = top + panels.len() as f64 * (panel_h + bottom);
    let plot_w = w - left - right;
    let plot_h = panel_h - if panels.len() == 1 { 0.0 } else { 20.0 };
    let ticks = count_ticks(
        panels
            .iter()
            .flat_map(|(_, b)| b.iter().map(|b| b.count))
            .max()
            .unwrap_or(0),
    );
    let max = *ticks.last().expect("ticks start at 0") as f64;
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(out, r#"<rect width="{w}" height="{h}" fill="white"/>"#);
    let _ = writeln!(
        out,
        r#"<text x="{}" y="22" text-anchor="middle" font-size="14">{}</text>"#,
        w / 2.0,
        escape(&title(r))
    );
    if let Some(note) = sizes_note(r) {
        let _ = writeln!(
            out,
            r#"<text x="{}" y="36" text-anchor="middle" font-size="10">{}</text>"#,
            w / 2.0,
            escape(&note)
        );
    }
    for (p, (heading, buckets)) in panels.iter().enumerate() {
        let panel_top = top + p as f64 * (panel_h + bottom);
        let plot_top = panel_top + (panel_h - plot_h);
        if let Some(heading) = heading {
            let _ = writeln!(
                out,
                r#"<text x="{left}" y="{:.2}">{}</text>"#,
                panel_top + 12.0,
                escape(heading)
            );
        }
        let n = buckets.len().max(1) as f64;
        let slot = plot_w / n;
        for (i, b) in buckets.iter().enumerate() {
            let bh = b.count as f64 / max * plot_h;
            let x = left + i as f64 * slot;
            let _ = writeln!(
                out,
                r##"<rect x="{:.2}" y="{:.2}" width="{:.2}" height="{:.2}" fill="#4269d0"><title>[{:#x}, {:#x}): {}</title></rect>"##,
                x + slot * 0.1,
                plot_top + plot_h - bh,
                slot * 0.8,
                bh,
                b.range.start,
                b.range.end,
                b.count
            );
        }
        // Axes and the count scale, then the first, middle and last bars' elements (or byte
        // offsets, without a known type) under them.
        svg_axes(&mut out, (left, plot_top, plot_w, plot_h), &ticks);
        let (base, shape) = array_of(r);
        let last = buckets.len().saturating_sub(1);
        for i in [0, last / 2, last] {
            if let Some(b) = buckets.get(i) {
                let _ = writeln!(
                    out,
                    r#"<text x="{:.2}" y="{:.2}" text-anchor="middle">{}</text>"#,
                    left + (i as f64 + 0.5) * slot,
                    plot_top + plot_h + 18.0,
                    escape(&bucket_label(b, base, shape.as_ref()))
                );
            }
        }
        let _ = writeln!(
            out,
            r#"<text x="{:.2}" y="{:.2}" text-anchor="middle">{}</text>"#,
            left + plot_w / 2.0,
            plot_top + plot_h + 40.0,
            escape(&array_labels::axis_title(
                shape.as_ref(),
                &r.request.data_name()
            ))
        );
    }
    out.push_str("</svg>\n");
    out
}

pub(crate) fn run(args: &HistogramArgs) -> anyhow::Result<()> {
    let mut results = block_on(async {
        Ok(args
            .daemon
            .connect()
            .await?
            .results(args.pid, &[args.id])
            .await?)
    })?;
    // A heap block's elements, from the running program's own debug information.
    crate::heap_shapes::fill(&mut results, Path::new(&format!("/proc/{}/exe", args.pid)));
    let Some(result) = results.pop() else {
        bail!("the daemon returned no result for request {}", args.id);
    };
    if result.request.buckets == 0 {
        bail!(
            "request {} is a static count ({} so far), not a histogram; place one with `epcache request --buckets N`",
            args.id,
            result.total
        );
    }
    if let Some(path) = &args.svg {
        std::fs::write(path, svg(&result))
            .with_context(|| format!("writing {}", path.display()))?;
    }
    if args.json {
        return print_stdout(&json(&result)?);
    }
    if !result.available {
        return print_stdout(&format!(
            "request {} has no result yet: the target writes it when the region {} ends\n",
            args.id, result.request.region.name
        ));
    }
    print_stdout(&bars(&result, usize::from(args.width)))
}

#[cfg(test)]
mod tests {
    use epcache_client::{
        Aggregation, Binding, Bucket, Region, RegionKind, RequestInfo, RequestResult, SiteBlock,
        ThreadResult,
    };

    use super::*;

    fn result(counts: &[u64]) -> RequestResult {
        RequestResult {
            request: RequestInfo {
                id: 1,
                pid: 2,
                region: Region {
                    index: 0,
                    file_id: 1,
                    line: 1,
                    name: "k".into(),
                    file: String::new(),
                    kind: RegionKind::Marker,
                },
                data_structure: None,
                range: 0x1000..0x1000 + 64 * counts.len() as u64,
                event: "PAPI_L1_LDM".into(),
                buckets: counts.len() as u32,
                bucket_bytes: 64,
                fields: vec![],
                aggregation: Aggregation::Summed,
                analyses: vec![],
                owner: String::new(),
                adopted: false,
                allocation_site: None,
                site_block: SiteBlock::Latest,
                binding: Binding::Fixed,
            },
            available: true,
            instances: 1,
            total: counts.iter().sum(),
            buckets: counts
                .iter()
                .enumerate()
                .map(|(i, &count)| Bucket {
                    range: 0x1000 + 64 * i as u64..0x1000 + 64 * (i as u64 + 1),
                    count,
                    field: None,
                })
                .collect(),
            threads: Vec::new(),
            analysis: None,
            analysis_missing: None,
            instance_bytes: None,
        }
    }

    /// A summed histogram's sizes are its instances'; a per-instance one's, the last
    /// instance's, whose data changed size while it ran.
    #[test]
    fn the_sizes_note_says_which_instances_it_speaks_of() {
        let mut r = result(&[4, 4]);
        r.instance_bytes = Some(epcache_client::InstanceBytes {
            smallest: 16384,
            largest: 24576,
        });
        let summed = sizes_note(&r).unwrap();
        assert!(
            summed.contains("in these instances (16384 to 24576 bytes)"),
            "{summed}"
        );
        assert!(summed.contains("in every instance"), "{summed}");
        r.request.aggregation = Aggregation::PerInstance;
        let last = sizes_note(&r).unwrap();
        assert!(
            last.contains("during the last instance (16384 to 24576 bytes)"),
            "{last}"
        );
        assert!(!last.contains("every instance"), "{last}");
        r.instance_bytes = Some(epcache_client::InstanceBytes {
            smallest: 8192,
            largest: 8192,
        });
        assert_eq!(sizes_note(&r), None);
    }

    #[test]
    fn bars_scale_to_the_largest_bucket_in_eighths() {
        let text = bars(&result(&[16, 8, 1, 0]), 2);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[1], "   +0..+64 16 ██");
        assert_eq!(lines[2], " +64..+128  8 █");
        // 1/16 of two columns is one eighth of a column.
        assert_eq!(lines[3], "+128..+192  1 ▏");
        assert_eq!(lines[4], "+192..+256  0 ");
    }

    /// A by-field result: one bar per member by name, the padding last; the title says the
    /// element size and the member count.
    #[test]
    fn a_by_field_histogram_has_a_bar_per_member_by_name() {
        let mut r = result(&[8, 0, 0]);
        r.request.fields = ["x", "id"]
            .iter()
            .map(|name| epcache_client::Field {
                name: (*name).into(),
                offset: 0,
                bytes: 8,
            })
            .collect();
        r.request.bucket_bytes = 16;
        for (b, name) in r.buckets.iter_mut().zip(["x", "id", "(padding)"]) {
            b.field = Some(name.into());
        }
        let text = bars(&r, 2);
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[0].contains("by field of 16-byte elements (2 members and the padding)"),
            "{text}"
        );
        assert_eq!(lines[1], "        x 8 ██");
        assert_eq!(lines[2], "       id 0 ");
        assert_eq!(lines[3], "(padding) 0 ");
    }

    /// A per-thread request: one chart per thread, each under its thread's heading, on the
    /// scale of the largest bucket of any thread; the SVG has a panel per thread.
    #[test]
    fn a_per_thread_histogram_has_one_chart_per_thread() {
        let mut r = result(&[16, 8]);
        r.request.aggregation = Aggregation::PerThread;
        let rows = |counts: &[u64]| -> Vec<Bucket> {
            counts
                .iter()
                .enumerate()
                .map(|(i, &count)| Bucket {
                    range: 0x1000 + 64 * i as u64..0x1000 + 64 * (i as u64 + 1),
                    count,
                    field: None,
                })
                .collect()
        };
        r.threads = vec![
            ThreadResult {
                thread_id: Some(4242),
                openmp_thread: Some(1),
                thread_index: Some(1),
                threads: 1,
                instances: 1,
                total: 16,
                buckets: rows(&[16, 0]),
            },
            ThreadResult {
                thread_id: None,
                openmp_thread: None,
                thread_index: None,
                threads: 3,
                instances: 3,
                total: 8,
                buckets: rows(&[0, 8]),
            },
        ];
        let text = bars(&r, 2);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[1],
            "thread 1 (tid 4242, OpenMP 1): 1 instance(s), total 16"
        );
        assert_eq!(lines[2], "  +0..+64 16 ██");
        assert_eq!(lines[4], "3 other threads: 3 instance(s), total 8");
        assert_eq!(lines[6], "+64..+128  8 █");
        let svg = svg(&r);
        assert_eq!(svg.matches("fill=\"#4269d0\"").count(), 4);
        assert!(
            svg.contains(">thread 1 (tid 4242, OpenMP 1): 1 instance(s), total 16<"),
            "{svg}"
        );
    }

    #[test]
    fn the_svg_has_one_bar_per_bucket_and_escapes_names() {
        let mut r = result(&[3, 1]);
        r.request.event = "<&>".into();
        let svg = svg(&r);
        assert_eq!(svg.matches("fill=\"#4269d0\"").count(), 2);
        assert!(svg.contains("&lt;&amp;&gt;") && !svg.contains("<&>"));
    }

    #[test]
    fn count_axes_get_round_ticks() {
        assert_eq!(count_ticks(0), [0, 1]);
        assert_eq!(count_ticks(1), [0, 1]);
        assert_eq!(count_ticks(4), [0, 1, 2, 3, 4]);
        assert_eq!(count_ticks(7), [0, 2, 4, 6, 8]);
        assert_eq!(count_ticks(10), [0, 2, 4, 6, 8, 10]);
        assert_eq!(count_ticks(188_060), [0, 50_000, 100_000, 150_000, 200_000]);
        assert_eq!(count_ticks(u64::MAX).len(), 5);
    }

    #[test]
    fn an_all_zero_histogram_reads_zero_and_one() {
        let svg = svg(&result(&[0, 0, 0]));
        let labels: Vec<&str> = svg
            .lines()
            .filter(|l| l.contains(r#"text-anchor="end""#))
            .map(|l| l.trim_end_matches("</text>").rsplit('>').next().unwrap())
            .collect();
        assert_eq!(labels, ["0", "1"], "{svg}");
    }
}
