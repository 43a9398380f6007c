//! Regions inside the target: the process's region registry (functions from DWARF, markers as
//! they are first met), each thread's stack of open regions, and the entry and exit hooks that
//! check the configuration table and the halting point at every boundary.
//!
//! The hot path is the paper's "one hash probe": a region's configuration entry is resolved once
//! per code address and cached per thread, so an unmonitored boundary costs a small cache probe,
//! a push or pop, the request-flag load and the halting-point load.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};

use crate::shm::config_table::ConfigEntry;
use crate::shm::layout::{Boundary, RegionIndex, RegionKind};
use crate::shm::target::{HaltOutcome, Mcc};

use super::mcc;
use super::program::{self, file_id};
use super::state;
use super::thread_block;

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
pub(crate) fn register_functions(objects: &[&program::ProgramInfo]) {
    let mut reg = registry();
    for p in objects {
        for f in &p.info.functions {
            let file = p.file_name(f.file);
            if is_rust_source(&file) {
                continue;
            }
            register_locked(&mut reg, &file, f.line, RegionKind::Function, &f.name);
        }
    }
}

fn is_rust_source(file: &str) -> bool {
    file.ends_with(".rs")
}

/// Every region registered so far, by id.
pub(crate) fn all() -> Vec<RegionMeta> {
    registry().regions.clone()
}

/// One open region on a thread, in 16 bytes so the fast path moves it in two words. A
/// function entered while nothing was armed is pushed with its code address only (not
/// `RESOLVED`): its region is looked up at its exit, and only if something is armed by then.
/// A resolved frame holds its region's id and configuration entry instead.
#[derive(Debug, Clone, Copy)]
#[repr(C)]
struct Frame {
    /// The code address (unresolved), else the configuration entry (region << 32 | slot).
    word: u64,
    id: u32,
    flags: u32,
}

const RESOLVED: u32 = 1;
const FUNCTION: u32 = 2;
const MONITORED: u32 = 4;
const HAS_REGION: u32 = 8;
const HAS_ENTRY: u32 = 16;

impl Frame {
    /// What `pop` answers for a frame it lost (only while a thread's destructors run).
    const EMPTY: Frame = Frame {
        word: 0,
        id: 0,
        flags: FUNCTION | RESOLVED,
    };

    /// A marker begun while the runtime ran on the thread: kept for balance, never resolved.
    const UNRESOLVED_MARKER: Frame = Frame {
        word: 0,
        id: 0,
        flags: 0,
    };

    #[inline(always)]
    fn unresolved_function(pc: u64) -> Frame {
        Frame {
            word: pc,
            id: 0,
            flags: FUNCTION,
        }
    }

    fn resolved(region: Option<RegionRef>, function: bool, monitored: bool) -> Frame {
        let mut flags = RESOLVED;
        if function {
            flags |= FUNCTION;
        }
        if monitored {
            flags |= MONITORED;
        }
        let (mut word, mut id) = (0, 0);
        if let Some(r) = region {
            flags |= HAS_REGION;
            id = r.id;
            if let Some(e) = r.entry {
                flags |= HAS_ENTRY;
                word = u64::from(e.region.0) << 32 | u64::from(e.slot);
            }
        }
        Frame { word, id, flags }
    }

    #[inline(always)]
    fn function(self) -> bool {
        self.flags & FUNCTION != 0
    }

    #[inline(always)]
    fn monitored(self) -> bool {
        self.flags & MONITORED != 0
    }

    /// Whether its exit needs more than a pop when nothing is armed: a monitored instance, or a
    /// marker a function left open.
    #[inline(always)]
    fn plain_function(self) -> bool {
        self.flags & (FUNCTION | MONITORED) == FUNCTION
    }

    fn is_resolved(self) -> bool {
        self.flags & RESOLVED != 0
    }

    fn pc(self) -> u64 {
        self.word
    }

