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
//! file, and replay simulates each on caches of its own, as the run did (`recorder.rs`).
//!
//! The trace's site table names each code address's source line and function from the
//! program's line tables, and the data structure holding the first address it accessed when the
//! site is described: as its thread hands the file what it recorded (a safe point), so a file
//! whose process is killed names its sites too, or at the close. Its ranges are the data
//! structures known at the close (a killed file has none: its structures come from the sites).
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
//! counts, which need every access). The target writes the file itself (it is the tool's user): the
//! path must be absolute, its directory must exist and be reached through no symbolic link, and the
//! file is created new (replaced only when the order allows, never through a link). Either way the
//! file is locked while the process writes it, so a second process given the same file is refused
//! rather than interleaving its chunks. What became of the order (accesses and instances recorded,
//! complete or not, why not) goes back to the trace block when the trace is written, at the latest
//! at the process's end.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

use epcache_shm::layout::{RegionIndex, TraceOutcome};
use epcache_shm::region_names;
use epcache_shm::target::Mcc;
use epcache_sim::ranges::AddressRange;
use epcache_sim::trace::partial::SiteInfo;

use super::region_registry::{self, RegionRef};
use super::{mcc, program, switches};

mod recorder;

pub(super) use recorder::{Recorder, claim, close_at_exit, entered_without_recorder};

/// Environment variable naming the region to trace, optionally with a number of instances.
pub const TRACE_ENV: &str = "EPCACHE_TRACE";
/// Environment variable naming the partial trace file to write.
pub const TRACE_OUTPUT_ENV: &str = "EPCACHE_TRACE_OUTPUT";

/// What the environment or a tool asks to trace.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Request {
    region: String,
    /// `REGION@FILE`: only the region of that name whose source file is FILE (or ends with
    /// `/FILE`), for names that repeat (static functions of different files).
    file: Option<String>,
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
    // The count follows the last colon, unless that colon ends a scope separator (`::`): a
    // C++ or Fortran module name (`alpha::A::init`) is a name whole.
    let (region, instances) = match trace.rsplit_once(':').filter(|(r, _)| !r.ends_with(':')) {
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
    let (region, file) = match region.rsplit_once('@') {
        Some((name, file)) if !name.trim().is_empty() && !file.trim().is_empty() => {
            (name.trim(), Some(file.trim().to_owned()))
        }
        Some(_) => {
            return Err(said(
                "give REGION@FILE, both parts, to trace the region of that name in that file"
                    .into(),
            ));
        }
        None => (region, None),
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
        file,
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
/// Set by the first claim: recording has begun (a tool's order comes too late after it).
static CLAIMED: AtomicBool = AtomicBool::new(false);

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
        file: None,
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
        options.create(true);
    } else {
        options.create_new(true);
    }
    let file = options.open(path).map_err(|e| match e.raw_os_error() {
        Some(libc::EEXIST) => format!("{shown} exists; ask to overwrite it, or name another file"),
        Some(libc::ELOOP) => format!("{shown} is a symbolic link; name the file itself"),
        _ => format!("cannot create {shown}: {e}"),
    })?;
    own_trace_file(file, path, false)
}

/// Makes an opened trace file this process's alone: a regular file, locked (`flock`) against
/// any other epcache process writing it, then emptied. Two programs given one output (two
/// ranks, two runs started together) would otherwise interleave their chunks into a file no
/// replay can read; the second one is told instead, before it writes anything. The lock goes
/// with the process. With `say_replaced` (a file named by `EPCACHE_TRACE_OUTPUT`, which no one
/// asked to overwrite) emptying a file that held something is said on stderr.
fn own_trace_file(file: File, path: &Path, say_replaced: bool) -> Result<File, String> {
    let shown = path.display();
    match file.metadata() {
        Ok(m) if m.is_file() => {}
        _ => return Err(format!("{shown} is not a regular file")),
    }
    file.try_lock().map_err(|e| match e {
        std::fs::TryLockError::WouldBlock => format!(
            "another process is writing {shown}; give each process a file of its own (`%p` in {TRACE_OUTPUT_ENV} stands for the process id)"
        ),
        std::fs::TryLockError::Error(e) => format!("cannot lock {shown}: {e}"),
    })?;
    // Said, never silent, where nobody asked to overwrite: a recording of an earlier run there
    // is lost.
    if say_replaced
        && let Ok(m) = file.metadata()
        && m.len() > 0
    {
        eprintln!(
            "epcache: {TRACE_OUTPUT_ENV}: replacing the existing {shown} ({} bytes); name a new file (`%p` stands for the process id) to keep it",
            m.len()
        );
    }
    file.set_len(0)
        .map_err(|e| format!("cannot empty {shown} to write the trace: {e}"))?;
    Ok(file)
}

/// What became of the file a standalone run was asked to trace into: its device and inode once
/// created, or why it could not be. The report carries it (`report::TraceFileReport`), so the
/// launcher (`epcache run --trace`) knows whether the file at the path is its program's.
type StandaloneFile = (PathBuf, Result<(u64, u64), String>);

static STANDALONE_FILE: Mutex<Option<StandaloneFile>> = Mutex::new(None);

/// The standalone trace file's fate ([`StandaloneFile`]), once a thread tried to create it.
pub(in crate::capture) fn standalone_file() -> Option<StandaloneFile> {
    STANDALONE_FILE
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone()
}

