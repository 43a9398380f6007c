//! The standalone report (`EPCACHE_REPORT`, `epcache run --all-regions`) as a table: each
//! region with its source location, then the data structures it touched, with reads, writes and
//! misses at L1 and at the last data level, sorted and cut as the user asks. A run with
//! threads adds how many threads each region ran on and a row per thread; a run whose threads
//! were cores of one machine (`EPCACHE_CORES`) adds L1's false- and true-sharing misses.
//!
//! The report is read into a typed view of the fields the table shows, so a report that lacks
//! one says which instead of printing empty cells.

use std::collections::BTreeMap;
use std::path::Path;

use clap::ValueEnum;
use serde::Deserialize;

use crate::connection::table;

/// The fields of the report the table shows.
#[derive(Debug, Deserialize)]
pub(crate) struct Report {
    /// Why the run was not monitored (a cache that does not resolve).
    #[serde(default)]
    pub(crate) error: Option<String>,
    /// The data levels, L1 first.
    levels: Vec<Level>,
    #[serde(default)]
    threads_unreported: u64,
    /// The cores of the machine the threads ran on, when they did.
    #[serde(default)]
    cores: Option<u64>,
    /// Why the machine `EPCACHE_CORES` asked for could not be made.
    #[serde(default)]
    cores_refused: Option<String>,
    /// How finely the threads' accesses interleaved on the machine.
    #[serde(default)]
    cores_interleaving: Option<Interleaving>,
    regions: Vec<Region>,
}

#[derive(Debug, Deserialize)]
struct Interleaving {
    accesses: u64,
    thread_switches: u64,
}

#[derive(Debug, Deserialize)]
struct Level {
    name: String,
}

#[derive(Debug, Deserialize)]
struct Region {
    name: String,
    #[serde(default)]
    file: Option<String>,
    #[serde(default)]
    line: Option<u32>,
    instances: u64,
    /// Threads it ran on (reports before per-thread rows: 1).
    #[serde(default = "one")]
    threads: u64,
    #[serde(default)]
    per_thread: Vec<ThreadRow>,
    events: BTreeMap<String, u64>,
    #[serde(default)]
    data_structures: Vec<Structure>,
}

fn one() -> u64 {
    1
}

#[derive(Debug, Deserialize)]
struct ThreadRow {
    thread: u64,
    #[serde(default)]
    openmp_thread: Option<u64>,
    #[serde(default)]
    core: Option<u64>,
    instances: u64,
    events: BTreeMap<String, u64>,
}

impl ThreadRow {
    /// `thread 1 (omp 1, core 1)`.
    fn label(&self) -> String {
        let mut about = Vec::new();
        if let Some(n) = self.openmp_thread {
            about.push(format!("omp {n}"));
        }
        if let Some(c) = self.core {
            about.push(format!("core {c}"));
        }
        if about.is_empty() {
            format!("thread {}", self.thread)
        } else {
            format!("thread {} ({})", self.thread, about.join(", "))
        }
    }
}

#[derive(Debug, Deserialize)]
struct Structure {
    name: String,
    /// `alloc_site` for heap blocks named by their allocation line.
    #[serde(default)]
    kind: String,
    events: BTreeMap<String, u64>,
    /// An allocation line whose blocks of two allocation calls were live at once.
    #[serde(default)]
    several_arrays: bool,
}

impl Structure {
    /// The line (`ra.f90:5`) naming this structure's blocks, when it is a heap allocation line
    /// that one array's name does not already qualify.
    fn allocation_line(&self) -> Option<(&str, u32)> {
        if self.kind != "alloc_site" || self.several_arrays || self.name.contains('@') {
            return None;
        }
        let (file, line) = self.name.rsplit_once(':')?;
        Some((file, line.parse().ok()?))
    }
}

impl Report {
    /// The heap allocation lines the table would show bare (`ra.f90:5`), each once.
    pub(crate) fn allocation_lines(&self) -> Vec<(String, u32)> {
        let mut lines: Vec<(String, u32)> = self
            .regions
            .iter()
            .flat_map(|r| &r.data_structures)
            .filter_map(|d| d.allocation_line())
            .map(|(file, line)| (file.to_owned(), line))
            .collect();
        lines.sort_unstable();
        lines.dedup();
        lines
    }

