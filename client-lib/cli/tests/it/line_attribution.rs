//! Per-line attribution and its export (issue 28): a kernel built at -O2 with its hot functions
//! inlined into `main` gets per-line misses that agree with `cg_annotate`'s, and the report's
//! lines converted to Callgrind's format read back through `callgrind_annotate` as the same
//! numbers `epcache annotate` prints; the CSV sums to the report's totals; on a machine of
//! cores, false sharing is counted for the line that writes the counters.
//!
//! Both builds leave out gcc's vectoriser (`-fno-tree-vectorize`): ThreadSanitizer's
//! instrumentation keeps gcc from vectorising the captured build, so with it the plain build
//! Cachegrind runs would make other (wider, fewer) accesses than the captured one.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use epcache_test_support::cachegrind::{self, Shape};
use epcache_test_support::tools::check_output;

use super::capture_support::{available, epcache_cc_with, kernel, runtime_built};

/// The brief's cache: D1=32K,8,64 over an 8 MiB LL, for both tools.
const SHAPE: Shape = Shape {
    i1: Shape::ANY_I1,
    d1: (32 << 10, 8, 64),
    ll: (8 << 20, 16, 64),
};

const SOURCE: &str = "lines_inlined.c";

/// The kernel built with capture as `epcache cc` builds by default (`captured`) and plainly
/// (`plain`) in `dir`, from the same path so both name the same file; `None` (said) without the
/// tools.
fn build(dir: &Path, who: &str) -> Option<(PathBuf, PathBuf)> {
    if !runtime_built(who) || !available("valgrind", who) || !available("gcc", who) {
        return None;
    }
    std::fs::copy(kernel(SOURCE), dir.join(SOURCE)).unwrap();
    let flags = ["-g", "-O2", "-fno-tree-vectorize"];
    let mut line = vec!["gcc"];
    line.extend(flags);
    line.extend([SOURCE, "-o", "captured"]);
    epcache_cc_with(dir, &[], &line);
    let out = Command::new("gcc")
        .args(flags)
        .args([SOURCE, "-o", "plain"])
        .current_dir(dir)
        .output()
        .unwrap();
    check_output("gcc plain build", &out);
    Some((dir.join("captured"), dir.join("plain")))
}

/// Runs the captured program (built with the inline test, simulated on a second core where one
/// is free) with its report at `dir/report.json`; returns the report's path and JSON.
fn run_captured(dir: &Path, program: &Path) -> (PathBuf, serde_json::Value) {
    let report = dir.join("report.json");
    let out = Command::new(program)
        .env("EPCACHE_REPORT", &report)
        .env("EPCACHE_CACHE", SHAPE.epcache_spec())
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    check_output("the captured kernel", &out);
    let json = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    (report, json)
}

/// The program region's misses per line of `SOURCE`: [D1mr, D1mw, L2mr, L2mw], summed over
/// data structures and inlined contexts.
fn our_lines(report: &serde_json::Value) -> BTreeMap<u32, [u64; 4]> {
    let program = &report["regions"][0];
    assert_eq!(program["name"], "program");
    let mut lines: BTreeMap<u32, [u64; 4]> = BTreeMap::new();
    for row in program["lines"].as_array().unwrap() {
        let file = row["file"].as_str().unwrap_or("");
        if !file.ends_with(SOURCE) {
            continue;
        }
        let sum = lines
            .entry(row["line"].as_u64().unwrap() as u32)
            .or_default();
        for (i, event) in ["PAPI_L1_LDM", "PAPI_L1_STM", "PAPI_L2_LDM", "PAPI_L2_STM"]
            .iter()
            .enumerate()
        {
            sum[i] += row["events"][event].as_u64().unwrap();
        }
    }
    lines
}

