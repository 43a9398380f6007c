//! The calling thread's capture and what happens to it: made at its first simulated access
//! (or monitored region), fed the accesses the hooks pass on, told of monitored region
//! instances, caught up with the process-wide switches at its sync point, and handed on to the
//! totals when the thread ends, is flushed, blocks in a join, or is asked to at exit.
//!
//! A thread simulates only while it captures: while the explicit switch is on or a monitored
//! region instance is open on it (the standalone report monitors every region). So its caches
//! start cold at its first monitored entry and keep their contents between monitored
//! instances, as a hardware counter would see them.
//!
//! The capture is a Rust thread-local; it merges into the totals when dropped, at the thread's
//! end. That alone would lose counts: a thread pool's workers (libgomp keeps OpenMP's idle until
//! the process exits) outlive the report, and a main thread blocked joining its workers cannot
//! hand anything on when one of them writes the report on a signal. So a thread other than the
//! one that started the process hands its counts on whenever its last open monitored region
//! ends (the main thread writes the report itself, and may open and close top-level regions in
//! a tight loop), any thread does before it blocks in `pthread_join`, and a thread still inside
//! a region at exit does at its next sync point (`hand_over.rs`). A thread that ends without
//! its thread-local destructors (the main thread ending by `pthread_exit` while another lives)
//! is reached through a thread-end callback instead ([`thread_ends_without_destructors`]).
//!
//! Every change here runs inside the runtime (a `RuntimeGuard`), so the hooks of code the
//! runtime calls do not recurse into it.

use std::cell::{Cell, RefCell};

use epcache_shm::layout::HaltingThread;
use epcache_sim::cache::AccessKind;
use epcache_sim::monitor::CounterArrayConfig;
use epcache_sim::simulator::{Simulator, SimulatorError};

use super::counting::Core;
use super::hook_block::HookBlock;
use super::monitoring::Monitoring;
use super::region_registry::{RegionRef, tracking_started};
use super::region_stack::Frames;
use super::runtime_guard::{RuntimeGuard, in_runtime, settle};
use super::settings::{process_spec, report_spec_error_once};
use super::switches::{self, forked_child, standalone};
use super::thread_block::{self, with_frames, with_hooks};
use super::thread_capture::ThreadCapture;
use super::{cores, data, descriptors, gate_abi, hand_over, state_memory, tracing, worker};

thread_local! {
    static THREAD: RefCell<Option<ThreadCapture>> = const { RefCell::new(None) };
    /// Monitored region instances open on this thread: while above 0 the thread simulates.
    static MONITORED: Cell<u32> = const { Cell::new(0) };
    /// The data-structure generation the repeat-hit filter's attributions belong to.
    static FILTER_GENERATION: Cell<u64> = const { Cell::new(0) };
    /// Set on the thread that ran the process start-up (the main thread, from the program's
    /// initialisers, unless another thread captured first).
    static STARTED_PROCESS: Cell<bool> = const { Cell::new(false) };
}

/// Marks the calling thread as the one that ran the process start-up.
pub(super) fn mark_started_process() {
    let _ = STARTED_PROCESS.try_with(|s| s.set(true));
}

fn on_main_thread() -> bool {
    STARTED_PROCESS.try_with(Cell::get).unwrap_or(false)
}

/// Simulates an access of a thread known to capture, on its capture (made at its first
/// access). Inlined into the hooks' slow paths: a guard's store in, a store out.
#[inline(always)]
pub(super) fn simulate(addr: u64, size: u32, kind: AccessKind, pc: u64) {
    let _busy = RuntimeGuard::enter_capturing();
    // `try_with` fails only while the thread's destructors run: those accesses are dropped.
    let _ = THREAD.try_with(|slot| {
        if let Ok(mut slot) = slot.try_borrow_mut() {
            match slot.as_mut() {
                Some(capture) => capture.access(addr, size, kind, pc),
                None => first_access(&mut slot, addr, size, kind, pc),
            }
        }
    });
}

/// A write of a thread known to capture that the filter found to hit a clean line it owns in
/// slot `slot` (`Filter::clean_write`), simulated and counted without the rest of the path.
#[inline(always)]
pub(super) fn clean_write(addr: u64, size: u32, slot: usize, pc: u64) {
    let _busy = RuntimeGuard::enter_capturing();
    with_existing_capture(|c| c.clean_write(addr, size, slot, pc));
}

/// A thread's first simulated access: its capture is created, then the access simulated.
#[cold]
fn first_access(slot: &mut Option<ThreadCapture>, addr: u64, size: u32, kind: AccessKind, pc: u64) {
    *slot = new_thread_capture();
    if let Some(capture) = slot.as_mut() {
        if let Some(core) = capture.core() {
            core.refresh_filter();
        }
        capture.access(addr, size, kind, pc);
    }
}

