//! `epcache trace`: converting lackey logs to the compact `.epct` format or to partial data
//! traces, optionally keeping only the accesses of some functions or code ranges; and `trace
//! record` (`trace_record.rs`), which asks a running target for a partial trace.

use std::collections::HashSet;
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, bail};
use clap::{Args, Subcommand, ValueEnum};
use epcache_sim::trace::partial::{PartialAccess, PartialWriter};
use epcache_sim::trace::{EpctWriter, LackeyReader, TraceKind};

use crate::numbers::{grouped, millions_per_second};
use crate::output::print_stdout;
use crate::progress::Progress;
use crate::trace_input::TraceInput;
use crate::trace_sites::{CodeRange, Program, SiteFilter};

#[derive(Debug, Subcommand)]
pub(crate) enum TraceCommand {
    /// Convert a trace to epcache's compact binary format (.epct) for fast re-runs, or to a
    /// partial data trace (--to partial) for per-site tables and miss-ratio curves.
    Convert(ConvertArgs),
    /// Ask a target waiting at its start to record a partial data trace of a region through the
    /// daemon, and wait until it is written.
    ///
    /// The target must be waiting at its start (run it with EPCACHE_WAIT=yes): recording starts
    /// at its first access, so that `epcache replay` of the trace under the target's cache gives
    /// the region's live counts exactly. A target that already runs is refused, as is a second
    /// trace while one is asked for or recorded. The target itself writes the file: an absolute
    /// path (a relative one is taken from here) in an existing directory reached through no
    /// symbolic link, never an existing file unless --overwrite. This command releases the
    /// target, waits until the trace is written and says what it holds; it fails when nothing
    /// was written (the reason is the target's).
    Record(crate::trace_record::RecordArgs),
}

impl TraceCommand {
    /// Whether the subcommand was asked for JSON.
    pub(crate) fn json(&self) -> bool {
        match self {
            TraceCommand::Convert(_) => false,
            TraceCommand::Record(a) => a.json,
        }
    }
}

/// Formats `trace convert` reads.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum SourceFormat {
    /// Valgrind `--tool=lackey --trace-mem=yes` output.
    Lackey,
}

/// Formats `trace convert` writes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum)]
pub(crate) enum TargetFormat {
    /// Every record (instructions too unless a site filter is given), compact.
    #[default]
    Epct,
    /// The data accesses with their code addresses, compressed per access site into regular
    /// section descriptors (`epcache replay` reports them per site and per data structure).
    Partial,
}

/// Convert a lackey log. The code address of a data access is that of the instruction record
/// before it. With --function or --code-range only the data accesses of those sites are kept
/// (and no instruction records), in both formats, so the two hold the same accesses.
#[derive(Debug, Args)]
pub(crate) struct ConvertArgs {
    /// Format of INPUT.
    #[arg(long, value_enum)]
    from: SourceFormat,
    /// Format of OUTPUT.
    #[arg(long, value_enum, default_value_t)]
    to: TargetFormat,
    /// Keep only the data accesses made by the code of this function (needs --binary; repeat
    /// for several).
    #[arg(long, value_name = "NAME")]
    function: Vec<String>,
    /// Keep only the data accesses made by code in START-END (hexadecimal run-time addresses;
    /// repeat for several).
    #[arg(long, value_name = "START-END")]
    code_range: Vec<CodeRange>,
    /// The program the trace was taken of, built with -g: resolves --function, and gives a
    /// partial trace its site table (file, line, function) and its global arrays as data
    /// structures.
    #[arg(long, value_name = "PROGRAM")]
    binary: Option<PathBuf>,
    /// Where Valgrind loaded --binary, in hexadecimal (default: 0 for a fixed-address
    /// executable, 108000 for a position-independent one).
    #[arg(long, value_name = "HEX", value_parser = parse_hex)]
    load_bias: Option<u64>,
    /// The trace to convert, or `-` for standard input.
    input: PathBuf,
    /// The file to write (replaced if it exists).
    output: PathBuf,
}

fn parse_hex(s: &str) -> Result<u64, String> {
    u64::from_str_radix(s.trim_start_matches("0x"), 16)
        .map_err(|_| format!("`{s}` is not a hexadecimal address"))
}

/// Runs an `epcache trace` subcommand.
pub(crate) fn run(command: &TraceCommand) -> anyhow::Result<()> {
    match command {
        TraceCommand::Convert(args) => convert(args),
        TraceCommand::Record(args) => crate::trace_record::run(args),
    }
}

enum Output {
    Epct(EpctWriter<File>),
    Partial(Box<PartialWriter<BufWriter<File>>>),
}

/// A file beside `output` that becomes it only once the conversion succeeded: a failure leaves
/// an existing `output` as it was, and no half-written file in its place.
fn staged_output(output: &Path) -> anyhow::Result<tempfile::NamedTempFile> {
    let dir = match output.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = output
        .file_name()
        .map_or_else(|| "output".into(), |n| n.to_string_lossy().into_owned());
    tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".partial")
        .tempfile_in(dir)
        .with_context(|| format!("cannot create `{}`", output.display()))
}

