//! `epcache run`: launch a program under monitoring, with an embedded daemon unless `--daemon`
//! names one, place the requests given on the command line, and print their results (or, with
//! `--all-regions`, the program's whole-run report) when it ends.

use std::ffi::OsString;
use std::io::IsTerminal;
use std::process::{Command, ExitStatus};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Args;
use epcache_client::{
    Client, ConnectOptions, Event, RegionRef, Request, RequestResult, SiteBlock, TargetState,
};
use tokio_stream::StreamExt;

use crate::connection::{json, table};
use crate::output::print_stdout;

/// How long the program waits at start for its requests (EPCACHE_WAIT).
const START_WAIT_SECS: u32 = 60;

/// Run a program under monitoring (built with `epcache cc`, or a Rust program linking
/// epcache-monitor) and report what it measured.
///
/// Requests are given as groups: `--region NAME --array NAME --event EVENT [--buckets N]`,
/// repeatable; `--buckets` is given once for all, or once per request (0 for a static count), or
/// not at all (static counts). The program waits at start until they are placed; an unknown region or array is
/// refused by name (with the nearest names), the program then runs to its end unmonitored, and
/// `epcache run` exits non-zero.
///
/// A heap array is named by its allocation site, `--array prog.c:50` (as `--all-regions` names
/// heap blocks), before the program has allocated it: the request binds inside the program to a
/// block allocated at that line (of at least 4096 bytes) when the region is entered, following
/// each new block (`--site-block`). A request that never found a block is reported as unbound,
/// and `epcache run` exits non-zero. A Fortran ALLOCATABLE array is named as declared
/// (`fields::u`) and measured over its data wherever it is allocated. Without `--daemon`, a daemon runs inside this process for the
/// program's lifetime; its address is printed on stderr, so other tools can join.
#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    /// Use this daemon instead of an embedded one (the program must announce itself in the
    /// runtime directory it watches).
    #[arg(long, value_name = "ADDR")]
    daemon: Option<String>,
    /// The simulated cache (EPCACHE_CACHE): a preset or a spec like `D1=32K,8,64;L2=1M,16,64`.
    #[arg(long, value_name = "SPEC")]
    cache: Option<String>,
    /// Monitor every region with static counts of every event (the standalone report,
    /// EPCACHE_REPORT) and print it when the program ends: a table of each region and the data
    /// structures it touched, or with --json the whole report.
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
    /// Histogram buckets: once for every request, or once per request (0: a static count).
    #[arg(long, value_name = "N")]
    buckets: Vec<u32>,
    /// Which block a request on an allocation site (`--array FILE:LINE`) measures: the one
    /// allocated last (`latest`, following the array when the line allocates it again) or the
    /// largest live one.
    #[arg(long, value_enum, default_value = "latest", value_name = "WHICH")]
    site_block: SiteBlockArg,
    /// Print JSON.
    #[arg(long)]
    json: bool,
    /// The program and its arguments.
    #[arg(last = true, required = true, value_name = "PROGRAM ARGS")]
    command: Vec<OsString>,
}

/// `--site-block` of `epcache run` and `epcache request`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub(crate) enum SiteBlockArg {
    /// The block allocated last (the array a line allocates again is followed to each block).
    Latest,
    /// The largest live block.
    Largest,
}

impl From<SiteBlockArg> for SiteBlock {
    fn from(a: SiteBlockArg) -> Self {
        match a {
            SiteBlockArg::Latest => SiteBlock::Latest,
            SiteBlockArg::Largest => SiteBlock::Largest,
        }
    }
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
        Ok((0..n)
            .map(|i| {
                let (region, array, event) = (
                    region_ref(&self.region[i]),
                    self.array[i].as_str(),
                    self.event[i].as_str(),
                );
                match self.buckets.get(i).or(self.buckets.first()) {
                    Some(&b) if b > 0 => Request::histogram(region, array, event, b),
                    _ => Request::count(region, array, event),
                }
                .site_block(self.site_block.into())
            })
            .collect())
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
        None => RegionRef::Name(text.to_owned()),
    }
}

