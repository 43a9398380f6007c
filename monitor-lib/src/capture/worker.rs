//! The simulation worker: one thread per process that simulates, on a second core, what the
//! program's threads stage while they run on.
//!
//! Cachegrind simulates on the core that runs the program, so a monitored run costs the
//! program's time plus the simulation's. In standalone counting most accesses are answered
//! inline (`filter.rs`) and the rest reach the runtime as batches of line visits, which need
//! nothing from the thread but their order: a thread hands its simulator and a few thousand
//! line visits to this worker and goes on running while they are simulated
//! (`ThreadCapture::ship`), taking the simulator back only before anything else reads
//! it. The run then takes about the longer of the two halves
//! instead of their sum.
//!
//! It is used only while the process's capturing threads leave a core spare (a program's own
//! threads on every core would only be slowed by it), and `EPCACHE_PIPELINE=off` turns it off.
//! The worker runs nothing but the jobs it is given, in order; it is marked as inside the
//! runtime, so the allocator wraps and hooks leave its allocations alone, and it starts with
//! every signal blocked, so none of the program's process-directed signals (a `sigwait`ed
//! SIGUSR1, a Ctrl-C its handler holds for the report) is delivered to it. It leaves once idle
//! for a while and starts again at the next hand-off: a process ends when its last thread does,
//! and a worker waiting for jobs forever kept a program whose main thread ended with
//! `pthread_exit` from ever ending.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use super::runtime_guard::RuntimeGuard;
use super::signal_abi;

/// Environment variable that turns the worker off (`off`).
pub(super) const PIPELINE_ENV: &str = "EPCACHE_PIPELINE";

/// A thread's hand-off: simulate, send the batch back, and say how many records it simulated.
pub(super) type Job = Box<dyn FnOnce() -> usize + Send>;

/// The running worker's queue; `None` while no worker runs. Jobs are sent under its lock, so a
/// worker that takes it and finds its queue empty can leave without stranding one.
static QUEUE: Mutex<Option<Sender<Job>>> = Mutex::new(None);

/// Set once a worker could not be started, or must not be ([`start_no_more`]): jobs run on
/// their own threads from then on.
static UNAVAILABLE: AtomicBool = AtomicBool::new(false);

/// The report is being written: no worker starts from now on (a running one still takes
/// jobs). A thread is started with every signal blocked, and starting it allocates: a report
/// written by a signal handler that interrupted the C library's allocator outside the wraps
/// would wait there for the allocator's lock with its watchdog's signal blocked, forever.
pub(super) fn start_no_more() {
    UNAVAILABLE.store(true, Ordering::Relaxed);
}

/// How long an idle worker waits for a job before it leaves.
const IDLE: Duration = Duration::from_millis(20);

/// Records simulated by jobs so far.
static SIMULATED: AtomicU64 = AtomicU64::new(0);

/// How long a thread spins for a batch to come back, and the worker for the next batch, before
/// it sleeps: about what simulating a batch takes, as the wait is usually shorter, and waking
/// a sleeping thread takes tens of microseconds on a virtual machine and a system call of the
/// thread that wakes it, which is then the one that has the other's work to wait for.
const SPIN: Duration = Duration::from_micros(200);

/// Threads that have a capture now (each may want a core of its own).
static CAPTURING_THREADS: AtomicU32 = AtomicU32::new(0);

/// Whether threads may ship to the worker at all in this process: more than one core, and not
/// turned off.
pub(super) fn enabled() -> bool {
    static ENABLED: OnceLock<bool> = OnceLock::new();
    *ENABLED.get_or_init(|| {
        let wanted = match std::env::var(PIPELINE_ENV) {
            Ok(value) => switch_value(&value).unwrap_or_else(|| {
                eprintln!(
                    "epcache: {PIPELINE_ENV}={value:?} is neither on nor off; simulating on a second core when one is spare (the default)"
                );
                true
            }),
            Err(_) => true,
        };
        wanted && cores() > 1
    })
}

/// `on`/`off` and their usual spellings.
fn switch_value(value: &str) -> Option<bool> {
    match value.trim().to_ascii_lowercase().as_str() {
        "on" | "1" | "yes" | "true" | "" => Some(true),
        "off" | "0" | "no" | "false" => Some(false),
        _ => None,
    }
}

/// The cores this process may run on, read once (each read is system calls).
fn cores() -> u32 {
    static CORES: OnceLock<u32> = OnceLock::new();
    *CORES.get_or_init(|| {
        std::thread::available_parallelism()
            .map_or(1, |n| u32::try_from(n.get()).unwrap_or(u32::MAX))
    })
}

