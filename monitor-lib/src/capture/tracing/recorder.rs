//! One recording per capturing thread, and the one file they share.
//!
//! Every thread that starts capturing while the trace is open records, into the one file (the first
//! opens it): each thread's records go to the file as chunks of its own
//! (`epcache_sim::trace::partial`'s threads), under a lock taken once per 64 KiB of them, and
//! replay simulates each thread on caches of its own, as the run did (an OpenMP parallel region's
//! outlined body on every thread of the team). A thread's part ends when its instances asked for
//! (each thread's own count) have ended, or its access budget, or the thread; every thread but the
//! first also ends a body at each instance's end, so what it recorded is in the file even if it
//! never ends (libgomp's pool threads sleep through the program's exit). The first ends one at an
//! instance's end only once its body holds [`SAFE_POINT_ACCESSES`]: a body's end closes its
//! descriptors, and a region entered often in a loop would lose its compression across instances.
//! Each thread also hands the file what it wrote at most once per [`SAFE_POINT_ACCESSES`], at an
//! instance's end, and inside an instance that runs long at the entry of a region it calls once
//! [`LONG_INSTANCE_SAFE_POINT`] accesses came since (a body may end inside a span, which the next
//! one goes on counting; an entry, since a body ended inside a loop nest starts its compression
//! over), so a process killed outright (SIGKILL, the out-of-memory killer, a batch system's time
//! limit) leaves a file whose ended bodies a replay reads, a long instance included up to its last
//! safe point, with the sites they hold described (each hand-over writes the sites the file does
//! not describe yet). The trace is closed (the other sites, ranges, end) once the first thread's
//! part and every other open part have ended, or at the process's end, whichever comes first; an
//! instance going on then is left out and said. The recorder belongs to its thread's core
//! (`Core::tracer`), so recording an access takes no lock but a chunk's. With threads as cores of
//! one machine (`EPCACHE_CORES`) the trace keeps each thread's order but not the interleaving, so
//! replay does not reproduce shared levels and coherence, which the run says.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

use epcache_shm::layout::TraceOutcome;
use epcache_sim::cache::AccessKind;
use epcache_sim::ranges::AddressRange;
use epcache_sim::trace::TraceKind;
use epcache_sim::trace::partial::{
    Mark, PartialAccess, SiteInfo, StructureRange, ThreadWriter, TraceFile,
};

use super::super::region_registry::RegionRef;
use super::super::{cores, data, switches};
use super::{
    CLAIMED, REQUEST, Request, TOOL_FILE, is_traced, never_ran, request, site_info, tell_tool,
};

/// How many accesses a thread records between the points where what it recorded is made
/// readable from the file (its body ended and handed over): a few hundred bytes of trace for a
/// regular kernel, and one system call per point.
const SAFE_POINT_ACCESSES: u64 = 1 << 16;

/// How many accesses a thread records inside one instance before its next safe point, at the
/// entry of a region the instance calls (a traced `main` is one instance): a few tenths of a
/// second of recording.
const LONG_INSTANCE_SAFE_POINT: u64 = 1 << 24;

/// The trace file and what the recording threads told it, behind one lock: a thread takes it
/// to append a chunk (about every 64 KiB of its records) and when it finishes. What a thread
/// tells at a traced instance's bounds is in [`Progress`], taken with no lock.
struct Shared {
    /// The file while the trace is open: from the first claim until it is closed.
    file: Option<TraceFile<BufWriter<File>>>,
    /// Whether the first claim was made (no thread claims once the trace is closed).
    opened: bool,
    next_thread: u64,
    /// Recorders not finished, and whether thread 0's (the first claim's) is one of them.
    open_recorders: u32,
    first_finished: bool,
    budget_reached: bool,
    /// Every site recorded, with the first address it accessed.
    sites: BTreeMap<u64, u64>,
    /// Sites the file describes already (a `SITE` record, or none to write).
    described: BTreeSet<u64>,
    /// Why the file could not be written, once it could not.
    write_error: Option<String>,
}

