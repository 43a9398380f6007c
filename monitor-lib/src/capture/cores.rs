//! The simulated machine whose cores the threads are, when `EPCACHE_CORES` asks for one: one
//! `epcache_sim::cache::Machine` behind one lock, and which core each thread gets.
//!
//! Why one lock and no filter: the machine's contract is one global order of the accesses it
//! observes (see `epcache_sim`'s crate doc). The order in which threads take this lock is an
//! interleaving the program really had, and the machine applies each access whole in it, so
//! coherence events are exact for it. For every access to reach the lock, a thread on a core of
//! the machine runs without its repeat-hit filter (which would count a line another core
//! invalidated as a hit until the thread's next sync point, and a thread spinning on filter
//! hits takes none) and without the worker pipeline (which would reorder a thread's accesses
//! against the others'). A thread holds the lock only to simulate: counting and attribution
//! (which may take the data structures' lock) happen after it lets go, so each registry still
//! takes only its own lock.
//!
//! Threads get cores in the order they start capturing (`settings::CoreMap`): one to one up to
//! the core count, round-robin past it, or as `EPCACHE_CORES=N:c0,c1,...` places them. Under
//! OpenMP the master thread starts first, so core `i` is usually OpenMP thread `i`.
//!
//! The machine is taken in turn, first come first served, with patience: a thread takes a
//! ticket, spins for its turn for [`TURN_PATIENCE`] at most and makes [`TURN_ACCESSES`]
//! accesses in it; when its patience runs out it goes ahead (the mutex still keeps the accesses
//! apart) and takes no turns for its next [`IMPATIENT_ACCESSES`].
//! Why turns: a plain mutex lets the thread that just let go take it again at once, so two
//! threads writing one line in a loop reached the machine in runs of tens of thousands of
//! accesses each, and an OpenMP false-sharing loop of 400,000 writes showed 15 coherence misses
//! where hardware, the threads running side by side on their cores, takes the line back and
//! forth at nearly every write (about 300,000 in turns); letting only a running waiter go
//! first (politeness) depended on the host's scheduling, and on a loaded host the threads
//! seldom ran side by side. Why patience: a strict turn held every thread up while the one
//! whose turn it was was not scheduled, and a thread waiting in the program (a barrier, a lock)
//! for one waiting for its turn would wait for ever. Why a short patience, spun and never
//! yielded: a partner that is running takes its turn within a microsecond (one access), so a
//! longer wait only finds partners that are descheduled or blocked in the program; yielding to
//! the scheduler there gave the core away for whole time slices, and an OpenMP Jacobi on a
//! loaded 2-core host ran 17 times slower with 50 microseconds of yielding patience than with
//! 5 spun (the capture bench's `openmp` section), with the same false-sharing counts. Why
//! turns of a few accesses: while both threads run, every turn sends the ticket and the lock
//! across the cores, and a turn per access cost an OpenMP Jacobi on the idle 2-core host 22.9 s
//! where turns of 4 accesses take 9.9 s and of 16 take 8.0 s; the false-sharing example's
//! packed counters, 280,000 to 340,000 coherence misses of 400,000 increments with a turn per
//! access, show 90,000 to 175,000 with turns of 4 (0 on the padded ones, as before). The line
//! still changes hands far more often than once per round, and the counts stay exact for the
//! order the machine saw.
//!
//! A forked child never simulates (its parent's threads may have held the lock at the fork).

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock, TryLockError};
use std::time::{Duration, Instant};

use epcache_sim::cache::{CoherenceStats, MAX_LEVELS, Machine};

use super::settings::{CORES_ENV, CoreMap, process_cores, process_spec, report_spec_error_once};

struct Cores {
    machine: Mutex<Machine>,
    map: CoreMap,
    /// The next ticket to give.
    next_ticket: OwnLine<AtomicU64>,
    /// Every ticket below this one has had its turn (or gone ahead without it). Waiters spin
    /// reading it, so it has a host cache line of its own: sharing one with the lock, which
    /// the thread whose turn it is takes at every access, sent the line back and forth between
    /// the cores at every access.
    serving: OwnLine<AtomicU64>,
}

/// A value alone in its (128-byte, two adjacent lines prefetched together) host cache line.
#[repr(align(128))]
struct OwnLine<T>(T);

impl<T> std::ops::Deref for OwnLine<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

/// Spins a waiting thread makes between two looks at the clock.
const SPINS_PER_LOOK: u32 = 64;

/// How long a thread waits for its turn before it goes ahead.
const TURN_PATIENCE: Duration = Duration::from_micros(5);

/// Accesses a thread makes without a turn after its patience ran out.
const IMPATIENT_ACCESSES: u32 = 256;

/// Accesses a thread makes in one turn.
const TURN_ACCESSES: u32 = 4;

thread_local! {
    /// Accesses this thread has left without a turn (see [`IMPATIENT_ACCESSES`]).
    static IMPATIENT: Cell<u32> = const { Cell::new(0) };
    /// The ticket of the turn this thread holds and the accesses it has left in it (see
    /// [`TURN_ACCESSES`]).
    static TURN: Cell<(u64, u32)> = const { Cell::new((0, 0)) };
}

static CORES: OnceLock<Option<Cores>> = OnceLock::new();

/// Threads given a core so far.
static THREADS: AtomicUsize = AtomicUsize::new(0);

/// Threads that started capturing with no machine, each simulating a hierarchy of its own.
static PRIVATE_THREADS: AtomicUsize = AtomicUsize::new(0);

