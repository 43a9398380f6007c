//! The EP-Cache paper's incremental online analysis: survey every data structure in every
//! region, then locate the worst one's misses inside it, stepping the program region by region:
//! `online [--event E] [--cache SPEC] [--survey N] [--buckets N] -- PROGRAM [ARGS]`.

use anyhow::{Context, bail};
use epcache_client::Launch;
use epcache_examples::online::{self, OnlineOptions};

const USAGE: &str =
    "usage: online [--event EVENT] [--cache SPEC] [--survey N] [--buckets N] -- PROGRAM [ARGS]

  PROGRAM       built with `epcache cc`; it runs under a daemon embedded in this tool. The
                survey covers every function region but main and every marker region met,
                and every data structure as it appears: a heap array of 4096 bytes or more
                joins at the first halt after its allocation, named by its allocation line
  --event       what to rank and locate (default PAPI_L1_DCM, L1 data misses)
  --cache       the simulated cache, e.g. D1=32K,8,64;L2=1M,16,64 (default: the program's)
  --survey      the survey of static counts ends once a region has run N times (default 2)
  --buckets     buckets of each histogram (default 25)";

fn number(value: Option<String>, what: &str) -> anyhow::Result<u64> {
    let value = value.with_context(|| format!("{what} needs a number"))?;
    value
        .parse()
        .ok()
        .filter(|n| *n > 0)
        .with_context(|| format!("{what} {value}: give a whole number above 0"))
}

fn main() -> std::process::ExitCode {
    epcache_examples::run_tool("online", tool)
}

fn tool() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let mut event = "PAPI_L1_DCM".to_owned();
    let (mut cache, mut survey, mut buckets) = (None, 2, 25);
    let mut command = Vec::new();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--event" => event = args.next().context("--event needs a name")?,
            "--cache" => cache = Some(args.next().context("--cache needs a spec")?),
            "--survey" => survey = number(args.next(), "--survey")?,
            "--buckets" => {
                buckets = u32::try_from(number(args.next(), "--buckets")?)
                    .context("--buckets: at most 4294967295")?;
            }
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(());
            }
            "--" => command.extend(args.by_ref()),
            _ => bail!("unexpected argument {arg}\n{USAGE}"),
        }
    }
    let Some((program, program_args)) = command.split_first() else {
        bail!("no program given (-- PROGRAM [ARGS])\n{USAGE}");
    };
    let mut launch = Launch::new(program, "online").args(program_args.iter().cloned());
    launch.cache = cache;
    let options = OnlineOptions {
        launch,
        event,
        survey_instances: survey,
        buckets,
    };
    let finding = epcache_examples::block_on(online::analyse(&options, |m| eprintln!("{m}")))
        .context("starting the async runtime")?
        .with_context(|| format!("analysing {program}"))?;
    print!("{}", online::render(&finding));
    Ok(())
}