/// Whether a hand-off now would find a core spare: the worker's own, beside one per
/// capturing thread.
pub(super) fn core_spare() -> bool {
    CAPTURING_THREADS.load(Ordering::Relaxed) < cores()
}

/// Records the worker simulated so far (for the report).
pub(super) fn simulated() -> u64 {
    SIMULATED.load(Ordering::Relaxed)
}

/// A thread's capture begins.
pub(super) fn thread_started() {
    CAPTURING_THREADS.fetch_add(1, Ordering::Relaxed);
}

/// A thread's capture ends.
pub(super) fn thread_ended() {
    CAPTURING_THREADS.fetch_sub(1, Ordering::Relaxed);
}

/// Runs `job` on the worker, starting it first if need be; on the calling thread when no
/// worker can be started (the job's result comes back the same way).
pub(super) fn run(job: Job) {
    let mut queue = QUEUE.lock().unwrap_or_else(|e| e.into_inner());
    if queue.is_none() && !UNAVAILABLE.load(Ordering::Relaxed) {
        *queue = start();
    }
    let job = match queue.as_ref() {
        Some(sender) => match sender.send(job) {
            Ok(()) => return,
            // The worker is gone without leaving (it cannot, as jobs catch their panics).
            Err(mpsc::SendError(job)) => {
                *queue = None;
                job
            }
        },
        None => job,
    };
    drop(queue);
    let _ = job();
}

/// Starts a worker; `None` (said once) when the system refuses a thread.
fn start() -> Option<Sender<Job>> {
    let (sender, jobs) = mpsc::channel::<Job>();
    let builder = std::thread::Builder::new().name("epcache-sim".into());
    // The new thread inherits the signal mask of the one that starts it.
    let spawned = signal_abi::with_signals_blocked(|| builder.spawn(move || work(&jobs)));
    match spawned {
        Ok(_) => Some(sender),
        Err(e) => {
            UNAVAILABLE.store(true, Ordering::Relaxed);
            eprintln!(
                "epcache: cannot start the simulation thread ({e}); simulating on the program's threads"
            );
            None
        }
    }
}

/// The worker's life: jobs in order until it has been idle for [`IDLE`].
fn work(jobs: &Receiver<Job>) {
    // Nothing this thread does is the program's.
    RuntimeGuard::enter().stay();
    loop {
        let job = match receive_within(jobs, IDLE) {
            Some(job) => job,
            None => {
                let mut queue = QUEUE.lock().unwrap_or_else(|e| e.into_inner());
                // A job sent since the wait gave up runs first; with none, the queue goes
                // with the worker and the next hand-off starts another.
                match jobs.try_recv() {
                    Ok(job) => job,
                    Err(_) => {
                        *queue = None;
                        return;
                    }
                }
            }
        };
        let records = job();
        SIMULATED.fetch_add(records as u64, Ordering::Relaxed);
    }
}

/// The next message on `channel` within `limit`, spinning a little ([`SPIN`]) first; `None`
/// when none came.
fn receive_within<T>(channel: &Receiver<T>, limit: Duration) -> Option<T> {
    receive_until(channel, Some(limit))
}

/// The next message on `channel`, spinning a little ([`SPIN`]) before sleeping; `None` once
/// no sender is left.
pub(super) fn receive<T>(channel: &Receiver<T>) -> Option<T> {
    receive_until(channel, None)
}

/// [`receive_within`] for `Some(limit)`, [`receive`] for `None`.
fn receive_until<T>(channel: &Receiver<T>, limit: Option<Duration>) -> Option<T> {
    let start = Instant::now();
    loop {
        match channel.try_recv() {
            Ok(message) => return Some(message),
            Err(mpsc::TryRecvError::Disconnected) => return None,
            Err(mpsc::TryRecvError::Empty) if start.elapsed() < SPIN => std::hint::spin_loop(),
            Err(mpsc::TryRecvError::Empty) => {
                return match limit {
                    Some(limit) => channel
                        .recv_timeout(limit.saturating_sub(start.elapsed()))
                        .ok(),
                    None => channel.recv().ok(),
                };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_switch_reads_on_and_off_in_their_usual_spellings() {
        for on in ["on", "ON", "1", "yes", "true", "", " on "] {
            assert_eq!(switch_value(on), Some(true), "{on:?}");
        }
        for off in ["off", "Off", "0", "no", "false"] {
            assert_eq!(switch_value(off), Some(false), "{off:?}");
        }
        assert_eq!(switch_value("sometimes"), None);
    }
}
