//! The standalone report's per-line rows (`lines` of each region: misses per source line, with
//! inlined calls and data structure) read into a typed view, and written three ways: the top
//! lines with their source text (`epcache annotate`, like `cg_annotate`), Callgrind's format (for
//! `callgrind_annotate` and KCachegrind) and CSV (for spreadsheets and pandas).
//!
//! Callgrind's format: one `events:` column per data level and kind of miss, named as Cachegrind
//! names them (`D1mr D1mw L2mr L2mw`, after the report's level names), so the columns read as
//! `cg_annotate`'s do. Costs are attributed as Callgrind itself does: to the compiled function
//! (`fn=`, in its file `fl=`), at the line of the access, with lines of code inlined from
//! another file under `fi=` (and `fe=` back). Data structures are not extra columns (their
//! names would have to be mangled into event names, and a column per structure and event makes
//! the table unreadable past a few arrays): on a machine of cores the lines' coherence events
//! follow as columns of their own (`EPC_L1_FSM`, ...). A file holds one data structure's misses, or all of
//! them summed, as `--data-structure` asks; one file per structure of interest.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, bail};
use epcache_shm::region_names;
use serde::Deserialize;

/// The fields of the report the per-line views use.
#[derive(Debug, Deserialize)]
pub(crate) struct LineReport {
    #[serde(default)]
    pub(crate) error: Option<String>,
    #[serde(default)]
    cache: String,
    levels: Vec<Level>,
    regions: Vec<Region>,
    #[serde(default)]
    unattributed_line_misses: BTreeMap<String, u64>,
}

#[derive(Debug, Deserialize)]
struct Level {
    name: String,
}

#[derive(Debug, Deserialize)]
struct Region {
    name: String,
    #[serde(default)]
    lines: Vec<Line>,
}

impl LineReport {
    /// The source files the report's lines name, each once.
    pub(crate) fn source_files(&self) -> BTreeSet<&str> {
        self.regions
            .iter()
            .flat_map(|r| &r.lines)
            .filter_map(|l| l.file.as_deref())
            .collect()
    }
}

/// One row: a source position's misses for one data structure.
#[derive(Debug, Clone, Deserialize)]
struct Line {
    file: Option<String>,
    line: u32,
    function: Option<String>,
    #[serde(default)]
    inlined_from: Vec<Frame>,
    data_structure: Option<String>,
    events: BTreeMap<String, u64>,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
struct Frame {
    function: Option<String>,
    file: Option<String>,
    line: u32,
}

/// What to write of a report's lines.
#[derive(Debug, Clone, Default)]
pub(crate) struct Selection {
    /// The region (default `program`, the whole run).
    pub(crate) region: Option<String>,
    /// Only this data structure's misses (default: all, summed per line).
    pub(crate) data_structure: Option<String>,
}

/// A source position, the key rows are summed by.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Position {
    file: Option<String>,
    line: u32,
    function: Option<String>,
    inlined_from: Vec<Frame>,
}

/// The rows of one region, summed per position over the data structures selected.
struct Selected<'a> {
    region: &'a str,
    /// Per level (L1 first): its name and the report's event names of its read and write misses.
    columns: Vec<(String, String, String)>,
    /// The lines' other events (a machine's coherence events), after the misses' columns.
    extras: Vec<String>,
    rows: Vec<(Position, Vec<u64>)>,
    /// The data structure selected, by its whole name.
    structure: Option<String>,
}

impl LineReport {
    /// Parses a report's JSON (`what` names it in errors).
    pub(crate) fn parse(text: &str, what: &str) -> anyhow::Result<LineReport> {
        let report: LineReport = serde_json::from_str(text).with_context(|| {
            format!(
                "reading the report {what}: not a report of a monitored run (`EPCACHE_REPORT=FILE`, or `epcache run --all-regions --json`)"
            )
        })?;
        if let Some(error) = &report.error {
            bail!("the run of {what} was not monitored: {error}");
        }
        let mut report = report;
        report.demangle_functions();
        Ok(report)
    }

