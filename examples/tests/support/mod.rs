//! Shared by the reproduction tests: building the example programs with `epcache cc` and with
//! plain gcc/gfortran, running Cachegrind and reading its per-function counts, reading epcache's
//! standalone report.
//!
//! Missing tools (gcc, gfortran, valgrind, rustc) fail loudly under CI (`CI=true`) and otherwise
//! print SKIPPED, as every compiler-backed test in the repository does.

// Each test file uses only some of these helpers.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use serde_json::Value;

/// One simulated L1 and one level below it, written for both tools.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Shape {
    /// (size in bytes, ways, line bytes)
    pub(crate) d1: (u64, u64, u64),
    pub(crate) ll: (u64, u64, u64),
}

impl Shape {
    /// METRIC's MIPS R12000 L1 (32 KB, 2-way, 32 B lines); the level below is not in the paper.
    pub(crate) const R12000: Shape = Shape {
        d1: (32 << 10, 2, 32),
        ll: (1 << 20, 16, 64),
    };
    /// The EP-Cache Gauss figures of DESIGN.md: an 8 KB, 2-way, 32 B-line L1.
    pub(crate) const GAUSS: Shape = Shape {
        d1: (8 << 10, 2, 32),
        ll: (1 << 20, 16, 64),
    };
    /// The cache-reuse paper's Pentium M: 32 KB and 1 MB, both 8-way with 64 B lines.
    pub(crate) const PENTIUM_M: Shape = Shape {
        d1: (32 << 10, 8, 64),
        ll: (1 << 20, 8, 64),
    };
    /// DTrack's Alpha 21264-like DL1 (64 KB, 2-way, 64 B) and direct-mapped 512 KB L2.
    pub(crate) const DTRACK: Shape = Shape {
        d1: (64 << 10, 2, 64),
        ll: (512 << 10, 1, 64),
    };

    /// `EPCACHE_CACHE`'s syntax. The lower level is called L2 so its events are `PAPI_L2_*`.
    pub(crate) fn epcache_spec(&self) -> String {
        let (s, a, l) = self.d1;
        let (ls, la, ll) = self.ll;
        format!("D1={s},{a},{l};L2={ls},{la},{ll}")
    }

    /// Cachegrind's `--I1 --D1 --LL`; I1 is not compared, so any valid shape does.
    pub(crate) fn cachegrind_args(&self) -> [String; 3] {
        let (s, a, l) = self.d1;
        let (ls, la, ll) = self.ll;
        [
            "--I1=32768,8,64".to_owned(),
            format!("--D1={s},{a},{l}"),
            format!("--LL={ls},{la},{ll}"),
        ]
    }
}

fn ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

/// Skips loudly, or fails under CI.
pub(crate) fn skip(who: &str, why: &str) {
    let message = format!("{who}: {why}");
    assert!(!ci(), "FAILED under CI: {message}");
    eprintln!("\n*** SKIPPED *** {message}\n");
}

/// Whether every one of `tools` runs here (`tool --version`); says which are missing otherwise.
pub(crate) fn tools_available(who: &str, tools: &[&str]) -> bool {
    let missing: Vec<&str> = tools
        .iter()
        .copied()
        .filter(|tool| {
            !Command::new(tool)
                .arg("--version")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        })
        .collect();
    if missing.is_empty() {
        return true;
    }
    skip(
        who,
        &format!(
            "{} not found; these tests build the examples and compare with Cachegrind \
             (apt-get install -y gcc gfortran valgrind)",
            missing.join(" and ")
        ),
    );
    false
}

/// The repository's `examples/` directory.
pub(crate) fn examples_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A source under `examples/`, e.g. `c/gauss.c`.
pub(crate) fn source(relative: &str) -> PathBuf {
    let path = examples_dir().join(relative);
    assert!(path.is_file(), "missing example source {}", path.display());
    path
}

/// `target/<profile>`, where cargo put this test and the crates it was built against.
pub(crate) fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    // target/<profile>/deps/<this test>
    exe.parent()
        .and_then(Path::parent)
        .expect("the test runs from target/<profile>/deps")
        .to_path_buf()
}

/// The `epcache` binary and the runtime library `epcache cc` links.
#[derive(Debug, Clone)]
pub(crate) struct Epcache {
    pub(crate) binary: PathBuf,
    pub(crate) runtime: PathBuf,
}

