//! Repository-wide rules that no compiler checks: module docs, where unsafe code may live, what
//! each crate root says about unsafe code, the workspace lints, which crates may link the
//! runtime, one integration-test binary per crate with no files borrowed by path, fmt, the
//! capture runtime's layers, and no circle of uses among the files of a folder.

use std::path::{Path, PathBuf};

use epcache_test_support::tools::under_ci;

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
        "monitor-lib/shm/src/sysv.rs",
        "monitor-lib/shm/src/futex.rs",
        "monitor-lib/src/capture/tsan_abi.rs",
        "monitor-lib/src/capture/sancov_abi.rs",
        "monitor-lib/src/capture/c_abi.rs",
        "monitor-lib/src/capture/alloc_abi.rs",
        "monitor-lib/src/capture/gate_abi.rs",
        "monitor-lib/src/capture/signal_abi.rs",
        "monitor-lib/src/capture/process_end_abi.rs",
        "monitor-lib/src/capture/wrap_abi.rs",
        "monitor-lib/src/capture/thread_block.rs",
        "monitor-lib/src/capture/streaming.rs",
        "monitor-lib/src/runtime_heap.rs",
        "monitor-lib/symbols/src/running_executable.rs",
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

/// The workspace's members, as `cargo metadata --no-deps` lists them (no download needed).
fn workspace_packages() -> Vec<serde_json::Value> {
    let out = std::process::Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(repo_root())
        .output()
        .expect("running cargo metadata");
    assert!(
        out.status.success(),
        "cargo metadata failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let metadata: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("cargo metadata prints JSON");
    metadata["packages"].as_array().unwrap().clone()
}

fn name(package: &serde_json::Value) -> &str {
    package["name"].as_str().unwrap()
}

/// The workspace crates `package` depends on as a normal dependency that no feature has to turn
/// on (no epcache crate has default features), and theirs, and so on.
fn required_closure<'a>(packages: &'a [serde_json::Value], root: &str) -> Vec<&'a str> {
    let mut seen: Vec<&str> = Vec::new();
    let mut todo = vec![root.to_owned()];
    while let Some(next) = todo.pop() {
        let Some(package) = packages.iter().find(|p| name(p) == next) else {
            continue;
        };
        if seen.contains(&name(package)) {
            continue;
        }
        seen.push(name(package));
        for dep in package["dependencies"].as_array().unwrap() {
            if dep["kind"].is_null() && dep["optional"] == false {
                todo.push(dep["name"].as_str().unwrap().to_owned());
            }
        }
    }
    seen
}

