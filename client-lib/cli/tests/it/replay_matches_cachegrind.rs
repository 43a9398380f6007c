//! Replaying real lackey traces of small C kernels must give exactly Cachegrind's counts.
//!
//! Each kernel is compiled with gcc -O2, traced once with lackey and converted once to `.epct`;
//! then for every cache shape Cachegrind runs the program and `epcache replay --cachegrind-compat`
//! replays both the lackey text and the `.epct` file, and the `.epct` file again on 2 and 4
//! threads (`--threads`, the sets shared out among them). All nine events must be equal, not
//! close.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use epcache_test_support::cachegrind::{self, Shape, compile_c, lackey_trace};
use epcache_test_support::tools;

const SHAPES: [Shape; 4] = [
    // The EP-Cache paper's L1 (8 KB, 2-way, 32 B) over a LL with longer lines.
    Shape {
        i1: (8192, 2, 32),
        d1: (8192, 2, 32),
        ll: (262144, 8, 64),
    },
    Shape {
        i1: (32768, 8, 64),
        d1: (32768, 8, 64),
        ll: (262144, 8, 64),
    },
    Shape {
        i1: (16384, 4, 64),
        d1: (16384, 4, 64),
        ll: (262144, 8, 64),
    },
    // A small LL with 128-byte lines, so LL misses are many and line sizes differ per level.
    Shape {
        i1: (4096, 2, 32),
        d1: (4096, 4, 32),
        ll: (65536, 16, 128),
    },
];

/// `tests/kernels/<name>.c`.
fn kernel(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/kernels")
        .join(format!("{name}.c"))
}

fn replay_json(format: &str, trace: &Path, shape: &Shape, threads: u32) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_epcache"))
        .args([
            "replay",
            "--format",
            format,
            "--cachegrind-compat",
            "--json",
            "--threads",
            &threads.to_string(),
        ])
        .args(shape.cachegrind_args())
        .arg(trace)
        .output()
        .expect("running epcache");
    assert!(
        out.status.success(),
        "epcache replay {format} --threads {threads} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("epcache printed JSON")
}

fn check_kernel(name: &str) {
    let why = "these checks compare epcache with real Valgrind runs";
    if !tools::all_available(name, &["gcc", "valgrind"], why) {
        return;
    }
    let dir = tempfile::tempdir().expect("temporary directory");
    let program = compile_c(&kernel(name), dir.path(), &[]);
    let lackey = dir.path().join(format!("{name}.lackey"));
    let epct = dir.path().join(format!("{name}.epct"));
    lackey_trace(&program, &lackey);
    let convert = Command::new(env!("CARGO_BIN_EXE_epcache"))
        .args(["trace", "convert", "--from", "lackey"])
        .args([&lackey, &epct])
        .output()
        .expect("running epcache trace convert");
    assert!(
        convert.status.success(),
        "{}",
        String::from_utf8_lossy(&convert.stderr)
    );
    for shape in &SHAPES {
        let expected = cachegrind::summary(&program, shape);
        let runs = [
            ("lackey", &lackey, 1),
            ("epct", &epct, 1),
            ("epct", &epct, 2),
            ("epct", &epct, 4),
        ];
        for (format, trace, threads) in runs {
            let json = replay_json(format, trace, shape, threads);
            assert_eq!(
                json["threads"], threads,
                "{name}: the replay says on how many threads"
            );
            let got = events_from_replay_json(&json);
            assert_eq!(
                got, expected,
                "{name}, {format} trace on {threads} threads, shape {shape:?}: replay vs Cachegrind"
            );
            let summary: std::collections::BTreeMap<String, u64> =
                serde_json::from_value(json["cachegrind"].clone()).expect("the cachegrind object");
            assert_eq!(
                summary, expected,
                "{name}: the `cachegrind` object agrees too"
            );
        }
        eprintln!("{name} {shape:?}: equal to Cachegrind: {expected:?}");
    }
}

#[test]
fn transpose_matches_cachegrind_exactly() {
    check_kernel("transpose");
}

#[test]
fn row_and_column_sums_match_cachegrind_exactly() {
    check_kernel("rowcol");
}

#[test]
fn lu_decomposition_matches_cachegrind_exactly() {
    check_kernel("lu");
}

/// Cachegrind's nine events taken from `epcache replay --json` output by way of the level
/// fields (not the `cachegrind` object), so the test checks what users read.
fn events_from_replay_json(json: &serde_json::Value) -> BTreeMap<String, u64> {
    let field = |level: &str, name: &str| {
        json["levels"][level][name]
            .as_u64()
            .unwrap_or_else(|| panic!("levels.{level}.{name} missing in {json}"))
    };
    let ll_read_misses = field("LL", "read_misses");
    let (il, dl) = (
        field("LL", "instr_read_misses"),
        field("LL", "data_read_misses"),
    );
    assert_eq!(
        ll_read_misses,
        il + dl,
        "LL read misses are the I-side plus the D-side"
    );
    [
        ("Ir", field("I1", "reads")),
        ("I1mr", field("I1", "read_misses")),
        ("ILmr", il),
        ("Dr", field("D1", "reads")),
        ("D1mr", field("D1", "read_misses")),
        ("DLmr", dl),
        ("Dw", field("D1", "writes")),
        ("D1mw", field("D1", "write_misses")),
        ("DLmw", field("LL", "write_misses")),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect()
}
