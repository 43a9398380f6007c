//! `epcache histogram`: a histogram request's buckets as a bar chart in the terminal, or as an
//! SVG plot written by hand.

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::Args;
use epcache_client::RequestResult;

use crate::connection::{DaemonArgs, block_on, json};
use crate::output::print_stdout;

/// Show a histogram request's buckets as a bar chart, one bar per bucket with the bytes it
/// covers (offsets from the start of the data structure or range).
#[derive(Debug, Args)]
pub(crate) struct HistogramArgs {
    /// The target's pid.
    pid: u32,
    /// The histogram request's id.
    id: u64,
    /// Also write the chart as an SVG image to FILE.
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
    /// Width of the longest bar, in terminal columns.
    #[arg(long, default_value_t = 50)]
    width: usize,
    #[command(flatten)]
    daemon: DaemonArgs,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

fn title(r: &RequestResult) -> String {
    let q = &r.request;
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

/// The bars, eighths of a column for precision.
pub(crate) fn bars(r: &RequestResult, width: usize) -> String {
    const EIGHTHS: [char; 8] = [' ', '▏', '▎', '▍', '▌', '▋', '▊', '▉'];
    let max = r.buckets.iter().map(|b| b.count).max().unwrap_or(0).max(1);
    let base = r.request.range.start;
    let label =
        |b: &epcache_client::Bucket| format!("+{}..+{}", b.range.start - base, b.range.end - base);
    let label_width = r.buckets.iter().map(|b| label(b).len()).max().unwrap_or(0);
    let count_width = max.to_string().len();
    let mut out = title(r) + "\n";
    for b in &r.buckets {
        let eighths = (b.count as u128 * width as u128 * 8 / max as u128) as usize;
        let mut bar = "█".repeat(eighths / 8);
        if eighths % 8 != 0 {
            bar.push(EIGHTHS[eighths % 8]);
        }
        let _ = writeln!(
            out,
            "{:>label_width$} {:>count_width$} {bar}",
            label(b),
            b.count
        );
    }
    out
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Draws the two axes of a plot area `(x, y, width, height)` and its count scale in quarters of
/// `max`.
pub(crate) fn svg_axes(out: &mut String, (x, y, w, h): (f64, f64, f64, f64), max: f64) {
    let _ = writeln!(
        out,
        r#"<path d="M{x} {y} V{} H{}" stroke="black" fill="none"/>"#,
        y + h,
        x + w
    );
    for q in 0..=4 {
        let tick = y + h - h * f64::from(q) / 4.0;
        let _ = writeln!(
            out,
            r#"<text x="{}" y="{:.2}" text-anchor="end">{}</text>"#,
            x - 6.0,
            tick + 4.0,
            (max * f64::from(q) / 4.0).round()
        );
    }
}

/// A bar chart as a standalone SVG document.
pub(crate) fn svg(r: &RequestResult) -> String {
    let (w, h) = (900.0_f64, 420.0_f64);
    let (left, right, top, bottom) = (70.0, 20.0, 40.0, 60.0);
    let plot_w = w - left - right;
    let plot_h = h - top - bottom;
    let max = r.buckets.iter().map(|b| b.count).max().unwrap_or(0).max(1) as f64;
    let n = r.buckets.len().max(1) as f64;
    let slot = plot_w / n;
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
    for (i, b) in r.buckets.iter().enumerate() {
        let bh = b.count as f64 / max * plot_h;
        let x = left + i as f64 * slot;
        let _ = writeln!(
            out,
            r##"<rect x="{:.2}" y="{:.2}" width="{:.2}" height="{:.2}" fill="#4269d0"><title>[{:#x}, {:#x}): {}</title></rect>"##,
            x + slot * 0.1,
            top + plot_h - bh,
            slot * 0.8,
            bh,
            b.range.start,
            b.range.end,
            b.count
        );
    }
    // Axes and the count scale, then byte offsets under the first, middle and last bars.
    svg_axes(&mut out, (left, top, plot_w, plot_h), max);
    let base = r.request.range.start;
    let last = r.buckets.len().saturating_sub(1);
    for i in [0, last / 2, last] {
        if let Some(b) = r.buckets.get(i) {
            let _ = writeln!(
                out,
                r#"<text x="{:.2}" y="{}" text-anchor="middle">+{}</text>"#,
                left + (i as f64 + 0.5) * slot,
                top + plot_h + 18.0,
                b.range.start - base
            );
        }
    }
    let _ = writeln!(
        out,
        r#"<text x="{}" y="{}" text-anchor="middle">byte offset in {}</text>"#,
        left + plot_w / 2.0,
        h - 18.0,
        escape(&r.request.data_name())
    );
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
    print_stdout(&bars(&result, args.width.max(1)))
}

#[cfg(test)]
mod tests {
    use epcache_client::{
        Aggregation, Binding, Bucket, Region, RegionKind, RequestInfo, RequestResult, SiteBlock,
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
                aggregation: Aggregation::Summed,
                analyses: vec![],
                owner: String::new(),
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
                })
                .collect(),
            analysis_json: None,
        }
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

    #[test]
    fn the_svg_has_one_bar_per_bucket_and_escapes_names() {
        let mut r = result(&[3, 1]);
        r.request.event = "<&>".into();
        let svg = svg(&r);
        assert_eq!(svg.matches("fill=\"#4269d0\"").count(), 2);
        assert!(svg.contains("&lt;&amp;&gt;") && !svg.contains("<&>"));
    }
}