/// Opens the trace file a standalone run asked for (`EPCACHE_TRACE_OUTPUT`): created, or an
/// existing regular file replaced, never written through a symbolic link, readable by the user
/// alone, and owned by this process ([`own_trace_file`]). Its fate is kept for the report.
pub(super) fn create_standalone_trace_file(path: &Path) -> Result<File, String> {
    use std::os::unix::fs::MetadataExt;
    let file = open_standalone_trace_file(path);
    let fate = match &file {
        Ok(f) => f
            .metadata()
            .map(|m| (m.dev(), m.ino()))
            .map_err(|e| e.to_string()),
        Err(why) => Err(why.clone()),
    };
    *STANDALONE_FILE.lock().unwrap_or_else(|e| e.into_inner()) = Some((path.to_owned(), fate));
    file
}

fn open_standalone_trace_file(path: &Path) -> Result<File, String> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => format!(
                "{} is a symbolic link; name the file itself",
                path.display()
            ),
            _ => format!("cannot create {}: {e}", path.display()),
        })?;
    own_trace_file(file, path, true)
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

/// Whether `region` is the one `request` traces: by index for a tool's order (names may
/// repeat), by name for `EPCACHE_TRACE`.
fn is_traced(request: &Request, region: RegionRef) -> bool {
    match &request.tool {
        Some(order) => region.entry.is_some_and(|e| e.region == order.region),
        None => region_registry::meta(region.id).is_some_and(|meta| {
            // The cheap test first: a thread that does not record asks at every entry.
            let traced = region_names::name_match(&meta.name, &request.region).is_some()
                && region_registry::named_ids(&request.region).contains(&region.id)
                && request
                    .file
                    .as_deref()
                    .is_none_or(|f| in_file(&meta.file, f));
            if traced {
                say_if_the_name_repeats(request, &meta);
            }
            traced
        }),
    }
}

/// Why nothing was recorded when no instance of the region ran: the region never ran, or, for
/// `REGION@FILE`, no region of that name is in a file FILE names (and which files have one).
fn never_ran(request: &Request) -> String {
    let asked = if request.tool.is_some() {
        "the tool's trace"
    } else {
        TRACE_ENV
    };
    let path = request.output.display();
    if let Some(file) = &request.file {
        let named = region_registry::named(&request.region);
        if !named.iter().any(|r| in_file(&r.file, file)) {
            let places: Vec<String> = named
                .iter()
                .map(|r| format!("{}:{}", r.file, r.line))
                .collect();
            let found = match places.as_slice() {
                [] => format!("there is no region `{}` at all", request.region),
                [one] => format!("the region `{}` is at {one}", request.region),
                _ => format!("regions `{}` are at {}", request.region, places.join(", ")),
            };
            return format!(
                "no region `{}` is in a file `{file}` names ({asked}): {found}; the trace {path} counts nothing",
                request.region
            );
        }
    }
    format!(
        "region `{}` ({asked}) never ran; the trace {path} counts nothing",
        request.region
    )
}

/// Whether `path` is the source file `file` names: the same, or ending with `/FILE`.
fn in_file(path: &str, file: &str) -> bool {
    path == file
        || path
            .strip_suffix(file)
            .is_some_and(|rest| rest.ends_with('/'))
}

/// `EPCACHE_TRACE` found a second region (a static function of another file, a procedure of
/// another module, a namesake in another scope): says once which two, and how to pick one.
fn say_if_the_name_repeats(request: &Request, meta: &region_registry::RegionMeta) {
    static FIRST: OnceLock<(String, String, u32)> = OnceLock::new();
    static SAID: AtomicBool = AtomicBool::new(false);
    let first = FIRST.get_or_init(|| (meta.name.clone(), meta.file.clone(), meta.line));
    if (first.1.as_str(), first.2) == (meta.file.as_str(), meta.line)
        || SAID.swap(true, Ordering::Relaxed)
    {
        return;
    }
    let file_name = |path: &str| path.rsplit('/').next().unwrap_or(path).to_owned();
    let pick = if first.0 != meta.name {
        format!("give its whole name, as in `{}`", meta.name)
    } else if request.file.is_none() && file_name(&first.1) != file_name(&meta.file) {
        format!(
            "name its file, as in `{}@{}`",
            request.region,
            file_name(&meta.file)
        )
    } else {
        "mark the one to record with a region marker of its own name".to_owned()
    };
    eprintln!(
        "epcache: two regions answer to `{}` ({} at {}:{} and {} at {}:{}), and {TRACE_ENV} records both into one trace; to record one, {pick} ({TRACE_ENV}, or `epcache run --trace`)",
        request.region, first.0, first.1, first.2, meta.name, meta.file, meta.line
    );
}

/// Leaves a tool's order's outcome in the trace block (nothing for `EPCACHE_TRACE`).
fn tell_tool(request: &Request, outcome: &TraceOutcome, written: bool) {
    if let (Some(order), Some(mcc)) = (&request.tool, mcc::get()) {
        mcc.trace_ended(order.generation, outcome, written);
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
        // A scoped name is a name whole, with or without a count after it.
        let r = parse("alpha::A::init", Some("/x")).unwrap().unwrap();
        assert_eq!((r.region.as_str(), r.instances), ("alpha::A::init", None));
        let r = parse("alpha::A::init:2", Some("/x")).unwrap().unwrap();
        assert_eq!(
            (r.region.as_str(), r.instances),
            ("alpha::A::init", Some(2))
        );
        // A file picks one of the regions a name stands for.
        let r = parse("init@src/b.c:2", Some("/x")).unwrap().unwrap();
        assert_eq!(
            (r.region.as_str(), r.file.as_deref(), r.instances),
            ("init", Some("src/b.c"), Some(2))
        );
        assert!(
            parse("init@", Some("/x"))
                .unwrap_err()
                .contains("REGION@FILE")
        );
        assert!(in_file("/home/u/src/b.c", "src/b.c") && in_file("b.c", "b.c"));
        assert!(!in_file("/home/u/src/ab.c", "b.c"));
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
