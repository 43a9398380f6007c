//! The standalone report's per-line rows: the run's misses per code address (`line_table.rs`)
//! named by source line, with the chain of inlined calls (`epcache_symbols::CodeLines`), per
//! region and per data structure.
//!
//! A code address is the return address of the hook call that reported the access, so the
//! access's line is that of the byte before it. Code addresses of the same source position
//! (same file, line, function and inlined calls) and data structure are one row. An address
//! no object's debug information names, or that lies in the runtime's own code, is a row with
//! no file ("unknown"); the misses the bounded tables had no room for are the report's
//! `unattributed_line_misses`. So the rows and those sum to the region's misses.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

use serde::Serialize;

use epcache_symbols::{CodeLines, SourceFrame, is_program_unit};

use super::data::DataStructure;
use super::line_table::{LINE_COHERENCE, LINE_COUNTS, LineMisses, LineTotals};
use super::program;

/// One source position's misses within a region (or the whole program), for one data
/// structure.
#[derive(Debug, Clone, Serialize)]
pub struct ReportLine {
    /// Source file of the access (as the compilation recorded it); `null` when unknown.
    pub file: Option<String>,
    /// Its line (0 when unknown).
    pub line: u32,
    /// The function whose code the access is: the innermost inlined one.
    pub function: Option<String>,
    /// Where that function was inlined, innermost first: each frame's `file`:`line` is the call
    /// in `function`, out to the function that was compiled. Empty when not inlined.
    pub inlined_from: Vec<SourceFrame>,
    /// The data structure accessed (its report name), `null` for accesses to none.
    pub data_structure: Option<String>,
    /// Misses by event name: `PAPI_Lk_LDM` (read misses at level k), `PAPI_Lk_STM` (write
    /// misses), `PAPI_Lk_DCM` (both); on a machine of cores (`EPCACHE_CORES`) the coherence
    /// events too (`EPC_Lk_COHM`, `EPC_Lk_FSM`, `EPC_Lk_TSM`, `PAPI_CA_INV`).
    pub events: BTreeMap<String, u64>,
}

/// Misses by event name, for `levels` data levels; with `coherence` (a machine of cores), the
/// coherence events too, named as the region's (`EPC_Lk_COHM`, `EPC_Lk_FSM`, `EPC_Lk_TSM`,
/// `PAPI_CA_INV`).
pub(crate) fn miss_events(
    misses: &LineMisses,
    levels: usize,
    coherence: bool,
) -> BTreeMap<String, u64> {
    let mut events = BTreeMap::new();
    for level in 0..levels.min(LINE_COHERENCE / 2) {
        let (reads, writes) = (misses[2 * level], misses[2 * level + 1]);
        events.insert(format!("PAPI_L{}_LDM", level + 1), reads);
        events.insert(format!("PAPI_L{}_STM", level + 1), writes);
        events.insert(format!("PAPI_L{}_DCM", level + 1), reads + writes);
        if coherence {
            let at = |event: usize| misses[LINE_COHERENCE + 4 * level + event];
            for (event, suffix) in ["COHM", "FSM", "TSM"].iter().enumerate() {
                events.insert(format!("EPC_L{}_{suffix}", level + 1), at(event));
            }
        }
    }
    if coherence {
        events.insert("PAPI_CA_INV".to_owned(), misses[LINE_COHERENCE + 3]);
    }
    events
}

/// A source position with its inlined calls, innermost first; empty when unknown.
type Position = Vec<SourceFrame>;

/// Names code addresses, reading each object's line tables once.
#[derive(Default)]
struct Namer {
    lines: HashMap<Option<PathBuf>, Option<CodeLines>>,
    positions: HashMap<u64, Position>,
}

impl Namer {
    fn position(&mut self, pc: u64) -> Position {
        if let Some(p) = self.positions.get(&pc) {
            return p.clone();
        }
        let position = self.name(pc);
        self.positions.insert(pc, position.clone());
        position
    }

    fn name(&mut self, pc: u64) -> Position {
        let Some(object) = (pc != 0).then(|| program::object_at(pc)).flatten() else {
            return Vec::new();
        };
        let Some(at) = pc.checked_sub(object.bias).and_then(|a| a.checked_sub(1)) else {
            return Vec::new();
        };
        let lines = self.lines.entry(object.path.clone()).or_insert_with(|| {
            let path = object
                .path
                .clone()
                .unwrap_or_else(|| PathBuf::from("/proc/self/exe"));
            CodeLines::load(&path)
                .inspect_err(|e| eprintln!("epcache: per-line rows unnamed: {e}"))
                .ok()
        });
        let Some(lines) = lines else {
            return Vec::new();
        };
        let mut frames = lines.frames_at(at).unwrap_or_default();
        // A lambda's code has no linkage name, and every lambda is `operator()`: the compiled
        // one is named as its region is (`main::{lambda(int)#1}::operator()`).
        if let Some(compiled) = frames.last_mut()
            && compiled.function.as_deref() == Some("operator()")
            && let Some(function) = object.info.function_at(at)
        {
            compiled.function = Some(function.name.clone());
        }
        // The runtime's own code (a slow path reached by a call, not a tail jump) is no
        // position of the program's.
        if frames
            .first()
            .and_then(|f| f.file.as_deref())
            .is_some_and(|f| !is_program_unit(f))
        {
            return Vec::new();
        }
        frames
    }
}

/// The rows of each region (by registry id; `None` for the whole program): the misses of
/// every key whose regions hold it, summed per position and data structure, most L1 misses
/// first.
pub(crate) fn line_rows(
    lines: &LineTotals,
    structures: &[DataStructure],
    levels: usize,
    coherence: bool,
) -> HashMap<Option<u32>, Vec<ReportLine>> {
    let mut namer = Namer::default();
    type Sums = BTreeMap<(Position, Option<String>), LineMisses>;
    let mut sums: HashMap<Option<u32>, Sums> = HashMap::new();
    let mut add = |region: Option<u32>, key: (Position, Option<String>), misses: &LineMisses| {
        let sum = sums
            .entry(region)
            .or_default()
            .entry(key)
            .or_insert([0; LINE_COUNTS]);
        for (a, b) in sum.iter_mut().zip(misses) {
            *a += b;
        }
    };
    for ((pc, regions, structure), misses) in &lines.entries {
        let position = namer.position(*pc);
        let name = (*structure as usize)
            .checked_sub(1)
            .and_then(|s| structures.get(s))
            .map(|d| d.name.clone());
        let key = (position, name);
        add(None, key.clone(), misses);
        for region in regions {
            add(Some(*region), key.clone(), misses);
        }
    }
    sums.into_iter()
        .map(|(region, rows)| {
            let mut rows: Vec<ReportLine> = rows
                .into_iter()
                .map(|((position, data_structure), misses)| {
                    let mut frames = position.into_iter();
                    let first = frames.next();
                    ReportLine {
                        file: first.as_ref().and_then(|f| f.file.clone()),
                        line: first.as_ref().map_or(0, |f| f.line),
                        function: first.and_then(|f| f.function),
                        inlined_from: frames.collect(),
                        data_structure,
                        events: miss_events(&misses, levels, coherence),
                    }
                })
                .collect();
            rows.sort_by(|a, b| {
                let l1 = |r: &ReportLine| r.events.get("PAPI_L1_DCM").copied().unwrap_or(0);
                l1(b)
                    .cmp(&l1(a))
                    .then_with(|| (&a.file, a.line).cmp(&(&b.file, b.line)))
            });
            (region, rows)
        })
        .collect()
}
