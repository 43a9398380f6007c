//! `epcache replay`: run a trace through a simulated hierarchy and report per-level totals.

use std::path::PathBuf;
use std::str::FromStr;
use std::time::Instant;

use anyhow::{Context, bail};
use clap::Args;
use epcache_sim::cache::{Hierarchy, HierarchySpec, MAX_SHARDS, SetShards};
use epcache_sim::replay::{ReplaySummary, cachegrind_hierarchy, replay_with_progress};
use epcache_sim::sharded_replay::replay_in_shards;
use epcache_sim::trace::{EpctReader, LackeyReader, TraceRecord};

use crate::output::print_stdout;
use crate::preflight;
use crate::progress::Progress;
use crate::replay_partial::{self, MrcGeometry, PartialOptions};
use crate::report;
use crate::trace_input::{TraceFormat, TraceInput};

/// Replay a memory trace through a simulated cache hierarchy and print per-level totals.
///
/// With --cachegrind-compat the replay follows Cachegrind's conventions (I1, D1 and LL, LRU,
/// write-allocate, no write-backs, data sizes clamped to the smallest line, a modify counted as one
/// read, a straddling access counted once and missing if either line misses), so a lackey trace of
/// a run gives exactly the counts `valgrind --tool=cachegrind --cache-sim=yes` gives for that run.
/// Without it, a modify is a read then a write, sizes are kept whole and dirty lines are written
/// back. Instruction records go through the caches only when the hierarchy has an I1.
///
/// A partial trace (`epcache trace convert --to partial`, or recorded by `epcache run --trace` /
/// EPCACHE_TRACE; recognised by its magic) is replayed the same way and also reported per access
/// site and per data structure: accesses, misses per level, temporal and spatial hits, spatial
/// use and evictors at the watched level, plus the trace's compression (accesses per byte, share
/// covered by descriptors); --mrc adds miss-ratio curves per structure. A recording counts only
/// the traced region's instances (the accesses before and between them are simulated, so the
/// instances meet the cache state they met in the run): under the run's cache, the totals are
/// the run's counts for the region.
#[derive(Debug, Args)]
#[command(group = clap::ArgGroup::new("shape").multiple(true).args(["i1", "d1", "ll"]).conflicts_with("cache"))]
pub(crate) struct ReplayArgs {
    /// Trace format; by default it is recognised from the file's first bytes.
    #[arg(long, value_enum)]
    format: Option<TraceFormat>,

    /// Cache hierarchy: a preset (host, cachegrind, r12000, pentium-m) or levels such as
    /// `I1=32K,8,64;D1=32K,8,64;LL=8M,16,64` (options per level after the line size: lru, plru,
    /// random[:SEED], wb, wt, inclusive). Default: `cachegrind` with --cachegrind-compat, else `host`.
    #[arg(long, value_name = "SPEC")]
    cache: Option<String>,

    /// I1 as Cachegrind's --I1: size in bytes, associativity, line size in bytes.
    #[arg(long = "I1", id = "i1", value_name = "S,A,L")]
    i1: Option<CachegrindLevel>,

    /// D1 as Cachegrind's --D1; levels not given come from the `cachegrind` preset.
    #[arg(long = "D1", id = "d1", value_name = "S,A,L")]
    d1: Option<CachegrindLevel>,

    /// LL as Cachegrind's --LL.
    #[arg(long = "LL", id = "ll", value_name = "S,A,L")]
    ll: Option<CachegrindLevel>,

    /// Follow Cachegrind's conventions exactly (see above).
    #[arg(long)]
    cachegrind_compat: bool,

    /// Print a JSON object (`levels.<NAME>.reads`, `read_misses`, `writes`, `write_misses`, the
    /// instruction and data split, and in Cachegrind mode `cachegrind.Ir` ... `DLmw`); a failure
    /// too, as {"error": ...} on stdout.
    #[arg(long)]
    pub(crate) json: bool,