/// Builds (or finds up to date) `epcache` and `libepcache_monitor.a` in this test's profile, once
/// per test binary: they belong to other packages, so cargo does not build them for these tests.
/// This is the README's `cargo build -p epcache-monitor -p epcache-cli`; cargo holds no lock
/// while tests run, and when the workspace was just built it does nothing.
pub(crate) fn epcache() -> &'static Epcache {
    static BUILT: OnceLock<Epcache> = OnceLock::new();
    BUILT.get_or_init(|| {
        let profile_dir = profile_dir();
        let profile = match profile_dir.file_name().and_then(|n| n.to_str()) {
            Some("debug") => "dev".to_owned(),
            Some(name) => name.to_owned(),
            None => panic!("no profile in {}", profile_dir.display()),
        };
        let out = Command::new(env!("CARGO"))
            .args(["build", "--profile", &profile])
            .args(["-p", "epcache-monitor", "-p", "epcache-cli"])
            .current_dir(examples_dir())
            .output()
            .expect("running cargo build for epcache and its runtime");
        assert!(
            out.status.success(),
            "cargo build -p epcache-monitor -p epcache-cli failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let built = Epcache {
            binary: profile_dir.join("epcache"),
            runtime: profile_dir.join("libepcache_monitor.a"),
        };
        assert!(built.binary.is_file(), "{} missing", built.binary.display());
        assert!(
            built.runtime.is_file(),
            "{} missing",
            built.runtime.display()
        );
        built
    })
}

fn check_output(what: &str, out: &std::process::Output) {
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A program built from one source, `compiler -O<level> [extra] -o NAME SOURCE [libs]`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Build<'a> {
    /// `gcc` or `gfortran`.
    pub(crate) compiler: &'a str,
    /// Under `examples/`.
    pub(crate) source: &'a str,
    /// `-O1`: both builds get the same level, so the compiler emits the same loads and stores.
    pub(crate) opt: &'a str,
    /// Flags before the source (`-DEPCACHE_MARKERS`).
    pub(crate) extra: &'a [&'a str],
    /// Libraries after it (`-lm`).
    pub(crate) libs: &'a [&'a str],
}

impl Build<'_> {
    fn command_line(&self, output: &Path, extra_flags: &[&str]) -> Vec<String> {
        let mut line = vec![self.compiler.to_owned(), self.opt.to_owned()];
        line.extend(extra_flags.iter().map(|s| (*s).to_owned()));
        line.extend(self.extra.iter().map(|s| (*s).to_owned()));
        line.push("-o".to_owned());
        line.push(output.display().to_string());
        line.push(source(self.source).display().to_string());
        line.extend(self.libs.iter().map(|s| (*s).to_owned()));
        line
    }

    /// The plain build Cachegrind runs: `-g` for its per-function and per-line attribution.
    pub(crate) fn plain(&self, dir: &Path, name: &str) -> PathBuf {
        let output = dir.join(name);
        let line = self.command_line(&output, &["-g"]);
        let out = Command::new(&line[0])
            .args(&line[1..])
            .current_dir(dir)
            .output()
            .unwrap_or_else(|e| panic!("running {}: {e}", line[0]));
        check_output(&line.join(" "), &out);
        output
    }

    /// The captured build: `epcache cc -- <the same command line>`.
    pub(crate) fn with_epcache(&self, dir: &Path, name: &str) -> PathBuf {
        let epcache = epcache();
        let output = dir.join(name);
        let line = self.command_line(&output, &[]);
        let out = Command::new(&epcache.binary)
            .env("EPCACHE_RUNTIME", &epcache.runtime)
            .arg("cc")
            .arg("--")
            .args(&line)
            .current_dir(dir)
            .output()
            .expect("running epcache cc");
        check_output(&format!("epcache cc -- {}", line.join(" ")), &out);
        output
    }
}

/// Runs `program args` and returns its stdout, failing on a non-zero exit (the examples check
/// their own results and exit 1 when one is wrong).
pub(crate) fn run(program: &Path, args: &[&str]) -> String {
    let out = Command::new(program)
        .args(args)
        .env_remove("EPCACHE_REPORT")
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("running {}: {e}", program.display()));
    check_output(&program.display().to_string(), &out);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Cachegrind's data-side counts for one function, summed over its source files.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct CgCounts {
    pub(crate) dr: u64,
    pub(crate) d1mr: u64,
    pub(crate) dw: u64,
    pub(crate) d1mw: u64,
    pub(crate) dlmr: u64,
    pub(crate) dlmw: u64,
}

