//! Recording a partial data trace (`epcache_sim::trace::partial`) of a region in a standalone
//! run: `EPCACHE_TRACE=REGION[:INSTANCES]` names the region (a function or a marker's label)
//! and how many of its instances to record (default: all), `EPCACHE_TRACE_OUTPUT=FILE` where
//! the trace goes (`%p` stands for the process id).
//!
//! Exactness: a recording thread runs without its repeat-hit filter and so without the worker
//! pipeline, as a core of a machine does (`cores.rs`, `Core::refresh_filter`): every access
//! reaches `Core::access` with its code address, in program order, and is written there. Each
//! thread records from its first access, not from the region's first instance, and marks each
//! traced instance's span (`Mark::Begin`, `Mark::End`): replay simulates the accesses before
//! and between the instances (which leave the caches as the instances met them) and counts
//! only the spans, so re-simulating the trace under the run's cache gives exactly the counts
//! the run reports for the region. Nested instances (recursion) are one span, as the
//! standalone counts take only the outermost.
//!
//! Threads: every thread that starts capturing while the trace is open records, into the one
//! file (the first opens it): each thread's records go to the file as chunks of its own
//! (`epcache_sim::trace::partial`'s threads), under a lock taken once per 64 KiB of them, and
//! replay simulates each thread on caches of its own, as the run did (an OpenMP parallel
//! region's outlined body on every thread of the team). A thread's part ends when its
//! instances asked for (each thread's own count) have ended, or its access budget, or the
//! thread; every thread but the first also ends a body at each instance's end, so what it
//! recorded is in the file even if it never ends (libgomp's pool threads sleep through the
//! program's exit). The trace is closed (site table, ranges, end) once the first thread's part
//! and every other open part have ended, or at the process's end, whichever comes first; an
//! instance going on then is left out and said. The recorder belongs to its thread's core
//! (`Core::tracer`), so recording an access takes no lock but a chunk's. With threads as
//! cores of one machine (`EPCACHE_CORES`) the trace keeps each thread's order but not the
//! interleaving, so replay does not reproduce shared levels and coherence, which the run says.
//!
//! The trace's site table names each code address's source line and function from the
//! program's line tables, and the data structure holding the first address it accessed; its
//! ranges are the data structures known at the end.
//!
//! A tool asks for the same recording over the MRI (the "trace" request, the segment's trace
//! block, `epcache_shm::layout::TraceOrder`): the target must wait at its start
//! (`EPCACHE_WAIT`), and takes the order once, when released ([`take_tool_order`], from
//! start-up), before any thread captured, so recording still starts at each recording
//! thread's first access and stays exact; capture is then switched on for the run. An order that comes
//! after the start wait is never taken: the tool refuses to place it, or takes it back, with
//! the reason. Such an order may also name an access budget (a thread's recording ends, its
//! open instance cut, once it has written that many accesses) and data structures (only accesses to
//! their bytes are written: re-simulation then shows those structures alone, not the live
//! counts, which need every access). The target writes the file itself (it is the tool's
//! user): the path must be absolute, its directory must exist and be reached through no
//! symbolic link, and the file is created new (replaced only when the order allows, never
//! through a link). What became of the order (accesses and instances recorded, complete or
//! not, why not) goes back to the trace block when the trace is written, at the latest at the
//! process's end.

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use epcache_shm::layout::{RegionIndex, TraceOutcome};
use epcache_shm::target::Mcc;
use epcache_sim::cache::AccessKind;
use epcache_sim::ranges::AddressRange;
use epcache_sim::trace::TraceKind;
use epcache_sim::trace::partial::{
    Mark, PartialAccess, SiteInfo, StructureRange, ThreadWriter, TraceFile,
};

use super::region_registry::{self, RegionRef};
use super::{cores, data, mcc, program, switches};

/// Environment variable naming the region to trace, optionally with a number of instances.
pub const TRACE_ENV: &str = "EPCACHE_TRACE";
/// Environment variable naming the partial trace file to write.
pub const TRACE_OUTPUT_ENV: &str = "EPCACHE_TRACE_OUTPUT";

