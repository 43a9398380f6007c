//! `epcache run`: launch a program under monitoring, with an embedded daemon unless `--daemon`
//! names one, place the requests given on the command line, and print their results (or, with
//! `--all-regions`, the program's whole-run report) when it ends.

use std::ffi::{OsStr, OsString};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::{Command, ExitStatus};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Args;
use epcache_client::{
    Aggregation, Client, ConnectOptions, Event, RegionRef, Request, RequestInfo, RequestResult,
    TargetState,
};
use epcache_shm::target::LAUNCHER_ENV;
use epcache_sim::cache::CORES_ENV;
use tokio_stream::StreamExt;

use crate::allocated_arrays;
use crate::by_field;
use crate::connection::json;
use crate::inlined_regions;
use crate::line_report::{self, LineFormat, LineReport, Selection};
use crate::output::print_stdout;
use crate::preflight;
use crate::report_table::{self, SortKey};
use crate::request::{
    AnalysisArg, SiteBlockArg, aggregation, fewer_buckets_note, fewer_buckets_text,
};
use crate::run_dir;
use crate::run_trace;

/// How long the program waits at start for its requests (EPCACHE_WAIT).
const START_WAIT_SECS: u32 = 60;

/// Run a program under monitoring (built with `epcache cc`, or a Rust program linking
/// epcache-monitor) and report what it measured.
///
/// Requests are given as groups: `--region NAME --array NAME --event EVENT [--buckets N]`,
/// repeatable. The program waits at start until they are placed; an unknown region or array is
/// refused by name (with the nearest names), and the program then runs to its end unmonitored.
/// The cache, the events and the bucket counts are checked before the program starts. Without
/// `--daemon`, a daemon runs inside this process for the program's lifetime; its address is
/// printed on stderr, so other tools can join.
///
/// A heap array is named by its allocation site, `--array prog.c:50` (as `--all-regions` names
/// heap blocks), before the program has allocated it: the request binds inside the program to a
/// block allocated at that line (of at least 4096 bytes), live when the region is entered or
/// allocated while it runs, following each new block (`--site-block`); `--array t@prog.f90:6`
/// names the array `t` of that line. A request that never found a block is reported as unbound.
/// A Fortran ALLOCATABLE array is named as declared (`fields::u`) and measured over its data
/// wherever it is allocated.
///
/// `--by-field` counts an array of structures (C struct, C++ class, Fortran derived type) per
/// member instead: one row per field by name, summed over every element, then the padding; the
/// members come from the program's debug info, so the program needs -g.
///
/// Output: the program's own output stays on stdout and stderr; the results (or, with
/// --all-regions, the report) follow it on stdout, or go to --output FILE. Progress and notes go
/// to stderr.
///
/// Exit status: the program's own; 2 when epcache could not monitor as asked (a request was
/// refused or never bound, or the program left no report: it was not built with capture, or
/// its cache did not resolve; a request on an allocation site or an allocatable whose region
/// never ran too); 1 when epcache itself failed (nothing was started when the command line is
/// wrong).
#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    /// Use this daemon instead of an embedded one (the program must announce itself in the
    /// runtime directory it watches).
    #[arg(long, value_name = "ADDR")]
    daemon: Option<String>,
    /// For a --daemon on TCP: a file holding its bearer token; without it, the token itself
    /// from $EPCACHE_TOKEN (its value, not a file's name).
    #[arg(long, value_name = "FILE", requires = "daemon")]
    token_file: Option<PathBuf>,
    /// The simulated cache (EPCACHE_CACHE): a preset or a spec like `D1=32K,8,64;L2=1M,16,64`
    /// [default: $EPCACHE_CACHE, else `host`, else `cachegrind`].
    #[arg(long, value_name = "SPEC")]
    cache: Option<String>,
    /// Make the program's threads cores of one simulated machine (EPCACHE_CORES): N cores
    /// (threads placed one to one in the order they start, round-robin past N), or `host`,
    /// optionally followed by the first threads' cores (`2:0,1`). Levels marked `shared` in
    /// the cache spec are shared by the cores (`shared=N` by groups of N); the private ones are
    /// kept coherent (MESI), and the coherence events (PAPI_CA_INV, EPC_L<n>_COHM, EPC_L<n>_FSM
    /// for false sharing, EPC_L<n>_TSM for true sharing) count. Without it every thread
    /// simulates a whole hierarchy of its own.
    #[arg(long, value_name = "N[:CORES]", allow_negative_numbers = true)]
    cores: Option<String>,
    /// Monitor every region with static counts of every event (the standalone report,
    /// EPCACHE_REPORT) and print it when the program ends: a table of each region and the data
    /// structures it touched (counts are inclusive of called regions), or with --json the whole
    /// report.
    #[arg(long)]
    all_regions: bool,
    /// A region of a request (repeatable, one per request): its name, or its key FILE_ID:LINE
    /// when the name is ambiguous (the refusal lists the candidates' keys).
    #[arg(long, value_name = "NAME|FILE_ID:LINE")]
    region: Vec<String>,
    /// The array (data structure) of a request (repeatable, one per request).
    #[arg(long, value_name = "NAME")]
    array: Vec<String>,
    /// The event of a request (repeatable, one per request), e.g. PAPI_L1_LDM.
    #[arg(long, value_name = "EVENT")]
    event: Vec<String>,
    /// Histogram buckets: once for every request, or once per request; 0 (or no --buckets) asks
    /// for a static count. At most 1024 per histogram; buckets are whole L1 lines, so a short
    /// array gets fewer than asked (a note says so).
    #[arg(long, value_name = "N")]
    buckets: Vec<u32>,
    /// Count every request per member of its array of structures (a C struct, C++ class or
    /// Fortran derived type, read from the program's debug info): one row per field (`x`, `y`,
    /// ...) summed over all elements, then the padding. An access counts for the member holding
    /// its first byte. A global or module array's element type is read from its declaration; a
    /// heap block's from the variable holding it (named before `@`, allocated or declared on
    /// its line: `struct p *a = malloc(..)`, `allocate(a(n))`, `std::vector<p> a(n)`), else
    /// name it with --element-type.
    #[arg(long, conflicts_with = "buckets")]
    by_field: bool,
    /// With --by-field: the element type to divide the arrays by, a structure type's name as
    /// declared (`particle` for `struct particle`, a typedef's name, a C++ class, a Fortran
    /// derived type), for heap blocks (`--array FILE:LINE`) no variable of a structure type
    /// holds, or to count by another type than that variable's.
    #[arg(long, value_name = "TYPE", requires = "by_field")]
    element_type: Option<String>,
    /// Seed-paper analyses to run with every request (repeatable, or comma-separated); the
    /// results' `--json` holds their reports. With --by-field, `reuse` also gives spatial use
    /// per field: of each member's bytes the lines brought into L1, the share the program read
    /// or wrote before the line left. Not with --cores: the analyses follow one hierarchy's
    /// lines, not a machine's.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        value_name = "ANALYSIS",
        conflicts_with = "cores"
    )]
    analysis: Vec<AnalysisArg>,
    /// How every request's region instances combine: summed, per-instance (the latest
    /// instance's counts), or per-thread (one row per thread, with its thread id and OpenMP
    /// thread number).
    #[arg(long, default_value_t = Aggregation::Summed, value_parser = aggregation)]
    aggregation: Aggregation,
    /// Which block a request on an allocation site (`--array FILE:LINE`) measures: the one
    /// allocated last (`latest`, following the array when the line allocates it again) or the
    /// largest live one.
    #[arg(long, value_enum, default_value = "latest", value_name = "WHICH")]
    site_block: SiteBlockArg,
    /// Print JSON (a failure too, as {"error": ...} on stdout).
    #[arg(long)]
    pub(crate) json: bool,
    /// Write the results to FILE instead of stdout, in the format asked; with --all-regions,
    /// the report (the requests' results then stay on stdout).
    #[arg(long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// With --all-regions: write the report's per-line misses instead of its table, in
    /// Callgrind's format (`--output callgrind.out.PID` for callgrind_annotate and KCachegrind),
    /// as CSV, or summed per function; `epcache annotate --help` says what they hold.
    #[arg(
        long,
        value_enum,
        value_name = "FORMAT",
        requires = "all_regions",
        conflicts_with = "json"
    )]
    format: Option<RunReportFormat>,
    /// With --all-regions: the order of regions and of the data structures within each.
    /// [default: program]
    #[arg(long, value_enum, value_name = "KEY", requires = "all_regions")]
    sort: Option<SortKey>,
    /// With --all-regions: show `program` (the whole run) and at most N other regions (after
    /// sorting), and N data structures in each (with --format functions: N functions).
    #[arg(long, value_name = "N", requires = "all_regions")]
    top: Option<usize>,
    /// Record a partial data trace of REGION (a function, or a marker's label; NAME@FILE picks
    /// the one of that source file when several share the name) into --output FILE
    /// (EPCACHE_TRACE): every access of each capturing thread with its code address,
    /// compressed per access site, from the thread's start to the end of the last instance
    /// recorded, the instances' spans marked. `epcache replay --cache SPEC FILE` re-simulates it
    /// (counting only the instances, each thread on caches of its own) with per-site and
    /// per-structure tables; under the run's cache it gives exactly the counts the run measured
    /// for the region.
    #[arg(
        long,
        value_name = "REGION",
        requires = "output",
        conflicts_with_all = ["all_regions", "region"]
    )]
    trace: Option<String>,
    /// With --trace: record only the region's first N instances on each thread (default: every
    /// one).
    #[arg(long, value_name = "N", requires = "trace", value_parser = clap::value_parser!(u64).range(1..))]
    instances: Option<u64>,
    /// With --trace: replace an existing --output file (without it, a recorded trace is never
    /// replaced by accident). A symbolic link is refused either way.
    #[arg(long, requires = "trace")]
    overwrite: bool,
    /// The program and its arguments.
    #[arg(last = true, required = true, value_name = "PROGRAM ARGS")]
    command: Vec<OsString>,
}