    /// Every C++ function name of the rows and their inlined frames as people read it
    /// ([`demangle`](crate::demangle)).
    fn demangle_functions(&mut self) {
        let functions = self.regions.iter().flat_map(|r| &r.lines).flat_map(|l| {
            l.inlined_from
                .iter()
                .filter_map(|f| f.function.as_deref())
                .chain(l.function.as_deref())
        });
        let mut readable = crate::demangle::demangled(functions.clone());
        // gfortran's module procedures (`__mesh_MOD_init`) as their regions are named.
        readable.extend(
            functions
                .filter_map(|f| region_names::fortran_symbol(f).map(|name| (f.to_owned(), name))),
        );
        if readable.is_empty() {
            return;
        }
        let rename = |f: &mut Option<String>| {
            if let Some(r) = f.as_ref().and_then(|f| readable.get(f)) {
                *f = Some(r.clone());
            }
        };
        for line in self.regions.iter_mut().flat_map(|r| &mut r.lines) {
            rename(&mut line.function);
            for frame in &mut line.inlined_from {
                rename(&mut frame.function);
            }
        }
    }

    /// The per-level columns: (level name, read-miss event, write-miss event).
    fn columns(&self) -> Vec<(String, String, String)> {
        self.levels
            .iter()
            .enumerate()
            .map(|(i, l)| {
                (
                    l.name.clone(),
                    format!("PAPI_L{}_LDM", i + 1),
                    format!("PAPI_L{}_STM", i + 1),
                )
            })
            .collect()
    }

    /// The events of the lines beyond each level's read and write misses (and their sums): a
    /// machine's coherence events, by the report's names.
    fn extras(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .regions
            .iter()
            .flat_map(|r| &r.lines)
            .flat_map(|l| l.events.keys())
            .filter(|e| !(e.ends_with("_LDM") || e.ends_with("_STM") || e.ends_with("_DCM")))
            .cloned()
            .collect();
        names.sort();
        names.dedup();
        names
    }

    fn select(&self, selection: &Selection) -> anyhow::Result<Selected<'_>> {
        let wanted = selection.region.as_deref().unwrap_or("program");
        let names: Vec<&str> = self.regions.iter().map(|r| r.name.as_str()).collect();
        let region = match region_names::find(names.iter().copied(), wanted).as_slice() {
            [one] => &self.regions[*one],
            [] => bail!(
                "the report has no region {wanted:?}; its regions are {}",
                names.join(", ")
            ),
            many => bail!(
                "{wanted:?} names {} regions of the report ({}); give the whole name",
                many.len(),
                listed(&names, many)
            ),
        };
        // A data structure by its whole name, or a short or other-case form of one name
        // (`u` for `fields::u`), as requests find them.
        let structure = match &selection.data_structure {
            None => None,
            Some(s) => {
                let mut names: Vec<&str> = region
                    .lines
                    .iter()
                    .filter_map(|l| l.data_structure.as_deref())
                    .collect();
                names.sort_unstable();
                names.dedup();
                // `w@heat.f90:73`, as `epcache run`'s table shows a heap line by the array its
                // statement allocates, is the line the report names the block by.
                let s = match s.split_once('@') {
                    Some((_, line)) if !names.contains(&s.as_str()) && names.contains(&line) => {
                        line.to_owned()
                    }
                    _ => s.clone(),
                };
                let s = &s;
                match region_names::find(names.iter().copied(), s).as_slice() {
                    [one] => Some(names[*one].to_owned()),
                    [] => bail!(
                        "no line of region {wanted:?} missed on data structure {s:?}; those with misses are {}",
                        names.join(", ")
                    ),
                    many => bail!(
                        "{s:?} names {} data structures with misses in region {wanted:?} ({}); give the whole name",
                        many.len(),
                        listed(&names, many)
                    ),
                }
            }
        };
        let columns = self.columns();
        let extras = self.extras();
        let mut sums: BTreeMap<Position, Vec<u64>> = BTreeMap::new();
        for l in region.lines.iter().filter(|l| {
            structure
                .as_ref()
                .is_none_or(|s| l.data_structure.as_ref() == Some(s))
        }) {
            let position = Position {
                file: l.file.clone(),
                line: l.line,
                function: l.function.clone(),
                inlined_from: l.inlined_from.clone(),
            };
            let sum = sums
                .entry(position)
                .or_insert_with(|| vec![0; 2 * columns.len() + extras.len()]);
            for (i, (_, read, write)) in columns.iter().enumerate() {
                sum[2 * i] += l.events.get(read).copied().unwrap_or(0);
                sum[2 * i + 1] += l.events.get(write).copied().unwrap_or(0);
            }
            for (i, event) in extras.iter().enumerate() {
                sum[2 * columns.len() + i] += l.events.get(event).copied().unwrap_or(0);
            }
        }
        Ok(Selected {
            region: &region.name,
            columns,
            extras,
            rows: sums.into_iter().collect(),
            structure,
        })
    }
}