impl CgCounts {
    pub(crate) fn accesses(&self) -> u64 {
        self.dr + self.dw
    }

    pub(crate) fn misses(&self) -> u64 {
        self.d1mr + self.d1mw
    }

    /// METRIC's miss ratio: L1 misses over L1 accesses, reads and writes together.
    pub(crate) fn miss_ratio(&self) -> f64 {
        self.misses() as f64 / self.accesses() as f64
    }
}

/// One Cachegrind run: the program's stdout, each function's counts and each source file's.
#[derive(Debug, Clone)]
pub(crate) struct CgRun {
    pub(crate) stdout: String,
    pub(crate) functions: BTreeMap<String, CgCounts>,
    pub(crate) files: BTreeMap<String, CgCounts>,
}

impl CgRun {
    /// The counts of the function named `name`, or of the one whose name ends in `suffix` when
    /// the exact name is absent (Fortran's `__mod_MOD_name`, Rust's `crate::name`).
    pub(crate) fn function(&self, name: &str) -> CgCounts {
        if let Some(c) = self.functions.get(name) {
            return *c;
        }
        let matches: Vec<_> = self
            .functions
            .iter()
            .filter(|(f, _)| {
                f.ends_with(&format!("_MOD_{name}")) || f.ends_with(&format!("::{name}"))
            })
            .collect();
        match matches.as_slice() {
            [(_, c)] => **c,
            _ => panic!(
                "no single Cachegrind function for `{name}` (found {:?}) among {:?}",
                matches.iter().map(|m| m.0).collect::<Vec<_>>(),
                self.functions.keys().collect::<Vec<_>>()
            ),
        }
    }

    /// The counts of all code in the source file whose path ends with `suffix` (`c/adi.c`):
    /// everything the program's own source does, which is what capture instruments.
    pub(crate) fn source_file(&self, suffix: &str) -> CgCounts {
        let matches: Vec<_> = self
            .files
            .iter()
            .filter(|(f, _)| f.ends_with(suffix))
            .collect();
        match matches.as_slice() {
            [(_, c)] => **c,
            _ => panic!(
                "no single Cachegrind file ending in {suffix} among {:?}",
                self.files.keys().collect::<Vec<_>>()
            ),
        }
    }
}

/// Runs `program args` under Cachegrind with `shape` and reads its per-function counts from the
/// `fn=` sections of `cachegrind.out` (sturdier than parsing `cg_annotate`'s table).
pub(crate) fn cachegrind(program: &Path, args: &[&str], shape: &Shape) -> CgRun {
    let dir = program.parent().expect("program in a directory");
    let out_file = dir.join(format!(
        "cachegrind.out.{}",
        program.file_name().unwrap().to_string_lossy()
    ));
    let out = Command::new("valgrind")
        .args(["--tool=cachegrind", "--cache-sim=yes"])
        .args(shape.cachegrind_args())
        .arg(format!("--cachegrind-out-file={}", out_file.display()))
        .arg(program)
        .args(args)
        .current_dir(dir)
        .env_remove("EPCACHE_REPORT")
        .stdin(Stdio::null())
        .output()
        .expect("running valgrind");
    check_output(&format!("cachegrind on {}", program.display()), &out);
    let text = std::fs::read_to_string(&out_file).expect("reading Cachegrind's output");
    let (functions, files) = parse_cachegrind_out(&text);
    CgRun {
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        functions,
        files,
    }
}

/// Per-function and per-file count maps.
type CountMaps = (BTreeMap<String, CgCounts>, BTreeMap<String, CgCounts>);

