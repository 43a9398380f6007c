//! The demo's pictures: the histograms of both program versions side by side as terminal bars,
//! and as one SVG figure with a panel per event, like the EP-Cache paper's Figure 3.

use std::fmt::Write as _;

use epcache_client::RequestResult;

use crate::histogram::{count_ticks, svg_axes};

/// The events of the paper's Figure 3: L1 read hits, read misses, write hits, write misses.
pub(crate) const EVENTS: [(&str, &str); 4] = [
    ("EPC_L1_LDH", "L1 read hits"),
    ("PAPI_L1_LDM", "L1 read misses"),
    ("EPC_L1_STH", "L1 write hits"),
    ("PAPI_L1_STM", "L1 write misses"),
];

/// One version's four histograms.
pub(crate) struct VersionResults {
    pub(crate) label: &'static str,
    pub(crate) histograms: Vec<RequestResult>,
}

/// Bars of `width` characters at most, the two versions in adjacent columns per bucket.
pub(crate) fn side_by_side(results: &[VersionResults], width: usize) -> String {
    let mut out = String::new();
    for (e, (event, title)) in EVENTS.iter().enumerate() {
        let columns: Vec<_> = results.iter().filter_map(|v| v.histograms.get(e)).collect();
        // One scale for both versions, so their bars compare.
        let max = columns
            .iter()
            .flat_map(|r| r.buckets.iter().map(|b| b.count))
            .max()
            .unwrap_or(0)
            .max(1);
        let _ = writeln!(out, "{title} of A ({event}), per portion of A; one scale");
        let _ = write!(out, "{:>8} ", "portion");
        for v in results {
            let _ = write!(out, "{:<w$} ", v.label, w = width + 9);
        }
        out.push('\n');
        let rows = columns.iter().map(|r| r.buckets.len()).max().unwrap_or(0);
        for row in 0..rows {
            let _ = write!(out, "{:>8} ", row + 1);
            for r in &columns {
                let count = r.buckets.get(row).map_or(0, |b| b.count);
                let len = (count as f64 / max as f64 * width as f64).round() as usize;
                let _ = write!(out, "{:<width$} {:>8} ", "#".repeat(len), count);
            }
            out.push('\n');
        }
        out.push('\n');
    }
    out
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Series colours: original, optimised.
const COLOURS: [&str; 2] = ["#d1495b", "#2e86ab"];

/// A 2x2 figure, one panel per event, each with both versions' bars per portion of A.
pub(crate) fn figure(results: &[VersionResults], cache: &str) -> String {
    let (panel_w, panel_h) = (520.0_f64, 300.0_f64);
    let (left, top, gap) = (70.0, 70.0, 40.0);
    let w = left + 2.0 * panel_w + gap + 20.0;
    let h = top + 2.0 * (panel_h + 60.0) + 20.0;
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(out, r#"<rect width="{w}" height="{h}" fill="white"/>"#);
    let _ = writeln!(
        out,
        r#"<text x="{}" y="24" text-anchor="middle" font-size="16">Gauss elimination, 100x100 REAL: accesses to A per portion, original vs optimised</text>"#,
        w / 2.0
    );
    let _ = writeln!(
        out,
        r##"<text x="{}" y="44" text-anchor="middle" fill="#555">simulated cache {} (epcache demo; after the EP-Cache paper, Figure 3)</text>"##,
        w / 2.0,
        escape(cache)
    );
    for (i, v) in results.iter().enumerate() {
        let x = w - 260.0 + 120.0 * i as f64;
        let _ = writeln!(
            out,
            r##"<rect x="{x}" y="52" width="12" height="12" fill="{}"/><text x="{}" y="62">{}</text>"##,
            COLOURS[i % 2],
            x + 16.0,
            escape(v.label)
        );
    }
    for (e, (event, title)) in EVENTS.iter().enumerate() {
        let px = left + (e % 2) as f64 * (panel_w + gap);
        let py = top + (e / 2) as f64 * (panel_h + 60.0) + 20.0;
        let series: Vec<_> = results.iter().filter_map(|v| v.histograms.get(e)).collect();
        let ticks = count_ticks(
            series
                .iter()
                .flat_map(|r| r.buckets.iter().map(|b| b.count))
                .max()
                .unwrap_or(0),
        );
        let max = *ticks.last().expect("ticks start at 0") as f64;
        let n = series
            .iter()
            .map(|r| r.buckets.len())
            .max()
            .unwrap_or(1)
            .max(1) as f64;
        let slot = panel_w / n;
        let bar = slot * 0.8 / series.len().max(1) as f64;
        let _ = writeln!(
            out,
            r#"<text x="{}" y="{}" text-anchor="middle" font-size="14">{} ({})</text>"#,
            px + panel_w / 2.0,
            py - 8.0,
            title,
            event
        );
        for (s, r) in series.iter().enumerate() {
            for (b, bucket) in r.buckets.iter().enumerate() {
                let bh = bucket.count as f64 / max * panel_h;
                let _ = writeln!(
                    out,
                    r##"<rect x="{:.2}" y="{:.2}" width="{:.2}" height="{:.2}" fill="{}"><title>{} portion {}: {}</title></rect>"##,
                    px + b as f64 * slot + slot * 0.1 + s as f64 * bar,
                    py + panel_h - bh,
                    bar,
                    bh,
                    COLOURS[s % 2],
                    escape(results[s].label),
                    b + 1,
                    bucket.count
                );
            }
        }
        svg_axes(&mut out, (px, py, panel_w, panel_h), &ticks);
        let _ = writeln!(
            out,
            r#"<text x="{}" y="{}" text-anchor="middle">portion of A (1 to {})</text>"#,
            px + panel_w / 2.0,
            py + panel_h + 20.0,
            n
        );
    }
    out.push_str("</svg>\n");
    out
}