/// The standalone report as a table: each region, then each data structure it touched, with
/// its reads, writes and misses at L1 and at the last level.
fn standalone_table(report: &serde_json::Value) -> String {
    let levels = report["levels"].as_array().map_or(0, Vec::len);
    let count = |events: &serde_json::Value, name: &str| {
        events[name]
            .as_u64()
            .map_or_else(String::new, |n| n.to_string())
    };
    let last = format!("PAPI_L{}_DCM", levels.max(1));
    let row = |region: &str, data: &str, instances: String, events: &serde_json::Value| {
        vec![
            region.to_owned(),
            data.to_owned(),
            instances,
            count(events, "PAPI_L1_DCR"),
            count(events, "PAPI_L1_DCW"),
            count(events, "PAPI_L1_DCM"),
            count(events, &last),
        ]
    };
    let mut rows = Vec::new();
    for region in report["regions"].as_array().into_iter().flatten() {
        let name = region["name"].as_str().unwrap_or("?");
        let instances = region["instances"]
            .as_u64()
            .map_or_else(String::new, |n| n.to_string());
        rows.push(row(name, "", instances, &region["events"]));
        for data in region["data_structures"].as_array().into_iter().flatten() {
            let data_name = data["name"].as_str().unwrap_or("?");
            rows.push(row("", data_name, String::new(), &data["events"]));
        }
    }
    let last_header = format!(">L{} MISSES", levels.max(1));
    let mut out = table(
        &[
            "REGION",
            "DATA",
            ">INSTANCES",
            ">READS",
            ">WRITES",
            ">L1 MISSES",
            &last_header,
        ],
        &rows,
    );
    if let Some(n) = report["threads_unreported"].as_u64().filter(|&n| n > 0) {
        out.push_str(&format!(
            "{n} thread(s) ended inside a region without handing their counts on: missing above\n"
        ));
    }
    out
}

fn results_table(results: &[RequestResult]) -> String {
    let mut out = String::new();
    let rows: Vec<Vec<String>> = results
        .iter()
        .map(|r| {
            vec![
                r.request.region.name.clone(),
                r.request.data_name(),
                r.request.event.clone(),
                r.instances.to_string(),
                if r.available {
                    r.total.to_string()
                } else if r.request.unbound_reason().is_some() {
                    "(unbound)".into()
                } else {
                    "(never ran)".into()
                },
            ]
        })
        .collect();
    out.push_str(&table(
        &["REGION", "DATA", "EVENT", ">INSTANCES", ">TOTAL"],
        &rows,
    ));
    for r in results.iter().filter(|r| !r.buckets.is_empty()) {
        out.push('\n');
        out.push_str(&crate::histogram::bars(r, 40));
    }
    out
}