    /// Shows each allocation line that `array_of` knows the one array of as that array,
    /// `x@ra.f90:5`, the name a request may use for it.
    pub(crate) fn name_allocation_lines(&mut self, array_of: &BTreeMap<(String, u32), String>) {
        for data in self.regions.iter_mut().flat_map(|r| &mut r.data_structures) {
            let Some((file, line)) = data.allocation_line() else {
                continue;
            };
            if let Some(array) = array_of.get(&(file.to_owned(), line)) {
                data.name = format!("{array}@{}", data.name);
            }
        }
    }
}

/// How the table orders regions, and the data structures within each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub(crate) enum SortKey {
    /// As the program ran them (registration order); structures by name.
    #[default]
    Program,
    /// Most L1 misses first.
    L1Misses,
    /// Most misses at the last data level first.
    LlMisses,
    /// Most reads first.
    Reads,
    /// Most writes first.
    Writes,
    /// By name.
    Name,
}

/// What the table shows.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Layout {
    /// The order.
    pub(crate) sort: SortKey,
    /// At most this many regions (besides `program`) and structures per region.
    pub(crate) top: Option<usize>,
}

/// The counts one row shows, by the report's event names.
#[derive(Debug, Clone, Copy, Default)]
struct Counts {
    reads: u64,
    writes: u64,
    l1_misses: u64,
    last_misses: Option<u64>,
    /// L1's false- and true-sharing misses, when the threads were cores of one machine.
    sharing: Option<(u64, u64)>,
}

impl Counts {
    fn of(events: &BTreeMap<String, u64>, levels: usize) -> Counts {
        let get = |name: &str| events.get(name).copied().unwrap_or(0);
        Counts {
            reads: get("PAPI_L1_DCR"),
            writes: get("PAPI_L1_DCW"),
            l1_misses: get("PAPI_L1_DCM"),
            last_misses: (levels > 1).then(|| get(&format!("PAPI_L{levels}_DCM"))),
            sharing: events
                .contains_key("EPC_L1_FSM")
                .then(|| (get("EPC_L1_FSM"), get("EPC_L1_TSM"))),
        }
    }

    /// The value `key` sorts by, largest first (`None` for the keys that are not counts).
    fn key(&self, key: SortKey) -> Option<u64> {
        match key {
            SortKey::L1Misses => Some(self.l1_misses),
            SortKey::LlMisses => Some(self.last_misses.unwrap_or(self.l1_misses)),
            SortKey::Reads => Some(self.reads),
            SortKey::Writes => Some(self.writes),
            SortKey::Program | SortKey::Name => None,
        }
    }

    fn cells(&self) -> Vec<String> {
        let mut cells = vec![
            self.reads.to_string(),
            self.writes.to_string(),
            self.l1_misses.to_string(),
        ];
        cells.extend(self.last_misses.map(|n| n.to_string()));
        if let Some((false_sharing, true_sharing)) = self.sharing {
            cells.extend([false_sharing.to_string(), true_sharing.to_string()]);
        }
        cells
    }
}

/// `prog.c:12` for a region defined at line 12 of `/src/prog.c`.
fn source(file: Option<&str>, line: Option<u32>) -> String {
    let Some(file) = file.filter(|f| !f.is_empty()) else {
        return String::new();
    };
    let name = Path::new(file)
        .file_name()
        .map_or_else(|| file.to_owned(), |n| n.to_string_lossy().into_owned());
    match line {
        Some(line) => format!("{name}:{line}"),
        None => name,
    }
}

/// Sorts `items` by `key` (stable, so ties keep the report's order) and keeps the first `top`;
/// how many it left out.
fn order<T>(
    items: &mut Vec<T>,
    layout: Layout,
    counts: impl Fn(&T) -> Counts,
    name: impl Fn(&T) -> &str,
) -> usize {
    match layout.sort {
        SortKey::Program => {}
        SortKey::Name => items.sort_by(|a, b| name(a).cmp(name(b))),
        key => items.sort_by_key(|item| std::cmp::Reverse(counts(item).key(key))),
    }
    let before = items.len();
    if let Some(top) = layout.top {
        items.truncate(top);
    }
    before - items.len()
}

