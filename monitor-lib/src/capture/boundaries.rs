//! The region boundary hooks: function entry and exit (`tsan_abi.rs`), marker begin and end
//! (`c_abi.rs`, and Rust's [`region!`](crate::region) through [`RegionGuard`]), each checking
//! the configuration table and the halting point, and keeping the thread's stack of open
//! regions.
//!
//! The hot path is the paper's "one hash probe": a region's configuration entry is resolved once
//! per code address and cached per thread (`region_stack.rs`), so an unmonitored boundary with
//! nothing armed (`mcc::quiet`: three loads and a compare) is a cache probe and a push or pop,
//! with no lock and no thread-local state but the thread's block. A monitored frame always takes
//! the slow path at its exit, so its results are published even when the tool withdrew
//! everything meanwhile. A function frame pushed while quiet holds only its code address and
//! is resolved at its exit only if something is armed by then.
//!
//! A boundary met inside the runtime (a hook of code the runtime calls) still pushes and pops,
//! so the stack stays balanced, but resolves nothing and takes no lock.
//!
//! The stack pointer of the call that opened each frame tells what a `longjmp` left behind: the
//! stack grows down, so a live frame's caller always lies at a higher stack pointer, and a
//! boundary at `sp` closes, as at a return, the innermost frames opened below it
//! ([`close_abandoned`]), as TSan's own runtime does with its shadow frames.

use std::cell::Cell;
use std::sync::OnceLock;

use epcache_shm::config_table::ConfigEntry;
use epcache_shm::layout::{Boundary, RegionKind};
use epcache_shm::target::{HaltOutcome, Mcc};

use super::program;
use super::region_registry::{self, RegionRef};
use super::region_stack::{Frame, Frames, NO_STACK, SHALLOW_FRAMES, UNKNOWN_STACK};
use super::runtime_guard::{RuntimeGuard, in_runtime};
use super::thread_block::{with_frames, with_regions};
use super::{mcc, start_up, switches, sync, this_thread};

thread_local! {
    static WARNED_UNBALANCED: Cell<bool> = const { Cell::new(false) };
}

/// The region of code address `pc`, from this thread's cache, else from the registry, else
/// made by `resolve` (under the registry's lock, with the thread marked as in the runtime).
#[inline]
fn cached(pc: u64, resolve: impl FnOnce() -> Option<RegionRef>) -> Option<RegionRef> {
    if let Some(frame) = with_regions(|r| r.cached_frame(pc)) {
        return frame.region();
    }
    let region = resolve_pc(resolve);
    with_regions(|r| r.remember(pc, region));
    region
}

#[cold]
fn resolve_pc(resolve: impl FnOnce() -> Option<RegionRef>) -> Option<RegionRef> {
    // A forked child is not monitored, and its copy of the lock may be held by a thread that
    // did not survive the fork (see `switches::forked_child`): its new code addresses stay
    // unresolved.
    if switches::forked_child() {
        return None;
    }
    let _in_runtime = RuntimeGuard::enter();
    resolve()
}

/// Pushes `frame`, opened at stack pointer `sp`.
#[inline(always)]
fn push(frame: Frame, sp: u64) {
    with_frames(|f| f.push(frame, sp));
}

/// An instrumented function was entered; `pc` is an address inside it. With nothing armed
/// only the address is pushed: the function regions were registered at start from DWARF, so
/// tools already know them, and a request attached later binds at the next entry, which looks.
/// (Nothing is quiet before tracking starts; see [`mcc::quiet`].) `sp` is the function's stack
/// pointer at its call to the hook: any open frame at or below it was left by a `longjmp`.
#[inline(always)]
pub(crate) fn function_entry(pc: u64, sp: u64) {
    let pushed = mcc::quiet()
        && with_frames(|f| {
            f.push_shallow(Frame::unresolved_function(pc), sp, sp.saturating_add(1))
        });
    // No switch-epoch check here: a thread picks up `enable_all` at its next access.
    if !pushed {
        function_entry_slow(pc, sp);
    }
}

