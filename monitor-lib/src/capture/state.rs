//! Per-thread capture state, the process-wide switches and the run's totals.
//!
//! Every hook first reads one thread-local byte: when the thread does not capture, that load and
//! a branch are all a hook costs. The byte also serves as the re-entrancy guard: while the
//! runtime itself runs on a thread (simulating, allocating, writing the report) it reads `BUSY`,
//! so instrumented code the runtime happens to call never recurses into the simulator.
//!
//! Each thread simulates on its own [`Simulator`], created on its first captured access from the
//! process-wide cache spec, and merged into the process totals when the thread exits. A later
//! step gives each thread its own simulated core of a shared hierarchy; until then the totals are
//! the sum over independent per-thread hierarchies.

use std::cell::{Cell, RefCell};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Mutex, OnceLock};

use crate::cache::{AccessKind, CacheError, HierarchySpec, LevelStats, WritePolicy};
use crate::monitor::CounterArrayConfig;
use crate::ranges::AddressRange;
use crate::shm::layout::DataStructureKind;
use crate::shm::target::Mcc;
use crate::simulator::{Simulator, SimulatorError};

use super::monitoring::{Counts, Monitoring, RegionCounts, merge_structures};
use super::regions::{self, RegionRef};
use super::report::CaptureReport;
use super::{data, mcc, program};

/// The thread has not yet looked at the process-wide switch (every thread starts here).
const NEEDS_SYNC: u8 = 0;
/// Capture is off for this thread: hooks return after one load and a branch.
const OFF: u8 = 1;
/// Capture is on: accesses go to the thread's simulator.
const ON: u8 = 2;
/// The runtime itself is running on this thread: hooks must not re-enter it.
const BUSY: u8 = 3;

/// Environment variable naming the cache to simulate (the `epcache replay --cache` syntax).
pub const CACHE_ENV: &str = "EPCACHE_CACHE";
/// Environment variable naming the JSON report file; setting it switches capture on at start.
pub const REPORT_ENV: &str = "EPCACHE_REPORT";

thread_local! {
    static STATE: Cell<u8> = const { Cell::new(NEEDS_SYNC) };
    static SEEN_EPOCH: Cell<u32> = const { Cell::new(0) };
    static THREAD: RefCell<Option<ThreadCapture>> = const { RefCell::new(None) };
    /// Monitored region instances open on this thread: while above 0 the thread simulates.
    static MONITORED: Cell<u32> = const { Cell::new(0) };
}

/// Standalone mode (`EPCACHE_REPORT`): every region is monitored, every access attributed.
static STANDALONE: AtomicBool = AtomicBool::new(false);
/// Standalone counts of threads that ended (or were flushed).
static STANDALONE_TOTALS: Mutex<StandaloneTotals> = Mutex::new(StandaloneTotals::empty());

static CAPTURE_ON: AtomicBool = AtomicBool::new(false);
/// Reasons any thread may capture now: 1 until the process start-up ran (a thread's first access
/// may be what runs it), 1 while the process-wide switch is on, and 1 per monitored region
/// instance open on any thread. At 0 no thread captures, and an access hook returns after this
/// one load, without touching thread-local state.
static MAY_CAPTURE: AtomicU32 = AtomicU32::new(1);
/// Bumped by every switch so threads notice it at their next sync point; starts above the
/// threads' initial `SEEN_EPOCH` so a thread's first sync point always syncs.
static EPOCH: AtomicU32 = AtomicU32::new(1);
static SPEC: OnceLock<Result<(String, HierarchySpec), String>> = OnceLock::new();
static TOTALS: Mutex<CaptureTotals> = Mutex::new(CaptureTotals::empty());
static PROCESS_INIT: OnceLock<Option<PathBuf>> = OnceLock::new();
static THREAD_COUNTER: AtomicU32 = AtomicU32::new(0);

/// Why capture or its report failed.
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    /// `EPCACHE_CACHE` (or the default) does not describe a usable cache.
    #[error("epcache: cannot simulate the cache `{spec}` (from {CACHE_ENV}): {why}")]
    Spec { spec: String, why: String },
    /// The report could not be written.
    #[error("epcache: cannot write the report {}: {source}", path.display())]
    Report {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// The run's totals per cache level, summed over the threads whose state has been merged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaptureTotals {
    /// Level name and totals, in hierarchy order (the instruction cache first when present).
    pub levels: Vec<(String, LevelStats)>,
    /// How many threads' simulators were merged.
    pub threads: u32,
}

