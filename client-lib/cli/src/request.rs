//! `epcache request`: place a monitoring request on a target.

use anyhow::{Context, bail};
use clap::{Args, ValueEnum};
use epcache_client::{
    Aggregation, Analysis, Binding, DataRef, Mode, RegionRef, Request, RequestInfo, SiteBlock,
};

use crate::connection::{DaemonArgs, block_on, json, table};
use crate::inlined_regions;
use crate::output::print_stdout;

/// `--analysis` of `epcache request` and `epcache run`: the seed papers' analyses.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum AnalysisArg {
    /// Temporal reuse and spatial use of lines (per field with --by-field).
    Reuse,
    /// Which data structure's fills evicted which one's lines.
    Evictors,
    /// Compulsory, capacity and conflict misses.
    MissClasses,
    /// Reuse-distance histograms and what they predict for other cache sizes.
    ReuseDistance,
}

impl From<AnalysisArg> for Analysis {
    fn from(a: AnalysisArg) -> Self {
        match a {
            AnalysisArg::Reuse => Analysis::Reuse,
            AnalysisArg::Evictors => Analysis::Evictors,
            AnalysisArg::MissClasses => Analysis::MissClasses,
            AnalysisArg::ReuseDistance => Analysis::ReuseDistance,
        }
    }
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

/// Place a request: count an event over a data structure (or address range) during a region,
/// as one static count or as a histogram. The target picks it up at the region's next entry.
#[derive(Debug, Args)]
pub(crate) struct RequestArgs {
    /// The target's pid.
    pid: u32,
    /// The region by name.
    #[arg(long, required_unless_present = "region_key")]
    region: Option<String>,
    /// The region by key FILE_ID:LINE (see `epcache describe`), when names are ambiguous.
    #[arg(long, value_name = "FILE_ID:LINE", conflicts_with = "region")]
    region_key: Option<String>,
    /// The data structure by name; FILE:LINE names the heap blocks allocated at that line, even
    /// before the program allocated one.
    #[arg(long, required_unless_present = "range")]
    array: Option<String>,
    /// An address range START:END (hex with 0x, or decimal) instead of a data structure.
    #[arg(long, value_name = "START:END", conflicts_with = "array")]
    range: Option<String>,
    /// The event, e.g. PAPI_L1_LDM (see `epcache describe`).
    #[arg(long)]
    event: String,
    /// A histogram of this many equal buckets (whole L1 lines each; a short range gets fewer),
    /// at most 1024 (one result block); 0 asks for a static count, as no --buckets does.
    #[arg(long, conflicts_with = "bucket_lines")]
    buckets: Option<u32>,
    /// A histogram with buckets this many L1 lines wide.
    #[arg(long)]
    bucket_lines: Option<u32>,
    /// Count per member of the array of structures (read from the target's debug info through
    /// /proc/PID/exe): one bucket per field summed over all elements, then the padding.
    #[arg(long, conflicts_with_all = ["buckets", "bucket_lines"])]
    by_field: bool,
    /// With --by-field: the element type, a structure type's name as declared (`particle` for
    /// `struct particle`, a typedef's name, a C++ class, a Fortran derived type); needed for an
    /// address range, and for a heap block (`--array FILE:LINE`) no variable of a structure
    /// type holds (one allocated or declared on that line gives it otherwise).
    #[arg(long, value_name = "TYPE", requires = "by_field")]
    element_type: Option<String>,
    /// How region instances combine: summed, per-instance (the latest instance's counts), or
    /// per-thread (one result per thread, with its thread id).
    #[arg(long, default_value_t = Aggregation::Summed, value_parser = aggregation)]
    aggregation: Aggregation,
    /// Seed-paper analyses to run (repeatable, or comma-separated).
    #[arg(long, value_enum, value_delimiter = ',')]
    analysis: Vec<AnalysisArg>,
    /// Which block a request on an allocation site (`--array FILE:LINE`, before or after the
    /// program allocated there) binds to at each entry of the region: the one allocated last
    /// (`latest`) or the largest live one.
    #[arg(long, value_enum, default_value = "latest", value_name = "WHICH")]
    site_block: SiteBlockArg,
    #[command(flatten)]
    daemon: DaemonArgs,
    /// Print JSON (a failure too, as {"error": ...} on stdout).
    #[arg(long)]
    pub(crate) json: bool,
}

/// Parses `--aggregation` (of `epcache request` and `epcache run`) with the names
/// [`Aggregation::name`] gives, which tables and JSON show.
pub(crate) fn aggregation(text: &str) -> Result<Aggregation, String> {
    text.parse()
        .map_err(|e: epcache_client::UnknownAggregation| e.to_string())
}

fn number(text: &str) -> anyhow::Result<u64> {
    let t = text.trim();
    match t.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => t.parse(),
    }
    .with_context(|| format!("`{text}` is not a number (use decimal or 0x hex)"))
}

