//! `epcache demo`: the EP-Cache monitoring scenario end to end on the paper's Gauss example.
//!
//! It builds the C Gauss program with capture, starts an embedded daemon, launches the program
//! waiting for a tool, places histogram requests of L1 read and write hits and misses over the
//! array A in the original and the optimised elimination, steps the program region by region,
//! and shows the histograms side by side in the terminal and as an SVG plot like the paper's
//! Figure 3.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Args;
use epcache_client::{Launch, LocalTarget, Request, RequestResult, StepOutcome, StepTo};

use crate::connection::block_on;
use crate::demo_plot::{self, EVENTS, VersionResults};

/// The Gauss program and the header it includes, as shipped in `examples/c/`.
const GAUSS_SOURCE: &str = include_str!("../../../examples/c/gauss.c");
const MARKERS_HEADER: &str = include_str!("../../../examples/c/markers.h");

/// The two versions of the elimination: function regions of the Gauss program, known from its
/// debug information before it runs (its marker regions appear only when first met).
pub(crate) const VERSIONS: [(&str, &str); 2] = [
    ("elim_original", "original"),
    ("elim_optimised", "optimised"),
];

/// Run the EP-Cache monitoring scenario on the Gauss example and plot its histograms.
#[derive(Debug, Args)]
pub(crate) struct DemoArgs {
    /// Directory for the built program, the results and the plot.
    #[arg(long, value_name = "DIR", default_value = "target/epcache-demo")]
    out: PathBuf,
    /// The simulated cache (the paper's: 8 KB, 2-way, 32-byte lines).
    #[arg(long, value_name = "SPEC", default_value = "D1=8K,2,32;LL=1M,8,64")]
    cache: String,
    /// Portions of A per histogram.
    #[arg(long, default_value_t = 25, value_parser = clap::value_parser!(u32).range(1..=1024))]
    buckets: u32,
    /// The C compiler that builds the example.
    #[arg(long, value_name = "CC", default_value = "gcc")]
    compiler: String,
}

pub(crate) fn run(args: &DemoArgs) -> anyhow::Result<()> {
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating the demo directory {}", args.out.display()))?;
    let out = args
        .out
        .canonicalize()
        .with_context(|| format!("resolving {}", args.out.display()))?;
    let program = build(&out, &args.compiler)?;
    let results = block_on(scenario(args, &program))?;

    println!();
    print!("{}", demo_plot::side_by_side(&results, 36));
    let plot = out.join("gauss_histograms.svg");
    std::fs::write(&plot, demo_plot::figure(&results, &args.cache))
        .with_context(|| format!("writing the plot {}", plot.display()))?;
    let json = out.join("gauss_histograms.json");
    let all: Vec<&RequestResult> = results.iter().flat_map(|v| &v.histograms).collect();
    std::fs::write(&json, serde_json::to_string_pretty(&all)?)
        .with_context(|| format!("writing {}", json.display()))?;
    println!();
    summary(&results);
    println!("\nplot: {}", plot.display());
    println!("data: {}", json.display());
    Ok(())
}

/// Writes the example's sources and builds them with capture (`epcache cc`).
fn build(out: &Path, compiler: &str) -> anyhow::Result<PathBuf> {
    let source = out.join("gauss.c");
    std::fs::write(&source, GAUSS_SOURCE).context("writing gauss.c")?;
    std::fs::write(out.join("markers.h"), MARKERS_HEADER).context("writing markers.h")?;
    let program = out.join("gauss");
    println!("[1/4] building the Gauss example with capture: epcache cc -- {compiler} -O1 gauss.c");
    let line: Vec<String> = [
        compiler,
        "-O1",
        &source.display().to_string(),
        "-o",
        &program.display().to_string(),
    ]
    .into_iter()
    .map(str::to_owned)
    .collect();
    let code = epcache_cc::compile(&line).with_context(|| {
        format!(
            "building the example needs a C compiler (`{compiler}`); install gcc or pass --compiler"
        )
    })?;
    if code != 0 {
        bail!(
            "`epcache cc -- {}` failed with exit code {code}",
            line.join(" ")
        );
    }
    Ok(program)
}