    fn region(self) -> Option<RegionRef> {
        if self.flags & HAS_REGION == 0 {
            return None;
        }
        let entry = (self.flags & HAS_ENTRY != 0).then_some(ConfigEntry {
            region: RegionIndex((self.word >> 32) as u32),
            slot: self.word as u32,
        });
        Some(RegionRef { id: self.id, entry })
    }
}

const PC_CACHE: usize = 256;
const _: () = assert!(PC_CACHE.is_power_of_two());
/// Open regions kept in the thread-local array; deeper ones go to a vector.
const SHALLOW_FRAMES: usize = 64;

/// The stack pointer of a frame pushed without one (Rust markers, frames pushed while the
/// runtime runs on the thread, other architectures): such a frame is never taken for one a
/// `longjmp` left behind.
const NO_STACK: u64 = u64::MAX;
/// The stack pointer a boundary passes when it does not know its own: it closes nothing.
pub(crate) const UNKNOWN_STACK: u64 = 0;

/// A thread's open regions: the first [`SHALLOW_FRAMES`] in a plain array, so a push or pop on
/// the fast path is a few loads and stores with no borrow flag, no destructor registration and
/// no allocation.
pub(super) struct Frames {
    pub(super) depth: Cell<usize>,
    shallow: [Cell<Frame>; SHALLOW_FRAMES],
    /// Beside each shallow frame, the stack pointer of the call that opened it: the caller's
    /// `rsp` at its call to the entry hook or the marker begin (see [`close_abandoned`]).
    stack: [Cell<u64>; SHALLOW_FRAMES],
}

/// What every region boundary reads, in the thread's block of `thread_block.rs`: the open
/// regions and a direct-mapped cache of code address → region in front of the registry's lock.
/// Empty is all zero bytes, as the block starts.
pub(super) struct ThreadRegions {
    pub(super) frames: Frames,
    /// Each slot holds the region as a marker's frame would (`Frame::resolved`, not a
    /// function), so a quiet marker begin pushes the slot's frame as it finds it. An empty slot
    /// reads as code address 0 with no region, which is what the registry answers for 0.
    pc_cache: [Cell<(u64, Frame)>; PC_CACHE],
}

impl ThreadRegions {
    /// No open region, nothing cached.
    pub(super) const fn empty() -> ThreadRegions {
        ThreadRegions {
            frames: Frames {
                depth: Cell::new(0),
                // Slots at or above the depth are never read; zero like the rest.
                shallow: [const { Cell::new(Frame::UNRESOLVED_MARKER) }; SHALLOW_FRAMES],
                stack: [const { Cell::new(0) }; SHALLOW_FRAMES],
            },
            pc_cache: [const { Cell::new((0, Frame::UNRESOLVED_MARKER)) }; PC_CACHE],
        }
    }

    /// Whether this is what [`Self::empty`] makes.
    #[cfg(test)]
    pub(super) fn is_empty(&self) -> bool {
        self.frames.depth.get() == 0
            && self
                .pc_cache
                .iter()
                .all(|slot| slot.get().0 == 0 && slot.get().1.flags == 0)
    }
}

/// Calls `f` with this thread's open regions.
#[inline(always)]
fn with_frames<R>(f: impl FnOnce(&Frames) -> R) -> R {
    thread_block::with(|b| f(&b.regions.frames))
}

/// Calls `f` with this thread's code address cache.
#[inline(always)]
fn with_pc_cache<R>(f: impl FnOnce(&[Cell<(u64, Frame)>; PC_CACHE]) -> R) -> R {
    thread_block::with(|b| f(&b.regions.pc_cache))
}

thread_local! {
    /// Frames past the shallow ones, each with its stack pointer.
    static DEEP_FRAMES: RefCell<Vec<(Frame, u64)>> = const { RefCell::new(Vec::new()) };
    static WARNED_UNBALANCED: Cell<bool> = const { Cell::new(false) };
}

