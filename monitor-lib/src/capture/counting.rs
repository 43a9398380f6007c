//! How a thread's accesses are simulated and counted: its core (simulator, monitoring and the
//! standalone counting), which may run on the simulation worker while the thread runs on, and
//! the standalone counting that keeps the repeat-hit filter's answers exact.
//!
//! Most accesses of a kernel walking its arrays never reach the simulator in standalone counting:
//! the repeat-hit filter (`filter.rs`) answers them, inline or in the hooks, with an increment.
//! What reaches [`Counting::access`] is simulated through the one-line path
//! (`Simulator::access_in_line`, outcomes as event bits in a register), counted per level and
//! per data structure (`Monitoring::count_bits`), and its block takes over a slot of its set's
//! filter entry; the slot's old owner's hits are counted then, for the old owner's data
//! structure, which is why each slot's data structure lives here rather than in the filter: a
//! record not yet simulated leaves it behind the filter. A pending dirty mark of the inline test
//! is settled (`Filter::settle`, `Simulator::mark_l1_dirty`) before an access that could evict
//! its line.
//!
//! The filter counts hits on any of a set's few most recent lines and keeps only their order,
//! so this side keeps which line each slot stands for (`Counting::slot_blocks`) and, before the
//! simulator next uses a set, makes those lines the most recent in the entry's order
//! (`Counting::follow_order`: from a record's order byte, or the filter's own on the runtime's
//! path), unless the simulator follows that order already. L1's LRU state is then what
//! simulating every hit would have left, and the next miss evicts what it would have.
//!
//! Records the inline miss path batched are simulated before anything else touches the
//! simulator or the counts (before an access the runtime simulates itself, a clean write, and
//! every flush). They are simulated by one function wherever they are, on the thread or on the
//! worker ([`simulate_records`]): they are the simulator's *steps* (`cache::Steps`), so on the
//! two-level shape they run through the hierarchy's step loop with its constants in registers;
//! the per-record state travels by value beside each step (`Steps::Context`). A record settles
//! its order and its old owner's dirty mark in L1 itself, through the loop's `SettleL1`, and
//! only when it has one to settle: most records have neither, so they build no list of lines
//! for the loop to scan.
//!
//! A thread that is a core of the machine `EPCACHE_CORES` asks for (`cores.rs`) takes none of
//! these paths: its filter is off, and each access goes to its log (`access_log.rs`), to be
//! simulated on the machine in time order with the other threads' (`Core::access_on_machine`);
//! the thread counts it per level, data structure and coherence event later, with no lock
//! held, since attributing may take the data structures' lock, and always before its counts
//! are read ([`Core::flush_filter`] settles the log first).
//!
//! A thread whose filter is off (it records a partial trace, counts an event on L1 hits or runs
//! an analysis) has no batch and no entries to keep, so its accesses skip all of that
//! ([`Core::access_unfiltered`]): the recording thread of a partial trace spent a seventh of its
//! instructions on bookkeeping that found nothing to do. Recording, simulating and counting such
//! an access read nothing of the thread's own, so a thread that ships hands its accesses to the
//! worker whole ([`Core::simulate_unfiltered`]), where they run as they would have on the thread.
//!
//! Exactness is tested below: the hooks' logic (half through the inline sequence's model) against
//! counting every outcome through the general per-line path, for every shape of hierarchy.

use epcache_inline::layout::SLOTS;
use epcache_inline::order::{self, OrderTables};
use epcache_sim::cache::{AccessKind, COHERENCE_BITS, RESULT_BITS};
use epcache_sim::simulator::capture_path::{CaptureFastPath, SettleL1};
use epcache_sim::simulator::{Simulator, line_pieces};

use super::access_log::Simulated;
use super::cores;
use super::filter::{self, Filter, Record, RecordCells, RecordWords};
use super::monitoring::Monitoring;
use super::thread_block::{with_filter, with_hooks};
use super::{state_memory, totals, tracing};

/// The part of a thread's capture that simulates and counts, which can run on the simulation
/// worker while the thread runs on.
pub(super) struct Core {
    pub(super) simulator: Simulator,
    pub(super) monitoring: Monitoring,
    pub(super) counting: Counting,
    /// The thread's seat at the machine `EPCACHE_CORES` asks for (`cores.rs`), which then
    /// simulates its accesses instead of `simulator`'s own hierarchy; `None` without one.
    seat: Option<cores::Seat>,
    /// The per-line pieces of an access wider than a line with their outcomes' event bits,
    /// simulated on the machine at once and counted once its lock is let go.
    machine_pieces: Vec<(u64, u32)>,
    /// The partial trace `EPCACHE_TRACE` asks for, when this thread records it (`tracing/`):
    /// then, as on a core of a machine, every access must reach [`Core::access`].
    pub(super) tracer: Option<Box<tracing::Recorder>>,
    /// Whether this thread's repeat-hit filter is on, as [`Core::refresh_filter`] last set it
    /// (the only place that switches it on): while it is off, no access is batched and no
    /// entry holds counts, so an access needs none of the filter's bookkeeping
    /// ([`Core::access_unfiltered`]).
    filter_on: bool,
    /// The simulator's hierarchy, counted among the threads' while it lives.
    _memory: state_memory::Held,
}

