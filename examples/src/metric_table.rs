//! METRIC's per-data-structure table (hits, misses, miss ratio, temporal reuse, spatial use) and
//! its evictor table, read from epcache's standalone report (`EPCACHE_REPORT`).
//!
//! The report's shape is the runtime contract's: `regions[]`, each with PAPI-named `events` and
//! `data_structures[]` with the same `events`. Temporal reuse and spatial use come from the
//! analyses (`epcache_sim::analysis::AnalysisReport`), which a region carries under
//! `analyses` when they ran; without them those columns print `-`. METRIC's "temporal ratio"
//! (the share of hits that re-touch an element) is not what the analyses measure, so the table
//! shows the cache-reuse paper's temporal reuse (accesses per line residency) instead, by name.

use std::fmt::Write as _;

use epcache_sim::analysis::AnalysisReport;
use serde_json::Value;

/// A report the table cannot be made from.
#[derive(Debug, thiserror::Error)]
pub enum TableError {
    #[error("the report has no `regions` array: is it an EPCACHE_REPORT file?")]
    NoRegions,
    #[error("region {region}: {what}")]
    Malformed { region: String, what: String },
    #[error("no region named {name}; the report has {names:?}")]
    NoSuchRegion { name: String, names: Vec<String> },
    #[error(
        "level {level} has no events in region {region} (the report's cache has fewer levels?)"
    )]
    NoSuchLevel { region: String, level: usize },
}

/// Hits and misses of one row at one level.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub reads: u64,
    pub read_misses: u64,
    pub writes: u64,
    pub write_misses: u64,
}

impl Counts {
    /// The counts of data level `level` (1 = L1) from an `events` object, `None` when it has
    /// none for that level.
    pub fn from_events(events: &Value, level: usize) -> Option<Counts> {
        let get = |suffix: &str| events[format!("PAPI_L{level}_{suffix}")].as_u64();
        Some(Counts {
            reads: get("DCR")?,
            read_misses: get("LDM")?,
            writes: get("DCW")?,
            write_misses: get("STM")?,
        })
    }

    pub fn accesses(&self) -> u64 {
        self.reads + self.writes
    }

    pub fn misses(&self) -> u64 {
        self.read_misses + self.write_misses
    }

    pub fn hits(&self) -> u64 {
        self.accesses() - self.misses()
    }

    /// Misses over accesses; `None` without accesses.
    pub fn miss_ratio(&self) -> Option<f64> {
        (self.accesses() > 0).then(|| self.misses() as f64 / self.accesses() as f64)
    }
}

/// One line of the table.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub name: String,
    pub counts: Counts,
    pub temporal_reuse: Option<f64>,
    pub spatial_use: Option<f64>,
}

/// One region's table.
#[derive(Debug, Clone, PartialEq)]
pub struct RegionTable {
    pub region: String,
    /// `file:line` or the region's kind when it has no source position.
    pub place: String,
    pub instances: u64,
    /// Data structures with accesses, most misses first.
    pub rows: Vec<Row>,
    /// The whole region (its own counts, data structures or not).
    pub total: Counts,
    /// Accesses per line residency and spatial use over every data structure the analyses
    /// watched (METRIC's overall figures), when they ran.
    pub total_temporal_reuse: Option<f64>,
    pub total_spatial_use: Option<f64>,
    /// `(victim, evictor, count)`, most first per victim, when the evictor analysis ran.
    pub evictors: Vec<(String, String, u64)>,
}

fn region_name(region: &Value) -> String {
    region["name"].as_str().unwrap_or("?").to_owned()
}

/// The tables of the regions named in `only` (every region when empty), at data level `level`.
pub fn tables(
    report: &Value,
    only: &[String],
    level: usize,
) -> Result<Vec<RegionTable>, TableError> {
    let regions = report["regions"].as_array().ok_or(TableError::NoRegions)?;
    for name in only {
        if !regions.iter().any(|r| region_name(r) == *name) {
            return Err(TableError::NoSuchRegion {
                name: name.clone(),
                names: regions.iter().map(region_name).collect(),
            });
        }
    }
    regions
        .iter()
        .filter(|r| only.is_empty() || only.contains(&region_name(r)))
        .map(|r| region_table(r, level))
        .collect()
}