/// What the runtime last found about the tool's wishes: the tool sequence it looked at (zero
/// extended) when nothing was armed; that sequence with [`ARMED`] set when a request or a
/// halting point was there; [`UNKNOWN`] before the first look and after a halt. A boundary
/// compares this word with the segment's sequence: equal means nothing is armed, and the
/// boundary only keeps the thread's stack of open regions.
static ARMED_AT: AtomicU64 = AtomicU64::new(UNKNOWN);
const ARMED: u64 = 1 << 33;
const UNKNOWN: u64 = u64::MAX;

/// Whether nothing is armed: no request waits or is served, no halting point or step is set,
/// and the standalone report is off. One load of the segment's tool sequence and one of
/// [`ARMED_AT`]; a tool that changes anything bumps the sequence, so the next boundary of
/// every thread takes the slow path and [`armed`] looks again. Until region tracking started
/// the word read is a stand-in and `ARMED_AT` is [`UNKNOWN`], which no 32-bit sequence
/// equals (every boundary slow), so a quiet boundary implies tracking. (A child of `fork`
/// compares the stand-in with zero: tracking, and nothing can be armed.)
#[inline(always)]
fn quiet() -> bool {
    let seq = super::gate_abi::tool_sequence().load(Ordering::Relaxed);
    ARMED_AT.load(Ordering::Relaxed) == u64::from(seq)
}

/// Whether anything is armed, looking at the request slots and the halting point only when the
/// tool sequence moved since the last look.
#[inline(never)]
fn armed() -> bool {
    if state::standalone() {
        return true;
    }
    // No segment of this process's own (switched off, or the parent's after a fork): no tool
    // can arm anything here, and the standalone report was looked at above.
    let (Some(m), Some(seq)) = (mcc::get(), super::gate_abi::published_tool_sequence()) else {
        return false;
    };
    // Acquire: whatever the tool changed before this bump is seen by the look below. A change
    // after it bumps the sequence again, so a look that missed it is never taken as current.
    let now = u64::from(seq.load(Ordering::Acquire));
    let known = ARMED_AT.load(Ordering::Relaxed);
    if known != UNKNOWN && known & !ARMED == now {
        return known & ARMED != 0;
    }
    let armed = m.anything_armed();
    ARMED_AT.store(if armed { now | ARMED } else { now }, Ordering::Relaxed);
    armed
}

/// In a child of `fork`, which has left the segment to its parent and makes no report: nothing
/// can be armed any more, and the stand-in sequence word (zero) says so to quiet boundaries.
pub(crate) fn nothing_armed_from_now() {
    ARMED_AT.store(0, Ordering::Relaxed);
}

/// The target halted at a boundary (which disarmed the halting point it matched): look again at
/// the next one, rather than keep the slow path until the tool changes something.
fn look_again() {
    ARMED_AT.store(UNKNOWN, Ordering::Relaxed);
}

/// The region of code address `pc`, from this thread's cache, else from the registry, else
/// made by `resolve` (under the registry's lock, with the thread marked as in the runtime).
#[inline]
fn cached(pc: u64, resolve: impl FnOnce(&mut Registry) -> Option<RegionRef>) -> Option<RegionRef> {
    if let Some(frame) = cached_frame(pc) {
        return frame.region();
    }
    let region = resolve_pc(pc, resolve);
    let slot = pc_cache_slot(pc);
    with_pc_cache(|cache| cache[slot].set((pc, Frame::resolved(region, false, false))));
    region
}

/// The marker frame of code address `pc`'s region, if this thread's cache knows it.
#[inline(always)]
fn cached_frame(pc: u64) -> Option<Frame> {
    let (seen, frame) = with_pc_cache(|cache| cache[pc_cache_slot(pc)].get());
    (seen == pc).then_some(frame)
}