/// Sums the cost lines under each `fn=` (a function may appear under several `fl=` files) and
/// under each `fl=`.
pub(crate) fn parse_cachegrind_out(text: &str) -> CountMaps {
    let events: Vec<&str> = text
        .lines()
        .find_map(|l| l.strip_prefix("events:"))
        .expect("an events: line in Cachegrind's output")
        .split_whitespace()
        .collect();
    let index = |name: &str| {
        events
            .iter()
            .position(|e| *e == name)
            .unwrap_or_else(|| panic!("Cachegrind ran without the {name} event: {events:?}"))
    };
    let (dr, d1mr, dlmr) = (index("Dr"), index("D1mr"), index("DLmr"));
    let (dw, d1mw, dlmw) = (index("Dw"), index("D1mw"), index("DLmw"));
    let mut functions: BTreeMap<String, CgCounts> = BTreeMap::new();
    let mut files: BTreeMap<String, CgCounts> = BTreeMap::new();
    let mut current: Option<String> = None;
    let mut file = String::new();
    for line in text.lines() {
        if let Some(name) = line.strip_prefix("fl=") {
            file = name.trim().to_owned();
            continue;
        }
        if let Some(name) = line.strip_prefix("fn=") {
            current = Some(name.trim().to_owned());
            continue;
        }
        let Some(name) = &current else { continue };
        if !line.starts_with(|c: char| c.is_ascii_digit()) {
            continue;
        }
        // A cost line: the source line, then one count per event (trailing zeros may be left off).
        let counts: Vec<u64> = line
            .split_whitespace()
            .skip(1)
            .map(|v| v.parse().expect("a count in a Cachegrind cost line"))
            .collect();
        let at = |i: usize| counts.get(i).copied().unwrap_or(0);
        for c in [
            functions.entry(name.clone()).or_default(),
            files.entry(file.clone()).or_default(),
        ] {
            c.dr += at(dr);
            c.d1mr += at(d1mr);
            c.dlmr += at(dlmr);
            c.dw += at(dw);
            c.d1mw += at(d1mw);
            c.dlmw += at(dlmw);
        }
    }
    (functions, files)
}

/// epcache's standalone report (`EPCACHE_REPORT`), as the runtime contract describes it.
#[derive(Debug, Clone)]
pub(crate) struct Report {
    pub(crate) json: Value,
    pub(crate) stdout: String,
}

/// Runs a captured program with `EPCACHE_CACHE=shape` and `EPCACHE_REPORT`, and reads the report.
pub(crate) fn run_with_report(program: &Path, args: &[&str], shape: &Shape) -> Report {
    let dir = program.parent().expect("program in a directory");
    let report = dir.join(format!(
        "{}.report.json",
        program.file_name().unwrap().to_string_lossy()
    ));
    let out = Command::new(program)
        .args(args)
        .env("EPCACHE_REPORT", &report)
        .env("EPCACHE_CACHE", shape.epcache_spec())
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("running {}: {e}", program.display()));
    check_output(&format!("{} with EPCACHE_REPORT", program.display()), &out);
    let text = std::fs::read_to_string(&report)
        .unwrap_or_else(|e| panic!("{} wrote no report: {e}", program.display()));
    Report {
        json: serde_json::from_str(&text).expect("the report is JSON"),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
    }
}

/// L1 counts by the report's PAPI names, for a region or for a data structure in one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct L1 {
    pub(crate) reads: u64,
    pub(crate) read_misses: u64,
    pub(crate) writes: u64,
    pub(crate) write_misses: u64,
}

impl L1 {
    pub(crate) fn from_events(events: &Value, whose: &str) -> L1 {
        let get = |name: &str| {
            events[name]
                .as_u64()
                .unwrap_or_else(|| panic!("{whose}: no {name} in {events}"))
        };
        L1 {
            reads: get("PAPI_L1_DCR"),
            read_misses: get("PAPI_L1_LDM"),
            writes: get("PAPI_L1_DCW"),
            write_misses: get("PAPI_L1_STM"),
        }
    }

    pub(crate) fn accesses(&self) -> u64 {
        self.reads + self.writes
    }

    pub(crate) fn misses(&self) -> u64 {
        self.read_misses + self.write_misses
    }

    pub(crate) fn miss_ratio(&self) -> f64 {
        self.misses() as f64 / self.accesses() as f64
    }
}