fn region_table(region: &Value, level: usize) -> Result<RegionTable, TableError> {
    let name = region_name(region);
    let malformed = |what: &str| TableError::Malformed {
        region: name.clone(),
        what: what.to_owned(),
    };
    let total = Counts::from_events(&region["events"], level).ok_or(TableError::NoSuchLevel {
        region: name.clone(),
        level,
    })?;
    let analyses: Option<AnalysisReport> = match region.get("analyses") {
        None | Some(Value::Null) => None,
        Some(v) => Some(
            serde_json::from_value(v.clone())
                .map_err(|e| malformed(&format!("unreadable analyses: {e}")))?,
        ),
    };
    let mut structures = Vec::new();
    for ds in region["data_structures"].as_array().into_iter().flatten() {
        let ds_name = ds["name"]
            .as_str()
            .ok_or_else(|| malformed("a data structure without a name"))?;
        let counts = Counts::from_events(&ds["events"], level).ok_or_else(|| {
            malformed(&format!("data structure {ds_name} without L{level} events"))
        })?;
        structures.push((ds_name.to_owned(), counts));
    }
    let place = match (region["file"].as_str(), region["line"].as_u64()) {
        (Some(file), Some(line)) => {
            let short = file.rsplit('/').next().unwrap_or(file);
            format!("{short}:{line}")
        }
        _ => region["kind"].as_str().unwrap_or("program").to_owned(),
    };
    Ok(RegionTable::assemble(
        name,
        place,
        region["instances"].as_u64().unwrap_or(1),
        total,
        structures,
        analyses.as_ref(),
        level,
    ))
}

impl RegionTable {
    /// A region's table from its counts at data level `level` (1 = L1): the structures with
    /// accesses, most misses first, with the reuse columns and the evictor table filled from
    /// `analyses` when they ran at that level.
    pub fn assemble(
        region: String,
        place: String,
        instances: u64,
        total: Counts,
        structures: Vec<(String, Counts)>,
        analyses: Option<&AnalysisReport>,
        level: usize,
    ) -> RegionTable {
        // The analyses watch one level; their columns belong only to that level's table.
        let analyses = analyses.filter(|a| a.level + 1 == level);
        let mut rows: Vec<Row> = structures
            .into_iter()
            .filter(|(_, counts)| counts.accesses() > 0)
            .map(|(name, counts)| {
                let reuse = analyses
                    .and_then(|a| a.range(&name))
                    .and_then(|r| r.reuse.as_ref());
                Row {
                    temporal_reuse: reuse.and_then(|r| r.temporal_reuse),
                    spatial_use: reuse.and_then(|r| r.spatial_use),
                    name,
                    counts,
                }
            })
            .collect();
        rows.sort_by(|a, b| {
            b.counts
                .misses()
                .cmp(&a.counts.misses())
                .then_with(|| a.name.cmp(&b.name))
        });
        let mut evictors = Vec::new();
        if let Some(matrix) = analyses.and_then(|a| a.evictors.as_ref()) {
            for (v, victim) in matrix.names.iter().enumerate() {
                let mut column: Vec<(String, String, u64)> = matrix
                    .names
                    .iter()
                    .enumerate()
                    .map(|(e, evictor)| (victim.clone(), evictor.clone(), matrix.counts[e][v]))
                    .filter(|row| row.2 > 0)
                    .collect();
                column.sort_by(|a, b| b.2.cmp(&a.2).then_with(|| a.1.cmp(&b.1)));
                evictors.extend(column);
            }
        }
        let (mut residencies, mut accesses, mut bytes_used) = (0u64, 0u64, 0u64);
        for reuse in analyses
            .iter()
            .flat_map(|a| &a.ranges)
            .filter_map(|r| r.reuse.as_ref())
        {
            residencies += reuse.residencies;
            accesses += reuse.accesses;
            bytes_used += reuse.bytes_used;
        }
        let line = analyses.map_or(0, |a| u64::from(a.line_size));
        let per_residency = |v: u64, unit: u64| {
            (residencies > 0 && unit > 0).then(|| v as f64 / (residencies * unit) as f64)
        };
        RegionTable {
            region,
            place,
            instances,
            rows,
            total,
            total_temporal_reuse: per_residency(accesses, 1),
            total_spatial_use: per_residency(bytes_used, line),
            evictors,
        }
    }
}