/// `--format` of `epcache run --all-regions`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum RunReportFormat {
    /// The regions' table (as without --format).
    Table,
    /// The program region's lines in Callgrind's format.
    Callgrind,
    /// Every region's lines as CSV.
    Csv,
    /// The program region's misses per function, an inlined kernel on its own row (--top of
    /// them, 20 by default).
    Functions,
}

impl RunArgs {
    fn requests(&self) -> anyhow::Result<Vec<Request>> {
        let n = self.region.len();
        if self.array.len() != n || self.event.len() != n {
            bail!(
                "each request needs --region, --array and --event ({} regions, {} arrays, {} events given)",
                n,
                self.array.len(),
                self.event.len()
            );
        }
        if !(self.buckets.len() <= 1 || self.buckets.len() == n) {
            bail!("give --buckets once for all requests, or once per request ({n})");
        }
        let exe = match (self.by_field, self.command.first()) {
            (true, Some(program)) => Some(preflight::locate(program).with_context(|| {
                format!(
                    "cannot find the program `{}` to read its fields; give its path",
                    program.to_string_lossy()
                )
            })?),
            _ => None,
        };
        (0..n)
            .map(|i| {
                let (region, array, event) = (
                    region_ref(&self.region[i]),
                    self.array[i].as_str(),
                    self.event[i].as_str(),
                );
                let mut request = match self.buckets.get(i).or(self.buckets.first()) {
                    Some(&b) if b > 0 => Request::histogram(region, array, event, b),
                    _ => Request::count(region, array, event),
                }
                .aggregation(self.aggregation)
                .site_block(self.site_block.into());
                for &a in &self.analysis {
                    request = request.analysis(a.into());
                }
                match &exe {
                    Some(exe) => by_field::request(exe, request, self.element_type.as_deref())
                        .context("--by-field; nothing was started"),
                    None => Ok(request),
                }
            })
            .collect()
    }
}

