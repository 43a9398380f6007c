//! Programs built with `epcache cc` and run alone, with the runtime's standalone report: what the
//! command line's capture tests and the examples' reproduction tests both do.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use crate::tools::check_output;

/// Runs `epcache cc -- COMPILER_LINE` in `dir` with the `epcache` binary `epcache` linking the
/// runtime staticlib `runtime` (`EPCACHE_RUNTIME`) and `env` added (`EPCACHE_CC_VERBOSE`,
/// `EPCACHE_CC_INLINE`, `EPCACHE_CC_DUAL`); fails with its output unless it succeeds.
pub fn epcache_cc(
    epcache: &Path,
    runtime: &Path,
    dir: &Path,
    env: &[(&str, &str)],
    compiler_line: &[&str],
) -> Output {
    let out = Command::new(epcache)
        .env("EPCACHE_RUNTIME", runtime)
        .envs(env.iter().copied())
        .arg("cc")
        .arg("--")
        .args(compiler_line)
        .current_dir(dir)
        .output()
        .expect("running epcache cc");
    check_output(&format!("epcache cc -- {}", compiler_line.join(" ")), &out);
    out
}

/// Runs the captured `program args` in `dir`, nothing on stdin, with the cache `cache`
/// (`EPCACHE_CACHE`) and its report written to `dir/<program>.report.json` (`EPCACHE_REPORT`);
/// fails with both outputs unless it succeeds (the test programs check their own results), and
/// returns its stdout and the parsed report.
pub fn run_with_report(
    dir: &Path,
    program: &Path,
    args: &[&str],
    cache: &str,
) -> (String, serde_json::Value) {
    let name = program.file_name().expect("a program file name");
    let report = dir.join(format!("{}.report.json", name.to_string_lossy()));
    let out = Command::new(program)
        .args(args)
        .env("EPCACHE_REPORT", &report)
        .env("EPCACHE_CACHE", cache)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("running {}: {e}", program.display()));
    check_output(&format!("{} with EPCACHE_REPORT", program.display()), &out);
    let text = std::fs::read_to_string(&report).unwrap_or_else(|e| {
        panic!(
            "{} wrote no report at exit ({}): {e}",
            program.display(),
            report.display()
        )
    });
    let json = serde_json::from_str(&text).expect("the report is JSON");
    (String::from_utf8_lossy(&out.stdout).into_owned(), json)
}