impl Core {
    /// A thread's core: its simulator (whose hierarchy simulates unless `seat` is at the
    /// machine), its monitoring and its counting.
    pub(super) fn new(
        simulator: Simulator,
        memory: state_memory::Held,
        mut monitoring: Monitoring,
        seat: Option<cores::Seat>,
    ) -> Core {
        monitoring.on_machine = seat.is_some();
        Core {
            counting: Counting::new(&simulator),
            simulator,
            monitoring,
            seat,
            machine_pieces: Vec::with_capacity(2),
            tracer: tracing::claim(),
            filter_on: false,
            _memory: memory,
        }
    }

    /// The thread's core of the machine, when it is one.
    pub(super) fn machine_core(&self) -> Option<usize> {
        self.seat.as_ref().map(cores::Seat::core)
    }

    /// Adds the repeat-hit filter's pending counts to the thread's and settles its pending
    /// dirty marks; with `forget`, empties it too (the simulator goes away, data structures
    /// changed, or the table switches off). On a core of the machine, every access logged is
    /// simulated and counted first.
    pub(super) fn flush_filter(&mut self, forget: bool) {
        self.settle_machine();
        self.counting
            .flush(&mut self.simulator, &mut self.monitoring, forget);
    }

    /// On a core of the machine: simulates every waiting access and counts this thread's.
    fn settle_machine(&mut self) {
        let Core {
            simulator,
            monitoring,
            seat,
            ..
        } = self;
        if let Some(seat) = seat {
            seat.settle(|s| count_on_machine(simulator, monitoring, s));
        }
    }

    /// Switches the repeat-hit filter on or off for what the thread counts now: on only in
    /// standalone counting with no event on L1 hits and no analysis.
    pub(super) fn refresh_filter(&mut self) {
        // On a core of a machine every access must reach it (`cores.rs`).
        let on = self.seat.is_none()
            && self.tracer.is_none()
            && self.monitoring.counting
            && self.simulator.l1_hits_unobserved();
        let shape = on.then(|| self.simulator.repeat_hit_shape()).flatten();
        if let Some(shape) = shape
            && with_hooks(|h| h.switch_filter_on(shape.line_bits, shape.sets, usable_slots(shape)))
        {
            let usable = usable_slots(shape);
            self.counting
                .filter_switched_on(shape.line_bits, shape.sets, usable);
            self.filter_on = true;
        } else {
            self.flush_filter(true);
            with_filter(Filter::switch_off);
            self.filter_on = false;
        }
    }

    /// Whether an access of this thread is counted with no filter to keep
    /// ([`Self::access_unfiltered`]): standalone counting, not on a core of the machine, the
    /// filter off (a partial trace being recorded, an event on L1 hits, an analysis).
    #[inline]
    pub(super) fn counts_unfiltered(&self) -> bool {
        !self.filter_on && self.seat.is_none() && self.monitoring.counting
    }

    /// [`Self::access`] of a thread that [`Self::counts_unfiltered`]: what `Counting::access`
    /// does, without the batch to drain, the dirty marks to settle and the entry to take
    /// over, none of which exist while the filter is off. The recording thread of a partial
    /// trace takes this path at every access.
    #[inline(never)]
    pub(super) fn access_unfiltered(&mut self, addr: u64, size: u32, kind: AccessKind, pc: u64) {
        debug_assert!(self.counts_unfiltered() && !with_filter(Filter::batch_waiting));
        self.unfiltered(addr, size, kind, pc);
    }

    /// Simulates and counts, in order, accesses a thread that [`Self::counts_unfiltered`] kept
    /// for the worker (`ThreadCapture::stage_unfiltered`), each as [`Self::access_unfiltered`]
    /// would have when it happened; runs on the worker or on the thread.
    pub(super) fn simulate_unfiltered(&mut self, accesses: &[UnfilteredWords]) {
        for &words in accesses {
            let a = UnfilteredAccess::from_words(words);
            self.unfiltered(a.addr, a.size, a.kind, a.pc);
        }
    }