/// `names[i]` of each index, comma-separated.
fn listed(names: &[&str], indices: &[usize]) -> String {
    let chosen: Vec<&str> = indices.iter().map(|&i| names[i]).collect();
    chosen.join(", ")
}

/// Cachegrind's name of a level's misses: `D1mr`, `L2mw`, `LLmr`.
fn cachegrind_event(level: &str, write: bool) -> String {
    format!("{level}m{}", if write { "w" } else { "r" })
}

/// The report event `event` as a column index of [`Selected::columns`]' 2n columns, or the
/// sum of a level's two (`PAPI_Lk_DCM`): the indices to add.
fn event_columns(
    columns: &[(String, String, String)],
    extras: &[String],
    event: &str,
) -> anyhow::Result<Vec<usize>> {
    if let Some(i) = extras.iter().position(|e| e == event) {
        return Ok(vec![2 * columns.len() + i]);
    }
    for (i, (name, read, write)) in columns.iter().enumerate() {
        if event == read || event == cachegrind_event(name, false) {
            return Ok(vec![2 * i]);
        }
        if event == write || event == cachegrind_event(name, true) {
            return Ok(vec![2 * i + 1]);
        }
        if event == format!("PAPI_L{}_DCM", i + 1) || event == format!("{name}m") {
            return Ok(vec![2 * i, 2 * i + 1]);
        }
    }
    let known: Vec<String> = columns
        .iter()
        .enumerate()
        .flat_map(|(i, (_, r, w))| [r.clone(), w.clone(), format!("PAPI_L{}_DCM", i + 1)])
        .chain(extras.iter().cloned())
        .collect();
    bail!(
        "lines count misses (and a machine's coherence events) only; {event:?} is none of {}",
        known.join(", ")
    )
}

/// `file:line`, the file by its name alone.
fn short(file: Option<&str>, line: u32) -> String {
    match file {
        Some(f) => format!("{}:{line}", file_name(f)),
        None => "(unknown)".to_owned(),
    }
}

/// A path's last part (the whole path when it has none).
fn file_name(path: &str) -> String {
    Path::new(path)
        .file_name()
        .map_or_else(|| path.to_owned(), |n| n.to_string_lossy().into_owned())
}