static SHARED: Mutex<Shared> = Mutex::new(Shared {
    file: None,
    opened: false,
    next_thread: 0,
    open_recorders: 0,
    first_finished: false,
    budget_reached: false,
    sites: BTreeMap::new(),
    described: BTreeSet::new(),
    write_error: None,
});

/// What the recorders wrote, told at their instances' bounds: the counts a close reports.
struct Progress {
    /// Recorders inside a traced instance now.
    inside: AtomicU32,
    accesses: AtomicU64,
    /// Instances ended, and threads that ended one.
    instances: AtomicU64,
    threads_with_instances: AtomicU64,
}

static PROGRESS: Progress = Progress {
    inside: AtomicU32::new(0),
    accesses: AtomicU64::new(0),
    instances: AtomicU64::new(0),
    threads_with_instances: AtomicU64::new(0),
};

fn shared() -> std::sync::MutexGuard<'static, Shared> {
    SHARED.lock().unwrap_or_else(|e| e.into_inner())
}

/// A recording thread's sink: each piece its writer hands over becomes one chunk of the file,
/// appended under the lock.
struct Chunks {
    thread: u64,
}

impl Write for Chunks {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        let mut shared = shared();
        let Some(file) = &mut shared.file else {
            return Err(std::io::Error::other("the trace is closed"));
        };
        match file.chunk(self.thread, bytes) {
            Ok(()) => Ok(bytes.len()),
            Err(e) => Err(give_up_file(&mut shared, e)),
        }
    }

    /// Hands the chunks appended so far, every thread's, to the file.
    fn flush(&mut self) -> std::io::Result<()> {
        let mut shared = shared();
        let Some(file) = &mut shared.file else {
            return Err(std::io::Error::other("the trace is closed"));
        };
        file.flush().map_err(|e| give_up_file(&mut shared, e))
    }
}

/// A chunk half written spoils the file for every thread: the trace is given up, said, and
/// the error handed back.
fn give_up_file(shared: &mut Shared, e: std::io::Error) -> std::io::Error {
    eprintln!("epcache: cannot write the trace: {e}; tracing stops");
    shared.write_error = Some(e.to_string());
    shared.file = None;
    RECORDING.store(false, Ordering::Release);
    e
}

/// One thread's recording, owned by its core (`Core::tracer`), so recording an access takes no
/// lock but a chunk's.
pub(in crate::capture) struct Recorder {
    /// `None` once given up on (a write error).
    writer: Option<ThreadWriter<Chunks>>,
    /// The thread's number in the file, 0 for the first claim.
    thread: u64,
    request: &'static Request,
    /// Region id to whether it is the traced region.
    traced: HashMap<u32, bool>,
    /// Traced instances open (nested ones included), and whether the shared count of threads
    /// inside an instance has this one.
    depth: u32,
    inside: bool,
    instances_done: u64,
    /// Accesses written, and how many of them and of its instances the shared state has.
    recorded: u64,
    /// The thread's accesses when it last handed the file what it wrote.
    handed_over: u64,
    told: (u64, u64),
    /// Whether the access budget ended the recording.
    budget_reached: bool,
}

/// Set while the trace is open (from the first claim until it is closed).
static RECORDING: AtomicBool = AtomicBool::new(false);
/// Instances of the traced region threads without a recorder began while the trace was open.
static OTHER_THREADS_INSTANCES: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// This thread recorded every instance the trace asks of it (`--instances N`): its later
    /// instances are left out on purpose, not missed.
    static RECORDED_ITS_INSTANCES: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// The recorder of the thread whose capture starts now, when a trace is asked for and open:
