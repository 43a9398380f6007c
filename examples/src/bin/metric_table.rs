//! Prints METRIC's per-data-structure table (hits, misses, miss ratio, temporal reuse, spatial
//! use) and evictor table per region: measured live as a tool (`metric_table -- PROGRAM ARGS`),
//! or read from an epcache standalone report (`metric_table --report REPORT.json`).

use anyhow::{Context, bail};
use epcache_client::Launch;
use epcache_examples::metric_table;
use epcache_examples::metric_tool::{self, MetricOptions};

const USAGE: &str =
    "usage: metric_table [--cache SPEC] [--region NAME]... [--level N] -- PROGRAM [ARGS]
       metric_table --report REPORT.json [--region NAME]... [--level N]

  PROGRAM       built with `epcache cc`; it runs under a daemon embedded in this tool, which
                counts reads, writes and their misses per data structure in each region and
                runs the reuse and evictor analyses (L1). The tool halts it at each region
                entry (the first 2000) to learn the data structures as they appear: a heap
                array of 4096 bytes or more is named by its allocation line (prog.c:12) and
                measured from the first region entered after its allocation
  --report      print the tables of what a program wrote with EPCACHE_REPORT=REPORT.json
                instead (no analyses: those columns print -)
  --cache       the simulated cache, e.g. r12000 or D1=32K,2,32 (default: the program's)
  --region      only this region, a function or a marker (repeatable; default: every
                function region but main, and every marker region met)
  --level       data level of the counts, 1 = L1 (default 1)";

fn main() -> std::process::ExitCode {
    epcache_examples::run_tool("metric_table", tool)
}

fn tool() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let mut report = None;
    let mut cache = None;
    let mut regions = Vec::new();
    let mut level = 1usize;
    let mut command = Vec::new();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--report" => report = Some(args.next().context("--report needs a file")?),
            "--cache" => cache = Some(args.next().context("--cache needs a spec")?),
            "--region" => regions.push(args.next().context("--region needs a name")?),
            "--level" => {
                let value = args.next().context("--level needs a number")?;
                level =
                    value.parse().ok().filter(|l| *l >= 1).with_context(|| {
                        format!("--level {value}: give 1 for L1, 2 for L2, ...")
                    })?;
            }
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(());
            }
            "--" => command.extend(args.by_ref()),
            _ => bail!("unexpected argument {arg}\n{USAGE}"),
        }
    }
    let tables = match (report, command.split_first()) {
        (Some(path), None) => from_report(&path, &regions, level)?,
        (None, Some((program, program_args))) => {
            let mut launch =
                Launch::new(program, "metric_table").args(program_args.iter().cloned());
            launch.cache = cache;
            let options = MetricOptions {
                launch,
                regions,
                level,
            };
            epcache_examples::block_on(metric_tool::measure(&options, |m| eprintln!("{m}")))
                .context("starting the async runtime")?
                .with_context(|| format!("measuring {program}"))?
        }
        (Some(_), Some(_)) => bail!("give either --report or a program, not both\n{USAGE}"),
        (None, None) => bail!("nothing to measure: give -- PROGRAM or --report FILE\n{USAGE}"),
    };
    print!("{}", metric_table::render(&tables, level));
    Ok(())
}

fn from_report(
    path: &str,
    regions: &[String],
    level: usize,
) -> anyhow::Result<Vec<metric_table::RegionTable>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {path}"))?;
    let report: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{path} is not JSON"))?;
    if let Some(cache) = report["cache"].as_str() {
        println!("cache {cache}\n");
    }
    metric_table::tables(&report, regions, level)
        .with_context(|| format!("reading the regions of {path}"))
}