fn new_thread_capture() -> Option<ThreadCapture> {
    let (text, spec) = process_spec().as_ref().ok()?;
    // A core of the machine keeps a hierarchy for its counts only (the machine simulates).
    let seat = cores::assign();
    let shell = seat.as_ref().map(|_| spec.counting_shell());
    let spec = shell.as_ref().unwrap_or(spec);
    let simulator = match Simulator::new(spec, CounterArrayConfig::default()) {
        Ok(simulator) => simulator,
        Err(e) => {
            report_spec_error_once(&simulator_error_text(&e));
            return None;
        }
    };
    worker::thread_started();
    thread_block::call_at_thread_end(thread_ends_without_destructors);
    let monitoring = Monitoring::new(standalone());
    // The thread attributes from these data structures until its next sync point after a
    // change (`ThreadCapture::data_changed`).
    let _ = FILTER_GENERATION.try_with(|g| g.set(monitoring.finder.generation()));
    let finder = monitoring.finder.clone();
    Some(ThreadCapture::new(
        Core::new(
            simulator,
            state_memory::Held::new(spec.state_bytes(), text),
            monitoring,
            seat,
        ),
        finder,
    ))
}

fn simulator_error_text(e: &SimulatorError) -> String {
    format!("epcache: cannot build the simulator: {e}")
}

/// Runs `f` on this thread's capture, creating it first; nothing when it cannot exist.
fn with_capture(f: impl FnOnce(&mut ThreadCapture)) {
    let _ = THREAD.try_with(|slot| {
        let Ok(mut slot) = slot.try_borrow_mut() else {
            return;
        };
        if slot.is_none() {
            *slot = new_thread_capture();
        }
        if let Some(capture) = slot.as_mut() {
            f(capture);
        }
    });
}

/// Runs `f` on this thread's capture if it has one.
fn with_existing_capture(f: impl FnOnce(&mut ThreadCapture)) {
    let _ = THREAD.try_with(|slot| {
        if let Ok(mut slot) = slot.try_borrow_mut()
            && let Some(capture) = slot.as_mut()
        {
            f(capture);
        }
    });
}

/// Whether this thread should capture: the process-wide switch is on or a monitored region is
/// open here. A forked child captures nothing, even inside the regions it inherited open:
/// counting would take locks a vanished parent thread may hold (see [`forked_child`]).
fn captures_now() -> bool {
    (switches::capture_on() || MONITORED.get() > 0) && !forked_child()
}

/// Whether a thread outside the runtime should capture now: [`captures_now`], with a cache it
/// can simulate.
fn should_capture() -> bool {
    captures_now() && process_spec().is_ok()
}

/// The calling thread as a halt names it to tools: the runtime's index of it (when it has
/// captured) and its OpenMP thread number (when the program has OpenMP).
pub(crate) fn halting_thread() -> HaltingThread {
    let mut index = None;
    let _ = THREAD.try_with(|slot| {
        if let Ok(slot) = slot.try_borrow() {
            index = slot.as_ref().map(ThreadCapture::index);
        }
    });
    HaltingThread {
        index,
        openmp: gate_abi::openmp_thread_number(),
    }
}

/// A monitored region instance begins on this thread: requests are bound (or the standalone
/// snapshot taken) and the thread simulates until the last monitored instance ends.
pub(crate) fn monitored_enter(region: RegionRef, requested: bool) {
    let busy = RuntimeGuard::enter();
    with_capture(|c| {
        if let Some(core) = c.core() {
            core.flush_filter(false);
            core.monitoring
                .enter(&mut core.simulator, region, requested);
            if let Some(tracer) = &mut core.tracer {
                tracer.region_entered(region);
            } else {
                tracing::entered_without_recorder(region);
            }
            core.refresh_filter();
        }
        c.hold();
        c.note_openmp_number();
    });
    MONITORED.set(MONITORED.get() + 1);
    switches::monitored_region_opened();
    busy.leave_settled(should_capture());
}

/// A monitored region instance ends on this thread: results are published.
pub(crate) fn monitored_exit(region: RegionRef) {
    let busy = RuntimeGuard::enter();
    with_capture(|c| {
        if let Some(core) = c.core() {
            core.flush_filter(false);
            core.monitoring.exit(&mut core.simulator, region);
            if let Some(tracer) = core.tracer.take() {
                core.tracer = tracer.region_exited(region);
            }
            core.refresh_filter();
        }
    });
    let open = MONITORED.get();
    if open > 0 {
        MONITORED.set(open - 1);
        switches::monitored_region_closed();
    }
    // The main thread is left out: it writes the report itself (at exit, after closing its
    // regions), and a program whose main thread opens and closes top-level regions in a loop
    // (Rust markers) would pay the hand-over at each.
    if open == 1 && !on_main_thread() {
        with_existing_capture(ThreadCapture::publish);
    }
    busy.leave_settled(should_capture());
}