impl Report {
    fn regions(&self) -> &[Value] {
        self.json["regions"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_else(|| panic!("no regions[] in the report: {}", self.json))
    }

    /// The one region called `name`.
    pub(crate) fn region(&self, name: &str) -> &Value {
        let found: Vec<&Value> = self
            .regions()
            .iter()
            .filter(|r| r["name"] == name)
            .collect();
        match found.as_slice() {
            [one] => one,
            _ => panic!(
                "{} regions named `{name}`; the report has {:?}",
                found.len(),
                self.region_names()
            ),
        }
    }

    pub(crate) fn region_names(&self) -> Vec<String> {
        self.regions()
            .iter()
            .map(|r| r["name"].as_str().unwrap_or("?").to_owned())
            .collect()
    }

    /// A region's own L1 counts (inclusive of regions nested in it).
    pub(crate) fn region_l1(&self, name: &str) -> L1 {
        L1::from_events(&self.region(name)["events"], name)
    }

    /// How many times the region ran.
    pub(crate) fn instances(&self, name: &str) -> u64 {
        self.region(name)["instances"]
            .as_u64()
            .unwrap_or_else(|| panic!("region {name} has no instances count"))
    }

    /// The L1 counts of the data structure `ds` within region `region`: the structure whose name
    /// is `ds` exactly, else the one whose name ends with `ds` (an allocation site's
    /// `/path/phases.c:63`, given as `phases.c:63`).
    pub(crate) fn data_structure_l1(&self, region: &str, ds: &str) -> L1 {
        let structures = self.region(region)["data_structures"]
            .as_array()
            .unwrap_or_else(|| panic!("region {region} has no data_structures[]"));
        let exact = structures.iter().find(|d| d["name"] == ds);
        let found = exact.or_else(|| {
            structures
                .iter()
                .find(|d| d["name"].as_str().is_some_and(|n| n.ends_with(ds)))
        });
        let Some(found) = found else {
            let names: Vec<_> = structures.iter().map(|d| d["name"].to_string()).collect();
            panic!("no data structure {ds} in region {region}; it has {names:?}");
        };
        L1::from_events(&found["events"], &format!("{region}/{ds}"))
    }

    /// One event's count (`PAPI_L2_LDM`, ...) of a region.
    pub(crate) fn region_event(&self, region: &str, event: &str) -> u64 {
        let events = &self.region(region)["events"];
        events[event]
            .as_u64()
            .unwrap_or_else(|| panic!("region {region}: no {event} in {events}"))
    }

    /// The L1 counts of a data structure in a region, or zeros when the region never touched it
    /// (a report may leave untouched structures out).
    pub(crate) fn data_structure_l1_or_zero(&self, region: &str, ds: &str) -> L1 {
        let structures = self.region(region)["data_structures"]
            .as_array()
            .unwrap_or_else(|| panic!("region {region} has no data_structures[]"));
        structures
            .iter()
            .find(|d| d["name"] == ds)
            .map_or(L1::default(), |d| {
                L1::from_events(&d["events"], &format!("{region}/{ds}"))
            })
    }
}

/// The relative difference of `ours` from `reference`.
pub(crate) fn relative(ours: f64, reference: f64) -> f64 {
    if reference == 0.0 {
        if ours == 0.0 { 0.0 } else { f64::INFINITY }
    } else {
        (ours - reference).abs() / reference
    }
}

/// Fails unless `ours` is within `tolerance` (relative) of `reference`, naming what and why.
pub(crate) fn assert_within(what: &str, ours: f64, reference: f64, tolerance: f64) {
    let off = relative(ours, reference);
    assert!(
        off <= tolerance,
        "{what}: {ours} vs {reference}, off by {:.2}% (allowed {:.2}%)",
        off * 100.0,
        tolerance * 100.0
    );
}

/// epcache's counts for a function region against Cachegrind's for the same function: reads and
/// writes within 1% (Cachegrind also sees the stack: a `ret`'s load, spilled registers; capture
/// sees only what gcc instrumented), L1 misses within 3% (the two builds' data differ only in
/// placement, which moves conflict misses a little).
pub(crate) fn assert_agrees_with_cachegrind(what: &str, ours: L1, cg: CgCounts) {
    assert_within(
        &format!("{what}: L1 reads"),
        ours.reads as f64,
        cg.dr as f64,
        0.01,
    );
    assert_within(
        &format!("{what}: L1 writes"),
        ours.writes as f64,
        cg.dw as f64,
        0.01,
    );
    // A function with a handful of misses would make 3% meaningless: allow a few lines absolutely.
    let misses_ok = |ours: u64, theirs: u64| {
        relative(ours as f64, theirs as f64) <= 0.03 || ours.abs_diff(theirs) <= 16
    };
    assert!(
        misses_ok(ours.read_misses, cg.d1mr),
        "{what}: L1 read misses {} vs Cachegrind's {}",
        ours.read_misses,
        cg.d1mr
    );
    assert!(
        misses_ok(ours.write_misses, cg.d1mw),
        "{what}: L1 write misses {} vs Cachegrind's {}",
        ours.write_misses,
        cg.d1mw
    );
}

/// The whole run's captured counts (the `program` region) against Cachegrind's for all code in
/// the program's source file: capture instruments exactly that code, and libc's accesses in
/// between (start-up, printf) touch other lines, so the misses agree too.
pub(crate) fn assert_program_agrees_with_cachegrind(report: &Report, cg: &CgRun, source: &str) {
    assert_agrees_with_cachegrind(
        &format!("whole run of {source}"),
        report.region_l1("program"),
        cg.source_file(source),
    );
}

/// The newest epcache-monitor rlib cargo built for this test run (the Rust capture programs link
/// it; a copy beside the binaries may be stale).
pub(crate) fn monitor_rlib() -> PathBuf {
    let deps = profile_dir().join("deps");
    std::fs::read_dir(&deps)
        .unwrap_or_else(|e| panic!("reading {}: {e}", deps.display()))
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().unwrap_or_default().to_string_lossy();
            name.starts_with("libepcache_monitor-") && name.ends_with(".rlib")
        })
        .max_by_key(|p| std::fs::metadata(p).and_then(|m| m.modified()).ok())
        .expect("cargo builds the epcache-monitor rlib for these tests")
}

