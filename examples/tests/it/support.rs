//! Shared by the reproduction tests: building the example programs with `epcache cc`, with
//! plain gcc/gfortran and with rustc, reading epcache's standalone report and comparing it with
//! Cachegrind's counts (the runs themselves, the cache shapes and the tool checks are
//! `epcache-test-support`'s).
//!
//! Missing tools (gcc, gfortran, valgrind, rustc) fail loudly under CI (`CI=true`) and otherwise
//! print SKIPPED, as every compiler-backed test in the repository does.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use serde_json::Value;

/// Runs a program under Cachegrind and reads its per-function and per-file counts.
// Each test file uses only some of these re-exports (`threads.rs` none of them).
#[allow(unused_imports)]
pub(crate) use epcache_test_support::cachegrind::per_function as cachegrind;
#[allow(unused_imports)]
pub(crate) use epcache_test_support::cachegrind::{CgCounts, CgRun, Shape};
use epcache_test_support::captured;
use epcache_test_support::tools::check_output;

/// Whether every one of `tools` runs here (`tool --version`); says which are missing otherwise.
pub(crate) fn tools_available(who: &str, tools: &[&str]) -> bool {
    let why = "these tests build the examples and compare with Cachegrind";
    epcache_test_support::tools::all_available(who, tools, why)
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
        let line: Vec<&str> = line.iter().map(String::as_str).collect();
        captured::epcache_cc(&epcache.binary, &epcache.runtime, dir, &[], &line);
        output
    }
}

/// epcache's standalone report (`EPCACHE_REPORT`), as the runtime contract describes it.
#[derive(Debug, Clone)]
pub(crate) struct Report {
    pub(crate) json: Value,
    pub(crate) stdout: String,
}

/// Runs a captured program in its directory with `EPCACHE_CACHE=shape` and `EPCACHE_REPORT`,
/// and reads the report.
pub(crate) fn run_with_report(program: &Path, args: &[&str], shape: &Shape) -> Report {
    let dir = program.parent().expect("program in a directory");
    let (stdout, json) = captured::run_with_report(dir, program, args, &shape.epcache_spec());
    Report { json, stdout }
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

    /// The one region `name` finds, as a request's name does (`elim` finds
    /// `gauss_mod::elim`: `epcache_shm::region_names`).
    pub(crate) fn region(&self, name: &str) -> &Value {
        let regions = self.regions();
        let names = regions.iter().map(|r| r["name"].as_str().unwrap_or(""));
        let found: Vec<&Value> = epcache_shm::region_names::find(names, name)
            .into_iter()
            .map(|i| &regions[i])
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
/// it; a copy beside the binaries may be stale). Chosen once [`epcache`]'s build is done: the
/// tests of this binary run side by side, and that build may be writing one.
pub(crate) fn monitor_rlib() -> PathBuf {
    epcache();
    epcache_test_support::artifacts::newest_in_deps(&profile_dir(), "libepcache_monitor-", ".rlib")
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