    /// Partial traces: the data level (0 for the first) whose temporal/spatial hits, spatial use
    /// and evictors the per-site and per-structure tables show.
    #[arg(long, value_name = "N", default_value_t = 0)]
    watch_level: usize,

    /// Partial traces: also compute each structure's miss ratio for every size of a first-level
    /// cache of WAYS ways (`full`: fully associative, exact from LRU stack distances) and LINE-byte
    /// lines, sizes doubling up to --mrc-max.
    #[arg(long, value_name = "WAYS,LINE")]
    mrc: Option<MrcGeometry>,

    /// Largest cache size of the curves in bytes, K, M and G allowed as in `32M` (default: the
    /// trace's footprint, rounded up to a power of two).
    #[arg(long, value_name = "BYTES", requires = "mrc", value_parser = epcache_sim::cache::parse_size)]
    mrc_max: Option<u64>,

    /// Sample the curves instead of computing them exactly (fully associative only, `--mrc
    /// full,LINE`): SHARDS at fixed rate RATE (0.000001 to 1, e.g. 0.01), keeping the line
    /// addresses whose hash falls below RATE and scaling their stack distances by 1/RATE, so
    /// time and memory fall with the rate; sizes below 4/RATE lines get no point. The result is
    /// an estimate: the output says how many lines were sampled and the mean absolute error of
    /// the miss ratio measured against exact curves for samples of that size (on the tests'
    /// kernels and suite traces): at most 0.01 from 10,000 lines sampled, 0.03 from 1,000, 0.1
    /// from 100, 0.15 below; none at rate 1. Exact curves stay the default.
    #[arg(long, value_name = "RATE", requires = "mrc", value_parser = replay_partial::sample_rate)]
    mrc_sample: Option<f64>,

    /// Write the miss-ratio curves as an SVG plot to FILE.
    #[arg(long, value_name = "FILE", requires = "mrc")]
    svg: Option<PathBuf>,

    /// Simulate on N threads (a power of two), each owning a slice of every level's sets; the
    /// counts are exactly those of one thread. Whatever N, the trace is read on a thread of its
    /// own when the machine has more than one core. Refused, with the reason, for a cache whose
    /// sets cannot be shared out (a level with random replacement or a number of sets that is
    /// not a power of two) and for a partial trace. Reading a trace takes about as long as
    /// simulating it under a two-level cache, so N above 1 pays only with idle cores and a deep
    /// cache; on two cores the default was the fastest (docs/performance.md).
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = thread_count)]
    threads: u32,

    /// Partial traces: rows of each text table.
    #[arg(long, value_name = "N", default_value_t = 20)]
    top: usize,

    /// The trace file, or `-` for standard input.
    #[arg(value_name = "TRACE")]
    trace: PathBuf,
}

/// `--threads`: a power of two from 1 to [`MAX_SHARDS`].
fn thread_count(s: &str) -> Result<u32, String> {
    match s.parse::<u32>() {
        Ok(n) if n.is_power_of_two() && n <= MAX_SHARDS => Ok(n),
        _ => Err(format!(
            "`{s}` is not a thread count: give a power of two from 1 to {MAX_SHARDS}"
        )),
    }
}

/// How a replay of `format` through `spec` is shared out among `threads` simulating threads,
/// with the trace read on a thread of its own when the machine has more than one core (even for
/// one simulating thread: reading takes about as long as simulating); `None`: all on this
/// thread.
fn sharding(
    threads: u32,
    spec: &HierarchySpec,
    format: TraceFormat,
) -> anyhow::Result<Option<SetShards>> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if threads == 1 && (cores == 1 || format == TraceFormat::Partial) {
        return Ok(None);
    }
    if format == TraceFormat::Partial {
        bail!(
            "--threads {threads}: a partial trace is replayed on one thread (its per-site tables follow every access in order); drop --threads"
        );
    }
    let shards = SetShards::new(spec, threads).with_context(|| {
        format!("--threads {threads}: cache `{spec}` cannot be simulated in {threads} slices of its sets; use --threads 1")
    })?;
    Ok(Some(shards))
}

