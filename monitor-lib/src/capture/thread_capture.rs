//! One thread's capture: its core (`counting.rs`), where the core is (on the thread, or with the
//! simulation worker), and its standalone counts on their way to the process totals.
//!
//! In standalone counting on a second core (`worker.rs`), the thread stages what reaches the
//! runtime as records in the order they happened (the filter's batch): once the batch is full
//! (the first holds 256 records, the later ones [`SHIP_AT`]) the thread puts its core in a mutex
//! it shares with the worker, sends it the batch itself (the buffer the inline miss path wrote,
//! never copied), and runs on with a spare batch. It keeps at most [`MOST_IN_FLIGHT`] batches
//! with the worker and takes the core back ([`ThreadCapture::core`], once every batch came
//! back) before anything else reads or simulates: an access that straddles lines, a region
//! boundary, a hand-over, the report, a change of data structures. A one-line access to a line
//! two data structures share is staged too (`Filter::stage_unowned`): taking the core back for
//! it stalled the pipeline at every such line. While the core is away the thread's own
//! [`StructureFinder`] keeps the whole-line cache filled for the inline miss path.
//!
//! A thread whose core counts with its filter off (it records a partial trace, counts an event
//! on L1 hits or runs an analysis) has no records to stage: every access reaches the runtime,
//! and while the thread ships, each is kept whole, in order, and handed to the worker
//! [`SHIP_AT`] at a time with the core ([`ThreadCapture::stage_unfiltered`]), which records,
//! simulates and counts them there: the thread's part is the hook and three streaming stores
//! (`streaming.rs`: every access is written for the other core, so the thread must not wait
//! to take lines back from it). An access
//! that straddles lines takes the core back (its path reads the thread's own filter). When
//! the worker cannot take a batch (a busy machine, no core spare), the thread simulates the
//! next [`UNFILTERED_HERE`] accesses at once, unstaged, before it asks again.
//!
//! Attribution is by the thread's last sync point: a finder answers from the snapshot of the
//! data structures it took last, and takes the current one only once everything captured
//! before is simulated ([`ThreadCapture::data_changed`]); attributing at simulation time lost a
//! heap array's writes when another thread freed it while they were still batched.
//!
//! On a busy machine (more runnable threads than cores) the thread stops handing batches on
//! and simulates them itself for a while (`worker.rs` says how it tells, and for how long):
//! the counts do not depend on where a batch is simulated.
//!
//! A forked child never simulates (attributing may take the data structures' lock, which a
//! parent thread may have held at the fork, and the worker did not survive it): its core is
//! `None` to every caller.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use epcache_sim::cache::AccessKind;

use super::counting::{Core, UnfilteredAccess, UnfilteredWords};
use super::filter::{self, BatchWords, Filter};
use super::structure_finder::StructureFinder;
use super::switches::{forked_child, standalone};
use super::thread_block::with_filter;
use super::totals::ThreadIdentity;
use super::worker::{Backoff, SchedClock, ShareWindow};
use super::{gate_abi, hand_over, streaming, totals, worker};

/// Order in which threads started capturing.
static THREAD_COUNTER: AtomicU32 = AtomicU32::new(0);

