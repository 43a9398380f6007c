//! Per-thread capture state, the process-wide switches and the run's totals.
//!
//! Every hook first reads one thread-local byte: when the thread does not capture, that load and
//! a branch are all a hook costs. The byte also serves as the re-entrancy guard: while the
//! runtime itself runs on a thread (simulating, allocating, writing the report) it reads `BUSY`,
//! so instrumented code the runtime happens to call never recurses into the simulator; while the
//! program's own call into the C library's allocator runs it reads `ALLOCATING`, so a signal
//! handler interrupting it (holding the allocator's lock) does not reach into the runtime.
//!
//! Each thread simulates on its own [`Simulator`], created on its first captured access from the
//! process-wide cache spec, and merged into the process totals when the thread exits. A later
//! step gives each thread its own simulated core of a shared hierarchy; until then the totals are
//! the sum over independent per-thread hierarchies.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex, OnceLock};

use crate::cache::{AccessKind, CacheError, HierarchySpec, LevelStats};
use crate::monitor::CounterArrayConfig;
use crate::ranges::AddressRange;
use crate::shm::layout::{
    DataStructureDetails, DataStructureKind, Dimension, MAX_SHAPE_RANK, Shape,
};
use crate::shm::target::Mcc;
use crate::simulator::{CaptureFastPath, Simulator, SimulatorError};
use crate::symbols::ArrayShape;

use super::filter::{self, BatchWords, Filter, Record, RecordCells, RecordWords};
use super::monitoring::{Counts, Monitoring, RegionCounts, merge_structures};
use super::regions::{self, RegionRef};
use super::report::CaptureReport;
use super::structure_finder::StructureFinder;
use super::{crash_abi, data, descriptors, hand_over, mcc, program, signal_abi, tag_key, worker};

/// The thread has not yet looked at the process-wide switch (every thread starts here).
const NEEDS_SYNC: u8 = 0;
/// Capture is off for this thread: hooks return after one load and a branch.
const OFF: u8 = 1;
/// Capture is on: accesses go to the thread's simulator.
const ON: u8 = 2;
/// The runtime itself is running on this thread: hooks must not re-enter it.
const BUSY: u8 = 3;
/// The program's own call into the C library's allocator is running (`alloc_abi.rs`): as
/// [`BUSY`] for the hooks and for a signal handler's `_exit` (the allocator may hold its lock,
/// which the runtime's bookkeeping and report need), but a crash in it (glibc's abort on a
/// corrupted heap) is the program's, and writes the report under the crash watchdog.
const ALLOCATING: u8 = 4;

/// Environment variable naming the cache to simulate (the `epcache replay --cache` syntax).
pub const CACHE_ENV: &str = "EPCACHE_CACHE";
/// Environment variable naming the JSON report file (`%p` stands for the process id); setting
/// it switches capture on at start.
pub const REPORT_ENV: &str = "EPCACHE_REPORT";

/// What the access hooks read, in one block at the front of the thread's local-exec block
/// (`thread_block.rs`), so a hook reaches all of it from the thread pointer with no register
/// saved. Empty is zero bytes, as every thread's block starts.
pub(super) struct Hot {
    /// The thread's state byte: [`NEEDS_SYNC`], [`OFF`], [`ON`], [`BUSY`] or [`ALLOCATING`].
    state: Cell<u8>,
    /// The switch epoch this thread last synced to.
    seen_epoch: Cell<u32>,
    /// `seen_epoch` while the state is [`ON`], else 0, kept so by every write of either: one
    /// comparison with [`EPOCH`] (odd, so never 0) then tells that the thread captures and has
    /// no switch to pick up, which is what a repeat hit needs.
    capturing_epoch: Cell<u32>,
    /// The tag word (`tag_key.rs`) this thread last synced to.
    seen_word: Cell<u64>,
    /// `seen_word` while the state is [`ON`], else 0 (no tag word is 0: its key never is),
    /// kept so with `capturing_epoch`: what the inline miss path compares with the tag word.
    synced_word: Cell<u64>,
    /// The standalone mode's repeat-hit filter.
    filter: Filter,
}

impl Hot {
    /// Offsets the inline repeat-hit test reads (`epcache_inline::layout::ThreadWord`).
    pub(super) const SYNCED_WORD_OFFSET: usize = std::mem::offset_of!(Hot, synced_word);
    pub(super) const FILTER_OFFSET: usize = std::mem::offset_of!(Hot, filter);

    /// A thread that has not yet looked at the process-wide switch.
    pub(super) const fn new() -> Hot {
        Hot {
            state: Cell::new(NEEDS_SYNC),
            seen_epoch: Cell::new(0),
            capturing_epoch: Cell::new(0),
            seen_word: Cell::new(0),
            synced_word: Cell::new(0),
            filter: Filter::new(),
        }
    }

    /// Whether this is what [`Self::new`] makes.
    #[cfg(test)]
    pub(super) fn is_empty(&self) -> bool {
        self.state.get() == NEEDS_SYNC
            && self.seen_epoch.get() == 0
            && self.capturing_epoch.get() == 0
            && self.seen_word.get() == 0
            && self.synced_word.get() == 0
            && self.filter.is_empty()
    }

    /// Keeps `capturing_epoch` and `synced_word` what they stand for after a write of the
    /// state, the epoch or the word.
    #[inline(always)]
    fn update_capturing_epoch(&self) {
        let on = self.state.get() == ON;
        let (epoch, word) = if on {
            (self.seen_epoch.get(), self.seen_word.get())
        } else {
            (0, 0)
        };
        self.capturing_epoch.set(epoch);
        self.synced_word.set(word);
    }

    /// Whether the thread captures and has no switch to pick up: neither the epoch nor the
    /// tag word changed since it synced (the word only, where the inline miss path checks,
    /// while the filter's slot holds its key, which cannot come back meanwhile; the epoch
    /// never comes back).
    #[inline(always)]
    fn synced_on(&self) -> bool {
        self.capturing_epoch.get() == EPOCH.load(Ordering::Relaxed)
            && self.synced_word.get() == TAG_WORD.load(Ordering::Relaxed)
    }

    /// Whether the thread has a switch to pick up.
    #[inline(always)]
    fn stale(&self) -> bool {
        self.seen_epoch.get() != EPOCH.load(Ordering::Relaxed)
            || self.seen_word.get() != TAG_WORD.load(Ordering::Relaxed)
    }
}

/// Calls `f` with this thread's hook block.
#[inline(always)]
fn with_hot<R>(f: impl FnOnce(&Hot) -> R) -> R {
    super::thread_block::with(|b| f(&b.hot))
}

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

/// The thread's state byte (the thread-local block outlives every use: it has no destructor).
#[inline(always)]
fn state() -> u8 {
    with_hot(|h| h.state.get())
}

#[inline(always)]
fn set_state(state: u8) {
    with_hot(|h| {
        h.state.set(state);
        h.update_capturing_epoch();
    });
}

fn replace_state(state: u8) -> u8 {
    with_hot(|h| {
        let previous = h.state.replace(state);
        h.update_capturing_epoch();
        previous
    })
}

/// The thread's repeat-hit filter.
fn with_filter<R>(f: impl FnOnce(&Filter) -> R) -> R {
    with_hot(|h| f(&h.filter))
}

