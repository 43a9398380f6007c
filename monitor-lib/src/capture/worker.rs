//! The simulation worker: one thread per process that simulates, on a second core, what the
//! program's threads stage while they run on.
//!
//! Cachegrind simulates on the core that runs the program, so a monitored run costs the
//! program's time plus the simulation's. In standalone counting most accesses are answered
//! inline (`filter.rs`) and the rest reach the runtime as batches of line visits, which need
//! nothing from the thread but their order (and a thread whose filter is off, recording a
//! partial trace or running an analysis, sends its accesses themselves): a thread hands its
//! simulator and a few thousand line visits to this worker and goes on running while they are
//! simulated (`ThreadCapture::ship`), taking the simulator back only before anything else
//! reads it. The run then takes about the longer of the two halves instead of their sum.
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
//!
//! A second core helps only while it is the worker's: on a machine with more runnable threads
//! than cores (another program, an MPI rank per core) the worker and the program's thread take
//! turns with the others, each waits for the other while that one is descheduled, and a run
//! took 2.7 times as long as on one core. So both sides watch how long the scheduler keeps them
//! waiting while runnable ([`ShareWindow`], from the kernel's per-thread `schedstat`): the worker
//! after each job, the program's thread at each hand-off. Once either waited more than
//! [`CONTENDED_PERCENT`] of a window of its time, the thread falls back to simulating on its own
//! thread ([`Backoff`]), which is never slower than one core, and tries the worker again later,
//! waiting twice as long each time the machine is still busy. `pipeline_fallbacks` in the report
//! counts the fallbacks; `EPCACHE_PIPELINE=always` keeps the worker whatever the machine does.

use std::fs::File;
use std::os::unix::fs::FileExt;
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

/// What `EPCACHE_PIPELINE` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pipeline {
    /// `off`: every thread simulates on its own.
    Off,
    /// `on` (the default): a second core when one is spare, falling back while the machine is
    /// busy.
    On,
    /// `always`: a second core when one is spare, even on a busy machine (for tests of the
    /// hand-off itself, which must not depend on what else the machine runs).
    Always,
}

/// The setting, read once.
fn pipeline() -> Pipeline {
    static PIPELINE: OnceLock<Pipeline> = OnceLock::new();
    *PIPELINE.get_or_init(|| match std::env::var(PIPELINE_ENV) {
        Ok(value) => switch_value(&value).unwrap_or_else(|| {
            eprintln!(
                "epcache: {PIPELINE_ENV}={value:?} is none of on, off and always; simulating on a second core when one is spare (the default)"
            );
            Pipeline::On
        }),
        Err(_) => Pipeline::On,
    })
}

/// Whether threads may ship to the worker at all in this process: more than one core, and not
/// turned off.
pub(super) fn enabled() -> bool {
    pipeline() != Pipeline::Off && cores() > 1
}

/// Whether a thread falls back to simulating on its own while the machine is busy (not with
/// `EPCACHE_PIPELINE=always`).
pub(super) fn falls_back_when_busy() -> bool {
    pipeline() == Pipeline::On
}

