//! Regions inside the target: the process's region registry (functions from DWARF, markers as
//! they are first met), each thread's stack of open regions, and the entry and exit hooks that
//! check the configuration table and the halting point at every boundary.
//!
//! The hot path is the paper's "one hash probe": a region's configuration entry is resolved once
//! per code address and cached per thread, so an unmonitored boundary costs a small cache probe,
//! a push or pop, the request-flag load and the halting-point load.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};

use crate::shm::config_table::ConfigEntry;
use crate::shm::layout::{Boundary, RegionKind};

use super::mcc;
use super::program::{self, file_id};
use super::state;

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
}

static REGISTRY: OnceLock<Mutex<Registry>> = OnceLock::new();
/// Whether anyone can want regions: a tool's segment exists, or the standalone report runs.
static TRACKING: AtomicBool = AtomicBool::new(false);

fn registry() -> MutexGuard<'static, Registry> {
    REGISTRY
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner())
}

/// Switches region tracking on (at process start, once a segment or report exists).
pub(crate) fn start_tracking() {
    TRACKING.store(true, Ordering::Release);
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
    reg.regions.push(RegionMeta {
        name: name.to_owned(),
        file: file.to_owned(),
        line,
        kind,
    });
    reg.by_key.insert(key, r);
    r
}

/// Registers every function of the program's own code as a region, so tools can request one
/// before it first runs.
pub(crate) fn register_functions() {
    let Some(p) = program::program() else { return };
    let mut reg = registry();
    for f in &p.info.functions {
        let file = p.file_name(f.file);
        register_locked(&mut reg, &file, f.line, RegionKind::Function, &f.name);
    }
}

/// Every region registered so far, by id.
pub(crate) fn all() -> Vec<RegionMeta> {
    registry().regions.clone()
}

/// One open region on a thread.
#[derive(Debug, Clone, Copy)]
struct Frame {
    region: Option<RegionRef>,
    function: bool,
    monitored: bool,
}

const PC_CACHE: usize = 256;

thread_local! {
    static FRAMES: RefCell<Vec<Frame>> = const { RefCell::new(Vec::new()) };
    /// Direct-mapped cache of code address → region, in front of the registry's lock.
    static PC_CACHE_SLOTS: RefCell<[(u64, Option<RegionRef>); PC_CACHE]> =
        const { RefCell::new([(0, None); PC_CACHE]) };
    static WARNED_UNBALANCED: Cell<bool> = const { Cell::new(false) };
}

/// The region of code address `pc`, from this thread's cache, else from the registry, else
/// made by `resolve` (under the registry's lock, with the thread marked as in the runtime).
#[inline]
fn cached(pc: u64, resolve: impl FnOnce(&mut Registry) -> Option<RegionRef>) -> Option<RegionRef> {
    let slot = ((pc >> 2) ^ (pc >> 11)) as usize % PC_CACHE;
    PC_CACHE_SLOTS
        .try_with(|cache| {
            let Ok(mut cache) = cache.try_borrow_mut() else {
                return resolve_pc(pc, resolve);
            };
            if cache[slot].0 == pc {
                return cache[slot].1;
            }
            let r = resolve_pc(pc, resolve);
            cache[slot] = (pc, r);
            r
        })
        .unwrap_or(None)
}

#[cold]
fn resolve_pc(
    pc: u64,
    resolve: impl FnOnce(&mut Registry) -> Option<RegionRef>,
) -> Option<RegionRef> {
    let previous = state::enter_runtime();
    let r = {
        let mut reg = registry();
        match reg.by_pc.get(&pc) {
            Some(&r) => r,
            None => {
                let r = resolve(&mut reg);
                reg.by_pc.insert(pc, r);
                r
            }
        }
    };
    state::leave_runtime(previous);
    r
}

/// The function holding `pc`, from the program's debug information.
fn function_region(reg: &mut Registry, pc: u64) -> Option<RegionRef> {
    let p = program::program()?;
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
    let site = program::program().and_then(|p| p.call_site(return_pc));
    let (file, line) = match site {
        Some(s) => (s.file, s.line),
        // No line table: the label alone keys the region.
        None => (format!("<marker {label}>"), 0),
    };
    Some(register_locked(reg, &file, line, RegionKind::Marker, label))
}

/// An instrumented function was entered; `pc` is an address inside it.
#[inline]
pub(crate) fn function_entry(pc: u64) {
    if !tracking() || state::in_runtime() {
        state::sync_point();
        return;
    }
    let region = cached(pc, |reg| function_region(reg, pc));
    enter(region, true);
}

/// The innermost instrumented function returns: closes markers it left open, then itself.
#[inline]
pub(crate) fn function_exit() {
    if !tracking() || state::in_runtime() {
        state::sync_point();
        return;
    }
    loop {
        let Some(frame) = pop() else { return };
        leave(frame);
        if frame.function {
            return;
        }
        warn_unbalanced("a function returned with a marker region still open; closed it");
    }
}

