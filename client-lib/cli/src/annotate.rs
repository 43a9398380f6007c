//! `epcache annotate`: the lines of a standalone report (misses per source line, with inlined
//! calls) as a table with their source text, or converted to Callgrind's format or CSV
//! (`line_report.rs` writes them).

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;

use crate::line_report::{self, LineFormat, LineReport, Selection};
use crate::output::print_stdout;

/// Show where in the code a run missed: the lines of a standalone report (EPCACHE_REPORT=FILE,
/// or `epcache run --all-regions --json`) with the most misses, each with its source text, the
/// function it is in and where that was inlined (`f < g file:line` reads "f, inlined into g at
/// file:line"), like cg_annotate.
///
/// Only misses are counted per line (each level's read and write misses, named as Cachegrind
/// names them: D1mr, D1mw, L2mr, ...), and on a machine of cores (EPCACHE_CORES) the coherence
/// events (EPC_L1_FSM, ...; as columns of every format, and as --event): most hits are
/// counted without their code address.
/// A line's misses within a region count the accesses made while the region was open,
/// nested regions included; `program` (the default) is the whole run.
///
/// --format callgrind writes Callgrind's format for callgrind_annotate and KCachegrind (costs
/// on the compiled function, inlined lines at their own file and line); one data structure's
/// misses with --data-structure, else all summed. --format csv writes every region's lines
/// (one row per region, line and data structure) for spreadsheets and pandas. --format
/// functions sums the lines per function, each line counted for the function whose source it
/// is: a kernel the compiler inlined into `main` (which has no region) gets its own row.
#[derive(Debug, Args)]
pub(crate) struct AnnotateArgs {
    /// The report (JSON) to read.
    #[arg(value_name = "REPORT")]
    report: PathBuf,
    /// How many lines (text) or functions (functions) to show, at least 1.
    #[arg(long, value_name = "N", default_value_t = 20, value_parser = at_least_one)]
    top: usize,
    /// The event the lines or functions are ordered by: PAPI_L1_LDM, PAPI_L1_STM, PAPI_L1_DCM (the
    /// default), ... or Cachegrind's names (D1mr, D1mw, L2mr, ...), or a coherence event.
    #[arg(long, value_name = "EVENT")]
    event: Option<String>,
    /// The region whose lines to show [default: program, the whole run].
    #[arg(long, value_name = "NAME")]
    region: Option<String>,
    /// Only the misses on this data structure.
    #[arg(long, value_name = "NAME")]
    data_structure: Option<String>,
    /// What to write.
    #[arg(long, value_enum, default_value_t = LineFormat::Text, value_name = "FORMAT")]
    format: LineFormat,
    /// Write to FILE instead of stdout (`callgrind.out.PID` for KCachegrind to find it).
    #[arg(long, short = 'o', value_name = "FILE")]
    output: Option<PathBuf>,
}

/// Says, as cg_annotate does, which source files changed after the report was written: the
/// text shown beside a line number may then not be the code that was measured there.
fn warn_of_newer_sources(report: &LineReport, path: &Path) {
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    let Some(written) = modified(path) else {
        return;
    };
    for file in report.source_files() {
        if modified(Path::new(file)).is_some_and(|m| m > written) {
            eprintln!(
                "epcache: warning: the source file {file} is more recent than the report {}: the lines shown may not be the code that was measured",
                path.display()
            );
        }
    }
}

pub(crate) fn annotate(args: &AnnotateArgs) -> anyhow::Result<()> {
    if let Some(output) = &args.output {
        let report = ("the report", args.report.as_path());
        crate::preflight::not_the_same_file("--output", output, report, "nothing was written")?;
    }
    let shown = args.report.display().to_string();
    let text = std::fs::read_to_string(&args.report)
        .with_context(|| format!("reading the report {shown}"))?;
    let report = LineReport::parse(&text, &shown)?;
    if args.format == LineFormat::Text {
        warn_of_newer_sources(&report, &args.report);
    }
    let selection = Selection {
        region: args.region.clone(),
        data_structure: args.data_structure.clone(),
    };
    let out = line_report::render(
        &report,
        args.format,
        &selection,
        args.event.as_deref(),
        args.top,
        &shown,
    )?;
    match &args.output {
        Some(path) => {
            std::fs::write(path, out).with_context(|| format!("writing {}", path.display()))
        }
        None => print_stdout(&out),
    }
}
/// A count of at least one (`--top 0` would show the headers alone).
fn at_least_one(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(0) => Err("show at least 1".to_owned()),
        Ok(n) => Ok(n),
        Err(e) => Err(e.to_string()),
    }
}