/// Digits grouped by thousands, as `cg_annotate` prints counts.
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The top `top` lines by `event` (default the first level's misses), with their source text,
/// as `epcache annotate` prints them.
pub(crate) fn render_text(
    report: &LineReport,
    selection: &Selection,
    event: Option<&str>,
    top: usize,
) -> anyhow::Result<String> {
    let selected = report.select(selection)?;
    let default_event = "PAPI_L1_DCM";
    let event = event.unwrap_or(default_event);
    let by = event_columns(&selected.columns, &selected.extras, event)?;
    let key = |counts: &[u64]| by.iter().map(|&i| counts[i]).sum::<u64>();
    let total: u64 = selected.rows.iter().map(|(_, c)| key(c)).sum();
    // Lines with none of the event rank nowhere: a top list of them says nothing.
    let mut rows: Vec<&(Position, Vec<u64>)> =
        selected.rows.iter().filter(|(_, c)| key(c) > 0).collect();
    rows.sort_by(|a, b| key(&b.1).cmp(&key(&a.1)).then_with(|| a.0.cmp(&b.0)));
    rows.truncate(top);
    let mut out = title("Lines", &selected, report, event);
    let _ = writeln!(
        out,
        "-- {} of {event} in the region's lines; only misses are counted per line",
        grouped(total)
    );
    let table = CountColumns::new(&selected, &by, rows.iter().map(|(_, c)| c.as_slice()));
    let _ = writeln!(out, "{}  position", table.header());
    let mut sources = SourceCache::default();
    for (position, counts) in rows {
        let cells = table.cells(counts);
        let mut place = short(position.file.as_deref(), position.line);
        if let Some(f) = &position.function {
            let _ = write!(place, " {f}");
        }
        for frame in &position.inlined_from {
            let _ = write!(
                place,
                " < {} {}",
                frame.function.as_deref().unwrap_or("??"),
                short(frame.file.as_deref(), frame.line)
            );
        }
        let _ = writeln!(out, "{cells}  {place}");
        if let Some(text) = sources.line(position.file.as_deref(), position.line) {
            let _ = writeln!(out, "  | {}", text.trim_end());
        }
    }
    if selected
        .rows
        .iter()
        .any(|(p, c)| p.file.is_none() && key(c) > 0)
    {
        let _ = writeln!(
            out,
            "-- (unknown): misses of accesses that reached the simulator without a code address \
             (the runtime's Rust `read`/`write` calls), or made by code without debug \
             information (build it with -g)"
        );
    }
    let unattributed: u64 = by
        .iter()
        .filter(|&&i| i < 2 * selected.columns.len())
        .map(|&i| {
            let (_, read, write) = &selected.columns[i / 2];
            let name = if i % 2 == 0 { read } else { write };
            report
                .unattributed_line_misses
                .get(name)
                .copied()
                .unwrap_or(0)
        })
        .sum();
    if unattributed > 0 {
        let _ = writeln!(
            out,
            "-- {} more had no room in the per-line tables (no line)",
            grouped(unattributed)
        );
    }
    Ok(out)
}

/// The first line of a text view: what it lists (`Lines`, `Functions`), of which region, by
/// which event, under which cache, of which data structure.
fn title(what: &str, selected: &Selected<'_>, report: &LineReport, event: &str) -> String {
    format!(
        "-- {what} of region {} by {event}, cache {}{}\n",
        selected.region,
        report.cache,
        selected
            .structure
            .as_ref()
            .map_or(String::new(), |s| format!(", data structure {s}"))
    )
}

/// The count columns a table shows, right-aligned: every level's misses, then the machine's
/// coherence events that a row shown counts (or that the rows are ordered by, `by`): a column
/// of zeros says nothing.
struct CountColumns {
    /// Index into a row's counts, and the column's name.
    shown: Vec<(usize, String)>,
    widths: Vec<usize>,
}

impl CountColumns {
    fn new<'c>(
        selected: &Selected<'_>,
        by: &[usize],
        rows: impl Iterator<Item = &'c [u64]> + Clone,
    ) -> CountColumns {
        let misses = 2 * selected.columns.len();
        let shown: Vec<(usize, String)> = selected
            .columns
            .iter()
            .flat_map(|(n, _, _)| [cachegrind_event(n, false), cachegrind_event(n, true)])
            .chain(selected.extras.iter().cloned())
            .enumerate()
            .filter(|&(i, _)| i < misses || by.contains(&i) || rows.clone().any(|c| c[i] > 0))
            .collect();
        let widths = shown
            .iter()
            .map(|(i, n)| {
                rows.clone()
                    .map(|c| grouped(c[*i]).len())
                    .chain([n.len()])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        CountColumns { shown, widths }
    }

    fn header(&self) -> String {
        let header: Vec<String> = self
            .shown
            .iter()
            .zip(&self.widths)
            .map(|((_, n), w)| format!("{n:>w$}"))
            .collect();
        header.join(" ")
    }

    fn cells(&self, counts: &[u64]) -> String {
        let cells: Vec<String> = self
            .shown
            .iter()
            .zip(&self.widths)
            .map(|((i, _), w)| format!("{:>w$}", grouped(counts[*i])))
            .collect();
        cells.join(" ")
    }
}

/// The top `top` functions by `event`, each line's misses counted for the function whose
/// source the line is, inlined or not: a kernel the compiler inlined into `main` has no region,
/// but its own row here, with the functions it was inlined into.
pub(crate) fn render_functions(
    report: &LineReport,
    selection: &Selection,
    event: Option<&str>,
    top: usize,
) -> anyhow::Result<String> {
    let selected = report.select(selection)?;
    let event = event.unwrap_or("PAPI_L1_DCM");
    let by = event_columns(&selected.columns, &selected.extras, event)?;
    let key = |counts: &[u64]| by.iter().map(|&i| counts[i]).sum::<u64>();
    let width = selected.rows.first().map_or(0, |(_, c)| c.len());
    // Per function: its counts, its lines' files, and the functions it was inlined into.
    let mut functions: BTreeMap<Option<&str>, FunctionRow<'_>> = BTreeMap::new();
    for (position, counts) in &selected.rows {
        let row = functions
            .entry(position.function.as_deref())
            .or_insert_with(|| FunctionRow {
                counts: vec![0; width],
                files: BTreeMap::new(),
                inlined_into: BTreeMap::new(),
            });
        for (sum, count) in row.counts.iter_mut().zip(counts) {
            *sum += count;
        }
        *row.files.entry(position.file.as_deref()).or_default() += key(counts);
        if let Some(caller) = position.inlined_from.first() {
            *row.inlined_into
                .entry(caller.function.as_deref().unwrap_or("??"))
                .or_default() += key(counts);
        }
    }
    let total: u64 = functions.values().map(|r| key(&r.counts)).sum();
    // Functions with none of the event rank nowhere.
    let mut rows: Vec<(Option<&str>, FunctionRow<'_>)> = functions
        .into_iter()
        .filter(|(_, r)| key(&r.counts) > 0)
        .collect();
    let all = rows.len();
    rows.sort_by(|a, b| {
        key(&b.1.counts)
            .cmp(&key(&a.1.counts))
            .then_with(|| a.0.cmp(&b.0))
    });
    rows.truncate(top);
    let mut out = title("Functions", &selected, report, event);
    let _ = writeln!(
        out,
        "-- {} of {event} in the region's lines, each counted for the function whose source it \
         is, inlined or not; only misses are counted per line",
        grouped(total)
    );
    let table = CountColumns::new(
        &selected,
        &by,
        rows.iter().map(|(_, r)| r.counts.as_slice()),
    );
    let _ = writeln!(out, "{}  function", table.header());
    for (function, row) in &rows {
        let mut name = function.unwrap_or("(unknown)").to_owned();
        // The file most of its counted misses are in (a function's lines are in one file).
        if let Some((Some(file), _)) = row
            .files
            .iter()
            .max_by_key(|(f, n)| (**n, std::cmp::Reverse(**f)))
        {
            let _ = write!(name, "  {}", file_name(file));
        }
        if !row.inlined_into.is_empty() {
            let mut callers: Vec<(&str, u64)> =
                row.inlined_into.iter().map(|(f, n)| (*f, *n)).collect();
            callers.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
            let names: Vec<&str> = callers.iter().map(|(f, _)| *f).collect();
            let _ = write!(name, "  (inlined into {})", names.join(", "));
        }
        let _ = writeln!(out, "{}  {name}", table.cells(&row.counts));
    }
    if all > rows.len() {
        let _ = writeln!(
            out,
            "-- {} more functions with misses (--top to show more)",
            all - rows.len()
        );
    }
    Ok(out)
}

/// One function's row of [`render_functions`].
struct FunctionRow<'a> {
    counts: Vec<u64>,
    /// Misses (by the event ordered by) per file of its lines.
    files: BTreeMap<Option<&'a str>, u64>,
    /// Misses per function it was inlined into, at its lines inlined there.
    inlined_into: BTreeMap<&'a str, u64>,
}

/// Source files read for their lines, once each.
#[derive(Default)]
struct SourceCache {
    files: BTreeMap<String, Option<Vec<String>>>,
}

impl SourceCache {
    fn line(&mut self, file: Option<&str>, line: u32) -> Option<String> {
        let file = file?;
        let lines = self.files.entry(file.to_owned()).or_insert_with(|| {
            std::fs::read_to_string(file)
                .ok()
                .map(|t| t.lines().map(str::to_owned).collect())
        });
        lines
            .as_ref()?
            .get((line as usize).checked_sub(1)?)
            .cloned()
    }
}

/// The region's lines in Callgrind's format (see the module documentation).
pub(crate) fn render_callgrind(
    report: &LineReport,
    selection: &Selection,
    command: &str,
) -> anyhow::Result<String> {
    let selected = report.select(selection)?;
    let names: Vec<String> = selected
        .columns
        .iter()
        .flat_map(|(n, _, _)| [cachegrind_event(n, false), cachegrind_event(n, true)])
        .chain(selected.extras.iter().cloned())
        .collect();
    let mut out = String::new();
    let _ = writeln!(out, "# callgrind format");
    let _ = writeln!(out, "version: 1");
    let _ = writeln!(out, "creator: epcache");
    let _ = writeln!(out, "cmd: {command}");
    let _ = writeln!(
        out,
        "desc: Region: {}{}",
        selected.region,
        selected
            .structure
            .as_ref()
            .map_or(String::new(), |s| format!(", data structure {s}"))
    );
    let _ = writeln!(out, "desc: Cache: {}", report.cache);
    let _ = writeln!(out, "positions: line");
    for (i, (level, _, _)) in selected.columns.iter().enumerate() {
        let _ = writeln!(out, "event: {} : {level} read misses", names[2 * i]);
        let _ = writeln!(out, "event: {} : {level} write misses", names[2 * i + 1]);
    }
    for extra in &selected.extras {
        let _ = writeln!(out, "event: {extra} : {extra} (coherence)");
    }
    let _ = writeln!(out, "events: {}", names.join(" "));
    // Per compiled function (the outermost frame), in its file; inlined lines of other files
    // under fi=.
    // (file, function) to its cost lines: (the line's file, line, counts).
    type CostLines<'a> = Vec<(String, u32, &'a Vec<u64>)>;
    let mut by_function: BTreeMap<(String, String), CostLines<'_>> = BTreeMap::new();
    let mut totals = vec![0u64; names.len()];
    for (position, counts) in &selected.rows {
        let outer = position.inlined_from.last();
        let (function, file) = match outer {
            Some(frame) => (frame.function.clone(), frame.file.clone()),
            None => (position.function.clone(), position.file.clone()),
        };
        let function = function.unwrap_or_else(|| "(unknown)".to_owned());
        let file = file.unwrap_or_else(|| "???".to_owned());
        let line_file = position.file.clone().unwrap_or_else(|| "???".to_owned());
        by_function
            .entry((file, function))
            .or_default()
            .push((line_file, position.line, counts));
        for (t, c) in totals.iter_mut().zip(counts) {
            *t += c;
        }
    }
    for ((file, function), mut lines) in by_function {
        let _ = writeln!(out, "\nfl={file}");
        let _ = writeln!(out, "fn={function}");
        lines.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
        let mut current = file.clone();
        for (line_file, line, counts) in lines {
            if line_file != current {
                let _ = writeln!(
                    out,
                    "{}={line_file}",
                    if line_file == file { "fe" } else { "fi" }
                );
                current = line_file;
            }
            let cells: Vec<String> = counts.iter().map(u64::to_string).collect();
            let _ = writeln!(out, "{line} {}", cells.join(" "));
        }
    }
    let cells: Vec<String> = totals.iter().map(u64::to_string).collect();
    let _ = writeln!(out, "\ntotals: {}", cells.join(" "));
    Ok(out)
}

/// Every region's rows as CSV, one per region, position and data structure: `region`, `file`,
/// `line`, `function`, `inlined_from` (`function@file:line` frames joined by `;`),
/// `data_structure`, then each level's read and write misses (Cachegrind's names), then, on a
/// machine of cores, the coherence events by the report's names.
pub(crate) fn render_csv(report: &LineReport, selection: &Selection) -> anyhow::Result<String> {
    let columns = report.columns();
    let extras = report.extras();
    let mut out = String::new();
    let mut header = vec![
        "region".to_owned(),
        "file".to_owned(),
        "line".to_owned(),
        "function".to_owned(),
        "inlined_from".to_owned(),
        "data_structure".to_owned(),
    ];
    header.extend(
        columns
            .iter()
            .flat_map(|(n, _, _)| [cachegrind_event(n, false), cachegrind_event(n, true)]),
    );
    header.extend(extras.iter().cloned());
    let _ = writeln!(out, "{}", header.join(","));
    // A region or data structure asked for that the report lacks is an error, not an empty file.
    let structure = match selection.region.is_some() || selection.data_structure.is_some() {
        true => report.select(selection)?.structure,
        false => None,
    };
    for region in report
        .regions
        .iter()
        .filter(|r| selection.region.as_ref().is_none_or(|s| *s == r.name))
    {
        for l in region.lines.iter().filter(|l| {
            structure
                .as_ref()
                .is_none_or(|s| l.data_structure.as_ref() == Some(s))
        }) {
            let inlined: Vec<String> = l
                .inlined_from
                .iter()
                .map(|f| {
                    format!(
                        "{}@{}:{}",
                        f.function.as_deref().unwrap_or(""),
                        f.file.as_deref().unwrap_or(""),
                        f.line
                    )
                })
                .collect();
            let mut cells = vec![
                csv_field(&region.name),
                csv_field(l.file.as_deref().unwrap_or("")),
                l.line.to_string(),
                csv_field(l.function.as_deref().unwrap_or("")),
                csv_field(&inlined.join(";")),
                csv_field(l.data_structure.as_deref().unwrap_or("")),
            ];
            for (_, read, write) in &columns {
                cells.push(l.events.get(read).copied().unwrap_or(0).to_string());
                cells.push(l.events.get(write).copied().unwrap_or(0).to_string());
            }
            for event in &extras {
                cells.push(l.events.get(event).copied().unwrap_or(0).to_string());
            }
            let _ = writeln!(out, "{}", cells.join(","));
        }
    }
    Ok(out)
}

/// A CSV field, quoted when it holds a comma, a quote or a line break (RFC 4180).
fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_grouped_and_fields_quoted() {
        assert_eq!(grouped(4_218_500), "4,218,500");
        assert_eq!(grouped(12), "12");
        assert_eq!(csv_field("gauss_mod::a"), "gauss_mod::a");
        assert_eq!(csv_field("f(a, b)"), "\"f(a, b)\"");
        assert_eq!(csv_field("say \"x\""), "\"say \"\"x\"\"\"");
    }

    /// On a machine of cores the text shows the coherence events next to the misses, those
    /// that a line shown counts and the one the lines are ordered by; a column of zeros is left
    /// out.
    #[test]
    fn a_machines_lines_show_their_coherence_events() {
        let text = r#"{"cache": "D1=32K,8,64;LL=8M,16,64,shared", "levels": [{"name": "D1"}, {"name": "LL"}],
            "regions": [{"name": "program", "lines": [
              {"file": "fs.c", "line": 38, "data_structure": "packed",
               "events": {"PAPI_L1_STM": 40, "EPC_L1_COHM": 35, "EPC_L1_FSM": 35, "EPC_L1_TSM": 0}},
              {"file": "fs.c", "line": 49, "data_structure": "padded",
               "events": {"PAPI_L1_LDM": 2, "EPC_L1_TSM": 0}}]}]}"#;
        let report = LineReport::parse(text, "a test report").unwrap();
        let shown = render_text(&report, &Selection::default(), Some("EPC_L1_FSM"), 5).unwrap();
        let header = shown.lines().nth(2).unwrap();
        let names: Vec<&str> = header.split_whitespace().collect();
        assert_eq!(
            names,
            [
                "D1mr",
                "D1mw",
                "LLmr",
                "LLmw",
                "EPC_L1_COHM",
                "EPC_L1_FSM",
                "position"
            ],
            "{shown}"
        );
        let first: Vec<&str> = shown.lines().nth(3).unwrap().split_whitespace().collect();
        assert_eq!(first[..6], ["0", "40", "0", "0", "35", "35"], "{shown}");
        // Ordered by a column all zeros, that column is shown all the same, over no line: a
        // line with none of the event ranks nowhere.
        let shown = render_text(&report, &Selection::default(), Some("EPC_L1_TSM"), 5).unwrap();
        assert!(
            shown.lines().nth(2).unwrap().contains("EPC_L1_TSM"),
            "{shown}"
        );
        assert_eq!(shown.lines().count(), 3, "{shown}");
    }

    #[test]
    fn an_inlined_kernel_has_its_own_row_among_the_functions() {
        // `dot` inlined into `product` (two of its lines, two data structures on one), and
        // `product` into `main`; `main`'s own line.
        let text = r#"{"cache": "D1=32K,8,64;LL=8M,16,64", "levels": [{"name": "D1"}, {"name": "LL"}],
            "regions": [{"name": "program", "lines": [
              {"file": "k.c", "line": 12, "function": "dot", "data_structure": "m::a",
               "inlined_from": [{"function": "product", "file": "k.c", "line": 19},
                                {"function": "main", "file": "k.c", "line": 42}],
               "events": {"PAPI_L1_LDM": 100, "PAPI_L2_LDM": 7}},
              {"file": "k.c", "line": 12, "function": "dot", "data_structure": "m::b",
               "inlined_from": [{"function": "product", "file": "k.c", "line": 19},
                                {"function": "main", "file": "k.c", "line": 42}],
               "events": {"PAPI_L1_LDM": 50}},
              {"file": "k.c", "line": 13, "function": "dot",
               "inlined_from": [{"function": "product", "file": "k.c", "line": 19},
                                {"function": "main", "file": "k.c", "line": 42}],
               "events": {"PAPI_L1_STM": 5}},
              {"file": "k.c", "line": 19, "function": "product",
               "inlined_from": [{"function": "main", "file": "k.c", "line": 42}],
               "events": {"PAPI_L1_STM": 30}},
              {"file": "k.c", "line": 40, "function": "main",
               "events": {"PAPI_L1_STM": 20, "PAPI_L2_STM": 20}}]}]}"#;
        let report = LineReport::parse(text, "a test report").unwrap();
        let shown = render_functions(&report, &Selection::default(), None, 10).unwrap();
        let rows: Vec<Vec<&str>> = shown
            .lines()
            .skip(3)
            .map(|l| l.split_whitespace().collect())
            .collect();
        assert_eq!(
            rows,
            [
                vec![
                    "150", "5", "7", "0", "dot", "k.c", "(inlined", "into", "product)"
                ],
                vec![
                    "0", "30", "0", "0", "product", "k.c", "(inlined", "into", "main)"
                ],
                vec!["0", "20", "0", "20", "main", "k.c"],
            ],
            "{shown}"
        );
        assert!(shown.contains("205 of PAPI_L1_DCM"), "{shown}");
        // One data structure's, by its short name as requests take it, ordered by read
        // misses, the top one only.
        let selection = Selection {
            region: None,
            data_structure: Some("b".to_owned()),
        };
        let shown = render_functions(&report, &selection, Some("D1mr"), 1).unwrap();
        assert_eq!(shown.lines().count(), 4, "{shown}");
        let top = render_functions(&report, &Selection::default(), None, 2).unwrap();
        assert!(
            top.ends_with("-- 1 more functions with misses (--top to show more)\n"),
            "{top}"
        );
        assert!(shown.lines().nth(3).unwrap().contains("50"), "{shown}");
        assert!(
            shown
                .lines()
                .next()
                .unwrap()
                .ends_with("data structure m::b"),
            "{shown}"
        );
        let unknown = Selection {
            region: None,
            data_structure: Some("c".to_owned()),
        };
        let err = render_functions(&report, &unknown, None, 1)
            .unwrap_err()
            .to_string();
        assert!(err.contains("those with misses are m::a, m::b"), "{err}");
    }

    /// A heap line is selected by the name `epcache run`'s table shows it by, the array its
    /// statement allocates before the line, as by the line itself.
    #[test]
    fn a_heap_line_is_selected_by_its_arrays_name_too() {
        let text = r#"{"cache": "D1=32K,8,64", "levels": [{"name": "D1"}], "regions": [{"name": "program",
            "lines": [{"file": "heat.f90", "line": 80, "function": "MAIN__",
            "data_structure": "heat.f90:73", "events": {"PAPI_L1_LDM": 3}},
            {"file": "heat.f90", "line": 81, "function": "MAIN__",
            "data_structure": "grid::u", "events": {"PAPI_L1_LDM": 5}}]}]}"#;
        let report = LineReport::parse(text, "a test report").unwrap();
        for name in ["w@heat.f90:73", "heat.f90:73"] {
            let selection = Selection {
                region: None,
                data_structure: Some(name.to_owned()),
            };
            let picked = report.select(&selection).unwrap().structure;
            assert_eq!(picked.as_deref(), Some("heat.f90:73"), "{name}");
        }
    }

    #[test]
    fn a_reports_cpp_functions_are_read_demangled() {
        if !epcache_test_support::tools::available("c++filt", "line_report") {
            return;
        }
        let text = r#"{"cache": "D1=32K,8,64", "levels": [{"name": "D1"}], "regions": [{"name": "program",
            "lines": [{"file": "k.cc", "line": 7, "function": "_ZN4Grid5relaxEv",
            "inlined_from": [{"function": "main", "file": "k.cc", "line": 20}],
            "data_structure": "cells", "events": {"PAPI_L1_LDM": 3}}]}]}"#;
        let report = LineReport::parse(text, "a test report").unwrap();
        let line = &report.regions[0].lines[0];
        assert_eq!(line.function.as_deref(), Some("Grid::relax()"));
        assert_eq!(line.inlined_from[0].function.as_deref(), Some("main"));
    }
}

/// How `epcache annotate` and `epcache run --all-regions` write a report's lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub(crate) enum LineFormat {
    /// The top lines with their source text, like `cg_annotate`.
    #[default]
    Text,
    /// Callgrind's format, for `callgrind_annotate` and KCachegrind.
    Callgrind,
    /// CSV with a header row, every region's lines.
    Csv,
    /// The top functions, each line counted for the function whose source it is: an inlined
    /// kernel has its own row.
    Functions,
}

/// The report's lines in `format` (`command` names the program in Callgrind's `cmd:`).
pub(crate) fn render(
    report: &LineReport,
    format: LineFormat,
    selection: &Selection,
    event: Option<&str>,
    top: usize,
    command: &str,
) -> anyhow::Result<String> {
    match format {
        LineFormat::Text => render_text(report, selection, event, top),
        LineFormat::Callgrind => render_callgrind(report, selection, command),
        LineFormat::Csv => render_csv(report, selection),
        LineFormat::Functions => render_functions(report, selection, event, top),
    }
}