/// Switches the thread's filter on, keyed with the tag word the thread synced to, and says
/// whether it is on. If the word or the epoch changed since the sync, a rekey may have picked
/// the key before the filter's slot held it: the thread is then sent to sync again before its
/// next access (`tag_key.rs`).
fn switch_filter_on(line_bits: u32, sets: u64) -> impl FnOnce(&Hot) -> bool {
    move |h| {
        let word = h.seen_word.get();
        if !h.filter.switch_on(line_bits, sets, word) {
            return false;
        }
        if TAG_WORD.load(Ordering::SeqCst) != word
            || EPOCH.load(Ordering::SeqCst) != h.seen_epoch.get()
        {
            h.seen_word.set(0);
            h.update_capturing_epoch();
        }
        true
    }
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
/// The switch epoch: bumped by 2 at every switch so threads notice it at their next sync point.
/// It starts at 1, above the threads' initial seen epoch, so a thread's first sync point always
/// syncs, and stays odd, so no thread's `capturing_epoch` of 0 ever equals it. Every bump also
/// gives the tag word a new key (`tag_key.rs`), which is how the inline test notices.
static EPOCH: AtomicU32 = AtomicU32::new(1);
use super::tag_key::TAG_WORD;

/// Sends every thread to its sync point before its next access: the epoch first, then the
/// tag word's key, so a thread that read the new key reads the new epoch too. Atomics only,
/// so a signal handler may call it.
fn bump_epoch() {
    EPOCH.fetch_add(2, Ordering::SeqCst);
    tag_key::rekey();
}
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

    /// Adds a thread's simulator's totals, and the L1 read and write hits counted without it;
    /// `new_thread` when this thread's totals were never merged before.
    fn merge(&mut self, simulator: &Simulator, repeat_hits: [u64; 2], new_thread: bool) {
        let l1 = simulator.hierarchy().level_stats(0);
        for (name, stats) in simulator.hierarchy().stats() {
            let slot = match self.levels.iter().position(|(n, _)| n == name) {
                Some(i) => &mut self.levels[i].1,
                None => {
                    self.levels.push((name.to_owned(), LevelStats::default()));
                    &mut self.levels.last_mut().expect("just pushed").1
                }
            };
            // The repeat hits belong to the first data level, wherever it is listed.
            let repeat = if std::ptr::eq(stats, l1) {
                repeat_hits
            } else {
                [0; 2]
            };
            slot.reads += stats.reads + repeat[0];
            slot.read_misses += stats.read_misses;
            slot.writes += stats.writes + repeat[1];
            slot.write_misses += stats.write_misses;
            slot.instr_fetches += stats.instr_fetches;
            slot.instr_misses += stats.instr_misses;
            slot.writebacks += stats.writebacks;
            slot.back_invalidations += stats.back_invalidations;
        }
        self.threads += u32::from(new_thread);
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

    fn merge(&mut self, regions: &HashMap<u32, RegionCounts>, structures: &[Counts]) {
        for (&id, counts) in regions {
            match self.regions.iter_mut().find(|(r, _)| *r == id) {
                Some((_, acc)) => acc.merge(counts),
                None => self.regions.push((id, counts.clone())),
            }
        }
        merge_structures(&mut self.structures, structures);
    }
}

/// One thread's simulator; its totals join the process totals when the thread ends.
struct ThreadCapture {
    /// The simulator and what counts its outcomes: here, or `None` while it is in `shared`
    /// for the simulation worker (`worker.rs`), to be taken back (`Self::core`) before
    /// anything else uses it.
    core: Option<Box<Core>>,
    /// Where the core is while the worker simulates for this thread: the jobs lock it one at
    /// a time; the thread takes it back only once none is left. Made at the first hand-off.
    shared: Option<Arc<Mutex<Option<Box<Core>>>>>,
    /// Batches handed to the worker and not yet back.
    in_flight: usize,
    /// The channel the worker sends each batch back on once simulated, which also tells that
    /// the batch is done; made at the first hand-off.
    spares: Option<(Sender<BatchWords>, Receiver<BatchWords>)>,
    /// Whether this thread counts for the standalone report (its monitoring's `counting`).
    counts: bool,
    /// Whether this thread hands its batches to the worker: standalone counting in a process
    /// where the worker is enabled.
    ships: bool,
    /// Batches the worker simulated, for the filter to fill next.
    free: Vec<BatchWords>,
    /// Finds whole lines for the filter while the core is away (the core's monitoring has its
    /// own finder).
    finder: StructureFinder,
    /// log2 of L1's line size.
    line_bits: u32,
    /// Order in which threads started capturing: the simulated core a later step assigns.
    #[allow(dead_code)]
    thread_index: u32,
    /// Whether the process totals already count this thread (it published before).
    published: bool,
    /// Whether it holds standalone counts the totals lack, as `hand_over.rs` tracks.
    holding: bool,
}

/// Records of a batch handed to the worker: enough that a hand-off's cost (a message each
/// way, a wake-up at worst) is small beside simulating them (about 8 ns each).
const SHIP_AT: usize = 8192;

/// Batches a thread may have with the worker: two, so the worker finds the next one waiting
/// when it finishes one, while the thread runs on; a thread that gets further ahead waits.
const MOST_IN_FLIGHT: usize = 2;

/// The part of a thread's capture that simulates and counts, which can run on the simulation
/// worker while the thread runs on.
struct Core {
    simulator: Simulator,
    monitoring: Monitoring,
    counting: Counting,
}

impl Core {
    /// Adds the repeat-hit filter's pending counts to the thread's and settles its pending
    /// dirty marks; with `forget`, empties it too (the simulator goes away, data structures
    /// changed, or the table switches off).
    fn flush_filter(&mut self, forget: bool) {
        self.counting
            .flush(&mut self.simulator, &mut self.monitoring, forget);
    }

    /// Switches the repeat-hit filter on or off for what the thread counts now: on only in
    /// standalone counting with no event on L1 hits and no analysis.
    fn refresh_filter(&mut self) {
        let on = self.monitoring.counting && self.simulator.l1_hits_unobserved();
        let shape = on.then(|| self.simulator.repeat_hit_shape()).flatten();
        if let Some((line_bits, sets)) = shape
            && with_hot(switch_filter_on(line_bits, sets))
        {
            self.counting.filter_switched_on(line_bits, sets);
        } else {
            self.flush_filter(true);
            with_filter(Filter::switch_off);
        }
    }

    /// Simulates and counts the first `filled` records of a batch the thread handed over, in
    /// order; runs on the worker.
    fn simulate_shipped(&mut self, batch: &[RecordCells], filled: usize) {
        simulate_records(
            &mut self.simulator,
            &mut self.counting,
            &mut self.monitoring,
            filter::records_of(batch, filled),
        );
    }

    /// Simulates and counts the records waiting in the filter's batch.
    fn drain_batch(&mut self) {
        self.counting
            .drain_batch(&mut self.simulator, &mut self.monitoring);
    }
}

/// Simulates and counts records of the inline miss path (`filter.rs`) in order, each as
/// [`Counting::access`] would have when it happened: the old owner's hits are counted for its
/// data structure, its pending dirty mark settled, the access simulated and counted, and its
/// data structure given to the entry. Needs nothing from the filter, so it runs on the
/// simulation worker too.
fn simulate_records(
    simulator: &mut Simulator,
    counting: &mut Counting,
    monitoring: &mut Monitoring,
    records: impl Iterator<Item = RecordWords>,
) {
    let mut records = StagedRecords::new(records, counting, monitoring);
    simulator.simulate_steps(&mut records);
    records.finish();
}

/// Records as the simulator's steps (`Simulator::simulate_steps`): before the access, the old
/// owner's hits are counted and its dirty mark handed to the simulator; after it, the outcome
/// is counted and the entry given the access's data structure. The old owners' hits are
/// summed here and added to the totals once, at [`Self::finish`].
struct StagedRecords<'a, I> {
    records: I,
    counting: &'a mut Counting,
    monitoring: &'a mut Monitoring,
    /// `counting`'s constants, copied so the loop keeps them in registers.
    line_bits: u32,
    entry_mask: usize,
    /// The old owners' hits, `(reads, writes)`, not yet in the totals.
    hits: (u64, u64),
}

/// What counting a record's outcome needs: its data structure.
#[derive(Debug, Clone, Copy)]
struct RecordContext {
    structure: Option<usize>,
}

impl<'a, I: Iterator<Item = RecordWords>> StagedRecords<'a, I> {
    fn new(records: I, counting: &'a mut Counting, monitoring: &'a mut Monitoring) -> Self {
        StagedRecords {
            records,
            line_bits: counting.line_bits,
            entry_mask: counting.entry_mask,
            counting,
            monitoring,
            hits: (0, 0),
        }
    }

    /// Adds the old owners' hits to the totals.
    fn finish(self) {
        let (reads, writes) = self.hits;
        self.counting.repeat_hits[0] += reads;
        self.counting.repeat_hits[1] += writes;
        self.monitoring.add_l1_hits_to_totals(reads, writes);
    }
}

impl<I: Iterator<Item = RecordWords>> crate::cache::Steps for StagedRecords<'_, I> {
    type Context = RecordContext;
    /// The miss path and `Filter::append_record` record only accesses within one line.
    const ONE_LINE: bool = true;

    #[inline(always)]
    fn next_step<const LINE_BITS: u32>(&mut self) -> Option<(crate::cache::Step, RecordContext)> {
        let r = Record::decode(self.records.next()?);
        let line_bits = if LINE_BITS != 0 {
            debug_assert_eq!(LINE_BITS, self.line_bits);
            LINE_BITS
        } else {
            self.line_bits
        };
        debug_assert!(
            (r.addr & ((1 << line_bits) - 1)) + u64::from(r.size) <= 1 << line_bits,
            "a record at {:#x} straddles lines",
            r.addr
        );
        let entry = (r.addr >> line_bits) as usize & self.entry_mask;
        // The entry's structure becomes the access's (0 for a line that is not whole, whose
        // entry the miss path left empty) now rather than after the access is simulated, which
        // reads no entry's structure: one lookup of the entry per record.
        let old_owner = std::mem::replace(
            &mut self.counting.entry_structures[entry % filter::ENTRIES],
            r.structure.unwrap_or(0),
        );
        // Added whatever they are: nine records in ten bring hits, and the test cost more than
        // the adds it saved.
        let (reads, writes) = r.old_hits;
        self.hits.0 += reads;
        self.hits.1 += writes;
        self.monitoring
            .add_l1_hits_to_structure(old_owner, reads, writes);
        let context = RecordContext {
            structure: record_structure(self.monitoring, &r),
        };
        let step = crate::cache::Step {
            addr: r.addr,
            size: r.size,
            kind: if r.write {
                AccessKind::Write
            } else {
                AccessKind::Read
            },
            dirty_first: r.old_dirty.then_some(r.old_tag >> line_bits),
        };
        Some((step, context))
    }

    #[inline(always)]
    fn outcome(&mut self, context: RecordContext, bits: u32) {
        self.monitoring.count_bits(context.structure, bits);
    }
}

