//! Replaying real lackey traces of small C kernels must give exactly Cachegrind's counts.
//!
//! Each kernel is compiled with gcc -O2, traced once with lackey and converted once to `.epct`;
//! then for every cache shape Cachegrind runs the program and `epcache replay --cachegrind-compat`
//! replays both the lackey text and the `.epct` file. All nine events must be equal, not close.

mod support;

use std::path::Path;
use std::process::Command;

use support::{
    Shape, cachegrind_counts, compile_kernel, events_from_replay_json, lackey_trace,
    tools_available,
};

const SHAPES: [Shape; 4] = [
    // The EP-Cache paper's L1 (8 KB, 2-way, 32 B) over a LL with longer lines.
    Shape {
        i1: "8192,2,32",
        d1: "8192,2,32",
        ll: "262144,8,64",
    },
    Shape {
        i1: "32768,8,64",
        d1: "32768,8,64",
        ll: "262144,8,64",
    },
    Shape {
        i1: "16384,4,64",
        d1: "16384,4,64",
        ll: "262144,8,64",
    },
    // A small LL with 128-byte lines, so LL misses are many and line sizes differ per level.
    Shape {
        i1: "4096,2,32",
        d1: "4096,4,32",
        ll: "65536,16,128",
    },
];

fn replay_json(format: &str, trace: &Path, shape: &Shape) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_epcache"))
        .args([
            "replay",
            "--format",
            format,
            "--cachegrind-compat",
            "--json",
        ])
        .args(shape.args())
        .arg(trace)
        .output()
        .expect("running epcache");
    assert!(
        out.status.success(),
        "epcache replay {format} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("epcache printed JSON")
}

fn check_kernel(name: &str) {
    if !tools_available(name) {
        return;
    }
    let dir = tempfile::tempdir().expect("temporary directory");
    let program = compile_kernel(name, dir.path(), &[]);
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
        let expected = cachegrind_counts(&program, shape);
        for (format, trace) in [("lackey", &lackey), ("epct", &epct)] {
            let json = replay_json(format, trace, shape);
            let got = events_from_replay_json(&json);
            assert_eq!(
                got, expected,
                "{name}, {format} trace, shape {shape:?}: replay vs Cachegrind"
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
