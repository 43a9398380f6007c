//! The simulated machine whose cores the threads are, when `EPCACHE_CORES` asks for one: one
//! `epcache_sim::cache::Machine` behind one lock, which core each thread gets, and the order
//! in which the threads' accesses reach it.
//!
//! The machine's contract is one global order of the accesses it observes (see `epcache_sim`'s
//! crate doc): it applies each access whole, in that order, so coherence events are exact for
//! it. The order is the order in time: each thread appends its accesses to a log of its own
//! with a timestamp (`access_log.rs`), and whichever thread takes the machine simulates every
//! log's waiting accesses merged by their times, before any later access. A thread takes the
//! machine when its log is full, and before anything reads its counts (a region's boundary, a
//! hand-over, a change of data structures, its end). So the machine sees the program's own
//! interleaving, to the clock's resolution: two threads writing one line take it from each
//! other whenever they really ran side by side. The time a thread spends simulating and
//! counting is time its program does not run, so that happens less often than on hardware, and
//! the less often the cheaper logging is against simulating: the false-sharing example's packed
//! counters show 200,000 to 350,000 coherence misses in 400,000 increments on a 2-core host
//! (`docs/performance.md`). Threads taking turns under a barrier are simulated turn by turn,
//! since the barrier orders their clocks. Each thread's own accesses always keep their order;
//! an access whose time was read just before another thread's merge but appended after it
//! comes after that merge, which is still an order the threads could have had.
//!
//! One lock holds the whole machine: a thread whose log is full waits for it about a tenth of its
//! time, the rest is work per access, so a machine split by line into shards with a lock each
//! (which the sets allow) can save no more than that, and on two cores it ran slower.
//!
//! The clock is the processor's time-stamp counter (`quanta`'s raw reading, about 10 ns),
//! read only while more than one thread has a log: alone, a thread's accesses need no time.
//!
//! For every access to reach the machine, a thread on a core of it runs without its repeat-hit
//! filter (which would count a line another core invalidated as a hit) and without the worker
//! pipeline (the log is its pipeline). A thread holds the lock only to simulate: counting and
//! attribution (which may take the data structures' lock) happen after it lets go, by each
//! thread for its own accesses, so each registry still takes only its own lock. An access
//! wider than a line is simulated at once, after every waiting one, not logged.
//!
//! Threads get cores in the order they start capturing (`epcache_sim::cache::CoreMap`): one
//! to one up to the core count, round-robin past it, or as `EPCACHE_CORES=N:c0,c1,...` places
//! them. Under OpenMP the master thread starts first, so core `i` is usually OpenMP thread `i`.
//!
//! A forked child never simulates (its parent's threads may have held the lock at the fork),
//! and a thread interrupted inside a simulation (a crash whose handler writes the report on
//! it) never waits for the lock it holds itself: what it had waiting goes unsimulated.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, TryLockError};
use std::time::{Duration, Instant};

use epcache_sim::cache::{AccessKind, CoreMap, MAX_LEVELS, Machine};

use super::access_log::{AccessLog, LogWriter, Simulated};
use super::settings::{CORES_ENV, process_cores, process_spec};
use super::state_memory;
use super::switches::forked_child;

struct Cores {
    shared: Mutex<Shared>,
    map: CoreMap,
    /// The time-stamp counter's reader.
    clock: quanta::Clock,
    /// Threads with a log now: while only one has, its accesses need no time.
    logs: AtomicUsize,
    /// The machine's line size: a wider access is simulated at once, not logged.
    line: u64,
    /// The machine's levels, counted among the threads' simulated caches (each thread on it
    /// keeps a simulator of its own for its counts, whose levels have one line each:
    /// `HierarchySpec::counting_shell`).
    _memory: state_memory::Held,
}

/// What the lock keeps together: the machine and the logs whose accesses it simulates.
struct Shared {
    machine: Machine,
    logs: Vec<Arc<AccessLog>>,
    /// Per log while merging: the next waiting position and the end.
    cursors: Vec<(u64, u64)>,
    /// How finely the threads' accesses interleaved in the merged order.
    interleaving: Interleaving,
    /// The log whose run was simulated last.
    last_log: Option<usize>,
}

/// How finely the threads' accesses interleaved in the one order the machine simulated: its
/// accesses, and how often the next one came from another thread than the one before. A
/// thread does not run its program while it simulates, so threads take turns in stretches, and
/// coherence misses need accesses of two threads close together: few switches, few misses.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Interleaving {
    /// Accesses the machine simulated.
    pub accesses: u64,
    /// Times the next of them came from another thread than the one before.
    pub thread_switches: u64,
}

