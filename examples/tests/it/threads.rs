//! The OpenMP examples of threads as cores of one machine (`epcache run --cores 2`): false
//! sharing in C and Fortran against the padded fix (`examples/c/false_sharing.c`,
//! `examples/fortran/false_sharing.F90`), and a stencil whose misses in the last level depend
//! on whether the cores share it (`examples/c/stencil_omp.c`). Run the way the README's tour
//! runs them: through `epcache run --all-regions --json`.

use std::path::Path;
use std::process::Command;

use crate::support::{self, Build};
use serde_json::Value;

/// Private L1 and L2 per core, the last level shared, as on most multicore CPUs.
const MACHINE: &str = "D1=32K,8,64;L2=1M,16,64;L3=32M,16,64,shared";

/// `epcache run --cores 2 --all-regions --json --cache CACHE -- PROGRAM`: its report.
fn report_of(program: &Path, cache: &str) -> Value {
    let epcache = support::epcache();
    let output = program.with_extension("report.json");
    let out = Command::new(&epcache.binary)
        .args([
            "run",
            "--cores",
            "2",
            "--all-regions",
            "--json",
            "--cache",
            cache,
        ])
        .arg("--output")
        .arg(&output)
        .arg("--")
        .arg(program)
        .env("OMP_NUM_THREADS", "2")
        .output()
        .expect("running epcache run");
    assert!(
        out.status.success(),
        "epcache run failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(&std::fs::read_to_string(&output).unwrap()).expect("a JSON report")
}

/// The whole run's events of the data structure whose name ends with `name`.
fn events<'a>(report: &'a Value, name: &str) -> &'a Value {
    let program = &report["regions"][0];
    assert_eq!(program["name"], "program");
    let found = program["data_structures"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["name"].as_str().unwrap().ends_with(name))
        .unwrap_or_else(|| panic!("no data structure {name} in {program:#}"));
    &found["events"]
}

fn count(events: &Value, event: &str) -> u64 {
    events[event]
        .as_u64()
        .unwrap_or_else(|| panic!("no {event} in {events:#}"))
}

/// The packed counters false-share at least a thousand times more than the padded ones, in
/// both languages, and nothing is true sharing while the threads count. The programs' 2,000
/// rounds end at barriers, so however the host schedules the threads the line changes hands
/// at least once a round.
#[test]
fn packed_counters_false_share_and_padded_ones_do_not_in_c_and_fortran() {
    if !support::tools_available("threads examples", &["gcc", "gfortran"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for (compiler, source, name) in [
        ("gcc", "c/false_sharing.c", "false_sharing"),
        ("gfortran", "fortran/false_sharing.F90", "false_sharing_f"),
    ] {
        let build = Build {
            compiler,
            source,
            opt: "-O1",
            extra: &["-fopenmp"],
            libs: &[],
        };
        let program = build.with_epcache(dir.path(), name);
        let report = report_of(&program, MACHINE);
        assert_eq!(report["cores"], 2, "{source}");
        let (packed, padded) = (events(&report, "packed"), events(&report, "padded"));
        let packed_fsm = count(packed, "EPC_L1_FSM");
        let padded_fsm = count(padded, "EPC_L1_FSM");
        eprintln!("{source}: EPC_L1_FSM packed {packed_fsm}, padded {padded_fsm}");
        assert!(packed_fsm >= 1000, "{source}: {packed:#}");
        assert!(packed_fsm >= 1000 * padded_fsm, "{source}: {padded:#}");
        assert_eq!(count(packed, "EPC_L1_TSM"), 0, "{source}: {packed:#}");
        // Every false-sharing miss is an L1 miss, and an invalidation made it.
        assert!(count(packed, "PAPI_L1_DCM") >= packed_fsm);
        assert!(count(packed, "PAPI_CA_INV") >= packed_fsm);
    }
}

/// Two threads each relax half of the grids: a shared last level of 192 KB cannot hold both
/// grids (256 KB) and misses at every sweep, while two private ones each hold their thread's
/// half after the first sweep.
#[test]
fn a_shared_last_level_decides_the_stencils_misses() {
    if !support::tools_available("threads examples", &["gcc"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let build = Build {
        compiler: "gcc",
        source: "c/stencil_omp.c",
        opt: "-O1",
        extra: &["-fopenmp"],
        libs: &[],
    };
    let program = build.with_epcache(dir.path(), "stencil_omp");
    let l3_misses = |cache: &str| {
        let report = report_of(&program, cache);
        count(&report["regions"][0]["events"], "PAPI_L3_DCM")
    };
    let shared = l3_misses("D1=8K,8,64;L2=32K,8,64;L3=192K,12,64,shared");
    let private = l3_misses("D1=8K,8,64;L2=32K,8,64;L3=192K,12,64");
    eprintln!("stencil L3 misses: shared {shared}, private {private}");
    // The grids are 4,096 lines; four sweeps through a shared level that cannot hold them
    // miss on most of them each time, private levels about once.
    assert!(shared >= 3 * 4096, "shared {shared}");
    assert!(private <= 2 * 4096, "private {private}");
    assert!(shared >= 3 * private, "shared {shared}, private {private}");
}
