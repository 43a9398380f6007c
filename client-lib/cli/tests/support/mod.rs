//! Running real gcc and Valgrind for the replay tests and the replay-vs-Cachegrind bench.
//!
//! Valgrind runs are deterministic, but only for the same environment, working directory and
//! kinds of stdout and stderr: glibc's start-up and stdio take different paths otherwise (stdout
//! on /dev/null versus a file changed Ir by 54 here). So every run below is started the same way.

// Each user (a test file, the bench) needs only some of these helpers.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Cachegrind's nine cache events, in the order of its `events:` line.
pub(crate) const EVENTS: [&str; 9] = [
    "Ir", "I1mr", "ILmr", "Dr", "D1mr", "DLmr", "Dw", "D1mw", "DLmw",
];

/// One cache shape in Cachegrind's `S,A,L` syntax.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Shape {
    pub(crate) i1: &'static str,
    pub(crate) d1: &'static str,
    pub(crate) ll: &'static str,
}

impl Shape {
    /// `--I1=.. --D1=.. --LL=..`, the same for Cachegrind and `epcache replay`.
    pub(crate) fn args(&self) -> [String; 3] {
        [
            format!("--I1={}", self.i1),
            format!("--D1={}", self.d1),
            format!("--LL={}", self.ll),
        ]
    }
}

/// Whether gcc and valgrind can run here. Missing tools fail loudly under CI (`CI=true`), and
/// otherwise skip loudly, so a developer without Valgrind still gets the other tests.
pub(crate) fn tools_available(who: &str) -> bool {
    let missing: Vec<&str> = ["gcc", "valgrind"]
        .into_iter()
        .filter(|tool| {
            Command::new(tool)
                .arg("--version")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .map_or(true, |s| !s.success())
        })
        .collect();
    if missing.is_empty() {
        return true;
    }
    let message = format!(
        "{who}: {} not found; these checks compare epcache with real Valgrind runs (apt-get install -y gcc valgrind)",
        missing.join(" and ")
    );
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("FAILED under CI: {message}");
    }
    eprintln!("\n*** SKIPPED *** {message}\n");
    false
}

/// Compiles `client-lib/tests/kernels/<name>.c` with `gcc -O2` into `dir`.
pub(crate) fn compile_kernel(name: &str, dir: &Path, defines: &[&str]) -> PathBuf {
    let source = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/kernels")
        .join(format!("{name}.c"));
    let binary = dir.join(name);
    let out = Command::new("gcc")
        .args(["-O2", "-o"])
        .arg(&binary)
        .args(defines)
        .arg(&source)
        .output()
        .expect("running gcc");
    assert!(
        out.status.success(),
        "gcc {} failed:\n{}",
        source.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    binary
}

fn valgrind(dir: &Path, tool_args: &[String], program: &Path) {
    let out = Command::new("valgrind")
        .args(tool_args)
        .arg(program)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .expect("running valgrind");
    assert!(
        out.status.success(),
        "valgrind {tool_args:?} {} failed:\n{}",
        program.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Records `program`'s lackey memory trace into `trace`.
pub(crate) fn lackey_trace(program: &Path, trace: &Path) {
    let dir = program.parent().expect("program in a directory");
    let args = [
        "--tool=lackey".to_owned(),
        "--trace-mem=yes".to_owned(),
        format!("--log-file={}", trace.display()),
    ];
    valgrind(dir, &args, program);
}

/// Runs `program` under Cachegrind with `shape` and returns its summary, event name to count.
pub(crate) fn cachegrind_counts(program: &Path, shape: &Shape) -> BTreeMap<String, u64> {
    let dir = program.parent().expect("program in a directory");
    let out_file = dir.join(format!(
        "cachegrind.{}.{}.{}.out",
        shape.i1, shape.d1, shape.ll
    ));
    let mut args = vec!["--tool=cachegrind".to_owned(), "--cache-sim=yes".to_owned()];
    args.extend(shape.args());
    args.push(format!("--cachegrind-out-file={}", out_file.display()));
    valgrind(dir, &args, program);
    let text = std::fs::read_to_string(&out_file).expect("reading Cachegrind's output");
    let line = |prefix: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(prefix))
            .unwrap_or_else(|| panic!("no `{prefix}` line in {}", out_file.display()))
            .split_whitespace()
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    let names = line("events:");
    let values = line("summary:");
    assert_eq!(names.len(), values.len(), "events and summary disagree");
    names
        .into_iter()
        .zip(values.iter().map(|v| v.parse().expect("a count")))
        .collect()
}

/// Cachegrind's nine events taken from `epcache replay --json` output by way of the level
/// fields (not the `cachegrind` object), so the test checks what users read.
pub(crate) fn events_from_replay_json(json: &serde_json::Value) -> BTreeMap<String, u64> {
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