impl Shared {
    /// Simulates every log's waiting accesses in the order of their times (each log's own in
    /// its order): the earliest log's run up to the next log's earliest time, then again.
    fn simulate_waiting(&mut self) {
        let Shared {
            machine,
            logs,
            cursors,
            interleaving,
            last_log,
        } = self;
        cursors.clear();
        cursors.extend(logs.iter().map(|log| log.waiting()));
        loop {
            let mut first: Option<(usize, u64)> = None;
            let mut second = u64::MAX;
            for (i, &(at, end)) in cursors.iter().enumerate() {
                if at == end {
                    continue;
                }
                let time = logs[i].time_at(at);
                match first {
                    Some((_, best)) if time >= best => second = second.min(time),
                    _ => {
                        if let Some((_, best)) = first {
                            second = second.min(best);
                        }
                        first = Some((i, time));
                    }
                }
            }
            let Some((i, _)) = first else {
                break;
            };
            let (at, end) = &mut cursors[i];
            let log = &logs[i];
            let from = *at;
            while *at < *end && log.time_at(*at) <= second {
                log.simulate(*at, machine);
                *at += 1;
            }
            interleaving.accesses += *at - from;
            if last_log.replace(i).is_some_and(|last| last != i) {
                interleaving.thread_switches += 1;
            }
            // Published run by run: a thread waiting for room in its log goes on as soon as
            // its run is done.
            log.simulated_up_to(*at);
        }
    }
}

/// Looks for room in a full log between two tries of the machine's lock.
const LOOKS_PER_TRY: u32 = 16;
/// Looks for room in a full log before a thread sleeps on the machine's lock (tens of
/// microseconds, a holder's simulation of several hundred accesses; room appears as soon as the
/// holder has simulated this log's run, `Shared::simulate_waiting`): a holder that is not
/// running (the host is busy) is waited for on the lock, not spun against.
const LOOKS_BEFORE_BLOCKING: u32 = 1024;

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
                    say_no_machine(why);
                    return None;
                }
            };
            let (text, spec) = process_spec().as_ref().ok()?;
            match Machine::new(spec, map.cores) {
                Ok(machine) => Some(Cores {
                    _memory: state_memory::Held::new(spec.machine_state_bytes(map.cores), text),
                    line: machine.line_size(),
                    shared: Mutex::new(Shared {
                        machine,
                        logs: Vec::new(),
                        cursors: Vec::new(),
                        interleaving: Interleaving::default(),
                        last_log: None,
                    }),
                    map,
                    clock: quanta::Clock::new(),
                    logs: AtomicUsize::new(0),
                }),
                Err(e) => {
                    say_no_machine(&format!(
                        "cannot make a machine of {} cores of the cache: {e}",
                        map.cores
                    ));
                    None
                }
            }
        })
        .as_ref()
}

/// Why the machine `EPCACHE_CORES` asked for could not be made, once that was found.
static NO_MACHINE: OnceLock<String> = OnceLock::new();

/// Says why the machine `EPCACHE_CORES` asks for cannot be made, and what happens instead
/// (once: [`cores`] resolves the machine once), and keeps it for the report.
fn say_no_machine(why: &str) {
    let said = format!(
        "{why}; every thread simulates a cache of its own instead (no shared levels, no coherence events)"
    );
    eprintln!("epcache: {said}");
    let _ = NO_MACHINE.set(said);
}

/// Why the machine `EPCACHE_CORES` asked for could not be made, if it could not.
pub(super) fn refused() -> Option<&'static str> {
    NO_MACHINE.get().map(String::as_str)
}

thread_local! {
    /// Whether this thread holds the machine's lock: a crash inside a simulation whose handler
    /// writes the report on the same thread must not wait for the lock it holds itself.
    static HOLDING: Cell<bool> = const { Cell::new(false) };
}

/// The machine's lock, held by this thread (see [`HOLDING`]).
struct Held<'a>(MutexGuard<'a, Shared>);

impl<'a> Held<'a> {
    fn new(guard: MutexGuard<'a, Shared>) -> Self {
        HOLDING.set(true);
        Held(guard)
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        HOLDING.set(false);
    }
}

impl std::ops::Deref for Held<'_> {
    type Target = Shared;
    fn deref(&self) -> &Shared {
        &self.0
    }
}

impl std::ops::DerefMut for Held<'_> {
    fn deref_mut(&mut self) -> &mut Shared {
        &mut self.0
    }
}

