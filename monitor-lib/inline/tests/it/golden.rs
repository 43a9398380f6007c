//! Every site variant, written out, against `data/sites.s`: the sequence exactly as `epcache cc`
//! wrote it when its speed was last measured (the figures in docs/performance.md). A change
//! to the emitted instructions fails here; one made on purpose updates the file with the
//! measurement that justifies it (`EPCACHE_BLESS_SITES=1 cargo test -p epcache-inline golden`
//! writes it).

use epcache_inline::emit::{Access, Carried, HOOK_SIZES, Sites};

/// Every variant, in the file's order: by what the registers carry, then reads before writes,
/// then by size, all numbered by one [`Sites`].
fn every_variant() -> String {
    let mut out = String::new();
    let mut sites = Sites::default();
    for carried in Carried::ALL {
        for write in [false, true] {
            for size in HOOK_SIZES {
                let kind = if write { "write" } else { "read" };
                let call = format!("\tcall\t__tsan_{kind}{size}");
                out.push_str(&format!(
                    "# size {size} write {write} carried {carried:?}\n"
                ));
                sites.write(Access { size, write }, carried, &call, &mut out);
            }
        }
    }
    out
}

#[test]
fn every_variant_is_written_as_the_measured_sequence() {
    let golden = include_str!("data/sites.s");
    let now = every_variant();
    // A change made on purpose writes the file anew, to be committed with its measurement.
    if std::env::var_os("EPCACHE_BLESS_SITES").is_some() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/it/data/sites.s");
        std::fs::write(path, &now).expect("writing sites.s");
        return;
    }
    if let Some((i, (want, got))) = golden
        .lines()
        .zip(now.lines())
        .enumerate()
        .find(|(_, (a, b))| a != b)
    {
        panic!(
            "line {}: the measured sequence has\n{want}\nthe emitter writes\n{got}",
            i + 1
        );
    }
    assert_eq!(golden.lines().count(), now.lines().count());
    assert_eq!(golden, now);
}