/// The data structure a record is counted for. The miss path appends only one-line accesses
/// in lines its whole-line cache holds, and the record carries the line's data structure from
/// it: the answer of the data structures this thread attributes with until its next sync
/// point, which is also what the simulating side's finder would answer. A record of a line
/// that is not whole (`Filter::stage_unowned`) is counted for its first byte's.
#[inline(always)]
fn record_structure(monitoring: &mut Monitoring, r: &Record) -> Option<usize> {
    match r.structure {
        Some(s) => {
            let structure = (s as usize).checked_sub(1);
            debug_assert_eq!(structure, monitoring.finder.structure_of(r.addr));
            structure
        }
        None => monitoring.finder.structure_of(r.addr),
    }
}

impl ThreadCapture {
    /// The core, back on this thread: taken back from the worker if it has it (waiting for it
    /// to finish), with the accesses batched since simulated. `None` in a forked child, which
    /// is not monitored and must not simulate (attributing an access may take the data
    /// structures' lock, which a parent thread may have held at the fork; and the worker did
    /// not survive it), and if the worker is gone.
    fn core(&mut self) -> Option<&mut Core> {
        if forked_child() {
            return None;
        }
        self.reclaim();
        let core = self.core.as_deref_mut()?;
        core.drain_batch();
        Some(core)
    }

    /// Waits for the core to come back from the worker, if it is there.
    fn reclaim(&mut self) {
        if self.core.is_some() || forked_child() {
            return;
        }
        self.wait_in_flight(0);
        let Some(shared) = &self.shared else {
            return;
        };
        // No job holds the lock now: every batch came back.
        self.core = shared.lock().unwrap_or_else(|e| e.into_inner()).take();
        if self.core.is_none() {
            report_worker_lost_once();
        }
    }

    /// Waits until at most `most` batches are with the worker.
    fn wait_in_flight(&mut self, most: usize) {
        let Some((_, back)) = &self.spares else {
            return;
        };
        while self.in_flight > most {
            let Some(emptied) = worker::receive(back) else {
                report_worker_lost_once();
                self.in_flight = 0;
                return;
            };
            self.in_flight -= 1;
            // The filter's first batch is smaller than those it fills while shipping.
            if emptied.len() == SHIP_AT {
                self.free.push(emptied);
            }
        }
    }

    /// Standalone counting on a second core (`worker.rs`): a full batch of the inline miss
    /// path's records is handed to the worker (8192 at a time), and this
    /// access joins the batch as the inline miss path would have let it, when it can: the
    /// thread then runs on without its simulator. `false` when the access needs the simulator
    /// now (it straddles lines, or its line holds more than one data structure).
    fn defer(&mut self, addr: u64, size: u32, kind: AccessKind) -> bool {
        // With no core spare, staging would only delay the simulation.
        if !with_filter(Filter::is_on) || (self.core.is_some() && !worker::core_spare()) {
            return false;
        }
        if with_filter(Filter::batch_full) {
            self.ship();
        }
        let write = kind == AccessKind::Write;
        if with_filter(|f| f.inline_miss(addr, size, write)) {
            return true;
        }
        // The line may be whole without the whole-line cache knowing it yet; if it is not,
        // the access is staged all the same, leaving its entry empty (taking the core back for
        // it stalled the pipeline at every line two arrays share).
        let (finder, line_bits) = (&mut self.finder, self.line_bits);
        with_filter(|f| {
            if finder.structure_of_line(addr, line_bits, f).1 {
                f.inline_miss(addr, size, write)
            } else {
                f.stage_unowned(addr, size, write)
            }
        })
    }

    /// Hands the filter's batch to the worker, and the core with the first one, giving the
    /// filter an empty batch to fill meanwhile; simulates the records here instead when no
    /// core is spare (or in a forked child, where the worker does not exist).
    fn ship(&mut self) {
        // A signal handler that interrupted a miss path: the batch stays (`Filter::in_miss`).
        if forked_child() || !worker::core_spare() || with_filter(Filter::in_miss_path) {
            // `core` simulates what is batched.
            let _ = self.core();
            return;
        }
        if let Some(core) = self.core.take() {
            let shared = self.shared.get_or_insert_with(Arc::default);
            *shared.lock().unwrap_or_else(|e| e.into_inner()) = Some(core);
        }
        let Some(shared) = self.shared.as_ref().map(Arc::clone) else {
            // No core to count them with.
            with_filter(|f| f.drain_batch_with(|_| ()));
            return;
        };
        self.wait_in_flight(MOST_IN_FLIGHT - 1);
        let next = self
            .free
            .pop()
            .unwrap_or_else(|| filter::new_batch(SHIP_AT));
        let Some((batch, filled)) = with_filter(|f| f.replace_batch(next)) else {
            return;
        };
        let back = self.spares.get_or_insert_with(mpsc::channel).0.clone();
        self.in_flight += 1;
        worker::run(Box::new(move || {
            let mut core = shared.lock().unwrap_or_else(|e| e.into_inner());
            let simulated = match core.as_deref_mut() {
                Some(simulating) => {
                    let done = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        simulating.simulate_shipped(&batch, filled);
                    }));
                    if done.is_err() {
                        // A bug in the simulator: the core is no longer trusted, and the thread
                        // learns it is lost when it takes it back (`reclaim`).
                        *core = None;
                    }
                    filled
                }
                None => 0,
            };
            drop(core);
            // Always sent, so the thread never waits for a batch in vain; if the thread is
            // gone, so is the need.
            let _ = back.send(batch);
            simulated
        }));
    }

    /// The data structures changed since this thread's last sync point: everything it captured
    /// before is simulated and attributed under the old ones (batches with the worker, the
    /// filter's batch and its pending hits; the filter forgets its entries and whole lines), then its finders
    /// take the new ones.
    fn data_changed(&mut self) {
        // A forked child attributes nothing, and must not take the data structures' lock.
        if forked_child() {
            return;
        }
        if let Some(core) = self.core() {
            if with_filter(Filter::is_on) {
                core.flush_filter(true);
            }
            core.monitoring.finder.refresh();
        }
        // Counting remembers whole lines with the filter off too.
        with_filter(Filter::forget_whole_lines);
        self.finder.refresh();
    }

    /// Hands the counts gathered since the last time on to the process totals and starts them
    /// again from zero, keeping the simulated caches (regions still open are checkpointed,
    /// `Monitoring::hand_over_counts`): at the end of a worker thread's last open region, and
    /// before a thread blocks in `pthread_join`. A thread pool's workers (OpenMP's) outlive the report,
    /// written at exit, and a main thread blocked joining its workers cannot hand anything on
    /// when one of them writes the report on a signal. Nothing happens outside standalone
    /// counting.
    fn publish(&mut self) {
        let new_thread = !self.published;
        let Some(core) = self.core() else {
            return;
        };
        // Only the standalone report gathers counts at exit; a tool's requests publish their
        // results at each region's end already.
        if !core.monitoring.counting {
            return;
        }
        core.flush_filter(false);
        merge_into_totals(&core.simulator, core.counting.repeat_hits, new_thread);
        core.simulator.reset_level_stats();
        core.counting.repeat_hits = [0; 2];
        core.monitoring.hand_over_counts(|regions, structures| {
            STANDALONE_TOTALS
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .merge(regions, structures);
        });
        self.published = true;
        self.let_go();
    }

    /// The thread holds standalone counts again (a region begins after a hand-over).
    fn hold(&mut self) {
        if self.counts && !self.holding {
            self.holding = hand_over::start_holding();
        }
    }

    fn let_go(&mut self) {
        if std::mem::take(&mut self.holding) {
            hand_over::let_go();
        }
    }
}

impl Drop for ThreadCapture {
    fn drop(&mut self) {
        if forked_child() {
            // The simulation thread did not survive the fork, and may have been in the middle
            // of a channel operation or holding the core's lock: their copies are left alone.
            std::mem::forget(self.spares.take());
            std::mem::forget(self.shared.take());
        }
        let new_thread = !self.published;
        if let Some(core) = self.core() {
            core.flush_filter(true);
            with_filter(Filter::switch_off);
            core.monitoring.close_open_regions();
            merge_into_totals(&core.simulator, core.counting.repeat_hits, new_thread);
            STANDALONE_TOTALS
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .merge(&core.monitoring.regions, &core.monitoring.structures);
        } else {
            // Nothing can be counted (a forked child, or the worker is gone): the filter's
            // slot and contents go.
            with_filter(Filter::abandon);
        }
        worker::thread_ended();
        self.let_go();
    }
}

fn report_worker_lost_once() {
    static SAID: AtomicBool = AtomicBool::new(false);
    if !SAID.swap(true, Ordering::Relaxed) {
        eprintln!(
            "epcache: the simulation thread is gone; a thread's counts since its last hand-off are lost (run with {}=off to simulate on the program's threads)",
            worker::PIPELINE_ENV
        );
    }
}