/// What the environment or a tool asks to trace.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Request {
    region: String,
    /// Instances to record; `None`: every one.
    instances: Option<u64>,
    output: PathBuf,
    /// Set when a tool asked (the trace block's order), unset for `EPCACHE_TRACE`.
    tool: Option<ToolOrder>,
}

/// What only a tool's order carries.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ToolOrder {
    /// The order's generation in the trace block, to say what became of it.
    generation: u32,
    /// The traced region by its index in the segment (names may repeat).
    region: RegionIndex,
    /// Accesses to write at most.
    access_budget: Option<u64>,
    /// Only accesses to these bytes are written; empty: every access.
    ranges: Vec<AddressRange>,
}

/// Parses `EPCACHE_TRACE`'s and `EPCACHE_TRACE_OUTPUT`'s values.
fn parse(trace: &str, output: Option<&str>) -> Result<Option<Request>, String> {
    let trace = trace.trim();
    if trace.is_empty() {
        return Ok(None);
    }
    let said = |why: String| format!("epcache: {TRACE_ENV}={trace}: {why}; nothing is traced");
    let (region, instances) = match trace.rsplit_once(':') {
        Some((region, count)) => {
            let count = count
                .trim()
                .parse::<u64>()
                .ok()
                .filter(|&c| c > 0)
                .ok_or_else(|| said(format!("`{count}` is not a positive number of instances")))?;
            (region.trim(), Some(count))
        }
        None => (trace, None),
    };
    if region.is_empty() {
        return Err(said(
            "no region named (give REGION or REGION:INSTANCES)".into(),
        ));
    }
    let output = match output.map(str::trim).filter(|o| !o.is_empty()) {
        Some(o) => o.replace("%p", &std::process::id().to_string()),
        None => return Err(said(format!("{TRACE_OUTPUT_ENV} names no file to write"))),
    };
    let output = std::path::absolute(&output).unwrap_or_else(|_| PathBuf::from(&output));
    Ok(Some(Request {
        region: region.to_owned(),
        instances,
        output,
        tool: None,
    }))
}

/// The trace asked for: set by a tool's order at start-up ([`take_tool_order`]), else read
/// from the environment at the first capture.
static REQUEST: OnceLock<Option<Request>> = OnceLock::new();
/// The file a tool's order names, created when the order was taken, for [`claim`].
static TOOL_FILE: Mutex<Option<File>> = Mutex::new(None);

fn env_request() -> Option<Request> {
    let trace = std::env::var(TRACE_ENV).unwrap_or_default();
    let output = std::env::var(TRACE_OUTPUT_ENV).ok();
    parse(&trace, output.as_deref()).unwrap_or_else(|why| {
        eprintln!("{why}");
        None
    })
}

fn request() -> Option<&'static Request> {
    REQUEST.get_or_init(env_request).as_ref()
}

/// Whether `EPCACHE_TRACE` asks this run for a trace that can be recorded. Start-up asks, so
/// a bad value is said before the program runs and a good one switches capture on, with or
/// without a standalone report. The variable unset leaves the request open for a tool's
/// order ([`take_tool_order`]).
pub(super) fn asked_by_environment() -> bool {
    std::env::var(TRACE_ENV).is_ok_and(|trace| !trace.trim().is_empty()) && request().is_some()
}

