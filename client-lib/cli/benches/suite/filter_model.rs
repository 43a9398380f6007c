//! `EPCACHE_SUITE_FILTER_MODEL=1`: how many of each kernel's accesses a repeat-hit filter of
//! another shape would send to its miss path, before anyone builds it.
//!
//! Each kernel is built with `-fsanitize=thread` (the accesses `epcache cc`'s instrumented copy
//! makes) and linked with `filter_model.c` in place of a sanitizer runtime, which runs every
//! access through models of the table as it is and of tables holding each set's k most
//! recently used lines. A record costs the simulating side a few hundred instructions and a
//! repeat hit a few on the program's thread, so the share of accesses that reach the miss path
//! bounds what a table shape can save. The same kernel monitored by epcache gives the table's
//! real share (its report's `handled`), which the model of today's table must match.

use std::path::Path;
use std::process::{Command, Stdio};

use epcache_inline::layout::{SHORTEST_LINE_BITS, TABLE_ENTRIES};
use epcache_sim::cache::HierarchySpec;
use serde_json::Value;

use super::{Builds, Cache, Kernel, reps, run_checked};

const MODEL_C: &str = include_str!("filter_model.c");
/// The shapes `filter_model.c` counts, after today's: k lines per set.
const SLOTS: [u32; 4] = [1, 2, 4, 8];

/// The L1 of an epcache cache spec (`D1=32K,8,64;...`): line bytes, sets and ways.
fn l1_of(spec: &str) -> (u64, u64, u64) {
    let spec = HierarchySpec::parse(spec).unwrap_or_else(|e| panic!("{spec}: {e}"));
    let l1 = spec.data[0].geometry;
    (u64::from(l1.line_size), l1.sets(), u64::from(l1.assoc))
}

/// Builds every kernel for the model; returns nothing, the programs are `<name>_model`.
fn build(builds: &Builds, kernels: &[&Kernel]) {
    let dir = &builds.dir;
    std::fs::write(dir.join("filter_model.c"), MODEL_C).unwrap();
    run_checked(
        "gcc filter_model.c",
        Command::new("gcc")
            .args(["-O2", "-c", "filter_model.c", "-o", "filter_model.o"])
            .current_dir(dir),
    );
    for k in kernels {
        let object = format!("{}_tsan.o", k.name);
        run_checked(
            &format!("{} -fsanitize=thread {}", k.compiler, k.file),
            Command::new(k.compiler)
                .args(["-O2", "-fsanitize=thread", "-c", k.file, "-o", &object])
                .current_dir(dir),
        );
        run_checked(
            &format!("link {} with the model", k.name),
            Command::new(k.compiler)
                .args([&object, "filter_model.o", "-lm", "-o"])
                .arg(format!("{}_model", k.name))
                .current_dir(dir),
        );
    }
}

/// Runs `program` with `reps` without address-space randomisation, as every suite run.
fn run(dir: &Path, what: &str, program: &Path, reps: u32, env: &[(&str, String)]) {
    let mut command = Command::new("setarch");
    command
        .args([std::env::consts::ARCH, "-R"])
        .arg(program)
        .arg(reps.to_string())
        .envs(env.iter().map(|(k, v)| (k, v)))
        .env("EPCACHE_RUNTIME_DIR", dir.join("run"))
        .current_dir(dir)
        .stdin(Stdio::null());
    run_checked(what, &mut command);
}

/// Prints, per kernel and cache, the share of accesses that reach the miss path: the monitored
/// run's, the model's of today's table, and the model's with k lines per set.
pub(super) fn report(builds: &Builds, kernels: &[&Kernel], caches: &[&Cache], scale: f64) {
    build(builds, kernels);
    let dir = &builds.dir;
    println!(
        "\nfilter model at scale {scale}: share of accesses that reach the miss path (a record \
         or a hook call); `epcache` is the monitored run's, `today` the model's of the same \
         table, `kN` a table of each set's N most recent lines (at most the ways)"
    );
    print!(
        "{:<9} {:<4} {:>12} {:>8} {:>8}",
        "kernel", "L1", "accesses", "epcache", "today"
    );
    for k in SLOTS {
        print!(" {:>7}", format!("k{k}"));
    }
    println!();
    for k in kernels {
        let reps = reps(k, scale);
        for cache in caches {
            let (line, sets, ways) = l1_of(cache.epcache);
            // As `Filter::entries_for`: with longer lines than the shortest, fewer entries fit.
            let spread = line.trailing_zeros() - SHORTEST_LINE_BITS;
            let entries = sets.min(TABLE_ENTRIES as u64 >> spread);
            let out = dir.join(format!("model-{}-{}.txt", k.name, cache.label));
            run(
                dir,
                &format!("{} under the filter model", k.name),
                &dir.join(format!("{}_model", k.name)),
                reps,
                &[
                    ("FILTER_MODEL_L1", format!("{line},{sets},{ways},{entries}")),
                    ("FILTER_MODEL_OUT", out.display().to_string()),
                ],
            );
            let counts: Vec<u64> = std::fs::read_to_string(&out)
                .expect("the model's counts")
                .split_whitespace()
                .map(|n| n.parse().expect("a count"))
                .collect();
            assert_eq!(
                counts.len(),
                3 + SLOTS.len(),
                "the model's counts: {counts:?}"
            );
            let report = dir.join(format!("model-{}-{}.json", k.name, cache.label));
            run(
                dir,
                &format!("{} monitored", k.name),
                &builds.monitored(k),
                reps,
                &[
                    ("EPCACHE_REPORT", report.display().to_string()),
                    ("EPCACHE_CACHE", cache.epcache.to_owned()),
                    ("EPCACHE_PIPELINE", "off".to_owned()),
                ],
            );
            let json: Value =
                serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
            let d1 = &json["levels"][0];
            let monitored = d1["reads"].as_u64().unwrap_or(0) + d1["writes"].as_u64().unwrap_or(0);
            let repeat_hits = json["handled"]["repeat_hits"].as_u64().unwrap_or(0);
            let share = |n: u64, of: u64| n as f64 / of.max(1) as f64;
            let accesses = counts[0];
            print!(
                "{:<9} {:<4} {:>12} {:>8.4} {:>8.4}",
                k.name,
                cache.label,
                accesses,
                share(monitored - repeat_hits, monitored),
                share(counts[2] + counts[1], accesses)
            );
            for &misses in &counts[3..] {
                print!(" {:>7.4}", share(misses + counts[1], accesses));
            }
            println!();
        }
    }
}