fn pair(text: &str, what: &str) -> anyhow::Result<(u64, u64)> {
    let Some((a, b)) = text.split_once(':') else {
        bail!("`{text}` is not {what}");
    };
    Ok((number(a)?, number(b)?))
}

/// The region of `--region NAME` or `--region-key FILE_ID:LINE`.
pub(crate) fn region_ref(name: Option<&String>, key: Option<&String>) -> anyhow::Result<RegionRef> {
    Ok(match (name, key) {
        (Some(name), _) => RegionRef::Name(crate::demangle::region_name(name)),
        (None, Some(key)) => {
            let (file_id, line) = pair(key, "FILE_ID:LINE")?;
            RegionRef::Key {
                file_id: u32::try_from(file_id)
                    .with_context(|| format!("the file id of `{key}` is too large"))?,
                line: u32::try_from(line)
                    .with_context(|| format!("the line of `{key}` is too large"))?,
            }
        }
        (None, None) => bail!("give --region NAME or --region-key FILE_ID:LINE"),
    })
}

impl RequestArgs {
    fn request(&self) -> anyhow::Result<Request> {
        let region = region_ref(self.region.as_ref(), self.region_key.as_ref())?;
        let data = match (&self.array, &self.range) {
            (Some(name), _) => DataRef::Name(name.clone()),
            (None, Some(r)) => {
                let (start, end) = pair(r, "START:END")?;
                DataRef::Range(start..end)
            }
            (None, None) => bail!("give --array NAME or --range START:END"),
        };
        // 0 buckets asks for a static count, as in `epcache run`.
        let mut request = match (self.buckets.filter(|&n| n > 0), self.bucket_lines) {
            (Some(n), _) => Request::histogram(region, data, &self.event, n),
            (None, Some(lines)) => Request::count(region, data, &self.event).bucket_lines(lines),
            (None, None) => Request::count(region, data, &self.event),
        }
        .aggregation(self.aggregation)
        .site_block(self.site_block.into());
        for &a in &self.analysis {
            request = request.analysis(a.into());
        }
        if self.by_field {
            let exe = std::path::PathBuf::from(format!("/proc/{}/exe", self.pid));
            request = crate::by_field::request(&exe, request, self.element_type.as_deref())?;
        }
        Ok(request)
    }
}

/// The requests as a table.
pub(crate) fn requests_table(requests: &[RequestInfo]) -> String {
    let rows: Vec<Vec<String>> = requests
        .iter()
        .map(|r| {
            vec![
                r.id.to_string(),
                r.region.name.clone(),
                r.data_name(),
                r.event.clone(),
                match (r.buckets, r.binding) {
                    (0, _) => "static".into(),
                    (_, _) if !r.fields.is_empty() => {
                        format!("by field ({} members)", r.fields.len())
                    }
                    (n, Binding::Waiting) => format!("{n} buckets (unbound)"),
                    (n, _) => format!("{n} x {} B", r.bucket_bytes),
                },
                r.aggregation.name().to_owned(),
                if r.adopted {
                    format!("{} (no longer counts)", r.owner)
                } else {
                    r.owner.clone()
                },
            ]
        })
        .collect();
    table(
        &[
            ">ID",
            "REGION",
            "DATA",
            "EVENT",
            "MODE",
            "AGGREGATION",
            "TOOL",
        ],
        &rows,
    )
}

