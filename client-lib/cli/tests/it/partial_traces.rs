//! Partial data traces from real lackey logs: `epcache trace convert --to partial` and
//! `epcache replay` of the result.
//!
//! The same accesses replay to exactly the same level totals from a partial trace as from the
//! lackey log (the whole program) or the `.epct` file (one function's accesses); a regular
//! kernel's partial trace is at least 100 times smaller than its `.epct`, an irregular one's no
//! larger; and a miss-ratio curve's point at the replayed first level's size is its miss ratio.

use std::path::Path;
use std::process::Command;

use epcache_test_support::cachegrind::{compile_c, lackey_trace};
use epcache_test_support::tools;

/// A data-only hierarchy: instruction records of a lackey log are counted, not simulated, so
/// its totals are those of its data accesses alone.
const CACHE: &str = "D1=8K,2,32;LL=64K,8,64";

fn epcache(args: &[&str]) -> std::process::Output {
    let out = Command::new(env!("CARGO_BIN_EXE_epcache"))
        .args(args)
        .output()
        .expect("running epcache");
    assert!(
        out.status.success(),
        "epcache {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn replay_json(trace: &Path, extra: &[&str]) -> serde_json::Value {
    let mut args = vec!["replay", "--cache", CACHE, "--json"];
    args.extend_from_slice(extra);
    args.push(trace.to_str().expect("a UTF-8 path"));
    serde_json::from_slice(&epcache(&args).stdout).expect("epcache printed JSON")
}

fn convert(lackey: &Path, to: &str, filter: &[&str], output: &Path) -> u64 {
    let mut args = vec!["trace", "convert", "--from", "lackey", "--to", to];
    args.extend_from_slice(filter);
    args.push(lackey.to_str().expect("a UTF-8 path"));
    args.push(output.to_str().expect("a UTF-8 path"));
    epcache(&args);
    std::fs::metadata(output)
        .expect("the converted trace")
        .len()
}

struct Traced {
    dir: tempfile::TempDir,
    program: std::path::PathBuf,
    lackey: std::path::PathBuf,
}

fn traced(kernel: &str) -> Option<Traced> {
    let why = "partial traces are checked against real lackey logs";
    if !tools::all_available(kernel, &["gcc", "valgrind"], why) {
        return None;
    }
    let dir = tempfile::tempdir().expect("temporary directory");
    let source = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/kernels")
        .join(format!("{kernel}.c"));
    let program = compile_c(&source, dir.path(), &["-g", "-fno-tree-vectorize"]);
    let lackey = dir.path().join(format!("{kernel}.lackey"));
    lackey_trace(&program, &lackey);
    Some(Traced {
        dir,
        program,
        lackey,
    })
}

/// Converts `function`'s accesses to both formats, checks they replay to the same totals, and
/// returns (epct bytes, partial bytes, the partial replay's JSON).
fn one_function(t: &Traced, function: &str) -> (u64, u64, serde_json::Value) {
    let binary = t.program.to_str().expect("a UTF-8 path");
    let filter = ["--function", function, "--binary", binary];
    let epct = t.dir.path().join("f.epct");
    let partial = t.dir.path().join("f.eppt");
    let epct_bytes = convert(&t.lackey, "epct", &filter, &epct);
    let partial_bytes = convert(&t.lackey, "partial", &filter, &partial);
    let from_epct = replay_json(&epct, &[]);
    let from_partial = replay_json(&partial, &[]);
    assert_eq!(from_partial["trace"]["format"], "partial");
    assert_eq!(
        from_partial["levels"], from_epct["levels"],
        "{function}: partial and epct replays of the same accesses"
    );
    assert_eq!(from_partial["records"], from_epct["records"]);
    (epct_bytes, partial_bytes, from_partial)
}

fn whole_program_matches_lackey(t: &Traced) {
    let partial = t.dir.path().join("all.eppt");
    convert(&t.lackey, "partial", &[], &partial);
    let from_lackey = replay_json(&t.lackey, &[]);
    let from_partial = replay_json(&partial, &[]);
    for level in ["D1", "LL"] {
        assert_eq!(
            from_partial["levels"][level], from_lackey["levels"][level],
            "whole program, {level}: partial trace vs lackey log"
        );
    }
    assert!(from_partial["levels"]["D1"]["reads"].as_u64().unwrap() > 10_000);
}

fn site_rows(json: &serde_json::Value, table: &str) -> Vec<serde_json::Value> {
    json[table].as_array().expect("a table").clone()
}

#[test]
fn matrix_multiply_partial_trace_is_exact_and_100x_smaller() {
    let Some(t) = traced("partial_matmul") else {
        return;
    };
    whole_program_matches_lackey(&t);
    let (epct, partial, json) = one_function(&t, "multiply");
    eprintln!("partial_matmul multiply: epct {epct} bytes, partial {partial} bytes");
    assert!(
        partial * 100 <= epct,
        "a regular kernel's partial trace ({partial} bytes) must be 100x smaller than its epct ({epct})"
    );
    let compression = &json["compression"];
    // All but the function's few stack accesses (its return, say) are in one descriptor per
    // site.
    assert!(
        compression["raw_accesses"].as_u64().unwrap() < 8,
        "{compression}"
    );
    assert!(
        compression["descriptors"].as_u64().unwrap() <= 4,
        "{compression}"
    );
    // The site table and the structures come from the program's DWARF.
    let sites = site_rows(&json, "sites");
    assert!(
        sites.iter().all(|s| s["function"] == "multiply"),
        "{sites:?}"
    );
    assert!(sites.iter().all(|s| {
        s["source"]
            .as_str()
            .is_some_and(|s| s.contains("partial_matmul.c:"))
    }));
    let structures: Vec<_> = site_rows(&json, "structures")
        .iter()
        .map(|s| s["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(structures, ["a", "b", "c", "(other)"], "(other): the stack");
    // B is read down its columns: with 8 KB of D1 and 18 KB per matrix, b's lines are evicted
    // (by b's own fills most) before the next j uses them.
    let b = site_rows(&json, "structures")
        .into_iter()
        .find(|s| s["name"] == "b")
        .unwrap();
    assert_eq!(b["accesses"], 48 * 48 * 48);
    assert_eq!(b["evicted_by"][0]["evictor"], "b", "{b}");
}

#[test]
fn gather_partial_trace_is_exact_and_no_larger_than_epct() {
    let Some(t) = traced("partial_gather") else {
        return;
    };
    whole_program_matches_lackey(&t);
    let (epct, partial, json) = one_function(&t, "gather");
    eprintln!("partial_gather gather: epct {epct} bytes, partial {partial} bytes");
    assert!(
        partial <= epct,
        "an irregular kernel's partial trace ({partial} bytes) must be no larger than its epct ({epct})"
    );
    let share = json["compression"]["described_share"].as_f64().unwrap();
    assert!(
        (0.6..0.7).contains(&share),
        "idx and y described, x raw: {share}"
    );
}

#[test]
fn curve_point_at_the_first_level_size_is_its_miss_ratio() {
    let Some(t) = traced("partial_matmul") else {
        return;
    };
    let partial = t.dir.path().join("m.eppt");
    let binary = t.program.to_str().unwrap();
    convert(
        &t.lackey,
        "partial",
        &["--function", "multiply", "--binary", binary],
        &partial,
    );
    let svg = t.dir.path().join("mrc.svg");
    let json = replay_json(&partial, &["--mrc", "2,32", "--svg", svg.to_str().unwrap()]);
    // Kept to one function, the trace says its caches start cold in every replay.
    let notes = json["recording_notes"].as_array().unwrap();
    assert!(
        notes
            .iter()
            .any(|n| n.as_str().unwrap().contains("a replay's caches start cold")),
        "{notes:?}"
    );
    // A load bias that puts the function where no access was made keeps nothing: refused,
    // nothing written, rather than an empty trace.
    let nothing = t.dir.path().join("nothing.eppt");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_epcache"))
        .args(["trace", "convert", "--from", "lackey", "--to", "partial"])
        .args([
            "--function",
            "multiply",
            "--binary",
            binary,
            "--load-bias",
            "0x40000000",
        ])
        .arg(&t.lackey)
        .arg(&nothing)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(said.contains("--load-bias") && !nothing.exists(), "{said}");
    let d1 = &json["levels"]["D1"];
    let field = |f: &str| d1[f].as_u64().unwrap();
    let expected = (field("read_misses") + field("write_misses")) as f64
        / (field("reads") + field("writes")) as f64;
    let all = json["mrc"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["structure"] == "(all)")
        .unwrap()
        .clone();
    let at_8k = all["points"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["size"] == 8192)
        .unwrap_or_else(|| panic!("no 8K point in {all}"));
    assert_eq!(at_8k["miss_ratio"].as_f64().unwrap(), expected);
    let drawn = std::fs::read_to_string(&svg).unwrap();
    assert!(
        drawn.starts_with("<svg") && drawn.contains(">b</text>"),
        "{drawn}"
    );
}