fn cores() -> Option<&'static Cores> {
    CORES
        .get_or_init(|| {
            let map = match process_cores() {
                Ok(Some(map)) => map.clone(),
                Ok(None) => return None,
                Err(why) => {
                    report_spec_error_once(why);
                    return None;
                }
            };
            let (_, spec) = process_spec().as_ref().ok()?;
            match Machine::new(spec, map.cores) {
                Ok(machine) => Some(Cores {
                    machine: Mutex::new(machine),
                    map,
                    next_ticket: OwnLine(AtomicU64::new(0)),
                    serving: OwnLine(AtomicU64::new(0)),
                }),
                Err(e) => {
                    report_spec_error_once(&format!(
                        "epcache: cannot make a machine of {} cores of the cache: {e}",
                        map.cores
                    ));
                    None
                }
            }
        })
        .as_ref()
}

/// The number of cores of the machine, when threads are cores of one.
pub(super) fn count() -> Option<usize> {
    cores().map(|c| c.map.cores)
}

/// The core of a thread starting to capture now, when threads are cores of one machine.
/// Without one, the second thread to start capturing says once that the threads keep
/// hierarchies of their own, unless `EPCACHE_CORES` was given (`off` asks for that silently):
/// a multithreaded program's shared levels and false sharing would go unseen without a word.
pub(super) fn assign() -> Option<usize> {
    let Some(cores) = cores() else {
        if PRIVATE_THREADS.fetch_add(1, Ordering::Relaxed) == 1
            && std::env::var_os(CORES_ENV).is_none()
        {
            eprintln!("{PRIVATE_THREADS_WARNING}");
        }
        return None;
    };
    Some(cores.map.core_of(THREADS.fetch_add(1, Ordering::Relaxed)))
}

/// What a program's second capturing thread is told without a machine.
const PRIVATE_THREADS_WARNING: &str = "epcache: a second thread captures, and each thread \
    simulates a cache hierarchy of its own: no level is shared and no coherence is kept between \
    them, so false sharing does not show; set EPCACHE_CORES=N (epcache run --cores N) to \
    simulate the threads as the N cores of one machine, or EPCACHE_CORES=off to keep \
    hierarchies per thread without this note";

/// Runs `f` on the machine, under its lock, in turn with patience (see the module doc);
/// `None` when there is no machine.
pub(super) fn with_machine<R>(f: impl FnOnce(&mut Machine) -> R) -> Option<R> {
    let cores = cores()?;
    let impatient = IMPATIENT.try_with(Cell::get).unwrap_or(0);
    let (turn, accesses_left) = TURN.try_with(Cell::get).unwrap_or((0, 0));
    // The ticket whose turn this access ends, if it ends one.
    let ending = if accesses_left > 0 {
        // Within this thread's turn.
        let _ = TURN.try_with(|t| t.set((turn, accesses_left - 1)));
        (accesses_left == 1).then_some(turn)
    } else if impatient > 0 {
        let _ = IMPATIENT.try_with(|i| i.set(impatient - 1));
        None
    } else {
        let ticket = cores.next_ticket.fetch_add(1, Ordering::Relaxed);
        if wait_for_turn(cores, ticket) {
            let _ = TURN.try_with(|t| t.set((ticket, TURN_ACCESSES - 1)));
            (TURN_ACCESSES == 1).then_some(ticket)
        } else {
            let _ = IMPATIENT.try_with(|i| i.set(IMPATIENT_ACCESSES));
            Some(ticket)
        }
    };
    let result = {
        // A panic mid-access poisons the lock; the machine is still a machine.
        let mut machine = cores.machine.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut machine)
    };
    if let Some(ticket) = ending {
        // Later tickets that went ahead may have moved it past this one already.
        cores.serving.fetch_max(ticket + 1, Ordering::AcqRel);
    }
    Some(result)
}

/// Waits until every ticket before `ticket` has had its turn; `false` when [`TURN_PATIENCE`]
/// ran out first.
fn wait_for_turn(cores: &Cores, ticket: u64) -> bool {
    let mut spins = 0u32;
    let mut since: Option<Instant> = None;
    while cores.serving.load(Ordering::Acquire) < ticket {
        spins += 1;
        std::hint::spin_loop();
        if spins % SPINS_PER_LOOK == 0 {
            let started = *since.get_or_insert_with(Instant::now);
            if started.elapsed() > TURN_PATIENCE {
                return false;
            }
        }
    }
    true
}

/// How long the report waits for an access in progress to let go of the machine.
const REPORT_PATIENCE: Duration = Duration::from_secs(1);

/// The coherence totals of every core so far, when there is a machine. Read for the report
/// between two accesses, without a turn: the report may be written on a crash inside an
/// access, whose thread never lets go, and then goes without them after [`REPORT_PATIENCE`]
/// rather than waiting for ever.
pub(super) fn coherence_totals() -> Option<CoherenceStats> {
    let cores = cores()?;
    let deadline = Instant::now() + REPORT_PATIENCE;
    let machine = loop {
        match cores.machine.try_lock() {
            Ok(machine) => break machine,
            Err(TryLockError::Poisoned(e)) => break e.into_inner(),
            Err(TryLockError::WouldBlock) if Instant::now() < deadline => {
                std::thread::yield_now();
            }
            Err(TryLockError::WouldBlock) => return None,
        }
    };
    let mut sum = CoherenceStats::default();
    for core in 0..machine.cores() {
        let c = machine.coherence_stats(core);
        sum.invalidations += c.invalidations;
        sum.downgrades += c.downgrades;
        for level in 0..MAX_LEVELS {
            sum.coherence_misses[level] += c.coherence_misses[level];
            sum.false_sharing[level] += c.false_sharing[level];
            sum.true_sharing[level] += c.true_sharing[level];
        }
    }
    Some(sum)
}