/// the first such thread opens it (creates its file), and every thread that starts capturing
/// before it is closed records too.
pub(in crate::capture) fn claim() -> Option<Box<Recorder>> {
    let request = request()?;
    let mut shared = shared();
    let thread = if !shared.opened {
        shared.opened = true;
        CLAIMED.store(true, Ordering::Release);
        let file = match &request.tool {
            Some(_) => TOOL_FILE
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take()
                .ok_or_else(|| std::io::Error::other("its file was not created")),
            None => {
                super::create_standalone_trace_file(&request.output).map_err(std::io::Error::other)
            }
        };
        match file.and_then(|f| TraceFile::new(BufWriter::with_capacity(1 << 16, f), true)) {
            Ok(file) => shared.file = Some(file),
            Err(e) => {
                drop(shared);
                eprintln!(
                    "epcache: cannot write the trace {}: {e}; nothing is traced",
                    request.output.display()
                );
                tell_tool(
                    request,
                    &TraceOutcome {
                        message: format!("cannot write the trace: {e}"),
                        ..TraceOutcome::default()
                    },
                    false,
                );
                return None;
            }
        }
        RECORDING.store(true, Ordering::Release);
        0
    } else if shared.file.is_some() {
        shared.next_thread
    } else {
        return None;
    };
    shared.next_thread = thread + 1;
    shared.open_recorders += 1;
    Some(Box::new(Recorder {
        writer: Some(ThreadWriter::new(Chunks { thread })),
        thread,
        request,
        traced: HashMap::new(),
        depth: 0,
        inside: false,
        instances_done: 0,
        recorded: 0,
        handed_over: 0,
        told: (0, 0),
        budget_reached: false,
    }))
}

/// At the process's end, after the exiting thread's recorder finished: closes the trace if
/// threads still record (one blocked, or asleep in a thread pool). What they recorded up to
/// their last ended instance is in the file; an instance going on now is not.
pub(in crate::capture) fn close_at_exit() {
    if let Some(Some(request)) = REQUEST.get() {
        close(&mut shared(), request);
    }
}

/// A monitored instance of `region` begins on a thread that records nothing: if it is the
/// traced region and the trace is open, its accesses are not in the trace (the thread began
/// capturing before the trace was asked for, or gave its recording up), which the first such
/// instance says on stderr and the outcome counts.
pub(in crate::capture) fn entered_without_recorder(region: RegionRef) {
    if !RECORDING.load(Ordering::Acquire) {
        return;
    }
    let Some(request) = request() else {
        return;
    };
    if !is_traced(request, region) || RECORDED_ITS_INSTANCES.with(std::cell::Cell::get) {
        return;
    }
    if OTHER_THREADS_INSTANCES.fetch_add(1, Ordering::AcqRel) == 0 {
        eprintln!(
            "epcache: the traced region `{}` runs on a thread that does not record it (it \
             stopped recording, or began capturing before the trace was open), so its accesses \
             are not in {}",
            request.region,
            request.output.display()
        );
    }
}

impl Recorder {
    /// Records one access at code address `pc`; `false` once the thread's recording is over
    /// (the budget is reached, the file cannot be written): the thread may then take its
    /// filter back, and the recorder's drop finishes its part.
    #[inline]
    pub(in crate::capture) fn record(
        &mut self,
        addr: u64,
        size: u32,
        kind: AccessKind,
        pc: u64,
    ) -> bool {
        let kind = match kind {
            AccessKind::Read => TraceKind::Load,
            AccessKind::Write => TraceKind::Store,
        };
        let access = PartialAccess {
            site: pc,
            kind,
            addr,
            size,
        };
        let Some(writer) = &mut self.writer else {
            return false;
        };
        let tool = self.request.tool.as_ref();
        if let Some(order) = tool
            && !order.ranges.is_empty()
            && !order.ranges.iter().any(|r| r.contains(addr))
        {
            return true;
        }
        if writer.record(&access).is_err() {
            self.give_up();
            return false;
        }
        self.recorded += 1;
        if let Some(budget) = tool.and_then(|o| o.access_budget)
            && self.recorded >= budget
        {
            // The open instance ends here; the recorder's drop ends the thread's part.
            if self.depth > 0 {
                writer.mark(Mark::End);
                self.depth = 0;
                self.instances_done += 1;
                self.set_inside(false);
            }
            self.budget_reached = true;
            return false;
        }
        true
    }