/// One thread's simulator; its totals join the process totals when the thread ends.
pub(super) struct ThreadCapture {
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
    spares: Option<(Sender<Shipment>, Receiver<Shipment>)>,
    /// Whether this thread counts for the standalone report (its monitoring's `counting`).
    counts: bool,
    /// Whether this thread hands its batches to the worker: standalone counting in a process
    /// where the worker is enabled.
    ships: bool,
    /// Batches the worker simulated, for the filter to fill next.
    free: Vec<BatchWords>,
    /// Room for accesses of a core that counts unfiltered ([`Self::stage_unfiltered`]); the
    /// first `kept` are kept, in order, not yet simulated. Empty until the first is kept.
    unfiltered: Box<[UnfilteredWords]>,
    kept: usize,
    /// Emptied rooms for the next accesses.
    free_unfiltered: Vec<Box<[UnfilteredWords]>>,
    /// Whether the core is with the worker for unfiltered accesses: every access joins
    /// `unfiltered` until the core is back.
    unfiltered_away: bool,
    /// Unfiltered accesses still to simulate at once, with no staging, after the worker could
    /// not take the last ones (the machine is busy, or no core is spare).
    unfiltered_here: u32,
    /// Finds whole lines for the filter while the core is away (the core's monitoring has its
    /// own finder).
    finder: StructureFinder,
    /// log2 of L1's line size.
    line_bits: u32,
    /// Who the thread is, for its rows in the report: the order in which it started
    /// capturing, its OpenMP number once seen, its core of the machine.
    identity: ThreadIdentity,
    /// While the machine is busy, how long this thread simulates its batches itself.
    backoff: Backoff,
    /// This thread's time on a CPU and waiting for one (opened at its first hand-off), and the
    /// window over which it judges whether the machine is busy.
    clock: Option<SchedClock>,
    window: ShareWindow,
    /// Whether the process totals already count this thread (it published before).
    published: bool,
    /// Whether it holds standalone counts the totals lack, as `hand_over.rs` tracks.
    pub(super) holding: bool,
}

/// Records of a batch handed to the worker: enough that a hand-off's cost (a message each
/// way, a wake-up at worst) is small beside simulating them (about 8 ns each).
const SHIP_AT: usize = 8192;

/// Batches a thread may have with the worker: two, so the worker finds the next one waiting
/// when it finishes one, while the thread runs on; a thread that gets further ahead waits.
const MOST_IN_FLIGHT: usize = 2;

/// Unfiltered accesses a thread simulates at once after the worker could not take a batch of
/// them, before it stages again and asks anew: while the machine stays busy, most accesses
/// skip the staging they would not gain by.
const UNFILTERED_HERE: u32 = 16 * SHIP_AT as u32;

/// A batch on its way to the worker, and back to the thread to be filled again.
enum Shipment {
    /// The filter's batch, with the number of records it holds.
    Records(BatchWords, usize),
    /// A room of a core's unfiltered accesses, with the number it holds.
    Unfiltered(Box<[UnfilteredWords]>, usize),
}

impl Shipment {
    /// Records or accesses it holds.
    fn len(&self) -> usize {
        match self {
            Shipment::Records(_, filled) => *filled,
            Shipment::Unfiltered(_, kept) => *kept,
        }
    }

    /// Simulates and counts what it holds with `core`, in order.
    fn simulate_on(&self, core: &mut Core) {
        match self {
            Shipment::Records(batch, filled) => core.simulate_shipped(batch, *filled),
            Shipment::Unfiltered(room, kept) => core.simulate_unfiltered(&room[..*kept]),
        }
    }
}

impl ThreadCapture {
    /// A thread's capture around `core`, with `finder` (a copy of the core's) for the filter
    /// while the core is away.
    pub(super) fn new(mut core: Core, finder: StructureFinder) -> ThreadCapture {
        let index = THREAD_COUNTER.fetch_add(1, Ordering::Relaxed);
        core.monitoring.thread_index = Some(index);
        let line_bits = core.counting.line_bits;
        // A core of a machine simulates every access in the order it happens (`cores.rs`).
        let ships = standalone() && worker::enabled() && core.machine_core().is_none();
        let machine_core = core.machine_core();
        ThreadCapture {
            core: Some(Box::new(core)),
            shared: None,
            in_flight: 0,
            spares: None,
            counts: standalone(),
            ships,
            free: Vec::new(),
            unfiltered: Box::default(),
            kept: 0,
            free_unfiltered: Vec::new(),
            unfiltered_away: false,
            unfiltered_here: 0,
            finder,
            line_bits,
            identity: ThreadIdentity {
                index,
                openmp: None,
                core: machine_core.and_then(|c| u32::try_from(c).ok()),
            },
            backoff: Backoff::new(),
            clock: None,
            window: ShareWindow::default(),
            published: false,
            holding: standalone() && hand_over::start_holding(),
        }
    }
}

