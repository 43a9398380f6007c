//! The human-readable replay report, in the spirit of Cachegrind's summary.

use std::fmt::Write;

use epcache_sim::replay::ReplaySummary;

use crate::numbers::{grouped, millions_per_second, percent};

/// The summary as a table: one row per level with reads, writes and their local miss rates, and
/// the rate of a replay that simulated `simulated` records in `seconds` (more than the summary
/// counts when a partial trace's spans count only some).
pub(crate) fn table(s: &ReplaySummary, seconds: f64, simulated: u64) -> String {
    let mut out = String::new();
    let r = &s.records;
    let mode = if s.cachegrind_compat {
        "Cachegrind-compatible"
    } else {
        "native (modify = read + write, write-backs modelled)"
    };
    // Writing into a String cannot fail.
    let _ = writeln!(out, "cache    {}", s.cache);
    let _ = writeln!(out, "mode     {mode}");
    let _ = writeln!(
        out,
        "records  {} ({} instr{}, {} loads, {} stores, {} modifies{})",
        grouped(r.total()),
        grouped(r.instr),
        if r.instr_simulated {
            ""
        } else {
            " not simulated: no I1"
        },
        grouped(r.loads),
        grouped(r.stores),
        grouped(r.modifies),
        if r.clamped > 0 {
            format!("; {} clamped to the smallest line", grouped(r.clamped))
        } else {
            String::new()
        },
    );
    let _ = writeln!(
        out,
        "time     {seconds:.2} s ({:.1} M records/s)\n",
        millions_per_second(simulated, seconds)
    );
    let _ = writeln!(
        out,
        "{:<6} {:>15} {:>13} {:>9} {:>15} {:>13} {:>9}",
        "level", "reads", "read misses", "rate", "writes", "write misses", "rate"
    );
    for l in &s.levels {
        let _ = writeln!(
            out,
            "{:<6} {:>15} {:>13} {:>9} {:>15} {:>13} {:>9}",
            l.name,
            grouped(l.reads),
            grouped(l.read_misses),
            percent(l.read_misses, l.reads),
            grouped(l.writes),
            grouped(l.write_misses),
            percent(l.write_misses, l.writes),
        );
    }
    for l in s
        .levels
        .iter()
        .filter(|l| l.instr_reads > 0 && l.data_reads > 0)
    {
        let _ = writeln!(
            out,
            "  {} reads: {} instruction ({} misses) + {} data ({} misses)",
            l.name,
            grouped(l.instr_reads),
            grouped(l.instr_read_misses),
            grouped(l.data_reads),
            grouped(l.data_read_misses),
        );
    }
    if let Some(cg) = &s.cachegrind {
        let _ = writeln!(
            out,
            "\nCachegrind events: Ir I1mr ILmr Dr D1mr DLmr Dw D1mw DLmw"
        );
        let _ = writeln!(
            out,
            "summary: {} {} {} {} {} {} {} {} {}",
            cg.Ir, cg.I1mr, cg.ILmr, cg.Dr, cg.D1mr, cg.DLmr, cg.Dw, cg.D1mw, cg.DLmw
        );
    }
    out
}
