//! Recording a partial data trace (`epcache_sim::trace::partial`) of a region in a standalone
//! run: `EPCACHE_TRACE=REGION[:INSTANCES]` names the region (a function or a marker's label)
//! and how many of its instances to record (default: all), `EPCACHE_TRACE_OUTPUT=FILE` where
//! the trace goes (`%p` stands for the process id).
//!
//! Exactness: the recording thread (the first to capture, one thread only) runs without its
//! repeat-hit filter and so without the worker pipeline, as a core of a machine does
//! (`cores.rs`, `Core::refresh_filter`): every access reaches `Core::access` with its code
//! address, in program order, and is written there. The recording starts at the thread's
//! first access, not at the region's first instance, and marks each traced instance's span
//! (`Mark::Begin`, `Mark::End`): replay simulates the accesses before and between the
//! instances (which leave the caches as the instances met them) and counts only the spans, so
//! re-simulating the trace under the run's cache gives exactly the counts the run reports for
//! the region on that thread. Nested instances (recursion) are one span, as the standalone
//! counts take only the outermost. Once the last asked-for instance ends the trace is written
//! and the thread gets its filter back; otherwise it is written at the process's end.
//!
//! The trace's site table names each code address's source line and function from the
//! program's line tables, and the data structure holding the first address it accessed; its
//! ranges are the data structures known at the end.

use std::collections::HashMap;
use std::fs::File;
use std::io::BufWriter;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};

use epcache_sim::cache::AccessKind;
use epcache_sim::trace::TraceKind;
use epcache_sim::trace::partial::{Mark, PartialAccess, PartialWriter, SiteInfo, StructureRange};

use super::region_registry::{self, RegionRef};
use super::{data, program};

/// Environment variable naming the region to trace, optionally with a number of instances.
pub const TRACE_ENV: &str = "EPCACHE_TRACE";
/// Environment variable naming the partial trace file to write.
pub const TRACE_OUTPUT_ENV: &str = "EPCACHE_TRACE_OUTPUT";

/// What the environment asks to trace.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Request {
    region: String,
    /// Instances to record; `None`: every one.
    instances: Option<u64>,
    output: PathBuf,
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
    }))
}

fn request() -> Option<&'static Request> {
    static REQUEST: OnceLock<Option<Request>> = OnceLock::new();
    REQUEST
        .get_or_init(|| {
            let trace = std::env::var(TRACE_ENV).unwrap_or_default();
            let output = std::env::var(TRACE_OUTPUT_ENV).ok();
            parse(&trace, output.as_deref()).unwrap_or_else(|why| {
                eprintln!("{why}");
                None
            })
        })
        .as_ref()
}

/// The trace being written.
struct Recorder {
    writer: PartialWriter<BufWriter<File>>,
    request: &'static Request,
    /// Region id to whether it is the traced region.
    traced: HashMap<u32, bool>,
    /// Traced instances open (nested ones included).
    depth: u32,
    instances_done: u64,
    /// Each site's first address, which names the data structure it accesses.
    sites: HashMap<u64, u64>,
    last_site: Option<u64>,
}

static RECORDER: Mutex<Option<Recorder>> = Mutex::new(None);
static CLAIMED: AtomicBool = AtomicBool::new(false);

fn recorder() -> MutexGuard<'static, Option<Recorder>> {
    RECORDER.lock().unwrap_or_else(|e| e.into_inner())
}

/// Whether the thread whose capture starts now records the trace: the first one, when a
/// trace is asked for and its file could be created.
pub(super) fn claim() -> bool {
    let Some(request) = request() else {
        return false;
    };
    if CLAIMED.swap(true, Ordering::AcqRel) {
        return false;
    }
    let writer = File::create(&request.output)
        .and_then(|f| PartialWriter::new(BufWriter::with_capacity(1 << 16, f)));
    match writer {
        Ok(writer) => {
            *recorder() = Some(Recorder {
                writer,
                request,
                traced: HashMap::new(),
                depth: 0,
                instances_done: 0,
                sites: HashMap::new(),
                last_site: None,
            });
            true
        }
        Err(e) => {
            eprintln!(
                "epcache: cannot write the trace {} ({TRACE_OUTPUT_ENV}): {e}; nothing is traced",
                request.output.display()
            );
            false
        }
    }
}

/// Records one access of the recording thread at code address `pc`; `false` once the trace
/// is done (the thread may then take its filter back).
#[inline(never)]
pub(super) fn record(addr: u64, size: u32, kind: AccessKind, pc: u64) -> bool {
    let mut guard = recorder();
    let Some(r) = guard.as_mut() else {
        return false;
    };
    if r.last_site != Some(pc) {
        r.sites.entry(pc).or_insert(addr);
        r.last_site = Some(pc);
    }
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
    if let Err(e) = r.writer.record(&access) {
        eprintln!(
            "epcache: cannot write the trace {}: {e}; tracing stops",
            r.request.output.display()
        );
        *guard = None;
        return false;
    }
    true
}

/// Whether `region` is the traced one (its name looked up once per region).
fn is_traced(r: &mut Recorder, region: RegionRef) -> bool {
    if let Some(&traced) = r.traced.get(&region.id) {
        return traced;
    }
    let traced = region_registry::all()
        .get(region.id as usize)
        .is_some_and(|meta| meta.name == r.request.region);
    r.traced.insert(region.id, traced);
    traced
}

/// A monitored instance of `region` begins on the recording thread.
pub(super) fn region_entered(region: RegionRef) {
    let mut guard = recorder();
    let Some(r) = guard.as_mut() else {
        return;
    };
    if is_traced(r, region) {
        if r.depth == 0 {
            r.writer.mark(Mark::Begin);
        }
        r.depth += 1;
    }
}

/// A monitored instance of `region` ends on the recording thread; `false` once the trace is
/// done (the last instance asked for ended and the trace is written).
pub(super) fn region_exited(region: RegionRef) -> bool {
    let mut guard = recorder();
    let Some(r) = guard.as_mut() else {
        return false;
    };
    if !is_traced(r, region) || r.depth == 0 {
        return true;
    }
    r.depth -= 1;
    if r.depth > 0 {
        return true;
    }
    r.writer.mark(Mark::End);
    r.instances_done += 1;
    if r.request.instances != Some(r.instances_done) {
        return true;
    }
    if let Some(r) = guard.take() {
        drop(guard);
        write(r);
    }
    false
}

/// Writes the trace still being recorded, if any (at the process's end).
pub(super) fn finish() {
    let taken = recorder().take();
    if let Some(r) = taken {
        write(r);
    }
}

fn write(mut r: Recorder) {
    let structures: Vec<_> = data::all()
        .into_iter()
        .filter(|s| s.range.end > s.range.start)
        .collect();
    for (&site, &addr) in &r.sites {
        if let Some(mut info) = site_info(site) {
            if let Some(s) = structures.iter().find(|s| s.range.contains(addr)) {
                info.structure = s.name.clone();
            }
            r.writer.set_site(site, info);
        }
    }
    for structure in structures {
        r.writer.add_range(StructureRange {
            name: structure.name,
            start: structure.range.start,
            end: structure.range.end,
        });
    }
    let path = r.request.output.display().to_string();
    if r.instances_done == 0 {
        eprintln!(
            "epcache: region `{}` ({TRACE_ENV}) never ran; the trace {path} counts nothing",
            r.request.region
        );
    }
    if let Err(e) = r.writer.finish() {
        eprintln!("epcache: cannot write the trace {path}: {e}");
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
