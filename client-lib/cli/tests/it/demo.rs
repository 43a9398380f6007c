//! `epcache demo` end to end: it builds the Gauss example, drives it through an embedded daemon,
//! and writes a plot and the histograms, whose read misses fall as the paper found.

use std::process::Command;

#[test]
fn demo_runs_the_ep_cache_scenario_and_writes_its_plot() {
    if !epcache_test_support::tools::available("gcc", "demo") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_epcache"))
        .args(["demo", "--out"])
        .arg(dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "demo failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let plot = dir.path().join("gauss_histograms.svg");
    assert!(stdout.contains(&format!("plot: {}", plot.canonicalize().unwrap().display())));
    let svg = std::fs::read_to_string(&plot).unwrap();
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    let json: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("gauss_histograms.json")).unwrap(),
    )
    .unwrap();
    let results = json.as_array().unwrap();
    assert_eq!(results.len(), 8, "4 events x 2 versions");
    let total = |region: &str, event: &str| {
        let r = results
            .iter()
            .find(|r| r["request"]["region"]["name"] == region && r["request"]["event"] == event)
            .unwrap_or_else(|| panic!("no {event} result for {region}"));
        let buckets = r["buckets"].as_array().unwrap();
        assert_eq!(buckets.len(), 25);
        let sum: u64 = buckets.iter().map(|b| b["count"].as_u64().unwrap()).sum();
        assert_eq!(
            sum,
            r["total"].as_u64().unwrap(),
            "buckets sum to the total"
        );
        sum
    };
    // Both versions read and write A (the loop orders differ in how often, not whether).
    for region in ["elim_original", "elim_optimised"] {
        assert!(total(region, "EPC_L1_LDH") > 0 && total(region, "EPC_L1_STH") > 0);
    }
    // DESIGN.md: Cachegrind counts 188,060 and 40,963 read misses in the two eliminations
    // (the whole routine; A's share is slightly less).
    let (before, after) = (
        total("elim_original", "PAPI_L1_LDM"),
        total("elim_optimised", "PAPI_L1_LDM"),
    );
    assert!((180_000..=188_100).contains(&before), "original: {before}");
    assert!((38_000..=41_000).contains(&after), "optimised: {after}");
}