impl CaptureTotals {
    const fn empty() -> Self {
        Self {
            levels: Vec::new(),
            threads: 0,
        }
    }

    fn merge(&mut self, simulator: &Simulator) {
        for (name, stats) in simulator.hierarchy().stats() {
            let slot = match self.levels.iter().position(|(n, _)| n == name) {
                Some(i) => &mut self.levels[i].1,
                None => {
                    self.levels.push((name.to_owned(), LevelStats::default()));
                    &mut self.levels.last_mut().expect("just pushed").1
                }
            };
            slot.reads += stats.reads;
            slot.read_misses += stats.read_misses;
            slot.writes += stats.writes;
            slot.write_misses += stats.write_misses;
            slot.instr_fetches += stats.instr_fetches;
            slot.instr_misses += stats.instr_misses;
            slot.writebacks += stats.writebacks;
            slot.back_invalidations += stats.back_invalidations;
        }
        self.threads += 1;
    }
}

/// Standalone counts summed over threads: per region, and over the whole run per structure.
#[derive(Debug, Clone)]
pub(crate) struct StandaloneTotals {
    pub(crate) regions: Vec<(u32, RegionCounts)>,
    pub(crate) structures: Vec<Counts>,
}

impl StandaloneTotals {
    const fn empty() -> Self {
        Self {
            regions: Vec::new(),
            structures: Vec::new(),
        }
    }

    fn merge(&mut self, monitoring: &Monitoring) {
        for (&id, counts) in &monitoring.regions {
            match self.regions.iter_mut().find(|(r, _)| *r == id) {
                Some((_, acc)) => acc.merge(counts),
                None => self.regions.push((id, counts.clone())),
            }
        }
        merge_structures(&mut self.structures, &monitoring.structures);
    }
}

/// One thread's simulator; its totals join the process totals when the thread ends.
struct ThreadCapture {
    simulator: Simulator,
    monitoring: Monitoring,
    counting: Counting,
    /// Order in which threads started capturing: the simulated core a later step assigns.
    #[allow(dead_code)]
    thread_index: u32,
}

impl Drop for ThreadCapture {
    fn drop(&mut self) {
        merge_into_totals(&self.simulator);
        STANDALONE_TOTALS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .merge(&self.monitoring);
    }
}

fn merge_into_totals(simulator: &Simulator) {
    // A poisoned lock only means another thread panicked mid-merge; its numbers are still sums.
    let mut totals = TOTALS.lock().unwrap_or_else(|e| e.into_inner());
    totals.merge(simulator);
}

/// The cache every thread simulates, resolved once: `EPCACHE_CACHE`, else `host`, else
/// `cachegrind` (which has defaults for a machine without sysfs cache information).
fn process_spec() -> &'static Result<(String, HierarchySpec), String> {
    SPEC.get_or_init(|| match std::env::var(CACHE_ENV) {
        Ok(text) => HierarchySpec::parse(&text)
            .map(|spec| (text.clone(), spec))
            .map_err(|e| {
                CaptureError::Spec {
                    spec: text,
                    why: e.to_string(),
                }
                .to_string()
            }),
        Err(_) => HierarchySpec::parse("host")
            .map(|spec| ("host".to_owned(), spec))
            .or_else(|_: CacheError| {
                HierarchySpec::parse("cachegrind").map(|spec| ("cachegrind".to_owned(), spec))
            })
            .map_err(|e| e.to_string()),
    })
}

