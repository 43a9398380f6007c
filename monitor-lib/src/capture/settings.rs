//! What the environment asks of the runtime, read once per process: the cache every thread
//! simulates (`EPCACHE_CACHE`), whether threads are cores of one machine (`EPCACHE_CORES`),
//! and the report to write at the end (`EPCACHE_REPORT`), which start-up reads.
//!
//! Both are resolved once and kept: a program that changes its environment or its working
//! directory later still simulates the cache and writes the report it started with.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

use epcache_sim::cache::{CacheError, CoreMap, HierarchySpec};

/// Environment variable naming the cache to simulate (the `epcache replay --cache` syntax).
pub const CACHE_ENV: &str = "EPCACHE_CACHE";
/// Environment variable naming the JSON report file (`%p` stands for the process id); setting
/// it switches capture on at start.
pub const REPORT_ENV: &str = "EPCACHE_REPORT";

/// Environment variable making the threads cores of one simulated machine, in the syntax of
/// `epcache_sim::cache::CoreMap`; unset or `off`, every thread simulates a whole hierarchy of
/// its own.
pub use epcache_sim::cache::CORES_ENV;

static CORES: OnceLock<Result<Option<CoreMap>, String>> = OnceLock::new();

/// The machine `EPCACHE_CORES` asks for, resolved once (`None`: one hierarchy per thread).
pub(super) fn process_cores() -> &'static Result<Option<CoreMap>, String> {
    CORES.get_or_init(|| {
        let host = std::thread::available_parallelism().map_or(1, usize::from);
        let text = std::env::var(CORES_ENV).unwrap_or_default();
        CoreMap::parse(&text, host).map_err(|e| format!("{CORES_ENV}={}: {e}", text.trim()))
    })
}

/// Why capture or its report failed.
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    /// `EPCACHE_CACHE` (or the default) does not describe a usable cache.
    #[error("epcache: cannot simulate the cache `{spec}` (from {CACHE_ENV}): {why}")]
    Spec { spec: String, why: String },
    /// The report could not be written.
    #[error("epcache: cannot write the report {}: {source}", path.display())]
    Report {
        path: PathBuf,
        source: std::io::Error,
    },
}

static SPEC: OnceLock<Result<(String, HierarchySpec), String>> = OnceLock::new();

/// What start-up found: the report's path when one is wanted. Set once start-up has run, so
/// it also tells whether it has.
static STARTED: OnceLock<Option<PathBuf>> = OnceLock::new();

/// The cache every thread simulates, resolved once: `EPCACHE_CACHE`, else `host`, else
/// `cachegrind` (which has defaults for a machine without sysfs cache information).
pub(super) fn process_spec() -> &'static Result<(String, HierarchySpec), String> {
    SPEC.get_or_init(|| match std::env::var(CACHE_ENV) {
        Ok(text) => HierarchySpec::parse(&text)
            .map(|spec| (text.clone(), spec))
            .map_err(|e| {
                CaptureError::Spec {
                    spec: text,
                    why: e.to_string(),
                }
                .to_string()
            }),
        Err(_) => HierarchySpec::parse("host")
            .map(|spec| ("host".to_owned(), spec))
            .or_else(|_: CacheError| {
                HierarchySpec::parse("cachegrind").map(|spec| ("cachegrind".to_owned(), spec))
            })
            .map_err(|e| e.to_string()),
    })
}

/// Says once why nothing can be simulated.
pub(super) fn report_spec_error_once(why: &str) {
    static SAID: AtomicBool = AtomicBool::new(false);
    if !SAID.swap(true, Ordering::Relaxed) {
        eprintln!("{why}; nothing is captured, and tools' requests are refused");
    }
}

/// Runs start-up once per process (`start_up` makes it, and says where the report goes); a
/// caller that comes while another runs it waits for it.
pub(super) fn start_once(start_up: impl FnOnce() -> Option<PathBuf>) {
    STARTED.get_or_init(start_up);
}

/// Whether start-up has run.
#[inline]
pub(super) fn started() -> bool {
    STARTED.get().is_some()
}

/// Where the report goes, once start-up has run and found `EPCACHE_REPORT`.
pub(super) fn report_destination() -> Option<&'static Path> {
    STARTED.get().and_then(Option::as_deref)
}

/// The report's path as `EPCACHE_REPORT` gives it, with `%p` replaced by the process id (as
/// Valgrind's `--log-file` has it: a program that starts others built with epcache passes the
/// variable on, and each would otherwise overwrite the others' report), made absolute now, so
/// a program that changes its working directory still writes the report where it was asked
/// for; a directory that does not exist is said at once, not after the run.
pub(super) fn report_path(path: PathBuf) -> PathBuf {
    let path = match path.to_str() {
        Some(text) if text.contains("%p") => {
            PathBuf::from(text.replace("%p", &std::process::id().to_string()))
        }
        _ => path,
    };
    let path = std::path::absolute(&path).unwrap_or(path);
    if let Some(dir) = path.parent()
        && !dir.is_dir()
    {
        eprintln!(
            "epcache: {REPORT_ENV}={} names a directory that does not exist; create {} before \
             the program ends, or the report is lost",
            path.display(),
            dir.display()
        );
    }
    path
}