/// What to tell the user when a histogram got fewer buckets than `asked` wanted: buckets are
/// whole L1 lines, so a short range holds fewer.
pub(crate) fn fewer_buckets_note(asked: &Request, placed: &RequestInfo) -> Option<String> {
    let Mode::Buckets(wanted) = asked.mode else {
        return None;
    };
    (placed.buckets < wanted).then(|| {
        fewer_buckets_text(
            placed,
            placed.buckets,
            placed.bucket_bytes,
            placed.range.end - placed.range.start,
            wanted,
        )
    })
}

/// The note on request `placed` getting `given` buckets of `width` bytes over `bytes`, where
/// `wanted` were asked.
pub(crate) fn fewer_buckets_text(
    placed: &RequestInfo,
    given: u32,
    width: u64,
    bytes: u64,
    wanted: u32,
) -> String {
    format!(
        "request {} over {}: {given} bucket(s) of {width} bytes, not the {wanted} asked: a bucket is a whole number of L1 lines, so its {bytes} bytes in {wanted} buckets round up to that width",
        placed.id,
        placed.data_name(),
    )
}

pub(crate) fn run(args: &RequestArgs) -> anyhow::Result<()> {
    let request = args.request()?;
    if let Some(n) = args.buckets {
        crate::preflight::buckets(&[n], "nothing was placed")?;
    }
    // As `epcache run` does: an allocation line without code is said, from the program's own
    // debug information.
    let exe = format!("/proc/{}/exe", args.pid);
    crate::preflight::allocation_lines(exe.as_ref(), std::slice::from_ref(&request));
    crate::preflight::container_globals(exe.as_ref(), std::slice::from_ref(&request));
    crate::preflight::inlined_request_regions(exe.as_ref(), std::slice::from_ref(&request));
    let placed = block_on(async {
        Ok(args
            .daemon
            .connect()
            .await?
            .request(args.pid, request.clone())
            .await?)
    })
    .map_err(|e| {
        // A function inlined everywhere has no region, a procedure's array no name of its own:
        // say so, with what to ask for instead.
        let exe = std::path::PathBuf::from(format!("/proc/{}/exe", args.pid));
        let inlined = args
            .region
            .as_deref()
            .and_then(|r| inlined_regions::note(&exe, r));
        let refusal = format!("{e:#}");
        let allocated = args
            .array
            .as_deref()
            .and_then(|a| crate::allocated_arrays::note(&exe, a, &refusal));
        [inlined, allocated]
            .into_iter()
            .flatten()
            .fold(e, |e, note| e.context(note))
    })?;
    if let Some(note) = fewer_buckets_note(&request, &placed) {
        eprintln!("epcache: {note}");
    }
    if args.json {
        return print_stdout(&json(&placed)?);
    }
    print_stdout(&requests_table(std::slice::from_ref(&placed)))
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        args: RequestArgs,
    }

    fn parse(extra: &[&str]) -> RequestArgs {
        let base = [
            "request",
            "1",
            "--region",
            "r",
            "--array",
            "a",
            "--event",
            "PAPI_L1_LDM",
        ];
        Cli::parse_from(base.iter().chain(extra)).args
    }

    #[test]
    fn zero_buckets_ask_for_a_static_count_as_in_run() {
        assert_eq!(
            parse(&["--buckets", "0"]).request().unwrap().mode,
            Mode::Static
        );
        assert_eq!(parse(&[]).request().unwrap().mode, Mode::Static);
        assert_eq!(
            parse(&["--buckets", "8"]).request().unwrap().mode,
            Mode::Buckets(8)
        );
    }

    #[test]
    fn aggregations_are_spelled_as_their_flags() {
        for aggregation in Aggregation::ALL {
            let request = parse(&["--aggregation", aggregation.name()])
                .request()
                .unwrap();
            assert_eq!(request.aggregation, aggregation);
        }
    }
}