/// Takes the trace order a tool left in the segment while the program waited at its start
/// (start-up calls this once the wait ends, before any thread captures): creates its file
/// and makes it the trace this run records, switching capture on. An order that cannot be
/// served is failed with the reason, for the tool to read; the program runs on either way.
pub(super) fn take_tool_order(mcc: &Mcc) {
    let Some(taken) = mcc.taken_trace() else {
        return;
    };
    let Ok(taken) = taken else {
        return;
    };
    let order = taken.order;
    let fail = |message: String| {
        eprintln!("epcache: the trace a tool asked for is not recorded: {message}");
        mcc.trace_ended(
            taken.generation,
            &TraceOutcome {
                message,
                ..TraceOutcome::default()
            },
            false,
        );
    };
    if let Ok(trace) = std::env::var(TRACE_ENV)
        && !trace.trim().is_empty()
    {
        return fail(format!(
            "{TRACE_ENV}={trace} already asks this run for a trace; one trace at a time"
        ));
    }
    let path = PathBuf::from(&order.path);
    let file = match create_trace_file(&path, order.overwrite) {
        Ok(file) => file,
        Err(why) => return fail(why),
    };
    let request = Request {
        region: taken.region_name,
        instances: (order.instances > 0).then_some(order.instances),
        output: path.clone(),
        tool: Some(ToolOrder {
            generation: taken.generation,
            region: order.region,
            access_budget: (order.access_budget > 0).then_some(order.access_budget),
            ranges: order.ranges,
        }),
    };
    if REQUEST.set(Some(request)).is_err() || CLAIMED.load(Ordering::Acquire) {
        let _ = std::fs::remove_file(&path);
        return fail(
            "a thread captured before the order was taken, so recording could not start at its first access".into(),
        );
    }
    *TOOL_FILE.lock().unwrap_or_else(|e| e.into_inner()) = Some(file);
    switches::ask_trace();
    switches::set_switch(true);
}

/// Creates a tool's trace file at `path`: absolute, in an existing directory reached through
/// no symbolic link, created new (or, with `overwrite`, replacing a regular file), never
/// through a link, readable by the user alone.
fn create_trace_file(path: &Path, overwrite: bool) -> Result<File, String> {
    use std::os::unix::fs::OpenOptionsExt;
    let shown = path.display();
    let parent = path
        .parent()
        .filter(|p| path.is_absolute() && !p.as_os_str().is_empty())
        .ok_or_else(|| format!("{shown} is not an absolute path of a file"))?;
    let real = std::fs::canonicalize(parent)
        .map_err(|e| format!("the directory of {shown} cannot be used ({e}); create it first"))?;
    if real != parent {
        return Err(format!(
            "the directory of {shown} is reached through a symbolic link (it is {}); give the real path",
            real.display()
        ));
    }
    let mut options = std::fs::OpenOptions::new();
    options
        .write(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC);
    if overwrite {
        options.create(true).truncate(true);
    } else {
        options.create_new(true);
    }
    let file = options.open(path).map_err(|e| match e.raw_os_error() {
        Some(libc::EEXIST) => format!("{shown} exists; ask to overwrite it, or name another file"),
        Some(libc::ELOOP) => format!("{shown} is a symbolic link; name the file itself"),
        _ => format!("cannot create {shown}: {e}"),
    })?;
    match file.metadata() {
        Ok(m) if m.is_file() => Ok(file),
        _ => Err(format!("{shown} is not a regular file")),
    }
}

/// The trace file and what the recording threads told it, behind one lock: a thread takes it
/// to append a chunk (about every 64 KiB of its records), at a traced instance's bounds and
/// when it finishes.
struct Shared {
    /// The file while the trace is open: from the first claim until it is closed.
    file: Option<TraceFile<BufWriter<File>>>,
    /// Whether the first claim was made (no thread claims once the trace is closed).
    opened: bool,
    next_thread: u64,
    /// Recorders not finished, and whether thread 0's (the first claim's) is one of them.
    open_recorders: u32,
    first_finished: bool,
    /// Recorders inside a traced instance now.
    inside: u32,
    /// What the recorders wrote: accesses, instances ended, threads that ran an instance.
    accesses: u64,
    instances: u64,
    threads_with_instances: u64,
    budget_reached: bool,
    /// Every site recorded, with the first address it accessed.
    sites: BTreeMap<u64, u64>,
    /// Why the file could not be written, once it could not.
    write_error: Option<String>,
}

