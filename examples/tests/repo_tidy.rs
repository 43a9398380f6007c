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

/// The capture runtime's layers as `monitor-lib/src/capture/mod.rs` lists them under
/// `# Layers`: one list of module names per numbered item, in the order they are named.
fn capture_layers(face: &str, modules: &[String]) -> Vec<Vec<String>> {
    let section = face
        .split("//! # Layers")
        .nth(1)
        .expect("capture/mod.rs lists its layers under `//! # Layers`");
    let mut layers: Vec<Vec<String>> = Vec::new();
    // The rest of the heading's line first.
    for line in section.lines().skip(1) {
        let Some(text) = line.strip_prefix("//!").map(str::trim) else {
            break;
        };
        let numbered = text
            .split_once(". ")
            .is_some_and(|(n, _)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
        if numbered {
            layers.push(Vec::new());
        } else if text.is_empty() && !layers.is_empty() {
            break;
        }
        let Some(layer) = layers.last_mut() else {
            continue;
        };
        for name in text.split('`').skip(1).step_by(2) {
            if modules.iter().any(|m| m == name) && !layer.iter().any(|m| m == name) {
                layer.push(name.to_owned());
            }
        }
    }
    layers
}

/// The sibling modules a capture module's code names through `super::` (comments left out).
fn capture_uses(source: &str) -> Vec<String> {
    let code: String = source
        .lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    let ident = |s: &str| -> String {
        s.trim_start()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    let mut used = Vec::new();
    for (i, _) in code.match_indices("super::") {
        let rest = &code[i + "super::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // `super::{a, b::c, d::{e, f}}`: the first name of each top-level item.
            let mut depth = 0;
            let mut item_start = true;
            for (j, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => item_start = true,
                    c if item_start && !c.is_whitespace() => {
                        used.push(ident(&group[j..]));
                        item_start = false;
                    }
                    _ => {}
                }
            }
        } else {
            used.push(ident(rest));
        }
    }
    used
}

#[test]
fn capture_modules_use_only_their_own_layer_and_those_below() {
    let dir = repo_root().join("monitor-lib/src/capture");
    let mut modules: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .filter(|m| m != "mod")
        .collect();
    modules.sort();
    let face = std::fs::read_to_string(dir.join("mod.rs")).unwrap();
    let layers = capture_layers(&face, &modules);
    // (layer, place in it) of each module; every module in exactly one layer.
    let mut position = std::collections::BTreeMap::new();
    for (l, layer) in layers.iter().enumerate() {
        for (i, m) in layer.iter().enumerate() {
            assert!(
                position.insert(m.clone(), (l, i)).is_none(),
                "capture module `{m}` is listed in two layers of capture/mod.rs"
            );
        }
    }
    let unplaced: Vec<_> = modules
        .iter()
        .filter(|m| !position.contains_key(*m))
        .collect();
    assert!(
        unplaced.is_empty(),
        "capture/mod.rs's `# Layers` list places no layer for {unplaced:?}: name each module in \
         the layer it belongs to"
    );
    let mut upward = Vec::new();
    for m in &modules {
        let source = std::fs::read_to_string(dir.join(format!("{m}.rs"))).unwrap();
        for used in capture_uses(&source) {
            if let Some(&to) = position.get(&used)
                && used != *m
                && to < position[m]
            {
                upward.push(format!("{m} -> {used}"));
            }
        }
    }
    upward.sort();
    upward.dedup();
    assert!(
        upward.is_empty(),
        "capture modules use modules above them (an earlier layer, or earlier in their own \
         layer, in capture/mod.rs's `# Layers` list): {upward:#?}; move the code to the layer \
         where it belongs, or hand the lower module a function"
    );
}
