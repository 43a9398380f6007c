//! Replay throughput against Cachegrind on the same run of a PolyBench-lu-like kernel.
//!
//! `cargo bench -p epcache-cli --bench replay_vs_cachegrind` compiles the kernel, records its
//! lackey trace once, converts it to `.epct`, then times Cachegrind on the program (its emulation
//! included, as a user would run it) and epcache's replay of the text and the binary trace with the
//! same caches, in this process. It prints data references per second for each and the ratios, and
//! checks that all three give the same counts. `EPCACHE_BENCH_LU_N` sets the matrix size.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::BufReader;
use std::path::Path;
use std::time::Instant;

use epcache_sim::cache::{AccessKind, HierarchySpec};
use epcache_sim::monitor::CounterArrayConfig;
use epcache_sim::ranges::AddressRange;
use epcache_sim::replay::{ReplaySummary, cachegrind_hierarchy, replay};
use epcache_sim::simulator::Simulator;
use epcache_sim::trace::{EpctReader, EpctWriter, LackeyReader, TraceKind};
use epcache_test_support::cachegrind::{self, Shape, compile_c, lackey_trace};
use epcache_test_support::tools;

const DEFAULT_N: u32 = 300;
/// Larger lackey logs would crowd a developer's disk; scale the kernel down instead.
const MAX_TRACE_BYTES: u64 = 2 << 30;
/// Cachegrind's own measurement on this machine (PolyBench lu, MEDIUM), from the issue.
const CACHEGRIND_REFERENCE_REFS_PER_S: f64 = 46e6;

const SHAPE: Shape = Shape {
    i1: (32768, 8, 64),
    d1: (32768, 8, 64),
    ll: (8388608, 16, 64),
};

