//! `epcache describe`: one target's regions, data structures, cache model, events and requests.

use clap::Args;
use epcache_client::{DataStructure, DataStructureKind};

use crate::connection::{DaemonArgs, block_on, json, table};
use crate::output::print_stdout;

/// Describe a target: its regions, data structures, simulated cache, events and requests.
#[derive(Debug, Args)]
pub(crate) struct DescribeArgs {
    /// The target's pid (see `epcache targets`).
    pid: u32,
    #[command(flatten)]
    daemon: DaemonArgs,
    /// Print JSON (a failure too, as {"error": ...} on stdout).
    #[arg(long)]
    pub(crate) json: bool,
}

pub(crate) fn run(args: &DescribeArgs) -> anyhow::Result<()> {
    let d = block_on(async { Ok(args.daemon.connect().await?.describe(args.pid).await?) })?;
    if args.json {
        return print_stdout(&json(&d)?);
    }
    let t = &d.target;
    let mut out = format!("pid {} ({}), {}", t.pid, t.program, t.state);
    if let Some(at) = &t.halted_at {
        out.push_str(&format!(" at the {at}"));
    }
    out.push('\n');
    match (&d.cache_spec, d.counters) {
        (Some(spec), Some(counters)) => {
            out.push_str(&format!(
                "cache {spec}, counter array of {counters} counters, {} request slots\n",
                d.request_slots
            ));
            out.push_str(&match d.cores {
                Some(cores) => format!(
                    "threads are the {cores} cores of one machine: shared levels and coherence events are simulated\n"
                ),
                None => "each thread simulates a hierarchy of its own: no level is shared, coherence events count nothing (EPCACHE_CORES=N makes them cores)\n".to_owned(),
            });
        }
        _ => match &d.cache_error {
            Some(why) => out.push_str(&format!(
                "no cache is simulated, so no request can be served: {why}; restart the program with a valid EPCACHE_CACHE\n"
            )),
            None => out.push_str("cache model not published yet\n"),
        },
    }
    out.push_str("\nregions\n");
    let rows: Vec<Vec<String>> = d
        .regions
        .iter()
        .map(|r| {
            vec![
                r.index.to_string(),
                r.name.clone(),
                format!("{:?}", r.kind).to_lowercase(),
                format!("{}:{}", r.file_id, r.line),
                if r.file.is_empty() {
                    String::new()
                } else {
                    format!("{}:{}", r.file, r.line)
                },
            ]
        })
        .collect();
    out.push_str(&table(&[">#", "NAME", "KIND", "KEY", "SOURCE"], &rows));
    out.push_str("\ndata structures\n");
    let rows: Vec<Vec<String>> = d
        .data_structures
        .iter()
        .map(|s| {
            vec![
                s.index.to_string(),
                s.name.clone(),
                format!("{:#x}", s.range.start),
                (s.range.end - s.range.start).to_string(),
                format!("{:?}", s.kind).to_lowercase(),
                status(s, &d.data_structures),
                s.context.join(" < "),
            ]
        })
        .collect();
    out.push_str(&table(
        &[">#", "NAME", "START", ">BYTES", "KIND", "", "CONTEXT"],
        &rows,
    ));
    if !d.events.is_empty() {
        out.push_str("\nevents\n");
        let rows: Vec<Vec<String>> = d
            .events
            .iter()
            .map(|e| vec![e.name.clone(), e.description.clone()])
            .collect();
        out.push_str(&table(&["NAME", "COUNTS"], &rows));
    }
    if !d.requests.is_empty() {
        out.push_str("\nrequests\n");
        out.push_str(&crate::request::requests_table(&d.requests));
    }
    print_stdout(&out)
}

/// What a structure's row says beside it: nothing when it is live; a heap block a Fortran
/// allocatable took over (its descriptor points there) by that allocatable's name, an
/// allocatable's entry for an earlier size as such, rather than `freed` and `unallocated`.
fn status(s: &DataStructure, all: &[DataStructure]) -> String {
    if s.live {
        return String::new();
    }
    match s.kind {
        DataStructureKind::AllocationSite => all
            .iter()
            .find(|o| {
                o.live
                    && o.kind == DataStructureKind::Allocatable
                    && o.range.start <= s.range.start
                    && s.range.start < o.range.end
            })
            .map_or_else(|| "freed".to_owned(), |o| format!("now {}", o.name)),
        DataStructureKind::Allocatable
            if all.iter().any(|o| o.name == s.name && o.index > s.index) =>
        {
            "earlier allocation".to_owned()
        }
        DataStructureKind::Allocatable => "unallocated".to_owned(),
        _ => "freed".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn structure(
        index: u32,
        name: &str,
        range: std::ops::Range<u64>,
        kind: DataStructureKind,
        live: bool,
    ) -> DataStructure {
        DataStructure {
            index,
            name: name.to_owned(),
            range,
            kind,
            live,
            shape: None,
            context: Vec::new(),
        }
    }

    #[test]
    fn a_block_an_allocatable_took_and_an_earlier_size_say_so() {
        use DataStructureKind::{Allocatable, AllocationSite};
        let all = [
            structure(0, "phys::w%a", 0x1000..0x2000, Allocatable, false),
            structure(1, "dt2.f90:19", 0x5000..0x6000, AllocationSite, false),
            structure(2, "phys::w%a", 0x5000..0x6000, Allocatable, true),
            structure(3, "dt2.f90:40", 0x9000..0xa000, AllocationSite, false),
            structure(4, "phys::u", 0..0, Allocatable, false),
        ];
        let said: Vec<String> = all.iter().map(|s| status(s, &all)).collect();
        assert_eq!(
            said,
            [
                "earlier allocation",
                "now phys::w%a",
                "",
                "freed",
                "unallocated"
            ]
        );
    }
}