    /// The file could not be written (`Chunks` said why), or the trace was closed under this
    /// thread: its part ends.
    fn give_up(&mut self) {
        self.writer = None;
        self.set_inside(false);
    }

    /// Tells the shared count whether this thread is inside a traced instance.
    fn set_inside(&mut self, inside: bool) {
        if self.inside != inside {
            self.inside = inside;
            if inside {
                PROGRESS.inside.fetch_add(1, Ordering::Relaxed);
            } else {
                PROGRESS.inside.fetch_sub(1, Ordering::Relaxed);
            }
        }
    }

    /// Whether `region` is the traced one (its name looked up once per region).
    fn is_traced(&mut self, region: RegionRef) -> bool {
        if let Some(&traced) = self.traced.get(&region.id) {
            return traced;
        }
        let traced = is_traced(self.request, region);
        self.traced.insert(region.id, traced);
        traced
    }

    /// A monitored instance of `region` begins on the recording thread.
    pub(in crate::capture) fn region_entered(&mut self, region: RegionRef) {
        if !self.is_traced(region) {
            if self.depth > 0 && self.recorded - self.handed_over >= LONG_INSTANCE_SAFE_POINT {
                self.hand_over_inside_instance();
            }
            return;
        }
        if self.depth == 0
            && let Some(w) = &mut self.writer
        {
            w.mark(Mark::Begin);
            self.set_inside(true);
        }
        self.depth += 1;
    }

    /// A monitored instance of `region` ends on the recording thread; the recorder back, or
    /// `None` once the thread's part is done (the last instance asked for ended). It is a safe
    /// point ([`Self::reach_safe_point`]).
    pub(in crate::capture) fn region_exited(
        mut self: Box<Self>,
        region: RegionRef,
    ) -> Option<Box<Self>> {
        if !self.is_traced(region) || self.depth == 0 {
            return Some(self);
        }
        self.depth -= 1;
        if self.depth > 0 {
            return Some(self);
        }
        let Some(w) = &mut self.writer else {
            return Some(self);
        };
        w.mark(Mark::End);
        self.instances_done += 1;
        if self.request.instances == Some(self.instances_done) {
            RECORDED_ITS_INSTANCES.with(|done| done.set(true));
            return None;
        }
        let ended = self.reach_safe_point().is_ok();
        self.set_inside(false);
        if ended {
            self.tell();
        } else {
            self.give_up();
        }
        Some(self)
    }

    /// At a traced instance's end: every thread but the first ends its body, so what it
    /// recorded is in the file whatever becomes of the thread; the first once the body holds
    /// [`SAFE_POINT_ACCESSES`]. What the thread wrote goes to the file at most once per
    /// [`SAFE_POINT_ACCESSES`], so a killed process leaves its ended bodies readable.
    fn reach_safe_point(&mut self) -> std::io::Result<()> {
        let Some(w) = &mut self.writer else {
            return Ok(());
        };
        if self.thread != 0 || w.body_accesses() >= SAFE_POINT_ACCESSES {
            w.end_body()?;
        }
        if self.recorded - self.handed_over >= SAFE_POINT_ACCESSES {
            self.hand_over()?;
        }
        Ok(())
    }

    /// Hands the file what this thread wrote, its sites not described yet described first, so
    /// a file whose process is killed before the close names them too.
    fn hand_over(&mut self) -> std::io::Result<()> {
        let Some(w) = &mut self.writer else {
            return Ok(());
        };
        {
            let mut shared = shared();
            if let Err(e) = describe_new_sites(&mut shared, w.sites()) {
                return Err(give_up_file(&mut shared, e));
            }
        }
        w.sink_mut().flush()?;
        self.handed_over = self.recorded;
        Ok(())
    }

    /// A safe point inside a long traced instance, at the entry of a region it calls: the body
    /// ends inside the instance's span (the next goes on counting) and goes to the file. Only
    /// at an entry: the callee's loops begin there, so its descriptors lose nothing, where a
    /// body ended inside a loop nest starts the nest's compression over from a partial row.
    fn hand_over_inside_instance(&mut self) {
        let Some(w) = &mut self.writer else {
            return;
        };
        if w.end_body().and_then(|()| self.hand_over()).is_err() {
            self.give_up();
        }
    }