/// `extern "C"` (as every slow path the hooks call) only so that it cannot unwind: the hook then
/// needs no landing pad and no frame of its own around the call.
#[inline(never)]
extern "C" fn function_entry_slow(pc: u64, sp: u64) {
    if region_registry::tracking() {
        if !in_runtime() {
            // A live caller's frame always lies above the callee's stack pointer.
            close_abandoned(sp.saturating_add(1));
        }
        if in_runtime() || mcc::quiet() {
            // In the runtime: kept balanced with the exit, which pops whatever it finds. Quiet:
            // the frame goes below the shallow ones.
            push(Frame::unresolved_function(pc), sp);
        } else {
            let region = cached(pc, || region_registry::function_at(pc));
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
            || !mcc::quiet()
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
    if region_registry::tracking() && !in_runtime() {
        sync_before_leaving();
        close_abandoned(sp);
    }
    if region_registry::tracking()
        && let Some(mut frame) = with_frames(Frames::pop)
        && !in_runtime()
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
            let Some(next) = with_frames(Frames::pop) else {
                break;
            };
            frame = next;
        }
        stop_while_halted();
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
    if !mcc::quiet() {
        return false;
    }
    with_regions(|r| {
        r.cached_frame(return_pc)
            .is_some_and(|frame| r.frames.push_shallow(frame, sp, sp))
    })
}

/// A marker region begins at the call site `return_pc` (C and Fortran markers); `label` is
/// read only the first time the site is met. The site is resolved even with nothing armed, so
/// tools see a marker region from its first use. `sp` is the caller's stack pointer at the
/// call ([`UNKNOWN_STACK`] when unknown).
pub(crate) fn marker_begin_at(return_pc: u64, sp: u64, label: impl FnOnce() -> String) {
    if !region_registry::tracking() {
        return;
    }
    if in_runtime() {
        return push(Frame::UNRESOLVED_MARKER, NO_STACK);
    }
    close_abandoned(sp);
    let region = cached(return_pc, || region_registry::marker_at(return_pc, label));
    // A begin that does not know its stack pointer opens a frame nothing closes early.
    let opened_at = if sp == UNKNOWN_STACK { NO_STACK } else { sp };
    marker_enter(region, opened_at);
}

/// A marker region begins at a Rust call site (the `region!` macro).
pub(crate) fn marker_begin_site(site: &MarkerSite) {
    if !region_registry::tracking() {
        return;
    }
    if in_runtime() {
        return push(Frame::UNRESOLVED_MARKER, NO_STACK);
    }
    let region = *site.region.get_or_init(|| {
        let _in_runtime = RuntimeGuard::enter();
        region_registry::register(site.file, site.line, RegionKind::Marker, site.label)
    });
    // A Rust guard's stack pointer would be the runtime's own frame, not its caller's.
    marker_enter(Some(region), NO_STACK);
}

#[inline]
fn marker_enter(region: Option<RegionRef>, sp: u64) {
    if mcc::quiet() {
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
        if !f.shallow[top].get().plain_marker() || f.stack[top].get() < sp || !mcc::quiet() {
            return false;
        }
        f.depth.set(top);
        true
    });
    if !popped && !region_registry::never_tracking() {
        marker_end_slow(return_pc, sp);
    }
}