/// Reads `EPCACHE_REPORT` once per process; when set, switches capture on for every thread and
/// has the report written at exit. Called from the first sync point of any thread, and from
/// `__tsan_init`, so it runs before `main` in TSan-instrumented programs.
///
/// It also creates the MCC's segment (unless `EPCACHE_MCC=off`), registers the program's
/// functions and globals as regions and data structures, and waits for a tool when
/// `EPCACHE_WAIT` asks.
pub(crate) fn init_process() {
    if PROCESS_INIT.get().is_some() {
        return;
    }
    let previous = STATE.replace(BUSY);
    PROCESS_INIT.get_or_init(|| {
        let report = std::env::var_os(REPORT_ENV).map(PathBuf::from);
        let spec_text = match process_spec() {
            Ok((text, _)) => text.clone(),
            Err(why) => why.clone(),
        };
        let counters = CounterArrayConfig::default().counters as u32;
        let segment = mcc::create(&spec_text, counters);
        // Dual-compiled functions run their instrumented copies while a tool arms anything.
        if let Some(hint) = segment.and_then(Mcc::capture_hint) {
            super::gate_abi::follow(hint);
        }
        if report.is_some() {
            STANDALONE.store(true, Ordering::Release);
            // Not `enable_all`: its sync would re-enter this initialisation.
            set_switch(true);
        }
        if segment.is_some() || report.is_some() {
            regions::register_functions();
            register_globals();
            regions::start_tracking();
        }
        super::tsan_abi::register_at_exit(at_exit);
        if let Some(m) = segment {
            m.setup_done();
            m.wait_for_tool_if_asked();
        }
        report
    });
    STATE.set(previous);
    if !START_UP_COUNTED.swap(true, Ordering::Relaxed) {
        MAY_CAPTURE.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Whether start-up's reason in [`MAY_CAPTURE`] was taken back.
static START_UP_COUNTED: AtomicBool = AtomicBool::new(false);

fn register_globals() {
    let Some(p) = program::program() else { return };
    for g in p.info.globals.iter().filter(|g| g.size > 0) {
        data::register(
            &g.qualified_name,
            AddressRange::new(g.address.wrapping_add(p.bias), g.size),
            DataStructureKind::Global,
        );
    }
}

extern "C" fn at_exit() {
    let previous = STATE.replace(BUSY);
    if let Some(Some(path)) = PROCESS_INIT.get()
        && let Err(e) = write_report(path)
    {
        eprintln!("{e}");
    }
    if let Some(m) = mcc::get() {
        m.finish();
    }
    STATE.set(previous);
}

/// Whether the process start-up ran and regions are tracked (heap blocks are named only then;
/// allocations before it, from the C library's own start-up, are not the program's).
pub(crate) fn tracking_started() -> bool {
    PROCESS_INIT.get().is_some() && regions::tracking()
}

/// Whether the standalone report is being made (every region monitored).
#[inline]
pub(crate) fn standalone() -> bool {
    STANDALONE.load(Ordering::Relaxed)
}

/// Whether the runtime itself is running on this thread (hooks must return).
#[inline]
pub(crate) fn in_runtime() -> bool {
    STATE.try_with(Cell::get).map_or(true, |s| s == BUSY)
}

/// Marks this thread as running the runtime; returns the state to restore.
pub(crate) fn enter_runtime() -> u8 {
    STATE.try_with(|s| s.replace(BUSY)).unwrap_or(BUSY)
}

/// Restores the state [`enter_runtime`] returned.
pub(crate) fn leave_runtime(previous: u8) {
    let _ = STATE.try_with(|s| s.set(previous));
}

/// A monitored region instance begins on this thread: requests are bound (or the standalone
/// snapshot taken) and the thread simulates until the last monitored instance ends.
pub(crate) fn monitored_enter(region: RegionRef, requested: bool) {
    STATE.set(BUSY);
    with_capture(|c| c.monitoring.enter(&mut c.simulator, region, requested));
    MONITORED.set(MONITORED.get() + 1);
    MAY_CAPTURE.fetch_add(1, Ordering::Relaxed);
    restore_state();
}

/// A monitored region instance ends on this thread: results are published.
pub(crate) fn monitored_exit(region: RegionRef) {
    STATE.set(BUSY);
    with_capture(|c| c.monitoring.exit(&mut c.simulator, region));
    let open = MONITORED.get();
    if open > 0 {
        MONITORED.set(open - 1);
        MAY_CAPTURE.fetch_sub(1, Ordering::Relaxed);
    }
    restore_state();
}

/// The state a thread outside the runtime should be in now.
fn restore_state() {
    let on = CAPTURE_ON.load(Ordering::Relaxed) || MONITORED.get() > 0;
    STATE.set(if on && process_spec().is_ok() {
        ON
    } else {
        OFF
    });
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

/// Switches capture on in every thread: the calling thread at once, the others at their next
/// access (the sync point: while anything may capture, every access checks the switch epoch).
pub fn enable_all() {
    switch_all(true);
}

/// Switches capture off in every thread, with the same timing as [`enable_all`].
pub fn disable_all() {
    switch_all(false);
}

fn switch_all(on: bool) {
    set_switch(on);
    sync();
}

fn set_switch(on: bool) {
    if CAPTURE_ON.swap(on, Ordering::Relaxed) != on {
        if on {
            MAY_CAPTURE.fetch_add(1, Ordering::Relaxed);
            super::gate_abi::hold_open();
        } else {
            MAY_CAPTURE.fetch_sub(1, Ordering::Relaxed);
            super::gate_abi::release();
        }
    }
    // Release pairs with the Acquire in `sync`: a thread that sees the new epoch sees the switch.
    EPOCH.fetch_add(1, Ordering::Release);
}

/// Makes this thread follow the process-wide switch; leaves a thread inside the runtime alone.
/// `extern "C"` so that callers on the hot path need no unwind landing pad (see `may_capture`).
#[inline(never)]
extern "C" fn sync() {
    let state = STATE.get();
    if state == BUSY {
        return;
    }
    if state == NEEDS_SYNC {
        init_process();
    }
    SEEN_EPOCH.set(EPOCH.load(Ordering::Acquire));
    let on = CAPTURE_ON.load(Ordering::Relaxed) || MONITORED.get() > 0;
    if on && let Err(why) = process_spec() {
        report_spec_error_once(why);
        STATE.set(OFF);
        return;
    }
    STATE.set(if on { ON } else { OFF });
}

fn report_spec_error_once(why: &str) {
    static SAID: AtomicBool = AtomicBool::new(false);
    if !SAID.swap(true, Ordering::Relaxed) {
        eprintln!("{why}; nothing is captured");
    }
}

/// A cheap point where a thread picks up a process-wide switch made by another thread: one
/// thread-local load and one relaxed global load when nothing changed. Every access runs it
/// while some thread may capture; region boundaries do not need it on their fast path.
#[inline(always)]
pub(super) fn sync_point() {
    if SEEN_EPOCH.get() != EPOCH.load(Ordering::Relaxed) {
        sync();
    }
}

/// A captured load of `size` bytes at `addr` by this thread.
#[inline(always)]
pub fn read(addr: u64, size: u32) {
    access(addr, size, AccessKind::Read);
}

/// A captured store of `size` bytes at `addr` by this thread.
#[inline(always)]
pub fn write(addr: u64, size: u32) {
    access(addr, size, AccessKind::Write);
}

/// A thread whose own state is stale (it switched on, another thread switched off) stops
/// capturing here at once rather than at its next sync point; that only honours the switch
/// sooner.
#[inline(always)]
fn access(addr: u64, size: u32, kind: AccessKind) {
    if MAY_CAPTURE.load(Ordering::Relaxed) != 0 {
        may_capture(addr, size, kind == AccessKind::Write);
    }
}

/// `extern "C"` only so that it cannot unwind: the `extern "C"` hooks then need no unwind
/// landing pad around the call and jump to it as a tail call, with no frame of their own.
#[inline(never)]
extern "C" fn may_capture(addr: u64, size: u32, write: bool) {
    // The switch-epoch check lives here rather than at region boundaries: only while some
    // thread may capture can a thread have a switch to pick up.
    sync_point();
    let state = STATE.get();
    if state != OFF {
        let kind = if write {
            AccessKind::Write
        } else {
            AccessKind::Read
        };
        not_off(state, addr, size, kind);
    }
}

#[inline(always)]
fn not_off(state: u8, addr: u64, size: u32, kind: AccessKind) {
    match state {
        ON => simulate(addr, size, kind),
        NEEDS_SYNC => {
            sync();
            if STATE.get() == ON {
                simulate(addr, size, kind);
            }
        }
        _ => {}
    }
}

#[inline(always)]
fn simulate(addr: u64, size: u32, kind: AccessKind) {
    STATE.set(BUSY);
    // `try_with` fails only while the thread's destructors run: those accesses are dropped.
    let _ = THREAD.try_with(|slot| {
        if let Ok(mut slot) = slot.try_borrow_mut() {
            match slot.as_mut() {
                Some(capture) => capture.access(addr, size, kind),
                None => first_access(&mut slot, addr, size, kind),
            }
        }
    });
    STATE.set(ON);
}

impl ThreadCapture {
    /// Kept out of line, so the thread-local access around it stays small enough to inline.
    #[inline(never)]
    fn access(&mut self, addr: u64, size: u32, kind: AccessKind) {
        if self.monitoring.counting {
            self.counting
                .access(&mut self.simulator, &mut self.monitoring, addr, size, kind);
        } else {
            self.simulator.access(addr, size, kind);
        }
    }
}

/// How a thread in standalone mode counts its accesses, fixed by the hierarchy.
#[derive(Debug, Clone, Copy)]
struct Counting {
    /// The hierarchy's depth, for counting without asking it per access.
    levels: usize,
    /// L1's line size less one (only used when a power of two).
    l1_mask: u64,
    /// Whether an access's outcome may be read off the hierarchy's demand counters: every
    /// data level is write-back, so an L1 hit changes no deeper level, and a one-line access
    /// reaches each level at most once, recorded in its demand counters exactly as in its
    /// `AccessOutcome` (writebacks count apart).
    outcome_from_stats: bool,
}

impl Counting {
    fn new(spec: &HierarchySpec, simulator: &Simulator) -> Self {
        let line = u64::from(simulator.hierarchy().line_size(0));
        Counting {
            levels: simulator.hierarchy().depth(),
            l1_mask: line.wrapping_sub(1),
            outcome_from_stats: line.is_power_of_two()
                && spec
                    .data
                    .iter()
                    .all(|level| level.write == WritePolicy::WriteBack),
        }
    }

    /// Simulates an access and counts it per level and data structure.
    #[inline(always)]
    fn access(
        self,
        simulator: &mut Simulator,
        monitoring: &mut Monitoring,
        addr: u64,
        size: u32,
        kind: AccessKind,
    ) {
        if self.outcome_from_stats && (addr & self.l1_mask) + u64::from(size) <= self.l1_mask + 1 {
            // One line: the simulator's own fast path, the outcome read off its counters.
            let l1_misses = |s: &Simulator| {
                let l1 = s.hierarchy().level_stats(0);
                l1.read_misses + l1.write_misses
            };
            let before = l1_misses(simulator);
            simulator.access(addr, size, kind);
            if l1_misses(simulator) == before {
                monitoring.count_l1_hit(addr, kind);
            } else {
                monitoring.count_from_stats(addr, kind, simulator.hierarchy(), self.levels);
            }
        } else {
            let levels = self.levels;
            simulator.access_observed(addr, size, kind, |a, o| monitoring.count(a, o, levels));
            if self.outcome_from_stats {
                monitoring.sync_stats(simulator.hierarchy(), levels);
            }
        }
    }
}

/// A thread's first simulated access: its capture is created, then the access simulated.
#[cold]
fn first_access(slot: &mut Option<ThreadCapture>, addr: u64, size: u32, kind: AccessKind) {
    *slot = new_thread_capture();
    if let Some(capture) = slot.as_mut() {
        capture.access(addr, size, kind);
    }
}

fn new_thread_capture() -> Option<ThreadCapture> {
    let (_, spec) = process_spec().as_ref().ok()?;
    let simulator = match Simulator::new(spec, CounterArrayConfig::default()) {
        Ok(simulator) => simulator,
        Err(e) => {
            report_spec_error_once(&simulator_error_text(&e));
            return None;
        }
    };
    Some(ThreadCapture {
        counting: Counting::new(spec, &simulator),
        simulator,
        monitoring: Monitoring::new(standalone()),
        thread_index: THREAD_COUNTER.fetch_add(1, Ordering::Relaxed),
    })
}

fn simulator_error_text(e: &SimulatorError) -> String {
    format!("epcache: cannot build the simulator: {e}")
}

/// Merges the calling thread's simulator into the process totals and starts it afresh, so
/// [`totals`] includes this thread's accesses so far. Other threads merge when they exit.
pub fn flush_current_thread() {
    let previous = STATE.get();
    STATE.set(BUSY);
    let _ = THREAD.try_with(|slot| {
        if let Ok(mut slot) = slot.try_borrow_mut() {
            // Dropping merges.
            slot.take();
        }
    });
    STATE.set(previous);
}

/// The totals of every thread merged so far (exited threads and flushed ones).
pub fn totals() -> CaptureTotals {
    TOTALS.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

/// The report of the run so far: the calling thread's open regions are closed and it is
/// flushed first.
pub fn report_from_totals() -> CaptureReport {
    regions::close_all_open();
    flush_current_thread();
    let cache = match process_spec() {
        Ok((text, _)) => text.clone(),
        Err(why) => why.clone(),
    };
    let spec = process_spec().as_ref().ok().map(|(_, spec)| spec.clone());
    let standalone = STANDALONE_TOTALS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    CaptureReport::new(
        cache,
        spec,
        &totals(),
        &standalone,
        &regions::all(),
        &data::all(),
    )
}

/// Writes the run's report as JSON to `path` (what `EPCACHE_REPORT` does at exit).
pub fn write_report(path: &Path) -> Result<(), CaptureError> {
    let previous = STATE.get();
    STATE.set(BUSY);
    let report = report_from_totals();
    let result = std::fs::write(path, report.to_json()).map_err(|source| CaptureError::Report {
        path: path.to_owned(),
        source,
    });
    STATE.set(previous);
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Standalone counting from the demand counters must count exactly what counting every
    /// access's outcome counts, for every shape of hierarchy (the write-through one takes the
    /// outcome path throughout).
    #[test]
    fn counting_from_the_counters_equals_counting_outcomes() {
        // Two structures over part of the stream's range, so attribution is compared too.
        for (name, start) in [("counting_a", 0x40_0000), ("counting_b", 0x40_3000)] {
            data::register(
                name,
                AddressRange::new(start, 8 << 10),
                DataStructureKind::HeapRegistered,
            );
        }
        for spec in [
            "D1=1K,2,64;LL=8K,4,64",
            "D1=512,1,32;L2=2K,2,64;L3=16K,4,64",
            "D1=2K,4,64;LL=4K,2,64,inclusive",
            "D1=1K,2,64,write-through;LL=8K,4,64",
        ] {
            let Ok(spec) = HierarchySpec::parse(spec) else {
                panic!("spec {spec}");
            };
            let new_sim = || Simulator::new(&spec, CounterArrayConfig::default()).unwrap();
            let (mut fast_sim, mut slow_sim) = (new_sim(), new_sim());
            let counting = Counting::new(&spec, &fast_sim);
            let (mut fast, mut slow) = (Monitoring::new(true), Monitoring::new(true));
            let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
            for _ in 0..50_000 {
                // xorshift: addresses over 24 KiB, small and line-straddling sizes, some wide.
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let addr = 0x40_0000 + x % (24 << 10);
                let size = match x >> 60 {
                    0 => 96 + (x >> 20) as u32 % 64,
                    1..=3 => 1 + (x >> 24) as u32 % 16,
                    _ => 8,
                };
                let kind = if x >> 59 & 1 == 1 {
                    AccessKind::Write
                } else {
                    AccessKind::Read
                };
                counting.access(&mut fast_sim, &mut fast, addr, size, kind);
                let levels = counting.levels;
                slow_sim.access_observed(addr, size, kind, |a, o| slow.count(a, o, levels));
            }
            assert_eq!(fast.totals, slow.totals, "{spec:?}");
            assert_eq!(fast.structures, slow.structures, "{spec:?}");
            assert!(fast.structures.iter().filter(|c| c[0] > 0).count() >= 2);
            let stats = |s: &Simulator| s.hierarchy().stats().map(|(_, l)| *l).collect::<Vec<_>>();
            assert_eq!(stats(&fast_sim), stats(&slow_sim));
            assert!(
                slow.totals[1] > 0 && slow.totals[5] > 0,
                "misses at two levels"
            );
        }
    }

    // The process-wide switch and totals are shared by every test in this binary, so one test
    // exercises them, on its own threads, and checks only what its threads added.
    #[test]
    fn threads_capture_only_while_enabled_and_merge_at_exit() {
        let before = totals();
        std::thread::spawn(|| {
            enable_all();
            for a in (0..64u64).step_by(4) {
                read(0x10_0000 + a, 4);
            }
            write(0x10_0000, 4);
            disable_all();
            read(0x10_0000, 4); // not captured
        })
        .join()
        .unwrap();
        let after = totals();
        assert_eq!(after.threads, before.threads + 1);
        let l1 = &after.levels.iter().find(|(n, _)| n != "I1").unwrap().1;
        let l1_before = before
            .levels
            .iter()
            .find(|(n, _)| n != "I1")
            .map_or(0, |(_, s)| s.reads);
        assert_eq!(l1.reads - l1_before, 16);
    }
}