/// One Cachegrind-style `SIZE,ASSOC,LINE` triple.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct CachegrindLevel {
    size: u64,
    assoc: u32,
    line: u32,
}

impl FromStr for CachegrindLevel {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let fields: Vec<&str> = s.split(',').map(str::trim).collect();
        let [size, assoc, line] = fields[..] else {
            return Err(format!(
                "`{s}` is not SIZE,ASSOC,LINE (three numbers, e.g. 32768,8,64)"
            ));
        };
        let number = |what: &str, v: &str| {
            v.parse::<u64>()
                .map_err(|_| format!("the {what} `{v}` in `{s}` is not a number"))
        };
        Ok(Self {
            size: number("size", size)?,
            assoc: u32::try_from(number("associativity", assoc)?)
                .map_err(|_| format!("associativity in `{s}` is too large"))?,
            line: u32::try_from(number("line size", line)?)
                .map_err(|_| format!("line size in `{s}` is too large"))?,
        })
    }
}

impl ReplayArgs {
    fn hierarchy_spec(&self) -> anyhow::Result<HierarchySpec> {
        if self.i1.is_none() && self.d1.is_none() && self.ll.is_none() {
            let spec = self.cache.as_deref().unwrap_or(if self.cachegrind_compat {
                "cachegrind"
            } else {
                "host"
            });
            return HierarchySpec::parse(spec).context("in --cache");
        }
        // Like Cachegrind, levels not given on the command line are the host's.
        let base = HierarchySpec::parse("cachegrind").context("reading the host's caches")?;
        let from_base = |i: usize| {
            let g = base
                .levels()
                .nth(i)
                .expect("the cachegrind preset has three levels")
                .geometry;
            CachegrindLevel {
                size: g.size,
                assoc: g.assoc,
                line: g.line_size,
            }
        };
        let levels = [
            ("I1", self.i1.unwrap_or_else(|| from_base(0))),
            ("D1", self.d1.unwrap_or_else(|| from_base(1))),
            ("LL", self.ll.unwrap_or_else(|| from_base(2))),
        ];
        let text: Vec<String> = levels
            .iter()
            .map(|(name, l)| format!("{name}={},{},{}", l.size, l.assoc, l.line))
            .collect();
        HierarchySpec::parse(&text.join(";")).context("in --I1/--D1/--LL")
    }
}