impl ThreadCapture {
    /// The core, back on this thread: taken back from the worker if it has it (waiting for it
    /// to finish), with the accesses batched since simulated. `None` in a forked child, which
    /// is not monitored and must not simulate (attributing an access may take the data
    /// structures' lock, which a parent thread may have held at the fork; and the worker did
    /// not survive it), and if the worker is gone.
    pub(super) fn core(&mut self) -> Option<&mut Core> {
        if forked_child() {
            return None;
        }
        self.reclaim();
        let core = self.core.as_deref_mut()?;
        if self.kept > 0 {
            core.simulate_unfiltered(&self.unfiltered[..self.kept]);
            self.kept = 0;
        }
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
        self.unfiltered_away = false;
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
            match emptied {
                // The filter's first batch is smaller than those it fills while shipping.
                Shipment::Records(batch, _) if batch.len() == SHIP_AT => self.free.push(batch),
                Shipment::Records(..) => {}
                Shipment::Unfiltered(room, _) => self.free_unfiltered.push(room),
            }
        }
    }

    /// The access joins the filter's batch as the inline miss path would have let it, when it
    /// can: a record taking its entry over (or, for a line that is not whole, emptying it), to
    /// be simulated in order with the rest of the batch. `false` when the filter is off, the
    /// access straddles lines or the batch has no room: it needs the simulator now.
    ///
    /// Every access that reaches the runtime with the filter on comes here first, whether the
    /// thread ships its batches to a second core or not: the batch's step loop simulates a
    /// record for less than simulating the access at once costs, which drains the batch
    /// first, then settles the line's dirty mark, syncs the entry's order, counts and takes
    /// the entry over, each through the general path. A full batch goes to the worker
    /// ([`Self::ship`]) or, when the thread does not ship, is simulated here first.
    fn stage(&mut self, addr: u64, size: u32, kind: AccessKind, pc: u64) -> bool {
        if !with_filter(Filter::is_on) {
            return false;
        }
        if with_filter(Filter::batch_full) {
            if self.ships {
                self.ship();
            } else {
                // `core` simulates what is batched.
                let _ = self.core();
            }
        }
        let write = kind == AccessKind::Write;
        if with_filter(|f| f.inline_miss(addr, size, write, pc)) {
            return true;
        }
        // The line may be whole without the whole-line cache knowing it yet; if it is not,
        // the access is staged all the same, leaving its entry empty (taking the core back for
        // it stalled the pipeline at every line two arrays share).
        let (finder, line_bits) = (&mut self.finder, self.line_bits);
        with_filter(|f| {
            if finder.structure_of_line(addr, line_bits, f).1 {
                f.inline_miss(addr, size, write, pc)
            } else {
                f.stage_unowned(addr, size, write, pc)
            }
        })
    }

    /// Hands the filter's batch to the worker, and the core with the first one, giving the
    /// filter an empty batch to fill meanwhile; simulates the records here instead when no
    /// core is spare, on a busy machine (or in a forked child, where the worker does not
    /// exist).
    fn ship(&mut self) {
        // A signal handler that interrupted a miss path: the batch stays (`Filter::in_miss`).
        if forked_child()
            || !worker::core_spare()
            || with_filter(Filter::in_miss_path)
            || self.machine_busy()
        {
            // `core` simulates what is batched.
            let _ = self.core();
            return;
        }
        let Some(shared) = self.core_for_worker() else {
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
        self.send_to_worker(shared, Shipment::Records(batch, filled));
    }

    /// The mutex the worker's jobs find the core in, with the core put there if the thread
    /// has it; `None` when there is no core to count with.
    fn core_for_worker(&mut self) -> Option<Arc<Mutex<Option<Box<Core>>>>> {
        if let Some(core) = self.core.take() {
            let shared = self.shared.get_or_insert_with(Arc::default);
            *shared.lock().unwrap_or_else(|e| e.into_inner()) = Some(core);
        }
        self.shared.as_ref().map(Arc::clone)
    }

    /// Sends the worker a job that simulates `shipment` with the core in `shared`, then sends
    /// the shipment back to this thread emptied, whether or not there was a core to simulate
    /// it with.
    fn send_to_worker(&mut self, shared: Arc<Mutex<Option<Box<Core>>>>, shipment: Shipment) {
        let back = self.spares.get_or_insert_with(mpsc::channel).0.clone();
        self.in_flight += 1;
        worker::run(Box::new(move || {
            let mut core = shared.lock().unwrap_or_else(|e| e.into_inner());
            let simulated = match core.as_deref_mut() {
                Some(simulating) => {
                    let done = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        shipment.simulate_on(simulating);
                    }));
                    if done.is_err() {
                        // A bug in the simulator: the core is no longer trusted, and the thread
                        // learns it is lost when it takes it back (`reclaim`).
                        *core = None;
                    }
                    shipment.len()
                }
                None => 0,
            };
            drop(core);
            // Always sent, so the thread never waits for a batch in vain; if the thread is
            // gone, so is the need.
            let _ = back.send(shipment);
            simulated
        }));
    }

    /// An access of a thread whose core counts unfiltered (`Core::counts_unfiltered`: it
    /// records a partial trace, counts an event on L1 hits or runs an analysis), while the
    /// thread ships: kept in order, to be simulated with the next ones on the worker. Inlined:
    /// the common case is one test and a store.
    #[inline(always)]
    fn stage_unfiltered(&mut self, addr: u64, size: u32, kind: AccessKind, pc: u64) {
        let one_line = self.in_one_line(addr, size);
        match self.unfiltered.get_mut(self.kept) {
            Some(slot) if one_line => {
                let access = UnfilteredAccess {
                    addr,
                    pc,
                    size,
                    kind,
                };
                streaming::store(slot, access.words());
                self.kept += 1;
            }
            _ => self.stage_unfiltered_otherwise(addr, size, kind, pc),
        }
    }

    /// [`Self::stage_unfiltered`] of an access that finds no room (the kept ones go to the
    /// worker first) or that straddles lines (simulated here after those kept: its path reads
    /// the thread's own filter).
    #[cold]
    #[inline(never)]
    fn stage_unfiltered_otherwise(&mut self, addr: u64, size: u32, kind: AccessKind, pc: u64) {
        if self.in_one_line(addr, size) {
            if self.kept > 0 {
                self.ship_unfiltered();
            }
            if self.unfiltered_here == 0 {
                if self.unfiltered.is_empty() {
                    self.unfiltered = self.free_unfiltered.pop().unwrap_or_else(new_room);
                }
                // There is room now.
                return self.stage_unfiltered(addr, size, kind, pc);
            }
            // The worker could not take them, and simulated here they went first: this
            // access and the next ones follow them here.
            self.unfiltered_here -= 1;
        }
        if let Some(core) = self.core() {
            core.access_unfiltered(addr, size, kind, pc);
        }
    }

    /// Whether an access of `size` bytes at `addr` lies in one L1 line.
    #[inline(always)]
    fn in_one_line(&self, addr: u64, size: u32) -> bool {
        let last = addr.wrapping_add(u64::from(size.max(1)) - 1);
        (addr ^ last) >> self.line_bits == 0
    }

    /// Hands the unfiltered accesses to the worker, and the core with the first of them, as
    /// [`Self::ship`] does the filter's batch; simulates them here when no core is spare.
    fn ship_unfiltered(&mut self) {
        if forked_child() || !worker::core_spare() || self.machine_busy() {
            // `core` simulates what is kept.
            let _ = self.core();
            self.kept = 0;
            self.unfiltered_here = UNFILTERED_HERE;
            return;
        }
        let Some(shared) = self.core_for_worker() else {
            // No core to count them with.
            self.kept = 0;
            return;
        };
        self.wait_in_flight(MOST_IN_FLIGHT - 1);
        let next = self.free_unfiltered.pop().unwrap_or_else(new_room);
        let room = std::mem::replace(&mut self.unfiltered, next);
        let kept = std::mem::take(&mut self.kept);
        // The worker reads what the streaming stores wrote only after this.
        streaming::publish();
        self.unfiltered_away = true;
        self.send_to_worker(shared, Shipment::Unfiltered(room, kept));
    }

    /// Whether this thread simulates its batches itself for now because the machine has more
    /// runnable threads than cores: the worker found itself kept waiting for a core, or this
    /// thread did, over their last windows (`worker.rs`); then it falls back for a while, and
    /// tries the worker again after it.
    fn machine_busy(&mut self) -> bool {
        if !worker::falls_back_when_busy() {
            return false;
        }
        let now = Instant::now();
        if self.still_falling_back(now) {
            return true;
        }
        let clock = self.clock.get_or_insert_with(SchedClock::for_this_thread);
        let waited_here = clock.read().and_then(|r| self.window.add(r)) == Some(true);
        // Both asked: taking the worker's verdict clears it.
        if worker::take_contended() | waited_here {
            worker::fell_back();
            self.backoff.fall_back(now);
            self.window.restart();
            return true;
        }
        false
    }

    /// Whether the thread is still to simulate on its own at `now` after a fallback; once its
    /// time is up it tries the worker again, judging the machine afresh.
    fn still_falling_back(&mut self, now: Instant) -> bool {
        if !self.backoff.is_falling_back() {
            return false;
        }
        if self.backoff.simulating_here(now) {
            return true;
        }
        // What either side measured before is old.
        let _ = worker::take_contended();
        self.window.restart();
        false
    }

    /// The data structures changed since this thread's last sync point: everything it captured
    /// before is simulated and attributed under the old ones (batches with the worker, the
    /// filter's batch and its pending hits; the filter forgets its entries and whole lines), then
    /// its finders take the new ones, its requests follow their data, and its filter is set for
    /// what they count.
    pub(super) fn data_changed(&mut self) {
        // A forked child attributes nothing, and must not take the data structures' lock.
        if forked_child() {
            return;
        }
        if let Some(core) = self.core() {
            if with_filter(Filter::is_on) || core.machine_core().is_some() {
                core.flush_filter(true);
            }
            core.monitoring.finder.refresh();
            // A request that found its data counts over it from now: an event on L1 hits there
            // turns the repeat-hit filter off, whose hits no request would see.
            if core.monitoring.follow_moved_data(&mut core.simulator) {
                core.refresh_filter();
            }
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
    pub(super) fn publish(&mut self) {
        let new_thread = !self.published;
        let who = self.identity;
        let Some(core) = self.core() else {
            return;
        };
        // Only the standalone report gathers counts at exit; a tool's requests publish their
        // results at each region's end already.
        if !core.monitoring.counting {
            return;
        }
        core.flush_filter(false);
        totals::merge_into_totals(&core.simulator, core.counting.repeat_hits, new_thread);
        core.simulator.reset_level_stats();
        core.counting.repeat_hits = [0; 2];
        core.monitoring
            .hand_over_counts(|regions, structures, lines, whole| {
                totals::merge_standalone(regions, structures, lines, whole, who)
            });
        self.published = true;
        self.let_go();
    }

    /// The thread's OpenMP number as the OpenMP runtime says it now, at a monitored region's
    /// entry (in a parallel region when the thread is a team's worker); kept from the first
    /// entry that knew one other than 0, since every thread is 0 outside a parallel region.
    /// The runtime's index of this thread (its order among the threads that captured).
    pub(super) fn index(&self) -> u32 {
        self.identity.index
    }

    pub(super) fn note_openmp_number(&mut self) {
        if !self.counts || self.identity.openmp.is_some_and(|n| n != 0) {
            return;
        }
        if let Some(number) = gate_abi::openmp_thread_number() {
            self.identity.openmp = Some(number);
        }
    }

    /// The thread holds standalone counts again (a region begins after a hand-over).
    pub(super) fn hold(&mut self) {
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
        let who = self.identity;
        if let Some(core) = self.core() {
            core.flush_filter(true);
            with_filter(Filter::switch_off);
            core.monitoring.close_open_regions();
            totals::merge_into_totals(&core.simulator, core.counting.repeat_hits, new_thread);
            totals::merge_standalone(
                &core.monitoring.regions,
                &core.monitoring.structures,
                &core.monitoring.lines,
                &core.monitoring.totals,
                who,
            );
        } else {
            // Nothing can be counted (a forked child, or the worker is gone): the filter's
            // slot and contents go.
            with_filter(Filter::abandon);
        }
        worker::thread_ended();
        self.let_go();
    }
}

/// Room for [`SHIP_AT`] unfiltered accesses.
fn new_room() -> Box<[UnfilteredWords]> {
    vec![UnfilteredWords::default(); SHIP_AT].into_boxed_slice()
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

impl ThreadCapture {
    /// Kept out of line, so the thread-local access around it stays small enough to inline.
    #[inline(never)]
    pub(super) fn access(&mut self, addr: u64, size: u32, kind: AccessKind, pc: u64) {
        // A thread on a core of the machine ships nothing and has no batch (its filter is off,
        // `Core::refresh_filter`): its accesses go straight to its log, which saves about a
        // tenth of their instructions.
        if let Some(core) = self.core.as_deref_mut()
            && core.logs_to_machine()
            && !forked_child()
        {
            core.access_on_machine(addr, size, kind, pc);
            return;
        }
        // Nor does a thread whose filter is off (it records a partial trace, or counts an
        // event on L1 hits or an analysis): with no batch and no entries, its accesses need
        // none of the filter's bookkeeping, and while it ships they go to the worker whole.
        if self.unfiltered_away && !forked_child() {
            self.stage_unfiltered(addr, size, kind, pc);
            return;
        }
        if let Some(core) = self.core.as_deref_mut()
            && core.counts_unfiltered()
            && !forked_child()
        {
            if !self.ships {
                core.access_unfiltered(addr, size, kind, pc);
            } else if self.unfiltered_here > 0 {
                // Nothing is kept while the thread simulates at once (`ship_unfiltered`).
                debug_assert_eq!(self.kept, 0);
                self.unfiltered_here -= 1;
                core.access_unfiltered(addr, size, kind, pc);
            } else {
                self.stage_unfiltered(addr, size, kind, pc);
            }
            return;
        }
        self.access_filtered(addr, size, kind, pc);
    }

    /// [`Self::access`] of a thread with its filter on (or not counting): staged for the
    /// worker, or simulated here. Out of line, so the two paths above keep a small frame.
    #[inline(never)]
    fn access_filtered(&mut self, addr: u64, size: u32, kind: AccessKind, pc: u64) {
        if self.stage(addr, size, kind, pc) {
            return;
        }
        if let Some(core) = self.core() {
            core.access(addr, size, kind, pc);
        }
    }

    /// `Counting::clean_write`, out of line for the same reason as [`Self::access`].
    #[inline(never)]
    pub(super) fn clean_write(&mut self, addr: u64, size: u32, slot: usize, pc: u64) {
        if let Some(core) = self.core() {
            core.counting.clean_write(
                &mut core.simulator,
                &mut core.monitoring,
                addr,
                size,
                slot,
                pc,
            );
        }
    }
}
