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
//! and the thread gets its filter back; otherwise it is written at the process's end, or when
//! the recording thread ends, if it ends first. The recorder belongs to the recording thread's
//! core (`Core::tracer`), so recording takes no lock.
//!
//! The trace's site table names each code address's source line and function from the
//! program's line tables, and the data structure holding the first address it accessed; its
//! ranges are the data structures known at the end.

use std::collections::HashMap;
use std::fs::File;
use std::io::BufWriter;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

use epcache_sim::cache::AccessKind;
use epcache_sim::trace::TraceKind;
use epcache_sim::trace::partial::{Mark, PartialAccess, PartialWriter, SiteInfo, StructureRange};

use super::region_registry::{self, RegionRef};
use super::{data, program, switches};

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

/// The trace being written, owned by the recording thread's core (`Core::tracer`), so
/// recording an access takes no lock.
pub(super) struct Recorder {
    /// `None` once the trace is written (or given up on).
    writer: Option<PartialWriter<BufWriter<File>>>,
    request: &'static Request,
    /// Region id to whether it is the traced region.
    traced: HashMap<u32, bool>,
    /// Traced instances open (nested ones included).
    depth: u32,
    instances_done: u64,
}

static CLAIMED: AtomicBool = AtomicBool::new(false);

/// The recorder of the thread whose capture starts now: the first one, when a trace is asked
/// for and its file could be created.
pub(super) fn claim() -> Option<Box<Recorder>> {
    let request = request()?;
    if CLAIMED.swap(true, Ordering::AcqRel) {
        return None;
    }
    let writer = File::create(&request.output)
        .and_then(|f| PartialWriter::new(BufWriter::with_capacity(1 << 16, f)));
    match writer {
        Ok(writer) => Some(Box::new(Recorder {
            writer: Some(writer),
            request,
            traced: HashMap::new(),
            depth: 0,
            instances_done: 0,
        })),
        Err(e) => {
            eprintln!(
                "epcache: cannot write the trace {} ({TRACE_OUTPUT_ENV}): {e}; nothing is traced",
                request.output.display()
            );
            None
        }
    }
}

impl Recorder {
    /// Records one access at code address `pc`; `false` once the trace is given up on (the
    /// thread may then take its filter back).
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
        if let Err(e) = writer.record(&access) {
            eprintln!(
                "epcache: cannot write the trace {}: {e}; tracing stops",
                self.request.output.display()
            );
            self.writer = None;
            return false;
        }
        true
    }

    /// Whether `region` is the traced one (its name looked up once per region).
    fn is_traced(&mut self, region: RegionRef) -> bool {
        if let Some(&traced) = self.traced.get(&region.id) {
            return traced;
        }
        let traced = region_registry::all()
            .get(region.id as usize)
            .is_some_and(|meta| meta.name == self.request.region);
        self.traced.insert(region.id, traced);
        traced
    }

    /// A monitored instance of `region` begins on the recording thread.
    pub(super) fn region_entered(&mut self, region: RegionRef) {
        if self.is_traced(region) {
            if self.depth == 0
                && let Some(w) = &mut self.writer
            {
                w.mark(Mark::Begin);
            }
            self.depth += 1;
        }
    }

    /// A monitored instance of `region` ends on the recording thread; the recorder back, or
    /// `None` once the trace is done (the last instance asked for ended and it is written).
    pub(super) fn region_exited(mut self: Box<Self>, region: RegionRef) -> Option<Box<Self>> {
        if !self.is_traced(region) || self.depth == 0 {
            return Some(self);
        }
        self.depth -= 1;
        if self.depth > 0 {
            return Some(self);
        }
        if let Some(w) = &mut self.writer {
            w.mark(Mark::End);
        }
        self.instances_done += 1;
        if self.request.instances != Some(self.instances_done) {
            return Some(self);
        }
        self.finish();
        None
    }

    /// Writes the trace: the site table, the data structures and the end.
    pub(super) fn finish(mut self: Box<Self>) {
        if let Some(writer) = self.writer.take() {
            write(writer, self.request, self.instances_done);
        }
    }
}

impl Drop for Recorder {
    /// A recording thread that ends before the process writes its trace then (not in a
    /// forked child, whose file is its parent's).
    fn drop(&mut self) {
        if let Some(writer) = self.writer.take()
            && !switches::forked_child()
        {
            write(writer, self.request, self.instances_done);
        }
    }
}

fn write(mut writer: PartialWriter<BufWriter<File>>, request: &Request, instances: u64) {
    let structures: Vec<_> = data::all()
        .into_iter()
        .filter(|s| s.range.end > s.range.start)
        .collect();
    // Each site is named by the data structure holding the first address it accessed.
    let sites: Vec<(u64, u64)> = writer.sites().collect();
    for (site, addr) in sites {
        if let Some(mut info) = site_info(site) {
            if let Some(s) = structures.iter().find(|s| s.range.contains(addr)) {
                info.structure = s.name.clone();
            }
            writer.set_site(site, info);
        }
    }
    for structure in structures {
        writer.add_range(StructureRange {
            name: structure.name,
            start: structure.range.start,
            end: structure.range.end,
        });
    }
    let path = request.output.display().to_string();
    if instances == 0 {
        eprintln!(
            "epcache: region `{}` ({TRACE_ENV}) never ran; the trace {path} counts nothing",
            request.region
        );
    }
    if let Err(e) = writer.finish() {
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
