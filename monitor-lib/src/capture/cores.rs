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
//! The lock is taken in turn, first come first served (a ticket turnstile in front of the
//! mutex, which is then never contended): a plain mutex lets the thread that just let go take
//! it again at once, so two threads writing one line in a loop reached the machine in runs of
//! tens of thousands of accesses each, and an OpenMP false-sharing loop of 400,000 writes
//! showed 15 coherence misses where hardware, the threads running side by side, takes the line
//! back and forth at nearly every write. In turn, two threads running side by side alternate
//! as they would on two cores; a thread that waits spins briefly, then yields its CPU, so
//! more threads than CPUs still make progress.
//!
//! A forked child never simulates (its parent's threads may have held the lock at the fork).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

use epcache_sim::cache::{CoherenceStats, MAX_LEVELS, Machine};

use super::settings::{CoreMap, process_cores, process_spec, report_spec_error_once};

struct Cores {
    machine: Mutex<Machine>,
    map: CoreMap,
    /// The turnstile: the next ticket to give, and the ticket whose turn it is.
    next_ticket: AtomicU64,
    serving: AtomicU64,
}

/// Spins a waiting thread makes before it starts yielding its CPU between looks.
const SPINS_BEFORE_YIELDING: u32 = 200;

static CORES: OnceLock<Option<Cores>> = OnceLock::new();

/// Threads given a core so far.
static THREADS: AtomicUsize = AtomicUsize::new(0);

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
                    next_ticket: AtomicU64::new(0),
                    serving: AtomicU64::new(0),
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
pub(super) fn assign() -> Option<usize> {
    let cores = cores()?;
    Some(cores.map.core_of(THREADS.fetch_add(1, Ordering::Relaxed)))
}

/// Runs `f` on the machine, under its lock, in turn (see the module doc); `None` when there
/// is no machine.
pub(super) fn with_machine<R>(f: impl FnOnce(&mut Machine) -> R) -> Option<R> {
    let cores = cores()?;
    let ticket = cores.next_ticket.fetch_add(1, Ordering::Relaxed);
    let mut spins = 0u32;
    while cores.serving.load(Ordering::Acquire) != ticket {
        if spins < SPINS_BEFORE_YIELDING {
            spins += 1;
            std::hint::spin_loop();
        } else {
            std::thread::yield_now();
        }
    }
    // The next ticket's turn comes when this one is done, even if `f` panics: no thread is
    // left waiting for ever.
    let _done = NextTurn {
        serving: &cores.serving,
        next: ticket + 1,
    };
    // Never contended (the turnstile lets one thread through); a poisoned lock means a panic
    // mid-access, and the machine is still a machine.
    let mut machine = cores.machine.lock().unwrap_or_else(|e| e.into_inner());
    Some(f(&mut machine))
}

/// Gives the turn to the next ticket when dropped.
struct NextTurn<'a> {
    serving: &'a AtomicU64,
    next: u64,
}

impl Drop for NextTurn<'_> {
    fn drop(&mut self) {
        self.serving.store(self.next, Ordering::Release);
    }
}

/// How long the report waits for an access in progress to let go of the machine.
const REPORT_PATIENCE: std::time::Duration = std::time::Duration::from_secs(1);

/// The coherence totals of every core so far, when there is a machine. Read for the report
/// between two accesses, without a turn: the report may be written on a crash inside an
/// access, whose thread never lets go, and then goes without them after [`REPORT_PATIENCE`]
/// rather than waiting for ever.
pub(super) fn coherence_totals() -> Option<CoherenceStats> {
    let cores = cores()?;
    let deadline = std::time::Instant::now() + REPORT_PATIENCE;
    let machine = loop {
        match cores.machine.try_lock() {
            Ok(machine) => break machine,
            Err(std::sync::TryLockError::Poisoned(e)) => break e.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) if std::time::Instant::now() < deadline => {
                std::thread::yield_now();
            }
            Err(std::sync::TryLockError::WouldBlock) => return None,
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