/// A `--region` value: a key `FILE_ID:LINE` (two numbers; no function or marker name has that
/// form), else a name.
fn region_ref(text: &str) -> RegionRef {
    match text
        .split_once(':')
        .and_then(|(f, l)| Some((f.parse().ok()?, l.parse().ok()?)))
    {
        Some((file_id, line)) => RegionRef::Key { file_id, line },
        None => RegionRef::Name(crate::demangle::region_name(text)),
    }
}

/// The results once the program ended: the table `epcache results` prints, then each
/// histogram's bars.
fn results_table(results: &[RequestResult]) -> String {
    let mut out = crate::results::results_text(results, true);
    for r in results.iter().filter(|r| !r.buckets.is_empty()) {
        out.push('\n');
        out.push_str(&crate::histogram::bars(r, 40));
    }
    out
}

/// The requests on an allocation site or an allocatable that never measured anything: those
/// whose data never existed while their region ran, each with why, and the regions of those
/// whose region never ran.
fn unbound(results: &[RequestResult]) -> (Vec<String>, Vec<&str>) {
    let never_bound = results
        .iter()
        .filter(|r| r.request.unbound_reason().is_some());
    let (ran, never_ran): (Vec<_>, Vec<_>) = never_bound.partition(|r| r.available);
    (
        ran.iter()
            .filter_map(|r| r.request.unbound_reason())
            .collect(),
        never_ran
            .iter()
            .map(|r| r.request.region.name.as_str())
            .collect(),
    )
}

/// How long a program's record may lie in its runtime directory without the daemon listing it
/// before `epcache run` concludes the daemon watches another directory.
const ANNOUNCED_PATIENCE: Duration = Duration::from_secs(3);