    /// [`Self::access_unfiltered`]'s work, wherever it runs: nothing in it reads the thread's
    /// own state, so the worker runs it too.
    #[inline(always)]
    fn unfiltered(&mut self, addr: u64, size: u32, kind: AccessKind, pc: u64) {
        self.record_trace(addr, size, kind, pc);
        match self.simulator.access_in_line(addr, size, kind) {
            Some(outcome) => {
                let structure = self.monitoring.finder.structure_of(addr);
                self.monitoring.count_bits(structure, outcome, pc);
            }
            None => self.counting.access_lines(
                &mut self.simulator,
                &mut self.monitoring,
                addr,
                size,
                kind,
                pc,
            ),
        }
    }

    /// Simulates and counts the first `filled` records of a batch the thread handed over, in
    /// order; runs on the worker.
    pub(super) fn simulate_shipped(&mut self, batch: &[RecordCells], filled: usize) {
        totals::count_batched(filled);
        simulate_records(
            &mut self.simulator,
            &mut self.counting,
            &mut self.monitoring,
            filter::records_of(batch, filled),
        );
    }

    /// Simulates and counts the records waiting in the filter's batch.
    pub(super) fn drain_batch(&mut self) {
        self.counting
            .drain_batch(&mut self.simulator, &mut self.monitoring);
    }
}

/// An access of a thread that counts unfiltered, kept in order for the worker to simulate
/// ([`Core::simulate_unfiltered`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct UnfilteredAccess {
    pub(super) addr: u64,
    /// Its code address (0: unknown).
    pub(super) pc: u64,
    pub(super) size: u32,
    pub(super) kind: AccessKind,
}

/// An [`UnfilteredAccess`] as the words the thread stores (`streaming.rs` writes words).
pub(super) type UnfilteredWords = [u64; 3];

impl UnfilteredAccess {
    /// The access as words: its address, its code address, and its size with the kind above.
    #[inline(always)]
    pub(super) fn words(self) -> UnfilteredWords {
        let write = u64::from(self.kind == AccessKind::Write);
        [self.addr, self.pc, u64::from(self.size) | write << 32]
    }

    /// The access [`Self::words`] made.
    #[inline(always)]
    pub(super) fn from_words([addr, pc, rest]: UnfilteredWords) -> UnfilteredAccess {
        let kind = if rest >> 32 & 1 == 1 {
            AccessKind::Write
        } else {
            AccessKind::Read
        };
        UnfilteredAccess {
            addr,
            pc,
            size: rest as u32,
            kind,
        }
    }
}

/// Simulates and counts records of the inline miss path (`filter.rs`) in order, each as
/// [`Counting::access`] would have when it happened: the old owner's hits are counted for its
/// data structure, its pending dirty mark settled, the access simulated and counted, and its
/// data structure given to the entry. Needs nothing from the filter, so it runs on the
/// simulation worker too.
pub(super) fn simulate_records(
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
    /// The line table's node of the regions open, which no record changes
    /// (`Monitoring::line_node`).
    line_node: u32,
    /// The old owners' hits, `(reads, writes)`, not yet in the totals.
    hits: (u64, u64),
}

/// What counting a record's outcome needs: its data structure (index + 1, 0 for none, the
/// form the record and the line table keep it in) and code address.
#[derive(Debug, Clone, Copy)]
struct RecordContext {
    structure: u32,
    code: u64,
}

