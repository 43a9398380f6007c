//! Repository-wide rules that no compiler checks: module docs, where unsafe code may live, fmt.

use std::path::{Path, PathBuf};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("examples/ sits in the repository root")
        .to_path_buf()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
    {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            if name != "target" && !name.starts_with('.') {
                rust_files(&path, out);
            }
        } else if name.ends_with(".rs") {
            out.push(path);
        }
    }
}

fn sources() -> Vec<PathBuf> {
    let root = repo_root();
    let mut files = Vec::new();
    for krate in ["proto", "monitor-lib", "client-lib", "daemon", "examples"] {
        rust_files(&root.join(krate), &mut files);
    }
    assert!(files.len() > 10, "found only {} Rust files", files.len());
    files
}

#[test]
fn every_rust_file_starts_with_a_module_doc() {
    let missing: Vec<_> = sources()
        .into_iter()
        .filter(|p| {
            let text = std::fs::read_to_string(p).unwrap();
            !text.trim_start().starts_with("//!")
        })
        .collect();
    assert!(
        missing.is_empty(),
        "these files must start with a `//!` line saying what they are for: {missing:#?}"
    );
}

#[test]
fn unsafe_code_lives_only_in_the_named_modules() {
    // The modules allowed to hold unsafe code, relative to the repository root. ARCHITECTURE.md
    // names the same list; both change together.
    const ALLOWED: &[&str] = &[
        "monitor-lib/src/shm/sysv.rs",
        "monitor-lib/src/shm/futex.rs",
        "monitor-lib/src/capture/tsan_abi.rs",
        "monitor-lib/src/capture/sancov_abi.rs",
        "monitor-lib/src/capture/c_abi.rs",
        "monitor-lib/src/capture/alloc_abi.rs",
        "monitor-lib/src/capture/gate_abi.rs",
        "monitor-lib/src/capture/signal_abi.rs",
        "monitor-lib/src/capture/process_end_abi.rs",
        "monitor-lib/src/capture/wrap_abi.rs",
        "monitor-lib/src/capture/thread_block.rs",
        "monitor-lib/src/symbols/running_executable.rs",
    ];
    let root = repo_root();
    let offenders: Vec<_> = sources()
        .into_iter()
        .filter(|p| {
            let rel = p
                .strip_prefix(&root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            if ALLOWED.contains(&rel.as_str()) || rel.ends_with("repo_tidy.rs") {
                return false;
            }
            let text = std::fs::read_to_string(p).unwrap();
            text.lines().any(|l| {
                let code = l.split("//").next().unwrap_or("");
                code.contains("unsafe ") || code.contains("unsafe{")
            })
        })
        .collect();
    assert!(
        offenders.is_empty(),
        "unsafe code outside the modules ARCHITECTURE.md allows: {offenders:#?}"
    );
}

#[test]
fn code_is_formatted() {
    let status = std::process::Command::new(env!("CARGO"))
        .args(["fmt", "--all", "--", "--check"])
        .current_dir(repo_root())
        .status();
    match status {
        Ok(s) => assert!(
            s.success(),
            "`cargo fmt --all` would change files: run it and commit"
        ),
        Err(e) => {
            let ci = std::env::var("CI").is_ok_and(|v| v == "true");
            assert!(!ci, "cargo fmt could not run in CI: {e}");
            eprintln!("SKIPPED code_is_formatted: cargo fmt could not run here: {e}");
        }
    }
}