/// A marker region begins at the call site `return_pc` (C and Fortran markers); `label` is
/// read only the first time the site is met.
pub(crate) fn marker_begin_at(return_pc: u64, label: impl FnOnce() -> String) {
    if !tracking() || state::in_runtime() {
        return;
    }
    let region = cached(return_pc, |reg| marker_region(reg, return_pc, &label()));
    enter(region, false);
}

/// A marker region begins at a Rust call site (the `region!` macro).
pub(crate) fn marker_begin_site(site: &MarkerSite) {
    if !tracking() || state::in_runtime() {
        return;
    }
    let region = *site.region.get_or_init(|| {
        let previous = state::enter_runtime();
        let r = register(site.file, site.line, RegionKind::Marker, site.label);
        state::leave_runtime(previous);
        r
    });
    enter(Some(region), false);
}

/// The innermost marker region ends; an end with a function's frame on top is ignored (said
/// once), since closing the function early would unbalance its exit.
pub(crate) fn marker_end() {
    if !tracking() || state::in_runtime() {
        return;
    }
    let top = FRAMES
        .try_with(|f| f.try_borrow().ok().and_then(|f| f.last().copied()))
        .ok()
        .flatten();
    match top {
        Some(frame) if !frame.function => {
            pop();
            leave(frame);
        }
        Some(_) => warn_unbalanced(
            "a marker region ended inside a function it did not begin in; the end is ignored",
        ),
        None => warn_unbalanced("a marker region ended that never began; the end is ignored"),
    }
}

fn warn_unbalanced(what: &str) {
    let _ = WARNED_UNBALANCED.try_with(|w| {
        if !w.replace(true) {
            eprintln!("epcache: {what} (said once per thread)");
        }
    });
}

#[inline]
fn enter(region: Option<RegionRef>, function: bool) {
    state::sync_point();
    let m = mcc::get();
    // Halt before looking up requests: what a tool places while the program waits at this
    // entry covers the instance about to run, as a user stepping region by region expects.
    if let (Some(m), Some(e)) = (m, region.and_then(|r| r.entry)) {
        m.boundary(e.region, Boundary::Entry);
    }
    let requested = match (m, region.and_then(|r| r.entry)) {
        (Some(m), Some(e)) => m.has_request(e),
        _ => false,
    };
    let monitored = region.is_some() && (requested || state::standalone());
    let _ = FRAMES.try_with(|f| {
        if let Ok(mut f) = f.try_borrow_mut() {
            f.push(Frame {
                region,
                function,
                monitored,
            });
        }
    });
    if let Some(r) = region {
        if monitored {
            state::monitored_enter(r, requested);
        }
    }
}

#[inline]
fn pop() -> Option<Frame> {
    FRAMES
        .try_with(|f| f.try_borrow_mut().ok().and_then(|mut f| f.pop()))
        .ok()
        .flatten()
}

#[inline]
fn leave(frame: Frame) {
    state::sync_point();
    let Some(r) = frame.region else { return };
    if frame.monitored {
        state::monitored_exit(r);
    }
    if let (Some(m), Some(e)) = (mcc::get(), r.entry) {
        m.boundary(e.region, Boundary::Exit);
    }
}

/// Closes every region still open on this thread (at exit, before the report), so their
/// counts so far are not lost.
pub(crate) fn close_all_open() {
    while let Some(frame) = pop() {
        if frame.monitored
            && let Some(r) = frame.region
        {
            state::monitored_exit(r);
        }
    }
}

/// A Rust marker site: its label and source position, and the region it resolves to once.
#[derive(Debug)]
pub struct MarkerSite {
    label: &'static str,
    file: &'static str,
    line: u32,
    region: OnceLock<RegionRef>,
}

impl MarkerSite {
    /// A site; the `region!` macro makes one static per use.
    pub const fn new(label: &'static str, file: &'static str, line: u32) -> Self {
        MarkerSite {
            label,
            file,
            line,
            region: OnceLock::new(),
        }
    }
}

/// An open marker region; dropping it ends the region.
#[derive(Debug)]
#[must_use = "the region ends when the guard is dropped; bind it: `let _r = region!(..);`"]
pub struct RegionGuard {
    // Not Send: a region begins and ends on one thread.
    _not_send: std::marker::PhantomData<*const ()>,
}

impl RegionGuard {
    /// Begins the marker region of `site`.
    pub fn enter(site: &'static MarkerSite) -> RegionGuard {
        state::init_process();
        marker_begin_site(site);
        RegionGuard {
            _not_send: std::marker::PhantomData,
        }
    }
}

impl Drop for RegionGuard {
    fn drop(&mut self) {
        marker_end();
    }
}

/// Begins a marker region named `label` at this source line; it ends when the returned guard is
/// dropped. Regions nest.
///
/// ```
/// let _r = epcache_monitor::region!("elimination");
/// // ... the code the region measures ...
/// ```
#[macro_export]
macro_rules! region {
    ($label:expr) => {{
        static SITE: $crate::capture::MarkerSite =
            $crate::capture::MarkerSite::new($label, file!(), line!());
        $crate::capture::RegionGuard::enter(&SITE)
    }};
}