fn main() {
    let why = "the bench compares epcache with a real Cachegrind run";
    if !tools::all_available("replay_vs_cachegrind", &["gcc", "valgrind"], why) {
        return;
    }
    let n: u32 = std::env::var("EPCACHE_BENCH_LU_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_N);
    let dir = tempfile::tempdir().expect("temporary directory");
    let (n, program, lackey, lackey_seconds) = trace_within_budget(dir.path(), n);
    let lackey_bytes = std::fs::metadata(&lackey).expect("trace size").len();

    let epct = dir.path().join("lu.epct");
    let started = Instant::now();
    let epct_bytes = convert(&lackey, &epct);
    let convert_seconds = started.elapsed().as_secs_f64();

    let started = Instant::now();
    let expected = cachegrind::summary(&program, &SHAPE);
    let cachegrind_seconds = started.elapsed().as_secs_f64();

    let spec: HierarchySpec = SHAPE.replay_spec().parse().expect("spec");
    let started = Instant::now();
    let mut hierarchy = cachegrind_hierarchy(&spec).expect("hierarchy");
    let reader = LackeyReader::new(BufReader::with_capacity(
        1 << 20,
        File::open(&lackey).expect("open trace"),
    ));
    let from_text = replay(reader, &mut hierarchy, true).expect("replay of the lackey text");
    let text_seconds = started.elapsed().as_secs_f64();

    let started = Instant::now();
    let mut hierarchy = cachegrind_hierarchy(&spec).expect("hierarchy");
    let reader = EpctReader::new(File::open(&epct).expect("open epct")).expect("epct header");
    let from_epct = replay(reader, &mut hierarchy, true).expect("replay of the epct trace");
    let epct_seconds = started.elapsed().as_secs_f64();

    assert_eq!(
        events(&from_text),
        expected,
        "lackey replay differs from Cachegrind"
    );
    assert_eq!(
        events(&from_epct),
        expected,
        "epct replay differs from Cachegrind"
    );

    let data_refs = expected["Dr"] + expected["Dw"];
    let all_refs = data_refs + expected["Ir"];
    let rate = |s: f64| data_refs as f64 / s;
    let cachegrind_rate = rate(cachegrind_seconds);
    println!(
        "\nreplay vs Cachegrind: lu N={n}, gcc -O2, caches {}",
        SHAPE.replay_spec()
    );
    println!(
        "trace: {} records ({} instruction fetches, {} data refs), lackey text {:.1} MB (recorded in {lackey_seconds:.1} s), epct {:.1} MB ({:.1}x smaller, converted in {convert_seconds:.1} s)",
        all_refs,
        expected["Ir"],
        data_refs,
        lackey_bytes as f64 / 1e6,
        epct_bytes as f64 / 1e6,
        lackey_bytes as f64 / epct_bytes as f64,
    );
    println!("counts: all three runs give exactly {expected:?}\n");
    println!(
        "{:<40} {:>8} {:>16} {:>18}",
        "", "wall s", "M data refs/s", "vs Cachegrind"
    );
    for (name, seconds) in [
        ("Cachegrind (valgrind, incl. emulation)", cachegrind_seconds),
        ("epcache replay, lackey text", text_seconds),
        ("epcache replay, epct", epct_seconds),
    ] {
        println!(
            "{name:<40} {seconds:>8.2} {:>16.1} {:>17.2}x",
            rate(seconds) / 1e6,
            rate(seconds) / cachegrind_rate
        );
    }
    println!(
        "\nall references (fetches too) per second: Cachegrind {:.1} M, lackey replay {:.1} M, epct replay {:.1} M",
        all_refs as f64 / cachegrind_seconds / 1e6,
        all_refs as f64 / text_seconds / 1e6,
        all_refs as f64 / epct_seconds / 1e6,
    );
    println!(
        "reference figure: Cachegrind handles about {:.0} M data refs/s here on PolyBench lu MEDIUM; epct replay is {:.2}x that",
        CACHEGRIND_REFERENCE_REFS_PER_S / 1e6,
        rate(epct_seconds) / CACHEGRIND_REFERENCE_REFS_PER_S
    );
    simulator_on_the_data_stream(&epct);
}

/// The simulator alone on this program's real data stream, held in memory: accesses per second
/// through L1+L2 (LRU, 8 and 16 ways) with one dynamic histogram active, on one core.
fn simulator_on_the_data_stream(epct: &Path) {
    let reader = EpctReader::new(File::open(epct).expect("open epct")).expect("epct header");
    let accesses: Vec<(u64, u32, AccessKind)> = reader
        .map(|r| r.expect("epct record"))
        .filter(|r| !r.kind.is_instr())
        .map(|r| {
            let kind = if r.kind == TraceKind::Store {
                AccessKind::Write
            } else {
                AccessKind::Read
            };
            (r.addr, r.size, kind)
        })
        .collect();
    // One histogram of L1 load misses over everything the program touched below its stack.
    let heap_and_globals = accesses
        .iter()
        .map(|a| a.0)
        .filter(|&a| a < 0x1000_0000_0000)
        .fold((u64::MAX, 0), |(lo, hi), a| (lo.min(a), hi.max(a)));
    let range = AddressRange::new(
        heap_and_globals.0,
        heap_and_globals.1 - heap_and_globals.0 + 1,
    );
    println!(
        "
simulator alone on the program's {} data accesses (in memory), one histogram of PAPI_L1_LDM in 96 buckets:",
        accesses.len()
    );
    for spec in ["D1=32K,8,64;L2=1M,16,64", "D1=64K,16,64;L2=1M,16,64"] {
        let spec: HierarchySpec = spec.parse().expect("spec");
        let mut sim = Simulator::new(&spec, CounterArrayConfig::default()).expect("simulator");
        let lines = range.len().div_ceil(96 * 64).max(1);
        let hist = sim
            .monitor_mut()
            .add_histogram("PAPI_L1_LDM", range, lines)
            .expect("histogram");
        sim.monitor_mut().start().expect("start");
        let started = Instant::now();
        for &(addr, size, kind) in &accesses {
            sim.access(addr, size, kind);
        }
        let seconds = started.elapsed().as_secs_f64();
        let misses = sim.monitor().read_histogram(hist).expect("read").total();
        println!(
            "  {spec:<40} {:6.1} M accesses/s  ({misses} L1 load misses in the histogram)",
            accesses.len() as f64 / seconds / 1e6
        );
    }
}

/// Compiles and traces the kernel, halving-ish the size until the lackey log fits the budget.
fn trace_within_budget(
    dir: &Path,
    mut n: u32,
) -> (u32, std::path::PathBuf, std::path::PathBuf, f64) {
    loop {
        let program = compile_c(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/kernels/lu.c"),
            dir,
            &[&format!("-DLU_N={n}")],
        );
        let lackey = dir.join("lu.lackey");
        let started = Instant::now();
        lackey_trace(&program, &lackey);
        let seconds = started.elapsed().as_secs_f64();
        let bytes = std::fs::metadata(&lackey).expect("trace size").len();
        if bytes <= MAX_TRACE_BYTES || n <= 50 {
            return (n, program, lackey, seconds);
        }
        // The trace grows with n^3.
        let scale = (MAX_TRACE_BYTES as f64 / bytes as f64).cbrt() * 0.95;
        n = ((f64::from(n) * scale) as u32).max(50);
        eprintln!("lackey trace of {bytes} bytes is over budget; retrying with N={n}");
    }
}

fn convert(lackey: &Path, epct: &Path) -> u64 {
    let reader = LackeyReader::new(BufReader::with_capacity(
        1 << 20,
        File::open(lackey).expect("open trace"),
    ));
    let mut writer =
        EpctWriter::new(File::create(epct).expect("create epct")).expect("epct header");
    for record in reader {
        writer
            .write(&record.expect("lackey record"))
            .expect("write epct");
    }
    let bytes = writer.bytes();
    writer.finish().expect("finish epct");
    bytes
}

fn events(summary: &ReplaySummary) -> BTreeMap<String, u64> {
    let cg = summary
        .cachegrind
        .expect("Cachegrind events in Cachegrind mode");
    [
        ("Ir", cg.Ir),
        ("I1mr", cg.I1mr),
        ("ILmr", cg.ILmr),
        ("Dr", cg.Dr),
        ("D1mr", cg.D1mr),
        ("DLmr", cg.DLmr),
        ("Dw", cg.Dw),
        ("D1mw", cg.D1mw),
        ("DLmw", cg.DLmw),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect()
}