/// The report as a table, with a line on what the counts mean.
pub(crate) fn render(report: &Report, layout: Layout) -> String {
    let levels = report.levels.len();
    let mut header = vec![
        "REGION",
        "SOURCE",
        "DATA",
        ">INSTANCES",
        ">READS",
        ">WRITES",
        ">L1 MISSES",
    ];
    let last_header = report
        .levels
        .last()
        .filter(|_| levels > 1)
        .map(|l| format!(">{} MISSES", l.name));
    if let Some(h) = &last_header {
        header.push(h);
    }
    if report.cores.is_some() {
        header.extend([">L1 FALSE SHARING", ">L1 TRUE SHARING"]);
    }
    // How many threads ran each region, once any region ran on more than one.
    let threaded = report.regions.iter().any(|r| r.threads > 1);
    if threaded {
        header.insert(4, ">THREADS");
    }
    let (program, regions) = match report.regions.split_first() {
        Some((first, rest)) if first.name == "program" && first.file.is_none() => {
            (Some(first), rest)
        }
        _ => (None, &report.regions[..]),
    };
    let mut regions: Vec<&Region> = regions.iter().collect();
    let hidden_regions = order(
        &mut regions,
        layout,
        |r| Counts::of(&r.events, levels),
        |r| &r.name,
    );
    let mut rows = Vec::new();
    let mut hidden_structures = 0;
    for region in program.into_iter().chain(regions) {
        let mut row = vec![
            region.name.clone(),
            source(region.file.as_deref(), region.line),
            String::new(),
            region.instances.to_string(),
        ];
        if threaded {
            row.push(region.threads.to_string());
        }
        row.extend(Counts::of(&region.events, levels).cells());
        rows.push(row);
        // By OpenMP thread number where the program has one, else by the runtime's index, as
        // `epcache results` orders a per-thread request's rows.
        let mut threads: Vec<&ThreadRow> = region.per_thread.iter().collect();
        threads.sort_by_key(|t| (t.openmp_thread.is_none(), t.openmp_thread, t.thread));
        for thread in threads {
            let mut row = vec![
                String::new(),
                String::new(),
                thread.label(),
                thread.instances.to_string(),
                String::new(),
            ];
            row.extend(Counts::of(&thread.events, levels).cells());
            rows.push(row);
        }
        let mut structures: Vec<&Structure> = region.data_structures.iter().collect();
        let by_name = Layout {
            sort: match layout.sort {
                SortKey::Program => SortKey::Name,
                key => key,
            },
            ..layout
        };
        hidden_structures += order(
            &mut structures,
            by_name,
            |d| Counts::of(&d.events, levels),
            |d| &d.name,
        );
        for data in structures {
            let mut row = vec![
                String::new(),
                String::new(),
                data.name.clone(),
                String::new(),
            ];
            if threaded {
                row.push(String::new());
            }
            row.extend(Counts::of(&data.events, levels).cells());
            rows.push(row);
        }
    }
    let mut out = table(&header, &rows);
    out.push_str(
        "Counts are inclusive: a region's include those of the regions it calls; `program` is the whole run.\n",
    );
    if hidden_regions + hidden_structures > 0 {
        out.push_str(&format!(
            "--top left out {hidden_regions} region(s) and {hidden_structures} data structure row(s) of the regions shown; a larger --top or --json shows them.\n"
        ));
    }
    if let Some(why) = &report.cores_refused {
        out.push_str(&format!("no machine of cores: {why}\n"));
    }
    let mut shared_lines: Vec<&str> = report
        .regions
        .iter()
        .flat_map(|r| &r.data_structures)
        .filter(|d| d.several_arrays)
        .map(|d| d.name.as_str())
        .collect();
    shared_lines.sort_unstable();
    shared_lines.dedup();
    if !shared_lines.is_empty() {
        out.push_str(&format!(
            "Several arrays allocated at one line (in one statement, or by a loop the compiler \
             unrolled) share the name {}, which counts them together: give each its own \
             allocation line to tell them apart.\n",
            shared_lines.join(", ")
        ));
    }
    if let Some(i) = &report.cores_interleaving
        && i.accesses > 0
    {
        // A short stretch with its fraction: every 1.9 accesses, not every 1.
        let stretch = i.accesses as f64 / (i.thread_switches + 1) as f64;
        let stretch = if stretch < 10.0 {
            format!("{stretch:.1}")
        } else {
            crate::numbers::grouped(stretch as u64)
        };
        out.push_str(&format!(
            "The threads took turns every {} accesses on the machine ({} switches in {} accesses): \
             coherence misses need two threads' accesses close together, so compare runs, layouts \
             or arrays with one another rather than with hardware counts.\n",
            stretch,
            crate::numbers::grouped(i.thread_switches),
            crate::numbers::grouped(i.accesses)
        ));
    }
    if report.threads_unreported > 0 {
        out.push_str(&format!(
            "{} thread(s) ended inside a region without handing their counts on: missing above\n",
            report.threads_unreported
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocation_lines_take_their_arrays_name_and_others_keep_theirs() {
        let events = serde_json::json!({"PAPI_L1_DCR": 1});
        let mut report: Report = serde_json::from_value(serde_json::json!({
            "levels": [{"name": "L1"}],
            "regions": [{"name": "program", "instances": 1, "events": events, "data_structures": [
                {"name": "ra.f90:5", "kind": "alloc_site", "events": events},
                {"name": "ra.f90:7", "kind": "alloc_site", "events": events},
                {"name": "t@heat.f90:6", "kind": "alloc_site", "events": events},
                {"name": "k.c:9", "kind": "alloc_site", "several_arrays": true, "events": events},
                {"name": "grid", "kind": "global", "events": events}
            ]}]
        }))
        .unwrap();
        assert_eq!(
            report.allocation_lines(),
            [("ra.f90".to_owned(), 5), ("ra.f90".to_owned(), 7)]
        );
        let arrays = BTreeMap::from([(("ra.f90".to_owned(), 5), "x".to_owned())]);
        report.name_allocation_lines(&arrays);
        let names: Vec<&str> = report.regions[0]
            .data_structures
            .iter()
            .map(|d| d.name.as_str())
            .collect();
        assert_eq!(
            names,
            ["x@ra.f90:5", "ra.f90:7", "t@heat.f90:6", "k.c:9", "grid"]
        );
    }

    fn report(levels: &[&str]) -> Report {
        let events = |l1: u64, l2: u64| serde_json::json!({"PAPI_L1_DCR": 12, "PAPI_L1_DCW": 12, "PAPI_L1_DCM": l1, "PAPI_L2_DCM": l2, "PAPI_L3_DCM": l2 + 1});
        serde_json::from_value(serde_json::json!({
            "levels": levels.iter().map(|n| serde_json::json!({"name": n})).collect::<Vec<_>>(),
            "threads_unreported": 1,
            "regions": [
                {"name": "program", "instances": 1, "events": events(9, 4), "data_structures": []},
                {"name": "helper", "file": "/src/a.c", "line": 3, "instances": 3, "events": events(4, 2),
                 "data_structures": [{"name": "b", "events": events(1, 1)}, {"name": "a", "events": events(3, 1)}]},
                {"name": "helper", "file": "/src/b.c", "line": 7, "instances": 1, "events": events(5, 2),
                 "data_structures": []}
            ]
        }))
        .unwrap()
    }

    fn words(line: &str) -> Vec<&str> {
        line.split_whitespace().collect()
    }

    #[test]
    fn the_last_column_is_the_last_data_level() {
        let text = render(&report(&["D1", "L2", "L3"]), Layout::default());
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].ends_with("L1 MISSES  L3 MISSES"), "{text}");
        // program: reads, writes, L1 misses, L3 misses.
        assert_eq!(words(lines[1]), ["program", "1", "12", "12", "9", "5"]);
        let cg = render(&report(&["D1", "LL"]), Layout::default());
        assert!(
            cg.lines().next().unwrap().ends_with("L1 MISSES  LL MISSES"),
            "{cg}"
        );
        assert_eq!(words(cg.lines().nth(1).unwrap())[4..], ["9", "4"], "{cg}");
    }

    #[test]
    fn one_data_level_gets_one_miss_column() {
        let text = render(&report(&["D1"]), Layout::default());
        assert_eq!(text.matches("MISSES").count(), 1, "{text}");
        assert_eq!(
            words(text.lines().nth(1).unwrap()),
            ["program", "1", "12", "12", "9"]
        );
    }

    #[test]
    fn regions_of_one_name_are_told_apart_by_their_source() {
        let text = render(&report(&["D1", "L2"]), Layout::default());
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(words(lines[2])[..3], ["helper", "a.c:3", "3"]);
        // Structures by name under the program order.
        assert_eq!(words(lines[3])[0], "a");
        assert_eq!(words(lines[4])[0], "b");
        assert_eq!(words(lines[5])[..2], ["helper", "b.c:7"]);
        assert!(text.contains("Counts are inclusive"), "{text}");
        assert!(text.contains("1 thread(s) ended inside a region"), "{text}");
    }

    #[test]
    fn threads_get_a_column_their_rows_and_sharing_misses_when_they_were_cores() {
        let events = |fsm: u64| serde_json::json!({"PAPI_L1_DCR": 10, "PAPI_L1_DCW": 10, "PAPI_L1_DCM": 8, "EPC_L1_FSM": fsm, "EPC_L1_TSM": 1});
        let report: Report = serde_json::from_value(serde_json::json!({
            "levels": [{"name": "D1"}],
            "cores": 2,
            "cores_interleaving": {"accesses": 1000000, "thread_switches": 3999},
            "regions": [
                {"name": "program", "instances": 1, "threads": 3, "events": events(7)},
                {"name": "loop", "file": "/src/a.c", "line": 9, "instances": 2, "threads": 2,
                 "per_thread": [
                    {"thread": 1, "openmp_thread": 0, "core": 1, "instances": 1, "events": events(3)},
                    {"thread": 2, "openmp_thread": 1, "core": 0, "instances": 1, "events": events(4)}
                 ],
                 "events": events(7), "data_structures": [{"name": "packed", "events": events(7)}]}
            ]
        }))
        .unwrap();
        let text = render(&report, Layout::default());
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].contains("INSTANCES  THREADS"), "{text}");
        assert!(
            lines[0].ends_with("L1 FALSE SHARING  L1 TRUE SHARING"),
            "{text}"
        );
        assert_eq!(
            words(lines[1]),
            ["program", "1", "3", "10", "10", "8", "7", "1"]
        );
        assert_eq!(
            words(lines[2]),
            ["loop", "a.c:9", "2", "2", "10", "10", "8", "7", "1"]
        );
        assert_eq!(
            words(lines[3]),
            [
                "thread", "1", "(omp", "0,", "core", "1)", "1", "10", "10", "8", "3", "1"
            ]
        );
        assert_eq!(words(lines[4])[..2], ["thread", "2"]);
        assert_eq!(words(lines[5]), ["packed", "10", "10", "8", "7", "1"]);
        assert!(
            text.contains("took turns every 250 accesses on the machine (3,999 switches in 1,000,000 accesses)"),
            "{text}"
        );
        // A stretch of a few accesses keeps its fraction.
        let mut report = report;
        report.cores_interleaving = Some(Interleaving {
            accesses: 1_600_010,
            thread_switches: 837_974,
        });
        let text = render(&report, Layout::default());
        assert!(text.contains("took turns every 1.9 accesses"), "{text}");
    }

    #[test]
    fn sorting_and_top_keep_program_first() {
        let layout = Layout {
            sort: SortKey::L1Misses,
            top: Some(1),
        };
        let text = render(&report(&["D1", "L2"]), layout);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(words(lines[1])[0], "program");
        assert!(
            text.contains("--top left out 1 region(s) and 0 data structure row(s)"),
            "{text}"
        );
        // b.c's helper has 5 L1 misses, a.c's 4: only b.c's is kept.
        assert_eq!(words(lines[2])[..2], ["helper", "b.c:7"]);
        assert!(lines[3].starts_with("Counts are inclusive"), "{text}");
        let layout = Layout {
            sort: SortKey::L1Misses,
            top: None,
        };
        let text = render(&report(&["D1", "L2"]), layout);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(words(lines[3])[..2], ["helper", "a.c:3"]);
        // a (3 misses) before b (1).
        assert_eq!(words(lines[4])[0], "a");
        assert_eq!(words(lines[5])[0], "b");
    }
}