    /// Ends the thread's part of the trace (as its drop does).
    pub(in crate::capture) fn finish(self: Box<Self>) {}

    /// Adds what this recorder wrote since it last told to the shared counts ([`PROGRESS`]).
    fn tell(&mut self) {
        let p = &PROGRESS;
        p.accesses
            .fetch_add(self.recorded - self.told.0, Ordering::Relaxed);
        p.instances
            .fetch_add(self.instances_done - self.told.1, Ordering::Relaxed);
        if self.told.1 == 0 && self.instances_done > 0 {
            p.threads_with_instances.fetch_add(1, Ordering::Relaxed);
        }
        self.told = (self.recorded, self.instances_done);
    }
}

impl Drop for Recorder {
    /// The thread's part ends however it ends (its instances done, the budget, a write error,
    /// the thread's end, the process's): its last body goes to the file, and the last part to
    /// end closes the trace once the first thread's has ended. Not in a forked child, whose
    /// file and lock are its parent's.
    fn drop(&mut self) {
        if switches::forked_child() {
            return;
        }
        let mut sites = Vec::new();
        if let Some(writer) = self.writer.take() {
            sites.extend(writer.sites());
            // A failure is the file's, which `Chunks` said and the close reports.
            let _ = writer.finish();
        }
        // An instance still open ends with the thread's last body, written now.
        self.set_inside(false);
        self.tell();
        let mut shared = shared();
        for (site, addr) in sites {
            shared.sites.entry(site).or_insert(addr);
        }
        shared.budget_reached |= self.budget_reached;
        shared.open_recorders -= 1;
        if self.thread == 0 {
            shared.first_finished = true;
        }
        if shared.first_finished && shared.open_recorders == 0 {
            close(&mut shared, self.request);
        }
    }
}

/// Writes a `SITE` record for each of `sites` (a code address and the first address it
/// accessed) that the file does not describe yet.
fn describe_new_sites(
    shared: &mut Shared,
    sites: impl Iterator<Item = (u64, u64)>,
) -> std::io::Result<()> {
    let new: Vec<(u64, u64)> = sites
        .filter(|(site, _)| !shared.described.contains(site))
        .collect();
    if new.is_empty() {
        return Ok(());
    }
    let structures = live_structures();
    // A trace closed under this thread: the hand-over's flush says so.
    let Some(file) = &mut shared.file else {
        return Ok(());
    };
    for (site, addr) in new {
        if let Some(info) = describe(site, addr, &structures) {
            file.site(site, &info)?;
        }
        shared.described.insert(site);
    }
    Ok(())
}

/// The data structures that hold addresses now.
fn live_structures() -> Vec<data::DataStructure> {
    data::all()
        .into_iter()
        .filter(|s| s.range.end > s.range.start)
        .collect()
}

/// The source of the accesses at code address `site`, named by the data structure holding the
/// first address it accessed (`None` when the program's line tables know nothing of it).
fn describe(site: u64, addr: u64, structures: &[data::DataStructure]) -> Option<SiteInfo> {
    let mut info = site_info(site)?;
    if let Some(s) = structures.iter().find(|s| s.range.contains(addr)) {
        info.structure = s.name.clone();
    }
    Some(info)
}