static SHARED: Mutex<Shared> = Mutex::new(Shared {
    file: None,
    opened: false,
    next_thread: 0,
    open_recorders: 0,
    first_finished: false,
    inside: 0,
    accesses: 0,
    instances: 0,
    threads_with_instances: 0,
    budget_reached: false,
    sites: BTreeMap::new(),
    write_error: None,
});

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
        if let Err(e) = file.chunk(self.thread, bytes) {
            // A chunk half written spoils the file for every thread: the trace is given up.
            eprintln!("epcache: cannot write the trace: {e}; tracing stops");
            shared.write_error = Some(e.to_string());
            shared.file = None;
            RECORDING.store(false, Ordering::Release);
            return Err(e);
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// One thread's recording, owned by its core (`Core::tracer`), so recording an access takes no
/// lock but a chunk's.
pub(super) struct Recorder {
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
    told: (u64, u64),
    /// Whether the access budget ended the recording.
    budget_reached: bool,
}

static CLAIMED: AtomicBool = AtomicBool::new(false);
/// Set while the trace is open (from the first claim until it is closed).
static RECORDING: AtomicBool = AtomicBool::new(false);
/// Instances of the traced region threads without a recorder began while the trace was open.
static OTHER_THREADS_INSTANCES: AtomicU64 = AtomicU64::new(0);

/// The recorder of the thread whose capture starts now, when a trace is asked for and open:
/// the first such thread opens it (creates its file), and every thread that starts capturing
/// before it is closed records too.
pub(super) fn claim() -> Option<Box<Recorder>> {
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
            None => File::create(&request.output),
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
        told: (0, 0),
        budget_reached: false,
    }))
}

/// At the process's end: an order a tool placed that no thread ever claimed (nothing was
/// captured) is said to have recorded nothing.
pub(super) fn unclaimed_at_exit() {
    if CLAIMED.load(Ordering::Acquire) {
        return;
    }
    if let Some(Some(request)) = REQUEST.get()
        && request.tool.is_some()
    {
        // The file created for it holds nothing a replay could read.
        if TOOL_FILE
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
            .is_some()
        {
            let _ = std::fs::remove_file(&request.output);
        }
        tell_tool(
            request,
            &TraceOutcome {
                message: "no access was captured: is the program built with `epcache cc`?".into(),
                ..TraceOutcome::default()
            },
            false,
        );
    }
}

/// At the process's end, after the exiting thread's recorder finished: closes the trace if
/// threads still record (one blocked, or asleep in a thread pool). What they recorded up to
/// their last ended instance is in the file; an instance going on now is not.
pub(super) fn close_at_exit() {
    if let Some(Some(request)) = REQUEST.get() {
        close(&mut shared(), request);
    }
}