/// The flags that make rustc call `__sanitizer_cov_load*`/`__sanitizer_cov_store*`; the same
/// list README.md gives for `cargo rustc`.
pub(crate) const SANCOV_FLAGS: &[&str] = &[
    "-Cpasses=sancov-module",
    "-Cllvm-args=-sanitizer-coverage-level=1",
    "-Cllvm-args=-sanitizer-coverage-trace-loads",
    "-Cllvm-args=-sanitizer-coverage-trace-stores",
];

/// Builds a program under `examples/rust-capture/` with rustc: captured (sancov, linked with
/// epcache-monitor) or plain (for Cachegrind; it still links epcache-monitor for its markers,
/// which run outside the kernels).
///
/// `-Copt-level=2` with vectorisation off: scalar loops, as gcc's -O1 gives the C programs. Not
/// opt-level 1, where rustc shares generic instances with upstream crates: the loops would call
/// the (debug-built) runtime's own copy of `Range::next` instead of inlining it, and that copy's
/// stack traffic is seen by Cachegrind but not instrumented.
pub(crate) fn rustc(source_name: &str, dir: &Path, name: &str, captured: bool) -> PathBuf {
    let output = dir.join(name);
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_owned());
    let mut cmd = Command::new(rustc);
    cmd.args(["--edition", "2024", "-g", "-Copt-level=2"])
        .args(["-Cno-vectorize-loops", "-Cno-vectorize-slp"])
        .arg("--extern")
        .arg(format!("epcache_monitor={}", monitor_rlib().display()))
        .arg("-L")
        .arg(format!(
            "dependency={}",
            profile_dir().join("deps").display()
        ))
        .arg("-o")
        .arg(&output)
        .arg(source(&format!("rust-capture/{source_name}")));
    if captured {
        cmd.args(SANCOV_FLAGS);
    }
    let out = cmd.output().expect("running rustc");
    check_output(&format!("rustc {source_name}"), &out);
    output
}

/// The 1-based line of the first line in `source` (under `examples/`) containing `needle`: how
/// a test names an allocation site without hard-coding a line number.
pub(crate) fn line_of(source_rel: &str, needle: &str) -> u32 {
    let text = std::fs::read_to_string(source(source_rel)).expect("reading an example source");
    text.lines()
        .position(|l| l.contains(needle))
        .map(|i| i as u32 + 1)
        .unwrap_or_else(|| panic!("`{needle}` not in {source_rel}"))
}

/// METRIC's tables of `regions`, measured by the `metric_table` tool program's library: the
/// program runs under an embedded daemon with the reuse and evictor analyses requested.
pub(crate) fn metric_tables(
    program: &Path,
    args: &[&str],
    shape: &Shape,
    regions: &[&str],
) -> Vec<epcache_examples::metric_table::RegionTable> {
    let launch = quiet_launch(program, args, shape);
    let options = epcache_examples::metric_tool::MetricOptions {
        launch,
        regions: regions.iter().map(|r| (*r).to_owned()).collect(),
        level: 1,
    };
    epcache_examples::block_on(epcache_examples::metric_tool::measure(&options, |m| {
        eprintln!("{m}")
    }))
    .expect("a runtime for the tool")
    .unwrap_or_else(|e| panic!("measuring {} with the metric tool: {e}", program.display()))
}

/// `program args` for a tool driven by a test: the test's cache, the program's output discarded.
pub(crate) fn quiet_launch(program: &Path, args: &[&str], shape: &Shape) -> epcache_client::Launch {
    let mut launch = epcache_client::Launch::new(program, "reproduction-test").args(args);
    launch.cache = Some(shape.epcache_spec());
    launch.show_output = false;
    launch
}