/// Closes the trace, if open: the site table, the data structures and the end, then the
/// outcome told to the tool that asked. Threads still recording stop at their next chunk.
fn close(shared: &mut Shared, request: &Request) {
    let path = request.output.display().to_string();
    let file = shared.file.take();
    if file.is_none() && shared.write_error.is_none() {
        return;
    }
    RECORDING.store(false, Ordering::Release);
    let mut outcome = TraceOutcome {
        accesses: PROGRESS.accesses.load(Ordering::Relaxed),
        instances: PROGRESS.instances.load(Ordering::Relaxed),
        complete: false,
        budget_reached: shared.budget_reached,
        message: String::new(),
    };
    let Some(mut file) = file else {
        let why = shared.write_error.take().unwrap_or_default();
        eprintln!("epcache: cannot write the trace {path}: {why}");
        outcome.message = format!("cannot write the trace {path}: {why}");
        return tell_tool(request, &outcome, false);
    };
    let structures = live_structures();
    let sites: BTreeMap<u64, SiteInfo> = shared
        .sites
        .iter()
        .filter(|(site, _)| !shared.described.contains(site))
        .filter_map(|(&site, &addr)| Some((site, describe(site, addr, &structures)?)))
        .collect();
    let ranges: Vec<StructureRange> = structures
        .into_iter()
        .map(|s| StructureRange {
            name: s.name,
            start: s.range.start,
            end: s.range.end,
        })
        .collect();
    let cut = PROGRESS.inside.load(Ordering::Relaxed);
    let others = OTHER_THREADS_INSTANCES.load(Ordering::Acquire);
    outcome.complete = !outcome.budget_reached
        && cut == 0
        && others == 0
        && match request.instances {
            Some(n) => outcome.instances >= n,
            None => outcome.instances > 0,
        };
    let mut notes = Vec::new();
    if outcome.instances == 0 && cut == 0 {
        notes.push(never_ran(request));
        eprintln!("epcache: {}", notes[0]);
    } else if outcome.budget_reached {
        notes.push(format!(
            "the access budget ended a thread's recording, within its instance {}",
            outcome.instances
        ));
    }
    if let Some(order) = &request.tool
        && !order.ranges.is_empty()
    {
        notes.push(filtered_note(&order.ranges, &ranges));
    }
    let threads_with_instances = PROGRESS.threads_with_instances.load(Ordering::Relaxed);
    if threads_with_instances > 1 {
        notes.push(format!(
            "{} threads ran the region, each recorded on its own",
            threads_with_instances
        ));
    }
    if cores::count().is_some() && shared.next_thread > 1 {
        let note = "the threads ran as cores of one machine (EPCACHE_CORES): the trace keeps \
                    each thread's order but not how they interleaved, so a replay simulates each \
                    on caches of its own, without the shared levels and coherence of the run";
        eprintln!("epcache: {note}");
        notes.push(note.into());
    }
    if cut > 0 {
        let note = format!(
            "{cut} thread(s) were inside an instance of `{}` when the trace {path} was closed at \
             exit; those instances are not in it",
            request.region
        );
        eprintln!("epcache: {note}");
        notes.push(note);
    }
    if others > 0 {
        notes.push(format!(
            "{others} instance(s) ran on threads that did not record them and are not in the trace"
        ));
    }
    outcome.message = notes.join("; ");
    // Every replay repeats them: what the trace lacks that the run counted, and why.
    let finished = notes
        .iter()
        .try_for_each(|note| file.note(note))
        .and_then(|()| file.finish(&sites, &ranges))
        .and_then(|mut sink| std::io::Write::flush(&mut sink));
    match finished {
        Ok(_) => tell_tool(request, &outcome, true),
        Err(e) => {
            eprintln!("epcache: cannot write the trace {path}: {e}");
            outcome.message = format!("cannot write the trace {path}: {e}");
            tell_tool(request, &outcome, false);
        }
    }
}

/// What a replay of a trace recorded with a data filter (`--data`) must say: the caches it
/// simulates see only those structures' accesses, so its misses are theirs alone, not the
/// run's (no other data evicts their lines).
fn filtered_note(kept: &[AddressRange], structures: &[StructureRange]) -> String {
    let names: Vec<&str> = structures
        .iter()
        .filter(|s| kept.iter().any(|r| r.start < s.end && s.start < r.end))
        .map(|s| s.name.as_str())
        .collect();
    let what = if names.is_empty() {
        format!("{} address range(s)", kept.len())
    } else {
        names.join(", ")
    };
    format!(
        "only the accesses to {what} were recorded (a data filter): a replay's caches see \
         nothing else, so no other data evicts their lines and the misses are not the run's"
    )
}