/// The requests that never measured anything because they found nothing to bind to, each with
/// why.
fn unbound(results: &[RequestResult]) -> Vec<String> {
    results
        .iter()
        .filter(|r| !r.available)
        .filter_map(|r| r.request.unbound_reason())
        .collect()
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

pub(crate) fn run(args: &RunArgs) -> anyhow::Result<i32> {
    let requests = args.requests()?;
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime")?
        .block_on(run_async(args, requests))
}

async fn run_async(args: &RunArgs, requests: Vec<Request>) -> anyhow::Result<i32> {
    let runtime_dir = tempfile::Builder::new()
        .prefix("epcache-run-")
        .tempdir()
        .context("creating a runtime directory")?;
    let report = runtime_dir.path().join("report.json");
    let embedded = match &args.daemon {
        Some(_) => None,
        None => Some(
            epcache_daemon::serve(epcache_daemon::Config {
                runtime_dir: runtime_dir.path().to_owned(),
                discovery_interval: Duration::from_millis(50),
                ..epcache_daemon::Config::loopback(0)
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

    // Before the program starts, so no Ctrl-C can end epcache run without its results.
    let interrupts = Interrupts::watch()?;
    let (program, program_args) = args.command.split_first().expect("clap requires a program");
    let mut command = Command::new(program);
    command.args(program_args);
    if embedded.is_some() {
        command.env("EPCACHE_RUNTIME_DIR", runtime_dir.path());
    }
    if let Some(cache) = &args.cache {
        command.env("EPCACHE_CACHE", cache);
    }
    if args.all_regions {
        command.env("EPCACHE_REPORT", &report);
    }
    if !requests.is_empty() {
        command.env("EPCACHE_WAIT", START_WAIT_SECS.to_string());
    }
    let mut child = command
        .spawn()
        .with_context(|| format!("starting {}", program.to_string_lossy()))?;
    let pid = child.id();
    let interrupts = interrupts.pass_on_to(pid);

    let mut refused = false;
    let mut results = Vec::new();
    if !requests.is_empty() {
        let mut client = Client::connect_with(ConnectOptions {
            address: address.clone(),
            token: std::env::var("EPCACHE_TOKEN")
                .ok()
                .filter(|t| !t.is_empty()),
            tool: format!("epcache-run-{}", std::process::id()),
            ..ConnectOptions::default()
        })
        .await?;
        let started = Instant::now();
        loop {
            // The target blocks at start (EPCACHE_WAIT) only once its regions and data structures are
            // registered, so a tool describes and requests after that.
            if client
                .targets()
                .await?
                .iter()
                .any(|t| t.pid == pid && t.state == TargetState::WaitingForTool)
            {
                break;
            }
            if let Some(status) = child.try_wait()? {
                bail!(
                    "{} ended ({status}) before it showed up at the daemon; was it built with `epcache cc`?",
                    program.to_string_lossy()
                );
            }
            if started.elapsed() > Duration::from_secs(30) {
                let _ = child.kill();
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
                eprintln!(
                    "epcache: no request was placed; the program runs to its end unmonitored"
                );
                refused = true;
                Vec::new()
            }
        };
        client.resume(pid, true).await?;
        let progress = std::io::stderr().is_terminal();
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
        }
    }
    let status = wait_child(&mut child).await?;
    interrupts.abort();
    if let Some(d) = embedded {
        d.shutdown().await;
    }

    if !results.is_empty() {
        print_stdout(&if args.json {
            json(&results)?
        } else {
            results_table(&results)
        })?;
    }
    if args.all_regions {
        match std::fs::read_to_string(&report) {
            Ok(text) if args.json => print_stdout(&(text.trim_end().to_owned() + "\n"))?,
            Ok(text) => print_stdout(&standalone_table(
                &serde_json::from_str(&text).context("reading the program's report")?,
            ))?,
            Err(e) => eprintln!(
                "epcache: the program wrote no report ({e}); was it built with `epcache cc`?"
            ),
        }
    }
    if refused {
        return Ok(2);
    }
    let unbound = unbound(&results);
    for why in &unbound {
        eprintln!("epcache: a request stayed unbound: {why}");
    }
    if !unbound.is_empty() {
        return Ok(2);
    }
    Ok(exit_code(status))
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

    #[test]
    fn the_standalone_table_has_a_row_per_region_and_structure() {
        let report = serde_json::json!({
            "levels": [{"name": "D1"}, {"name": "LL"}],
            "threads_unreported": 1,
            "regions": [{
                "name": "sweep", "instances": 3,
                "events": {"PAPI_L1_DCR": 12, "PAPI_L1_DCW": 12, "PAPI_L1_DCM": 4, "PAPI_L2_DCM": 2},
                "data_structures": [{"name": "a", "events": {"PAPI_L1_DCR": 12, "PAPI_L1_DCW": 12, "PAPI_L1_DCM": 4, "PAPI_L2_DCM": 2}}]
            }]
        });
        let text = standalone_table(&report);
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[0].starts_with("REGION") && lines[0].ends_with("L2 MISSES"),
            "{text}"
        );
        let words = |line: &str| {
            line.split_whitespace()
                .map(str::to_owned)
                .collect::<Vec<_>>()
        };
        assert_eq!(words(lines[1]), ["sweep", "3", "12", "12", "4", "2"]);
        assert_eq!(words(lines[2]), ["a", "12", "12", "4", "2"]);
        assert!(
            lines[3].starts_with("1 thread(s) ended inside a region"),
            "{text}"
        );
    }
}