impl Cores {
    /// The machine and the logs; `None` when this thread holds them already (it was
    /// interrupted inside a simulation). A panic mid-access poisons the lock; the machine is
    /// still a machine.
    fn lock(&self) -> Option<Held<'_>> {
        if HOLDING.get() {
            return None;
        }
        Some(Held::new(
            self.shared.lock().unwrap_or_else(|e| e.into_inner()),
        ))
    }

    /// [`Self::lock`] if it is free now.
    fn try_lock(&self) -> Option<Held<'_>> {
        if HOLDING.get() {
            return None;
        }
        match self.shared.try_lock() {
            Ok(guard) => Some(Held::new(guard)),
            Err(TryLockError::Poisoned(e)) => Some(Held::new(e.into_inner())),
            Err(TryLockError::WouldBlock) => None,
        }
    }
}

/// The number of cores of the machine, when threads are cores of one.
pub(super) fn count() -> Option<usize> {
    cores().map(|c| c.map.cores)
}

/// The seat at the machine of a thread starting to capture now, when threads are cores of
/// one. Without one, the second thread to start capturing says once that the threads keep
/// hierarchies of their own, unless `EPCACHE_CORES` was given (`off` asks for that silently):
/// a multithreaded program's shared levels and false sharing would go unseen without a word.
pub(super) fn assign() -> Option<Seat> {
    // A forked child takes no lock a parent's thread may have held at the fork.
    if forked_child() {
        return None;
    }
    let Some(cores) = cores() else {
        if PRIVATE_THREADS.fetch_add(1, Ordering::Relaxed) == 1
            && std::env::var_os(CORES_ENV).is_none()
        {
            eprintln!("{PRIVATE_THREADS_WARNING}");
        }
        return None;
    };
    let core = cores.map.core_of(THREADS.fetch_add(1, Ordering::Relaxed));
    let (writer, log) = LogWriter::new(core);
    cores.lock()?.logs.push(log);
    cores.logs.fetch_add(1, Ordering::Relaxed);
    Some(Seat {
        cores,
        core,
        writer,
    })
}

/// A thread's place at the machine: its core and its log (`access_log.rs`). Every method that
/// may simulate hands the thread's simulated accesses to `count`, in order, after the lock is
/// let go.
pub(super) struct Seat {
    cores: &'static Cores,
    core: usize,
    writer: LogWriter,
}

impl Seat {
    /// The thread's core of the machine.
    pub(super) fn core(&self) -> usize {
        self.core
    }

    /// The line size of the machine: a wider access goes through [`Self::simulate_now`].
    pub(super) fn line_size(&self) -> u64 {
        self.cores.line
    }

    /// Logs an access of at most one line. When the log is full, the thread first counts what
    /// others simulated of it; when nothing was, it takes the machine and simulates every
    /// waiting access ([`Self::log_into_full`]).
    #[inline]
    pub(super) fn log(
        &mut self,
        addr: u64,
        size: u32,
        kind: AccessKind,
        pc: u64,
        count: impl FnMut(Simulated),
    ) {
        let time = if self.cores.logs.load(Ordering::Relaxed) > 1 {
            self.cores.clock.raw()
        } else {
            0
        };
        if !self.writer.append(time, addr, size, kind, pc) {
            self.log_into_full(time, addr, size, kind, pc, count);
        }
    }

    /// [`Self::log`] once the log is full, out of line so that the common append keeps a small
    /// frame. While another thread holds the machine it is simulating this log's accesses too,
    /// run by run: watch for room a while before asking for the lock (sleeping on it and
    /// waking cost more than the wait), then take it.
    #[cold]
    #[inline(never)]
    fn log_into_full(
        &mut self,
        time: u64,
        addr: u64,
        size: u32,
        kind: AccessKind,
        pc: u64,
        mut count: impl FnMut(Simulated),
    ) {
        let mut looks = 0u32;
        loop {
            self.writer.count_simulated(&mut count);
            if self.writer.append(time, addr, size, kind, pc) {
                return;
            }
            looks += 1;
            if !looks.is_multiple_of(LOOKS_PER_TRY) {
                std::hint::spin_loop();
                continue;
            }
            if let Some(mut shared) = self.cores.try_lock() {
                shared.simulate_waiting();
            } else if looks >= LOOKS_BEFORE_BLOCKING {
                match self.cores.lock() {
                    Some(mut shared) => shared.simulate_waiting(),
                    // Interrupted inside a simulation: the access cannot be logged.
                    None => return,
                }
            }
        }
    }

    /// Simulates every waiting access (every thread's, so this thread's come in their place)
    /// and counts this thread's: before its counts are read.
    pub(super) fn settle(&mut self, count: impl FnMut(Simulated)) {
        if self.writer.waiting()
            && let Some(mut shared) = self.cores.lock()
        {
            shared.simulate_waiting();
        }
        self.writer.count_simulated(count);
    }

