//! DTrack's timeline: an event (L1 misses by default) per data structure per instance of an
//! interval region, as a table and an SVG plot:
//! `timeline --interval REGION [--event E] [--cache SPEC] [--svg FILE] -- PROGRAM [ARGS]`.

use anyhow::{Context, bail};
use epcache_client::Launch;
use epcache_examples::timeline::{self, TimelineOptions};

const USAGE: &str = "usage: timeline --interval REGION [--event EVENT] [--cache SPEC] [--svg FILE] -- PROGRAM [ARGS]

  PROGRAM       built with `epcache cc`; it runs under a daemon embedded in this tool, which
                halts it at every entry and exit of REGION and reads the counts of each interval
  --interval    the region whose instances are the intervals: a function or a marker label
  --event       what to count (default PAPI_L1_DCM, L1 data misses)
  --cache       the simulated cache, e.g. D1=64K,2,64;L2=512K,1,64 (default: the program's)
  --svg         also write the timeline as an SVG line plot to FILE";

fn main() -> std::process::ExitCode {
    epcache_examples::run_tool("timeline", tool)
}

fn tool() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let (mut interval, mut event, mut cache, mut svg) =
        (None, "PAPI_L1_DCM".to_owned(), None, None);
    let mut command = Vec::new();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--interval" => interval = Some(args.next().context("--interval needs a region")?),
            "--event" => event = args.next().context("--event needs a name")?,
            "--cache" => cache = Some(args.next().context("--cache needs a spec")?),
            "--svg" => svg = Some(args.next().context("--svg needs a file")?),
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(());
            }
            "--" => command.extend(args.by_ref()),
            _ => bail!("unexpected argument {arg}\n{USAGE}"),
        }
    }
    let Some(interval) = interval else {
        bail!("no interval region given (--interval)\n{USAGE}");
    };
    let Some((program, program_args)) = command.split_first() else {
        bail!("no program given (-- PROGRAM [ARGS])\n{USAGE}");
    };
    let mut launch = Launch::new(program, "timeline").args(program_args.iter().cloned());
    launch.cache = cache;
    let options = TimelineOptions {
        launch,
        interval,
        event,
    };
    let recorded = epcache_examples::block_on(timeline::record(&options, |m| eprintln!("{m}")))
        .context("starting the async runtime")?
        .with_context(|| format!("recording the timeline of {program}"))?;
    print!("{}", timeline::render(&recorded));
    if let Some(path) = svg {
        std::fs::write(&path, timeline::svg(&recorded))
            .with_context(|| format!("writing the plot {path}"))?;
        println!("plot: {path}");
    }
    Ok(())
}