#[test]
fn every_crate_forbids_unsafe_code_or_says_why_it_needs_it() {
    let mut wrong = Vec::new();
    for package in workspace_packages() {
        for target in package["targets"].as_array().unwrap() {
            let kinds: Vec<&str> = target["kind"]
                .as_array()
                .unwrap()
                .iter()
                .map(|k| k.as_str().unwrap())
                .collect();
            if !kinds
                .iter()
                .any(|k| ["lib", "rlib", "staticlib", "bin"].contains(k))
                || target["src_path"].as_str().unwrap().contains("/src/bin/")
            {
                continue;
            }
            let path = target["src_path"].as_str().unwrap();
            let text = std::fs::read_to_string(path).unwrap();
            let forbids = text.contains("#![forbid(unsafe_code)]");
            let says_why =
                text.starts_with("//! Unsafe code: ") && text.contains("#![deny(unsafe_code)]");
            if !forbids && !says_why {
                wrong.push(path.to_owned());
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "these crate roots must `#![forbid(unsafe_code)]`, or start with `//! Unsafe code: <where \
         and why>` and `#![deny(unsafe_code)]` with an allow on each module that needs it: \
         {wrong:#?}"
    );
}

#[test]
fn every_crate_takes_the_workspace_lints() {
    let missing: Vec<String> = workspace_packages()
        .iter()
        .filter(|p| {
            let manifest = std::fs::read_to_string(p["manifest_path"].as_str().unwrap()).unwrap();
            !manifest.contains("[lints]\nworkspace = true")
        })
        .map(|p| name(p).to_owned())
        .collect();
    assert!(
        missing.is_empty(),
        "these crates need `[lints]` `workspace = true` in their Cargo.toml: {missing:?}"
    );
}

/// The runtime (`epcache-monitor`, the one crate that builds a staticlib) is linked into
/// monitored programs only: the daemon and a client without features never compile it, and
/// only the command line (which has cargo build the staticlib beside it for `epcache cc`) and
/// the examples (whose Rust programs link it) depend on it.
#[test]
fn only_the_command_line_and_the_examples_depend_on_the_runtime() {
    let packages = workspace_packages();
    let staticlibs: Vec<&str> = packages
        .iter()
        .filter(|p| p.to_string().contains("\"staticlib\""))
        .map(name)
        .collect();
    assert_eq!(staticlibs, ["epcache-monitor"]);
    let daemon = required_closure(&packages, "epcache-daemon");
    assert!(
        !daemon.iter().any(|c| staticlibs.contains(c)),
        "the daemon depends on the runtime: {daemon:?}"
    );
    let client = required_closure(&packages, "epcache-client");
    assert!(
        !client.contains(&"epcache-daemon") && !client.contains(&"epcache-monitor"),
        "epcache-client without features depends on the daemon or the runtime: {client:?}"
    );
    let mut dependents: Vec<&str> = packages
        .iter()
        .filter(|p| {
            p["dependencies"]
                .as_array()
                .unwrap()
                .iter()
                .any(|d| d["name"] == "epcache-monitor" && d["kind"].is_null())
        })
        .map(name)
        .collect();
    dependents.sort_unstable();
    assert_eq!(dependents, ["epcache-cli", "epcache-examples"]);
}

/// Each crate's integration tests are modules of one test binary, `tests/it/main.rs` (as
/// ripgrep's are): one link and one process for all of them, and what they share is a module or
/// `epcache-test-support`, never a copy. A `tests/NAME.rs` would be a binary of its own.
#[test]
fn every_crate_has_at_most_one_integration_test_binary_tests_it() {
    let mut wrong = Vec::new();
    for package in workspace_packages() {
        let tests: Vec<&serde_json::Value> = package["targets"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["kind"].as_array().unwrap().iter().any(|k| k == "test"))
            .collect();
        let one_it = match tests.as_slice() {
            [] => true,
            [it] => {
                it["name"] == "it"
                    && it["src_path"]
                        .as_str()
                        .unwrap()
                        .ends_with("/tests/it/main.rs")
            }
            _ => false,
        };
        if !one_it {
            let names: Vec<&str> = tests.iter().map(|t| t["name"].as_str().unwrap()).collect();
            wrong.push(format!("{}: test targets {names:?}", name(&package)));
        }
        let manifest = Path::new(package["manifest_path"].as_str().unwrap());
        let tests_dir = manifest.parent().unwrap().join("tests");
        let Ok(entries) = std::fs::read_dir(&tests_dir) else {
            continue;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|x| x == "rs") {
                wrong.push(format!("{}: {}", name(&package), path.display()));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "integration tests are modules of one binary per crate: move each `tests/NAME.rs` to \
         `tests/it/NAME.rs` and add `mod NAME;` to `tests/it/main.rs` (shared helpers go in a \
         module of `it`, or in epcache-test-support when several crates use them): {wrong:#?}"
    );
}

/// Tests and benches take what they share from their own modules or `epcache-test-support`,
/// never by including another file with a `path` attribute.
#[test]
fn no_test_or_bench_includes_a_file_by_path() {
    let root = repo_root();
    let offenders: Vec<_> = sources()
        .into_iter()
        .filter(|p| {
            let rel = p.strip_prefix(&root).unwrap();
            let in_tests = rel
                .components()
                .any(|c| c.as_os_str() == "tests" || c.as_os_str() == "benches");
            if !in_tests || rel.ends_with("repo_tidy.rs") {
                return false;
            }
            let text = std::fs::read_to_string(p).unwrap();
            text.lines().any(|l| {
                let code = l.split("//").next().unwrap_or("").replace(' ', "");
                code.contains("#[path") || code.contains("#![path")
            })
        })
        .collect();
    assert!(
        offenders.is_empty(),
        "these tests or benches include files by `#[path = ...]`: use a module of the crate's \
         `tests/it` or epcache-test-support instead: {offenders:#?}"
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
            assert!(!under_ci(), "cargo fmt could not run in CI: {e}");
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
    names_after(source, "super::")
}

/// The first names of the paths that follow `prefix` in `source` (comments left out).
fn names_after(source: &str, prefix: &str) -> Vec<String> {
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
    for (i, _) in code.match_indices(prefix) {
        let rest = &code[i + prefix.len()..];
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

/// The files of one folder use one another in one direction: no circle of `super::` uses (and
/// `crate::` uses at a crate's root) among the modules a folder's files are, so each folder reads
/// as layers from the leaves up. The folder's `mod.rs`, `lib.rs` or `main.rs` declares the
/// others and is left out; a circle found names its files and what to do.
#[test]
fn the_files_of_a_folder_use_one_another_in_one_direction() {
    let mut folders: std::collections::BTreeMap<PathBuf, Vec<PathBuf>> = Default::default();
    for file in sources() {
        let folder = file.parent().unwrap().to_path_buf();
        folders.entry(folder).or_default().push(file);
    }
    let mut circles = Vec::new();
    for (folder, files) in &folders {
        let hub = |f: &Path| {
            matches!(
                f.file_stem().unwrap().to_str(),
                Some("mod" | "lib" | "main")
            )
        };
        let crate_root = files
            .iter()
            .any(|f| f.ends_with("lib.rs") || f.ends_with("main.rs"))
            && folder.ends_with("src");
        let modules: Vec<String> = files
            .iter()
            .filter(|f| !hub(f))
            .map(|f| f.file_stem().unwrap().to_string_lossy().into_owned())
            .collect();
        let uses: Vec<Vec<usize>> = modules
            .iter()
            .map(|m| {
                let source = std::fs::read_to_string(folder.join(format!("{m}.rs"))).unwrap();
                let mut named = names_after(&source, "super::");
                if crate_root {
                    named.extend(names_after(&source, "crate::"));
                }
                let mut to: Vec<usize> = named
                    .iter()
                    .filter_map(|n| modules.iter().position(|o| o == n))
                    .filter(|&o| modules[o] != *m)
                    .collect();
                to.sort_unstable();
                to.dedup();
                to
            })
            .collect();
        for circle in circles_of(&uses) {
            let names: Vec<&str> = circle.iter().map(|&i| modules[i].as_str()).collect();
            let shown = folder.strip_prefix(repo_root()).unwrap_or(folder);
            circles.push(format!("{}: {}", shown.display(), names.join(" <-> ")));
        }
    }
    assert!(
        circles.is_empty(),
        "these files use one another in a circle: {circles:#?}; move what both need into a \
         module of its own that neither uses back (`farm-studio look` draws the uses)"
    );
}

/// The strongly connected groups of more than one node of a directed graph (`uses[i]` are the
/// nodes `i` points at), each as its nodes in order: Tarjan's algorithm.
fn circles_of(uses: &[Vec<usize>]) -> Vec<Vec<usize>> {
    struct Walk<'a> {
        uses: &'a [Vec<usize>],
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        stack: Vec<usize>,
        on_stack: Vec<bool>,
        next: usize,
        found: Vec<Vec<usize>>,
    }
    impl Walk<'_> {
        fn visit(&mut self, v: usize) {
            self.index[v] = Some(self.next);
            self.low[v] = self.next;
            self.next += 1;
            self.stack.push(v);
            self.on_stack[v] = true;
            for &w in &self.uses[v] {
                match self.index[w] {
                    None => {
                        self.visit(w);
                        self.low[v] = self.low[v].min(self.low[w]);
                    }
                    Some(i) if self.on_stack[w] => self.low[v] = self.low[v].min(i),
                    Some(_) => {}
                }
            }
            if Some(self.low[v]) == self.index[v] {
                let mut group = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack[w] = false;
                    group.push(w);
                    if w == v {
                        break;
                    }
                }
                if group.len() > 1 {
                    group.sort_unstable();
                    self.found.push(group);
                }
            }
        }
    }
    let n = uses.len();
    let mut walk = Walk {
        uses,
        index: vec![None; n],
        low: vec![0; n],
        stack: Vec::new(),
        on_stack: vec![false; n],
        next: 0,
        found: Vec::new(),
    };
    for v in 0..n {
        if walk.index[v].is_none() {
            walk.visit(v);
        }
    }
    walk.found
}

#[test]
fn a_circle_of_three_is_found_and_a_chain_is_not() {
    assert_eq!(
        circles_of(&[vec![1], vec![2], vec![0], vec![0]]),
        vec![vec![0, 1, 2]]
    );
    assert!(circles_of(&[vec![1, 2], vec![2], vec![]]).is_empty());
}

/// ARCHITECTURE.md stays a map a newcomer reads in one sitting: a word budget, one sentence per
/// line (so no line grows into a paragraph), and a code-map heading for every crate of the
/// workspace, naming it in backticks.
#[test]
fn the_architecture_document_stays_a_map_of_every_crate() {
    const WORD_BUDGET: usize = 4_000;
    const LONGEST_LINE: usize = 400;
    let path = repo_root().join("ARCHITECTURE.md");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));

    let words = text.split_whitespace().count();
    assert!(
        words <= WORD_BUDGET,
        "ARCHITECTURE.md has {words} words, over its budget of {WORD_BUDGET}: move reasons into \
         the modules' `//!` docs, figures into docs/performance.md, history into commit messages"
    );

    let long: Vec<String> = text
        .lines()
        .enumerate()
        .filter(|(_, line)| line.chars().count() > LONGEST_LINE)
        .map(|(n, line)| format!("line {}: {} characters", n + 1, line.chars().count()))
        .collect();
    assert!(
        long.is_empty(),
        "ARCHITECTURE.md puts one sentence per line, none over {LONGEST_LINE} characters: {long:#?}"
    );

    let headings: Vec<&str> = text.lines().filter(|l| l.starts_with("### ")).collect();
    let unmapped: Vec<String> = workspace_packages()
        .iter()
        .map(|p| name(p).to_owned())
        .filter(|crate_name| {
            let named = format!("`{crate_name}`");
            !headings.iter().any(|h| h.contains(&named))
        })
        .collect();
    assert!(
        unmapped.is_empty(),
        "ARCHITECTURE.md's code map has no `### ...` heading naming these crates: {unmapped:?}"
    );
}