    /// Runs `f` on the machine after every waiting access, under one hold of the lock (an
    /// access wider than a line), then counts this thread's waiting accesses.
    pub(super) fn simulate_now(
        &mut self,
        f: impl FnOnce(&mut Machine),
        count: impl FnMut(Simulated),
    ) {
        if let Some(mut shared) = self.cores.lock() {
            shared.simulate_waiting();
            f(&mut shared.machine);
        }
        self.writer.count_simulated(count);
    }
}

impl Drop for Seat {
    /// The log leaves the machine, its waiting accesses simulated first (the thread counted
    /// what it could: `Core::settle_machine` runs before its capture goes). A forked child
    /// takes no lock.
    fn drop(&mut self) {
        if forked_child() {
            return;
        }
        let Some(mut shared) = self.cores.lock() else {
            return;
        };
        shared.simulate_waiting();
        shared
            .logs
            .retain(|log| !Arc::ptr_eq(log, self.writer.log()));
        self.cores.logs.fetch_sub(1, Ordering::Relaxed);
    }
}

/// What a program's second capturing thread is told without a machine.
const PRIVATE_THREADS_WARNING: &str = "epcache: a second thread captures, and each thread \
    simulates a cache hierarchy of its own: no level is shared and no coherence is kept between \
    them, so false sharing does not show; set EPCACHE_CORES=N (epcache run --cores N) to \
    simulate the threads as the N cores of one machine, or EPCACHE_CORES=off to keep \
    hierarchies per thread without this note";

/// A tool's request counted a coherence event on the machine, whose count depends on how
/// finely the threads interleaved there: said at exit ([`say_interleaving`]).
static COHERENCE_REQUESTED: AtomicBool = AtomicBool::new(false);

/// A request bound a coherence event on a core of the machine.
pub(super) fn coherence_requested() {
    COHERENCE_REQUESTED.store(true, Ordering::Relaxed);
}

/// At the exit of a run whose requests counted coherence events (a run with a standalone
/// report says it under the table instead): how finely the threads took turns on the machine,
/// which those counts depend on as much as on the program, so that a run whose threads seldom
/// met is not read as one without sharing.
pub(super) fn say_interleaving() {
    if !COHERENCE_REQUESTED.load(Ordering::Relaxed) {
        return;
    }
    let Some(i) = machine_totals().map(|m| m.interleaving) else {
        return;
    };
    if i.accesses == 0 {
        return;
    }
    eprintln!(
        "epcache: the threads took turns every {:.1} accesses on the machine ({} switches in {} \
         accesses): the coherence events requests counted need two threads' accesses close \
         together, so they move with the host's scheduling; compare runs, layouts or arrays \
         rather than single counts",
        i.accesses as f64 / (i.thread_switches + 1) as f64,
        i.thread_switches,
        i.accesses
    );
}

/// How long the report waits for an access in progress to let go of the machine.
const REPORT_PATIENCE: Duration = Duration::from_secs(1);

/// What the machine counted that the threads' own counts lack: per data level the dirty lines
/// written to the next level (a write-back happens in the machine, for the core whose access
/// displaced the line, not in any thread's outcomes), and how the threads interleaved. Its
/// coherence events are the threads' own outcomes, counted by them.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct MachineTotals {
    pub(crate) writebacks: [u64; MAX_LEVELS],
    pub(crate) interleaving: Interleaving,
}

/// The machine's totals over every core so far, when there is a machine, every waiting access
/// simulated first. Read for the report with patience: the report may be written on a crash
/// inside a simulation, whose thread never lets go, and then goes without them after
/// [`REPORT_PATIENCE`] rather than waiting for ever.
pub(super) fn machine_totals() -> Option<MachineTotals> {
    let cores = cores()?;
    let deadline = Instant::now() + REPORT_PATIENCE;
    let mut shared = loop {
        match cores.try_lock() {
            Some(shared) => break shared,
            None if !HOLDING.get() && Instant::now() < deadline => std::thread::yield_now(),
            None => return None,
        }
    };
    shared.simulate_waiting();
    let machine = &shared.machine;
    let mut totals = MachineTotals {
        interleaving: shared.interleaving,
        ..MachineTotals::default()
    };
    for (level, writebacks) in totals
        .writebacks
        .iter_mut()
        .enumerate()
        .take(machine.depth())
    {
        *writebacks = machine.level_stats(level).writebacks;
    }
    Some(totals)
}
