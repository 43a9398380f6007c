//! The process's regions: every function of the program's own code (from its debug
//! information, registered at start so tools can request one before it first runs), and every
//! marker region as it is first met, each published in the segment's configuration table.
//!
//! A code address is resolved to its region once, under the registry's lock, and remembered
//! (`by_pc`): the boundary hooks keep a per-thread cache in front of it (`region_stack.rs`), so
//! an unmonitored boundary never takes the lock. Regions are tracked only where someone can
//! want them, a tool's segment or the standalone report; a process that never tracks skips
//! marker boundaries altogether ([`never_tracking`]).
//!
//! The registry takes its own lock and no other: callers resolve inside the runtime (a
//! `RuntimeGuard`), and never in a forked child, where a vanished thread may hold the lock.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};

use epcache_shm::config_table::ConfigEntry;
use epcache_shm::layout::RegionKind;
use epcache_shm::region_names;

use super::mcc;
use super::program::{self, file_id};
use super::{settings, switches};

/// A region as the runtime knows it.
#[derive(Debug, Clone)]
pub(crate) struct RegionMeta {
    pub(crate) name: String,
    pub(crate) file: String,
    pub(crate) line: u32,
    pub(crate) kind: RegionKind,
}

/// What a hook needs about a region: its id in the registry and its configuration entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RegionRef {
    pub(crate) id: u32,
    pub(crate) entry: Option<ConfigEntry>,
}

#[derive(Debug, Default)]
struct Registry {
    by_key: HashMap<(u32, u32), RegionRef>,
    regions: Vec<RegionMeta>,
    /// Code address → region (function regions by an address inside them, markers by call site);
    /// `None` for code without debug information.
    by_pc: HashMap<u64, Option<RegionRef>>,
    /// Region id → the function whose OpenMP construct it is the outlined body of, once asked.
    parents: HashMap<u32, Option<RegionRef>>,
}

static REGISTRY: OnceLock<Mutex<Registry>> = OnceLock::new();

/// One bit per region id below [`OUTLINED_IDS`]: set for a region named as an OpenMP outlined
/// body (`f._omp_fn.N`), so a region entry asks for a parallel parent without the registry's
/// lock only where there can be one (a region past them always asks).
static OUTLINED: [AtomicU64; OUTLINED_IDS / 64] = [const { AtomicU64::new(0) }; OUTLINED_IDS / 64];
const OUTLINED_IDS: usize = 1 << 16;
/// Whether anyone can want regions: a tool's segment exists, or the standalone report runs.
static TRACKING: AtomicBool = AtomicBool::new(false);

fn registry() -> MutexGuard<'static, Registry> {
    REGISTRY
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner())
}

/// Switches region tracking on (at process start, once a segment or report exists). Only then
/// does the boundary fast path get the tool-sequence word it needs, so a quiet boundary implies
/// tracking.
pub(crate) fn start_tracking() {
    TRACKING.store(true, Ordering::Release);
    mcc::publish_tool_sequence();
}

#[inline]
pub(crate) fn tracking() -> bool {
    TRACKING.load(Ordering::Relaxed)
}

/// Registers the region keyed by (`file`, `line`), or returns it if already known.
pub(crate) fn register(file: &str, line: u32, kind: RegionKind, name: &str) -> RegionRef {
    let mut reg = registry();
    register_locked(&mut reg, file, line, kind, name)
}

fn register_locked(
    reg: &mut Registry,
    file: &str,
    line: u32,
    kind: RegionKind,
    name: &str,
) -> RegionRef {
    let key = (file_id(file), line);
    if let Some(&r) = reg.by_key.get(&key) {
        return r;
    }
    let entry = mcc::get().and_then(|m| {
        m.register_region(key.0, line, kind, name, file)
            .map_err(|e| mcc::full_once(&e))
            .ok()
    });
    let r = RegionRef {
        id: reg.regions.len() as u32,
        entry,
    };
    if name.contains("._omp_fn.")
        && let Some(word) = OUTLINED.get(r.id as usize / 64)
    {
        word.fetch_or(1 << (r.id % 64), Ordering::Relaxed);
    }
    reg.regions.push(RegionMeta {
        name: name.to_owned(),
        file: file.to_owned(),
        line,
        kind,
    });
    reg.by_key.insert(key, r);
    r
}

/// Registers every function of the program's own C, C++ and Fortran code as a region, so tools
/// can request one before it first runs. Rust functions are left out: SanitizerCoverage gives
/// them no entry or exit hook, so a region for one would accept requests and never serve them
/// (Rust code marks its regions with `region!`).
///
/// A region is keyed by its declaration's file and line, so functions declared on one line (a
/// template's instances, overloads written on one line) are one region: it is named by all of
/// them (`tsum<double> | tsum<float>`), which `epcache_shm::region_names` finds by any one,
/// rather than by the first, whose name would claim the others' counts.
pub(crate) fn register_functions(objects: &[&program::ProgramInfo]) {
    let mut declared: Vec<(String, u32, Vec<&str>)> = Vec::new();
    let mut at: HashMap<(String, u32), usize> = HashMap::new();
    for p in objects {
        for f in &p.info.functions {
            let file = p.file_name(f.file);
            if is_rust_source(&file) {
                continue;
            }
            let i = *at.entry((file.clone(), f.line)).or_insert_with(|| {
                declared.push((file, f.line, Vec::new()));
                declared.len() - 1
            });
            let names = &mut declared[i].2;
            if !names.contains(&f.name.as_str()) {
                names.push(&f.name);
            }
        }
    }
    let mut reg = registry();
    for (file, line, names) in declared {
        let name = names.join(region_names::ALTERNATIVES);
        register_locked(&mut reg, &file, line, RegionKind::Function, &name);
    }
}

