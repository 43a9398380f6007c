//! The simulation worker: one thread per process that simulates, on a second core, what the
//! program's threads stage while they run on.
//!
//! Cachegrind simulates on the core that runs the program, so a monitored run costs the
//! program's time plus the simulation's. In standalone counting most accesses are answered
//! inline (`filter.rs`) and the rest reach the runtime as batches of line visits, which need
//! nothing from the thread but their order: a thread hands its simulator and a few thousand
//! attributed visits to this worker and goes on running while they are simulated
//! (`state::ThreadCapture::ship`), taking the simulator back before the next hand-off or
//! before anything else reads it. The run then takes about the longer of the two halves
//! instead of their sum.
//!
//! It is used only while the process's capturing threads leave a core spare (a program's own
//! threads on every core would only be slowed by it), and `EPCACHE_PIPELINE=off` turns it off.
//! The worker runs nothing but the jobs it is given, in order; it is marked as inside the
//! runtime, so the allocator wraps and hooks leave its allocations alone.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::time::{Duration, Instant};

/// Environment variable that turns the worker off (`off`).
pub(super) const PIPELINE_ENV: &str = "EPCACHE_PIPELINE";

/// A thread's hand-off: simulate, send the batch back, and say how many records it simulated.
pub(super) type Job = Box<dyn FnOnce() -> usize + Send>;

/// The worker's queue, once started; `None` when it could not be.
static QUEUE: OnceLock<Option<Sender<Job>>> = OnceLock::new();

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

fn cores() -> u32 {
    std::thread::available_parallelism().map_or(1, |n| u32::try_from(n.get()).unwrap_or(u32::MAX))
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

/// Runs `job` on the worker, starting it first if need be; on the calling thread when the
/// worker cannot be started (the job's result comes back the same way).
pub(super) fn run(job: Job) {
    let queue = QUEUE.get_or_init(start);
    let job = match queue {
        Some(sender) => match sender.send(job) {
            Ok(()) => return,
            Err(mpsc::SendError(job)) => job,
        },
        None => job,
    };
    let _ = job();
}

fn start() -> Option<Sender<Job>> {
    let (sender, jobs) = mpsc::channel::<Job>();
    let spawned = std::thread::Builder::new()
        .name("epcache-sim".into())
        .spawn(move || {
            // Nothing this thread does is the program's.
            super::state::enter_runtime();
            while let Some(job) = receive(&jobs) {
                let records = job();
                SIMULATED.fetch_add(records as u64, Ordering::Relaxed);
            }
        });
    match spawned {
        Ok(_) => Some(sender),
        Err(e) => {
            eprintln!(
                "epcache: cannot start the simulation thread ({e}); simulating on the program's threads"
            );
            None
        }
    }
}

/// The next message on `channel`, spinning a little ([`SPIN`]) before sleeping; `None` once
/// no sender is left.
pub(super) fn receive<T>(channel: &Receiver<T>) -> Option<T> {
    let start = Instant::now();
    loop {
        match channel.try_recv() {
            Ok(message) => return Some(message),
            Err(mpsc::TryRecvError::Disconnected) => return None,
            Err(mpsc::TryRecvError::Empty) if start.elapsed() < SPIN => std::hint::spin_loop(),
            Err(mpsc::TryRecvError::Empty) => return channel.recv().ok(),
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
