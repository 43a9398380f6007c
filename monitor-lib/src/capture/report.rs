//! The standalone report (`EPCACHE_REPORT=FILE`): the run's totals per level, as JSON.
//!
//! Its shape is the one the standalone mode keeps when regions and data structures arrive:
//! `regions[]` with PAPI-named `events`; until then one region, `program`, holds the whole run.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::cache::HierarchySpec;

use super::state::CaptureTotals;

/// What a captured run measured.
#[derive(Debug, Clone, Serialize)]
pub struct CaptureReport {
    /// The cache spec as given (`EPCACHE_CACHE`, or the default preset's name).
    pub cache: String,
    /// The hierarchy that spec resolved to, when it resolved.
    pub spec: Option<HierarchySpec>,
    /// How many threads' simulators the totals sum.
    pub threads: u32,
    /// Totals per level, instruction cache first when there is one.
    pub levels: Vec<LevelTotals>,
    /// Monitored regions; today only `program`, the whole run.
    pub regions: Vec<ReportRegion>,
}

/// One level's totals over the run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LevelTotals {
    /// The level's name in the spec (`D1`, `L2`, `LL`, ...).
    pub name: String,
    pub reads: u64,
    pub read_misses: u64,
    pub writes: u64,
    pub write_misses: u64,
    /// Dirty lines written to the next level.
    pub writebacks: u64,
}

/// One region's counts by PAPI event name (`PAPI_L1_DCR`, `PAPI_L1_LDM`, ...).
#[derive(Debug, Clone, Serialize)]
pub struct ReportRegion {
    /// The region's readable name.
    pub name: String,
    /// Source file, when the region has one.
    pub file: Option<String>,
    /// First line, when the region has one.
    pub line: Option<u32>,
    /// Event name to count.
    pub events: BTreeMap<String, u64>,
    /// Per data structure counts (none until data structures are named).
    pub data_structures: Vec<serde_json::Value>,
}

impl CaptureReport {
    /// The report of `totals`, simulated with `spec` (given as `cache`).
    pub fn new(cache: String, spec: Option<HierarchySpec>, totals: &CaptureTotals) -> Self {
        let levels: Vec<LevelTotals> = totals
            .levels
            .iter()
            .map(|(name, s)| LevelTotals {
                name: name.clone(),
                reads: s.reads,
                read_misses: s.read_misses,
                writes: s.writes,
                write_misses: s.write_misses,
                writebacks: s.writebacks,
            })
            .collect();
        let data_level_names: Vec<&str> = spec.as_ref().map_or_else(Vec::new, |spec| {
            spec.data.iter().map(|l| l.name.as_str()).collect()
        });
        let mut events = BTreeMap::new();
        for (index, name) in data_level_names.iter().enumerate() {
            let Some(level) = levels.iter().find(|l| l.name == *name) else {
                continue;
            };
            let papi = |suffix: &str| format!("PAPI_L{}_{suffix}", index + 1);
            events.insert(papi("DCR"), level.reads);
            events.insert(papi("DCW"), level.writes);
            events.insert(papi("DCA"), level.reads + level.writes);
            events.insert(papi("LDM"), level.read_misses);
            events.insert(papi("STM"), level.write_misses);
            events.insert(papi("DCM"), level.read_misses + level.write_misses);
        }
        Self {
            cache,
            spec,
            threads: totals.threads,
            levels,
            regions: vec![ReportRegion {
                name: "program".to_owned(),
                file: None,
                line: None,
                events,
                data_structures: Vec::new(),
            }],
        }
    }

    /// The report as pretty-printed JSON.
    pub fn to_json(&self) -> String {
        // Serialising plain structs, strings and integers cannot fail.
        serde_json::to_string_pretty(self).expect("the report serialises")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::LevelStats;

    #[test]
    fn data_levels_get_papi_names_by_depth() {
        let spec = HierarchySpec::parse("D1=1K,2,32;L2=4K,4,64").unwrap();
        let d1 = LevelStats {
            reads: 10,
            read_misses: 3,
            writes: 5,
            write_misses: 1,
            ..LevelStats::default()
        };
        let l2 = LevelStats {
            reads: 4,
            read_misses: 2,
            ..LevelStats::default()
        };
        let totals = CaptureTotals {
            levels: vec![("D1".into(), d1), ("L2".into(), l2)],
            threads: 2,
        };
        let report = CaptureReport::new("x".into(), Some(spec), &totals);
        let events = &report.regions[0].events;
        assert_eq!(events["PAPI_L1_DCR"], 10);
        assert_eq!(events["PAPI_L1_LDM"], 3);
        assert_eq!(events["PAPI_L1_DCW"], 5);
        assert_eq!(events["PAPI_L1_STM"], 1);
        assert_eq!(events["PAPI_L2_DCR"], 4);
        assert_eq!(events["PAPI_L2_LDM"], 2);
        let json: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
        assert_eq!(json["levels"][0]["name"], "D1");
        assert_eq!(json["threads"], 2);
    }
}
