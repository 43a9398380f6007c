//! A Rust program built with SanitizerCoverage load/store tracing and linked with the
//! epcache-monitor rlib reports its own kernel's accesses (`examples/rust-capture/sum.rs`).

use std::path::Path;
use std::process::Command;

use crate::support::{SANCOV_FLAGS, monitor_rlib, profile_dir};

const N: u64 = 4096;

fn count(level: &serde_json::Value, field: &str) -> u64 {
    level[field]
        .as_u64()
        .unwrap_or_else(|| panic!("{field} in {level}"))
}

#[test]
fn sancov_instrumented_rust_reports_its_kernel() {
    let profile = profile_dir();
    // `cargo test` builds the rlib under a hashed name in deps/ and leaves any copy beside the
    // binaries as it was (possibly stale), so take the newest one: the one built for this run.
    let rlib = monitor_rlib();
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("rust-capture/sum.rs");
    let dir = tempfile::tempdir().unwrap();
    let program = dir.path().join("sum");
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_owned());
    let out = Command::new(rustc)
        .args(["--edition", "2024", "-C", "opt-level=1"])
        .args(SANCOV_FLAGS)
        .arg("--extern")
        .arg(format!("epcache_monitor={}", rlib.display()))
        .arg("-L")
        .arg(format!("dependency={}", profile.join("deps").display()))
        .arg("-o")
        .arg(&program)
        .arg(&source)
        .output()
        .expect("running rustc");
    assert!(
        out.status.success(),
        "rustc failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = Command::new(&program)
        .env("EPCACHE_CACHE", "D1=4K,4,64")
        .env_remove("EPCACHE_REPORT")
        .output()
        .unwrap();
    assert!(run.status.success());
    let stdout = String::from_utf8_lossy(&run.stdout).into_owned();
    let (sum, report) = stdout.split_once('\n').unwrap();
    assert_eq!(sum, (N * (N - 1) / 2).to_string());
    let report: serde_json::Value = serde_json::from_str(report).unwrap();
    let d1 = &report["levels"][0];
    assert_eq!(d1["name"], "D1");
    // Instrumented Rust also loads and stores a few slice pointers, lengths and black_box's
    // stack slot, so the counts are the hand counts plus a handful; never fewer.
    let reads = count(d1, "reads");
    let writes = count(d1, "writes");
    assert!((N..N + 32).contains(&reads), "reads {reads}");
    assert!((N..N + 32).contains(&writes), "writes {writes}");
    // A 16 KB array in a 4 KB cache: 256 or 257 lines per sweep, plus the handful.
    let read_misses = count(d1, "read_misses");
    assert!((256..256 + 16).contains(&read_misses), "{read_misses}");

    report_gives_the_kernel_its_accesses(&program, dir.path());
}

/// Runs `sum` with `EPCACHE_REPORT` (in `dir`) and checks the standalone report: the sum
/// printed, the kernel's accesses plus the handful of stack ones at D1, and the registered
/// slice named with exactly the kernel's accesses (the extra ones are not to `values`).
fn report_gives_the_kernel_its_accesses(program: &Path, dir: &Path) {
    let report_file = dir.join("report.json");
    let run = Command::new(program)
        .env("EPCACHE_CACHE", "D1=4K,4,64")
        .env("EPCACHE_REPORT", &report_file)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let stdout = String::from_utf8_lossy(&run.stdout).into_owned();
    assert_eq!(
        stdout.lines().next(),
        Some((N * (N - 1) / 2).to_string().as_str())
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report_file).unwrap()).unwrap();
    let d1 = &report["levels"][0];
    let (reads, writes) = (count(d1, "reads"), count(d1, "writes"));
    assert!((N..N + 32).contains(&reads), "reads {reads}");
    assert!((N..N + 32).contains(&writes), "writes {writes}");
    let program_region = report["regions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "program")
        .expect("the program region");
    let values = program_region["data_structures"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["name"] == "values")
        .unwrap_or_else(|| panic!("`values` is not named: {program_region:#}"));
    assert_eq!(values["bytes"], N * 4);
    assert_eq!(values["events"]["PAPI_L1_DCR"], N);
    assert_eq!(values["events"]["PAPI_L1_DCW"], N);
}

/// README's recipe exactly, in a crate of its own that depends on epcache-monitor by path:
/// `cargo rustc --release --bin <name> -- <the sancov flags>` instruments the final crate only
/// (an instrumented epcache-monitor would call its own hooks from inside them), and the program
/// counts its kernel. Built offline, in a target directory of its own, with this workspace's
/// lock file so the dependencies are the ones already downloaded.
#[test]
fn readme_cargo_rustc_recipe_builds_a_captured_crate() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let krate = dir.path().join("sumkernel");
    std::fs::create_dir_all(krate.join("src")).unwrap();
    std::fs::write(
        krate.join("Cargo.toml"),
        format!(
            "[package]\nname = \"sumkernel\"\nversion = \"0.1.0\"\nedition = \"2024\"\n\n\
             [dependencies]\nepcache-monitor = {{ path = \"{}\" }}\n\n[workspace]\n",
            repo.join("monitor-lib").display()
        ),
    )
    .unwrap();
    std::fs::copy(
        repo.join("examples/rust-capture/sum.rs"),
        krate.join("src/main.rs"),
    )
    .unwrap();
    std::fs::copy(repo.join("Cargo.lock"), krate.join("Cargo.lock")).unwrap();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let out = Command::new(cargo)
        .args([
            "rustc",
            "--offline",
            "--release",
            "--bin",
            "sumkernel",
            "--",
        ])
        .args(SANCOV_FLAGS)
        .env("CARGO_TARGET_DIR", dir.path().join("target"))
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .current_dir(&krate)
        .output()
        .expect("running cargo rustc");
    assert!(
        out.status.success(),
        "cargo rustc failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    report_gives_the_kernel_its_accesses(&dir.path().join("target/release/sumkernel"), dir.path());
}