fn is_rust_source(file: &str) -> bool {
    file.ends_with(".rs")
}

/// Every region registered so far, by id.
pub(crate) fn all() -> Vec<RegionMeta> {
    registry().regions.clone()
}

/// Region `id`, if registered.
pub(crate) fn meta(id: u32) -> Option<RegionMeta> {
    registry().regions.get(id as usize).cloned()
}

/// Every region registered so far that `name` finds (`epcache_shm::region_names::find`: those
/// named so, else those it is a short or other-case form of), by id.
pub(crate) fn named_ids(name: &str) -> Vec<u32> {
    let registry = registry();
    epcache_shm::region_names::find(registry.regions.iter().map(|r| r.name.as_str()), name)
        .into_iter()
        .map(|i| i as u32)
        .collect()
}

/// Every region registered so far that `name` finds ([`named_ids`]).
pub(crate) fn named(name: &str) -> Vec<RegionMeta> {
    named_ids(name).into_iter().filter_map(meta).collect()
}

/// Whether the process start-up ran and regions are tracked (heap blocks are named only then;
/// allocations before it, from the C library's own start-up, are not the program's), in the
/// process that started them: never in a forked child (see `switches::forked_child`).
pub(crate) fn tracking_started() -> bool {
    settings::started() && tracking() && !switches::forked_child()
}

/// Whether the process start-up ran without starting region tracking (no segment, no report):
/// no region can ever be monitored, so marker boundaries have nothing to do at all.
pub(crate) fn never_tracking() -> bool {
    settings::started() && !tracking()
}

/// The region of code address `pc`, from the registry, else made by `resolve` under its lock
/// and remembered (`None` too: code without debug information).
fn resolved(
    pc: u64,
    resolve: impl FnOnce(&mut Registry) -> Option<RegionRef>,
) -> Option<RegionRef> {
    let mut reg = registry();
    match reg.by_pc.get(&pc) {
        Some(&r) => r,
        None => {
            let r = resolve(&mut reg);
            reg.by_pc.insert(pc, r);
            r
        }
    }
}

/// The region of the function holding code address `pc`.
pub(super) fn function_at(pc: u64) -> Option<RegionRef> {
    resolved(pc, |reg| function_region(reg, pc))
}

/// The marker region whose begin call returns to `return_pc`, named `label` if it is new.
pub(super) fn marker_at(return_pc: u64, label: impl FnOnce() -> String) -> Option<RegionRef> {
    resolved(return_pc, |reg| marker_region(reg, return_pc, &label()))
}

/// The function region that region `id` is the outlined body of, when `id` is one of gcc's and
/// gfortran's OpenMP bodies: `f._omp_fn.N` (a parallel loop, a task) belongs to `f`, and
/// `f._omp_fn.0._omp_fn.1` (nested) to `f._omp_fn.0`; `mesh::init._omp_fn.0` to `mesh::init`,
/// an external procedure's `f_._omp_fn.0` to `f`, and a contained one's `f.0._omp_fn.0` to
/// `f`. The parent is the region of that name in the same file.
pub(super) fn parallel_parent(id: u32) -> Option<RegionRef> {
    if !may_be_outlined(id) {
        return None;
    }
    let mut reg = registry();
    if let Some(&parent) = reg.parents.get(&id) {
        return parent;
    }
    let parent = reg.regions.get(id as usize).and_then(|r| {
        let (name, number) = r.name.rsplit_once("._omp_fn.")?;
        if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let function = |wanted: &str| {
            reg.regions.iter().position(|p| {
                p.name == wanted && p.file == r.file && p.kind == RegionKind::Function
            })
        };
        // gfortran names the body of an external procedure (one outside any module) by the
        // procedure's linkage name, `packed_._omp_fn.0`, and that of a contained one by its
        // local symbol, `relax.0._omp_fn.0`, while their regions are `packed` and `relax`.
        let i = function(name).or_else(|| function(region_names::gfortran_procedure(name)?))?;
        reg.by_key
            .get(&(file_id(&reg.regions[i].file), reg.regions[i].line))
            .copied()
    });
    reg.parents.insert(id, parent);
    parent
}

/// Whether region `id` may be an OpenMP outlined body ([`OUTLINED`]): one load, no lock, so
/// a region entry asks [`parallel_parent`] only where there can be one.
#[inline]
pub(super) fn may_be_outlined(id: u32) -> bool {
    OUTLINED
        .get(id as usize / 64)
        .is_none_or(|word| word.load(Ordering::Relaxed) & 1 << (id % 64) != 0)
}

/// The function holding `pc`, from the program's debug information.
fn function_region(reg: &mut Registry, pc: u64) -> Option<RegionRef> {
    let p = program::object_at(pc)?;
    let (name, at) = p.function_at(pc)?;
    Some(register_locked(
        reg,
        &at.file,
        at.line,
        RegionKind::Function,
        name,
    ))
}

/// A marker call site, through the line table; the label names the region.
fn marker_region(reg: &mut Registry, return_pc: u64, label: &str) -> Option<RegionRef> {
    let site = program::object_at(return_pc.wrapping_sub(1)).and_then(|p| p.call_site(return_pc));
    let (file, line) = match site {
        Some(s) => (s.file, s.line),
        // No line table: the label alone keys the region.
        None => (format!("<marker {label}>"), 0),
    };
    Some(register_locked(reg, &file, line, RegionKind::Marker, label))
}