async fn scenario(args: &DemoArgs, program: &Path) -> anyhow::Result<Vec<VersionResults>> {
    let mut target = LocalTarget::launch(Launch::new(program, "epcache-demo").cache(&args.cache))
        .await
        .context("launching the Gauss program under an embedded daemon")?;
    println!(
        "[2/4] embedded daemon listening on {} (runtime directory {})",
        target.endpoint(),
        target.runtime_dir().display()
    );
    let pid = target.pid();
    let client = target.client();
    let description = client.describe(pid).await?;
    let regions = description.regions.clone();
    println!(
        "[3/4] target {pid} waits at start: {} regions, {} data structures, cache {}",
        description.regions.len(),
        description.data_structures.len(),
        args.cache
    );

    let mut placed = Vec::new();
    for (region, _) in VERSIONS {
        let requests: Vec<Request> = EVENTS
            .iter()
            .map(|(event, _)| Request::histogram(region, "A", *event, args.buckets))
            .collect();
        let infos = client
            .requests(pid, &requests)
            .await
            .with_context(|| format!("placing the histograms of region {region}"))?;
        println!(
            "      {} histograms of A in {region} ({} buckets of {} bytes)",
            infos.len(),
            infos[0].buckets,
            infos[0].bucket_bytes
        );
        placed.push(infos.into_iter().map(|i| i.id).collect::<Vec<_>>());
    }

    println!("[4/4] stepping region by region");
    let mut results = Vec::new();
    let mut boundaries = 0;
    let deadline = Instant::now() + Duration::from_secs(120);
    for ((region, label), ids) in VERSIONS.iter().zip(&placed) {
        // Step boundary by boundary until this version's region ends, as a tool stepping
        // through the program would.
        loop {
            if Instant::now() > deadline {
                bail!("the target did not reach the end of {region} within two minutes");
            }
            match client.step(pid, StepTo::NextBoundary).await? {
                StepOutcome::Halted(halt) => {
                    boundaries += 1;
                    let Some(position) = halt.position else {
                        continue;
                    };
                    let place = regions
                        .iter()
                        .find(|r| r.index == position.region_index)
                        .map_or_else(String::new, |r| format!(" ({}:{})", short(&r.file), r.line));
                    println!("      halted at the {position}{place}");
                    if position.region == *region
                        && position.boundary == epcache_client::Boundary::Exit
                    {
                        break;
                    }
                }
                StepOutcome::Exited(exit) => {
                    bail!("the target ended before {region} did: {}", exit.reason)
                }
            }
        }
        let histograms = client.results(pid, ids).await?;
        if let Some(missing) = histograms.iter().find(|r| !r.available) {
            bail!(
                "no result for {} of A in {region} at its end",
                missing.request.event
            );
        }
        results.push(VersionResults { label, histograms });
    }
    let status = target.finish().await?;
    println!("      released; the program ran to its end after {boundaries} halts ({status})");
    if !status.success() {
        bail!("the Gauss program failed ({status}): its answer was wrong");
    }
    Ok(results)
}

fn short(file: &str) -> &str {
    file.rsplit('/').next().unwrap_or(file)
}

/// Totals per event and version, and the paper's finding in one line.
fn summary(results: &[VersionResults]) {
    println!(
        "{:<18}{:>14}{:>14}",
        "A, whole array", "original", "optimised"
    );
    for (i, (_, title)) in EVENTS.iter().enumerate() {
        let total = |v: &VersionResults| v.histograms.get(i).map_or(0, |r| r.total);
        println!(
            "{:<18}{:>14}{:>14}",
            title,
            total(&results[0]),
            results.get(1).map_or(0, total)
        );
    }
    if let [original, optimised] = results {
        let misses = |v: &VersionResults| v.histograms[1].total.max(1) as f64;
        println!(
            "read misses of A fall {:.1}x with the optimised loop order (the EP-Cache paper's finding)",
            misses(original) / misses(optimised)
        );
    }
}