fn ratio(v: Option<f64>, places: usize) -> String {
    v.map_or_else(|| "-".to_owned(), |v| format!("{v:.places$}"))
}

/// The tables as METRIC printed them: one line per data structure, then the region's total,
/// then the evictors with each victim's percentages.
pub fn render(tables: &[RegionTable], level: usize) -> String {
    let mut out = String::new();
    for t in tables {
        let _ = writeln!(
            out,
            "{} ({}, {} instance{}), L{level}",
            t.region,
            t.place,
            t.instances,
            if t.instances == 1 { "" } else { "s" }
        );
        let _ = writeln!(
            out,
            "  {:<24} {:>12} {:>12} {:>12} {:>12} {:>10} {:>9} {:>8}",
            "data structure",
            "reads",
            "writes",
            "hits",
            "misses",
            "miss ratio",
            "temp. use",
            "spatial"
        );
        let line = |out: &mut String, name: &str, c: &Counts, t: Option<f64>, s: Option<f64>| {
            let _ = writeln!(
                out,
                "  {:<24} {:>12} {:>12} {:>12} {:>12} {:>10} {:>9} {:>8}",
                name,
                c.reads,
                c.writes,
                c.hits(),
                c.misses(),
                ratio(c.miss_ratio(), 5),
                ratio(t, 2),
                ratio(s, 3)
            );
        };
        for row in &t.rows {
            line(
                &mut out,
                &row.name,
                &row.counts,
                row.temporal_reuse,
                row.spatial_use,
            );
        }
        line(
            &mut out,
            "(whole region)",
            &t.total,
            t.total_temporal_reuse,
            t.total_spatial_use,
        );
        if !t.evictors.is_empty() {
            let _ = writeln!(
                out,
                "  {:<24} {:<24} {:>12} {:>8}",
                "evicted", "by", "lines", "percent"
            );
            for (victim, evictor, count) in &t.evictors {
                let all: u64 = t
                    .evictors
                    .iter()
                    .filter(|e| e.0 == *victim)
                    .map(|e| e.2)
                    .sum();
                let _ = writeln!(
                    out,
                    "  {:<24} {:<24} {:>12} {:>8.2}",
                    victim,
                    evictor,
                    count,
                    100.0 * *count as f64 / all as f64
                );
            }
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A report in the runtime contract's shape, with numbers from METRIC's Figure 5 (mm, naive).
    fn report(analyses: Option<Value>) -> Value {
        let events = |r: u64, rm: u64, w: u64, wm: u64| serde_json::json!({"PAPI_L1_DCR": r, "PAPI_L1_LDM": rm, "PAPI_L1_DCW": w, "PAPI_L1_STM": wm});
        let mut region = serde_json::json!({
            "name": "mm_naive", "file": "/src/examples/c/mm.c", "line": 41, "kind": "function",
            "instances": 1,
            "events": events(750_000, 261_032, 250_000, 0),
            "data_structures": [
                {"name": "xy", "kind": "global", "start": 0, "bytes": 5_120_000,
                 "events": events(250_000, 11_000, 0, 0)},
                {"name": "xz", "kind": "global", "start": 5_120_000, "bytes": 5_120_000,
                 "events": events(250_000, 250_000, 0, 0)},
                {"name": "xx", "kind": "global", "start": 10_240_000, "bytes": 5_120_000,
                 "events": events(250_000, 157, 250_000, 0)},
                {"name": "unused", "kind": "global", "start": 15_360_000, "bytes": 8,
                 "events": events(0, 0, 0, 0)},
            ]
        });
        if let Some(a) = analyses {
            region["analyses"] = a;
        }
        serde_json::json!({"cache": "D1=32K,2,32", "threads": 1, "levels": [], "regions": [
            {"name": "program", "file": null, "line": null, "kind": "program", "instances": 1,
             "events": events(1_000_000, 261_100, 260_000, 10), "data_structures": []},
            region,
        ]})
    }

    #[test]
    fn rows_are_the_data_structures_with_accesses_most_misses_first() {
        let t = tables(&report(None), &["mm_naive".to_owned()], 1).unwrap();
        assert_eq!(t.len(), 1);
        let names: Vec<&str> = t[0].rows.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["xz", "xy", "xx"]);
        assert_eq!(t[0].place, "mm.c:41");
        let xz = &t[0].rows[0].counts;
        assert_eq!(
            (xz.hits(), xz.misses(), xz.miss_ratio()),
            (0, 250_000, Some(1.0))
        );
        let xx = &t[0].rows[2].counts;
        assert_eq!(xx.hits(), 499_843);
        assert_eq!(t[0].total.miss_ratio(), Some(261_032.0 / 1_000_000.0));
        let text = render(&t, 1);
        assert!(text.contains("0.26103"), "{text}");
        assert!(text.contains("1.00000"), "{text}");
        // No analyses: their columns are dashes.
        assert!(t[0].rows.iter().all(|r| r.spatial_use.is_none()));
    }

    #[test]
    fn analyses_fill_the_reuse_columns_and_the_evictor_table() {
        let analyses = serde_json::json!({
            "level": 0, "level_name": "D1", "line_size": 32, "lines": 1024,
            "ranges": [
                {"name": "xz", "start": 5_120_000, "end": 10_240_000, "bucket_bytes": 5_120_000,
                 "reuse": {"residencies": 250_000, "accesses": 250_000, "bytes_used": 1_368_000,
                           "temporal_reuse": 1.0, "spatial_use": 0.171,
                           "buckets": {"residencies": [], "accesses": [], "bytes_used": [],
                                       "temporal_reuse": [], "spatial_use": []}}}
            ],
            "evictors": {"names": ["xy", "xz", "xx", "(other)"],
                         "counts": [[0, 10_854, 0, 0], [10_863, 238_150, 149, 0],
                                    [0, 149, 0, 0], [0, 0, 0, 0]]}
        });
        let t = tables(&report(Some(analyses)), &[], 1).unwrap();
        assert_eq!(t.len(), 2);
        let naive = &t[1];
        assert_eq!(naive.rows[0].spatial_use, Some(0.171));
        assert_eq!(naive.rows[0].temporal_reuse, Some(1.0));
        assert_eq!(naive.rows[1].spatial_use, None);
        // The overall figures weigh each structure by its residencies (only xz's here).
        assert_eq!(
            naive.total_spatial_use,
            Some(1_368_000.0 / (250_000.0 * 32.0))
        );
        assert_eq!(naive.total_temporal_reuse, Some(1.0));
        assert_eq!(t[0].total_spatial_use, None);
        // Figure 6: xz evicted by itself 238,150 times, 95.6% of its evictions.
        assert_eq!(
            naive.evictors.iter().find(|e| e.0 == "xz").unwrap(),
            &("xz".to_owned(), "xz".to_owned(), 238_150)
        );
        let text = render(&t, 1);
        assert!(text.contains("95.58"), "{text}");
        assert!(text.contains("0.171"), "{text}");
        // Another level's table has no analysis columns.
        assert!(tables(&report(None), &[], 2).is_err());
    }

    #[test]
    fn unknown_regions_are_named() {
        let err = tables(&report(None), &["nope".to_owned()], 1).unwrap_err();
        assert!(err.to_string().contains("mm_naive"), "{err}");
        assert!(matches!(
            tables(&serde_json::json!({}), &[], 1),
            Err(TableError::NoRegions)
        ));
    }
}