/// Ends a program no tool will monitor: SIGTERM first, so its runtime removes its record and
/// segment, then SIGKILL after two seconds.
async fn end_unmonitored(child: &mut std::process::Child) {
    use nix::sys::signal::{Signal, kill};
    if let Ok(pid) = i32::try_from(child.id()) {
        let _ = kill(nix::unistd::Pid::from_raw(pid), Signal::SIGTERM);
    }
    let deadline = Instant::now() + Duration::from_secs(2);
    while Instant::now() < deadline {
        if matches!(child.try_wait(), Ok(Some(_))) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// Waits for the child without blocking the runtime's thread for long.
async fn wait_child(child: &mut std::process::Child) -> anyhow::Result<ExitStatus> {
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(status);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// SIGINT and SIGTERM while the program runs. Ctrl-C reaches the whole foreground process
/// group, and a batch system's SIGTERM the whole job, so the program gets the same signal and
/// ends (a standalone run after writing its report, a monitored one with the results of the
/// instances it finished): epcache run stays to print them, then ends with the program's
/// status. Before, it died at once, and the results, the report in its runtime directory and
/// the directory itself were left behind or lost. A further signal is passed on to the
/// program, which then ends at once, so one sent to epcache run alone still stops it.
struct Interrupts {
    interrupt: tokio::signal::unix::Signal,
    terminate: tokio::signal::unix::Signal,
}

impl Interrupts {
    fn watch() -> anyhow::Result<Interrupts> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(Interrupts {
            interrupt: signal(SignalKind::interrupt()).context("watching for SIGINT")?,
            terminate: signal(SignalKind::terminate()).context("watching for SIGTERM")?,
        })
    }

    /// Says what happens at the first signal and passes the later ones on to `pid`. The first
    /// is passed on too if the program still runs [`Self::GRACE`] later: it was sent to
    /// epcache run alone (`kill PID`, a container stop), not to the whole group.
    fn pass_on_to(mut self, pid: u32) -> tokio::task::JoinHandle<()> {
        use nix::sys::signal::{Signal, kill};
        let pass_on = move |signal: Signal| {
            if let Ok(pid) = i32::try_from(pid) {
                let _ = kill(nix::unistd::Pid::from_raw(pid), signal);
            }
        };
        tokio::spawn(async move {
            let first = tokio::select! {
                Some(()) = self.interrupt.recv() => Signal::SIGINT,
                Some(()) = self.terminate.recv() => Signal::SIGTERM,
                else => return,
            };
            eprintln!(
                "\nepcache run: {first}: waiting for the program to end with its results \
                 (send it again to end the program at once)"
            );
            let again = tokio::select! {
                Some(()) = self.interrupt.recv() => Signal::SIGINT,
                Some(()) = self.terminate.recv() => Signal::SIGTERM,
                () = tokio::time::sleep(Self::GRACE) => {
                    eprintln!("epcache run: the program still runs; passing {first} on to it");
                    first
                }
            };
            pass_on(again);
            loop {
                let signal = tokio::select! {
                    Some(()) = self.interrupt.recv() => Signal::SIGINT,
                    Some(()) = self.terminate.recv() => Signal::SIGTERM,
                    else => return,
                };
                pass_on(signal);
            }
        })
    }

    /// How long the program may take to end on a signal it got with epcache run before that
    /// signal is passed on to it (it writes its report at its next captured access, within
    /// milliseconds while it computes).
    const GRACE: Duration = Duration::from_secs(3);
}

fn exit_code(status: ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status
        .code()
        .unwrap_or_else(|| 128 + status.signal().unwrap_or(0))
}

/// Exit status when epcache could not monitor as asked, though the program ran.
const NOT_MONITORED: i32 = 2;

pub(crate) fn run(args: &RunArgs) -> anyhow::Result<i32> {
    let requests = args.requests()?;
    // Everything that can be checked is checked before the program starts.
    let (cache, spec) = preflight::cache(args.cache.as_deref())?;
    preflight::events(&args.event, &spec)?;
    // The program inherits the caller's EPCACHE_CORES when --cores does not set it.
    let inherited = std::env::var(CORES_ENV).ok();
    let env_name = format!("{CORES_ENV}=");
    let asked = match (&args.cores, &inherited) {
        (Some(cores), _) => Some(("--cores ", cores.as_str())),
        (None, Some(cores)) => Some((env_name.as_str(), cores.as_str())),
        (None, None) => None,
    };
    preflight::cores(asked, &spec, &args.event)?;
    preflight::buckets(&args.buckets, "nothing was started")?;
    if let Some(path) = &args.output {
        preflight::output("--output", path)?;
        if let Some(program) = preflight::locate(&args.command[0]) {
            let program = ("the program", program.as_path());
            preflight::not_the_same_file("--output", path, program, "nothing was started")?;
        }
        if args.trace.is_some() {
            preflight::new_trace_file(path, args.overwrite)?;
        }
    }
    // clap's `requires` lets these through beside --trace.
    if !args.all_regions && (args.sort.is_some() || args.top.is_some() || args.format.is_some()) {
        bail!(
            "--sort, --top and --format arrange the table of --all-regions; give --all-regions \
             too, or leave them out; nothing was started"
        );
    }
    if !(args.all_regions || !requests.is_empty() || args.trace.is_some()) {
        bail!(
            "nothing to measure: give --all-regions (every region and data structure), a request \
             (--region R --array A --event E), or --trace REGION --output FILE; the program was \
             not started"
        );
    }
    preflight::built_with_capture(&args.command[0])?;
    if let Some(region) = &args.trace {
        preflight::traced_region(&args.command[0], region)?;
    }
    preflight::allocation_lines(&args.command[0], &requests);
    preflight::container_globals(&args.command[0], &requests);
    preflight::inlined_request_regions(&args.command[0], &requests);
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime")?
        .block_on(run_async(args, requests, &cache))
}

/// Says on stderr when a histogram got fewer buckets than asked.
fn note_fewer_buckets(asked: &[Request], placed: &[RequestInfo]) {
    for note in asked
        .iter()
        .zip(placed)
        .filter_map(|(request, info)| fewer_buckets_note(request, info))
    {
        eprintln!("epcache: {note}");
    }
}

/// Says on stderr when a histogram whose data did not exist at its placement (a module array
/// allocated later) got fewer buckets than asked once it bound: its width was only known then.
fn note_fewer_buckets_bound(asked: &[Request], placed: &[RequestInfo], results: &[RequestResult]) {
    for (request, info) in asked.iter().zip(placed) {
        let epcache_client::Mode::Buckets(wanted) = request.mode else {
            continue;
        };
        // Said at placement already.
        if info.buckets < wanted {
            continue;
        }
        let Some(result) = results.iter().find(|r| r.request.id == info.id) else {
            continue;
        };
        let given = result.buckets.len();
        let (Some(first), Some(last)) = (result.buckets.first(), result.buckets.last()) else {
            continue;
        };
        if given as u32 >= wanted || result.buckets.iter().any(|b| b.field.is_some()) {
            continue;
        }
        let text = fewer_buckets_text(
            info,
            given as u32,
            first.range.end - first.range.start,
            last.range.end - first.range.start,
            wanted,
        );
        eprintln!("epcache: {text}");
    }
}

/// Where the results go: stdout, or the file of --output.
fn emit(args: &RunArgs, text: &str) -> anyhow::Result<()> {
    match &args.output {
        Some(path) => std::fs::write(path, text)
            .with_context(|| format!("writing the results to {}", path.display())),
        None => print_stdout(text),
    }
}

/// What a run prints, gathered so that each part is written once: the requests' results and,
/// with `--all-regions`, the report (its table, its JSON, or its lines in a `--format`). On
/// stdout the results come first, then the report (as JSON, two documents one after the
/// other). `--output FILE` takes the report whole, as `epcache annotate` reads it, and leaves
/// the results on stdout; without a report it takes the results.
struct RunOutput {
    /// The results as JSON or as a table, as `--json` asks; `None` without requests.
    results: Option<String>,
    /// The report as it is to be written.
    report: Option<String>,
}

impl RunOutput {
    fn new(args: &RunArgs, results: &[RequestResult]) -> anyhow::Result<RunOutput> {
        let results = match (results.is_empty(), args.json) {
            (true, _) => None,
            (false, true) => Some(json(&results)?),
            (false, false) => Some(results_table(results)),
        };
        Ok(RunOutput {
            results,
            report: None,
        })
    }

    fn finish(self, args: &RunArgs) -> anyhow::Result<()> {
        match (self.results, self.report) {
            (None, None) => Ok(()),
            (Some(only), None) | (None, Some(only)) => emit(args, &only),
            (Some(results), Some(report)) if args.output.is_some() => {
                print_stdout(&results)?;
                emit(args, &report)
            }
            (Some(results), Some(report)) => print_stdout(&(results + &report)),
        }
    }
}

/// Names the table's heap allocation lines by the one array each allocates in the program's
/// source (`x@ra.f90:5` for `allocate(x(n))` there), so the table says which array it is and
/// gives the name a request takes. The sources are read only when the report has such lines;
/// a program or source that cannot be read leaves the lines as they are.
fn name_allocation_lines(report: &mut report_table::Report, program: &OsStr) {
    let lines = report.allocation_lines();
    if lines.is_empty() {
        return;
    }
    let Some(info) =
        preflight::locate(program).and_then(|p| epcache_symbols::DebugInfo::load_program(&p).ok())
    else {
        return;
    };
    let arrays = lines
        .into_iter()
        .filter_map(|(file, line)| {
            let array = allocated_arrays::sole_array_on(&info, &file, line)?;
            Some(((file, line), array))
        })
        .collect();
    report.name_allocation_lines(&arrays);
}

/// The report of an `--all-regions` run as it is to be written: its lines in a `--format`, its
/// JSON as the runtime wrote it (`text`), or its table.
fn report_output(
    args: &RunArgs,
    program: &OsStr,
    text: &str,
    parsed: &report_table::Report,
) -> anyhow::Result<String> {
    let lines = match args.format {
        Some(RunReportFormat::Callgrind) => Some(LineFormat::Callgrind),
        Some(RunReportFormat::Csv) => Some(LineFormat::Csv),
        Some(RunReportFormat::Functions) => Some(LineFormat::Functions),
        Some(RunReportFormat::Table) | None => None,
    };
    if let Some(format) = lines {
        let report = LineReport::parse(text, &program.to_string_lossy())?;
        let command: Vec<String> = args
            .command
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        return line_report::render(
            &report,
            format,
            &Selection::default(),
            None,
            args.top.unwrap_or(20),
            &command.join(" "),
        );
    }
    if args.json {
        return Ok(text.trim_end().to_owned() + "\n");
    }
    Ok(report_table::render(
        parsed,
        report_table::Layout {
            sort: args.sort.unwrap_or(SortKey::Program),
            top: args.top,
        },
    ))
}

/// Runs the program under an embedded (or the given) daemon; `cache` is the spec it simulates,
/// as [`preflight::cache`] resolved it.
async fn run_async(args: &RunArgs, requests: Vec<Request>, cache: &str) -> anyhow::Result<i32> {
    let runtime_dir = run_dir::create()?;
    let report = runtime_dir.path().join("report.json");
    let embedded = match &args.daemon {
        Some(_) => None,
        None => Some(
            // On the socket in the private runtime directory: only this user can reach it.
            epcache_daemon::serve(epcache_daemon::Config {
                discovery_interval: Duration::from_millis(50),
                ..epcache_daemon::Config::private(runtime_dir.path())
            })
            .await
            .context("starting the embedded daemon")?,
        ),
    };
    let address = match (&embedded, &args.daemon) {
        (Some(d), _) => d.endpoint(),
        (None, Some(a)) => a.clone(),
        (None, None) => unreachable!("a daemon is either embedded or given"),
    };
    if embedded.is_some() {
        eprintln!("epcache: daemon for this run at {address}");
    }
    // An embedded daemon, on this user's own socket, asks for no token.
    let token = match &args.daemon {
        Some(_) => crate::connection::bearer_token(args.token_file.as_deref())?,
        None => None,
    };
    let connect = || {
        Client::connect_with(ConnectOptions {
            address: address.clone(),
            token: token.clone(),
            tool: format!("epcache-run-{}", std::process::id()),
            ..ConnectOptions::default()
        })
    };

    // Before the program starts, so no Ctrl-C can end epcache run without its results.
    let interrupts = Interrupts::watch()?;
    let (program, program_args) = args.command.split_first().expect("clap requires a program");
    let mut command = Command::new(program);
    command.args(program_args);
    if embedded.is_some() {
        command.env("EPCACHE_RUNTIME_DIR", runtime_dir.path());
    }
    if let Some(cache) = &args.cache {
        // Its warnings were said before the start (`preflight`).
        command
            .env("EPCACHE_CACHE", cache)
            .env(epcache_sim::cache::CACHE_WARNED_ENV, "1");
    }
    if let Some(cores) = &args.cores {
        command.env(CORES_ENV, cores);
    }
    if args.all_regions {
        command.env("EPCACHE_REPORT", &report);
    }
    if let (Some(region), Some(output)) = (&args.trace, &args.output) {
        // Recording needs the standalone run, whose report stays in the runtime directory.
        command.env("EPCACHE_REPORT", &report);
        command.env(
            "EPCACHE_TRACE",
            run_trace::trace_env(region, args.instances),
        );
        command.env("EPCACHE_TRACE_OUTPUT", std::path::absolute(output)?);
    }
    if !requests.is_empty() {
        command.env("EPCACHE_WAIT", START_WAIT_SECS.to_string());
    }
    // The program ends (SIGTERM) when this process dies, even by SIGKILL. The kernel ties it to
    // the thread that spawns it, which is the main thread: `block_on` polls this future there,
    // and it lives as long as the process.
    command.env(LAUNCHER_ENV, std::process::id().to_string());
    let mut child = command
        .spawn()
        .with_context(|| format!("starting {}", program.to_string_lossy()))?;
    let pid = child.id();
    let interrupts = interrupts.pass_on_to(pid);

    let mut refused = false;
    let mut results = Vec::new();
    let progress = std::io::stderr().is_terminal();
    if !requests.is_empty() {
        let mut client = connect().await?;
        let started = Instant::now();
        // With a daemon of the user's own, the program announces itself where this process's
        // environment says (no EPCACHE_RUNTIME_DIR is set for it).
        let announced_in = args
            .daemon
            .as_ref()
            .map(|_| epcache_shm::discovery::runtime_dir());
        let mut announced_at: Option<Instant> = None;
        loop {
            // The target blocks at start (EPCACHE_WAIT) only once its regions and data structures are
            // registered, so a tool describes and requests after that.
            let targets = client.targets().await?;
            let listed = targets.iter().find(|t| t.pid == pid);
            if listed.is_some_and(|t| t.state == TargetState::WaitingForTool) {
                break;
            }
            if let Some(status) = child.try_wait()? {
                bail!(
                    "{} ended ({status}) before it showed up at the daemon; was it built with `epcache cc`?",
                    program.to_string_lossy()
                );
            }
            // Its record there, and the daemon (which looks every 150 ms) still not listing it:
            // the daemon watches another directory.
            if let Some(dir) = &announced_in
                && listed.is_none()
                && epcache_shm::discovery::record_path(dir, pid).exists()
                && announced_at.get_or_insert_with(Instant::now).elapsed() > ANNOUNCED_PATIENCE
            {
                end_unmonitored(&mut child).await;
                // A program ended by a signal leaves its record; listing removes a dead one's.
                let _ = epcache_shm::discovery::list_targets(dir);
                bail!(
                    "pid {pid} announced itself in {}, and the daemon at {address} does not list it: that daemon watches another runtime directory; start it with --runtime-dir {} or the program with EPCACHE_RUNTIME_DIR set to its directory. The program was ended; nothing was measured",
                    dir.display(),
                    dir.display()
                );
            }
            if started.elapsed() > Duration::from_secs(30) {
                end_unmonitored(&mut child).await;
                bail!(
                    "pid {pid} never showed up at the daemon at {address} within 30 s; was it built with `epcache cc`, and does the daemon watch its runtime directory?"
                );
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let mut events = client.watch(Some(pid)).await?;
        let placed = match client.requests(pid, &requests).await {
            Ok(p) => p,
            Err(e) => {
                // The program must not pay for a bad command line: let it run to its end.
                eprintln!("epcache: {e}");
                if let Some(exe) = preflight::locate(program) {
                    // Each name once: several requests often name one region.
                    let names: std::collections::BTreeSet<&String> = args.region.iter().collect();
                    for name in names {
                        if let Some(note) = inlined_regions::note(&exe, name) {
                            eprintln!("epcache: {note}");
                        }
                    }
                    let arrays: std::collections::BTreeSet<&String> = args.array.iter().collect();
                    let refusal = e.to_string();
                    for array in arrays {
                        if let Some(note) = allocated_arrays::note(&exe, array, &refusal) {
                            eprintln!("epcache: {note}");
                        }
                    }
                }
                eprintln!(
                    "epcache: no request was placed; the program runs to its end unmonitored"
                );
                refused = true;
                Vec::new()
            }
        };
        note_fewer_buckets(&requests, &placed);
        client.resume(pid, true).await?;
        while let Some(event) = events.next().await {
            match event? {
                Event::ResultUpdated { result, .. } if progress => {
                    eprint!(
                        "\r{} over {} during {}: {} after {} instance(s)   ",
                        result.request.event,
                        result.request.data_name(),
                        result.request.region.name,
                        result.total,
                        result.instances
                    );
                }
                Event::Exited { .. } => break,
                _ => {}
            }
        }
        if progress {
            eprintln!();
        }
        if !placed.is_empty() {
            let ids: Vec<u64> = placed.iter().map(|p| p.id).collect();
            results = client.results(pid, &ids).await?;
            note_fewer_buckets_bound(&requests, &placed, &results);
            if let Some(exe) = preflight::locate(program) {
                crate::heap_shapes::fill(&mut results, &exe);
            }
        }
    }
    let status = if progress && requests.is_empty() && embedded.is_some() {
        let mut client = connect().await?;
        wait_child_showing_progress(&mut child, &mut client).await?
    } else {
        wait_child(&mut child).await?
    };
    interrupts.abort();
    if let Some(d) = embedded {
        d.shutdown().await;
    }

    if let (Some(region), Some(output)) = (&args.trace, &args.output) {
        return Ok(
            match run_trace::check_recording(region, output, cache, &report) {
                Ok(recording) if args.json => {
                    print_stdout(&json(&recording)?)?;
                    exit_code(status)
                }
                Ok(recording) => {
                    eprintln!("epcache: {}", recording.summary());
                    exit_code(status)
                }
                Err(why) => {
                    if args.json {
                        print_stdout(&json(&serde_json::json!({ "error": why }))?)?;
                    }
                    eprintln!("epcache: {why}");
                    NOT_MONITORED
                }
            },
        );
    }
    let mut output = RunOutput::new(args, &results)?;
    if args.all_regions {
        let text = match std::fs::read_to_string(&report) {
            Ok(text) => text,
            Err(e) => {
                output.finish(args)?;
                eprintln!(
                    "epcache: {} left no report ({e}): it was not built with capture (`epcache cc`), or it ended before its exit handlers ran",
                    program.to_string_lossy()
                );
                return Ok(NOT_MONITORED);
            }
        };
        let mut parsed: report_table::Report = match serde_json::from_str(&text) {
            Ok(parsed) => parsed,
            Err(e) => {
                // The results stand without the report.
                output.finish(args)?;
                return Err(anyhow::Error::new(e).context("reading the program's report"));
            }
        };
        if let Some(error) = &parsed.error {
            output.finish(args)?;
            eprintln!("epcache: the run was not monitored: {error}");
            return Ok(NOT_MONITORED);
        }
        name_allocation_lines(&mut parsed, program);
        match report_output(args, program, &text, &parsed) {
            Ok(report) => output.report = Some(report),
            Err(e) => {
                output.finish(args)?;
                return Err(e);
            }
        }
    }
    output.finish(args)?;
    if refused {
        return Ok(NOT_MONITORED);
    }
    let (unbound, never_ran) = unbound(&results);
    let info = (!never_ran.is_empty())
        .then(|| preflight::locate(program))
        .flatten()
        .and_then(|p| epcache_symbols::DebugInfo::load_program(&p).ok());
    for region in &never_ran {
        // Its parallel loops run as regions of their own wherever it was inlined.
        let loops = info
            .as_ref()
            .map(|info| inlined_regions::parallel_loops(info, region))
            .filter(|loops| !loops.is_empty())
            .map(|loops| {
                format!(
                    ", or for its parallel loops {}",
                    crate::output::quoted(&loops, ", ")
                )
            })
            .unwrap_or_default();
        eprintln!(
            "epcache: a request measured nothing: `{region}` never ran while the program did \
             (a function inlined wherever it is called runs as part of its callers: ask for one \
             of them{loops})"
        );
    }
    for why in &unbound {
        eprintln!("epcache: a request stayed unbound: {why}");
    }
    if !unbound.is_empty() {
        eprintln!(
            "epcache: a request counts its array while the array is allocated during its \
             region; ask for a region during which the program allocates it, or check the \
             allocation's line (`epcache run --all-regions` lists the arrays each region touches)"
        );
    }
    if !unbound.is_empty() || !never_ran.is_empty() {
        return Ok(NOT_MONITORED);
    }
    Ok(exit_code(status))
}

/// Waits for the child with a once-a-second line on stderr (a terminal): how long it has run
/// and how many regions and data structures the daemon sees in it.
async fn wait_child_showing_progress(
    child: &mut std::process::Child,
    client: &mut Client,
) -> anyhow::Result<ExitStatus> {
    let pid = child.id();
    let started = Instant::now();
    let mut shown = false;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        let elapsed = started.elapsed();
        if elapsed >= Duration::from_secs(1) {
            let seen = client.targets().await.ok().and_then(|targets| {
                targets.into_iter().find(|t| t.pid == pid).map(|t| {
                    format!(
                        ", {} regions, {} data structures",
                        t.regions, t.data_structures
                    )
                })
            });
            eprint!(
                "\repcache run: pid {pid} has run {} s{}   ",
                elapsed.as_secs(),
                seen.unwrap_or_default()
            );
            shown = true;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    if shown {
        eprint!("\r\x1b[2K");
    }
    Ok(status)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_region_is_named_or_given_by_key() {
        assert_eq!(
            region_ref("440472694:2"),
            RegionRef::Key {
                file_id: 440_472_694,
                line: 2
            }
        );
        for name in ["init", "alpha::A::init", "main.c:42", "f:x:1"] {
            assert_eq!(region_ref(name), RegionRef::Name(name.to_owned()), "{name}");
        }
    }
}