/// A monitored instance of `region` begins on a thread that records nothing: if it is the
/// traced region and the trace is open, its accesses are not in the trace (the thread began
/// capturing before the trace was asked for, or gave its recording up), which the first such
/// instance says on stderr and the outcome counts.
pub(super) fn entered_without_recorder(region: RegionRef) {
    if !RECORDING.load(Ordering::Acquire) {
        return;
    }
    let Some(request) = request() else {
        return;
    };
    if !is_traced(request, region) {
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

/// Whether `region` is the one `request` traces: by index for a tool's order (names may
/// repeat), by name for `EPCACHE_TRACE`.
fn is_traced(request: &Request, region: RegionRef) -> bool {
    match &request.tool {
        Some(order) => region.entry.is_some_and(|e| e.region == order.region),
        None => region_registry::all()
            .get(region.id as usize)
            .is_some_and(|meta| meta.name == request.region),
    }
}

/// Leaves a tool's order's outcome in the trace block (nothing for `EPCACHE_TRACE`).
fn tell_tool(request: &Request, outcome: &TraceOutcome, written: bool) {
    if let (Some(order), Some(mcc)) = (&request.tool, mcc::get()) {
        mcc.trace_ended(order.generation, outcome, written);
    }
}

impl Recorder {
    /// Records one access at code address `pc`; `false` once the thread's recording is over
    /// (the budget is reached, the file cannot be written): the thread may then take its
    /// filter back, and the recorder's drop finishes its part.
    #[inline]
    pub(super) fn record(&mut self, addr: u64, size: u32, kind: AccessKind, pc: u64) -> bool {
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
            let mut shared = shared();
            if inside {
                shared.inside += 1;
            } else {
                shared.inside -= 1;
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
    pub(super) fn region_entered(&mut self, region: RegionRef) {
        if !self.is_traced(region) {
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
    /// `None` once the thread's part is done (the last instance asked for ended). Every
    /// thread but the first ends a body of the file here, so what it recorded is in the file
    /// whatever becomes of the thread.
    pub(super) fn region_exited(mut self: Box<Self>, region: RegionRef) -> Option<Box<Self>> {
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
            return None;
        }
        let ended = self.thread == 0 || w.end_body().is_ok();
        self.set_inside(false);
        if ended {
            self.tell(&mut shared());
        } else {
            self.give_up();
        }
        Some(self)
    }

    /// Ends the thread's part of the trace (as its drop does).
    pub(super) fn finish(self: Box<Self>) {}

    /// Adds what this recorder wrote since it last told to the shared counts.
    fn tell(&mut self, shared: &mut Shared) {
        shared.accesses += self.recorded - self.told.0;
        shared.instances += self.instances_done - self.told.1;
        if self.told.1 == 0 && self.instances_done > 0 {
            shared.threads_with_instances += 1;
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
        let mut shared = shared();
        self.tell(&mut shared);
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
        accesses: shared.accesses,
        instances: shared.instances,
        complete: false,
        budget_reached: shared.budget_reached,
        message: String::new(),
    };
    let Some(file) = file else {
        let why = shared.write_error.take().unwrap_or_default();
        eprintln!("epcache: cannot write the trace {path}: {why}");
        outcome.message = format!("cannot write the trace {path}: {why}");
        return tell_tool(request, &outcome, false);
    };
    let structures: Vec<_> = data::all()
        .into_iter()
        .filter(|s| s.range.end > s.range.start)
        .collect();
    // Each site is named by the data structure holding the first address it accessed.
    let mut sites = BTreeMap::new();
    for (&site, &addr) in &shared.sites {
        if let Some(mut info) = site_info(site) {
            if let Some(s) = structures.iter().find(|s| s.range.contains(addr)) {
                info.structure = s.name.clone();
            }
            sites.insert(site, info);
        }
    }
    let ranges: Vec<StructureRange> = structures
        .into_iter()
        .map(|s| StructureRange {
            name: s.name,
            start: s.range.start,
            end: s.range.end,
        })
        .collect();
    let cut = shared.inside;
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
        let asked = if request.tool.is_some() {
            "the tool's trace"
        } else {
            TRACE_ENV
        };
        notes.push(format!(
            "region `{}` ({asked}) never ran; the trace {path} counts nothing",
            request.region
        ));
        eprintln!("epcache: {}", notes[0]);
    } else if outcome.budget_reached {
        notes.push(format!(
            "the access budget ended a thread's recording, within its instance {}",
            outcome.instances
        ));
    }
    if shared.threads_with_instances > 1 {
        notes.push(format!(
            "{} threads ran the region, each recorded on its own",
            shared.threads_with_instances
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
    let finished = file
        .finish(&sites, &ranges)
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

/// The source line and function of the access whose hook returns to `pc`.
fn site_info(pc: u64) -> Option<SiteInfo> {
    let object = program::object_at(pc.checked_sub(1)?)?;
    let line = object.call_site(pc);
    let function = object.function_at(pc - 1).map(|(name, _)| name.to_owned());
    if line.is_none() && function.is_none() {
        return None;
    }
    let (file, line) = line.map_or((String::new(), 0), |l| (l.file, l.line));
    Some(SiteInfo {
        file,
        line,
        function: function.unwrap_or_default(),
        structure: String::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_parse_and_reject_clearly() {
        assert_eq!(parse("", Some("t")).unwrap(), None);
        let r = parse("multiply:3", Some("/tmp/t.eppt")).unwrap().unwrap();
        assert_eq!((r.region.as_str(), r.instances), ("multiply", Some(3)));
        assert_eq!(r.output, PathBuf::from("/tmp/t.eppt"));
        assert_eq!(parse("sweep", Some("/x")).unwrap().unwrap().instances, None);
        assert!(
            parse("sweep:0", Some("/x"))
                .unwrap_err()
                .contains("positive")
        );
        assert!(parse(":2", Some("/x")).unwrap_err().contains("no region"));
        assert!(parse("sweep", None).unwrap_err().contains(TRACE_OUTPUT_ENV));
        let p = parse("f", Some("t.%p")).unwrap().unwrap();
        assert!(p.output.is_absolute());
        assert!(
            p.output
                .to_string_lossy()
                .ends_with(&format!("t.{}", std::process::id()))
        );
    }
}