fn merge_into_totals(simulator: &Simulator, repeat_hits: [u64; 2], new_thread: bool) {
    // A poisoned lock only means another thread panicked mid-merge; its numbers are still sums.
    let mut totals = TOTALS.lock().unwrap_or_else(|e| e.into_inner());
    totals.merge(simulator, repeat_hits, new_thread);
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
    let previous = replace_state(BUSY);
    PROCESS_INIT.get_or_init(|| {
        let _ = STARTED_PROCESS.try_with(|s| s.set(true));
        let report = std::env::var_os(REPORT_ENV).map(|path| report_path(PathBuf::from(path)));
        let spec_text = match process_spec() {
            Ok((text, _)) => text.clone(),
            Err(why) => why.clone(),
        };
        match process_spec() {
            // Said now, not at the first capture: a tool may come later and only learn it then.
            Err(why) => report_spec_error_once(why),
            Ok((text, spec)) => {
                for warning in spec.warnings() {
                    eprintln!("epcache: warning: the cache `{text}`: {warning}");
                }
            }
        }
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
            let objects = program::objects();
            regions::register_functions(&objects);
            register_globals(&objects);
            regions::start_tracking();
        }
        super::tsan_abi::register_at_exit(at_exit);
        // `quick_exit` runs no exit handlers, only its own, and ends by the C library's
        // internal `_exit`, which the `_exit` wrap does not see.
        super::tsan_abi::register_at_quick_exit(at_exit);
        super::tsan_abi::register_at_fork_child(after_fork_in_child);
        STARTED_PID.store(std::process::id(), Ordering::Relaxed);
        match segment {
            Some(m) => {
                m.ready();
            }
            None => {
                if let Ok(wait) = std::env::var("EPCACHE_WAIT")
                    && crate::shm::target::start_wait_from_env(Some(&wait)).is_some()
                {
                    eprintln!(
                        "epcache: EPCACHE_WAIT={wait} is set, but this program has no segment a tool could attach to; it does not wait"
                    );
                }
            }
        }
        report
    });
    set_state(previous);
    if standalone() {
        // Once per process: `init_process` returns early above once it ran.
        static HELD: std::sync::Once = std::sync::Once::new();
        HELD.call_once(|| {
            signal_abi::hold_termination_for_report();
            crash_abi::report_on_crash();
        });
    }
    if !START_UP_COUNTED.swap(true, Ordering::Relaxed) {
        MAY_CAPTURE.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The report's path as `EPCACHE_REPORT` gives it, with `%p` replaced by the process id (as
/// Valgrind's `--log-file` has it: a program that starts others built with epcache passes the
/// variable on, and each would otherwise overwrite the others' report), made absolute now, so
/// a program that changes its working directory still writes the report where it was asked
/// for; a directory that does not exist is said at once, not after the run.
fn report_path(path: PathBuf) -> PathBuf {
    let path = match path.to_str() {
        Some(text) if text.contains("%p") => {
            PathBuf::from(text.replace("%p", &std::process::id().to_string()))
        }
        _ => path,
    };
    let path = std::path::absolute(&path).unwrap_or(path);
    if let Some(dir) = path.parent()
        && !dir.is_dir()
    {
        eprintln!(
            "epcache: {REPORT_ENV}={} names a directory that does not exist; create {} before \
             the program ends, or the report is lost",
            path.display(),
            dir.display()
        );
    }
    path
}

/// Whether start-up's reason in [`MAY_CAPTURE`] was taken back.
static START_UP_COUNTED: AtomicBool = AtomicBool::new(false);

/// The globals of `objects` as data structures, each with what its type says: a fixed-size
/// array with its shape, an ALLOCATABLE or POINTER array as the data its descriptor points to
/// (`descriptors.rs`), rather than the descriptor itself.
fn register_globals(objects: &[&'static program::ProgramInfo]) {
    let globals: Vec<_> = objects
        .iter()
        .flat_map(|p| {
            p.info.globals.iter().filter(|g| g.size > 0).map(move |g| {
                let file = g.file.and_then(|f| p.info.files.get(f as usize)).cloned();
                let range = AddressRange::new(g.address.wrapping_add(p.bias), g.size);
                (g, file, range)
            })
        })
        .collect();
    let names = distinct_names(
        globals
            .iter()
            .map(|(g, file, range)| (g.qualified_name.clone(), file.clone(), *range))
            .collect(),
    );
    for ((global, _, _), (name, range)) in globals.into_iter().zip(names) {
        match &global.descriptor {
            Some(descriptor) => descriptors::follow(&name, range.start, range.len(), descriptor),
            None => data::register_with(
                &name,
                range,
                DataStructureKind::Global,
                DataStructureDetails {
                    site: None,
                    shape: global.shape.as_ref().and_then(published_shape),
                },
            ),
        }
    }
}

/// A fixed-size array's shape as the segment publishes it (none past [`MAX_SHAPE_RANK`]).
fn published_shape(shape: &ArrayShape) -> Option<Shape> {
    (shape.dims.len() <= MAX_SHAPE_RANK).then(|| Shape {
        element_bytes: shape.element_bytes,
        dims: shape
            .dims
            .iter()
            .map(|d| Dimension {
                lower: d.lower,
                extent: d.count,
            })
            .collect(),
        column_major: shape.column_major,
    })
}

/// Globals named apart where their names collide: `static double buf[1000]` in `a.c` and
/// another `buf` in `b.c` become `buf@a.c` and `buf@b.c` (by the declaring file's name, or its
/// whole path where two of them share a name: `src/a/util.c`, `src/b/util.c`). The report sums
/// the entries of one name (a name's heap blocks, an array registered again), so two unrelated
/// arrays under one name showed as one, with one's start, the other's size and both's counts.
fn distinct_names(
    globals: Vec<(String, Option<String>, AddressRange)>,
) -> Vec<(String, AddressRange)> {
    // Each name's distinct definitions: start and declaring file.
    let mut seen: HashMap<&str, Vec<(u64, Option<&str>)>> = HashMap::new();
    for (name, file, range) in &globals {
        let definitions = seen.entry(name).or_default();
        if !definitions.iter().any(|(start, _)| *start == range.start) {
            definitions.push((range.start, file.as_deref()));
        }
    }
    let base = |path: &str| {
        Path::new(path)
            .file_name()
            .map_or_else(|| path.to_owned(), |f| f.to_string_lossy().into_owned())
    };
    // For each colliding name, whether its files' base names tell its definitions apart.
    let collides: HashMap<String, bool> = seen
        .into_iter()
        .filter(|(_, definitions)| definitions.len() > 1)
        .map(|(name, definitions)| {
            let bases: Vec<String> = definitions
                .iter()
                .filter_map(|(_, file)| file.map(base))
                .collect();
            let distinct = bases
                .iter()
                .enumerate()
                .all(|(i, b)| !bases[..i].contains(b));
            (name.to_owned(), distinct)
        })
        .collect();
    globals
        .into_iter()
        .map(|(name, file, range)| match (file, collides.get(&name)) {
            (Some(file), Some(&by_base)) => {
                let file = if by_base { base(&file) } else { file };
                (format!("{name}@{file}"), range)
            }
            (_, _) => (name, range),
        })
        .collect()
}

extern "C" fn at_exit() {
    // Once: a crash handler (`crash_abi.rs`) or a held signal's safe point may run this while
    // the exit handler does. The one that comes second waits for the report rather than end
    // the process under the first one's feet (a rename not yet made loses the report).
    static REPORTING: AtomicBool = AtomicBool::new(false);
    static REPORTED: AtomicBool = AtomicBool::new(false);
    let previous = replace_state(BUSY);
    let writes = !FORKED.load(Ordering::Relaxed) && matches!(PROCESS_INIT.get(), Some(Some(_)));
    if writes && REPORTING.swap(true, Ordering::AcqRel) {
        // Bounded: a crash's watchdog ends a report that cannot finish.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
        while !REPORTED.load(Ordering::Acquire) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    } else if writes && let Some(Some(path)) = PROCESS_INIT.get() {
        worker::start_no_more();
        // This thread's counts first, then every other thread still holding some.
        regions::close_all_open();
        // Closing the regions ends them as at a return, which leaves the runtime's state.
        set_state(BUSY);
        flush_current_thread();
        hand_over::collect(wake_all_sync_points);
        if let Err(e) = write_report(path) {
            eprintln!("{e}");
        }
        let captured = totals().levels.iter().any(|(_, l)| l.reads + l.writes > 0);
        if !captured {
            // An all-zero report is easy to take for a result: a later plain build of the same
            // program (`cargo build --release` after `cargo rustc` with the flags) links the
            // runtime without calling it.
            eprintln!(
                "epcache: no load or store of this run was captured: is {} built with capture \
                 (`epcache cc`, or for Rust `cargo rustc` with the SanitizerCoverage flags)?",
                std::env::current_exe()
                    .map_or_else(|_| "the program".into(), |p| p.display().to_string())
            );
        }
        REPORTED.store(true, Ordering::Release);
    }
    if let Some(m) = mcc::get() {
        m.finish();
    }
    set_state(previous);
}

/// The process that ran the start-up (0 before it): a child made by `fork` or `vfork` is
/// another, whatever state it inherited.
static STARTED_PID: AtomicU32 = AtomicU32::new(0);

/// Whether a program ending by `_exit` or `_Exit` (`wrap_abi.rs`, which run no exit handlers)
/// should have its report written first: not by a child of `fork` or `vfork` (the commonest
/// caller, after a failed `exec`, whose report and segment are its parent's; a `vfork` child
/// shares its parent's memory and runs no fork handlers, so only its process id tells), and
/// not from a signal handler that interrupted the runtime (whose locks and thread state it
/// may hold: the report waited for them forever, or came out empty). A handler interrupting
/// the C library's allocator is caught by the caller's watchdog instead.
pub(super) fn may_report_at_immediate_exit() -> bool {
    STARTED_PID.load(Ordering::Relaxed) == std::process::id() && !in_runtime()
}

/// The report of a program ending by `_exit`, as at `exit` (see
/// [`may_report_at_immediate_exit`]).
pub(super) fn before_immediate_exit() {
    at_exit();
}

/// Whether a crash handler (`crash_abi.rs`) may write the report: the thread crashed in the
/// program's code, not inside the runtime (whose state it may have left half-changed), and not
/// in a forked child (whose report is its parent's).
pub(super) fn may_report_on_crash() -> bool {
    state() != BUSY && !FORKED.load(Ordering::Relaxed)
}

/// The report, from a crash handler: everything `at_exit` does, under the handler's watchdog.
pub(super) fn report_at_crash() {
    at_exit();
}

/// Set in a child of `fork` (that has not exec'd): the report and the segment are the parent's.
static FORKED: AtomicBool = AtomicBool::new(false);

/// Runs in the child right after `fork`, with only the forking thread alive. The child is not
/// monitored: it leaves the segment to its parent (which goes on being monitored and stepped),
/// stops the standalone report's capture and writes no report at exit, which would overwrite
/// the parent's. A child that execs a program built with epcache starts afresh.
extern "C" fn after_fork_in_child() {
    FORKED.store(true, Ordering::Relaxed);
    mcc::leave_to_parent();
    if STANDALONE.swap(false, Ordering::Relaxed) {
        // The only thread picks the switch up at once; no other thread survived the fork.
        switch_all(false);
    }
    regions::nothing_armed_from_now();
}

/// Whether the process start-up ran and regions are tracked (heap blocks are named only then;
/// allocations before it, from the C library's own start-up, are not the program's), in the
/// process that started them: never in a forked child (see [`forked_child`]).
pub(crate) fn tracking_started() -> bool {
    PROCESS_INIT.get().is_some() && regions::tracking() && !forked_child()
}

/// Whether the process start-up ran without starting region tracking (no segment, no report):
/// no region can ever be monitored, so marker boundaries have nothing to do at all.
pub(crate) fn never_tracking() -> bool {
    PROCESS_INIT.get().is_some() && !regions::tracking()
}

/// Whether this process is a child of `fork` that has not exec'd. Such a child is not monitored
/// and must not take the runtime's locks at all: a thread of the parent that held one at the
/// fork does not exist in the child, so the lock would never be released (the child of a
/// threaded program would hang at its first heap allocation or data-structure registration).
pub(crate) fn forked_child() -> bool {
    FORKED.load(Ordering::Relaxed)
}

/// Whether the standalone report is being made (every region monitored).
#[inline]
pub(crate) fn standalone() -> bool {
    STANDALONE.load(Ordering::Relaxed)
}

/// Whether the runtime itself, or the program's call into the allocator, is running on this
/// thread (hooks must return).
#[inline]
pub(crate) fn in_runtime() -> bool {
    matches!(state(), BUSY | ALLOCATING)
}

/// Marks this thread as inside the program's call to the C library's allocator (unless the
/// call is the runtime's own); returns the state to restore with [`leave_runtime`].
pub(crate) fn enter_allocator() -> u8 {
    let previous = state();
    if previous != BUSY {
        set_state(ALLOCATING);
    }
    previous
}

/// Marks this thread as running the runtime; returns the state to restore.
pub(crate) fn enter_runtime() -> u8 {
    replace_state(BUSY)
}

/// Restores the state [`enter_runtime`] returned.
pub(crate) fn leave_runtime(previous: u8) {
    set_state(previous);
}

/// A monitored region instance begins on this thread: requests are bound (or the standalone
/// snapshot taken) and the thread simulates until the last monitored instance ends.
pub(crate) fn monitored_enter(region: RegionRef, requested: bool) {
    set_state(BUSY);
    with_capture(|c| {
        if let Some(core) = c.core() {
            core.flush_filter(false);
            core.monitoring
                .enter(&mut core.simulator, region, requested);
            core.refresh_filter();
        }
        c.hold();
    });
    MONITORED.set(MONITORED.get() + 1);
    MAY_CAPTURE.fetch_add(1, Ordering::Relaxed);
    restore_state();
}

/// A monitored region instance ends on this thread: results are published.
pub(crate) fn monitored_exit(region: RegionRef) {
    set_state(BUSY);
    with_capture(|c| {
        if let Some(core) = c.core() {
            core.flush_filter(false);
            core.monitoring.exit(&mut core.simulator, region);
            core.refresh_filter();
        }
    });
    let open = MONITORED.get();
    if open > 0 {
        MONITORED.set(open - 1);
        MAY_CAPTURE.fetch_sub(1, Ordering::Relaxed);
    }
    // The main thread is left out: it writes the report itself (at exit, after closing its
    // regions), and a program whose main thread opens and closes top-level regions in a loop
    // (Rust markers) would pay the hand-over at each.
    if open == 1 && !on_main_thread() {
        with_existing_capture(ThreadCapture::publish);
    }
    restore_state();
}

/// The program opened a library with `dlopen` (`wrap_abi.rs`): one built with capture is read
/// for names, its functions registered as regions and its globals as data structures, as for
/// the libraries loaded at start. Nothing is read before start-up's tracking, which reads every
/// library mapped then, nor in a forked child.
pub(crate) fn library_opened() {
    if !tracking_started() || in_runtime() {
        return;
    }
    let previous = replace_state(BUSY);
    let new = program::read_new_libraries();
    if !new.is_empty() {
        regions::register_functions(&new);
        register_globals(&new);
    }
    set_state(previous);
}

/// The calling thread ends without its thread-local destructors: the main thread ending by
/// `pthread_exit` while another thread lives (one of the program's, or the simulation thread,
/// `worker.rs`), where the C library runs only the thread-specific data's destructors
/// (`thread_block::call_at_thread_end`). The regions still open end, as the unwinding
/// `pthread_exit` did ended their functions, and the thread's capture goes away as at any
/// thread's end, handing its counts on. Any other thread has gone through its thread-local
/// destructors already, and nothing is left to do; so has the main thread of a static program,
/// whose Rust thread-locals are destroyed through a key of their own, created before this one.
/// The thread captures nothing from here on: a key destructor of the program that ran later and
/// entered instrumented code made a new capture that nothing handed on (its writes were lost,
/// and the exit handler waited for it in vain).
pub(super) fn thread_ends_without_destructors() {
    if forked_child() || !tracking_started() {
        return;
    }
    set_state(BUSY);
    regions::close_all_open();
    // Closing the regions ends them as at a return, which leaves the runtime's state.
    set_state(BUSY);
    // It restores the state it found: the thread stays inside the runtime.
    flush_current_thread();
}

/// The calling thread is about to block in `pthread_join` (`wrap_abi.rs`): in standalone
/// counting it hands its counts on, so that a report another thread writes meanwhile (on a
/// signal, `end_for_signal`) has them.
pub(crate) fn hand_over_before_blocking() {
    if !standalone() || in_runtime() {
        return;
    }
    let previous = replace_state(BUSY);
    with_existing_capture(ThreadCapture::publish);
    set_state(previous);
}

/// The calling thread returns from `pthread_join` into the regions it is in, and counts again:
/// the exit handler waits for its counts from now on (`hand_over.rs`).
pub(crate) fn hold_after_blocking() {
    if !standalone() || in_runtime() {
        return;
    }
    let previous = replace_state(BUSY);
    with_existing_capture(ThreadCapture::hold);
    set_state(previous);
}

fn on_main_thread() -> bool {
    STARTED_PROCESS.try_with(Cell::get).unwrap_or(false)
}

/// Whether this thread should capture: the process-wide switch is on or a monitored region is
/// open here. A forked child captures nothing, even inside the regions it inherited open:
/// counting would take locks a vanished parent thread may hold (see [`forked_child`]).
fn captures_now() -> bool {
    (CAPTURE_ON.load(Ordering::Relaxed) || MONITORED.get() > 0) && !forked_child()
}

/// The state a thread outside the runtime should be in now.
fn restore_state() {
    let on = captures_now();
    set_state(if on && process_spec().is_ok() {
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

/// Data structures changed (in any thread): every thread passes its sync point before its next
/// access, where what it captured before is simulated under the old ones and its finders and
/// repeat-hit filter take the new (`ThreadCapture::data_changed`).
pub(super) fn data_changed() {
    bump_epoch();
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
    // Pairs with the loads in `sync`: a thread that sees the new epoch sees the switch.
    bump_epoch();
}

/// Makes this thread follow the process-wide switch; leaves a thread inside the runtime alone.
/// `extern "C"` so that callers on the hot path need no unwind landing pad (see `may_capture`).
#[inline(never)]
extern "C" fn sync() {
    let state = state();
    if matches!(state, BUSY | ALLOCATING) {
        return;
    }
    if let Some(signal) = signal_abi::pending() {
        end_for_signal(signal);
    }
    if state == NEEDS_SYNC {
        init_process();
    }
    with_hot(|h| {
        // The filter's slot holds the word's key before the word is taken for synced: a rekey
        // that read the slots before the store may have picked the key, and then the word or
        // the epoch has changed by the check (`tag_key.rs`).
        loop {
            let epoch = EPOCH.load(Ordering::SeqCst);
            let word = TAG_WORD.load(Ordering::SeqCst);
            h.filter.rekey(word);
            h.seen_epoch.set(epoch);
            h.seen_word.set(word);
            if EPOCH.load(Ordering::SeqCst) == epoch && TAG_WORD.load(Ordering::SeqCst) == word {
                break;
            }
        }
        h.update_capturing_epoch();
    });
    if hand_over::report_due() {
        // The program is ending and the report waits for this thread's counts; the regions
        // it is in stay open (it runs on), checkpointed as at any hand-over.
        set_state(BUSY);
        with_existing_capture(|c| {
            if c.holding {
                c.publish();
            }
        });
        set_state(state);
    }
    if descriptors::claim_due() {
        // Before the generation is looked at: a block taken by an allocatable now is the
        // allocatable's from this thread's next access on.
        set_state(BUSY);
        descriptors::retry_claim();
        set_state(state);
    }
    let generation = data::generation();
    if FILTER_GENERATION.replace(generation) != generation {
        set_state(BUSY);
        with_existing_capture(ThreadCapture::data_changed);
        set_state(state);
    }
    let on = captures_now();
    if on && let Err(why) = process_spec() {
        report_spec_error_once(why);
        set_state(OFF);
        return;
    }
    set_state(if on { ON } else { OFF });
}

/// Sends every thread's next access to its sync point; async-signal-safe (atomics only, no
/// wait: `tag_key::rekey`), for the termination signal handler.
pub(super) fn wake_all_sync_points() {
    bump_epoch();
}

/// The safe point a held termination signal waited for (see `signal_abi.rs`). Every thread
/// that reaches one closes its open regions and hands its counts on, as a thread does when it
/// ends; the first writes the report as at exit, after a short grace in which threads still
/// running reach theirs, then ends the process by the signal. The others wait for the end
/// rather than run on past the signal. A thread blocked meanwhile is in the report with what it
/// handed on last (at its last region's end, or before it blocked in `pthread_join`).
#[cold]
#[inline(never)]
fn end_for_signal(signal: std::ffi::c_int) -> ! {
    static ENDING: AtomicBool = AtomicBool::new(false);
    regions::close_all_open();
    flush_current_thread();
    if ENDING.swap(true, Ordering::AcqRel) {
        loop {
            std::thread::park();
        }
    }
    // The report waits for the threads still running to reach theirs (`hand_over.rs`).
    at_exit();
    signal_abi::die_of(signal)
}

fn report_spec_error_once(why: &str) {
    static SAID: AtomicBool = AtomicBool::new(false);
    if !SAID.swap(true, Ordering::Relaxed) {
        eprintln!("{why}; nothing is captured, and tools' requests are refused");
    }
}

/// A cheap point where a thread picks up a process-wide switch made by another thread: one
/// thread-local load and one relaxed global load when nothing changed. Every access runs it
/// while some thread may capture; region boundaries do not need it on their fast path.
#[inline(always)]
pub(super) fn sync_point() {
    if with_hot(Hot::stale) {
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
///
/// Inlined into every hook, with its size and kind constant: while anything may capture, a
/// repeat hit (see `filter.rs`) of a thread that captures and has no switch to pick up is
/// counted here, in a few thread-local loads and one increment; everything else is a tail call.
#[inline(always)]
fn access(addr: u64, size: u32, kind: AccessKind) {
    if MAY_CAPTURE.load(Ordering::Relaxed) != 0 {
        may_capture(addr, size, kind == AccessKind::Write);
    }
}

/// A captured load of `SIZE` bytes at `addr` (the fixed-size hooks).
#[inline(always)]
pub(super) fn read_sized<const SIZE: u32>(addr: u64) {
    if MAY_CAPTURE.load(Ordering::Relaxed) != 0 {
        active::<SIZE, false>(addr);
    }
}

/// A captured store of `SIZE` bytes at `addr` (the fixed-size hooks).
#[inline(always)]
pub(super) fn write_sized<const SIZE: u32>(addr: u64) {
    if MAY_CAPTURE.load(Ordering::Relaxed) != 0 {
        active::<SIZE, true>(addr);
    }
}

/// A fixed-size access while anything may capture: a repeat hit (see `filter.rs`) of a thread
/// that captures and has no switch to pick up is counted here, in one thread-local block and
/// one increment; everything else goes on to [`may_capture`] by a tail call. The block is
/// reached from the thread pointer (`thread_block.rs`), so no register is saved around it.
#[inline(never)]
extern "C" fn active<const SIZE: u32, const WRITE: bool>(addr: u64) {
    let (synced_on, hit) = with_hot(|h| {
        let synced_on = h.synced_on();
        (
            synced_on,
            synced_on && h.filter.repeat_hit(addr, SIZE, WRITE),
        )
    });
    if hit {
        return;
    }
    if synced_on {
        // Nothing to sync and the thread captures: straight to the simulator.
        simulate_on(addr, SIZE, WRITE);
    } else {
        may_capture(addr, SIZE, WRITE);
    }
}

/// [`simulate`] for a thread known to be `ON`; `extern "C"` so that it cannot unwind (see
/// [`may_capture`]).
#[inline(never)]
extern "C" fn simulate_on(addr: u64, size: u32, write: bool) {
    if !write {
        return simulate(addr, size, AccessKind::Read);
    }
    // The first write to the line a read just brought to the front of its set (`x += ...`):
    // an L1 hit whose data structure the filter knows, simulated without the rest of the path.
    if with_filter(|f| f.clean_write(addr, size)) {
        set_state(BUSY);
        with_existing_capture(|c| c.clean_write(addr, size));
        set_state(ON);
    } else {
        simulate(addr, size, AccessKind::Write);
    }
}

/// `extern "C"` only so that it cannot unwind: the `extern "C"` hooks then need no unwind
/// landing pad around the call and jump to it as a tail call, with no frame of their own.
#[inline(never)]
extern "C" fn may_capture(addr: u64, size: u32, write: bool) {
    // The switch-epoch check lives here rather than at region boundaries: only while some
    // thread may capture can a thread have a switch to pick up.
    sync_point();
    let state = state();
    if state == ON && with_filter(|f| f.repeat_hit(addr, size, write)) {
        return;
    }
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
fn not_off(now: u8, addr: u64, size: u32, kind: AccessKind) {
    match now {
        ON => simulate(addr, size, kind),
        NEEDS_SYNC => {
            sync();
            if state() == ON {
                simulate(addr, size, kind);
            }
        }
        _ => {}
    }
}

#[inline(always)]
fn simulate(addr: u64, size: u32, kind: AccessKind) {
    set_state(BUSY);
    // `try_with` fails only while the thread's destructors run: those accesses are dropped.
    let _ = THREAD.try_with(|slot| {
        if let Ok(mut slot) = slot.try_borrow_mut() {
            match slot.as_mut() {
                Some(capture) => capture.access(addr, size, kind),
                None => first_access(&mut slot, addr, size, kind),
            }
        }
    });
    set_state(ON);
}

impl ThreadCapture {
    /// Kept out of line, so the thread-local access around it stays small enough to inline.
    #[inline(never)]
    fn access(&mut self, addr: u64, size: u32, kind: AccessKind) {
        if self.ships && self.defer(addr, size, kind) {
            return;
        }
        if let Some(core) = self.core() {
            core.access(addr, size, kind);
        }
    }

    /// [`Counting::clean_write`], out of line for the same reason as [`Self::access`].
    #[inline(never)]
    fn clean_write(&mut self, addr: u64, size: u32) {
        if let Some(core) = self.core() {
            core.counting
                .clean_write(&mut core.simulator, &mut core.monitoring, addr, size);
        }
    }
}

impl Core {
    fn access(&mut self, addr: u64, size: u32, kind: AccessKind) {
        if self.monitoring.counting {
            self.counting
                .access(&mut self.simulator, &mut self.monitoring, addr, size, kind);
        } else {
            self.uncounted(addr, size, kind);
        }
    }

    /// Out of line, so the standalone path around it keeps a small frame.
    #[inline(never)]
    fn uncounted(&mut self, addr: u64, size: u32, kind: AccessKind) {
        self.simulator.access(addr, size, kind);
    }
}

/// How a thread in standalone mode counts the accesses it simulates.
#[derive(Debug, Clone, Copy)]
struct Counting {
    /// The hierarchy's depth, for counting without asking it per access.
    levels: usize,
    /// log2 of L1's line size.
    line_bits: u32,
    /// L1 read and write hits the repeat-hit filter counted, which the simulator's L1 totals
    /// lack.
    repeat_hits: [u64; 2],
    /// The filter's entries in use less one: `(addr >> line_bits) & entry_mask` is an
    /// address's entry, as `Filter::index` computes it.
    entry_mask: usize,
    /// The data structure (index + 1, 0 for none) of each filter entry's owner, as of the last
    /// access simulated for it; a record not yet simulated leaves it behind the filter, which
    /// is why it lives here rather than in the filter.
    entry_structures: [u32; filter::ENTRIES],
}

impl Counting {
    fn new(simulator: &Simulator) -> Self {
        Counting {
            levels: simulator.hierarchy().depth(),
            line_bits: simulator.hierarchy().line_size(0).trailing_zeros(),
            repeat_hits: [0; 2],
            entry_mask: 0,
            entry_structures: [0; filter::ENTRIES],
        }
    }

    /// The filter switched on for L1's shape (`Filter::switch_on`).
    fn filter_switched_on(&mut self, line_bits: u32, sets: u64) {
        self.entry_mask = Filter::entries_for(line_bits, sets).unwrap_or(1) - 1;
    }

    /// The filter entry of `addr`'s line.
    #[inline(always)]
    fn entry_of(&self, addr: u64) -> usize {
        (addr >> self.line_bits) as usize & self.entry_mask
    }

    /// Simulates an access and counts it per level and data structure. A one-line access's
    /// outcome comes back from the simulator's fast path; its block then owns its L1 set's
    /// entry in the repeat-hit filter (when on), whose earlier owner's hits are counted now.
    /// Wider or straddling accesses are counted per line, and their sets' entries forgotten.
    #[inline(always)]
    fn access(
        &mut self,
        simulator: &mut Simulator,
        monitoring: &mut Monitoring,
        addr: u64,
        size: u32,
        kind: AccessKind,
    ) {
        // Accesses the inline miss path batched come first.
        self.drain_batch(simulator, monitoring);
        // A write the inline test left dirty pending in this line's entry is settled first:
        // this access may evict that line.
        let line = addr >> self.line_bits;
        with_filter(|f| f.settle(line, |block| simulator.mark_l1_dirty(block)));
        let Some(outcome) = simulator.access_in_line(addr, size, kind) else {
            self.access_lines(simulator, monitoring, addr, size, kind);
            return;
        };
        let write = kind == AccessKind::Write;
        with_filter(|f| {
            let (structure, whole_line) =
                monitoring.finder.structure_of_line(addr, self.line_bits, f);
            monitoring.count_bits(structure, outcome);
            f.take_over(line, write, whole_line, |p| self.take(monitoring, p));
            if whole_line {
                self.entry_structures[self.entry_of(addr)] = structure.map_or(0, |s| s as u32 + 1);
            }
        });
    }

    /// Simulates and counts, in order, the accesses the inline miss path took filter entries
    /// over for (`filter.rs`), as [`Self::access`] would have when each happened: the old
    /// owner's hits are counted for its data structure, its pending dirty mark settled, the
    /// access simulated and counted, and its data structure given to the entry. Runs before
    /// anything else reads the counts or the simulator, or simulates an access itself.
    #[inline(always)]
    fn drain_batch(&mut self, simulator: &mut Simulator, monitoring: &mut Monitoring) {
        if with_filter(Filter::batch_waiting) {
            self.simulate_batch(simulator, monitoring);
        }
    }

    /// [`Self::drain_batch`]'s work, out of line: the check stays small on every path.
    #[inline(never)]
    fn simulate_batch(&mut self, simulator: &mut Simulator, monitoring: &mut Monitoring) {
        with_filter(|f| {
            f.drain_batch_with(|records| simulate_records(simulator, self, monitoring, records));
        });
    }

    /// Drains the batch, then hands the filter's pending counts to the counts and its pending
    /// dirty marks to the simulator; with `forget`, empties it too (see
    /// [`ThreadCapture::flush_filter`]).
    fn flush(&mut self, simulator: &mut Simulator, monitoring: &mut Monitoring, forget: bool) {
        self.drain_batch(simulator, monitoring);
        with_filter(|f| {
            f.flush(
                forget,
                |p| self.take(monitoring, p),
                |block| simulator.mark_l1_dirty(block),
            );
        });
    }

    /// A wider or straddling access, counted per line; its sets' filter entries are given up.
    #[cold]
    #[inline(never)]
    fn access_lines(
        &mut self,
        simulator: &mut Simulator,
        monitoring: &mut Monitoring,
        addr: u64,
        size: u32,
        kind: AccessKind,
    ) {
        let levels = self.levels;
        with_filter(|f| f.settle_lines(addr, size, |block| simulator.mark_l1_dirty(block)));
        simulator.access_observed(addr, size, kind, |a, o| monitoring.count(a, o, levels));
        with_filter(|f| f.forget_lines(addr, size, |p| self.take(monitoring, p)));
    }

    /// A write the filter found to hit its set's most recent line, clean until now
    /// (`Filter::clean_write` marked the entry written): simulated after the batch (it marks
    /// the line dirty) and counted for the entry's data structure without a lookup; the
    /// simulator counts it in L1's totals itself.
    #[inline(always)]
    fn clean_write(
        &mut self,
        simulator: &mut Simulator,
        monitoring: &mut Monitoring,
        addr: u64,
        size: u32,
    ) {
        // The batch may hold the access that made this line the entry's owner: after it, the
        // entry's data structure is the line's.
        self.drain_batch(simulator, monitoring);
        let outcome = match simulator.access_in_line_recent(addr, size, AccessKind::Write) {
            Some(outcome) => outcome,
            None => straddling_access(simulator, addr, size, AccessKind::Write),
        };
        let structure = (self.entry_structures[self.entry_of(addr)] as usize).checked_sub(1);
        monitoring.count_bits(structure, outcome);
    }

    /// Counts repeat hits the filter hands back.
    fn take(&mut self, monitoring: &mut Monitoring, (entry, reads, writes): filter::Pending) {
        let structure = self.entry_structures[entry as usize % filter::ENTRIES];
        self.repeat_hits[0] += reads;
        self.repeat_hits[1] += writes;
        monitoring.add_l1_hits(structure, reads, writes);
    }
}

/// A clean write the filter matched, or a batched access, that does not lie in one line,
/// which the filter never hands over; simulated as one access all the same.
#[cold]
#[inline(never)]
fn straddling_access(simulator: &mut Simulator, addr: u64, size: u32, kind: AccessKind) -> u32 {
    debug_assert!(
        false,
        "a straddling access at {addr:#x} owned a filter entry"
    );
    simulator.access_line(addr, size, kind).event_bits()
}

/// A thread's first simulated access: its capture is created, then the access simulated.
#[cold]
fn first_access(slot: &mut Option<ThreadCapture>, addr: u64, size: u32, kind: AccessKind) {
    *slot = new_thread_capture();
    if let Some(capture) = slot.as_mut() {
        if let Some(core) = capture.core() {
            core.refresh_filter();
        }
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
    let counting = Counting::new(&simulator);
    worker::thread_started();
    super::thread_block::call_at_thread_end(thread_ends_without_destructors);
    let monitoring = Monitoring::new(standalone());
    // The thread attributes from these data structures until its next sync point after a
    // change (`ThreadCapture::data_changed`).
    let _ = FILTER_GENERATION.try_with(|g| g.set(monitoring.finder.generation()));
    let finder = monitoring.finder.clone();
    Some(ThreadCapture {
        core: Some(Box::new(Core {
            counting,
            simulator,
            monitoring,
        })),
        shared: None,
        in_flight: 0,
        spares: None,
        counts: standalone(),
        ships: standalone() && worker::enabled(),
        free: Vec::new(),
        finder,
        line_bits: counting.line_bits,
        thread_index: THREAD_COUNTER.fetch_add(1, Ordering::Relaxed),
        published: false,
        holding: standalone() && hand_over::start_holding(),
    })
}

fn simulator_error_text(e: &SimulatorError) -> String {
    format!("epcache: cannot build the simulator: {e}")
}

/// Merges the calling thread's simulator into the process totals and starts it afresh, so
/// [`totals`] includes this thread's accesses so far. Other threads merge when they exit.
pub fn flush_current_thread() {
    let previous = state();
    set_state(BUSY);
    let _ = THREAD.try_with(|slot| {
        if let Ok(mut slot) = slot.try_borrow_mut() {
            // Dropping merges.
            slot.take();
        }
    });
    set_state(previous);
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
    let (cache, spec, error) = match process_spec() {
        Ok((text, spec)) => (text.clone(), Some(spec.clone()), None),
        Err(why) => (
            std::env::var(CACHE_ENV).unwrap_or_default(),
            None,
            Some(why.clone()),
        ),
    };
    let standalone = STANDALONE_TOTALS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    let mut report = CaptureReport::new(
        cache,
        spec,
        error,
        &totals(),
        &standalone,
        &regions::all(),
        &data::all(),
    );
    report.threads_unreported = hand_over::unreported();
    report.simulated_on_second_core = worker::simulated();
    report
}

/// Writes the run's report as JSON to `path` (what `EPCACHE_REPORT` does at exit).
pub fn write_report(path: &Path) -> Result<(), CaptureError> {
    let previous = state();
    set_state(BUSY);
    let report = report_from_totals();
    let result =
        write_whole(path, report.to_json().as_bytes()).map_err(|source| CaptureError::Report {
            path: path.to_owned(),
            source,
        });
    set_state(previous);
    result
}

/// Writes `bytes` to `path` through a temporary file beside it and a rename, so the file is
/// either the previous one or the whole new one, never a report cut short by the process
/// ending mid-write. A path that is not a regular file (`/dev/stdout`, a pipe) or whose
/// directory takes no new file is written directly.
fn write_whole(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if std::fs::metadata(path).is_ok_and(|m| !m.is_file()) {
        return std::fs::write(path, bytes);
    }
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(format!(".{}.partial", std::process::id()));
    let temporary = PathBuf::from(temporary);
    if std::fs::write(&temporary, bytes).is_err() {
        let _ = std::fs::remove_file(&temporary);
        return std::fs::write(path, bytes);
    }
    std::fs::rename(&temporary, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&temporary);
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colliding_global_names_are_told_apart_by_file() {
        let global = |name: &str, file: Option<&str>, start: u64| {
            (
                name.to_owned(),
                file.map(str::to_owned),
                AddressRange::new(start, 8),
            )
        };
        let named = distinct_names(vec![
            global("buf", Some("/src/a.c"), 0x1000),
            global("buf", Some("/src/b.c"), 0x2000),
            global("util", Some("src/a/util.c"), 0x8000),
            global("util", Some("src/b/util.c"), 0x9000),
            global("alpha::table", Some("a.c"), 0x3000),
            global("table", Some("b.c"), 0x4000),
            // One variable seen twice (two units declaring it) is not a collision.
            global("shared", Some("a.c"), 0x5000),
            global("shared", Some("b.c"), 0x5000),
            global("anon", None, 0x6000),
            global("anon", None, 0x7000),
        ]);
        let names: Vec<&str> = named.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "buf@a.c",
                "buf@b.c",
                "util@src/a/util.c",
                "util@src/b/util.c",
                "alpha::table",
                "table",
                "shared",
                "shared",
                "anon",
                "anon"
            ]
        );
    }

    /// Switches this thread's filter on, waiting a while for other tests' threads whose filters
    /// hold the tag word's shape for another L1 (one process simulates one L1, so
    /// only tests meet this).
    fn switch_on_when_shape_free(line_bits: u32, sets: u64) -> bool {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        loop {
            let word = TAG_WORD.load(Ordering::SeqCst);
            if with_filter(|f| f.switch_on(line_bits, sets, word))
                || Filter::entries_for(line_bits, sets).is_none()
                || std::time::Instant::now() > deadline
            {
                return with_filter(Filter::is_on);
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }

    /// Standalone counting as the hooks do it (the repeat-hit filter first, then the
    /// simulator's one-line path and the filter's take-over) must count exactly what counting
    /// every access's outcome through the general path counts, for every shape of hierarchy:
    /// the filter is on for write-back L1s over non-inclusive levels (LRU of 2 to 32 ways,
    /// tree-PLRU, random, an L1 with more sets than the filter has entries) and off for the
    /// inclusive and write-through ones. Mid-stream, the filter is flushed as a region boundary
    /// does and emptied as a data-structure change does.
    #[test]
    fn filtered_counting_equals_counting_every_outcome() {
        // Two structures over part of the stream's range, the second starting mid-line, so
        // attribution is compared too, on lines holding two answers as well.
        for (name, start) in [("counting_a", 0x40_0000), ("counting_b", 0x40_3010)] {
            data::register(
                name,
                AddressRange::new(start, 8 << 10),
                DataStructureKind::HeapRegistered,
            );
        }
        for (spec, filtered) in [
            ("D1=1K,2,64;LL=8K,4,64", true),
            ("D1=2K,8,64;LL=16K,16,64", true),
            ("D1=4K,16,64;L2=16K,8,64", true),
            ("D1=4K,32,64;LL=16K,4,64", true),
            ("D1=1K,4,64,plru;L2=2K,4,64;L3=16K,4,64", true),
            // Lines shorter than a filter entry: no filter (`filter::SHORTEST_LINE_BITS`).
            ("D1=1K,4,32,plru;L2=2K,4,64;L3=16K,4,64", false),
            ("D1=1K,4,64,random;LL=8K,4,64", true),
            ("D1=64K,2,64;LL=256K,4,64", true),
            // Longer lines: the entries are spaced out, down to two at 8 KiB.
            ("D1=4K,4,128;LL=16K,4,128", true),
            ("D1=16K,2,1024;LL=64K,4,1024", true),
            ("D1=32K,2,4096;LL=128K,4,4096", true),
            ("D1=64K,2,8192;LL=256K,4,8192", true),
            ("D1=2K,4,64;LL=4K,2,64,inclusive", false),
            ("D1=1K,2,64,write-through;LL=8K,4,64", false),
            // One set: the inline test needs consecutive lines in different entries.
            ("D1=512,8,64;LL=8K,4,64", false),
        ] {
            let Ok(spec) = HierarchySpec::parse(spec) else {
                panic!("spec {spec}");
            };
            let new_sim = || Simulator::new(&spec, CounterArrayConfig::default()).unwrap();
            let (mut fast_sim, mut slow_sim) = (new_sim(), new_sim());
            let mut counting = Counting::new(&fast_sim);
            let (mut fast, mut slow) = (Monitoring::new(true), Monitoring::new(true));
            if let Some((line_bits, sets)) = fast_sim.repeat_hit_shape()
                && switch_on_when_shape_free(line_bits, sets)
            {
                counting.filter_switched_on(line_bits, sets);
            }
            assert_eq!(with_filter(Filter::is_on), filtered, "{spec:?}");
            let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
            // Four streams walking 8 bytes at a time (a read, a read and a write of one element,
            // as a matrix product does), interleaved with random accesses.
            let mut walks = [0x40_0000u64, 0x40_2000, 0x40_3f00, 0x40_5000];
            let mut clean_writes = 0u32;
            let mut inline_clean_writes = 0u32;
            let mut batched = 0u32;
            for step in 0..200_000u32 {
                crate::test_rng::xorshift(&mut x);
                let (addr, size, kind) = if x % 8 < 6 {
                    let w = (x >> 8) as usize % 4;
                    walks[w] = 0x40_0000 + (walks[w] + 8 - 0x40_0000) % (24 << 10);
                    let kind = if w == 1 && x >> 40 & 1 == 1 {
                        AccessKind::Write
                    } else {
                        AccessKind::Read
                    };
                    (walks[w], 8, kind)
                } else {
                    // Addresses over 24 KiB, small and line-straddling sizes, some wide.
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
                    (0x40_0000 + x % (24 << 10), size, kind)
                };
                let write = kind == AccessKind::Write;
                // Half the accesses come from sites with the inline test (`epcache cc`), which
                // also answers writes to clean entries, leaving their dirty bits pending.
                let inline = x >> 33 & 1 == 1;
                if inline && with_filter(|f| f.inline_hit(addr, size, write)) {
                    inline_clean_writes +=
                        u32::from(write && with_filter(|f| f.dirty_pending(addr)));
                } else if inline && with_filter(|f| f.inline_miss(addr, size, write)) {
                    batched += 1;
                // What `active` and `simulate_on` do (after the inline test, if any).
                } else if !with_filter(|f| f.repeat_hit(addr, size, write)) {
                    if write && with_filter(|f| f.clean_write(addr, size)) {
                        clean_writes += 1;
                        counting.clean_write(&mut fast_sim, &mut fast, addr, size);
                    } else {
                        counting.access(&mut fast_sim, &mut fast, addr, size, kind);
                    }
                }
                let levels = counting.levels;
                slow_sim.access_observed(addr, size, kind, |a, o| slow.count(a, o, levels));
                if step % 50_000 == 25_000 {
                    let forget = step % 100_000 == 25_000;
                    counting.flush(&mut fast_sim, &mut fast, forget);
                }
            }
            counting.flush(&mut fast_sim, &mut fast, true);
            with_filter(Filter::switch_off);
            assert_eq!(fast.totals, slow.totals, "{spec:?}");
            assert_eq!(fast.structures, slow.structures, "{spec:?}");
            assert!(fast.structures.iter().filter(|c| c[0] > 0).count() >= 2);
            let stats = |s: &Simulator| s.hierarchy().stats().map(|(_, l)| *l).collect::<Vec<_>>();
            let mut fast_stats = stats(&fast_sim);
            fast_stats[0].reads += counting.repeat_hits[0];
            fast_stats[0].writes += counting.repeat_hits[1];
            assert_eq!(fast_stats, stats(&slow_sim), "{spec:?}");
            let repeats = counting.repeat_hits[0] + counting.repeat_hits[1];
            assert_eq!(
                repeats > 20_000,
                filtered,
                "{spec:?}: {repeats} repeat hits"
            );
            assert!(counting.repeat_hits[1] > 0 || !filtered, "write repeats");
            assert_eq!(
                clean_writes > 1000 && inline_clean_writes > 1000 && batched > 1000,
                filtered,
                "{spec:?}: {clean_writes} clean writes, {inline_clean_writes} inline, \
                 {batched} batched"
            );
            assert!(
                slow.totals[1] > 0 && slow.totals[5] > 0,
                "misses at two levels"
            );
        }
    }

    /// The report replaces the previous file whole, leaves no temporary behind, and still goes
    /// to a path that is not a regular file.
    #[test]
    fn reports_are_written_whole_or_not_at_all() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("report.json");
        std::fs::write(
            &path,
            "a longer previous report that must not survive in part",
        )
        .unwrap();
        write_whole(&path, b"{}").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{}");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["report.json"], "a temporary file was left behind");
        write_whole(Path::new("/dev/null"), b"{}").expect("a device is written directly");
        let missing = dir.path().join("no such directory").join("report.json");
        assert!(
            write_whole(&missing, b"{}").is_err(),
            "an unwritable path fails"
        );
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