impl<'a, I: Iterator<Item = RecordWords>> StagedRecords<'a, I> {
    fn new(records: I, counting: &'a mut Counting, monitoring: &'a mut Monitoring) -> Self {
        StagedRecords {
            records,
            line_bits: counting.line_bits,
            entry_mask: counting.entry_mask,
            line_node: monitoring.line_node(),
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

impl<I: Iterator<Item = RecordWords>> epcache_sim::simulator::capture_path::Steps
    for StagedRecords<'_, I>
{
    type Context = RecordContext;
    /// The miss path and `Filter::append_record` record only accesses within one line.
    const ONE_LINE: bool = true;

    #[inline(always)]
    fn next_step<const LINE_BITS: u32, L: SettleL1>(
        &mut self,
        l1: &mut L,
    ) -> Option<(epcache_sim::simulator::capture_path::Step, RecordContext)> {
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
        let entry = ((r.addr >> line_bits) as usize & self.entry_mask) % filter::ENTRIES;
        // The order the hits since the entry's last record left, applied before the access;
        // the slot it took is the least recent one.
        self.counting.follow_order(entry, r.order, l1);
        let slot = self.counting.take_slot(entry, r.order, r.addr >> line_bits);
        // The slot's structure becomes the access's (0 for a line that is not whole, whose
        // slot the miss path left empty) now rather than after the access is simulated, which
        // reads no slot's structure.
        let old_owner = std::mem::replace(
            &mut self.counting.slot_structures[slot],
            r.structure.unwrap_or(0),
        );
        // Added whatever they are: nine records in ten bring hits, and the test cost more than
        // the adds it saved.
        let (reads, writes) = r.old_hits;
        self.hits.0 += reads;
        self.hits.1 += writes;
        self.monitoring
            .add_l1_hits_to_structure(old_owner, reads, writes);
        // The old owner's write the inline test counted, settled before the access.
        if r.old_dirty {
            l1.mark_dirty(r.old_tag >> line_bits);
        }
        let context = RecordContext {
            structure: record_structure(self.monitoring, &r),
            code: r.code,
        };
        let step = epcache_sim::simulator::capture_path::Step {
            addr: r.addr,
            size: r.size,
            kind: if r.write {
                AccessKind::Write
            } else {
                AccessKind::Read
            },
        };
        Some((step, context))
    }

    #[inline(always)]
    fn outcome(&mut self, context: RecordContext, bits: u32) {
        let structure = (context.structure as usize).checked_sub(1);
        self.monitoring.count_bits(structure, bits, context.code);
    }

    #[inline(always)]
    fn l1_hit(&mut self, context: RecordContext, kind: AccessKind) {
        self.monitoring
            .count_l1_hit(context.structure, kind == AccessKind::Write);
    }

    #[inline(always)]
    fn l1_miss(&mut self, context: RecordContext, kind: AccessKind, l2_missed: bool) {
        self.monitoring.count_two_level_miss(
            context.structure,
            kind == AccessKind::Write,
            l2_missed,
            context.code,
            self.line_node,
        );
    }
}

/// The data structure a record is counted for. The miss path appends only one-line accesses
/// in lines its whole-line cache holds, and the record carries the line's data structure from
/// it: the answer of the data structures this thread attributes with until its next sync
/// point, which is also what the simulating side's finder would answer. A record of a line
/// that is not whole (`Filter::stage_unowned`) is counted for its first byte's.
/// The answer is the structure's index + 1, 0 for none.
#[inline(always)]
fn record_structure(monitoring: &mut Monitoring, r: &Record) -> u32 {
    match r.structure {
        Some(s) => {
            debug_assert_eq!(
                (s as usize).checked_sub(1),
                monitoring.finder.structure_of(r.addr)
            );
            s
        }
        None => monitoring
            .finder
            .structure_of(r.addr)
            .map_or(0, |s| s as u32 + 1),
    }
}

impl Core {
    /// Simulates (and in standalone mode counts) one access. `#[inline]` so that it is inlined
    /// into `ThreadCapture::access` across the codegen units (the runtime is built without
    /// LTO), as it was when both lived in one module: the call cost about 9% of the path.
    #[inline]
    pub(super) fn access(&mut self, addr: u64, size: u32, kind: AccessKind, pc: u64) {
        self.record_trace(addr, size, kind, pc);
        if self.seat.is_some() {
            self.access_on_machine(addr, size, kind, pc);
            return;
        }
        if self.monitoring.counting {
            self.counting.access(
                &mut self.simulator,
                &mut self.monitoring,
                addr,
                size,
                kind,
                pc,
            );
        } else {
            self.uncounted(addr, size, kind);
        }
    }

    /// Records the access in the partial trace this thread writes, if any; a recorder that
    /// gives up (the budget is reached, the file cannot be written) is dropped.
    #[inline(always)]
    fn record_trace(&mut self, addr: u64, size: u32, kind: AccessKind, pc: u64) {
        if let Some(tracer) = &mut self.tracer
            && !tracer.record(addr, size, kind, pc)
        {
            self.tracer = None;
        }
    }

    /// Whether every access of the thread goes to its log on the machine and nowhere else (it
    /// has a seat and records no partial trace).
    #[inline]
    pub(super) fn logs_to_machine(&self) -> bool {
        self.seat.is_some() && self.tracer.is_none()
    }

    /// An access of a thread on a core of the machine: logged, to be simulated in time order
    /// with the other threads' and counted later (`cores.rs`); one wider than a line is
    /// simulated at once, after every waiting access, and counted per line. A call of its
    /// own, as `access_unfiltered` is: inlined, it gave `ThreadCapture::access` a frame that
    /// every path through it pays.
    #[inline(never)]
    pub(super) fn access_on_machine(&mut self, addr: u64, size: u32, kind: AccessKind, pc: u64) {
        let Core {
            simulator,
            monitoring,
            seat: Some(seat),
            ..
        } = self
        else {
            return;
        };
        if u64::from(size) <= seat.line_size() {
            seat.log(addr, size, kind, pc, |s| {
                count_on_machine(simulator, monitoring, s);
            });
            return;
        }
        self.wide_access_on_machine(addr, size, kind, pc);
    }

    /// [`Self::access_on_machine`] of an access wider than a line, out of line (it is rare).
    #[cold]
    #[inline(never)]
    fn wide_access_on_machine(&mut self, addr: u64, size: u32, kind: AccessKind, pc: u64) {
        let Core {
            simulator,
            monitoring,
            machine_pieces,
            seat: Some(seat),
            ..
        } = self
        else {
            return;
        };
        machine_pieces.clear();
        let core = seat.core();
        seat.simulate_now(
            |machine| {
                for (piece, piece_size) in line_pieces(addr, size, machine.line_size()) {
                    machine_pieces
                        .push((piece, machine.access_bits(core, piece, piece_size, kind)));
                }
            },
            |s| count_on_machine(simulator, monitoring, s),
        );
        for &(piece, bits) in machine_pieces.iter() {
            count_on_machine(
                simulator,
                monitoring,
                Simulated {
                    addr: piece,
                    pc,
                    bits,
                },
            );
        }
    }

    /// Out of line, so the standalone path around it keeps a small frame.
    #[inline(never)]
    fn uncounted(&mut self, addr: u64, size: u32, kind: AccessKind) {
        self.simulator.access(addr, size, kind);
    }
}

/// Counts one access (or line of one) the machine simulated for this thread: in the
/// simulator's totals and monitor, and, in standalone counting, per level, data structure and
/// coherence event, all from the outcome's event bits as the log keeps them. Inlined into the
/// loop that counts a log's simulated accesses: a call per access cost a large frame.
#[inline(always)]
fn count_on_machine(simulator: &mut Simulator, monitoring: &mut Monitoring, s: Simulated) {
    simulator.count_machine_bits(s.addr, s.bits);
    if !monitoring.counting {
        return;
    }
    let structure = monitoring.finder.structure_of(s.addr);
    monitoring.count_bits(structure, s.bits & RESULT_BITS, s.pc);
    let coherence = s.bits & COHERENCE_BITS;
    if coherence != 0 {
        monitoring.count_coherence(structure, coherence, s.pc);
    }
}

/// A [`Counting::slot_blocks`] slot standing for no line.
const NO_BLOCK: u64 = u64::MAX;

/// How a thread in standalone mode counts the accesses it simulates.
#[derive(Debug, Clone)]
pub(super) struct Counting {
    /// The hierarchy's depth, for counting without asking it per access.
    levels: usize,
    /// log2 of L1's line size.
    pub(super) line_bits: u32,
    /// L1 read and write hits the repeat-hit filter counted, which the simulator's L1 totals
    /// lack.
    pub(super) repeat_hits: [u64; 2],
    /// The filter's entries in use less one: `(addr >> line_bits) & entry_mask` is an
    /// address's entry, as `Filter::index` computes it.
    entry_mask: usize,
    /// Slots of each entry in use, and their order tables (`Filter::switch_on`).
    usable: usize,
    tables: OrderTables,
    /// The data structure (index + 1, 0 for none) of each filter slot's owner (numbered
    /// `entry * SLOTS + slot`), as of the last access simulated for it; a record not yet
    /// simulated leaves it behind the filter, which is why it lives here rather than in the
    /// filter.
    slot_structures: [u32; filter::ENTRIES * SLOTS],
    /// The L1 block each slot stands for in the simulator's order of its set (also a line that
    /// is not whole, whose slot holds no tag), `NO_BLOCK` for none: the lines to make the most
    /// recent, in the entry's order, when the filter's hits changed it.
    slot_blocks: [u64; filter::ENTRIES * SLOTS],
    /// Each entry's order byte as the simulator's L1 follows it now.
    synced_orders: [u8; filter::ENTRIES],
}

impl Counting {
    pub(super) fn new(simulator: &Simulator) -> Self {
        Counting {
            levels: simulator.hierarchy().depth(),
            line_bits: simulator.hierarchy().line_size(0).trailing_zeros(),
            repeat_hits: [0; 2],
            entry_mask: 0,
            usable: 1,
            tables: OrderTables::new(1),
            slot_structures: [0; filter::ENTRIES * SLOTS],
            slot_blocks: [NO_BLOCK; filter::ENTRIES * SLOTS],
            synced_orders: [0; filter::ENTRIES],
        }
    }

    /// The filter is on for L1's shape, `usable` slots an entry (`Filter::switch_on`, which
    /// leaves a table that is on as it is). The slots' lines are kept: every flush that empties
    /// the table forgets them here too ([`Self::flush`]), and switching off needs one.
    fn filter_switched_on(&mut self, line_bits: u32, sets: u64, usable: usize) {
        self.entry_mask = Filter::entries_for(line_bits, sets).unwrap_or(1) - 1;
        let usable = usable.clamp(1, SLOTS);
        if usable != self.usable {
            self.usable = usable;
            self.tables = OrderTables::new(usable);
        }
    }

    /// The filter emptied `entries`: their slots stand for no line, in the identity order.
    fn forget_entries(&mut self, entries: impl Iterator<Item = usize>) {
        for e in entries {
            let e = e % filter::ENTRIES;
            self.slot_blocks[e * SLOTS..][..SLOTS].fill(NO_BLOCK);
            self.synced_orders[e] = 0;
        }
    }

    /// Makes `l1` follow the order `order` of entry `e`'s slots (nothing to do when it does
    /// already, as it mostly does); it then does.
    #[inline(always)]
    fn follow_order<L: SettleL1>(&mut self, e: usize, order: u8, l1: &mut L) {
        let synced = self.synced_orders[e];
        if synced != order {
            self.follow_changed_order(e, synced, order, l1);
        }
    }

    /// [`Self::follow_order`] when `l1` follows `synced`, another order.
    ///
    /// Most often the entry's hits since the simulator last followed it come to one slot moved
    /// to the front, and only that slot's line is made recent (one step, not one per slot);
    /// otherwise every slot's line is, least recent first.
    #[inline(always)]
    fn follow_changed_order<L: SettleL1>(&mut self, e: usize, synced: u8, order: u8, l1: &mut L) {
        self.synced_orders[e] = order;
        // The most recent slot is the stored byte's low bits: the whole order is unpacked
        // only for a replay.
        let first = usize::from(order & order::MOST_RECENT_MASK);
        if self.tables.after_hit[first][usize::from(synced)] == order {
            let block = self.slot_blocks[e * SLOTS + first];
            if block != NO_BLOCK {
                l1.make_recent(block);
            }
            return;
        }
        for block in self.replay_order(e, order) {
            if block != NO_BLOCK {
                l1.make_recent(block);
            }
        }
    }

    /// The lines of every slot of entry `e` to make the most recent in the order `order`,
    /// least recent first, [`NO_BLOCK`] for a slot standing for none. Out of line, rarer
    /// than one slot moved to the front, and it takes no `SettleL1`: the step loop's would
    /// then be built in memory for every record.
    #[inline(never)]
    fn replay_order(&self, e: usize, order: u8) -> [u64; SLOTS] {
        let slots = order::by_recency(order);
        let mut blocks = [NO_BLOCK; SLOTS];
        for (n, p) in (0..self.usable).rev().enumerate() {
            blocks[n] = self.slot_blocks[e * SLOTS + slots[p]];
        }
        blocks
    }

    /// Makes the simulator's L1 follow the filter's order of entry `e` now.
    #[inline(always)]
    fn sync_order(&mut self, simulator: &mut Simulator, f: &Filter, e: usize) {
        let e = e % filter::ENTRIES;
        self.follow_order(e, f.order_of(e), simulator);
    }

    /// An access to `block` missed entry `e`'s slots in the order `before` (after the
    /// simulator followed it): it takes the least recent slot, whose number across the table
    /// is returned, and the simulator follows the order after it once it is simulated.
    #[inline(always)]
    fn take_slot(&mut self, e: usize, before: u8, block: u64) -> usize {
        let b = usize::from(before);
        let slot = e * SLOTS + usize::from(self.tables.victim[b]) % SLOTS;
        self.slot_blocks[slot] = block;
        self.synced_orders[e] = self.tables.after_miss[b];
        slot
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
    /// Misses are counted for the access's code address `pc` too (0: unknown).
    #[inline(always)]
    fn access(
        &mut self,
        simulator: &mut Simulator,
        monitoring: &mut Monitoring,
        addr: u64,
        size: u32,
        kind: AccessKind,
        pc: u64,
    ) {
        // Accesses the inline miss path batched come first.
        self.drain_batch(simulator, monitoring);
        // A write the inline test left dirty pending in this line's entry is settled first,
        // and the order of its hits applied: this access may evict one of its lines.
        let line = addr >> self.line_bits;
        let e = self.entry_of(addr);
        with_filter(|f| {
            f.settle(line, |block| simulator.mark_l1_dirty(block));
            self.sync_order(simulator, f, e);
        });
        let Some(outcome) = simulator.access_in_line(addr, size, kind) else {
            self.access_lines(simulator, monitoring, addr, size, kind, pc);
            return;
        };
        let write = kind == AccessKind::Write;
        with_filter(|f| {
            let (structure, whole_line) =
                monitoring.finder.structure_of_line(addr, self.line_bits, f);
            monitoring.count_bits(structure, outcome, pc);
            if let Some(slot) = f.take_over(line, write, whole_line, |p| self.take(monitoring, p)) {
                self.slot_blocks[slot] = line;
                self.synced_orders[e % filter::ENTRIES] = f.order_of(e);
                if whole_line {
                    self.slot_structures[slot] = structure.map_or(0, |s| s as u32 + 1);
                }
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
            totals::count_batched(f.batch_len());
            f.drain_batch_with(|records| simulate_records(simulator, self, monitoring, records));
        });
    }

    /// Drains the batch, then hands the filter's pending counts to the counts and its pending
    /// dirty marks to the simulator; with `forget`, empties it too (see
    /// [`Core::flush_filter`]).
    fn flush(&mut self, simulator: &mut Simulator, monitoring: &mut Monitoring, forget: bool) {
        self.drain_batch(simulator, monitoring);
        with_filter(|f| {
            // Emptied, the entries lose their order: the simulator follows it first.
            if forget && f.is_on() {
                for e in 0..=self.entry_mask {
                    self.sync_order(simulator, f, e);
                }
            }
            f.flush(
                forget,
                |p| self.take(monitoring, p),
                |block| simulator.mark_l1_dirty(block),
            );
        });
        if forget {
            self.forget_entries(0..filter::ENTRIES);
        }
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
        pc: u64,
    ) {
        let levels = self.levels;
        with_filter(|f| {
            f.settle_lines(addr, size, |block| simulator.mark_l1_dirty(block));
            if f.is_on() {
                for e in f.indices(addr, size) {
                    self.sync_order(simulator, f, e);
                }
            }
        });
        simulator.access_observed(addr, size, kind, |a, o| monitoring.count(a, o, levels, pc));
        with_filter(|f| {
            f.forget_lines(addr, size, |p| self.take(monitoring, p));
            if f.is_on() {
                self.forget_entries(f.indices(addr, size));
            }
        });
    }

    /// A write the filter found to hit one of its set's most recent lines, clean until now
    /// (`Filter::clean_write` marked slot `slot` written and the entry's most recent):
    /// simulated after the batch (it marks the line dirty) and counted for the slot's data
    /// structure without a lookup; the simulator counts it in L1's totals itself.
    #[inline(always)]
    pub(super) fn clean_write(
        &mut self,
        simulator: &mut Simulator,
        monitoring: &mut Monitoring,
        addr: u64,
        size: u32,
        slot: usize,
        pc: u64,
    ) {
        // The batch may hold the access that made this line the slot's owner: after it, the
        // slot's data structure is the line's.
        self.drain_batch(simulator, monitoring);
        // The filter made the line the entry's most recent already: with its order followed,
        // the line is its set's most recent, as the write finds it.
        let e = self.entry_of(addr);
        with_filter(|f| self.sync_order(simulator, f, e));
        let outcome = match simulator.access_in_line_recent(addr, size, AccessKind::Write) {
            Some(outcome) => outcome,
            None => straddling_access(simulator, addr, size, AccessKind::Write),
        };
        let structure =
            (self.slot_structures[(e % filter::ENTRIES) * SLOTS + slot] as usize).checked_sub(1);
        monitoring.count_bits(structure, outcome, pc);
    }

    /// Counts repeat hits the filter hands back.
    fn take(&mut self, monitoring: &mut Monitoring, (slot, reads, writes): filter::Pending) {
        let structure = self.slot_structures[slot as usize % (filter::ENTRIES * SLOTS)];
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

/// Slots of each filter entry a thread uses under L1's shape: as many of the set's most recent
/// lines as may be hit (`RepeatHitShape`), up to what an entry holds.
pub(super) fn usable_slots(shape: epcache_sim::simulator::capture_path::RepeatHitShape) -> usize {
    (shape.recent_lines as usize).clamp(1, SLOTS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use epcache_shm::layout::DataStructureKind;
    use epcache_sim::cache::HierarchySpec;
    use epcache_sim::monitor::CounterArrayConfig;
    use epcache_sim::ranges::AddressRange;

    use super::super::data;
    use super::super::tag_key::TAG_WORD;
    use std::sync::atomic::Ordering;

    #[test]
    fn an_unfiltered_access_reads_back_from_its_words() {
        for kind in [AccessKind::Read, AccessKind::Write] {
            for (addr, size, pc) in [(0x7fff_ffff_fff8, 8, 0x40_1234), (1, 1, 0), (64, 4096, 9)] {
                let access = UnfilteredAccess {
                    addr,
                    pc,
                    size,
                    kind,
                };
                assert_eq!(UnfilteredAccess::from_words(access.words()), access);
            }
        }
    }

    /// Switches this thread's filter on, waiting a while for other tests' threads whose filters
    /// hold the tag word's shape for another L1 (one process simulates one L1, so
    /// only tests meet this).
    fn switch_on_when_shape_free(line_bits: u32, sets: u64, usable: usize) -> bool {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        loop {
            let word = TAG_WORD.load(Ordering::SeqCst);
            if with_filter(|f| f.switch_on(line_bits, sets, usable, word))
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
        // The most rows of misses per site and structure a hierarchy gave.
        let mut most_rows = 0;
        for (spec, filtered) in [
            ("D1=1K,2,64;LL=8K,4,64", true),
            ("D1=2K,8,64;LL=16K,16,64", true),
            ("D1=4K,16,64;L2=16K,8,64", true),
            ("D1=4K,32,64;LL=16K,4,64", true),
            ("D1=1K,4,64,plru;L2=2K,4,64;L3=16K,4,64", true),
            // 32-byte lines, half a filter entry (`filter::SHORTEST_LINE_BITS`), and the
            // EP-Cache and METRIC papers' L1 shape below 64-byte lines.
            ("D1=1K,4,32,plru;L2=2K,4,64;L3=16K,4,64", true),
            ("D1=2K,2,32;LL=16K,8,64", true),
            // Lines of 16 bytes: too short for the inline test's offset.
            ("D1=1K,4,16;LL=8K,4,64", false),
            ("D1=1K,4,64,random;LL=8K,4,64", true),
            ("D1=64K,2,64;LL=256K,4,64", true),
            // Longer lines: the entries are spaced out, down to two at 4 KiB; at 8 KiB only one
            // fits, which the inline test cannot use.
            ("D1=4K,4,128;LL=16K,4,128", true),
            ("D1=16K,2,1024;LL=64K,4,1024", true),
            ("D1=32K,2,4096;LL=128K,4,4096", true),
            ("D1=64K,2,8192;LL=256K,4,8192", false),
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
            let shape = fast_sim.repeat_hit_shape();
            if let Some(shape) = shape
                && switch_on_when_shape_free(shape.line_bits, shape.sets, usable_slots(shape))
            {
                counting.filter_switched_on(shape.line_bits, shape.sets, usable_slots(shape));
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
                // Eight sites; a batched access's misses count for its site as a direct one's.
                let pc = 0x5555_0000_0000 + (x >> 44) % 8 * 16;
                // Half the accesses come from sites with the inline test (`epcache cc`), which
                // also answers writes to clean entries, leaving their dirty bits pending.
                let inline = x >> 33 & 1 == 1;
                if inline && with_filter(|f| f.inline_hit(addr, size, write)) {
                    inline_clean_writes +=
                        u32::from(write && with_filter(|f| f.dirty_pending(addr)));
                } else if inline && with_filter(|f| f.inline_miss(addr, size, write, pc)) {
                    batched += 1;
                // What `active` and `simulate_on` do (after the inline test, if any).
                } else if !with_filter(|f| f.repeat_hit(addr, size, write)) {
                    if let Some(slot) = write
                        .then(|| with_filter(|f| f.clean_write(addr, size)))
                        .flatten()
                    {
                        clean_writes += 1;
                        counting.clean_write(&mut fast_sim, &mut fast, addr, size, slot, pc);
                    } else {
                        counting.access(&mut fast_sim, &mut fast, addr, size, kind, pc);
                    }
                }
                let levels = counting.levels;
                slow_sim.access_observed(addr, size, kind, |a, o| slow.count(a, o, levels, pc));
                if step % 50_000 == 25_000 {
                    let forget = step % 100_000 == 25_000;
                    counting.flush(&mut fast_sim, &mut fast, forget);
                    // A region boundary then refreshes the filter, which stays on as it is.
                    if let Some(shape) = shape
                        && filtered
                    {
                        let usable = usable_slots(shape);
                        assert!(with_filter(|f| f.switch_on(
                            shape.line_bits,
                            shape.sets,
                            usable,
                            0
                        )));
                        counting.filter_switched_on(shape.line_bits, shape.sets, usable);
                    }
                }
            }
            counting.flush(&mut fast_sim, &mut fast, true);
            with_filter(Filter::switch_off);
            assert_eq!(fast.totals, slow.totals, "{spec:?}");
            assert_eq!(fast.structures, slow.structures, "{spec:?}");
            assert!(fast.structures.iter().filter(|c| c[0] > 0).count() >= 2);
            let lines = |m: &Monitoring| {
                let mut rows: Vec<_> = m.lines.entries().map(|(k, c)| (*k, *c)).collect();
                rows.sort_by_key(|(k, _)| (k.pc, k.structure));
                rows
            };
            assert_eq!(lines(&fast), lines(&slow), "{spec:?}: misses per site");
            most_rows = most_rows.max(lines(&slow).len());
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
        assert!(most_rows >= 8, "the eight sites' misses were counted apart");
    }
}