#[inline(never)]
extern "C" fn marker_end_slow(return_pc: u64, sp: u64) {
    if !region_registry::tracking() {
        return;
    }
    if !in_runtime() {
        sync_before_leaving();
        close_abandoned(sp);
    }
    match with_frames(Frames::top) {
        Some(frame) if !frame.function() => {
            with_frames(Frames::pop);
            if !in_runtime() {
                leave(frame);
                stop_while_halted();
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
    let _in_runtime = RuntimeGuard::enter();
    let program = program::object_at(return_pc.wrapping_sub(1)).filter(|_| return_pc != 0);
    let site = program.and_then(|p| p.call_site(return_pc));
    let function = program.and_then(|p| p.function_at(return_pc - 1));
    let at = match (site, function) {
        (Some(site), Some((name, _))) => format!("at {}:{} in {name}; ", site.file, site.line),
        (Some(site), None) => format!("at {}:{}; ", site.file, site.line),
        _ => String::new(),
    };
    eprintln!("epcache: {what} ({at}said once per thread)");
}

/// A region entry with something armed: requests are looked up, the region may become
/// monitored, and the halting point is checked; `sp` is the stack pointer the frame is opened
/// at.
fn enter(region: Option<RegionRef>, function: bool, sp: u64) {
    sync::sync_point();
    // A held termination signal ended this thread's counting at that sync point
    // (`process_end::end_for_signal`): the frame only keeps the stack balanced.
    if in_runtime() {
        push(Frame::resolved(region, function, false), sp);
        return;
    }
    stop_while_halted();
    let m = mcc::get();
    // Halt before looking up requests: what a tool places while the program waits at this
    // entry covers the instance about to run, as a user stepping region by region expects.
    if mcc::armed()
        && let (Some(m), Some(e)) = (m, region.and_then(|r| r.entry))
    {
        halting_point(m, e, Boundary::Entry);
    }
    // Looked at after the halt, which made the runtime look again at what is armed.
    let requested = mcc::armed()
        && match (m, region.and_then(|r| r.entry)) {
            (Some(m), Some(e)) => m.has_request(e),
            _ => false,
        };
    let counting = switches::standalone() || switches::trace_asked();
    let parents = match region {
        Some(r) if function => parents_to_open(r, m, counting),
        _ => Vec::new(),
    };
    let monitored = region.is_some() && (requested || counting || !parents.is_empty());
    for (i, &(parent, parent_requested)) in parents.iter().enumerate() {
        let frame = Frame::resolved(Some(parent), false, true);
        push(if i > 0 { frame.opening_parent() } else { frame }, sp);
        this_thread::monitored_enter(parent, parent_requested);
    }
    let frame = Frame::resolved(region, function, monitored);
    push(
        if parents.is_empty() {
            frame
        } else {
            frame.opening_parent()
        },
        sp,
    );
    if let Some(r) = region
        && monitored
    {
        this_thread::monitored_enter(r, requested);
    }
}

/// The parallel parents to open, outermost first, with whether each is requested, when
/// `region` is an OpenMP construct's outlined body entered on a thread where the function it
/// belongs to is not open: a worker of the team. Its part of the construct is then counted in
/// that function too, as the thread that called the function counts its own part: a request
/// on `sweep` counts the whole team's work in `sweep`'s parallel loop, not the caller's share,
/// and so do the standalone report's inclusive counts. Each thread's part is an instance, as
/// it is of the outlined body's own region. Only where something counts them (a request on a
/// parent, the standalone report, a trace); the halting points are not looked at, since no
/// thread entered the function there.
fn parents_to_open(region: RegionRef, m: Option<&Mcc>, counting: bool) -> Vec<(RegionRef, bool)> {
    // Most regions are no OpenMP body: told by one load, before any guard or lock.
    if !region_registry::may_be_outlined(region.id) {
        return Vec::new();
    }
    let mut parents = Vec::new();
    let mut child = region;
    // Under the registry's lock, as a resolution: marked as in the runtime, never in a forked
    // child (see `resolve_pc`).
    let parent_of = |id| resolve_pc(|| region_registry::parallel_parent(id));
    while let Some(parent) = parent_of(child.id) {
        if with_frames(|f| f.holds(parent.id)) || parents.len() >= MAX_PARALLEL_NESTING {
            break;
        }
        let requested = mcc::armed()
            && match (m, parent.entry) {
                (Some(m), Some(e)) => m.has_request(e),
                _ => false,
            };
        parents.push((parent, requested));
        child = parent;
    }
    if !counting && !parents.iter().any(|&(_, requested)| requested) {
        return Vec::new();
    }
    parents.reverse();
    parents
}

/// Parallel constructs nested deeper than this in one function are not followed further out.
const MAX_PARALLEL_NESTING: usize = 8;

/// Halts here if the tool's halting point matches this boundary. The halt is the process's:
/// before it is announced every other thread's boundaries leave the fast path
/// ([`mcc::hold_slow_paths`]) and the publications under way end (`switches::begin_halt`);
/// while it lasts the others stop at their next boundary ([`stop_while_halted`]) and publish
/// nothing, so what a tool reads at the halt is complete and stays as it was.
fn halting_point(m: &Mcc, e: ConfigEntry, boundary: Boundary) {
    let mut halting = false;
    let outcome = m.boundary_then(e.region, boundary, || {
        switches::begin_halt();
        mcc::hold_slow_paths();
        halting = true;
        this_thread::halting_thread()
    });
    if halting || outcome != HaltOutcome::NotHalted {
        // Before the halt ends: no other thread's halt can begin and be overwritten.
        mcc::look_again();
    }
    if halting {
        switches::end_halt();
    }
}

/// Where a thread stops while another is halted at a halting point: at its region boundaries
/// (an entry before anything is looked up, an exit after its results were published), never
/// in an access hook. A boundary is a point between two regions' instances, so the thread's
/// position is a region and a boundary, as the halted thread's is; an access may come in the
/// middle of the program's own critical section, and a thread captures accesses only while
/// something is monitored. A thread that reaches no boundary (a long loop in a function that
/// calls nothing instrumented) runs on, but publishes nothing until the halt ends.
#[inline]
fn stop_while_halted() {
    if switches::halted() {
        switches::wait_while_halted();
    }
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
    while with_frames(Frames::top_stack).is_some_and(|sp| sp < live_from) {
        let Some(frame) = with_frames(Frames::pop) else {
            break;
        };
        leave(frame);
    }
}

/// The sync point of a region exit, taken before any frame is popped: a held termination
/// signal ends the thread there (`process_end::end_for_signal`), closing every open region,
/// and a frame already popped but not yet left would be missing from them while its counts'
/// snapshot was still open, so the outer regions would close the wrong snapshots (a debug
/// assertion in `runtime_signals.rs`'s worker-signal test watches for it).
fn sync_before_leaving() {
    sync::sync_point();
}

/// A region exit off the fast path: a monitored instance publishes its results, and with
/// something armed the halting point is checked (a function pushed unresolved is resolved now).
/// The caller took the exit's sync point before popping `frame` ([`sync_before_leaving`]).
fn leave(frame: Frame) {
    let armed = mcc::armed();
    let region = if frame.is_resolved() {
        frame.region()
    } else if armed && frame.function() {
        let pc = frame.pc();
        cached(pc, || region_registry::function_at(pc))
    } else {
        None
    };
    let Some(r) = region else { return };
    if frame.monitored() {
        this_thread::monitored_exit(r);
    }
    // The parallel parents its entry opened close with it, before its halting point: a tool
    // halted there reads the thread's part of them too.
    let mut opener = frame;
    while opener.opened_parent() {
        let Some(parent) = with_frames(Frames::pop) else {
            break;
        };
        if let Some(p) = parent.region()
            && parent.monitored()
        {
            this_thread::monitored_exit(p);
        }
        opener = parent;
    }
    // Another thread's halt under way: wait for its end here, then look at the halting point
    // as the tool left it, which may be this very exit again (a step to the next exit of a
    // parallel loop's body, which every thread of the team leaves).
    stop_while_halted();
    if mcc::armed()
        && let (Some(m), Some(e)) = (mcc::get(), r.entry)
    {
        halting_point(m, e, Boundary::Exit);
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
        start_up::init_process();
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