fn convert(args: &ConvertArgs) -> anyhow::Result<()> {
    let SourceFormat::Lackey = args.from;
    let started = Instant::now();
    let program = args
        .binary
        .as_ref()
        .map(|b| Program::load(b, args.load_bias))
        .transpose()?;
    let filter = SiteFilter::new(
        &args.function,
        &args.code_range,
        program.as_ref().zip(args.binary.as_ref()),
    )?;
    // The conversion would replace the log it reads.
    crate::preflight::not_the_same_file(
        "the output",
        &args.output,
        ("the input", &args.input),
        "the input is left as it is",
    )?;
    let input = TraceInput::open(&args.input)?;
    let staged = staged_output(&args.output)?;
    let file = staged
        .as_file()
        .try_clone()
        .with_context(|| format!("cannot create `{}`", args.output.display()))?;
    let writing = || format!("writing `{}`", args.output.display());
    let mut output = match args.to {
        TargetFormat::Epct => Output::Epct(EpctWriter::new(file).with_context(writing)?),
        TargetFormat::Partial => Output::Partial(Box::new(
            PartialWriter::new(BufWriter::with_capacity(1 << 16, file)).with_context(writing)?,
        )),
    };
    let keep_instructions = args.to == TargetFormat::Epct && filter.is_everything();
    let mut reader = LackeyReader::new(input);
    let mut progress = Progress::on_terminal();
    let (mut site, mut read, mut written) = (0u64, 0u64, 0u64);
    let mut sites = HashSet::new();
    let mut last_site = None;
    while let Some(record) = reader
        .next_record()
        .with_context(|| format!("in lackey trace `{}`", args.input.display()))?
    {
        read += 1;
        if read % (1 << 20) == 0 {
            progress.update(read);
        }
        if record.kind == TraceKind::Instr {
            site = record.addr;
            if !keep_instructions {
                continue;
            }
        } else if !filter.keeps(site) {
            continue;
        }
        written += 1;
        match &mut output {
            Output::Epct(w) => w.write(&record).with_context(writing)?,
            Output::Partial(w) => {
                if last_site != Some(site) {
                    sites.insert(site);
                    last_site = Some(site);
                }
                w.record(&PartialAccess {
                    site,
                    kind: record.kind,
                    addr: record.addr,
                    size: record.size,
                })
                .with_context(writing)?;
            }
        }
    }
    progress.finish();
    let format = match output {
        Output::Epct(w) => {
            w.finish().with_context(writing)?;
            "epct"
        }
        Output::Partial(mut w) => {
            if !filter.is_everything() {
                // Every replay repeats it: the caches see nothing of the rest of the program.
                w.note(
                    "converted from a lackey log keeping only the accesses of the code asked for \
                     (--function, --code-range): the other code's accesses, which warmed the \
                     caches in the run, are not in it, so a replay's caches start cold",
                )
                .with_context(writing)?;
            }
            if let Some(program) = &program {
                for &site in &sites {
                    if let Some(info) = program.site_info(site) {
                        w.set_site(site, info);
                    }
                }
                for range in program.structures() {
                    w.add_range(range);
                }
            }
            w.finish().with_context(writing)?;
            "partial trace"
        }
    };
    if read == 0 {
        // An empty trace replays to nothing, which replay refuses: the staged file goes.
        bail!(
            "`{}` holds no lackey records ({} bytes read): give the log of `valgrind --tool=lackey --trace-mem=yes`; nothing was written",
            args.input.display(),
            reader.bytes_read()
        );
    }
    if written == 0 && !filter.is_everything() {
        bail!(
            "none of the {} records of `{}` was made by the code asked for (--function, --code-range): check that --binary is the program the log is of, and its --load-bias (a position-independent program's, from the log's first instruction addresses); nothing was written",
            grouped(read),
            args.input.display()
        );
    }
    staged
        .persist(&args.output)
        .map_err(|e| e.error)
        .with_context(writing)?;
    let bytes_out = std::fs::metadata(&args.output).with_context(writing)?.len();
    let bytes_in = reader.bytes_read();
    let seconds = started.elapsed().as_secs_f64();
    print_stdout(&format!(
        "converted {} records{} ({} other lines skipped): {} bytes of lackey text -> {} bytes of {format}, {:.1}x smaller, {:.2} records per byte, in {seconds:.2} s ({:.1} M records/s)\n",
        grouped(written),
        if written == read {
            String::new()
        } else {
            format!(" of {}", grouped(read))
        },
        grouped(reader.skipped_lines()),
        grouped(bytes_in),
        grouped(bytes_out),
        bytes_in as f64 / bytes_out.max(1) as f64,
        written as f64 / bytes_out.max(1) as f64,
        millions_per_second(read, seconds),
    ))
}