/// `on`/`off` and their usual spellings, and `always`.
fn switch_value(value: &str) -> Option<Pipeline> {
    match value.trim().to_ascii_lowercase().as_str() {
        "on" | "1" | "yes" | "true" | "" => Some(Pipeline::On),
        "off" | "0" | "no" | "false" => Some(Pipeline::Off),
        "always" => Some(Pipeline::Always),
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

/// Set by the worker when the scheduler kept it waiting for more than [`CONTENDED_PERCENT`] of
/// its last window; taken by the next thread that hands it a batch, which falls back.
static CONTENDED: AtomicBool = AtomicBool::new(false);

/// Times a thread fell back to simulating on its own thread because the machine was busy.
static FALLBACKS: AtomicU64 = AtomicU64::new(0);

/// Whether the worker found the machine busy since this was last asked (and forgets it).
pub(super) fn take_contended() -> bool {
    CONTENDED.swap(false, Ordering::Relaxed)
}

/// Fallbacks so far (for the report).
pub(super) fn fallbacks() -> u64 {
    FALLBACKS.load(Ordering::Relaxed)
}

/// A thread falls back (counted for the report).
pub(super) fn fell_back() {
    FALLBACKS.fetch_add(1, Ordering::Relaxed);
}

/// A share of waiting above this percentage of a window, for either side, means the machine
/// has more runnable threads than cores. On an idle machine both wait well under 1%; beside one
/// CPU-bound process on two cores, about a third of the time.
pub(super) const CONTENDED_PERCENT: u64 = 20;

/// A window's length in time the thread ran or waited to run: long enough to hold several
/// scheduler ticks (the kernel adds run time at ticks and switches, so a reading moves in
/// steps of a few milliseconds) and time slices, short enough that a busy machine is noticed
/// within a few tens of milliseconds of it becoming so.
const WINDOW_NS: u64 = 10_000_000;

/// One thread's time on a CPU and time runnable but waiting for one, in nanoseconds, from the
/// kernel's `/proc/thread-self/schedstat` (its first two fields), read again through one open
/// file (one `pread` per reading). `None` readings where the kernel keeps no such statistics.
pub(super) struct SchedClock {
    file: Option<File>,
}

impl SchedClock {
    /// The calling thread's clock (the file names the thread that opens it).
    pub(super) fn for_this_thread() -> SchedClock {
        SchedClock {
            file: File::open("/proc/thread-self/schedstat").ok(),
        }
    }

    /// `(run, wait)` so far.
    pub(super) fn read(&self) -> Option<(u64, u64)> {
        let mut buf = [0u8; 96];
        let n = self.file.as_ref()?.read_at(&mut buf, 0).ok()?;
        parse_schedstat(&buf[..n])
    }
}

/// The first two numbers of a `schedstat` line.
fn parse_schedstat(text: &[u8]) -> Option<(u64, u64)> {
    let text = std::str::from_utf8(text).ok()?;
    let mut fields = text.split_ascii_whitespace().map(str::parse::<u64>);
    Some((fields.next()?.ok()?, fields.next()?.ok()?))
}

/// A thread's time on a CPU and waiting for one since its window began: closes once the two
/// reach [`WINDOW_NS`], with the verdict whether it waited more than [`CONTENDED_PERCENT`].
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct ShareWindow {
    start: Option<(u64, u64)>,
}

impl ShareWindow {
    /// Adds the reading `(run, wait)`; `Some(contended)` when it closes the window (the next
    /// begins at it), `None` while it stays open.
    pub(super) fn add(&mut self, (run, wait): (u64, u64)) -> Option<bool> {
        let Some((run0, wait0)) = self.start else {
            self.start = Some((run, wait));
            return None;
        };
        let (ran, waited) = (run.saturating_sub(run0), wait.saturating_sub(wait0));
        if ran + waited < WINDOW_NS {
            return None;
        }
        self.start = Some((run, wait));
        Some(waited * 100 > CONTENDED_PERCENT * (ran + waited))
    }

    /// Starts again from the next reading.
    pub(super) fn restart(&mut self) {
        self.start = None;
    }
}

/// How long a thread that found the machine busy simulates on its own before it tries the
/// worker again: [`Backoff::FIRST`], doubled (up to [`Backoff::LONGEST`]) while each try finds
/// the machine still busy, and back to the first after a try that did not.
#[derive(Debug, Clone, Copy)]
pub(super) struct Backoff {
    next: Duration,
    /// Until when the thread simulates on its own (`None` while it hands batches on).
    until: Option<Instant>,
    /// When it last tried the worker again.
    resumed: Option<Instant>,
}

impl Backoff {
    const FIRST: Duration = Duration::from_millis(100);
    const LONGEST: Duration = Duration::from_secs(2);

    pub(super) const fn new() -> Backoff {
        Backoff {
            next: Self::FIRST,
            until: None,
            resumed: None,
        }
    }

    /// The machine is busy at `now`: simulate on this thread for a while.
    pub(super) fn fall_back(&mut self, now: Instant) {
        // A try that found the machine busy again soon waits twice as long next time.
        let soon = self
            .resumed
            .is_some_and(|r| now.saturating_duration_since(r) < 2 * self.next.max(Self::FIRST));
        self.next = if soon {
            (self.next * 2).min(Self::LONGEST)
        } else {
            Self::FIRST
        };
        self.until = Some(now + self.next);
    }

    /// Whether the thread simulates on its own at `now`; once the time is up, it tries the
    /// worker again (and `false`).
    pub(super) fn simulating_here(&mut self, now: Instant) -> bool {
        match self.until {
            Some(until) if now < until => true,
            Some(_) => {
                self.until = None;
                self.resumed = Some(now);
                false
            }
            None => false,
        }
    }

    /// Whether the thread is simulating on its own, as of the last check.
    pub(super) fn is_falling_back(&self) -> bool {
        self.until.is_some()
    }
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
    let clock = SchedClock::for_this_thread();
    let mut window = ShareWindow::default();
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
        if let Some(reading) = clock.read()
            && window.add(reading) == Some(true)
        {
            CONTENDED.store(true, Ordering::Relaxed);
        }
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
            assert_eq!(switch_value(on), Some(Pipeline::On), "{on:?}");
        }
        for off in ["off", "Off", "0", "no", "false"] {
            assert_eq!(switch_value(off), Some(Pipeline::Off), "{off:?}");
        }
        assert_eq!(switch_value(" Always"), Some(Pipeline::Always));
        assert_eq!(switch_value("sometimes"), None);
    }

    #[test]
    fn a_window_closes_after_its_time_and_says_whether_the_thread_waited_too_long() {
        let mut w = ShareWindow::default();
        assert_eq!(w.add((1_000, 500)), None, "the first reading opens it");
        assert_eq!(w.add((5_000_000, 600)), None, "not long enough yet");
        // 10 ms later: 9 ms run, 1 ms waited (10%).
        assert_eq!(w.add((9_001_000, 1_000_500)), Some(false));
        // The next: 5 ms run, 5 ms waited (50%).
        assert_eq!(w.add((14_001_000, 6_000_500)), Some(true));
        // Exactly at the threshold is not contended; just above is.
        let mut w = ShareWindow::default();
        w.add((0, 0));
        assert_eq!(w.add((8_000_000, 2_000_000)), Some(false));
        assert_eq!(w.add((15_999_000, 4_001_000)), Some(true));
        w.restart();
        assert_eq!(
            w.add((90_000_000, 90_000_000)),
            None,
            "restarted: a new first reading"
        );
    }

    #[test]
    fn schedstat_lines_give_run_and_wait_and_this_threads_can_be_read() {
        assert_eq!(
            parse_schedstat(b"150507590 387608962 58\n"),
            Some((150_507_590, 387_608_962))
        );
        assert_eq!(parse_schedstat(b"12\n"), None);
        assert_eq!(parse_schedstat(b""), None);
        // Where the kernel keeps the statistics (Linux with scheduler statistics, as here),
        // the same open file reads a running thread's time as it grows (at scheduler ticks).
        let clock = SchedClock::for_this_thread();
        if let Some((run, wait)) = clock.read() {
            let spin = Instant::now();
            let mut now = (run, wait);
            while now.0 == run && spin.elapsed() < Duration::from_secs(5) {
                std::hint::spin_loop();
                now = clock.read().expect("read again");
            }
            assert!(now.0 > run && now.1 >= wait, "{run} {wait} then {now:?}");
        }
    }

    #[test]
    fn a_busy_machine_sends_the_thread_back_for_longer_each_time_it_is_still_busy() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let mut b = Backoff::new();
        assert!(!b.simulating_here(t0) && !b.is_falling_back());
        b.fall_back(t0);
        assert!(b.simulating_here(t0 + Backoff::FIRST / 2));
        assert!(b.is_falling_back());
        // After the first wait it tries the worker again ...
        let resumed = t0 + Backoff::FIRST;
        assert!(!b.simulating_here(resumed));
        assert!(!b.is_falling_back());
        // ... finds the machine still busy soon after, and stays twice as long.
        b.fall_back(resumed + ms(5));
        assert!(b.simulating_here(resumed + ms(5) + 2 * Backoff::FIRST - ms(1)));
        let resumed = resumed + ms(5) + 2 * Backoff::FIRST;
        assert!(!b.simulating_here(resumed));
        // A try that went well for long: the next fallback is short again.
        b.fall_back(resumed + ms(10_000));
        assert!(!b.simulating_here(resumed + ms(10_000) + Backoff::FIRST));
        // Doubling stops at the longest.
        let mut b = Backoff::new();
        let mut now = t0;
        for _ in 0..20 {
            b.fall_back(now);
            while b.simulating_here(now) {
                now += Duration::from_millis(1);
            }
        }
        b.fall_back(now);
        assert!(b.simulating_here(now + Backoff::LONGEST - Duration::from_millis(1)));
        assert!(!b.simulating_here(now + Backoff::LONGEST));
    }
}