#[test]
fn per_line_misses_of_inlined_kernels_agree_with_cg_annotate() {
    let who = "per_line_misses_of_inlined_kernels_agree_with_cg_annotate";
    let dir = tempfile::tempdir().unwrap();
    let Some((captured, plain)) = build(dir.path(), who) else {
        return;
    };
    let (_, report) = run_captured(dir.path(), &captured);
    // The kernels are inlined: no region of theirs, and the product's line sits two calls deep.
    let regions: Vec<&str> = report["regions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    for kernel in ["dot", "product", "transpose", "column_sums"] {
        assert!(
            !regions.contains(&kernel),
            "{kernel} was not inlined: {regions:?}"
        );
    }
    let deepest = report["regions"][0]["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["inlined_from"].as_array().unwrap().len())
        .max()
        .unwrap();
    assert!(deepest >= 2, "dot inlined into product inlined into main");

    // Every access is made while `main`, the one region the kernels left, is open: its lines are
    // the program's.
    let main = report["regions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "main")
        .expect("a main region");
    assert_eq!(main["lines"], report["regions"][0]["lines"]);
    let ours = our_lines(&report);
    let theirs: BTreeMap<u32, cachegrind::CgCounts> = cachegrind::per_function(&plain, &[], &SHAPE)
        .lines
        .into_iter()
        .filter(|((file, _), _)| file.ends_with(SOURCE))
        .map(|((_, line), c)| (line, c))
        .collect();
    let d1_total: u64 = theirs.values().map(|c| c.d1mr + c.d1mw).sum();
    let ll_total: u64 = theirs.values().map(|c| c.dlmr + c.dlmw).sum();
    assert!(d1_total > 1_000_000, "the kernel misses: {d1_total}");
    let mut compared = 0;
    for (line, cg) in &theirs {
        let (d1, ll) = (cg.d1mr + cg.d1mw, cg.dlmr + cg.dlmw);
        if d1 * 100 < d1_total && ll * 100 < ll_total {
            continue;
        }
        compared += 1;
        let got = ours.get(line).copied().unwrap_or_default();
        for (name, ours, theirs) in [
            ("D1 misses", got[0] + got[1], d1),
            ("LL misses", got[2] + got[3], ll),
            ("D1 read misses", got[0], cg.d1mr),
            ("D1 write misses", got[1], cg.d1mw),
            ("LL read misses", got[2], cg.dlmr),
            ("LL write misses", got[3], cg.dlmw),
        ] {
            let off = ours.abs_diff(theirs) as f64 / theirs.max(1) as f64;
            eprintln!("line {line} {name}: epcache {ours}, cg_annotate {theirs}");
            assert!(
                off <= 0.03,
                "line {line} {name}: epcache {ours}, cg_annotate {theirs}: {:.2}% apart",
                off * 100.0
            );
        }
    }
    assert!(
        compared >= 5,
        "only {compared} lines carry 1% of the misses"
    );

    // Per function: each inlined kernel's row holds the misses of its body's lines, as
    // cg_annotate counts them line by line.
    let report_path = dir.path().join("report.json");
    let functions = epcache(
        dir.path(),
        &[
            "annotate",
            report_path.to_str().unwrap(),
            "--format",
            "functions",
        ],
    );
    let source = std::fs::read_to_string(kernel(SOURCE)).unwrap();
    for (kernel_name, header) in [
        ("dot", "static inline double dot("),
        ("transpose", "static inline void transpose("),
        ("column_sums", "static inline double column_sums("),
    ] {
        let body = body_lines(&source, header);
        let cg_d1: u64 = theirs
            .iter()
            .filter(|(line, _)| body.contains(line))
            .map(|(_, c)| c.d1mr + c.d1mw)
            .sum();
        let row = functions
            .lines()
            .find(|l| l.split_whitespace().nth(4) == Some(kernel_name))
            .unwrap_or_else(|| panic!("no row of {kernel_name}:\n{functions}"));
        let counts: Vec<u64> = row.split_whitespace().take(2).filter_map(count).collect();
        let ours = counts.iter().sum::<u64>();
        let off = ours.abs_diff(cg_d1) as f64 / cg_d1.max(1) as f64;
        assert!(
            cg_d1 > 10_000 && off <= 0.03,
            "{kernel_name}: epcache {ours} D1 misses, cg_annotate {cg_d1} over lines {body:?}\n{functions}"
        );
        assert!(row.contains("(inlined into"), "{row}");
    }
}

/// The lines of the function whose definition starts with `header` in `source`, to the first
/// line that is a closing brace alone (1-based).
fn body_lines(source: &str, header: &str) -> std::ops::RangeInclusive<u32> {
    let lines: Vec<&str> = source.lines().collect();
    let start = lines
        .iter()
        .position(|l| l.starts_with(header))
        .unwrap_or_else(|| panic!("no {header} in {SOURCE}"));
    let end = start
        + lines[start..]
            .iter()
            .position(|l| *l == "}")
            .expect("a closing brace");
    (start as u32 + 1)..=(end as u32 + 1)
}

/// Runs the `epcache` binary with `args` in `dir`; its stdout.
fn epcache(dir: &Path, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_epcache"))
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    check_output(&format!("epcache {}", args.join(" ")), &out);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A count as both tools print it: `4,218,500`, `0`, or `.` for none.
fn count(field: &str) -> Option<u64> {
    if field == "." {
        return Some(0);
    }
    field.replace(',', "").parse().ok()
}

/// `epcache annotate`'s rows: source text to its four counts.
fn annotate_rows(text: &str) -> BTreeMap<String, [u64; 4]> {
    let mut rows = BTreeMap::new();
    let mut last: Option<[u64; 4]> = None;
    for line in text.lines() {
        if let Some(source) = line.strip_prefix("  | ") {
            let counts = last.take().expect("a row before its source text");
            let sum: &mut [u64; 4] = rows.entry(source.trim().to_owned()).or_default();
            for (s, c) in sum.iter_mut().zip(counts) {
                *s += c;
            }
            continue;
        }
        let fields: Vec<Option<u64>> = line.split_whitespace().take(4).map(count).collect();
        if fields.len() == 4 && fields.iter().all(Option::is_some) {
            last = Some(std::array::from_fn(|i| fields[i].unwrap()));
        }
    }
    rows
}

/// `callgrind_annotate`'s annotated source: each line with counts, source text to its counts.
fn callgrind_annotate_rows(text: &str) -> BTreeMap<String, [u64; 4]> {
    let mut rows = BTreeMap::new();
    let mut in_source = false;
    for line in text.lines() {
        if line.starts_with("-- User-annotated source")
            || line.starts_with("-- Auto-annotated source")
        {
            in_source = true;
            continue;
        }
        if !in_source {
            continue;
        }
        let mut rest = line.trim_start();
        let mut counts = [0u64; 4];
        let mut all = true;
        for c in &mut counts {
            let Some((field, tail)) = rest.split_once(char::is_whitespace).or(Some((rest, "")))
            else {
                unreachable!()
            };
            match count(field) {
                Some(n) => *c = n,
                None => {
                    all = false;
                    break;
                }
            }
            rest = tail.trim_start();
        }
        // Valgrind 3.19 ends the annotated source with a totals row, "events annotated".
        if !all || counts.iter().all(|&c| c == 0) || rest.trim() == "events annotated" {
            continue;
        }
        let sum: &mut [u64; 4] = rows.entry(rest.trim().to_owned()).or_default();
        for (s, c) in sum.iter_mut().zip(counts) {
            *s += c;
        }
    }
    rows
}

#[test]
fn callgrind_export_reads_back_as_annotate_prints_and_csv_sums_to_the_report() {
    let who = "callgrind_export_reads_back_as_annotate_prints_and_csv_sums_to_the_report";
    if !available("callgrind_annotate", who) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let Some((captured, _)) = build(dir.path(), who) else {
        return;
    };
    let (report, json) = run_captured(dir.path(), &captured);
    let report = report.to_str().unwrap();
    let ours = annotate_rows(&epcache(dir.path(), &["annotate", report, "--top", "1000"]));
    assert!(ours.len() >= 5, "{ours:?}");
    epcache(
        dir.path(),
        &[
            "annotate",
            report,
            "--format",
            "callgrind",
            "-o",
            "callgrind.out.1",
        ],
    );
    let out = Command::new("callgrind_annotate")
        .args([
            "--auto=yes",
            "--show-percs=no",
            "--threshold=100",
            "callgrind.out.1",
        ])
        .current_dir(dir.path())
        .output()
        .unwrap();
    check_output("callgrind_annotate", &out);
    let theirs = callgrind_annotate_rows(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(
        theirs,
        ours,
        "callgrind_annotate:\n{}",
        String::from_utf8_lossy(&out.stdout)
    );

    // The same file straight from the run.
    epcache(
        dir.path(),
        &[
            "run",
            "--all-regions",
            "--cache",
            &SHAPE.epcache_spec(),
            "--format",
            "callgrind",
            "--output",
            "callgrind.out.2",
            "--",
            captured.to_str().unwrap(),
        ],
    );
    let costs = |name: &str| -> Vec<String> {
        std::fs::read_to_string(dir.path().join(name))
            .unwrap()
            .lines()
            .filter(|l| !l.starts_with("cmd:"))
            .map(str::to_owned)
            .collect()
    };
    assert_eq!(costs("callgrind.out.2"), costs("callgrind.out.1"));

    // CSV: a header, and the program's rows sum to its misses.
    let csv = epcache(dir.path(), &["annotate", report, "--format", "csv"]);
    let mut lines = csv.lines();
    assert_eq!(
        lines.next().unwrap(),
        "region,file,line,function,inlined_from,data_structure,D1mr,D1mw,L2mr,L2mw"
    );
    let mut d1mr = 0;
    for line in lines.filter(|l| l.starts_with("program,")) {
        let fields: Vec<&str> = line.rsplitn(5, ',').collect();
        d1mr += fields[3].parse::<u64>().unwrap();
    }
    assert_eq!(
        d1mr,
        json["regions"][0]["events"]["PAPI_L1_LDM"]
            .as_u64()
            .unwrap()
    );
}

/// On a machine of two cores (`EPCACHE_CORES`), the false sharing of two OpenMP threads' counters
/// side by side is counted for the line that adds to them, and all of the packed counters'
/// false-sharing misses are on that line.
/// A `memset` and a `memcpy` (counted by the runtime's own functions, which the build calls in
/// place of the C library's) are counted for the lines that call them, not for no line: by
/// hand, 1 MiB is 16,384 lines of 64 bytes, each missed once by the fill's writes, the copy's
/// reads and writes, and the loop's reads.
#[test]
fn a_fill_and_a_copy_are_counted_for_the_lines_that_call_them() {
    let who = "line_attribution copies";
    if !runtime_built(who) || !available("gcc", who) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        kernel("fill_and_copy.c"),
        dir.path().join("fill_and_copy.c"),
    )
    .unwrap();
    epcache_cc_with(
        dir.path(),
        &[],
        &["gcc", "-g", "-O2", "fill_and_copy.c", "-o", "copies"],
    );
    let (_, report) = run_captured(dir.path(), &dir.path().join("copies"));
    let program = &report["regions"][0];
    let mut lines: BTreeMap<u64, [u64; 2]> = BTreeMap::new();
    let mut unknown = [0; 2];
    for row in program["lines"].as_array().unwrap() {
        let counts = [
            row["events"]["PAPI_L1_LDM"].as_u64().unwrap(),
            row["events"]["PAPI_L1_STM"].as_u64().unwrap(),
        ];
        let sum = match row["file"].as_str() {
            Some(f) if f.ends_with("fill_and_copy.c") => {
                lines.entry(row["line"].as_u64().unwrap()).or_default()
            }
            _ => &mut unknown,
        };
        sum[0] += counts[0];
        sum[1] += counts[1];
    }
    const LINES: u64 = 16_384;
    let near = |got: u64, want: u64| (want..want + 4).contains(&got);
    let at = |line: u64| lines.get(&line).copied().unwrap_or_default();
    assert!(near(at(10)[1], LINES), "memset: {lines:?}");
    assert!(
        near(at(11)[0], LINES) && near(at(11)[1], LINES),
        "memcpy: {lines:?}"
    );
    assert!(near(at(13)[0], LINES), "the loop: {lines:?}");
    assert!(unknown[0] + unknown[1] < 16, "no line: {unknown:?}");
}

#[test]
fn false_sharing_is_counted_for_the_line_that_writes_the_packed_counters() {
    let who = "false_sharing_is_counted_for_the_line_that_writes_the_packed_counters";
    if !runtime_built(who) || !available("gcc", who) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let source = "omp_false_sharing.c";
    std::fs::copy(kernel(source), dir.path().join(source)).unwrap();
    epcache_cc_with(
        dir.path(),
        &[],
        &["gcc", "-g", "-O1", "-fopenmp", source, "-o", "program"],
    );
    let report_path = dir.path().join("report.json");
    let report = &report_path;
    let out = Command::new(dir.path().join("program"))
        .env("EPCACHE_REPORT", report)
        .env(
            "EPCACHE_CACHE",
            "D1=32K,8,64;L2=256K,8,64;L3=8M,16,64,shared",
        )
        .env("EPCACHE_CORES", "2")
        .env("OMP_NUM_THREADS", "2")
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    check_output("the OpenMP counters on two cores", &out);
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(report).unwrap()).unwrap();
    let program = &report["regions"][0];
    let packed_fsm = program["data_structures"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["name"] == "packed")
        .unwrap()["events"]["EPC_L1_FSM"]
        .as_u64()
        .unwrap();
    assert!(packed_fsm >= 1000, "{packed_fsm} false-sharing misses");
    let text = std::fs::read_to_string(kernel(source)).unwrap();
    let adding = 1 + text
        .lines()
        .position(|l| l.contains("packed[t] += 1"))
        .unwrap() as u64;
    let mut on_line = 0;
    let mut elsewhere = 0;
    for row in program["lines"].as_array().unwrap() {
        if row["data_structure"] != "packed" {
            continue;
        }
        let fsm = row["events"]["EPC_L1_FSM"].as_u64().unwrap();
        if row["line"] == adding && row["file"].as_str().unwrap().ends_with(source) {
            on_line += fsm;
        } else {
            elsewhere += fsm;
        }
    }
    // main's read of the counters for its printf may find the line taken by the other core.
    assert!(
        on_line + 1 >= packed_fsm && on_line + elsewhere == packed_fsm,
        "line {adding}: {on_line} of {packed_fsm}, elsewhere {elsewhere}: {program:#}"
    );
    // The CSV carries the coherence events as columns of their own.
    let csv = epcache(
        dir.path(),
        &[
            "annotate",
            report_path.to_str().unwrap(),
            "--format",
            "csv",
            "--region",
            "program",
            "--data-structure",
            "packed",
        ],
    );
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let column = header.iter().position(|h| *h == "EPC_L1_FSM").unwrap();
    let from_csv: u64 = lines
        .map(|l| l.split(',').nth(column).unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(from_csv, packed_fsm);
}

/// `epcache annotate` says, as cg_annotate does, when a source file changed after the report
/// was written (its lines may not be the code measured), and says nothing otherwise.
#[test]
fn annotate_warns_of_a_source_newer_than_its_report() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("kernel.c");
    let report = dir.path().join("report.json");
    std::fs::write(&source, "int a[64];\nvoid f(void) { a[0]++; }\n").unwrap();
    let text = serde_json::json!({
        "cache": "D1=32K,8,64",
        "levels": [{ "name": "D1" }],
        "regions": [{
            "name": "program",
            "lines": [{
                "file": source.to_str().unwrap(),
                "line": 2,
                "function": "f",
                "data_structure": "a",
                "events": { "PAPI_L1_LDM": 3, "PAPI_L1_STM": 0 }
            }]
        }]
    });
    let annotate = || {
        let out = Command::new(env!("CARGO_BIN_EXE_epcache"))
            .args(["annotate"])
            .arg(&report)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    std::fs::write(&report, text.to_string()).unwrap();
    let said = annotate();
    assert!(!said.contains("more recent"), "{said}");
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(5);
    std::fs::File::options()
        .write(true)
        .open(&source)
        .unwrap()
        .set_modified(later)
        .unwrap();
    let said = annotate();
    assert!(
        said.contains("kernel.c is more recent than the report"),
        "{said}"
    );
}