#[inline(always)]
fn pc_cache_slot(pc: u64) -> usize {
    // Fibonacci hashing: the top byte of the product mixes every bit of the address, in a
    // multiply and a shift.
    (pc.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - PC_CACHE.trailing_zeros())) as usize
}

#[cold]
fn resolve_pc(
    pc: u64,
    resolve: impl FnOnce(&mut Registry) -> Option<RegionRef>,
) -> Option<RegionRef> {
    // A forked child is not monitored, and its copy of the lock may be held by a thread that
    // did not survive the fork (see `state::forked_child`): its new code addresses stay
    // unresolved.
    if state::forked_child() {
        return None;
    }
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

/// An instrumented function was entered; `pc` is an address inside it. With nothing armed
/// only the address is pushed: the function regions were registered at start from DWARF, so
/// tools already know them, and a request attached later binds at the next entry, which looks.
/// (Nothing is quiet before tracking starts; see [`quiet`].) `sp` is the function's stack
/// pointer at its call to the hook: any open frame at or below it was left by a `longjmp`.
#[inline(always)]
pub(crate) fn function_entry(pc: u64, sp: u64) {
    let pushed = quiet() && push_shallow(Frame::unresolved_function(pc), sp, sp.saturating_add(1));
    // No switch-epoch check here: a thread picks up `enable_all` at its next access.
    if !pushed {
        function_entry_slow(pc, sp);
    }
}

/// `extern "C"` (as every slow path the hooks call) only so that it cannot unwind: the hook then
/// needs no landing pad and no frame of its own around the call.
#[inline(never)]
extern "C" fn function_entry_slow(pc: u64, sp: u64) {
    if tracking() {
        if !state::in_runtime() {
            // A live caller's frame always lies above the callee's stack pointer.
            close_abandoned(sp.saturating_add(1));
        }
        if state::in_runtime() || quiet() {
            // In the runtime: kept balanced with the exit, which pops whatever it finds. Quiet:
            // the frame goes below the shallow ones.
            push(Frame::unresolved_function(pc), sp);
        } else {
            let region = cached(pc, |reg| function_region(reg, pc));
            enter(region, true, sp);
        }
    }
}

/// The innermost instrumented function returns: closes markers it left open, then itself.
/// Only a plain function frame with nothing armed is popped here; a monitored frame always
/// takes the slow path, so its results are published even when the tool withdrew everything
/// meanwhile. `sp` is the stack pointer above the hook's return address: the function's own
/// when `called_directly` says the hook was called rather than tail-jumped to, and then frames
/// below it were left by a `longjmp` and are closed first. `called_directly` is asked only when
/// the innermost frame lies below `sp`, which a direct call's own frame never does.
#[inline(always)]
pub(crate) fn function_exit(sp: u64, called_directly: impl Fn() -> bool) {
    let popped = with_frames(|f| {
        let depth = f.depth.get();
        if depth == 0 || depth > SHALLOW_FRAMES {
            return false;
        }
        let top = depth - 1;
        if !f.shallow[top].get().plain_function()
            || (f.stack[top].get() < sp && called_directly())
            || !quiet()
        {
            return false;
        }
        f.depth.set(top);
        true
    });
    if !popped {
        function_exit_slow(if called_directly() { sp } else { UNKNOWN_STACK });
    }
}

#[inline(never)]
extern "C" fn function_exit_slow(sp: u64) {
    if tracking() && !state::in_runtime() {
        sync_before_leaving();
        close_abandoned(sp);
    }
    if tracking()
        && let Some(mut frame) = pop()
        && !state::in_runtime()
    {
        loop {
            leave(frame);
            if frame.function() {
                break;
            }
            warn_unbalanced(
                0,
                "a function returned with a marker region still open; closed it",
            );
            let Some(next) = pop() else { break };
            frame = next;
        }
    }
}

/// The whole of a marker begin at the call site `return_pc` while nothing is armed and the
/// site was met before on this thread: its cached frame is pushed. Returns `false`, having
/// changed nothing, when any of that does not hold; [`marker_begin_at`] then does the rest.
/// Quiet implies tracking. Unlike the general path this does not ask whether the thread is in
/// the runtime (a signal handler's marker, say): it takes no lock, and the frame it pushes is
/// popped by the matching end whatever the state, so the stack stays balanced.
#[inline(always)]
pub(crate) fn marker_begin_quiet(return_pc: u64, sp: u64) -> bool {
    if !quiet() {
        return false;
    }
    cached_frame(return_pc).is_some_and(|frame| push_shallow(frame, sp, sp))
}

/// Pushes `frame`, opened at stack pointer `sp`, if the thread's fixed array has room and the
/// innermost open frame's stack pointer is not below `live_from` (the quiet paths); `false`,
/// having changed nothing, otherwise: the slow path then closes what a `longjmp` left.
#[inline(always)]
fn push_shallow(frame: Frame, sp: u64, live_from: u64) -> bool {
    with_frames(|f| {
        let depth = f.depth.get();
        if let Some(top) = depth.checked_sub(1)
            && f.stack.get(top).is_none_or(|s| s.get() < live_from)
        {
            return false;
        }
        let (Some(slot), Some(stack)) = (f.shallow.get(depth), f.stack.get(depth)) else {
            return false;
        };
        slot.set(frame);
        stack.set(sp);
        f.depth.set(depth + 1);
        true
    })
}

/// A marker region begins at the call site `return_pc` (C and Fortran markers); `label` is
/// read only the first time the site is met. The site is resolved even with nothing armed, so
/// tools see a marker region from its first use. `sp` is the caller's stack pointer at the
/// call ([`UNKNOWN_STACK`] when unknown).
pub(crate) fn marker_begin_at(return_pc: u64, sp: u64, label: impl FnOnce() -> String) {
    if !tracking() {
        return;
    }
    if state::in_runtime() {
        return push(Frame::UNRESOLVED_MARKER, NO_STACK);
    }
    close_abandoned(sp);
    let region = cached(return_pc, |reg| marker_region(reg, return_pc, &label()));
    // A begin that does not know its stack pointer opens a frame nothing closes early.
    let opened_at = if sp == UNKNOWN_STACK { NO_STACK } else { sp };
    marker_enter(region, opened_at);
}

/// A marker region begins at a Rust call site (the `region!` macro).
pub(crate) fn marker_begin_site(site: &MarkerSite) {
    if !tracking() {
        return;
    }
    if state::in_runtime() {
        return push(Frame::UNRESOLVED_MARKER, NO_STACK);
    }
    let region = *site.region.get_or_init(|| {
        let previous = state::enter_runtime();
        let r = register(site.file, site.line, RegionKind::Marker, site.label);
        state::leave_runtime(previous);
        r
    });
    // A Rust guard's stack pointer would be the runtime's own frame, not its caller's.
    marker_enter(Some(region), NO_STACK);
}

#[inline]
fn marker_enter(region: Option<RegionRef>, sp: u64) {
    if quiet() {
        push(Frame::resolved(region, false, false), sp);
    } else {
        enter(region, false, sp);
    }
}

/// The innermost marker region ends; an end with a function's frame on top is ignored (said
/// once, naming the end by its call's return address `return_pc`, 0 when unknown), since
/// closing the function early would unbalance its exit. With nothing armed and a plain marker
/// frame on top this is a pop. `sp` is the caller's stack pointer at the call
/// ([`UNKNOWN_STACK`] when unknown): frames below it were left by a `longjmp` and are closed
/// first.
#[inline(always)]
pub(crate) fn marker_end(return_pc: u64, sp: u64) {
    let popped = with_frames(|f| {
        let depth = f.depth.get();
        if depth == 0 || depth > SHALLOW_FRAMES {
            return false;
        }
        let top = depth - 1;
        if f.shallow[top].get().flags & (FUNCTION | MONITORED) != 0
            || f.stack[top].get() < sp
            || !quiet()
        {
            return false;
        }
        f.depth.set(top);
        true
    });
    if !popped && !state::never_tracking() {
        marker_end_slow(return_pc, sp);
    }
}

#[inline(never)]
extern "C" fn marker_end_slow(return_pc: u64, sp: u64) {
    if !tracking() {
        return;
    }
    if !state::in_runtime() {
        sync_before_leaving();
        close_abandoned(sp);
    }
    match top() {
        Some(frame) if !frame.function() => {
            pop();
            if !state::in_runtime() {
                leave(frame);
            }
        }
        Some(_) => warn_unbalanced(
            return_pc,
            "a marker region ended inside a function it did not begin in; the end is ignored",
        ),
        None => warn_unbalanced(
            return_pc,
            "a marker region ended that never began; the end is ignored",
        ),
    }
}

/// Says `what` once per thread, with the source line and function of the marker call whose
/// return address is `return_pc` when the line table knows them (0: none), so the user can
/// find the stray `EPCACHE_REGION_END`.
#[cold]
fn warn_unbalanced(return_pc: u64, what: &str) {
    let first = WARNED_UNBALANCED
        .try_with(|w| !w.replace(true))
        .unwrap_or(false);
    if !first {
        return;
    }
    let previous = state::enter_runtime();
    let program = program::object_at(return_pc.wrapping_sub(1)).filter(|_| return_pc != 0);
    let site = program.and_then(|p| p.call_site(return_pc));
    let function = program.and_then(|p| p.function_at(return_pc - 1));
    let at = match (site, function) {
        (Some(site), Some((name, _))) => format!("at {}:{} in {name}; ", site.file, site.line),
        (Some(site), None) => format!("at {}:{}; ", site.file, site.line),
        _ => String::new(),
    };
    eprintln!("epcache: {what} ({at}said once per thread)");
    state::leave_runtime(previous);
}

/// A region entry with something armed: requests are looked up, the region may become
/// monitored, and the halting point is checked; `sp` is the stack pointer the frame is opened
/// at.
fn enter(region: Option<RegionRef>, function: bool, sp: u64) {
    state::sync_point();
    let m = mcc::get();
    // Halt before looking up requests: what a tool places while the program waits at this
    // entry covers the instance about to run, as a user stepping region by region expects.
    if armed()
        && let (Some(m), Some(e)) = (m, region.and_then(|r| r.entry))
    {
        halting_point(m, e, Boundary::Entry);
    }
    // Looked at after the halt, which made the runtime look again at what is armed.
    let requested = armed()
        && match (m, region.and_then(|r| r.entry)) {
            (Some(m), Some(e)) => m.has_request(e),
            _ => false,
        };
    let monitored = region.is_some() && (requested || state::standalone());
    push(Frame::resolved(region, function, monitored), sp);
    if let Some(r) = region
        && monitored
    {
        state::monitored_enter(r, requested);
    }
}

fn halting_point(m: &Mcc, e: ConfigEntry, boundary: Boundary) {
    if m.boundary(e.region, boundary) != HaltOutcome::NotHalted {
        look_again();
    }
}

#[inline(always)]
fn push(frame: Frame, sp: u64) {
    with_frames(|f| {
        let depth = f.depth.get();
        match (f.shallow.get(depth), f.stack.get(depth)) {
            (Some(slot), Some(stack)) => {
                slot.set(frame);
                stack.set(sp);
            }
            _ => push_deep(frame, sp),
        }
        f.depth.set(depth + 1);
    });
}

#[cold]
#[inline(never)]
fn push_deep(frame: Frame, sp: u64) {
    // Fails only while the thread's destructors run; `pop_deep` then answers a plain frame.
    let _ = DEEP_FRAMES.try_with(|f| {
        if let Ok(mut f) = f.try_borrow_mut() {
            f.push((frame, sp));
        }
    });
}

#[inline(always)]
fn pop() -> Option<Frame> {
    pop_with_stack().map(|(frame, _)| frame)
}

/// [`pop`], with the frame's stack pointer.
#[inline(always)]
fn pop_with_stack() -> Option<(Frame, u64)> {
    with_frames(|f| {
        let depth = f.depth.get().checked_sub(1)?;
        f.depth.set(depth);
        Some(match (f.shallow.get(depth), f.stack.get(depth)) {
            (Some(slot), Some(stack)) => (slot.get(), stack.get()),
            _ => pop_deep(),
        })
    })
}

#[cold]
#[inline(never)]
fn pop_deep() -> (Frame, u64) {
    DEEP_FRAMES
        .try_with(|f| f.try_borrow_mut().ok().and_then(|mut f| f.pop()))
        .ok()
        .flatten()
        .unwrap_or((Frame::EMPTY, NO_STACK))
}

/// The innermost open region, left open.
fn top() -> Option<Frame> {
    let (frame, sp) = pop_with_stack()?;
    push(frame, sp);
    Some(frame)
}

/// The stack pointer the innermost open region was opened at.
fn top_stack() -> Option<u64> {
    let (frame, sp) = pop_with_stack()?;
    push(frame, sp);
    Some(sp)
}

/// Closes, as at a return, the open regions a non-local exit (`longjmp`, `siglongjmp`) left
/// behind: every innermost frame opened at a stack pointer below `live_from`. The exit hooks of
/// the functions a `longjmp` leaves never run; TSan's own runtime keeps each shadow frame's
/// stack pointer for the same reason. The stack grows down, so a live frame's caller always
/// lies at a higher stack pointer: a function's entry at `sp` finds every live frame above
/// `sp` and a dead one at or below it (a call from the same frame reuses the address), and an
/// exit or a marker in a frame at `sp` finds the frames of its callees below it. What the left
/// functions counted after the jump, until this boundary, stays in their counts (the jump
/// returns into code that has not yet reached a boundary).
#[cold]
#[inline(never)]
fn close_abandoned(live_from: u64) {
    while top_stack().is_some_and(|sp| sp < live_from) {
        let Some(frame) = pop() else { break };
        leave(frame);
    }
}

/// The sync point of a region exit, taken before any frame is popped: a held termination
/// signal ends the thread there (`state::end_for_signal`), closing every open region, and a
/// frame already popped but not yet left would be missing from them while its counts' snapshot
/// was still open, so the outer regions closed the wrong snapshots (found in CI: a debug
/// assertion aborted `runtime_signals.rs`'s worker-signal test).
fn sync_before_leaving() {
    state::sync_point();
}

/// A region exit off the fast path: a monitored instance publishes its results, and with
/// something armed the halting point is checked (a function pushed unresolved is resolved now).
/// The caller took the exit's sync point before popping `frame` ([`sync_before_leaving`]).
fn leave(frame: Frame) {
    let armed = armed();
    let region = if frame.is_resolved() {
        frame.region()
    } else if armed && frame.function() {
        let pc = frame.pc();
        cached(pc, |reg| function_region(reg, pc))
    } else {
        None
    };
    let Some(r) = region else { return };
    if frame.monitored() {
        state::monitored_exit(r);
    }
    if armed && let (Some(m), Some(e)) = (mcc::get(), r.entry) {
        halting_point(m, e, Boundary::Exit);
    }
}

/// Closes every region still open on this thread (at exit, before the report), so their
/// counts so far are not lost.
pub(crate) fn close_all_open() {
    while let Some(frame) = pop() {
        if frame.monitored()
            && let Some(r) = frame.region()
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
        // A guard ends what it began unless guards were dropped out of order; no call site.
        marker_end(0, UNKNOWN_STACK);
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