/// Writes the partial trace this thread records, if it records one (at the process's end,
/// whose thread-local destructors may never run).
pub(crate) fn finish_trace_here() {
    let busy = RuntimeGuard::enter();
    with_existing_capture(|c| {
        if let Some(core) = c.core()
            && let Some(tracer) = core.tracer.take()
        {
            tracer.finish();
            core.refresh_filter();
        }
    });
    busy.leave_settled(should_capture());
}

/// Closes every region still open on this thread (at exit, before the report), so their
/// counts so far are not lost.
pub(crate) fn close_all_open() {
    while let Some(frame) = with_frames(Frames::pop) {
        if frame.monitored()
            && let Some(r) = frame.region()
        {
            monitored_exit(r);
        }
    }
}

/// The thread's part of its sync point (`sync.rs`), for a thread outside the runtime: it takes
/// the switches as they are now, hands its counts on if the report waits for them, retries a
/// pending claim of a new heap block by an allocatable, simulates what it captured before a
/// change of data structures under the old ones, and captures or not as the switches say.
pub(super) fn catch_up() {
    with_hooks(HookBlock::sync_to_switches);
    if hand_over::report_due() {
        // The program is ending and the report waits for this thread's counts; the regions
        // it is in stay open (it runs on), checkpointed as at any hand-over.
        let _busy = RuntimeGuard::enter();
        with_existing_capture(|c| {
            if c.holding {
                c.publish();
            }
        });
    }
    if descriptors::claim_due() {
        // Before the generation is looked at: a block taken by an allocatable now is the
        // allocatable's from this thread's next access on.
        let _busy = RuntimeGuard::enter();
        descriptors::retry_claim();
    }
    let generation = data::generation();
    if FILTER_GENERATION.replace(generation) != generation {
        let _busy = RuntimeGuard::enter();
        with_existing_capture(ThreadCapture::data_changed);
    }
    let on = captures_now();
    if on && let Err(why) = process_spec() {
        report_spec_error_once(why);
        settle(false);
        return;
    }
    settle(on);
}

/// Merges the calling thread's simulator into the process totals and starts it afresh, so
/// `totals` includes this thread's accesses so far. Other threads merge when they exit.
pub fn flush_current_thread() {
    let _busy = RuntimeGuard::enter();
    let _ = THREAD.try_with(|slot| {
        if let Ok(mut slot) = slot.try_borrow_mut() {
            // Dropping merges.
            slot.take();
        }
    });
}

/// The calling thread ends without its thread-local destructors: the main thread ending by
/// `pthread_exit` while another thread lives (one of the program's, or the simulation thread,
/// `worker.rs`), where the C library runs only the thread-specific data's destructors
/// (`thread_block::call_at_thread_end`). The regions still open end, as the unwinding
/// `pthread_exit` did ended their functions, and the thread's capture goes away as at any
/// thread's end, handing its counts on. Any other thread has gone through its thread-local
/// destructors already, and nothing is left to do; so has the main thread of a static program,
/// whose Rust thread-locals are destroyed through a key of their own, created before this one.
/// The thread stays inside the runtime from here on: a key destructor of the program that ran
/// later and entered instrumented code would make a new capture that nothing hands on (its
/// writes lost, and the exit handler waiting for it in vain).
pub(super) fn thread_ends_without_destructors() {
    if forked_child() || !tracking_started() {
        return;
    }
    let busy = RuntimeGuard::enter();
    close_all_open();
    flush_current_thread();
    busy.stay();
}

/// The calling thread is about to block in `pthread_join` (`wrap_abi.rs`): in standalone
/// counting it hands its counts on, so that a report another thread writes meanwhile (on a
/// signal, `process_end::end_for_signal`) has them.
pub(crate) fn hand_over_before_blocking() {
    if !standalone() || in_runtime() {
        return;
    }
    let _busy = RuntimeGuard::enter();
    with_existing_capture(ThreadCapture::publish);
}

/// The calling thread returns from `pthread_join` into the regions it is in, and counts again:
/// the exit handler waits for its counts from now on (`hand_over.rs`).
pub(crate) fn hold_after_blocking() {
    if !standalone() || in_runtime() {
        return;
    }
    let _busy = RuntimeGuard::enter();
    with_existing_capture(ThreadCapture::hold);
}
