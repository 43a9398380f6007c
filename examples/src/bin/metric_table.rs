//! Prints METRIC's per-data-structure table (and evictor table, when the analyses ran) for each
//! region of an epcache standalone report: `metric_table REPORT.json [--region NAME]... [--level N]`.

use anyhow::{Context, bail};
use epcache_examples::metric_table;

const USAGE: &str = "usage: metric_table REPORT.json [--region NAME]... [--level N]
  REPORT.json   what a program built with `epcache cc` wrote with EPCACHE_REPORT=REPORT.json
  --region      only this region (repeatable; default: every region)
  --level       data level, 1 = L1 (default 1)";

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let mut path = None;
    let mut regions = Vec::new();
    let mut level = 1usize;
    while let Some(arg) = args.next() {
        match arg.as_str() {
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
            _ if path.is_none() && !arg.starts_with('-') => path = Some(arg),
            _ => bail!("unexpected argument {arg}\n{USAGE}"),
        }
    }
    let Some(path) = path else {
        bail!("no report given\n{USAGE}");
    };
    let text = std::fs::read_to_string(&path).with_context(|| format!("reading {path}"))?;
    let report: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{path} is not JSON"))?;
    if let Some(cache) = report["cache"].as_str() {
        println!("cache {cache}\n");
    }
    let tables = metric_table::tables(&report, &regions, level)
        .with_context(|| format!("reading the regions of {path}"))?;
    print!("{}", metric_table::render(&tables, level));
    Ok(())
}