/// Runs `epcache replay`.
pub(crate) fn run(args: &ReplayArgs) -> anyhow::Result<()> {
    let spec = args.hierarchy_spec()?;
    let mut hierarchy = if args.cachegrind_compat {
        cachegrind_hierarchy(&spec)?
    } else {
        Hierarchy::new(&spec)?
    };
    let mut input = TraceInput::open(&args.trace)?;
    let format = match args.format {
        Some(f) => f,
        None => input
            .sniff_format()
            .with_context(|| format!("reading `{}`", args.trace.display()))?,
    };
    if let (Some(max), Some(g)) = (args.mrc_max, args.mrc) {
        let smallest = g.smallest_cache(args.mrc_sample);
        if max < smallest {
            bail!(
                "--mrc-max {max} is below the smallest cache the curves have ({smallest} bytes{}); raise it or leave it out",
                if args.mrc_sample.is_some() {
                    ": a sampled point needs 4/RATE lines"
                } else {
                    ": one set of the associativity asked"
                }
            );
        }
    }
    if let (Some(_), Some(g)) = (args.mrc_sample, args.mrc)
        && g.ways.is_some()
    {
        bail!(
            "--mrc-sample samples LRU stack distances, which give fully associative curves: use --mrc full,{} with it, or drop --mrc-sample for exact set-associative curves",
            g.line
        );
    }
    if args.mrc.is_some() && format != TraceFormat::Partial {
        bail!(
            "--mrc needs a partial trace (`epcache trace convert --to partial`); `{}` is {}",
            args.trace.display(),
            format.name()
        );
    }
    if let Some(svg) = &args.svg {
        preflight::output("--svg", svg)?;
    }
    let shards = sharding(args.threads, &spec, format)?;
    let started = Instant::now();
    let mut progress = Progress::on_terminal();
    let on_progress = |n| progress.update(n);
    let compat = args.cachegrind_compat;
    let trace_name = args.trace.display();
    let summary = match format {
        TraceFormat::Lackey => {
            let reader = LackeyReader::new(input);
            replay(reader, &mut hierarchy, compat, shards.as_ref(), on_progress)
                .with_context(|| format!("in lackey trace `{trace_name}`"))?
        }
        TraceFormat::Epct => {
            let reader =
                EpctReader::new(input).with_context(|| format!("in epct trace `{trace_name}`"))?;
            replay(reader, &mut hierarchy, compat, shards.as_ref(), on_progress)
                .with_context(|| format!("in epct trace `{trace_name}`"))?
        }
        TraceFormat::Partial => {
            progress.finish();
            let options = PartialOptions {
                level: args.watch_level,
                mrc: args.mrc,
                mrc_max: args.mrc_max,
                mrc_sample: args.mrc_sample,
                svg: args.svg.clone(),
                top: args.top,
            };
            return replay_partial::run(
                input,
                &args.trace,
                &mut hierarchy,
                compat,
                &options,
                args.json,
            );
        }
    };
    let seconds = started.elapsed().as_secs_f64();
    progress.finish();
    if summary.records.total() == 0 {
        bail!(
            "`{trace_name}` holds no trace records: replay reads a lackey log (`valgrind --tool=lackey --trace-mem=yes`), an epct trace (`epcache trace convert`) or a partial trace (`epcache run --trace`), each told by its first bytes"
        );
    }
    print(&summary, args, format, seconds, shards.as_ref())
}

/// Replays `records` on one thread, or in `shards` on as many.
fn replay<E: Send>(
    records: impl IntoIterator<Item = Result<TraceRecord, E>, IntoIter: Send>,
    hierarchy: &mut Hierarchy,
    compat: bool,
    shards: Option<&SetShards>,
    on_progress: impl FnMut(u64),
) -> Result<ReplaySummary, E> {
    match shards {
        Some(shards) => replay_in_shards(records, hierarchy, compat, shards, on_progress),
        None => replay_with_progress(records, hierarchy, compat, on_progress),
    }
}

fn print(
    summary: &ReplaySummary,
    args: &ReplayArgs,
    format: TraceFormat,
    seconds: f64,
    shards: Option<&SetShards>,
) -> anyhow::Result<()> {
    let threads = shards.map_or(1, SetShards::count);
    if args.json {
        let mut value = serde_json::to_value(summary)?;
        value["trace"] = serde_json::json!({
            "path": args.trace.display().to_string(),
            "format": format.name(),
        });
        value["elapsed_seconds"] = serde_json::json!(seconds);
        value["threads"] = serde_json::json!(threads);
        print_stdout(&format!("{}\n", serde_json::to_string_pretty(&value)?))
    } else {
        let mut text = report::table(summary, seconds, summary.records.total());
        if let Some(shards) = shards.filter(|s| s.count() > 1) {
            let block = 1u64 << shards.shift();
            let block = if block >= 1024 {
                format!("{} KiB", block / 1024)
            } else {
                format!("{block}-byte")
            };
            text.push_str(&format!(
                "simulated on {threads} threads, each owning the sets of one {block} block in {threads}\n"
            ));
        }
        print_stdout(&text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cachegrind_triples_parse_and_reject_clearly() {
        assert_eq!(
            "32768,8,64".parse::<CachegrindLevel>().unwrap(),
            CachegrindLevel {
                size: 32768,
                assoc: 8,
                line: 64
            }
        );
        assert!(
            "32768,8"
                .parse::<CachegrindLevel>()
                .unwrap_err()
                .contains("SIZE,ASSOC,LINE")
        );
        assert!(
            "32K,8,64"
                .parse::<CachegrindLevel>()
                .unwrap_err()
                .contains("size `32K`")
        );
    }
}
