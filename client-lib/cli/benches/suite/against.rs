//! `EPCACHE_SUITE_AGAINST=DIR`: this build against another, side by side in one run, the way
//! a change to the inline sequence or its ABI is judged (issue 30: "measured as alternating
//! runs of the old and new builds").
//!
//! `DIR` holds the other build's `epcache` and `libepcache_monitor.a` (copies made before the
//! change). Every kernel is built with both; then, round after round, each kernel under each
//! cache runs monitored on one core and with the pipeline, once with each build, the build that
//! goes first alternating by round, so a slow spell of the machine falls on both. Rounds go
//! over the whole suite, not kernel by kernel, for the same reason. It prints each pair's
//! medians and ratio, the geometric means of the ratios on one core, with the pipeline and of
//! both, and fails if the two builds count differently anywhere.

use std::path::{Path, PathBuf};

use super::{
    Builds, Cache, Kernel, Variant, gmean, level_totals, median, reps, run_variant, variant_key,
};

/// The two monitored variants compared.
const VARIANTS: [Variant; 2] = [Variant::EpcacheOneCore, Variant::Epcache];

/// The other build's files in `dir`, checked before anything is built.
pub(super) fn other_build(dir: &Path) -> (PathBuf, PathBuf) {
    let epcache = dir.join("epcache");
    let runtime = dir.join("libepcache_monitor.a");
    for file in [&epcache, &runtime] {
        assert!(
            file.is_file(),
            "EPCACHE_SUITE_AGAINST={}: no {} there; copy the other build's `epcache` and \
             `libepcache_monitor.a` (target/release/deps/libepcache_monitor-*.a) into it",
            dir.display(),
            file.display()
        );
    }
    (epcache, runtime)
}

/// Runs the comparison of `this` against `other` (each with its kernels built) and prints it.
pub(super) fn report(
    this: &Builds,
    other: &Builds,
    other_dir: &Path,
    kernels: &[&Kernel],
    caches: &[&Cache],
    runs: usize,
    scale: f64,
) {
    let pairs: Vec<(&Kernel, &Cache, Variant)> = kernels
        .iter()
        .flat_map(|k| {
            caches
                .iter()
                .flat_map(move |c| VARIANTS.map(move |v| (*k, *c, v)))
        })
        .collect();
    // Seconds of each pair's runs, `[this, other]`.
    let mut seconds = vec![[Vec::new(), Vec::new()]; pairs.len()];
    for round in 0..runs {
        for (i, &(k, cache, variant)) in pairs.iter().enumerate() {
            let order: [usize; 2] = if round % 2 == 0 { [0, 1] } else { [1, 0] };
            let mut levels = [None, None];
            for which in order {
                let builds = [this, other][which];
                let tag = format!(
                    "{}-{}-{}-{which}",
                    k.name,
                    cache.label,
                    variant_key(variant)
                );
                let run = run_variant(builds, k, cache, variant, reps(k, scale), &tag);
                seconds[i][which].push(run.seconds);
                levels[which] = run.counts.as_ref().map(level_totals);
            }
            assert_eq!(
                levels[0],
                levels[1],
                "{} {} {}: the two builds counted differently",
                k.name,
                cache.label,
                variant_key(variant)
            );
        }
        eprintln!("round {}/{runs} done", round + 1);
    }
    println!(
        "\nthis build against {} at scale {scale} ({runs} runs of each, alternating; wall \
         seconds, medians; counts equal){}",
        other_dir.display(),
        if super::records() {
            "; every monitored run records the program's partial trace"
        } else {
            ""
        }
    );
    println!(
        "{:<9} {:<4} {:<17} {:>9} {:>9} {:>11}",
        "kernel", "L1", "variant", "other", "this", "this/other"
    );
    let mut ratios: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    for (i, &(k, cache, variant)) in pairs.iter().enumerate() {
        let (this_s, other_s) = (median(&seconds[i][0]), median(&seconds[i][1]));
        let ratio = this_s / other_s;
        ratios[usize::from(variant == Variant::Epcache)].push(ratio);
        println!(
            "{:<9} {:<4} {:<17} {:>9.3} {:>9.3} {:>11.3}",
            k.name,
            cache.label,
            variant_key(variant),
            other_s,
            this_s,
            ratio
        );
    }
    let both: Vec<f64> = ratios.concat();
    println!(
        "geometric means of this/other: one core {:.3}, with the second core {:.3}, both {:.3}",
        gmean(&ratios[0]),
        gmean(&ratios[1]),
        gmean(&both)
    );
}
